"""The class at a glance: one PNG beside gradebook.csv and summary.csv.

Left, the pass rate of every case, so the case most of the class fails (and the
mistake it targets) stands out. Right, above: how many students ended in each
status, coloured by what the status means; below: how the scores are spread.
"""

import io

from grader.batch.status import Status

# By what a status asks of the staff (Status.attention): nothing (green), a look at the
# work (amber), at the evidence (purple), or at why nothing could be graded: nothing to
# run (grey), a file that did not import (orange), a run that ended early (red).
STATUS_COLOURS = {
    Status.PASSED: "#2a9d8f",
    Status.FAILED: "#e9c46a",
    Status.FLAGGED: "#8a63a8",
    Status.NOT_IMPLEMENTED: "#adb5bd",
    Status.MISSING_FILE: "#adb5bd",
    Status.IMPORT_ERROR: "#e76f51",
    Status.TIMEOUT: "#d62828",
    Status.CRASHED: "#d62828",
    Status.MEMORY_LIMIT: "#d62828",
}
PUBLIC, HIDDEN = "#2a7f9e", "#8a63a8"


def render(summary, gradebook):
    """PNG bytes from the summary and gradebook frames that reports.write_class builds."""
    from matplotlib.figure import Figure  # not pyplot: no GUI state in a grading process

    cases = summary[summary["case"] != ""].iloc[::-1]  # the first case at the top, no tally
    cases = cases.assign(pass_rate=cases["pass_rate"].astype(float))
    height = max(5.0, 0.28 * len(cases) + 1.5)
    figure = Figure(figsize=(13, height))
    grid = figure.add_gridspec(2, 2, width_ratios=[3, 1.5], height_ratios=[1, 1])
    rates = figure.add_subplot(grid[:, 0])
    statuses = figure.add_subplot(grid[0, 1])
    scores = figure.add_subplot(grid[1, 1])

    colours = [PUBLIC if visibility == "public" else HIDDEN for visibility in cases["visibility"]]
    rates.barh(cases["case"], cases["pass_rate"] * 100, color=colours)
    rates.set_xlim(0, 145)  # room on the right for the labels, which never touch a bar
    rates.set_xticks(range(0, 101, 20))
    rates.set_xlabel("students passing (%)")
    rates.set_title("Pass rate per case (teal: public, purple: hidden)", loc="left")
    rates.tick_params(axis="y", labelsize=8)
    for y, (rate, target) in enumerate(zip(cases["pass_rate"], cases["targets"])):
        rates.text(rate * 100 + 2, y, f"{rate:.0%}  {target}", va="center", fontsize=7)
    rates.grid(axis="x", alpha=0.3)

    counts = gradebook["status"].value_counts()
    order = [status.value for status in Status.by_attention()]
    present = [status for status in order if status in counts] + [
        status for status in counts.index if status not in order
    ]
    shown = present[::-1]
    bars = statuses.barh(
        shown,
        [counts[status] for status in shown],
        color=[STATUS_COLOURS.get(status, "#adb5bd") for status in shown],
    )
    statuses.bar_label(bars, padding=3, fontsize=8)
    statuses.set_xlim(0, counts.max() * 1.25)
    statuses.set_xlabel("students")
    statuses.set_title(
        f"Status ({len(gradebook)} students)\ngreen: passed, amber: failed,\n"
        "purple: flagged, grey: nothing to run,\norange: did not import, red: the run ended early",
        loc="left",
        fontsize=9,
    )
    statuses.xaxis.get_major_locator().set_params(integer=True)
    statuses.grid(axis="x", alpha=0.3)

    maximum = int(gradebook["max_score"].max()) if len(gradebook) else 0
    scores.hist(
        gradebook["score"],
        bins=range(0, maximum + 2),
        color=PUBLIC,
        edgecolor="white",
        align="left",
    )
    scores.set_xlim(-0.8, maximum + 0.8)
    scores.set_xlabel(f"score (out of {maximum})")
    scores.set_ylabel("students")
    scores.set_title("Scores", loc="left", fontsize=9)
    scores.yaxis.get_major_locator().set_params(integer=True)
    scores.grid(axis="y", alpha=0.3)

    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=110)
    return buffer.getvalue()
