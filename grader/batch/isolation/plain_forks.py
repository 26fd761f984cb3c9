"""Unsandboxed runs, forked from a server that made the kernel stack's imports once.

Without the sandbox (``--unsafe-no-sandbox``: a container without user namespaces, as on
Gradescope), every worker used to be a new process that spent its first seconds importing
torch, Triton and SymPy: about 2 s of a core on a 2-core CPU box, and torch alone takes 5.7 s
on an H200 host. A ``Server`` (grader.batch.inside.plain_forkserver) makes those imports once
per grader, backend and device, and ``fork`` starts each unsandboxed worker from it.

A forked run reaches what a new process reached, and no more:

* the server runs as the grader's user and never holds a run's data: a child reads its
  request (folder, environment, command, ids) after the fork, from a pipe only the grader
  writes, so no run finds another run's folders in the memory it inherited;
* the child sets itself up as a new process starts (session, three streams, folder,
  environment, ``sys.path`` from that environment's PYTHONPATH), drops to
  grader.batch.isolation.unprivileged's user where the grader is root (groups, gid, uid:
  real, effective and saved; umask 077), and runs what a new process ran:
  ``unprivileged.LAUNCH`` (limits, no new privileges, not dumpable), or ``unprivileged.RUN``
  where no user is dropped;
* it shares with the server only the modules the server imported; NineToothed (which
  reads ``$HOME`` at import) and the grader's modules it imports itself, from its own home
  and job folder;
* the server is not dumpable, and where the grader is root it is root: no run can trace or
  signal it. Where the grader is not root a run can kill it, as it can kill the grader: the
  next run then starts a new one.

The server's own folder (its ``$HOME`` and ``$TMPDIR`` while it imports) is the grader's,
mode 700: no run can reach it. The server ends when the grader closes its channel or ends.
"""

import atexit
import json
import pathlib
import sys
import tempfile
import threading

import psutil

from grader.batch.isolation import folders, hosts, launch, unprivileged
from grader.batch.status import GraderError

SCRIPT = pathlib.Path(__file__).resolve().parents[1] / "inside" / "plain_forkserver.py"


class Server(hosts.Host):
    """One unsandboxed fork server: forks one run at a time (``fork`` is serialised), any
    number of runs alive at once."""

    SERVER = "the unsandboxed fork server"

    def __init__(self, backend_name, device):
        self.key = (backend_name, device)
        self.job = pathlib.Path(tempfile.mkdtemp(prefix="forks-", dir=folders.batch_root()))
        env = launch.child_environment(
            backend_name, str(self.job), str(self.job), str(self.job), device
        )
        self._start(
            lambda fd: [sys.executable, str(SCRIPT), str(fd), backend_name], cwd=self.job, env=env
        )
        self.lock = threading.Lock()

    def _server_process(self):
        return psutil.Process(self.process.pid)  # no sandbox around it

    def locate(self, pid):
        try:
            return psutil.Process(pid)
        except psutil.Error:
            return None

    def lost(self, process):
        """Its children outlive it: one is lost only once it ended too."""
        return hosts.ended(process) and (self.process.poll() is not None or not self.answering())

    def release(self, child):
        """The grader is done with ``child`` (a hosts.Child): the server reaps it once it has
        ended, and only then may its pid name another process."""
        with self.exited:
            self.exits.pop(child.sandbox_pid, None)
        try:
            self.control.send(json.dumps({"do": "release", "pid": child.sandbox_pid}).encode())
        except OSError:
            pass  # the server is gone, and its zombies with it

    def fork(self, code=None, go=b"g"):
        with self.lock:  # one request and its answer at a time on the channel
            return super().fork(code, go)


_servers = {}  # (backend, device) -> Server
_lock = threading.Lock()


def fork(backend_name, device, *, cwd, env, argv, who):
    """A ``hosts.Child`` running ``python -c CODE ARGV...`` as a new process would, in
    ``cwd`` with ``env`` as its whole environment, as ``who`` (an unprivileged.Identity)
    or, where None, as the grader's own user; ``argv`` is ``["-m", MODULE, ...]`` or
    ``["-c", CODE, ...]``."""
    request = json.dumps(
        {
            "cwd": str(cwd),
            "env": env,
            "argv": [str(arg) for arg in argv],
            "ids": None if who is None else [who.uid, who.gid],
            "code": unprivileged.RUN if who is None else unprivileged.LAUNCH,
        }
    ).encode()
    for attempt in range(2):
        server = _server(backend_name, device)
        try:
            return server.fork(go=request)
        except hosts.HostError as error:
            _discard(server)  # a run killed it, say: a new one for this run
            if attempt:
                raise GraderError(str(error)) from None


def start_ahead(backend_name, devices):
    """Start the server of each of ``devices`` now, if none runs, and return at once: a
    batch's first runs then wait for imports already under way."""
    for device in set(devices):
        _server(backend_name, device)


def _server(backend_name, device):
    with _lock:
        server = _servers.get((backend_name, device))
        if server is not None and server.process.poll() is not None:
            server.close()  # it died (a run of the grader's own user may kill it): its folder goes
            server = None
        if server is None:
            server = _servers[(backend_name, device)] = Server(backend_name, device)
        return server


def _discard(server):
    with _lock:
        if _servers.get(server.key) is server:
            del _servers[server.key]
    server.close()


@atexit.register
def close_all():
    """End every server (the runs they forked are their workers' to end)."""
    with _lock:
        servers = list(_servers.values())
        _servers.clear()
    for server in servers:
        server.close()
