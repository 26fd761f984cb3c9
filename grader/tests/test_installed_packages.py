"""What ``pip install .`` puts in site-packages: the kit, not the staff's research lab."""

import pathlib

import pytest
from setuptools import find_packages

tomllib = pytest.importorskip("tomllib")  # Python 3.11+

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_the_performance_lab_is_not_installed_with_the_kit():
    found = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"][
        "setuptools"
    ]["packages"]["find"]
    installed = find_packages(str(ROOT), include=found["include"], exclude=found["exclude"])
    assert "benchmarks" in installed and "grader.batch" in installed
    assert not [name for name in installed if name.startswith("benchmarks.lab")]
