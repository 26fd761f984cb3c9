"""A sandbox's fork server: warms up once, then forks one worker at a time.

    python -m grader.batch.inside.forkserver CONTROL_FD FILE

A worker's first seconds are imports that are the same for every student (torch alone
is 5.7 s of a core on an H200 host). The fork server makes them once per sandbox: it
imports the kernel stack and the grader's modules, never runs student code, and for each
run forks a child that becomes the worker (grader.batch.inside.worker) on the three pipes
the parent sent, each to run FILE once it is there. The parent (grader.batch.isolation.hosts) lets one child live at a time,
and before the next one forks it has every other process of the sandbox killed and the
sandbox wiped (``clean``): a run meets nothing the previous run left.

The control socket carries one JSON object per message, parent to server:

    {"do": "fork", "code": null} + four fds     -> {"forked": PID}
    {"do": "clean"}                            -> {"clean": true} or {"clean": false, "why": ...}

("code": a test's probe, run in the worker's place), and, server to parent, {"ready": true} once warmed up and {"exited": PID, "code": N} when a
child ends (N as subprocess reports it: negative for a signal).

What keeps a child's code away from the server and from the runs after it:

* the server is not dumpable, so a child, whose user it shares, can neither trace it nor
  open its ``/proc`` files; a child can only kill or stop it, and the parent then
  discards the sandbox;
* each child gets an IPC namespace of its own (inside a user namespace of its own, in
  which it holds no capability once its code runs): System V objects and POSIX message
  queues die with it;
* what a run can write outside that, ``/tmp``, ``/dev/shm`` and ``/dev``, is wiped or
  compared with what the server saw before any child ran; anything else makes ``clean``
  fail, and the parent discards the sandbox.
"""

import ctypes
import json
import os
import select
import shutil
import signal
import socket
import stat
import sys

CLONE_NEWNS = 0x00020000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REC, MS_PRIVATE = 0x4000, 1 << 18
HIDDEN = (b"/proc/1", b"/proc/2")  # bubblewrap's init and the server, out of a run's sight
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
        self.child = None
        self.dev = _dev_listing()
        self.wiped = [entry for folder in WIPED for entry in _tree(folder)]

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
                for fd in fds:
                    os.close(fd)
                self.send(forked=self.child)
            elif request.get("do") == "clean" and self.child is None:
                problem = self._clean()
                self.send(clean=not problem, why=problem)
            else:
                for fd in fds:
                    os.close(fd)
                self.send(refused=request.get("do", ""))

    def _reap(self):
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            if pid == self.child:
                self.child = None
                self.send(exited=pid, code=_returncode(status))

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
            self._reap_all()
        else:
            return "a run's processes outlived every attempt to end them"
        for folder in WIPED:
            for name in os.listdir(folder):
                _remove(os.path.join(folder, name))
            if os.listdir(folder):
                return f"{folder} could not be emptied"
        for path, mode, data in self.wiped:  # what the imports made (~/.ninetoothed)
            if data is None:
                os.mkdir(path, mode)
            else:
                with open(path, "xb") as handle:
                    handle.write(data)
                os.chmod(path, mode)
        if _dev_listing() != self.dev:
            return "a run changed /dev"
        return ""

    def _reap_all(self):
        while True:
            try:
                if os.waitpid(-1, os.WNOHANG)[0] == 0:
                    return
            except ChildProcessError:
                return


def _tree(folder):
    """(path, mode, bytes or None for a folder) of everything below ``folder``, parents
    first."""
    entries = []
    for root, dirs, files in os.walk(folder):
        dirs.sort()
        for name in dirs:
            path = os.path.join(root, name)
            entries.append((path, stat.S_IMODE(os.lstat(path).st_mode), None))
        for name in sorted(files):
            path = os.path.join(root, name)
            with open(path, "rb") as handle:
                entries.append((path, stat.S_IMODE(os.lstat(path).st_mode), handle.read()))
    return entries


def _pids():
    return [int(name) for name in os.listdir("/proc") if name.isdigit()]


def _remove(path):
    """Delete what a run left, whatever permissions it set on it (it ran as this user)."""
    def retry(function, target, _excinfo):
        try:
            os.chmod(os.path.dirname(target), stat.S_IRWXU)
            function(target)
        except OSError:
            pass

    if os.path.isdir(path) and not os.path.islink(path):
        os.chmod(path, stat.S_IRWXU)
        for root, dirs, _files in os.walk(path):
            for name in dirs:
                try:
                    os.chmod(os.path.join(root, name), stat.S_IRWXU, follow_symlinks=False)
                except (OSError, NotImplementedError):
                    pass
        shutil.rmtree(path, onerror=retry)
    else:
        try:
            os.unlink(path)
        except OSError:
            pass


def _returncode(status):
    return -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.waitstatus_to_exitcode(status)


def _fork(fds, control, path, code=None):
    """Fork the run: the server gets the pid of a keeper, which holds the run's namespaces
    and exits as the run does; the run itself is the keeper's child (``_run``)."""
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid:
        return pid
    status = 70
    try:
        status = _keep(fds, control, path, code)
    except BaseException:  # noqa: BLE001 - said on the run's stderr; the parent sees the exit
        import traceback

        traceback.print_exc()
    finally:
        try:
            sys.stderr.flush()
        finally:
            os._exit(status)


def _keep(fds, control, path, code):
    """In the keeper: the first three pipes become fds 0 to 2 and nothing of the server's
    stays open; once the parent, which has found the keeper among the host's processes,
    writes a byte to the fourth, the keeper enters namespaces of its own (user, mount,
    IPC, and pid for its child), hides the server and bubblewrap's init from ``/proc``,
    forks the run as pid 1 of the new pid namespace, and waits for it. Its exit status is
    the run's, or 128 + the signal that ended it, as bubblewrap reports it."""
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
    _check(_libc.unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWPID), "unshare")
    _check(_libc.mount(None, b"/", None, MS_REC | MS_PRIVATE, None), "mount(private)")
    for hidden in HIDDEN:
        _check(_libc.mount(b"none", hidden, b"tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
                           b"mode=0,size=4k"), f"mount over {hidden.decode()}")
    run = os.fork()
    if run == 0:
        os._exit(_run(path, code))
    _check(_libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "prctl(NO_NEW_PRIVS)")
    _drop_capabilities()
    signal.signal(signal.SIGUSR1, lambda *_: os.kill(run, signal.SIGUSR1))  # "where are you?"
    while True:
        try:
            _, status = os.waitpid(run, 0)
            break
        except InterruptedError:
            continue
    return 128 + os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)


def _run(path, code):
    """The run, pid 1 of its own pid namespace: no capability left, then the worker (or a
    test's probe); its exit status."""
    status = 70
    try:
        _check(_libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0), "prctl(PDEATHSIG)")
        _check(_libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "prctl(NO_NEW_PRIVS)")
        _drop_capabilities()
        os.chdir(HOME)
        if code is not None:
            sys.argv = ["-c"]
            exec(compile(code, "<probe>", "exec"), {"__name__": "__main__"})  # noqa: S102
            status = 0
        else:
            from grader.batch.inside import worker

            status = worker.main([path])
    except SystemExit as exit:
        status = exit.code if isinstance(exit.code, int) else 1
    except BaseException:  # noqa: BLE001 - said on the run's stderr; the parent sees the exit
        import traceback

        traceback.print_exc()
        status = 1
    sys.stderr.flush()
    return status


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                ("inheritable", ctypes.c_uint32)]


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
    import triton  # noqa: F401
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
