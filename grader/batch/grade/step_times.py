"""Where a class's grading seconds went: each step's median and slowest, over its records.

A record keeps the seconds of each step of its two runs as the parent saw them
(grader.batch.isolation.conversation: start, import, build, public cases, hidden cases), the
grader's own judging of its cases, and its timing run's prepare and measure
(grader.batch.timing.speed); environment.json keeps
this summary, to show where a batch's time goes before anyone tries to cut it.
"""

import statistics


def summary(records):
    """{run: {step: {"median_s", "max_s", "runs"}}} over the records that reached each step."""
    seen = {}
    for record in records:
        for run, seconds in (record.seconds or {}).items():
            for step, value in seconds.items():
                seen.setdefault(run, {}).setdefault(step, []).append(value)
        timed = record.speed or {}
        for step in ("prepare", "measure"):
            value = timed.get(f"{step}_s")
            if isinstance(value, (int, float)):
                seen.setdefault("timing run", {}).setdefault(step, []).append(value)
    return {
        run: {
            step: {
                "median_s": round(statistics.median(values), 2),
                "max_s": round(max(values), 2),
                "runs": len(values),
            }
            for step, values in steps.items()
        }
        for run, steps in seen.items()
    }
