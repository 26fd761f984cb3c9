"""Name the likely mistake behind a failing submission.

Two steps, kept apart so the batch grader can run the first next to the student
code and the second in a process that never imports it:

* ``inspect_arrangement(module)`` runs the submission's ``arrangement`` on
  symbolic tensors only (no kernel is built or launched), substitutes a few
  concrete sizes with ``Tensor.subs`` and compares the nested shapes with what a
  GEMM needs: every arranged tensor has the output's block grid as its outer
  shape, lhs carries a sequence of ceil(K / BK) tiles of (BM, BK) and rhs one of
  (BK, BN). It takes milliseconds and never raises.
* ``explain(findings, verdicts, cases)`` is pure: it weighs those findings
  against which cases failed and returns a short, ordered list of hints.

A hint is only worth giving when it is right, so both steps stay quiet when
the evidence is thin: a layout this module does not recognise yields no
finding, and a pattern of failures that fits no known mistake yields no hint.
"""

from grader.core import mistakes

# (M, N, K) sizes the arrangement is evaluated at. They differ in M, N and K
# (so swapped axes show), include tails in all three dimensions, a size where
# the M and N grids swap roles, a large square, and a K that fits in one tile
# for any sensible BLOCK_SIZE_K.
DEFAULT_SHAPES = (
    (128, 256, 192),
    (65, 97, 130),
    (256, 128, 64),
    (512, 512, 512),
    (96, 160, 8),
)


# Block sizes tried when the failure pattern is read without the tiles at hand.
_CANDIDATE_BLOCKS = (16, 32, 64, 128, 256)


def _ceil_div(a, b):
    return -(-a // b)


def _shape_text(shape):
    return "x".join(str(size) for size in shape)


def _where(shape):
    m, n, k = shape
    return f"M={m}, N={n}, K={k}"


# --------------------------------------------------------------------------
# Symbolic inspection (runs the student's arrangement, never a kernel)
# --------------------------------------------------------------------------


def arranged_levels(module, shapes=DEFAULT_SHAPES):
    """The nested shapes of the three arranged tensors at each size.

    Returns ``{shape: {"lhs": [outer, ..., innermost], "rhs": [...], "output": [...]}}``
    with every level a tuple of ints. Raises whatever the arrangement raises.
    """
    from ninetoothed import Tensor

    lhs, rhs, output = Tensor(2), Tensor(2), Tensor(2)
    arranged = module.arrangement(lhs, rhs, output)
    if not isinstance(arranged, (tuple, list)) or len(arranged) != 3:
        raise TypeError(
            "arrangement() must return three arranged tensors (lhs, rhs, output), "
            f"got {type(arranged).__name__}"
            + (f" of length {len(arranged)}" if isinstance(arranged, (tuple, list)) else "")
        )
    for role, tensor in zip(("lhs", "rhs", "output"), arranged):
        if not isinstance(tensor, Tensor):
            raise TypeError(
                f"arrangement() returned {type(tensor).__name__} for {role}, not a Tensor"
            )

    symbols = _block_size_symbols(module)
    levels = {}
    for shape in shapes:
        m, n, k = shape
        subs = {lhs: {"shape": (m, k)}, rhs: {"shape": (k, n)}, output: {"shape": (m, n)}}
        subs.update(symbols)
        levels[shape] = {
            role: _levels(tensor.subs(subs), Tensor)
            for role, tensor in zip(("lhs", "rhs", "output"), arranged)
        }
    return levels


def arranged_levels_or_none(module, shapes=DEFAULT_SHAPES):
    """``arranged_levels``, or None when the arrangement cannot be evaluated."""
    try:
        return arranged_levels(module, shapes)
    except Exception:
        return None


def _block_size_symbols(module):
    """Concrete stand-ins for any ninetoothed Symbols the module defines (autotune)."""
    from ninetoothed.symbol import Symbol

    chosen = {}
    for value in vars(module).values():
        if isinstance(value, Symbol) and value not in chosen:
            low = getattr(value, "lower_bound", None) or 16
            high = getattr(value, "upper_bound", None) or 1024
            size = 64
            while size < low:
                size *= 2
            while size > high and size > 1:
                size //= 2
            chosen[value] = size
    return chosen


def _levels(tensor, tensor_type):
    levels = []
    current = tensor
    while isinstance(current, tensor_type):
        levels.append(tuple(int(size) for size in current.shape))
        current = current.dtype
    return levels


def inspect_arrangement(module, shapes=DEFAULT_SHAPES):
    """Check the submission's arrangement symbolically; return findings.

    Each finding is ``{"mistake": key of grader.core.mistakes.MISTAKES, "message": evidence}``.
    An empty list means nothing is wrong, or that the layout is not the standard
    one (see ``is_standard_layout``) and so cannot be judged this way. Never raises.
    """
    try:
        levels = arranged_levels(module, shapes)
    except NotImplementedError:
        return [{"mistake": "not_implemented",
                 "message": "arrangement() still raises NotImplementedError"}]
    except Exception as error:  # the student's arrangement can fail in any way
        return [{"mistake": "build_error",
                 "message": f"arrangement() fails on symbolic tensors, before any kernel is "
                            f"built: {type(error).__name__}: {_one_line(error)}"}]
    try:
        return _judge_levels(levels)
    except Exception as error:  # a bug here must never cost the student a grade
        return [{"mistake": "grid_mismatch",
                 "message": f"the arranged shapes could not be compared ({type(error).__name__}: "
                            f"{_one_line(error)}); levels seen: {_compact(levels)}"}]


NOT_LAUNCHED = "not launched: "


def launch_mismatch(module, shape):
    """Why a launch at ``shape`` (M, N, K) cannot be right, known before it runs; else None.

    NineToothed starts one program per element of the first arranged tensor's outer
    shape and finds each tensor's tile from its own outer shape, so the three outer
    shapes must be equal. When they differ the case fails at once, with the shapes,
    instead of running a grid of the wrong size (which on the interpreter can take
    minutes). Never raises: an arrangement it cannot evaluate is left to the launch.
    """
    try:
        at = arranged_levels(module, (tuple(shape),))[tuple(shape)]
    except Exception:
        return None
    outers = {role: tuple(at[role][0]) for role in ("lhs", "rhs", "output")}
    if len(set(outers.values())) == 1:
        return None
    return (f"{NOT_LAUNCHED}at {_where(shape)} the arranged tensors' outer shapes differ "
            f"(lhs {outers['lhs']}, rhs {outers['rhs']}, output {outers['output']}): NineToothed "
            "starts one program per element of lhs's outer shape and pairs the tiles by each "
            "tensor's own, so all three must be the output's block grid")


def is_standard_layout(levels_at_shape):
    """Whether the output is arranged as a plain 2-D grid of 2-D tiles.

    Other layouts (a grouped launch order, say) can be right too; the symbolic
    check does not judge them.
    """
    output = levels_at_shape["output"]
    return len(output) == 2 and len(output[0]) == 2 and len(output[1]) == 2


def _judge_levels(levels):
    per_shape = []
    for shape, at in levels.items():
        output = at["output"]
        if len(output) == 1:
            return [{"mistake": "grid_mismatch",
                     "message": f"output is not tiled: its arrangement has the single level "
                                f"{tuple(output[0])} ({_where(shape)}), where a grid of "
                                f"(BLOCK_SIZE_M, BLOCK_SIZE_N) tiles was expected"}]
        if not is_standard_layout(at):
            return []
        per_shape.append((shape, _observe(shape, at)))

    findings = []
    findings += _output_grid_findings(per_shape)
    for role in ("lhs", "rhs"):
        nesting = _nesting_findings(role, per_shape)
        findings += nesting
        if any(f["mistake"] == "grid_mismatch" for f in nesting):
            continue  # the levels are not what the remaining checks assume
        tiles = _tile_findings(role, per_shape)
        findings += tiles
        if tiles:
            continue  # a wrong tile shape also skews the outer shape; say it once
        findings += _outer_findings(role, per_shape)
        findings += _k_length_findings(role, per_shape)
    return _dedupe(findings)


def _observe(shape, at):
    """What one size shows: the tiles, the grids and each operand's levels."""
    m, n, k = shape
    out_outer, out_tile = at["output"]
    bm, bn = out_tile
    obs = {"bm": bm, "bn": bn, "grid": (_ceil_div(m, bm), _ceil_div(n, bn)),
           "floor_grid": (m // bm, n // bn), "out_outer": out_outer}
    for role in ("lhs", "rhs"):
        role_levels = at[role]
        squeezed_middle = None
        extra_ones = False
        if len(role_levels) == 3:
            middle = role_levels[1]
            kept = tuple(size for size in middle if size != 1)
            if len(middle) == 1:
                squeezed_middle = middle
            elif len(kept) <= 1 and len(middle) >= 2:
                extra_ones = True
                squeezed_middle = kept or (1,)
        inner = role_levels[-1]
        own_bk = (inner[1] if role == "lhs" else inner[0]) if len(inner) == 2 else None
        obs[role] = {"levels": role_levels, "middle": squeezed_middle,
                     "extra_ones": extra_ones, "bk": own_bk}
    lhs_inner = at["lhs"][-1]
    rhs_inner = at["rhs"][-1]
    if len(lhs_inner) == 2:
        obs["bk"] = lhs_inner[1]
    elif len(rhs_inner) == 2:
        obs["bk"] = rhs_inner[0]
    else:
        obs["bk"] = None
    return obs


def _output_grid_findings(per_shape):
    wrong = [(shape, obs) for shape, obs in per_shape if tuple(obs["out_outer"]) != obs["grid"]]
    if not wrong:
        return []
    shape, obs = wrong[0]
    floored = all(tuple(o["out_outer"]) == o["floor_grid"] for _, o in wrong)
    key = "tail_mask" if floored else "grid_mismatch"
    extra = (" (rounded down, so the partial edge tiles get no program)" if floored else "")
    return [{"mistake": key,
             "message": f"output outer shape is {tuple(obs['out_outer'])} where the block grid "
                        f"ceil(M/{obs['bm']}) x ceil(N/{obs['bn']}) is {obs['grid']}{extra} "
                        f"({_where(shape)})"}]


def _nesting_findings(role, per_shape):
    expected = "(BM, BK)" if role == "lhs" else "(BK, BN)"
    for shape, obs in per_shape:
        seen = obs[role]
        if seen["extra_ones"]:
            return [{"mistake": "missing_squeeze",
                     "message": f"{role} levels are {_levels_text(seen['levels'])} "
                                f"({_where(shape)}): the K sequence {seen['levels'][1]} still has "
                                f"a length-1 dimension; squeeze it out of {role}'s dtype"}]
        if seen["middle"] is None:
            return [{"mistake": "grid_mismatch",
                     "message": f"{role} levels are {_levels_text(seen['levels'])} "
                                f"({_where(shape)}), where three levels were expected: the "
                                f"output's block grid, a 1-D sequence of K tiles, and a "
                                f"{expected} tile"}]
    return []


def _outer_findings(role, per_shape):
    wrong = []
    for shape, obs in per_shape:
        outer = obs[role]["levels"][0]
        if tuple(outer) != obs["grid"]:
            wrong.append((shape, obs, tuple(outer)))
    if not wrong:
        return []
    shape, obs, outer = wrong[0]
    evidence = (f"{role} outer shape is {outer} where the output grid is {obs['grid']} "
                f"({_where(shape)})")
    right_at = [s for s, o in per_shape if tuple(o[role]["levels"][0]) == o["grid"]]
    if right_at:
        evidence += "; it is right at " + ", ".join(_shape_text(s) for s in right_at)

    # Which outer dimension repeats the operand across the grid: lhs is repeated
    # along N (dim 1), rhs along M (dim 0). The other one is the operand's own.
    repeat_dim = 1 if role == "lhs" else 0
    own_dim = 1 - repeat_dim
    if len(outer) != 2:
        constant = len({tuple(o[role]["levels"][0]) for _, o in per_shape}) == 1
        return [{"mistake": "hard_coded" if constant else "grid_mismatch", "message": evidence}]

    def seen(obs):
        return tuple(obs[role]["levels"][0])

    def off_in(dim):
        return [(o, out) for _, o, out in wrong if out[dim] != o["grid"][dim]]

    def constant_but_needs_to_vary(dim):
        return (len({seen(o)[dim] for _, o in per_shape}) == 1
                and len({o["grid"][dim] for _, o in per_shape}) > 1)

    repeat_off, own_off = off_in(repeat_dim), off_in(own_dim)
    if repeat_off and not own_off:
        # Repeated over the other axis's block count, or not repeated at all.
        if all(out[repeat_dim] in (o["grid"][own_dim], 1) for o, out in repeat_off):
            return [{"mistake": "expand_axis", "message": evidence}]
        if constant_but_needs_to_vary(repeat_dim):
            value = seen(per_shape[0][1])[repeat_dim]
            return [{"mistake": "hard_coded",
                     "message": f"{evidence}; dimension {repeat_dim} is always {value}"}]
    if own_off:
        if all(out[own_dim] == o["floor_grid"][own_dim] for o, out in own_off):
            return [{"mistake": "tail_mask",
                     "message": evidence + " (the block count is rounded down)"}]
        if constant_but_needs_to_vary(own_dim):
            return [{"mistake": "hard_coded", "message": evidence}]
    return [{"mistake": "grid_mismatch", "message": evidence}]


def _k_length_findings(role, per_shape):
    # Measured against the operand's own K tile, so a tile-size mismatch is
    # reported once, by _tile_findings, and not again here.
    wrong = []
    for shape, obs in per_shape:
        bk = obs[role]["bk"]
        if not bk:
            continue
        need = _ceil_div(shape[2], bk)
        got = obs[role]["middle"][0]
        if got != need:
            wrong.append((shape, obs, got, need))
    if not wrong:
        return []
    shape, obs, got, need = wrong[0]
    k, bk = shape[2], obs[role]["bk"]
    evidence = f"{role} K sequence has length {got} where ceil(K/{bk}) = {need} ({_where(shape)})"
    if all(g == s[2] // o[role]["bk"] for s, o, g, _ in wrong):
        return [{"mistake": "k_tail",
                 "message": evidence + f": the partial K tile ({k % bk} wide) is dropped"}]
    values = {o[role]["middle"][0] for _, o in per_shape}
    if len(values) == 1:
        return [{"mistake": "hard_coded", "message": evidence + "; it never changes with K"}]
    return [{"mistake": "grid_mismatch", "message": evidence}]


def _tile_findings(role, per_shape):
    for shape, obs in per_shape:
        inner = tuple(obs[role]["levels"][-1])
        bk = obs["bk"]
        expected = (obs["bm"], bk) if role == "lhs" else (bk, obs["bn"])
        if inner != expected or (role == "rhs" and len(obs["lhs"]["levels"][-1]) == 2
                                 and obs["lhs"]["levels"][-1][1] != inner[0]):
            lhs_tile = tuple(obs["lhs"]["levels"][-1])
            return [{"mistake": "tile_shape",
                     "message": f"{role} tiles are {inner} where {expected} was expected "
                                f"(output tiles are {(obs['bm'], obs['bn'])}, lhs tiles "
                                f"{lhs_tile}; {_where(shape)})"}]
    return []


def _dedupe(findings):
    seen = set()
    kept = []
    for finding in findings:
        key = (finding["mistake"], finding["message"])
        if key not in seen:
            seen.add(key)
            kept.append(finding)
    return kept


def _levels_text(levels):
    return " -> ".join(str(tuple(level)) for level in levels)


def _compact(levels):
    first = next(iter(levels.items()), None)
    if first is None:
        return "none"
    shape, at = first
    return f"{_shape_text(shape)}: " + "; ".join(
        f"{role} {_levels_text(role_levels)}" for role, role_levels in at.items())


def _one_line(error):
    text = str(error).strip().splitlines()
    return text[-1] if text else ""


# --------------------------------------------------------------------------
# Explanation (pure: findings + verdicts + cases -> hints)
# --------------------------------------------------------------------------


def tile_sizes(module, shape=DEFAULT_SHAPES[0]):
    """(BM, BN, BK) as the arrangement really uses them, or None when unknown.

    Read from the arranged tensors rather than the BLOCK_SIZE_* names, which a
    submission may not use. Runs the arrangement symbolically; never raises.
    """
    try:
        at = arranged_levels(module, (shape,))[shape]
        if not is_standard_layout(at):
            return None
        bm, bn = at["output"][-1]
        lhs_inner, rhs_inner = at["lhs"][-1], at["rhs"][-1]
        bk = lhs_inner[-1] if len(lhs_inner) == 2 else rhs_inner[0]
        return (int(bm), int(bn), int(bk))
    except Exception:
        return None


def explain(findings, verdicts, cases, tiles=None, reveal=False):
    """Turn symbolic findings and the pattern of failed cases into ordered hints.

    ``verdicts`` are grader.core.checks.Verdict objects (or dicts with the same
    fields); ``cases`` the catalogue cases they belong to. Returns a list of
    ``grader.core.mistakes.hint(key)`` dicts, each with an ``evidence`` list of
    strings, most likely cause first. No failure, no hint.

    ``tiles`` is the optional (BM, BN, BK) from ``tile_sizes``; without it the
    failure patterns are tried against the usual power-of-two block sizes.
    ``reveal`` lets the evidence name hidden cases' shapes (the pytest grader,
    whose test ids show them anyway); feedback for a class keeps it False.
    """

    by_id = {case.id: case for case in cases}
    results = []
    for verdict in verdicts:
        case_id, passed, mistake, message = _verdict_fields(verdict)
        if case_id in by_id:
            results.append((by_id[case_id], passed, mistake, message))
    failed = [(case, mistake, message) for case, passed, mistake, message in results if not passed]
    if not failed:
        return []

    hints = {}  # key -> evidence list, in insertion order

    def add(key, evidence):
        if key not in mistakes.MISTAKES:
            return
        bucket = hints.setdefault(key, [])
        for line in evidence:
            if line and line not in bucket:
                bucket.append(line)

    named = {}
    for case, mistake, message in failed:
        if mistake:
            named.setdefault(mistake, []).append((case, message))

    # 1. The file cannot be run at all: that is the whole story.
    for key in mistakes.found_by(mistakes.FILE):
        if key in named:
            add(key, [_first_line(named[key][0][1])])
    if hints:
        return _finish(hints)

    # 2. What the symbolic inspection saw, when the kernel indeed computes
    #    wrong values or does not build (a wrong dtype, say, it cannot explain).
    unexplained = any(not mistake or mistake in ("build_error", "grid_mismatch")
                      for _, mistake, _ in failed)
    for finding in (findings or ()) if unexplained else ():
        key = finding.get("mistake") if isinstance(finding, dict) else None
        if key == "build_error" and "build_error" not in named:
            continue  # the arrangement only fails symbolically; let the cases speak
        add(key, [finding.get("message", "")])

    # 3. Mistakes the checks named themselves, and kernels that would not build.
    for key in mistakes.found_by(mistakes.OUTPUT):
        if key == "grid_mismatch" and _explained_by_findings(hints):
            continue  # the arrangement's findings already say which level is off
        if key in named:
            cases_named = [case for case, _ in named[key]]
            # Only a case the student may see is quoted: a hidden case's message holds its shape.
            shown = [message for case, message in named[key]
                     if reveal or case.visibility == "public"]
            if not shown:
                add(key, [f"{_count(cases_named)} failed this way (hidden cases, not quoted)"])
                continue
            # A recognised partial sum states its evidence on the message's last line.
            line = shown[0].splitlines()[-1] if mistakes.MISTAKES[key].evidence_on_last_line \
                else _first_line(shown[0])
            add(key, [f"{_count(cases_named)} failed with: {line}"])

    # 4. The shape of the failures, for mismatches the checks could not name.
    plain = [(case, passed) for case, passed, mistake, _ in results
             if passed or not mistake]
    if any(not passed for _, passed in plain) and not _explained_by_findings(hints):
        for key, evidence in _patterns(plain, tiles, reveal):
            add(key, evidence)
            break  # the first pattern that fits is the one worth saying
    return _finish(hints)


def _explained_by_findings(hints):
    return any(key in hints for key in mistakes.found_by(mistakes.LAYOUT))


def _verdict_fields(verdict):
    if isinstance(verdict, dict):
        return (verdict.get("case_id"), verdict.get("passed"), verdict.get("mistake") or "",
                verdict.get("message") or "")
    return verdict.case_id, verdict.passed, verdict.mistake or "", verdict.message or ""


def _patterns(results, tiles=None, reveal=False):
    """Known failure shapes, most specific first; yields (key, evidence)."""
    passed = [case for case, ok in results if ok]
    failed = [case for case, ok in results if not ok]
    if not passed:
        return  # everything fails: the pattern says nothing about which mistake
    if tiles:
        block_ms, block_ns, block_ks = (tiles[0],), (tiles[1],), (tiles[2],)
    else:
        block_ms = block_ns = block_ks = _CANDIDATE_BLOCKS

    # Right whenever K fits in one tile, wrong whenever it needs several.
    for bk in block_ks:
        single = [case for case, _ in results if case.k <= bk]
        multi = [case for case, _ in results if case.k > bk]
        if single and multi and set(single) <= set(passed) and set(multi) <= set(failed):
            yield "accumulator", [
                f"every case whose K fits in one K tile passes ({_examples(single, reveal)}), "
                f"every case needing several fails ({_examples(multi, reveal)}), reading the "
                f"tile as {bk} wide"]
            return

    # Wrong exactly when K is not a multiple of the K tile.
    for bk in block_ks:
        ragged = [case for case, _ in results if case.k % bk]
        even = [case for case, _ in results if not case.k % bk]
        if ragged and even and set(ragged) <= set(failed) and set(even) <= set(passed):
            yield "k_tail", [
                f"only cases whose K is not a multiple of {bk} fail ({_examples(ragged, reveal)}); "
                f"those with whole K tiles pass ({_examples(even, reveal)})"]
            return

    # Squares pass, other shapes fail.
    squares = [case for case in passed if case.m == case.n]
    if squares and all(case.m != case.n for case in failed):
        others_pass = [case for case in passed if case.m != case.n]
        grid_square = lambda case, bm, bn: _ceil_div(case.m, bm) == _ceil_div(case.n, bn)
        for bm in block_ms:
            for bn in block_ns:
                if all(not grid_square(case, bm, bn) for case in failed) and all(
                        grid_square(case, bm, bn) for case in others_pass):
                    yield "expand_axis", [
                        f"square shapes pass ({_examples(squares, reveal)}) while shapes with more "
                        f"M blocks than N blocks or the reverse fail ({_examples(failed, reveal)})"]
                    return

    # Only shapes with a partial tile in M or N fail.
    # Unlike the patterns above this one only runs one way (a mistake may spare
    # some tails), so it asks for more: most tailed cases fail, and without the
    # real tiles only the common sizes up to 128 are tried.
    for bm in block_ms if tiles else _CANDIDATE_BLOCKS[:4]:
        for bn in block_ns if tiles else _CANDIDATE_BLOCKS[:4]:
            tailed = [case for case, _ in results if case.m % bm or case.n % bn]
            whole = [case for case in passed if not (case.m % bm or case.n % bn)]
            tailed_failing = [case for case in tailed if case in failed]
            if (len(whole) >= 2 and len(tailed_failing) == len(failed)
                    and 2 * len(tailed_failing) >= len(tailed)):
                yield "tail_mask", [
                    f"only shapes with a partial tile in M or N fail "
                    f"({_examples(failed, reveal)}); "
                    f"shapes made of whole tiles pass ({_examples(whole, reveal)})"]
                return

    # One target shared by every failing case: the catalogue says what it is for.
    targets = {case.targets for case in failed}
    if len(targets) == 1:
        yield targets.pop(), [
            f"every failing case targets this mistake ({_examples(failed, reveal)})"]


def _examples(cases, reveal=False, limit=3):
    ordered = sorted(cases, key=lambda case: case.visibility != "public")  # stable
    names = list(dict.fromkeys(case.describe(reveal=reveal) for case in ordered))
    shown = ", ".join(names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


def _count(cases):
    return f"{len(cases)} case" + ("" if len(cases) == 1 else "s")


def _first_line(text):
    for line in str(text).splitlines():
        if line.strip():
            return line.strip()
    return ""


def _finish(hints):
    ordered = []
    for key, evidence in hints.items():
        entry = mistakes.hint(key)
        entry["evidence"] = evidence
        ordered.append(entry)
    return ordered
