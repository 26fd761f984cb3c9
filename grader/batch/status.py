"""How a submission ended, and how a command ends: declared once, here.

The gradebook, the feedback, the class chart and the instructor reference's table all
read ``Status``; ``grader/tests/test_status.py`` checks the reference against it.
"""

import enum
import re
import sys

from grader.batch.names import printable


class Status(str, enum.Enum):
    """A submission's one status, in the grading contract's order.

    Each says, in English and Chinese, what the student reads first, and what it
    asks of the staff (``attention``: 0 nothing, 1 a look at the work, 2 a look
    at the evidence, 3 a look at why nothing could be graded), which the class
    chart orders and colours by.
    """

    PASSED = ("passed", 0, "Every case passed.", "所有测试用例均通过。")
    FAILED = ("failed", 1, "Some cases failed; see below.", "部分测试用例未通过，详见下文。")
    NOT_IMPLEMENTED = (
        "not_implemented",
        3,
        "The file still has the skeleton's placeholders.",
        "文件中仍保留着骨架代码的占位部分。",
    )
    IMPORT_ERROR = ("import_error", 3, "The file could not be imported.", "文件无法导入。")
    MISSING_FILE = (
        "missing_file",
        3,
        "No ninetoothed_gemm.py was found for you.",
        "没有找到你的 ninetoothed_gemm.py。",
    )
    TIMEOUT = ("timeout", 3, "Grading stopped at the time limit.", "评测超过了时间限制，已被终止。")
    CRASHED = (
        "crashed",
        3,
        "The process running your code ended abnormally.",
        "运行你代码的进程异常退出。",
    )
    MEMORY_LIMIT = (
        "memory_limit",
        3,
        "Your code used more host memory than allowed.",
        "你的代码使用的内存超过了限制。",
    )
    FLAGGED = (
        "flagged",
        2,
        "Flagged for review, score 0: arrangement() or application() uses what a kernel "
        "may not, or nt_gemm did not return exactly what its own kernel wrote (see the "
        "evidence below).",
        "已被标记待复核，得 0 分：arrangement() 或 application() 用到了 kernel 不允许使用的"
        "内容，或者 nt_gemm 返回的不是它自己的 kernel 写出的结果（见下方证据）。",
    )

    def __new__(cls, value, attention, en, zh):
        member = str.__new__(cls, value)
        member._value_ = value
        member.attention, member.en, member.zh = attention, en, zh
        return member

    def __str__(self):
        return self.value

    __hash__ = str.__hash__  # a dict keyed by statuses also answers to the plain strings

    @classmethod
    def by_attention(cls):
        """The statuses as the class chart lists them: what needs the staff least first."""
        return sorted(cls, key=lambda status: status.attention)


class ExitCode(enum.IntEnum):
    """What ``python -m grader`` (and the worker, for a bad command line) exits with."""

    OK = 0
    FAILURE = 1
    USAGE = 2
    STOPPED = 3  # a worker the build guard ended (grader.core.build_guard)
    INTERRUPTED = 130


class GraderError(Exception):
    """The grader cannot do its job (ExitCode.FAILURE); the message says what to fix."""


def say(message):
    """A line for whoever runs the command, on stderr: stdout stays for data."""
    print(message, file=sys.stderr, flush=True)


def report(message, bar=None):
    """A result line (a student's verdict, a batch's summary), on stdout, so that a pipe or a
    file gets the results without the notes and the progress bar, which go to stderr.
    Through ``bar`` (a tqdm bar), which clears itself around the line."""
    if bar is None:
        print(message, flush=True)
    else:
        bar.write(message, file=sys.stdout)
        sys.stdout.flush()


def flags(record):
    """Every flag of a record: the grading's own, then the hand-in check's
    (grader.batch.timing.handin)."""
    return list(record.flags) + list((record.handin or {}).get("flags") or [])


REASON_LIMIT = 300  # characters of the gradebook's message cell


def reason(record):
    """Why a record has its status, in one line: the gradebook's ``message`` column, so that
    a TA sorting the gradebook sees it without opening each feedback.md.

    A flagged record's first flag (its message only points at the flags); else the first
    line of its message, and for failed cases the first that failed, with the first line
    of its message when it is public (a hidden case's is not kept). Empty for a clean pass;
    printable (a student's exception text may hold escapes), at most REASON_LIMIT
    characters."""
    listed = flags(record)
    if record.status in LIMITS:
        # How a run met its limit (its seconds, which clock, where the code was) differs
        # from one run of the same file to the next; the column is the verdict's.
        who = _first_line(record.message).split(":", 1)[0]
        text = f"{who}: {LIMITS[record.status]}" if who else LIMITS[record.status]
    elif record.status == Status.FLAGGED and listed:
        # A flag may span lines (a refusal lists its violations): one line here, as the cell
        # is, never its line breaks escaped into the text.
        text = " ".join(listed[0].split()) + (
            f" (and {len(listed) - 1} more flag(s))" if len(listed) > 1 else ""
        )
    else:
        text = _first_line(record.message)
        failed = [entry for entry in record.cases if entry.status in ("failed", "error")]
        if record.status == Status.FAILED and failed:
            first = failed[0]
            said = _first_line(first.message) if first.public else ""
            shown = first.id if first.public else first.name
            text = "; ".join(
                part for part in (text, f"first: {shown}" + (f": {said}" if said else "")) if part
            )
    # Seconds measured by this run ("still running after 63.2 s") differ from one run of the
    # same file to the next; the column is the verdict's, so a regrade reads the same.
    text = printable(MEASURED.sub("… s", text))
    return text if len(text) <= REASON_LIMIT else text[: REASON_LIMIT - 3] + "..."


MEASURED = re.compile(r"\b\d+(?:\.\d+)? s\b")
LIMITS = {
    Status.TIMEOUT: "stopped at its time limit (feedback.md says more)",
    Status.MEMORY_LIMIT: "stopped at its memory limit (feedback.md says more)",
}


def _first_line(text):
    return next((line.strip() for line in (text or "").splitlines() if line.strip()), "")
