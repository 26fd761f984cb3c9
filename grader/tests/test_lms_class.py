"""A Canvas and a Moodle download graded whole: files under other names, a second file,
two students of one name, a hand-in CSV, an archive holding the file and its CSV, a file
nested too deep to read, Moodle's online text beside the file, a folder beside a flat file
and one name in NFC and NFD. Every student gets exactly one right row, in the gradebook and
in the LMS's export, and every entry left out is said; the feedback zip hands each one page
back under a name of that student's download."""

import io
import json
import os
import shutil
import unicodedata
import zipfile

import pytest

from grader.batch.grade.manifest import Manifest
from grader.batch.outputs import export, feedback_zip
from grader.tests.batch_helpers import DEMO, gradebook, run_grader
from grader.tests.test_lms import read_back
from grader.tests.test_lms_feedback import CANVAS_NAME, MOODLE_NAME, Page, pictures_of

OPTIONS = ["--cases", "nonsquare-128x256x192", "--no-speed", "--no-progress", "-j", "2"]
SOLUTION = DEMO / "ada" / "ninetoothed_gemm.py"
BENCHMARK = next((DEMO / "ada").glob("*.csv"))
SKELETON = DEMO / "ben" / "ninetoothed_gemm.py"
ARRANGEMENT_OFF = DEMO / "chen" / "ninetoothed_gemm.py"  # fails non-square: a picture drawn

CANVAS = {  # the download's file name: what it holds
    "lihua_4711_101_NineToothed_GEMM.py": SOLUTION,
    "lihua_4711_102_ntgemm-bench.csv": BENCHMARK,
    "lihua_4712_103_solution.py": "x = 1\n",
    "doejane_LATE_777_104_ninetoothed_gemm (1).py": SKELETON,
    "smithjohn_12345_105_solution.py": SKELETON,
    "smithjohn_12345_106_helper.py": "x = 1\n",
    "amyw_555_107_ninetoothed_gemm.py": SKELETON,
    "amyw_555_108_utils.py": "x = 1\n",
    "chenwei_888_109_ninetoothed_gemm.py": ARRANGEMENT_OFF,
    "zhaolei_4713_110_ninetoothed_gemm.zip": "archive",  # the file and its CSV, zipped
    "deepdan_4714_111_ninetoothed_gemm.py": "X = " + " + ".join(["1"] * 3000) + "\n",
    "roster.csv": "name\n",
}
CANVAS_ROWS = {  # student: (status, LMS id, late)
    "lihua (4711)": ("passed", "4711", "False"),
    "lihua (4712)": ("import_error", "4712", "False"),
    "doejane": ("not_implemented", "777", "True"),
    "smithjohn": ("missing_file", "12345", "False"),
    "amyw": ("not_implemented", "555", "False"),
    "chenwei": ("failed", "888", "False"),
    "zhaolei": ("passed", "4713", "False"),
    "deepdan": ("failed", "4714", "False"),
}
MOODLE = {
    "Li Hua_2231_assignsubmission_file_/NineToothed_GEMM.py": SKELETON,
    "Li Hua_2232_assignsubmission_file_/ninetoothed_gemm.py": "x = 1\n",
    "Wang Fang_2233_assignsubmission_file_/a.py": SKELETON,
    "Wang Fang_2233_assignsubmission_file_/b.py": SKELETON,
    "Chen Wei_2234_assignsubmission_file_/ninetoothed_gemm.py": ARRANGEMENT_OFF,
    "Ada Lovelace_2235_assignsubmission_file_/ninetoothed_gemm.py": SKELETON,
    "Ada Lovelace_2235_assignsubmission_onlinetext_/onlinetext.html": "<p>see the file</p>\n",
}
MOODLE_ROWS = {
    "Li Hua (2231)": ("not_implemented", "2231", "False"),
    "Li Hua (2232)": ("import_error", "2232", "False"),
    "Wang Fang": ("missing_file", "2233", "False"),
    "Chen Wei": ("failed", "2234", "False"),
    "Ada Lovelace": ("not_implemented", "2235", "False"),
}
JOSE = "Jos\u00e9"  # written once as NFC, once as NFD, as a Mac would
MIXED = {  # a folder per student, flat files, one folder beside a flat file
    "amy/ninetoothed_gemm.py": "x = 1\n",  # older: amy.py is graded
    "amy.py": SKELETON,
    f"{JOSE}.py": "x = 1\n",  # older than the NFD folder's file
    f"{unicodedata.normalize('NFD', JOSE)}/ninetoothed_gemm.py": SKELETON,
}
MIXED_ROWS = {"amy": ("not_implemented", "", "False"), JOSE: ("not_implemented", "", "False")}
ROWS = {"canvas": CANVAS_ROWS, "moodle": MOODLE_ROWS, "mixed": MIXED_ROWS}
DOWNLOADS = {"canvas": CANVAS, "moodle": MOODLE, "mixed": MIXED}
OLDER = {"amy/ninetoothed_gemm.py", f"{JOSE}.py"}  # given an earlier time than the rest


def archive_of_solution_and_csv():
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.write(SOLUTION, "hw/ninetoothed_gemm.py")
        archive.write(BENCHMARK, "hw/ntgemm-bench.csv")
    return buffer.getvalue()


def download(folder, files):
    for name, content in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if content == "archive":
            path.write_bytes(archive_of_solution_and_csv())
        elif isinstance(content, str):
            path.write_text(content, encoding="utf-8")
        else:
            shutil.copy(content, path)
        when = 1_700_000_000 if name in OLDER else 1_700_000_500
        os.utime(path, (when, when))
    return folder


@pytest.fixture(scope="module", params=["canvas", "moodle", "mixed"])
def graded(request, tmp_path_factory):
    base = tmp_path_factory.mktemp(request.param)
    submissions = download(base / "download", DOWNLOADS[request.param])
    out = base / "out"
    result = run_grader(base, "grade", str(submissions), "--out", str(out), *OPTIONS)
    assert result.returncode == 0, result.stderr
    return request.param, base, out, result


def test_every_student_has_exactly_one_right_row(graded):
    kind, _, out, _ = graded
    expected = ROWS[kind]
    book = gradebook(out)
    assert {
        student: (row["status"], row["lms_id"], row["late"]) for student, row in book.items()
    } == expected


def test_the_lms_export_has_every_student(graded):
    kind, base, out, _ = graded
    if kind == "mixed":
        pytest.skip("no LMS gave this download")
    expected = ROWS[kind]
    assert export.export(out, kind, base / "export.csv", "NineToothed GEMM (1234)") == []
    rows = read_back(base / "export.csv")
    if kind == "canvas":
        assert sorted((row["Student"], row["ID"]) for row in rows) == sorted(
            (student, lms) for student, (_, lms, _) in expected.items()
        )
    else:
        assert sorted((row["Full name"], row["Identifier"]) for row in rows) == sorted(
            (student, f"Participant {lms}") for student, (_, lms, _) in expected.items()
        )


def test_the_file_taken_and_the_hand_in_are_recorded(graded):
    kind, _, out, _ = graded
    if kind == "mixed":
        pytest.skip("every file here is named as asked")
    folders = Manifest.read(out).students
    student = "lihua (4711)" if kind == "canvas" else "Li Hua (2231)"
    record = json.loads((out / folders[student] / "record.json").read_text(encoding="utf-8"))
    assert record["taken"] == "NineToothed_GEMM.py"
    feedback = (out / folders[student] / "feedback.md").read_text(encoding="utf-8")
    assert "Graded NineToothed\\_GEMM.py, your only Python file" in feedback
    if kind == "canvas":
        assert record["handin"] is not None, "the hand-in check ran on the Canvas CSV"


def record_of(out, student):
    folder = Manifest.read(out).students[student]
    return json.loads((out / folder / "record.json").read_text(encoding="utf-8"))


def test_every_entry_is_one_row_or_one_skip_said_and_recorded(graded):
    kind, _, out, result = graded
    skipped = {item["entry"] for item in Manifest.read(out).skipped}
    seen = {
        student: [(entry["path"], entry["why"]) for entry in record_of(out, student)["seen"]]
        for student in ROWS[kind]
    }
    assert skipped == ({"roster.csv"} if kind == "canvas" else set())
    assert (out / "skipped.csv").read_text(encoding="utf-8-sig").splitlines() == ["entry,why"] + [
        'roster.csv,"not a folder, .py or .zip, nor a file of an LMS download"' for _ in skipped
    ]
    if kind == "canvas":
        assert "skipped 'roster.csv': not a folder" in result.stderr
        assert seen["amyw"] == [("amyw_555_108_utils.py", "another file of the same upload")]
        assert record_of(out, "smithjohn")["origin"] == "smithjohn_12345_105_solution.py"
        assert seen["smithjohn"] == [
            ("smithjohn_12345_106_helper.py", "another file of the same upload")
        ]
        zipped = record_of(out, "zhaolei")
        assert zipped["origin"] == "zhaolei_4713_110_ninetoothed_gemm.zip:hw/ninetoothed_gemm.py"
        assert zipped["handin"]["file"] == "hw/ntgemm-bench.csv"
        deep = record_of(out, "deepdan")
        assert "line 1" in deep["message"] and "nests more than" in deep["message"]
    elif kind == "moodle":
        assert seen["Ada Lovelace"] == [
            (
                "Ada Lovelace_2235_assignsubmission_onlinetext_/",
                "nothing to grade in it (no ninetoothed_gemm.py in the folder "
                "Ada Lovelace_2235_assignsubmission_onlinetext_/)",
            )
        ]
        assert "more than one Python file (a.py, b.py)" in record_of(out, "Wang Fang")["message"]
    else:
        book = gradebook(out)
        assert book["amy"]["graded_file"] == "amy.py"
        assert book["amy"]["seen"] == (
            "amy/ninetoothed_gemm.py (an older entry of the same "
            "student; graded amy.py, the latest)"
        )
        nfd = unicodedata.normalize("NFD", JOSE)
        assert book[JOSE]["graded_file"] == f"{nfd}/ninetoothed_gemm.py"
        assert seen[JOSE][0][0] == f"{JOSE}.py"
        page = (out / Manifest.read(out).students["amy"] / "feedback.md").read_text("utf-8")
        assert "Also seen, not graded" in page and "amy/ninetoothed\\_gemm.py" in page


def test_the_feedback_zip_names_each_page_as_the_lms_upload_matches_it(graded):
    kind, base, out, _ = graded
    if kind == "mixed":
        pytest.skip("no LMS gave this download")
    expected = ROWS[kind]
    files, pattern = (CANVAS, CANVAS_NAME) if kind == "canvas" else (MOODLE, MOODLE_NAME)
    target = base / f"{kind}-feedback.zip"
    assert feedback_zip.build(out, f"{kind}-feedback", target) == []
    with zipfile.ZipFile(target) as archive:
        pages = {name: archive.read(name).decode("utf-8") for name in archive.namelist()}
    users = sorted(pattern.fullmatch(name)["user"] for name in pages)
    assert users == sorted(lms for _, lms, _ in expected.values())
    for name in pages:  # the ids of one of that student's own downloaded files
        prefix = name[: -len(feedback_zip.FILE_NAME)].rstrip("/")
        assert any(download.startswith(prefix) for download in files), name
    pictures = {name: pictures_of(Page(page)) for name, page in pages.items()}
    drawn = [name for name, found in pictures.items() if found]
    assert len(drawn) == 1 and ("chenwei_888_109_" in drawn[0] or "Chen Wei_2234" in drawn[0])
    assert "The picture above draws which tiles" in pages[drawn[0]]
