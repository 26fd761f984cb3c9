"""What the what-if shows: a summary in English and Chinese, a CSV and a picture.

Kept apart from ``benchmarks.what_if``, which builds and times, so that all three can be
made on a CPU from made-up outcomes (the tests do) and read the same on a GPU.
"""

import csv
import pathlib

from benchmarks import timing
from benchmarks.what_if import TIMED
from grader.core.spreadsheet_cell import safe_cell
from ledger import formulas

COLUMNS = (
    "config",
    "theirs",
    "block_m",
    "block_n",
    "block_k",
    "num_warps",
    "num_stages",
    "m",
    "n",
    "k",
    "status",
    "median_ms",
    "p20_ms",
    "p80_ms",
    "tflops",
    "torch_mm_ms",
    "torch_mm_tflops",
    "ratio_to_torch_mm",
    "speedup_over_theirs",
    "note",
)
THEIRS_COLOR = "#D1495B"
OTHER_COLOR = "#5B7DB1"
TORCH_COLOR = "#30343F"


def _rate(outcome, size, which="kernel"):
    found = getattr(outcome, which)
    return timing.tflops(formulas.gemm_flops(*size), found.median_ms if found else None)


def rows(outcomes, size):
    """One dict per configuration tried, in the order tried, with COLUMNS as keys."""
    theirs = next((o for o in outcomes if o.theirs and o.status == TIMED and o.kernel), None)
    table = []
    for outcome in outcomes:
        config, kernel, ref = outcome.config, outcome.kernel, outcome.torch_mm
        table.append(
            {
                "config": config.label,
                "theirs": outcome.theirs,
                "block_m": config.block_m,
                "block_n": config.block_n,
                "block_k": config.block_k,
                "num_warps": config.num_warps,
                "num_stages": config.num_stages,
                "m": size[0],
                "n": size[1],
                "k": size[2],
                "status": outcome.status,
                "median_ms": kernel.median_ms if kernel else None,
                "p20_ms": kernel.p20_ms if kernel else None,
                "p80_ms": kernel.p80_ms if kernel else None,
                "tflops": _rate(outcome, size),
                "torch_mm_ms": ref.median_ms if ref else None,
                "torch_mm_tflops": _rate(outcome, size, "torch_mm"),
                "ratio_to_torch_mm": ref.median_ms / kernel.median_ms if kernel and ref else None,
                "speedup_over_theirs": (
                    theirs.kernel.median_ms / kernel.median_ms if kernel and theirs else None
                ),
                "note": outcome.note,
            }
        )
    return table


def write_csv(outcomes, size, path):
    path = pathlib.Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=COLUMNS)
        writer.writeheader()
        for row in rows(outcomes, size):
            writer.writerow(
                {key: "" if value is None else safe_cell(value) for key, value in row.items()}
            )
    return path


def summary(outcomes, size):
    """The lines printed after the what-if, English then Chinese."""
    return summary_of(rows(outcomes, size), size)


def summary_of(table, size):
    """``summary`` from the rows (``rows``) a batch record keeps."""
    at = "x".join(str(d) for d in size)
    lines = [f"what-if at {at} (kernel alone, beside torch.mm in the same run):"]
    for row in table:
        shown = (
            f"{row['tflops']:7.1f} TFLOPS  {row['ratio_to_torch_mm']:.2f}x torch.mm"
            if row["tflops"] is not None
            else f"{row['status']}: {row['note']}"
        )
        lines.append(f"  {'*' if row['theirs'] else ' '} {row['config']:<20} {shown}")
    lines.append("  (* = yours / 你的配置)")
    timed = [row for row in table if row["tflops"] is not None]
    theirs = next((row for row in timed if row["theirs"]), None)
    if not timed:
        lines += [
            "No configuration could be timed: each one failed as shown above.",
            "没有一个配置能计时：每个配置的失败原因见上。",
        ]
        return "\n".join(lines)
    best = max(timed, key=lambda row: row["tflops"])
    ratio = best["ratio_to_torch_mm"]
    if theirs is None:
        lines += [
            f"Best: {best['config']}, {best['tflops']:.1f} TFLOPS, {ratio:.2f}x torch.mm; "
            "your own configuration could not be timed.",
            f"最快：{best['config']}，{best['tflops']:.1f} TFLOPS，为 torch.mm 的 "
            f"{ratio:.2f} 倍；你自己的配置未能计时。",
        ]
    elif best is theirs:
        lines += [
            f"Yours is the fastest of those tried: {best['tflops']:.1f} TFLOPS, "
            f"{ratio:.2f}x torch.mm.",
            f"在试过的配置中你的最快：{best['tflops']:.1f} TFLOPS，为 torch.mm 的 {ratio:.2f} 倍。",
        ]
    else:
        gain = best["speedup_over_theirs"]
        lines += [
            f"Best: {best['config']}, {best['tflops']:.1f} TFLOPS, {gain:.2f}x yours "
            f"({theirs['tflops']:.1f}), {ratio:.2f}x torch.mm. Its tiles are BLOCK_SIZE_M/N/K; "
            "its warps and stages are ninetoothed.make's num_warps= and num_stages=.",
            f"最快：{best['config']}，{best['tflops']:.1f} TFLOPS，是你的配置"
            f"（{theirs['tflops']:.1f}）的 {gain:.2f} 倍，为 torch.mm 的 {ratio:.2f} 倍。"
            "它的分块是 BLOCK_SIZE_M/N/K，warp 数和级数是 ninetoothed.make 的 num_warps= 和 "
            "num_stages=。",
        ]
    lines += [
        "This is advice only: it never changes a grade, and one size on one GPU is not every size.",
        "这只是建议，不影响成绩；一个尺寸、一块 GPU 上的结果不代表所有尺寸。",
    ]
    return "\n".join(lines)


def render(outcomes, size, path):
    """Tile configuration (label) against TFLOPS, yours in another colour, torch.mm a line."""
    return render_of(rows(outcomes, size), size, path)


def render_of(table, size, path):
    """``render`` from the rows (``rows``) a batch record keeps."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = [row["config"] + (" (yours)" if row["theirs"] else "") for row in table]
    rates = [row["tflops"] or 0.0 for row in table]
    colors = [THEIRS_COLOR if row["theirs"] else OTHER_COLOR for row in table]
    figure, axes = plt.subplots(figsize=(8, 0.45 * len(table) + 1.8))
    try:
        bars = axes.barh(range(len(table)), rates, color=colors)
        for bar, row in zip(bars, table):
            text = f"{row['tflops']:.0f}" if row["tflops"] is not None else row["status"]
            axes.annotate(
                text,
                (bar.get_width(), bar.get_y() + bar.get_height() / 2),
                xytext=(3, 0),
                textcoords="offset points",
                va="center",
                fontsize=8,
            )
        torch_rates = [row["torch_mm_tflops"] for row in table if row["torch_mm_tflops"]]
        if torch_rates:
            median = sorted(torch_rates)[len(torch_rates) // 2]
            axes.axvline(
                median, color=TORCH_COLOR, linestyle="--", label=f"torch.mm ({median:.0f} TFLOPS)"
            )
            axes.legend(loc="lower right", fontsize=8)
        axes.set_yticks(range(len(table)), labels, fontsize=8)
        axes.invert_yaxis()
        axes.set_xlabel("TFLOPS (kernel alone)")
        axes.set_title(
            "What-if: your kernel with other tiles, warps and stages at "
            + "x".join(str(d) for d in size),
            fontsize=10,
        )
        figure.tight_layout()
        figure.savefig(path, dpi=120)
    finally:
        plt.close(figure)
    return pathlib.Path(path)
