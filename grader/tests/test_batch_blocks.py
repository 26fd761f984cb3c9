"""The batch grader's cases at other block sizes, built inside the sandbox
(grader.core.retile): a kernel right only at 64x64x64 loses them and is told the tile
order, a file whose tiles are numbers is told so, and a correct file passes them."""

import json

import pytest

from grader.core import cases
from grader.tests import build_variants
from grader.tests.batch_helpers import NEEDS_INTERPRETER, gradebook, graded_class

BLOCK_CASES = [case.id for case in cases.all_fixed_cases() if case.blocks]
OPTIONS = [
    "--cases",
    ",".join(BLOCK_CASES + ["square-64x64x64"]),
    "--no-speed",
    "--no-progress",
    "-j",
    "2",
]
# name: (score, the first hint's key); each case is worth a point
EXPECTED = {
    "other_style": (3, None),
    "rhs_tile_order": (1, "block_order"),
    "tiles_written_in": (1, "fixed_tiles"),
}


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    return graded_class(
        tmp_path_factory.mktemp("blocks"), build_variants.VARIANTS, *OPTIONS, names=list(EXPECTED)
    )


@NEEDS_INTERPRETER
@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_a_kernel_is_graded_at_other_block_sizes(graded, name):
    score, top = EXPECTED[name]
    row = gradebook(graded)[name]
    assert (row["score"], row["max_score"]) == (str(score), "3"), row
    assert row["square-64x64x64"] == "1", row
    record = json.loads((graded / name / "record.json").read_text(encoding="utf-8"))
    keys = [hint["key"] for hint in record["hints"]]
    assert (keys[0] if keys else None) == top, keys
    feedback = (graded / name / "feedback.md").read_text(encoding="utf-8")
    if top == "block_order":
        assert "its tiles are (BLOCK_SIZE_K, BLOCK_SIZE_N)" in feedback
        assert "它的分块应为 (BLOCK_SIZE_K, BLOCK_SIZE_N)" in feedback
