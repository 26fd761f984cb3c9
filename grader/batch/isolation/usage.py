"""What a worker's process tree uses, polled from outside: host memory, CPU seconds, cores,
and the seconds its threads spent ready to run but waiting for a CPU core.

The time limit discounts that wait (grader.batch.isolation.time_policy.charge says how and
why). Linux counts, for every thread, the time it sat runnable in the scheduler's queue
(``/proc/PID/task/TID/schedstat``, second field); the sum over the tree is ``starved_s``.

Only a run that competes at the priority it was started with is starved by others: a thread
that raises its nice value or asks for ``SCHED_IDLE``, or a process that raises its
autogroup's nice (``/proc/PID/autogroup``, which it may lower again), waits behind every busy
core by choice. Once the tree is seen so (``lowered``), none of its wait is credited
(time_policy.credited_wait).

Where the kernel does not report it (not Linux, no schedstats), ``starved_s`` stays 0 and
the charge is the wall clock. The cores a tree keeps busy count only when every average over
time_policy.CPU_WINDOW_S, for time_policy.SUSTAIN_S, says so (``_sustained``).
"""

import collections
import os
import time

import psutil

from grader.batch.isolation import process_table
from grader.batch.isolation.time_policy import CPU_WINDOW_S, SUSTAIN_S, credited_wait

SCHED_IDLE = 5  # the policy number /proc/PID/task/TID/stat gives


def waits(pid):
    """{thread id: seconds it has waited, runnable, for a CPU core} for the threads of ``pid``;
    empty where the kernel does not say."""
    found = {}
    try:
        threads = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return found
    for tid in threads:
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat", encoding="ascii") as stream:
                found[tid] = int(stream.read().split()[1]) / 1e9
        except (OSError, ValueError, IndexError):
            pass
    return found


def priority(pid, tid=None, group=None):
    """(autogroup nice, nice, scheduling policy) of process ``pid`` (of its thread ``tid``,
    whose autogroup is its process's: ``group`` when the caller has read it already); None
    where /proc no longer has it."""
    task = f"/proc/{pid}" + (f"/task/{tid}" if tid else "")
    try:
        with open(f"{task}/stat", encoding="ascii", errors="replace") as stream:
            fields = stream.read().rpartition(")")[2].split()
        nice, policy = int(fields[16]), int(fields[38])
    except (OSError, ValueError, IndexError):
        return None
    return (autogroup_nice(pid) if group is None else group), nice, policy


def autogroup_nice(pid):
    """The nice value of the autogroup of process ``pid``; 0 where there are no autogroups."""
    try:
        with open(f"/proc/{pid}/autogroup", encoding="ascii") as stream:
            return int(stream.read().split()[-1])
    except (OSError, ValueError, IndexError):
        return 0


def lowered(now, start):
    """Whether a thread's priority ``now`` is below the ``start`` of the tree's root."""
    return (
        now is not None
        and start is not None
        and (now[0] > start[0] or now[1] > start[1] or (now[2] == SCHED_IDLE != start[2]))
    )


class TreeUsage:
    """A process and all its descendants, sampled each time the sandbox looks."""

    def __init__(self, root, members=None):
        self.root = root  # a psutil.Process
        self.others = members  # where given: the processes beside the root that are its run's
        self.peak_rss = 0
        self.peak_cores = 0.0
        self.cpu_used = 0.0  # never decreasing: a process that ended unreaped takes its time
        self.waited = {}  # (pid, tid): seconds that thread waited for a core, as last seen
        self.start = priority(root.pid)
        self.lowered = False  # a thread of it was seen at a lower priority than the root's
        self.samples = collections.deque()
        self.rates = collections.deque()  # (time, cores kept busy over the window then)
        self.last_seen = {}  # pid: the CPU seconds it and its reaped children had, last sample

    @property
    def starved_s(self):
        return credited_wait(self.waited.values(), self.lowered)

    def members(self, max_age=0.0):
        """The root and the processes of its run, found in a process table at most
        ``max_age`` seconds old (grader.batch.isolation.process_table)."""
        others = (
            self.others(max_age)
            if self.others is not None
            else process_table.descendants(self.root.pid, max_age)
        )
        return [self.root] + [member for member in others if member.pid != self.root.pid]

    def sample(self, max_age=0.0):
        """(resident bytes now, cores kept busy on average over the last CPU_WINDOW_S), of
        the processes a table at most ``max_age`` seconds old shows."""
        rss = used = vanished = 0
        seen = {}
        for member in self.members(max_age):
            try:
                rss += member.memory_info().rss
                times = member.cpu_times()
            except psutil.Error:
                # Ended between the listing and its reading: a child its parent reaped after
                # the parent's own reading is in neither, and back in the next sample (in
                # the parent's children times); so the window counts it as last seen, this
                # once. (The time charged needs no help: it never decreases.)
                vanished += self.last_seen.get(member.pid, 0.0)
                continue
            seen[member.pid] = (
                times.user + times.system + times.children_user + times.children_system
            )
            used += seen[member.pid]
            threads = waits(member.pid)
            for tid, seconds in threads.items():
                self.waited[member.pid, tid] = seconds
            if threads and not self.lowered:
                group = autogroup_nice(member.pid)  # one per process, not per thread
                self.lowered = any(
                    lowered(priority(member.pid, tid, group), self.start) for tid in threads
                )
        self.last_seen = seen
        self.peak_rss = max(self.peak_rss, rss)
        self.cpu_used = max(self.cpu_used, used)
        now = time.monotonic()
        used += vanished
        self.samples.append((now, used))
        while len(self.samples) > 2 and self.samples[1][0] <= now - CPU_WINDOW_S:
            self.samples.popleft()
        then, before = self.samples[0]
        if now - then < CPU_WINDOW_S:
            return rss, 0.0
        return rss, self._sustained(now, max(0.0, used - before) / (now - then))

    def _sustained(self, now, cores):
        """The least of the window's averages over the last SUSTAIN_S, 0 until they span it.

        One sample can be wrong: a child reaped after the listing and before its parent's
        reading is in the parent's children times and counted as last seen too. Only the
        average that ends at that sample is too high; a run that keeps the cores busy
        keeps them all high. (In CI, a sample that missed such a child started the window
        of a run later, and a mistaken file was stopped for a second busy core, 12 s into
        a 120 s limit: ``sample`` counts it as last seen.)"""
        self.rates.append((now, cores))
        while len(self.rates) > 2 and self.rates[1][0] <= now - SUSTAIN_S:
            self.rates.popleft()
        if now - self.rates[0][0] < SUSTAIN_S:
            return 0.0
        cores = min(rate for _, rate in self.rates)
        self.peak_cores = max(self.peak_cores, cores)
        return cores
