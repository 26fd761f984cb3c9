"""The batch grader's parts that need no kernel run: intake, shards, GPUs, the worker's
environment, the command line and the handout."""

import os
import pathlib
import re
import shutil
import subprocess
import sys
import zipfile

import pytest

from grader.batch.record import Record
from grader.batch.grade import intake, machine
from grader.batch.isolation import launch
from grader.batch.status import ExitCode
from grader.tests.batch_helpers import (
    DEMO,
    NEEDS_INTERPRETER,
    environment,
    gradebook,
    run_grader,
    run_pytest,
    small_cases,
)
from solutions import MODEL_ANSWER

ROOT = pathlib.Path(__file__).resolve().parents[2]
REFERENCE = ROOT / "grader" / "demo_class" / "ada" / "ninetoothed_gemm.py"
SKELETON = ROOT / "assignment" / "ninetoothed_gemm.py"


def test_intake_reads_every_layout(tmp_path):
    (tmp_path / "alice").mkdir()
    (tmp_path / "alice" / "ninetoothed_gemm.py").write_text("A = 1\n")
    (tmp_path / "alice" / "benchmark.csv").write_text("m,n,k\n")
    (tmp_path / "bob.py").write_text("B = 1\n")
    (tmp_path / "carol_12345_67890_ninetoothed_gemm.py").write_text("C = 1\n")
    (tmp_path / "dave").mkdir()
    (tmp_path / "dave" / "notes.txt").write_text("no file\n")
    (tmp_path / "erin" / "src").mkdir(parents=True)
    (tmp_path / "erin" / "src" / "ninetoothed_gemm.py").write_text("E = 1\n")
    with zipfile.ZipFile(tmp_path / "张伟.zip", "w") as archive:
        archive.writestr("张伟/ninetoothed_gemm.py", "Z = 1\n")
    (tmp_path / ".DS_Store").write_text("")
    (tmp_path / "index.csv").write_text("id\n")
    found = {s.student: s for s in intake.discover(tmp_path)}
    assert sorted(found) == ["alice", "bob", "carol", "dave", "erin", "张伟"]
    assert found["alice"].data == b"A = 1\n" and found["carol"].data == b"C = 1\n"
    assert found["erin"].data == b"E = 1\n" and found["张伟"].data == b"Z = 1\n"
    assert found["dave"].problem and not found["dave"].data


@pytest.mark.parametrize(
    "member, words",
    [
        ("../escape/ninetoothed_gemm.py", "outside"),
        ("/abs/ninetoothed_gemm.py", "outside"),
        ("symlink", "symbolic link"),
        ("many", "members"),
        ("bomb", "uncompressed"),
    ],
)
def test_zip_guards_reject_dangerous_archives(tmp_path, member, words):
    path = tmp_path / "mallory.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        if member == "symlink":
            info = zipfile.ZipInfo("ninetoothed_gemm.py")
            info.external_attr = 0o120777 << 16
            archive.writestr(info, "/etc/passwd")
        elif member == "many":
            for index in range(intake.MAX_ZIP_MEMBERS + 1):
                archive.writestr(f"f{index}.txt", "")
        elif member == "bomb":
            archive.writestr("ninetoothed_gemm.py", "x = 1\n")
            archive.writestr("padding.bin", b"\0" * (intake.MAX_ZIP_TOTAL_BYTES + 1))
        else:
            archive.writestr(member, "x = 1\n")
    (submission,) = intake.discover(tmp_path)
    assert submission.student == "mallory"
    assert "rejected" in submission.problem and words in submission.problem


def test_two_entries_for_one_student_are_one_row_graded_from_the_latest(tmp_path):
    (tmp_path / "amy").mkdir()
    (tmp_path / "amy" / "ninetoothed_gemm.py").write_text("old = 1\n")
    (tmp_path / "amy.py").write_text("new = 1\n")
    os.utime(tmp_path / "amy" / "ninetoothed_gemm.py", (1_000_000, 1_000_000))
    os.utime(tmp_path / "amy.py", (2_000_000, 2_000_000))
    (amy,) = intake.discover(tmp_path)
    assert (amy.student, amy.origin, amy.data) == ("amy", "amy.py", b"new = 1\n")
    assert amy.seen == [
        ("amy/ninetoothed_gemm.py", "an older entry of the same student; graded amy.py, the latest")
    ]


def test_shards_partition_the_class_deterministically():
    class_ = [intake.Submission(f"s{index:02d}", "") for index in range(11)]
    shards = [intake.shard(list(reversed(class_)), index, 3) for index in (1, 2, 3)]
    ids = [s.student for shard in shards for s in shard]
    assert sorted(ids) == [s.student for s in class_]
    assert shards[0] == intake.shard(class_, 1, 3)


def test_one_worker_per_gpu_from_faked_devices():
    assert machine.assign_devices(2, ["0", "1"]) == ["0", "1"]
    assert machine.assign_devices(4, ["2", "5"]) == ["2", "5", "2", "5"]
    assert machine.assign_devices(3, []) == [None, None, None]
    assert machine.parse_gpus(None, environ={"CUDA_VISIBLE_DEVICES": "3,1"}) == ["3", "1"]
    assert machine.parse_gpus(None, environ={}, count=2) == ["0", "1"]
    assert machine.parse_gpus("0,2", environ={}) == ["0", "2"]
    assert machine.parse_gpus("none", environ={"CUDA_VISIBLE_DEVICES": "0"}) == []
    env = launch.child_environment("gpu", "/tmp/home", "/tmp", "/job/lib", device="1")
    assert env["CUDA_VISIBLE_DEVICES"] == "1" and env["HOME"] == "/tmp/home"


def test_default_jobs_fit_the_host():
    from grader.batch.grade.machine import default_jobs

    assert default_jobs(16, 1) == 8  # the hosts of docs/stress-runs/timeline.md
    assert default_jobs(2, 1) == 1
    assert default_jobs(8, 8) == 8  # never fewer workers than GPUs
    assert default_jobs(64, 4) == 32
    assert default_jobs(2, 0) == 2  # the interpreter: one per core


@pytest.mark.parametrize(
    "args, words",
    [
        (["grade", "no-such-dir", "--out", "x"], "SUBMISSIONS_DIR"),
        (["grade", "grader/demo_class", "--out", "x", "-j", "0"], "-j/--jobs"),
        (["grade", "grader/demo_class", "--out", "x", "--timeout", "-1"], "--timeout"),
        (["grade", "grader/demo_class", "--out", "x", "--memory-limit", "lots"], "--memory-limit"),
        (["grade", "grader/demo_class", "--out", "x", "--shard", "3/2"], "--shard"),
        (["grade", "grader/demo_class", "--out", "grader/demo_class/out"], "--out"),
        (["merge", "no-such-out", "--out", "x"], "no-such-out"),
    ],
)
def test_bad_arguments_are_named(tmp_path, args, words):
    args = [str(tmp_path / a) if a == "x" else a for a in args]
    result = run_grader(tmp_path, *args)
    assert result.returncode in (1, 2), result.stderr
    assert words in result.stderr
    assert "Traceback" not in result.stderr


def test_help_lists_the_options(tmp_path):
    result = run_grader(tmp_path, "grade", "--help")
    for option in (
        "--out",
        "-j",
        "--timeout",
        "--memory-limit",
        "--seed",
        "--force",
        "--shard",
        "--gpus",
    ):
        assert option in result.stdout


def test_handout_leaves_out_staff_tools_and_the_modules_that_import_them():
    from grader.batch.packaging import handout

    shipped = {str(relative) for _, relative in handout._handout_files()}
    assert {"benchmarks/harness.py", "benchmarks/cli.py", "benchmarks/lessons/ledger.py"} <= shipped
    for staff in (
        "explore_variants",
        "run_baselines",
        "tma_kernels",
        "triton_ceiling",
        "persistent_arrangement",
        "split_k",
    ):
        assert f"benchmarks/lab/{staff}.py" not in shipped
    assert not any(name.startswith(("grader/batch/", "solutions/")) for name in shipped)


def test_import_closure_follows_absolute_relative_and_circular_imports(tmp_path):
    from grader.batch import import_graph

    modules = {
        "staff": "REFERENCE = 1",
        "absolute": "from benchmarks.lab.staff import X",
        "relative": "from .staff import X",
        "package": "from benchmarks.lab import staff",
        "chain": "from . import relative",
        "plain": "import math",
        "loop_a": "from benchmarks.lab import loop_b",
        "loop_b": "from .loop_a import Y",
    }
    (tmp_path / "benchmarks" / "lab").mkdir(parents=True)
    for init in ("benchmarks", "benchmarks/lab"):
        (tmp_path / init / "__init__.py").write_text("")
    for name, source in modules.items():
        (tmp_path / "benchmarks" / "lab" / f"{name}.py").write_text(source + "\n")
    reaches_staff = {
        name
        for name in modules
        if "benchmarks.lab.staff" in import_graph.closure((f"benchmarks.lab.{name}",), tmp_path)
    }
    assert reaches_staff == {"staff", "absolute", "relative", "package", "chain"}
    assert import_graph.closure(("benchmarks.lab.loop_a",), tmp_path) == (
        "benchmarks",
        "benchmarks.lab",
        "benchmarks.lab.loop_a",
        "benchmarks.lab.loop_b",
    )


def test_handout_holds_no_solution_and_its_public_tests_run(tmp_path):
    result = run_grader(tmp_path, "handout", "--out", str(tmp_path / "out"))
    assert result.returncode == 0, result.stderr
    archive = tmp_path / "out" / "ntgemm-handout.zip"
    with zipfile.ZipFile(archive) as bundle:
        names = bundle.namelist()
        bundle.extractall(tmp_path / "student")
    reference = MODEL_ANSWER.read_bytes()
    assert not any(
        "solutions" in name or "/tests/" in name or "demo_class" in name for name in names
    )
    assert not any(
        name.endswith(("grader/batch/grade/grading.py", "grader/batch/cli.py")) for name in names
    )
    with zipfile.ZipFile(archive) as bundle:
        assert all(bundle.read(name) != reference for name in names)
    folder = tmp_path / "student" / "ntgemm-handout"
    env = {**os.environ, "PYTHONPATH": ""}
    skeleton = run_pytest("assignment", "-q", "-p", "no:cacheprovider", cwd=folder, env=env)
    assert skeleton.returncode == 1, skeleton.stdout + skeleton.stderr
    assert "[not_implemented]" in skeleton.stdout and "arrangement()" in skeleton.stdout
    # A copy outside the kit: pytest loads conftest.py files near paths on its command line.
    (tmp_path / "mine").mkdir()
    solution = tmp_path / "mine" / "ninetoothed_gemm.py"
    solution.write_bytes(REFERENCE.read_bytes())
    solved = run_pytest(
        "assignment",
        "-q",
        "-p",
        "no:cacheprovider",
        "--submission",
        str(solution),
        cwd=folder,
        env=env,
    )
    assert solved.returncode == 0, solved.stdout + solved.stderr
    # The student guide's self-check, `pytest grader --submission PATH`, needs the suite.
    suite = run_pytest(
        "grader",
        "-q",
        "-p",
        "no:cacheprovider",
        "--submission",
        str(solution),
        "-k",
        "arrangement or tail_mnk",
        cwd=folder,
        env=env,
    )
    assert suite.returncode == 0, suite.stdout + suite.stderr
    assert "2 passed" in suite.stdout, suite.stdout


def test_the_handout_imports_from_itself_alone(tmp_path):
    """Without site (so without this checkout's editable install), every kit module the
    handout ships, and its conftest.py, import from the handout folder alone."""
    from grader.batch.packaging import handout
    from grader.tests.batch_helpers import kit_files_loaded_alone

    folder, _ = handout.build(tmp_path)
    modules = sorted(
        ".".join(path.relative_to(folder).with_suffix("").parts)
        for package in ("ledger", "grader", "benchmarks")
        for path in (folder / package).rglob("*.py")
        if path.name != "__init__.py"
    )
    imports = f"import importlib\n[importlib.import_module(m) for m in {modules!r}]"
    loaded = kit_files_loaded_alone(folder, imports + "\nimport conftest")
    assert len(loaded) > len(modules) and all(path.startswith(str(folder)) for path in loaded)


def test_handout_holds_what_the_student_docs_point_to(tmp_path):
    from grader.batch.packaging import handout

    folder, _ = handout.build(tmp_path)
    docs = sorted((folder / "docs").glob("*.md"))
    assert {"student-guide.en.md", "explainer.en.md", "cases.md"} <= {d.name for d in docs}
    for doc in docs + [folder / "README.md"]:
        text = doc.read_text(encoding="utf-8")
        for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", text):
            assert (doc.parent / target).is_file(), f"{doc.name} links to missing {target}"
        for script in re.findall(r"python (docs/examples/\w+\.py)", text):
            assert (folder / script).is_file(), f"{doc.name} runs missing {script}"
        for path in re.findall(r"`((?:docs|assignment|grader)/[\w./-]+\.(?:py|md))`", text):
            assert (folder / path).is_file(), f"{doc.name} names missing {path}"
    assert (folder / "grader" / "test_grader.py").is_file()
    assert not (folder / "solutions").exists()


def test_a_refused_handout_is_an_error_message_not_a_traceback(tmp_path, monkeypatch, capsys):
    from grader.batch import cli
    from grader.batch.packaging import handout

    def refuse(out_dir, answer):
        raise ValueError("assignment/ninetoothed_gemm.py is a copy of the reference solution")

    monkeypatch.setattr(handout, "build", refuse)
    assert cli.main(["handout", "--out", str(tmp_path)]) == ExitCode.FAILURE
    assert (
        "cannot build the handout: assignment/ninetoothed_gemm.py is a copy"
        in capsys.readouterr().err
    )


def test_flagged_public_case_says_why_in_results_json():
    from grader.batch.outputs.feedback import results_json

    record = Record.from_json(
        {
            "status": "flagged",
            "score": 0,
            "max_score": 1,
            "message": "",
            "cases": [
                {
                    "id": "tail_m-65x128x128",
                    "name": "tail_m",
                    "visibility": "public",
                    "status": "flagged",
                    "points": 0,
                    "max_points": 1,
                    "message": "",
                }
            ],
        }
    )
    (test,) = results_json(record)["tests"]
    assert test["status"] == "failed"
    assert "anti-cheat" in test["output"]


def test_a_message_cannot_close_its_code_block_in_feedback_md():
    """A case's message is the student's (an assert's text in application(), say): a line of
    ``` in it closed the plain fence and put a forged score line into feedback.md."""
    from grader.batch.outputs.feedback import feedback_markdown

    forged = "**Score / 得分: 28 / 28**"
    message = f"AssertionError: no\n```\n{forged}\n````\n{forged}"
    record = Record.from_json(
        {
            "student": "eve",
            "status": "failed",
            "score": 0,
            "max_score": 1,
            "flags": [],
            "message": message,
            "cases": [
                {
                    "id": "tail_m-65x128x128",
                    "name": "tail_m",
                    "visibility": "public",
                    "status": "failed",
                    "points": 0,
                    "max_points": 1,
                    "message": message,
                }
            ],
        }
    )
    fence, outside = None, []
    for line in feedback_markdown(record, []).splitlines():
        run = re.match(r"`{3,}", line)
        if fence is None and run:
            fence = run.group()
        elif (
            fence is not None
            and line.strip()
            and set(line.strip()) == {"`"}
            and len(line.strip()) >= len(fence)
        ):
            fence = None
        elif fence is None:
            outside.append(line)
    assert forged not in outside and fence is None


def test_child_environment_is_an_allowlist(monkeypatch):
    from grader.batch.isolation.launch import child_environment

    monkeypatch.setenv("PWD", "/somewhere/with/the/outputs")
    monkeypatch.setenv("GITHUB_TOKEN", "instructor-secret")
    monkeypatch.setenv("NTGEMM_SEED", "918273645")
    env = child_environment("interpreter", "/tmp/home", "/tmp", "/job/lib")
    assert not {"PWD", "OLDPWD", "GITHUB_TOKEN", "NTGEMM_SEED"} & set(env)
    assert "instructor-secret" not in repr(env) and "918273645" not in repr(env)
    assert env["HOME"] == "/tmp/home" and env["PYTHONPATH"] == "/job/lib"


def test_upper_case_py_extension_is_a_submission(tmp_path):
    (tmp_path / "amy.PY").write_text("x = 1\n")
    (found,) = intake.discover(tmp_path)
    assert found.student == "amy"


def test_a_new_torch_triton_or_ninetoothed_means_grading_again(monkeypatch):
    import types

    from grader.batch.grade import grading

    submission = types.SimpleNamespace(sha256="abc", problem="", handin=b"")
    settings = grading.Settings(seed=1, backend="interpreter", timeout_s=10, memory_limit_bytes=1)
    before = grading.grading_key(submission, settings)
    monkeypatch.setattr(grading, "package_version", lambda name: "9.9.9")
    assert grading.grading_key(submission, settings) != before


def test_share_refuses_what_is_not_a_fresh_place_or_not_a_gradebook(tmp_path):
    from grader.batch.outputs import share

    out = tmp_path / "out"
    (out / "ada").mkdir(parents=True)
    with pytest.raises(ValueError, match="no students.csv"):
        share.build(out, tmp_path / "share")
    (out / "students.csv").write_text(
        "student,folder,origin,status\nada,ada,ada.py,passed\neve,../eve,eve.py,passed\n"
    )
    with pytest.raises(ValueError, match="inside"):
        share.build(out, out / "share")
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "x").write_text("")
    with pytest.raises(ValueError, match="not an empty folder"):
        share.build(out, tmp_path / "busy")
    with pytest.raises(ValueError, match="'../eve'"):  # a folder outside OUT_DIR is never read
        share.build(out, tmp_path / "share")
    assert not (tmp_path / "share").exists()  # and nothing was half written


@pytest.mark.parametrize("progress", [False, True], ids=["no-progress", "progress bar"])
def test_grade_prints_its_results_on_stdout_and_its_notes_on_stderr(tmp_path, progress):
    """Everything went to stderr, so `grade ... > results.txt` kept nothing. Judged from
    their text alone (a skeleton, a folder without the file), nothing of them runs. An id
    holding an ANSI escape is shown escaped on stdout too."""
    (tmp_path / "class" / "\x1b[31mivan").mkdir(parents=True)
    (tmp_path / "class" / "ben.py").write_bytes(SKELETON.read_bytes())
    out = tmp_path / "out"
    done = run_grader(
        tmp_path,
        "grade",
        str(tmp_path / "class"),
        "--out",
        str(out),
        "--unsafe-no-sandbox",
        "--cases",
        "tail_mnk-65x97x130",
        *([] if progress else ["--no-progress"]),
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()  # the students in the order they finish
    assert sorted(lines[:2]) == [
        "  \\x1b[31mivan: missing_file 0/1 (0.0 s)",
        "  ben: not_implemented 0/1 (0.0 s)",
    ]
    assert "\x1b" not in done.stdout + done.stderr
    assert lines[2:] == [
        "statuses: missing_file 1, not_implemented 1",
        "likely mistakes: 1 student: not_implemented",
        f"gradebook: {out / 'gradebook.csv'}",
    ]
    assert "ntgemm grader: 2 submission(s)" in done.stderr
    assert ": not_implemented" not in done.stderr and "statuses:" not in done.stderr
    assert ("grading" in done.stderr) == progress  # the bar's description


GRADE_WITH_A_BUG_FOR_EVE = """
import sys
from grader.batch.grade import grading
real = grading.grade
def grade(submission, *args, **kwargs):
    if submission.student == "eve":
        raise ValueError("a bug in the grader that eve's file triggers")
    return real(submission, *args, **kwargs)
grading.grade = grade
from grader.batch.cli import main
sys.exit(main(sys.argv[1:]))
"""


@NEEDS_INTERPRETER
def test_a_grader_bug_one_file_triggers_is_that_file_s_row_and_the_class_is_graded(tmp_path):
    """The batch never stops for one file: the others are graded, the file gets a "could not
    grade" row (0 points, the error, what to do), the command exits 0 naming it, and the next
    run grades only that file again."""
    submissions = tmp_path / "class"
    for name in ("ada", "eve"):
        (submissions / name).mkdir(parents=True)
        shutil.copy(DEMO / "ada" / "ninetoothed_gemm.py", submissions / name)
    out = tmp_path / "out"
    options = ["--out", str(out), "--no-progress", "--cases", small_cases()]
    broken = subprocess.run(
        [sys.executable, "-c", GRADE_WITH_A_BUG_FOR_EVE, "grade", str(submissions), *options],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        env=environment(tmp_path),
    )
    assert broken.returncode == ExitCode.OK, broken.stderr[-3000:]
    assert "eve: the grader failed while grading this file" in broken.stderr
    assert "ValueError: a bug in the grader that eve's file triggers" in broken.stderr
    assert "could not grade 1 file(s), not through the students' fault: eve" in broken.stderr
    book = gradebook(out)
    assert sorted(book) == ["ada", "eve"] and book["ada"]["status"] == "passed"
    assert book["eve"]["status"] == "crashed" and book["eve"]["score"] == "0"
    assert book["eve"]["message"].startswith("could not grade: the grader itself failed")
    again = run_grader(tmp_path, "grade", str(submissions), *options)
    assert again.returncode == 0, again.stderr[-3000:]
    assert "1 already graded, 1 to grade" in again.stderr
    assert {name: row["status"] for name, row in gradebook(out).items()} == {
        "ada": "passed",
        "eve": "passed",
    }


def test_an_interrupt_kills_the_runs_still_going_and_no_pid_an_ended_run_had(monkeypatch):
    """An ended run was reaped once the grader was done with it (its sandbox wiped, or its
    server told to release it): by the interrupt, its pid may name another process."""
    from grader.batch.grade import session

    class Run:
        def __init__(self, code):
            self.pid, self.code = os.getpid(), code

        def poll(self):
            return self.code

    killed = []
    monkeypatch.setattr(session, "_kill", killed.append)
    processes = session._Processes()
    ended, going, late = Run(0), Run(None), Run(None)
    processes.track(ended)
    processes.track(going)
    processes.stop_all()
    processes.track(late)  # started after the interrupt: killed at once
    assert killed == [going, late]


def test_a_whole_class_download_given_as_an_archive_is_refused_saying_to_unzip_it(tmp_path):
    download = tmp_path / "submissions.zip"
    with zipfile.ZipFile(download, "w") as archive:
        archive.writestr("ada_1_2_ninetoothed_gemm.py", "x = 1\n")
    with pytest.raises(intake.IntakeError, match=r"it is an archive.*unzip -d FOLDER ARCHIVE"):
        intake.discover(download)


def test_an_entry_whose_reading_raises_is_its_own_row_and_the_others_are_read(
    tmp_path, monkeypatch
):
    (tmp_path / "ada.py").write_text("a = 1\n")
    (tmp_path / "bob.py").write_text("b = 1\n")
    (tmp_path / "cy_77_1_ninetoothed_gemm.py").write_text("c = 1\n")
    real = intake._from_file

    def broken(root, path, student):
        if student in ("bob", "cy"):
            raise UnicodeError(f"a reader's bug on {student}")
        return real(root, path, student)

    monkeypatch.setattr(intake, "_from_file", broken)
    found = {s.student: s for s in intake.discover(tmp_path)}
    assert found["ada"].data == b"a = 1\n"
    for student in ("bob", "cy"):
        assert not found[student].data
        assert found[student].problem.startswith(
            f"could not read this entry (UnicodeError: a reader's bug on {student}); the "
            "grader gave it no points: open it, and grade it by hand or fix it"
        )
