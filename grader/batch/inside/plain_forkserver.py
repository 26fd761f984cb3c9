"""The fork server of unsandboxed runs: the kernel stack imported once, a child per run.

    python grader/batch/inside/plain_forkserver.py CONTROL_FD BACKEND

Run as a script by grader.batch.isolation.plain_forks, which says what it is for and why it
is safe. It imports the standard library and the third-party modules of ``PRELOADED``
only, never a grader module and never NineToothed (which reads ``$HOME`` at import), and
never learns anything of a run: each child reads its own request from a pipe that only the
grader writes.

The control socket carries one JSON object per message. Grader to server:
``{"do": "fork"}`` with four fds (the run's stdin, stdout and stderr, and the pipe its request
comes on) -> ``{"forked": PID}``; ``{"do": "release", "pid": PID}`` once the grader is done
with an ended child (no answer). Server to grader: ``{"ready": true}`` once its imports are
made, and ``{"exited": PID, "code": N}`` when a child ends (N as subprocess reports it; the
child stays a zombie until released).

A child, before any code of the run: a session of its own; its three streams and nothing
else open; the request read (its folder, whole environment, ``python -c`` arguments, the
code to run, and the ids to drop to, if any); its folder, environment and ``sys.path`` as
``python -c`` would make them from that environment (``TRITON_INTERPRET`` kept where triton was
imported with it, as in a sandbox's forked worker); then, where ids are given, groups
dropped and gid and uid set (real, effective and saved) under umask 077; then the code, as
``__main__``.
"""

import ctypes
import importlib
import json
import os
import select
import socket
import sys
import tempfile
import types

PRELOADED = ("torch", "triton", "triton.language", "sympy")
PR_SET_DUMPABLE = 4


def _prctl(option, value):
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(option, value, 0, 0, 0):
        raise OSError(ctypes.get_errno(), f"prctl({option}, {value})")


def _own_paths():
    return [path for path in os.environ.get("PYTHONPATH", "").split(os.pathsep) if path]


def _warm_up(backend):
    """The imports every run makes first; ``sys.path`` as it is without ours."""
    if backend == "interpreter":
        os.environ["TRITON_INTERPRET"] = "1"  # before triton, as the worker's backend does
    for name in PRELOADED:
        importlib.import_module(name)
    if tempfile.tempdir is not None:
        raise RuntimeError(
            "an import chose the temporary folder: a run would not follow its own TMPDIR"
        )
    own = set(_own_paths())
    return [path for path in sys.path[1:] if path not in own]  # [0]: this script's folder


def _serve(control):
    """Fork a child per request; tell the grader how each ended. Returns in a child only,
    with its four fds."""
    # Running; ended and reported, kept until released; released while still running.
    children, ended, released = set(), set(), set()
    control.send(json.dumps({"ready": True}).encode())
    while True:
        readable, _, _ = select.select([control], [], [], 0.05)
        _report_ends(control, children, ended, released)
        if not readable:
            continue
        data, fds, _, _ = socket.recv_fds(control, 1 << 12, 4)
        if not data:
            sys.exit(0)  # the grader closed the channel, or ended
        request = json.loads(data)
        if request.get("do") == "release" and not fds:
            if request.get("pid") in ended:
                ended.discard(request["pid"])
                os.waitpid(request["pid"], 0)
            elif request.get("pid") in children:
                released.add(request["pid"])  # reaped as it ends
            continue
        if request.get("do") != "fork" or len(fds) != 4:
            for fd in fds:
                os.close(fd)
            control.send(json.dumps({"refused": True}).encode())
            continue
        pid = os.fork()
        if pid == 0:
            control.detach()  # its fd is closed with the rest, never by this object later
            return fds
        for fd in fds:
            os.close(fd)
        children.add(pid)
        control.send(json.dumps({"forked": pid}).encode())


def _report_ends(control, children, ended, released):
    """Tell the grader of each child that ended, and keep it unreaped (a zombie) until the
    grader releases it: until then its pid, and so its process group's number, can name no
    other process when the grader signals them, as with a child of its own."""
    for pid in list(children):
        info = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        if info is None or info.si_pid == 0:
            continue
        children.discard(pid)
        if pid in released:
            released.discard(pid)
            os.waitpid(pid, 0)
        else:
            ended.add(pid)
        code = info.si_status if info.si_code == os.CLD_EXITED else -info.si_status
        control.send(json.dumps({"exited": pid, "code": code}).encode())


def _become(fds, base_path):
    """Turn this child into its run's process (see the module's docstring)."""
    os.setsid()
    stdin, stdout, stderr, setup = fds
    with os.fdopen(setup, "rb") as stream:
        request = json.loads(stream.read())
    for target, fd in enumerate((stdin, stdout, stderr)):
        os.dup2(fd, target)
    os.closerange(3, os.sysconf("SC_OPEN_MAX"))
    os.chdir(request["cwd"])
    interpret = os.environ.get("TRITON_INTERPRET")  # what triton was imported with
    os.environ.clear()
    os.environ.update(request["env"])
    if interpret is not None:
        os.environ["TRITON_INTERPRET"] = interpret
    sys.path[:] = ["", *_own_paths(), *base_path]
    importlib.invalidate_caches()
    if request["ids"] is not None:
        uid, gid = request["ids"]
        os.setgroups([])
        os.setresgid(gid, gid, gid)
        os.setresuid(uid, uid, uid)
        os.umask(0o077)
    else:
        _prctl(PR_SET_DUMPABLE, 1)  # as a new process of the grader's user is
    sys.argv = ["-c", *request["argv"]]
    main = types.ModuleType("__main__")
    sys.modules["__main__"] = main
    exec(compile(request["code"], "<string>", "exec"), main.__dict__)


def main():
    control_fd, backend = sys.argv[1:3]
    _prctl(PR_SET_DUMPABLE, 0)  # a run of the grader's own user may not trace it
    base_path = _warm_up(backend)
    _become(_serve(socket.socket(fileno=int(control_fd))), base_path)


if __name__ == "__main__":
    main()
