"""Gradebooks for the tools courses grade in: Canvas, Moodle, or any spreadsheet.

    python -m grader export OUT_DIR --format canvas|moodle|csv --out FILE
                            [--assignment "NAME (ID)"]

Every file is UTF-8 with a byte-order mark (BOM), so Excel opens 李华 as written, in a
Chinese locale too, and every text column is read back as text, never as a number
or NaN. Cells go through grader.batch.outputs.spreadsheet as in the gradebook, so an id that
looks like a formula stays text (a gradebook cell already quoted is kept as it is).

* ``csv``: the gradebook as it is.
* ``canvas``: the columns of Canvas's gradebook import: Student, ID, SIS User ID, SIS
  Login ID, Section, then the assignment, headed as Canvas heads it, "Name (id)".
  Canvas matches rows by ID, the Canvas user id that its download names carry
  (grader.batch.grade.intake keeps it as ``lms_id``). Rows without one cannot be matched, so the
  command names them. A heading without the id is refused: Canvas's importer
  (lib/gradebook_importer.rb, parse_assignments) then looks for an assignment of exactly that
  title and makes a new assignment when none has it.
* ``moodle``: the columns of Moodle's offline grading worksheet, as its importer reads them
  (mod/assign/feedback/offline/importgradeslib.php, which refuses a worksheet without
  Identifier, Grade and "Last modified (grade)"): Identifier ("Participant <id>", the id
  from Moodle's download names), Full name, Status, Grade, Maximum Grade, "Last modified
  (grade)" and Feedback comments. "Last modified (grade)" is the moment of the export:
  Moodle skips a row whose grade was changed in Moodle more than 60 s after it, so every
  grade Moodle held before the export is replaced, and one a marker set there since is
  kept. Feedback comments is stored as HTML: the status and score, then the gradebook's
  ``message`` (why, which names a hidden case only by its name), else its flags, each line
  escaped and the lines joined by ``<br>``. Moodle skips, without a word, a grade above the
  assignment's own maximum, so the export notes the gradebook's ``max_score``.

Canvas and Moodle refuse a gradebook holding an id that another LMS gave (its ``lms``
column, read from the download names by grader.batch.names.lms_of): a Canvas user id
written as a Moodle participant would grade someone else.
"""

import datetime
import html
import pathlib
import re

from grader.batch.outputs import spreadsheet

TEXT_COLUMNS = (
    "student",
    "status",
    "flags",
    "message",
    "lms_id",
    "lms",
    "speed",
    "tiles",
    "isolation",
    "overrides",
)
FORMATS = ("canvas", "moodle", "csv")
NAMES = {"canvas": "Canvas", "moodle": "Moodle", "gradescope": "Gradescope"}


def read_gradebook(out_dir):
    """OUT_DIR/gradebook.csv with its text columns as text (empty, never NaN)."""
    import pandas

    path = pathlib.Path(out_dir) / "gradebook.csv"
    if not path.is_file():
        raise ValueError(f"{out_dir} has no gradebook.csv: give the OUT_DIR of 'grade' or 'merge'")
    return pandas.read_csv(
        path,
        encoding="utf-8-sig",
        keep_default_na=False,
        dtype={column: str for column in TEXT_COLUMNS},
    )


# Canvas's Assignment.title_and_id: a heading that ends in " (digits)" names the assignment
# of that id; any other heading names one by its title.
CANVAS_HEADING = re.compile(r"(.*)\s\((\d+)\)")


def _check_assignment(assignment):
    if not CANVAS_HEADING.fullmatch(assignment or ""):
        given = f"{assignment!r} has none" if assignment else "none was given"
        raise ValueError(
            "not exported: Canvas fills an assignment's column only when its heading ends in "
            f"the assignment's id ({given}); without it Canvas looks for an assignment of "
            "exactly that title, and makes a new one when none has it. Give --assignment "
            '"NAME (ID)", e.g. --assignment "NineToothed GEMM (1234)": the ID is the number '
            "that ends the assignment's address in Canvas (.../assignments/1234)"
        )


def canvas(book, assignment):
    import pandas

    return pandas.DataFrame(
        {
            "Student": book["student"],
            "ID": book["lms_id"],
            "SIS User ID": "",
            "SIS Login ID": "",
            "Section": "",
            assignment: book["score"],
        }
    )


PARTICIPANT = "Participant "  # Moodle's get_string('hiddenuser', 'assign'), space included


def moodle(book, modified):
    import pandas

    return pandas.DataFrame(
        {
            "Identifier": [PARTICIPANT + lms if lms else "" for lms in book["lms_id"]],
            "Full name": book["student"],
            "Status": book["status"],
            "Grade": book["score"],
            "Maximum Grade": book["max_score"],
            "Last modified (grade)": modified,
            "Feedback comments": [  # an older gradebook has no message column
                moodle_comment(status, score, top, why or flags)
                for status, score, top, why, flags in zip(
                    book["status"],
                    book["score"],
                    book["max_score"],
                    book.get("message", [""] * len(book)),
                    book["flags"],
                )
            ],
        }
    )


def moodle_comment(status, score, top, why):
    """The Feedback comments cell: HTML, since Moodle stores it as the comment's HTML text;
    the status and score, then each line of ``why``, escaped."""
    lines = [f"ntgemm: {status}, {score:g} of {top:g}"]
    lines += [line.strip() for line in str(why).splitlines() if line.strip()]
    return "<br>".join(html.escape(line, quote=False) for line in lines)


def _moodle_notes(book):
    tops = sorted({f"{top:g}" for top in book["max_score"]})
    return (
        [
            f"Moodle skips, without a word, a grade above the assignment's Maximum grade: "
            f"set it to {' or '.join(tops)} (the gradebook's max_score) before you upload "
            "the worksheet"
        ]
        if tops
        else []
    )


def _check_overrides(out_dir):
    """Refuse a gradebook whose overrides (grader.batch.outputs.overrides) are not the staff's now."""
    import json

    from grader.batch.outputs import overrides

    manifest = pathlib.Path(out_dir) / "batch.json"
    described = (
        json.loads(manifest.read_text(encoding="utf-8")).get("overrides")
        if manifest.is_file()
        else None
    )
    problem = overrides.stale(out_dir, described)
    if problem:
        raise ValueError(f"not exported: {problem}")


def _check_complete(out_dir, book):
    """Refuse a gradebook without a row for a student the batch saw (``batch.json``'s
    ``students``): an interrupted batch, say. The LMS would keep that student's old grade."""
    import json

    manifest = pathlib.Path(out_dir) / "batch.json"
    if not manifest.is_file():
        return
    seen = json.loads(manifest.read_text(encoding="utf-8")).get("students") or {}
    missing = sorted(set(seen) - set(book["student"]))
    if missing:
        listed = ", ".join(missing[:10]) + (
            f" and {len(missing) - 10} more" if len(missing) > 10 else ""
        )
        raise ValueError(
            f"not exported: gradebook.csv has no row for {len(missing)} "
            f"student(s) the batch saw: {listed}. Run the grade command again "
            "on this OUT_DIR (it grades only those), then export"
        )


def _check_lms(book, kind):
    """Refuse ids that another LMS gave (the gradebook's ``lms`` column, from the download
    names): the LMS would match them to whoever has those numbers there."""
    if "lms" not in book.columns and any(book["lms_id"]):
        raise ValueError(
            "not exported: gradebook.csv does not say which LMS its ids come from "
            "(an older grader wrote it); run the grade command again on this "
            "OUT_DIR, then export"
        )
    foreign = [
        (student, lms_id, lms)
        for student, lms_id, lms in zip(
            book["student"], book["lms_id"], book.get("lms", [""] * len(book))
        )
        if lms_id and lms != kind
    ]
    if foreign:
        listed = ", ".join(
            f"{student} ({NAMES.get(lms, 'an unknown LMS')} id {lms_id})"
            for student, lms_id, lms in foreign[:5]
        )
        more = f" and {len(foreign) - 5} more" if len(foreign) > 5 else ""
        raise ValueError(
            f"not exported: {len(foreign)} student(s) have ids that "
            f"{NAMES[kind]} did not give: {listed}{more}. {NAMES[kind]} would "
            "match them to whoever has those numbers there. Export to the LMS "
            "the class was downloaded from, or use --format csv"
        )


def checked_gradebook(out_dir, kind):
    """OUT_DIR's gradebook, refused where ``kind`` (an LMS, or "csv") would be handed a stale
    grade, another LMS's ids, or one id for two students."""
    book = read_gradebook(out_dir)
    _check_overrides(out_dir)
    _check_complete(out_dir, book)
    if kind == "csv":
        return book
    _check_lms(book, kind)
    ids = [lms for lms in book["lms_id"] if lms]
    repeated = sorted({lms for lms in ids if ids.count(lms) > 1})
    if repeated:
        raise ValueError(
            f"LMS id(s) {', '.join(repeated)} belong to more than one student in "
            "the gradebook; an LMS would give one of them the other's grade. "
            "Check those entries' names in the submissions folder"
        )
    return book


def unmatched(book):
    """The students an LMS cannot match: those without an LMS id."""
    return [student for student, lms in zip(book["student"], book["lms_id"]) if not lms]


def export(out_dir, kind, target, assignment=None, notes=None, now=None):
    """Write the export; returns the ids of students the LMS cannot match (no LMS id).
    ``assignment`` heads Canvas's grade column, "Name (id)". What the TA should know before
    the upload is appended to ``notes``; ``now`` (an aware datetime, default the present)
    dates a Moodle worksheet."""
    if kind not in FORMATS:
        raise ValueError(f"--format must be one of {', '.join(FORMATS)}, got {kind!r}")
    book = checked_gradebook(out_dir, kind)
    if kind == "canvas":
        _check_assignment(assignment)
        table = canvas(book, assignment)
    elif kind == "moodle":
        moment = now or datetime.datetime.now(datetime.timezone.utc)
        # ISO 8601 with its offset: PHP's strtotime, which the importer applies, reads it
        # whatever the server's time zone and language.
        table = moodle(book, moment.replace(microsecond=0).isoformat())
        if notes is not None:
            notes += _moodle_notes(book)
    else:
        table = book
    target = pathlib.Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    from grader.batch.outputs.atomic_file import atomic_write

    atomic_write(target, spreadsheet.csv_text(table, bom=True))
    return [] if kind == "csv" else unmatched(book)
