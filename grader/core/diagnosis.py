"""Name the likely mistake behind a failing submission: ``explain``, which is pure.

``explain(findings, verdicts, cases)`` weighs the findings on the file's own lines
(grader.core.source_mistakes) and on its arrangement (grader.core.layout.inspect_arrangement,
which runs the student's code) against which cases failed, and returns a short, ordered
list of hints. The two are kept apart so the batch grader can inspect next to the student
code and explain in a process that never imports it.

A hint is only worth giving when it is right, so it stays quiet when the evidence is thin:
a pattern of failures that fits no known mistake yields no hint.
"""

import re

from grader.core import mistakes
from grader.core.layout import ceil_div
from grader.core.messages import say

# Block sizes tried when the failure pattern is read without the tiles at hand.
_CANDIDATE_BLOCKS = (16, 32, 64, 128, 256)


def explain(findings, verdicts, cases, tiles=None, reveal=False):
    """Turn symbolic findings and the pattern of failed cases into ordered hints.

    ``verdicts`` are grader.core.checks.Verdict objects (or dicts with the same
    fields); ``cases`` the catalogue cases they belong to. Returns a list of
    ``grader.core.mistakes.hint(key)`` dicts, each with an ``evidence`` list of
    strings, most likely cause first. No failure, no hint, but for a mistake that costs only
    on a GPU (``_GPU_ONLY``), which its finding names whatever the cases say.

    ``tiles`` is the optional (BM, BN, BK) from ``tile_sizes``; without it the
    failure patterns are tried against the usual power-of-two block sizes.
    ``reveal`` lets the evidence name hidden cases' shapes (the pytest grader,
    whose test ids show them anyway); feedback for a class keeps it False.
    """

    by_id = {case.id: case for case in cases}
    results = []
    for verdict in verdicts:
        case_id, passed, mistake, message = _verdict_fields(verdict)
        if case_id in by_id:
            results.append((by_id[case_id], passed, mistake, message))
    failed = [(case, mistake, message) for case, passed, mistake, message in results if not passed]
    if not failed:
        return _finish(_gpu_only(findings, {}))

    hints = {}  # key -> evidence list, in insertion order

    def add(key, evidence):
        if key not in mistakes.MISTAKES:
            return
        bucket = hints.setdefault(key, [])
        for line in evidence:
            if line and line not in bucket:
                bucket.append(line)

    named = {}
    for case, mistake, message in failed:
        if mistake:
            named.setdefault(mistake, []).append((case, message))

    # 1. The file cannot be run at all: that is the whole story.
    for key in mistakes.found_by(mistakes.FILE):
        if key in named:
            add(key, [_first_line(named[key][0][1])])
    if hints:
        return _finish(hints)

    # 2. Right at the file's own block sizes, wrong only where the grader built it at
    #    others (grader.core.retile): two block sizes swapped, which equal sizes hide.
    own = [passed for case, passed, _, _ in results if not case.blocks]
    if (
        own
        and all(own)
        and all(case.blocks and mistake != "fixed_tiles" for case, mistake, _ in failed)
    ):
        tiles_text = ", ".join(sorted({"x".join(map(str, case.blocks)) for case, _, _ in failed}))
        add(
            "block_order",
            [
                say(
                    "block_order",
                    tiles=tiles_text,
                    failed=_examples([case for case, _, _ in failed], reveal),
                )
            ],
        )
        return _finish(hints)

    # 3. What the file's lines and its arrangement show: sure of its cause, a finding is
    #    said alone, with nothing read from the outputs beside it.
    unexplained = any(
        not mistake or mistake in ("build_error", "grid_mismatch") for _, mistake, _ in failed
    )
    for finding in sure_findings(findings, "build_error" in named, unexplained):
        add(finding["mistake"], [finding["message"]])
    if hints:
        return _finish(_gpu_only(findings, hints))

    # 4. Mistakes the checks named themselves, and kernels that would not build: only where
    #    the checks name every failure, since a wrong output can match a mistake's by chance
    #    (an output of zeros is a float16 running sum of the cancellation case's products).
    for key in (
        mistakes.found_by(mistakes.OUTPUT) if all(mistake for _, mistake, _ in failed) else ()
    ):
        if key in named:
            cases_named = [case for case, _ in named[key]]
            # Only a case the student may see is quoted: a hidden case's message holds its shape.
            shown = [
                message for case, message in named[key] if reveal or case.visibility == "public"
            ]
            if not shown:
                add(key, [say("hidden_failed", **_count(cases_named))])
                continue
            # A recognised partial sum, or the stack's own error, is the message's last line.
            line = (
                (shown[0].splitlines() or [""])[-1]
                if mistakes.MISTAKES[key].evidence_on_last_line
                else _first_line(shown[0])
            )
            add(key, [say("failed_with", line=line, **_count(cases_named))])

    # 5. The shape of the failures, for mismatches the checks could not name.
    plain = [(case, passed) for case, passed, mistake, _ in results if passed or not mistake]
    if any(not passed for _, passed in plain):
        for key, evidence in _patterns(plain, tiles, reveal):
            add(key, evidence)
            break  # the first pattern that fits is the one worth saying
    return _finish(_gpu_only(findings, hints))


def case_cause(verdict, findings):
    """The key of the likely cause shown under one failing case (grader.core.suite), or "":
    a file that cannot run says so; else the first of ``sure_findings``, else the check's
    own, but for a kernel that did not build, which the case's message says already and
    which names no cause."""
    key = _verdict_fields(verdict)[2]
    if key in mistakes.found_by(mistakes.FILE):
        return key  # the file cannot run at all: that is the whole story
    sure = sure_findings(
        findings, key == "build_error", not key or key in ("build_error", "grid_mismatch")
    )
    if sure:
        return sure[0]["mistake"]
    return "" if key == "build_error" else key


# A finding that names its line: read from the file's own text (grader.core.source_mistakes,
# grader.core.size_slips), or where the arrangement raised.
_ON_A_LINE = re.compile(r"^line \d+\b")
# Layout findings that a right file can show too: said only where the checks name nothing.
_SOFT = ("missing_squeeze",)
# A failure of the arrangement itself: said only where the kernel did not build either.
_UNBUILT = ("build_error", "arrangement_error")


def sure_findings(findings, unbuilt, unexplained):
    """The findings a failing file is told, sure of their cause: those on a line of the file
    if any, else those of its arranged shapes. ``unbuilt``: some case's kernel did not
    build, the only case where an arrangement that fails on symbolic tensors is said;
    ``unexplained``: some failure is named by no check, the only case where a soft finding
    is said. A mistake that costs only on a GPU is left to ``_gpu_only``."""
    kept = [
        finding
        for finding in findings or ()
        if isinstance(finding, dict)
        and finding.get("mistake") in mistakes.MISTAKES
        and finding["mistake"] not in _GPU_ONLY
        and (unbuilt or finding["mistake"] not in _UNBUILT)
        and (unexplained or finding["mistake"] not in _SOFT)
    ]
    lined = [finding for finding in kept if _ON_A_LINE.match(finding.get("message", ""))]
    return lined or kept


# Mistakes that cost only on a GPU: named whatever the interpreter's cases say, even when
# all passed, or when a GPU run's time ran out before any failed.
_GPU_ONLY = ("debug_print",)


def _gpu_only(findings, hints):
    """``hints`` after the mistakes that cost only on a GPU, which come first: whatever the
    cases say, the file must lose them before it is handed in."""
    first = {}
    for finding in findings or ():
        key = finding.get("mistake") if isinstance(finding, dict) else None
        if key in _GPU_ONLY:
            first.setdefault(key, []).append(finding.get("message", ""))
    return {**first, **{key: evidence for key, evidence in hints.items() if key not in first}}


def _verdict_fields(verdict):
    if isinstance(verdict, dict):
        return (
            verdict.get("case_id"),
            verdict.get("passed"),
            verdict.get("mistake") or "",
            verdict.get("message") or "",
        )
    return verdict.case_id, verdict.passed, verdict.mistake or "", verdict.message or ""


def _patterns(results, tiles=None, reveal=False):
    """Known failure shapes, most specific first; yields (key, evidence)."""
    passed = [case for case, ok in results if ok]
    failed = [case for case, ok in results if not ok]
    if not passed:
        return  # everything fails: the pattern says nothing about which mistake
    if tiles:
        block_ms, block_ns, block_ks = (tiles[0],), (tiles[1],), (tiles[2],)
    else:
        block_ms = block_ns = block_ks = _CANDIDATE_BLOCKS

    # Right whenever K fits in one tile, wrong whenever it needs several.
    for bk in block_ks:
        single = [case for case, _ in results if case.k <= bk]
        multi = [case for case, _ in results if case.k > bk]
        if single and multi and set(single) <= set(passed) and set(multi) <= set(failed):
            yield (
                "accumulator",
                [
                    say(
                        "one_k_tile",
                        single=_examples(single, reveal),
                        multi=_examples(multi, reveal),
                        block_k=bk,
                    )
                ],
            )
            return

    # Wrong exactly when K is not a multiple of the K tile.
    for bk in block_ks:
        ragged = [case for case, _ in results if case.k % bk]
        even = [case for case, _ in results if not case.k % bk]
        if ragged and even and set(ragged) <= set(failed) and set(even) <= set(passed):
            yield (
                "k_tail",
                [
                    say(
                        "ragged_k",
                        block_k=bk,
                        ragged=_examples(ragged, reveal),
                        even=_examples(even, reveal),
                    )
                ],
            )
            return

    # Squares pass, other shapes fail.
    squares = [case for case in passed if case.m == case.n]
    if squares and all(case.m != case.n for case in failed):
        others_pass = [case for case in passed if case.m != case.n]
        grid_square = lambda case, bm, bn: ceil_div(case.m, bm) == ceil_div(case.n, bn)
        for bm in block_ms:
            for bn in block_ns:
                if all(not grid_square(case, bm, bn) for case in failed) and all(
                    grid_square(case, bm, bn) for case in others_pass
                ):
                    yield (
                        "expand_axis",
                        [
                            say(
                                "squares_pass",
                                squares=_examples(squares, reveal),
                                failed=_examples(failed, reveal),
                            )
                        ],
                    )
                    return

    # Only shapes with a partial tile in M or N fail.
    # Unlike the patterns above this one only runs one way (a mistake may spare
    # some tails), so it asks for more: most tailed cases fail, and without the
    # real tiles only the common sizes up to 128 are tried.
    for bm in block_ms if tiles else _CANDIDATE_BLOCKS[:4]:
        for bn in block_ns if tiles else _CANDIDATE_BLOCKS[:4]:
            tailed = [case for case, _ in results if case.m % bm or case.n % bn]
            whole = [case for case in passed if not (case.m % bm or case.n % bn)]
            tailed_failing = [case for case in tailed if case in failed]
            if (
                len(whole) >= 2
                and len(tailed_failing) == len(failed)
                and 2 * len(tailed_failing) >= len(tailed)
            ):
                yield (
                    "tail_mask",
                    [
                        say(
                            "partial_tiles_fail",
                            failed=_examples(failed, reveal),
                            whole=_examples(whole, reveal),
                        )
                    ],
                )
                return

    # One target shared by every failing case: the catalogue says what it is for.
    targets = {case.targets for case in failed}
    if len(targets) == 1:
        yield targets.pop(), [say("same_target", failed=_examples(failed, reveal))]


def _examples(cases, reveal=False, limit=3):
    ordered = sorted(cases, key=lambda case: case.visibility != "public")  # stable
    names = list(dict.fromkeys(case.describe(reveal=reveal) for case in ordered))
    shown = ", ".join(names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


def _count(cases):
    """The fields of a count of cases in a template: how many, and the plural's s."""
    return {"count": len(cases), "s": "" if len(cases) == 1 else "s"}


def _first_line(text):
    for line in str(text).splitlines():
        if line.strip():
            return line.strip()
    return ""


def _finish(hints):
    ordered = []
    for key, evidence in hints.items():
        entry = mistakes.hint(key)
        entry["evidence"] = evidence
        ordered.append(entry)
    return ordered
