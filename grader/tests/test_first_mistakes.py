"""The first hour's mistakes (build_variants.FIRST_MISTAKES) are each named by their cause,
from the line that makes it (grader.core.source_mistakes) or from the arranged levels
(grader.core.layout), and no correct variant is named by any of those causes. The findings
are read in milliseconds; two runs of the pytest grader show what a student sees."""

import pathlib

import pytest

from grader.core import cases, diagnosis, kernel_source, layout, source_mistakes, suite
from grader.core.checks import Verdict
from grader.core.loading import load_submission
from grader.tests import build_variants
from grader.tests.batch_helpers import run_pytest
from grader.tests.source_edits import writer
from solutions import MODEL_ANSWER

# variant -> (the key that names it, its line's text where the evidence names a line, or
# None, and what the evidence must say)
NAMED = {
    "returns_accumulator": (
        "unwritten_output",
        "return accumulator",
        "application() returns its result; NineToothed ignores a return "
        "value: assign it instead, `output = accumulator`",
    ),
    "output_never_assigned": ("unwritten_output", "def application(", "never assigns `output`"),
    "lhs_not_tiled_along_k": (
        "k_untiled",
        None,
        "`lhs.tile((BLOCK_SIZE_M, BLOCK_SIZE_K)).tile((1, -1))`",
    ),
    "rhs_not_tiled_along_k": (
        "k_untiled",
        None,
        "`rhs.tile((BLOCK_SIZE_K, BLOCK_SIZE_N)).tile((-1, 1))`",
    ),
    "lhs_squeeze_axis": ("squeeze_axis", None, "`lhs_arranged.dtype.squeeze(0)`"),
    "rhs_squeeze_axis": ("squeeze_axis", None, "`rhs_arranged.dtype.squeeze(1)`"),
    "lhs_grouped_by_column": ("group_axis", None, "lhs's outer shape is (1, 4)"),
    "rhs_grouped_by_row": ("group_axis", None, "rhs's outer shape is (2, 1)"),
    "zeros_without_dtype": ("accumulator_dtype", "accumulator = ntl.zeros", "no dtype"),
    "zeros_of_output_dtype": ("accumulator_dtype", "accumulator = ntl.zeros", "`output.dtype`"),
    "loop_over_shape_1": ("k_loop_bound", "for k in", "its length is `lhs.shape[0]`"),
    "dot_rhs_fixed": ("k_steps", "accumulator +=", "takes `rhs[0]` at every step"),
    "dot_lhs_fixed": ("k_steps", "accumulator +=", "takes `lhs[0]` at every step"),
    "dot_without_loop": ("k_steps", "accumulator +=", "is not inside a loop over the K tiles"),
    "dot_whole_sequences": ("k_steps", "accumulator +=", "the whole sequence of K tiles"),
    "python_matmul": ("matmul_operator", "accumulator +=", "`lhs[k] @ rhs[k]`"),
    "torch_matmul": ("torch_in_kernel", "accumulator +=", "`torch.matmul`"),
    "accumulator_of_lhs_shape": ("accumulator_shape", "accumulator = ntl.zeros", "`lhs.shape`"),
    "accumulator_with_block_k": (
        "accumulator_shape",
        "accumulator = ntl.zeros",
        "holds BLOCK_SIZE_K",
    ),
    "accumulator_with_global_blocks": (
        "global_in_application",
        "accumulator = ntl.zeros",
        "application() uses `BLOCK_SIZE_M`, `BLOCK_SIZE_N` from your file's globals",
    ),
    "global_constant_in_application": (
        "global_in_application",
        "output = accumulator",
        "application() uses `ALPHA` from your file's globals",
    ),
    "debug_print": ("debug_print", "print(", "prints in every program at every step"),
    "dot_imported_by_name": (
        "global_in_application",
        "accumulator += dot(",
        "application() uses `dot` from your file's globals",
    ),
    "helper_default_argument": (
        "global_in_application",
        "accumulator = add_product",
        "add_product() is called here without `scale`",
    ),
    "returns_two": ("arrangement_return", "return lhs_arranged", "returns 2 tensors"),
    "returns_list": ("arrangement_return", "return [", "returns a list"),
    "returns_dict": ("arrangement_return", "return {", "returns a dict"),
    "returns_in_other_order": (
        "arrangement_return",
        "return output_arranged",
        "returns the arranged `output`, `lhs`, `rhs` in that order",
    ),
}
NEW_KEYS = {key for key, _, _ in NAMED.values()}
CORRECT = sorted(build_variants.CORRECT)


@pytest.fixture(scope="module")
def variant_path(tmp_path_factory):
    return writer(tmp_path_factory.mktemp("first"), build_variants.VARIANTS)


def _findings(path):
    """What the pytest grader and the batch worker find before any case: the file's lines,
    then its arrangement."""
    return source_mistakes.inspect_file(path) + layout.inspect_arrangement(load_submission(path))


def _line(path, start):
    """The number of the file's first line that starts, less its indentation, with ``start``."""
    return next(
        number
        for number, text in enumerate(path.read_text().splitlines(), 1)
        if text.strip().startswith(start)
    )


def test_every_first_mistake_is_listed_here():
    assert set(NAMED) == set(build_variants.FIRST_MISTAKES)


@pytest.mark.parametrize("failed_with", ["", "build_error"])
@pytest.mark.parametrize("name", sorted(NAMED))
def test_a_first_mistake_is_named_by_its_cause(name, failed_with, variant_path):
    """Whether the cases computed wrong values or did not build, the top hint is the cause,
    its evidence the line that makes it where the cause is on one line."""
    key, line, says = NAMED[name]
    path = variant_path(name)
    findings = _findings(path)
    catalogue = cases.catalogue()
    verdicts = [Verdict(case.id, False, "the stack's own words", failed_with) for case in catalogue]
    hints = diagnosis.explain(findings, verdicts, catalogue)
    assert hints[0]["key"] == key, (name, hints)
    evidence = hints[0]["evidence"][0]
    assert says in evidence, evidence
    if line:
        assert evidence.startswith(f"line {_line(path, line)}: "), evidence


@pytest.mark.parametrize("name", sorted(NAMED))
def test_the_batch_reads_the_same_from_its_rebuilt_file(name):
    """The batch worker reads the file it rebuilt (grader.core.kernel_source), which keeps
    the student's lines but drops `import torch`: the findings must not change."""
    source = build_variants.VARIANTS[name].source(name)
    rebuilt = kernel_source.extract(source).text
    assert source_mistakes.inspect_source(rebuilt) == source_mistakes.inspect_source(source)


@pytest.mark.parametrize("name", CORRECT + ["reference"])
def test_no_correct_variant_is_named_by_a_first_mistake(name, variant_path):
    path = pathlib.Path(MODEL_ANSWER) if name == "reference" else variant_path(name)
    assert source_mistakes.inspect_file(path) == []
    assert not {finding["mistake"] for finding in _findings(path)} & NEW_KEYS


def test_no_picture_says_why(variant_path):
    failing = cases.catalogue()[:1]
    assert "did not load" in suite.no_picture(None, failing)[0]
    reference = load_submission(MODEL_ANSWER)
    assert suite.no_picture(reference, []) == ("every case passed", "所有用例都通过了")
    broken = load_submission(variant_path("returns_two"))
    assert "fails on symbolic tensors" in suite.no_picture(broken, failing)[0]
    assert "look at application()" in suite.no_picture(reference, failing)[0]


@pytest.mark.parametrize(
    "source",
    [
        "def application(lhs, rhs, output:\n",
        "def application(lhs, rhs, output):\n    output = " + "-" * 2000 + "1\n",
        "def application(lhs, rhs, output):\n    output = " + "-" * 50000 + "1\n",
    ],
)
def test_reading_the_source_never_raises(source):
    """A file that does not parse, or nests deeper than a reading can recurse, has no finding:
    its load, or its cases, say what is wrong."""
    assert source_mistakes.inspect_source(source) == []


def _run_grader(path, *extra):
    return run_pytest(
        "grader",
        "--submission",
        str(path),
        "-q",
        "-p",
        "no:cacheprovider",
        "-k",
        "square-64x64x64",
        *extra,
    ).stdout


def test_pytest_grader_names_a_returned_result_with_its_line(tmp_path, variant_path):
    path = variant_path("returns_accumulator")
    shown = _run_grader(path, "--pictures", str(tmp_path))
    causes = shown[shown.index("likely causes") :]
    assert causes.splitlines()[1].endswith("[unwritten_output]"), causes
    assert (
        f"- line {_line(path, 'return accumulator')}: application() returns its result"
    ) in causes
    assert "[build_error]" not in causes and "ntl.dot gets 2-D tiles" not in shown
    assert "no picture of the arrangement: " in shown and "look at application()" in shown


def test_pytest_grader_names_an_operand_not_tiled_along_k(variant_path):
    shown = _run_grader(variant_path("lhs_not_tiled_along_k"))
    failure = shown[shown.index("square-64x64x64 (exactly one tile) failed:") :]
    assert "upper_bound" not in failure.splitlines()[1], failure
    assert "likely cause, lhs or rhs is not tiled along K" in failure
    causes = shown[shown.index("likely causes") :]
    assert causes.splitlines()[1].endswith("[k_untiled]"), causes
