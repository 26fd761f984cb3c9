"""The GEMM ledger: is a GEMM compute- or memory-bound, and does a tile config fit?

Run ``python -m benchmarks.lessons.ledger --help``. Nothing is measured: every number comes
from ledger.formulas, so the output is the same on any machine, GPU or not.
The small text helpers at the bottom (units, aligned tables) are shared with the
other lesson CLIs.
"""

import argparse

from ledger import formulas as f

SWEEP_SHAPES = [
    (4096, 4096, 4096),
    (512, 512, 512),
    (128, 128, 128),
    (256, 256, 16384),
    (8192, 8192, 8192),
]


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    machine = f.MACHINES[args.machine]
    dtype_bytes = f.DTYPE_BYTES[args.dtype]
    print(machine_line(machine))
    print()
    if args.sweep:
        print(f"Minimum-traffic ledger for a few shapes ({args.dtype})")
        print(sweep_table(SWEEP_SHAPES, dtype_bytes, machine))
        return 0
    print(gemm_report(args.m, args.n, args.k, args.dtype, machine))
    print()
    print(
        tile_report(
            args.block_m,
            args.block_n,
            args.block_k,
            args.stages,
            args.threads,
            dtype_bytes,
            machine,
        )
    )
    return 0


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m benchmarks.lessons.ledger",
        description="Back-of-the-envelope ledger for C = A @ B (A: M x K, B: K x N): work, minimum DRAM "
        "traffic, arithmetic intensity against the machine balance, and the shared-memory and register "
        "footprint of one tile config. Formulas only; no GPU needed.",
    )
    p.add_argument("--m", type=int, default=4096, help="rows of A and C (default: 4096)")
    p.add_argument("--n", type=int, default=4096, help="columns of B and C (default: 4096)")
    p.add_argument("--k", type=int, default=4096, help="the reduction length (default: 4096)")
    p.add_argument(
        "--dtype",
        choices=list(f.DTYPE_BYTES),
        default="fp16",
        help="element type of A, B and C (default: fp16)",
    )
    p.add_argument(
        "--machine",
        choices=list(f.MACHINES),
        default="h100",
        help="machine model (default: h100, the lecture's 1000 TFLOPS and 3 TB/s)",
    )
    p.add_argument(
        "--sweep", action="store_true", help="print the ledger for a fixed set of shapes instead"
    )
    tile = p.add_argument_group("tile config")
    tile.add_argument("--block-m", type=int, default=128, help="tile rows (default: 128)")
    tile.add_argument("--block-n", type=int, default=128, help="tile columns (default: 128)")
    tile.add_argument("--block-k", type=int, default=32, help="tile depth along K (default: 32)")
    tile.add_argument(
        "--stages", type=int, default=3, help="pipeline stages held in shared memory (default: 3)"
    )
    tile.add_argument(
        "--threads", type=int, default=128, help="threads per block (default: 128, i.e. 4 warps)"
    )
    return p


def machine_line(machine: f.Machine) -> str:
    return (
        f"Machine: {machine.name}  peak {machine.peak_tflops:.1f} TFLOPS  bandwidth {machine.mem_bw_tbs} TB/s"
        f"  balance {machine.balance:.2f} FLOP/B"
    )


def gemm_report(m: int, n: int, k: int, dtype: str, machine: f.Machine) -> str:
    b = f.DTYPE_BYTES[dtype]
    time_s = f.roofline_time_s(m, n, k, b, machine)
    return _fields(
        f"GEMM {m} x {n} x {k}, {dtype} ({b} bytes per element)",
        [
            ("work", decimal(f.gemm_flops(m, n, k), "FLOP")),
            ("minimum DRAM traffic", binary_bytes(f.min_bytes(m, n, k, b))),
            ("arithmetic intensity", f"{f.arithmetic_intensity(m, n, k, b):.2f} FLOP/B"),
            ("machine balance", f"{machine.balance:.2f} FLOP/B"),
            ("verdict", f.bound(m, n, k, b, machine)),
            (
                "roofline time",
                f"{time_s * 1e6:.2f} us ({f.roofline_tflops(m, n, k, b, machine):.1f} TFLOPS at best)",
            ),
        ],
    )


def tile_report(block_m, block_n, block_k, stages, threads, dtype_bytes, machine: f.Machine) -> str:
    stage = f.smem_per_stage_bytes(block_m, block_n, block_k, dtype_bytes)
    total = f.smem_bytes(block_m, block_n, block_k, dtype_bytes, stages)
    regs = f.accumulator_regs_per_thread(block_m, block_n, threads)
    text = _fields(
        f"Tile {block_m} x {block_n} x {block_k}, {stages} stages, {threads} threads",
        [
            ("shared memory, one stage", binary_bytes(stage)),
            (f"shared memory, {stages} stages", binary_bytes(total)),
            ("accumulator registers per thread", f"{regs:g}"),
            (
                "blocks per SM allowed by shared memory",
                str(f.blocks_limited_by_smem(total, machine)),
            ),
        ],
    )
    notes = []
    if total > machine.max_smem_per_block_bytes:
        cap = binary_bytes(machine.max_smem_per_block_bytes)
        notes.append(f"does not launch: a block may use at most {cap} of shared memory")
    if regs > machine.max_regs_per_thread:
        notes.append(
            f"the accumulator alone exceeds {machine.max_regs_per_thread} registers per thread: "
            "expect spills, or use more threads"
        )
    return "\n".join([text] + [f"  warning: {note}" for note in notes])


def sweep_table(shapes, dtype_bytes: int, machine: f.Machine) -> str:
    rows = [
        [
            shape_label(m, n, k),
            decimal(f.gemm_flops(m, n, k), "FLOP"),
            binary_bytes(f.min_bytes(m, n, k, dtype_bytes)),
            f"{f.arithmetic_intensity(m, n, k, dtype_bytes):.2f}",
            f.bound(m, n, k, dtype_bytes, machine),
        ]
        for m, n, k in shapes
    ]
    return format_table(["shape", "work", "min traffic", "FLOP/B", "verdict"], rows)


def shape_label(m: int, n: int, k: int) -> str:
    return f"{m}^3" if m == n == k else f"{m}x{n}x{k}"


def _fields(title: str, pairs) -> str:
    width = max(len(name) for name, _ in pairs)
    return "\n".join([title] + [f"  {name:<{width}}  {value}" for name, value in pairs])


# --- text helpers shared by the lesson CLIs ---------------------------------------------------


def decimal(value: float, unit: str) -> str:
    """4 significant digits with an SI prefix: 137438953472 FLOP -> '137.4 GFLOP'."""
    for prefix, scale in (("P", 1e15), ("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(value) >= scale:
            return f"{value / scale:.4g} {prefix}{unit}"
    return f"{value:.4g} {unit}"


def binary_bytes(value: float) -> str:
    """4 significant digits with a binary prefix: 100663296 -> '96 MiB'."""
    for prefix, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if abs(value) >= scale:
            return f"{value / scale:.4g} {prefix}"
    return f"{value:.4g} B"


def format_table(headers, rows) -> str:
    """Plain aligned text: numbers right-aligned, labels (and the first column) left-aligned."""
    cells = [[str(c) for c in row] for row in [headers, *rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    left = [i == 0 or any(row[i][:1].isalpha() for row in cells[1:]) for i in range(len(headers))]

    def line(row):
        return "  ".join(
            c.ljust(w) if left[i] else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths))
        ).rstrip()

    rule = "  ".join("-" * w for w in widths)
    return "\n".join([line(cells[0]), rule] + [line(row) for row in cells[1:]])


if __name__ == "__main__":
    raise SystemExit(main())
