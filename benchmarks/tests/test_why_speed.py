"""The "why this speed" rules against every recorded kernel: each sentence must agree with
the numbers it was drawn from. Nothing here is re-measured; the rows are the committed
baselines (benchmarks/baselines/: the benchmark's CSVs and the exploration script's, on an
H200 but for the files named ``*-h100``) and the demo class graded on an H200
(docs/demo-speed/)."""

import pathlib
import re

import pandas as pd
import pytest

from benchmarks import why_speed, why_speed_text
from ledger import formulas
from benchmarks.why_speed import ABOVE_MODEL, BUSY_LOW, OVERHEAD_US, POSSIBLE_SHARE

ROOT = pathlib.Path(__file__).resolve().parents[2]
ROOFS = ("memory", "tile_feed", "tensor_cores")


def _csv_rows(path):
    frame = pd.read_csv(path, dtype={"size": str})
    return [(f"{path.stem}-{row['size']}", row) for row in frame.to_dict("records")]


def _demo_board_rows():
    """The demo class's leaderboard (tiles and rates, no launch): ada's and 李华's timed rows,
    with NineToothed's default 8 warps and 7 stages, which the demo's records show for ada and mia."""
    frame = pd.read_csv(ROOT / "docs" / "demo-speed" / "leaderboard-staff.csv", dtype={"size": str})
    rows = []
    for row in frame.to_dict("records"):
        bm, bn, bk = (int(part) for part in row["tiles"].split("x"))
        m = n = k = int(row["size"])
        rows.append(
            (
                f"demo-board-{row['student']}",
                {
                    "size": row["size"],
                    "m": m,
                    "n": n,
                    "k": k,
                    "verdict": "PASS",
                    "tflops": row["tflops"],
                    "torch_mm_tflops": row["torch_mm_tflops"],
                    "ratio_vs_torch_mm": row["ratio_vs_torch_mm"],
                    "median_ms": 2 * m * n * k / row["tflops"] / 1e9,
                    "block_m": bm,
                    "block_n": bn,
                    "block_k": bk,
                    "num_warps": 8,
                    "num_stages": 7,
                    "gpu_name": row["gpu"],
                },
            )
        )
    return rows


EXPLORE_CONFIG = re.compile(r"(\d+)x(\d+)x(\d+)\b.*?(\d+)w(\d+)s")


def _explore_rows(path):
    """The exploration script's rows (its own columns) whose variant names one tile config
    (the autotuned reference's rows do not, nor do split-K's chunk rows), in the benchmark's."""
    rows = []
    # The exploration CSV names no GPU; benchmarks/baselines/README.md gives each file's.
    gpu = "NVIDIA H100 80GB HBM3" if path.stem.endswith("-h100") else "NVIDIA H200"
    for row in pd.read_csv(path).to_dict("records"):
        match = EXPLORE_CONFIG.search(str(row["variant"]))
        if not (match and row["correct"]):
            continue
        bm, bn, bk, warps, stages = (int(part) for part in match.groups())
        size = f"{row['m']}x{row['n']}x{row['k']}"
        rows.append(
            (
                f"{path.stem}-{row['variant']}-{size}",
                {
                    "size": size,
                    "m": row["m"],
                    "n": row["n"],
                    "k": row["k"],
                    "verdict": "PASS",
                    "tflops": row["tflops"],
                    "torch_mm_tflops": row["torch_tflops"],
                    "ratio_vs_torch_mm": row["ratio"],
                    "median_ms": row["ms"],
                    "block_m": bm,
                    "block_n": bn,
                    "block_k": bk,
                    "num_warps": warps,
                    "num_stages": stages,
                    "gpu_name": gpu,
                },
            )
        )
    return rows


def recorded_rows():
    rows = []
    for path in sorted((ROOT / "benchmarks" / "baselines").glob("*.csv")):
        benchmark = "block_m" in pd.read_csv(path, nrows=0).columns
        rows += _csv_rows(path) if benchmark else _explore_rows(path)
    rows += _csv_rows(ROOT / "docs" / "demo-speed" / "mia-speed.csv")
    return rows + _demo_board_rows()


RECORDED = recorded_rows()


def _why(name):
    return why_speed.explain(dict(RECORDED)[name])


@pytest.mark.parametrize("name,row", RECORDED, ids=[name for name, _ in RECORDED])
def test_the_sentence_agrees_with_the_numbers(name, row):
    why = why_speed.explain(row)
    assert why is not None, "every recorded row is timed, with its tiles and launch"
    limit, share = why["limit"], why["share"]
    assert limit in {rule.limit for rule in why_speed.RULES}
    assert why["certainty"] in ("sure", "likely", "possibly", "not sure")
    if limit in ROOFS or limit == "waves":
        # A named roof stands, and the measured rate is neither far under nor above it.
        assert why["binding"] not in why["refuted"]
        assert POSSIBLE_SHARE <= share <= ABOVE_MODEL
        assert why["tflops"] <= why["roofs"][why["binding"]] * ABOVE_MODEL
    if limit in ROOFS:
        assert why["binding"] == limit
    if limit == "waves":
        assert why["busy"] < BUSY_LOW and why["waves_hold"]
    if limit == "ragged":
        assert why["n"] % 16 or why["k"] % 16
    if limit == "short_run":
        assert why["median_us"] < OVERHEAD_US
    en, zh = why_speed_text.sentence(why)
    if "HBM" in en:  # never memory-bound above the bandwidth roof for that traffic
        assert why["tflops"] <= why["roofs"]["memory"] * ABOVE_MODEL
    assert f"{why['tflops']:.0f}" in en or limit == "short_run"
    if "L2 keeps more than one wave" in why_speed_text.facts(why)[1][0]:
        assert why["tflops"] > why["roofs"]["memory"]
    assert zh and all(line for pair in why_speed_text.facts(why) for line in pair)


def test_mia_half_of_torch_mm_is_the_tile_feed():
    """0.51x torch.mm, 338 TFLOPS, 34% of the roofline, 128x64x32, 8 warps, 7 stages."""
    why = _why("mia-speed-4096")
    assert (why["tiles"], why["num_warps"], why["num_stages"]) == ("128x64x32", 8, 7)
    assert round(why["ratio"], 2) == 0.51 and round(why["roofline_fraction"], 2) == 0.34
    assert (why["limit"], why["certainty"]) == ("tile_feed", "likely")
    assert (why["a_reads"], why["b_reads"], why["blocks_per_sm"], why["waves"]) == (64, 32, 2, 8)
    assert why["hbm_rate_tbs"] < why["bandwidth_tbs"] / 4  # far from memory-bound
    assert _why("mia-speed-4095")["limit"] == "ragged"


@pytest.mark.parametrize(
    "name,limit",
    [
        ("reference-64x64x64-4096", "tile_feed"),
        ("reference-64x64x64-512", "short_run"),
        ("reference-64x64x64-ragged-4096x3000x4096", "ragged"),
        ("reference-64x64x64-ragged-3000x4096x4096", "tile_feed"),  # a ragged M costs nothing
        ("reference-autotune-targets-4096", "tensor_cores"),
        ("reference-autotune-targets-3000", "waves"),  # 288 tiles on 132 SMs: 3 waves, 73% busy
        ("demo-board-ada", "tile_feed"),
        ("demo-board-李华", "tile_feed"),
    ],
)
def test_recorded_kernels_get_the_limit_perf_notes_gives_them(name, limit):
    assert _why(name)["limit"] == limit


def test_a_roof_the_measurement_passes_is_never_named():
    """At 8192^3 the HBM estimate (no reuse: a wave's 140 MiB of panels overflow L2) would cap the
    grouped reference at 405 TFLOPS; it ran at 641, so that roof is refuted, not named."""
    why = _why("reference-autotune-targets-8192")
    assert "memory" in why["refuted"] and why["limit"] == "tensor_cores"
    assert "L2 keeps more than one wave" in why_speed_text.facts(why)[1][0]


def test_a_rate_above_every_roof_is_not_explained_and_never_memory_bound():
    """Made up: 64x64 tiles at 900 TFLOPS pass the tile feed and torch.mm's best; the HBM roof
    (1063 TFLOPS) lies above the datasheet peak, so it cannot be the limit either."""
    row = dict(RECORDED)["reference-64x64x64-4096"]
    why = why_speed.explain({**row, "tflops": 900.0, "median_ms": 2 * 4096**3 / 900e9})
    assert why["limit"] == "unexplained" and why["binding"] is None
    assert "above every roof" in why_speed_text.sentence(why)[0]


def test_hbm_named_from_an_upper_estimate_is_only_possibly_the_limit():
    """The flattened persistent kernel at 8192^3 (435 TFLOPS) sits at the HBM estimate's roof,
    but that estimate assumes no reuse; its unflattened twin ran at 624 on the same traffic."""
    why = _why(
        "explore-round5-persistent-persistent 128x256x64 g8 P132 8w3s flattened-8192x8192x8192"
    )
    assert (why["limit"], why["certainty"]) == ("memory", "possibly")
    assert "upper estimate" in why_speed_text.sentence(why)[0]


def test_spills_from_the_cubin_are_named_only_under_the_roof():
    row = dict(RECORDED)["demo-board-李华"]
    build = {
        "ok": True,
        "target": "sm_90",
        "registers": 255,
        "shared_bytes": 43008,
        "spilled_bytes": 64,
    }
    why = why_speed.explain(row, build)
    assert (why["occupancy_source"], why["limit"], why["certainty"]) == (
        "cubin",
        "spills",
        "possibly",
    )
    assert why_speed.explain(dict(RECORDED)["mia-speed-4096"], build)["limit"] == "tile_feed"
    other_launch = why_speed.explain(row, {**build, "num_warps": 4})  # not the timed build
    assert other_launch["occupancy_source"] == "estimate"


def test_no_explanation_without_a_known_gpu_or_a_pass():
    row = dict(RECORDED)["mia-speed-4096"]
    assert why_speed.explain({**row, "gpu_name": "NVIDIA A100"}) is None
    assert why_speed.explain({**row, "verdict": "FAIL"}) is None
    assert why_speed_text.markdown([]) == []


def test_the_benchmark_prints_the_section_from_its_frame():
    from benchmarks import report

    text = report.why_text(report.read_csv(ROOT / "docs" / "demo-speed" / "mia-speed.csv"))
    assert text.startswith("\n## Why this speed") and "### 4095" in text
    assert (
        report.why_text(
            report.read_csv(ROOT / "docs" / "demo-speed" / "mia-speed.csv").assign(
                gpu_name="NVIDIA A100"
            )
        )
        == ""
    )


CARD_RUNS = [
    ("reference-autotune-targets.csv", "H200", "H100"),
    ("reference-autotune-targets-round8-2-h100.csv", "H100 SXM", "H200"),
]


@pytest.mark.parametrize("name, card, other", CARD_RUNS, ids=[run[1] for run in CARD_RUNS])
def test_a_run_is_explained_with_the_figures_of_the_card_it_ran_on(name, card, other):
    """Each recorded run's sentences cite its own card: the best torch.mm of the same run as
    the tensor cores' roof, that card's tile feed and datasheet; never another card's."""
    rows = [row for _, row in _csv_rows(ROOT / "benchmarks" / "baselines" / name)]
    best = max(row["torch_mm_tflops"] for row in rows)
    whys = why_speed.explain_rows(rows)
    assert len(whys) == len(rows) and {why["card"] for why in whys} == {card}
    assert all(why["roofs"]["tensor_cores"] == best for why in whys)
    machine = formulas.machine_for_gpu_name(rows[0]["gpu_name"])
    assert (machine.card, machine.recorded_on) == (card, card)
    for why in whys:
        text = "\n".join(
            [
                *why_speed_text.sentence(why),
                *(line for pair in why_speed_text.facts(why) for line in pair),
            ]
        )
        assert other not in text, text
        assert f"tile feed recorded on the {card} allows" in text
    capped = next(why for why in whys if why["limit"] == "tensor_cores")
    assert (
        f"the best torch.mm reached in the same run on this {card}, {best:.0f} TFLOPS"
        in why_speed_text.sentence(capped)[0]
    )
