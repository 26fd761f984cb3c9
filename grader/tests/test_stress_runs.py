"""The stress-class runs kept in docs/stress-runs: every run gave every student one verdict.

Each CSV there holds runs of the same 100-file class (grader.tests.stress_class) at some
commit; a change to how files are run or judged must leave each status and score as it was.
"""

import csv
import pathlib

RUNS = pathlib.Path(__file__).resolve().parents[2] / "docs" / "stress-runs"


def _verdicts(path):
    with open(path, newline="", encoding="utf-8") as stream:
        return {row["student"]: (row["status"], row["score"]) for row in csv.DictReader(stream)}


def test_every_kept_stress_run_gives_each_student_the_same_verdict():
    files = sorted(RUNS.glob("*.csv"))
    assert len(files) >= 2
    first = _verdicts(files[0])
    assert len(first) == 100 and {status for status, _ in first.values()} >= {
        "passed",
        "failed",
        "flagged",
        "timeout",
        "crashed",
        "import_error",
        "not_implemented",
    }
    for path in files[1:]:
        assert _verdicts(path) == first, path.name
