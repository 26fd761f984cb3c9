"""Why a submission was not graded in full reads in English and Chinese on the student's
page: a file that does not load, a placeholder, a refused kernel, no file at all (each
decided before any run, so graded here for real), a run stopped at its time limit or ended
by the process, an nt_gemm that is not its kernel's; the gradebook's line stays English."""

import types

import pytest

from grader.batch.record import Record
from grader.batch.grade import grading, intake, verdict
from grader.batch.isolation.conversation import RunReport
from grader.batch.isolation.sandbox import Ending
from grader.batch.outputs import feedback
from grader.batch.status import reason
from grader.core import messages
from grader.tests import build_variants

SETTINGS = grading.Settings(
    seed=2026, backend="interpreter", timeout_s=10, memory_limit_bytes=1 << 30
)
SOURCES = {
    "syntax_error": ("import_error", "def arrangement(lhs, rhs, output:\n"),
    "names_missing": ("import_error", "BLOCK_SIZE_M = 64\n"),
    "placeholder": (
        "not_implemented",
        build_variants.VARIANTS["placeholder"].source("placeholder"),
    ),
    "torch_matmul": ("flagged", build_variants.VARIANTS["torch_matmul"].source("torch_matmul")),
}


def page_of(record):
    return feedback.feedback_markdown(record, feedback.hints_for(record, SETTINGS.cases()))


def assert_bilingual(record):
    """The page shows the Chinese of the record's message and of every case's message."""
    zh = messages.chinese(record["message"])
    assert zh and zh in page_of(record), record["message"]
    assert all(messages.line_zh(entry["message"]) for entry in record["cases"])


@pytest.mark.parametrize("name", sorted(SOURCES))
def test_a_file_refused_before_any_run_says_why_in_both_languages(name):
    status, source = SOURCES[name]
    submission = intake.Submission("ada", "ada.py", source.encode())
    record = grading.grade(submission, SETTINGS, "ada")
    assert record["status"] == status
    assert_bilingual(record)


def test_no_file_says_so_in_both_languages(tmp_path):
    (tmp_path / "ada").mkdir()
    (tmp_path / "ada" / "notes.txt").write_text("my kernel is on my laptop")
    (submission,) = intake.discover(tmp_path)
    record = grading.grade(submission, SETTINGS, "ada")
    assert record["status"] == "missing_file"
    assert_bilingual(record)
    assert "文件夹 ada/ 中没有 ninetoothed_gemm.py" in page_of(record)


FINISHED = Ending("finished", "", 1.0, "")
ENDINGS = {
    "timeout": Ending(
        "timeout",
        messages.say("timeout", seconds=123.04, waited=21.9, limit=123),
        123.0,
        "",
        where=(2, "nt_gemm"),
    ),
    "crashed": Ending(
        "crashed", messages.say("process_ended", how=messages.say("exit_code", code=7)), 1.0, ""
    ),
}


@pytest.mark.parametrize("kind", sorted(ENDINGS))
def test_a_run_that_ended_early_says_how_in_both_languages(kind):
    cases_list = SETTINGS.cases()
    record = Record(
        student="ada",
        max_score=1,
        cases=grading.case_entries_for(cases_list, messages.say("case_not_run")),
    )
    kernel_run = RunReport(FINISHED, "done", 1, load_status="ok")
    wrapper_run = RunReport(ENDINGS[kind], "running", 0, load_status="ok")
    source = "def nt_gemm(lhs, rhs):\n    while True: pass\n"
    verdict.decide(
        record, kernel_run, wrapper_run, types.SimpleNamespace(index=0), cases_list, source
    )
    assert record["status"] == kind
    assert_bilingual(record)
    if kind == "timeout":
        assert "；当时你的代码在第 2 行，`while True: pass`" in page_of(record)
        assert (
            reason(record) == "running your nt_gemm: stopped at its time limit "
            "(feedback.md says more)"
        )


def test_an_nt_gemm_that_is_not_its_kernels_shows_its_flag_in_both_languages():
    flag = messages.say("not_its_kernel_flag", case="square-64x64x64", differing=10, total=4096)
    record = Record(
        student="ada",
        status="flagged",
        max_score=1,
        flags=[flag],
        message=messages.say("not_its_kernel"),
    )
    page = page_of(record)
    assert f"- {flag}  \n  {messages.line_zh(flag)}\n" in page
    assert messages.chinese(record["message"]) in page
