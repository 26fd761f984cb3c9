"""The server of unsandboxed runs (grader.batch.isolation.plain_forks): a forked run starts as
a new process started the old way did, finds nothing of another run in what it inherited,
and cannot reach the server; a server that died is replaced.

One script does it all, as the grader would (as root: in an unprivileged_view.View where this
machine's Python is closed to the unprivileged user), and prints what each run reported.
"""

import json
import os
import subprocess
import sys

import pytest

from grader.batch.isolation import unprivileged
from grader.tests.unprivileged_view import View

# What a run reports of itself before it imports anything; then where NineToothed keeps the
# files it generates, which it decides at import.
REPORT = r"""
import ctypes, json, os, resource, signal, sys
status = dict(line.split(":", 1) for line in open("/proc/self/status"))
report = {
    "environ": dict(os.environ), "cwd": os.getcwd(), "path": sys.path, "argv": sys.argv,
    "fds": sorted(os.listdir("/proc/self/fd")), "session": os.getsid(0) == os.getpid(),
    "ids": [os.getresuid(), os.getresgid(), os.getgroups()],
    "umask": os.umask(0o077), "dumpable": ctypes.CDLL(None).prctl(3, 0, 0, 0, 0),
    "no_new_privs": status["NoNewPrivs"].strip(), "threads": len(os.listdir("/proc/self/task")),
    "limits": {name: resource.getrlimit(getattr(resource, name))
               for name in dir(resource) if name.startswith("RLIMIT_")},
    "signals": {sig.name: str(signal.getsignal(sig)) for sig in signal.valid_signals()
                if isinstance(sig, signal.Signals) and sig not in (signal.SIGKILL, signal.SIGSTOP)},
    "flags": str(sys.flags), "hash": hash("ntgemm"),
    "kit": sorted(name for name in sys.modules if name.split(".")[0] in ("grader", "ninetoothed")),
    "preloaded": sorted(name for name in ("torch", "triton", "sympy") if name in sys.modules),
}
import ninetoothed.generation
report["ninetoothed_cache"] = str(ninetoothed.generation.CACHE_DIR)
print(json.dumps(report))
"""

# Run B, forked after run A whose environment held a token: the token is nowhere in B's
# writable memory, and B can neither signal nor read the server (its parent).
SEARCH = r"""
import ctypes, json, os, re
found = 0
with open("/proc/self/maps") as maps:  # not /proc/self/mem: closed to a run that is not dumpable
    regions = [line.split()[:2] for line in maps]
for span, perms in regions:
    if perms.startswith("rw"):
        start, end = (int(value, 16) for value in span.split("-"))
        found += len(re.findall(rb"ntgemm-memory-probe-[0-9a-f]{32}",
                                ctypes.string_at(start, end - start)))
reached = []
server = os.getppid()
for attempt in (lambda: os.kill(server, 0), lambda: open(f"/proc/{server}/environ").read()):
    try:
        attempt()
        reached.append("allowed")
    except OSError as error:
        reached.append(type(error).__name__)
print(json.dumps({"found": found, "server": reached}))
"""

SCRIPT = r"""
import json, os, signal, subprocess, sys, time, uuid
from grader.batch.isolation import folders, launch, plain_forks, sandbox, unprivileged

def run(start, code, extra=None):
    job, scratch = folders.prepare_job(), folders.prepare_scratch()
    who = sandbox.run_user(job, scratch)
    env = {**launch.scratch_environment("interpreter", job, scratch), **(extra or {})}
    argv = ["-c", code, "an-argument"]
    try:
        out = start(scratch / "home", env, argv, who)
    finally:
        if who is not None:
            unprivileged.leave(who)
    return json.loads(out.replace(str(job), "JOB").replace(str(scratch), "SCRATCH"))

def new_process(cwd, env, argv, who):
    command = [sys.executable, *argv]
    options = {}
    if who is not None:
        command, options = unprivileged.command(command), who.popen_options()
    return subprocess.run(command, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, start_new_session=True,
                          close_fds=True, check=True, timeout=300, **options).stdout

def forked(cwd, env, argv, who):
    child = plain_forks.fork("interpreter", None, cwd=cwd, env=env, argv=argv, who=who)
    child.stdin.close()
    out, err = child.stdout.read().decode(), child.stderr.read().decode()
    assert child.wait(timeout=300) == 0, err
    child.close_pipes()
    return out

reports = {"new": run(new_process, REPORT), "forked": run(forked, REPORT)}
token = f"ntgemm-memory-probe-{uuid.uuid4().hex}"
reports["a"] = run(forked, REPORT, {"NTGEMM_PROBE": token})
reports["b"] = run(forked, SEARCH)

def gone(handle):
    deadline = time.monotonic() + 30
    while handle.is_running() and time.monotonic() < deadline:
        time.sleep(0.05)
    return not handle.is_running()

def bare(code):
    job, scratch = folders.prepare_job(), folders.prepare_scratch()
    return plain_forks.fork("interpreter", None, cwd=scratch / "home", who=None, argv=["-c", code],
                            env=launch.scratch_environment("interpreter", job, scratch))

server = plain_forks._servers[("interpreter", None)]
ended = bare("pass")
ended.wait(timeout=60)
held = ended.handle.status()
server.release(ended)
early = bare("import time; time.sleep(1)")
server.release(early)  # before it ends: reaped as it ends
reports["zombies"] = [held, gone(ended.handle), early.wait(timeout=60), gone(early.handle)]
job, scratch = folders.prepare_job(), folders.prepare_scratch()
who = sandbox.run_user(job, scratch)
sleeper = plain_forks.fork("interpreter", None, cwd=scratch / "home", who=who,
                           env=launch.scratch_environment("interpreter", job, scratch),
                           argv=["-c", "import time; time.sleep(3)"])
first = plain_forks._servers[("interpreter", None)].process
first.kill()
first.wait()
reports["outlived"] = [sleeper.poll(), sleeper.wait(timeout=60)]
if who is not None:
    unprivileged.leave(who)
reports["after_death"] = run(forked, REPORT)
reports["servers"] = [first.pid, plain_forks._servers[("interpreter", None)].process.pid]
print(json.dumps(reports))
"""


@pytest.fixture(scope="module")
def reports():
    view = View(unprivileged.identity())
    if view.problem:
        pytest.skip(view.problem)
    script = f"REPORT = {REPORT!r}\nSEARCH = {SEARCH!r}\n{SCRIPT}"
    try:
        done = subprocess.run(
            view.command([sys.executable, "-c", script]),
            capture_output=True,
            text=True,
            timeout=600,
            env={**os.environ, "TMPDIR": str(view.tmp)},
        )
    finally:
        view.close()
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.splitlines()[-1])


def test_a_forked_run_starts_as_a_new_process_did(reports):
    new, forked = dict(reports["new"]), dict(reports["forked"])
    assert new.pop("preloaded") == [] and forked.pop("preloaded") == ["sympy", "torch", "triton"]
    # Triton was imported with it in the server: the run's environment says so, as in a
    # sandbox's forked worker.
    assert forked["environ"].pop("TRITON_INTERPRET") == "1"
    assert forked == new
    assert new["kit"] == [] and new["threads"] == 1 and new["session"]
    assert new["ninetoothed_cache"] == "SCRATCH/home/.ninetoothed"
    if os.geteuid() == 0:
        who = unprivileged.identity()
        assert new["ids"] == [[who.uid] * 3, [who.gid] * 3, []]
        assert new["no_new_privs"] == "1" and new["dumpable"] == 0


def test_a_run_finds_nothing_of_an_earlier_run_and_cannot_reach_the_server(reports):
    assert "NTGEMM_PROBE" in reports["a"]["environ"]  # run A did hold the token
    assert reports["b"]["found"] == 0
    # The server's /proc files: closed to another user, and (the server is not dumpable) to
    # its own. Its signals: closed to another user.
    assert reports["b"]["server"][1] == "PermissionError"
    if os.geteuid() == 0:
        assert reports["b"]["server"][0] == "PermissionError"


def test_an_ended_run_keeps_its_pid_until_the_grader_is_done_with_it(reports):
    """As a child of the grader's own would: a signal the grader sends after the run ended
    can reach no other process that took its pid. Released, it is reaped, even before it
    ends."""
    assert reports["zombies"] == ["zombie", True, 0, True]


def test_a_server_that_died_is_replaced_and_its_runs_go_on(reports):
    """A run under way when its server died runs to its end (it is not taken for lost while it
    runs); its exit code is then unknown: SIGKILL's, as for a sandbox whose server died."""
    first, second = reports["servers"]
    assert first != second and reports["after_death"]["kit"] == []
    assert reports["outlived"] == [None, -9]
