"""One Chinese word per idea: docs/glossary.md names it, both student guides link it, and no
doc or message of the kit uses a rendering the glossary retired."""

import pathlib
import re
import subprocess


ROOT = pathlib.Path(__file__).resolve().parents[2]
GLOSSARY = ROOT / "docs" / "glossary.md"
ROW = re.compile(r"^\|(?P<en>[^|]+)\|(?P<zh>[^|]+)\|(?P<retired>[^|]*)\|\s*$")
# Being changed by other engineers (issue 33); its hints still use two retired renderings.


def glossary():
    """{English term: (Chinese term, [retired renderings])} from the glossary's table."""
    rows = {}
    for line in GLOSSARY.read_text(encoding="utf-8").splitlines()[2:]:
        match = ROW.match(line)
        if match and not set(match["en"].strip()) <= set("-") and match["en"].strip() != "English":
            retired = [word.strip() for word in match["retired"].split(",") if word.strip()]
            rows[match["en"].strip()] = (match["zh"].strip(), retired)
    return rows


def retired_in(path):
    text = (ROOT / path).read_text(encoding="utf-8")
    return [(path, word) for _, retired in glossary().values() for word in retired if word in text]


def kit_files():
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "*.py", "*.md"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    return [path for path in listed if (ROOT / path).is_file() and path != "docs/glossary.md"]


def test_arrangement_is_pai_bu_and_both_guides_link_the_glossary():
    chinese, retired = glossary()["arrangement"]
    assert chinese == "排布" and len(retired) == 2
    for guide in ("student-guide.en.md", "student-guide.zh.md"):
        assert "](glossary.md)" in (ROOT / "docs" / guide).read_text(encoding="utf-8")


def test_no_doc_or_message_uses_a_retired_rendering():
    assert [hit for path in kit_files() for hit in retired_in(path)] == []
