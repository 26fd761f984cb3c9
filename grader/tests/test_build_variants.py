"""Every generated test submission still builds from the current model answer.

The variants and the hostile class are edits of the model answer: when it changes under
them, this fails at once, naming the variant, instead of a grading test going quiet.
"""

import ast
import pathlib

import pytest

from grader.tests import source_edits
from grader.tests.adversarial_class import ATTACKS
from grader.tests.build_variants import VARIANTS

CATALOGUE = {**VARIANTS, **ATTACKS}
TESTS = "".join(
    path.read_text(encoding="utf-8")
    for path in sorted(pathlib.Path(__file__).parent.glob("test_*.py"))
    if path.name != pathlib.Path(__file__).name
)


def test_the_two_catalogues_share_no_name():
    assert not set(VARIANTS) & set(ATTACKS)


@pytest.mark.parametrize("name", CATALOGUE)
def test_each_variant_is_its_base_with_its_edits(name):
    body = CATALOGUE[name].edited()
    ast.parse(CATALOGUE[name].source(name))
    assert body != source_edits.model_answer()
    for edit in CATALOGUE[name].edits:
        if not callable(edit):
            old, new = edit
            assert new in body if new else old not in body, (name, edit)


@pytest.mark.parametrize("name", CATALOGUE)
def test_each_variant_is_used_by_a_test(name):
    assert f'"{name}"' in TESTS, f"no test grades {name}"


@pytest.mark.parametrize("text, count", [("no such line", 0), ("\n", 2)])
def test_an_edit_whose_anchor_is_not_there_once_fails_loudly(text, count):
    with pytest.raises(ValueError, match=f"{count} copies"):
        source_edits.replace_once("first\nsecond\n", text, "x")
