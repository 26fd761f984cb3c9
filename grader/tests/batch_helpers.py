"""Shared by the batch grader's tests: run ``python -m grader`` and read what it wrote."""

import csv
import hashlib
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

from grader.batch import import_graph
from grader.core import backend, cases
from grader.tests import preloaded

ROOT = pathlib.Path(__file__).resolve().parents[2]
DEMO = ROOT / "grader" / "demo_class"
SEED = cases.DEFAULT_SEED
# What a batch writes at the top of OUT_DIR, beside one folder per student.
CLASS_FILES = {
    "gradebook.csv",
    "summary.csv",
    "summary.png",
    "students.csv",
    "environment.json",
    "batch.json",
    "skipped.csv",
    ".grader-key",
    ".grader-secret",
}
FRESH_PROCESSES = "NTGEMM_TESTS_FRESH_PROCESSES"  # set: every grader a new process
# For the tests that force NTGEMM_BACKEND=interpreter: on a machine whose Triton and numpy
# clash (the H200 host: triton 3.6, numpy 2.5) the kit refuses the interpreter, and says why.
NEEDS_INTERPRETER = pytest.mark.skipif(
    backend.interpreter_problem() is not None, reason=f"{backend.interpreter_problem()}"
)


def batch_backend():
    """The backend a batch run by these tests grades on, decided as the grader decides it."""
    from grader.batch.grade.machine import decide_backend

    return decide_backend()


def small_cases():
    """Three cases that still tell the demo's mistakes apart: non-square, all tails, hidden."""
    catalogue = {case.name: case.id for case in cases.catalogue(SEED, batch_backend())}
    return ",".join(["nonsquare-128x256x192", "tail_mnk-65x97x130", catalogue["hidden_1"]])


def environment(tmp_path):
    scratch = tmp_path / "tmp"
    scratch.mkdir(exist_ok=True)
    return {**os.environ, "TMPDIR": str(scratch), "PYTHONPATH": str(ROOT)}


def grader_command(*args):
    return [sys.executable, "-m", "grader", *args]


def run_grader(tmp_path, *args, timeout=900):
    """``python -m grader ARGS`` run to its end: forked from a process that has imported
    torch, pandas and matplotlib (grader.tests.preloaded), or a new process where
    NTGEMM_TESTS_FRESH_PROCESSES is set."""
    if os.environ.get(FRESH_PROCESSES):
        return subprocess.run(
            grader_command(*args),
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=timeout,
            env=environment(tmp_path),
        )
    return preloaded.run(args, cwd=ROOT, env=environment(tmp_path), timeout=timeout)


def run_pytest(*args, cwd=ROOT, env=None, timeout=600):
    """``python -m pytest ARGS`` run to its end in ``cwd``: forked from a process that has
    imported torch (grader.tests.preloaded), or a new process where
    NTGEMM_TESTS_FRESH_PROCESSES is set."""
    env = dict(os.environ) if env is None else env
    if os.environ.get(FRESH_PROCESSES):
        return subprocess.run(
            [sys.executable, "-m", "pytest", *args],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=timeout,
            env=env,
        )
    return preloaded.run(args, cwd=cwd, env=env, timeout=timeout, module="pytest")


def graded_class(base, catalogue, *options, names=None):
    """OUT of ``python -m grader grade`` with ``options`` on ``catalogue``'s variants (or
    only ``names``, grader.tests.source_edits.write_class) written under ``base``."""
    from grader.tests.source_edits import write_class

    folder = write_class(pathlib.Path(base) / "class", catalogue, names)
    result = run_grader(
        base, "grade", str(folder), "--out", str(pathlib.Path(base) / "out"), *options
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return pathlib.Path(base) / "out"


def copy_class(source, target):
    shutil.copytree(source, target, symlinks=True)
    return target


def tree_digest(root):
    digest = hashlib.sha256()
    for path in sorted(pathlib.Path(root).rglob("*")):
        digest.update(str(path.relative_to(root)).encode() + b"\0")
        if path.is_file() and not path.is_symlink():
            digest.update(path.read_bytes())
            digest.update(oct(path.stat().st_mode).encode())
    return digest.hexdigest()


def gradebook(out_dir, drop_times=True):
    with open(pathlib.Path(out_dir) / "gradebook.csv", encoding="utf-8-sig", newline="") as stream:
        rows = list(csv.DictReader(stream))
    if drop_times:
        for row in rows:
            row.pop("wall_time_s")
    return {row["student"]: row for row in rows}


def kit_files_loaded_alone(folder, imports, timeout=300):
    """Run ``imports`` (Python statements) in ``folder`` without site, so without this
    checkout's editable install: the files every kit module then came from, or the
    failed process's stderr as an AssertionError."""
    import sysconfig

    paths = [str(folder), sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]]
    code = (
        f"{imports}\nimport sys\nprint(sorted({{m.__file__ for m in list(sys.modules.values()) "
        f"if m.__name__.split('.')[0] in {(*import_graph.PACKAGES, 'conftest')!r}}}))"
    )
    result = subprocess.run(
        [sys.executable, "-S", "-c", code],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(paths)},
    )
    assert result.returncode == 0, result.stderr[-2000:]
    return eval(result.stdout)


def sandbox_probe(code, limits, render="str"):
    """Run ``code`` in a sandbox as a worker is run (forked by its server); its notes, each
    ``say(value)`` sent as ``render(value)``, and its ending. The probe's stream ends
    without the protocol's closing messages, so its ending is ``crashed`` unless a limit
    ended it first."""
    from grader.batch.isolation import sandbox

    program = (
        "import os, sys\nfrom grader.batch.inside import protocol\n"
        "out = os.fdopen(os.dup(1), 'wb')\n"
        f"def say(text):\n    protocol.send(out, 'hello', note={render}(text))\n" + code
    )
    worker = sandbox.Worker(
        backend_name="interpreter", limits=limits, inner=[sys.executable, "-c", program]
    )
    notes = []
    while (message := worker.receive(lambda kind, fields: 0)) is not None:
        notes.append(message.fields.get("note", ""))
    return notes, worker.finish()
