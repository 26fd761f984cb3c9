"""What a student's page says first, and the library's words said once.

A page opens with the likely mistake (grader.core.diagnosis's hints), or says that no known
mistake matches, and, where the arrangement passed the symbolic check, that it looks right
and application() is where to look: before any status line, traceback or case. What
NineToothed or Triton raised is often the same for every case and for nt_gemm's own call;
the page shows it once, under a heading that says whose words they are, and each place that
raised it points there.
"""

from grader.core import messages
from grader.core.checks import library_words


def opening_markdown(record, hints):
    """The page's first section: the hints, most likely first, or why there is none."""
    lines = ["", "## Likely mistake / 可能的错误", ""]
    if hints:
        for hint in hints:
            lines += [
                f"### {hint['title']} / {hint['title_zh']}",
                "",
                hint["en"],
                "",
                hint["zh"],
                "",
            ]
            for evidence in hint.get("evidence") or []:
                lines += _item(evidence, "evidence / 依据: ", "依据：")
            lines.append("")
        return lines[:-1]
    if record.status == "passed":
        return lines + ["No known mistake: every case passed. / 没有已知的错误：所有用例都通过了。"]
    lines.append(
        "No known mistake matches what your file did; the status and the cases below say "
        "what went wrong. / 没有已知的错误与之相符；下面的状态和用例说明了哪里出了问题。"
    )
    if record.layout_ok:
        lines += [
            "",
            "Your arrangement looks right (every program gets the tiles it should, "
            "checked symbolically): look at application(). / 你的排布看起来是对的"
            "（符号检查表明每个程序拿到的块都正确）：请检查 application()。",
        ]
    return lines


def _item(line, label, label_zh):
    zh = messages.line_zh(line)
    return [f"- {label}{line}  ", f"  {label_zh}{zh}"] if zh else [f"- {label}{line}"]


LIBRARY_HEADING = (
    "## What NineToothed or Triton said / NineToothed 或 Triton 的原话",
    "",
    "The library's own message, as it raised it; the likely mistake above says "
    "what to change. / 这是库本身抛出的原话；该改什么见上面的可能的错误。",
)
SEE_LIBRARY = (
    "(NineToothed's or Triton's message: see \"What NineToothed or Triton said\") / "
    "（NineToothed 或 Triton 的原话见“NineToothed 或 Triton 的原话”一节）"
)


def library_messages(record):
    """Each distinct text NineToothed or Triton raised in the record's public cases, in
    order."""
    found = []
    for entry in record.cases:
        if entry.public and entry.status == "error":
            theirs = library_words(entry.message or "")[1]
            if theirs and theirs not in found:
                found.append(theirs)
    return found


def without_library(text, found):
    """``text`` (a status message) with a traceback ending in one of ``found``'s errors
    replaced by a pointer to where the page shows it; else ``text``."""
    head, _, rest = text.partition("\n")
    raised = {line.strip() for words in found for line in words.splitlines()}
    if rest and rest.splitlines()[0].strip() in raised:
        return f"{head}\n{SEE_LIBRARY}"
    return text
