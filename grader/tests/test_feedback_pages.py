"""The pages a student reads (feedback.md, Gradescope's output) explain a zeroed score and
name only the files their reader gets."""

import re

import pytest

from grader.batch.record import Record
from grader.batch.outputs import feedback, share
from grader.batch.packaging import gradescope

FILE_NAME = re.compile(r"[\w.-]+\.(?:png|log|csv|json|md)\b")


def record_of(status, passed_points):
    """A record of two public cases, the first passed with ``passed_points``, the second
    not run; one program's tiles were off, so an arrangement picture was drawn."""
    return Record.from_json(
        {
            "student": "ada",
            "status": status,
            "score": passed_points,
            "max_score": 2,
            "message": "",
            "flags": [],
            "backend": "interpreter",
            "arrangement": {"shape": [128, 256, 192], "program": "(0, 1)"},
            "cases": [
                {
                    "id": "tail_m-65x128x128",
                    "name": "tail_m",
                    "visibility": "public",
                    "status": "passed",
                    "points": passed_points,
                    "max_points": 1,
                    "message": "",
                },
                {
                    "id": "tail_n-128x97x128",
                    "name": "tail_n",
                    "visibility": "public",
                    "status": "not_run",
                    "points": 0,
                    "max_points": 1,
                    "message": "not run",
                },
            ],
        }
    )


@pytest.mark.parametrize("status", ["timeout", "crashed", "flagged"])
def test_a_zeroed_status_says_why_its_passed_cases_score_0(status):
    text = feedback.feedback_markdown(record_of(status, 0), [])
    assert f"score 0 because the status `{status}` sets the whole score to 0" in text
    assert f"因为状态 `{status}` 使整份成绩记为 0 分" in text
    assert "sets the whole score to 0" not in feedback.feedback_markdown(
        record_of("failed", 1), []
    )  # passed cases that keep their points


def test_the_shared_feedback_names_only_files_share_copies_beside_it():
    """``share`` hands students feedback.md with its pictures; the logs stay with the staff."""
    text = feedback.feedback_markdown(record_of("failed", 1), [])
    named = set(FILE_NAME.findall(text))
    assert feedback.ARRANGEMENT_PICTURE in named
    assert named <= set(share.SHARED_FILES + share.SHARED_IF_DRAWN)


def test_gradescope_output_names_no_file_and_says_how_to_draw_the_picture():
    """Gradescope shows the page alone: a picture link there is a broken image."""
    text = gradescope._student_output(
        record_of("failed", 1), {"hidden_visibility": "visible", "seed": 0}
    )
    assert FILE_NAME.findall(text) == []
    assert feedback.DRAW_COMMAND in text and "program (0, 1)" in text


def test_files_whose_arrangement_gives_the_same_tiles_share_one_drawing(tmp_path, monkeypatch):
    """arrangement.png is drawn from the kernel run's numbers alone: the same numbers at the
    same tiles are drawn once per batch, and other numbers get a drawing of their own."""
    from grader.batch.outputs import reports
    from grader.core import tile_picture
    from grader.tests.test_protocol import PICTURE

    drawn = []
    real = tile_picture.draw
    monkeypatch.setattr(tile_picture, "draw", lambda *args: drawn.append(args) or real(*args))
    reports._arrangement_png.cache_clear()
    pictures = {}
    for name, tiles in (("ana", [64, 64, 64]), ("bo", [64, 64, 64]), ("cy", [32, 64, 64])):
        (tmp_path / name).mkdir()
        reports.write_arrangement(tmp_path / name, Record(arrangement=PICTURE, tiles=tiles))
        pictures[name] = (tmp_path / name / feedback.ARRANGEMENT_PICTURE).read_bytes()
        assert sorted(path.name for path in (tmp_path / name).iterdir()) == [
            feedback.ARRANGEMENT_PICTURE
        ]  # no scratch folder left
    assert len(drawn) == 2 and pictures["ana"] == pictures["bo"] != pictures["cy"]
    assert pictures["cy"] == real(PICTURE, [32, 64, 64], tmp_path / "again.png").read_bytes()
