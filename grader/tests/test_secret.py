"""The batch's grading secret: made, kept, reused and compared, never shown.

The batch runs here grade students without a file (missing_file), so nothing is run in
the sandbox and each takes a few seconds.
"""

import json
import shutil
import stat

import pytest

from grader.batch.grade import session
from grader.batch.outputs import secret
from grader.batch.outputs import private_file
from grader.batch.status import GraderError
from grader.core import cases
from grader.tests.batch_helpers import DEMO, environment, run_grader, run_pytest

LONG = "c0ffee" * 8  # 192 bits of hex digits


def test_a_private_file_is_made_once_with_mode_600(tmp_path):
    path = tmp_path / "out" / ".private"
    assert private_file.made_once(path, lambda: b"first") == b"first"
    assert private_file.made_once(path, lambda: b"second") == b"first"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert [p.name for p in path.parent.iterdir()] == [".private"]  # no temporary left


def test_the_secret_is_given_else_stored_else_new(tmp_path):
    made, warning = secret.choose(None, None, tmp_path)
    assert warning == "" and cases.secret_bits(made) >= 250
    assert made != secret.choose(None, None, tmp_path)[0]  # nothing stored yet: a new one
    secret.keep(tmp_path, made)
    assert secret.choose(None, None, tmp_path) == (made, "")
    assert stat.S_IMODE((tmp_path / secret.FILE).stat().st_mode) == 0o600
    assert secret.choose(LONG.upper(), "--seed-file", tmp_path) == (LONG, "")
    secret.keep(tmp_path, LONG)  # a different one given for the same folder replaces it
    assert secret.stored(tmp_path) == LONG
    assert stat.S_IMODE((tmp_path / secret.FILE).stat().st_mode) == 0o600


def test_a_short_secret_is_warned_of_by_where_it_came_from(tmp_path):
    chosen, warning = secret.choose("2026", "--seed", tmp_path)
    assert chosen == "2026" and "--seed" in warning and "13 bits" in warning
    assert "2026" not in warning
    secret.keep(tmp_path, chosen)
    assert secret.FILE in secret.choose(None, None, tmp_path)[1]


def _class(tmp_path, students=("ivan",)):
    for student in students:
        shutil.copytree(DEMO / "ivan", tmp_path / "class" / student)
    return tmp_path / "class"


def _grade(tmp_path, out, *options):
    result = run_grader(
        tmp_path, "grade", str(tmp_path / "class"), "--out", str(out), "--no-progress", *options
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return result


def test_seed_flags_of_the_command_line(tmp_path):
    _class(tmp_path)
    hex_file, short_file = tmp_path / "hex-secret", tmp_path / "short-secret"
    hex_file.write_text(LONG.upper() + "\n")
    short_file.write_text("31337\n")
    quiet = _grade(tmp_path, tmp_path / "hex", "--seed-file", str(hex_file))
    assert "warning" not in quiet.stderr and secret.stored(tmp_path / "hex") == LONG
    record = json.loads((tmp_path / "hex" / "ivan" / "record.json").read_text())
    assert record["secret_fingerprint"] == cases.fingerprint(LONG) and "seed" not in record
    for flag, value in (("--seed", "2026"), ("--seed-file", str(short_file))):
        loud = _grade(tmp_path, tmp_path / flag.strip("-"), flag, value)
        warnings = [line for line in loud.stderr.splitlines() if line.startswith("warning")]
        assert len(warnings) == 1 and flag in warnings[0]
        assert "2026" not in warnings[0] and "31337" not in warnings[0]
    again = _grade(tmp_path, tmp_path / "seed")  # resumed: the stored short secret warns again
    assert secret.FILE in again.stderr and "1 already graded" in again.stderr


def test_merge_wants_shards_graded_with_one_secret(tmp_path):
    _class(tmp_path, ("ivan", "ivy"))
    for index in (1, 2):
        _grade(tmp_path, tmp_path / f"own-{index}", "--shard", f"{index}/2")
    refused = run_grader(
        tmp_path,
        "merge",
        str(tmp_path / "own-1"),
        str(tmp_path / "own-2"),
        "--out",
        str(tmp_path / "own-merged"),
    )
    assert refused.returncode == 1 and "different secret" in refused.stderr
    assert "--seed-file" in refused.stderr
    for index in (1, 2):
        assert secret.stored(tmp_path / f"own-{index}") not in refused.stderr
    shared = tmp_path / "class-secret"
    shared.write_text(LONG)
    for index in (1, 2):
        _grade(
            tmp_path,
            tmp_path / f"shared-{index}",
            "--shard",
            f"{index}/2",
            "--seed-file",
            str(shared),
        )
    merged = run_grader(
        tmp_path,
        "merge",
        str(tmp_path / "shared-1"),
        str(tmp_path / "shared-2"),
        "--out",
        str(tmp_path / "merged"),
    )
    assert merged.returncode == 0, merged.stderr
    assert secret.stored(tmp_path / "merged") == LONG
    manifest = json.loads((tmp_path / "merged" / "batch.json").read_text())
    assert manifest["secret_fingerprint"] == cases.fingerprint(LONG)
    (tmp_path / "shared-1" / secret.FILE).unlink()
    with pytest.raises(GraderError, match=secret.FILE):
        session.merge([tmp_path / "shared-1", tmp_path / "shared-2"], tmp_path / "merged-2")


def test_the_pytest_grader_reads_a_batchs_secret_file(tmp_path):
    (tmp_path / "secret").write_text(LONG)
    result = run_pytest(
        "grader",
        "--collect-only",
        "-q",
        "-p",
        "no:cacheprovider",
        "--seed-file",
        str(tmp_path / "secret"),
        env=environment(tmp_path),
        timeout=300,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    for case in cases.hidden_cases(LONG):
        assert f"test_case[{case.id}]" in result.stdout
        assert f"{case.m}x{case.n}x{case.k}" not in result.stdout
    bad = run_pytest(
        "grader", "--collect-only", "-q", "--seed", "0x12", env=environment(tmp_path), timeout=300
    )
    assert bad.returncode != 0 and "--seed" in bad.stderr


def test_the_pytest_summary_names_a_secret_by_its_fingerprint_only():
    from grader.core import suite

    assert suite.secret_label(cases.DEFAULT_SEED) == f"seed: {cases.DEFAULT_SEED}"
    label = suite.secret_label(LONG)
    assert LONG not in label and cases.fingerprint(LONG) in label
