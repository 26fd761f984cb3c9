"""The diagnosis on single-point mutants (grader/tests/diagnosis_mutants.py, the table in
docs/mutation-table.md): the corpus is what it says it is, each hint declares what it
explains, and a seeded sample, graded as the pytest grader grades it, meets the goal:
no misleading hint, and most failing mutants named."""

import ast
import collections

import pytest

from grader.core import mistakes
from grader.tests import diagnosis_mutants, diagnosis_table

# Mistakes no single change of a correct file makes: a placeholder, a print, torch in the
# kernel, state between calls, tiles too large for the GPU.
EXPLAINS_NOTHING = {
    "not_implemented",
    "nondeterministic",
    "gpu_resources",
    "torch_in_kernel",
    "debug_print",
}
SAMPLE, SAMPLE_SEED = 12, 7  # about a minute on two cores


@pytest.fixture(scope="module")
def corpus():
    return diagnosis_mutants.mutants()


def test_the_corpus_is_several_hundred_single_changes_of_every_kind(corpus):
    assert len(corpus) >= 300
    assert {mutant.kind for mutant in corpus} == set(diagnosis_mutants.KINDS)
    assert {mutant.base for mutant in corpus} == {"reference", *diagnosis_mutants.STYLES}
    assert len({mutant.source for mutant in corpus}) == len(corpus)
    assert len({mutant.name for mutant in corpus}) == len(corpus)
    bases = diagnosis_mutants.bases()
    for mutant in corpus:
        base = bases[mutant.base].splitlines()
        lines = mutant.source.splitlines()
        first, last = mutant.lines
        assert mutant.function_lines[0] <= first <= last <= mutant.function_lines[1], mutant.name
        start = mutant.function_lines[0]
        assert lines[:start] == base[:start], mutant.name  # one function changes, no other
        assert lines != base, mutant.name
        ast.parse(mutant.source)


def test_the_corpus_and_its_sample_are_the_same_on_every_run(corpus):
    assert [mutant.name for mutant in diagnosis_mutants.mutants()] == [m.name for m in corpus]
    first = diagnosis_mutants.sample(20, 3, corpus)
    assert first == diagnosis_mutants.sample(20, 3, corpus)
    assert first != diagnosis_mutants.sample(20, 4, corpus)


def test_a_mutant_names_the_part_of_the_gemm_it_changes(corpus):
    subjects = collections.defaultdict(set)
    for mutant in corpus:
        subjects[mutant.function].add(mutant.subject)
    assert {
        "lhs.tile",
        "rhs.group",
        "lhs.expand",
        "rhs.squeeze",
        "output.tile",
        "grid",
    } <= subjects["arrangement"]
    assert subjects["application"] == {"accumulator", "loop", "step", "store"}
    assert subjects["nt_gemm"] == {"wrapper"}
    swapped = next(
        mutant
        for mutant in corpus
        if mutant.base == "other_style" and "ntl.dot(b[step], a[step])" in mutant.what
    )
    assert (swapped.function, swapped.subject, swapped.kind) == (
        "application",
        "step",
        "argument_order",
    )


def test_every_mistake_a_change_can_make_declares_what_it_explains():
    for key, mistake in mistakes.MISTAKES.items():
        assert bool(mistake.explains) == (key not in EXPLAINS_NOTHING), key


def _mutant(subject="step", kind="argument_order", lines=(10, 10)):
    return diagnosis_mutants.Mutant(
        "reference", kind, "application", subject, lines, (5, 20), "`a` -> `b`", ""
    )


def test_a_hint_explains_a_mutant_by_its_subject_kind_and_line():
    assert diagnosis_table.explains("dot_order", [], _mutant())
    assert not diagnosis_table.explains("dot_order", [], _mutant(kind="name"))
    assert not diagnosis_table.explains("expand_axis", [], _mutant())
    assert diagnosis_table.explains(
        "k_steps", ["line 10: `ntl.dot(lhs[k], rhs[0])` ..."], _mutant()
    )
    assert not diagnosis_table.explains(
        "k_steps", ["line 11: `ntl.dot(lhs[k], rhs[0])` ..."], _mutant()
    )
    # A deleted statement has no line left: any line of its function may say why.
    deleted = _mutant(kind="deleted_statement")
    assert diagnosis_table.explains("k_steps", ["line 19: ..."], deleted)
    assert not diagnosis_table.explains("k_steps", ["line 21: ..."], deleted)


def test_a_sample_graded_as_the_pytest_grader_grades_it_meets_the_goal(corpus):
    """No failing mutant of the sample gets a hint that does not explain it, and at least
    the goal's share is named; the whole corpus is measured by the table's command."""
    chosen = diagnosis_mutants.sample(SAMPLE, SAMPLE_SEED, corpus)
    graded = diagnosis_table.grade(chosen, jobs=2)
    wrong = [
        (item.mutant.name, item.wrong()) for item in graded if item.verdict_class == "misleading"
    ]
    assert not wrong, wrong
    counts = collections.Counter(item.verdict_class for item in graded)
    failing, named, _ = diagnosis_table.rates(counts)
    assert failing and named >= diagnosis_table.GOAL_NAMED, counts
