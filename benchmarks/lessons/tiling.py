"""Lesson: why tiling makes matrix multiplication fast, and what it costs.

Run ``python -m benchmarks.lessons.tiling``. Three parts, CPU only, a few seconds:
counted DRAM loads of a naive and a tiled product, the largest tile that fits in
shared memory, and the work wasted when n is not a multiple of the tile size.
"""

import argparse

import torch

from benchmarks.lessons.ledger import binary_bytes, format_table
from ledger import formulas as f

N = 256
TILES = (4, 16, 64)
QUANT_TILE = 128
QUANT_SIZES = (1024, 1025, 1088, 1152, 1153, 4096, 4097)
COUNTED_BYTES = f.DTYPE_BYTES["fp32"]


def main(argv=None) -> int:
    argparse.ArgumentParser(
        prog="python -m benchmarks.lessons.tiling",
        description="Tiling lesson: counts the DRAM loads of a naive and a tiled matmul (by running one on "
        "the CPU), finds the largest tile pair that fits in an H100 SM's shared memory, and shows the "
        "waste of tile quantization. Takes no options.",
    ).parse_args(argv)
    print(loads_section())
    print()
    print(tile_size_section(f.H100_SXM))
    print()
    print(quantization_section())
    return 0


def loads_section() -> str:
    torch.manual_seed(0)
    a, b = torch.randn(N, N, dtype=torch.float64), torch.randn(N, N, dtype=torch.float64)
    reference = a @ b
    flops = f.gemm_flops(N, N, N)
    rows = [
        [
            "naive",
            f"{f.naive_loads(N):,}",
            "2n^3",
            f"{flops / (f.naive_loads(N) * COUNTED_BYTES):.2f}",
        ]
    ]
    for t in TILES:
        c, loads = f.tiled_matmul_counting(a, b, t)
        torch.testing.assert_close(c, reference)
        assert loads == f.tiled_loads(N, t), (loads, t)
        rows.append(
            [f"tiled T={t}", f"{loads:,}", f"2n^3/{t}", f"{flops / (loads * COUNTED_BYTES):.2f}"]
        )
    table = format_table(["method", "elements loaded", "formula", "FLOP/B (fp32)"], rows)
    return "\n".join(
        [
            f"1. Naive vs tiled: DRAM loads for n = {N} ({flops:,} FLOP)",
            table,
            "Each tiled product was run on the CPU, matched A @ B, and loaded exactly 2n^3/T elements.",
            "The naive kernel loads two elements per multiply-add (1 FLOP each, 0.25 FLOP/B in fp32) at any n;",
            "a T x T tile reuses every element it stages T times, so intensity grows with T.",
        ]
    )


def tile_size_section(machine: f.Machine) -> str:
    smem = machine.smem_per_sm_bytes
    rows = [[dtype.upper(), b, f.largest_tile(smem, b)] for dtype, b in f.DTYPE_BYTES.items()]
    return "\n".join(
        [
            f"2. Largest T whose A and B tiles (two T x T) fit in {binary_bytes(smem)} of shared memory "
            f"({machine.name})",
            format_table(["dtype", "bytes", "largest T"], rows),
            "Real kernels use rectangular outputs (128x128, 128x256) and thin K slices (32 or 64) instead,",
            "keep the accumulator in registers, and spend the spare shared memory on extra pipeline stages.",
            "Bigger is not always better: fewer tiles may leave SMs idle (see benchmarks.lessons.occupancy).",
        ]
    )


def quantization_section() -> str:
    t = QUANT_TILE
    rows = [[n, f.cdiv(n, t), f"{f.tile_efficiency(n, t):.1%}"] for n in QUANT_SIZES]
    return "\n".join(
        [
            f"3. Tile quantization: an n x n output covered by {t} x {t} tiles",
            format_table(["n", "tiles per side", "useful work"], rows),
            "One element past a multiple of T adds a whole row and column of nearly empty tiles",
            "(n = 1025 wastes about a fifth of the work); the share shrinks as n grows.",
            "Sizes that are multiples of 64 or 128 avoid it for free.",
        ]
    )


if __name__ == "__main__":
    raise SystemExit(main())
