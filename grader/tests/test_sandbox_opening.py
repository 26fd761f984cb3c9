"""A batch opens its sandboxes when its first run needs one, not before.

Files the parent refuses before they run (a missing file, a placeholder, a syntax error, a
flagged kernel) need no sandbox: a class of only those starts none. Once a file is to run,
the sandbox check comes first, and a sandbox that cannot start stops the batch with the
advice, as before.
"""

import shutil
import threading

import pytest

from grader.batch.grade import grading, intake, session
from grader.batch.isolation import hosts, sandbox
from grader.batch.status import GraderError
from grader.tests.batch_helpers import DEMO, NEEDS_INTERPRETER, SEED, small_cases

REFUSED = {
    "ben": "not_implemented",
    "hana": "import_error",
    "ivan": "missing_file",
    "tom": "flagged",
}


def _class(root, runnable=()):
    root.mkdir()
    for student in ("ben", "hana", "ivan", *runnable):
        shutil.copytree(DEMO / student, root / student)
    (root / "tom").mkdir()
    text = (DEMO / "ada" / "ninetoothed_gemm.py").read_text(encoding="utf-8")
    (root / "tom" / "ninetoothed_gemm.py").write_text(
        text.replace("ntl.dot(lhs[k], rhs[k])", "torch.mm(lhs[k], rhs[k])"), encoding="utf-8"
    )
    return root


def _grade(tmp_path, classdir, monkeypatch):
    monkeypatch.setenv("NTGEMM_GPU_TARGET", "sm_90")
    settings = grading.Settings(
        seed=str(SEED),
        backend="interpreter",
        timeout_s=60,
        memory_limit_bytes=2 << 30,
        case_filter=tuple(small_cases().split(",")),
    )
    return session.start(settings, tmp_path / "out", jobs=2, progress=False).run(classdir)


@pytest.fixture
def checks(monkeypatch):
    """Every sandbox check asked for, each answered that bubblewrap cannot start."""
    asked = []

    def check(gpu, device=None):
        asked.append((gpu, device))
        return "no user namespaces in this container"

    monkeypatch.setattr(sandbox, "check", check)
    monkeypatch.setattr(hosts, "start_ahead", lambda *args: asked.append("ahead"))
    return asked


@NEEDS_INTERPRETER
def test_a_class_of_files_refused_before_they_run_starts_no_sandbox(tmp_path, monkeypatch, checks):
    started = hosts.counts()["started"]
    statuses = _grade(tmp_path, _class(tmp_path / "class"), monkeypatch)
    assert statuses == {status: 1 for status in REFUSED.values()}
    assert checks == [] and hosts.counts()["started"] == started


@NEEDS_INTERPRETER
def test_the_first_file_to_run_checks_the_sandbox_and_a_failed_check_stops_the_batch(
    tmp_path, monkeypatch, checks
):
    threads = threading.active_count()
    with pytest.raises(
        GraderError,
        match="the sandbox \\(bubblewrap\\) cannot start here: no "
        "user namespaces in this container\nFix that, or "
        "pass --unsafe-no-sandbox",
    ):
        _grade(tmp_path, _class(tmp_path / "class", runnable=("ada", "mia")), monkeypatch)
    assert checks == ["ahead", (False, None)]  # once, though both slots' files asked
    assert not any(
        (tmp_path / "out" / student / "record.json").exists() for student in ("ada", "mia")
    )
    # Nothing of the batch goes on once it has stopped (a later test's judge met its threads).
    assert threading.active_count() == threads, threading.enumerate()


def test_an_opening_cut_short_is_tried_again_and_a_refusal_is_said_to_every_caller():
    tries = []

    def open_them(files):
        tries.append(files)
        if len(tries) == 1:
            raise KeyboardInterrupt  # an interrupt while the check waited
        raise GraderError("no sandbox here")

    opening = session._Opening(open_them, 3)
    with pytest.raises(KeyboardInterrupt):
        opening.ensure()
    for _ in range(2):
        with pytest.raises(GraderError, match="no sandbox here"):
            opening.ensure()
    assert tries == [3, 3]  # once more after the interrupt, then never again


def test_the_first_wave_counts_only_files_that_may_run():
    """A sandbox is started ahead for each file of the first wave: the files the parent
    refuses for their text alone (missing, a placeholder, no parse) get none, while one
    the kernel check would refuse still counts (that check is not run twice)."""

    def submission(student, folder=None, problem=""):
        data = (
            (DEMO / (folder or student) / "ninetoothed_gemm.py").read_bytes()
            if not problem
            else b""
        )
        return intake.Submission(student, student, data=data, problem=problem)

    refused = [submission("ben"), submission("hana"), submission("ivan", problem="no file")]
    runnable = [submission("ada"), submission("mia")]
    flagged = intake.Submission(
        "tom",
        "tom",
        data=(DEMO / "ada" / "ninetoothed_gemm.py")
        .read_bytes()
        .replace(b"ntl.dot(lhs[k], rhs[k])", b"torch.mm(lhs[k], rhs[k])"),
    )
    assert [grading.may_run(s) for s in refused + runnable + [flagged]] == [
        False,
        False,
        False,
        True,
        True,
        True,
    ]
    assert session._first_files(refused + runnable[:1], 2) == 1
    assert session._first_files(refused + runnable, 2) == 2
    assert session._first_files(runnable + refused + [flagged], 2) == 2  # at most the slots
    assert session._first_files(refused, 4) == 0
    assert session._first_files(refused * 3 + runnable, 2) == 0  # only 4 x slots are read
    # A file Python's compiler gives up on is refused for its text (grader.core.nesting),
    # not raised: that failure is its own row, never the whole batch's.
    deep = intake.Submission("deep", "deep", data=b"x = " + b"1+" * 200000 + b"1\n")
    assert not grading.may_run(deep) and session._first_files([deep] + runnable[:1], 2) == 1


@pytest.mark.parametrize("backend", ["interpreter", "gpu"])
def test_the_parent_judges_on_one_torch_thread_on_the_interpreter_only(
    backend, tmp_path, monkeypatch
):
    import torch

    asked = []
    monkeypatch.setattr(torch, "set_num_threads", asked.append)
    settings = grading.Settings(
        seed=str(SEED), backend=backend, timeout_s=60, memory_limit_bytes=2 << 30
    )
    session.Session(settings, tmp_path / "out", slots=[None])
    assert asked == ([1] if backend == "interpreter" else [])
