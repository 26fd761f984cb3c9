"""A sandbox's fork server: warms up once, then forks one run at a time.

    python -m grader.batch.inside.forkserver CONTROL_FD FILE

A worker's first seconds are imports that are the same for every student (torch alone is
5.7 s of a core on an H200 host). The fork server makes them once per sandbox: it imports
the kernel stack and the grader's modules, never runs student code, and for each run
forks a child that becomes the worker (grader.batch.inside.worker, to run FILE once the
parent put it there) on the pipes the parent sent. The parent
(grader.batch.isolation.hosts) lets one child live at a time, and before the next one
forks, every other process of the sandbox is killed and the sandbox put back as it was
(``clean``): a run meets nothing an earlier run left.

The control socket carries one JSON object per message. Parent to server:

    {"do": "fork", "code": null} and four fds  -> {"forked": PID}
    {"do": "clean"}                            -> {"clean": true|false, "why": ...}

("code": a test's probe, run in the worker's place). Server to parent: {"ready": true}
once warmed up, and {"exited": PID, "code": N} when a child ends (N as subprocess
reports it: negative for a signal); the child stays a zombie until the next ``clean``.

What keeps a run away from the server and from the runs after it:

* the server is not dumpable: a run, whose user it shares, can neither trace it nor
  open its ``/proc`` files, and ``/proc/2`` (the server) and ``/proc/1`` (bubblewrap's
  init) are covered in the run's own mount namespace, which it cannot undo;
* a run holds no capability, and has an IPC namespace of its own: System V objects die
  with it (POSIX queues cannot even be made: its user has no id in its namespace);
* what a run could change by the server's pid (its priority, affinity, scheduling,
  limits, OOM score, I/O priority: ``_attributes``) is compared with what it was, and a
  server a run stopped or killed stops answering; either way, ``clean`` fails or the
  parent finds the server gone, and the parent closes the sandbox;
* what a run can write, ``/tmp``, ``/dev/shm`` and ``/dev``, is put back as it was after
  the warm-up, or, for ``/dev``, compared with it.
"""

import ctypes
import json
import os
import select
import signal
import socket
import stat
import sys
import time

CLONE_NEWNS = 0x00020000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REC, MS_PRIVATE = 0x4000, 1 << 18
HIDDEN = (b"/proc/1", b"/proc/2")  # bubblewrap's init and the server, out of a run's sight
IOPRIO_GET = {"x86_64": 252, "aarch64": 31}  # the syscall's number
PR_SET_DUMPABLE = 4
PR_SET_PDEATHSIG = 1
PR_SET_NO_NEW_PRIVS = 38
WIPED = ("/tmp", "/dev/shm")  # after each run, put back as they were after the warm-up
HOME = "/tmp/home"
KILL_ROUNDS = 50  # attempts to end a run's last processes before the sandbox is discarded

_libc = ctypes.CDLL(None, use_errno=True)


def _check(result, what):
    if result != 0:
        error = ctypes.get_errno()
        raise OSError(error, f"{what}: {os.strerror(error)}")


def _dev_listing():
    """What /dev holds (a tmpfs bubblewrap made, writable by the sandbox's user)."""
    listing = {}
    for name in sorted(os.listdir("/dev")):
        path = os.path.join("/dev", name)
        info = os.lstat(path)
        target = os.readlink(path) if stat.S_ISLNK(info.st_mode) else None
        listing[name] = (info.st_mode, info.st_rdev, info.st_ino, target)
    return listing


class Server:
    def __init__(self, control_fd, path):
        self.control = socket.socket(fileno=control_fd)
        self.path = path
        self.child = None  # the run's pid, until ``clean`` reaps it
        self.reported = False  # its end was reported
        self.dev = _dev_listing()
        self.attributes = _attributes()
        self.wiped = {folder: _tree(folder) for folder in WIPED}

    def send(self, **message):
        self.control.send(json.dumps(message).encode())

    def serve(self):
        self.send(ready=True)
        while True:
            readable, _, _ = select.select([self.control], [], [], 0.05)
            self._reap()
            if not readable:
                continue
            data, fds, _, _ = socket.recv_fds(self.control, 1 << 16, 4)
            if not data:
                return  # the parent closed the channel: the sandbox ends
            request = json.loads(data)
            if request.get("do") == "fork" and len(fds) == 4 and self.child is None:
                self.child = _fork(fds, self.control, self.path, request.get("code"))
                self.reported = False
                for fd in fds:
                    os.close(fd)
                self.send(forked=self.child)
            elif request.get("do") == "clean" and (self.child is None or self.reported):
                if self.child is not None:
                    os.waitpid(self.child, 0)
                    self.child = None
                problem = self._clean()
                self.send(clean=not problem, why=problem)
            else:
                for fd in fds:
                    os.close(fd)
                self.send(refused=request.get("do", ""))

    def _reap(self):
        """Report the run's end, and keep it a zombie until the parent asks for ``clean``,
        after its last signal to the run: until then the run's pid, and its process group's
        number, can name no other process on the host (its host pid too is freed only when
        it is reaped). A process the run made the server's child (clone's CLONE_PARENT) is
        reaped by ``_clean``."""
        if self.child is None or self.reported:
            return
        info = os.waitid(os.P_PID, self.child, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        if info is not None and info.si_pid:
            self.reported = True
            code = info.si_status if info.si_code == os.CLD_EXITED else -info.si_status
            self.send(exited=self.child, code=code)  # -N: signal N

    def _clean(self):
        """Every other process of the sandbox ended and what a run may write wiped; a
        reason where the sandbox cannot be made as it was."""
        for _ in range(KILL_ROUNDS):
            others = [pid for pid in _pids() if pid not in (1, os.getpid())]
            if not others:
                break
            try:
                os.kill(-1, signal.SIGKILL)  # every process this one may signal, but itself
            except ProcessLookupError:
                pass
            _reap_all()  # the run is reaped by now: what is left are its processes
            time.sleep(0.01)  # bubblewrap's init reaps what it inherited
        else:
            return "a run's processes outlived every attempt to end them"
        for folder in WIPED:
            kept = self.wiped[folder]
            _restore(folder, kept)
            if _tree(folder) != kept:
                return f"{folder} could not be put back as it was"
        if _dev_listing() != self.dev:
            return "a run changed /dev"
        if _attributes() != self.attributes:
            return "a run changed what the server's children inherit"
        return ""


def _reap_all():
    """Reap every child of the server that ended."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def _tree(folder):
    """{path: (mode, bytes, or None for a folder)} of what lies below ``folder`` on its own
    file system: a folder bound into it (Python's, where it lies under /tmp) is a mount
    point, kept as a name, never entered."""
    device, entries = os.lstat(folder).st_dev, {}
    for root, dirs, files in os.walk(folder):
        for name in list(dirs):
            path = os.path.join(root, name)
            info = os.lstat(path)
            entries[path] = (stat.S_IMODE(info.st_mode), None)
            if info.st_dev != device:
                dirs.remove(name)  # a mount: its own, read-only contents are not the run's
        for name in files:
            path = os.path.join(root, name)
            info = os.lstat(path)
            data = None
            if stat.S_ISREG(info.st_mode):
                with open(path, "rb") as handle:
                    data = handle.read()
            entries[path] = (stat.S_IMODE(info.st_mode), data if data is not None else b"?")
    return entries


def _restore(folder, kept):
    """Put ``folder`` back as ``_tree`` saw it: what a run added removed, the folders it
    kept (and the mount points) left in place with their modes, its files rewritten."""
    device = os.lstat(folder).st_dev
    os.chmod(folder, os.lstat(folder).st_mode | stat.S_IRWXU)
    for root, dirs, files in os.walk(folder):
        for name in list(dirs) + files:
            path = os.path.join(root, name)
            info = os.lstat(path)
            if path in kept and kept[path][1] is None and stat.S_ISDIR(info.st_mode):
                if info.st_dev != device:
                    dirs.remove(name)
                else:
                    os.chmod(path, kept[path][0] | stat.S_IRWXU)
                continue
            if name in dirs:
                dirs.remove(name)
            _remove(path)
    for path, (mode, data) in kept.items():  # parents first, as os.walk found them
        if data is None and not os.path.lexists(path):
            os.mkdir(path, mode)
        elif data is not None:
            with open(path, "xb") as handle:
                handle.write(data)
        if os.lstat(path).st_dev == device:
            os.chmod(path, mode)


def _pids():
    return [int(name) for name in os.listdir("/proc") if name.isdigit()]


def _remove(path):
    """Delete what a run left, whatever permissions it set on it (it ran as this user, and
    every process of it has ended)."""
    from grader.batch.removal import remove_tree

    if os.path.isdir(path) and not os.path.islink(path):
        remove_tree(path)
    else:
        try:
            os.unlink(path)
        except OSError:
            pass


def _fork(fds, control, path, code=None):
    """Fork the run's worker (or a test's probe ``code``); the server gets its pid."""
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid:
        return pid
    status = 70
    try:
        status = _run(fds, control, path, code)
    except SystemExit as exit:
        status = exit.code if isinstance(exit.code, int) else 1
    except BaseException:  # noqa: BLE001 - said on the run's stderr; the parent sees the exit
        import traceback

        traceback.print_exc()
        status = 1
    finally:
        try:
            sys.stderr.flush()
        finally:
            os._exit(status)


def _run(fds, control, path, code):
    """In the child: the first three pipes become fds 0 to 2 and nothing of the server's
    stays open; once the parent, which has found the child among the host's processes,
    writes a byte to the fourth, the child enters user, mount and IPC namespaces of its
    own, hides the server and bubblewrap's init from ``/proc``, drops every capability and
    becomes the worker. (Not a pid namespace: CUDA cannot start in one whose ``/proc`` is
    not its own, error 304 on the H200, and a run may not mount one; what a run could do
    to the server by its pid, the server checks before the next fork: ``_attributes``.)"""
    control.close()
    os.setsid()
    for target, fd in enumerate(fds[:3]):
        os.dup2(fd, target)
    go = os.dup(fds[3])
    os.closerange(3, go)
    os.closerange(go + 1, os.sysconf("SC_OPEN_MAX"))
    if os.read(go, 1) != b"g":
        return 70  # the parent gave the run up before it began
    os.close(go)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    _check(_libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0), "prctl(PDEATHSIG)")
    _check(_libc.unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWIPC), "unshare")
    _check(_libc.mount(None, b"/", None, MS_REC | MS_PRIVATE, None), "mount(private)")
    for hidden in HIDDEN:
        _check(
            _libc.mount(
                b"none",
                hidden,
                b"tmpfs",
                MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
                b"mode=0,size=4k",
            ),
            f"mount over {hidden.decode()}",
        )
    _check(_libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "prctl(NO_NEW_PRIVS)")
    _drop_capabilities()
    os.chdir(HOME)
    if code is not None:
        sys.argv = ["-c"]
        exec(compile(code, "<probe>", "exec"), {"__name__": "__main__"})
        return 0
    from grader.batch.inside import worker

    return worker.main([path])


def _attributes():
    """What the server's children inherit from it and a process of the same user may change
    by pid: priority, CPU affinity, scheduling, resource limits, OOM score, I/O priority."""
    import resource

    limits = tuple(
        resource.getrlimit(getattr(resource, name))
        for name in sorted(dir(resource))
        if name.startswith("RLIMIT_")
    )
    with open("/proc/self/oom_score_adj") as handle:
        oom = handle.read()
    ioprio = (
        _libc.syscall(IOPRIO_GET[os.uname().machine], 1, 0)
        if os.uname().machine in IOPRIO_GET
        else None
    )  # IOPRIO_WHO_PROCESS, itself
    return (
        os.getpriority(os.PRIO_PROCESS, 0),
        sorted(os.sched_getaffinity(0)),
        os.sched_getscheduler(0),
        os.sched_getparam(0).sched_priority,
        limits,
        oom,
        ioprio,
    )


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [
        ("effective", ctypes.c_uint32),
        ("permitted", ctypes.c_uint32),
        ("inheritable", ctypes.c_uint32),
    ]


def _drop_capabilities():
    """No capability left, in the child's own user namespace either: the bounding set
    emptied and the effective, permitted and inheritable sets cleared."""
    with open("/proc/sys/kernel/cap_last_cap") as handle:
        last = int(handle.read())
    for capability in range(last + 1):
        _check(_libc.prctl(24, capability, 0, 0, 0), "prctl(CAPBSET_DROP)")  # PR_CAPBSET_DROP
    header = _CapHeader(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3
    data = (_CapData * 2)()
    _check(_libc.capset(ctypes.byref(header), data), "capset")
    with open("/proc/self/status") as handle:
        effective = [line for line in handle if line.startswith(("CapEff", "CapPrm"))]
    if any(int(line.split()[1], 16) for line in effective):
        raise OSError("capabilities survived the drop")


def _warm_up():
    """What every worker imports before its file is there, without starting a GPU: CUDA
    must start in the child, after the fork (the child's grader.core.backend.activate)."""
    from grader.core import backend as backends

    if backends.requested() == "interpreter":
        os.environ["TRITON_INTERPRET"] = "1"  # before triton, as activate() would
    import ninetoothed  # noqa: F401
    import torch  # noqa: F401
    import triton
    import triton.language  # noqa: F401

    from grader.batch.inside import speed_probe, what_if_probe, worker  # noqa: F401
    from grader.core import cases, gpu_compile, layout, loading, program_tiles  # noqa: F401
    from grader.core import source_mistakes  # noqa: F401


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    _check(_libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0), "prctl(DUMPABLE)")
    if len(argv) != 2 or not argv[0].isdigit():
        print("usage: python -m grader.batch.inside.forkserver CONTROL_FD FILE", file=sys.stderr)
        return 2
    os.chdir("/")
    _warm_up()
    Server(int(argv[0]), argv[1]).serve()  # after the warm-up: what it made is kept
    return 0


if __name__ == "__main__":
    sys.exit(main())
