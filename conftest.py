"""Pytest set-up shared by the public tests, the grader and the kit's own tests.

* Picks the backend before anything imports triton: the GPU when CUDA is there,
  otherwise the Triton interpreter on the CPU (NTGEMM_BACKEND=interpreter forces
  it). The header says which one runs.
* ``--submission PATH`` chooses the file under test (default: the skeleton).
* ``--seed N`` (or ``--seed-file PATH``) chooses the grading secret of the hidden cases;
  the public cases' inputs never depend on it.
* A ``tests/`` folder (the kit's own tests) is collected only when named on the
  command line, so ``pytest assignment`` and ``pytest grader`` run the student
  suites alone.
* A pytest-xdist worker (the kit's own suite, ``-n auto``) runs torch on one thread.
"""

import os
import pathlib

import pytest

from grader.core import backend as backends
from grader.core import cases, gpu_compile
from grader.core.loading import SubmissionError, load_submission

ROOT = pathlib.Path(__file__).resolve().parent
DEFAULT_SUBMISSION = ROOT / "assignment" / "ninetoothed_gemm.py"


def pytest_addoption(parser):
    group = parser.getgroup("ntgemm")
    group.addoption(
        "--submission",
        default=str(DEFAULT_SUBMISSION),
        metavar="PATH",
        help="the ninetoothed_gemm.py to test (default: assignment/ninetoothed_gemm.py)",
    )
    group.addoption(
        "--seed",
        type=cases.canonical_secret,
        default=cases.DEFAULT_SEED,
        help="the secret of the hidden cases, a whole number or hex digits (default: the "
        f"public {cases.DEFAULT_SEED})",
    )
    group.addoption(
        "--seed-file",
        default=None,
        metavar="PATH",
        help="read the secret from a file instead, e.g. a batch's OUT_DIR/.grader-secret",
    )
    group.addoption(
        "--gpu-target",
        type=gpu_compile.target_argument,
        default=None,
        metavar="sm_XY",
        help="the GPU every kernel is compiled for before its cases run, on any backend "
        f"(default: ${gpu_compile.ENV_VAR} or {gpu_compile.DEFAULT_TARGET}; one of "
        f"{', '.join(gpu_compile.TARGETS)})",
    )


def pytest_configure(config):
    config._ntgemm_seed = _grading_secret(config)
    if os.environ.get("NINETOOTHED_AUTOTUNE") == "1" and not _has_cuda():
        os.environ.pop("NINETOOTHED_AUTOTUNE")
        config._ntgemm_autotune_note = "NINETOOTHED_AUTOTUNE ignored: autotuning needs a GPU"
    try:
        config._ntgemm_backend = backends.activate()
    except (RuntimeError, ValueError) as error:  # an environment the kernels cannot run in
        raise pytest.UsageError(str(error)) from None
    if hasattr(config, "workerinput"):  # a pytest-xdist worker, not a process it started
        _one_thread_per_worker()


def _one_thread_per_worker():
    """Under pytest-xdist (the kit's own suite, ``-n auto``), one torch thread per worker:
    the workers and the processes their tests start already keep every core busy, and
    torch's pool then spins for cores it does not get: one thread was 14 times faster than
    two on a busy 2-core box (docs/stress-runs/timeline.md, "Measurements behind the
    rules")."""
    import torch

    torch.set_num_threads(1)


def _grading_secret(config):
    path = config.getoption("--seed-file")
    if path is None:
        return config.getoption("--seed")
    try:
        return cases.canonical_secret(pathlib.Path(path).read_text(errors="replace"))
    except (OSError, ValueError) as error:
        raise pytest.UsageError(f"--seed-file {path}: {error}") from None


def _has_cuda():
    import torch

    return torch.cuda.is_available() and backends.requested() != "interpreter"


def pytest_report_header(config):
    lines = [f"ntgemm backend: {config._ntgemm_backend.detail}"]
    note = getattr(config, "_ntgemm_autotune_note", None)
    if note:
        lines.append(note)
    lines.append(f"ntgemm submission: {config.getoption('--submission')}")
    return lines


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    from grader.core import suite  # imports triton: only once the backend is chosen

    suite.summary(terminalreporter, config)


def pytest_ignore_collect(collection_path, config):
    if collection_path.name != "tests" or not collection_path.is_dir():
        return None
    for arg in config.args:
        target = pathlib.Path(arg.split("::")[0]).resolve()
        if target == collection_path or collection_path in target.parents:
            return None
    return True


@pytest.fixture(scope="session")
def backend(pytestconfig):
    return pytestconfig._ntgemm_backend


@pytest.fixture(scope="session")
def grading_seed(pytestconfig):
    return pytestconfig._ntgemm_seed


@pytest.fixture(scope="session")
def submission(pytestconfig):
    """The file under test, imported once; see ``Submission.module``."""
    return Submission(pytestconfig.getoption("--submission"))


class Submission:
    """Imports lazily, so a broken file fails each test (not its set-up) with one clear line."""

    def __init__(self, path):
        self.path = path
        self._module = None
        self._error = None
        self._loaded = False

    @property
    def module(self):
        if self.error is not None:
            pytest.fail(f"[{self.error.status}] {self.error}", pytrace=False)
        return self._module

    @property
    def error(self):
        """The SubmissionError that stops this file from being used, or None."""
        if not self._loaded:
            self._loaded = True
            try:
                self._module = load_submission(self.path)
            except SubmissionError as error:
                self._error = error
        return self._error
