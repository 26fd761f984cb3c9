"""One short program of the grader's, run once on one file, in a sandbox of its own.

The compile gate (grader.batch.isolation.compile_gate) compiles a generated kernel where no
student code ever ran. So the program here is not forked by a sandbox's fork server, which
serves runs one after another (grader.batch.isolation.hosts): it is a fresh bubblewrap
sandbox (grader.batch.isolation.launch, without the GPU's devices) whose job folder holds the
one file and the grader's modules, with a fresh ``/tmp`` and so an empty Triton cache.
Unsandboxed (``--unsafe-no-sandbox``) it is a plain child process with a scratch folder of
its own, run as the unprivileged user where the grader is root, as a worker is
(grader.batch.isolation.sandbox). Its wall time and the resident memory of its process tree
are limited. It speaks no protocol: what it printed comes back, bounded.
"""

import dataclasses
import os
import signal
import subprocess
import sys
import tempfile
import time

import psutil

from grader.batch.isolation import folders, launch, pipes, process_table, sandbox, unprivileged
from grader.batch.removal import remove_tree

OUTPUT_LIMIT = 64 * 1024  # bytes kept of each of stdout and stderr (their tails)


@dataclasses.dataclass(frozen=True)
class Done:
    returncode: int
    stdout: str
    stderr: str
    over: str = ""  # the limit that ended it, "time" or "memory"; "" if none did


def run(arguments, data, *, backend_name, sandboxed, timeout_s, memory_bytes, environment=None):
    """Run ``python *arguments(FILE)``, where FILE holds ``data`` (bytes), in a fresh sandbox
    or its unsandboxed twin, with ``environment`` added to the allowlisted one; a Done."""
    job = folders.prepare_job()
    scratch = who = None
    try:
        folders.place_file(job, data)
        if sandboxed:
            env = {**launch.sandbox_environment(backend_name), **(environment or {})}
            command = launch.sandboxed(
                job, False, env, [sys.executable, *arguments(f"{launch.JOB}/{folders.FILE}")]
            )
            cwd, options = None, {}
        else:
            scratch = folders.prepare_scratch()
            env = {**launch.scratch_environment(backend_name, job, scratch), **(environment or {})}
            cwd = scratch / "home"
            command, options, who = sandbox.as_run_user(
                job, scratch, [sys.executable, *arguments(str(job / folders.FILE))]
            )
        return _watched(command, cwd, env, options, timeout_s, memory_bytes)
    finally:
        if who is not None:
            unprivileged.leave(who)
        remove_tree(job)
        if scratch is not None:
            remove_tree(scratch)


def _watched(command, cwd, env, options, timeout_s, memory_bytes):
    """Start ``command`` and wait for it, killing its process tree at a limit. Its tree is
    read from the process table every look shares (grader.batch.isolation.process_table)."""
    with (
        tempfile.TemporaryFile(dir=folders.batch_root()) as out,
        tempfile.TemporaryFile(dir=folders.batch_root()) as err,
    ):
        process = subprocess.Popen(
            command,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=err,
            start_new_session=True,
            close_fds=True,
            **options,
        )
        over, deadline = "", time.monotonic() + timeout_s
        root = psutil.Process(process.pid)
        while process.poll() is None:
            if time.monotonic() > deadline:
                over = "time"
            elif _resident(root) > memory_bytes:
                over = "memory"
            if over:
                _kill(root)
                break
            time.sleep(pipes.POLL_S)
        returncode = process.wait()
        return Done(returncode, _tail(out), _tail(err), over)


def _members(root, max_age):
    return [root, *process_table.descendants(root.pid, max_age)]


def _resident(root):
    total = 0
    for member in _members(root, process_table.SHARED_S):
        try:
            total += member.memory_info().rss
        except psutil.Error:
            pass
    return total


def _kill(root):
    """SIGKILL the process and every descendant (a sandbox's own go with bubblewrap)."""
    members = _members(root, 0.0)
    try:
        os.killpg(root.pid, signal.SIGKILL)
    except OSError:
        pass
    for member in members:  # descendants that left the group (setsid) as well
        try:
            member.kill()
        except psutil.Error:
            pass


def _tail(handle):
    size = handle.seek(0, os.SEEK_END)
    handle.seek(max(0, size - OUTPUT_LIMIT))
    return handle.read().decode("utf-8", errors="replace")
