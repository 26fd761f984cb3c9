"""The student guides' answer blocks: shipped by default, cut by ``handout --answer remove``.

Sections 5 and 6 put arrangement() and application() together whole; the blocks are
marked once, in each guide's source. The real repository is never modified; a test
that needs another guide points the builder at a copy.
"""

import ast
import pathlib

import pytest

from grader.batch import cli
from grader.batch.packaging import guide_answer, handout
from grader.batch.status import ExitCode
from grader.tests.batch_helpers import run_pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
GUIDES = [pathlib.Path("docs") / f"student-guide.{language}.md" for language in ("en", "zh")]
SKELETON = ROOT / "assignment" / "ninetoothed_gemm.py"


def _marked_functions(text):
    """{name: source} of the functions inside the guide's answer markers."""
    inside = text.split(guide_answer.BEGIN)[1:]
    blocks = [
        part.split(guide_answer.END)[0].split("```python\n")[1].split("```")[0] for part in inside
    ]
    return {
        node.name: ast.get_source_segment(block, node)
        for block in blocks
        for node in ast.parse(block).body
        if isinstance(node, ast.FunctionDef)
    }


@pytest.mark.parametrize("guide", GUIDES, ids=str)
def test_each_guide_marks_both_functions_whole(guide):
    text = (ROOT / guide).read_text(encoding="utf-8")
    assert guide_answer.shown(text) == ["arrangement", "application"]
    assert set(_marked_functions(text)) == {"arrangement", "application"}
    assert guide_answer.shown(guide_answer.cut(text, str(guide))) == []


def test_the_marked_answer_pasted_into_the_skeleton_passes(tmp_path):
    """What the instructor guide says the default ships: the two blocks earn full marks."""
    functions = _marked_functions((ROOT / GUIDES[0]).read_text(encoding="utf-8"))
    source = SKELETON.read_text(encoding="utf-8")
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    for node in sorted(
        (n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name in functions),
        key=lambda n: -n.lineno,
    ):
        lines[node.lineno - 1 : node.end_lineno] = [functions[node.name] + "\n"]
    pasted = tmp_path / "ninetoothed_gemm.py"
    pasted.write_text("".join(lines), encoding="utf-8")
    done = run_pytest("assignment", "-q", "-p", "no:cacheprovider", "--submission", str(pasted))
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert " passed" in done.stdout and "failed" not in done.stdout


def test_by_default_the_handout_ships_the_guides_as_written(tmp_path):
    folder, _ = handout.build(tmp_path)
    for guide in GUIDES:
        assert (folder / guide).read_bytes() == (ROOT / guide).read_bytes()


def test_remove_cuts_the_answer_and_nothing_else(tmp_path):
    folder, _ = handout.build(tmp_path, answer="remove")
    for guide in GUIDES:
        original = (ROOT / guide).read_text(encoding="utf-8")
        shipped = (folder / guide).read_text(encoding="utf-8")
        assert guide_answer.shown(shipped) == [] and guide_answer.BEGIN not in shipped
        assert "def arrangement" not in shipped and "def application" not in shipped
        assert "$ python docs/examples/print_levels.py" in shipped  # the rest stays
        assert len(original) - len(shipped) < 1200


def _ship_guide(monkeypatch, tmp_path, text):
    """Make the builder read ``text`` as the English guide."""
    copy = tmp_path / "guide.md"
    copy.write_text(text, encoding="utf-8")
    files = [
        (copy if relative == GUIDES[0] else source, relative)
        for source, relative in handout._handout_files()
    ]
    monkeypatch.setattr(handout, "_handout_files", lambda: files)


def test_remove_refuses_a_guide_that_shows_the_answer_unmarked(tmp_path, monkeypatch, capsys):
    text = (ROOT / GUIDES[0]).read_text(encoding="utf-8")
    unmarked = text.replace(guide_answer.BEGIN + "\n", "").replace(guide_answer.END + "\n", "")
    _ship_guide(monkeypatch, tmp_path, unmarked)
    assert (
        cli.main(["handout", "--out", str(tmp_path / "out"), "--answer", "remove"])
        == ExitCode.FAILURE
    )
    error = capsys.readouterr().err
    assert (
        "cannot build the handout: docs/student-guide.en.md shows arrangement and "
        "application whole" in error
    )
    assert not (tmp_path / "out").exists()
    handout.build(tmp_path / "kept")  # keep ships it, as asked


def test_a_marker_without_its_partner_is_refused(tmp_path, monkeypatch):
    text = (ROOT / GUIDES[0]).read_text(encoding="utf-8")
    _ship_guide(monkeypatch, tmp_path, text.replace(guide_answer.END + "\n", "", 1))
    with pytest.raises(
        ValueError, match="docs/student-guide.en.md, line \\d+: <!-- answer: begin --> without its"
    ):
        handout.build(tmp_path / "out", answer="remove")


def test_the_command_line_says_what_it_shipped(tmp_path, capsys):
    assert cli.main(["handout", "--out", str(tmp_path / "a")]) == ExitCode.OK
    assert "answer:         kept" in capsys.readouterr().err
    assert cli.main(["handout", "--out", str(tmp_path / "b"), "--answer", "remove"]) == ExitCode.OK
    assert "answer:         removed" in capsys.readouterr().err
    with pytest.raises(SystemExit) as usage:
        cli.main(["handout", "--out", str(tmp_path / "c"), "--answer", "hide"])
    assert usage.value.code == ExitCode.USAGE
