"""Sandboxes that serve one run after another (grader.batch.inside.forkserver).

A ``Host`` is one bubblewrap sandbox (grader.batch.isolation.launch) whose fork server
imports the kernel stack once and forks each run's worker. One run at a time: a host is
taken for a run, and given back once that run's processes are gone and the server has
wiped the sandbox; a host that cannot be made clean, whose run ended by a limit, or whose
server stopped answering is closed instead. So two runs never share a sandbox at once,
and a run never meets what an earlier one left; what the runs share is only the server's
memory, copied on fork, which no run can write.

Hosts are started on one thread that lives as long as the grader (``_STARTER``):
bubblewrap's ``--die-with-parent`` ends a sandbox when the *thread* that started it ends.
"""

import atexit
import collections
import concurrent.futures
import json
import os
import queue
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

import psutil

from grader.batch.isolation import folders, launch, process_table
from grader.batch.removal import remove_tree

ANSWER_S = 30.0  # at most, for the server's answer to fork or clean
READY_S = 600.0  # at most, for a new server's imports (a loaded host takes long)
SERVER_PID = 2  # in the sandbox: bubblewrap's init is 1, the command it starts 2
_STARTER = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="hosts")


class HostError(Exception):
    """The host could not serve a run: the grader's own trouble, not the student's."""


class Host:
    """One sandbox with a fork server in it (see the module's docstring)."""

    SERVER = "the sandbox's fork server"  # in errors

    def __init__(self, backend_name, device):
        self.key = _key(backend_name, device)
        self.job = folders.prepare_job()
        self._start(
            lambda fd: launch.sandboxed(
                self.job,
                backend_name == "gpu",
                _environment(*self.key),
                [
                    sys.executable,
                    "-m",
                    "grader.batch.inside.forkserver",
                    str(fd),
                    f"{launch.JOB}/{folders.FILE}",
                ],
            )
        )

    def _start(self, command, **options):
        """Start the server, ``command(fd)`` with ``fd`` its end of the channel, from the
        thread that outlives every host (``_STARTER``); then read what it says."""
        self.control, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.log = tempfile.TemporaryFile(dir=folders.batch_root())
        try:
            self.process = _STARTER.submit(
                subprocess.Popen,
                command(theirs.fileno()),
                stdin=subprocess.DEVNULL,
                stdout=self.log,
                stderr=self.log,
                pass_fds=[theirs.fileno()],
                start_new_session=True,
                **options,
            ).result()
        except BaseException:
            self.control.close()
            self.log.close()
            remove_tree(self.job)
            raise
        finally:
            theirs.close()
        self.answers = queue.Queue()
        self.exits = {}  # the server's pid of a child -> returncode
        self.exited = threading.Condition()
        self.server = None  # psutil.Process of the fork server, once ready
        self.own = {self.process.pid}
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        while True:
            try:
                data = self.control.recv(1 << 16)
            except OSError:
                data = b""
            if not data:
                self.answers.put(None)
                with self.exited:
                    self.exited.notify_all()
                return
            message = json.loads(data)
            if "exited" in message:
                with self.exited:
                    self.exits[message["exited"]] = message["code"]
                    self.exited.notify_all()
                continue
            if "forked" in message:  # an earlier child's exit under a pid now reused is not its
                with self.exited:
                    self.exits.pop(message["forked"], None)
            self.answers.put(message)

    def _answer(self, timeout):
        try:
            answer = self.answers.get(timeout=timeout)
        except queue.Empty:
            answer = None
        if answer is None:
            raise HostError(f"{self.SERVER} did not answer ({self.stderr()})")
        return answer

    def ready(self):
        """Wait for the server's imports; its host pid."""
        if self.server is None:
            if not self._answer(READY_S).get("ready"):
                raise HostError(f"{self.SERVER} did not start")
            self.server = self._server_process()
        return self.server

    def _server_process(self):
        """The server on the host, once it is ready."""
        server = _find(self.process.pid, SERVER_PID)
        # bubblewrap on the host, its init in the sandbox, and the server: not a run's
        self.own = {self.process.pid, server.ppid(), server.pid}
        return server

    def fork(self, code=None, go=b"g"):
        """A ``Child``: the worker of one run (or a test's probe ``code``), started on three
        new pipes and held at a fourth until the parent has found it on the host, then sent
        ``go`` there."""
        self.ready()
        stdin, stdout, stderr, start = os.pipe(), os.pipe(), os.pipe(), os.pipe()
        theirs = [stdin[0], stdout[1], stderr[1], start[0]]
        child = Child(self, stdin[1], stdout[0], stderr[0])
        request = json.dumps({"do": "fork", "code": code}).encode()
        with open(start[1], "wb", buffering=0) as held:
            try:
                socket.send_fds(self.control, [request], theirs)
                answer = self._answer(ANSWER_S)
                if "forked" in answer and child.attach(answer["forked"]):
                    held.write(go)
                    return child
            except OSError as error:
                answer = f"its server is gone: {error}"
            except HostError:
                child.close_pipes()
                raise
            finally:
                for fd in theirs:
                    os.close(fd)
        child.close_pipes()
        raise HostError(f"{self.SERVER} could not start a worker ({answer})")

    def locate(self, pid):
        """The psutil.Process on the host of the server's child ``pid`` (its pid in the
        sandbox), None if not there."""
        return _find(self.process.pid, pid)

    def lost(self, process):
        """Whether the child ``process`` (a psutil.Process on the host) is gone unreported:
        the sandbox ended (and everything in it), or the child ended while the server
        cannot report it."""
        return self.process.poll() is not None or (ended(process) and not self.answering())

    def members(self, max_age=0.0):
        """Every process of the sandbox but bubblewrap's two and the server: a run's own,
        from a process table at most ``max_age`` seconds old (process_table)."""
        return [
            member
            for member in process_table.descendants(self.process.pid, max_age)
            if member.pid not in self.own
        ]

    def clean(self):
        """Have the server wipe the sandbox after a run: "" once it did, else why not."""
        try:
            self.control.send(json.dumps({"do": "clean"}).encode())
            answer = self._answer(ANSWER_S)
        except (OSError, HostError) as error:
            return f"the server did not answer ({error})"
        return "" if answer.get("clean") else answer.get("why") or f"refused: {answer}"

    def answering(self):
        """Whether its server is there and not stopped (a run can stop it)."""
        try:
            return (
                self.process.poll() is None
                and self.server is not None
                and self.server.status()
                not in (psutil.STATUS_STOPPED, psutil.STATUS_ZOMBIE, psutil.STATUS_TRACING_STOP)
            )
        except psutil.Error:
            return False

    def close(self):
        """End the sandbox and everything in it. The channel's fd is closed only once its
        reader has finished: a reader still in ``recv`` would read the channel that takes
        the number next (the kernel looks the fd up again when it restarts a ``recv`` after
        the grader was stopped or traced), and that host would never hear its server."""
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self.process.wait()
        try:
            self.control.shutdown(socket.SHUT_RDWR)  # the reader's ``recv`` returns
        except OSError:
            pass
        self.reader.join()
        self.control.close()
        self.log.close()
        remove_tree(self.job)

    def stderr(self):
        self.log.seek(0)
        return self.log.read()[-2000:].decode(errors="replace").strip() or "nothing on stderr"


class Child:
    """A forked worker seen from the parent, shaped like the Popen it replaces: ``pid`` (on
    the host), ``stdin``, ``stdout``, ``stderr``, ``poll``, ``wait``, ``kill``."""

    def __init__(self, host, stdin, stdout, stderr):
        self.host = host
        self.stdin = open(stdin, "wb", buffering=0)
        self.stdout = open(stdout, "rb", buffering=0)
        self.stderr = open(stderr, "rb", buffering=0)
        self.sandbox_pid = self.pid = None
        # Its psutil.Process, made while it waited for its go: a run may end at once after
        # it (a test's probe does), before the parent could make one.
        self.handle = None

    def attach(self, sandbox_pid):
        """Find the child on the host (it waits for its go until then); False if not there."""
        self.sandbox_pid = sandbox_pid
        self.handle = self.host.locate(sandbox_pid)
        self.pid = self.handle.pid if self.handle else None
        return self.handle is not None

    def kill(self):
        try:
            os.kill(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    def close_pipes(self):
        for stream in (self.stdin, self.stdout, self.stderr):
            stream.close()

    def poll(self):
        """Its exit code as the server reported it; killed (-9) where it ended and the server,
        stopped or gone, cannot report it (a run may stop the server: its own loss)."""
        with self.host.exited:
            if self.sandbox_pid in self.host.exits:
                return self.host.exits[self.sandbox_pid]
        return -signal.SIGKILL if self.host.lost(self.handle) else None

    def wait(self, timeout=None):
        deadline = None if timeout is None else time.monotonic() + timeout
        with self.host.exited:
            while self.poll() is None:
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    raise subprocess.TimeoutExpired("worker", timeout)
                self.host.exited.wait(timeout=0.1 if left is None else min(left, 0.1))
        return self.poll()


def ended(process):
    """Whether ``process`` (a psutil.Process) is gone, or a zombie: not another process that
    took its pid since (psutil compares their start times)."""
    try:
        return not process.is_running() or process.status() == psutil.STATUS_ZOMBIE
    except psutil.Error:
        return True


def _namespace_pids(pid):
    """The process's pid in each pid namespace, the grader's first."""
    try:
        with open(f"/proc/{pid}/status") as handle:
            for line in handle:
                if line.startswith("NSpid:"):
                    return [int(value) for value in line.split()[1:]]
    except OSError:
        pass
    return []


def _find(root, sandbox_pid, wait_s=10.0):
    """The descendant of ``root`` (bubblewrap, on the host) whose pid in the sandbox is
    ``sandbox_pid``, in no deeper namespace."""
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        for member in process_table.descendants(root):
            if _namespace_pids(member.pid)[1:] == [sandbox_pid]:
                return member
        time.sleep(0.01)
    return None


# -- hosts kept between runs, per backend, device and environment


def _environment(backend_name, device, *_):
    return launch.sandbox_environment(backend_name, device)


def _key(backend_name, device):
    """What a host serves: a host made for another environment serves no run of this one."""
    return (backend_name, device, tuple(sorted(_environment(backend_name, device).items())))


_idle = collections.defaultdict(list)
_every = set()
_lock = threading.RLock()
_changed = threading.Condition(_lock)  # a host became idle, or a start ahead ended
_ahead = collections.Counter()  # per key, hosts start_ahead is starting now
_wanted = collections.Counter()  # per key, runs waiting in ``take`` now
COUNTS = collections.Counter(started=0, runs=0)
CLOSED = collections.Counter()


def take(backend_name, device, warming=False):
    """An idle host for (backend, device), else one being started ahead once it is idle (a
    run that started its own meanwhile would leave one idle for nothing), else a new one.

    ``warming``: for a worker warmed up ahead of need (grader.batch.isolation.warm_pool),
    which waits while any run waits here: a run comes first. Otherwise a batch's warm-ups
    take the sandboxes started ahead for its first runs, and those runs wait for new
    sandboxes whose imports run beside all the others (docs/stress-runs/timeline.md, the H100
    runs with the tail limit)."""
    key = _key(backend_name, device)
    with _changed:
        if not warming:
            _wanted[key] += 1
        try:
            while True:
                yielding = warming and _wanted[key]
                idle = _idle[key]
                while idle and not yielding:
                    host = idle.pop()
                    if host.answering():
                        COUNTS["runs"] += 1
                        return host
                    _close(host, "its server stopped answering while idle")
                if not _ahead[key] and not yielding:
                    break
                _changed.wait()
        finally:
            if not warming:
                _wanted[key] -= 1
                _changed.notify_all()
    host = _new(backend_name, device)
    with _lock:
        COUNTS["runs"] += 1
    return host


def _new(backend_name, device):
    host = Host(backend_name, device)
    with _lock:
        _every.add(host)
        COUNTS["started"] += 1
    return host


def start_ahead(backend_name, devices):
    """Start a sandbox for each of ``devices`` (one per item) now, each idle once its
    imports are done, and return at once; until each is, ``take`` waits for them rather
    than start more. A batch calls it before its sandbox check, which takes the first one
    ready: otherwise its first runs wait for every sandbox's imports started side by side
    after the check, and the first pass runs one or two files meanwhile
    (docs/stress-runs/timeline.md, "What is left in that run"). Without a bwrap it starts
    none: the check says why."""
    if launch.bwrap_path() is None:
        return
    for device in devices:
        with _lock:
            _ahead[_key(backend_name, device)] += 1
        threading.Thread(target=_start_idle, args=(backend_name, device), daemon=True).start()


def _start_idle(backend_name, device):
    try:
        host = _new(backend_name, device)
    except OSError:
        return  # the sandbox check says why, and what to do
    else:
        try:
            host.ready()
        except HostError:
            _close(host, "it did not start")
            return
        give_back(host, clean=True)
    finally:
        with _changed:
            _ahead[_key(backend_name, device)] -= 1
            _changed.notify_all()


def give_back(host, clean):
    """After a run: keep the host for the next run if it was made clean, else end it."""
    if not clean:
        why = "its run did not end"
    elif not host.answering():
        why = "a run stopped or ended its server"
    else:
        why = host.clean()
    if not why:
        with _changed:
            _idle[host.key].append(host)
            _changed.notify_all()
        return
    _close(host, why)


def _close(host, why):
    with _lock:
        _every.discard(host)
        CLOSED[why] += 1
    host.close()


def counts():
    """What the hosts did in this process: sandboxes started, runs they served, and why
    the ones closed before the end were closed (environment.json keeps it)."""
    with _lock:
        return {**COUNTS, "closed": dict(CLOSED)}


@atexit.register
def close_all():
    """End every host (a batch's end; the grader's exit)."""
    with _lock:
        hosts, _ = list(_every), _every.clear()
        _idle.clear()
    for host in hosts:
        host.close()
