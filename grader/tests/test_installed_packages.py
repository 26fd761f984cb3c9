"""What ``pip install .`` puts in site-packages: the kit, not the staff's research lab."""

import fnmatch
import pathlib

import pytest

tomllib = pytest.importorskip("tomllib")  # Python 3.11+

ROOT = pathlib.Path(__file__).resolve().parents[2]


def packages_found(include, exclude):
    """The packages setuptools' find finds under the root: folders holding an __init__.py,
    by dotted name, those matching ``include`` and none of ``exclude``."""
    names = [
        ".".join(init.parent.relative_to(ROOT).parts)
        for init in ROOT.rglob("__init__.py")
        if ".venv" not in init.parts and ".ci-venv" not in init.parts
    ]
    return sorted(
        name
        for name in names
        if any(fnmatch.fnmatchcase(name, rule) for rule in include)
        and not any(fnmatch.fnmatchcase(name, rule) for rule in exclude)
    )


def test_the_performance_lab_is_not_installed_with_the_kit():
    found = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"][
        "setuptools"
    ]["packages"]["find"]
    installed = packages_found(found["include"], found.get("exclude", []))
    assert "benchmarks" in installed and "grader.batch" in installed
    assert not [name for name in installed if name.startswith("benchmarks.lab")]
