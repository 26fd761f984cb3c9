"""Which tiles of lhs, rhs and output one program gets, read from NineToothed's own
simulation of the arrangement.

``Tensor.eval`` (ninetoothed.eval) turns an arranged tensor into the flat source offset of
every element at every level, as the kernel would index it: the arrangement simulated,
no kernel built. It evaluates every program's every K step (seconds when lhs is expanded
by N itself, say), so ``program_tiles`` takes the same steps for one program at a time and
stops at the first program whose share differs from ``expected_tiles`` (the block sizes
alone say what that is). It keeps that share as rectangles of the source matrices, one per
K step: plain numbers. The batch grader computes them inside the sandbox, where the
student's ``arrangement`` may run, and draws them outside (grader.core.tile_picture).
"""

import itertools
import math

from grader.core.layout import arranged_levels, block_size_symbols, ceil_div, tile_sizes

ROLES = ("lhs", "rhs", "output")
REFERENCE_TILES = (64, 64, 64)  # the model answer's, for a layout whose own are unknown
MAX_PROGRAMS = 64  # programs compared with what they should get, in launch order
MAX_STEPS = 64  # rectangles kept per tensor and program


def expected_tiles(shape, tiles, program):
    """{role: [[row0, row1, col0, col1], ...]}: what program ``program`` should get, row-major
    over the output's block grid; lhs and rhs one rectangle per K step. Empty past the grid."""
    (m, n, k), (bm, bn, bk) = shape, tiles
    grid_n = ceil_div(n, bn)
    if program >= ceil_div(m, bm) * grid_n:
        return {role: [] for role in ROLES}
    i, j = divmod(program, grid_n)
    rows, columns = [i * bm, min(m, (i + 1) * bm)], [j * bn, min(n, (j + 1) * bn)]
    steps = [[s * bk, min(k, (s + 1) * bk)] for s in range(ceil_div(k, bk))]
    return {
        "lhs": [rows + step for step in steps],
        "rhs": [step + columns for step in steps],
        "output": [rows + columns],
    }


def program_tiles(module, shape, tiles=None):
    """``{"shape", "program", "grids", "tiles"}`` for the first program that does not get
    what it should at ``shape`` (M, N, K); program 0 when every program does but the outer
    shapes differ (rhs expanded by M itself, say: NineToothed refuses such a launch); None
    when the first MAX_PROGRAMS all do and the shapes agree, or when the arrangement cannot
    be simulated. Never raises.

    ``grids`` are the arranged tensors' outer shapes: NineToothed launches one program per
    element of lhs's and finds each tensor's tile in its own.
    """
    try:
        return _program_tiles(module, tuple(shape), tuple(tiles or REFERENCE_TILES))
    except Exception:  # noqa: BLE001 - the student's arrangement can fail in any way; layout says how
        return None


def first_difference(module, shapes, tries=4):
    """``program_tiles`` at the first of ``shapes`` (a failing case's, say) where a program
    gets other tiles than it should, with the tiles the arrangement uses; else None."""
    tiles = tile_sizes(module)
    for shape in list(dict.fromkeys(tuple(shape) for shape in shapes))[:tries]:
        found = program_tiles(module, shape, tiles)
        if found is not None:
            return found
    return None


def _program_tiles(module, shape, tiles):
    from ninetoothed import Tensor
    from ninetoothed.eval import _generate_replacements

    levels = arranged_levels(module, (shape,))[shape]
    m, n, k = shape
    sources = {"lhs": (m, k), "rhs": (k, n), "output": (m, n)}
    originals = (Tensor(2), Tensor(2), Tensor(2))
    arranged = dict(zip(ROLES, module.arrangement(*originals)))
    subs = {tensor: {"shape": sources[role]} for role, tensor in zip(ROLES, originals)}
    subs.update(block_size_symbols(module))
    replacements = _generate_replacements(subs)
    grids = {role: list(levels[role][0]) for role in ROLES}
    launched = math.prod(grids["lhs"])
    wanted = ceil_div(m, tiles[0]) * ceil_div(n, tiles[1])
    first = None
    for program in range(min(max(launched, wanted), MAX_PROGRAMS)):
        got = {
            role: _share(arranged[role], levels[role], replacements, program, sources[role][1])
            for role in ROLES
        }
        if got != expected_tiles(shape, tiles, program):
            return {"shape": list(shape), "program": program, "grids": grids, "tiles": got}
        first = first or {"shape": list(shape), "program": program, "grids": grids, "tiles": got}
    if len({tuple(grid) for grid in grids.values()}) > 1:
        return first  # right tiles, launched by mismatched grids: the picture shows the grids
    return None


def _share(tensor, levels, replacements, program, width):
    """One program's rectangles of a source matrix ``width`` columns wide, step by step;
    a step with no element in bounds is left out (it loads nothing)."""
    import numpy

    outer = levels[0]
    if len(levels) < 2 or program >= math.prod(outer):
        return []
    place = tuple(int(i) for i in numpy.unravel_index(program, outer))
    middle = [size for level in levels[1:-1] for size in level]
    rectangles = []
    for step in itertools.islice(itertools.product(*map(range, middle)), MAX_STEPS):
        offsets = _offsets(tensor, replacements, place + step)
        inside = offsets[offsets >= 0]
        if inside.size:
            rows, columns = inside // width, inside % width
            rectangles.append(
                [int(rows.min()), int(rows.max()) + 1, int(columns.min()), int(columns.max()) + 1]
            )
    return rectangles


def _offsets(tensor, replacements, index):
    """The source offsets of the innermost tile at ``index`` (outer and middle levels), -1
    where masked: the body of Tensor.eval's loop (ninetoothed.eval._eval), at one index."""
    import numpy
    from ninetoothed.eval import _replace
    from ninetoothed.generation import CodeGenerator
    from ninetoothed.symbol import Symbol

    offsets, mask = CodeGenerator._generate_overall_offsets_and_mask(
        tensor,
        tuple(Symbol(i) for i in index)
        + CodeGenerator._generate_innermost_indices(tensor, use_power_of_2_sizes=False),
    )
    return eval(
        f"np.where({_replace(str(mask), replacements)}, "
        f"{_replace(str(offsets), replacements)}, -1)",
        {"np": numpy},
    )
