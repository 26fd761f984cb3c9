"""Judge what a submission's two runs sent back, and decide its status and score.

Every case is judged in the parent from the bytes the kernel run sent (grader.core.checks);
the wrapper run can only cost points. Status precedence: ``missing_file``,
``import_error``, ``not_implemented``, ``flagged`` for a kernel that uses what the grader
does not run (nothing runs, score 0; grader.batch.grade.grading decides those before any
run); ``flagged`` for a kernel run the build guard (grader.core.build_guard) or the check
of its generated kernel (grader.core.generated_kernel) stopped, score 0, each ``failed``
instead where a first-hour mistake on a line of the file explains the refusal, without a
flag where the kernel only cannot build (``refusal``); then how the kernel run ended
(``timeout``, ``memory_limit``, ``crashed``: the cases judged before keep their points);
then the wrapper run (its ending, an ``nt_gemm`` that asks to exit: ``crashed``; an
``nt_gemm`` whose result is not its kernel's: ``flagged``; one that raises: ``failed``;
each scores 0); then ``passed`` when every case passed, else ``failed``.
"""

import re

from grader.batch.isolation import conversation
from grader.batch.record import CaseEntry
from grader.batch.status import Status
from grader.core import cases as catalogue
from grader.core import build_refusal, checks, generated_kernel
from grader.core.messages import say

ROLES = {
    catalogue.GEMM: ("out",),
    catalogue.DETERMINISM: ("first", "second"),
    catalogue.COVERAGE: ("prefilled",),
}


def tidy(text):
    """Messages without the sandbox's paths."""
    text = (text or "").replace("/job/", "")
    return re.sub(r"ntgemm_submission_[0-9a-f]{16}", "ntgemm_gemm", text)


def display_names(cases_list):
    """What a student sees for each case: the id when public, a numbered name when hidden."""
    names, seen = {}, {}
    for case in cases_list:
        base = case.describe(reveal=False)
        if case.visibility != "public":
            seen[base] = seen.get(base, 0) + 1
            if sum(c.describe(reveal=False) == base for c in cases_list) > 1:
                base = base.replace(" (hidden)", f" #{seen[base]} (hidden)")
        names[case.id] = base
    return names


def judge_cases(cases_list, run, seed, unbuilt=None, source="", every=True):
    """Each case's entry. ``unbuilt``: the Build of a kernel that does not build for the
    course's GPU. It fails every case on the interpreter (``every``), whatever the worker
    sent; on a GPU it explains the cases whose launch raised."""
    names, entries = display_names(cases_list), []
    for index, case in enumerate(cases_list):
        base = dict(
            id=case.id,
            name=names[case.id],
            visibility=case.visibility,
            points=0,
            max_points=case.points,
        )
        got = run.cases.get(index)
        if unbuilt is not None and (every or (got is not None and got.error)):
            verdict = checks.build_verdict(case, unbuilt, source)
            entries.append(
                CaseEntry(
                    **base,
                    status="error",
                    passed=False,
                    message=verdict.message,
                    mistake=verdict.mistake,
                    details=verdict.details,
                )
            )
            continue
        if got is None:
            ended = run.ending.kind if run.ending.kind != "finished" else "crashed"
            # A run the build guard or the generated kernel's check stopped: refused.
            why = say("kernel_was_refused") if run.stopped else say("run_ended", ended=ended)
            entries.append(CaseEntry(**base, status="not_run", message=say("not_run", error=why)))
            continue
        if got.error:
            verdict = checks.error_verdict(case, tidy(got.error))
        elif set(got.outputs) != set(ROLES[case.check]):
            verdict = checks.Verdict(case.id, False, say("no_output"))
        else:
            verdict = checks.judge(case, got.outputs, seed, "cpu")
        status = "passed" if verdict.passed else ("error" if got.error else "failed")
        message, details = verdict.message, verdict.details
        if case.visibility != "public":
            message, details = HIDDEN_MESSAGE, {}
        entries.append(
            CaseEntry(
                **{**base, "points": case.points if verdict.passed else 0},
                status=status,
                passed=verdict.passed,
                message=message,
                mistake=verdict.mistake or "",
                details=details,
            )
        )
    return entries


# record.json lies in the student's folder, and a hidden case's message and details can
# hold its shape or values of its inputs and reference: they stay out of the record.
HIDDEN_MESSAGE = (
    "a hidden case: its message is not kept (replay it with pytest grader "
    "--seed-file OUT_DIR/.grader-secret)"
)


def _ending_message(run, who, source=""):
    """How ``run`` ended, after ``who``: the template of whose run it was."""
    if run.ending.kind == "crashed" and run.phase > 0:
        # How a process holding hidden inputs ended is the one thing it can choose to say.
        return say(who, evidence=say("ended_in_hidden"))
    detail = run.ending.detail
    if run.stage == "importing":
        detail = say("while_importing", evidence=detail)
    # Where a hang was, in the file's own words; never with hidden inputs, where the line
    # it hangs at is a channel the code could choose.
    site, lines = run.ending.where, source.splitlines()
    if run.ending.kind == "timeout" and site and run.phase <= 0 and 0 < site[0] <= len(lines):
        detail = say(
            "code_was_at", evidence=detail, line=site[0], code=lines[site[0] - 1].strip()[:120]
        )
    return say(who, evidence=detail)


def decide(record, kernel_run, wrapper_run, wrapper_job, cases_list, source=""):
    """Status, message and flags from both runs; wrapper problems zero the score."""
    entries = record.cases
    case = cases_list[wrapper_job.index]
    zero = True
    if kernel_run.load_status == "import_error":
        status, message = Status.IMPORT_ERROR, tidy(kernel_run.load_message)
    elif wrapper_run.load_status in ("import_error", "not_implemented"):
        status, message = Status(wrapper_run.load_status), tidy(wrapper_run.load_message)
    elif wrapper_run.load_status == "exited":
        status, message = Status.CRASHED, wrapper_run.load_message
    elif kernel_run.stopped:
        why = kernel_run.stopped
        status, message = refusal(
            record,
            source,
            say("guard_stopped"),
            [
                f"kernel run: {why}"
                if generated_kernel.REFUSAL in why
                else f"kernel run: the build guard stopped it at {why}"
            ],
            kernel_run.unbound,
            kernel_run.unbuildable,
        )
    elif kernel_run.ending.kind != "finished":
        status, zero = Status(kernel_run.ending.kind), False
        message = _ending_message(kernel_run, "kernel_run", source)
    elif wrapper_run.ending.kind != "finished":
        status = Status(wrapper_run.ending.kind)
        message = _ending_message(wrapper_run, "nt_gemm_run", source)
    else:
        status, message = _wrapper_verdict(record, kernel_run, wrapper_run, wrapper_job, case)
        zero = bool(status)
    if zero:
        for entry in entries:
            entry.points = 0
    if not status:
        failing = sum(entry.status != "passed" for entry in entries)
        status = Status.FAILED if failing else Status.PASSED
        message = say("cases_failed", failing=failing, total=len(entries)) if failing else ""
    record.status, record.message = status, message


def refusal(record, source, flagged_message, refused, unbound=(), unbuildable=False):
    """Status and message of a kernel the grader would not run, the score 0 either way;
    ``refused``: the lines that say why, added to the flags where the refusal is evidence.

    ``flagged`` with ``flagged_message``, unless a mistake named on a line of the file
    explains the refusal (grader.core.build_refusal, read here from the source, not from the
    worker; ``unbound`` and ``unbuildable``: the worker's word on a generated kernel refused
    for names bound nowhere, or for what no run could build, alone): then ``failed`` with
    that line. The record's findings name every finding either way. A cheat dressed as such
    a mistake gains only the word: nothing runs, and the flags keep the refusal for staff,
    unless it asked for nothing at all (a kernel that cannot build).
    """
    decision = build_refusal.decide(source, unbound, unbuildable)
    named = {finding["message"] for finding in decision.findings}
    record.findings = decision.findings + [
        finding for finding in record.findings if finding["message"] not in named
    ]
    if decision.evidence:
        record.flags += refused
    if not decision.line:
        return Status.FLAGGED, flagged_message
    return Status.FAILED, say("refused_mistake", line=decision.line)


def _wrapper_verdict(record, kernel_run, wrapper_run, job, case):
    """('', '') when nt_gemm returned exactly its kernel's output, else what went wrong."""
    import torch

    got = wrapper_run.cases.get(job.index)
    if got is None:
        return Status.CRASHED, say("nt_gemm_run", evidence=say("ended_before_return"))
    if got.exited:
        return Status.CRASHED, say("nt_gemm_run_on", case=case.id, evidence=got.error)
    if got.error:
        return Status.FAILED, f"{say('wrapper_failed', case=case.id)}\n{tidy(got.error)}"
    mine = (kernel_run.cases.get(job.index) or conversation.CaseReport()).outputs.get("out")
    theirs = got.outputs.get("out")
    passed = record.case(case.id).passed
    if not passed or mine is None or torch.equal(mine, theirs):
        return "", ""
    differing = int((mine.view(torch.int16) != theirs.view(torch.int16)).sum())
    record.flags.append(
        say("not_its_kernel_flag", case=case.id, differing=differing, total=mine.numel())
    )
    return Status.FLAGGED, say("not_its_kernel")
