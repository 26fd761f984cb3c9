"""Red-team batch: submissions that attack the grader itself, graded in one class.

Every attack (grader/tests/attack_sources.py) is built at test time from the demo
reference (a correct kernel) or dana.py (a wrong one) plus a small snippet. The
class is graded once with an instructor's secret seed read from a file outside
the class folder and a secret in the grader's environment (GITHUB_TOKEN), next to
two ordinary neighbours: alice (the reference, with a marker comment an attacker
would love to copy) and bob (dana, a plain wrong kernel). For each attack the
tests check its status, that it gained nothing, that it harmed nobody (the
neighbours are graded exactly as when graded alone; the output folder, the
grader's sources, the host's /tmp and /dev/shm and its process table are as
before) and that it leaked nothing (no seed, secret, classmate's code, output
path or hidden shape in what a student is shown).

A second, small batch puts a CPU hog next to three copies of the reference, at half the
timeout (on a loaded box the hog keeps every core busy until its timeout: 2 cores for 23 s
at the full one). One long file: every check reads the
one class graded at module scope, which takes minutes to grade.

Knobs, for investigating rather than for CI: ``NTGEMM_ATTACK_TIMEOUT`` (seconds,
default 20: raise it on a machine loaded by other work, where innocent runs would
time out), ``NTGEMM_ATTACK_SKIP`` (attack names to leave out of the class), and
``NTGEMM_ATTACK_GRADER_ROOT=/path/to/another/checkout`` to grade the same classes
with that checkout's grader (a grader without ``--seed-file`` then gets ``--seed``).
An older grader may run the attacks unsandboxed: the daemon and the tamperer then
spoil only what lies under the test's own folder and that checkout's grader/ (their
``fence``), and every file and process they leave is removed by pid or by name.
"""

import csv
import glob
import hashlib
import io
import json
import os
import pathlib
import re
import subprocess
import sys
import time
import uuid

import psutil
import pytest

from grader.batch.record import Record
from grader.core import cases as catalogue
from grader.batch.inside import protocol
from grader.batch.outputs import reports
from grader.core.kernel_source import extract
from grader.tests import attack_sources as sources
from grader.tests.batch_helpers import CLASS_FILES, NEEDS_INTERPRETER

# Every batch here runs with NTGEMM_BACKEND=interpreter.
pytestmark = NEEDS_INTERPRETER

ROOT = pathlib.Path(__file__).resolve().parents[2]
GRADER_ROOT = pathlib.Path(os.environ.get("NTGEMM_ATTACK_GRADER_ROOT", ROOT)).resolve()
SEED, SECRET, MARKER = sources.SEED, sources.SECRET, sources.MARKER
TIMEOUT_S = float(os.environ.get("NTGEMM_ATTACK_TIMEOUT", "20"))
HOG_TIMEOUT_S = TIMEOUT_S / 2  # the neighbours need about 3 s of it
# Attacks to leave out of the class (comparing with an older grader that stops at one).
SKIPPED = {name for name in os.environ.get("NTGEMM_ATTACK_SKIP", "").split(",") if name}
PUBLIC_CASES = ("nonsquare-128x256x192", "tail_mnk-65x97x130")
NEIGHBOURS = {"alice": ("passed",), "bob": ("failed",)}
HOST_SCRATCH = (pathlib.Path("/tmp"), pathlib.Path("/dev/shm"))
# The leftovers attack fills its own /tmp, where NineToothed then cannot write the code it
# generates: its nt_gemm fails (ENOSPC), its own doing, and the batch goes on.
LEFTOVER_STATUSES = ("passed", "memory_limit", "failed")


def hidden_cases():
    return [case for case in catalogue.catalogue(SEED, "interpreter") if case.name == "hidden_1"]


def case_ids():
    return ",".join(list(PUBLIC_CASES) + [case.id for case in hidden_cases()])


def public_ks():
    chosen = {case.id: case for case in catalogue.catalogue(SEED, "interpreter")}
    return {chosen[case_id].k for case_id in PUBLIC_CASES}


def _alice_source():
    return sources.reference().replace(
        "import functools\n", f"import functools  # {MARKER}: alice's own work\n", 1
    )


def _seed_options(seed_file):
    cli = (GRADER_ROOT / "grader" / "batch" / "cli.py").read_text(encoding="utf-8")
    return ["--seed-file", str(seed_file)] if "--seed-file" in cli else ["--seed", str(SEED)]


def grade(base, submissions, out, timeout_s=TIMEOUT_S):
    """Grade ``submissions`` into ``out`` the way an instructor would, with the secrets set."""
    scratch = base / "tmp"
    scratch.mkdir(exist_ok=True)
    env = {
        **os.environ,
        "TMPDIR": str(scratch),
        "PYTHONPATH": str(GRADER_ROOT),
        "GITHUB_TOKEN": SECRET,
        "NTGEMM_BACKEND": "interpreter",
    }
    command = [
        sys.executable,
        "-m",
        "grader",
        "grade",
        str(submissions),
        "--out",
        str(out),
        "-j",
        "2",
        "--timeout",
        f"{timeout_s:g}",
        "--memory-limit",
        "1",
        "--cases",
        case_ids(),
        "--no-progress",
        *_seed_options(base / "secret-seed.txt"),
    ]
    try:
        return subprocess.run(
            command, cwd=GRADER_ROOT, capture_output=True, text=True, timeout=600, env=env
        )
    except subprocess.TimeoutExpired as error:  # still a result: the tests say what is missing

        def text(value):
            return value.decode("utf-8", "replace") if isinstance(value, bytes) else value or ""

        return subprocess.CompletedProcess(
            command, -9, text(error.stdout), f"the grader ran past 600 s\n{text(error.stderr)}"
        )


def write_submission(classdir, name, attack):
    if attack.folder is None:
        folder = classdir / name
        folder.mkdir()
        (folder / "ninetoothed_gemm.py").write_text(attack.source, encoding="utf-8")
        return
    folder = os.path.join(os.fsencode(classdir), os.fsencode(attack.folder))
    os.mkdir(folder)
    with open(os.path.join(folder, b"ninetoothed_gemm.py"), "wb") as stream:
        stream.write(attack.source.encode("utf-8"))


def write_neighbours(classdir):
    (classdir / "alice").mkdir()
    (classdir / "alice" / "ninetoothed_gemm.py").write_text(_alice_source(), encoding="utf-8")
    (classdir / "bob.py").write_text(sources.wrong(), encoding="utf-8")


def grader_sources():
    """The sha256 of every grader/*.py of this checkout and of the grader under test."""
    files = {}
    for root in {ROOT, GRADER_ROOT}:
        for path in sorted((root / "grader").rglob("*.py")):
            files[path] = hashlib.sha256(path.read_bytes()).hexdigest()
    return files


def tampered_sources(before, token):
    """grader/*.py files whose bytes changed during the batch *and* carry the tamperer's
    token (a change without it is someone's edit in a shared tree, never undone here).
    The tamperer's appended line is taken out again, and nothing else."""
    changed = {}
    for path, digest in before.items():
        data = path.read_bytes() if path.exists() else b""
        if hashlib.sha256(data).hexdigest() != digest and token.encode() in data:
            changed[str(path)] = data.decode("utf-8", "replace")[-200:]
            path.write_bytes(data.replace(f"\n# tampered by {token}\n".encode(), b""))
    return changed


def _belongs(process, token, base):
    """Whether ``process`` came from this batch: it carries ``token``, or it, or one of
    its ancestors, names a path under ``base`` (the batch's TMPDIR holds every job folder)."""
    try:
        chain = [process] + process.parents()
        for member in chain:
            line = " ".join(member.cmdline())
            if token in line or str(base) in line:
                return True
        return str(base) in process.cwd()
    except psutil.Error:
        return False


def processes_matching(words, token, base):
    found = []
    for process in psutil.process_iter(["pid", "cmdline"]):
        try:
            line = " ".join(process.info["cmdline"] or [])
        except psutil.Error:
            continue
        if (
            process.pid != os.getpid()
            and any(word in line for word in words)
            and _belongs(process, token, base)
        ):
            found.append((process.pid, line[:200]))
    return found


def survivors(words, token, base, wait_s=5.0):
    """This batch's processes still matching ``words`` after a short grace period; each
    is then ended, by pid (they were started by this test's submissions)."""
    deadline = time.monotonic() + wait_s
    while (found := processes_matching(words, token, base)) and time.monotonic() < deadline:
        time.sleep(0.2)
    for pid, _ in found:
        try:
            psutil.Process(pid).kill()
        except psutil.Error:
            pass
    return found


def host_leftovers(token, *folders):
    """Files named after ``token`` directly in the host's /tmp and /dev/shm, in any cache
    folder the daemon aims at, or anywhere under ``folders``; each is removed once seen."""
    paths = [path for folder in HOST_SCRATCH for path in folder.glob(f"*{token}*")]
    for pattern in (
        "/tmp/*/home/.ninetoothed",
        "/tmp/*/*/home/.ninetoothed",
        "/tmp/*/*/*/home/.ninetoothed",
        "/home/*/.ninetoothed",
        "/tmp/home/.ninetoothed",
    ):
        for folder in glob.glob(pattern):
            paths += pathlib.Path(folder).glob(f"*{token}*")
    paths += [path for folder in folders for path in pathlib.Path(folder).rglob(f"*{token}*")]
    for path in paths:
        try:
            path.unlink()
        except OSError:
            pass
    return [str(path) for path in paths]


def kernel_run_log(record):
    """The kernel run's part of a record's stderr (the nt_gemm run may run anything)."""
    return record["stderr"].split("[nt_gemm run]")[0]


@pytest.fixture(scope="module")
def batch(tmp_path_factory):
    base = tmp_path_factory.mktemp("attacks")
    token = f"ntgatk{uuid.uuid4().hex[:10]}"
    (base / "secret-seed.txt").write_text(f"{SEED}\n")
    classdir = base / "class"
    classdir.mkdir()
    # (An older grader under test may run the attacks unsandboxed: then only its own
    # checkout is offered to the tamperer, never the shared working tree.)
    attacks = sources.attacks(
        token, public_ks(), fence=f"{base}/", graders=(f"{GRADER_ROOT / 'grader'}/",)
    )
    attacks = {name: attack for name, attack in attacks.items() if name not in SKIPPED}
    for name, attack in attacks.items():
        write_submission(classdir, name, attack)
    write_neighbours(classdir)
    before_sources = grader_sources()
    caches = pathlib.Path.home() / ".ninetoothed"
    try:
        result = grade(base, classdir, base / "out")
    finally:
        # What the batch left behind, looked at (and cleaned up) at once, whatever happened.
        left_processes = survivors(
            [token, "grader.batch.inside.worker", "grader.batch.inside.forkserver"],
            token,
            base / "tmp",
        )
        left_files = host_leftovers(token, base / "tmp", caches)
        changed = tampered_sources(before_sources, token)
    alone = base / "alone"
    alone.mkdir()
    write_neighbours(alone)
    quiet = grade(base, alone, base / "alone-out")
    return {
        "base": base,
        "token": token,
        "attacks": attacks,
        "result": result,
        "quiet": quiet,
        "processes": left_processes,
        "files": left_files,
        "changed": changed,
    }


def _book(out):
    with open(out / "gradebook.csv", encoding="utf-8-sig", newline="") as stream:
        rows = list(csv.DictReader(stream))
    for row in rows:
        row.pop("wall_time_s", None)
    return {row["student"]: row for row in rows}


def _folder(out, student):
    with open(out / "students.csv", encoding="utf-8", newline="") as stream:
        mapping = {row["student"]: row["folder"] for row in csv.DictReader(stream)}
    return out / mapping[student]


def _record(out, student):
    return json.loads((_folder(out, student) / "record.json").read_text(encoding="utf-8"))


def _shown(out, student):
    """What the student is handed back: feedback.md and results.json."""
    folder = _folder(out, student)
    return "\n".join(
        (folder / name).read_text(encoding="utf-8") for name in ("feedback.md", "results.json")
    )


def _everyone(batch):
    return [sources.student_of(name, attack) for name, attack in batch["attacks"].items()] + list(
        NEIGHBOURS
    )


def _expected(batch):
    expected = {
        sources.student_of(name, attack): attack.expected
        for name, attack in batch["attacks"].items()
    }
    return {**expected, **NEIGHBOURS}


def _secrets(batch):
    base = batch["base"]
    return [
        str(SEED),
        SECRET,
        MARKER,
        str(base / "out"),
        str(base / "class"),
        str(base / "secret-seed.txt"),
    ]


# --------------------------------------------------------------------------- the batch


def test_the_batch_survives_and_grades_everyone(batch):
    result = batch["result"]
    assert result.returncode == 0, result.stderr[-3000:]
    assert set(_book(batch["base"] / "out")) == set(_everyone(batch))


@pytest.mark.parametrize(
    "name",
    [name for name in sources.attacks("TOKEN", {192, 130}) if name not in SKIPPED]
    + list(NEIGHBOURS),
)
def test_each_attack_gets_its_status(batch, name):
    attack = batch["attacks"].get(name)
    student = sources.student_of(name, attack) if attack else name
    row = _book(batch["base"] / "out")[student]
    assert row["status"] in _expected(batch)[student], (
        f"{name} ({attack.what if attack else 'neighbour'}): status {row['status']}, score "
        f"{row['score']}/{row['max_score']}, flags {row['flags']!r}; message: "
        f"{_record(batch['base'] / 'out', student)['message'][:600]}"
    )


def test_forged_report_gains_nothing(batch):
    out = batch["base"] / "out"
    book = _book(out)
    assert book["forge_report"]["score"] == book["bob"]["score"]
    assert book["forge_report"]["status"] != "passed"
    results = json.loads((_folder(out, "forge_report") / "results.json").read_text())
    assert results["score"] == int(book["bob"]["score"])
    assert "999" not in _shown(out, "forge_report")


def test_no_worker_ever_saw_a_secret(batch):
    """The forger printed argv, the environment and every cmdline it could read; the
    exfiltrator walked the disk: neither found the seed, the token, a path of the batch."""
    out = batch["base"] / "out"
    for student in _everyone(batch):
        folder = _folder(out, student)
        logs = (folder / "stderr.log").read_text(encoding="utf-8") + (
            folder / "stdout.log"
        ).read_text(encoding="utf-8")
        for secret in _secrets(batch):
            assert secret not in logs, (student, secret)
    assert "FORGE-SAW" in (_folder(out, "forge_report") / "stderr.log").read_text()


def test_laundered_answers_score_nothing(batch):
    row = _book(batch["base"] / "out")["launder"]
    assert row["score"] == "0" and row["status"] in ("failed", "flagged")


def test_neighbours_are_graded_exactly_as_alone(batch):
    base = batch["base"]
    assert batch["quiet"].returncode == 0, batch["quiet"].stderr[-3000:]
    crowded, alone = _book(base / "out"), _book(base / "alone-out")
    for student in NEIGHBOURS:
        assert crowded[student] == alone[student]
        assert (
            _record(base / "out", student)["cases"] == _record(base / "alone-out", student)["cases"]
        )


def test_no_worker_or_daemon_survives_the_batch(batch):
    out = batch["base"] / "out"
    assert "DAEMON-UP" in _record(out, "daemon")["stderr"]  # the daemon did start
    leftovers = _record(out, "leftovers")
    if leftovers["status"] != "memory_limit":  # else it may have been killed before it said so
        assert "LEFTOVERS-STARTED 200 sleepers" in leftovers["stderr"]
    assert batch["processes"] == []


def test_nothing_is_left_on_the_host(batch):
    """No file named after the batch's token in /tmp, /dev/shm, the grader's TMPDIR or
    ~/.ninetoothed: no leftovers, no poisoned caches, no /tmp/pwned-* from an escape."""
    assert batch["files"] == []


def test_the_grader_sources_are_byte_identical(batch):
    assert batch["changed"] == {}


def test_the_output_folder_holds_only_what_the_grader_wrote(batch):
    out = batch["base"] / "out"
    folders = {_folder(out, student).name for student in _everyone(batch)}
    expected = CLASS_FILES | folders
    assert {path.name for path in out.iterdir()} == expected
    for student in _everyone(batch):
        folder = _folder(out, student)
        record = reports.read_record(out, folder.name)
        assert record is not None and record["student"] == student, student
        assert {path.name for path in folder.iterdir()} == {
            "record.json",
            "results.json",
            "feedback.md",
            "stdout.log",
            "stderr.log",
        }
    assert not [path for path in out.rglob(f"*{batch['token']}*")]
    for name in ("gradebook.csv", "students.csv", "summary.csv", "batch.json", "environment.json"):
        text = (out / name).read_text(encoding="utf-8")
        assert batch["token"] not in text and ",999," not in text, name


def test_feedback_leaks_nothing(batch):
    """No student's feedback.md or results.json holds the seed, the instructor's secret,
    a classmate's code, the output or class path, or a hidden case's shape."""
    out = batch["base"] / "out"
    hidden = [f"{case.m}x{case.n}x{case.k}" for case in hidden_cases()]
    for student in _everyone(batch):
        shown = _shown(out, student)
        for secret in _secrets(batch) + hidden:
            assert secret not in shown, (student, secret)


def test_exfiltration_attempt_is_a_failed_nt_gemm(batch):
    out = batch["base"] / "out"
    record = _record(out, "exfiltrate")
    assert record["score"] == 0 and "EXFIL" in record["message"]


def test_a_plain_wrong_kernel_is_told_no_hidden_shape(batch):
    """bob attacks nothing: his feedback still names no seed and no hidden M, N or K."""
    shown = _shown(batch["base"] / "out", "bob")
    assert str(SEED) not in shown
    for case in hidden_cases():
        for text in (
            f"{case.m}x{case.n}x{case.k}",
            f"K={case.k}",
            f"M={case.m}",
            f"N={case.n}",
            f"of K={case.k}",
            f"of {case.m * case.n} elements",
            f"{case.k} columns",
            f":{case.k}",
        ):
            assert text not in shown, text


def test_hidden_k_never_reaches_feedback(batch):
    """leak_hidden_k exits with a hidden K as the kernel run's exit code: the feedback
    must not carry it (status and message alike)."""
    shown = _shown(batch["base"] / "out", "leak_hidden_k")
    for case in hidden_cases():
        assert f"exit code {case.k % 256}" not in shown
        assert not re.search(rf"(?<![\d.]){case.k}(?![\d.])", shown), case.k


def test_malformed_protocol_is_a_crash_and_the_parent_survives(batch):
    out = batch["base"] / "out"
    assert batch["result"].returncode == 0
    for student in ("bomb_header", "bomb_garbage"):
        record = _record(out, student)
        assert record["status"] == "crashed" and record["score"] == 0, record["message"]


def test_spoofed_exits_are_crashes_never_memory_limit(batch):
    out = batch["base"] / "out"
    assert "exit code 3" in _record(out, "exit_3")["message"]
    assert _record(out, "exit_3")["status"] == "crashed"
    assert _record(out, "sigkill_self")["status"] == "crashed"


def test_leftovers_and_sleepers_are_gone(batch):
    assert _record(batch["base"] / "out", "leftovers")["status"] in LEFTOVER_STATUSES
    assert not [path for path in batch["files"] if "leftover" in path]
    assert not [line for _, line in batch["processes"] if "leftover" in line]


@pytest.mark.parametrize(
    "name",
    [
        "escape_default",
        "escape_decorator",
        "escape_constant_call",
        "escape_ntl_core",
        "escape_dunder",
        "escape_continuation",
        "escape_symbol_env",
        "escape_symbol_walrus",
        "leak_hidden_k",
    ],
)
def test_whitelist_escapes_score_nothing_and_nothing_ran(batch, name):
    out, token = batch["base"] / "out", batch["token"]
    attack = batch["attacks"][name]
    record = _record(out, name)
    logs = kernel_run_log(record)
    ran = [path for path in batch["files"] if "pwned" in path]
    assert f"PWNED-{token}" not in logs and not ran, (
        f"{name}: code from the file ran in the kernel run (status {record['status']}, "
        f"score {record['score']}/{record['max_score']}); stderr: {logs[:400]!r}"
    )
    assert record["status"] in attack.expected and record["score"] == 0, (
        f"{name}: {record['status']} {record['score']}/{record['max_score']}"
    )
    if attack.flag_lines:  # a construct in the kernel's own code: named, with its line
        flags = " ".join(record["flags"])
        assert any(f"line {line}" in flags for line in attack.flag_lines), (
            flags,
            attack.flag_lines,
        )


def test_awkward_ids_are_graded_and_shown_as_text(batch):
    out = batch["base"] / "out"
    raw = (out / "gradebook.csv").read_bytes()
    text = raw.decode("utf-8")
    book = _book(out)
    assert book["李华"]["status"] == "passed"
    assert book["\\x1b[31mred"]["status"] == "passed"
    assert "\x1b" not in text and "\x1b" not in (out / "students.csv").read_text("utf-8")
    assert "\x1b" not in batch["result"].stderr
    assert "\x1b" not in _shown(out, "\\x1b[31mred")
    # Folders keep an id as written where every common file system can hold it, and
    # escape the rest (grader.batch.outputs.student_folders).
    assert _folder(out, "李华").name == "李华"
    escaped = _folder(out, "\\x1b[31mred").name
    assert not re.search(r'[\x00-\x1f\x7f\\/:*?"<>|]', escaped), escaped


# --------------------------------------------------------------------------- a CPU hog


@pytest.fixture(scope="module")
def hog_batch(tmp_path_factory):
    base = tmp_path_factory.mktemp("hog")
    (base / "secret-seed.txt").write_text(f"{SEED}\n")
    classdir = base / "class"
    classdir.mkdir()
    (classdir / "hog").mkdir()
    token = f"ntghog{uuid.uuid4().hex[:10]}"
    (classdir / "hog" / "ninetoothed_gemm.py").write_text(sources.cpu_hog(token), encoding="utf-8")
    for index in range(1, 4):
        (classdir / f"victim_{index}").mkdir()
        (classdir / f"victim_{index}" / "ninetoothed_gemm.py").write_text(sources.reference())
    try:
        result = grade(base, classdir, base / "out", HOG_TIMEOUT_S)
    finally:
        survivors([token], token, base / "tmp")
    return base, result


def test_a_cpu_hog_cannot_push_a_neighbour_past_the_timeout(hog_batch):
    """The hog starts hundreds of busy processes, each in a session of its own, in its
    nt_gemm run; the correct neighbours graded meanwhile must still pass."""
    base, result = hog_batch
    assert result.returncode == 0, result.stderr[-3000:]
    book = _book(base / "out")
    hurt = {
        student: (row["status"], row["score"])
        for student, row in book.items()
        if student.startswith("victim") and row["status"] != "passed"
    }
    assert hurt == {}, f"neighbours of the CPU hog lost their points: {hurt}"


# --------------------------------------------------------------------------- units


def _signed_record(out_dir):
    reports.store_record(
        out_dir, Record(student="zoe", folder="zoe", score=1, max_score=4, status="failed", key="k")
    )
    return out_dir / "zoe" / "record.json"


def test_a_record_edited_by_hand_is_refused(tmp_path):
    path = _signed_record(tmp_path)
    assert reports.read_record(tmp_path, "zoe").score == 1
    record = json.loads(path.read_text())
    record["score"] = 4
    path.write_text(json.dumps(record))
    assert reports.read_record(tmp_path, "zoe") is None
    record["score"] = 1  # edited back, re-serialised differently: still the signed content
    path.write_text(json.dumps(record, indent=4))
    assert reports.read_record(tmp_path, "zoe").score == 1


def test_a_record_signed_for_another_output_folder_is_refused(tmp_path):
    path = _signed_record(tmp_path / "first")
    (tmp_path / "second" / "zoe").mkdir(parents=True)
    reports.signing_key(tmp_path / "second")
    (tmp_path / "second" / "zoe" / "record.json").write_bytes(path.read_bytes())
    assert reports.read_record(tmp_path / "second", "zoe") is None


def test_a_symlinked_record_is_refused(tmp_path):
    path = _signed_record(tmp_path)
    (tmp_path / "ann").mkdir()
    (tmp_path / "ann" / "record.json").symlink_to(path)
    assert reports.read_record(tmp_path, "ann") is None


def test_the_protocol_reads_no_unasked_payload():
    header = json.dumps({"kind": "case", "payload": 10 * 2**30, "index": 0}).encode()
    stream = io.BytesIO(len(header).to_bytes(8, "little") + header + b"\0" * 64)
    with pytest.raises(protocol.ProtocolError, match="expected"):
        protocol.receive(stream, lambda kind, fields: 128)
    assert stream.tell() == 8 + len(header)  # not one payload byte was read
    huge = io.BytesIO((1 << 62).to_bytes(8, "little") + b"{}")
    with pytest.raises(protocol.ProtocolError, match="limit"):
        protocol.receive(huge, lambda kind, fields: 0)


def _runs_payload(text, marker):
    """Whether importing ``text`` (the rebuilt kernel file) prints ``marker`` to stderr."""
    probe = subprocess.run(
        [sys.executable, "-c", text],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    return marker in probe.stderr


REBUILD_ESCAPES = {
    "continuation": sources.append(
        sources.wrong(),
        """
        _X = 1 if 1 else \\
        __import__("os").write(2, b"PWNED-unit-continuation"); _WIDTH = (1 +
            0)
    """,
    ),
    "string_parity": sources.string_parity_escape(),
}


@pytest.mark.parametrize("name", list(REBUILD_ESCAPES))
def test_the_rebuild_never_keeps_code_it_did_not_check(name):
    """A statement the rebuild drops may end on the line where a kept multi-line
    statement starts; that line is kept whole, so the dropped statement's tail runs."""
    source = REBUILD_ESCAPES[name]
    rebuilt = extract(source)
    if rebuilt.violations:
        return
    assert not _runs_payload(rebuilt.text, "PWNED-"), (
        "no violation, and the rebuilt file runs code the whitelist never saw:\n"
        + "\n".join(line for line in rebuilt.text.splitlines() if "PWNED" in line)
    )


@pytest.mark.parametrize("name", ["escape_symbol_env", "escape_symbol_walrus"])
def test_a_string_never_reaches_a_symbol(name):
    """ninetoothed.Symbol(text) pastes ``text`` into the code NineToothed generates and
    runs: a kernel with any way to a string (an os.environ.get default, a walrus in an
    assert) must be flagged."""
    source = sources.attacks("TOKEN", {192, 130})[name].source
    assert extract(source).violations, "a string reaches ninetoothed.Symbol unflagged"
