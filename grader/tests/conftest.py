"""Shared by the grader's own tests: one compile-gate store for the whole test run.

The batches these tests start (in this process, and as ``python -m grader``) grade the same
few generated kernels again and again: the demo class, the model answer and its variants.
In CI each batch compiled each of them for the course's GPU once more: 160 compiles, whose
Builds held 7 distinct results (2026-12-06). ``NTGEMM_COMPILE_CACHE`` points every batch of the run
at one store (grader.batch.isolation.compile_store), so the first batch that meets a kernel
compiles it, in a sandbox of its own, and the others read its Build. test_compile_gate tests
the gate and the store with gates of its own.
"""

import os

import pytest

from grader.batch.isolation import compile_store


@pytest.fixture(scope="session", autouse=True)
def compile_cache(tmp_path_factory):
    """The run's store: under pytest-xdist, one for all its workers."""
    if compile_store.ENV_VAR in os.environ:  # the caller chose one
        yield
        return
    base = tmp_path_factory.getbasetemp()
    folder = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "compile-cache"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(compile_store.ENV_VAR, str(folder))
        yield
