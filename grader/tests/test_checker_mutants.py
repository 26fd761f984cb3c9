"""The kernel checker, tested by mutation: every construct of the grammar, everywhere.

A checker is trusted only when a test tries every construct it must reject. The mutants
(grader.tests.checker_mutants) put each expression and statement kind, with a hostile or
a harmless payload, at each place the rebuilt kernel keeps. Every mutant the checker
accepts is built and launched under the build guard's policy in record mode: beyond what
a kernel build needs, nothing may happen. The first checker (before "Trust by
construction") fails this test: an annotation on ``*args`` ran its payload.
"""

import json
import os
import subprocess
import sys

import pytest

from grader.core.kernel_source import extract
from grader.tests import checker_mutants
from grader.tests.batch_helpers import ROOT

MUTANTS = checker_mutants.mutants()


def test_every_kind_of_the_grammar_has_a_template():
    expressions, statements = checker_mutants.grammar_kinds()
    assert expressions <= set(checker_mutants.EXPRESSIONS), expressions - set(
        checker_mutants.EXPRESSIONS
    )
    assert statements <= set(checker_mutants.STATEMENTS), statements - set(
        checker_mutants.STATEMENTS
    )


@pytest.fixture(scope="module")
def accepted():
    """The mutants the checker accepts and Python can compile: the ones that would run."""
    kept = {}
    for mutant in MUTANTS:
        rebuilt = extract(mutant.source)
        if rebuilt.ok and checker_mutants.compiles(rebuilt.text):
            kept[mutant.name] = (mutant, rebuilt.text)
    return kept


@pytest.fixture(scope="module")
def runs(accepted, tmp_path_factory):
    """What each accepted mutant did when built and launched under the guard's policy, and
    a control the checker never saw: a hostile file that must be caught.

    Many mutants rebuild to the same text (446 accepted, 134 texts, 2026-12-06): each
    text is built and launched once, and what it did is every such mutant's."""
    folder = tmp_path_factory.mktemp("mutants")
    home = tmp_path_factory.mktemp("home")
    texts = {}  # rebuilt text -> the name of its file
    for _, text in accepted.values():
        if text not in texts:
            texts[text] = f"text-{len(texts):04d}"
            (folder / f"{texts[text]}.py").write_text(text)
    control = MUTANTS[0].source.replace(
        checker_mutants.ARRANGEMENT_BODY,
        "    open('/etc/hostname')\n" + checker_mutants.ARRANGEMENT_BODY,
    )
    (folder / "control.py").write_text(control)
    done = subprocess.run(
        [sys.executable, "-m", "grader.tests.checker_mutants", str(folder)],
        capture_output=True,
        text=True,
        timeout=1200,
        cwd=ROOT,
        env={**os.environ, "HOME": str(home), "TMPDIR": str(home), "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    ran = {row["name"]: row for row in map(json.loads, done.stdout.splitlines())}
    assert set(ran) == set(texts.values()) | {"control"}, "a file was not built and launched"
    return {"control": ran["control"]} | {
        name: ran[texts[text]] for name, (_, text) in accepted.items()
    }


def test_the_mutants_cover_every_place_and_kind():
    places = {mutant.name.split("-")[0] for mutant in MUTANTS}
    assert len(places) == 14 and len(MUTANTS) > 1900


def test_no_hostile_payload_survives_the_rebuild(accepted):
    """A hostile module constant the kernel never uses is dropped, not kept: the file is
    accepted, its payload is gone. Kept, it would be a hole."""
    kept = sorted(
        name
        for name, (mutant, text) in accepted.items()
        if mutant.hostile and checker_mutants.PAYLOADS[mutant.payload] in text
    )
    assert not kept, kept[:20]


def test_what_the_checker_accepts_does_nothing_a_build_does_not_need(runs, accepted):
    assert runs["control"]["refused"], "the harness must see a hostile file's events"
    assert set(runs) == set(accepted) | {"control"}
    doing = {
        name: row["refused"] for name, row in runs.items() if row["refused"] and name != "control"
    }
    assert not doing, dict(list(doing.items())[:10])


def test_harmless_mutants_are_accepted_and_most_still_build(accepted, runs):
    """The checker must not be a wall: harmless constructs of the allowed kinds pass, and
    the harness really builds them."""
    harmless = [name for name, (mutant, _) in accepted.items() if not mutant.hostile]
    assert len(harmless) >= 40
    built = [name for name in harmless if not runs[name]["error"]]
    assert len(built) >= 30, [runs[name]["error"] for name in harmless][:5]
