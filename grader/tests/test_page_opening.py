"""A student's page and the pytest grader's summary open with the likely mistake, or say that
none is known (and, where the arrangement checked right, to look at application()), before
any status line or traceback; NineToothed's or Triton's own words are shown once."""

import json
import types

import pytest

from grader.batch.record import Record
from grader.batch.outputs import feedback
from grader.core import messages, suite
from grader.tests import build_variants as kit
from grader.tests.batch_helpers import NEEDS_INTERPRETER, graded_class, run_pytest
from grader.tests.source_edits import Variant, write_class

RAISED = "AttributeError: 'Symbol' object has no attribute 'upper_bound'"
BUILD_ERROR = f"{messages.say('did_not_build')}\n{RAISED}"
WRAPPER = (
    f"{messages.say('wrapper_failed', case='tail_n-128x97x128')}\n{RAISED}\n"
    '  File "ninetoothed_gemm.py", line 99, in nt_gemm\n    _kernel()(lhs, rhs, output)'
)
HINT = {
    "key": "k_untiled",
    "title": "lhs or rhs is not tiled along K",
    "title_zh": "lhs 或 rhs 没有沿 K 分块",
    "en": "Tile K by BLOCK_SIZE_K.",
    "zh": "沿 K 按 BLOCK_SIZE_K 分块。",
    "evidence": ["lhs's tiles are (192,)"],
}


def _record(message="", case_message="", status="failed", layout_ok=False):
    entry = {
        "visibility": "public",
        "status": "error" if case_message else "failed",
        "points": 0,
        "max_points": 1,
        "message": case_message,
    }
    return Record.from_json(
        {
            "student": "ada",
            "status": status,
            "score": 0,
            "max_score": 3,
            "message": message,
            "flags": [],
            "layout_ok": layout_ok,
            "cases": [
                {**entry, "id": "tail_n-128x97x128", "name": "tail_n"},
                {**entry, "id": "tail_m-65x128x128", "name": "tail_m"},
                {**entry, "id": "hidden_1", "name": "hidden_1 (hidden)", "visibility": "hidden"},
            ],
        }
    )


def _first_section(page):
    """The page from its first heading after the title to the status line."""
    body = page.split("\n## ", 1)[1]
    return "## " + body.split("\n- ", 1)[0] if "\n- " in body else body


def test_the_page_opens_with_the_likely_mistake_before_any_traceback():
    page = feedback.feedback_markdown(_record(WRAPPER, BUILD_ERROR), [HINT])
    assert page.index("## Likely mistake / 可能的错误") < page.index("```")
    assert page.index("lhs or rhs is not tiled along K") < page.index("Some cases failed")
    assert page.index("evidence / 依据: lhs's tiles are (192,)") < page.index("```")


def test_with_no_hint_the_page_says_so_and_points_at_application_where_the_layout_is_right():
    right = feedback.feedback_markdown(_record("3 of 3 cases failed", layout_ok=True), [])
    opening = right[: right.index("Some cases failed")]
    assert "No known mistake matches what your file did" in opening
    assert "Your arrangement looks right" in opening and "look at application()" in opening
    unknown = feedback.feedback_markdown(_record("3 of 3 cases failed"), [])
    assert "No known mistake matches" in unknown and "look at application()" not in unknown
    passed = feedback.feedback_markdown(_record(status="passed"), [])
    assert "No known mistake: every case passed." in passed


def test_the_librarys_words_are_shown_once_under_their_own_heading():
    page = feedback.feedback_markdown(_record(WRAPPER, BUILD_ERROR), [HINT])
    assert page.count(RAISED) == 1
    heading = page.index("## What NineToothed or Triton said")
    assert heading < page.index(RAISED) < page.index("## Cases")
    assert page.count(feedback.SEE_LIBRARY) == 2  # nt_gemm's call and the first case
    assert "The same message as tail_n-128x97x128 above." in page
    assert "nt_gemm 在公开用例 tail_n-128x97x128 上出错了" in page  # the kit's line stays, in zh
    # a wrapper that raised something else keeps its own traceback
    own = WRAPPER.replace(RAISED, "ValueError: lhs must be 2-D")
    assert "ValueError: lhs must be 2-D" in feedback.feedback_markdown(
        _record(own, BUILD_ERROR), [HINT]
    )


def _config(layout_right):
    return types.SimpleNamespace(_ntgemm_layout_right=layout_right)


def test_the_summary_opens_with_the_likely_mistake_or_none():
    failing = [object()]
    assert suite.opening([HINT], failing, _config(True))[:2] == [
        "likely mistake: lhs or rhs is not tiled along K [k_untiled] (all causes below)",
        "可能的错误：lhs 或 rhs 没有沿 K 分块（全部可能原因见下文）",
    ]
    none = suite.opening([], failing, _config(True))
    assert none[0].startswith("no known mistake matches these failures")
    assert "look at application()" in none[2]
    assert len(suite.opening([], failing, _config(False))) == 2
    assert suite.opening([], [], _config(True))[0] == "no known mistake: every case passed"


@NEEDS_INTERPRETER
def test_pytest_shows_the_librarys_words_once_and_the_mistake_first(tmp_path):
    folder = write_class(tmp_path / "class", kit.VARIANTS, ["lhs_not_tiled_along_k"])
    shown = run_pytest(
        "grader",
        "--submission",
        str(folder / "lhs_not_tiled_along_k" / "ninetoothed_gemm.py"),
        "-q",
        "-p",
        "no:cacheprovider",
        "-k",
        "square-64x64x64 or tail_mnk-65x97x130 or nonsquare-128x256x192",
    ).stdout
    failures = shown[: shown.index("ntgemm grade")]  # a hint's evidence may quote them too
    assert failures.count("'Symbol' object has no attribute 'upper_bound'") == 1, shown
    summary = shown[shown.index("ntgemm grade") :].splitlines()
    assert summary[1].startswith("likely mistake: lhs or rhs is not tiled along K [k_untiled]")


@NEEDS_INTERPRETER
@pytest.mark.parametrize("name, right", [("reference", True), ("lhs_not_tiled_along_k", False)])
def test_the_batch_keeps_whether_the_arrangement_checked_right(batch, name, right):
    record = json.loads((batch / name / "record.json").read_text(encoding="utf-8"))
    assert record["layout_ok"] is right
    if not right:
        page = (batch / name / "feedback.md").read_text(encoding="utf-8")
        shown = [
            line
            for line in page.splitlines()  # a hint's evidence may quote them too
            if "'upper_bound'" in line and "依据" not in line
        ]
        assert shown == ["AttributeError: 'Symbol' object has no attribute 'upper_bound'"], page
        assert page.index("## Likely mistake") < page.index("```")


@pytest.fixture(scope="module")
def batch(tmp_path_factory):
    return graded_class(
        tmp_path_factory.mktemp("opening"),
        {
            "reference": Variant("the model answer", ()),
            "lhs_not_tiled_along_k": kit.VARIANTS["lhs_not_tiled_along_k"],
        },
        "--cases",
        "square-64x64x64,tail_mnk-65x97x130",
        "--no-speed",
        "--no-progress",
        "-j",
        "2",
    )
