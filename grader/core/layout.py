"""What a submission's arrangement lays out, read on symbolic tensors: no kernel is built.

``inspect_arrangement(module)`` runs the submission's ``arrangement`` on symbolic tensors
only, substitutes a few concrete sizes with ``Tensor.subs`` and compares the nested shapes
with what a GEMM needs: every arranged tensor has the output's block grid as its outer
shape, lhs carries a sequence of ceil(K / BK) tiles of (BM, BK) and rhs one of (BK, BN).
It takes milliseconds and never raises; its findings feed grader.core.diagnosis.explain,
a matrix size passed where a block count belongs (grader.core.size_slips) first.
``tile_sizes`` and ``launch_mismatch`` read the same layout for the tiles a kernel really
uses and for a launch that cannot be right. A layout this module does not recognise yields
no finding: a hint is only worth giving when it is right.

It runs the student's ``arrangement``, so the batch grader calls it inside the sandbox
(grader.batch.inside.worker), never in the process that judges.
"""

from grader.core.messages import say
from grader.core.size_slips import size_slips

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


def ceil_div(a, b):
    return -(-a // b)


def _shape_text(shape):
    return "x".join(str(size) for size in shape)


def _where(shape):
    m, n, k = shape
    return f"M={m}, N={n}, K={k}"


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

    symbols = block_size_symbols(module)
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
    except Exception:  # noqa: BLE001 - the student's arrangement can fail in any way
        return None


def block_size_symbols(module):
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
        return [{"mistake": "not_implemented", "message": say("arrangement_unfinished")}]
    except Exception as error:  # noqa: BLE001 - the student's arrangement can fail in any way
        message = say("symbolic_failure", error=f"{type(error).__name__}: {_one_line(error)}")
        line = _raising_line(error, getattr(module, "__file__", None))
        return [
            {
                "mistake": "arrangement_error" if line else "build_error",
                "message": say("at_line", line=line, evidence=message) if line else message,
            }
        ]
    try:
        return _dedupe(size_slips(module, levels) + _judge_levels(levels))
    except Exception as error:  # noqa: BLE001 - a bug here must never cost the student a grade
        return [
            {
                "mistake": "grid_mismatch",
                "message": say(
                    "not_compared",
                    error=f"{type(error).__name__}: {_one_line(error)}",
                    levels=_compact(levels),
                ),
            }
        ]


def _raising_line(error, filename):
    """The line of the file ``filename`` that the error was raised from (its innermost frame
    there), or None: an error raised in the submission's own arrangement()."""
    import traceback

    if not filename:
        return None
    frames = [
        frame
        for frame in traceback.extract_tb(error.__traceback__)
        if frame.filename == filename and frame.name == "arrangement"
    ]
    return frames[-1].lineno if frames else None


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
    except Exception:  # noqa: BLE001 - the student's arrangement can fail in any way: left to the launch
        return None
    outers = {role: tuple(at[role][0]) for role in ("lhs", "rhs", "output")}
    if len(set(outers.values())) == 1:
        return None
    return NOT_LAUNCHED + say("outer_shapes_differ", where=_where(shape), **outers)


def checked_right(module, findings):
    """Whether the symbolic check judged the module's arrangement and found it right: no
    finding (``inspect_arrangement``'s), and a plain grid of tiles at every shape it checks
    (another layout is not judged). A failing kernel's mistake is then in application()."""
    if findings:
        return False
    levels = arranged_levels_or_none(module)
    return levels is not None and all(is_standard_layout(at) for at in levels.values())


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
            return [
                {
                    "mistake": "grid_mismatch",
                    "message": say("output_untiled", level=tuple(output[0]), where=_where(shape)),
                }
            ]
        if not is_standard_layout(at):
            return []
        per_shape.append((shape, _observe(shape, at)))

    untiled = _k_untiled_findings(per_shape)
    if untiled:
        return untiled  # no K sequence: the other checks would only echo it
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
        sequence = _k_sequence_findings(role, per_shape)
        findings += sequence or (
            _outer_findings(role, per_shape) + _k_length_findings(role, per_shape)
        )
    return _dedupe(findings)


def _observe(shape, at):
    """What one size shows: the tiles, the grids and each operand's levels."""
    m, n, k = shape
    out_outer, out_tile = at["output"]
    bm, bn = out_tile
    obs = {
        "bm": bm,
        "bn": bn,
        "grid": (ceil_div(m, bm), ceil_div(n, bn)),
        "floor_grid": (m // bm, n // bn),
        "out_outer": out_outer,
    }
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
        obs[role] = {
            "levels": role_levels,
            "middle": squeezed_middle,
            "extra_ones": extra_ones,
            "bk": own_bk,
        }
    lhs_inner = at["lhs"][-1]
    rhs_inner = at["rhs"][-1]
    if len(lhs_inner) == 2:
        obs["bk"] = lhs_inner[1]
    elif len(rhs_inner) == 2:
        obs["bk"] = rhs_inner[0]
    else:
        obs["bk"] = None
    return obs


# What each operand is tiled and grouped by, as the hints write it.
_TILING = {
    "lhs": "lhs.tile((BLOCK_SIZE_M, BLOCK_SIZE_K)).tile((1, -1))",
    "rhs": "rhs.tile((BLOCK_SIZE_K, BLOCK_SIZE_N)).tile((-1, 1))",
}


def _k_untiled_findings(per_shape):
    """An operand whose innermost level holds all of K at every size: tiled with -1 (or K
    itself) along K, it has no sequence of K tiles, and NineToothed cannot build a tile
    whose size is no block size (it fails inside, on a Symbol's upper_bound)."""
    findings = []
    for role in ("lhs", "rhs"):
        if all(shape[2] in obs[role]["levels"][-1] for shape, obs in per_shape):
            shape, obs = per_shape[0]
            findings.append(
                {
                    "mistake": "k_untiled",
                    "message": say(
                        "k_untiled",
                        role=role,
                        tile=tuple(obs[role]["levels"][-1]),
                        where=_where(shape),
                        tiling=_TILING[role],
                    ),
                }
            )
    return findings


def _k_sequence_findings(role, per_shape):
    """A K sequence of length 1 at every size, where K needs several tiles: the squeeze took
    out the K tiles (the grid is right), or the tiles were grouped along the other axis."""
    short = [
        (shape, obs)
        for shape, obs in per_shape
        if obs[role]["bk"] and ceil_div(shape[2], obs[role]["bk"]) > 1
    ]
    if not short or any(obs[role]["middle"] != (1,) for _, obs in per_shape):
        return []
    shape, obs = short[0]
    need = ceil_div(shape[2], obs[role]["bk"])
    outer = tuple(obs[role]["levels"][0])
    if all(tuple(o[role]["levels"][0]) == o["grid"] for _, o in per_shape):
        right = 0 if role == "lhs" else 1
        return [
            {
                "mistake": "squeeze_axis",
                "message": say(
                    "squeeze_axis",
                    role=role,
                    bk=obs[role]["bk"],
                    need=need,
                    where=_where(shape),
                    right=right,
                ),
            }
        ]
    own = 0 if role == "lhs" else 1
    if all(o[role]["levels"][0][own] == 1 for _, o in per_shape) and any(
        o["grid"][own] > 1 for _, o in per_shape
    ):
        return [
            {
                "mistake": "group_axis",
                "message": say(
                    "group_axis",
                    role=role,
                    outer=outer,
                    grid=obs["grid"],
                    bk=obs[role]["bk"],
                    need=need,
                    where=_where(shape),
                    tiling=_TILING[role],
                ),
            }
        ]
    return []


def _output_grid_findings(per_shape):
    wrong = [(shape, obs) for shape, obs in per_shape if tuple(obs["out_outer"]) != obs["grid"]]
    if not wrong:
        return []
    shape, obs = wrong[0]
    floored = all(tuple(o["out_outer"]) == o["floor_grid"] for _, o in wrong)
    return [
        {
            "mistake": "tail_mask" if floored else "grid_mismatch",
            "message": say(
                "output_grid_floored" if floored else "output_grid",
                outer=tuple(obs["out_outer"]),
                bm=obs["bm"],
                bn=obs["bn"],
                grid=obs["grid"],
                where=_where(shape),
            ),
        }
    ]


def _nesting_findings(role, per_shape):
    expected = "(BM, BK)" if role == "lhs" else "(BK, BN)"
    for shape, obs in per_shape:
        seen = obs[role]
        if seen["extra_ones"]:
            return [
                {
                    "mistake": "missing_squeeze",
                    "message": say(
                        "missing_squeeze",
                        role=role,
                        levels=_levels_text(seen["levels"]),
                        where=_where(shape),
                        sequence=seen["levels"][1],
                    ),
                }
            ]
        if seen["middle"] is None:
            return [
                {
                    "mistake": "grid_mismatch",
                    "message": say(
                        "three_levels",
                        role=role,
                        levels=_levels_text(seen["levels"]),
                        where=_where(shape),
                        tile=expected,
                    ),
                }
            ]
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
    evidence = say("outer_shape", role=role, outer=outer, grid=obs["grid"], where=_where(shape))
    right_at = [s for s, o in per_shape if tuple(o[role]["levels"][0]) == o["grid"]]
    if right_at:
        evidence = say(
            "right_at", evidence=evidence, sizes=", ".join(_shape_text(s) for s in right_at)
        )

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
        return (
            len({seen(o)[dim] for _, o in per_shape}) == 1
            and len({o["grid"][dim] for _, o in per_shape}) > 1
        )

    repeat_off, own_off = off_in(repeat_dim), off_in(own_dim)
    if repeat_off and not own_off:
        # Repeated over the other axis's block count, or not repeated at all.
        if all(out[repeat_dim] in (o["grid"][own_dim], 1) for o, out in repeat_off):
            return [{"mistake": "expand_axis", "message": evidence}]
        if constant_but_needs_to_vary(repeat_dim):
            value = seen(per_shape[0][1])[repeat_dim]
            return [
                {
                    "mistake": "hard_coded",
                    "message": say(
                        "always_the_same", evidence=evidence, dimension=repeat_dim, value=value
                    ),
                }
            ]
    if own_off:
        if all(out[own_dim] == o["floor_grid"][own_dim] for o, out in own_off):
            return [
                {"mistake": "tail_mask", "message": say("count_rounded_down", evidence=evidence)}
            ]
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
        need = ceil_div(shape[2], bk)
        got = obs[role]["middle"][0]
        if got != need:
            wrong.append((shape, obs, got, need))
    if not wrong:
        return []
    shape, obs, got, need = wrong[0]
    k, bk = shape[2], obs[role]["bk"]
    evidence = say("k_length", role=role, got=got, bk=bk, need=need, where=_where(shape))
    if all(g == s[2] // o[role]["bk"] for s, o, g, _ in wrong):
        return [
            {"mistake": "k_tail", "message": say("k_tile_dropped", evidence=evidence, width=k % bk)}
        ]
    values = {o[role]["middle"][0] for _, o in per_shape}
    if len(values) == 1:
        return [{"mistake": "hard_coded", "message": say("never_changes", evidence=evidence)}]
    return [{"mistake": "grid_mismatch", "message": evidence}]


def _tile_findings(role, per_shape):
    for shape, obs in per_shape:
        inner = tuple(obs[role]["levels"][-1])
        bk = obs["bk"]
        expected = (obs["bm"], bk) if role == "lhs" else (bk, obs["bn"])
        if inner != expected or (
            role == "rhs"
            and len(obs["lhs"]["levels"][-1]) == 2
            and obs["lhs"]["levels"][-1][1] != inner[0]
        ):
            lhs_tile = tuple(obs["lhs"]["levels"][-1])
            return [
                {
                    "mistake": "tile_shape",
                    "message": say(
                        "tile_shape",
                        role=role,
                        tile=inner,
                        expected=expected,
                        output=(obs["bm"], obs["bn"]),
                        lhs=lhs_tile,
                        where=_where(shape),
                    ),
                }
            ]
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
        f"{role} {_levels_text(role_levels)}" for role, role_levels in at.items()
    )


def _one_line(error):
    text = str(error).strip().splitlines()
    return text[-1] if text else ""


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
    except Exception:  # noqa: BLE001 - the student's arrangement can fail in any way
        return None
