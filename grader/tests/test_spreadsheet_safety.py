"""Every CSV the batch grader writes opens in a spreadsheet without evaluating anything.

Student ids that look like formulas go through the real writers (a student's files,
the class files, share, the three exports); each written CSV is read back with the csv
module, as a spreadsheet reads it, and no text cell may start with = + - @ TAB CR.
Records are graded from the unfinished skeleton, so no kernel runs.
"""

import csv
import dataclasses
import io
import re

import pytest

from grader.batch.grade import grading, intake
from grader.batch.outputs import export, reports, share, student_folders as folders
from grader.tests.batch_helpers import ROOT
from grader.tests.test_speed import timed_record

SKELETON = (ROOT / "assignment" / "ninetoothed_gemm.py").read_bytes()
HOSTILE = ['=HYPERLINK("http://x","y")', "+1+1", "-2+3", "@SUM(A1)", "\t=1", "\r=1"]
AS_WRITTEN = ['lee, "jo"', "李华"]  # a spreadsheet shows these as they are
TIMED = ("-2+3", "李华")  # on the leaderboard and with a speed.csv
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
ORIGINS = {"canvas": "x_{}_1_ninetoothed_gemm.py", "moodle": "x_{}_assignsubmission_file_/"}
# A student's exception text, which the gradebook's message column quotes: its first line.
MESSAGE = '=HYPERLINK("http://x","importing failed")\n  File "ninetoothed_gemm.py", line 3'


def graded(student, lms_id):
    """The record of ``student``'s unfinished file; the raw id is put back afterwards, since
    intake escapes tabs and carriage returns and the writers must not rely on it."""
    settings = grading.Settings(seed=1, backend="interpreter", timeout_s=10, memory_limit_bytes=1)
    submission = intake.Submission(student, f"{student}.py", data=SKELETON, lms_id=lms_id)
    record = grading.grade(submission, settings, folders.name_for(student))
    record["student"] = student
    if student in TIMED:
        record.status, record.speed = "passed", timed_record(student).speed
    record["flags"] = [f"{student} is flagged for review"]
    record["message"] = MESSAGE
    return record, settings.cases()


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    """Every CSV the batch writes for a class of hostile ids, and the output folder."""
    base = tmp_path_factory.mktemp("spreadsheet")
    out = base / "out"
    records = []
    for number, student in enumerate(HOSTILE + AS_WRITTEN, start=100):
        record, cases_list = graded(student, str(number))
        reports.write_student(out, record, cases_list)
        records.append(record)
    reports.write_class(out, records, cases_list)
    share.build(out, base / "share")
    for kind in export.FORMATS:  # each LMS takes the ids it gave alone: a class of each
        book = out if kind == "csv" else base / kind
        if kind != "csv":
            reports.write_class(
                book,
                [
                    dataclasses.replace(record, origin=ORIGINS[kind].format(record.lms_id))
                    for record in records
                ],
                cases_list,
            )
        export.export(book, kind, base / "exports" / f"{kind}.csv", "GEMM (1234)")
    files = sorted(base.rglob("*.csv"))
    return out, base, {path.relative_to(base).as_posix(): read(path) for path in files}


def read(path):
    with open(path, encoding="utf-8-sig", newline="") as stream:
        return list(csv.reader(stream))


def is_number(cell):
    return re.fullmatch(r"-?\d+(\.\d+)?(e-?\d+)?", cell) is not None


def test_every_csv_the_batch_writes_is_there(written):
    _, _, tables = written
    expected = {
        "out/gradebook.csv",
        "out/summary.csv",
        "out/students.csv",
        "out/leaderboard.csv",
        "out/leaderboard-staff.csv",
        "share/index.csv",
        "exports/canvas.csv",
        "exports/moodle.csv",
        "exports/csv.csv",
    }
    assert expected <= set(tables)
    assert sum(name.endswith("/speed.csv") for name in tables) == len(TIMED)


def test_no_cell_of_any_csv_starts_like_a_formula(written):
    _, _, tables = written
    dangerous = [
        (name, cell)
        for name, rows in tables.items()
        for row in rows
        for cell in row
        if cell.startswith(FORMULA_STARTS) and not is_number(cell)
    ]
    assert not dangerous


def test_ids_keep_their_text_and_numbers_stay_numbers(written):
    _, _, tables = written
    book = {row[0]: row for row in tables["out/gradebook.csv"][1:]}
    assert set(book) == {"'" + student for student in HOSTILE} | set(AS_WRITTEN)
    header = tables["out/gradebook.csv"][0]
    for row in book.values():
        assert is_number(row[header.index("score")]) and is_number(row[header.index("lms_id")])
    assert book['lee, "jo"'][header.index("flags")] == 'lee, "jo" is flagged for review'
    assert {row[header.index("message")] for row in book.values()} == {
        "'" + MESSAGE.splitlines()[0]
    }
    staff = tables["out/leaderboard-staff.csv"]
    assert [row[1] for row in staff[1:]] == ["'-2+3", "李华"] and staff[1][0] == "1"
    public = tables["out/leaderboard.csv"]
    assert [row[1] for row in public[1:]] == [row[2] for row in staff[1:]]
    assert all(row[1].startswith("anon-") for row in public[1:])
    speeds = [
        rows[1][rows[0].index("submission")]
        for name, rows in tables.items()
        if name.endswith("/speed.csv")
    ]
    assert sorted(speeds) == sorted(["'-2+3", "李华"])


def test_exports_and_share_still_match_every_student(written):
    """The exports read the gradebook back: its quoted ids are kept, never quoted twice,
    and the LMS ids, by which an LMS matches rows, are untouched."""
    out, base, tables = written
    assert tables["exports/csv.csv"] == tables["out/gradebook.csv"]
    students = {row[0] for row in tables["out/gradebook.csv"][1:]}
    canvas = tables["exports/canvas.csv"]
    assert {row[0] for row in canvas[1:]} == students
    assert sorted(row[1] for row in canvas[1:]) == [str(n) for n in range(100, 108)]
    moodle = tables["exports/moodle.csv"]
    assert {row[1] for row in moodle[1:]} == students
    assert all(row[0].startswith("Participant 1") for row in moodle[1:])
    index = tables["share/index.csv"]
    assert {row[0] for row in index[1:]} == students
    assert all((base / "share" / folder / "feedback.md").is_file() for _, folder in index[1:])


def test_feedback_shows_the_id_as_written(written):
    out, _, tables = written
    folders = {row[0]: row[1] for row in tables["out/students.csv"][1:]}
    for student in HOSTILE + AS_WRITTEN:
        shown = "'" + student if student in HOSTILE else student
        feedback = (out / folders[shown] / "feedback.md").read_bytes().decode("utf-8")
        assert f"# ntgemm feedback: {student}\n" in feedback


def test_a_csv_from_an_older_grader_is_made_safe_by_the_export(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    rows = [
        ["student", "score", "max_score", "status", "flags", "lms_id", "late"],
        ["=1+1", "-1", "32", "failed", "@x", "", "False"],
    ]
    buffer = io.StringIO()
    csv.writer(buffer).writerows(rows)
    (out / "gradebook.csv").write_text("\ufeff" + buffer.getvalue(), encoding="utf-8")
    export.export(out, "moodle", tmp_path / "moodle.csv")
    (row,) = read(tmp_path / "moodle.csv")[1:]
    assert row[1:4] == ["'=1+1", "failed", "-1"]
