"""Whether a kernel the kit's rules refused is the student's build failure or evidence.

A refusal is ``failed`` on the line that explains it where a first-hour mistake of the file
does (grader.core.source_mistakes.explain_refusal), else ``flagged``. It is also no
evidence for a review where the generated kernel was refused for what no run could build
alone (grader.core.generated_kernel.Unbuildable) and the source shows why: the names the
kernel lacks read from outside application(), or a store into a part of the output tile,
for which NineToothed writes no file Python parses. Such a kernel asked for nothing: the
batch grader keeps its refusal out of the flags, and the pytest grader says it fails.
The batch's parent and the pytest grader decide it alike, from the source.
"""

import dataclasses

from grader.core import source_mistakes
from grader.core.kernel_allowlist import Unbuildable


@dataclasses.dataclass(frozen=True)
class Decision:
    findings: list  # every finding of the source (grader.core.source_mistakes)
    line: str  # "line N: ..." that explains the refusal, or "" (then it is flagged)
    evidence: bool  # whether the refusal is kept for staff to review (the flags)


def decide(source, unbound=(), unbuildable=False):
    """The Decision on a refusal of ``source``'s kernel; ``unbound`` and ``unbuildable`` as
    grader.core.generated_kernel.KernelRejected has them (a source-level refusal: neither)."""
    findings, explaining = source_mistakes.explain_refusal(source, unbound)
    store = partial_output_store(findings) if unbuildable and not unbound else None
    line = explaining["message"] if explaining else store or ""
    return Decision(findings, line, not (unbuildable and line))


def unbuildable(violations):
    """Whether ``violations`` (of the source's allowlist or of the generated kernel) are all
    what no run could build (grader.core.kernel_allowlist.Unbuildable)."""
    return bool(violations) and all(isinstance(violation, Unbuildable) for violation in violations)


def partial_output_store(findings):
    """ "line N: ..." for application()'s first store into a slice of its output tile
    (``output[:, :] = acc``, ``output[0] += acc``; grader.core.source_slips names it), else
    None."""
    return next(
        (finding["message"] for finding in findings if finding["mistake"] == "slice_store"), None
    )
