"""The floor of the kit: the skeleton, the reference, nt_gemm's errors and the backend line."""

import pathlib
import subprocess
import sys

import pytest
import torch

import solutions
from grader.core.loading import SubmissionError, load_submission

ROOT = pathlib.Path(__file__).resolve().parents[2]
REFERENCE = solutions.MODEL_ANSWER
SKELETON = ROOT / "assignment" / "ninetoothed_gemm.py"


def run_pytest(*args):
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_reference_passes_the_public_tests():
    result = run_pytest("assignment", "--submission", str(REFERENCE), "-q")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "5 passed" in result.stdout or "6 passed" in result.stdout


def test_untouched_skeleton_fails_every_test_naming_the_functions():
    result = run_pytest("assignment", "-q")
    assert result.returncode == 1, result.stdout
    failures = [line for line in result.stdout.splitlines() if line.startswith("[not_implemented]")]
    assert failures, result.stdout
    assert all("arrangement()" in line and "application()" in line for line in failures)
    assert "Traceback" not in result.stdout


def test_header_names_the_backend():
    result = run_pytest("assignment", "--submission", str(REFERENCE), "--co")
    assert "ntgemm backend:" in result.stdout
    if not torch.cuda.is_available():
        assert "Triton interpreter on the CPU" in result.stdout
        assert "correctness only" in result.stdout


@pytest.fixture(scope="module")
def reference(backend):
    return load_submission(REFERENCE), backend.device


def good(m, k, device):
    return torch.ones((m, k), dtype=torch.float16, device=device)


@pytest.mark.parametrize(
    "lhs, rhs, error, words",
    [
        ("list", "ok", TypeError, "lhs must be a torch.Tensor"),
        ("ok", "float32", TypeError, "rhs must be float16"),
        ("3d", "ok", ValueError, "lhs must be 2-D"),
        ("ok", "empty", ValueError, "rhs must be non-empty"),
        ("ok", "mismatch", ValueError, "inner dimensions must match"),
    ],
)
def test_nt_gemm_rejects_bad_inputs(reference, lhs, rhs, error, words):
    module, device = reference
    operands = {
        "list": [[1.0]],
        "float32": torch.ones((8, 4), device=device),
        "3d": torch.ones((2, 4, 8), dtype=torch.float16, device=device),
        "empty": torch.ones((8, 0), dtype=torch.float16, device=device),
        "mismatch": good(7, 4, device),
    }
    left = operands[lhs] if lhs != "ok" else good(4, 8, device)
    right = operands[rhs] if rhs != "ok" else good(8, 4, device)
    with pytest.raises(error, match=words):
        module.nt_gemm(left, right)


def test_nt_gemm_rejects_mixed_devices(reference):
    module, device = reference
    if device == "cpu":
        pytest.skip("needs a GPU to hold one operand elsewhere")
    with pytest.raises(ValueError, match="same device"):
        module.nt_gemm(good(4, 8, "cpu"), good(8, 4, device))


def test_same_named_files_never_shadow_each_other(tmp_path):
    for folder, value in (("alice", 32), ("bob", 16)):
        (tmp_path / folder).mkdir()
        source = REFERENCE.read_text().replace("BLOCK_SIZE_M = 64", f"BLOCK_SIZE_M = {value}")
        (tmp_path / folder / "ninetoothed_gemm.py").write_text(source)
    alice = load_submission(tmp_path / "alice" / "ninetoothed_gemm.py")
    bob = load_submission(tmp_path / "bob" / "ninetoothed_gemm.py")
    assert (alice.BLOCK_SIZE_M, bob.BLOCK_SIZE_M) == (32, 16)


@pytest.mark.parametrize(
    "source, status, words",
    [
        ("def arrangement(:\n", "import_error", "line 1"),
        ("import no_such_module_xyz\n", "import_error", "ModuleNotFoundError"),
        ("BLOCK_SIZE_M = 64\n", "import_error", "does not define arrangement"),
    ],
)
def test_broken_files_say_why(tmp_path, source, status, words):
    path = tmp_path / "ninetoothed_gemm.py"
    path.write_text(source)
    with pytest.raises(SubmissionError, match=words) as caught:
        load_submission(path)
    assert caught.value.status == status
