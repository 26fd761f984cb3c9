"""The changelog's newest release is the version the kit reports, so a release that moves the
version says what it changed (and a change of version, which regrades every stored result,
never goes unrecorded)."""

import pathlib
import re

import grader

ROOT = pathlib.Path(__file__).resolve().parents[2]
RELEASE = re.compile(r"^## (\d+\.\d+\.\d+)\b", re.M)


def releases(text):
    """The versions of the changelog's release headings, newest first."""
    return RELEASE.findall(text)


def test_the_newest_release_is_the_package_version():
    listed = releases((ROOT / "CHANGELOG.md").read_text(encoding="utf-8"))
    project = re.search(
        r'^version = "([^"]+)"', (ROOT / "pyproject.toml").read_text(encoding="utf-8"), re.M
    )[1]  # tomllib is Python 3.11's; the kit runs on 3.10
    assert listed, "CHANGELOG.md has no '## X.Y.Z' release heading"
    assert listed[0] == grader.__version__ == project, (listed[0], grader.__version__, project)


def test_releases_are_listed_newest_first_once_each():
    listed = releases((ROOT / "CHANGELOG.md").read_text(encoding="utf-8"))
    as_numbers = [tuple(int(part) for part in version.split(".")) for version in listed]
    assert as_numbers == sorted(set(as_numbers), reverse=True), listed


def test_a_heading_is_read_as_a_release_only_with_its_version():
    assert releases(
        "# Changelog\n\n## 1.2.0 (unreleased)\n\n### 1.1.9\n## 1.1.0 (2026-01-02)\n## Unreleased\n"
    ) == ["1.2.0", "1.1.0"]
