"""LMS round trips: download names in (ids and lateness kept), gradebooks out (read back
with each format's rules, in a spreadsheet-compatible reader)."""

import csv
import dataclasses
import datetime
import io
import json
import re

import pytest

from grader.batch.record import Record
from grader.batch import names
from grader.batch.grade import intake
from grader.batch.outputs import export
from grader.tests.batch_helpers import run_grader


@pytest.mark.parametrize(
    "name, folder, expected",
    [
        # Canvas: <sortable name>[_LATE]_<user id>_<attachment id>_<file>
        ("smithjohn_12345_67890_ninetoothed_gemm", False, ("smithjohn", "12345", False)),
        ("smithjohn_LATE_12345_67890_ninetoothed_gemm", False, ("smithjohn", "12345", True)),
        ("smithjohn_12345_67890_ninetoothed_gemm-1", False, ("smithjohn", "12345", False)),
        ("lihua_LATE_555_1_archive", False, ("lihua", "555", True)),
        # Moodle: <full name>_<participant id>_assignsubmission_file_[<file>]
        ("Li Hua_2231_assignsubmission_file_", True, ("Li Hua", "2231", False)),
        ("李华_2232_assignsubmission_file_ninetoothed_gemm", False, ("李华", "2232", False)),
        ("Anne_Marie Roe_77_assignsubmission_file_", True, ("Anne_Marie Roe", "77", False)),
        # Moodle 4.1 and later name the folder without the trailing _
        ("Li Hua_2231_assignsubmission_file", True, ("Li Hua", "2231", False)),
        # a full name that imitates the marker cannot borrow another participant's id
        (
            "Bobby_4712_assignsubmission_file_ x_88_assignsubmission_file_",
            True,
            ("Bobby_4712_assignsubmission_file_ x", "88", False),
        ),
        # Gradescope's export
        ("submission_183321", True, ("submission_183321", "183321", False)),
        # the generic rule and plain names
        ("amy_hw3_ninetoothed_gemm", False, ("amy", "", False)),
        ("ada", True, ("ada", "", False)),
        ("2024_01_ab", True, ("2024_01_ab", "", False)),  # a folder is never read as Canvas
        ("ninetoothed_gemm", False, ("ninetoothed_gemm", "", False)),
    ],
)
def test_download_names_keep_the_lms_id_and_lateness(name, folder, expected):
    who = names.identity(name, folder=folder)
    assert (who.student, who.lms_id, who.late) == expected


def test_a_class_downloaded_from_canvas_and_moodle_is_read_with_ids(tmp_path):
    (tmp_path / "smithjohn_LATE_12345_67890_ninetoothed_gemm.py").write_text("x = 1\n")
    moodle = tmp_path / "Li Hua_2231_assignsubmission_file_"
    moodle.mkdir()
    (moodle / "ninetoothed_gemm.py").write_text("x = 2\n")
    found = {s.student: s for s in intake.discover(tmp_path)}
    assert (found["smithjohn"].lms_id, found["smithjohn"].late) == ("12345", True)
    assert (found["Li Hua"].lms_id, found["Li Hua"].late) == ("2231", False)


def test_extra_uploads_and_re_uploads_do_not_stop_intake(tmp_path):
    """Canvas names every uploaded file: a helper beside the submission is not a second
    submission, and of two versions of the file the later one counts."""
    for name in (
        "smithjohn_12345_1_ninetoothed_gemm.py",
        "smithjohn_12345_2_helper.py",
        "smithjohn_12345_3_ninetoothed_gemm-1.py",
        "doejane_LATE_777_4_notes.py",
        "doejane_LATE_777_5_ninetoothed_gemm.py",
    ):
        (tmp_path / name).write_text(f"# {name}\n")
    found = {s.student: s for s in intake.discover(tmp_path)}
    assert sorted(found) == ["doejane", "smithjohn"]
    assert found["smithjohn"].data == b"# smithjohn_12345_3_ninetoothed_gemm-1.py\n"
    assert found["doejane"].late and found["doejane"].origin.endswith("ninetoothed_gemm.py")


@pytest.mark.parametrize(
    "uploaded", ["ninetoothed_gemm (1).py", "NineToothed_GEMM.py", "solution.py"]
)
def test_a_canvas_file_of_another_name_is_graded_when_it_is_the_only_python_file(
    tmp_path, uploaded
):
    (tmp_path / f"smithjohn_12345_1_{uploaded}").write_text("x = 1\n")
    (tmp_path / "smithjohn_12345_2_notes.txt").write_text("notes\n")
    skipped = []
    found = intake.discover(tmp_path, skipped)
    assert [(s.student, s.lms_id, s.data, s.taken, s.problem) for s in found] == [
        ("smithjohn", "12345", b"x = 1\n", uploaded, "")
    ]
    assert skipped == []  # the other file is on the student's row, as seen
    assert found[0].seen == [("smithjohn_12345_2_notes.txt", "another file of the same upload")]


def test_every_lms_id_with_a_file_gets_a_row_naming_what_it_found(tmp_path):
    for name in (
        "smithjohn_12345_1_solution.py",
        "smithjohn_12345_2_helper.py",
        "doejane_LATE_777_3_report.pdf",
    ):
        (tmp_path / name).write_text("x = 1\n")
    found = {s.student: s for s in intake.discover(tmp_path)}
    assert sorted(found) == ["doejane", "smithjohn"]
    assert found["smithjohn"].problem == (
        "no ninetoothed_gemm.py among the files handed in (helper.py, solution.py); more "
        "than one is a Python file, so none was taken"
    )
    assert found["doejane"].problem.endswith("(report.pdf); none is a Python file")
    assert found["doejane"].late and found["doejane"].lms_id == "777"


def test_students_who_share_an_lms_name_are_two_students_shown_with_their_ids(tmp_path):
    (tmp_path / "lihua_4711_1_ninetoothed_gemm.py").write_text("a = 1\n")
    (tmp_path / "lihua_4712_2_ninetoothed_gemm.py").write_text("b = 1\n")
    for folder, file in (
        ("Li Hua_2231_assignsubmission_file_", "ninetoothed_gemm.py"),
        ("Li Hua_2232_assignsubmission_file_", "NineToothed_GEMM.py"),
    ):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / file).write_text(f"# {folder}\n")
    found = {s.student: s for s in intake.discover(tmp_path)}
    assert {student: s.lms_id for student, s in found.items()} == {
        "lihua (4711)": "4711",
        "lihua (4712)": "4712",
        "Li Hua (2231)": "2231",
        "Li Hua (2232)": "2232",
    }
    assert found["lihua (4712)"].data == b"b = 1\n"
    assert found["Li Hua (2232)"].taken == "NineToothed_GEMM.py"
    (tmp_path / "lihua.py").write_text("c = 1\n")  # no LMS id: a third student, as named
    found = {s.student: s for s in intake.discover(tmp_path)}
    assert found["lihua"].data == b"c = 1\n" and found["lihua (4711)"].data == b"a = 1\n"


def test_a_moodle_folder_of_two_python_files_names_them(tmp_path):
    folder = tmp_path / "Wang Fang_2233_assignsubmission_file_"
    (folder / "src").mkdir(parents=True)
    (folder / "a.py").write_text("a = 1\n")
    (folder / "src" / "b.py").write_text("b = 1\n")
    (found,) = intake.discover(tmp_path)
    assert found.problem == (
        "no ninetoothed_gemm.py in the folder Wang Fang_2233_assignsubmission"
        "_file_/; more than one Python file (a.py, src/b.py), so none was "
        "taken"
    )


def test_a_canvas_hand_in_csv_goes_with_its_submission_and_skips_are_listed(tmp_path):
    (tmp_path / "lihua_4711_1_ninetoothed_gemm.py").write_text("a = 1\n")
    (tmp_path / "lihua_4711_2_benchmark.csv").write_text("old\n")
    (tmp_path / "lihua_4711_3_benchmark-1.csv").write_text("m,n,k\n")
    (tmp_path / "roster.csv").write_text("who\n")
    (tmp_path / ".DS_Store").write_text("")
    skipped = []
    (found,) = intake.discover(tmp_path, skipped)
    assert (found.handin, found.handin_origin) == (b"m,n,k\n", "lihua_4711_3_benchmark-1.csv")
    assert [entry for entry, _ in skipped] == [".DS_Store", "roster.csv"]
    assert found.seen == [("lihua_4711_2_benchmark.csv", "another file of the same upload")]


def test_an_export_refuses_one_lms_id_for_two_students(tmp_path):
    out = fake_out(tmp_path)
    text = (
        (out / "gradebook.csv")
        .read_text(encoding="utf-8")
        .replace(",,,,,False,", ",,,4711,canvas,False,")
    )
    (out / "gradebook.csv").write_text(text, encoding="utf-8")
    with pytest.raises(ValueError, match="4711 belong to more than one student"):
        export.export(out, "canvas", tmp_path / "canvas.csv", ASSIGNMENT)


def fake_out(tmp_path, lms="canvas"):
    """An OUT_DIR as grade writes it: a gradebook with a non-ASCII id and no flags at all,
    its LMS ids from the download names of ``lms``."""
    out = tmp_path / "out"
    out.mkdir(exist_ok=True)
    rows = [
        [
            "student",
            "score",
            "max_score",
            "status",
            "flags",
            "message",
            "lms_id",
            "lms",
            "late",
            "case-a",
            "wall_time_s",
            "isolation",
        ],
        [
            "eli",
            "12",
            "32",
            "failed",
            "",
            "1 of 1 cases failed",
            "4711",
            lms,
            "True",
            "0",
            "3.2",
            "bubblewrap",
        ],
        ["李华", "32", "32", "passed", "", "", "", "", "False", "1", "2.9", "bubblewrap"],
        [
            "0042",
            "0",
            "32",
            "crashed",
            "",
            "the kernel run: the process ended",
            "0042",
            lms,
            "False",
            "0",
            "1.0",
            "bubblewrap",
        ],
    ]
    buffer = io.StringIO()
    csv.writer(buffer).writerows(rows)
    (out / "gradebook.csv").write_text("\ufeff" + buffer.getvalue(), encoding="utf-8")
    return out


def read_back(path):
    """As a spreadsheet reads it: the BOM says UTF-8, every cell is text."""
    data = path.read_bytes()
    assert data.startswith(b"\xef\xbb\xbf")
    return list(csv.DictReader(io.StringIO(data.decode("utf-8-sig"))))


ASSIGNMENT = "NineToothed GEMM (1234)"


def canvas_import(path, assignments, students):
    """What Canvas's gradebook importer makes of the file at ``path``: (the assignment each
    grade column fills, its id or "new"; {student's Canvas id: grades}), or None where it
    refuses the header. ``assignments``: {id: title} of the course; ``students``: the Canvas
    user ids enrolled. Each rule is one of Canvas's own importer, lib/gradebook_importer.rb
    in instructure/canvas-lms:"""
    header, *rows = csv.reader(io.StringIO(path.read_bytes().decode("utf-8-sig")))
    # row_has_student_headers?: the first heading holds "Student", the second "ID".
    if not ("Student" in header[0] and "ID" in header[1]):
        return None
    # update_column_count: "SIS User ID" then "SIS Login ID" after the three name columns
    # make five student columns, and header? wants "Section" as the last of them.
    if not (
        re.search(r"SIS\s+User\s+ID", header[2])
        and re.search(r"SIS\s+Login\s+ID", header[3])
        and "Section" in header[4]
    ):
        return None
    filled = []
    for heading in header[5:]:
        # parse_assignments: Assignment.title_and_id (app/models/assignment.rb) reads
        # /\A(.*)\s\((\d+)\)\z/; an id finds the assignment, else a title equal to the
        # whole heading, else Assignment.new: a new assignment column.
        match = re.fullmatch(r"(.*)\s\((\d+)\)", heading)
        found = (
            int(match[2])
            if match and int(match[2]) in assignments
            else next((number for number, title in assignments.items() if title == heading), "new")
        )
        filled.append(found)
    # process_student: the second column, the Canvas user id, finds the student.
    grades = {row[1]: row[5:] for row in rows if row[1] in students}
    return filled, grades


def test_canvas_export_fills_the_assignment_of_its_id(tmp_path):
    out = fake_out(tmp_path)
    unmatched = export.export(out, "canvas", tmp_path / "canvas.csv", ASSIGNMENT)
    rows = read_back(tmp_path / "canvas.csv")
    assert list(rows[0]) == [
        "Student",
        "ID",
        "SIS User ID",
        "SIS Login ID",
        "Section",
        "NineToothed GEMM (1234)",
    ]
    assert [(r["Student"], r["ID"], r["NineToothed GEMM (1234)"]) for r in rows] == [
        ("eli", "4711", "12"),
        ("李华", "", "32"),
        ("0042", "0042", "0"),
    ]
    assert unmatched == ["李华"]
    # The id finds the assignment even where its title in Canvas reads otherwise.
    assert canvas_import(
        tmp_path / "canvas.csv", {1234: "HW3: GEMM", 99: "HW2"}, {"4711", "0042"}
    ) == ([1234], {"4711": ["12"], "0042": ["0"]})


@pytest.mark.parametrize("assignment", [None, "NineToothed GEMM", "GEMM (draft)", "GEMM(1234)"])
def test_canvas_export_without_the_assignments_id_is_refused_naming_the_option(
    tmp_path, assignment
):
    """The old default heading, "NineToothed GEMM", made a new assignment in any course
    whose assignment has another title."""
    out = fake_out(tmp_path)
    with pytest.raises(
        ValueError,
        match=r"ends in the assignment's id .* Give --assignment "
        r'"NAME \(ID\)"',
    ):
        export.export(out, "canvas", tmp_path / "canvas.csv", assignment)
    assert not (tmp_path / "canvas.csv").exists()
    heading = tmp_path / "heading.csv"
    heading.write_text("Student,ID,SIS User ID,SIS Login ID,Section,NineToothed GEMM\n")
    assert canvas_import(heading, {1234: "HW3: GEMM"}, set()) == (["new"], {})


def test_the_canvas_export_command_asks_for_the_assignment(tmp_path):
    out = fake_out(tmp_path)
    result = run_grader(
        tmp_path,
        "export",
        str(out),
        "--format",
        "canvas",
        "--out",
        str(tmp_path / "canvas.csv"),
        timeout=60,
    )
    assert result.returncode == 1 and "none was given" in result.stderr
    assert '--assignment "NineToothed GEMM (1234)"' in result.stderr


EXPORTED = datetime.datetime(2026, 12, 7, 10, 15, tzinfo=datetime.timezone.utc)


def strtotime(text):
    """PHP's strtotime for what a worksheet cell may hold here: ISO 8601 with an offset, else
    false (0 in arithmetic), as for Moodle's own '-' or an empty cell."""
    try:
        moment = datetime.datetime.fromisoformat(text)
    except ValueError:
        return 0
    assert moment.tzinfo is not None, "without an offset strtotime reads the server's zone"
    return moment.timestamp()


def moodle_import(path, participants, modified=None, maximum=32, ignore_modified=False):
    """What Moodle's offline grading worksheet importer does with the file at ``path``:
    {participant id: (grade set or None, comment set)}, or None where it refuses the file.
    ``modified``: {participant id: when Moodle last changed that grade (Unix time)};
    ``maximum``: the assignment's own maximum grade. Each rule is Moodle's (mod/assign/...):"""
    text = path.read_bytes().decode("utf-8")
    # lib/csvlib.class.php, csv_import_reader::load_csv_content: the BOM trimmed
    # (core_text::trim_utf8_bom), \r\n and \r made \n.
    text = re.sub("\r\n?", "\n", text.removeprefix("\ufeff"))
    header, *rows = csv.reader(io.StringIO(text))
    assert all(len(row) == len(header) for row in rows)  # else its 'csvweirdcolumns'
    # feedback/offline/importgradeslib.php, init(): columns found by their exact names,
    # get_string('recordid', 'assign'), ('gradenoun') and ('lastmodifiedgrade', 'assign');
    # "return false" without any of them ('invalidgradeimport').
    if not {"Identifier", "Grade", "Last modified (grade)"} <= set(header):
        return None
    # The comments plugin's column is its get_editor_fields() description, 'Feedback
    # comments'; `!empty($details['index'])` ignores it in column 0.
    comments = header.index("Feedback comments") if "Feedback comments" in header else 0
    found = {}
    for row in rows:
        cell = dict(zip(header, row))
        # next(): the id is substr($idstr, strlen(get_string('hiddenuser', 'assign'))), whose
        # English is 'Participant ' (mod/assign/lang/en/assign.php), as gradingtable.php's
        # col_recordid writes it; get_user_id_for_uniqueid($id) must know the id.
        participant = cell["Identifier"][len("Participant ") :]
        if participant not in participants:
            continue
        # feedback/offline/locallib.php, process_import_grades(): stale when the grade's
        # timemodified > strtotime(cell) + 60, and then neither grade nor comment is set
        # unless "ignoremodified" is ticked; a grade above the assignment's maximum is
        # skipped ("Out of range").
        when = (modified or {}).get(participant)
        stale = when is not None and when > strtotime(cell["Last modified (grade)"]) + 60
        grade = float(cell["Grade"])
        if stale and not ignore_modified:
            continue
        found[participant] = (
            grade if 0 <= grade <= maximum else None,
            row[comments] if comments else None,
        )
    return found


def test_the_moodle_worksheet_passes_the_importers_rules_and_a_fresh_grade_lands(tmp_path):
    out = fake_out(tmp_path, "moodle")
    notes = []
    export.export(out, "moodle", tmp_path / "moodle.csv", notes=notes, now=EXPORTED)
    rows = read_back(tmp_path / "moodle.csv")
    assert list(rows[0]) == [
        "Identifier",
        "Full name",
        "Status",
        "Grade",
        "Maximum Grade",
        "Last modified (grade)",
        "Feedback comments",
    ]
    assert [row["Identifier"] for row in rows] == ["Participant 4711", "", "Participant 0042"]
    assert {row["Last modified (grade)"] for row in rows} == {"2026-12-07T10:15:00+00:00"}
    now = EXPORTED.timestamp()
    # 4711's grade was touched in Moodle an hour before the export (opening the grader makes a
    # grade record): the worksheet's grade replaces it. 0042's was set 5 minutes after the
    # export: Moodle keeps it, unless the TA ticks "ignoremodified".
    imported = moodle_import(
        tmp_path / "moodle.csv", {"4711", "0042"}, {"4711": now - 3600, "0042": now + 300}
    )
    assert imported == {"4711": (12.0, "ntgemm: failed, 12 of 32<br>1 of 1 cases failed")}
    forced = moodle_import(
        tmp_path / "moodle.csv", {"0042"}, {"0042": now + 300}, ignore_modified=True
    )
    assert forced == {
        "0042": (0.0, "ntgemm: crashed, 0 of 32<br>the kernel run: the process ended")
    }
    assert moodle_import(tmp_path / "moodle.csv", {"4711"}, maximum=10) == {
        "4711": (None, "ntgemm: failed, 12 of 32<br>1 of 1 cases failed")
    }
    assert notes == [
        "Moodle skips, without a word, a grade above the assignment's Maximum "
        "grade: set it to 32 (the gradebook's max_score) before you upload the "
        "worksheet"
    ]


def test_a_moodle_comment_is_html_with_its_line_breaks_as_moodle_shows_them(tmp_path):
    """A flag of several lines (a refusal lists each violation) reached the gradebook's
    message, and so the comment, with its line breaks written as a literal \\x0a. Moodle
    stores the comment as HTML (feedback/comments/locallib.php, set_editor_text: FORMAT_HTML),
    where a line break is <br> and a student's < is text."""
    from grader.batch.outputs import reports, spreadsheet

    flag = "kernel run: the generated kernel breaks the kit's rules:\n- generated line 3: <b>"
    record = Record(
        student="Li Hua",
        score=0,
        max_score=32,
        status="flagged",
        flags=[flag, "second & last"],
        message="see the flags",
        cases=[],
        lms_id="2231",
        origin="Li Hua_2231_assignsubmission_file_/x.py",
    )
    out = tmp_path / "out"
    out.mkdir()
    frame = reports.gradebook_frame([record], [])
    (out / "gradebook.csv").write_text(spreadsheet.csv_text(frame, bom=True), encoding="utf-8")
    export.export(out, "moodle", tmp_path / "moodle.csv", now=EXPORTED)
    (comment,) = moodle_import(tmp_path / "moodle.csv", {"2231"}).values()
    assert comment == (
        0.0,
        "ntgemm: flagged, 0 of 32<br>kernel run: the generated kernel "
        "breaks the kit's rules: - generated line 3: &lt;b&gt; (and 1 more "
        "flag(s))",
    )
    assert export.read_gradebook(out)["message"][0].startswith(
        "kernel run: the generated kernel breaks the kit's rules: - generated"
    )


@pytest.mark.parametrize(
    "origin, lms",
    [
        ("eli_LATE_4711_90210_ninetoothed_gemm.py", "canvas"),
        ("smith_12_3_ninetoothed_gemm.ZIP:a/ninetoothed_gemm.py", "canvas"),
        ("Li Hua_2231_assignsubmission_file_/src/ninetoothed_gemm.py", "moodle"),
        ("Li Hua_2231_assignsubmission_file_/", "moodle"),
        ("李华_2232_assignsubmission_file_ninetoothed_gemm.py", "moodle"),
        ("submission_183321/ninetoothed_gemm.py", "gradescope"),
        ("amy_hw3_ninetoothed_gemm.py", ""),
        ("李华.zip:ninetoothed_gemm.py", ""),
        ("ada/ninetoothed_gemm.py", ""),
        ("2024_01_ab/ninetoothed_gemm.py", ""),
    ],
)
def test_the_lms_of_an_entry_is_read_from_where_it_came_from(origin, lms):
    assert names.lms_of(origin) == lms


@pytest.mark.parametrize(
    "source, target",
    [("canvas", "moodle"), ("moodle", "canvas"), ("gradescope", "canvas"), ("", "moodle")],
)
def test_an_export_refuses_the_ids_another_lms_gave(tmp_path, source, target):
    """A class downloaded from Canvas and exported for Moodle made Canvas user ids Moodle
    participants: whoever has participant id 4711 there got eli's grade."""
    out = fake_out(tmp_path, source)
    with pytest.raises(ValueError) as refused:
        export.export(out, target, tmp_path / "x.csv", ASSIGNMENT)
    message = str(refused.value)
    assert message.startswith(
        f"not exported: 2 student(s) have ids that {export.NAMES[target]} did not give: eli ("
    )
    assert "id 4711), 0042 (" in message and "--format csv" in message
    assert not (tmp_path / "x.csv").exists()
    export.export(out, "csv", tmp_path / "plain.csv")  # the gradebook itself is no LMS's


def test_an_older_gradebook_with_ids_but_no_lms_column_is_refused(tmp_path):
    out = fake_out(tmp_path)
    book = export.read_gradebook(out).drop(columns=["lms"])
    (out / "gradebook.csv").write_text("\ufeff" + book.to_csv(index=False), encoding="utf-8")
    with pytest.raises(ValueError, match="does not say which LMS its ids come from"):
        export.export(out, "canvas", tmp_path / "canvas.csv", ASSIGNMENT)
    book["lms_id"] = ""
    (out / "gradebook.csv").write_text("\ufeff" + book.to_csv(index=False), encoding="utf-8")
    assert export.export(out, "canvas", tmp_path / "canvas.csv", ASSIGNMENT) == [
        "eli",
        "李华",
        "0042",
    ]


def test_text_columns_stay_text_when_nobody_is_flagged(tmp_path):
    book = export.read_gradebook(fake_out(tmp_path))
    assert book["flags"].tolist() == ["", "", ""] and book["flags"].str.len().sum() == 0
    assert book["lms_id"].tolist() == ["4711", "", "0042"]


def test_export_names_the_missing_gradebook_and_the_bad_format(tmp_path):
    result = run_grader(
        tmp_path,
        "export",
        str(tmp_path),
        "--format",
        "canvas",
        "--out",
        str(tmp_path / "x.csv"),
        timeout=60,
    )
    assert result.returncode == 1 and "has no gradebook.csv" in result.stderr
    result = run_grader(
        tmp_path,
        "export",
        str(tmp_path),
        "--format",
        "blackboard",
        "--out",
        str(tmp_path / "x.csv"),
        timeout=60,
    )
    assert result.returncode == 2 and "canvas" in result.stderr
    out = fake_out(tmp_path)
    result = run_grader(
        tmp_path,
        "export",
        str(out),
        "--format",
        "csv",
        "--to",
        str(tmp_path / "plain.csv"),
        timeout=60,
    )
    assert result.returncode == 0
    assert [row["student"] for row in read_back(tmp_path / "plain.csv")] == ["eli", "李华", "0042"]
    assert "--to is deprecated" in result.stderr and "use --out" in result.stderr


def test_export_and_share_take_out_as_every_command_does(tmp_path):
    """--out is where each command writes; the old --to is one or the other, never both."""
    out = fake_out(tmp_path)
    result = run_grader(
        tmp_path,
        "export",
        str(out),
        "--format",
        "csv",
        "--out",
        str(tmp_path / "plain.csv"),
        timeout=60,
    )
    assert result.returncode == 0 and "deprecated" not in result.stderr
    for command in (["export", str(out), "--format", "csv"], ["share", str(out)]):
        result = run_grader(tmp_path, *command, timeout=60)
        assert result.returncode == 2 and "--out" in result.stderr
        result = run_grader(
            tmp_path,
            *command,
            "--out",
            str(tmp_path / "a"),
            "--to",
            str(tmp_path / "b"),
            timeout=60,
        )
        assert result.returncode == 2 and "not allowed with" in result.stderr
    assert json.dumps(read_back(tmp_path / "plain.csv")[1], ensure_ascii=False).count("李华") == 1


def test_a_late_penalty_applies_only_to_late_submissions_and_says_so():
    from grader.batch.outputs.feedback import feedback_markdown
    from grader.batch.outputs.overrides import Overrides
    from grader.batch.outputs.override_view import applied

    late = Record.from_json(
        {
            "student": "eli",
            "score": 12,
            "max_score": 32,
            "status": "failed",
            "late": True,
            "message": "",
            "flags": [],
            "cases": [
                {
                    "id": "a",
                    "name": "a",
                    "visibility": "public",
                    "points": 12,
                    "max_points": 12,
                    "status": "passed",
                    "message": "",
                    "mistake": "",
                    "flags": [],
                }
            ],
        }
    )
    on_time = dataclasses.replace(late, student="ada", late=False)
    book = Overrides(late_penalty=0.1)
    shown_late, shown_on_time = applied(late, book), applied(on_time, book)
    assert (shown_late["score"], shown_late["late_deduction"]) == (10.8, 1.2)
    assert shown_on_time["score"] == 12 and "late_deduction" not in shown_on_time
    assert "1.2 points deducted" in feedback_markdown(shown_late, [])
    assert late["score"] == 12 and "late_deduction" not in late, "the record stays as graded"
    assert applied(late, Overrides())["score"] == 12


@pytest.mark.parametrize("value", ["-0.1", "1.5", "tenth"])
def test_a_bad_late_penalty_is_refused_with_the_option_named(tmp_path, value):
    from grader.tests.batch_helpers import DEMO

    result = run_grader(
        tmp_path,
        "grade",
        str(DEMO),
        "--out",
        str(tmp_path / "out"),
        "--late-penalty",
        value,
        timeout=60,
    )
    assert result.returncode == 2 and "--late-penalty must be" in result.stderr


@pytest.mark.parametrize("kind", ["canvas", "moodle", "csv"])
def test_an_export_refuses_a_gradebook_without_a_row_the_batch_saw(tmp_path, kind):
    out = fake_out(tmp_path, "canvas" if kind == "csv" else kind)
    students = {"eli": "eli", "李华": "李华", "0042": "0042", "zoe": "zoe", "amy": "amy"}
    (out / "batch.json").write_text(json.dumps({"students": students}), encoding="utf-8")
    with pytest.raises(ValueError, match=r"no row for 2 student\(s\) the batch saw: amy, zoe"):
        export.export(out, kind, tmp_path / "export.csv", ASSIGNMENT)
    assert not (tmp_path / "export.csv").exists()
    del students["amy"], students["zoe"]
    (out / "batch.json").write_text(json.dumps({"students": students}), encoding="utf-8")
    export.export(out, kind, tmp_path / "export.csv", ASSIGNMENT)
