"""Lesson: the 3000^3 cliff. Its neighbours launch the same waves; its rows differ.

Run ``python -m benchmarks.lessons.cliff`` (``--sizes`` for other squares). Two tables from
ledger.formulas, no GPU: the programs and waves of the reference's 128x256 tiles on an H200,
then what one row of A or B is in bytes against what Triton can prove about it. The measured
side, from an H200, is section 5 of docs/explainer.en.md (and .zh.md).
"""

import argparse

from benchmarks.lessons.ledger import binary_bytes, format_table, shape_label
from ledger import formulas as f

SIZES = (2992, 3000, 3008, 3072)
# The reference's tile at these sizes, with its warps and stages (docs/perf-notes.md).
BLOCK_M, BLOCK_N, BLOCK_K, WARPS, STAGES = 128, 256, 64, 8, 3
DTYPE = "fp16"


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    machine = f.H200
    print(
        f"{DTYPE} squares in {BLOCK_M}x{BLOCK_N}x{BLOCK_K} tiles ({WARPS} warps, {STAGES} stages) "
        f"on an {machine.name} ({machine.n_sm} SMs)"
    )
    print()
    print(waves_section(args.sizes, machine))
    print()
    print(rows_section(args.sizes))
    return 0


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m benchmarks.lessons.cliff",
        description="The 3000^3 cliff from formulas: the programs and waves of n x n x n products in "
        "the reference's 128x256 tiles on an H200, and the bytes of one row of n fp16 elements against "
        "what Triton can prove about them. No GPU needed.",
    )
    p.add_argument(
        "--sizes",
        type=_size,
        nargs="+",
        default=list(SIZES),
        metavar="N",
        help="square sizes n (default: 2992 3000 3008 3072)",
    )
    return p


def _size(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"a size must be at least 1, not {value}")
    return value


def waves_section(sizes, machine: f.Machine) -> str:
    dtype_bytes = f.DTYPE_BYTES[DTYPE]
    per_sm = f.occupancy_estimate(BLOCK_M, BLOCK_N, BLOCK_K, WARPS, STAGES, dtype_bytes, machine)[
        "blocks_per_sm"
    ]
    shared = binary_bytes(f.smem_bytes(BLOCK_M, BLOCK_N, BLOCK_K, dtype_bytes, STAGES))
    rows, grids = [], set()
    for n in sizes:
        programs = f.tile_count(n, n, BLOCK_M, BLOCK_N)
        count, last, overall = f.waves(programs, per_sm, machine.n_sm)
        grids.add((programs, count))
        rows.append(
            [
                shape_label(n, n, n),
                f"{f.cdiv(n, BLOCK_M)} x {f.cdiv(n, BLOCK_N)}",
                programs,
                count,
                f"{last:.0%}",
                f"{overall:.0%}",
                _last_tiles(n),
            ]
        )
    table = format_table(
        [
            "size",
            "tile grid",
            "programs",
            "waves",
            "last wave busy",
            "overall busy",
            "last tiles (rows; columns)",
        ],
        rows,
    )
    lines = [
        f"1. Programs and waves: one program per output tile, {per_sm} per SM at a time "
        f"({shared} of shared memory each), {machine.n_sm * per_sm} at once",
        table,
    ]
    if len(sizes) > 1 and len(grids) == 1:
        lines.append(
            "Every size here launches the same grid in the same waves: waves cannot tell them apart."
        )
    return "\n".join(lines)


def _last_tiles(n: int) -> str:
    parts = []
    for t in (BLOCK_M, BLOCK_N):
        held = f.last_tile(n, t)
        parts.append("whole" if held == t else f"{held} of {t}")
    return "; ".join(parts)


def rows_section(sizes) -> str:
    dtype_bytes = f.DTYPE_BYTES[DTYPE]
    rows = []
    for n in dict.fromkeys(sizes):
        size = f.row_bytes(n, dtype_bytes)
        whole = f.rows_whole_vectors(n, dtype_bytes)
        marked = f.divisibility_marked(n)
        if marked:
            loads = "yes"
        elif whole:
            loads = "only if n is a constant (flat kernels)"
        else:
            loads = "no"
        rows.append(
            [
                n,
                size,
                f"{size / f.VECTOR_BYTES:g}",
                f"{f.TRITON_DIVISIBILITY} x {n // f.TRITON_DIVISIBILITY} + {n % f.TRITON_DIVISIBILITY}",
                "yes" if marked else "no",
                loads,
            ]
        )
    table = format_table(
        [
            "n",
            "bytes per row",
            f"{f.VECTOR_BYTES}-byte units",
            f"n = {f.TRITON_DIVISIBILITY} x q + r",
            "Triton marks n",
            f"{f.VECTOR_BYTES}-byte loads",
        ],
        rows,
    )
    return "\n".join(
        [
            f"2. One row of A or B: n {DTYPE} elements, what the memory allows and what Triton can prove",
            table,
            f"Triton marks an integer argument only when it is divisible by {f.TRITON_DIVISIBILITY}. A run-time K or N left",
            "unmarked leaves the compiler unable to prove that 8 neighbouring elements (16 bytes) share one",
            "mask, so it loads them one at a time: the ragged cliff. Passed as a constant, n itself is seen,",
            "and rows of whole 16-byte units load 16 bytes at a time again; other rows never can.",
        ]
    )


if __name__ == "__main__":
    raise SystemExit(main())
