"""What the class got wrong (grader.batch.outputs.class_mistakes): the gradebook's
likely_mistake, the tally under summary.csv's cases and the console's line, from records."""

from grader.batch.record import Record
from grader.batch.outputs import class_chart, class_mistakes, reports
from grader.core import cases

CASES = cases.catalogue()[:2]


def _record(student, status, keys):
    return Record.from_json(
        {
            "student": student,
            "status": status,
            "score": 0,
            "max_score": 2,
            "message": "",
            "flags": [],
            "folder": student,
            "hints": [{"key": key} for key in keys],
            "cases": [
                {
                    "id": case.id,
                    "name": case.id,
                    "visibility": "public",
                    "message": "",
                    "status": "passed" if status == "passed" else "failed",
                    "points": 0,
                    "max_points": 1,
                }
                for case in CASES
            ],
        }
    )


CLASS = [
    _record("ana", "failed", ["expand_axis", "k_tail"]),
    _record("bo", "failed", ["accumulator_dtype"]),
    _record("cy", "failed", ["expand_axis"]),
    _record("di", "passed", []),
    _record("ed", "failed", []),
    _record("fu", "import_error", []),
]


def test_each_student_is_counted_once_by_the_first_hint():
    assert class_mistakes.tally(CLASS, CASES) == [("expand_axis", 2), ("accumulator_dtype", 1)]
    assert class_mistakes.console_line(CLASS, CASES) == (
        "likely mistakes: 2 students: expand_axis; 1: accumulator_dtype; 1 failed with none named"
    )
    assert class_mistakes.console_line(CLASS[3:4], CASES) == "likely mistakes: none named"


def test_the_gradebook_and_summary_carry_them():
    book = reports.gradebook_frame(CLASS, CASES)
    assert list(book["likely_mistake"]) == [
        "expand_axis",
        "accumulator_dtype",
        "expand_axis",
        "",
        "",
        "",
    ]
    summary = reports.summary_frame(CLASS, CASES)
    assert list(summary["case"]) == [case.id for case in CASES] + ["", ""]
    assert list(summary["likely_mistake"]) == ["", "", "expand_axis", "accumulator_dtype"]
    assert list(summary["students"]) == [6, 6, 2, 1]
    # the chart draws the cases alone
    assert class_chart.render(summary, book)[:8] == b"\x89PNG\r\n\x1a\n"
