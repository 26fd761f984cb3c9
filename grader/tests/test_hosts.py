"""A sandbox serves one run after another (grader.batch.isolation.hosts): each run is
forked by the sandbox's server, and meets nothing an earlier run left there.

Every probe here runs as a worker runs, forked in a sandbox, and the runs in one test
share one sandbox, which each probe checks by its /tmp's device number: so each attack is
tried against the next run of the very sandbox it ran in. A sandbox a run damaged is
closed instead of reused, and the next run gets a new one.
"""

import os
import sys
import threading
import time

import pytest

from grader.batch.isolation import hosts, sandbox
from grader.tests.batch_helpers import sandbox_probe

pytestmark = pytest.mark.skipif(
    sandbox.check(False) is not None, reason=f"bubblewrap cannot start here: {sandbox.check(False)}"
)
LIMITS = sandbox.Limits(timeout_s=30, memory_bytes=2 << 30)
SERVER = "os.stat('/tmp').st_dev"  # one per sandbox: its /tmp's file system


def _probe(code):
    """Run ``code`` forked in a sandbox; its notes (``say``, as Python values) and ending."""
    notes, ending = sandbox_probe(code, LIMITS, render="repr")
    return [eval(note) for note in notes], ending


@pytest.fixture(autouse=True)
def one_sandbox():
    """Each test starts with no sandbox, so that its runs share the one they start; a test
    that expects them to is failed where a second one started (a /tmp's device number may
    be used again once its sandbox is gone)."""
    hosts.close_all()
    before = hosts.counts()["started"]
    yield lambda: hosts.counts()["started"] - before
    hosts.close_all()


def test_a_run_finds_no_file_an_earlier_run_left(one_sandbox):
    first, _ = _probe(f"""
say({SERVER})
os.makedirs(os.environ['TRITON_CACHE_DIR'])
for path in ('/tmp/left', '/tmp/home/left', '/dev/shm/left', '/tmp/home/.ninetoothed/left',
             os.environ['TRITON_CACHE_DIR'] + '/left'):
    open(path, 'w').write('secret')
os.makedirs('/tmp/deep/locked')
os.chmod('/tmp/deep', 0)
os.chmod('/tmp/home', 0o500)
""")
    second, ending = _probe(f"""
say({SERVER})
mounts = [line.split()[4] for line in open('/proc/self/mountinfo')]
bound = {{os.path.dirname(point) for point in mounts if point.startswith('/tmp/')}}
while any(os.path.dirname(folder) not in bound | {{'/'}} for folder in bound):
    bound |= {{os.path.dirname(folder) for folder in bound}}
found = []
for top in ('/tmp', '/dev/shm'):
    for root, dirs, files in os.walk(top):
        dirs[:] = [name for name in dirs if os.path.join(root, name) not in mounts]
        found += [os.path.join(root, name) for name in dirs + files
                  if os.path.join(root, name) not in bound]
say(sorted(found))
say(os.access('/tmp/home', os.W_OK))
from triton.runtime import cache
say(cache.triton_key.cache_info().currsize)
""")
    assert first[0] == second[0] and one_sandbox() == 1  # the same sandbox
    # (where Python lies under /tmp, as in a clone there, its bound folders are left out)
    assert second[1] == ["/tmp/home", "/tmp/home/.ninetoothed"]
    assert second[2] is True
    # Each run's Triton cache starts missing (above), so the server hashes no Triton file for
    # its key (gpu_compile.key_by_version_in_a_private_cache): nothing is cached for a run.
    assert second[3] == 0


def test_python_bound_under_tmp_stays_while_what_a_run_left_beside_it_goes(
    tmp_path, monkeypatch, one_sandbox
):
    """Where Python's packages lie under /tmp (a --target install, say), the sandbox binds
    them there, read-only, on its /tmp: putting /tmp back leaves them in place."""
    from grader.batch.isolation import launch

    packages = tmp_path / "site" / "pkgs"
    packages.mkdir(parents=True)
    (packages / "module.py").write_text("VALUE = 1\n")
    folders = launch.python_folders()
    monkeypatch.setattr(launch, "python_folders", lambda: folders + [str(packages)])
    hosts.close_all()
    code = f"""
say({SERVER})
say(open({str(packages / "module.py")!r}).read())
for attempt in ("os.unlink({str(packages / "module.py")!r})", "open({str(packages / "x")!r}, 'w')"):
    try:
        eval(attempt)
        say('did ' + attempt)
    except OSError:
        pass
open({str(packages.parent / "left")!r}, 'w').write('x')
say(sorted(os.listdir({str(packages.parent)!r})))
"""
    first, _ = _probe(code)
    second, _ = _probe(code)
    assert first[0] == second[0] and one_sandbox() == 1  # the same sandbox, put back
    assert first[1] == second[1] == "VALUE = 1\n"
    assert first[2] == second[2] == ["left", "pkgs"]  # each run's own file, then gone
    assert len(first) == len(second) == 3


def test_a_run_finds_no_process_an_earlier_run_left(one_sandbox):
    first, _ = _probe(f"""
say({SERVER})
import subprocess
for _ in range(3):
    subprocess.Popen([sys.executable, '-c', 'import os, time\\nif os.fork() == 0:\\n'
                      '    os.setsid()\\n    time.sleep(300)\\ntime.sleep(300)'],
                     start_new_session=True)
import time
time.sleep(1)
say(len([pid for pid in os.listdir('/proc') if pid.isdigit()]))
""")
    second, _ = _probe(
        f"say({SERVER})\nsay(sorted(int(p) for p in os.listdir('/proc') if p.isdigit()))"
    )
    assert first[0] == second[0] and one_sandbox() == 1 and first[1] >= 9
    assert second[1][:2] == [1, 2] and len(second[1]) == 3  # bubblewrap, the server, itself


def test_inter_process_objects_die_with_the_run_that_made_them(one_sandbox):
    first, _ = _probe(f"""
say({SERVER})
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
say(libc.shmget(0x4E54, 4096, 0o1666))  # IPC_CREAT | 0666: a System V segment
say(libc.msgget(0x4E54, 0o1666))
mq = libc.mq_open(b'/ntgemm-left', 0o102, 0o666, None)  # O_CREAT | O_RDWR
say(mq)
""")
    second, _ = _probe(f"""
say({SERVER})
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
say(libc.shmget(0x4E54, 4096, 0o666))
say(libc.msgget(0x4E54, 0o666))
say(libc.mq_open(b'/ntgemm-left', 0o2, 0o666, None))  # O_RDWR
say(open('/proc/sysvipc/shm').read().count('\\n'))
""")
    assert first[0] == second[0] and one_sandbox() == 1
    # System V objects are made, in the run's own namespace; a POSIX queue not even that
    # (EOVERFLOW: the run's user has no id in its namespace, whose queue file system it is).
    assert first[1] >= 0 and first[2] >= 0
    assert second[1:4] == [-1, -1, -1] and second[4] == 1  # the header line alone


def test_a_run_holds_no_capability_and_cannot_read_or_trace_the_server():
    notes, _ = _probe("""
status = open('/proc/self/status').read()
say([line.split()[1] for line in status.splitlines()
     if line.startswith(('CapEff', 'CapPrm', 'CapBnd'))])
for pid in ('1', '2', 'self/../2'):
    for name, mode in (('mem', 'rb'), ('environ', 'rb'), ('oom_score_adj', 'w'), ('autogroup', 'w'),
                       ('fd/3', 'rb'), ('status', 'rb')):
        try:
            open(f'/proc/{pid}/{name}', mode)
            say(f'opened /proc/{pid}/{name}')
        except OSError:
            pass
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
say(libc.ptrace(16, 2, None, None))  # PTRACE_ATTACH
say(libc.mount(b'none', b'/tmp', b'tmpfs', 0, None))
say(libc.umount2(b'/proc/2', 2))  # MNT_DETACH: what hides the server stays
say(libc.unshare(0x10020000))  # a user and mount namespace of its own: allowed, harmless
say(libc.umount2(b'/proc/2', 2))  # locked there
say(sorted(os.listdir('/proc/self/fd')))
""")
    assert notes[0] == ["0000000000000000"] * 3
    assert not any(isinstance(note, str) and note.startswith("opened") for note in notes)
    ptrace, mount, umount, _unshared, umount_again = notes[-6:-1]
    assert (ptrace, mount, umount, umount_again) == (-1, -1, -1, -1)
    # its three pipes, the probe's copy of fd 1, the listing's own: nothing of the server's
    assert notes[-1] == ["0", "1", "2", "3", "4"]


INHERITED = """
import ctypes, resource
say([os.getpriority(os.PRIO_PROCESS, 0), sorted(os.sched_getaffinity(0)), os.sched_getscheduler(0),
     ctypes.CDLL(None).syscall(252, 1, 0),  # ioprio_get, x86-64
     resource.getrlimit(resource.RLIMIT_NOFILE), resource.getrlimit(resource.RLIMIT_AS),
     open('/proc/self/oom_score_adj').read(), sorted(os.listdir('/dev'))])
"""


@pytest.mark.parametrize(
    "attack",
    [
        "os.kill(2, 19)",  # the server stopped
        "os.kill(2, 9)",  # the server killed
        "os.setpriority(os.PRIO_PROCESS, 2, 19)",
        "os.sched_setaffinity(2, {min(os.sched_getaffinity(0))})",
        "os.sched_setscheduler(2, os.SCHED_IDLE, os.sched_param(0))",
        "import resource\nresource.prlimit(2, resource.RLIMIT_NOFILE, (16, 16))",
        "import resource\nresource.prlimit(2, resource.RLIMIT_AS, (1 << 30, 1 << 30))",
        "import ctypes\nctypes.CDLL(None).syscall(251, 1, 2, (3 << 13) | 7)",  # ioprio_set: idle
        "open('/dev/left', 'w').write('x')",  # /dev, which no wipe covers
        "os.unlink('/dev/stdin')",
        "os.nice(10)\nopen('/proc/self/oom_score_adj', 'w').write('1000')",  # on itself alone
    ],
)
def test_no_run_changes_what_the_runs_after_it_inherit(attack, one_sandbox):
    """The server's children inherit its attributes; a run can change some of the
    server's by its pid. The next run is forked from a server as it started, in a new
    sandbox where the attack reached the server."""
    pristine, _ = _probe(f"say({SERVER})\n{INHERITED}")
    first, _ = _probe(f"say({SERVER})\n{attack}\n")
    assert one_sandbox() == 1  # the attack ran in the pristine run's sandbox
    second, _ = _probe(f"say({SERVER})\n{INHERITED}")
    assert second[1] == pristine[1]
    assert len(hosts._every) == 1


def test_an_ended_run_keeps_its_pid_until_its_sandbox_is_cleaned(one_sandbox):
    """As a child of the grader's own would: the grader's last signals to a run (``finish``
    kills its process group) can reach no other process that took its pid since it ended.
    The server reaps it when the grader has it wipe the sandbox for the next run."""
    import psutil

    worker = sandbox.Worker(
        backend_name="interpreter", limits=LIMITS, inner=[sys.executable, "-c", "pass"]
    )
    assert worker.process.wait(timeout=60) == 0
    run = worker.process.handle
    assert run.status() == psutil.STATUS_ZOMBIE
    worker.finish()
    assert not run.is_running()
    assert one_sandbox() == 1 and [len(queue_) for queue_ in hosts._idle.values()] == [1]


def test_a_process_a_run_made_the_server_s_child_is_reaped_with_the_sandbox(one_sandbox):
    """clone(CLONE_PARENT) makes the new process a child of the server, not of the run: the
    server reaps it when it wipes the sandbox, which then serves the next run."""
    first, _ = _probe(f"""
say({SERVER})
import ctypes
pid = ctypes.CDLL(None).syscall(56, 0x8000 | 17, 0, 0, 0, 0)  # clone(CLONE_PARENT|SIGCHLD), x86-64
if pid == 0:
    os._exit(0)
say(pid)
""")
    second, _ = _probe(f"say({SERVER})")
    assert first[1] > 0 and second[0] == first[0] and one_sandbox() == 1


def test_every_sandbox_ends_with_the_grader(tmp_path):
    """No server outlives the grading process, whether it ends or is killed."""
    import psutil
    import subprocess

    code = (
        "from grader.batch.isolation import sandbox\n"
        "sandbox.check(False)\nimport os\nprint(os.getpid(), flush=True)\n"
        "import time\ntime.sleep(60)\n"
    )
    process = subprocess.Popen(
        [sys.executable, "-c", code],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "TMPDIR": str(tmp_path)},
    )
    pid = int(process.stdout.readline())
    servers = [
        child
        for child in psutil.Process(pid).children(recursive=True)
        if "grader.batch.inside.forkserver" in " ".join(child.cmdline())
    ]
    assert servers
    process.kill()
    process.wait()
    gone, alive = psutil.wait_procs(servers, timeout=10)
    assert not alive


def test_a_sandbox_whose_server_died_while_idle_serves_no_run():
    """The host's OOM killer, say: the next run gets a new sandbox, and the batch goes on."""
    before = hosts.counts()["started"]
    _probe("say(1)")
    (idle,) = [host for queue in hosts._idle.values() for host in queue]
    idle.server.kill()
    idle.server.wait(timeout=10)
    notes, _ = _probe("say(2)")
    assert notes == [2] and hosts.counts()["started"] == before + 2


def test_a_host_s_channel_is_closed_only_once_its_reader_is_done_with_it():
    """A reader still in ``recv`` when the channel's fd is closed can read the next host's
    messages once a new channel takes that number: a ``recv`` the kernel restarts (after
    the grader was stopped, or traced) looks its fd up again. A test run under a profiler
    so lost a new sandbox's "ready" and waited the full READY_S (2026-12-06). Here the
    reader is slow to finish after its server's end, and ``close`` must wait for it."""
    import queue

    _probe("say(1)")
    (host,) = [host for queue_ in hosts._idle.values() for host in queue_]
    channel, seen = host.control, []

    class SlowToFinish(queue.Queue):
        def put(self, item, *args, **kwargs):
            if item is None:  # the channel's end
                time.sleep(1)
            super().put(item, *args, **kwargs)

    class Watched:
        def __getattr__(self, name):
            return getattr(channel, name)

        def close(self):
            seen.append(host.reader.is_alive())
            channel.close()

    host.answers, host.control = SlowToFinish(), Watched()
    hosts.close_all()
    assert seen == [False]


def test_the_check_s_sandbox_serves_the_first_run_on_its_device(one_sandbox):
    """A batch checks that a sandbox starts, on its first slot's device, before it grades:
    that sandbox is then the one the first run there takes, not one more to warm up."""
    assert sandbox.check.__wrapped__(False, 0) is None  # not the cached answer: a new check
    assert one_sandbox() == 1
    worker = sandbox.Worker(
        backend_name="interpreter", limits=LIMITS, device=0, inner=[sys.executable, "-c", "pass"]
    )
    worker.finish()
    assert one_sandbox() == 1  # the run on device 0 took the check's sandbox
    notes, _ = _probe("say(1)")
    assert notes == [1] and one_sandbox() == 2  # a run for no device needs another


def test_sandboxes_started_ahead_serve_the_first_runs_without_new_ones(one_sandbox):
    """A batch starts its first runs' sandboxes beside its check (hosts.start_ahead): each
    is idle once its imports are done, and a run takes it rather than start one more."""
    hosts.start_ahead("interpreter", [None, None])
    deadline = time.monotonic() + 120
    while len(hosts._idle[hosts._key("interpreter", None)]) < 2 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert one_sandbox() == 2
    for _ in range(2):
        notes, _ = _probe("say(1)")
        assert notes == [1]
    assert one_sandbox() == 2  # both runs took a sandbox started ahead


def test_a_run_taken_while_a_sandbox_starts_ahead_waits_for_it_rather_than_start_another(
    one_sandbox,
):
    """A batch's sandbox check and first runs come while the sandboxes started ahead still
    import: each takes one of those once it is idle, and none starts a sandbox of its own
    that would then leave one idle for nothing."""
    hosts.start_ahead("interpreter", [None])
    notes, _ = _probe("say(1)")
    assert notes == [1] and one_sandbox() == 1
    notes, _ = _probe("say(2)")  # the same sandbox, given back clean
    assert notes == [2] and one_sandbox() == 1


class _Stub:
    """A sandbox that is always answering: where a test is about who gets one, not what."""

    def __init__(self, name):
        self.name = name

    def answering(self):
        return True


def test_a_run_waiting_for_a_sandbox_gets_it_before_a_warm_up_asking_later(monkeypatch):
    """The pool's warm-ups (``warming``) let runs take a sandbox first: a run waits for one
    still being started ahead; it becomes idle, and a warm-up asks at that very moment (the
    test holds the hosts' lock, so the run cannot have woken yet). The run gets it, and the
    warm-up a new one."""
    key = hosts._key("interpreter", None)
    monkeypatch.setattr(hosts, "_new", lambda backend_name, device: _Stub("new"))
    with hosts._changed:
        hosts._ahead[key] += 1  # one sandbox being started ahead
    taken = []
    run = threading.Thread(
        target=lambda: taken.append(hosts.take("interpreter", None)), daemon=True
    )
    run.start()
    deadline = time.monotonic() + 10
    while hosts._wanted[key] != 1 and time.monotonic() < deadline:
        time.sleep(0.01)
    with hosts._changed:
        hosts._idle[key].append(_Stub("ahead"))
        hosts._ahead[key] -= 1
        hosts._changed.notify_all()
        warm = hosts.take("interpreter", None, warming=True)
    run.join(timeout=10)
    assert [host.name for host in taken] == ["ahead"] and warm.name == "new"
    assert hosts._wanted[key] == 0


def test_a_run_waiting_for_a_sandbox_started_ahead_that_fails_starts_its_own(
    monkeypatch, one_sandbox
):
    """A sandbox started ahead that never becomes ready must not leave the runs waiting
    for it: once it has failed, a run starts a sandbox of its own."""
    real, failed = hosts.Host.ready, []

    def ready(host):
        if not failed:  # the first to get here is the one started ahead: the run waits
            failed.append(host)
            raise hosts.HostError("a test: this sandbox did not start")
        return real(host)

    monkeypatch.setattr(hosts.Host, "ready", ready)
    hosts.start_ahead("interpreter", [None])
    outcome = []
    run = threading.Thread(target=lambda: outcome.append(_probe("say(1)")), daemon=True)
    run.start()
    run.join(timeout=300)
    assert outcome and outcome[0][0] == [1], "the run waited for ever, or failed"
    assert len(failed) == 1 and one_sandbox() == 2


def test_without_a_bwrap_nothing_is_started_ahead_and_nothing_fails_aside(monkeypatch, one_sandbox):
    """The sandbox check tells an instructor with no bwrap what to do; the sandboxes
    started beside it must not print a thread's traceback first."""
    failures = []
    monkeypatch.setattr(hosts.launch, "bwrap_path", lambda: None)
    monkeypatch.setattr(hosts.threading, "excepthook", failures.append)
    hosts.start_ahead("interpreter", [None, None])
    time.sleep(0.5)
    assert one_sandbox() == 0 and failures == []
