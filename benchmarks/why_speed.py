"""Why this speed: the lessons' formulas applied to one timed size of a student's own kernel.

``explain`` takes one row of the benchmark's CSV (benchmarks.report.COLUMNS: the size, the
rates, the tiles, warps and stages) and, when the grader compiled the kernel, its GPU build
(grader.core.gpu_compile.Build's fields: registers, shared memory, spills). It works out,
with ledger.formulas only:

- the tile's arithmetic intensity, and the rate it allows at the tile feed rate recorded on
  the card it ran on (``Machine.tile_feed_tbs``, read on ``Machine.recorded_on``);
- the traffic: how often A and B are re-read, the bytes asked of L2, and an estimate of the
  bytes from HBM if L2 keeps one wave's panels, with the bandwidth roof for that traffic;
- the blocks per SM (from the cubin, else estimated from the tiles and stages), the waves and
  the share of the SMs kept busy;
- the roofline, and the prediction: the lowest roof times the busy share; the tensor cores'
  roof is the best rate torch.mm reached in the same run, on the same card.

Then the first rule of RULES that holds names the limit and how sure it is. Every rule that
names a roof also checks that the measured rate is within [POSSIBLE_SHARE, ABOVE_MODEL] of
that roof times the busy share; a roof (or the waves) the measured rate passes is refuted and
never named, so no sentence names a limit the measured number contradicts. The rules were
checked against the committed H200 measurements (benchmarks/tests/test_why_speed.py), not
re-measured. benchmarks.why_speed_text says it in English and Chinese.
"""

import math
import typing

from ledger import formulas

DTYPE_BYTES = 2  # fp16 operands and output
CUBIN_TARGET = "sm_90"  # the machines the ledger models (H100, H200); other cubins are not read

# Named thresholds, each read by one rule below.
SHORT_RUN_US = 20.0  # below this the launch and the pipeline's fill weigh on the time
OVERHEAD_US = 50.0  # below this, and far under every roof: the per-call costs still dominate
RAGGED_SHARE = 0.5  # a ragged K or N at under half the prediction: the cliff
BUSY_LOW = 0.85  # the waves keep fewer of the SMs busy than this
LIKELY_SHARE = 0.8  # measured at 80% of a roof or more: that roof is likely the limit
POSSIBLE_SHARE = 0.6  # at 60% or more: possibly, with something else costing too
ABOVE_MODEL = 1.1  # measured more than 10% above a roof (times the busy share): it does not bind

SURE, LIKELY, POSSIBLY, NOT_SURE = "sure", "likely", "possibly", "not sure"


def _fits(why):
    return POSSIBLE_SHARE <= why["share"] <= ABOVE_MODEL


def _by_share(why):
    return LIKELY if why["share"] >= LIKELY_SHARE else POSSIBLY


class Rule(typing.NamedTuple):
    limit: str
    applies: typing.Callable[[dict], bool]
    certainty: typing.Callable[[dict], str]


# First match wins. The order goes from what invalidates the other numbers (an impossible
# measurement, a run too short to be about the kernel) to the roofs, the lowest first.
RULES = (
    Rule("impossible", lambda why: why["roofline_fraction"] > 1, lambda why: SURE),
    Rule(
        "short_run",
        lambda why: (
            why["median_us"] < SHORT_RUN_US
            or (why["median_us"] < OVERHEAD_US and why["share"] < POSSIBLE_SHARE)
        ),
        lambda why: LIKELY,
    ),
    Rule(
        "spills",
        lambda why: bool(why["spilled_bytes"]) and why["share"] < LIKELY_SHARE,
        lambda why: POSSIBLY,
    ),
    Rule("ragged", lambda why: why["ragged"] and why["share"] < RAGGED_SHARE, lambda why: LIKELY),
    Rule(
        "waves", lambda why: why["busy"] < BUSY_LOW and why["waves_hold"] and _fits(why), _by_share
    ),
    # The HBM estimate is an upper bound (L2 may keep more than a wave's panels), so HBM is
    # likely the limit only when even the minimum traffic runs the memory near its bandwidth.
    Rule(
        "memory",
        lambda why: why["binding"] == "memory" and _fits(why),
        lambda why: (
            LIKELY
            if why["min_bytes"] / why["median_us"] / 1e6 >= LIKELY_SHARE * why["bandwidth_tbs"]
            else POSSIBLY
        ),
    ),
    Rule("tile_feed", lambda why: why["binding"] == "tile_feed" and _fits(why), _by_share),
    Rule("tensor_cores", lambda why: why["binding"] == "tensor_cores" and _fits(why), _by_share),
    Rule("unexplained", lambda why: True, lambda why: NOT_SURE),
)


def _number(value):
    """A CSV or record cell as a positive finite float, or None (empty, zero, negative, NaN or
    infinite: staff explain students' hand-in CSVs, whose cells may be anything)."""
    if value in (None, "") or isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if 0 < number < math.inf else None


def _int(value):
    """A cell as a whole number from 1 to 2**31 - 1 (a size, a tile, warps), or None."""
    number = _number(value)
    return int(number) if number is not None and number == int(number) < 2**31 else None


def _blocks_per_sm(row, build, machine):
    """(blocks per SM, registers or None, shared bytes, source): the cubin's when the build
    has them, else ledger.formulas.occupancy_estimate's."""
    warps = _int(row.get("num_warps"))
    if (
        build
        and build.get("ok")
        and build.get("registers") is not None
        and warps
        and build.get("target") == CUBIN_TARGET
        and build.get("num_warps") in (None, warps)
    ):
        result = formulas.occupancy(
            warps * formulas.WARP_SIZE, build["registers"], build.get("shared_bytes") or 0, machine
        )
        return (
            result["blocks_per_sm"],
            build["registers"],
            build.get("shared_bytes") or 0,
            "cubin",
            result["limiter"],
        )
    stages = _int(row.get("num_stages"))
    if not (warps and stages):
        return None
    bm, bn, bk = (_int(row[f"block_{axis}"]) for axis in "mnk")
    result = formulas.occupancy_estimate(bm, bn, bk, warps, stages, DTYPE_BYTES, machine)
    return (
        result["blocks_per_sm"],
        None,
        formulas.smem_bytes(bm, bn, bk, DTYPE_BYTES, stages),
        "estimate",
        result["limiter"],
    )


def explain(row, build=None, torch_best=None):
    """The why of one timed size: numbers, the limit and how sure, as plain JSON values;
    None when the row was not timed, its GPU, its tiles or torch.mm's rate (which the
    sentences quote; a hand-in CSV may leave it out) are unknown. The tensor cores' practical
    roof is ``torch_best``, the best torch.mm rate of the row's run (``explain_rows``), else
    the best one recorded on the card (``Machine.practical_tflops``)."""
    machine = formulas.machine_for_gpu_name(str(row.get("gpu_name") or ""))
    tflops, median_ms = _number(row.get("tflops")), _number(row.get("median_ms"))
    torch_tflops = _number(row.get("torch_mm_tflops"))
    if torch_tflops is None:
        return None
    run_best = _number(torch_best)
    practical = max(run_best, torch_tflops) if run_best else None
    m, n, k = (_int(row.get(axis)) for axis in "mnk")
    bm, bn, bk = (_int(row.get(f"block_{axis}")) for axis in "mnk")
    if (
        machine is None
        or row.get("verdict") != "PASS"
        or not (tflops and median_ms)
        or None in (m, n, k, bm, bn, bk)
    ):
        return None
    occupancy = _blocks_per_sm(row, build, machine)
    if occupancy is None or not occupancy[0]:
        return None
    blocks_per_sm, registers, shared_bytes, source, limiter = occupancy
    flops = formulas.gemm_flops(m, n, k)
    seconds = median_ms / 1e3
    per_wave = machine.n_sm * blocks_per_sm
    tiles = formulas.tile_count(m, n, bm, bn)
    num_waves, last_wave, busy = formulas.waves(tiles, blocks_per_sm, machine.n_sm)
    a_reads, b_reads = formulas.re_reads(m, n, bm, bn)
    l2_bytes = formulas.l2_request_bytes(m, n, k, bm, bn, DTYPE_BYTES)
    hbm_bytes = formulas.hbm_bytes_estimate(m, n, k, bm, bn, DTYPE_BYTES, per_wave, machine)
    roofs = {
        "memory": formulas.bandwidth_roof_tflops(flops, hbm_bytes, machine),
        "tile_feed": formulas.tile_feed_roof_tflops(bm, bn, machine, DTYPE_BYTES),
        "tensor_cores": practical or machine.practical_tflops,
    }
    # A roof the measured rate passes is refuted: the model behind it does not describe this
    # kernel (an HBM estimate for a launch order that L2 serves better, say). So are the waves
    # when the rate passes the lowest standing roof times the busy share (a tail run otherwise).
    # A roof above the datasheet peak never binds: the tensor cores stop the kernel first.
    refuted = sorted(name for name, roof in roofs.items() if tflops > roof * ABOVE_MODEL)
    standing = {
        name: roof
        for name, roof in roofs.items()
        if name not in refuted and roof < machine.peak_tflops
    }
    binding = min(standing, key=standing.get) if standing else None
    roof = roofs[binding] if binding else max(roofs.values())
    waves_hold = binding is not None and tflops <= roof * busy * ABOVE_MODEL
    predicted = roof * busy if waves_hold else roof
    roofline = formulas.roofline_tflops(m, n, k, DTYPE_BYTES, machine)
    why = {
        "size": str(row.get("size") or f"{m}x{n}x{k}"),
        "m": m,
        "n": n,
        "k": k,
        "tiles": f"{bm}x{bn}x{bk}",
        "num_warps": _int(row.get("num_warps")),
        "num_stages": _int(row.get("num_stages")),
        "machine": machine.name,
        "card": machine.card,
        "feed_recorded_on": machine.recorded_on,
        "tflops": tflops,
        "torch_tflops": torch_tflops,
        "practical_from_run": practical is not None,
        "ratio": _number(row.get("ratio_vs_torch_mm")),
        "median_us": median_ms * 1e3,
        "tile_intensity": formulas.tile_intensity(bm, bn, DTYPE_BYTES),
        "a_reads": a_reads,
        "b_reads": b_reads,
        "l2_request_bytes": l2_bytes,
        "l2_rate_tbs": l2_bytes / seconds / 1e12,
        "min_bytes": formulas.min_bytes(m, n, k, DTYPE_BYTES),
        "wave_footprint_bytes": formulas.wave_footprint_bytes(
            m, n, k, bm, bn, DTYPE_BYTES, per_wave
        ),
        "l2_bytes": machine.l2_bytes,
        "hbm_bytes": hbm_bytes,
        "hbm_rate_tbs": hbm_bytes / seconds / 1e12,
        "bandwidth_tbs": machine.mem_bw_tbs,
        "tile_feed_tbs": machine.tile_feed_tbs,
        "blocks_per_sm": blocks_per_sm,
        "occupancy_source": source,
        "limiter": limiter,
        "registers": registers,
        "shared_bytes": shared_bytes,
        "spilled_bytes": (build or {}).get("spilled_bytes") or 0,
        "active_warps": blocks_per_sm * (_int(row.get("num_warps")) or 0),
        "max_warps": machine.max_warps_per_sm,
        "n_sm": machine.n_sm,
        "per_wave": per_wave,
        "tile_count": tiles,
        "waves": num_waves,
        "last_wave": last_wave,
        "busy": busy,
        "roofline_tflops": roofline,
        "roofline_fraction": tflops / roofline,
        "bound": formulas.bound(m, n, k, DTYPE_BYTES, machine),
        "roofs": roofs,
        "refuted": refuted,
        "binding": binding,
        "waves_hold": waves_hold,
        "predicted_tflops": predicted,
        "share": tflops / predicted,
        "ragged": formulas.ragged(n, k),
    }
    rule = next(rule for rule in RULES if rule.applies(why))
    return {**why, "limit": rule.limit, "certainty": rule.certainty(why)}


def explain_rows(rows, build=None):
    """``explain`` for each timed row, leaving out the ones it cannot explain; each row's
    tensor-core roof is the best torch.mm rate of its run (``run_id``) on its GPU."""
    best = {}
    for row in rows:
        rate = _number(row.get("torch_mm_tflops"))
        if rate is not None:
            key = _run_of(row)
            best[key] = max(best.get(key, 0.0), rate)
    return [
        why
        for why in (explain(row, build, best.get(_run_of(row))) for row in rows)
        if why is not None
    ]


def of_entry(entry, build=None):
    """The whys of a grade's speed entry (grader.batch.timing.speed): those it kept, or
    worked out again from its rows where it kept none, or kept them before each named its
    card (then on the H200's readings, whatever card ran it)."""
    kept = entry.get("why")
    if kept is not None and all("card" in why for why in kept):
        return kept
    return explain_rows(entry.get("rows") or [], build)


def _run_of(row):
    return str(row.get("run_id") or ""), str(row.get("gpu_name") or "")
