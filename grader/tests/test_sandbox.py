"""The sandbox from the inside and the outside: what a worker can see and keep, how it ends,
and what the grader does when bubblewrap cannot start.

A probe worker here is plain Python run by grader.batch.isolation.sandbox.Worker in place of the
grader's worker, so each test takes a second or two and runs no kernel.
"""

import collections
import itertools
import os
import pathlib
import re
import shutil
import subprocess
import sys
import time

import psutil
import pytest

from grader.batch import cli, import_graph
from grader.batch.inside import protocol
from grader.batch.isolation import launch, pipes, process_table, sandbox, time_policy, usage
from grader.tests.batch_helpers import NEEDS_INTERPRETER, sandbox_probe
from grader.batch.status import ExitCode
from grader.tests.batch_helpers import DEMO, run_grader

pytestmark = pytest.mark.skipif(
    sandbox.check(False) is not None, reason=f"bubblewrap cannot start here: {sandbox.check(False)}"
)
LIMITS = sandbox.Limits(timeout_s=30, memory_bytes=2 << 30)


def _probe(code, limits=LIMITS):
    """Run ``code`` in the sandbox as the worker would be run; return (its notes, ending)."""
    notes, ending = sandbox_probe(code, limits)
    return "\n".join(notes), ending


def test_a_worker_sees_only_itself_and_writes_only_its_tmpfs(tmp_path, monkeypatch):
    monkeypatch.setenv("GITHUB_TOKEN", "instructor-secret")
    secret = tmp_path / "submissions" / "alice.py"
    secret.parent.mkdir()
    secret.write_text("CLASSMATE")
    notes, ending = _probe(f"""
say(sorted(p for p in os.listdir('/proc') if p.isdigit()))
say(os.getuid())
say(os.path.exists({str(secret)!r}) or os.path.exists({str(pathlib.Path.home())!r} + '/.bashrc'))
say(os.path.exists({str(import_graph.ROOT / "grader" / "batch" / "grade" / "grading.py")!r}))
for target in ('/usr/x', '/job/x', '/etc/x', {str(tmp_path)!r} + '/x'):
    try:
        open(target, 'w').write('x')
        say('wrote ' + target)
    except OSError:
        pass
open('/tmp/home/fine', 'w').write('x')
say(dict(os.environ))
""")
    lines = notes.splitlines()
    # bubblewrap's init and the sandbox's server (both hidden), the run's keeper, the probe
    assert len(eval(lines[0])) <= 4
    assert lines[1] == str(launch.SANDBOX_UID)
    assert lines[2] == "False" and lines[3] == "False"
    assert not any(line.startswith("wrote") for line in lines)
    environment = eval(lines[-1])
    assert "GITHUB_TOKEN" not in environment and "instructor-secret" not in lines[-1]
    assert str(tmp_path) not in lines[-1] and os.getcwd() not in environment.values()


def test_what_a_worker_leaves_running_dies_with_it():
    notes, ending = _probe("""
import subprocess, time
for _ in range(3):
    subprocess.Popen([sys.executable, '-c', 'import os, time; os.setsid(); time.sleep(300)'],
                     start_new_session=True)
open('/dev/shm/ntgemm-leftover-probe', 'w').write('x' * 1000)
say('spawned')
""")
    assert notes == "spawned"
    assert not any(
        "time.sleep(300)" in " ".join(process.info["cmdline"] or [])
        for process in psutil.process_iter(["cmdline"])
    )
    assert not os.path.exists("/dev/shm/ntgemm-leftover-probe")


def test_finish_returns_while_a_leftover_process_holds_the_pipes():
    """The pid namespace kills the daemon as the run ends; the pipes it held never keep the
    parent waiting either way (test_unprivileged checks that without the sandbox)."""
    started = time.monotonic()
    notes, ending = _probe("""
import subprocess
subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'],
                 start_new_session=True, pass_fds=(out.fileno(),))
say('left')
os._exit(0)
""")
    assert notes == "left" and ending.kind == "crashed"
    assert time.monotonic() - started < 8


def test_the_parent_observes_the_ending_a_worker_cannot_choose():
    _, ending = _probe("say('up')\nos._exit(3)\n")
    assert ending.kind == "crashed" and "exit code 3" in ending.detail
    _, ending = _probe("say('up')\nraise MemoryError('not really')\n")
    assert ending.kind == "crashed"
    _, ending = _probe(
        "say('up')\nimport time\ntime.sleep(60)\n",
        sandbox.Limits(timeout_s=3, memory_bytes=2 << 30),
    )
    assert ending.kind == "timeout"
    _, ending = _probe(
        "say('up')\nx = bytearray(1500 << 20)\nimport time\ntime.sleep(60)\n",
        sandbox.Limits(timeout_s=30, memory_bytes=1 << 30),
    )
    assert ending.kind == "memory_limit"


def test_a_report_sent_before_the_parent_listens_is_read_not_lost():
    """The worker speaks at once; the parent asks only later (under load, it may). The
    reader thread once found no ``accept`` then, died, and the run became a timeout."""
    program = (
        "import os\nfrom grader.batch.inside import protocol\n"
        "protocol.send(os.fdopen(os.dup(1), 'wb'), 'hello', note='early')\n"
    )
    worker = sandbox.Worker(
        backend_name="interpreter",
        limits=sandbox.Limits(timeout_s=20, memory_bytes=2 << 30),
        inner=[sys.executable, "-c", program],
    )
    time.sleep(3)  # the worker has long since written its report
    started = time.monotonic()
    message = worker.receive(lambda kind, fields: 0)
    assert message is not None and message.fields["note"] == "early"
    assert time.monotonic() - started < 5
    worker.finish()


def test_time_spent_waiting_for_a_core_held_by_others_is_not_charged():
    """Busy processes outside the run, four for each core, starve it: it gets 1.5 s of CPU in
    far more than its 4 s limit of wall time, and still ends by itself. A plain wall clock
    stopped such runs (a correct file, in CI, got 3 s of CPU in 40 s)."""
    hogs = [
        subprocess.Popen([sys.executable, "-c", "while True: pass"], start_new_session=True)
        for _ in range(4 * len(os.sched_getaffinity(0)))
    ]  # sessions: see cpu_hog
    try:
        busy = (
            "import time\nstart = time.process_time()\n"
            "while time.process_time() - start < 1.5: pass\n"
        )
        _, ending = _probe(f"say('up')\n{busy}", sandbox.Limits(timeout_s=4, memory_bytes=2 << 30))
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()
    assert ending.kind == "crashed", ending.detail  # it ended by itself
    assert ending.wall_time_s > 4 and ending.cpu_wait_s > 2


def test_a_working_or_sleeping_run_is_stopped_at_the_timeout():
    limits = sandbox.Limits(timeout_s=4, memory_bytes=2 << 30)
    for code in ("while True: pass", "import time\nwhile True: time.sleep(0.05)"):
        _, ending = _probe(f"say('up')\n{code}\n", limits)
        assert ending.kind == "timeout" and "not counting" in ending.detail, ending.detail
        assert ending.wall_time_s - ending.cpu_wait_s < 4 + 3  # a loaded box may make it wait


def test_a_run_that_lowers_its_own_priority_is_not_credited_its_waits():
    """A sleeping hang with threads that wait by choice: niced (and their autogroup niced,
    which a process may undo), pinned to a core another process keeps busy, they wait the
    whole wall clock on almost no CPU. Credited, that wait let the hang run ten times its
    limit."""
    core = min(os.sched_getaffinity(0))
    _probe("say(1)")  # a sandbox left idle for the run below: it starts at once
    # The hog ends by itself: the run's niced threads, which its kill must wake, then die
    # within 15 s at most (on a loaded box they took up to 40 s while it ran, 2026-12-06).
    spin = (
        f"import os, time\nos.sched_setaffinity(0, {{{core}}})\n"
        "end = time.monotonic() + 15\nwhile time.monotonic() < end: pass"
    )
    hog = subprocess.Popen([sys.executable, "-c", spin], start_new_session=True)
    try:
        _, ending = _probe(
            f"""
import threading, time
try:
    open('/proc/self/autogroup', 'w').write('19')
except OSError:
    pass
def wait_by_choice():
    os.sched_setaffinity(0, {{{core}}})
    os.nice(19)
    while True: pass
for _ in range(2):
    threading.Thread(target=wait_by_choice, daemon=True).start()
say('up')
while True: time.sleep(0.05)
""",
            sandbox.Limits(timeout_s=2, memory_bytes=2 << 30),
        )
    finally:
        hog.kill()
        hog.wait()
    assert ending.kind == "timeout", ending.detail
    # Credited, the wait would run until the wall-clock cap (WALL_FACTOR x 2 s = 20 s). The
    # seconds the message gives are those charged when the limit stopped it: the wall
    # clock since its start, once the lowering is seen. Its wall_time_s also counts its
    # death, which on a loaded box took 17 s of a pinned, niced process (CI, 2026-12-05).
    assert "lowered its own priority" in ending.detail, ending.detail
    stopped_at = float(re.search(r"still running after ([\d.]+) s", ending.detail).group(1))
    assert stopped_at < time_policy.WALL_FACTOR * 2 - 5, ending.detail


def test_the_charge_is_wall_time_less_starvation_between_cpu_and_wall_time():
    assert time_policy.charge(cpu_s=0.0, wall_s=10.0, starved_s=0.0) == 10.0  # a sleep
    assert time_policy.charge(cpu_s=1.0, wall_s=10.0, starved_s=8.5) == 1.5  # starved by others
    # Three busy cores for 3 s: charged the wall clock's 3 s, never its 9 s of CPU.
    assert time_policy.charge(cpu_s=9.0, wall_s=3.0, starved_s=0.0) == 3.0
    # Its own threads starving each other: charged at least its CPU time.
    assert time_policy.charge(cpu_s=2.0, wall_s=3.0, starved_s=5.0) == 2.0


class _Reaped:
    """A process of a run as psutil shows it: its CPU times, or gone once its parent reaped it."""

    def __init__(self, pid, own, children=0.0):
        self.pid, self.own, self.children, self.gone = pid, own, children, False

    def memory_info(self):
        return collections.namedtuple("Memory", "rss")(1 << 20)

    def cpu_times(self):
        if self.gone:
            raise psutil.NoSuchProcess(self.pid)
        return collections.namedtuple("Times", "user system children_user children_system")(
            self.own, 0.0, self.children, 0.0
        )


@pytest.mark.parametrize("gap", [0.0, 2.0], ids=["sampled on", "then 2 s unsampled"])
@pytest.mark.parametrize("reaped", ["after the parent's reading", "before it"])
def test_a_child_reaped_while_a_sample_is_read_is_not_counted_as_cores_kept_busy(
    monkeypatch, reaped, gap
):
    """A worker waits on its compiler child (3 s of CPU), which ends and is reaped while a
    sample is read. Reaped after the worker's reading, the child is in neither (read raw,
    that sample later starts the window and one busy core looks like two: in CI a mistaken
    file was stopped for too_many_cores 12 s into a 120 s limit); reaped before it, it is in
    the worker's children times and, as last seen, counted twice. Either way the run is not
    over its cores, even when the parent, busy, samples nothing for a while after."""
    clock = [100.0]
    monkeypatch.setattr(usage.time, "monotonic", lambda: clock[0])
    worker, compiler = _Reaped(10**7, own=2.0), _Reaped(10**7 + 1, own=3.0)
    reap = {"now": False}

    def reap_it():
        compiler.gone, worker.children = True, compiler.own

    class Racing(_Reaped):  # the worker, read first: the child was listed just before
        def cpu_times(self):
            if reap["now"] and reaped == "before it":
                reap_it()
            times = worker.cpu_times()
            if reap["now"] and reaped == "after the parent's reading":
                reap_it()
            return times

    racing = Racing(worker.pid, 0.0)
    tree = usage.TreeUsage(racing, lambda max_age: [] if compiler.gone else [compiler])
    peak = 0.0
    for step in range(200):  # 10 s at the sandbox's poll, the worker on one core throughout
        clock[0] += 0.05
        worker.own += 0.05
        reap["now"] = step == 100  # the window full
        peak = max(peak, tree.sample()[1])
        assert tree.cpu_used <= worker.own + compiler.own + 1e-9  # never charged twice
        if step == 100:
            clock[0] += gap
            worker.own += gap
    assert tree.cpu_used >= worker.own + compiler.own - 0.01
    assert peak < time_policy.cores_for("interpreter"), peak


@pytest.mark.parametrize("churn", [False, True], ids=["quiet", "a child vanishing at each read"])
def test_cores_kept_busy_after_a_process_left_the_tree_are_seen_within_the_window(
    monkeypatch, churn
):
    """The other side of the test above: a process that ran 40 s on one core and left the
    tree (reaped outside it, by the sandbox's server) takes its seconds with it; four busy
    cores after that must still be seen as soon as the window holds them, not once they
    make up the 40 s the tree lost, even by a run that has a short-lived child end between
    the listing and the reading of every sample."""
    clock = [100.0]
    monkeypatch.setattr(usage.time, "monotonic", lambda: clock[0])
    worker, left = _Reaped(10**7, own=1.0), _Reaped(10**7 + 1, own=40.0)
    pids = itertools.count(10**7 + 2)

    def members(max_age):
        fleeting = _Reaped(next(pids), own=0.01)
        fleeting.gone = True
        return ([] if left.gone else [left]) + ([fleeting] if churn else [])

    tree = usage.TreeUsage(worker, members)
    seen = []
    for step in range(200):
        clock[0] += 0.05
        left.gone = step >= 20
        if left.gone:
            worker.own += 4 * 0.05
        cores = tree.sample()[1]
        if cores > time_policy.cores_for("interpreter"):
            seen.append(step)
    assert seen and seen[0] <= 20 + 2 * time_policy.CPU_WINDOW_S / 0.05, seen[:1]


def test_a_warm_worker_s_warm_up_is_not_charged_to_its_run():
    """A pooled worker warms up (imports, a CUDA context) before its run is assigned, and no
    sample may have read its tree since it started: the clock's restart must, or the whole
    warm-up counts against the run's limit whenever its CPU time is what it is charged."""
    import types

    warm = subprocess.Popen(
        [sys.executable, "-c", "import time\nwhile time.process_time() < 1.0: pass\ntime.sleep(30)"]
    )
    try:
        tree = usage.TreeUsage(psutil.Process(warm.pid))
        while sum(psutil.Process(warm.pid).cpu_times()[:2]) < 0.9:  # ticks: never quite 1.0
            time.sleep(0.05)
        worker = types.SimpleNamespace(usage=tree)
        sandbox.Worker.restart_clock(worker)
        assert worker.cpu_base >= 0.9
        assert time_policy.charge(tree.cpu_used - worker.cpu_base, 0.5, 10.0) <= 0.5
    finally:
        warm.kill()
        warm.wait()


@pytest.mark.parametrize(
    "garbage",
    [
        b"\xff" * 64,
        protocol.struct.pack("<Q", 1 << 40),
        protocol.struct.pack("<Q", 40) + b'{"kind": "case", "payload": 10000000000}',
    ],
)
def test_a_malformed_or_huge_report_ends_the_run_not_the_parent(garbage):
    before = psutil.Process().memory_info().rss
    notes, ending = _probe(
        f"say('up')\nout.write({garbage!r})\nout.flush()\nimport time\ntime.sleep(5)\n"
    )
    assert ending.kind == "crashed" and "malformed" in ending.detail
    assert psutil.Process().memory_info().rss - before < 256 << 20


def test_no_sandbox_means_no_grading_unless_asked(tmp_path, monkeypatch, capsys):
    """A file that would run stops the batch (one refused before it runs needs no sandbox:
    grader/tests/test_sandbox_opening.py)."""
    (tmp_path / "class" / "ivan").mkdir(parents=True)
    shutil.copytree(DEMO / "ada", tmp_path / "class" / "ada")
    monkeypatch.setattr(sandbox, "check", lambda gpu, device=None: "no bwrap here (a test)")
    code = cli.main(
        ["grade", str(tmp_path / "class"), "--out", str(tmp_path / "out"), "--no-progress"]
    )
    assert code == ExitCode.FAILURE
    assert "--unsafe-no-sandbox" in capsys.readouterr().err
    assert not (tmp_path / "out" / "gradebook.csv").exists()
    assert not (tmp_path / "out" / "ada" / "record.json").exists()


def test_the_seed_file_keeps_the_seed_out_of_the_command_line(tmp_path):
    (tmp_path / "seed").write_text("not a number\n")
    result = run_grader(
        tmp_path,
        "grade",
        str(DEMO),
        "--out",
        str(tmp_path / "out"),
        "--seed-file",
        str(tmp_path / "seed"),
    )
    assert result.returncode == 2 and "--seed-file" in result.stderr
    (tmp_path / "seed").write_text("918273645\n")
    result = run_grader(
        tmp_path,
        "grade",
        str(DEMO),
        "--out",
        str(tmp_path / "out"),
        "--seed",
        "1",
        "--seed-file",
        str(tmp_path / "seed"),
    )
    assert result.returncode == 2 and "not allowed with" in result.stderr


@NEEDS_INTERPRETER
def test_a_hang_s_message_names_the_student_s_line(tmp_path, monkeypatch):
    """gus loops for ever in nt_gemm: the timeout says where, in his file's own words.

    Here his nt_gemm first replaces the SIGUSR1 handler, as LLVM does in a process's
    first GPU compile (on the GPU, a worker that answered from a handler said nowhere),
    and drops ``sys.stderr``, which the answer does not go through."""
    from grader.batch.grade import grading, intake
    from grader.tests.batch_helpers import DEMO, small_cases

    monkeypatch.setenv("TMPDIR", str(tmp_path))
    source = (DEMO / "gus" / "ninetoothed_gemm.py").read_text(encoding="utf-8")
    loop = "    while output.shape[0] > 0:"
    assert source.count(loop) == 1
    source = source.replace(
        loop,
        "    import signal, sys\n"
        "    signal.signal(signal.SIGUSR1, lambda *_: None)\n"
        "    sys.stderr = None\n" + loop,
    )
    source = source.encode()
    settings = grading.Settings(
        seed=7,
        backend="interpreter",
        timeout_s=8,
        memory_limit_bytes=4 << 30,
        case_filter=tuple(small_cases().split(",")[:1]),
    )
    record = grading.grade(intake.Submission("gus", "gus.py", source), settings, "gus")
    line = next(
        number
        for number, text in enumerate(source.decode().splitlines(), 1)
        if "while output.shape[0] > 0" in text
    )
    assert record["status"] == "timeout", record["message"]
    assert f"your code was at line {line}, in `while output.shape[0] > 0:" in record["message"]
    # For staff, every thread's stack as the time ran out, the grader's frames too.
    assert "(most recent call first)" in record["stderr"] and "worker.py" in record["stderr"]


def _stack(head, *frames):
    return (
        head
        + " (most recent call first):\n"
        + "".join(f'  File "{path}", line {line} in {name}\n' for path, line, name in frames)
    )


def test_the_hang_site_is_read_from_the_stack_of_the_thread_the_worker_named():
    """The innermost frame of the student's file in the main thread's stack, which the
    worker names after the dump; not a frame of another thread, nor a thread that a line
    the student printed names."""
    main, other = 0x7F00AA, 0x7F00BB
    student = "/job/ninetoothed_gemm.py"
    dump = "\n".join(
        [
            f"{protocol.HANG_SITE} thread {other:#x}",  # printed by the student's code
            _stack("Current thread 0x00007f00cc", ("/g/grader/batch/inside/worker.py", 9, "where")),
            _stack(f"Thread 0x{other:016x}", (student, 12, "helper")),
            _stack(
                f"Thread 0x{main:016x}",
                ("/site/torch/x.py", 3, "f"),
                (student, 85, "nt_gemm"),
                (student, 120, "<module>"),
                ("/g/grader/batch/inside/worker.py", 300, "main"),
            ),
            f"{protocol.HANG_SITE} thread {main:#x}",
            "",
        ]
    )
    assert sandbox.hang_site(dump) == (85, "nt_gemm")
    assert sandbox.hang_site(dump.replace(f"{main:#x}\n", "0x7f00dd\n")) is None  # no stack
    assert sandbox.hang_site(dump.replace(student, "/job/other.py")) is None  # no frame of it
    assert sandbox.hang_site(dump.rsplit(protocol.HANG_SITE, 1)[0]) is None  # no dump before
    assert sandbox.hang_site("Thread 0x1 (most recent call first):\n") is None
    # What the student prints can neither raise nor hold the parent: a line number too long
    # for int(), an ident of 32,000 zeros.
    forged = dump.replace("line 85 in", f"line {'1' * 5000} in")
    assert sandbox.hang_site(forged) == (120, "<module>")  # the next frame of the file
    started = time.monotonic()
    zeros = "0" * 32_000
    assert (
        sandbox.hang_site(
            f"Thread 0x{zeros * 3}ab (most recent call first):\n"
            f'  File "{student}", line 1 in f\n\n'
            f"{protocol.HANG_SITE} thread 0x{zeros}ab\n"
        )
        is None
    )
    assert time.monotonic() - started < 0.5


def _count_looks(monkeypatch):
    """A list that gains, at each look at a run's limits (usage.TreeUsage.sample), how old a
    process table the look accepted."""
    looks = []
    sample = usage.TreeUsage.sample
    monkeypatch.setattr(
        usage.TreeUsage,
        "sample",
        lambda self, max_age=0.0: looks.append(max_age) or sample(self, max_age),
    )
    return looks


def test_a_run_s_limits_are_looked_at_a_few_times_a_second_not_at_every_poll(monkeypatch):
    """Each look lists the host's processes and reads each of the run's threads; at every
    pipe poll (20 a second) they were a third of the parent's CPU while it graded 4 demo
    files. A run that sleeps 3 s is looked at about 3 / WATCH_S times."""
    looks = _count_looks(monkeypatch)
    _, ending = _probe("say('up')\nimport time\ntime.sleep(3)\n")
    assert ending.kind == "crashed", ending.detail  # it ended by itself
    assert 3 / sandbox.WATCH_S / 2 <= len(looks) <= 3 / sandbox.WATCH_S + 6, len(looks)
    # Each in the table the runs' looks share, but the first (the clock's restart) and the
    # last (the kill), which must see every process.
    assert looks.count(process_table.SHARED_S) >= len(looks) - 2, looks


def test_a_run_past_half_its_memory_limit_is_looked_at_at_every_poll(monkeypatch):
    """Memory fills faster than a few looks a second can follow: near its limit, a run is
    looked at every pipes.POLL_S, as before the looks were spaced."""
    looks = _count_looks(monkeypatch)
    _, ending = _probe(
        "x = bytearray(1200 << 20)\nsay('up')\nimport time\ntime.sleep(3)\n",
        sandbox.Limits(timeout_s=30, memory_bytes=2 << 30),
    )
    assert ending.kind == "crashed", ending.detail  # it ended by itself, under its limit
    assert len(looks) > 2 * (3 / sandbox.WATCH_S + 6) < 3 / pipes.POLL_S, len(looks)
    # Near the limit, each look reads a table of its own: a child that fills the rest is
    # seen at the next look, not up to process_table.SHARED_S after it.
    assert looks.count(0.0) >= 0.8 * len(looks), looks  # all but those before it filled


def test_memory_filled_in_one_burst_from_under_half_the_limit_is_still_stopped():
    """The spaced looks' weak spot: a run idles under half its limit, where it is looked at
    only every WATCH_S, then fills past the limit at once. The next look still stops it."""
    code = (
        "small = bytearray(900 << 20)\nsay('up')\nimport time\ntime.sleep(1)\n"
        "big = b'x' * (2500 << 20)\ntime.sleep(30)\n"
    )
    _, ending = _probe(code, sandbox.Limits(timeout_s=30, memory_bytes=2 << 30))
    assert ending.kind == "memory_limit", ending.detail
    assert ending.wall_time_s < 10


def test_memory_filled_by_a_child_started_after_the_shared_table_was_read_is_stopped():
    """The shared process table's weak spot (grader.batch.isolation.process_table): a child
    started since the last reading is not in it. A run that idles, then starts a child that
    fills past the limit at once, is still stopped, by a look at most SHARED_S later."""
    code = (
        "say('up')\nimport subprocess, time\ntime.sleep(1)\n"
        "subprocess.Popen([sys.executable, '-c', "
        "'import time; big = b\"x\" * (2500 << 20); time.sleep(60)'])\n"
        "time.sleep(30)\n"
    )
    _, ending = _probe(code, sandbox.Limits(timeout_s=30, memory_bytes=2 << 30))
    assert ending.kind == "memory_limit", ending.detail
    assert ending.wall_time_s < 10


def test_a_run_that_ends_as_soon_as_it_is_let_go_is_still_watched_and_reported():
    """A forked run starts at its go, and may end before the parent has made its handle on
    the run (under CI's load, a probe did). The handle is made while the run waits for its
    go, so the run's ending is reported, never a crash of the parent."""
    worker = sandbox.Worker(
        backend_name="interpreter",
        limits=LIMITS,
        inner=[sys.executable, "-c", "pass"],
        on_start=lambda process: process.wait(timeout=30),
    )
    assert worker.receive(lambda kind, fields: 0) is None
    assert worker.finish().kind == "crashed"  # it ended without the protocol's closing
