"""The unsandboxed mode (grader.batch.isolation.unprivileged, sandbox.Worker with
sandboxed=False): as
root, student code runs as an unprivileged user with its own limits and nothing of the
grader's within reach, every process of that user and only those is ended, and no pipe a
leftover process holds keeps the grader waiting.

The probes are plain Python run by sandbox.Worker in place of the grader's worker, from a
script of their own (in an unprivileged_view.View where this machine's Python is closed to
that user), so each test takes a few seconds and runs no kernel.
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import uuid

import psutil
import pytest

from grader.batch.isolation import unprivileged
from grader.tests.batch_helpers import DEMO, environment, gradebook, grader_command, small_cases
from grader.tests.unprivileged_view import View

ROOT_ONLY = pytest.mark.skipif(
    os.geteuid() != 0,
    reason="only a grader running as root "
    "changes user; as another user the worker runs as that user",
)
PROBE = (
    "import os, sys\nfrom grader.batch.inside import protocol\n"
    "out = os.fdopen(os.dup(1), 'wb')\n"
    "def say(text):\n    protocol.send(out, 'hello', note=str(text))\n"
)
SCRIPT = """
import json, sys, time
from grader.batch.isolation import plain_forks, sandbox, unprivileged
{setup}
plain_forks.start_ahead("interpreter", [None])  # the server's imports are no run's
plain_forks._servers[("interpreter", None)].ready()
started = time.monotonic()
worker = sandbox.Worker(backend_name="interpreter", sandboxed=False,
                        limits=sandbox.Limits(timeout_s=60, memory_bytes=2 << 30),
                        inner=[sys.executable, "-c", {program!r}])
notes = []
while (message := worker.receive(lambda kind, fields: 0)) is not None:
    notes.append(message.fields.get("note", ""))
ending = worker.finish()
print(json.dumps({{"notes": notes, "seconds": time.monotonic() - started, "kind": ending.kind,
                  "stderr": ending.stderr}}))
"""


@pytest.fixture(scope="module")
def view():
    view = View(unprivileged.identity())
    if view.problem:
        pytest.skip(view.problem)
    yield view
    view.close()


def probe(view, program, setup="", timeout=120):
    """Run ``program`` as an unsandboxed worker from a script of its own; what it said, and
    how it ended."""
    script = SCRIPT.format(setup=setup, program=PROBE + program)
    completed = subprocess.run(
        view.command([sys.executable, "-c", script]),
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "TMPDIR": str(view.tmp)},
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    return json.loads(completed.stdout.splitlines()[-1])


def alive(process, token):
    """Whether ``process`` still runs (a zombie does not), as the one named by ``token``."""
    try:
        return process.status() != psutil.STATUS_ZOMBIE and token in " ".join(process.cmdline())
    except psutil.Error:
        return False


@ROOT_ONLY
def test_the_sweep_ends_that_users_processes_and_no_other():
    who = unprivileged.identity()
    theirs = subprocess.Popen(["sleep", "60"], **who.popen_options())
    ours = subprocess.Popen(["sleep", "60"])
    try:
        unprivileged.sweep(who)
        assert theirs.wait(timeout=10) == -signal.SIGKILL
        assert ours.poll() is None and not unprivileged.processes_of(who.uid)
    finally:
        for process in (theirs, ours):
            process.kill()
            process.wait()


@ROOT_ONLY
def test_an_unprivileged_worker_has_its_ids_limits_and_nothing_of_the_graders(view):
    who = unprivileged.identity()
    secret = view.tmp / "seed"
    secret.write_text("918273645")
    secret.chmod(0o600)
    report = probe(
        view,
        f"""
import ctypes, resource
say([list(os.getresuid()), list(os.getresgid()), os.getgroups()])
say([resource.getrlimit(getattr(resource, name)) for name, _ in {unprivileged.LIMITS!r}])
say([line.split() for line in open('/proc/self/status') if line.startswith('NoNewPrivs')])
say(ctypes.CDLL(None).prctl(3, 0, 0, 0, 0))  # PR_GET_DUMPABLE
job = os.path.dirname(os.environ['PYTHONPATH'].split(os.pathsep)[0])
say(sorted(os.listdir(job)) == ['lib'])  # no run assigned yet: no file
open(os.path.join(os.environ['HOME'], 'mine'), 'w').write('x')
for attempt in (lambda: os.setuid(0), lambda: open({str(secret)!r}).read(),
                lambda: os.listdir(os.path.dirname(job)),
                lambda: open(os.path.join(job, 'x'), 'w'),
                lambda: open({str(view.tmp / "x")!r}, 'w')):
    try:
        say('allowed: ' + repr(attempt()))
    except OSError as error:
        say('refused: ' + type(error).__name__)
""",
    )
    notes = report["notes"]
    assert notes[0] == str([[who.uid] * 3, [who.gid] * 3, []]), report["stderr"]
    for (soft, hard), (_, most) in zip(eval(notes[1]), unprivileged.LIMITS):
        assert soft == hard <= most
    assert notes[2:5] == [str([["NoNewPrivs:", "1"]]), "0", "True"]
    assert notes[5:] == ["refused: PermissionError"] * 5, notes


@pytest.mark.parametrize("swept", [True, False], ids=["swept", "outlives-its-run"])
def test_finish_returns_while_a_leftover_process_holds_the_pipes(view, swept):
    """A worker leaves a daemon holding its stdin, stdout, stderr and protocol pipe, and
    ends. As root, the sweep kills the daemon; where nothing kills it (the grader is not
    root; here, the sweep disabled), the grader must not wait on the pipes either."""
    if swept and view.who is None:
        pytest.skip("only a grader running as root sweeps a user's processes")
    token = f"ntgemm-daemon-{uuid.uuid4().hex}"
    report = probe(
        view,
        f"""
import subprocess
daemon = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(30)', {token!r}],
                          start_new_session=True, pass_fds=(out.fileno(),))
say(daemon.pid)
os._exit(0)
""",
        setup="" if swept else "unprivileged.end_processes = lambda uid: 0",
    )
    daemon = psutil.Process(int(report["notes"][0]))
    try:
        assert alive(daemon, token) != swept
        assert report["kind"] == "crashed" and report["seconds"] < 8, report
    finally:
        if alive(daemon, token):
            daemon.kill()


def test_unsafe_mode_grades_and_says_so(view, tmp_path):
    (tmp_path / "class").mkdir()
    shutil.copytree(DEMO / "ada", tmp_path / "class" / "ada")
    command = grader_command(
        "grade",
        str(tmp_path / "class"),
        "--out",
        str(tmp_path / "out"),
        "--unsafe-no-sandbox",
        "--cases",
        small_cases().split(",")[1],
        "--no-progress",
    )
    result = subprocess.run(
        view.command(command),
        capture_output=True,
        text=True,
        timeout=900,
        env={**environment(tmp_path), "TMPDIR": str(view.tmp)},
    )
    assert result.returncode == 0, result.stderr
    row = gradebook(tmp_path / "out")["ada"]
    assert row["status"] == "passed" and row["isolation"].startswith("none")


def test_without_the_account_a_fixed_unused_id_stands_in(monkeypatch):
    unprivileged.identity.cache_clear()
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    monkeypatch.setattr(
        unprivileged.pwd, "getpwnam", lambda name: (_ for _ in ()).throw(KeyError(name))
    )
    monkeypatch.setattr(
        unprivileged.pwd, "getpwuid", lambda uid: (_ for _ in ()).throw(KeyError(uid))
    )
    monkeypatch.setattr(
        unprivileged.grp, "getgrgid", lambda gid: (_ for _ in ()).throw(KeyError(gid))
    )
    try:
        who = unprivileged.identity()
        assert (who.uid, who.gid) == (unprivileged.FALLBACK_ID,) * 2 and "fallback" in who.name
        unprivileged.identity.cache_clear()
        monkeypatch.setattr(unprivileged.grp, "getgrgid", lambda gid: ("staff", "x", gid, []))
        with pytest.raises(unprivileged.Unavailable, match="useradd"):
            unprivileged.identity()
    finally:
        unprivileged.identity.cache_clear()
