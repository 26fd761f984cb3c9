"""Every back-of-the-envelope formula of the kit, in one place.

The GEMM ledger, the tiling and occupancy lessons, the benchmark's roofline
columns and the compile gate's occupancy line all import from here, so a number
printed by one of them can always be traced to exactly one function. Everything is pure Python arithmetic except
``tiled_matmul_counting``, which runs a real (slow, CPU) tiled product with torch
to show that the load-count formula is not just algebra.

Units: FLOP and bytes are plain counts, TFLOPS and TB/s are decimal (1e12),
shared memory sizes are bytes (KiB = 1024 bytes).
"""

import dataclasses
import math

WARP_SIZE = 32
REG_ALLOC_UNIT_PER_WARP = 256  # registers are handed to a warp in chunks of this size
DTYPE_BYTES = {"fp32": 4, "fp16": 2, "bf16": 2, "fp8": 1}
KIB = 1024


@dataclasses.dataclass(frozen=True)
class Machine:
    """The handful of numbers a roofline and an occupancy estimate need."""

    name: str
    peak_tflops: float  # dense fp16 tensor-core peak
    mem_bw_tbs: float  # DRAM bandwidth, 1e12 bytes/s
    n_sm: int
    smem_per_sm_bytes: int
    max_smem_per_block_bytes: int
    regs_per_sm: int
    max_regs_per_thread: int
    max_warps_per_sm: int
    max_blocks_per_sm: int
    l2_bytes: int
    mem_latency_ns: float  # an assumed round number, not a measurement
    # Read from recorded kernels, not datasheets (docs/perf-notes.md, "Why 64x64x64 reaches about
    # 0.4x"): the rate at which L2 and shared memory fed tiles into the SMs, the same 7.8-9.0 TB/s
    # whatever the tile, and the best rate torch.mm reached at 2048-8192, on ``recorded_on``.
    tile_feed_tbs: float
    practical_tflops: float
    max_threads_per_block: int = 1024
    recorded_on: str = "H200"  # the card those two readings were taken on

    @property
    def card(self) -> str:
        """The card's name without the figures' source: "H100 SXM", "H200"."""
        return self.name.split(" (")[0]

    @property
    def balance(self) -> float:
        """FLOP per DRAM byte at which compute and memory take equally long."""
        return self.peak_tflops / self.mem_bw_tbs


# The preliminary Hopper figures the GEMM ledger material is built on.
H100_SXM = Machine(
    name="H100 SXM",
    peak_tflops=1000.0,
    mem_bw_tbs=3.0,
    n_sm=132,
    smem_per_sm_bytes=228 * KIB,
    max_smem_per_block_bytes=227 * KIB,
    regs_per_sm=65536,
    max_regs_per_thread=255,
    max_warps_per_sm=64,
    max_blocks_per_sm=32,
    l2_bytes=50 * 1024 * KIB,
    mem_latency_ns=500.0,
    tile_feed_tbs=8.9,
    practical_tflops=720.0,
)
# The shipping datasheet (989 TFLOPS, 3.35 TB/s): what a real H100 SXM should be compared with,
# and the bandwidth the latency-hiding lesson uses. Its readings are the H100's own
# (benchmarks/baselines/*-h100.csv): 128x128x64 tiles (64 FLOP per byte) at 495 and 516 TFLOPS
# at 4096 and 8192, a tile feed of 7.7-8.1 TB/s; torch.mm's best at 2048-8192, 708 TFLOPS.
H100_SXM_DATASHEET = dataclasses.replace(
    H100_SXM,
    name="H100 SXM (datasheet)",
    peak_tflops=989.0,
    mem_bw_tbs=3.35,
    tile_feed_tbs=7.9,
    practical_tflops=708.0,
    recorded_on="H100 SXM",
)
# Same SM as the H100; the memory (HBM3e) is faster, and the H200 the kit ran on reported
# 60 MB of L2 (docs/perf-notes.md).
H200 = dataclasses.replace(
    H100_SXM, name="H200", peak_tflops=989.0, mem_bw_tbs=4.8, l2_bytes=60 * 1024 * KIB
)

MACHINES = {"h100": H100_SXM, "h100-datasheet": H100_SXM_DATASHEET, "h200": H200}


def machine_for_gpu_name(name: str) -> Machine | None:
    """The model of a real GPU from its device name (e.g. "NVIDIA H200"), or None if unknown.

    H100 PCIe and NVL boards have fewer SMs and slower memory than the SXM model, so
    they get None rather than wrong numbers.
    """
    upper = name.upper()
    if "H200" in upper:
        return H200
    if "H100" in upper and "PCIE" not in upper and "NVL" not in upper:
        return H100_SXM_DATASHEET
    return None


# --- roofline -----------------------------------------------------------------------------


def gemm_flops(m: int, n: int, k: int) -> int:
    """One multiply and one add for each of the m*n*k products."""
    return 2 * m * n * k


def min_bytes(m: int, n: int, k: int, dtype_bytes: int, out_bytes: int | None = None) -> int:
    """DRAM traffic if A and B are read once and C written once: a lower bound for any kernel."""
    out_bytes = dtype_bytes if out_bytes is None else out_bytes
    return (m * k + k * n) * dtype_bytes + m * n * out_bytes


def arithmetic_intensity(m: int, n: int, k: int, dtype_bytes: int) -> float:
    """FLOP per byte of minimum traffic; compared with the machine balance it picks the bound."""
    return gemm_flops(m, n, k) / min_bytes(m, n, k, dtype_bytes)


def bound(m: int, n: int, k: int, dtype_bytes: int, machine: Machine) -> str:
    """Which roof a perfect kernel hits first."""
    if arithmetic_intensity(m, n, k, dtype_bytes) >= machine.balance:
        return "compute-bound"
    return "memory-bound"


def roofline_time_s(m: int, n: int, k: int, dtype_bytes: int, machine: Machine) -> float:
    """The fastest possible time: the slower of doing the math and moving the minimum bytes."""
    compute_s = gemm_flops(m, n, k) / (machine.peak_tflops * 1e12)
    memory_s = min_bytes(m, n, k, dtype_bytes) / (machine.mem_bw_tbs * 1e12)
    return max(compute_s, memory_s)


def roofline_tflops(m: int, n: int, k: int, dtype_bytes: int, machine: Machine) -> float:
    """The best rate the roofline allows for this shape; a measured rate can be judged against it."""
    return gemm_flops(m, n, k) / roofline_time_s(m, n, k, dtype_bytes, machine) / 1e12


def bandwidth_roof_tflops(flops: int, traffic_bytes: float, machine: Machine) -> float:
    """The best rate a kernel that moves ``traffic_bytes`` through DRAM can reach."""
    return flops / (traffic_bytes / (machine.mem_bw_tbs * 1e12)) / 1e12


# --- tile footprint -----------------------------------------------------------------------


def smem_per_stage_bytes(block_m: int, block_n: int, block_k: int, dtype_bytes: int) -> int:
    """One A tile (block_m x block_k) and one B tile (block_k x block_n) staged on chip."""
    return dtype_bytes * (block_m * block_k + block_k * block_n)


def smem_bytes(block_m: int, block_n: int, block_k: int, dtype_bytes: int, stages: int) -> int:
    """Pipelining keeps `stages` pairs of tiles in flight, so shared memory grows with it."""
    return stages * smem_per_stage_bytes(block_m, block_n, block_k, dtype_bytes)


def accumulator_regs_per_thread(
    block_m: int, block_n: int, threads: int, accum_bytes: int = 4
) -> float:
    """32-bit registers each thread needs just to hold its share of the C tile (a lower bound)."""
    return block_m * block_n * (accum_bytes / 4) / threads


def blocks_limited_by_smem(smem_bytes: int, machine: Machine) -> int:
    """How many blocks shared memory lets one SM hold (0: the block cannot launch at all)."""
    if smem_bytes > machine.max_smem_per_block_bytes:
        return 0
    if smem_bytes == 0:
        return machine.max_blocks_per_sm
    return machine.smem_per_sm_bytes // smem_bytes


# --- tiles and waves ----------------------------------------------------------------------


def cdiv(a: int, b: int) -> int:
    """Ceiling division: how many size-b pieces cover a."""
    return -(-a // b)


def tile_count(m: int, n: int, block_m: int, block_n: int) -> int:
    """Output tiles, i.e. programs launched, for an m x n result (partial tiles count)."""
    return cdiv(m, block_m) * cdiv(n, block_n)


def waves(n_blocks: int, blocks_per_sm: int, n_sm: int) -> tuple[int, float, float]:
    """(waves, share of SMs busy in the last wave, share busy overall).

    The GPU runs at most n_sm * blocks_per_sm blocks at once; a launch a little larger
    than a multiple of that leaves most SMs idle in its last wave.
    """
    per_wave = n_sm * blocks_per_sm
    num_waves = cdiv(n_blocks, per_wave)
    last = (n_blocks - (num_waves - 1) * per_wave) / per_wave
    return num_waves, last, n_blocks / (num_waves * per_wave)


def tile_efficiency(n: int, t: int) -> float:
    """Useful share of the work when an n x n output is padded up to whole t x t tiles."""
    return (n / (cdiv(n, t) * t)) ** 2


def tile_intensity(tm: int, tn: int, dtype_bytes: int = 2) -> float:
    """FLOP per byte a tm x tn output tile gets from each k-slice it loads: tm*tn/(tm+tn) at 2 bytes."""
    return 2 * tm * tn / ((tm + tn) * dtype_bytes)


def tile_feed_roof_tflops(tm: int, tn: int, machine: Machine, dtype_bytes: int = 2) -> float:
    """The rate tiles of tm x tn allow when the SMs are fed at the machine's tile feed rate."""
    return tile_intensity(tm, tn, dtype_bytes) * machine.tile_feed_tbs


def last_tile(length: int, t: int) -> int:
    """Elements the last of the cdiv(length, t) tiles holds: t when the tiles divide length,
    else the partial tail (3000 in tiles of 128: 23 whole ones and a last one holding 56)."""
    return length - (cdiv(length, t) - 1) * t


# --- row alignment: the ragged cliff ------------------------------------------------------

VECTOR_BYTES = 16  # the widest load one thread issues (cp.async, ld.global.v4) and TMA's row unit
TRITON_DIVISIBILITY = 16  # Triton marks an integer argument when it is a multiple of this


def row_bytes(length: int, dtype_bytes: int) -> int:
    """Bytes in one row of ``length`` elements: how far apart the rows of a contiguous matrix start."""
    return length * dtype_bytes


def rows_whole_vectors(length: int, dtype_bytes: int) -> bool:
    """Whether each row is a whole number of 16-byte units, so that every row starts on a 16-byte
    boundary when the first does: what 16-byte loads and TMA need of the memory. 3000 fp16
    elements are 6000 bytes, 375 units: yes; 3001 are 6002 bytes: only every eighth row does."""
    return row_bytes(length, dtype_bytes) % VECTOR_BYTES == 0


def divisibility_marked(length: int) -> bool:
    """Whether Triton can know the rows are aligned when ``length`` (a row stride, or the size a
    mask compares with) reaches a kernel as a run-time integer. It specialises an integer argument
    only on "divisible by 16", counted in elements, so 3000 (16 * 187 + 8) gets no mark although
    its fp16 rows are whole 16-byte units (docs/perf-notes.md, "The ragged cliff")."""
    return length % TRITON_DIVISIBILITY == 0


def ragged(n: int, k: int) -> bool:
    """The ragged cliff's condition: K or N, the row lengths of A and B, is unmarked. A ragged M
    costs nothing, since its mask only drops whole rows."""
    return not (divisibility_marked(n) and divisibility_marked(k))


# --- re-reads, L2 and HBM traffic ---------------------------------------------------------


def re_reads(m: int, n: int, block_m: int, block_n: int) -> tuple[int, int]:
    """(times A is read, times B is read): once per column of tiles, once per row of tiles."""
    return cdiv(n, block_n), cdiv(m, block_m)


def l2_request_bytes(m: int, n: int, k: int, block_m: int, block_n: int, dtype_bytes: int) -> int:
    """Bytes the tiles ask of L2: every program loads its whole A row panel and B column panel,
    and C is written once."""
    a_reads, b_reads = re_reads(m, n, block_m, block_n)
    return (m * k * a_reads + k * n * b_reads + m * n) * dtype_bytes


def wave_footprint_bytes(
    m: int, n: int, k: int, block_m: int, block_n: int, dtype_bytes: int, per_wave: int
) -> int:
    """A and B panels one wave of ``per_wave`` programs touches, launched row-major over the
    tile grid: a run of whole tile rows (one more when it starts mid-row) and up to every column."""
    rows, cols = cdiv(m, block_m), cdiv(n, block_n)
    wave_rows = min(rows, cdiv(per_wave, cols) + (per_wave % cols != 0))
    return (wave_rows * block_m + min(per_wave, cols) * block_n) * k * dtype_bytes


def hbm_bytes_estimate(
    m: int,
    n: int,
    k: int,
    block_m: int,
    block_n: int,
    dtype_bytes: int,
    per_wave: int,
    machine: Machine,
) -> int:
    """DRAM traffic if L2 keeps one wave's panels and nothing longer: each wave reads its
    footprint once. When a wave's panels do not fit in L2, every tile load goes to DRAM.
    Never below ``min_bytes``: an estimate for a row-major launch, not a measurement."""
    footprint = wave_footprint_bytes(m, n, k, block_m, block_n, dtype_bytes, per_wave)
    requested = l2_request_bytes(m, n, k, block_m, block_n, dtype_bytes)
    if footprint > machine.l2_bytes:
        return requested
    num_waves = cdiv(tile_count(m, n, block_m, block_n), per_wave)
    estimate = min(requested, num_waves * footprint + m * n * dtype_bytes)
    return max(estimate, min_bytes(m, n, k, dtype_bytes))


# --- occupancy and latency ----------------------------------------------------------------


def occupancy(
    threads_per_block: int, regs_per_thread: int, smem_per_block: int, machine: Machine
) -> dict:
    """Resident blocks and warps per SM, and which resource runs out first.

    A resident block holds its registers and shared memory until it ends, so each
    resource caps the blocks per SM on its own; the smallest cap wins. Registers are
    given to warps in chunks of 256, i.e. per-thread counts round up to a multiple of 8.
    Returns blocks_per_sm, active_warps, occupancy (0..1), limiter and limits
    (the per-resource caps; "shared_mem" only when the block uses shared memory).
    """
    warps_per_block = cdiv(threads_per_block, WARP_SIZE)
    if (
        threads_per_block > machine.max_threads_per_block
        or regs_per_thread > machine.max_regs_per_thread
        or smem_per_block > machine.max_smem_per_block_bytes
    ):
        limits = {}
        if smem_per_block:
            limits["shared_mem"] = 0
        return {
            "blocks_per_sm": 0,
            "active_warps": 0,
            "occupancy": 0.0,
            "limiter": "cannot launch",
            "limits": limits,
        }

    regs_per_warp = (
        cdiv(regs_per_thread * WARP_SIZE, REG_ALLOC_UNIT_PER_WARP) * REG_ALLOC_UNIT_PER_WARP
    )
    limits = {
        "blocks": machine.max_blocks_per_sm,
        "warps": machine.max_warps_per_sm // warps_per_block,
        "registers": (machine.regs_per_sm // max(regs_per_warp, 1)) // warps_per_block,
    }
    if smem_per_block:
        limits["shared_mem"] = blocks_limited_by_smem(smem_per_block, machine)
    limiter = min(limits, key=limits.get)  # ties go to the first key: blocks, warps, registers
    blocks = limits[limiter]
    active = blocks * warps_per_block
    return {
        "blocks_per_sm": blocks,
        "active_warps": active,
        "occupancy": active / machine.max_warps_per_sm,
        "limiter": limiter,
        "limits": limits,
    }


def occupancy_estimate(
    block_m: int,
    block_n: int,
    block_k: int,
    num_warps: int,
    num_stages: int,
    dtype_bytes: int,
    machine: Machine,
) -> dict:
    """``occupancy`` from a launch's tiles, warps and stages, when no cubin is at hand.

    Shared memory is the stages' tiles and registers are only the accumulator's lower bound,
    so this is an upper estimate when registers are what limits.
    """
    threads = num_warps * WARP_SIZE
    regs = math.ceil(accumulator_regs_per_thread(block_m, block_n, threads))
    smem = smem_bytes(block_m, block_n, block_k, dtype_bytes, num_stages)
    return occupancy(threads, regs, smem, machine)


def bytes_in_flight_needed(machine: Machine) -> float:
    """Little's law for one SM: its share of DRAM bandwidth times the memory latency."""
    return machine.mem_bw_tbs * 1e12 / machine.n_sm * machine.mem_latency_ns * 1e-9


def latency_hiding(
    warps: int, bytes_per_request: int, requests_in_flight: int, machine: Machine
) -> tuple[float, float, int]:
    """(share of bandwidth reached, bytes needed in flight, bytes actually in flight) for one SM.

    Bandwidth is only reached when enough loads are outstanding to cover the latency;
    more warps (TLP) or more loads per warp (ILP, wider loads) both add to it.
    """
    needed = bytes_in_flight_needed(machine)
    in_flight = warps * bytes_per_request * requests_in_flight
    return min(1.0, in_flight / needed), needed, in_flight


# --- tiling lesson ------------------------------------------------------------------------


def naive_loads(n: int) -> int:
    """Elements read when every C[i, j] fetches a full row of A and column of B from DRAM."""
    return 2 * n**3


def tiled_loads(n: int, t: int) -> int:
    """Elements read when t x t tiles are staged on chip: each element is reused t times."""
    return 2 * n**3 // t


def tiled_matmul_counting(a, b, t: int):
    """Multiply with t x t tiles on the CPU and count the elements each tile pair "loads".

    Every dimension must be a multiple of t, to keep the count exact and the code short.
    Returns (c, loads); loads equals 2*m*n*k/t.
    """
    import torch

    m, k = a.shape
    n = b.shape[1]
    if m % t or n % t or k % t:
        raise ValueError(f"every dimension must be a multiple of the tile size {t}")
    c = torch.empty(m, n, dtype=a.dtype)
    loads = 0
    for i in range(0, m, t):
        for j in range(0, n, t):
            acc = torch.zeros(t, t, dtype=a.dtype)  # stays on chip
            for p in range(0, k, t):
                a_tile, b_tile = a[i : i + t, p : p + t], b[p : p + t, j : j + t]
                loads += a_tile.numel() + b_tile.numel()
                acc += a_tile @ b_tile
            c[i : i + t, j : j + t] = acc
    return c, loads


def largest_tile(smem_bytes: int, dtype_bytes: int) -> int:
    """Largest t for which two t x t tiles (one of A, one of B) fit in smem_bytes."""
    return math.isqrt(smem_bytes // (2 * dtype_bytes))
