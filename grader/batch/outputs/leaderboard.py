"""The class leaderboard: every timed submission's speed, as a CSV and a picture.

Built from the records' speed entries (grader.batch.timing.speed), so its numbers are the
ones in the gradebook and on each student's card: the ratio to torch.mm and
the TFLOPS at the first speed size, measured by the grader on its own GPU.
Students are named by their ids, as in the gradebook.
"""

import io

from benchmarks import report
from grader.batch.timing import speed

COLUMNS = ("rank", "student", "size", "ratio_vs_torch_mm", "tflops", "torch_mm_tflops",
           "roofline_fraction", "spread", "tiles", "gpu")
FAST, SLOW = "#2a9d8f", "#e76f51"  # at or above torch.mm, below it


def frame(records):
    """One row per timed record, fastest first (ties by id)."""
    import pandas

    rows = []
    for record in records:
        row = speed.headline(record)
        if row is None:
            continue
        tiles = (record.get("speed") or {}).get("tiles")
        rows.append({"student": record["student"], "size": row["size"],
                     "ratio_vs_torch_mm": row["ratio_vs_torch_mm"], "tflops": row["tflops"],
                     "torch_mm_tflops": row["torch_mm_tflops"],
                     "roofline_fraction": row["roofline_fraction"],
                     "spread": round(report.spread(row), 4),
                     "tiles": "x".join(str(size) for size in tiles) if tiles else "",
                     "gpu": record["speed"].get("gpu", "")})
    rows.sort(key=lambda row: (-row["ratio_vs_torch_mm"], row["student"]))
    for rank, row in enumerate(rows, start=1):
        row["rank"] = rank
    return pandas.DataFrame(rows, columns=list(COLUMNS))


def render(board):
    """PNG bytes: the ratio to torch.mm (left) and TFLOPS (right), one bar per student."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from benchmarks.card import drawable, font_family

    family = font_family()
    size = board["size"].iloc[0]
    shown = board.iloc[::-1]  # the fastest at the top
    labels = [f"{rank}. {drawable(student, family)}"
              for rank, student in zip(shown["rank"], shown["student"])]
    colours = [FAST if ratio >= 1 else SLOW for ratio in shown["ratio_vs_torch_mm"]]
    height = max(3.5, 0.34 * len(board) + 1.8)
    with plt.rc_context({"font.family": family}):
        figure, (ratio_axis, tflops_axis) = plt.subplots(
            1, 2, figsize=(12, height), sharey=True, gridspec_kw={"width_ratios": [1.2, 1]})
        bars = ratio_axis.barh(labels, shown["ratio_vs_torch_mm"], color=colours)
        ratio_axis.axvline(1.0, color="#30343f", linestyle="--", linewidth=1)
        ratio_axis.bar_label(bars, labels=[f"{value:.2f}x" for value in
                                           shown["ratio_vs_torch_mm"]],
                             padding=3, fontsize=8)
        ratio_axis.set_xlim(0, max(1.2, shown["ratio_vs_torch_mm"].max() * 1.2))
        ratio_axis.set_xlabel("speed against torch.mm (torch.mm's time / yours)")
        ratio_axis.set_title(f"Speed against torch.mm at {size}\n(green: as fast or faster; "
                             "orange: slower; dashed: torch.mm)", loc="left", fontsize=10)
        bars = tflops_axis.barh(labels, shown["tflops"], color=colours)
        tflops_axis.bar_label(bars, labels=[f"{value:.0f}" for value in shown["tflops"]],
                              padding=3, fontsize=8)
        reference = float(board["torch_mm_tflops"].median())
        tflops_axis.axvline(reference, color="#30343f", linestyle="--", linewidth=1)
        tflops_axis.set_xlim(0, max(shown["tflops"].max(), reference) * 1.2)
        tflops_axis.set_xlabel("TFLOPS")
        tflops_axis.set_title(f"TFLOPS at {size} on {board['gpu'].iloc[0]}\n(dashed: torch.mm, "
                              f"{reference:.0f}, median of the runs)", loc="left", fontsize=10)
        for axis in (ratio_axis, tflops_axis):
            axis.grid(axis="x", alpha=0.3)
        ratio_axis.tick_params(axis="y", labelsize=8)
        figure.tight_layout()
        buffer = io.BytesIO()
        figure.savefig(buffer, format="png", dpi=110)
        plt.close(figure)
    return buffer.getvalue()
