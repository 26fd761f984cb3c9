"""Hostile submissions in one batch: each gets its status, the rest are graded as alone.

The batch mixes two ordinary students (the reference and a typical mistake)
with submissions that hang, segfault, exit early, hog memory, patch the
comparisons, forge report files, overwrite their neighbours' files and cheat.
Each of these misbehaves in its whole-file ``nt_gemm`` run or at import; the
points come from the kernel the grader builds from the two functions alone.
A 1 GiB memory limit stands in for the default 8 GiB (the hog touches 2 GiB),
and a three-case subset keeps the file to a couple of minutes on two cores.
"""

import json
import shutil

import pytest

from grader.tests.adversarial_class import ATTACKS
from grader.tests.batch_helpers import (
    CLASS_FILES,
    DEMO,
    gradebook,
    run_grader,
    small_cases,
    tree_digest,
)
from grader.tests.source_edits import write_class

EXPECTED = {
    "alice": "passed",
    "bob": "failed",
    "hang_at_import": "timeout",
    "hang_in_call": "timeout",
    "segfault": "crashed",
    "exit_os": "crashed",
    "exit_sys": "crashed",
    "memory_hog": "memory_limit",
    "memory_error": "failed",
    "patch_allclose": "failed",
    "forge_reports": "passed",
    "overwrite_neighbours": "passed",
    "cheat_einsum": "flagged",
    "cheat_overwrite": "flagged",
    "cheat_elementwise": "flagged",
    "raises_in_call": "failed",
    "missing_name": "import_error",
}
# One secret for both batches: "graded exactly as alone" compares hidden cases too, and
# without it each batch makes a secret (and hidden shapes) of its own.
OPTIONS = [
    "-j",
    "2",
    "--timeout",
    "10",
    "--memory-limit",
    "1",
    "--cases",
    small_cases(),
    "--no-progress",
    "--seed",
    "5eed" * 8,
]


def _neighbours(folder):
    shutil.copytree(DEMO / "ada", folder / "alice")
    shutil.copyfile(DEMO / "dana.py", folder / "bob.py")


@pytest.fixture(scope="module")
def batch(tmp_path_factory):
    base = tmp_path_factory.mktemp("adversarial")
    submissions = write_class(base / "class", ATTACKS)
    _neighbours(submissions)
    before = tree_digest(submissions)
    result = run_grader(base, "grade", str(submissions), "--out", str(base / "out"), *OPTIONS)
    alone = base / "alone"
    alone.mkdir()
    _neighbours(alone)
    quiet = run_grader(base, "grade", str(alone), "--out", str(base / "alone-out"), *OPTIONS)
    return base, submissions, before, result, quiet


def _record(base, student, out="out"):
    return json.loads((base / out / student / "record.json").read_text(encoding="utf-8"))


def test_each_submission_gets_its_status(batch):
    base, _, _, result, _ = batch
    assert result.returncode == 0, result.stderr
    statuses = {student: row["status"] for student, row in gradebook(base / "out").items()}
    assert statuses == EXPECTED


def test_neighbours_are_graded_exactly_as_alone(batch):
    base, _, _, _, quiet = batch
    assert quiet.returncode == 0, quiet.stderr
    crowded, alone = gradebook(base / "out"), gradebook(base / "alone-out")
    for student in ("alice", "bob"):
        assert crowded[student] == alone[student]
        assert _record(base, student)["cases"] == _record(base, student, "alone-out")["cases"]


def test_the_submissions_folder_is_unchanged(batch):
    _, submissions, before, _, _ = batch
    assert tree_digest(submissions) == before


def test_forged_reports_never_reach_the_output(batch):
    base = batch[0]
    book = gradebook(base / "out")
    assert book["forge_reports"]["score"] == book["forge_reports"]["max_score"] != "999"
    expected = CLASS_FILES | set(EXPECTED)
    assert {path.name for path in (base / "out").iterdir()} == expected
    results = json.loads((base / "out" / "forge_reports" / "results.json").read_text())
    assert results["score"] != 999
    assert not list(base.glob("**/forge_reports/forge_reports"))


def test_patched_comparisons_change_nothing(batch):
    base = batch[0]
    record = _record(base, "patch_allclose")
    multi_k = [case for case in record["cases"] if case["id"].startswith("tail_mnk")]
    assert multi_k and all(case["passed"] is False for case in multi_k)
    assert all(case["points"] == 0 for case in record["cases"])


def test_process_endings_are_explained(batch):
    base = batch[0]
    assert "SIGSEGV" in _record(base, "segfault")["message"]
    assert "exit code 0" in _record(base, "exit_os")["message"]
    assert "SystemExit" in _record(base, "exit_sys")["message"]
    assert "GiB" in _record(base, "memory_hog")["message"]
    assert "importing" in _record(base, "hang_at_import")["message"]
    assert "timeout" in _record(base, "hang_in_call")["message"]
    assert "nt_gemm" in _record(base, "missing_name")["message"]
    raised = _record(base, "raises_in_call")
    assert raised["score"] == 0 and "my kernel is not ready" in raised["message"]
    spoofed = _record(base, "memory_error")
    assert spoofed["score"] == 0 and "MemoryError" in spoofed["message"]


@pytest.mark.parametrize("student", ["cheat_einsum", "cheat_overwrite", "cheat_elementwise"])
def test_cheats_are_flagged_with_evidence(batch, student):
    base = batch[0]
    record = _record(base, student)
    assert record["score"] == 0
    assert "did not return its kernel's output" in " ".join(record["flags"])
