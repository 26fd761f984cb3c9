"""The handout ships the pristine skeleton only, never a filled-in one.

An instructor who tries the reference's arrangement() or application() in
assignment/ninetoothed_gemm.py must not hand that out: ``build`` refuses it.
The real repository is never modified; the tests point the builder at a copy.
"""

import ast
import pathlib

import pytest

from grader.batch import cli
from grader.batch.packaging import handout
from grader.batch.status import ExitCode
from solutions import MODEL_ANSWER

ROOT = pathlib.Path(__file__).resolve().parents[2]
SKELETON = ROOT / "assignment" / "ninetoothed_gemm.py"
REFERENCE = MODEL_ANSWER


def _function(source, name):
    """(first line, last line) of a top-level ``def name``, 1-based and inclusive."""
    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return node.lineno, node.end_lineno
    raise AssertionError(f"no {name}() in the source")


def _filled_in(names):
    """The skeleton with the reference's version of each function in ``names``."""
    skeleton, reference = SKELETON.read_text(), REFERENCE.read_text()
    lines, answer = skeleton.splitlines(keepends=True), reference.splitlines(keepends=True)
    for name in names:
        first, last = _function("".join(lines), name)
        start, end = _function(reference, name)
        lines[first - 1 : last] = answer[start - 1 : end]
    return "".join(lines)


def _ship(monkeypatch, tmp_path, text):
    """Make the builder read ``text`` as assignment/ninetoothed_gemm.py."""
    files = handout._handout_files()
    assert handout.SKELETON in {relative for _, relative in files}
    copy = tmp_path / "ninetoothed_gemm.py"
    copy.write_text(text)
    patched = [
        (copy if relative == handout.SKELETON else source, relative) for source, relative in files
    ]
    monkeypatch.setattr(handout, "_handout_files", lambda: patched)


@pytest.mark.parametrize(
    "names", [("arrangement",), ("application",), ("arrangement", "application")]
)
def test_a_filled_in_skeleton_is_refused(names, tmp_path, monkeypatch):
    _ship(monkeypatch, tmp_path, _filled_in(names))
    with pytest.raises(ValueError) as refused:
        handout.build(tmp_path / "out")
    message = str(refused.value)
    assert message.startswith("assignment/ninetoothed_gemm.py has ")
    for name in ("arrangement", "application"):
        assert (f"{name}()" in message) == (name in names), message
    assert "pristine skeleton only" in message
    assert not (tmp_path / "out").exists()  # refused before anything is written


def test_the_command_line_says_why_it_refuses(tmp_path, monkeypatch, capsys):
    _ship(monkeypatch, tmp_path, _filled_in(("arrangement",)))
    assert cli.main(["handout", "--out", str(tmp_path / "out")]) == ExitCode.FAILURE
    error = capsys.readouterr().err
    assert (
        "cannot build the handout: assignment/ninetoothed_gemm.py has arrangement() "
        "filled in" in error
    )
    assert "pristine skeleton only" in error


def test_a_copy_of_the_reference_is_still_named_as_such(tmp_path, monkeypatch):
    _ship(monkeypatch, tmp_path, REFERENCE.read_text())
    with pytest.raises(ValueError, match="is a copy of the reference solution"):
        handout.build(tmp_path / "out")


def test_the_pristine_skeleton_builds(tmp_path):
    folder, archive = handout.build(tmp_path)
    shipped = folder / "assignment" / "ninetoothed_gemm.py"
    assert shipped.read_bytes() == SKELETON.read_bytes()
    assert archive.is_file()
