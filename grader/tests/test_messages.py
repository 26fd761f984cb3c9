"""Case messages and evidence lines in English and Chinese (grader.core.messages): each
template reads back as its own Chinese, a student's page shows the Chinese of the kit's
lines under the English, and what records and the gradebook keep stays English."""

import string

import pytest
import torch

from grader.batch.outputs import feedback
from grader.batch.status import reason
from grader.core import cases, checks, diagnosis, messages


def fields_of(template):
    return {field for _, field, _, _ in string.Formatter().parse(template) if field}


@pytest.mark.parametrize("key", list(messages.TEMPLATES))
def test_each_template_reads_back_as_its_own_chinese(key):
    english, chinese = messages.TEMPLATES[key]
    assert fields_of(chinese) <= fields_of(english)
    written = messages.say(key, **{field: 7 for field in fields_of(english)})
    assert messages.line_zh(written) == chinese.format(**{f: "7" for f in fields_of(chinese)})


def test_raw_error_text_has_no_chinese_and_a_quoted_kit_line_is_translated():
    assert messages.chinese("IndexError: out of range\n  File 'x.py', line 3") == ""
    line = messages.say("float16_sum", block_k=32)
    quoted = messages.say("failed_with", count=1, s="", line=line)
    assert messages.line_zh(quoted) == ("1 个用例失败，信息为：输出恰好等于把 32 宽的 K tile "
                                        "乘积逐个加进 float16 累加和的结果：累加器丢掉了 float32 "
                                        "求和会保留的小项")


def public_case():
    return next(case for case in cases.catalogue(cases.DEFAULT_SEED, "interpreter")
                if case.visibility == "public" and case.check == cases.GEMM)


def test_a_mismatch_shows_its_chinese_under_the_english_and_the_gradebook_stays_english():
    case = public_case()
    verdict = checks.compare(torch.zeros(case.m, case.n, dtype=torch.float16),
                             torch.ones(case.m, case.n), case, cases.DEFAULT_SEED)
    verdict.message += "\nValueError: raw words of the stack"
    entry = {"id": case.id, "name": case.id, "visibility": "public", "status": "failed",
             "points": 0, "max_points": case.points, "message": verdict.message}
    record = {"student": "ada", "status": "failed", "score": 0, "max_score": case.points,
              "message": messages.say("cases_failed", failing=1, total=1), "flags": [],
              "cases": [entry]}
    hints = [{"title": "t", "en": "e", "zh": "z",
              "evidence": [messages.say("same_target", failed=case.id), "a raw line"]}]
    page = feedback.feedback_markdown(record, hints)
    total = case.m * case.n
    assert f"{total} of {total} elements outside" in page
    assert f"{total} 个元素中有 {total} 个超出" in page and "误差最大处在" in page
    assert "1 个用例中有 1 个未通过" in page
    assert f"  依据：每个失败的用例都是针对这个错误设计的（{case.id}）" in page
    assert "- evidence / 依据: a raw line\n" in page
    assert page.count("raw words of the stack") == 1  # the stack's words stay English alone
    assert reason(record) == f"1 of 1 cases failed; first: {case.id}: {total} of {total} " \
        "elements outside |out - ref| <= 0.025 + 0.025*|ref|"


def test_a_hidden_case_says_it_failed_in_both_languages():
    entry = {"id": "hidden_1", "name": "hidden_1 (hidden)", "visibility": "hidden",
             "status": "failed", "points": 0, "max_points": 2, "message": ""}
    record = {"student": "ada", "status": "failed", "score": 0, "max_score": 2, "message": "",
              "flags": [], "cases": [entry]}
    page = feedback.feedback_markdown(record, [])
    assert "failed: the output does not match the reference on this hidden case  \n" \
           "未通过：在这个隐藏用例上输出与参考结果不符" in page


def test_the_evidence_of_a_failure_pattern_has_its_chinese():
    catalogue = cases.catalogue(cases.DEFAULT_SEED, "interpreter")
    verdicts = [{"case_id": case.id, "passed": case.k <= 32, "mistake": "", "message": ""}
                for case in catalogue if case.check == cases.GEMM]
    hints = diagnosis.explain([], verdicts, catalogue, tiles=(32, 32, 32))
    assert hints and all(messages.line_zh(line) for hint in hints for line in hint["evidence"])
