"""Compare a run with a stored baseline CSV, size by size, and flag what moved beyond noise.

Both runs carry, per size, the median and the p20..p80 spread of the same
measurement. The noise band of a comparison is the sum of the two runs' relative
half-spreads, never less than ``noise_floor`` (run-to-run drift of clocks and
temperature is larger than the spread within one run). A size is a
``regression`` when the current median is slower than the baseline's by more
than that band, an ``improvement`` when faster by more, and ``within noise``
otherwise. torch.mm is compared the same way: when torch.mm moved too, the
machine (clocks, driver, neighbours) is the likelier cause than the kernel.
"""

import math

import pandas as pd

DEFAULT_NOISE_FLOOR = 0.02
KEY = ("m", "n", "k")
REQUIRED = ("m", "n", "k", "median_ms", "p20_ms", "p80_ms")

REGRESSION, IMPROVEMENT, SAME, NO_BASELINE, NOT_TIMED = (
    "regression",
    "improvement",
    "within noise",
    "no baseline",
    "not timed",
)

COLUMNS = (
    "baseline_median_ms",
    "speedup_vs_baseline",
    "compare_noise",
    "compare_status",
    "baseline_torch_mm_median_ms",
    "torch_mm_speedup_vs_baseline",
    "torch_mm_compare_status",
    "baseline_gpu_name",
    "baseline_run_id",
)


def _number(value):
    try:
        value = float(value)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(value) or value <= 0 else value


def relative_half_spread(median, p20, p80):
    median, p20, p80 = _number(median), _number(p20), _number(p80)
    if median is None or p20 is None or p80 is None:
        return 0.0
    return max(p80 - p20, 0.0) / (2 * median)


def judge(current, baseline, current_spread, baseline_spread, noise_floor=DEFAULT_NOISE_FLOOR):
    """(speedup, noise band, status) of one pair of medians; speedup > 1 means faster now."""
    current, baseline = _number(current), _number(baseline)
    if current is None:
        return None, None, NOT_TIMED
    if baseline is None:
        return None, None, NO_BASELINE
    noise = max(noise_floor, current_spread + baseline_spread)
    speedup = baseline / current
    if current > baseline * (1 + noise):
        return speedup, noise, REGRESSION
    if current < baseline * (1 - noise):
        return speedup, noise, IMPROVEMENT
    return speedup, noise, SAME


def check_baseline(frame):
    missing = [column for column in REQUIRED if column not in frame.columns]
    if missing:
        raise ValueError(
            f"the baseline CSV lacks the column(s) {', '.join(missing)}: "
            "is it a benchmark CSV from this kit?"
        )


def compare(current, baseline, noise_floor=DEFAULT_NOISE_FLOOR):
    """``current`` with COLUMNS added, matched to ``baseline`` on (m, n, k)."""
    check_baseline(baseline)
    timed = baseline[pd.to_numeric(baseline["median_ms"], errors="coerce") > 0]
    by_size = {tuple(int(row[c]) for c in KEY): row for _, row in timed.iterrows()}
    records = []
    for _, row in current.iterrows():
        values = dict.fromkeys(COLUMNS, "")
        records.append(values)
        base = by_size.get(tuple(int(row[c]) for c in KEY))
        if base is None:
            timed_now = _number(row.get("median_ms")) is not None
            values["compare_status"] = NO_BASELINE if timed_now else NOT_TIMED
            continue
        speedup, noise, status = judge(
            row.get("median_ms"),
            base["median_ms"],
            relative_half_spread(row.get("median_ms"), row.get("p20_ms"), row.get("p80_ms")),
            relative_half_spread(base["median_ms"], base["p20_ms"], base["p80_ms"]),
            noise_floor,
        )
        values.update(
            {
                "baseline_median_ms": base["median_ms"],
                "speedup_vs_baseline": "" if speedup is None else speedup,
                "compare_noise": "" if noise is None else noise,
                "compare_status": status,
                "baseline_gpu_name": base.get("gpu_name", ""),
                "baseline_run_id": base.get("run_id", ""),
            }
        )
        if "torch_mm_median_ms" in base.index:
            t_speedup, _, t_status = judge(
                row.get("torch_mm_median_ms"),
                base["torch_mm_median_ms"],
                relative_half_spread(
                    row.get("torch_mm_median_ms"),
                    row.get("torch_mm_p20_ms"),
                    row.get("torch_mm_p80_ms"),
                ),
                relative_half_spread(
                    base["torch_mm_median_ms"],
                    base.get("torch_mm_p20_ms"),
                    base.get("torch_mm_p80_ms"),
                ),
                noise_floor,
            )
            values["baseline_torch_mm_median_ms"] = base["torch_mm_median_ms"]
            values["torch_mm_speedup_vs_baseline"] = "" if t_speedup is None else t_speedup
            values["torch_mm_compare_status"] = t_status
    added = pd.DataFrame(records, index=current.index, columns=list(COLUMNS), dtype=object)
    return pd.concat([current.drop(columns=list(COLUMNS), errors="ignore"), added], axis=1)


def summary(compared):
    """Lines for the terminal: one per size, then what the flags mean."""
    lines = []
    gpus = {str(g) for g in compared.get("baseline_gpu_name", []) if str(g) not in ("", "nan")}
    here = {str(g) for g in compared.get("gpu_name", []) if str(g) not in ("", "nan")}
    if gpus and here and gpus != here:
        lines.append(
            f"note: the baseline ran on {', '.join(sorted(gpus))}, this run on "
            f"{', '.join(sorted(here))}; speedups compare machines, not kernels"
        )
    width = max([len(str(s)) for s in compared["size"]] + [4])
    lines.append(
        f"{'Size'.rjust(width)}  {'baseline(ms)':>12}  {'now(ms)':>10}  "
        f"{'speedup':>8}  {'noise':>6}  status"
    )
    for _, row in compared.iterrows():
        speedup = _number(row.get("speedup_vs_baseline"))
        noise = _number(row.get("compare_noise"))
        base = _number(row.get("baseline_median_ms"))
        now = _number(row.get("median_ms"))
        status = row["compare_status"]
        if status == REGRESSION:
            status = "REGRESSION"
            if row.get("torch_mm_compare_status") == REGRESSION:
                status += " (torch.mm slower too: suspect the machine)"
        lines.append(
            f"{str(row['size']).rjust(width)}  {_fmt(base, 4):>12}  {_fmt(now, 4):>10}  "
            f"{_fmt(speedup, 2, 'x'):>8}  {_fmt(noise and noise * 100, 1, '%'):>6}  {status}"
        )
    return "\n".join(lines)


def _fmt(value, digits, suffix=""):
    return "-" if value is None else f"{value:.{digits}f}{suffix}"


def regressions(compared):
    return compared[compared["compare_status"] == REGRESSION]


def across(frames):
    """Lines of one table over benchmark CSVs, e.g. the same sizes on two cards: per size,
    a line per file with its card, both rates, the ratio to torch.mm and the configuration.

    ``frames`` maps a name (the file's) to its frame; sizes keep their first file's order.
    """
    rows = []
    for name, frame in frames.items():
        check_baseline(frame)
        for _, row in frame.iterrows():
            size = "x".join(str(int(row[c])) for c in KEY)
            rows.append(
                (
                    size,
                    str(row.get("gpu_name", "?")),
                    _number(row.get("tflops")),
                    _number(row.get("torch_mm_tflops")),
                    _number(row.get("ratio_vs_torch_mm")),
                    _text(row.get("config_name")),
                    name,
                )
            )
    order = list(dict.fromkeys(row[0] for row in rows))
    rows.sort(key=lambda row: order.index(row[0]))
    width = max([len(row[0]) for row in rows] + [4])
    card = max([len(row[1]) for row in rows] + [4])
    lines = [
        f"{'size'.ljust(width)}  {'card'.ljust(card)}  {'TFLOPS':>7}  {'torch.mm':>8}  "
        f"{'ratio':>6}  configuration  (file)"
    ]
    for size, gpu, tflops, torch_tflops, ratio, config, name in rows:
        lines.append(
            f"{size.ljust(width)}  {gpu.ljust(card)}  {_fmt(tflops, 0):>7}  "
            f"{_fmt(torch_tflops, 0):>8}  {_fmt(ratio, 3):>6}  {config or '-'}  ({name})"
        )
    return lines


def _text(value):
    return "" if value is None or (isinstance(value, float) and math.isnan(value)) else str(value)


def main(argv=None):
    """``python -m benchmarks.compare CSV [CSV ...]``: ``across`` the files, printed."""
    import argparse
    import pathlib

    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.compare",
        description="One table over benchmark CSVs (say, the same sizes on an H100 and an "
        "H200): per size, each file's card, TFLOPS, torch.mm's, the ratio and "
        "the configuration that ran.",
    )
    parser.add_argument("csv", nargs="+", help="benchmark CSVs written by this kit")
    args = parser.parse_args(argv)
    frames = {}
    for path in args.csv:
        try:
            frames[pathlib.Path(path).name] = pd.read_csv(path)
            check_baseline(frames[pathlib.Path(path).name])
        except (OSError, ValueError) as error:
            parser.error(f"cannot read {path} as a benchmark CSV: {error}")
    print("\n".join(across(frames)))


if __name__ == "__main__":
    main()
