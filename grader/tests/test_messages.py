"""Case messages, findings and evidence lines in English and Chinese (grader.core.messages):
each template reads back as its own Chinese with the same facts, every finding of the
kit's mistaken variants has its Chinese, a student's page shows the Chinese of the kit's
lines under the English, and what records and the gradebook keep stays English."""

import re
import string

import pytest
import torch

from grader.batch.record import CaseEntry, Record
from grader.batch.outputs import feedback
from grader.batch.status import reason
from grader.core import cases, checks, diagnosis, layout, messages, source_mistakes
from grader.core.finding_messages import FINDINGS
from grader.core.run_messages import RUNS
from grader.core.loading import load_submission
from grader.tests import build_variants
from grader.tests.source_edits import writer

PLURAL = "s"  # "case{s}": English grammar, no fact of the message
# A field's value in a sample: a line the kit wrote for evidence, one of its form for a
# field of grader.core.messages.FORMS, else 7.
SAMPLE = {messages.NESTED: messages.say("flagged"), "where": "M=1, N=2, K=3", "file": "a.py"}


def fields_of(template):
    return {field for _, field, _, _ in string.Formatter().parse(template) if field}


def marked(template):
    """``template`` with each field written as <its name>, whatever its format spec."""
    return "".join(
        literal + (f"<{field}>" if field else "")
        for literal, field, _, _ in string.Formatter().parse(template)
    )


def facts(text):
    """What a message says in either language: its code, tuples, sizes and line numbers."""
    return sorted(
        re.findall(r"`[^`]*`|\(\d+(?:, \d+)*\)|[MNK]=\d+|\d+(?:x\d+)+", text)
        + re.findall(r"\bline (\d+)", text)
        + re.findall(r"第 (\d+) 行", text)
    )


def english_phrases():
    """Runs of three or more English words in the templates' own text: none belongs in a
    Chinese line, where one shows a line read by the wrong template."""
    runs = set()
    for english, _ in messages.TEMPLATES.values():
        for literal, _, _, _ in string.Formatter().parse(english):
            runs |= set(re.findall(r"[a-z]+(?: [a-z']+){2,}", re.sub("`[^`]*`", "", literal)))
    return runs


def test_no_table_hides_another_s_template_under_the_same_key():
    assert len(messages.TEMPLATES) == len(messages.CASES) + len(FINDINGS) + len(RUNS)


@pytest.mark.parametrize("key", list(messages.TEMPLATES))
def test_each_template_reads_back_as_its_own_chinese_with_the_same_facts(key):
    english, chinese = messages.TEMPLATES[key]
    assert fields_of(chinese) == fields_of(english) - {PLURAL}
    assert facts(marked(english)) == facts(marked(chinese))
    values = {field: SAMPLE.get(field, 7) for field in fields_of(english)}
    # the Chinese gets each field as the English wrote it, in Chinese where a template wrote it
    texts = {
        field: format(values[field], spec)
        for _, field, spec, _ in string.Formatter().parse(english)
        if field
    }
    assert messages.line_zh(messages.say(key, **values)) == chinese.format(
        **{field: messages.line_zh(text) or text for field, text in texts.items()}
    )


@pytest.fixture(scope="module")
def findings_of_variants(tmp_path_factory):
    """{variant: its findings} for each mistaken variant of the kit: what grader.core.layout
    and grader.core.source_mistakes say of it."""
    path = writer(tmp_path_factory.mktemp("variants"), build_variants.VARIANTS)
    found = {}
    for name in {**build_variants.MISTAKES, **build_variants.FIRST_MISTAKES}:
        findings = source_mistakes.inspect_file(path(name))
        try:
            findings += layout.inspect_arrangement(load_submission(path(name)))
        except Exception:  # noqa: BLE001 - a placeholder or a file that does not load
            pass
        found[name] = findings
    return found


def test_every_finding_of_the_variants_has_its_chinese_with_the_same_facts(findings_of_variants):
    phrases = english_phrases()
    read = 0
    for name, findings in findings_of_variants.items():
        for line in (finding["message"] for finding in findings):
            zh = messages.line_zh(line)
            assert zh, (name, line)
            assert facts(zh) == facts(line), (name, line, zh)
            assert not [phrase for phrase in phrases if phrase in zh], (name, zh)
            read += 1
    assert read >= 40  # layout, size slips and the file's own lines all spoke


@pytest.mark.parametrize("name", ["floor_mode", "expand_by_size", "returns_accumulator"])
def test_the_page_shows_a_finding_in_both_languages(name, findings_of_variants):
    """A layout finding, a size slip and a mistake on a line of the file, as a student reads
    them under a likely mistake."""
    catalogue = cases.catalogue(cases.DEFAULT_SEED, "interpreter")
    verdicts = [
        {"case_id": case.id, "passed": False, "mistake": "", "message": ""} for case in catalogue
    ]
    hints = diagnosis.explain(findings_of_variants[name], verdicts, catalogue)
    record = Record(
        student="ada", status="failed", score=0, max_score=1, message="", flags=[], cases=[]
    )
    page = feedback.feedback_markdown(record, hints)
    evidence = [line for hint in hints for line in hint["evidence"]]
    assert evidence and all(
        f"- evidence / 依据: {line}  \n  依据：{messages.line_zh(line)}\n" in page
        for line in evidence
    ), page


def test_a_launch_the_layout_refuses_says_why_in_both_languages(tmp_path):
    module = load_submission(writer(tmp_path, build_variants.VARIANTS)("expand_axis"))
    why = layout.launch_mismatch(module, (128, 256, 192))
    verdict = checks.error_verdict(public_case(), why)
    assert messages.chinese(verdict.message).startswith(
        "kernel 没有启动：在 M=128, N=256, K=192 时，排布后三个张量的外层形状不同"
    )


def test_raw_error_text_has_no_chinese_and_a_quoted_kit_line_is_translated():
    assert messages.chinese("IndexError: out of range\n  File 'x.py', line 3") == ""
    line = messages.say("float16_sum", block_k=32)
    quoted = messages.say("failed_with", count=1, s="", line=line)
    assert messages.line_zh(quoted) == (
        "1 个用例失败，信息为：输出恰好等于把 32 宽的 K tile "
        "乘积逐个加进 float16 累加和的结果：累加器丢掉了 float32 "
        "求和会保留的小项"
    )


def public_case():
    return next(
        case
        for case in cases.catalogue(cases.DEFAULT_SEED, "interpreter")
        if case.visibility == "public" and case.check == cases.GEMM
    )


def test_a_mismatch_shows_its_chinese_under_the_english_and_the_gradebook_stays_english():
    case = public_case()
    verdict = checks.compare(
        torch.zeros(case.m, case.n, dtype=torch.float16),
        torch.ones(case.m, case.n),
        case,
        cases.DEFAULT_SEED,
    )
    verdict.message += "\nValueError: raw words of the stack"
    entry = {
        "id": case.id,
        "name": case.id,
        "visibility": "public",
        "status": "failed",
        "points": 0,
        "max_points": case.points,
        "message": verdict.message,
    }
    record = Record(
        student="ada",
        status="failed",
        score=0,
        max_score=case.points,
        message=messages.say("cases_failed", failing=1, total=1),
        flags=[],
        cases=[CaseEntry.from_json(entry)],
    )
    hints = [
        {
            "title": "t",
            "title_zh": "标题",
            "en": "e",
            "zh": "z",
            "evidence": [messages.say("same_target", failed=case.id), "a raw line"],
        }
    ]
    page = feedback.feedback_markdown(record, hints)
    total = case.m * case.n
    assert f"{total} of {total} elements outside" in page
    assert f"{total} 个元素中有 {total} 个超出" in page and "误差最大处在" in page
    assert "1 个用例中有 1 个未通过" in page
    assert f"  依据：每个失败的用例都是针对这个错误设计的（{case.id}）" in page
    assert "- evidence / 依据: a raw line\n" in page
    assert page.count("raw words of the stack") == 1  # the stack's words stay English alone
    assert (
        reason(record) == f"1 of 1 cases failed; first: {case.id}: {total} of {total} "
        "elements outside |out - ref| <= 0.025 + 0.025*|ref|"
    )


def test_a_hidden_case_says_it_failed_in_both_languages():
    entry = {
        "id": "hidden_1",
        "name": "hidden_1 (hidden)",
        "visibility": "hidden",
        "status": "failed",
        "points": 0,
        "max_points": 2,
        "message": "",
    }
    record = Record(
        student="ada",
        status="failed",
        score=0,
        max_score=2,
        message="",
        flags=[],
        cases=[CaseEntry.from_json(entry)],
    )
    page = feedback.feedback_markdown(record, [])
    assert (
        "failed: the output does not match the reference on this hidden case  \n"
        "未通过：在这个隐藏用例上输出与参考结果不符" in page
    )


def test_the_evidence_of_a_failure_pattern_has_its_chinese():
    catalogue = cases.catalogue(cases.DEFAULT_SEED, "interpreter")
    verdicts = [
        {"case_id": case.id, "passed": case.k <= 32, "mistake": "", "message": ""}
        for case in catalogue
        if case.check == cases.GEMM
    ]
    hints = diagnosis.explain([], verdicts, catalogue, tiles=(32, 32, 32))
    assert hints and all(messages.line_zh(line) for hint in hints for line in hint["evidence"])
