"""What the class got wrong, for the next lecture: each student's likely mistake and the tally.

A student's likely mistake is the key of the first hint their page shows
(grader.core.diagnosis, kept in ``record.hints`` by grader.batch.outputs.reports), or ''
where none is named. The gradebook shows it per student (``likely_mistake``), summary.csv
and the console count it over the class, most common first.
"""

from grader.batch.outputs import feedback


def likely_mistake(record, cases_list):
    """The key of the record's first hint, or ''."""
    hints = record.hints
    if hints is None:
        hints = feedback.hints_for(record, cases_list)
    return hints[0]["key"] if hints else ""


def tally(records, cases_list):
    """[(key, students)] of every likely mistake of the class, most students first, then by
    key; students without one are not counted."""
    counts = {}
    for record in records:
        key = likely_mistake(record, cases_list)
        if key:
            counts[key] = counts.get(key, 0) + 1
    return sorted(counts.items(), key=lambda item: (-item[1], item[0]))


def console_line(records, cases_list):
    """ "likely mistakes: 12 students: expand_axis; 5: k_tail; 3 failed with none named"."""
    counted = tally(records, cases_list)
    parts = [
        f"{students} student{'s' if students != 1 else ''}: {key}"
        if index == 0
        else f"{students}: {key}"
        for index, (key, students) in enumerate(counted)
    ]
    unnamed = sum(
        record.status == "failed" and not likely_mistake(record, cases_list) for record in records
    )
    if unnamed:
        parts.append(f"{unnamed} failed with none named")
    return "likely mistakes: " + ("; ".join(parts) if parts else "none named")
