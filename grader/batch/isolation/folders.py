"""A run's private folders: its read-only job folder and, unsandboxed, its scratch folder.

Every run's folders lie in one private folder of the grading process (``batch_root``). A
job folder holds the one file the run imports and ``lib/``, a copy of the modules the
worker imports (``child_files``: their import closure, derived, never listed by hand).
"""

import functools
import os
import pathlib
import shutil
import stat
import tempfile
import threading

from grader.batch import import_graph
from grader.batch.removal import remove_tree


@functools.cache
def child_files():
    """What a job folder's ``lib/`` holds: the worker's import closure, as relative paths."""
    return import_graph.closure_files(
        ["grader.batch.inside.forkserver", "grader.batch.inside.worker"]
    )


_batch_root = None
_batch_lock = threading.Lock()


def batch_root():
    """One private folder per grading process holding every run's job folder."""
    global _batch_root
    with _batch_lock:
        if _batch_root is None:
            import atexit

            _batch_root = pathlib.Path(tempfile.mkdtemp(prefix="ntgemm-batch-"))
            atexit.register(remove_tree, _batch_root)
        return _batch_root


FILE = "ninetoothed_gemm.py"  # the one file of a job folder a run imports


def prepare_job():
    """A job folder: ``lib/grader/`` (the worker's modules), and later, from ``place_file``,
    the run's file. Read-only to the worker, which sees it bound read-only besides."""
    job = pathlib.Path(tempfile.mkdtemp(prefix="run-", dir=batch_root()))
    (job / "lib" / "grader").mkdir(parents=True)
    for relative in child_files():
        (job / "lib" / relative).parent.mkdir(exist_ok=True)
        shutil.copyfile(import_graph.ROOT / relative, job / "lib" / relative)
    for path in [job, *job.rglob("*")]:
        path.chmod(0o555 if path.is_dir() else 0o444)
    return job


def place_file(job, source):
    """Write the run's file into its job folder (``prepare_job``), with the folder's group
    and its read permissions (grader.batch.isolation.unprivileged.admit may have set them)."""
    folder = job.stat()
    job.chmod(stat.S_IMODE(folder.st_mode) | stat.S_IWUSR)
    try:
        (job / FILE).write_bytes(source)
        if (job / FILE).stat().st_gid != folder.st_gid:  # only where admit gave it a group
            os.chown(job / FILE, -1, folder.st_gid)
        (job / FILE).chmod(stat.S_IMODE(folder.st_mode) & 0o444)
    finally:
        job.chmod(stat.S_IMODE(folder.st_mode))


def remove_file(job):
    """Take the run's file out of its job folder: the folder serves the next run
    (grader.batch.isolation.hosts)."""
    folder = job.stat()
    job.chmod(stat.S_IMODE(folder.st_mode) | stat.S_IWUSR)
    try:
        (job / FILE).unlink(missing_ok=True)
    finally:
        job.chmod(stat.S_IMODE(folder.st_mode))


def prepare_scratch():
    """An unsandboxed run's private folder: its ``$TMPDIR``, with its ``$HOME`` inside."""
    scratch = pathlib.Path(tempfile.mkdtemp(prefix="scratch-", dir=batch_root()))
    (scratch / "home").mkdir()
    return scratch
