"""The statuses are declared once (grader.batch.status); the instructor reference's table
follows."""

import pathlib
import re

from grader.batch import status
from grader.batch.record import Record
from grader.batch.status import ExitCode, Status


def reason(fields):
    """The gradebook's message of the record with ``fields`` (its JSON shape)."""
    return status.reason(Record.from_json(fields))


REFERENCE = pathlib.Path(__file__).resolve().parents[2] / "docs" / "instructor-reference.md"


def _reference_rows():
    text = REFERENCE.read_text(encoding="utf-8")
    section = text.split("\n## Statuses\n", 1)[1].split("\n## ", 1)[0]
    return [
        [cell.strip() for cell in line.strip("|").split("|")]
        for line in section.splitlines()
        if re.match(r"\| `\w+` \|", line)
    ]


def test_the_reference_lists_every_status_in_order_with_its_first_line():
    rows = _reference_rows()
    assert [row[0].strip("`") for row in rows] == [each.value for each in Status]
    for row, each in zip(rows, Status):
        shown = row[-1].removesuffix("...").rstrip()
        assert each.en.startswith(shown) and shown, (each, row[-1])


def test_a_status_is_its_string_in_json_dicts_and_text():
    import json

    assert json.dumps({"status": Status.TIMEOUT}) == '{"status": "timeout"}'
    assert f"{Status.MEMORY_LIMIT}" == "memory_limit" and Status("crashed") is Status.CRASHED
    assert {Status.PASSED: 1}.get("passed") == 1


def test_the_chart_puts_what_needs_the_staff_least_first():
    order = Status.by_attention()
    assert order[0] is Status.PASSED and order[1] is Status.FAILED and order[2] is Status.FLAGGED
    assert [status.attention for status in order] == sorted(status.attention for status in order)


def test_exit_codes_are_the_shell_conventions():
    assert (ExitCode.OK, ExitCode.FAILURE, ExitCode.USAGE, ExitCode.INTERRUPTED) == (0, 1, 2, 130)


def _case(case_id, status, message, visibility="public"):
    return {
        "id": case_id,
        "name": case_id.split("-")[0],
        "status": status,
        "message": message,
        "visibility": visibility,
        "points": 0,
        "max_points": 1,
    }


def test_the_gradebooks_message_says_why_in_one_line():

    assert reason({"status": "passed", "message": "", "cases": [_case("a", "passed", "")]}) == ""
    assert (
        reason(
            {
                "status": "import_error",
                "message": "\nimporting ninetoothed_gemm.py failed "
                'with NameError: x\n  File "ninetoothed_gemm.py", line 3',
            }
        )
        == "importing ninetoothed_gemm.py failed with NameError: x"
    )
    flagged = {
        "status": "flagged",
        "message": "anti-cheat evidence: see flags",
        "flags": ["kernel: line 54: uses `torch`"],
        "handin": {"flags": ["the CSV's ratio is not the grader's"]},
    }
    assert reason(flagged) == "kernel: line 54: uses `torch` (and 1 more flag(s))"
    failed = {
        "status": "failed",
        "message": "2 of 3 cases failed",
        "cases": [
            _case("square-64", "passed", ""),
            _case("cancellation-64x64x384", "failed", "a hidden case", "hidden"),
            _case("tail_k-64x64x65", "error", "IndexError: out of range\nTraceback ..."),
        ],
    }
    # a hidden case by its name, as feedback.md names it: the Moodle export shows the line
    assert reason(failed) == "2 of 3 cases failed; first: cancellation"
    failed["cases"].reverse()
    assert reason(failed) == "2 of 3 cases failed; first: tail_k-64x64x65: IndexError: out of range"


def test_the_message_reads_the_same_when_the_same_file_is_graded_again():
    """A timeout's seconds are this run's; the gradebook's column is the verdict's."""

    said = [
        reason({"status": "timeout", "message": message})
        for message in (
            "running your nt_gemm: still running after 63.2 s, not counting 39.5 s spent waiting "
            "for a CPU core (the timeout is 63 s); your code was at line 83, in `while x > 0:`",
            "running your nt_gemm: still running after 630 s on the wall clock, 10 times the 63 s "
            "timeout, 560 s of it waiting for a CPU core; its processes were killed",
        )
    ]
    assert (
        said[0] == said[1] == "running your nt_gemm: stopped at its time limit "
        "(feedback.md says more)"
    )
    crashed = reason({"status": "crashed", "message": "the kernel run: ended after 3.5 s"})
    assert crashed == "the kernel run: ended after … s"


def test_the_message_is_printable_and_short():
    from grader.batch.status import REASON_LIMIT

    said = reason({"status": "crashed", "message": "\x1b[31mboom\u202e " + "x" * 1000})
    assert said.startswith("\\x1b[31mboom\\u202e ") and "\x1b" not in said
    assert len(said) == REASON_LIMIT and said.endswith("...")
