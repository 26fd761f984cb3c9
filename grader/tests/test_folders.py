"""Output folders keep the student's id as written where file systems can hold it
(grader.batch.outputs.student_folders), escape the rest, and stay put across runs of one OUT_DIR, the
student-<hash> folders of older graders included."""

import json
import shutil

import pytest

from grader.batch.record import Record
from grader.batch.outputs import reports, student_folders as folders
from grader.tests.batch_helpers import ROOT, gradebook, run_grader

AS_WRITTEN = ["alice", "李华", "Li Hua", "Zoë", "a_b", "O'Neil", "2+3", "王芳 (2)"]
ESCAPED = [
    "../etc",
    "..",
    ".",
    ".hidden",
    "a/b",
    "a\\b",
    "x:y",
    "why?",
    "con",
    "NUL.txt",
    "COM1",
    "trail.",
    " lead",
    "tail ",
    "x" * 200,
    "a\u200bb",
    "李" * 60,
    "\\x1b[31m",
    "-2+3",
    "=HYPERLINK(1)",
    "@x",
]


@pytest.mark.parametrize("student", AS_WRITTEN)
def test_an_id_every_file_system_holds_is_its_own_folder(student):
    assert folders.name_for(student) == student


@pytest.mark.parametrize("student", ESCAPED)
def test_what_some_file_system_cannot_hold_is_escaped_with_a_hash(student):
    name = folders.name_for(student)
    assert folders.holdable(name) and name != student
    assert len(name.encode("utf-8")) <= folders.MAX_BYTES
    assert name == folders.name_for(student), "the same id always gets the same folder"


def test_no_two_ids_share_a_folder_and_the_kept_part_reads_like_the_id():
    names = [folders.name_for(student) for student in AS_WRITTEN + ESCAPED]
    assert len(set(names)) == len(names)
    assert folders.name_for("a/b").startswith("a_b-")
    assert folders.name_for("李" * 60).startswith("李" * 46 + "-")
    assert folders.name_for("..").startswith("student-")


def test_ids_that_differ_only_by_case_get_folders_a_case_blind_disk_keeps_apart():
    assigned = folders.assign(["Ab", "ab", "zoe"])
    assert assigned["zoe"] == "zoe"
    assert len({assigned["Ab"].casefold(), assigned["ab"].casefold()}) == 2


def test_a_folder_an_earlier_run_gave_is_kept_and_a_bad_one_is_not():
    kept = {"李华": "student-ba9d5fb7d4", "ben": "../../outside"}
    assert folders.assign(["李华", "ben", "ada"], kept) == {
        "李华": "student-ba9d5fb7d4",
        "ben": "ben",
        "ada": "ada",
    }


def test_an_output_folder_of_the_old_naming_resumes_in_its_own_folders(tmp_path):
    """An OUT_DIR written when 李华's folder was student-ba9d5fb7d4 resumes there: nothing
    is graded again and no second folder appears for her."""
    submissions = tmp_path / "class"
    submissions.mkdir()
    skeleton = ROOT / "assignment" / "ninetoothed_gemm.py"
    for student in ("ben", "李华"):
        shutil.copy(skeleton, submissions / f"{student}.py")
    out = tmp_path / "out"
    options = [
        "--cases",
        "nonsquare-128x256x192",
        "--no-speed",
        "--no-progress",
        "--seed",
        "5eed5eed5eed5eed5eed5eed5eed5eed",
    ]
    first = run_grader(tmp_path, "grade", str(submissions), "--out", str(out), *options)
    assert first.returncode == 0, first.stderr
    assert (out / "李华" / "feedback.md").is_file()
    # What the grader before this naming wrote: the same files in student-<hash>.
    old = "student-ba9d5fb7d4"
    (out / "李华").rename(out / old)
    record = json.loads((out / old / "record.json").read_text(encoding="utf-8"))
    reports.store_record(out, Record.from_json({**record, "folder": old}))
    manifest = json.loads((out / "batch.json").read_text(encoding="utf-8"))
    manifest["students"]["李华"] = old
    (out / "batch.json").write_text(json.dumps(manifest), encoding="utf-8")
    again = run_grader(tmp_path, "grade", str(submissions), "--out", str(out), *options)
    assert again.returncode == 0, again.stderr
    assert "2 already graded, 0 to grade" in again.stderr
    assert not (out / "李华").exists() and (out / old / "feedback.md").is_file()
    assert gradebook(out)["李华"]["status"] == "not_implemented"
    students = (out / "students.csv").read_text(encoding="utf-8")
    assert f"李华,{old},李华.py" in students
