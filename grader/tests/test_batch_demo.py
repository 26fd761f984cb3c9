"""The batch grader on the demo class: statuses, outputs, read-only input, regrading,
resuming after kill -9, and shards merged into one gradebook.

A three-case subset (``--cases``, a test-only option) keeps this file to a few
minutes on two cores; the README's command grades the demo class on the full catalogue.
"""

import csv
import io
import json
import os
import re
import shutil
import signal
import subprocess
import time

import pytest

from grader.batch.outputs.share import SHARED_CLASS_FILES
from grader.core import cases
from grader.tests.batch_helpers import (
    DEMO,
    ROOT,
    SEED,
    batch_backend,
    copy_class,
    environment,
    grader_command,
    gradebook,
    run_grader,
    small_cases,
    tree_digest,
)

EXPECTED = {
    "ada": "passed",
    "ben": "not_implemented",
    "chen": "failed",
    "dana": "failed",
    "eli": "failed",
    "fay": "flagged",
    "gus": "timeout",
    "hana": "import_error",
    "ivan": "missing_file",
    "kai": "crashed",
    "mia": "passed",
    "李华": "passed",
}
# 10 s per run, as the adversarial batch: time a run spends waiting for a core is not
# charged, and each run's limit grows by 0.25 s per tile step of its cases, so a loaded 2-core
# CI box does not push an honest run (about 3.5 s of its own here) to the limit (40 s was
# needed when the wall clock was charged). gus's hang spins for the whole limit.
OPTIONS = [
    "-j",
    "2",
    "--timeout",
    "10",
    "--cases",
    small_cases(),
    "--no-progress",
    "--seed",
    str(SEED),
]


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    base = tmp_path_factory.mktemp("demo")
    submissions = copy_class(DEMO, base / "class")
    before = tree_digest(submissions)
    result = run_grader(base, "grade", str(submissions), "--out", str(base / "out"), *OPTIONS)
    return base, submissions, before, result


def test_every_demo_submission_gets_its_status(graded):
    base, _, _, result = graded
    assert result.returncode == 0, result.stderr
    book = gradebook(base / "out")
    assert {student: row["status"] for student, row in book.items()} == EXPECTED
    for student, status in EXPECTED.items():  # the results on stdout, the notes on stderr
        assert f"  {student}: {status} " in result.stdout
        assert f"  {student}: {status} " not in result.stderr
    assert set(EXPECTED.values()) >= {
        "passed",
        "failed",
        "not_implemented",
        "import_error",
        "missing_file",
        "timeout",
        "crashed",
        "flagged",
    }


def test_readme_lists_each_demo_submission_with_its_status():
    readme = (DEMO / "README.md").read_text(encoding="utf-8")
    for student, status in EXPECTED.items():
        assert re.search(rf"{student}.*`{status}`", readme), student


def test_the_submissions_folder_is_unchanged(graded):
    _, submissions, before, _ = graded
    assert tree_digest(submissions) == before


def test_gradebook_columns_and_flags(graded):
    base = graded[0]
    book = gradebook(base / "out", drop_times=False)
    columns = list(next(iter(book.values())))
    assert columns[:12] == [
        "student",
        "score",
        "max_score",
        "status",
        "flags",
        "message",
        "likely_mistake",
        "lms_id",
        "lms",
        "late",
        "graded_file",
        "seen",
    ]
    assert columns[-3:] == ["wall_time_s", "isolation", "overrides"]
    assert columns[12:-3] == small_cases().split(",")
    # the key of each page's first hint: what the next lecture could take up
    assert (book["chen"]["likely_mistake"], book["ada"]["likely_mistake"]) == ("expand_axis", "")
    assert (book["eli"]["lms_id"], book["eli"]["lms"], book["eli"]["late"]) == (
        "4711",
        "canvas",
        "True",
    )
    assert (book["ada"]["lms_id"], book["ada"]["lms"], book["ada"]["late"]) == ("", "", "False")
    assert "did not return its kernel's output" in book["fay"]["flags"]
    # why each status, in one line: the flag, the first error, the first failed case
    assert book["fay"]["message"] == book["fay"]["flags"]
    assert "exit code 7" in book["kai"]["message"] and book["ada"]["message"] == ""
    assert re.fullmatch(r"\d of 3 cases failed; first: \S+.*", book["eli"]["message"])
    assert all("\n" not in row["message"] for row in book.values())
    assert {row["isolation"] for row in book.values()} == {"bubblewrap"}
    assert book["ada"]["score"] == book["ada"]["max_score"]
    assert float(book["gus"]["wall_time_s"]) >= 10


def test_hand_in_csvs_are_read_and_checked_as_far_as_a_cpu_can(graded):
    """ada's CSV is her own file's genuine H200 run, mia's has made-up speeds: without a
    GPU neither can be compared by numbers, so neither is flagged, and both say why."""
    out = graded[0] / "out"
    students = json.loads((out / "batch.json").read_text())["students"]
    for student in ("ada", "mia"):
        record = json.loads((out / students[student] / "record.json").read_text())
        assert record["handin"]["verdict"] == (
            "not compared"
            if batch_backend() == "interpreter"
            else {"ada": "consistent", "mia": "mismatch"}[student]
        )
        assert record["handin"]["file"].endswith(".csv")
    record = json.loads((out / students["mia"] / "record.json").read_text())
    assert record["tiles"] == [128, 64, 32]


def test_per_student_files_and_hidden_cases_stay_hidden(graded):
    out = graded[0] / "out"
    hidden = [case for case in cases.catalogue(SEED, batch_backend()) if case.name == "hidden_1"][0]
    for student in EXPECTED:
        folder = out / json.loads((out / "batch.json").read_text())["students"][student]
        for name in ("results.json", "feedback.md", "stdout.log", "stderr.log", "record.json"):
            assert (folder / name).is_file(), (student, name)
        results = json.loads((folder / "results.json").read_text(encoding="utf-8"))
        assert {"score", "tests"} <= set(results)
        for test in results["tests"]:
            assert {"name", "score", "max_score", "status", "output", "visibility"} <= set(test)
            if test["name"].startswith("hidden_1"):
                shown = test["name"] + test["output"]
                assert hidden.label not in shown and f"{hidden.m}x" not in shown
                assert str(hidden.k) not in shown
        feedback = (folder / "feedback.md").read_text(encoding="utf-8")
        assert "Status / 状态" in feedback and hidden.label not in feedback
    chen = (out / "chen" / "feedback.md").read_text(encoding="utf-8")
    assert "expanded along the wrong axis" in chen and "expand" in chen
    # chen's arrangement, drawn by the parent at the failing public shape, beside feedback.md
    assert "](arrangement.png)" in chen and "M=128, N=256, K=192" in chen
    assert (out / "chen" / "arrangement.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not (out / "dana" / "arrangement.png").exists()  # its arrangement is right
    hana = json.loads((out / "hana" / "record.json").read_text())
    assert "line" in hana["message"]
    kai = json.loads((out / "kai" / "record.json").read_text())
    assert "exit code 7" in kai["message"]


def test_class_files(graded):
    out = graded[0] / "out"
    summary = list(csv.DictReader(io.StringIO((out / "summary.csv").read_text())))
    assert [row["case"] for row in summary[:3]] == small_cases().split(",")
    assert all(row["pass_rate"] and not row["likely_mistake"] for row in summary[:3])
    # then the class's tally of likely mistakes, as the gradebook counts them, and the console's
    named = [row["likely_mistake"] for row in gradebook(out).values() if row["likely_mistake"]]
    tally = {row["likely_mistake"]: int(row["students"]) for row in summary[3:]}
    assert tally == {key: named.count(key) for key in named} and "expand_axis" in tally
    assert [row["case"] for row in summary[3:]] == [""] * len(tally)
    counts = [int(row["students"]) for row in summary[3:]]
    assert counts == sorted(counts, reverse=True)
    first, said = summary[3], graded[3].stdout
    assert f"\nlikely mistakes: {first['students']} student" in said
    assert f": {first['likely_mistake']}" in said.split("likely mistakes: ")[1].split(";")[0]
    assert (out / "summary.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    env = json.loads((out / "environment.json").read_text())
    for key in (
        "gpu",
        "driver",
        "cuda",
        "torch",
        "triton",
        "ninetoothed",
        "grader_revision",
        "secret_fingerprint",
        "timestamp",
        "backend",
    ):
        assert key in env
    assert env["secret_fingerprint"] == cases.fingerprint(SEED)
    assert env["backend"] == batch_backend()
    assert env["submissions_unchanged"] is True
    assert env["isolation"] == "bubblewrap"
    # Where the batch's seconds went, phase by phase (no second grading nor timing on the
    # interpreter), and the grader's own CPU beside its workers'.
    phases = list(env["phase_s"])
    assert (
        phases == ["grading"]
        if batch_backend() == "interpreter"
        else phases[0] == "grading" and set(phases) <= {"grading", "confirming", "timing"}
    )
    assert 0 < sum(env["phase_s"].values()) <= env["elapsed_s"]
    assert 0 < env["grader_cpu_s"]
    # One compile per distinct generated kernel: ada, fay, gus and kai differ only in nt_gemm.
    records = [json.loads(path.read_text()) for path in out.glob("*/record.json")]
    built = [record for record in records if record.get("gpu_build")]
    gate = env["compile_gate"]  # "stored": made by an earlier batch (grader/tests/conftest.py)
    reused = gate.get("shared", 0) + gate.get("stored", 0)
    assert sum(gate.values()) == len(built) and reused >= 3, gate
    assert sum(record["gpu_build_shared"] for record in built) == reused
    by_student = {record["student"]: record.get("gpu_build") for record in records}
    assert by_student["ada"] == by_student["fay"] == by_student["gus"] == by_student["kai"]
    if batch_backend() == "interpreter":  # a sandbox per slot, and one for each closed
        sandboxes, slots = env["sandboxes"], int(OPTIONS[OPTIONS.index("-j") + 1])
        assert sandboxes["started"] <= slots + sum(sandboxes["closed"].values()), sandboxes


def test_share_hands_back_feedback_and_nothing_that_names_a_hidden_case(graded):
    base = graded[0]
    result = run_grader(base, "share", str(base / "out"), "--out", str(base / "share"))
    assert result.returncode == 0, result.stderr
    hidden = [case for case in cases.catalogue(SEED, batch_backend()) if case.name == "hidden_1"][0]
    folders = json.loads((base / "out" / "batch.json").read_text())["students"]
    shared = sorted(
        str(path.relative_to(base / "share"))
        for path in (base / "share").rglob("*")
        if path.is_file()
    )
    board = [name for name in SHARED_CLASS_FILES if (base / "out" / name).is_file()]  # on a GPU
    drawn = [
        f"{folder}/arrangement.png"
        for folder in folders.values()
        if (base / "out" / folder / "arrangement.png").is_file()
    ]
    assert "chen/arrangement.png" in drawn
    assert shared == sorted(
        ["index.csv"]
        + board
        + drawn
        + [
            f"{folder}/{name}"
            for folder in folders.values()
            for name in ("feedback.md", "results.json")
        ]
    )
    for path in (base / "share").rglob("*.*"):
        if path.suffix != ".png":
            assert hidden.label not in path.read_text(encoding="utf-8"), path
    index = (base / "share" / "index.csv").read_text(encoding="utf-8").splitlines()
    assert index[0] == "student,folder" and len(index) == 1 + len(EXPECTED)


# Everyone but gus, whose hang would only take its whole time limit again: the class graded a
# second time, as two shards, the first killed midway and resumed, then merged. So one
# second grading checks resuming, regrading and merging against the single run.
AGAIN = tuple(student for student in EXPECTED if student != "gus")


def _entry_student(entry):
    return entry.name.split("_")[0].removesuffix(".py").removesuffix(".zip")


@pytest.fixture(scope="module")
def regraded(graded):
    base, submissions, _, _ = graded
    again = base / "again"
    again.mkdir()
    for entry in submissions.iterdir():
        if _entry_student(entry) not in AGAIN:
            continue
        if entry.is_dir():
            shutil.copytree(entry, again / entry.name)
        else:
            shutil.copy2(entry, again / entry.name)
    first = base / "shard1"
    process = subprocess.Popen(
        grader_command("grade", str(again), "--out", str(first), "--shard", "1/2", *OPTIONS),
        cwd=ROOT,
        env=environment(base),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.monotonic() + 300
    while len(list(first.glob("*/record.json"))) < 3 and time.monotonic() < deadline:
        time.sleep(0.2)
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    done = len(list(first.glob("*/record.json")))
    resumed = run_grader(base, "grade", str(again), "--out", str(first), "--shard", "1/2", *OPTIONS)
    second = run_grader(
        base, "grade", str(again), "--out", str(base / "shard2"), "--shard", "2/2", *OPTIONS
    )
    assert second.returncode == 0, second.stderr
    merged = run_grader(
        base, "merge", str(first), str(base / "shard2"), "--out", str(base / "merged")
    )
    assert merged.returncode == 0, merged.stderr
    return done, resumed


def test_a_batch_killed_midway_resumes(graded, regraded):
    done, resumed = regraded
    shard = json.loads((graded[0] / "shard1" / "batch.json").read_text())["students"]
    assert 3 <= done < len(shard)
    assert resumed.returncode == 0, resumed.stderr
    already = int(re.search(r"(\d+) already graded", resumed.stderr).group(1))
    assert already >= done - 1  # the kill may land between two files of one student


def test_regrading_and_merging_shards_give_the_single_run_s_rows(graded, regraded):
    base = graded[0]
    single = {student: row for student, row in gradebook(base / "out").items() if student in AGAIN}
    assert set(single) == set(AGAIN)
    assert not set(gradebook(base / "shard1")) & set(gradebook(base / "shard2"))
    assert gradebook(base / "merged") == single
    assert list(gradebook(base / "merged")) == list(single)
    assert (base / "merged" / "ada" / "feedback.md").is_file()
    reuse = run_grader(
        base,
        "grade",
        str(base / "again"),
        "--out",
        str(base / "shard2"),
        "--shard",
        "2/2",
        *OPTIONS,
    )
    assert re.search(r"(\d+) already graded, 0 to grade", reuse.stderr), reuse.stderr
    kept = gradebook(base / "shard2")
    assert kept == {student: row for student, row in single.items() if student in kept}


def test_a_merge_missing_a_result_is_refused(graded, regraded):
    base = graded[0]
    shutil.copytree(base / "shard2", base / "shard2-broken")
    victim = next((base / "shard2-broken").glob("*/record.json"))
    victim.unlink()
    incomplete = run_grader(
        base, "merge", str(base / "shard1"), str(base / "shard2-broken"), "--out", str(base / "bad")
    )
    assert incomplete.returncode == 1 and "no finished result" in incomplete.stderr


def test_the_demo_gradebook_exports_to_canvas_with_its_names_as_written(graded):
    """Read back as a spreadsheet reads it: the BOM says UTF-8, every cell is text."""
    base = graded[0]
    target = base / "canvas.csv"
    result = run_grader(
        base,
        "export",
        str(base / "out"),
        "--format",
        "canvas",
        "--out",
        str(target),
        "--assignment",
        "NineToothed GEMM (1234)",
    )
    assert result.returncode == 0, result.stderr
    data = target.read_bytes()
    assert data.startswith(b"\xef\xbb\xbf")
    rows = {row["Student"]: row for row in csv.DictReader(io.StringIO(data.decode("utf-8-sig")))}
    assert set(rows) == set(EXPECTED)
    assert rows["李华"]["NineToothed GEMM (1234)"] == gradebook(base / "out")["李华"]["score"]
    assert rows["eli"]["ID"] == "4711" and rows["ada"]["ID"] == ""
    assert "have no LMS id" in result.stderr and "李华" in result.stderr
    moodle = run_grader(
        base, "export", str(base / "out"), "--format", "moodle", "--out", str(base / "moodle.csv")
    )
    assert moodle.returncode == 1 and "eli (Canvas id 4711)" in moodle.stderr
