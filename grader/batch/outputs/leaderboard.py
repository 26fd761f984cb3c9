"""The class leaderboard: every timed submission's speed, as CSVs and pictures.

Built from the records' speed entries (grader.batch.timing.speed), so its numbers are the
ones in the gradebook and on each student's card: the ratio to torch.mm and
the TFLOPS at the first speed size, measured by the grader on its own GPU.

Two copies (``write``): ``leaderboard.csv`` and ``.png`` are for students, who appear
under their pseudonym or chosen name (grader.batch.outputs.pseudonyms), ranked among those who
did not opt out; ``leaderboard-staff.csv`` and ``.png`` keep every real id beside its
name. A student the staff flag after timing (grader.batch.outputs.overrides) is on neither.
"""

import io
import pathlib

from benchmarks import report
from grader.batch.timing import speed

MEASURES = (
    "size",
    "ratio_vs_torch_mm",
    "tflops",
    "torch_mm_tflops",
    "roofline_fraction",
    "spread",
    "tiles",
    "gpu",
)
COLUMNS = ("rank", "student", "name", "public") + MEASURES  # the staff copy
PUBLIC = ("rank", "name") + MEASURES
FAST, SLOW = "#2a9d8f", "#e76f51"  # at or above torch.mm, below it


def frame(records, key=b""):
    """The staff copy: one row per timed record, fastest first (ties by id), with the name
    the public copy gives it (from ``key``, grader.batch.outputs.pseudonyms.key) and whether it is
    there."""
    import pandas

    from grader.batch.outputs import pseudonyms

    rows = []
    for record in records:
        row = speed.headline(record)
        if row is None or record.status == "flagged":  # flagged by the staff after timing
            continue
        tiles = (record.speed or {}).get("tiles")
        rows.append(
            {
                "student": record.student,
                "name": pseudonyms.name(record, key),
                "public": not record.leaderboard_opt_out,
                "size": row["size"],
                "ratio_vs_torch_mm": row["ratio_vs_torch_mm"],
                "tflops": row["tflops"],
                "torch_mm_tflops": row["torch_mm_tflops"],
                "roofline_fraction": row["roofline_fraction"],
                "spread": round(report.spread(row), 4),
                "tiles": "x".join(str(size) for size in tiles) if tiles else "",
                "gpu": record.speed.get("gpu", ""),
            }
        )
    rows.sort(key=lambda row: (-row["ratio_vs_torch_mm"], row["student"]))
    for rank, row in enumerate(rows, start=1):
        row["rank"] = rank
    return pandas.DataFrame(rows, columns=list(COLUMNS))


def public(board):
    """The copy students may see: no ids, the opted-out left out, ranks among the rest."""
    shown = board[board["public"].astype(bool)].copy()
    shown["rank"] = range(1, len(shown) + 1)
    return shown[list(PUBLIC)].reset_index(drop=True)


def write(out_dir, records):
    """Both copies into ``out_dir``, when anyone was timed."""
    from grader.batch.outputs import pseudonyms, spreadsheet
    from grader.batch.outputs.atomic_file import atomic_write

    out_dir = pathlib.Path(out_dir)
    board = frame(records, pseudonyms.key(out_dir))
    if not len(board):
        return
    for suffix, table, labels in (("", public(board), "name"), ("-staff", board, "student")):
        atomic_write(out_dir / f"leaderboard{suffix}.csv", spreadsheet.csv_text(table, bom=True))
        picture = out_dir / f"leaderboard{suffix}.png"
        if len(table):
            atomic_write(picture, render(table, labels))
        elif picture.exists():  # everyone opted out: no picture of an earlier run stays
            picture.unlink()


def _labels(names):
    """(tick labels, font family, note): every name drawn as written where an installed font
    has its characters (benchmarks.fonts), and a note for those none has."""
    from benchmarks import fonts

    family, missing = fonts.family_for(names)
    # A $ starts matplotlib's mathematics: shown as it is, never parsed.
    labels = [fonts.escaped(name, missing).replace("$", r"\$") for name in names]
    note = (
        ""
        if not missing
        else "Some names hold characters no installed font has: drawn as \\u escapes (the CSV "
        f"has them as written). Install {fonts.INSTALL_HINT} to draw them."
    )
    return labels, family, note


def render(board, labels="name"):
    """PNG bytes: the ratio to torch.mm (left) and TFLOPS (right), one bar per row of
    ``board``, labelled by its column ``labels``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    size = board["size"].iloc[0]
    shown = board.iloc[::-1]  # the fastest at the top
    names, family, note = _labels(list(shown[labels]))
    names = [f"{rank}. {name}" for rank, name in zip(shown["rank"], names)]
    colours = [FAST if ratio >= 1 else SLOW for ratio in shown["ratio_vs_torch_mm"]]
    height = max(3.5, 0.34 * len(board) + 1.8) + (0.3 if note else 0)
    with plt.rc_context({"font.family": family}):
        figure, (ratio_axis, tflops_axis) = plt.subplots(
            1, 2, figsize=(12, height), sharey=True, gridspec_kw={"width_ratios": [1.2, 1]}
        )
        bars = ratio_axis.barh(names, shown["ratio_vs_torch_mm"], color=colours)
        ratio_axis.axvline(1.0, color="#30343f", linestyle="--", linewidth=1)
        ratio_axis.bar_label(
            bars,
            labels=[f"{value:.2f}x" for value in shown["ratio_vs_torch_mm"]],
            padding=3,
            fontsize=8,
        )
        ratio_axis.set_xlim(0, max(1.2, shown["ratio_vs_torch_mm"].max() * 1.2))
        ratio_axis.set_xlabel("speed against torch.mm (torch.mm's time / yours)")
        ratio_axis.set_title(
            f"Speed against torch.mm at {size}\n(green: as fast or faster; "
            "orange: slower; dashed: torch.mm)",
            loc="left",
            fontsize=10,
        )
        bars = tflops_axis.barh(names, shown["tflops"], color=colours)
        tflops_axis.bar_label(
            bars, labels=[f"{value:.0f}" for value in shown["tflops"]], padding=3, fontsize=8
        )
        reference = float(board["torch_mm_tflops"].median())
        tflops_axis.axvline(reference, color="#30343f", linestyle="--", linewidth=1)
        tflops_axis.set_xlim(0, max(shown["tflops"].max(), reference) * 1.2)
        tflops_axis.set_xlabel("TFLOPS")
        tflops_axis.set_title(
            f"TFLOPS at {size} on {board['gpu'].iloc[0]}\n(dashed: torch.mm, "
            f"{reference:.0f}, median of the runs)",
            loc="left",
            fontsize=10,
        )
        for axis in (ratio_axis, tflops_axis):
            axis.grid(axis="x", alpha=0.3)
        ratio_axis.tick_params(axis="y", labelsize=8)
        if note:
            figure.text(0.01, 0.01, note, fontsize=8, color="#b00020", ha="left", va="bottom")
        figure.tight_layout(rect=(0, 0.05 if note else 0, 1, 1))
        buffer = io.BytesIO()
        figure.savefig(buffer, format="png", dpi=110)
        plt.close(figure)
    return buffer.getvalue()
