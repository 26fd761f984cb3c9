"""Run one submission in a child process, and say how the process ended.

Isolation of one run:

* a private temporary folder per run with a random name, inside a per-batch folder
  that cannot be listed (so runs cannot find each other), outside the submissions folder and the
  output folder: ``home/`` is the child's working directory and ``$HOME`` (so
  NineToothed's ``~/.ninetoothed`` code cache and Triton's cache are private
  too), ``submission/ninetoothed_gemm.py`` is a read-only copy of the student's
  file, ``lib/grader/`` a read-only copy of the grader modules the child
  imports, and ``results-<random>/`` the only place the child is told about;
* its own session and process group, no stdin, stdout and stderr read through
  pipes of which only the first and last ``output_limit`` bytes are kept;
* a wall timeout and a host-memory limit (the resident memory of the whole
  process tree, polled with psutil), both enforced by killing the whole group.
  RLIMIT_AS is not used: it breaks CUDA;
* with several GPUs, ``CUDA_VISIBLE_DEVICES`` names the one GPU of its slot.

Why verdicts cannot be forged: the child never judges anything. The parent
rebuilds every case's inputs and reference from the seed itself, loads only the
tensors the child saved (``torch.load(weights_only=True)``: plain tensors and
strings, no code), and compares them in a process that never imported student
code, so patching ``torch.allclose``, pytest or grader.checks in the child
changes nothing. The child is never told where the output folder or the
submissions folder are, every report (results.json, gradebook.csv, ...) is
written by the parent after the child is gone, and an early ``exit(0)`` only
leaves fewer saved cases. Run as root (in a container, say), the
grader starts every child as an unprivileged user (``nobody``, or
NTGEMM_SANDBOX_USER), so the operating system itself keeps the child out of the
submissions folder, the output folder and the other runs. Run as an ordinary
user, the child shares that user: then the folders are only hidden (random
names in a folder that cannot be listed), and code that goes looking for other
paths on purpose (``/proc``, ``os.walk``, ...) is flagged by the static scan
(grader.anticheat) rather than made impossible.
"""

import atexit
import dataclasses
import hashlib
import json
import os
import pathlib
import shutil
import signal
import secrets
import stat
import subprocess
import sys
import tempfile
import threading
import time

import psutil

GRADER_DIR = pathlib.Path(__file__).resolve().parent
CHILD_MODULES = ("__init__", "backend", "cases", "checks", "execution", "loading", "mistakes",
                 "anticheat", "diagnosis", "worker")
OUTPUT_LIMIT = 64 * 1024  # bytes kept from each of stdout and stderr (head and tail)
POLL_S = 0.05


@dataclasses.dataclass
class RunResult:
    ending: str  # "finished", "timeout", "memory_limit", "crashed"
    detail: str  # for "crashed": the signal or exit code, in words
    returncode: int
    wall_time_s: float
    stdout: str
    stderr: str
    record: dict  # worker.json, or {} when the child wrote none
    results_dir: pathlib.Path
    workdir: pathlib.Path
    peak_rss: int = 0

    def cleanup(self):
        remove_tree(self.workdir)


def remove_tree(path):
    """Delete a run's folder, read-only parts included."""
    def retry(function, target, _excinfo):
        try:
            os.chmod(os.path.dirname(target), stat.S_IRWXU)
            if os.path.isdir(target) and not os.path.islink(target):
                os.chmod(target, stat.S_IRWXU)
            function(target)
        except OSError:
            pass

    try:
        os.chmod(path, stat.S_IRWXU)
    except OSError:
        return
    for root, dirs, _files in os.walk(path):
        for name in dirs:
            try:
                os.chmod(os.path.join(root, name), stat.S_IRWXU)
            except OSError:
                pass
    shutil.rmtree(path, onerror=retry)


class _Capture:
    """Keep the first and last ``limit`` bytes of a stream, count the rest."""

    def __init__(self, stream, limit):
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0
        self.limit = limit
        self.thread = threading.Thread(target=self._pump, args=(stream,), daemon=True)
        self.thread.start()

    def _pump(self, stream):
        try:
            while True:
                chunk = stream.read1(65536) if hasattr(stream, "read1") else stream.read(65536)
                if not chunk:
                    break
                self.total += len(chunk)
                room = self.limit - len(self.head)
                if room > 0:
                    self.head += chunk[:room]
                    chunk = chunk[room:]
                if chunk:
                    self.tail += chunk
                    if len(self.tail) > self.limit:
                        del self.tail[: len(self.tail) - self.limit]
        except (OSError, ValueError):
            pass

    def text(self):
        self.thread.join(timeout=2)
        kept = len(self.head) + len(self.tail)
        middle = ""
        if self.total > kept:
            middle = f"\n[... {self.total - kept} bytes cut by the grader ...]\n"
        return (self.head.decode("utf-8", "replace") + middle
                + bytes(self.tail).decode("utf-8", "replace"))


def _copy_read_only(source, target):
    shutil.copyfile(source, target)
    os.chmod(target, stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)


_batch_root = None
_batch_root_lock = threading.RLock()


def sandbox_user():
    """(uid, gid) the child runs as, or None to keep the grader's own user.

    When the grader runs as root (a container, say) the child is started as an
    unprivileged user, ``nobody`` unless NTGEMM_SANDBOX_USER names another: it
    can then write nowhere but its own home, tmp and results folders, and read
    neither the submissions folder's neighbours nor other runs. As an ordinary
    user the child keeps that user, and the folder modes below only hide paths.
    """
    global _user
    with _batch_root_lock:
        if _user is None:
            _user = _find_sandbox_user()
        return _user or None


def describe_user():
    """Who the children ran as, for environment.json."""
    user = sandbox_user()
    if not user:
        return f"the grader's own user (uid {os.geteuid()}): folders hidden, not forbidden"
    import pwd

    return f"{pwd.getpwuid(user[0]).pw_name} (uid {user[0]}): the operating system keeps runs apart"


_user = None
EXIT_TAMPERED = 5  # the worker found its private copy changed before importing it


def _find_sandbox_user():
    if os.geteuid() != 0:
        return ()
    import pwd

    name = os.environ.get("NTGEMM_SANDBOX_USER", "nobody")
    try:
        entry = pwd.getpwnam(name)
    except KeyError:
        return ()
    # Can that user run this Python and import the kernel stack? With a home of its
    # own, as a child gets: ninetoothed writes into $HOME when it is imported.
    home = pathlib.Path(tempfile.mkdtemp(prefix="ntgemm-probe-"))
    try:
        os.chown(home, entry.pw_uid, entry.pw_gid)
        env = dict(os.environ, HOME=str(home), TMPDIR=str(home), TRITON_HOME=str(home),
                   XDG_CACHE_HOME=str(home / ".cache"))
        probe = subprocess.run([sys.executable, "-c", "import torch, triton, ninetoothed"],
                               user=entry.pw_uid, group=entry.pw_gid, extra_groups=[],
                               cwd="/", env=env, stdin=subprocess.DEVNULL, capture_output=True,
                               timeout=120)
        if probe.returncode == 0:
            return entry.pw_uid, entry.pw_gid
    except (OSError, subprocess.SubprocessError):
        pass
    finally:
        shutil.rmtree(home, ignore_errors=True)
    print(f"warning: running as root, but user {name!r} cannot run {sys.executable} with "
          "torch, triton and ninetoothed; submissions run as root, isolated from each other "
          "only by hidden paths (set NTGEMM_SANDBOX_USER to a user that can)",
          file=sys.stderr, flush=True)
    return ()


def batch_root():
    """One folder per grading process holding every run's folder: traversable, not
    listable, so a run cannot find its neighbours' random folder names. Removed at exit."""
    global _batch_root
    with _batch_root_lock:
        if _batch_root is None:
            root = pathlib.Path(tempfile.mkdtemp(prefix="ntgemm-batch-"))
            os.chmod(root, 0o711 if sandbox_user() else stat.S_IWUSR | stat.S_IXUSR)
            atexit.register(remove_tree, root)
            _batch_root = root
        return _batch_root


def prepare_workdir(source_bytes):
    """A private folder for one run; returns (workdir, submission path, results dir)."""
    workdir = pathlib.Path(tempfile.mkdtemp(prefix="run-", dir=batch_root()))
    results = workdir / f"results-{secrets.token_hex(8)}"  # named only in the child's argv
    for name in ("home", "tmp", "submission", results.name, "lib/grader"):
        (workdir / name).mkdir(parents=True)
    submission = workdir / "submission" / "ninetoothed_gemm.py"
    submission.write_bytes(source_bytes)
    os.chmod(submission, stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)
    os.chmod(workdir / "submission", stat.S_IRUSR | stat.S_IXUSR)
    for name in CHILD_MODULES:
        path = GRADER_DIR / f"{name}.py"
        if path.exists():
            _copy_read_only(path, workdir / "lib" / "grader" / path.name)
    os.chmod(workdir / "lib" / "grader", stat.S_IRUSR | stat.S_IXUSR)
    user = sandbox_user()
    if user:  # the child is another user: it owns only home, tmp and results
        for name in ("home", "tmp", results.name):
            os.chown(workdir / name, *user)
        for path in (workdir / "submission", workdir / "lib", workdir / "lib" / "grader"):
            os.chmod(path, 0o755)
        os.chmod(workdir, 0o711)
    else:
        os.chmod(workdir, stat.S_IXUSR)  # traversable, not listable: ../ reveals nothing
    return workdir, submission, results


def child_environment(workdir, backend_name, device=None):
    """The child's environment: private HOME/TMPDIR/caches, the grader copy first on the path."""
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("PYTHONSTARTUP", "PYTHONINSPECT", "PYTEST", "NTGEMM_"))}
    home = str(workdir / "home")
    env.update({
        "HOME": home,
        "TMPDIR": str(workdir / "tmp"),
        "XDG_CACHE_HOME": str(workdir / "home" / ".cache"),
        "TRITON_CACHE_DIR": str(workdir / "home" / ".triton" / "cache"),
        "TRITON_HOME": home,
        "PYTHONPATH": os.pathsep.join(
            [str(workdir / "lib")] + ([os.environ["PYTHONPATH"]]
                                      if os.environ.get("PYTHONPATH") else [])),
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONUNBUFFERED": "1",
        "NTGEMM_BACKEND": backend_name,
    })
    env.pop("TRITON_INTERPRET", None)
    for key in ("PWD", "OLDPWD"):  # where the grader was started: the output folder's parent
        env.pop(key, None)
    if backend_name == "interpreter":
        # One interpreter run is single-threaded work; keep -j N honest on N cores.
        env.update({"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
                    "OPENBLAS_NUM_THREADS": "1"})
    if device is not None:
        env["CUDA_VISIBLE_DEVICES"] = str(device)
    return env


def _tree(process):
    try:
        return [process] + process.children(recursive=True)
    except psutil.Error:
        return [process]


def _rss(processes):
    total = 0
    for process in processes:
        try:
            total += process.memory_info().rss
        except psutil.Error:
            pass
    return total


def _kill_all(pgid, processes):
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    for process in processes:  # descendants that left the group (setsid) as well
        try:
            process.kill()
        except psutil.Error:
            pass


def describe_returncode(code):
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"killed by {name}"
    return f"exit code {code}"


def run_submission(source_bytes, *, seed, backend_name, timeout_s, memory_limit_bytes,
                   device=None, cases=None, output_limit=OUTPUT_LIMIT, on_start=None):
    """Run the worker on one submission; always returns a RunResult (never raises for
    anything the submission does). The caller judges, then calls ``cleanup()``."""
    workdir, submission, results = prepare_workdir(source_bytes)
    command = [sys.executable, "-m", "grader.worker", "--submission", str(submission),
               "--results", str(results), "--seed", str(seed), "--backend", backend_name,
               "--deadline", str(timeout_s + 30),
               "--sha256", hashlib.sha256(source_bytes).hexdigest()]
    if cases:
        command += ["--cases", ",".join(cases)]
    started = time.monotonic()
    user = sandbox_user()
    identity = {"user": user[0], "group": user[1], "extra_groups": []} if user else {}
    process = subprocess.Popen(
        command, cwd=workdir / "home", env=child_environment(workdir, backend_name, device),
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        start_new_session=True, close_fds=True, **identity,
    )
    if on_start:
        on_start(process)
    out = _Capture(process.stdout, output_limit)
    err = _Capture(process.stderr, output_limit)
    pgid = process.pid  # session leader: its pid is the group id
    watched = psutil.Process(process.pid)
    ending, peak = "finished", 0
    members = [watched]
    while True:
        try:
            process.wait(timeout=POLL_S)
            break
        except subprocess.TimeoutExpired:
            pass
        members = _tree(watched)
        rss = _rss(members)
        peak = max(peak, rss)
        if rss > memory_limit_bytes:
            ending = "memory_limit"
        elif time.monotonic() - started > timeout_s:
            ending = "timeout"
        else:
            continue
        _kill_all(pgid, members)
        process.wait()
        break
    _kill_all(pgid, members)  # whatever the submission left running
    wall = time.monotonic() - started
    stdout, stderr = out.text(), err.text()
    for stream in (process.stdout, process.stderr):
        stream.close()

    record = {}
    record_path = results / "worker.json"
    try:
        if record_path.is_file() and record_path.stat().st_size < 8 << 20:
            record = json.loads(record_path.read_text(encoding="utf-8"))
            if not isinstance(record, dict):
                record = {}
    except (OSError, ValueError):
        record = {}

    code = process.returncode
    detail = ""
    if ending == "finished":
        from grader.worker import EXIT_EARLY, EXIT_MEMORY

        if code == EXIT_TAMPERED:
            ending, detail = "tampered", "the private copy changed before it was imported"
        elif code == EXIT_MEMORY:
            ending, detail = "memory_limit", "the submission ran out of memory (MemoryError)"
        elif code == EXIT_EARLY:
            ending = "crashed"
            detail = record.get("exit_request") or (record.get("load") or {}).get("message") \
                or "the submission asked the process to exit"
        elif code != 0:
            ending = "crashed"
            detail = f"the process ended ({describe_returncode(code)}) before grading finished"
        elif not record.get("finished"):
            ending = "crashed"
            detail = "exit code 0 before grading finished (the submission ended the process early)"
    elif ending == "timeout":
        detail = f"still running after the {timeout_s:g} s wall timeout; the process group was killed"
    elif ending == "memory_limit":
        detail = (f"used more than {memory_limit_bytes / 2**30:.2f} GiB of host memory; "
                  "the process group was killed")
    return RunResult(ending, detail, code, wall, stdout, stderr, record, results, workdir, peak)


def assign_devices(jobs, visible):
    """The device each of ``jobs`` worker slots gets: one GPU per slot, round robin.

    ``visible`` lists the GPUs the grader may use (from ``--gpus`` or the parent's
    own ``CUDA_VISIBLE_DEVICES``); an empty list means no GPU (every slot gets None).
    """
    if not visible:
        return [None] * jobs
    return [visible[slot % len(visible)] for slot in range(jobs)]


def parse_gpus(text, environ=None, count=None):
    """The GPU list from ``--gpus`` (``all``, ``none`` or ``0,2,3``); the default is what
    ``CUDA_VISIBLE_DEVICES`` allows, else ``count`` devices."""
    environ = os.environ if environ is None else environ
    if text is not None and text.strip().lower() == "none":
        return []
    if text is not None and text.strip().lower() != "all":
        items = [item.strip() for item in text.split(",") if item.strip()]
        if not items:
            raise ValueError("--gpus: give 'all', 'none' or a comma-separated list such as 0,1")
        return items
    if environ.get("CUDA_VISIBLE_DEVICES", "").strip():
        return [item.strip() for item in environ["CUDA_VISIBLE_DEVICES"].split(",")
                if item.strip() and item.strip() != "-1"]
    return [str(index) for index in range(count or 0)]
