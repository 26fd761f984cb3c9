"""The batch's compile gate (grader.batch.isolation.compile_gate): one compile per distinct
generated kernel, made by the grader in a fresh sandbox, from the bytes a run sent.

The fake kernel runs here stand in for a worker a submission took over: each reads its own
job file and sends it as "its" generated kernel, so a test chooses the bytes by choosing the
run's file. Whatever they send, the Build that comes back is the grader's compile of those
bytes, kept under their hash; a run never writes an entry.
"""

import concurrent.futures
import hashlib
import json
import os
import pathlib
import subprocess
import sys
import threading
import time

import pytest

from grader.batch.isolation import compile_gate, compile_store, conversation, one_shot, sandbox
from grader.batch.isolation.sandbox import Limits
from grader.batch.status import GraderError
from grader.core import execution, gpu_compile
from grader.core.loading import load_submission
from solutions import MODEL_ANSWER

LIMITS = Limits(timeout_s=60, memory_bytes=2 << 30)

# A fake kernel run, up to its compile request: it says hello, takes its job, says its file
# loaded, then ``send_kernel()`` sends that file's bytes and prints the Build it got back.
PRELUDE = """\
import json, os, sys, time
from grader.batch.inside import protocol
out = os.fdopen(os.dup(1), "wb")
inbox = os.fdopen(os.dup(0), "rb", buffering=0)
def send(kind, payload=b"", **fields):
    protocol.send(out, kind, payload, **fields)
def hear():
    return protocol.receive(inbox, lambda kind, fields: 0)
def send_kernel(data=None, declared=None):
    data = open("/job/ninetoothed_gemm.py", "rb").read() if data is None else data
    send("compile", data, bytes=len(data) if declared is None else declared)
def print_build():
    print("BUILD " + json.dumps(hear().fields), file=sys.stderr, flush=True)
send("hello")
hear()
send("loaded", status="ok", message="")
"""
HONEST = "send_kernel()\nprint_build()\nsend('diagnosis', findings=[], tiles=None)\n"


class _FakePool:
    """What conversation.run takes its worker from: here, a sandboxed fake kernel run."""

    def __init__(self, program):
        self.program = PRELUDE + program

    def take(self, device):
        return sandbox.Worker(
            backend_name="interpreter", limits=LIMITS, inner=[sys.executable, "-c", self.program]
        )


def _run(data, gate, program=HONEST, limits=LIMITS):
    return conversation.run(
        "kernel",
        data,
        [],
        backend_name="interpreter",
        limits=limits,
        pool=_FakePool(program),
        gate=gate,
    )


def _said_build(report):
    line = next(line for line in report.ending.stderr.splitlines() if line.startswith("BUILD "))
    return gpu_compile.Build.from_fields(json.loads(line[len("BUILD ") :]))


@pytest.fixture(scope="module")
def reference():
    """(the model answer's generated kernel file, as bytes; its handle)."""
    kernel = execution.own_kernel(load_submission(MODEL_ANSWER))
    return pathlib.Path(kernel._source).read_bytes(), kernel


@pytest.fixture
def compiles(monkeypatch):
    """Every compile the gate starts in a sandbox of its own, as the bytes it compiled."""
    started, original = [], one_shot.run

    def counted(arguments, data, **options):
        started.append(data)
        return original(arguments, data, **options)

    monkeypatch.setattr(one_shot, "run", counted)
    return started


def _gate():
    return compile_gate.CompileGate(backend_name="interpreter", sandboxed=True, target="sm_90")


# --------------------------------------------------------------------------- through a run


def test_two_runs_of_one_kernel_share_the_grader_s_one_compile(reference, compiles):
    data, kernel = reference
    gate = _gate()
    first, second = _run(data, gate), _run(data, gate)
    assert compiles == [data] and dict(gate.counts) == {"compiled": 1, "shared": 1}
    assert (first.shared_build, second.shared_build) == (False, True)
    for report in (first, second):
        assert report.stage == "done" and report.ending.kind == "finished", report.ending
        assert _said_build(report) == report.build  # what the run was told is what is kept
    # The very Build the student's own pytest run makes of this kernel, in a process of hers.
    assert first.build == second.build == gpu_compile.check(kernel, "sm_90")
    assert first.build.ok and first.build.checked and first.build.registers


HOSTILE = {
    "a module import": b"import os\nos.system('true')\n",
    "not UTF-8": b"\xff\xfe\x00import triton\n",
    # What the parser gives up on, where a grading thread must not end (RecursionError,
    # MemoryError): the batch would have no row for the file.
    "a sum too long to parse": b"x = " + b"1+" * 300000 + b"1\n",
    "a sign too deep to parse": b"x = " + b"-" * 200000 + b"1\n",
    "the reference with a call out": None,  # made from the reference below
}


@pytest.mark.parametrize("name", HOSTILE)
def test_a_kernel_the_check_refuses_is_never_compiled_and_ends_the_run(name, reference, compiles):
    call_out = b"__import__('os').system('true')\n    triton.language.store("
    data = HOSTILE[name] or reference[0].replace(b"triton.language.store(", call_out, 1)
    assert data != reference[0]
    gate = _gate()
    for shared in (False, True):
        report = _run(data, gate)
        assert report.stopped.startswith("compiling for the course's GPU: "), report.stopped
        assert report.ending.kind == "crashed" and report.build.refused
        assert report.shared_build is shared  # a refusal is a verdict: kept for the batch
        assert not any(line.startswith("BUILD ") for line in report.ending.stderr.splitlines())
    assert compiles == []


@pytest.mark.parametrize(
    "program, why",
    [
        ("send_kernel(b'x' * (protocol.MAX_SOURCE + 1))\nhear()\n", "bytes (1 to"),
        ("send_kernel(b'')\nhear()\n", "bytes (1 to"),
        ("send_kernel(declared=10**6)\nhear()\n", "carries"),
        ("send_kernel()\nprint_build()\nsend_kernel()\nhear()\n", "compile before diagnosis"),
    ],
)
def test_a_malformed_or_repeated_compile_request_ends_the_run(program, why, reference, compiles):
    gate = _gate()
    report = _run(reference[0], gate, program)
    assert report.ending.kind == "crashed" and why in report.ending.detail, report.ending
    assert report.stage == "running" and report.findings == []
    assert len(compiles) == (1 if "before" in why else 0)


class _SlowGate(compile_gate.CompileGate):
    """A gate whose compile takes ``seconds``, then says the kernel built."""

    def __init__(self, seconds):
        super().__init__(backend_name="interpreter", sandboxed=True, target="sm_90")
        self.seconds = seconds

    def _compile(self, data, digest):
        time.sleep(self.seconds)
        return gpu_compile.Build("sm_90", True)


class _Answering(compile_gate.CompileGate):
    """A gate that answers after ``wait_s`` with a Build whose compile took ``compile_s``:
    a run that waited for another run's compile, or found it made."""

    def __init__(self, wait_s, compile_s):
        super().__init__(backend_name="interpreter", sandboxed=True, target="sm_90")
        self.wait_s, self.compile_s = wait_s, compile_s

    def build(self, data):
        time.sleep(self.wait_s)
        return compile_gate.Answer(gpu_compile.Build("sm_90", True), self.compile_s, True)


# After its build, the run works 1.5 s of its 4 s limit.
THEN_WORK = HONEST.replace("print_build()\n", "print_build()\ntime.sleep(1.5)\n")
SHORT = Limits(timeout_s=4, memory_bytes=2 << 30)


def test_a_run_is_charged_its_kernel_s_compile_not_its_wait(reference):
    waited = _run(reference[0], _Answering(6, 0.5), THEN_WORK, limits=SHORT)
    assert waited.stage == "done" and waited.ending.kind == "finished", waited.ending
    assert waited.seconds["compile gate"] >= 6 and _said_build(waited).ok
    # A Build made for another run still costs this run that compile's seconds, as if it
    # had compiled the kernel itself: a hit changes no verdict.
    found = _run(reference[0], _Answering(0, 6), THEN_WORK, limits=SHORT)
    assert found.ending.kind == "timeout" and found.shared_build, found.ending
    made = _run(reference[0], _SlowGate(6), THEN_WORK, limits=SHORT)
    assert made.ending.kind == "timeout" and not made.shared_build, made.ending


def test_the_memory_limit_holds_while_the_parent_waits_for_the_gate(reference):
    small = Limits(timeout_s=60, memory_bytes=400 << 20)
    greedy = "send_kernel()\nheld = bytearray(900 << 20)\ntime.sleep(30)\n"
    started = time.monotonic()
    report = _run(reference[0], _SlowGate(20), greedy, limits=small)
    assert report.ending.kind == "memory_limit", report.ending
    assert time.monotonic() - started < 15  # stopped while the gate still compiled


# --------------------------------------------------------------------------- the gate alone


def _done(returncode=0, stdout="", over=""):
    return one_shot.Done(returncode, stdout, "", over)


def test_runs_waiting_for_one_kernel_wait_for_one_compile(reference, monkeypatch):
    calls, release = [], threading.Event()
    built = json.dumps(gpu_compile.Build("sm_90", True, registers=40).to_fields())

    def compile_slowly(arguments, data, **options):
        calls.append(arguments("/job/file"))
        release.wait(10)
        return _done(stdout=built)

    monkeypatch.setattr(one_shot, "run", compile_slowly)
    gate = _gate()
    with concurrent.futures.ThreadPoolExecutor(4) as threads:
        futures = [threads.submit(gate.build, reference[0]) for _ in range(4)]
        time.sleep(0.5)
        release.set()
        results = [future.result() for future in futures]
    assert len(calls) == 1 and sorted(answer.shared for answer in results) == [
        False,
        True,
        True,
        True,
    ]
    # Each is charged the one compile's seconds (conversation._compile), waiting or not.
    assert all(answer.build.registers == 40 and answer.compile_s >= 0.5 for answer in results)
    digest = hashlib.sha256(reference[0]).hexdigest()
    assert calls[0] == gpu_compile.child_arguments("/job/file", digest, "sm_90")


@pytest.mark.parametrize(
    "done, kept",
    [
        (_done(over="time"), False),
        (_done(over="memory"), False),
        (_done(returncode=1), False),  # it printed no Build: the compile could not run
        (
            _done(
                stdout=json.dumps(gpu_compile.Build("sm_90", False, "out of resources").to_fields())
            ),
            True,
        ),
        (
            _done(
                stdout=json.dumps(
                    gpu_compile.Build(
                        "sm_90", False, "", checked=False, refused="open of /etc"
                    ).to_fields()
                )
            ),
            True,
        ),
    ],
)
def test_only_a_verdict_is_kept_for_the_batch(done, kept, reference, monkeypatch):
    calls = []
    monkeypatch.setattr(one_shot, "run", lambda *args, **kwargs: calls.append(1) or done)
    gate = _gate()
    first, again = gate.build(reference[0]), gate.build(reference[0])
    assert again.build == first.build and again.shared is kept
    assert len(calls) == (1 if kept else 2)
    assert first.build.checked or first.build.refused or not kept


def test_a_grader_failure_reaches_the_run_and_is_not_kept(reference, monkeypatch):
    def broken(*args, **kwargs):
        raise GraderError("no sandbox")

    monkeypatch.setattr(one_shot, "run", broken)
    gate = _gate()
    for _ in range(2):
        with pytest.raises(GraderError, match="no sandbox"):
            gate.build(reference[0])
    assert gate.entries == {}


# --------------------------------------------------------------------------- the store

BUILT = json.dumps(gpu_compile.Build("sm_90", True, registers=40).to_fields())


def _stored_gate(folder, version="v1", target="sm_90"):
    return compile_gate.CompileGate(
        backend_name="interpreter",
        sandboxed=True,
        target=target,
        store=compile_store.Store(folder, version),
    )


def test_a_later_batch_reads_a_kept_build_and_compiles_it_no_more(reference, monkeypatch, tmp_path):
    calls = []
    monkeypatch.setattr(
        one_shot, "run", lambda *args, **kwargs: calls.append(1) or _done(stdout=BUILT)
    )
    made = _stored_gate(tmp_path).build(reference[0])
    later = _stored_gate(tmp_path)
    found = later.build(reference[0])
    assert len(calls) == 1 and (made.shared, found.shared) == (False, True)
    assert found.build == made.build and found.compile_s == made.compile_s  # charged alike
    assert dict(later.counts) == {"stored": 1}
    # A new grader, another target, another assembler or another Triton never reads it.
    _stored_gate(tmp_path, version="v2").build(reference[0])
    _stored_gate(tmp_path, target="sm_80").build(reference[0])
    monkeypatch.setenv("TRITON_PTXAS_PATH", "/opt/other/ptxas")
    _stored_gate(tmp_path).build(reference[0])
    monkeypatch.delenv("TRITON_PTXAS_PATH")
    monkeypatch.setattr(compile_store.importlib.metadata, "version", lambda name: "0.0.0")
    _stored_gate(tmp_path).build(reference[0])
    assert len(calls) == 5 and len(list(tmp_path.glob("*.json"))) == 5


def test_the_store_keeps_verdicts_only_and_rereads_a_broken_entry(reference, monkeypatch, tmp_path):
    answers = [_done(over="time"), _done(stdout=BUILT), _done(stdout=BUILT)]
    monkeypatch.setattr(one_shot, "run", lambda *args, **kwargs: answers.pop(0))
    assert not _stored_gate(tmp_path).build(reference[0]).build.checked
    assert list(tmp_path.glob("*.json")) == []  # a compile that timed out is no verdict
    assert _stored_gate(tmp_path).build(reference[0]).build.registers == 40
    [entry] = tmp_path.glob("*.json")
    entry.write_text('{"build": {"ok": tru')  # cut short, or written by a bug
    again = _stored_gate(tmp_path).build(reference[0])
    assert not again.shared and answers == [] and json.loads(entry.read_text())["build"]["ok"]


def test_the_store_must_be_the_grader_s_alone(tmp_path, monkeypatch):
    monkeypatch.delenv(compile_store.ENV_VAR, raising=False)
    assert compile_store.from_environment("v1") is None
    made = tmp_path / "new" / "store"
    monkeypatch.setenv(compile_store.ENV_VAR, str(made))
    assert compile_store.from_environment("v1").folder == made
    assert made.stat().st_mode & 0o777 == 0o700
    for mode in (0o777, 0o755, 0o720):
        made.chmod(mode)
        with pytest.raises(GraderError, match=f"{compile_store.ENV_VAR}=.* mode 700"):
            compile_store.from_environment("v1")
    made.chmod(0o700)
    (tmp_path / "a-file").write_text("")
    monkeypatch.setenv(compile_store.ENV_VAR, str(tmp_path / "a-file"))
    with pytest.raises(GraderError, match=compile_store.ENV_VAR):
        compile_store.from_environment("v1")
    (tmp_path / "a-link").symlink_to(made)  # a link is not the folder it names
    monkeypatch.setenv(compile_store.ENV_VAR, str(tmp_path / "a-link"))
    with pytest.raises(GraderError, match=compile_store.ENV_VAR):
        compile_store.from_environment("v1")
    if os.geteuid() == 0:  # a folder another user owns, closed or not
        os.chown(made, 65534, 65534)
        monkeypatch.setenv(compile_store.ENV_VAR, str(made))
        with pytest.raises(GraderError, match="owned by uid 65534"):
            compile_store.from_environment("v1")


def test_a_folder_put_in_the_store_s_place_later_is_never_read(reference, monkeypatch, tmp_path):
    """Whoever may rename the store's parent swaps in a folder of forged entries after the
    batch checked the store: the batch goes on with the folder it opened."""
    monkeypatch.setattr(one_shot, "run", lambda *args, **kwargs: _done(stdout=BUILT))
    real = tmp_path / "store"
    monkeypatch.setenv(compile_store.ENV_VAR, str(real))
    store = compile_store.from_environment("v1")
    digest = hashlib.sha256(reference[0]).hexdigest()
    real.rename(tmp_path / "moved")
    real.mkdir(mode=0o700)
    forged = gpu_compile.Build("sm_90", True, registers=1).to_fields()
    (real / store._name(digest, "sm_90")).write_text(json.dumps({"build": forged, "compile_s": 0}))
    gate = compile_gate.CompileGate(
        backend_name="interpreter", sandboxed=True, target="sm_90", store=store
    )
    answer = gate.build(reference[0])
    assert answer.build.registers == 40 and not answer.shared
    assert (tmp_path / "moved" / store._name(digest, "sm_90")).is_file()


# --------------------------------------------------------------------------- its sandbox

LOOK = (
    "import os, sys\n"
    "print(sorted(os.listdir(os.path.dirname(sys.argv[1]))),"
    " os.listdir(os.path.expanduser('~')), open(sys.argv[1]).read())\n"
)


def test_a_compile_sandbox_holds_its_one_file_and_an_empty_home():
    """No fork server, no /tmp of an earlier run: an empty home, so an empty Triton cache."""
    done = one_shot.run(
        lambda path: ["-c", LOOK, path],
        b"# the file\n",
        backend_name="interpreter",
        sandboxed=True,
        timeout_s=60,
        memory_bytes=2 << 30,
    )
    assert done.returncode == 0 and not done.over, done
    assert done.stdout.strip() == "['lib', 'ninetoothed_gemm.py'] [] # the file"


SLOW = "import time\ntime.sleep(60)\n"
GREEDY = "held = bytearray(800 << 20)\nimport time\ntime.sleep(60)\n"


def test_a_compile_is_stopped_at_its_time_and_memory_limits():
    options = dict(backend_name="interpreter", sandboxed=True, memory_bytes=300 << 20)
    started = time.monotonic()
    slow = one_shot.run(lambda path: ["-c", SLOW], b"", timeout_s=1, **options)
    greedy = one_shot.run(lambda path: ["-c", GREEDY], b"", timeout_s=30, **options)
    assert (slow.over, greedy.over) == ("time", "memory") and slow.returncode
    assert time.monotonic() - started < 20


UNSANDBOXED = """
import json, os, sys
from grader.batch.isolation import one_shot
def run(code, timeout_s):
    done = one_shot.run(lambda path: ["-c", code, path], b"# the file\\n",
                        backend_name="interpreter", sandboxed=False, timeout_s=timeout_s,
                        memory_bytes=300 << 20)
    return [done.returncode, done.stdout.strip(), done.over]
print(json.dumps([run(code, timeout_s) for code, timeout_s in json.loads(sys.argv[1])]))
"""


def test_unsandboxed_a_compile_runs_as_a_worker_would_within_the_same_limits():
    """--unsafe-no-sandbox: a scratch folder of its own, the unprivileged user where the
    grader is root (grader.tests.unprivileged_view lets it reach this Python)."""
    from grader.batch.isolation import unprivileged
    from grader.tests.unprivileged_view import View

    view = View(unprivileged.identity())
    if view.problem:
        pytest.skip(view.problem)
    try:
        look = "import os, sys\nprint(os.getuid(), open(sys.argv[1]).read())\n"
        plan = json.dumps([[look, 60], [SLOW, 1], [GREEDY, 30]])
        completed = subprocess.run(
            view.command([sys.executable, "-c", UNSANDBOXED, plan]),
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "TMPDIR": str(view.tmp)},
        )
    finally:
        view.close()
    assert completed.returncode == 0, completed.stderr[-3000:]
    looked, slow, greedy = json.loads(completed.stdout.splitlines()[-1])
    who = unprivileged.identity()
    assert looked == [0, f"{who.uid if who else os.getuid()} # the file", ""]
    assert (slow[2], greedy[2]) == ("time", "memory")
