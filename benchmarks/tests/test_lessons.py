"""Pins the course materials' published numbers, both in the formulas and in the CLIs' output.

The lessons and the ledger are run as students run them (``python -m ...`` from the
repo root) and their text is parsed, so a formatting change that loses a number fails
here as surely as a wrong formula.
"""

import pathlib
import re
import subprocess
import sys

import pytest
import torch

from benchmarks.lessons.ledger import binary_bytes, decimal
from benchmarks.lessons.occupancy import parse_bytes
from ledger import formulas as f

ROOT = pathlib.Path(__file__).resolve().parents[2]
KIB = 1024

# shape -> (work, minimum traffic, intensity, verdict), from the ledger material's sweep table
SWEEP = {
    (4096, 4096, 4096): ("137.4 GFLOP", "96 MiB", "1365.33", "compute-bound"),
    (512, 512, 512): ("268.4 MFLOP", "1.5 MiB", "170.67", "memory-bound"),
    (128, 128, 128): ("4.194 MFLOP", "96 KiB", "42.67", "memory-bound"),
    (256, 256, 16384): ("2.147 GFLOP", "16.12 MiB", "127.01", "memory-bound"),
    (8192, 8192, 8192): ("1.1 TFLOP", "384 MiB", "2730.67", "compute-bound"),
}
QUANTIZATION = {
    1024: "100.0%",
    1025: "79.2%",
    1088: "89.2%",
    1152: "100.0%",
    1153: "81.1%",
    4096: "100.0%",
    4097: "94.1%",
}
# (threads, regs, shared) -> (blocks per SM, occupancy, limiter), from the occupancy lecture
OCCUPANCY = {
    (256, 32, 0): (8, "100.0%", "warps"),
    (256, 64, 0): (4, "50.0%", "registers"),
    (256, 128, 0): (2, "25.0%", "registers"),
    (256, 255, 0): (1, "12.5%", "registers"),
    (128, 32, 48 * KIB): (4, "25.0%", "shared_mem"),
    (128, 64, 100 * KIB): (2, "12.5%", "shared_mem"),
    (1024, 32, 0): (2, "100.0%", "warps"),
    (1024, 64, 0): (1, "50.0%", "registers"),
    (64, 32, 0): (32, "100.0%", "blocks"),
    (32, 32, 0): (32, "50.0%", "blocks"),
    (256, 32, 230 * KIB): (0, "0.0%", "cannot launch"),
}
# blocks -> (waves, last wave busy, overall busy) on 132 SMs, one block each
WAVES = {
    66: (1, "50%", "50.0%"),
    132: (1, "100%", "100.0%"),
    133: (2, "1%", "50.4%"),
    264: (2, "100%", "100.0%"),
    265: (3, "1%", "66.9%"),
    1000: (8, "58%", "94.7%"),
    10000: (76, "76%", "99.7%"),
}


def run_cli(module, *args):
    done = subprocess.run(
        [sys.executable, "-m", module, *args], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def field(text, name):
    """The value of a 'name   value' line of the ledger's report."""
    match = re.search(rf"^\s+{re.escape(name)}\s{{2,}}(.+)$", text, re.MULTILINE)
    assert match, f"no line for {name!r} in:\n{text}"
    return match.group(1).strip()


def table_rows(text, first_cell):
    """Cells of the table rows whose first cell is first_cell (columns are 2+ spaces apart)."""
    rows = [re.split(r"\s{2,}", line.strip()) for line in text.splitlines()]
    return [row for row in rows if row[0] == first_cell]


@pytest.fixture(scope="module")
def ledger_default():
    return run_cli("benchmarks.lessons.ledger")


@pytest.fixture(scope="module")
def ledger_sweep():
    return run_cli("benchmarks.lessons.ledger", "--sweep")


@pytest.fixture(scope="module")
def tiling_output():
    return run_cli("benchmarks.lessons.tiling")


@pytest.fixture(scope="module")
def occupancy_output():
    return run_cli("benchmarks.lessons.occupancy")


# --- machines ---------------------------------------------------------------------------------


def test_machine_balance():
    assert f"{f.H100_SXM.balance:.2f}" == "333.33"
    assert f.H200.peak_tflops == 989.0 and f.H200.mem_bw_tbs == 4.8 and f.H200.n_sm == 132
    assert set(f.MACHINES) >= {"h100", "h200"}


@pytest.mark.parametrize(
    "name, expected",
    [
        ("NVIDIA H200", f.H200),
        ("NVIDIA H100 80GB HBM3", f.H100_SXM_DATASHEET),
        ("NVIDIA H100 PCIe", None),
        ("Tesla T4", None),
    ],
)
def test_machine_for_gpu_name(name, expected):
    assert f.machine_for_gpu_name(name) is expected


# --- the GEMM ledger --------------------------------------------------------------------------


@pytest.mark.parametrize("shape", SWEEP, ids=lambda s: "x".join(map(str, s)))
def test_ledger_formulas(shape):
    work, traffic, intensity, verdict = SWEEP[shape]
    assert decimal(f.gemm_flops(*shape), "FLOP") == work
    assert binary_bytes(f.min_bytes(*shape, 2)) == traffic
    assert f"{f.arithmetic_intensity(*shape, 2):.2f}" == intensity
    assert f.bound(*shape, 2, f.H100_SXM) == verdict


def test_ledger_exact_counts():
    assert f.gemm_flops(4096, 4096, 4096) == 137_438_953_472
    assert f.min_bytes(4096, 4096, 4096, 2) == 96 * 2**20
    assert f.min_bytes(4096, 4096, 4096, 2, out_bytes=4) == 128 * 2**20


def test_roofline():
    assert f.roofline_time_s(4096, 4096, 4096, 2, f.H100_SXM) == pytest.approx(137.438953472e-6)
    assert f.roofline_time_s(512, 512, 512, 2, f.H100_SXM) == pytest.approx(1572864 / 3e12)
    assert f.roofline_tflops(4096, 4096, 4096, 2, f.H100_SXM) == pytest.approx(1000.0)
    assert f.roofline_tflops(512, 512, 512, 2, f.H100_SXM) == pytest.approx(170.67 * 3, rel=1e-4)


def test_tile_footprint_formulas():
    assert f.smem_per_stage_bytes(128, 128, 32, 2) == 16 * KIB
    assert f.smem_bytes(128, 128, 32, 2, 3) == 48 * KIB
    assert f.accumulator_regs_per_thread(128, 128, 128) == 128
    assert f.blocks_limited_by_smem(48 * KIB, f.H100_SXM) == 4
    assert f.blocks_limited_by_smem(228 * KIB, f.H100_SXM) == 0  # over the 227 KiB per-block cap
    assert f.blocks_limited_by_smem(0, f.H100_SXM) == 32


def test_ledger_default_output(ledger_default):
    out = ledger_default
    assert "balance 333.33 FLOP/B" in out
    assert field(out, "work") == "137.4 GFLOP"
    assert field(out, "minimum DRAM traffic") == "96 MiB"
    assert field(out, "arithmetic intensity") == "1365.33 FLOP/B"
    assert field(out, "machine balance") == "333.33 FLOP/B"
    assert field(out, "verdict") == "compute-bound"
    assert field(out, "shared memory, one stage") == "16 KiB"
    assert field(out, "shared memory, 3 stages") == "48 KiB"
    assert field(out, "accumulator registers per thread") == "128"
    assert field(out, "blocks per SM allowed by shared memory") == "4"


@pytest.mark.parametrize("shape", SWEEP, ids=lambda s: "x".join(map(str, s)))
def test_ledger_sweep_output(ledger_sweep, shape):
    m, n, k = shape
    label = f"{m}^3" if m == n == k else f"{m}x{n}x{k}"
    assert table_rows(ledger_sweep, label) == [[label, *SWEEP[shape]]]


def test_ledger_flags_oversized_tile():
    out = run_cli(
        "benchmarks.lessons.ledger",
        "--block-m",
        "256",
        "--block-n",
        "128",
        "--block-k",
        "64",
        "--stages",
        "2",
    )
    assert field(out, "shared memory, 2 stages") == "96 KiB"
    assert field(out, "accumulator registers per thread") == "256"
    assert "warning: the accumulator alone exceeds 255 registers" in out


# --- the tiling lesson ------------------------------------------------------------------------


@pytest.mark.parametrize("t", [4, 8, 16])
def test_tiled_matmul_counts_and_matches(t):
    a, b = torch.randn(32, 48, dtype=torch.float64), torch.randn(48, 16, dtype=torch.float64)
    c, loads = f.tiled_matmul_counting(a, b, t)
    torch.testing.assert_close(c, a @ b)
    assert loads == 2 * 32 * 16 * 48 // t


def test_tiled_matmul_rejects_ragged():
    with pytest.raises(ValueError):
        f.tiled_matmul_counting(torch.zeros(10, 10), torch.zeros(10, 10), 4)


def test_tiling_formulas():
    assert f.naive_loads(256) == 33_554_432
    assert [f.tiled_loads(256, t) for t in (4, 16, 64)] == [8_388_608, 2_097_152, 524_288]
    # floor(sqrt(228 KiB / (2 * bytes))): two T x T tiles in one SM's shared memory
    assert f.largest_tile(228 * KIB, 4) == 170
    assert f.largest_tile(228 * KIB, 2) == 241
    assert 2 * 241**2 * 2 <= 228 * KIB < 2 * 242**2 * 2
    assert {n: f"{f.tile_efficiency(n, 128):.1%}" for n in QUANTIZATION} == QUANTIZATION


def test_tiling_output(tiling_output):
    out = tiling_output
    assert table_rows(out, "naive") == [["naive", "33,554,432", "2n^3", "0.25"]]
    for t, loads, intensity in (
        (4, "8,388,608", "1.00"),
        (16, "2,097,152", "4.00"),
        (64, "524,288", "16.00"),
    ):
        assert table_rows(out, f"tiled T={t}") == [[f"tiled T={t}", loads, f"2n^3/{t}", intensity]]
    assert table_rows(out, "FP32") == [["FP32", "4", "170"]]
    assert table_rows(out, "BF16") == [["BF16", "2", "241"]]
    assert table_rows(out, "FP16") == [["FP16", "2", "241"]]
    for n, share in QUANTIZATION.items():
        assert table_rows(out, str(n))[-1][-1] == share


# --- the occupancy lesson ---------------------------------------------------------------------


@pytest.mark.parametrize("config", OCCUPANCY, ids=lambda c: f"{c[0]}t-{c[1]}r-{c[2] // KIB}KiB")
def test_occupancy_formula(config):
    blocks, share, limiter = OCCUPANCY[config]
    o = f.occupancy(*config, f.H100_SXM)
    assert (o["blocks_per_sm"], f"{o['occupancy']:.1%}", o["limiter"]) == (blocks, share, limiter)
    assert o["active_warps"] == blocks * -(-config[0] // 32)


def test_occupancy_cannot_launch_past_hard_caps():
    assert f.occupancy(256, 256, 0, f.H100_SXM)["limiter"] == "cannot launch"
    assert f.occupancy(2048, 32, 0, f.H100_SXM)["limiter"] == "cannot launch"


def test_occupancy_output(occupancy_output):
    lines = occupancy_output.splitlines()
    for (threads, regs, smem), (blocks, share, limiter) in OCCUPANCY.items():
        shared = binary_bytes(smem) if smem else "0"
        hits = [
            line
            for line in lines
            if re.search(rf"\s{threads}\s+{regs}\s+{re.escape(shared)}\s", line)
        ]
        assert len(hits) == 1, (threads, regs, smem)
        cells = re.split(r"\s{2,}", hits[0].strip())
        assert cells[-4:-2] == [str(blocks), str(blocks * -(-threads // 32))]
        assert cells[-2:] == [share, limiter]


def test_occupancy_one_config():
    out = run_cli("benchmarks.lessons.occupancy", "--threads", "256", "--regs", "64")
    assert table_rows(out, "your config")[0][-2:] == ["50.0%", "registers"]


@pytest.mark.parametrize(
    "text, expected",
    [("49152", 49152), ("48K", 48 * KIB), ("48KiB", 48 * KIB), ("100kb", 100 * KIB)],
)
def test_parse_bytes(text, expected):
    assert parse_bytes(text) == expected


def test_latency_hiding_formula():
    machine = f.H100_SXM_DATASHEET
    share, needed, in_flight = f.latency_hiding(64, 128, 1, machine)
    assert needed == pytest.approx(3.35e12 / 132 * 500e-9)
    assert f"{needed / 1e3:.1f}" == "12.7"
    assert in_flight == 8192
    assert f"{share:.0%}" == "65%"
    assert f.latency_hiding(16, 512, 2, machine)[0] == 1.0


def test_latency_output(occupancy_output):
    assert "= 12.7 kB" in occupancy_output
    assert table_rows(occupancy_output, "64")[0] == ["64", "100%", "65%", "100%", "100%", "100%"]
    assert table_rows(occupancy_output, "16")[0] == ["16", "25%", "16%", "32%", "65%", "100%"]


@pytest.mark.parametrize("blocks", WAVES)
def test_waves(blocks, occupancy_output):
    count, last, overall = WAVES[blocks]
    w, share, o = f.waves(blocks, 1, 132)
    assert (w, f"{share:.0%}", f"{o:.1%}") == (count, last, overall)
    assert table_rows(occupancy_output, str(blocks))[0] == [str(blocks), str(count), last, overall]


def test_tiled_matmul_waves(occupancy_output):
    assert f.tile_count(512, 1024, 256, 256) == 8
    assert f"{f.waves(8, 1, 132)[2]:.0%}" == "6%"
    tiles = ((64, 64), (128, 128), (128, 256), (256, 256))
    assert [round(f.tile_intensity(tm, tn)) for tm, tn in tiles] == [32, 64, 85, 128]
    assert f.tile_efficiency(1024, 128) == 1.0
    assert table_rows(occupancy_output, "512x1024")[-1] == [
        "512x1024",
        "256x256",
        "8",
        "1",
        "6%",
        "128",
    ]
    assert table_rows(occupancy_output, "4096x4096")[0] == [
        "4096x4096",
        "64x64",
        "4096",
        "32",
        "97%",
        "32",
    ]
    assert f.cdiv(133, 132) == 2 and f.cdiv(132, 132) == 1


# --- row alignment and tails -----------------------------------------------------------------


def test_row_alignment_formulas():
    assert f.row_bytes(3000, 2) == 6000 and f.row_bytes(3072, 2) == 6144
    assert f.rows_whole_vectors(3000, 2) and not f.rows_whole_vectors(3001, 2)
    assert f.rows_whole_vectors(3004, 4) and not f.rows_whole_vectors(3002, 4)
    assert [f.divisibility_marked(n) for n in (2992, 3000, 3008, 3072)] == [True, False, True, True]
    assert f.ragged(3000, 4096) and f.ragged(4096, 3000) and f.ragged(4095, 4096)
    assert not f.ragged(4096, 4096) and not f.ragged(3008, 3072)


def test_last_tile():
    assert [f.last_tile(n, 128) for n in (2992, 3000, 3008, 3072)] == [48, 56, 64, 128]
    assert [f.last_tile(n, 256) for n in (2992, 3000, 3008, 3072)] == [176, 184, 192, 256]
    assert (f.last_tile(65, 64), f.last_tile(97, 64), f.last_tile(130, 64)) == (
        1,
        33,
        2,
    )  # section 4's tails
    assert all(
        0 < f.last_tile(n, t) <= t and (n - f.last_tile(n, t)) % t == 0
        for n in range(1, 300)
        for t in (16, 64)
    )


# --- the cliff lesson -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def cliff_output():
    return run_cli("benchmarks.lessons.cliff")


def test_cliff_output(cliff_output):
    out = cliff_output
    assert "1 per SM at a time (144 KiB of shared memory each), 132 at once" in out
    for n in (2992, 3000, 3008, 3072):
        assert table_rows(out, f"{n}^3")[0][1:6] == ["24 x 12", "288", "3", "18%", "73%"]
    assert table_rows(out, "3000^3")[0][6] == "56 of 128; 184 of 256"
    assert table_rows(out, "3072^3")[0][6] == "whole; whole"
    assert "waves cannot tell them apart" in out
    assert table_rows(out, "3000") == [
        ["3000", "6000", "375", "16 x 187 + 8", "no", "only if n is a constant (flat kernels)"]
    ]
    for n, units, q in ((2992, "374", 187), (3008, "376", 188), (3072, "384", 192)):
        assert table_rows(out, str(n)) == [
            [str(n), str(2 * n), units, f"16 x {q} + 0", "yes", "yes"]
        ]


def test_cliff_other_sizes():
    out = run_cli("benchmarks.lessons.cliff", "--sizes", "3001", "4095", "4096")
    assert table_rows(out, "3001") == [["3001", "6002", "375.125", "16 x 187 + 9", "no", "no"]]
    assert table_rows(out, "4096") == [["4096", "8192", "512", "16 x 256 + 0", "yes", "yes"]]
    assert table_rows(out, "4096^3")[0][1:6] == ["32 x 16", "512", "4", "88%", "97%"]
    assert "cannot tell them apart" not in out


def test_cliff_refuses_a_size_below_one():
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.lessons.cliff", "--sizes", "0"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2 and "at least 1" in done.stderr
