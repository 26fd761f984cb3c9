"""The grading seed never reaches a student through a check's message.

Batch feedback (feedback.md, results.json) shows the messages of public cases,
and the handout ships grader/core/cases.py, which turns a seed into every hidden
shape. So the seed and the per-case seed stay in Verdict.details (the
instructor's record) and out of every message text.
"""

import torch

from grader.core import cases, checks

SEED = 918273645  # distinctive, so a leak cannot hide among other numbers


def _case(check=cases.GEMM):
    return cases.Case("small", 24, 20, 40, "tail", "tail_mask", visibility="public",
                      check=check)


def _assert_no_seed(verdict, case):
    assert not verdict.passed
    for secret in (SEED, checks.case_seed(case, SEED)):
        assert str(secret) not in verdict.message, verdict.message
    assert "seed" not in verdict.message.lower(), verdict.message


def _wrong(case):
    return torch.zeros((case.m, case.n), dtype=torch.float16)


def test_a_mismatch_message_names_no_seed_but_the_record_keeps_it():
    case = _case()
    lhs, rhs = checks.make_inputs(case, SEED, "cpu")
    verdict = checks.compare(_wrong(case), checks.reference(lhs, rhs), case, SEED)
    _assert_no_seed(verdict, case)
    assert verdict.details["seed"] == SEED
    assert verdict.details["case_seed"] == checks.case_seed(case, SEED)


def test_judge_messages_name_no_seed_for_every_kind_of_check():
    case = _case()
    lhs, rhs = checks.make_inputs(case, SEED, "cpu")
    last_tile = checks.reference(lhs[:, 32:], rhs[32:, :]).half()  # a named partial sum
    _assert_no_seed(checks.judge(case, {"out": _wrong(case)}, SEED, "cpu"), case)
    named = checks.judge(case, {"out": last_tile}, SEED, "cpu")
    assert named.mistake == "accumulator"
    _assert_no_seed(named, case)
    determinism = _case(cases.DETERMINISM)
    _assert_no_seed(checks.judge(determinism, {"first": _wrong(determinism),
                                               "second": _wrong(determinism)}, SEED, "cpu"),
                    determinism)
    coverage = _case(cases.COVERAGE)
    _assert_no_seed(checks.judge(coverage, {"prefilled": _wrong(coverage)}, SEED, "cpu"),
                    coverage)
