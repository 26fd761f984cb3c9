"""Print "why this speed" for a graded batch folder, or for one benchmark CSV.

    python -m grader.batch.outputs.explain_speed OUT_DIR [--student ID]
    python -m grader.batch.outputs.explain_speed FILE.csv

For staff: the section each timed student's feedback.md carries (benchmarks.why_speed_text),
read from the signed records in OUT_DIR, or worked out from a CSV in the benchmark's
columns (a student's ``speed.csv``, a hand-in, a baseline). A record timed before the
records kept ``why``, or before each ``why`` named the card it ran on, is explained from its
rows and GPU build here. It computes no verdict
of its own and times nothing, so it runs the same on any machine.
"""

import argparse
import csv
import pathlib
import sys

from benchmarks import why_speed, why_speed_text
from grader.batch.outputs import reports

OK, UNUSABLE = 0, 2


def record_lines(record):
    """The why-section of one record, or the one line that says why there is none."""
    entry = record.speed or {}
    if entry.get("status") != "timed":
        return [entry.get("message") or "Speed: not timed."]
    whys = why_speed.of_entry(entry, record.gpu_build)
    return why_speed_text.markdown(whys) or [
        "No explanation: the GPU is not one the ledger models, or no size passed."
    ]


def batch_lines(out_dir, student=None):
    """Every timed student's why-section in OUT_DIR (one student with ``student``)."""
    listing = out_dir / "students.csv"
    if not listing.is_file():
        raise ValueError(f"{out_dir} has no students.csv: give the OUT_DIR of 'grade' or 'merge'")
    with open(listing, newline="", encoding="utf-8") as file:
        rows = [row for row in csv.DictReader(file) if row.get("folder")]
    if student is not None:
        rows = [row for row in rows if row["student"] == student]
        if not rows:
            raise ValueError(f"{out_dir} has no student {student!r}")
    lines = []
    for row in rows:
        record = reports.read_record(out_dir, row["folder"])
        lines += ["", f"# {row['student']}"]
        lines += (
            record_lines(record)
            if record is not None
            else ["record.json is missing or its signature does not hold: grade the batch again."]
        )
    return lines


def csv_lines(path):
    """The why-section of a CSV in the benchmark's columns."""
    from benchmarks import report

    frame = report.read_csv(path)
    if not {"size", "verdict", "block_m"} <= set(frame.columns):
        raise ValueError(f"{path} does not have the benchmark's columns (benchmarks.report)")
    text = report.why_text(frame.astype({"size": str}))
    return (
        text.splitlines()
        if text
        else [f"No explanation for {path.name}: no timed size on a GPU the ledger models."]
    )


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m grader.batch.outputs.explain_speed",
        description="Print why each timed kernel ran at its speed: the ledger's formulas "
        "applied to its tiles, launch and build, and the limit they point at.",
    )
    parser.add_argument(
        "path",
        metavar="OUT_DIR|FILE.csv",
        help="the OUT_DIR of 'grade' or 'merge', or a benchmark CSV",
    )
    parser.add_argument("--student", metavar="ID", help="only this student of OUT_DIR")
    args = parser.parse_args(argv)
    path = pathlib.Path(args.path)
    try:
        if path.is_dir():
            lines = batch_lines(path, args.student)
        elif path.suffix == ".csv" and path.is_file():
            lines = csv_lines(path)
        else:
            raise ValueError(f"{path} is neither a graded batch folder nor a CSV file")
    except (OSError, ValueError, KeyError) as error:
        print(f"error: {error}", file=sys.stderr)
        return UNUSABLE
    print("\n".join(lines).strip("\n"))
    return OK


if __name__ == "__main__":
    sys.exit(main())
