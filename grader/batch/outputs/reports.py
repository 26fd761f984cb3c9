"""Write what a batch produced: per-student files, the gradebook, the summary, the environment.

Everything is written by the parent process, atomically (a temporary file in
the same folder, then ``os.replace``), so an interrupted batch never leaves a
half-written file, and a stored ``record.json`` always describes a finished grade.

Per student, in ``OUT/<folder>/`` (``folder`` is a safe name for the student id,
the student id as written where file systems allow, see
grader.batch.outputs.student_folders and ``OUT/students.csv``):

* ``record.json``: everything the grade was computed from, and its resume key;
* ``results.json``: the Gradescope autograder results shape, and ``feedback.md``: status,
  score, each case, the likely mistakes, in English and Chinese (both made by
  grader.batch.outputs.feedback);
* ``stdout.log`` and ``stderr.log``: the submission's output, truncated;
* ``arrangement.png``, when a public case failed and the arrangement was off there: which
  tiles one program gets, drawn beside the expected ones (grader.core.tile_picture);
* on a GPU, for a timed submission (grader.batch.timing.speed): ``speed.csv``, the grader's
  measurement in the benchmark's CSV columns, and ``card.png``, the benchmark's
  report card drawn from it; with ``--what-if``, ``what-if.png``, the student's functions
  timed with other tiles (grader.batch.timing.what_if_entry).

Beside the gradebook, a batch that timed anyone writes ``leaderboard.csv`` and
``leaderboard.png`` (grader.batch.outputs.leaderboard).
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import hmac
import json
import pathlib
import shutil
import tempfile

from grader.batch.outputs import class_mistakes, feedback, override_view, spreadsheet
from grader.batch.outputs.atomic_file import atomic_write
from grader.batch.outputs.private_file import KEY_FILE, signing_key
from grader.batch.names import lms_of
from grader.batch.record import Record
from grader.batch.status import reason

LOG_LIMIT = 64 * 1024


def _json(value):
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=False) + "\n"


def _truncate(text):
    data = text.encode("utf-8", errors="replace")
    if len(data) <= LOG_LIMIT:
        return text
    half = LOG_LIMIT // 2
    return (
        data[:half].decode("utf-8", "ignore")
        + f"\n[... {len(data) - LOG_LIMIT} bytes cut ...]\n"
        + data[-half:].decode("utf-8", "ignore")
    )


def write_student(out_dir: str | pathlib.Path, record: Record, cases_list: list, book=None) -> None:
    """All of one student's files; record.json last, so it marks a finished grade."""
    folder = pathlib.Path(out_dir) / record.folder
    folder.mkdir(parents=True, exist_ok=True)
    atomic_write(folder / "stdout.log", _truncate(record.stdout))
    atomic_write(folder / "stderr.log", _truncate(record.stderr))
    if (record.speed or {}).get("rows"):
        write_speed(folder, record)
    # A picture this grade does not draw goes: one left from an earlier grade of this folder
    # would be shared beside a feedback.md that does not link it.
    if ((record.speed or {}).get("what_if") or {}).get("rows"):
        write_what_if(folder, record)
    else:
        (folder / feedback.WHAT_IF_PICTURE).unlink(missing_ok=True)
    if record.arrangement:
        write_arrangement(folder, record)
    else:
        (folder / feedback.ARRANGEMENT_PICTURE).unlink(missing_ok=True)
    write_feedback(out_dir, record, cases_list, book)


def write_feedback(
    out_dir: str | pathlib.Path, record: Record, cases_list: list, book=None
) -> None:
    """results.json and feedback.md with the staff's overrides (grader.batch.outputs.overrides)
    applied, then record.json, the grade as graded plus its hints and what the overrides
    changed. ``record`` is not changed: what is stored is a copy."""
    from grader.batch.outputs import pseudonyms

    folder = pathlib.Path(out_dir) / record.folder
    hints = feedback.hints_for(record, cases_list)
    shown = override_view.applied(record, book)
    shown.leaderboard_name = pseudonyms.name(shown, pseudonyms.key(out_dir))
    text = feedback.feedback_markdown(shown, hints)
    atomic_write(
        folder / "results.json", _json(feedback.results_json(shown, output=text, total=True))
    )
    atomic_write(folder / "feedback.md", text)
    store_record(
        out_dir,
        dataclasses.replace(
            record,
            hints=hints,
            overrides=shown.overrides,
            overrides_withheld=shown.overrides_withheld,
        ),
    )


def write_speed(folder, record):
    """speed.csv (the benchmark's columns) and card.png (the benchmark's card) of a timed record."""
    from benchmarks import card
    from grader.batch.timing import speed

    table = speed.frame(record)
    atomic_write(folder / "speed.csv", spreadsheet.csv_text(table))
    _write_picture(
        folder,
        "card.png",
        lambda path: card.render(
            table,
            path,
            title="NineToothed GEMM speed, measured by the grader",
            ours=speed.CARD_LABEL,
        ),
    )


def write_what_if(folder, record):
    """what-if.png: the benchmark's what-if picture, from the rows the record keeps."""
    from benchmarks import what_if_output
    from benchmarks.harness import parse_size

    found = record.speed["what_if"]
    _write_picture(
        folder,
        feedback.WHAT_IF_PICTURE,
        lambda path: what_if_output.render_of(found["rows"], parse_size(found["size"]), path),
    )


def write_arrangement(folder, record):
    """arrangement.png: the kernel run's numbers for one program's tiles, drawn here, in the
    parent, beside the expected ones for the tiles it claimed (grader.core.tile_picture)."""
    from grader.core import program_tiles

    tiles = list(record.tiles or program_tiles.REFERENCE_TILES)
    atomic_write(
        folder / feedback.ARRANGEMENT_PICTURE,
        _arrangement_png(json.dumps([record.arrangement, tiles], sort_keys=True)),
    )


@functools.lru_cache(maxsize=64)
def _arrangement_png(numbers):
    """The PNG of ``numbers`` (the JSON of the picture and the tiles), which are all it is
    made of: files whose arrangement gives the same tiles share one drawing per batch (each
    took about 0.3 s of the parent's one core, which paces a batch, on the H200: issue 34)."""
    from grader.core import tile_picture

    picture, tiles = json.loads(numbers)
    with tempfile.TemporaryDirectory() as scratch:
        path = pathlib.Path(scratch) / feedback.ARRANGEMENT_PICTURE
        return tile_picture.draw(picture, tiles, path).read_bytes()


def _write_picture(folder, name, draw):
    """``folder/name`` from ``draw(path)``, drawn in a scratch folder and put in place whole:
    a reader never sees half a picture."""
    with tempfile.TemporaryDirectory(dir=folder) as scratch:
        atomic_write(folder / name, draw(pathlib.Path(scratch) / name).read_bytes())


def store_record(out_dir: str | pathlib.Path, record: Record) -> None:
    """Sign the record with the output folder's key and write it: resume trusts only that."""
    fields = record.to_json()
    fields["signature"] = _signature(fields, signing_key(out_dir))
    atomic_write(pathlib.Path(out_dir) / record.folder / "record.json", _json(fields))


def _signature(fields, key):
    """The HMAC of a record.json's fields as stored, whatever their version: a record
    written before the version existed verifies as it was signed."""
    body = json.dumps(
        {k: v for k, v in fields.items() if k != "signature"}, sort_keys=True, ensure_ascii=True
    ).encode("ascii")
    return hmac.new(key, body, hashlib.sha256).hexdigest()


def read_record(out_dir: str | pathlib.Path, folder: str) -> Record | None:
    """A stored record (grader.batch.record.Record) whose signature holds, else None (it is
    graded again): a record of a newer grader's version too."""
    path = pathlib.Path(out_dir) / folder / "record.json"
    try:
        if path.is_symlink() or path.stat().st_size > 16 << 20:
            return None
        fields = json.loads(path.read_text(encoding="utf-8"))
        key = (pathlib.Path(out_dir) / KEY_FILE).read_bytes()
    except (OSError, ValueError):
        return None
    if not isinstance(fields, dict) or not hmac.compare_digest(
        str(fields.get("signature", "")), _signature(fields, key)
    ):
        return None
    try:
        return Record.from_json(fields)
    except (TypeError, ValueError):
        return None


def gradebook_frame(records, cases_list):
    import pandas

    speed_sizes = timed_sizes(records)
    rows = []
    for record in sorted(records, key=lambda r: r.student):
        points = {entry.id: entry.points for entry in record.cases}
        row = {
            "student": record.student,
            "score": record.score,
            "max_score": record.max_score,
            "status": record.status,
            "flags": " | ".join(feedback.flags(record)),
            "message": reason(record),
            "likely_mistake": class_mistakes.likely_mistake(record, cases_list),
            "lms_id": record.lms_id,
            "lms": lms_of(record.origin) if record.lms_id else "",
            "late": bool(record.late),
            "graded_file": record.origin,
            "seen": seen_text(record),
        }
        for case in cases_list:
            row[case.id] = points.get(case.id, 0)
        speed_columns = _speed_columns(record, speed_sizes)
        row.update(speed_columns)
        row["wall_time_s"] = record.wall_time_s
        row["isolation"] = record.isolation
        row["overrides"] = override_view.summary(record)
        rows.append(row)
    columns = [
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
    columns += (
        [case.id for case in cases_list]
        + list(_speed_columns(None, speed_sizes))
        + ["wall_time_s", "isolation", "overrides"]
    )
    return pandas.DataFrame(rows, columns=columns)


def seen_text(record: Record) -> str:
    """The entries intake saw of the student and did not grade, one cell: ``path (why)``."""
    return " | ".join(f"{entry['path']} ({entry['why']})" for entry in record.seen or [])


def timed_sizes(records):
    """The size labels any record was timed at, in order; empty when nobody was timed."""
    sizes = []
    for record in records:
        for row in (record.speed or {}).get("rows") or []:
            if row["size"] not in sizes:
                sizes.append(row["size"])
    return sizes


def _speed_columns(record, sizes):
    """The gradebook's speed columns of one record (all blank for None); none when
    the batch measured no speed."""
    if not sizes:
        return {}
    from benchmarks import report

    entry = (record.speed if record else None) or {}
    rows = {row["size"]: row for row in entry.get("rows") or [] if row["verdict"] == "PASS"}
    tiles = entry.get("tiles")
    columns = {
        "speed": entry.get("status", ""),
        "tiles": "x".join(map(str, tiles)) if tiles and rows else "",
        "speed_points": "" if entry.get("points") is None else entry["points"],
    }
    for size in sizes:
        row = rows.get(size)
        columns[f"ratio_{size}"] = round(row["ratio_vs_torch_mm"], 4) if row else ""
        columns[f"tflops_{size}"] = round(row["tflops"], 2) if row else ""
        columns[f"roofline_{size}"] = (
            ""
            if not row or row["roofline_fraction"] in (None, "")
            else round(row["roofline_fraction"], 4)
        )
        columns[f"spread_{size}"] = round(report.spread(row), 4) if row else ""
    return columns


def summary_frame(records, cases_list):
    """One row per case, then one per likely mistake of the class (grader.batch.outputs
    .class_mistakes), most students first: its key in ``likely_mistake``, ``students`` the
    students whose first hint it is, the case's columns empty."""
    import pandas

    rows = []
    for case in cases_list:
        ran = passed = 0
        for record in records:
            entry = next((e for e in record.cases if e.id == case.id), None)
            if entry and entry.status != "not_run":
                ran += 1
            if entry and entry.status == "passed":
                passed += 1
        rows.append(
            {
                "case": case.id,
                "visibility": case.visibility,
                "points": case.points,
                "targets": case.targets,
                "students": len(records),
                "ran": ran,
                "passed": passed,
                "pass_rate": round(passed / len(records), 4) if records else 0.0,
                "likely_mistake": "",
            }
        )
    rows += [
        {
            "case": "",
            "visibility": "",
            "points": "",
            "targets": "",
            "students": students,
            "ran": "",
            "passed": "",
            "pass_rate": "",
            "likely_mistake": key,
        }
        for key, students in class_mistakes.tally(records, cases_list)
    ]
    return pandas.DataFrame(rows, columns=SUMMARY_COLUMNS)


SUMMARY_COLUMNS = [
    "case",
    "visibility",
    "points",
    "targets",
    "students",
    "ran",
    "passed",
    "pass_rate",
    "likely_mistake",
]


def write_class(
    out_dir: str | pathlib.Path, records: list[Record], cases_list: list, book=None
) -> None:
    """gradebook.csv, summary.csv, summary.png and students.csv from every record of the batch,
    with the staff's overrides applied; every CSV through grader.batch.outputs.spreadsheet, so
    no id in it is taken for a formula."""
    import pandas

    out_dir = pathlib.Path(out_dir)
    records = [override_view.applied(record, book) for record in records]
    gradebook = gradebook_frame(records, cases_list)
    summary = summary_frame(records, cases_list)
    atomic_write(out_dir / "gradebook.csv", spreadsheet.csv_text(gradebook, bom=True))
    atomic_write(out_dir / "summary.csv", spreadsheet.csv_text(summary))
    if records:
        from grader.batch.outputs import class_chart

        atomic_write(out_dir / "summary.png", class_chart.render(summary, gradebook))
    from grader.batch.outputs import leaderboard

    leaderboard.write(out_dir, records)
    mapping = pandas.DataFrame(
        [
            {
                "student": r.student,
                "folder": r.folder,
                "origin": r.origin,
                "status": r.status,
                "sha256": r.sha256,
            }
            for r in sorted(records, key=lambda r: r.student)
        ],
        columns=["student", "folder", "origin", "status", "sha256"],
    )
    atomic_write(out_dir / "students.csv", spreadsheet.csv_text(mapping))


def write_skipped(out_dir: str | pathlib.Path, skipped: list[tuple[str, str]]) -> None:
    """skipped.csv: the submissions folder's entries that are no student's row, and why
    (grader.batch.grade.intake), for a TA to open beside the gradebook."""
    import pandas

    frame = pandas.DataFrame(skipped, columns=["entry", "why"])
    atomic_write(pathlib.Path(out_dir) / "skipped.csv", spreadsheet.csv_text(frame, bom=True))


def write_environment(out_dir, info):
    atomic_write(pathlib.Path(out_dir) / "environment.json", _json(info))


def copy_student_folder(source, target):
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(source, target)
