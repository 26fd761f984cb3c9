"""Staff decisions on a grade: one CSV the staff keep, applied whenever reports are written.

A regrade request, a flag cleared after review, an extension, a note to a student, the
name a student chose for the leaderboard (grader.batch.outputs.pseudonyms): each is one row of
``overrides.csv``, with the columns

    student,change,case,value,reason,by,date[,file]

``change`` is one of ``CHANGES`` (what ``value`` must then be is in ``_parse_value``);
``case`` is a case id for ``points`` and empty otherwise; ``reason``, ``by`` and ``date``
(YYYY-MM-DD) say why, who and when, and are required. The whole file is checked before
anything applies: an unknown student or case, or a cell that does not parse, stops the
command and names file, row, column and what was expected.

``file``, optional (files written before it existed have no such column), is the
sha256 of the file the row was written for, as students.csv writes it (its first 12
hex digits are enough), or ``any``. A row with a hash applies only while that file is
the one graded: after a resubmission it is withheld, and shown as written for an
earlier file (grader.batch.outputs.override_view). A row of ``FILE_BOUND`` without
either applies to whatever file is graded, as before the column existed, and ``grade``
warns that it records no file hash.

Records stay as graded (signed, the resume key unchanged);
grader.batch.outputs.override_view applies the rows to make the view that every report is
written from (feedback.md, results.json, the gradebook and its ``overrides`` column, the
leaderboard, hence the exports), and adds what changed to the record under ``overrides``. ``grade`` and ``merge`` keep the file they applied as
``OUT_DIR/overrides.csv`` and its digest in ``batch.json``, so a resume, a ``--force``
regrade, a merge or an export applies the same decisions, or refuses when the file the
staff edit has changed since (grader.batch.cli; docs/instructor-reference.md, "The overrides
file").
"""

import csv
import dataclasses
import datetime
import difflib
import hashlib
import io
import math
import pathlib

from grader.batch.status import GraderError, Status

FILE = "overrides.csv"
COLUMNS = ("student", "change", "case", "value", "reason", "by", "date")
OPTIONAL = ("file",)
ANY_FILE = "any"
FILE_BOUND = ("score", "points", "status", "flags")  # judgements of one file's grade
MIN_HASH_DIGITS = 12
CHANGES = ("score", "points", "status", "flags", "late", "note", "alias", "leaderboard")
LATENESS = ("extension", "excused", "late")  # not late, late without deduction, late
MAX_BYTES = 1 << 20
MAX_TEXT = {"reason": 500, "by": 100, "value": 2000}
# Applied in this order, whatever the file's order: a score set by hand has the last word.
ORDER = {
    "late": 0,
    "status": 1,
    "flags": 2,
    "points": 3,
    "score": 4,
    "note": 5,
    "alias": 6,
    "leaderboard": 7,
}


class OverridesError(GraderError, ValueError):
    """The overrides file cannot be applied; the message lists every problem found."""


@dataclasses.dataclass(frozen=True)
class Row:
    line: int  # the row's line in the file, the header being line 1
    student: str
    change: str
    case: str
    value: object
    reason: str
    by: str
    date: str
    file: str = ""  # the sha256 (or its start) of the file it was written for, "any" or ""


@dataclasses.dataclass(frozen=True)
class Overrides:
    """The checked rows of one file, and what the grade they change was computed with."""

    rows: tuple = ()
    text: str = ""  # the file as read, kept as OUT_DIR/overrides.csv
    source: str = ""  # where it was read from (absolute), for the staleness check
    late_penalty: float = 0.0  # the batch's --late-penalty, applied to every late view

    def for_student(self, student):
        return [row for row in self.rows if row.student == student]

    def describe(self):
        """What batch.json keeps: None when no file applies."""
        if not self.text:
            return None
        return {
            "file": FILE,
            "source": self.source,
            "sha256": digest(self.text),
            "rows": len(self.rows),
        }


def _what(row):
    return f"points of {row.case}" if row.change == "points" else row.change


def digest(text):
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


# --------------------------------------------------------------------------- reading


def parse(text, name, students, cases, max_score):
    """The rows of ``text`` (the file ``name``), every one checked; raises OverridesError.

    ``students``: the ids of the whole class; ``cases``: {case id: its points};
    ``max_score``: the batch's maximum, the bound of a ``score``."""
    problems, rows, seen = [], [], {}
    reader = csv.reader(io.StringIO(text, newline=""))
    header = next(reader, None)
    if header is None:
        raise OverridesError(f"{name} is empty: it needs the header row {','.join(COLUMNS)}")
    header = [cell.strip() for cell in header]
    if sorted(set(header) - set(OPTIONAL)) != sorted(COLUMNS) or len(set(header)) != len(header):
        missing = [column for column in COLUMNS if column not in header]
        extra = [column for column in header if column not in COLUMNS + OPTIONAL]
        raise OverridesError(
            f"{name}, row 1 (the header): expected the columns {','.join(COLUMNS)}"
            f" (and optionally {','.join(OPTIONAL)})"
            + (f"; missing {', '.join(missing)}" if missing else "")
            + (f"; unknown {', '.join(map(repr, extra))}" if extra else "")
            + ("; a column appears twice" if not missing and not extra else "")
        )
    lines = iter(_line_numbers(text))
    for cells in reader:
        line = next(lines)
        if not any(cell.strip() for cell in cells):
            continue
        if len(cells) != len(header):
            problems.append(
                f"{name}, row {line}: expected {len(header)} cells "
                f"({','.join(header)}), got {len(cells)}"
            )
            continue
        cell = {"file": "", **dict(zip(header, (value.strip() for value in cells)))}
        row, found = _parse_row(cell, line, name, students, cases, max_score)
        problems += found
        if row is None:
            continue
        key = (row.student, row.change, row.case)
        if row.change != "note" and key in seen:
            problems.append(
                f"{name}, row {line}, column change: {row.student!r} already has a "
                f"{_what(row)} override in row {seen[key]}; keep one of them"
            )
            continue
        seen[key] = line
        rows.append(row)
    problems += _shared_aliases(rows, name)
    if problems:
        raise OverridesError(
            f"{name}: {len(problems)} problem(s), nothing was applied:\n  " + "\n  ".join(problems)
        )
    return tuple(rows)


def _shared_aliases(rows, name):
    """Two students may not choose one leaderboard name, nor two that read alike (letter
    case and look-alike characters aside: grader.batch.outputs.pseudonyms.skeleton)."""
    from grader.batch.outputs.pseudonyms import skeletons

    first, problems = {}, []
    for row in rows:
        if row.change != "alias":
            continue
        keys = skeletons(row.value)
        other = next((first[key] for key in keys if key in first), row)
        first.update({key: other for key in keys})
        if other.student != row.student:
            problems.append(
                f"{name}, row {row.line}, column value: {row.value!r} reads as "
                f"{other.value!r}, the name {other.student!r} chose in row "
                f"{other.line}; expected a name of its own"
            )
    return problems


def _line_numbers(text):
    """The line each CSV record after the header starts on (quoted cells may span lines)."""
    reader = csv.reader(io.StringIO(text, newline=""))
    next(reader, None)
    start = reader.line_num + 1
    for _ in reader:
        yield start
        start = reader.line_num + 1


def _parse_row(cell, line, name, students, cases, max_score):
    """(Row or None, problems) of one row's cells."""
    where = f"{name}, row {line}"
    problems = []
    student = _student(cell["student"], students)
    if student is None:
        near = difflib.get_close_matches(cell["student"], sorted(students), n=3)
        problems.append(
            f"{where}, column student: unknown student {cell['student']!r}; "
            "expected an id of this class, as the gradebook's student column "
            "writes it" + (f" (did you mean {', '.join(map(repr, near))}?)" if near else "")
        )
    change = cell["change"].lower()
    if change not in CHANGES:
        problems.append(
            f"{where}, column change: expected one of {', '.join(CHANGES)}, got {cell['change']!r}"
        )
        return None, problems
    case = cell["case"]
    if change == "points" and case not in cases:
        problems.append(
            f"{where}, column case: expected a case id of this batch (one of "
            f"{', '.join(cases)}), got {case!r}"
        )
    elif change != "points" and case:
        problems.append(
            f"{where}, column case: only a points row names a case; leave it "
            f"empty for {change}, got {case!r}"
        )
    value, problem = _parse_value(change, cell["value"], cases.get(case), max_score)
    if change == "alias" and not problem and student is not None:
        from grader.batch.outputs.pseudonyms import alias_problem, normal

        value = normal(value)
        problem = alias_problem(value, student, students)
    if problem:
        problems.append(f"{where}, column value: {problem}")
    for column in ("reason", "by"):
        if not cell[column]:
            problems.append(
                f"{where}, column {column}: expected "
                + (
                    "why, as the student will read it"
                    if column == "reason"
                    else "who decided (a name or initials)"
                )
                + ", got nothing"
            )
        elif len(cell[column]) > MAX_TEXT[column]:
            problems.append(
                f"{where}, column {column}: expected at most "
                f"{MAX_TEXT[column]} characters, got {len(cell[column])}"
            )
    try:
        date = datetime.date.fromisoformat(cell["date"]).isoformat()
    except ValueError:
        problems.append(
            f"{where}, column date: expected a date as YYYY-MM-DD, got {cell['date']!r}"
        )
        date = ""
    file = cell["file"].lower()
    if file not in ("", ANY_FILE) and not (
        MIN_HASH_DIGITS <= len(file) <= 64 and all(c in "0123456789abcdef" for c in file)
    ):
        problems.append(
            f"{where}, column file: expected the sha256 of the file the row was "
            f"written for (students.csv's sha256 column, at least its first "
            f"{MIN_HASH_DIGITS} hex digits) or '{ANY_FILE}', got {cell['file']!r}"
        )
    if problems:
        return None, problems
    return Row(line, student, change, case, value, cell["reason"], cell["by"], date, file), []


def _student(text, students):
    """The class's id for a cell: as written, or as the gradebook writes a formula-like id
    (with the leading ' of grader.batch.outputs.spreadsheet); None for an unknown id."""
    from grader.core.spreadsheet_cell import safe_cell

    if text in students:
        return text
    if text.startswith("'") and text[1:] in students and safe_cell(text[1:]) == text:
        return text[1:]
    return None


def _parse_value(change, text, case_points, max_score):
    """(value, problem): the parsed ``value`` cell of a ``change`` row, or why it is not one."""
    if change == "points" and case_points is None:
        return None, ""  # the unknown case is the problem, and is reported as such
    if change in ("score", "points"):
        bound = max_score if change == "score" else case_points
        what = "the total score" if change == "score" else "the case's points"
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not (math.isfinite(value) and 0 <= value <= bound):
            return None, f"expected {what}, a number from 0 to {bound:g}, got {text!r}"
        value = round(value, 2)
        return (int(value) if value == int(value) else value), ""
    if change == "status":
        known = [status.value for status in Status]
        return (
            (text, "")
            if text in known
            else (None, f"expected a status, one of {', '.join(known)}, got {text!r}")
        )
    if change == "flags":
        return (
            (text, "")
            if text == "cleared"
            else (None, f"expected 'cleared' (the flags were reviewed), got {text!r}")
        )
    if change == "leaderboard":
        return (
            (text, "")
            if text == "opt-out"
            else (None, f"expected 'opt-out' (off the leaderboard students see), got {text!r}")
        )
    if change == "late":
        return (
            (text, "")
            if text in LATENESS
            else (
                None,
                f"expected one of {', '.join(LATENESS)} (an extension: not late; excused: "
                f"late without deduction; late: counted late), got {text!r}",
            )
        )
    if not text:
        return None, (
            "expected the note to show the student"
            if change == "note"
            else "expected the name the student chose"
        ) + ", got nothing"
    if len(text) > MAX_TEXT["value"]:
        return None, f"expected a note of at most {MAX_TEXT['value']} characters"
    return text, ""


def read(path, students, cases, max_score, late_penalty=0.0, flag="--overrides"):
    """The Overrides of the file at ``path``; raises OverridesError naming ``flag`` when the
    file cannot be read."""
    path = pathlib.Path(path)
    try:
        if path.stat().st_size > MAX_BYTES:
            raise OverridesError(
                f"{flag} {path}: over {MAX_BYTES} bytes; an overrides file "
                "holds a few rows per student"
            )
        text = path.read_bytes().decode("utf-8-sig")
    except OSError as error:
        raise OverridesError(f"{flag} {path}: {error.strerror}") from None
    except UnicodeDecodeError as error:
        raise OverridesError(
            f"{flag} {path}: byte {error.start} is not UTF-8; save the file "
            "as UTF-8 (CSV UTF-8 in Excel)"
        ) from None
    rows = parse(text, str(path), set(students), dict(cases), max_score)
    return Overrides(rows, text, str(path.resolve()), late_penalty)


def changed_source(described, copy_path):
    """Why the kept copy is stale: the file the staff edit (``described['source']``) now
    differs from it; '' when it does not, or when that file is not here."""
    source = pathlib.Path((described or {}).get("source") or "")
    if not source.name or not source.is_file() or source.resolve() == copy_path.resolve():
        return ""
    if not copy_path.is_file():
        return (
            f"{copy_path}, the copy of {source} applied before, is gone; give --overrides "
            f"{source} to apply that file again (a file of the header row alone applies "
            "none)"
        )
    try:
        now = source.read_bytes().decode("utf-8-sig")
    except (OSError, UnicodeDecodeError):
        return ""
    if digest(now) == digest(copy_path.read_bytes().decode("utf-8-sig", "replace")):
        return ""
    return (
        f"{source} and {copy_path}, the copy applied from it, differ (one was edited "
        f"since); give --overrides {source} to apply that file as it is now, or "
        f"--overrides {copy_path} to apply the copy"
    )


def kept(out_dir, described, students, cases, max_score, late_penalty=0.0):
    """The Overrides kept in ``out_dir`` (empty when it keeps none), re-checked against this
    class; raises OverridesError when the staff's file changed since (``changed_source``)."""
    path = pathlib.Path(out_dir) / FILE
    problem = changed_source(described, path)
    if problem:
        raise OverridesError(problem)
    if not path.is_file():
        return Overrides(late_penalty=late_penalty)
    found = read(path, students, cases, max_score, late_penalty, flag=FILE)
    return dataclasses.replace(found, source=(described or {}).get("source") or found.source)


def _bounds(students, settings):
    """What a file is checked against: the class's ids, the batch's cases and maximum."""
    cases_list = settings.cases()
    return dict(
        students=students,
        cases={case.id: case.points for case in cases_list},
        max_score=sum(case.points for case in cases_list)
        + (settings.speed.max_points if settings.timed else 0),
        late_penalty=settings.late_penalty,
    )


def for_batch(given, out_dir, described, students, settings):
    """The Overrides of a grade run (grader.batch.grade.grading.Settings ``settings``): the file
    ``given``, else the one ``out_dir`` keeps (``described`` by its batch.json), checked
    against the whole class ``students``, since a shard's file names other shards' too."""
    bounds = _bounds(students, settings)
    if given is not None:
        return read(given, **bounds)
    return kept(out_dir, described, **bounds)


def for_merge(given, shards, students, settings):
    """The Overrides for merging ``shards`` ([(OUT_DIR, what its batch.json describes)]):
    the file ``given``, else the one every shard keeps, which must be the same in each."""
    bounds = _bounds(students, settings)
    if given is not None:
        return read(given, **bounds)
    books = [(shard, kept(shard, described, **bounds)) for shard, described in shards]
    if len({book.text for _, book in books}) > 1:
        raise OverridesError(
            "the shards keep different overrides ("
            + "; ".join(f"{shard}: {len(book.rows)} row(s)" for shard, book in books)
            + "); give merge --overrides PATH with the file to apply"
        )
    return books[0][1]


def keep(out_dir, book):
    """Keep the applied file as ``out_dir/overrides.csv``; none there when none applies."""
    from grader.batch.outputs.atomic_file import atomic_write

    path = pathlib.Path(out_dir) / FILE
    if book.text:
        atomic_write(path, book.text)
    elif path.is_file():
        path.unlink()


def stale(out_dir, described):
    """Why ``out_dir``'s gradebook does not show the overrides as they are now, else ''."""
    path = pathlib.Path(out_dir) / FILE
    recorded = (described or {}).get("sha256")
    now = digest(path.read_bytes().decode("utf-8-sig", "replace")) if path.is_file() else None
    if recorded != now:
        return (
            f"{path} is not the file the gradebook was written with (edited or removed "
            "since); run the grade (or merge) command again to apply it, then export"
        )
    return changed_source(described, path)
