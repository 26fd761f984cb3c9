"""``flagged`` is for evidence of a cheat (torch in the kernel, a write into an input, Python
asked for while Triton compiles), never for a kernel that only cannot build. Honest
mistakes that come close to each rule that flags are graded in a real batch: each is
``failed`` or ``passed``, with an empty ``flags`` column and no review section on its page.
"""

import json

import pytest

from grader.core import build_refusal, generated_kernel
from grader.core.kernel_allowlist import Unbuildable, Violation
from grader.tests import build_variants as kit
from grader.tests.batch_helpers import NEEDS_INTERPRETER, gradebook, graded_class
from grader.tests.source_edits import Variant, model_answer

STORE = kit.STORE
# name: (the honest mistake, the rule it comes close to, its status)
HONEST = {
    "slice_store": (
        Variant(
            "a numpy habit: the tile stored through a slice",
            ((STORE, "    output[:, :] = accumulator\n"),),
        ),
        "the generated kernel's check (NineToothed writes no file that parses)",
        "failed",
    ),
    "ellipsis_store": (
        Variant("the tile stored through `...`", ((STORE, "    output[...] = accumulator\n"),)),
        "the source's allowlist (constants are numbers)",
        "failed",
    ),
    "augmented_store": (
        Variant(
            "the product added into the output, no accumulator",
            (
                (f"    {kit.ZEROS}\n", ""),
                (kit.DOT, "output += ntl.dot(lhs[k], rhs[k])"),
                (STORE, ""),
            ),
        ),
        "the generated kernel's check (reads the output)",
        "failed",
    ),
    "global_blocks": (
        kit.VARIANTS["accumulator_with_global_blocks"],
        "the generated kernel's check (names of the file's globals)",
        "failed",
    ),
    "print_in_arrangement": (
        Variant(
            "arrangement() prints the grid it made",
            (
                (
                    "    grid_m, grid_n = output_arranged.shape\n",
                    "    grid_m, grid_n = output_arranged.shape\n"
                    "    print('grid', grid_m, grid_n)\n",
                ),
            ),
        ),
        "the build guard (Python run while the kernel builds)",
        "passed",
    ),
    "helper_in_arrangement": (
        Variant(
            "arrangement() tiles through a helper of the file",
            (
                (kit.OUTPUT_TILE, "_tiled(output, block_size_m, block_size_n)"),
                (
                    "def arrangement(",
                    "def _tiled(tensor, rows, columns):\n"
                    "    return tensor.tile((rows, "
                    "columns))\n\n\ndef arrangement(",
                ),
            ),
        ),
        "the source's allowlist (what arrangement() may call)",
        "passed",
    ),
    "contiguous_inputs": (
        Variant(
            "nt_gemm makes its inputs contiguous first",
            ((kit.RETURN, "    lhs, rhs = lhs.contiguous(), rhs.contiguous()\n" + kit.RETURN),),
        ),
        "torch calls (only nt_gemm makes them)",
        "passed",
    ),
    "returns_a_copy": (
        Variant(
            "nt_gemm returns a copy of its output",
            ((kit.RETURN, kit.RETURN.replace("return output", "return output.clone()")),),
        ),
        "nt_gemm returning what its kernel did not write",
        "passed",
    ),
}
CASES = ["--cases", "square-64x64x64,tail_mnk-65x97x130", "--no-speed", "--no-progress", "-j", "2"]


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    return graded_class(
        tmp_path_factory.mktemp("honest"),
        {name: variant for name, (variant, _, _) in HONEST.items()},
        *CASES,
    )


@NEEDS_INTERPRETER
@pytest.mark.parametrize("name", sorted(HONEST))
def test_an_honest_mistake_near_a_flag_rule_is_not_flagged(graded, name):
    _, rule, status = HONEST[name]
    row = gradebook(graded)[name]
    assert (row["status"], row["flags"]) == (status, ""), (rule, row)
    page = (graded / name / "feedback.md").read_text(encoding="utf-8")
    for heading in ("Anti-cheat evidence", "违规证据", "For review", "待复核"):
        assert heading not in page, (rule, heading)


@NEEDS_INTERPRETER
@pytest.mark.parametrize("name", ["slice_store", "ellipsis_store"])
def test_a_slice_store_fails_on_the_students_line(graded, name):
    record = json.loads((graded / name / "record.json").read_text(encoding="utf-8"))
    line = next(
        number
        for number, text in enumerate(HONEST[name][0].source(name).splitlines(), 1)
        if text.strip().startswith("output[")
    )
    assert record["message"].startswith(f"your kernel cannot run as written: line {line}: "), (
        record["message"]
    )
    assert "generated line" not in record["message"]


def test_a_generated_file_that_does_not_parse_cannot_build():
    """NineToothed's text for a slice store does not parse: that alone asks for nothing."""
    source = "import triton\n\ndef f():\n    store(pointers + (index * 64 + :))\n"
    found = generated_kernel.check(source)
    assert [type(violation) for violation in found] == [Unbuildable]
    assert "(`store(pointers + (index * 64 + :))`)" in found[0].what
    assert generated_kernel.KernelRejected(found, source).unbuildable
    mixed = found + (Violation(1, "an import other than triton"),)
    assert not generated_kernel.KernelRejected(mixed, source).unbuildable


def test_the_workers_word_alone_turns_no_refusal_into_a_build_failure():
    """A worker's claim that its kernel only cannot build counts where the source shows why:
    a store into part of the output. The same claim of the reference stays a flag."""
    source = HONEST["slice_store"][0].source("slice_store")
    decided = build_refusal.decide(source, unbuildable=True)
    assert not decided.evidence and "`output[:, :] = accumulator`" in decided.line
    assert build_refusal.decide(source).evidence  # a refusal of another kind: for review
    claimed = build_refusal.decide(model_answer(), unbuildable=True)
    assert claimed.evidence and not claimed.line
