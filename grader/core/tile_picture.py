"""Draw one program's tiles of A, B and C, the student's beside the expected, as a PNG.

It draws only plain numbers (grader.core.program_tiles's answer and its
``expected_tiles``), never runs a submission, and writes one file from a bare matplotlib
figure: the batch grader calls it from the parent, the pytest grader from its summary.
"""

import pathlib

from grader.core.layout import ceil_div
from grader.core.program_tiles import MAX_STEPS, ROLES, expected_tiles

_MATRIX = {
    "lhs": ("A = lhs", "M", "K"),
    "rhs": ("B = rhs", "K", "N"),
    "output": ("C = output", "M", "N"),
}


def draw(picture, tiles, path):
    """Write ``path`` (a PNG): row one what ``picture["program"]`` gets, row two what it
    should get with block sizes ``tiles`` (BM, BN, BK); K steps numbered and coloured."""
    import matplotlib
    from matplotlib.figure import Figure  # no pyplot: no backend is chosen, Agg writes it
    from matplotlib.patches import Rectangle

    m, n, k = picture["shape"]
    program = picture["program"]
    # The first MAX_STEPS K steps, as the kernel run keeps of the student's: tiles of 1
    # (which a worker may claim) would ask for a labelled rectangle per element of K.
    expected = {
        role: rectangles[:MAX_STEPS]
        for role, rectangles in expected_tiles((m, n, k), tiles, program).items()
    }
    sizes = {"M": m, "N": n, "K": k}
    blocks = {"M": tiles[0], "N": tiles[1], "K": tiles[2]}
    grid_n = ceil_div(n, tiles[1])
    # Fixed margins, not a layout engine: "constrained" took nearly half of each drawing's
    # time (docs/stress-runs/timeline.md, "Measurements behind the rules").
    figure = Figure(figsize=(13, 10))
    grid = figure.add_gridspec(
        2,
        3,
        width_ratios=[k, n, n],
        left=0.05,
        right=0.98,
        top=0.86,
        bottom=0.04,
        hspace=0.38,
        wspace=0.16,
    )
    _, tops, _, _ = grid.get_grid_positions(figure)
    grids = picture["grids"]
    rows = [
        (
            "Your arrangement, outer shapes: "
            + ", ".join(f"{role} {tuple(grids[role])}" for role in ROLES),
            picture["tiles"],
        ),
        (
            f"Expected: every outer shape is the output's block grid "
            f"{(ceil_div(m, tiles[0]), grid_n)}",
            expected,
        ),
    ]
    colours = matplotlib.colormaps["viridis"]
    for row, (title, share) in enumerate(rows):
        figure.text(0.5, tops[row] + 0.04, title, ha="center", va="bottom", fontsize=11)
        for column, role in enumerate(ROLES):
            ax = figure.add_subplot(grid[row, column])
            name, height, width = _MATRIX[role]
            _frame(ax, sizes[height], sizes[width], blocks[height], blocks[width])
            rectangles = share[role]
            for step, rectangle in enumerate(rectangles):
                shade = step / max(1, len(rectangles) - 1)
                x, y, w, h = _visible(rectangle, sizes[height], sizes[width])
                ax.add_patch(
                    Rectangle(
                        (x, y),
                        w,
                        h,
                        alpha=0.8,
                        edgecolor="black",
                        linewidth=1.2,
                        facecolor="tab:orange" if role == "output" else colours(shade),
                    )
                )
                if role != "output":
                    ax.text(
                        x + w / 2,
                        y + h / 2,
                        f"k={step}",
                        ha="center",
                        va="center",
                        fontsize=8,
                        color="white" if shade < 0.5 else "black",
                    )
            if not rectangles:
                ax.text(
                    sizes[width] / 2,
                    sizes[height] / 2,
                    "no tile for this program",
                    ha="center",
                    va="center",
                    fontsize=10,
                    color="tab:red",
                )
            ax.set_title(
                f"{name} ({height} x {width} = {sizes[height]} x {sizes[width]})", fontsize=10
            )
    i, j = divmod(program, grid_n)
    title = (
        f"What program {program} gets at M={m}, N={n}, K={k} (it should compute "
        f"C tile ({i}, {j}) with {tiles[0]} x {tiles[1]} x {tiles[2]} blocks)"
    )
    if picture["tiles"] == expected:
        title += (
            "\nIts tiles are the expected ones; its outer shapes are not: each must be "
            "the output's block grid, since NineToothed pairs tiles by those shapes"
        )
    figure.suptitle(title, fontsize=12, y=0.99, va="top")
    path = pathlib.Path(path)
    figure.savefig(path, dpi=80)
    return path


def _visible(rectangle, rows, columns):
    """(x, y, width, height) of a tile, a one-row or one-column tail widened to be seen."""
    row0, row1, col0, col1 = rectangle
    height, width = max(row1 - row0, rows / 40), max(col1 - col0, columns / 40)
    return col0, min(row0, rows - height), width, height


MAX_LINES = 64  # block boundaries drawn along an axis; more would be a grey wash


def _frame(ax, rows, columns, block_rows, block_columns):
    """The matrix as a box, its block boundaries as faint lines (where they can be told
    apart: tiles of 1 would draw a line per element), row 0 at the top."""
    if rows // block_rows <= MAX_LINES:
        for row in range(block_rows, rows, block_rows):
            ax.axhline(row, color="0.85", linewidth=0.8)
    if columns // block_columns <= MAX_LINES:
        for column in range(block_columns, columns, block_columns):
            ax.axvline(column, color="0.85", linewidth=0.8)
    ax.set_xlim(0, columns)
    ax.set_ylim(rows, 0)
    ax.set_aspect("equal")
    ax.tick_params(labelsize=7)
