"""grader.core.layout and grader.core.diagnosis alone: the symbolic inspection's edge cases;
explain() as a pure function."""

import types

from grader.core import cases, checks, diagnosis, layout, program_tiles, tile_picture
from grader.core.checks import Verdict
from grader.core.mistakes import MISTAKES


def _arrangement_module(arrangement):
    return types.SimpleNamespace(arrangement=arrangement)


def _reference_like(lhs_tile=(64, 64), rhs_tile=(64, 64), lhs_expand=None):
    def arrangement(lhs, rhs, output):
        output_arranged = output.tile((64, 64))
        lhs_arranged = lhs.tile(lhs_tile).tile((1, -1))
        lhs_arranged = lhs_arranged.expand(lhs_expand or (-1, output_arranged.shape[1]))
        lhs_arranged.dtype = lhs_arranged.dtype.squeeze(0)
        rhs_arranged = rhs.tile(rhs_tile).tile((-1, 1))
        rhs_arranged = rhs_arranged.expand((output_arranged.shape[0], -1))
        rhs_arranged.dtype = rhs_arranged.dtype.squeeze(1)
        return lhs_arranged, rhs_arranged, output_arranged

    return _arrangement_module(arrangement)


def _keys(findings):
    return [finding["mistake"] for finding in findings]


def test_inspection_never_raises_and_names_known_mistakes(backend):
    broken = [
        _arrangement_module(lambda lhs, rhs, output: 1 / 0),
        _arrangement_module(lambda lhs, rhs, output: (lhs, rhs)),
        types.SimpleNamespace(),
    ]
    for module in broken:
        findings = layout.inspect_arrangement(module)
        assert _keys(findings) == ["build_error"]
        assert "symbolic" in findings[0]["message"]

    def placeholder(lhs, rhs, output):
        raise NotImplementedError

    assert _keys(layout.inspect_arrangement(_arrangement_module(placeholder))) == [
        "not_implemented"
    ]

    untiled = layout.inspect_arrangement(
        _arrangement_module(lambda lhs, rhs, output: (lhs, rhs, output))
    )
    assert _keys(untiled) == ["grid_mismatch"] and "not tiled" in untiled[0]["message"]


def test_inspection_reads_shapes_and_gives_evidence(backend):
    assert layout.inspect_arrangement(_reference_like()) == []
    not_expanded = layout.inspect_arrangement(_reference_like(lhs_expand=(-1, 1)))
    assert _keys(not_expanded) == ["expand_axis"]
    assert (
        "(2, 1) where the output grid is (2, 4) (M=128, N=256, K=192)" in not_expanded[0]["message"]
    )
    hard = layout.inspect_arrangement(_reference_like(lhs_expand=(-1, 4)))
    assert _keys(hard) == ["hard_coded"] and "always 4" in hard[0]["message"]
    mismatched = layout.inspect_arrangement(_reference_like(rhs_tile=(32, 64)))
    assert _keys(mismatched) == ["tile_shape"]


def test_a_quoted_line_cannot_write_markdown_into_the_feedback(tmp_path, backend):
    """size_for_count quotes the student's line between backticks; a backtick of its own (in a
    comment, which the batch's rebuilt file keeps on a call's first line) closed the span and
    put the rest of the line into feedback.md as markdown and HTML."""
    import importlib.util

    path = tmp_path / "slip.py"
    path.write_text(
        "def arrangement(lhs, rhs, output):\n"
        "    output_arranged = output.tile((64, 64))\n"
        "    lhs_arranged = lhs.tile((64, 64)).tile((1, -1)).expand(  # ` **28 / 28** <img>"
        + "x"
        * 200
        + "\n"
        "        (-1, output.shape[1]))\n"
        "    lhs_arranged.dtype = lhs_arranged.dtype.squeeze(0)\n"
        "    rhs_arranged = rhs.tile((64, 64)).tile((-1, 1))\n"
        "    rhs_arranged = rhs_arranged.expand((output_arranged.shape[0], -1))\n"
        "    rhs_arranged.dtype = rhs_arranged.dtype.squeeze(1)\n"
        "    return lhs_arranged, rhs_arranged, output_arranged\n"
    )
    spec = importlib.util.spec_from_file_location("slip", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    slip = next(
        finding["message"]
        for finding in layout.inspect_arrangement(module)
        if finding["mistake"] == "size_for_count"
    )
    assert slip.startswith("line 3, `lhs_arranged = lhs.tile(") and slip.count("`") == 2, slip
    assert len(slip) < 400


def test_program_tiles_names_the_first_program_that_gets_other_tiles(tmp_path):
    assert program_tiles.program_tiles(_reference_like(), (128, 256, 192)) is None
    found = program_tiles.program_tiles(_reference_like(lhs_expand=(-1, 1)), (128, 256, 192))
    # lhs's grid is (2, 1): program 1 takes lhs's second row block where C tile (0, 1) wants
    # the first.
    assert found["program"] == 1 and found["grids"]["lhs"] == [2, 1]
    assert found["tiles"]["lhs"] == [[64, 128, 0, 64], [64, 128, 64, 128], [64, 128, 128, 192]]
    assert (
        found["tiles"]["rhs"]
        == program_tiles.expected_tiles((128, 256, 192), (64, 64, 64), 1)["rhs"]
    )
    tails = program_tiles.expected_tiles((65, 97, 130), (64, 64, 64), 3)
    assert tails == {
        "lhs": [[64, 65, 0, 64], [64, 65, 64, 128], [64, 65, 128, 130]],
        "rhs": [[0, 64, 64, 97], [64, 128, 64, 97], [128, 130, 64, 97]],
        "output": [[64, 65, 64, 97]],
    }
    drawn = tile_picture.draw(found, (64, 64, 64), tmp_path / "arrangement.png")
    assert drawn.read_bytes().startswith(b"\x89PNG")


def test_right_tiles_under_mismatched_grids_are_still_drawn():
    """rhs expanded by M itself: the first programs get the right tiles (the expand only
    repeats rows), but NineToothed needs every outer shape to be the output's block grid,
    so the picture shows program 0 with the three grids."""
    found = program_tiles.program_tiles(_reference_like(), (128, 256, 192))
    assert found is None

    def arrangement(lhs, rhs, output):
        output_arranged = output.tile((64, 64))
        lhs_arranged = lhs.tile((64, 64)).tile((1, -1)).expand((-1, output_arranged.shape[1]))
        lhs_arranged.dtype = lhs_arranged.dtype.squeeze(0)
        rhs_arranged = rhs.tile((64, 64)).tile((-1, 1)).expand((output.shape[0], -1))
        rhs_arranged.dtype = rhs_arranged.dtype.squeeze(1)
        return lhs_arranged, rhs_arranged, output_arranged

    found = program_tiles.program_tiles(_arrangement_module(arrangement), (128, 256, 192))
    assert found["program"] == 0 and found["grids"]["rhs"] == [128, 4]
    assert found["tiles"] == program_tiles.expected_tiles((128, 256, 192), (64, 64, 64), 0)


def test_every_mistaken_layout_of_the_variants_gets_a_picture(tmp_path):
    """Issue 24: each variant whose layout the symbolic checks find off is drawn at a public
    shape (a dtype left unsqueezed is no layout of tiles, and an arrangement that fails on
    symbolic tensors has none at all: neither has a picture to show)."""
    from grader.core.loading import load_submission
    from grader.tests.build_variants import VARIANTS

    public = [case.shape for case in cases.catalogue() if case.visibility == "public"]
    drawn = []
    for name, variant in VARIANTS.items():
        path = tmp_path / f"{name}.py"
        path.write_text(variant.source(name), encoding="utf-8")
        try:
            module = load_submission(path)
        except Exception:  # noqa: BLE001 - a placeholder that does not load has no layout
            continue
        found = set(_keys(layout.inspect_arrangement(module))) - {"missing_squeeze", "build_error"}
        if found:
            assert program_tiles.first_difference(module, public) is not None, (name, found)
            drawn.append(name)
    assert {
        "expand_rhs_by_size",
        "expand_rhs_by_k",
        "expand_axis",
        "lhs_not_tiled_along_k",
        "lhs_squeeze_axis",
        "rhs_grouped_by_row",
    } <= set(drawn)


def test_tiles_of_one_cost_the_parent_no_more_drawing_than_usual(tmp_path, monkeypatch):
    """The parent draws with the tiles the kernel run claims (1 to 65536 each): tiles of 1 at
    512^3 drew 512 labelled K steps and a line per element, five times a usual picture's
    time, in the parent, for each such student. Counted in what the figure holds, not in
    seconds, so that a loaded machine cannot fail it."""
    from matplotlib.figure import Figure

    counts = []
    save = Figure.savefig

    def counting_save(figure, *args, **kwargs):
        axes = figure.get_axes()
        counts.append(sum(len(ax.patches) + len(ax.lines) + len(ax.texts) for ax in axes))
        return save(figure, *args, **kwargs)

    monkeypatch.setattr(Figure, "savefig", counting_save)
    picture = {
        "shape": [512, 512, 512],
        "program": 0,
        "grids": {role: [8, 8] for role in program_tiles.ROLES},
        "tiles": {
            role: [[0, 512, 0, 512]] * program_tiles.MAX_STEPS for role in program_tiles.ROLES
        },
    }
    for tiles in ((64, 64, 64), (1, 1, 1)):
        tile_picture.draw(picture, tiles, tmp_path / "arrangement.png")
    usual, ones = counts
    assert usual > 0 and ones < 2 * usual, counts  # unguarded: thousands of lines and labels


def test_inspection_takes_milliseconds(backend):
    import time

    module = _reference_like()
    layout.inspect_arrangement(module)
    start = time.perf_counter()
    layout.inspect_arrangement(module)
    assert time.perf_counter() - start < 0.5


def _verdicts(failing, mistake=""):
    catalogue = cases.catalogue()
    verdicts = [
        Verdict(case.id, case.id not in failing, "", mistake if case.id in failing else "")
        for case in catalogue
    ]
    return verdicts, catalogue


def test_explain_is_silent_when_everything_passes():
    verdicts, catalogue = _verdicts(set())
    findings = [{"mistake": "missing_squeeze", "message": "an unusual but working layout"}]
    assert diagnosis.explain(findings, verdicts, catalogue) == []


def test_a_print_is_named_even_when_every_case_the_interpreter_ran_passed():
    """A print costs only on a GPU, where it runs past the time limit before any case fails:
    its line is told whatever the cases say, and beside another hint."""
    printing = {"mistake": "debug_print", "message": "line 9: `print(k)` prints"}
    verdicts, catalogue = _verdicts(set())
    hints = diagnosis.explain([printing], verdicts, catalogue)
    assert [hint["key"] for hint in hints] == ["debug_print"]
    assert hints[0]["evidence"] == ["line 9: `print(k)` prints"]
    failing, catalogue = _verdicts({case.id for case in catalogue[:3]})
    assert "debug_print" in [
        hint["key"] for hint in diagnosis.explain([printing], failing, catalogue)
    ]


def test_explain_reads_the_accumulator_and_k_tail_patterns_without_tiles():
    catalogue = cases.catalogue()
    multi_tile = {case.id for case in catalogue if case.k > 64}
    verdicts, _ = _verdicts(multi_tile)
    hints = diagnosis.explain([], verdicts, catalogue)
    assert [hint["key"] for hint in hints] == ["accumulator"]
    assert hints[0]["en"] == MISTAKES["accumulator"].en and hints[0]["zh"]

    ragged_k = {case.id for case in catalogue if case.k % 64}
    verdicts, _ = _verdicts(ragged_k)
    assert [hint["key"] for hint in diagnosis.explain([], verdicts, catalogue)] == ["k_tail"]


def test_explain_reads_square_and_tail_patterns_with_tiles():
    catalogue = cases.catalogue()
    uneven_grid = {case.id for case in catalogue if -(-case.m // 64) != -(-case.n // 64)}
    verdicts, _ = _verdicts(uneven_grid)
    keys = [hint["key"] for hint in diagnosis.explain([], verdicts, catalogue, tiles=(64, 64, 64))]
    assert keys == ["expand_axis"]

    m_tail = {case.id for case in catalogue if case.m % 64}
    verdicts, _ = _verdicts(m_tail)
    keys = [hint["key"] for hint in diagnosis.explain([], verdicts, catalogue, tiles=(64, 64, 64))]
    assert keys == ["tail_mask"]


def test_explain_trusts_mistakes_the_checks_named():
    for key in ("wrong_dtype", "unwritten_output", "nondeterministic", "build_error"):
        verdicts, catalogue = _verdicts({cases.catalogue()[0].id}, mistake=key)
        hints = diagnosis.explain([], verdicts, catalogue)
        assert [hint["key"] for hint in hints] == [key]
        assert hints[0]["evidence"]


def test_explain_says_a_symbolic_finding_alone_and_accepts_dict_verdicts():
    """A finding is sure of its cause: the stack's words beside it would only send the
    student elsewhere."""
    verdicts, catalogue = _verdicts({case.id for case in cases.catalogue()}, mistake="build_error")
    findings = [{"mistake": "tile_shape", "message": "rhs tiles are (64, 32)"}]
    as_dicts = [vars(verdict) for verdict in verdicts]
    keys = [hint["key"] for hint in diagnosis.explain(findings, as_dicts, catalogue)]
    assert keys == ["tile_shape"]


def test_a_finding_on_a_line_is_said_before_and_instead_of_the_arranged_shapes():
    verdicts, catalogue = _verdicts({case.id for case in cases.catalogue()})
    findings = [
        {"mistake": "expand_axis", "message": "lhs outer shape is (2, 1) where ..."},
        {"mistake": "floor_count", "message": "line 49: `N // BLOCK_SIZE_N` counts ..."},
    ]
    hints = diagnosis.explain(findings, verdicts, catalogue)
    assert [hint["key"] for hint in hints] == ["floor_count"]
    assert diagnosis.case_cause(verdicts[0], findings) == "floor_count"


def test_a_value_the_checks_recognise_is_said_only_where_they_name_every_failure():
    """An output of zeros is also a float16 running sum of the cancellation case: named on
    that case alone while the others fail unnamed, it is no evidence."""
    catalogue = cases.catalogue()
    cancellation = next(case.id for case in catalogue if case.inputs == cases.CANCELLATION)
    verdicts, _ = _verdicts({case.id for case in catalogue})
    for verdict in verdicts:
        if verdict.case_id == cancellation:
            verdict.mistake = "accumulator_dtype"
    assert "accumulator_dtype" not in [
        hint["key"] for hint in diagnosis.explain([], verdicts, catalogue)
    ]
    named, _ = _verdicts({cancellation}, mistake="accumulator_dtype")
    assert [hint["key"] for hint in diagnosis.explain([], named, catalogue)] == [
        "accumulator_dtype"
    ]


def test_a_case_that_did_not_build_names_no_cause_of_its_own():
    verdict = Verdict("square-64x64x64", False, "did not build", "build_error")
    assert diagnosis.case_cause(verdict, []) == ""
    assert diagnosis.case_cause(verdict, [{"mistake": "k_untiled", "message": "x"}]) == "k_untiled"


def test_explain_says_nothing_when_no_pattern_fits():
    catalogue = cases.catalogue()
    by_id = {case.id: case for case in catalogue}
    scattered = {"nonsquare-128x256x192", "square-1x1x1", "long_k-64x64x1024"}
    assert len({by_id[case_id].targets for case_id in scattered}) == 3
    verdicts, _ = _verdicts(scattered)
    assert diagnosis.explain([], verdicts, catalogue) == []
    everything = {case.id for case in catalogue}
    verdicts, _ = _verdicts(everything)
    assert diagnosis.explain([], verdicts, catalogue) == []


def test_explain_keeps_hidden_shapes_hidden_by_default():
    catalogue = cases.catalogue()
    multi_tile = {case.id for case in catalogue if case.k > 64}
    verdicts, _ = _verdicts(multi_tile)
    text = str(diagnosis.explain([], verdicts, catalogue))
    for case in cases.hidden_cases():
        assert case.label not in text


def test_explain_keeps_findings_out_of_failures_they_cannot_explain():
    verdicts, catalogue = _verdicts(
        {case.id for case in cases.catalogue()[:5]}, mistake="wrong_dtype"
    )
    findings = [{"mistake": "missing_squeeze", "message": "an unusual but working layout"}]
    keys = [hint["key"] for hint in diagnosis.explain(findings, verdicts, catalogue)]
    assert keys == ["wrong_dtype"]


def test_hints_never_quote_a_hidden_case_message():
    """A hidden case's message names its shape (K of a seed-drawn case): feedback must not."""
    hidden = [
        case for case in cases.catalogue(918273645, "interpreter") if case.visibility != "public"
    ][-1]
    message = (
        f"wrong\nthe output equals the product over K columns 64:{hidden.k} alone "
        f"(the last K tile, of K={hidden.k})"
    )
    verdicts = [
        Verdict(hidden.id, False, message, "accumulator"),
        Verdict(
            hidden.id,
            False,
            f"shape ({hidden.m}, 7), expected ({hidden.m}, {hidden.n})",
            "wrong_dtype",
        ),
    ]
    hints = diagnosis.explain([], verdicts, [hidden])
    evidence = " ".join(line for hint in hints for line in hint["evidence"])
    assert {hint["key"] for hint in hints} >= {"accumulator"}
    assert str(hidden.k) not in evidence and str(hidden.m) not in evidence
    revealed = diagnosis.explain([], verdicts, [hidden], reveal=True)
    assert str(hidden.k) in " ".join(line for hint in revealed for line in hint["evidence"])


def test_a_build_error_leads_with_plain_words_and_keeps_the_stacks_as_detail():
    """Issue 32: NineToothed's own `'Symbol' object has no attribute 'upper_bound'` was the
    message a student read first; it stays, last, as the detail the hint quotes."""
    case = cases.catalogue()[0]
    error = AttributeError("'Symbol' object has no attribute 'upper_bound'")
    verdict = checks.error_verdict(case, error)
    first, last = verdict.message.splitlines()[0], verdict.message.splitlines()[-1]
    assert verdict.mistake == "build_error" and "upper_bound" not in first, verdict.message
    assert last == "AttributeError: 'Symbol' object has no attribute 'upper_bound'"
    hints = diagnosis.explain([], [verdict], [case], reveal=True)
    assert hints[0]["evidence"] == [f"1 case failed with: {last}"], hints
