"""Copy out of a batch's output what its students may see: their feedback, nothing else.

Most of OUT_DIR must stay with the staff. gradebook.csv, summary.* and record.json name
the hidden cases' shapes, and environment.json holds the seed. The logs show whatever a
submission printed, its inputs' shapes included. The share folder holds one folder per
student with feedback.md and results.json, which name a hidden case only as
"square #1 (hidden)", and the pictures feedback.md links (arrangement.png, what-if.png), if
any. An index.csv for the staff says which folder is whose. A GPU batch's leaderboard goes
along in its public copy (pseudonyms); the staff copy stays behind.
"""

import csv
import pathlib
import shutil

from grader.batch.outputs.spreadsheet import safe_row

SHARED_FILES = ("feedback.md", "results.json")
# The pictures feedback.md links, where the grade drew them: the arrangement (at a public
# case's shape only) and the what-if of ``grade --what-if`` (the student's own timings).
SHARED_IF_DRAWN = ("arrangement.png", "what-if.png")
# The leaderboard students may see (pseudonyms, grader.batch.outputs.leaderboard), when there is one.
SHARED_CLASS_FILES = ("leaderboard.csv", "leaderboard.png")
INDEX = "index.csv"


def student_rows(out_dir):
    """The rows of OUT_DIR/students.csv (student, folder, origin, ...) of students with a
    folder, each folder checked to be one of OUT_DIR's own before anything is read from it.

    Raises ValueError, naming the folder, when out_dir is not a grader output."""
    out_dir = pathlib.Path(out_dir)
    students = out_dir / "students.csv"
    if not students.is_file():
        raise ValueError(f"{out_dir} has no students.csv: give the OUT_DIR of 'grade' or 'merge'")
    with open(students, newline="", encoding="utf-8") as file:
        rows = [row for row in csv.DictReader(file) if row.get("folder")]
    for row in rows:
        if (
            pathlib.Path(row["folder"]).name != row["folder"]
            or not (out_dir / row["folder"]).is_dir()
        ):
            raise ValueError(
                f"students.csv names folder {row['folder']!r}, which {out_dir} does not hold"
            )
    return rows


def build(out_dir, target):
    """Fill ``target`` from the grade (or merge) output ``out_dir``; returns the student count.

    Raises ValueError, naming the folder, when out_dir is not a grader output or
    target is not a fresh place to write.
    """
    out_dir, target = pathlib.Path(out_dir), pathlib.Path(target)
    if target.resolve().is_relative_to(out_dir.resolve()):
        raise ValueError(f"--out {target} is inside {out_dir}: share into a folder of its own")
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise ValueError(f"--out {target} already exists and is not an empty folder")
    rows = student_rows(out_dir)  # all checked before anything is written
    target.mkdir(parents=True, exist_ok=True)
    for row in rows:
        source = out_dir / row["folder"]
        (target / row["folder"]).mkdir()
        for name in SHARED_FILES + SHARED_IF_DRAWN:
            if (source / name).is_file():
                shutil.copyfile(source / name, target / row["folder"] / name)
    for name in SHARED_CLASS_FILES:
        if (out_dir / name).is_file():
            shutil.copyfile(out_dir / name, target / name)
    with open(target / INDEX, "w", newline="", encoding="utf-8") as file:
        writer = csv.writer(file)
        writer.writerow(["student", "folder"])
        writer.writerows(safe_row([row["student"], row["folder"]]) for row in rows)
    return len(rows)
