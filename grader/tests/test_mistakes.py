"""A mistake is declared once (grader.core.mistakes) and is reported by the code its
declaration names: a key declared but never reported, or reported but not declared
where explain() looks for it, fails here instead of silently losing a hint."""

import ast
import pathlib
import re

import pytest

from grader.core import cases, diagnosis, mistakes

CORE = pathlib.Path(diagnosis.__file__).resolve().parent
DOCS = CORE.parents[1] / "docs"


def _reported(module):
    """The mistake keys a module of grader.core writes: ``"mistake": KEY`` in a dict,
    ``mistake = KEY`` or ``.mistake = KEY``, ``mistake=KEY``, the fourth argument of
    ``Verdict(...)``, the first of ``_finding(...)`` or ``finding(...)`` and the first of what
    ``_named_build_error`` returns."""
    tree = ast.parse((CORE / f"{module}.py").read_text(encoding="utf-8"))
    values = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            values += [
                value
                for key, value in zip(node.keys, node.values)
                if isinstance(key, ast.Constant) and key.value == "mistake"
            ]
        elif isinstance(node, ast.Assign):
            names = [getattr(target, "id", getattr(target, "attr", "")) for target in node.targets]
            values += [node.value] if "mistake" in names else []
        elif isinstance(node, ast.keyword) and node.arg == "mistake":
            values.append(node.value)
        elif isinstance(node, ast.Call) and getattr(node.func, "id", "") == "Verdict":
            values += node.args[3:4]
        elif isinstance(node, ast.Call) and getattr(node.func, "id", "") in ("_finding", "finding"):
            values += node.args[:1]
        elif isinstance(node, ast.FunctionDef) and node.name == "_named_build_error":
            values += [
                ret.value.elts[0]
                for ret in ast.walk(node)
                if isinstance(ret, ast.Return) and isinstance(ret.value, ast.Tuple)
            ]
    return {
        constant.value
        for value in values
        for constant in ast.walk(value)
        if isinstance(constant, ast.Constant) and isinstance(constant.value, str) and constant.value
    }


def _patterns():
    tree = ast.parse((CORE / "diagnosis.py").read_text(encoding="utf-8"))
    function = next(
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef) and node.name == "_patterns"
    )
    return {
        node.value.elts[0].value
        for node in ast.walk(function)
        if isinstance(node, ast.Yield)
        and isinstance(node.value, ast.Tuple)
        and isinstance(node.value.elts[0], ast.Constant)
    }


FOUND_IN = {
    mistakes.FILE: _reported("suite") | _reported("checks"),
    mistakes.SOURCE: _reported("source_mistakes") | _reported("source_slips"),
    mistakes.LAYOUT: _reported("layout") | _reported("size_slips"),
    mistakes.OUTPUT: _reported("checks"),
    mistakes.PATTERN: _patterns() | {case.targets for case in cases.all_fixed_cases()},
}


@pytest.mark.parametrize("key", list(mistakes.MISTAKES))
def test_a_declared_mistake_is_reported_where_it_says(key):
    mistake = mistakes.MISTAKES[key]
    assert mistake.found_by and set(mistake.found_by) <= set(mistakes.SOURCES), mistake.found_by
    for source in mistake.found_by:
        assert key in FOUND_IN[source], (
            f"{key} is declared as found by {source}, which never names it"
        )


def test_every_reported_key_is_declared_where_explain_reads_it():
    for source in (mistakes.FILE, mistakes.SOURCE, mistakes.LAYOUT, mistakes.OUTPUT):
        assert FOUND_IN[source] <= set(mistakes.MISTAKES), FOUND_IN[source] - set(mistakes.MISTAKES)
    checked = _reported("checks")
    undeclared = {
        key
        for key in checked
        if not {mistakes.OUTPUT, mistakes.FILE} & set(mistakes.MISTAKES[key].found_by)
    }
    assert not undeclared, f"checks name {undeclared}, which explain() would drop"


def test_a_declared_output_mistake_reaches_the_hints():
    case = next(case for case in cases.all_fixed_cases() if case.visibility == "public")
    for key in mistakes.found_by(mistakes.OUTPUT):
        verdict = {"case_id": case.id, "passed": False, "mistake": key, "message": "evidence"}
        hints = diagnosis.explain([], [verdict], [case], reveal=True)
        assert key in [hint["key"] for hint in hints], key


def test_the_student_guides_list_the_same_mistakes_and_every_one_named_from_a_line():
    """The guides' tables of mistakes (section 8), in English and in Chinese, name the same
    declared keys, among them every mistake the grader names from the student's own lines."""
    listed = []
    for guide in ("student-guide.en.md", "student-guide.zh.md"):
        text = (DOCS / guide).read_text(encoding="utf-8")
        listed.append(set(re.findall(r"^\|[^|]*[（(]`(\w+)`[）)] \|", text, re.M)))
    assert listed[0] == listed[1], listed[0] ^ listed[1]
    assert listed[0] <= set(mistakes.MISTAKES), listed[0] - set(mistakes.MISTAKES)
    missing = set(mistakes.found_by(mistakes.SOURCE)) - listed[0]
    assert not missing, f"the guides do not list {missing}"


def test_the_guides_name_each_mistake_by_its_title_in_their_language():
    """The feedback heads a likely mistake with its title in both languages: a student finds
    it in either guide's table under the same words."""
    for guide, row, title in (
        ("student-guide.en.md", r"^\| ([^|]*?) \(`(\w+)`\) \|", "title"),
        ("student-guide.zh.md", r"^\| ([^|]*?)（`(\w+)`） \|", "title_zh"),
    ):
        rows = re.findall(row, (DOCS / guide).read_text(encoding="utf-8"), re.M)
        assert rows and {key: named for named, key in rows} == {
            key: getattr(mistakes.MISTAKES[key], title) for _, key in rows
        }, guide
