"""Staff overrides (grader.batch.outputs.overrides): checked whole before any applies, shown
everywhere a grade is, and kept through a --force regrade, a two-shard merge, the Canvas
export and the Gradescope results.

Five students of the demo class on two cases (the batch's test-only --cases): ada and 李华
pass, eli (a Canvas download marked late) passes one case, fay is flagged, ben never ran.
"""

import csv
import dataclasses
import io
import json
import shutil

import pytest

from grader.batch.record import Record
from grader.batch.outputs import leaderboard, override_view, overrides, reports
from grader.tests.batch_helpers import DEMO, gradebook, run_grader

SEED = "5eed5eed5eed5eed5eed5eed5eed5eed"
STUDENTS = ("ada", "ben", "eli_LATE_4711_90210_ninetoothed_gemm.py", "fay", "李华.zip")
CASES = "nonsquare-128x256x192,hidden_1"
OPTIONS = [
    "--cases",
    CASES,
    "--no-speed",
    "--seed",
    SEED,
    "--no-progress",
    "-j",
    "2",
    "--late-penalty",
    "0.5",
]
HEADER = "student,change,case,value,reason,by,date\n"
ROWS = [
    "eli,late,,extension,doctor's note <b>|x|</b>,TA Wang,2026-12-02",
    "fay,flags,,cleared,the torch.mm call was a leftover from debugging,Prof. Li,2026-12-03",
    "李华,points,hidden_1,1,partial credit after a regrade request,TA Wang,2026-12-03",
    "ben,score,,2,the file sent by email was the finished one,Prof. Li,2026-12-03",
    "ada,note,,Nice work: your kernel is the fastest of the class.,kudos,TA Wang,2026-12-03",
]
# What the rows make of the grades: eli's one point is no longer halved, fay's kernel keeps
# what it earned, 李华 loses one hidden point, ben gets 2, ada keeps hers.
EXPECTED = {
    "ada": ("3", "passed"),
    "ben": ("2", "not_implemented"),
    "eli": ("1", "failed"),
    "fay": ("3", "passed"),
    "李华": ("2", "passed"),
}


def write_overrides(path, rows=ROWS):
    path.write_text(HEADER + "".join(row + "\n" for row in rows), encoding="utf-8")
    return path


def scores(out):
    return {student: (row["score"], row["status"]) for student, row in gradebook(out).items()}


@pytest.fixture(scope="module")
def batch(tmp_path_factory):
    base = tmp_path_factory.mktemp("overrides")
    submissions = base / "class"
    submissions.mkdir()
    for name in STUDENTS:
        source = DEMO / name
        (shutil.copytree if source.is_dir() else shutil.copy2)(source, submissions / name)
    (base / "staff").mkdir()
    staff = write_overrides(base / "staff" / "overrides.csv")
    out = base / "out"
    result = run_grader(
        base, "grade", str(submissions), "--out", str(out), "--overrides", str(staff), *OPTIONS
    )
    assert result.returncode == 0, result.stderr
    return base, submissions, staff, out


def folder_of(out, student):
    return json.loads((out / "batch.json").read_text(encoding="utf-8"))["students"][student]


def test_every_override_changes_the_gradebook_and_says_so_in_its_column(batch):
    out = batch[3]
    book = gradebook(out, drop_times=False)
    assert scores(out) == EXPECTED
    assert list(next(iter(book.values())))[-3:] == ["wall_time_s", "isolation", "overrides"]
    assert book["eli"]["late"] == "False" and book["eli"]["lms_id"] == "4711"
    assert book["eli"]["overrides"] == (
        "late: late -> extension (doctor's note <b>|x|</b>; TA Wang, 2026-12-02)"
    )
    assert book["fay"]["flags"] == "" and book["fay"]["overrides"].startswith(
        "flags: 1 flag(s) -> cleared"
    )
    assert (book["李华"]["hidden_1"], book["李华"]["nonsquare-128x256x192"]) == ("1", "1")
    assert book["ben"]["overrides"].startswith("score: 0 -> 2 (the file sent by email")
    assert book["ada"]["overrides"].startswith("note: Nice work")


def test_the_feedback_says_what_changed_and_why_in_both_languages(batch):
    out = batch[3]
    eli = (out / folder_of(out, "eli") / "feedback.md").read_text(encoding="utf-8")
    assert "## Changed by the course staff / 课程教师的调整" in eli
    assert "Extension granted: the submission is not late." in eli and "已准予延期" in eli
    assert r"doctor's note \<b\>\|x\|\</b\> (TA Wang, 2026-12-02)" in eli  # no HTML, no table
    assert "<b>" not in eli and "points deducted" not in eli
    fay = (out / "fay" / "feedback.md").read_text(encoding="utf-8")
    assert "The flags were reviewed and cleared." in fay and "标记已经复核并清除" in fay
    assert "Anti-cheat evidence" not in fay and "`passed`" in fay
    li = (out / folder_of(out, "李华") / "feedback.md").read_text(encoding="utf-8")
    assert "Points of hidden\\_1 (hidden) set from 2 to 1." in li and "得分由 2 改为 1" in li
    ada = (out / "ada" / "feedback.md").read_text(encoding="utf-8")
    assert "Note from the staff: Nice work: your kernel is the fastest of the class." in ada
    assert "教师留言" in ada


def test_the_record_keeps_the_grade_as_graded_and_lists_the_overrides(batch):
    out = batch[3]
    record = reports.read_record(out, folder_of(out, "eli"))
    assert record is not None, "the record's signature must hold"
    # As graded: the late penalty, like the rows, applies to the view alone.
    assert (record["score"], record["late"], "late_deduction" in record) == (1, True, False)
    assert record["overrides"] == [
        {
            "row": 2,
            "change": "late",
            "case": "",
            "from": "late",
            "to": "extension",
            "reason": "doctor's note <b>|x|</b>",
            "by": "TA Wang",
            "date": "2026-12-02",
        }
    ]
    fay = reports.read_record(out, "fay")
    assert fay["status"] == "flagged" and fay["score"] == 0 and fay["flags"]


def test_the_gradescope_results_carry_the_overrides_and_add_up(batch):
    out = batch[3]
    for student, (score, status) in EXPECTED.items():
        results = json.loads((out / folder_of(out, student) / "results.json").read_text())
        assert results["score"] == float(score) and results["extra_data"]["status"] == status
        assert sum(test["score"] for test in results["tests"]) == pytest.approx(results["score"])
        assert "Changed by the course staff" in results["output"]
    ben = json.loads((out / "ben" / "results.json").read_text())
    assert ben["tests"][-1]["name"] == "staff adjustment" and ben["tests"][-1]["score"] == 2
    eli = json.loads((out / folder_of(out, "eli") / "results.json").read_text())
    assert "late penalty" not in [test["name"] for test in eli["tests"]]


def test_overrides_survive_a_forced_regrade_without_the_option(batch):
    base, submissions, _, out = batch
    again = base / "again"
    shutil.copytree(out, again)
    result = run_grader(base, "grade", str(submissions), "--out", str(again), "--force", *OPTIONS)
    assert result.returncode == 0, result.stderr
    assert "0 already graded, 5 to grade" in result.stderr
    assert gradebook(again) == gradebook(out)
    assert (again / "overrides.csv").read_text(encoding="utf-8") == (
        base / "staff" / "overrides.csv"
    ).read_text(encoding="utf-8")


def test_overrides_survive_a_two_shard_merge(batch):
    base, submissions, staff, out = batch
    for index in (1, 2):
        shard = run_grader(
            base,
            "grade",
            str(submissions),
            "--out",
            str(base / f"shard{index}"),
            "--shard",
            f"{index}/2",
            "--overrides",
            str(staff),
            *OPTIONS,
        )
        assert shard.returncode == 0, shard.stderr
    merged = run_grader(
        base, "merge", str(base / "shard1"), str(base / "shard2"), "--out", str(base / "merged")
    )
    assert merged.returncode == 0, merged.stderr
    assert gradebook(base / "merged") == gradebook(out)
    eli = (base / "merged" / folder_of(out, "eli") / "feedback.md").read_text(encoding="utf-8")
    assert "Extension granted" in eli
    shutil.copytree(base / "shard2", base / "shard2-other")
    other = write_overrides(base / "other.csv", ROWS[:1])
    resumed = run_grader(
        base,
        "grade",
        str(submissions),
        "--out",
        str(base / "shard2-other"),
        "--shard",
        "2/2",
        "--overrides",
        str(other),
        *OPTIONS,
    )
    assert resumed.returncode == 0 and "0 to grade" in resumed.stderr
    refused = run_grader(
        base,
        "merge",
        str(base / "shard1"),
        str(base / "shard2-other"),
        "--out",
        str(base / "merged-other"),
    )
    assert refused.returncode == 1 and "the shards keep different overrides" in refused.stderr
    given = run_grader(
        base,
        "merge",
        str(base / "shard1"),
        str(base / "shard2-other"),
        "--out",
        str(base / "merged-other"),
        "--overrides",
        str(staff),
    )
    assert given.returncode == 0, given.stderr
    assert gradebook(base / "merged-other") == gradebook(out)


def test_the_canvas_export_has_the_overridden_scores(batch):
    base, out = batch[0], batch[3]
    target = base / "canvas.csv"
    result = run_grader(
        base,
        "export",
        str(out),
        "--format",
        "canvas",
        "--out",
        str(target),
        "--assignment",
        "NineToothed GEMM (1234)",
    )
    assert result.returncode == 0, result.stderr
    rows = {
        row["Student"]: row["NineToothed GEMM (1234)"]
        for row in csv.DictReader(io.StringIO(target.read_text(encoding="utf-8-sig")))
    }
    assert rows == {student: score for student, (score, _) in EXPECTED.items()}


def test_an_edited_file_is_applied_or_refused_never_silently_dropped(batch):
    base, submissions, _, out = batch
    folder = base / "edited"
    shutil.copytree(out, folder)
    staff = write_overrides(base / "edited-staff.csv")
    applied = run_grader(
        base, "grade", str(submissions), "--out", str(folder), "--overrides", str(staff), *OPTIONS
    )
    assert applied.returncode == 0 and "5 already graded, 0 to grade" in applied.stderr
    write_overrides(staff, ROWS[1:])  # the extension is withdrawn
    export = run_grader(
        base, "export", str(folder), "--format", "csv", "--out", str(base / "stale.csv")
    )
    assert export.returncode == 1 and "the copy applied from it, differ" in export.stderr
    assert not (base / "stale.csv").exists()
    resumed = run_grader(base, "grade", str(submissions), "--out", str(folder), *OPTIONS)
    assert resumed.returncode == 1 and f"--overrides {staff.resolve()}" in resumed.stderr
    reapplied = run_grader(
        base, "grade", str(submissions), "--out", str(folder), "--overrides", str(staff), *OPTIONS
    )
    assert reapplied.returncode == 0, reapplied.stderr
    assert scores(folder)["eli"] == ("0.5", "failed")
    assert gradebook(folder)["eli"]["late"] == "True"
    assert "Extension" not in (folder / folder_of(out, "eli") / "feedback.md").read_text("utf-8")


def test_a_new_late_penalty_regrades_nobody_and_shows_everywhere(batch):
    base, submissions, _, out = batch
    folder = base / "penalty"
    shutil.copytree(out, folder)
    staff = write_overrides(base / "penalty-staff.csv", ROWS[1:])  # eli is late again
    eli = folder_of(out, "eli")
    graded = reports.read_record(folder, eli)
    result = run_grader(
        base,
        "grade",
        str(submissions),
        "--out",
        str(folder),
        "--overrides",
        str(staff),
        *OPTIONS[:-2],
        "--late-penalty",
        "0.25",
    )
    assert result.returncode == 0 and "5 already graded, 0 to grade" in result.stderr
    assert scores(folder)["eli"] == ("0.75", "failed")
    assert "0.25 points deducted" in (folder / eli / "feedback.md").read_text("utf-8")
    assert json.loads((folder / eli / "results.json").read_text())["score"] == 0.75
    record = reports.read_record(folder, eli)
    assert (record["key"], record["wall_time_s"]) == (graded["key"], graded["wall_time_s"])
    assert json.loads((folder / "batch.json").read_text())["late_penalty"] == 0.25
    export = run_grader(
        base,
        "export",
        str(folder),
        "--format",
        "canvas",
        "--out",
        str(base / "penalty.csv"),
        "--assignment",
        "NineToothed GEMM (1234)",
    )
    assert export.returncode == 0, export.stderr
    exported = csv.DictReader(io.StringIO((base / "penalty.csv").read_text("utf-8-sig")))
    assert {row["Student"]: row["NineToothed GEMM (1234)"] for row in exported}["eli"] == "0.75"


def test_a_bad_row_applies_nothing_and_every_problem_is_named(batch):
    base, submissions, staff, out = batch
    before = {path: path.read_bytes() for path in out.rglob("*") if path.is_file()}
    bad = write_overrides(
        base / "bad.csv",
        ROWS[:2]
        + [
            "eve,score,,1,typo,TA Wang,2026-12-03",
            "ada,points,tail_q-1x1x1,1,no such case,TA Wang,2026-12-03",
            "ada,score,,lots,not a number,TA Wang,2026-12-03",
            "ada,status,,fine,not a status,TA Wang,2026-12-03",
            "ada,late,,extension,,TA Wang,03/12/2026",
        ],
    )
    result = run_grader(
        base, "grade", str(submissions), "--out", str(out), "--overrides", str(bad), *OPTIONS
    )
    assert result.returncode == 1
    message = result.stderr
    assert f"{bad}: 6 problem(s), nothing was applied" in message
    assert f"{bad}, row 4, column student: unknown student 'eve'" in message
    assert "row 5, column case: expected a case id of this batch" in message
    assert (
        "row 6, column value: expected the total score, a number from 0 to 3, got 'lots'" in message
    )
    assert "row 7, column value: expected a status, one of passed, failed" in message
    assert "row 8, column reason: expected why" in message
    assert "row 8, column date: expected a date as YYYY-MM-DD, got '03/12/2026'" in message
    after = {path: path.read_bytes() for path in out.rglob("*") if path.is_file()}
    assert after == before


CLASS = {"ada", "李华", "=cmd"}
CATALOGUE = {"nonsquare-128x256x192": 1, "hidden_1": 2}


def parse(*rows):
    return overrides.parse(
        HEADER + "".join(row + "\n" for row in rows), "o.csv", CLASS, CATALOGUE, 3
    )


@pytest.mark.parametrize(
    "rows, expected",
    [
        (("ada,points,,1,r,b,2026-12-01",), "row 2, column case: expected a case id of this batch"),
        (
            ("ada,score,hidden_1,1,r,b,2026-12-01",),
            "row 2, column case: only a points row names a case",
        ),
        (
            ("ada,points,hidden_1,3,r,b,2026-12-01",),
            "row 2, column value: expected the case's points, a number from 0 to 2, got '3'",
        ),
        (("ada,score,,-1,r,b,2026-12-01",), "a number from 0 to 3, got '-1'"),
        (("ada,score,,nan,r,b,2026-12-01",), "a number from 0 to 3, got 'nan'"),
        (("ada,flags,,gone,r,b,2026-12-01",), "expected 'cleared'"),
        (("ada,late,,sick,r,b,2026-12-01",), "expected one of extension, excused, late"),
        (("ada,note,,,r,b,2026-12-01",), "expected the note to show the student"),
        (("ada,regrade,,1,r,b,2026-12-01",), "column change: expected one of score, points"),
        (("ada,score,,1,r,,2026-12-01",), "row 2, column by: expected who decided"),
        (("ada,score,,1,r,b,2026-12-01,extra",), "row 2: expected 7 cells"),
        (
            ("ada,score,,1,r,b,2026-12-01", "ada,score,,2,r,b,2026-12-02"),
            "row 3, column change: 'ada' already has a score override in row 2",
        ),
        (
            ('ada,score,,1,"two\nlines",b,2026-12-01', "Ada,score,,1,r,b,2026-12-01"),
            "row 4, column student: unknown student 'Ada'",
        ),
    ],
)
def test_each_bad_cell_is_named_with_what_was_expected(rows, expected):
    with pytest.raises(overrides.OverridesError) as error:
        parse(*rows)
    assert expected in str(error.value) and "nothing was applied" in str(error.value)


def test_the_header_must_be_the_documented_one():
    with pytest.raises(overrides.OverridesError, match="row 1 .*missing date; unknown 'when'"):
        overrides.parse("student,change,case,value,reason,by,when\n", "o.csv", CLASS, CATALOGUE, 3)
    with pytest.raises(overrides.OverridesError, match="is empty"):
        overrides.parse("", "o.csv", CLASS, CATALOGUE, 3)


def test_ids_as_written_or_as_the_gradebook_quotes_them_and_several_notes():
    rows = parse(
        "李华,note,,one,r,b,2026-12-01",
        "李华,note,,two,r,b,2026-12-01",
        "'=cmd,score,,1.256,r,b,2026-12-01",
        "=cmd,late,,excused,r,b,2026-12-01",
    )
    assert [(row.student, row.value) for row in rows] == [
        ("李华", "one"),
        ("李华", "two"),
        ("=cmd", 1.26),
        ("=cmd", "excused"),
    ]


def record(student="ada", status="passed", late=False, points=(1, 2), speed_points=None):
    entries = [
        {
            "id": case,
            "name": case if case != "hidden_1" else "hidden_1 (hidden)",
            "visibility": "public" if case != "hidden_1" else "hidden",
            "points": got,
            "max_points": top,
            "status": "passed" if got else "failed",
            "passed": bool(got),
        }
        for (case, top), got in zip(CATALOGUE.items(), points)
    ]
    score = sum(points) + (speed_points or 0)
    return Record.from_json(
        {
            "student": student,
            "status": status,
            "message": "",
            "late": late,
            "score": score,
            "max_score": 3,
            "flags": [],
            "handin": None,
            "cases": entries,
            "speed": {"points": speed_points} if speed_points is not None else None,
        }
    )


def book(*rows, penalty=0.0):
    return overrides.Overrides(parse(*rows), late_penalty=penalty)


def test_lateness_recomputes_the_penalty_and_a_hand_set_score_has_the_last_word():
    late = dataclasses.replace(record(late=True), score=1.5, late_deduction=1.5)
    assert (
        override_view.applied(late, book("ada,late,,extension,r,b,2026-12-01", penalty=0.5))[
            "score"
        ]
        == 3
    )
    view = override_view.applied(late, book("ada,late,,excused,r,b,2026-12-01", penalty=0.5))
    assert (view["score"], view["late"], "late_deduction" in view) == (3, True, False)
    on_time = override_view.applied(record(), book("ada,late,,late,r,b,2026-12-01", penalty=0.5))
    assert (on_time["score"], on_time["late_deduction"]) == (1.5, 1.5)
    both = override_view.applied(
        record(), book("ada,score,,2.5,r,b,2026-12-01", "ada,points,hidden_1,0,r,b,2026-12-01")
    )
    assert both["score"] == 2.5
    assert [(e["change"], e["from"], e["to"]) for e in both["overrides"]] == [
        ("points", 2, 0),
        ("score", 1, 2.5),
    ]


def test_a_status_set_to_flagged_zeroes_the_grade_and_leaves_the_leaderboard():
    from grader.tests.test_speed import timed_record

    fast, slow = timed_record("ada", 0.2, 0.2), timed_record("李华", 1.0, 0.2)
    flagged = book("ada,status,,flagged,the kernel was copied,Prof. Li,2026-12-01")
    views = [override_view.applied(r, flagged) for r in (fast, slow)]
    assert views[0]["score"] == 0 and views[0]["status"] == "flagged"
    assert all(entry["points"] == 0 for entry in views[0]["cases"])
    assert views[1]["score"] == slow["score"]
    assert list(leaderboard.frame(views)["student"]) == ["李华"]
    assert fast["status"] == "passed", "the record itself is never changed"


def test_points_that_give_full_marks_keep_the_status_and_say_so_on_the_row_and_the_page():
    """A status is what the grader found in the file (``failed``: a case's output did not
    match); points are what the staff award. Full marks by points keep ``failed``, and the
    gradebook's overrides cell and the feedback say so; a status row changes it."""
    from types import SimpleNamespace

    from grader.batch.outputs import feedback

    failed = record(status="failed", points=(1, 0))
    regrade = "ada,points,hidden_1,2,the case passes with the fix sent by email,TA Wang,2026-12-03"
    view = override_view.applied(failed, book(regrade))
    assert (view["score"], view["status"], view["status_kept"]) == (3, "failed", "failed")
    cases_list = [SimpleNamespace(id=case) for case in CATALOGUE]
    (row,) = reports.gradebook_frame([view], cases_list).to_dict("records")
    assert (row["score"], row["status"]) == (3, "failed")
    assert row["overrides"].endswith(
        " | status kept failed: full marks from the staff's points, but the status is what the "
        "grader found in the file; a status row changes it"
    )
    page = feedback.feedback_markdown(view, [])
    assert "Your status stays `failed`: it says what the grader found" in page
    assert "状态仍为 `failed`" in page
    partial = override_view.applied(failed, book(regrade.replace(",2,", ",1,")))
    assert partial["status_kept"] == "" and "status kept" not in override_view.summary(partial)
    decided = override_view.applied(failed, book(regrade, "ada,status,,passed,r,b,2026-12-03"))
    assert (decided["status"], decided["status_kept"]) == ("passed", "")
    by_score = override_view.applied(failed, book("ada,score,,3,r,b,2026-12-03"))
    assert by_score["status_kept"] == "failed"


def test_markdown_from_the_staff_stays_text():
    assert (
        override_view.markdown_text("a | b\n# c <img src=x> `d` [e](f)")
        == r"a \| b \# c \<img src=x\> \`d\` \[e\](f)"
    )


OLD_FILE, NEW_FILE = "ab" * 32, "cd" * 32


def file_book(*rows, header=HEADER.strip() + ",file"):  # noqa: B008 - a constant
    return overrides.Overrides(
        overrides.parse(
            header + "\n" + "".join(row + "\n" for row in rows), "o.csv", CLASS, CATALOGUE, 3
        )
    )


def test_a_score_written_for_an_earlier_file_is_withheld_and_said():
    rows = file_book(
        f"ada,score,,2,the email copy,Prof. Li,2026-12-01,{OLD_FILE[:12]}",
        "ada,note,,see you,r,b,2026-12-01,",
    )
    resubmitted = dataclasses.replace(record(points=(1, 2)), sha256=NEW_FILE)
    view = override_view.applied(resubmitted, rows)
    assert view["score"] == 3 and [e["change"] for e in view["overrides"]] == ["note"]
    assert override_view.summary(view) == (
        "note: see you (r; b, 2026-12-01) | score 2: not applied, written for an earlier file "
        f"(sha256 {OLD_FILE[:12]}) (the email copy; Prof. Li, 2026-12-01)"
    )
    assert "Score set" not in "\n".join(override_view.markdown(view))
    (warning,) = override_view.file_warnings(resubmitted, rows)
    assert warning.startswith(
        "ada: row 2 (score 2) was written for an earlier file (sha256 "
        f"{OLD_FILE[:12]}), not the one graded now ({NEW_FILE[:12]})"
    )
    same = override_view.applied(dataclasses.replace(resubmitted, sha256=OLD_FILE), rows)
    assert same["score"] == 2 and not same["overrides_withheld"]


def test_a_row_for_any_file_applies_quietly_and_an_old_file_applies_with_a_warning():
    graded = dataclasses.replace(record(), sha256=NEW_FILE)
    anyfile = file_book("ada,points,hidden_1,0,r,b,2026-12-01,ANY")
    assert override_view.applied(graded, anyfile)["score"] == 1
    assert override_view.file_warnings(graded, anyfile) == []
    old = book("ada,points,hidden_1,0,r,b,2026-12-01", "ada,note,,hi,r,b,2026-12-01")
    assert override_view.applied(graded, old)["score"] == 1
    (warning,) = override_view.file_warnings(graded, old)
    assert (
        "row 2 (points hidden_1 0) records no file hash: applied to the file graded now "
        f"({NEW_FILE[:12]})" in warning
    )


@pytest.mark.parametrize("cell", ["abc", "g" * 12, "latest"])
def test_a_file_cell_is_a_sha256_or_any(cell):
    with pytest.raises(overrides.OverridesError, match="row 2, column file: expected the sha256"):
        file_book(f"ada,score,,1,r,b,2026-12-01,{cell}")


def test_a_resubmission_withholds_the_score_given_for_the_earlier_file(batch):
    base, submissions, _, out = batch
    earlier = reports.read_record(out, "ben")["sha256"]
    again, resubmitted = base / "resubmitted", base / "resubmitted-class"
    shutil.copytree(out, again)
    shutil.copytree(submissions, resubmitted)
    with open(resubmitted / "ben" / "ninetoothed_gemm.py", "a", encoding="utf-8") as stream:
        stream.write("# corrected\n")
    staff = base / "hashed.csv"
    staff.write_text(
        HEADER.strip()
        + ",file\n"
        + "".join(row + (f",{earlier}" if row.startswith("ben,") else ",") + "\n" for row in ROWS),
        encoding="utf-8",
    )
    result = run_grader(
        base, "grade", str(resubmitted), "--out", str(again), "--overrides", str(staff), *OPTIONS
    )
    assert result.returncode == 0, result.stderr
    assert "4 already graded, 1 to grade" in result.stderr
    row = gradebook(again)["ben"]
    assert row["score"] == "0" and row["overrides"].startswith(
        f"score 2: not applied, written for an earlier file (sha256 {earlier[:12]})"
    )
    assert (
        "warning: override of ben: row 5 (score 2) was written for an earlier file" in result.stderr
    )
    assert "Score set" not in (again / "ben" / "feedback.md").read_text(encoding="utf-8")
    assert scores(again)["eli"] == EXPECTED["eli"], "rows for the same files still apply"
