"""What a student reads of a grade: feedback.md, and results.json in Gradescope's shape.

Both come from the record alone (grader.batch.grade.grading): the status and score, each
case, the likely mistakes (grader.core.diagnosis), the flags, the GPU build and the speed,
in English and Chinese. Hidden cases are named ``hidden_<i> (hidden)`` in everything a
student sees, with a pass/fail line and no shape, sizes or element positions.
grader.batch.outputs.reports writes them into each student's folder.
"""

import dataclasses
import re

from grader.batch.outputs import override_view
from grader.batch.outputs.feedback_opening import (
    LIBRARY_HEADING,
    SEE_LIBRARY,
    library_messages,
    library_words,
    opening_markdown,
    without_library,
)
from grader.batch.status import Status, flags
from grader.core import messages


def _public_message(entry):
    status = entry.status
    if entry.public:
        if status == "flagged" and not entry.message:
            return messages.say("flagged_see_flags")
        return entry.message
    if status == "passed":
        return "passed"
    if status == "not_run":
        return entry.message
    if status == "flagged":
        return messages.say("flagged")
    if status == "error":
        return messages.say("hidden_error")
    return messages.say("hidden_mismatch")


HIDDEN_VISIBILITY = "after_due_date"  # Gradescope shows hidden cases' results after the deadline


def public_view(record):
    """The record as a student may see it before the hidden cases are shown: the public
    cases only, their points, and a status and message that say nothing of the hidden
    ones (for Gradescope's always-visible output while hidden tests are not). Where no
    case ran, the message is the file's own (grader.core.nesting's, say), and stays."""
    public = [entry for entry in record.cases if entry.public]
    view = dataclasses.replace(
        record,
        cases=public,
        score=sum(entry.points for entry in public),
        max_score=sum(entry.max_points for entry in public),
    )
    ran = any(entry.status != "not_run" for entry in record.cases)
    if record.status in ("passed", "failed") and ran:
        failing = sum(entry.status != "passed" for entry in public)
        view.status = "failed" if failing else "passed"
        view.message = (
            messages.say("public_cases_failed", failing=failing, total=len(public))
            if failing
            else ""
        )
    return view


def results_json(record, hidden_visibility=HIDDEN_VISIBILITY, output=None, total=None):
    """The record in Gradescope's autograder results format (``specs.md`` of
    gradescope/autograder_samples): one test per case, numbered, tagged public or
    hidden, the hidden ones with ``hidden_visibility``; ``output`` (Markdown, the
    feedback) for the whole submission; the maximum in ``extra_data``, since the
    spec has no top-level ``max_score``."""
    tests = []
    for number, entry in enumerate(record.cases, start=1):
        tests.append(
            {
                "name": entry.id if entry.public else entry.name,
                "number": str(number),
                "score": entry.points,
                "max_score": entry.max_points,
                "status": "passed" if entry.status == "passed" else "failed",
                "output": _public_message(entry),
                "tags": [entry.visibility],
                "visibility": "visible" if entry.public else hidden_visibility,
            }
        )
    case_points = sum(entry.max_points for entry in record.cases)
    points = (record.speed or {}).get("points")
    if record.max_score > case_points:
        tests.append(
            {
                "name": "speed points",
                "number": str(len(tests) + 1),
                "score": points or 0,
                "max_score": record.max_score - case_points,
                "status": "passed" if points else "failed",
                "output": (record.speed or {}).get("message", ""),
                "tags": ["speed"],
                "visibility": "visible",
            }
        )
    if record.late_deduction:
        tests.append(
            {
                "name": "late penalty",
                "number": str(len(tests) + 1),
                "score": -record.late_deduction,
                "max_score": 0,
                "status": "failed",
                "output": "points deducted by the course's late policy",
                "tags": ["late"],
                "visibility": "visible",
            }
        )
    for test in override_view.gradescope_tests(record):
        tests.append({**test, "number": str(len(tests) + 1)})
    summary = f"status: {record.status}"
    if record.message:
        summary += f"\n{record.message}"
    results = {
        "execution_time": int(round(record.wall_time_s or 0)),
        "output": output or summary,
        "output_format": "md" if output else "text",
        "visibility": "visible",
        "stdout_visibility": "hidden",
        "extra_data": {"status": record.status, "max_score": record.max_score},
        "tests": tests,
    }
    show_total = hidden_visibility == "visible" if total is None else total
    if show_total:
        # A top-level score shows the total, hidden cases included, at once; without it
        # Gradescope adds up the tests, each shown when its visibility allows. The batch's
        # own results.json keeps it: its feedback.md shows every case anyway.
        results = {"score": record.score, **results}
    from grader.batch.timing import speed

    row = speed.headline(record)
    if row is not None:
        results["leaderboard"] = [
            {
                "name": f"vs torch.mm at {row['size']}",
                "value": round(row["ratio_vs_torch_mm"], 4),
                "order": "desc",
            },
            {"name": f"TFLOPS at {row['size']}", "value": round(row["tflops"], 2), "order": "desc"},
        ]
    return results


def speed_markdown(record, pictures=True):
    """The feedback's speed section: one line when nothing was timed, else a table and, per
    timed size, why this speed (benchmarks.why_speed_text)."""
    entry = record.speed
    if not entry:
        return []
    lines = ["", "## Speed / 速度", "", f"- {entry['message']}", f"- {entry.get('message_zh', '')}"]
    rows = entry.get("rows") or []
    if rows:
        tiles = entry.get("tiles")
        lines += [
            "",
            "Timed by the grader: its own launch of your kernel into a preallocated "
            "output, in alternating rounds with torch.mm on the same operands (L2 flushed, "
            "medians). / 由评测程序计时：评测程序自行启动你的 kernel（输出预先分配），与 "
            "torch.mm 在相同输入上交替计时（清空 L2，取中位数）。",
            "",
            f"Tiles / 分块: {'x'.join(map(str, tiles)) if tiles else 'unknown'}, "
            f"{entry.get('num_warps')} warps, {entry.get('num_stages')} stages",
            "",
            "| size | yours (TFLOPS) | torch.mm (TFLOPS) | vs torch.mm | roofline | spread |",
            "| --- | --- | --- | --- | --- | --- |",
        ]
        from benchmarks import report

        for row in rows:
            if row["verdict"] != "PASS":
                lines.append(f"| {row['size']} | FAIL: {row['note']} | | | | |")
                continue
            roofline = row["roofline_fraction"]
            lines.append(
                f"| {row['size']} | {row['tflops']:.1f} | {row['torch_mm_tflops']:.1f} "
                f"| {row['ratio_vs_torch_mm']:.2f}x | "
                f"{'' if roofline in (None, '') else f'{roofline:.0%}'} | "
                f"±{report.spread(row):.1%} |"
            )
    if entry.get("points") is not None:
        lines += ["", f"Speed points / 速度加分: {entry['points']}"]
    from benchmarks import why_speed, why_speed_text

    whys = why_speed.of_entry(entry, record.gpu_build)
    return lines + why_speed_text.markdown(whys) + what_if_markdown(entry, pictures)


WHAT_IF_PICTURE = "what-if.png"


def what_if_markdown(entry, pictures=True):
    """The what-if of ``grade --what-if`` (grader.batch.timing.what_if_entry): its summary,
    and the picture grader.batch.outputs.reports draws beside feedback.md when one ran
    (``pictures``: whether the page's reader gets the pictures drawn beside it)."""
    found = entry.get("what_if")
    if not found:
        return []
    from grader.batch.timing import what_if_entry

    lines = [
        "",
        "## What-if: your functions with other tiles / What-if：换用其他分块",
        "",
        "The grader rebuilt your arrangement() and application() with other block sizes, "
        "warps and stages and timed each at the first speed size. Advice only: it does "
        "not change your grade. / 评测程序用其他分块大小、warp 数和级数重建了你的 "
        "arrangement() 和 application()，并在第一个速度规模下逐一计时。仅供参考，不影响成绩。",
        "",
        *fenced("\n".join(what_if_entry.summary(found))),
    ]
    if found.get("rows") and pictures:
        lines += ["", f"![what-if: TFLOPS of each configuration]({WHAT_IF_PICTURE})"]
    return lines


def hints_for(record, cases_list):
    """The diagnosis hints (grader.core.diagnosis.explain) for a record; pure."""
    try:
        from grader.core import diagnosis
    except ImportError:
        return []
    verdicts = [
        {
            "case_id": entry.id,
            "passed": bool(entry.passed),
            "mistake": entry.mistake,
            "message": entry.message,
        }
        for entry in record.cases
        if entry.status != "not_run"
    ]
    if record.status == "not_implemented":
        verdicts = [
            {
                "case_id": case.id,
                "passed": False,
                "mistake": "not_implemented",
                "message": record.message,
            }
            for case in cases_list
        ]
    tiles = tuple(record.tiles) if record.tiles else None
    try:
        return diagnosis.explain(record.findings or [], verdicts, cases_list, tiles=tiles)
    except Exception:  # noqa: BLE001 - hints are a bonus, never a reason to fail a batch
        return []


def build_markdown(record):
    """What the kernel uses on the course's GPU (grader.core.gpu_compile), checked without one."""
    from grader.core import gpu_compile

    build = gpu_compile.Build.from_fields(record.gpu_build)
    if build is None:
        return []
    return [
        "",
        "## GPU build / GPU 编译",
        "",
        f"- {gpu_compile.summary(build)}",
        f"- {gpu_compile.summary_zh(build)}",
    ]


ARRANGEMENT_PICTURE = "arrangement.png"
# The student guide's command (section 8) that draws the picture into pictures/.
DRAW_COMMAND = (
    "python -m pytest grader --submission assignment/ninetoothed_gemm.py --pictures pictures"
)


def arrangement_markdown(record, pictures=True):
    """feedback.md's pointer to the picture of one program's tiles (grader.core.tile_picture),
    which grader.batch.outputs.reports draws beside it from the record; where the reader gets
    no picture (Gradescope), the command that draws it on their own machine."""
    picture = record.arrangement
    if not picture:
        return []
    m, n, k = picture["shape"]
    program = picture["program"]
    lines = ["", "## Your arrangement, drawn / 排布示意图", ""]
    if not pictures:
        return lines + [
            f"At M={m}, N={n}, K={k}, program {program} gets other tiles of A, B and C than "
            f"expected. `{DRAW_COMMAND}` draws them, yours beside the expected ones.",
            f"在 M={m}、N={n}、K={k} 时，第 {program} 个程序拿到的 A、B、C 块与期望的不同。"
            f"`{DRAW_COMMAND}` 会把它们画出来，你的排布与期望的排布并列。",
        ]
    return lines + [
        f"![program {program}: your tiles and the expected ones]({ARRANGEMENT_PICTURE})",
        "",
        f"The picture above draws which tiles of A, B and C program {program} gets at "
        f"M={m}, N={n}, K={k}: yours above, the expected ones below, K steps numbered in order.",
        f"上图画出了在 M={m}、N={n}、K={k} 时第 {program} "
        "个程序拿到的 A、B、C 块：上面一行是你的排布，下面一行是期望的排布，K 方向的块按顺序编号。",
    ]


def bilingual_item(line, label="", label_zh=""):
    """``line`` as a list item after ``label``, and under it its Chinese after ``label_zh``
    where a template of grader.core.messages wrote it."""
    zh = messages.line_zh(line)
    return [f"- {label}{line}  ", f"  {label_zh}{zh}"] if zh else [f"- {label}{line}"]


def chinese_block(text):
    """The Chinese of the lines of ``text`` the kit wrote (grader.core.messages), fenced as
    the English is, to go under it; nothing when no line is the kit's."""
    zh = messages.chinese(text)
    return ["", *fenced(zh)] if zh else []


def fenced(text):
    """``text`` as a code block whose fence is longer than any run of backticks in it: a
    message is the student's (an assert's text, an exception's), and a line of ``` in it
    would close a plain fence and have the rest read as markdown (a forged score line)."""
    longest = max((len(run) for run in re.findall("`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return [fence + "text", text, fence]


def zeroed_markdown(record):
    """Why a case marked passed scores 0: the status zeroed the whole score (a timeout, a
    crash, a flag, nt_gemm failing), which the case table alone does not say."""
    if not any(
        entry.status == "passed" and entry.points < entry.max_points for entry in record.cases
    ):
        return []
    status = record.status
    return [
        "",
        f"The cases marked passed score 0 because the status `{status}` sets the whole "
        f"score to 0. / 标记为 passed 的用例得 0 分，是因为状态 `{status}` 使整份成绩记为 0 分。",
    ]


def feedback_markdown(record, hints, pictures=True):
    """The page a student reads; ``pictures``: whether the pictures drawn beside feedback.md
    reach its reader (they do through ``share``, not on Gradescope)."""
    status = Status(record.status)
    en, zh = status.en, status.zh
    lines = [
        f"# ntgemm feedback: {record.student}",
        "",
        f"**Score / 得分: {record.score} / {record.max_score}**  ",
        f"**Status / 状态: `{record.status}`**",
        *opening_markdown(record, hints),
        "",
        f"- {en}",
        f"- {zh}",
    ]
    said = library_messages(record)
    if record.message:
        message = without_library(record.message.strip(), said)
        lines += ["", *fenced(message), *chinese_block(message)]
    if said:
        lines += ["", *LIBRARY_HEADING]
        for words in said:
            lines += ["", *fenced(words)]
    if record.taken:
        taken = override_view.markdown_text(record.taken)
        lines += [
            "",
            f"- Graded {taken}, your only Python file, in place of "
            f"ninetoothed_gemm.py. / 你只交了一个 Python 文件 {taken}，按 "
            "ninetoothed_gemm.py 评分。",
        ]
    confirmed = record.confirmed or {}
    if confirmed.get("first_cut_short_s") and status is Status.TIMEOUT:
        seconds = f"{confirmed['first_cut_short_s']:g}"
        lines += [
            "",
            f"- In the first pass a run of it finished no step for {seconds} s; it was "
            "graded again after the class with the whole time limit, beside only the "
            "other files graded again, and timed out. / 第一轮评分中它有一次运行 "
            f"{seconds} 秒内没有完成任何一步；全班评完后，按完整时限、只与其他重评的"
            "提交一起又评了一次，仍然超时。",
        ]
    elif confirmed and status is Status.TIMEOUT:
        lines += [
            "",
            "- It timed out twice: graded again after the class, beside only the "
            "other files graded again. / 两次超时：全班评完后，只与其他重评的提交一起"
            "又评了一次，仍然超时。",
        ]
    lines += uploaded_markdown(record) + seen_markdown(record)
    if record.late_deduction:
        lines += [
            "",
            f"- Late: {record.late_deduction} points deducted by the course's late "
            "policy. / 迟交：按课程的迟交规定扣除 "
            f"{record.late_deduction} 分。",
        ]
    lines += override_view.markdown(record)
    if flags(record) and record.status == "flagged":
        lines += ["", "## Anti-cheat evidence / 违规证据", ""]
        lines += [line for flag in flags(record) for line in bilingual_item(flag)]
    elif flags(record):
        lines += [
            "",
            "## For review, grade unchanged / 待复核（成绩不变）",
            "",
            "These do not change your score; your instructor will look at them. / "
            "以下标记不影响你的得分，老师会人工复核。",
            "",
        ]
        lines += [line for flag in flags(record) for line in bilingual_item(flag)]
    lines += arrangement_markdown(record, pictures)
    lines += build_markdown(record)
    lines += speed_markdown(record, pictures)
    lines += leaderboard_markdown(record)
    lines += ["", "## Cases / 测试用例"] + zeroed_markdown(record)
    lines += ["", "| case / 用例 | points / 得分 | result / 结果 |", "| --- | --- | --- |"]
    details, shown = [], {}
    for entry in record.cases:
        public = entry.public
        name = entry.id if public else entry.name
        lines.append(f"| {name} | {entry.points}/{entry.max_points} | {entry.status} |")
        if public and entry.status not in ("passed", "not_run") and entry.message:
            message = entry.message.strip()[:3000]
            if message in shown:
                details += [
                    f"### {name}",
                    "",
                    f"The same message as {shown[message]} above. / "
                    f"与上面 {shown[message]} 的信息相同。",
                    "",
                ]
                continue
            shown[message] = name
            kit, theirs = library_words(message)
            details += [f"### {name}", "", *fenced(kit), *chinese_block(kit), ""]
            details += [SEE_LIBRARY, ""] if theirs else []
        elif not public and entry.status != "passed":
            shown = _public_message(entry)
            zh = messages.line_zh(shown)
            details += [f"### {name}", "", shown + (f"  \n{zh}" if zh else ""), ""]
    if details:
        lines += ["", "## Details / 详情", ""] + details
    return "\n".join(lines + [""])


UPLOADED_SHOWN = 20  # names listed of an upload without ninetoothed_gemm.py; the rest counted


def uploaded_markdown(record):
    """What a student whose upload has no ninetoothed_gemm.py handed in instead
    (``uploaded``: the names, which grader.batch.packaging.gradescope adds, since there the
    folder is the upload as the student named it), and the name the grader looks for."""
    if record.uploaded is None:
        return []
    names = [override_view.markdown_text(name) for name in record.uploaded[:UPLOADED_SHOWN]]
    more = len(record.uploaded) - len(names)
    en = ", ".join(names) + (f" and {more} more" if more > 0 else "") if names else "no file"
    zh = (
        "、".join(names) + (f" 等共 {len(record.uploaded)} 个文件" if more > 0 else "")
        if names
        else "没有文件"
    )
    return [
        "",
        f"- You uploaded: {en}. The grader grades only a file named "
        "ninetoothed_gemm.py: rename yours to that name and upload it again.",
        f"- 你上传的是：{zh}。评测程序只评测名为 ninetoothed_gemm.py 的文件："
        "请把你的文件改成这个名字后重新上传。",
    ]


def seen_markdown(record):
    """The student's other entries and files that intake saw and did not grade, with why
    (grader.batch.grade.intake's rules), so a student who handed in twice knows which counted."""
    seen = record.seen or []
    if not seen:
        return []
    graded = override_view.markdown_text(record.origin)
    lines = [
        "",
        f"- Graded {graded}. Also seen, not graded: / 评分用的是 {graded}。"
        "另外看到、但没有评分的：",
    ]
    for entry in seen:
        why = entry["why"]
        zh = messages.chinese(why)
        lines.append(
            f"  - {override_view.markdown_text(entry['path'])}: "
            f"{override_view.markdown_text(why)}"
            + (f" / {override_view.markdown_text(zh)}" if zh else "")
        )
    return lines


def leaderboard_markdown(view):
    """feedback.md's line on the class leaderboard: the pseudonym of a timed student who
    chose nothing (grader.batch.outputs.override_view.markdown shows what a student chose), where the
    batch writes a class board (grader.batch.outputs.reports.write_feedback names the student)."""
    from grader.batch.timing import speed

    chosen = {entry["change"] for entry in view.overrides or []} & {"alias", "leaderboard"}
    if speed.headline(view) is None or chosen or not view.leaderboard_name:
        return []  # not on a class board (Gradescope's), or the staff's section says it
    shown = override_view.markdown_text(view.leaderboard_name)
    return [
        "",
        f"- On the class leaderboard you are **{shown}**.",
        f"- 在全班可见的排行榜上，你的名字是 **{shown}**。",
    ]
