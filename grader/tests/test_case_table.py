"""docs/cases.md is generated from the catalogue and must not go stale."""

import pathlib

from grader.core import case_table, cases

DOC = pathlib.Path(__file__).resolve().parents[2] / "docs" / "cases.md"


def test_docs_case_table_is_up_to_date():
    assert DOC.read_text(encoding="utf-8") == case_table.render_markdown(), (
        "docs/cases.md is stale: run `python -m grader.core.case_table > docs/cases.md`"
    )


def test_every_case_has_a_row_and_hidden_shapes_stay_out():
    text = case_table.render_markdown()
    for case in cases.all_fixed_cases():
        assert f"| `{case.id}` |" in text
    for case in cases.hidden_cases():
        assert f"| `{case.name}` |" in text
        assert case.label not in text
