"""The kinds of slip a first round of students made that no hint named (grader.core
.source_slips, with the group size from grader.core.size_slips): each is named by its cause,
with its line, in English and in Chinese; none is read into a correct style."""

import pathlib

import pytest

from grader.core import cases, diagnosis, layout, messages, source_mistakes
from grader.core.checks import Verdict
from grader.core.loading import load_submission
from grader.tests import build_variants
from grader.tests.build_variants import DOT, LHS_EXPAND, LHS_TILE, LOOP, STORE, ZEROS
from grader.tests.source_edits import Variant, writer

ROOT = pathlib.Path(__file__).resolve().parents[2]

SLIPS = {
    "elementwise": (
        Variant("`*` between the tiles", ((DOT, "accumulator += lhs[k] * rhs[k]"),)),
        "elementwise_product",
        "accumulator +=",
        "multiplies the two tiles element",
    ),
    "transposed": (
        Variant(
            "rhs's tile transposed", ((DOT, "accumulator += ntl.dot(lhs[k], ntl.trans(rhs[k]))"),)
        ),
        "transposed_tile",
        "accumulator +=",
        "transposes a tile of `rhs`",
    ),
    "starts_late": (
        Variant("the loop starts at 1", ((LOOP, "for k in range(1, lhs.shape[0]):"),)),
        "k_loop_range",
        "for k in",
        "starts at 1",
    ),
    "ends_early": (
        Variant("the loop ends a tile early", ((LOOP, "for k in range(lhs.shape[0] - 1):"),)),
        "k_loop_range",
        "for k in",
        "stops before the last K tile",
    ),
    "floor_count": (
        Variant(
            "lhs's block count by floor division",
            ((LHS_EXPAND, "lhs_arranged.expand((-1, output.shape[1] // block_size_n))"),),
        ),
        "floor_count",
        "lhs_arranged = lhs_arranged.expand",
        "counts blocks by floor division",
    ),
    "output_read": (
        Variant(
            "output += with no accumulator",
            ((f"    {ZEROS}\n", ""), (DOT, "output += ntl.dot(lhs[k], rhs[k])"), (STORE, "")),
        ),
        "reads_output",
        "output +=",
        "adds into `output` as if it held a running sum",
    ),
    "len": (
        Variant("len() of the tile sequence", ((LOOP, "for k in range(len(lhs)):"),)),
        "len_of_tiles",
        "for k in",
        "`len(lhs)` asks for the length",
    ),
    "strides": (
        Variant(
            "strides= in lhs's tile()",
            ((LHS_TILE, "lhs.tile((block_size_m, block_size_k), strides=(1, 1))"),),
        ),
        "tile_strides",
        "lhs_arranged = lhs.tile",
        "gives tile() strides=(1, 1)",
    ),
    "cast_each_step": (
        Variant("each step's product cast to float16", ((DOT, DOT + ".to(ntl.float16)"),)),
        "accumulator_dtype",
        "accumulator +=",
        "rounds to float16 at every step",
    ),
    "slice_store": (
        Variant(
            "a numpy slice store", ((STORE, "    output[:, :] = accumulator  # noqa: F841\n"),)
        ),
        "slice_store",
        "output[:, :]",
        "stores into a slice of `output`",
    ),
    "group_one_tile": (
        Variant(
            "lhs's K tiles grouped one at a time",
            ((f"{LHS_TILE}.tile((1, -1))", f"{LHS_TILE}.tile((1, 1))"),),
        ),
        "group_size",
        "lhs_arranged = lhs.tile",
        "groups the tiles (1, 1) at a time",
    ),
}


@pytest.fixture(scope="module")
def slip_path(tmp_path_factory):
    return writer(
        tmp_path_factory.mktemp("slips"), {name: variant for name, (variant, *_) in SLIPS.items()}
    )


def _line(path, start):
    return next(
        number
        for number, text in enumerate(path.read_text().splitlines(), 1)
        if text.strip().startswith(start)
    )


@pytest.mark.parametrize("name", sorted(SLIPS))
def test_a_slip_is_named_by_its_cause_with_its_line_in_both_languages(name, slip_path, backend):
    _, key, line, says = SLIPS[name]
    path = slip_path(name)
    findings = source_mistakes.inspect_file(path) + layout.inspect_arrangement(
        load_submission(path)
    )
    catalogue = cases.catalogue()
    verdicts = [Verdict(case.id, False, "wrong values") for case in catalogue]
    hints = diagnosis.explain(findings, verdicts, catalogue)
    assert [hint["key"] for hint in hints] == [key], hints
    evidence = hints[0]["evidence"][0]
    assert evidence.startswith(f"line {_line(path, line)}"), evidence
    assert says in evidence, evidence
    zh = messages.chinese(evidence)
    assert zh and zh != evidence and f"第 {_line(path, line)} 行" in zh, zh


@pytest.mark.parametrize("name", sorted(build_variants.CORRECT))
def test_no_correct_style_reads_as_a_slip(name):
    source = build_variants.CORRECT[name].edited()
    keys = {key for _, key, _, _ in SLIPS.values()}
    assert not {finding["mistake"] for finding in source_mistakes.inspect_source(source)} & keys


def test_the_skeleton_reads_as_placeholders_not_slips():
    """The handout's raise NotImplementedError is no missing return, no missing product: the
    placeholder is the whole story, under every case as in the summary."""
    skeleton = (ROOT / "assignment" / "ninetoothed_gemm.py").read_text(encoding="utf-8")
    assert source_mistakes.inspect_source(skeleton) == []
    verdict = Verdict("square-64x64x64", False, "placeholder", "not_implemented")
    assert (
        diagnosis.case_cause(verdict, [{"mistake": "k_steps", "message": "line 3: x"}])
        == "not_implemented"
    )
