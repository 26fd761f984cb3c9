"""Student code without the sandbox, as root: run it as an unprivileged user of its own.

Where bubblewrap cannot start (Gradescope's containers run as root, often without user
namespaces) and the grader is root, an unsandboxed worker (grader.batch.isolation.sandbox.Worker)
runs as ``ntgemm-student``, which the Gradescope ``setup.sh`` creates. Where that account
does not exist, it runs as the fixed uid and gid ``FALLBACK_ID``, once ``identity`` has
checked that no account uses them. Either way:

* the drop is done by ``subprocess.Popen`` in the child before exec (setgroups([]), then
  setgid, then setuid: real, effective and saved ids all change), under umask 077;
* before any student code, ``LAUNCH`` lowers its rlimits (``LIMITS``: processes, file
  size, no core dumps), sets no_new_privs (no setuid binary gives root back) and makes the
  process non-dumpable (a sibling of the same uid cannot ptrace it or open its pipes
  through ``/proc``), then runs the worker in that same process;
* it can read its own job folder (group access for its gid, no listing of the batch root)
  and write only its scratch folder; nothing of the grader's is readable or writable to it
  unless every local user may read or write it;
* while any worker of ours runs as that uid, this process holds a machine-wide lock for it
  (an abstract Unix socket), and when the last one ends, every process of that uid is
  killed (``end_processes``): all of them, since under the lock they can only be ours or
  left over by a grader that died, and only them.

A grader that is not root cannot drop privileges: its unsandboxed workers run as its own
user, as before (``identity`` is None), and only their process tree is killed.
"""

import dataclasses
import errno
import functools
import grp
import os
import pathlib
import pwd
import signal
import socket
import stat
import threading
import time

import psutil

USER = "ntgemm-student"
FALLBACK_ID = 64_917
NPROC = 4096  # processes and threads of the uid, machine-wide: all its workers share it
FILE_BYTES = 512 << 20  # like the sandbox's /tmp
LIMITS = (("RLIMIT_NPROC", NPROC), ("RLIMIT_FSIZE", FILE_BYTES), ("RLIMIT_CORE", 0))
LOCK_WAIT_S = 900.0  # how long to wait for another grading run's workers of this uid
END_WAIT_S = 10.0

# ``python -c RUN -m MODULE ARGS...`` runs as ``python -m MODULE ARGS...`` would (``-c CODE
# ARGS...`` as ``python -c CODE ARGS...``): what a run forked from a server
# (grader.batch.isolation.plain_forks) runs where no user is dropped.
RUN = """\
import runpy, sys
flag, target = sys.argv[1:3]
if flag == "-m":
    sys.argv = [target, *sys.argv[3:]]
    runpy.run_module(target, run_name="__main__", alter_sys=True)
else:
    sys.argv = ["-c", *sys.argv[3:]]
    exec(compile(target, "<string>", "exec"), {"__name__": "__main__"})
"""
# ``python -c LAUNCH -m MODULE ARGS...`` (or ``-c CODE ARGS...``), as the unprivileged user:
# its limits and flags first, then RUN.
LAUNCH = (
    f"""\
import ctypes, resource
for name, value in {LIMITS!r}:
    limit = getattr(resource, name)
    hard = resource.getrlimit(limit)[1]
    value = value if hard == resource.RLIM_INFINITY else min(value, hard)
    resource.setrlimit(limit, (value, value))
libc = ctypes.CDLL(None, use_errno=True)
if libc.prctl(38, 1, 0, 0, 0) or libc.prctl(4, 0, 0, 0, 0):
    raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS or PR_SET_DUMPABLE) failed")
"""
    + RUN
)


class Unavailable(Exception):
    """Student code cannot be run as an unprivileged user here; the message says why."""


@dataclasses.dataclass(frozen=True)
class Identity:
    uid: int
    gid: int
    name: str  # for the record: the account, or the fallback ids

    def popen_options(self):
        return {"user": self.uid, "group": self.gid, "extra_groups": [], "umask": 0o077}


@functools.cache
def identity():
    """Whom student code runs as without the sandbox: None when this process is not root
    (it has no privilege to drop); raises Unavailable when neither the account nor the
    fallback ids can be used."""
    if os.geteuid() != 0:
        return None
    try:
        account = pwd.getpwnam(USER)
    except KeyError:
        account = None
    if account is not None:
        if account.pw_uid == 0 or account.pw_gid == 0:
            raise Unavailable(f"the account {USER} has uid or gid 0")
        return Identity(account.pw_uid, account.pw_gid, f"{USER} (uid {account.pw_uid})")
    for lookup, kind in ((pwd.getpwuid, "uid"), (grp.getgrgid, "gid")):
        try:
            taken = lookup(FALLBACK_ID)
        except KeyError:
            continue
        raise Unavailable(
            f"there is no account {USER}, and the fallback {kind} {FALLBACK_ID} "
            f"belongs to {taken[0]!r}; create {USER} (useradd --system "
            f"--no-create-home --user-group {USER})"
        )
    return Identity(
        FALLBACK_ID,
        FALLBACK_ID,
        f"uid {FALLBACK_ID} (no account {USER} here: the fixed fallback id)",
    )


def command(argv):
    """The command line that runs ``argv`` (``python -m ...`` or ``python -c ...``) through
    LAUNCH: its limits and flags are set before any of ``argv`` runs."""
    if len(argv) < 3 or argv[1] not in ("-m", "-c"):
        raise ValueError(f"not a python -m or -c command line: {argv!r}")
    return [argv[0], "-c", LAUNCH, *argv[1:]]


def admit(batch_root, job, scratch, who):
    """Let ``who`` search (not list) the batch root, read ``job`` and own ``scratch``."""
    os.chown(batch_root, -1, who.gid)
    os.chmod(batch_root, 0o710)
    for path in [job, *pathlib.Path(job).rglob("*")]:
        os.chown(path, -1, who.gid, follow_symlinks=False)
        if not path.is_symlink():
            os.chmod(path, 0o550 if path.is_dir() else 0o440)
    for path in (scratch, *pathlib.Path(scratch).iterdir()):
        os.chown(path, who.uid, who.gid)
        os.chmod(path, 0o700)


def unreachable(path, who):
    """The first folder on the way to ``path`` that ``who`` may not search, else None."""
    path = pathlib.Path(path).resolve()
    for folder in reversed([path, *path.parents]):
        try:
            info = folder.stat()
        except OSError:
            return str(folder)
        if not stat.S_ISDIR(info.st_mode):
            continue
        mask = (
            stat.S_IXUSR
            if info.st_uid == who.uid
            else stat.S_IXGRP
            if info.st_gid == who.gid
            else stat.S_IXOTH
        )
        if not info.st_mode & mask:
            return str(folder)
    return None


# --------------------------------------------------------------------------- the lock and the end

_state = threading.Lock()
_active = {}  # uid -> how many of our workers run as it
_held = {}  # uid -> the socket that holds the machine-wide lock


def enter(who):
    """A worker of ours is about to run as ``who``: take the lock first where none does."""
    with _state:
        if not _active.get(who.uid):
            _held[who.uid] = _lock(who.uid)
            end_processes(who.uid)  # what a grader that died left behind
        _active[who.uid] = _active.get(who.uid, 0) + 1


def leave(who):
    """A worker of ours ended: after the last one, kill every process of the uid and let go
    of the lock. Raises RuntimeError if some survive."""
    with _state:
        _active[who.uid] -= 1
        if _active[who.uid]:
            return
        try:
            end_processes(who.uid)
        finally:
            _held.pop(who.uid).close()


def sweep(who):
    """Make sure, under the lock, that no process of ``who`` is left."""
    enter(who)
    leave(who)


def _lock(uid):
    lock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    deadline = time.monotonic() + LOCK_WAIT_S
    while True:
        try:
            lock.bind(f"\0ntgemm-unprivileged-{uid}")
            return lock
        except OSError as error:
            if error.errno != errno.EADDRINUSE or time.monotonic() > deadline:
                lock.close()
                raise Unavailable(
                    f"another grading run kept uid {uid} busy for {LOCK_WAIT_S:g} s ({error})"
                ) from None
        time.sleep(0.2)


def processes_of(uid):
    """The live processes whose real, effective or saved uid is ``uid`` (zombies are dead)."""
    found = []
    for process in psutil.process_iter(["uids", "status"]):
        uids, status = process.info["uids"], process.info["status"]
        if uids is not None and uid in uids and status != psutil.STATUS_ZOMBIE:
            found.append(process)
    return found


def end_processes(uid):
    """SIGKILL every process of ``uid`` until none is left; returns how many were killed."""
    killed = set()
    deadline = time.monotonic() + END_WAIT_S
    while found := processes_of(uid):
        if time.monotonic() > deadline:
            raise RuntimeError(
                f"processes of uid {uid} survived {END_WAIT_S:g} s of SIGKILL: "
                f"{sorted(process.pid for process in found)}"
            )
        for process in found:
            try:
                process.send_signal(signal.SIGKILL)
                killed.add(process.pid)
            except psutil.Error:
                pass
        time.sleep(0.05)  # not psutil.wait_procs: it would reap a child of this process
    return len(killed)
