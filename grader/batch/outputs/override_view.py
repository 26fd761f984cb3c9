"""The staff's decisions applied to a grade, and shown: the view every report is written from.

grader.batch.outputs.overrides reads and checks the staff's file; this module applies its
rows, and the batch's late penalty, to a record (``applied``: the record stays as graded,
the view changes) and says what changed, in the gradebook's ``overrides`` cell, feedback.md
(English and Chinese) and Gradescope's results. A row written for another file than the one
graded is withheld: the staff see it in the gradebook's cell and in what ``grade`` prints
(``file_warnings``), the student does not.
"""

import copy
import re

from grader.batch.outputs.overrides import ANY_FILE, FILE_BOUND, ORDER
from grader.batch.status import Status, flags
from grader.core.messages import say


def applied(record, book):
    """The record as the reports show it: the batch's late penalty and ``book``'s rows for its
    student applied, and what each row changed listed under ``overrides`` (empty when none).
    ``record`` is not changed: like the rows, the penalty is the staff's to change without
    regrading anyone."""
    view = copy.deepcopy(record)
    view.overrides, view.overrides_withheld = [], []
    rows = sorted(
        book.for_student(record.student) if book else [],
        key=lambda row: (ORDER[row.change], row.line),
    )
    # A change the score must be recomputed for: the late penalty, if it bites, at least.
    pending = bool(book and book.late_penalty and record.late)
    for row in rows:
        if not for_this_file(row, record):
            view.overrides_withheld.append(
                {
                    "row": row.line,
                    "change": row.change,
                    "case": row.case,
                    "to": row.value,
                    "file": row.file,
                    "reason": row.reason,
                    "by": row.by,
                    "date": row.date,
                }
            )
            continue
        if row.change == "score" and pending:
            _rescore(view, book)
            pending = False
        before, after = _CHANGERS[row.change](view, row)
        pending = pending or row.change in RESCORING
        view.overrides.append(
            {
                "row": row.line,
                "change": row.change,
                "case": row.case,
                "from": before,
                "to": after,
                "reason": row.reason,
                "by": row.by,
                "date": row.date,
            }
        )
    if pending:
        _rescore(view, book)
    view.status_kept = _status_kept(view)
    return view


RESCORING = ("late", "status", "flags", "points")


def _status_kept(view):
    """The status a view keeps although ``points`` or ``score`` rows gave it full marks, else
    "". A status says what the grader found when it ran the file (``passed``: every case's
    output matched); points are what the staff award. So points never change it, and where
    they make a file that did not pass look like one that did, the reports say it was kept."""
    changes = {entry["change"] for entry in view.overrides}
    if view.status == Status.PASSED or "status" in changes or not changes & {"points", "score"}:
        return ""
    cases_full = all(entry.points >= entry.max_points for entry in view.cases)
    return view.status if cases_full or view.score >= view.max_score else ""


def for_this_file(row, record):
    """Whether ``row`` applies to the file ``record`` graded: it names that file's sha256
    (or its start), any file, or none (a row of a file written before the column)."""
    return row.file in ("", ANY_FILE) or (record.sha256 or "").startswith(row.file)


def file_warnings(record, book):
    """What ``grade`` prints of ``record``'s rows that do not say, or no longer match,
    the file graded: withheld rows, and file-bound rows that record no file hash."""
    graded = (record.sha256 or "")[:12] or "none"
    lines = []
    for row in book.for_student(record.student) if book else []:
        what = f"row {row.line} ({_label(row.change, row.case)} {row.value})"
        if not for_this_file(row, record):
            lines.append(
                f"{record.student}: {what} was written for an earlier file (sha256 "
                f"{row.file[:12]}), not the one graded now ({graded}): not applied; "
                "write it again with this file's sha256, or 'any' in its file column"
            )
        elif not row.file and row.change in FILE_BOUND:
            lines.append(
                f"{record.student}: {what} records no file hash: applied to the "
                f"file graded now ({graded}); put its sha256 (students.csv) or "
                "'any' in the row's file column"
            )
    return lines


def _label(change, case):
    return "points " + case if change == "points" else change


def _rescore(view, book):
    """Recompute the view's score from its cases, its lateness and its speed points: a late
    submission keeps round(points * (1 - penalty), 2) of its case points (``--late-penalty``,
    kept in ``book``), its speed points whole (grader.batch.timing.speed)."""
    points = sum(entry.points for entry in view.cases)
    late = view.late and not view.late_excused
    penalty = book.late_penalty if book and late else 0
    kept_points = round(points * (1 - penalty), 2) if penalty else points
    view.late_deduction = round(points - kept_points, 2) if kept_points != points else None
    speed = view.speed or {}
    bonus = (speed.get("points") or 0) if view.status != Status.FLAGGED else 0
    view.score = kept_points + bonus


# Each changer applies one row to the view and returns (what it was, what it is now).


def _change_score(view, row):
    before, view.score = view.score, row.value
    return before, row.value


def _change_points(view, row):
    entry = view.case(row.case)
    before, entry.points = entry.points, row.value
    return before, row.value


def _change_late(view, row):
    before = "excused" if view.late_excused else ("late" if view.late else "on time")
    view.late = row.value != "extension"
    view.late_excused = row.value == "excused"
    return before, row.value


def _change_status(view, row):
    before = view.status
    if row.value == Status.FLAGGED and before != Status.FLAGGED:
        for entry in view.cases:
            entry.points = 0
    elif before == Status.FLAGGED and row.value != Status.FLAGGED:
        _unflag(view)
    view.status = row.value
    return before, row.value


def _change_flags(view, row):
    view.reviewed_flags = flags(view)
    view.flags = []
    if view.handin:
        view.handin = {**view.handin, "flags": []}
    if view.status == Status.FLAGGED:
        view.status = _unflag(view)
    return f"{len(view.reviewed_flags)} flag(s)", "cleared"


def _unflag(view):
    """A flag cleared: each case gets the points its judged output earned, the message says
    how many failed; returns the status the cases give."""
    for entry in view.cases:
        entry.points = entry.max_points if entry.passed else 0
    failing = sum(entry.status != "passed" for entry in view.cases)
    view.message = say("cases_failed", failing=failing, total=len(view.cases)) if failing else ""
    return Status.FAILED.value if failing else Status.PASSED.value


def _change_note(view, row):
    return "", row.value


def _change_alias(view, row):
    view.leaderboard_name = row.value
    return "", row.value


def _change_leaderboard(view, row):
    view.leaderboard_opt_out = True
    return "on", "off"


_CHANGERS = {
    "late": _change_late,
    "status": _change_status,
    "flags": _change_flags,
    "points": _change_points,
    "score": _change_score,
    "note": _change_note,
    "alias": _change_alias,
    "leaderboard": _change_leaderboard,
}


def summary(view):
    """The gradebook's ``overrides`` cell: every change, why, who and when, then every row
    withheld since it was written for an earlier file."""
    applied_rows = [
        f"{_label(entry['change'], entry['case'])}: "
        + (
            f"{entry['to']}"
            if entry["change"] in ("note", "alias")
            else f"{entry['from']} -> {entry['to']}"
        )
        + f" ({entry['reason']}; {entry['by']}, {entry['date']})"
        for entry in view.overrides or []
    ]
    withheld = [
        f"{_label(entry['change'], entry['case'])} {entry['to']}: not applied, written for an "
        f"earlier file (sha256 {entry['file'][:12]}) ({entry['reason']}; {entry['by']}, "
        f"{entry['date']})"
        for entry in view.overrides_withheld or []
    ]
    kept = (
        [
            f"status kept {view.status_kept}: full marks from the staff's points, but the "
            "status is what the grader found in the file; a status row changes it"
        ]
        if view.status_kept
        else []
    )
    return " | ".join(applied_rows + kept + withheld)


_MARKDOWN_SPECIAL = re.compile(r"([\\`*_\[\]<>|~&!#])")


def markdown_text(text):
    """Text the staff (or a student's id) wrote, shown literally in Markdown: printable, on
    one line, every character Markdown or HTML would act on escaped."""
    from grader.batch.names import printable

    return _MARKDOWN_SPECIAL.sub(r"\\\1", printable(" ".join(str(text).split())))


def _case_name(view, case_id):
    entry = view.case(case_id)
    return entry.id if entry.public else entry.name


def _sentences(view, entry):
    """(English, Chinese) for one applied change."""
    was, now = markdown_text(entry["from"]), markdown_text(entry["to"])
    change = entry["change"]
    if change == "score":
        return f"Score set from {was} to {now}.", f"得分由 {was} 改为 {now}。"
    if change == "points":
        name = markdown_text(_case_name(view, entry["case"]))
        return (
            f"Points of {name} set from {was} to {now}.",
            f"用例 {name} 的得分由 {was} 改为 {now}。",
        )
    if change == "status":
        return (f"Status set from `{was}` to `{now}`.", f"状态由 `{was}` 改为 `{now}`。")
    if change == "flags":
        return ("The flags were reviewed and cleared.", "标记已经复核并清除。")
    if change == "note":
        return f"Note from the staff: {now}", f"教师留言：{now}"
    if change == "alias":
        return (
            f"Your name on the class leaderboard: **{now}**.",
            f"你在班级排行榜上的名字：**{now}**。",
        )
    if change == "leaderboard":
        return (
            "You are left off the leaderboard the class sees.",
            "你不会出现在全班可见的排行榜上。",
        )
    return {
        "extension": (
            "Extension granted: the submission is not late.",
            "已准予延期：该提交不算迟交。",
        ),
        "excused": (
            "Late, excused: no points deducted for lateness.",
            "迟交已获豁免：不因迟交扣分。",
        ),
        "late": ("Counted as late.", "按迟交处理。"),
    }[entry["to"]]


def markdown(view):
    """feedback.md's section on what the staff changed, in English and Chinese."""
    entries = view.overrides or []
    if not entries:
        return []
    lines = ["", "## Changed by the course staff / 课程教师的调整", ""]
    for entry in entries:
        en, zh = _sentences(view, entry)
        why, who = markdown_text(entry["reason"]), markdown_text(entry["by"])
        lines += [
            f"- {en} Why: {why} ({who}, {entry['date']})  ",
            f"  {zh}原因：{why}（{who}，{entry['date']}）",
        ]
        if entry["change"] == "flags":
            lines += [f"  - {markdown_text(flag)}" for flag in view.reviewed_flags or []]
    kept = view.status_kept
    if kept:
        lines += [
            f"- Your status stays `{kept}`: it says what the grader found when it ran "
            "your file; the staff changed your points, not that finding.  ",
            f"  状态仍为 `{kept}`：它说明评分程序运行你的文件时发现的问题；教师调整的是"
            "得分，而不是这一结论。",
        ]
    return lines


def gradescope_tests(view):
    """results.json tests for a score set by hand: the difference it made, so the tests
    still add up to the score."""
    tests = []
    for entry in view.overrides or []:
        if entry["change"] == "score" and entry["to"] != entry["from"]:
            tests.append(
                {
                    "name": "staff adjustment",
                    "score": round(entry["to"] - entry["from"], 2),
                    "max_score": 0,
                    "status": "passed",
                    "output": f"score set by the course staff: {entry['reason']}",
                    "tags": ["override"],
                    "visibility": "visible",
                }
            )
    return tests
