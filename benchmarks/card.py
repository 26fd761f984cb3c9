"""The report card: one PNG with the run's rates, the roofline, and where they came from.

It is drawn from the run's DataFrame (or any benchmark CSV read back), so a card
can be redrawn later with ``python -m benchmarks.card RESULTS.csv``.
"""

import argparse
import math
import pathlib
import sys
import textwrap

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.gridspec import GridSpec
from matplotlib.ticker import FixedLocator, NullLocator

NT_COLOR = "#D1495B"
KERNEL_COLOR = "#EDAE49"
TORCH_COLOR = "#00798C"
ROOF_COLOR = "#6C757D"
PEAK_COLOR = "#30343F"
FAIL_COLOR = "#B00020"
from benchmarks import why_speed, why_speed_text  # noqa: E402
from benchmarks.fonts import CJK_FONTS  # noqa: E402


def font_family():
    """Fonts to draw with: a CJK-capable one first when installed, so ids like 李华 show."""
    from matplotlib import font_manager

    installed = {font.name for font in font_manager.fontManager.ttflist}
    return [name for name in CJK_FONTS if name in installed] + ["DejaVu Sans"]


def drawable(text, family):
    """``text`` when ``family`` can draw it, else with CJK characters escaped (\\u674e)."""
    text = str(text)
    if family[0] != "DejaVu Sans":
        return text
    return "".join(
        character if ord(character) < 0x2E80 else character.encode("unicode_escape").decode("ascii")
        for character in text
    )


def _num(value):
    try:
        value = float(value)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(value) else value


def _first(frame, column, default=""):
    if column not in frame.columns:
        return default
    for value in frame[column]:
        if not (isinstance(value, float) and math.isnan(value)) and str(value) != "":
            return value
    return default


def _x_positions(frame):
    """(x values, tick labels, log2 axis?): power-of-two squares on a log2 axis, others in order.

    Sizes like 3000 and 3072 would sit on top of each other on a log axis.
    """
    doubling = all(
        int(r.m) == int(r.n) == int(r.k) and int(r.m) & (int(r.m) - 1) == 0
        for r in frame.itertuples()
    )
    labels = [str(s) for s in frame["size"]]
    if doubling:
        return [float(m) for m in frame["m"]], labels, True
    return list(range(len(frame))), labels, False


def _series(frame, column):
    return [_num(v) for v in frame[column]] if column in frame.columns else [None] * len(frame)


def _plot(ax, xs, ys, **style):
    points = [(x, y) for x, y in zip(xs, ys) if y is not None and y > 0]
    if points:
        ax.plot(*zip(*points), **style)
    return points


def _config_text(frame):
    autotune = str(_first(frame, "autotune", False)).lower() in ("true", "1")
    configs = []
    for row in frame.itertuples():
        blocks = [getattr(row, c, "") for c in ("block_m", "block_n", "block_k")]
        if any(str(b) in ("", "nan", "unknown") for b in blocks):
            continue
        text = "x".join(str(int(float(b))) for b in blocks)
        warps, stages = getattr(row, "num_warps", ""), getattr(row, "num_stages", "")
        if _num(warps) and _num(stages):
            text += f", {int(float(warps))} warps, {int(float(stages))} stages"
        configs.append(text)
    distinct = sorted(set(configs))
    if autotune:
        detail = distinct[0] if len(distinct) == 1 else "chosen per size (labels on the plot)"
        return "on (NINETOOTHED_AUTOTUNE=1)", detail or "unknown"
    return "off", distinct[0] if len(distinct) == 1 else (", ".join(distinct) or "unknown")


def _highlight(row):
    """'286 TFLOPS, 0.42x torch.mm, 29% of roofline' for one timed row."""
    rate = _num(row.get("tflops"))
    if rate is None:
        return str(row.get("verdict", ""))
    parts = [f"{rate:.0f} TFLOPS" if rate >= 10 else f"{rate:.3g} TFLOPS"]
    ratio = _num(row.get("ratio_vs_torch_mm"))
    if ratio:
        parts.append(f"{ratio:.2f}x torch.mm")
    fraction = _num(row.get("roofline_fraction"))
    if fraction:
        parts.append(f"{fraction:.0%} of roofline")
    return ", ".join(parts)


def _limit(row):
    """', limit: tile feed (likely)' from benchmarks.why_speed, or '' where it cannot say."""
    why = why_speed.explain(row)
    return "" if why is None else f", {why_speed_text.short(why)}"


def _metadata_lines(frame, ours):
    autotune, blocks = _config_text(frame)
    verdicts = [str(v) for v in frame["verdict"]]
    passed = sum(v == "PASS" for v in verdicts)
    failed = sum(v == "FAIL" for v in verdicts)
    clock, temp, power = (
        _num(_first(frame, c, None)) for c in ("sm_clock_mhz", "temperature_c", "power_w")
    )
    at_start = (
        ", ".join(
            part
            for part in (
                f"SM {clock:.0f} MHz" if clock else "",
                f"{temp:.0f} °C" if temp else "",
                f"{power:.0f} W" if power else "",
            )
            if part
        )
        or "not available"
    )
    search = [v for v in _series(frame, "autotune_search_s") if v]
    peak = _num(_first(frame, "peak_tflops", None))
    machine = _first(frame, "machine", "")
    lines = [
        ("Submission", drawable(_first(frame, "submission", "?"), font_family())),
        ("GPU", _first(frame, "gpu_name", "?")),
        ("Driver / CUDA", f"{_first(frame, 'driver', '?')} / {_first(frame, 'cuda', '?')}"),
        ("torch", _first(frame, "torch_version", "?")),
        ("triton", _first(frame, "triton_version", "?")),
        ("ninetoothed", _first(frame, "ninetoothed_version", "?")),
        ("Autotune", autotune),
        ("Blocks", blocks),
    ]
    if search:
        lines.append(("Autotune search", f"{sum(search):.1f} s in all (not in the timings)"))
    lines += [
        ("Correctness", f"{passed} PASS, {failed} FAIL of {len(verdicts)} sizes"),
        (
            "Timing",
            "\n".join(
                textwrap.wrap(
                    f"median of do_bench, CUDA events, L2 flushed; {ours}, rounds alternating with "
                    "torch.mm",
                    36,
                )
            ),
        ),
        (
            "Roofline",
            f"{machine}: {peak:.0f} TFLOPS peak"
            if machine and peak
            else "GPU not in ledger.formulas",
        ),
        ("At start", at_start),
        ("Date", str(_first(frame, "timestamp", "?")).replace("T", " ")),
        ("Host / rev", f"{_first(frame, 'host', '?')} / {_first(frame, 'git_revision', '?')}"),
    ]
    return lines


def render(frame, path, title="NineToothed GEMM report card", ours="nt_gemm as called"):
    """Draw the card for ``frame`` (benchmark rows) into ``path`` (PNG); returns the path.

    ``ours`` says what the NineToothed times are of: the student benchmark times
    ``nt_gemm`` as called, the batch grader its own launch of the kernel.
    """
    frame = frame.reset_index(drop=True)
    if frame.empty:
        raise ValueError("no rows to draw")
    xs, labels, log2 = _x_positions(frame)

    with plt.rc_context({"font.family": font_family()}):
        return _draw(frame, path, title, ours, xs, labels, log2)


def _draw(frame, path, title, ours, xs, labels, log2):
    fig = plt.figure(figsize=(13, 7.6), dpi=150)
    grid = GridSpec(
        2,
        2,
        width_ratios=[3.1, 1.35],
        height_ratios=[3, 1.15],
        hspace=0.08,
        wspace=0.04,
        left=0.065,
        right=0.985,
        top=0.89,
        bottom=0.1 if log2 else 0.17,
    )
    ax = fig.add_subplot(grid[0, 0])
    ax_ratio = fig.add_subplot(grid[1, 0], sharex=ax)
    ax_meta = fig.add_subplot(grid[:, 1])

    roof = _series(frame, "roofline_tflops")
    nt = _series(frame, "tflops")
    kernel = _series(frame, "kernel_tflops")
    torch_mm = _series(frame, "torch_mm_tflops")
    peak = _num(_first(frame, "peak_tflops", None))

    if any(roof):
        _plot(
            ax,
            xs,
            roof,
            color=ROOF_COLOR,
            linestyle=":",
            linewidth=1.6,
            label="roofline: min(peak, intensity x bandwidth)",
        )
        points = [(x, y) for x, y in zip(xs, roof) if y]
        ax.fill_between(*zip(*points), 1e-9, color=ROOF_COLOR, alpha=0.06, linewidth=0)
    if peak:
        ax.axhline(
            peak,
            color=PEAK_COLOR,
            linestyle="--",
            linewidth=1.1,
            label=f"fp16 dense peak ({peak:.0f} TFLOPS)",
        )
    _plot(
        ax, xs, torch_mm, color=TORCH_COLOR, marker="s", markersize=5, linewidth=2, label="torch.mm"
    )
    if any(kernel):
        _plot(
            ax,
            xs,
            kernel,
            color=KERNEL_COLOR,
            marker="^",
            markersize=4,
            linewidth=1.2,
            linestyle="--",
            label="NineToothed, kernel only",
        )
    nt_points = _plot(
        ax,
        xs,
        nt,
        color=NT_COLOR,
        marker="o",
        markersize=5,
        linewidth=2.2,
        label=f"NineToothed ({ours})",
    )

    values = [v for v in nt + torch_mm + kernel + roof if v and v > 0]
    low = min(values) / 4 if values else 1e-3
    high = max(values + ([peak] if peak else [])) * 1.8 if values else 1e3
    ax.set_yscale("log")
    ax.set_ylim(low, high)

    autotune = str(_first(frame, "autotune", False)).lower() in ("true", "1")
    if autotune:
        for x, y, row in zip(xs, nt, frame.itertuples()):
            blocks = [str(getattr(row, c, "")) for c in ("block_m", "block_n", "block_k")]
            if y and not any(b in ("", "nan", "unknown") for b in blocks):
                ax.annotate(
                    "x".join(str(int(float(b))) for b in blocks),
                    (x, y),
                    textcoords="offset points",
                    xytext=(0, -13),
                    ha="center",
                    fontsize=6.5,
                    color=NT_COLOR,
                )

    for x, verdict in zip(xs, frame["verdict"]):
        if str(verdict) == "FAIL":
            ax.plot([x], [low * 2], marker="X", color=FAIL_COLOR, markersize=9)
            ax.annotate(
                "FAIL",
                (x, low * 2),
                textcoords="offset points",
                xytext=(0, 7),
                ha="center",
                fontsize=7,
                color=FAIL_COLOR,
                weight="bold",
            )
            ax_ratio.annotate(
                "FAIL",
                (x, 0.05),
                ha="center",
                va="bottom",
                fontsize=8,
                color=FAIL_COLOR,
                weight="bold",
            )

    if nt_points:
        index = max((i for i, v in enumerate(nt) if v), key=lambda i: float(frame.iloc[i]["flops"]))
        fig.text(
            0.985 - 0.3 * 1.35 / 4.45,
            0.915,
            f"{labels[index]}: {_highlight(frame.iloc[index])}",
            ha="right",
            fontsize=10,
            color=NT_COLOR,
            weight="bold",
        )

    ax.set_ylabel("TFLOPS (log scale)")
    ax.grid(True, which="major", alpha=0.3)
    ax.grid(True, which="minor", axis="y", alpha=0.1)
    ax.legend(loc="best", fontsize=8, framealpha=0.92)  # where it hides the fewest points
    ax.tick_params(labelbottom=False)

    ratios = _series(frame, "ratio_vs_torch_mm")
    width = [x * 0.45 for x in xs] if log2 else 0.6
    bar_x = [x for x, r in zip(xs, ratios)]
    bar_h = [r or 0 for r in ratios]
    colors = [NT_COLOR if (r or 0) < 1 else TORCH_COLOR for r in ratios]
    ax_ratio.bar(bar_x, bar_h, width=width, color=colors, alpha=0.8)
    ax_ratio.axhline(1.0, color=PEAK_COLOR, linewidth=1, linestyle="--")
    for x, r in zip(xs, ratios):
        if r and r >= 0.3:  # inside the bar, halfway up: never on the dashed 1.0 line
            ax_ratio.annotate(
                f"{r:.2f}",
                (x, r / 2),
                ha="center",
                va="center",
                fontsize=7,
                color="white",
                weight="bold",
            )
        elif r:
            ax_ratio.annotate(
                f"{r:.2f}",
                (x, r),
                textcoords="offset points",
                xytext=(0, 2),
                ha="center",
                fontsize=7,
            )
    ax_ratio.text(
        0.005,
        0.97,
        "bars: red, slower than torch.mm; teal, faster; dashed: equal",
        transform=ax_ratio.transAxes,
        fontsize=7,
        va="top",
        color=ROOF_COLOR,
    )
    top = max([r for r in ratios if r] + [1.0])
    ax_ratio.set_ylim(0, top * 1.3)
    ax_ratio.set_ylabel("speed vs\ntorch.mm")
    ax_ratio.grid(True, axis="y", alpha=0.3)

    if log2:
        ax.set_xscale("log", base=2)
        pad = 2**0.4
        ax.set_xlim(min(xs) / pad, max(xs) * pad)
    else:
        ax.set_xlim(-0.6, len(xs) - 0.4)
    ax_ratio.xaxis.set_major_locator(FixedLocator(xs))
    ax_ratio.xaxis.set_minor_locator(NullLocator())
    ax_ratio.set_xticklabels(
        labels, rotation=0 if log2 else 30, ha="center" if log2 else "right", fontsize=8
    )
    ax_ratio.set_xlabel("matrix size (M = N = K)" if log2 else "shape (M x N x K)")

    ax_meta.axis("off")
    y = 0.99
    for key, value in _metadata_lines(frame, ours):
        ax_meta.text(
            0.04,
            y,
            key,
            transform=ax_meta.transAxes,
            fontsize=8.3,
            weight="bold",
            va="top",
            color=PEAK_COLOR,
        )
        ax_meta.text(
            0.36, y, str(value), transform=ax_meta.transAxes, fontsize=8.3, va="top", wrap=True
        )
        y -= 0.047 + 0.03 * str(value).count("\n")
    timed = [i for i, v in enumerate(nt) if v]
    if timed:
        largest = sorted(timed, key=lambda i: float(frame.iloc[i]["flops"]))[::-1][:3]
        y -= 0.01
        ax_meta.text(
            0.04,
            y,
            "Largest sizes",
            transform=ax_meta.transAxes,
            fontsize=8.3,
            weight="bold",
            va="top",
            color=PEAK_COLOR,
        )
        y -= 0.04
        for i in largest:  # the largest first: if the panel fills up, the smallest goes
            lines = textwrap.wrap(_highlight(frame.iloc[i]) + _limit(frame.iloc[i]), 44)
            if y - 0.03 * (1 + len(lines)) < 0.01:
                break
            ax_meta.text(0.04, y, labels[i], transform=ax_meta.transAxes, fontsize=8, va="top")
            ax_meta.text(
                0.09,
                y - 0.028,
                "\n".join(lines),
                transform=ax_meta.transAxes,
                fontsize=8,
                va="top",
                color=NT_COLOR,
            )
            y -= 0.04 + 0.028 * len(lines)
    ax_meta.add_patch(
        plt.Rectangle((0, 0), 1, 1, transform=ax_meta.transAxes, fill=False, ec="#CED4DA", lw=0.8)
    )

    fig.suptitle(title, x=0.065, ha="left", fontsize=15, weight="bold")
    fig.text(
        0.065,
        0.915,
        "fp16 GEMM, float32 accumulation; every size checked against torch.mm before it is timed",
        fontsize=9,
        color=ROOF_COLOR,
    )
    path = pathlib.Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.card", description="Redraw a report card from a benchmark CSV."
    )
    parser.add_argument("csv", help="a CSV written by the benchmark")
    parser.add_argument("--out", help="the PNG to write (default: next to the CSV)")
    args = parser.parse_args(argv)
    frame = pd.read_csv(args.csv)
    out = args.out or str(pathlib.Path(args.csv).with_suffix(".png"))
    print(render(frame, out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
