"""Lesson: occupancy, latency hiding and wave quantization, from formulas alone.

Run ``python -m benchmarks.lessons.occupancy`` for the three tables, or pass ``--threads``
(with ``--regs`` and ``--smem``) to check one kernel config. The SM limits are an
H100's; the latency part uses the datasheet bandwidth (3.35 TB/s) and an assumed
500 ns DRAM latency.
"""

import argparse

from benchmarks.lessons.ledger import binary_bytes, decimal, format_table
from ledger import formulas as f

KIB = f.KIB
# (threads per block, registers per thread, shared memory per block, what it shows)
CONFIGS = [
    (256, 32, 0, "light elementwise kernel"),
    (256, 64, 0, "64 registers per thread"),
    (256, 128, 0, "128 registers per thread"),
    (256, 255, 0, "255 registers (the cap)"),
    (128, 32, 48 * KIB, "48 KiB shared per block"),
    (128, 64, 100 * KIB, "100 KiB shared (big GEMM tile)"),
    (1024, 32, 0, "1024 threads per block"),
    (1024, 64, 0, "1024 threads, 64 registers"),
    (64, 32, 0, "64 threads per block"),
    (32, 32, 0, "32 threads per block"),
    (256, 32, 230 * KIB, "230 KiB shared (over the cap)"),
]
WARP_COUNTS = (8, 16, 32, 48, 64)
# (bytes one warp-wide load moves, loads each warp keeps in flight)
REQUESTS = ((128, 1), (128, 2), (512, 1), (512, 2))
BLOCK_COUNTS = (66, 132, 133, 264, 265, 1000, 10000)
OUTPUTS = ((4096, 4096), (2048, 2048), (1024, 4096), (512, 1024))
TILES = ((64, 64), (128, 128), (128, 256), (256, 256))


def main(argv=None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    machine = f.MACHINES[args.machine]
    if args.threads is None:
        if args.regs is not None or args.smem is not None:
            parser.error("--regs and --smem describe one config: give --threads too")
    else:
        config = (
            args.threads,
            32 if args.regs is None else args.regs,
            args.smem or 0,
            "your config",
        )
        print(occupancy_table([config], machine))
        return 0
    print(occupancy_section(machine))
    print()
    print(latency_section(machine))
    print()
    print(waves_section(machine))
    return 0


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m benchmarks.lessons.occupancy",
        description="Occupancy lesson: which resource caps the blocks per SM, how many bytes must be in "
        "flight to reach full bandwidth (Little's law), and how wave quantization idles SMs. "
        "With --threads, only the occupancy of that one config is printed.",
    )
    p.add_argument(
        "--machine",
        choices=list(f.MACHINES),
        default="h100-datasheet",
        help="machine model (default: h100-datasheet, 3.35 TB/s; all models share the H100 SM limits)",
    )
    one = p.add_argument_group("one config")
    one.add_argument("--threads", type=int, help="threads per block")
    one.add_argument("--regs", type=int, help="registers per thread (default: 32)")
    one.add_argument(
        "--smem",
        type=parse_bytes,
        help="shared memory per block, e.g. 49152, 48K or 48KiB (default: 0)",
    )
    return p


def parse_bytes(text: str) -> int:
    """Bytes from '49152', '48K' or '48KiB'."""
    number = text.upper().removesuffix("IB").removesuffix("B")
    if number.endswith("K"):
        return int(float(number[:-1]) * KIB)
    return int(number)


def occupancy_table(configs, machine: f.Machine) -> str:
    rows = []
    for threads, regs, smem, note in configs:
        o = f.occupancy(threads, regs, smem, machine)
        caps = o["limits"]
        rows.append(
            [
                note,
                threads,
                regs,
                binary_bytes(smem) if smem else "0",
                caps.get("registers", "-"),
                caps.get("shared_mem", "-"),
                caps.get("warps", "-"),
                o["blocks_per_sm"],
                o["active_warps"],
                f"{o['occupancy']:.1%}",
                o["limiter"],
            ]
        )
    headers = [
        "config",
        "threads",
        "regs",
        "shared",
        "by regs",
        "by shared",
        "by warps",
        "blocks/SM",
        "warps",
        "occupancy",
        "limiter",
    ]
    return format_table(headers, rows)


def occupancy_section(machine: f.Machine) -> str:
    return "\n".join(
        [
            f"1. Occupancy: resident warps per SM out of {machine.max_warps_per_sm} ({machine.name}: "
            f"{machine.max_blocks_per_sm} blocks, {machine.regs_per_sm:,} registers, "
            f"{binary_bytes(machine.smem_per_sm_bytes)} shared per SM)",
            occupancy_table(CONFIGS, machine),
            "The 'by ...' columns are the blocks per SM each resource allows; the smallest wins.",
            "Registers bind first most often: 64 per thread halve occupancy, 128 quarter it. GEMM and",
            "attention kernels keep their accumulators there, so they usually run at low occupancy.",
            "Tiny blocks hit the blocks-per-SM cap: 32-thread blocks can never fill more than half the warps.",
            f"Above {binary_bytes(machine.max_smem_per_block_bytes)} of shared memory per block, "
            "the kernel does not launch.",
        ]
    )


def latency_section(machine: f.Machine) -> str:
    needed = f.bytes_in_flight_needed(machine)
    per_sm = machine.mem_bw_tbs * 1e12 / machine.n_sm
    rows = []
    for warps in WARP_COUNTS:
        row = [warps, f"{warps / machine.max_warps_per_sm:.0%}"]
        for bytes_per_request, in_flight in REQUESTS:
            row.append(f"{f.latency_hiding(warps, bytes_per_request, in_flight, machine)[0]:.0%}")
        rows.append(row)
    headers = ["warps", "occupancy"] + [
        f"{size // f.WARP_SIZE} B/thread x{n}" for size, n in REQUESTS
    ]
    return "\n".join(
        [
            "2. Latency hiding (Little's law on one SM): share of DRAM bandwidth reached",
            f"   bytes in flight needed = {decimal(per_sm, 'B/s')} per SM x {machine.mem_latency_ns:.0f} ns"
            f" = {needed / 1e3:.1f} kB  ({machine.name}, {machine.mem_bw_tbs} TB/s / {machine.n_sm} SMs)",
            format_table(headers, rows),
            "'x1'/'x2': loads each warp keeps in flight. A warp load moves 128 B at 4 B per thread, 512 B at 16 B.",
            "With scalar loads and one request per warp, even 64 warps (100% occupancy) reach only about two",
            "thirds of the bandwidth. Vector loads and several independent loads per warp (ILP) fix that:",
            "with both, 16 warps suffice. Occupancy is one way to hide latency, not the goal (Volkov, GTC 2010).",
            "The 500 ns latency is an assumption; the trend holds whatever the exact value.",
        ]
    )


def waves_section(machine: f.Machine) -> str:
    n_sm = machine.n_sm
    rows = []
    for blocks in BLOCK_COUNTS:
        count, last, overall = f.waves(blocks, 1, n_sm)
        rows.append([blocks, count, f"{last:.0%}", f"{overall:.1%}"])
    launches = format_table(["blocks", "waves", "last wave busy", "overall busy"], rows)
    rows = []
    for m, n in OUTPUTS:
        for tm, tn in TILES:
            tiles = f.tile_count(m, n, tm, tn)
            count, _, overall = f.waves(tiles, 1, n_sm)
            rows.append(
                [
                    f"{m}x{n}",
                    f"{tm}x{tn}",
                    tiles,
                    count,
                    f"{overall:.0%}",
                    f"{f.tile_intensity(tm, tn):.0f}",
                ]
            )
    gemm = format_table(
        ["output C", "tile", "tiles", "waves", "SMs busy", "tile FLOP/B (bf16)"], rows
    )
    return "\n".join(
        [
            f"3. Wave quantization on {n_sm} SMs, one block per SM",
            launches,
            "",
            "Tiled matmul: one block per tm x tn output tile",
            gemm,
            "133 blocks take two waves and the second runs one block: about half the GPU idles overall.",
            "Large outputs can afford large tiles (higher intensity, still many waves). A 512x1024 output",
            "in 256x256 tiles is 8 blocks on 132 SMs (6% busy): use smaller tiles or split K instead.",
            "Skinny GEMMs such as LLM decode (M = batch size) have exactly this problem.",
        ]
    )


if __name__ == "__main__":
    raise SystemExit(main())
