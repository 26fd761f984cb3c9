"""The class at a glance: one PNG beside gradebook.csv and summary.csv.

Left, the pass rate of every case, so the case most of the class fails (and the
mistake it targets) stands out; right, how many students ended in each status.
"""

import io

STATUS_ORDER = ("passed", "failed", "flagged", "not_implemented", "import_error", "missing_file",
                "timeout", "crashed", "memory_limit")


def render(summary, gradebook):
    """PNG bytes from the summary and gradebook frames that reports.write_class builds."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cases = summary.iloc[::-1]  # the catalogue's first case at the top
    height = max(4.0, 0.28 * len(cases) + 1.5)
    figure, (rates, statuses) = plt.subplots(
        1, 2, figsize=(12, height), gridspec_kw={"width_ratios": [3, 1.4]})

    colours = ["#2a7f9e" if visibility == "public" else "#8a63a8"
               for visibility in cases["visibility"]]
    rates.barh(cases["case"], cases["pass_rate"] * 100, color=colours)
    rates.set_xlim(0, 100)
    rates.set_xlabel("students passing (%)")
    rates.set_title("Pass rate per case (teal: public, purple: hidden)", loc="left")
    rates.tick_params(axis="y", labelsize=8)
    for y, (rate, target) in enumerate(zip(cases["pass_rate"], cases["targets"])):
        rates.text(min(rate * 100 + 1, 80), y, f"{rate:.0%}  {target}", va="center", fontsize=7)
    rates.grid(axis="x", alpha=0.3)

    counts = gradebook["status"].value_counts()
    present = [status for status in STATUS_ORDER if status in counts] + \
        [status for status in counts.index if status not in STATUS_ORDER]
    statuses.barh(present[::-1], [counts[status] for status in present[::-1]], color="#c8553d")
    statuses.set_xlabel("students")
    statuses.set_title(f"Status ({len(gradebook)} students)", loc="left")
    statuses.xaxis.get_major_locator().set_params(integer=True)
    statuses.grid(axis="x", alpha=0.3)

    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=110)
    plt.close(figure)
    return buffer.getvalue()
