"""``python -m grader`` for the tests, forked from a process that made its imports once.

Most batch tests run the grader's command line in a process of its own, as a user does. Such a
process spends about 1.5 of its 3 to 4 CPU seconds importing torch, pandas and matplotlib, and
the suite starts dozens of them on a 2-core box that is busy all the time. So each pytest
process that runs one starts a server here (at its first ``run``): it makes those imports and
nothing else (no argument read, no file opened, no thread of Python's, no temporary folder
chosen), then forks a child per command. The child takes the command's working folder,
environment and standard streams, and runs ``python -m grader`` to its end as a new process
would: the grader's modules imported by its own command, its exit code its own, the
interpreter's shutdown (threads joined, atexit) as usual. What it shares with the server is
what those imports made, which is what a new process makes too.

Kept for commands a test only runs to the end; a test that signals or watches the grader's
process starts one with subprocess.

    python -m grader.tests.preloaded SOCKET READY_FD   # the server (``run`` starts it)
"""

import atexit
import importlib
import json
import locale
import os
import runpy
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading

# The third-party imports only: a child imports the grader's own modules itself, in the order
# its command does, so a module that forgets an import fails here as in a new process.
PRELOADED = ("torch", "pandas", "matplotlib.figure")
KILL_WAIT_S = 30.0  # at most, for a killed command's exit
PARENT_LOOK_S = 1.0  # between two looks at whether the pytest process still lives
_server = None
_server_lock = threading.Lock()


def run(args, *, cwd, env, timeout):
    """``subprocess.run([sys.executable, "-m", "grader", *args], cwd=cwd, env=env,
    capture_output=True, text=True, timeout=timeout)``, forked from the server."""
    address = _address()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, \
            open(os.devnull, "rb") as stdin, \
            socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as channel:
        channel.connect(address)
        request = {"argv": [str(arg) for arg in args], "cwd": str(cwd), "env": dict(env)}
        socket.send_fds(channel, [json.dumps(request).encode()],
                        [stdin.fileno(), out.fileno(), err.fileno()])
        pid = json.loads(channel.recv(1 << 16))["pid"]
        channel.settimeout(timeout)
        command = [sys.executable, "-m", "grader", *args]
        try:
            answer = channel.recv(1 << 16)
        except TimeoutError:
            _kill(pid)
            channel.settimeout(KILL_WAIT_S)
            try:
                channel.recv(1 << 16)
            except TimeoutError:
                raise RuntimeError(f"{command} outlived SIGKILL to its process group") from None
            # As subprocess.run's: what was captured, as bytes whatever ``text`` said, or None.
            raise subprocess.TimeoutExpired(command, timeout, _read(out) or None,
                                            _read(err) or None) from None
        if not answer:
            raise RuntimeError(f"the preloaded grader server ended while {command} ran")
        return subprocess.CompletedProcess(command, json.loads(answer)["code"], _text(out),
                                           _text(err))


def _read(stream):
    stream.seek(0)
    return stream.read()


def _text(stream):
    """What subprocess's ``text=True`` makes of a captured stream."""
    data = _read(stream).decode(locale.getpreferredencoding(False))
    return data.replace("\r\n", "\n").replace("\r", "\n")


def _kill(pid):
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _address():
    """The server's socket, started for this process at the first call."""
    global _server
    with _server_lock:
        if _server is None or _server[0].poll() is not None:
            folder = tempfile.mkdtemp(prefix="ntgemm-preloaded-")
            address = os.path.join(folder, "socket")
            root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
            ready_read, ready_write = os.pipe()
            process = subprocess.Popen(
                [sys.executable, "-m", "grader.tests.preloaded", address, str(ready_write)],
                cwd=root, env={**os.environ, "PYTHONPATH": root}, stdin=subprocess.DEVNULL,
                pass_fds=[ready_write])
            os.close(ready_write)
            with os.fdopen(ready_read, "rb") as ready:
                said = ready.read()
            if said != b"ready":
                process.kill()
                raise RuntimeError(f"the preloaded grader server did not start (exit code "
                                   f"{process.wait()}); see its stderr above")
            atexit.register(_stop, process, folder)
            _server = (process, address)
        return _server[1]


def server_pid():
    """The pid of this process's server, None before its first ``run``."""
    return _server[0].pid if _server else None


def _stop(process, folder):
    process.terminate()
    process.wait()
    shutil.rmtree(folder, ignore_errors=True)


# ----------------------------------------------------------------------------- the server

def _serve(address, ready_fd):
    """Accept requests and fork a child for each; tell each client its child's exit. Returns
    in the child only, its request applied."""
    parent = os.getppid()
    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_write, False)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    signal.set_wakeup_fd(wake_write)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    listener.bind(address)
    listener.listen(16)
    os.write(ready_fd, b"ready")
    os.close(ready_fd)
    clients = {}  # pid -> the connection its exit goes to
    while True:
        readable, _, _ = select.select([listener, wake_read], [], [], PARENT_LOOK_S)
        if os.getppid() != parent:
            sys.exit(0)  # the pytest process that started it is gone
        if wake_read in readable:
            os.read(wake_read, 4096)
            _reap(clients)
        if listener not in readable:
            continue
        connection, _ = listener.accept()
        data, fds, _, _ = socket.recv_fds(connection, 1 << 20, 3)
        pid = os.fork()
        if pid == 0:
            signal.set_wakeup_fd(-1)
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            for channel in (listener, connection, *clients.values()):
                channel.close()
            os.close(wake_read)
            os.close(wake_write)
            return json.loads(data), fds
        for fd in fds:
            os.close(fd)
        connection.send(json.dumps({"pid": pid}).encode())
        clients[pid] = connection
        _reap(clients)


def _reap(clients):
    while clients:
        pid, status = os.waitpid(-1, os.WNOHANG)
        if pid == 0:
            return
        connection = clients.pop(pid, None)
        if connection is not None:
            try:
                connection.send(json.dumps({"code": os.waitstatus_to_exitcode(status)}).encode())
            except OSError:
                pass  # the client gave up on it
            connection.close()


def _become(request, fds):
    """Turn this fork into ``python -m grader ARGS`` run in the request's folder, environment
    and streams, as a new process would be."""
    os.setsid()  # its own process group: the client kills it whole on a timeout
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    sys.path[0] = request["cwd"]
    sys.argv = [sys.argv[0], *request["argv"]]
    runpy.run_module("grader", run_name="__main__", alter_sys=True)


def main():
    address, ready_fd = sys.argv[1], int(sys.argv[2])
    for name in PRELOADED:
        importlib.import_module(name)
    if tempfile.tempdir is not None:
        raise RuntimeError("an import chose the temporary folder: a child would not follow "
                           "its own TMPDIR")
    _become(*_serve(address, ready_fd))


if __name__ == "__main__":
    main()
