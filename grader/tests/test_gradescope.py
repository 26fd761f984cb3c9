"""The Gradescope autograder, offline: build the zip, unpack it into a fake /autograder
tree, run its run_autograder on a submission, and check results.json against the spec.

The spec is Gradescope's ``docs/specs.md`` (gradescope/autograder_samples) and its
documented result fields (status, output_format, number, tags, leaderboard):
``check_results`` below is that spec written as code, field by field.
"""

import json
import re
import os
import shutil
import stat
import subprocess
import sys
import zipfile

import pytest

from grader.core import cases
from grader.tests.batch_helpers import DEMO, batch_backend, kit_files_loaded_alone, run_grader
from solutions import MODEL_ANSWER

SEED = 4242


def chosen_cases():
    """Two public cases and one hidden case of the seed the zip is built with."""
    catalogue = {case.name: case.id for case in cases.catalogue(SEED, batch_backend())}
    return ",".join(["nonsquare-128x256x192", "tail_mnk-65x97x130", catalogue["hidden_1"]])

VISIBILITY = {"hidden", "after_due_date", "after_published", "visible"}
FORMATS = {"text", "html", "simple_format", "md", "ansi"}
TOP = {"score": (int, float), "execution_time": (int, float), "output": str,
       "output_format": str, "test_output_format": str, "test_name_format": str,
       "visibility": str, "stdout_visibility": str, "extra_data": dict, "tests": list,
       "leaderboard": list}
TEST = {"score": (int, float), "max_score": (int, float), "status": str, "name": str,
        "name_format": str, "number": str, "output": str, "output_format": str, "tags": list,
        "visibility": str, "extra_data": dict}


def check_results(results):
    """Every field is one the spec defines, of the type and values it allows."""
    assert set(results) <= set(TOP), set(results) - set(TOP)
    for field, kind in TOP.items():
        if field in results:
            assert isinstance(results[field], kind), field
    assert "score" in results or all("score" in test for test in results.get("tests", []))
    for field in ("visibility", "stdout_visibility"):
        assert results.get(field, "visible") in VISIBILITY
    for field in ("output_format", "test_output_format"):
        assert results.get(field, "text") in FORMATS
    for test in results.get("tests", []):
        assert set(test) <= set(TEST), set(test) - set(TEST)
        for field, kind in TEST.items():
            if field in test:
                assert isinstance(test[field], kind), (field, test)
        assert test.get("status", "passed") in {"passed", "failed"}
        assert test.get("visibility", "visible") in VISIBILITY
        assert all(isinstance(tag, str) for tag in test.get("tags", []))
        assert 0 <= test.get("score", 0) <= test.get("max_score", float("inf"))
    for entry in results.get("leaderboard", []):
        assert set(entry) <= {"name", "value", "order"} and "name" in entry and "value" in entry
        assert entry.get("order", "desc") in {"asc", "desc"}


@pytest.fixture(scope="module")
def autograder(tmp_path_factory):
    base = tmp_path_factory.mktemp("gradescope")
    result = run_grader(base, "gradescope", "--out", str(base), "--seed", str(SEED),
                        "--timeout", "60", "--cases", chosen_cases(), timeout=120)
    assert result.returncode == 0, result.stderr
    source = base / "autograder" / "source"
    with zipfile.ZipFile(base / "autograder.zip") as archive:
        names = archive.namelist()
        assert {"setup.sh", "run_autograder", "gradescope.json"} <= set(names)
        assert not any("/tests/" in name or "demo_class" in name for name in names)
        archive.extractall(source)
        for name in ("setup.sh", "run_autograder"):
            assert stat.S_IMODE(archive.getinfo(name).external_attr >> 16) & 0o111
    for name in ("setup.sh", "run_autograder"):
        assert subprocess.run(["bash", "-n", str(source / name)]).returncode == 0
    return base


def test_the_zip_holds_every_module_the_autograder_runs(autograder):
    """Imported without site (so without this checkout's editable install), the unpacked
    kit loads every module the grading process and its worker use from the zip alone."""
    kit = autograder / "autograder" / "source" / "ntgemm"
    imports = ("import grader.batch.gradescope as g, grader.batch.worker, grader.core.gpu_compile"
               "\ng._preload()")
    loaded = kit_files_loaded_alone(kit, imports, timeout=120)
    assert all(path.startswith(str(kit)) for path in loaded), loaded


def grade_in_tree(base, submission_file, name):
    root = base / name
    shutil.copytree(base / "autograder" / "source", root / "source")
    (root / "submission").mkdir(parents=True)
    shutil.copyfile(submission_file, root / "submission" / "ninetoothed_gemm.py")
    (root / "results").mkdir()
    environment = {**os.environ, "AUTOGRADER_ROOT": str(root), "NTGEMM_PYTHON": sys.executable,
                   "TMPDIR": str(base)}
    environment.pop("PYTHONPATH", None)
    completed = subprocess.run(["bash", str(root / "source" / "run_autograder")],
                               capture_output=True, text=True, timeout=600, env=environment)
    assert completed.returncode == 0, completed.stderr[-3000:]
    return json.loads((root / "results" / "results.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("name, path, status", [
    ("reference", MODEL_ANSWER, "passed"),
    ("mistake", DEMO / "chen" / "ninetoothed_gemm.py", "failed"),
    ("cheat", DEMO / "fay" / "ninetoothed_gemm.py", "flagged"),
    ("crash", DEMO / "kai" / "ninetoothed_gemm.py", "crashed"),
])
def test_run_autograder_writes_spec_valid_results(autograder, name, path, status):
    results = grade_in_tree(autograder, path, name)
    check_results(results)
    assert results["extra_data"]["status"] == status
    assert results["extra_data"]["isolation"] == "bubblewrap"
    assert results["output_format"] == "md" and "ntgemm feedback" in results["output"]
    total = sum(test["max_score"] for test in results["tests"])
    assert len(results["tests"]) == 3 and results["extra_data"]["max_score"] == total
    # No top-level score while hidden cases are hidden: Gradescope adds up the tests,
    # each shown when its visibility allows, and the always-visible output tells only
    # what the public cases say.
    assert "score" not in results
    score = sum(test["score"] for test in results["tests"])
    expected = {"passed": total, "flagged": 0, "crashed": 0}
    if status in expected:
        assert score == expected[status]
    else:
        assert 0 < score < total
    public = [test for test in results["tests"] if "public" in test["tags"]]
    shown = re.search(r"Score / 得分: (\S+) / (\S+)\*\*", results["output"])
    assert float(shown.group(2)) == sum(test["max_score"] for test in public) < total
    assert "hidden" not in results["output"]
    hidden = [test for test in results["tests"] if "hidden" in test["tags"]]
    assert hidden and all(test["visibility"] == "after_due_date" for test in hidden)
    assert all(str(SEED) not in json.dumps(test) for test in results["tests"])


def test_bad_visibility_is_refused_with_the_choices(tmp_path):
    result = run_grader(tmp_path, "gradescope", "--out", str(tmp_path),
                        "--hidden-visibility", "never", timeout=60)
    assert result.returncode == 2 and "after_due_date" in result.stderr


def test_without_its_sandbox_it_refuses_to_grade_and_says_why(autograder, monkeypatch, tmp_path):
    """Where bubblewrap cannot start, grading as root beside the grader could be forged:
    the zip refuses unless built with --allow-unsandboxed."""
    from grader.batch import gradescope, sandbox

    root = tmp_path / "autograder"
    shutil.copytree(autograder / "autograder" / "source", root / "source")
    (root / "submission").mkdir()
    shutil.copyfile(DEMO / "ada" / "ninetoothed_gemm.py", root / "submission" / "ninetoothed_gemm.py")
    monkeypatch.setattr(sandbox, "check", lambda gpu: "no user namespaces here")
    assert gradescope.run(root) == 0
    results = json.loads((root / "results" / "results.json").read_text())
    check_results(results)
    assert results["score"] == 0 and results["extra_data"]["status"] == "grader_error"
    assert "no user namespaces here" in results["output"] and "--allow-unsandboxed" in results["output"]
