"""The what-if of one timed student (``grade --what-if``), as its record keeps it.

The worker's claims (grader.batch.inside.protocol.WhatIfPlan and WhatIfTiming, each
configuration one of benchmarks.what_if.CANDIDATES, every number bounded) become the
benchmark's what-if rows (benchmarks.what_if_output.rows), with the student's own row
taken from the graded timing at the first speed size, so that the what-if and the speed
section show one number for it. It is advice: nothing here reaches a score, a status or
a flag.
"""

from benchmarks import what_if, what_if_output
from benchmarks.harness import parse_size, size_label
from benchmarks.timing import Timing


def entry(run, record):
    """The record's ``speed.what_if``: the size, why nothing ran or the rows, and how long
    the what-if held the GPU."""
    size = run.sizes[0]
    base = {"size": size_label(*size), "gpu_s": round(run.what_if_gpu_s, 2)}
    if not run.what_if_s:  # grader.batch.timing.speed: a retry times without it
        return {
            **base,
            "status": "not_run",
            "rows": [],
            "message": "The what-if did not run: the first timing run ended early, and "
            "its retry timed the kernel without it",
            "message_zh": "what-if 未运行：第一次计时进程提前结束，重试时不再运行 what-if",
        }
    if run.what_if is None:
        why = _ending(run, "the timing run ended first")
        return {
            **base,
            "status": "not_run",
            "rows": [],
            "message": f"The what-if did not run: {why}",
            "message_zh": f"what-if 未运行：{why}",
        }
    if run.what_if.reason:
        en, zh = what_if.reason_text(run.what_if)
        return {
            **base,
            "status": "not_run",
            "rows": [],
            "message": f"No what-if: {en}",
            "message_zh": f"未运行 what-if：{zh}",
        }
    theirs = [_theirs(run, record)] if record.tiles else []  # tiles unread: no row
    table = what_if_output.rows(theirs + [_other(found) for found in run.what_ifs], size)
    status, message, message_zh = "run", "", ""
    if not run.what_if_done:
        status = "incomplete"
        why = _ending(run, "it ended early")
        message = f"The what-if ended before every configuration was tried: {why}"
        message_zh = f"what-if 在试完所有配置之前结束：{why}"
    return {**base, "status": status, "rows": table, "message": message, "message_zh": message_zh}


def _ending(run, otherwise, limit=300):
    """Why the run ended, in at most ``limit`` characters: the parent's words, which can quote
    a worker's malformed report at length."""
    why = (run.ending.detail if run.ending else "") or otherwise
    return why if len(why) <= limit else why[:limit] + " [...]"


def _theirs(run, record):
    config = what_if.Config.launched(
        record.tiles, run.launch.get("num_warps"), run.launch.get("num_stages")
    )
    graded = run.results[0]
    if graded.verdict != "PASS":
        return what_if.Outcome(config, True, what_if.WRONG, "wrong at the graded size")
    return what_if.Outcome(
        config, True, what_if.TIMED, kernel=Timing(*graded.kernel), torch_mm=Timing(*graded.torch)
    )


def _other(found):
    return what_if.Outcome(
        what_if.Config(*found.config),
        False,
        found.status,
        found.note,
        kernel=found.kernel and Timing(*found.kernel),
        torch_mm=found.torch and Timing(*found.torch),
    )


def summary(entry_):
    """The feedback's lines for a record's ``speed.what_if`` (English, then Chinese)."""
    if entry_["status"] == "not_run":
        return [entry_["message"], entry_["message_zh"]]
    lines = what_if_output.summary_of(entry_["rows"], parse_size(entry_["size"])).splitlines()
    return lines + ([entry_["message"], entry_["message_zh"]] if entry_["message"] else [])
