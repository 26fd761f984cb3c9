"""``python -m grader`` and ``python -m pytest`` for the tests, forked from a process that made
its imports once.

Most batch tests run the grader's command line in a process of its own, as a user does, and
some tests run the kit's pytest grader that way. Such a process spends about 1.5 of its 3 to 4
CPU seconds importing torch (and, for the grader, pandas and matplotlib), and the suite starts
dozens of them on a 2-core box that is busy all the time. So each pytest process that runs one
starts a server here per module (at its first ``run``): it makes those imports and nothing else
(no argument read, no file opened, no thread of Python's, no temporary folder chosen, none of
the kit's modules: it runs as a script), then forks a child per command. The child takes the
command's working folder, environment, ``sys.path`` (as ``python -m`` makes it from that
folder and the environment's PYTHONPATH) and standard streams, and runs ``python -m MODULE``
to its end as a new process would: the kit's modules imported by its own command, from its own
path, its exit code its own, the interpreter's shutdown (threads joined, atexit) as usual. What
it shares with the server is what those imports made, which is what a new process makes too.

The pytest server imports torch alone. The pytest grader imports torch before any submission's
code runs, and its build guard sees an import only of a module not imported yet (CPython's
``import`` audit event): a module preloaded here that a new process imports later, after the
submission's code started, would hide that import from the guard.

Kept for commands a test only runs to the end; a test that signals or watches the process
starts one with subprocess.

    python grader/tests/preloaded.py SOCKET READY_FD MODULE   # a server (``run`` starts it)
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

# Third-party imports only, per module run: a child imports the kit's own modules itself, in
# the order its command does, so a module that forgets an import fails here as in a new process.
PRELOADED = {"grader": ("torch", "pandas", "matplotlib.figure"), "pytest": ("torch",)}
KILL_WAIT_S = 30.0  # at most, for a killed command's exit
PARENT_LOOK_S = 1.0  # between two looks at whether the pytest process still lives
_servers = {}  # module -> (its server's Popen, its socket's address)
_shim_folder = None  # the shim's ``python``, once made (``shim_environment``)
_server_lock = threading.Lock()


def run(args, *, cwd, env, timeout, module="grader"):
    """``subprocess.run([sys.executable, "-m", module, *args], cwd=cwd, env=env,
    capture_output=True, text=True, timeout=timeout)``, forked from the module's server."""
    address = _address(module)
    with (
        tempfile.TemporaryFile() as out,
        tempfile.TemporaryFile() as err,
        open(os.devnull, "rb") as stdin,
        socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as channel,
    ):
        channel.connect(address)
        request = {"argv": [str(arg) for arg in args], "cwd": str(cwd), "env": dict(env)}
        socket.send_fds(
            channel, [json.dumps(request).encode()], [stdin.fileno(), out.fileno(), err.fileno()]
        )
        pid = json.loads(channel.recv(1 << 16))["pid"]
        channel.settimeout(timeout)
        command = [sys.executable, "-m", module, *args]
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
            raise subprocess.TimeoutExpired(
                command, timeout, _read(out) or None, _read(err) or None
            ) from None
        if not answer:
            raise RuntimeError(f"the preloaded {module} server ended while {command} ran")
        return subprocess.CompletedProcess(
            command, json.loads(answer)["code"], _text(out), _text(err)
        )


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


def _address(module):
    """The module's server's socket, started for this process at its first call."""
    with _server_lock:
        server = _servers.get(module)
        if server is None or server[0].poll() is not None:
            folder = tempfile.mkdtemp(prefix="ntgemm-preloaded-")
            address = os.path.join(folder, "socket")
            ready_read, ready_write = os.pipe()
            process = subprocess.Popen(
                [sys.executable, os.path.abspath(__file__), address, str(ready_write), module],
                stdin=subprocess.DEVNULL,
                pass_fds=[ready_write],
            )
            os.close(ready_write)
            with os.fdopen(ready_read, "rb") as ready:
                said = ready.read()
            if said != b"ready":
                process.kill()
                raise RuntimeError(
                    f"the preloaded {module} server did not start (exit code "
                    f"{process.wait()}); see its stderr above"
                )
            atexit.register(_stop, process, folder)
            server = _servers[module] = (process, address)
        return server[1]


def server_pid(module="grader"):
    """The pid of this process's server for ``module``, None before its first ``run``."""
    server = _servers.get(module)
    return server[0].pid if server else None


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


def _own_paths():
    return [path for path in os.environ.get("PYTHONPATH", "").split(os.pathsep) if path]


def _become(module, base_path, request, fds):
    """Turn this fork into ``python -m MODULE ARGS`` run in the request's folder, environment
    and streams, as a new process would be."""
    os.setsid()  # its own process group: the client kills it whole on a timeout
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    sys.path[:] = [request["cwd"], *_own_paths(), *base_path]
    importlib.invalidate_caches()
    sys.argv = [sys.argv[0], *request["argv"]]
    runpy.run_module(module, run_name="__main__", alter_sys=True)


# ----------------------------------------------------------------------------- the shim

SHIM = "NTGEMM_TESTS_PRELOADED"  # {"bin": the shim's folder, "servers": {module: address}}


def shim_environment(env):
    """``env`` where ``python`` (and ``python3``) is a shim: ``python -m grader`` and ``python -m
    pytest`` are forked from this process's servers, in the command's own folder, environment
    and streams; any other ``python`` command is this interpreter, exec'd. The doc check runs
    its commands as written in it."""
    global _shim_folder
    with _server_lock:
        if _shim_folder is None:
            folder = tempfile.mkdtemp(prefix="ntgemm-shim-")
            for name in ("python", "python3"):
                path = os.path.join(folder, name)
                with open(path, "w", encoding="utf-8") as stream:
                    stream.write(
                        f'#!/bin/sh\nexec "{sys.executable}" '
                        f'"{os.path.abspath(__file__)}" --shim "$@"\n'
                    )
                os.chmod(path, 0o755)
            atexit.register(shutil.rmtree, folder, ignore_errors=True)
            _shim_folder = folder
    shim = {"bin": _shim_folder, "servers": {module: _address(module) for module in PRELOADED}}
    return {
        **env,
        "PATH": os.pathsep.join([shim["bin"], env.get("PATH", "")]),
        SHIM: json.dumps(shim),
    }


def _through_shim(args):
    """``python ARGS`` as the shim runs it (``shim_environment``); what it starts sees no shim."""
    shim = json.loads(os.environ.pop(SHIM))
    os.environ["PATH"] = os.pathsep.join(
        folder for folder in os.environ.get("PATH", "").split(os.pathsep) if folder != shim["bin"]
    )
    if args[:1] != ["-m"] or len(args) < 2 or args[1] not in shim["servers"]:
        os.execv(sys.executable, [sys.executable, *args])
    with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as channel:
        channel.connect(shim["servers"][args[1]])
        request = {"argv": args[2:], "cwd": os.getcwd(), "env": dict(os.environ)}
        socket.send_fds(channel, [json.dumps(request).encode()], [0, 1, 2])
        channel.recv(1 << 16)  # its pid
        answer = channel.recv(1 << 16)
    if not answer:
        sys.exit(f"the preloaded {args[1]} server ended while python {' '.join(args)} ran")
    code = json.loads(answer)["code"]
    sys.exit(code if code >= 0 else 128 - code)  # a signal, as a shell reports it


def main():
    if sys.argv[1:2] == ["--shim"]:
        _through_shim(sys.argv[2:])
    address, ready_fd, module = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    for name in PRELOADED[module]:
        importlib.import_module(name)
    if tempfile.tempdir is not None:
        raise RuntimeError(
            "an import chose the temporary folder: a child would not follow its own TMPDIR"
        )
    own = set(_own_paths())
    base_path = [path for path in sys.path[1:] if path not in own]  # [0]: this script's folder
    _become(module, base_path, *_serve(address, ready_fd))


if __name__ == "__main__":
    main()
