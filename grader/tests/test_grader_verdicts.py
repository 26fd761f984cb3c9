"""The grader judged: correct kernels get full marks, each mistake fails and is named.

The submissions are the model answer with named edits (grader/tests/build_variants.py),
written to a temporary folder. Each runs in this process on the cases that matter for it
(the interpreter is slow, so not the whole catalogue), then the diagnosis is asked
for its hints. One end-to-end run of ``pytest grader`` on the reference checks
the whole catalogue, the summary and the JUnit XML.

What each mistake variant does on the Triton interpreter (measured):

* expand_axis: wrong outer shapes wherever the M and N block counts differ;
  squares and square grids pass.
* accumulator_in_loop, assign_not_add: only the last K tile survives; every
  case with K <= 64 passes, every longer K fails. Symbolically clean, so the
  hint comes from the pattern of failures.
* missing_squeeze: builds and runs, but every program reads the wrong tiles:
  almost everything fails. The symbolic check names it.
* k_tail_whole_tiles: only whole K tiles are kept (K // BLOCK_SIZE_K): cases
  whose K is a multiple of 64 pass, the others fail.
* loop_stops_early: the K loop runs range(lhs.shape[0] - 1): one K tile always
  goes missing, so every case with more than one K tile fails, tails or not; the
  output equals a product over K's first columns, which names the K tail.
* floor_mode: floor_mode=True on the lhs and rhs tilings drops partial tiles
  in M, N and K: tails fail, whole-tile shapes pass, the coverage case finds
  unwritten output.
* hard_coded: lhs expanded to 4 N blocks: right whenever N needs 4 blocks.
* tile_shape: rhs tiled (BN, BK) with BK = 32: ntl.dot refuses the tiles, so
  every case fails with a build error; the symbolic check says why.
* rhs_tile_order: rhs tiled (BN, BK) at 64x64x64: right at the file's own tiles;
  rebuilt at 128x64x32 and 64x128x32 the grids cannot line up, so only the cases at
  other block sizes fail, and the pattern names the tile order.
* tiles_written_in: every tile(...) given 64s: rebuilt at other block sizes it still
  lays out 64x64x64, so those cases fail at once, saying so.
* wrong_dtype: nt_gemm returns float32; the coverage case, which calls the
  kernel on an output the grader allocates, still passes.
* placeholder: refused at load time as not_implemented.
"""

import xml.etree.ElementTree as ElementTree

import pytest

from grader.core import cases, checks, diagnosis, execution, layout
from grader.core.checks import Verdict
from grader.core.loading import SubmissionError, load_submission
from grader.tests import build_variants
from grader.tests.batch_helpers import run_pytest
from grader.tests.source_edits import writer
from solutions import MODEL_ANSWER

REFERENCE = MODEL_ANSWER
SEED = cases.DEFAULT_SEED

_modules = {}


@pytest.fixture(scope="module")
def variant_path(tmp_path_factory):
    return writer(tmp_path_factory.mktemp("variants"), build_variants.VARIANTS)


def _module(name, variant_path):
    path = REFERENCE if name == "reference" else variant_path(name)
    if path not in _modules:
        _modules[path] = load_submission(path)
    return _modules[path]


def _case(case_id):
    for case in cases.all_fixed_cases() + cases.hidden_cases(SEED):
        if case.id == case_id:
            return case
    raise KeyError(case_id)


def _grade(module, case_ids, backend):
    """Produce and judge each case as the pytest grader does; return (cases, verdicts)."""
    selected = [_case(case_id) for case_id in case_ids]
    verdicts = []
    for case in selected:
        try:
            outputs = execution.produce(case, module, SEED, backend.device)
        except Exception as error:  # noqa: BLE001 - the kernel's own error is the verdict
            verdicts.append(checks.error_verdict(case, error))
        else:
            verdicts.append(checks.judge(case, outputs, SEED, backend.device))
            execution.scrub(outputs)  # as the grader does: no stale answer for the next variant
    return selected, verdicts


# --------------------------------------------------------------------------
# Correct variants
# --------------------------------------------------------------------------

# The cases that build the kernel at other block sizes (grader.core.retile).
BLOCK_CASES = [case.id for case in cases.all_fixed_cases() if case.blocks]

# A spread of what can go wrong, cheap enough for 16-wide tiles on the interpreter:
# grids that are not square, tails in each dimension, K below one tile, tiny
# shapes, many K tiles, a random hidden shape, both property checks and other tiles.
CORRECT_SUBSET = [
    "tail_mnk-65x97x130",
    "tail_k_small-128x128x40",
    "tiny-1x2x3",
    "tiny-2x3x1",
    "square-16x16x16",
    "skinny-16x256x192",
    "long_k-64x64x1024",
    "determinism-96x80x144",
    "coverage-100x70x90",
    cases.hidden_cases(SEED)[0].id,
    *BLOCK_CASES,
]

CORRECT_VARIANTS = [
    "tiles_32x32x32",
    "tiles_16x64x32",
    "tiles_128x64x32",
    "other_style",
    "unsqueezed_indexing",
    "store_in_loop",
    "cast_on_store",
    "cast_to_output_dtype",
]
# Other spellings of the same kernel: what they may break is the check of what runs, not
# the tiles, so three cases tell (a ragged one, the coverage case, other block sizes).
STYLE_VARIANTS = [
    "triton_language",
    "dot_accumulates",
    "while_loop",
    "helper_function",
    "debug_print",
]  # debug_print: right, but named (it times out on a GPU)
STYLE_SUBSET = ["tail_mnk-65x97x130", "coverage-100x70x90", BLOCK_CASES[0]]


@pytest.mark.slow
@pytest.mark.parametrize(
    "name, subset",
    [(name, CORRECT_SUBSET) for name in CORRECT_VARIANTS]
    + [(name, STYLE_SUBSET) for name in STYLE_VARIANTS],
)
def test_correct_variant_gets_full_marks(name, subset, backend, variant_path):
    module = _module(name, variant_path)
    selected, verdicts = _grade(module, subset, backend)
    failed = [f"{verdict.case_id}: {verdict.message}" for verdict in verdicts if not verdict.passed]
    assert not failed, "\n".join(failed)
    findings = layout.inspect_arrangement(module)
    assert diagnosis.explain(findings, verdicts, selected) == []


def test_correct_variants_look_right_symbolically(variant_path):
    expected_tiles = {
        "reference": (64, 64, 64),
        "tiles_32x32x32": (32, 32, 32),
        "tiles_16x64x32": (16, 64, 32),
        "tiles_128x64x32": (128, 64, 32),
        "other_style": (64, 64, 64),
        "unsqueezed_indexing": (64, 64, 64),
        "store_in_loop": (64, 64, 64),
        "cast_on_store": (64, 64, 64),
        "cast_to_output_dtype": (64, 64, 64),
    }
    for name, tiles in expected_tiles.items():
        module = _module(name, variant_path)
        findings = layout.inspect_arrangement(module)
        if name == "unsqueezed_indexing":
            # Right, but unusual: the length-1 level is reported, and only matters
            # (as a hint) if cases fail.
            assert [finding["mistake"] for finding in findings] == ["missing_squeeze"]
        else:
            assert findings == [], (name, findings)
        assert layout.tile_sizes(module) == tiles, name


# --------------------------------------------------------------------------
# Mistake variants: (cases that must fail, cases that must pass, the hint, or the hints
# where one change makes two mistakes)
# --------------------------------------------------------------------------

MISTAKE_VARIANTS = {
    "expand_axis": (
        ["nonsquare-128x256x192", "nonsquare-256x128x192", "skinny-1x256x256", "skinny-256x8x192"],
        ["square-64x64x64", "square-256x256x256", "tail_m-65x128x128"],
        "expand_axis",
    ),
    "accumulator_in_loop": (
        ["long_k-64x64x1024", "tail_mnk-65x97x130", "skinny-16x256x192"],
        ["square-64x64x64", "tail_k_small-128x128x40", "tiny-1x2x3"],
        "accumulator",
    ),
    "assign_not_add": (
        ["long_k-64x64x1024", "tail_k-128x128x130", "skinny-16x256x192"],
        ["square-64x64x64", "tail_k_small-128x128x40", "tiny-2x3x1"],
        "accumulator",
    ),
    "missing_squeeze": (
        ["square-64x64x64", "tail_mnk-65x97x130", "skinny-16x256x192"],
        [],
        "missing_squeeze",
    ),
    "k_tail_whole_tiles": (
        ["tail_k-128x128x130", "tail_mnk-65x97x130", "tail_k_small-128x128x40"],
        ["square-64x64x64", "tail_m-65x128x128", "tail_n-128x97x128"],
        "k_tail",
    ),
    "loop_stops_early": (
        ["tail_m-65x128x128", "tail_n-128x97x128", "tail_k-128x128x130", "square-256x256x256"],
        [],
        "k_tail",
    ),
    "floor_mode": (
        ["tail_m-65x128x128", "tail_n-128x97x128", "tail_k-128x128x130", "coverage-100x70x90"],
        ["square-64x64x64", "nonsquare-128x256x192"],
        ("tail_mask", "k_tail"),
    ),
    "hard_coded": (
        ["tail_mnk-65x97x130", "tail_k_small-128x128x40"],
        ["skinny-16x256x192", "square-256x256x256"],
        "hard_coded",
    ),
    "tile_shape": (["square-64x64x64", "tiny-1x2x3"], [], "tile_shape"),
    "rhs_tile_order": (
        BLOCK_CASES,
        ["square-64x64x64", "tail_mnk-65x97x130", "nonsquare-128x256x192"],
        "block_order",
    ),
    "tiles_written_in": (BLOCK_CASES, ["square-64x64x64", "tail_mnk-65x97x130"], "fixed_tiles"),
    "wrong_dtype": (
        ["square-64x64x64", "tail_mnk-65x97x130"],
        ["coverage-100x70x90"],
        "wrong_dtype",
    ),
}


# Where the compiled GPU kernel behaves otherwise (measured on an H200, 2026-11-29):
# * accumulator_in_loop: Triton refuses to compile a loop-local value used after
#   the loop, so every case fails to build, and the error names the accumulator;
# * floor_mode: the unmasked M and N edge tiles read past the operands, but the
#   stores stay masked, so M and N tails come out right; only K tails fail.
GPU_DIFFERENCES = {
    "accumulator_in_loop": (
        [
            "long_k-64x64x1024",
            "tail_mnk-65x97x130",
            "skinny-16x256x192",
            "square-64x64x64",
            "tail_k_small-128x128x40",
            "tiny-1x2x3",
        ],
        [],
        "accumulator",
    ),
    "floor_mode": (  # the arrangement's floor_mode is seen first there too (H200, 2026-11-30)
        ["tail_k-128x128x130", "coverage-100x70x90"],
        ["square-64x64x64", "nonsquare-128x256x192"],
        ("tail_mask", "k_tail"),
    ),
}


@pytest.mark.parametrize("name", sorted(MISTAKE_VARIANTS))
def test_mistake_variant_fails_and_is_named(name, backend, variant_path):
    expected = GPU_DIFFERENCES if backend.name == "gpu" else {}
    must_fail, must_pass, top = expected.get(name, MISTAKE_VARIANTS[name])
    module = _module(name, variant_path)
    selected, verdicts = _grade(module, must_fail + must_pass, backend)
    outcome = {verdict.case_id: verdict for verdict in verdicts}
    for case_id in must_fail:
        assert not outcome[case_id].passed, f"{name} should fail {case_id}"
    for case_id in must_pass:
        assert outcome[case_id].passed, f"{name} should pass {case_id}: {outcome[case_id].message}"

    findings = layout.inspect_arrangement(module)
    hints = diagnosis.explain(findings, verdicts, selected, tiles=layout.tile_sizes(module))
    keys = [hint["key"] for hint in hints]
    assert keys == ([top] if isinstance(top, str) else list(top)), (name, keys, hints)
    assert all(hint["evidence"] for hint in hints), hints


# A matrix size where a block count or size belongs: (the size named, the call quoted).
# Every one fails before launch, so the whole check is symbolic and takes milliseconds.
SIZE_SLIPS = {
    "expand_by_size": ("N itself (256", "expand((-1, output.shape[1]))"),
    "expand_rhs_by_size": ("M itself (128", "expand((output.shape[0], -1))"),
    "expand_lhs_by_rhs_width": ("N itself (256", "expand((-1, rhs.shape[1]))"),
    "expand_rhs_by_lhs_height": ("M itself (128", "expand((lhs.shape[0], -1))"),
    "expand_lhs_by_k": ("K itself (192", "expand((-1, lhs.shape[1]))"),
    "expand_rhs_by_k": ("K itself (192", "expand((rhs.shape[0], -1))"),
    "tile_lhs_by_m": ("M itself (128", "lhs.tile((lhs.shape[0], block_size_k))"),
    "tile_rhs_by_n": ("N itself (256", "rhs.tile((block_size_k, rhs.shape[1]))"),
    "tile_output_by_n": ("N itself (256", "output.tile((block_size_m, output.shape[1]))"),
}


@pytest.mark.parametrize("name", sorted(SIZE_SLIPS))
def test_a_size_where_a_count_belongs_is_named_with_its_call(name, backend, variant_path):
    size, call = SIZE_SLIPS[name]
    selected, verdicts = _grade(_module(name, variant_path), ["nonsquare-128x256x192"], backend)
    assert verdicts[0].mistake == "grid_mismatch", verdicts[0].message  # not launched
    hints = diagnosis.explain(
        layout.inspect_arrangement(_module(name, variant_path)), verdicts, selected
    )
    assert hints[0]["key"] == "size_for_count", hints
    evidence = hints[0]["evidence"][0]
    assert size in evidence and call in evidence and "not a block" in evidence, evidence


def test_pytest_grader_names_the_size_and_draws_the_arrangement(tmp_path, variant_path):
    """One case, which does not launch (the grids cannot line up): seconds, as the summary
    weighs it and draws the program that gets the wrong tiles."""
    pictures = tmp_path / "pictures"
    done, _ = _run_grader(
        variant_path("expand_by_size"),
        tmp_path,
        "--pictures",
        str(pictures),
        "-k",
        "nonsquare-128x256x192",
    )
    assert "[size_for_count]" in done.stdout and "N itself (256" in done.stdout, done.stdout
    assert f"picture of the arrangement: {pictures / 'arrangement.png'}" in done.stdout
    assert (pictures / "arrangement.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_pytest_grader_names_the_tile_order(tmp_path, variant_path):
    """The cases at other block sizes and one at the file's own: a kernel right only while
    BLOCK_SIZE_N equals BLOCK_SIZE_K loses the first, with the hint that says which tiles
    rhs takes."""
    done, junit = _run_grader(
        variant_path("rhs_tile_order"), tmp_path, "-k", "tiles_ or square-64x64x64"
    )
    assert done.returncode == 1, done.stdout[-3000:]
    assert "[block_order]" in done.stdout and "(BLOCK_SIZE_K, BLOCK_SIZE_N)" in done.stdout
    failed = {
        testcase.get("name")
        for testcase in junit.iter("testcase")
        if testcase.find("failure") is not None
    }
    assert failed == {f"test_case[{case_id}]" for case_id in BLOCK_CASES}


def test_placeholder_is_refused_at_load_time_and_named(variant_path):
    with pytest.raises(SubmissionError) as refused:
        load_submission(variant_path("placeholder"))
    assert refused.value.status == "not_implemented"
    case = _case("tail_mnk-65x97x130")
    verdicts = [Verdict(case.id, False, str(refused.value), "not_implemented")]
    keys = [hint["key"] for hint in diagnosis.explain([], verdicts, [case])]
    assert keys == ["not_implemented"]


def test_every_variant_says_what_it_is_and_is_listed(variant_path):
    """Each variant graded here opens with the line saying what it changes; that every
    variant of the catalogue is used by some test, test_build_variants.py checks."""
    names = set(MISTAKE_VARIANTS) | set(CORRECT_VARIANTS) | set(STYLE_VARIANTS) | {"placeholder"}
    for name in sorted(names):
        assert variant_path(name).read_text().startswith(f"# Kit test submission {name}: "), name
    assert names <= set(build_variants.VARIANTS)


# --------------------------------------------------------------------------
# The whole suite, as a student runs it
# --------------------------------------------------------------------------


def _run_grader(submission, tmp_path, *extra):
    junit = tmp_path / "grader.xml"
    done = run_pytest(
        "grader",
        "--submission",
        str(submission),
        "-q",
        "-p",
        "no:cacheprovider",
        f"--junitxml={junit}",
        *extra,
    )
    return done, ElementTree.parse(junit).getroot()


def _properties(testcase):
    return {prop.get("name"): prop.get("value") for prop in testcase.iter("property")}


@pytest.mark.slow
def test_pytest_grader_gives_the_reference_full_marks(tmp_path, backend):
    done, junit = _run_grader(REFERENCE, tmp_path)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    total = sum(case.points for case in cases.catalogue(SEED, backend.name))
    assert "total" in done.stdout and f"{total} / {total}" in done.stdout, done.stdout[-3000:]
    assert "likely causes" not in done.stdout

    testcases = list(junit.iter("testcase"))
    by_name = {testcase.get("name"): testcase for testcase in testcases}
    for case in cases.catalogue(SEED, backend.name):
        testcase = by_name[f"test_case[{case.id}]"]
        props = _properties(testcase)
        assert props["points"] == str(case.points) and props["score"] == str(case.points)
        assert props["group"] == case.group
    if backend.is_interpreter:
        skipped = [testcase for testcase in testcases if testcase.find("skipped") is not None]
        gpu_only = [case for case in cases.all_fixed_cases() if not case.runs_on(backend.name)]
        assert len(skipped) == len(gpu_only)
        assert all("GPU-only" in testcase.find("skipped").get("message") for testcase in skipped)
        assert all(_properties(testcase)["points"] == "0" for testcase in skipped)

    # What a JUnit consumer adds up, read with junitparser's xunit2 API
    # (docs/instructor-reference.md, "JUnit XML")
    xunit2 = pytest.importorskip(
        "junitparser.xunit2", reason="the test extra: pip install -e '.[test]'"
    )
    JUnitXml = xunit2.JUnitXml

    points = scores = 0
    for suite_ in JUnitXml.fromfile(str(tmp_path / "grader.xml")):
        for testcase in suite_:
            found = {prop.name: prop.value for prop in testcase.properties()}
            if testcase.name.startswith("test_case["):
                points += int(found["points"])
                scores += int(found.get("score", 0))
    assert points == scores == total


def test_pytest_grader_names_the_placeholder_without_tracebacks(tmp_path, variant_path):
    done, junit = _run_grader(variant_path("placeholder"), tmp_path)
    assert done.returncode == 1
    assert "[not_implemented]" in done.stdout
    assert "Traceback" not in done.stdout
    failures = [
        testcase for testcase in junit.iter("testcase") if testcase.find("failure") is not None
    ]
    assert failures and all(_properties(testcase)["points"] for testcase in failures)
