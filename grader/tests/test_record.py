"""The grading record on disk: its fields survive a round trip, a record.json written before
the version existed still verifies and reads, and writing the reports changes no record."""

import copy
import hashlib
import hmac
import json

import pytest

from grader.batch.outputs import reports
from grader.batch.outputs.private_file import signing_key
from grader.batch.record import VERSION, CaseEntry, Record

# A record.json as the grader wrote it before record_version (its keys, in its order).
BEFORE_VERSION = {
    "student": "ada",
    "folder": "ada",
    "origin": "ada/ninetoothed_gemm.py",
    "taken": "",
    "seen": [{"path": "ada/old.py", "why": "not the graded file"}],
    "lms_id": "",
    "late": False,
    "sha256": "ab" * 32,
    "key": "k" * 64,
    "grader_version": "0.2.0+0123456789ab",
    "secret_fingerprint": "f" * 16,
    "backend": "interpreter",
    "isolation": "bubblewrap",
    "status": "failed",
    "message": "1 of 2 case(s) failed",
    "score": 1,
    "max_score": 2,
    "flags": [],
    "cases": [
        {
            "id": "square_64",
            "name": "square_64",
            "visibility": "public",
            "points": 1,
            "max_points": 1,
            "mistake": "",
            "flags": [],
            "status": "passed",
            "passed": True,
            "message": "",
            "details": {},
        },
        {
            "id": "hidden_0",
            "name": "hidden_0 (hidden)",
            "visibility": "hidden",
            "points": 0,
            "max_points": 1,
            "mistake": "expand_axis",
            "flags": [],
            "status": "failed",
            "passed": False,
            "message": "a hidden case",
            "details": {},
        },
    ],
    "findings": [],
    "tiles": [64, 64, 64],
    "arrangement": None,
    "speed": {"status": "not_measured", "message": "interpreter", "message_zh": "解释器"},
    "handin": None,
    "wall_time_s": 3.5,
    "stdout": "",
    "stderr": "[kernel run: finished ]",
    "peak_cores": 1.0,
    "cpu_time_s": 3.1,
    "cpu_wait_s": 0.0,
    "seconds": {"kernel run": {"load": 1.0}, "grader": {"judge": 0.1}},
    "layout_ok": True,
    "gpu_build": None,
    "gpu_build_shared": False,
    "hints": [{"key": "expand_axis", "message": "m"}],
    "overrides": [],
    "overrides_withheld": [],
}


def test_a_record_survives_its_json():
    record = Record.from_json(BEFORE_VERSION)
    again = Record.from_json(json.loads(json.dumps(record.to_json())))
    assert again == record
    assert isinstance(again.cases[1], CaseEntry) and again.case("hidden_0").mistake == "expand_axis"


def test_a_record_before_the_version_reads_with_its_keys_kept():
    record = Record.from_json({**BEFORE_VERSION, "retired_key": [1, 2]})
    assert (record.status, record.score, record.tiles) == ("failed", 1, [64, 64, 64])
    written = record.to_json()
    assert written["record_version"] == VERSION and written["retired_key"] == [1, 2]
    # Consumers read the same keys as before, with the same values.
    assert {key: written[key] for key in BEFORE_VERSION if written.get(key) is not None} == {
        key: value for key, value in BEFORE_VERSION.items() if value is not None
    }


def test_a_record_of_a_newer_grader_is_refused_by_name():
    with pytest.raises(ValueError, match="record_version 99"):
        Record.from_json({**BEFORE_VERSION, "record_version": 99})


def test_an_old_signed_record_json_still_resumes(tmp_path):
    """Signed as the grader signed it before the version: the sorted JSON of every key but the
    signature, under the output folder's key."""
    (tmp_path / "ada").mkdir()
    body = json.dumps(BEFORE_VERSION, sort_keys=True, ensure_ascii=True).encode("ascii")
    signature = hmac.new(signing_key(tmp_path), body, hashlib.sha256).hexdigest()
    stored = tmp_path / "ada" / "record.json"
    stored.write_text(json.dumps({**BEFORE_VERSION, "signature": signature}))
    record = reports.read_record(tmp_path, "ada")
    assert record == Record.from_json(BEFORE_VERSION)
    stored.write_text(json.dumps({**BEFORE_VERSION, "score": 2, "signature": signature}))
    assert reports.read_record(tmp_path, "ada") is None  # tampered: graded again


def test_a_stored_record_reads_back_and_its_file_is_the_version(tmp_path):
    record = Record.from_json(BEFORE_VERSION)
    reports.store_record(tmp_path, record)
    assert reports.read_record(tmp_path, "ada") == record
    assert json.loads((tmp_path / "ada" / "record.json").read_text())["record_version"] == VERSION


def test_writing_the_feedback_changes_no_record(tmp_path):
    from grader.batch.grade.grading import Settings

    record = Record.from_json(
        {**BEFORE_VERSION, "hints": None, "overrides": None, "overrides_withheld": None}
    )
    before = copy.deepcopy(record)
    cases_list = Settings(
        seed="2026", backend="interpreter", timeout_s=60, memory_limit_bytes=1 << 30
    ).cases()
    reports.write_feedback(tmp_path, record, cases_list)
    assert record == before
    stored = reports.read_record(tmp_path, "ada")
    assert stored.overrides == [] and stored.hints is not None
