"""Feedback handed back through an LMS: each student's feedback.md as one HTML page, its
pictures inside, zipped under the name the LMS's bulk upload matches (grader.batch.outputs.
feedback_zip and feedback_html). test_lms_class builds the zips of graded classes."""

import dataclasses
import base64
import csv
import html.parser
import re
import zipfile

import pytest

from grader.batch.outputs import export, feedback, feedback_html, feedback_zip
from grader.tests.batch_helpers import run_grader
from grader.tests.test_feedback_pages import record_of
from grader.tests.test_lms import fake_out

# The names the uploads match, as feedback_zip's docstring cites them: Canvas reads the first
# two all-digit parts (user id, attachment id), Moodle the folder's second part.
CANVAS_NAME = re.compile(r"[^_/]+_(?:LATE_)?(?P<user>\d+)_\d+_ntgemm-feedback\.html")
MOODLE_NAME = re.compile(r"[^_/]+_(?P<user>\d+)_assignsubmission_file_/ntgemm-feedback\.html")
PNG = b"\x89PNG\r\n\x1a\n"


class Page(html.parser.HTMLParser):
    """What a browser would fetch for a page: every src and href, and its text."""

    def __init__(self, text):
        super().__init__()
        self.links, self.text, self.tags = [], [], []
        self.feed(text)
        self.close()

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.links += [value for name, value in attrs if name in ("src", "href")]

    def handle_data(self, data):
        self.text.append(data)


def pictures_of(page):
    """The PNG pictures a page holds, each checked to be a data: URI of a PNG file."""
    found = []
    for link in page.links:
        assert link.startswith("data:image/png;base64,"), link  # no file the student lacks
        found.append(base64.b64decode(link.split(",", 1)[1], validate=True))
        assert found[-1].startswith(PNG)
    return found


def with_feedback(out, origins, picture=PNG + b"picture"):
    """``out`` (fake_out) with students.csv and each student's feedback.md; eli's has a
    picture drawn beside it."""
    with open(out / "students.csv", "w", newline="", encoding="utf-8") as file:
        writer = csv.writer(file)
        writer.writerow(["student", "folder", "origin", "status", "sha256"])
        for number, (student, origin) in enumerate(origins.items()):
            folder = f"s{number}"
            writer.writerow([student, folder, origin, "failed", ""])
            (out / folder).mkdir()
            record = dataclasses.replace(record_of("failed", 1), student=student)
            (out / folder / "feedback.md").write_text(
                feedback.feedback_markdown(record, []), encoding="utf-8"
            )
            if student == "eli":
                (out / folder / feedback.ARRANGEMENT_PICTURE).write_bytes(picture)
    return out


CANVAS_ORIGINS = {
    "eli": "eli_LATE_4711_90210_ninetoothed_gemm.py",
    "李华": "李华.zip:ninetoothed_gemm.py",
    "0042": "zed_0042_5_sub.zip:src/ninetoothed_gemm.py",
}


def test_students_without_an_lms_id_are_listed_and_left_out(tmp_path):
    out = with_feedback(fake_out(tmp_path), CANVAS_ORIGINS)
    target = tmp_path / "canvas-feedback.zip"
    result = run_grader(
        tmp_path,
        "export",
        str(out),
        "--format",
        "canvas-feedback",
        "--out",
        str(target),
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert (
        "note: 1 student(s) have no LMS id, so their feedback is left out of the zip: 李华"
        in result.stderr
    )
    with zipfile.ZipFile(target) as archive:
        assert sorted(archive.namelist()) == [
            "eli_LATE_4711_90210_ntgemm-feedback.html",
            "zed_0042_5_ntgemm-feedback.html",
        ]
        assert all(CANVAS_NAME.fullmatch(name) for name in archive.namelist())
        page = Page(archive.read("eli_LATE_4711_90210_ntgemm-feedback.html").decode("utf-8"))
    assert pictures_of(page) == [PNG + b"picture"]


def test_a_moodle_zip_has_a_folder_per_participant_named_as_in_the_download(tmp_path):
    out = with_feedback(
        fake_out(tmp_path, "moodle"),
        {
            "eli": "Eli Roe_4711_assignsubmission_file_/ninetoothed_gemm.py",
            "李华": "李华.py",
            "0042": "Zed Poe_0042_assignsubmission_file_ninetoothed_gemm.py",
        },
    )
    target = tmp_path / "moodle-feedback.zip"
    assert feedback_zip.build(out, "moodle-feedback", target) == ["李华"]
    with zipfile.ZipFile(target) as archive:
        assert sorted(archive.namelist()) == [
            "Eli Roe_4711_assignsubmission_file_/ntgemm-feedback.html",
            "Zed Poe_0042_assignsubmission_file_/ntgemm-feedback.html",
        ]
        assert [MOODLE_NAME.fullmatch(name)["user"] for name in sorted(archive.namelist())] == [
            "4711",
            "0042",
        ]


@pytest.mark.parametrize(
    "source, kind",
    [
        ("moodle", "canvas-feedback"),
        ("canvas", "moodle-feedback"),
        ("gradescope", "canvas-feedback"),
    ],
)
def test_the_ids_another_lms_gave_are_refused(tmp_path, source, kind):
    out = with_feedback(fake_out(tmp_path, source), CANVAS_ORIGINS)
    with pytest.raises(
        ValueError,
        match=f"have ids that {export.NAMES[feedback_zip.FORMATS[kind]]} did not give: eli",
    ):
        feedback_zip.build(out, kind, tmp_path / "x.zip")
    assert not (tmp_path / "x.zip").exists()


def test_the_page_is_the_feedback_with_its_picture_inside_and_no_markup_from_the_student(tmp_path):
    record = dataclasses.replace(
        record_of("failed", 1),
        student="<img src=x>",
        message="```\n<script>alert(1)</script>\n**not bold** | not a cell",
    )
    (tmp_path / "feedback.md").write_text(feedback.feedback_markdown(record, []), encoding="utf-8")
    (tmp_path / feedback.ARRANGEMENT_PICTURE).write_bytes(PNG + b"tiles")
    text = feedback_html.page(tmp_path)
    page = Page(text)
    assert pictures_of(page) == [PNG + b"tiles"]
    assert "script" not in page.tags and page.tags.count("img") == 1
    shown = "".join(page.text)
    assert "ntgemm feedback: <img src=x>" in shown and "<script>alert(1)</script>" in shown
    assert "**not bold** | not a cell" in shown  # the message, as written, in its code block
    for markup in ("**Score", "| case / 用例 |", "| --- |", "![", "```text", "### "):
        assert markup not in shown, markup
    assert "<strong>Score / 得分: 1 / 2</strong><br>" in text
    assert "<tr><td>tail_m-65x128x128</td><td>1/1</td><td>passed</td></tr>" in text


def test_a_picture_that_is_not_there_is_its_caption_not_a_link(tmp_path):
    (tmp_path / "feedback.md").write_text(
        feedback.feedback_markdown(record_of("failed", 1), []) + "\n![other](../secret.png)\n",
        encoding="utf-8",
    )
    (tmp_path.parent / "secret.png").write_bytes(PNG)
    page = Page(feedback_html.page(tmp_path))
    assert page.links == []
    assert "[program (0, 1): your tiles and the expected ones]" in "".join(page.text)
    assert "[other]" in "".join(page.text)
