"""What a worker's process tree uses, polled from outside: host memory, CPU seconds, cores.

The time limit is charged in CPU seconds, as judges do, so that load cannot fail a
correct kernel: on a busy 2-core box a run waits for a core for many times its own
work, and a wall limit then killed a correct file whose run needs 5 s of CPU. A run
is charged the smaller of its CPU time and its wall time (``charge``), so one that
keeps several cores busy is held to the wall clock as before: no run is stopped
sooner than under a plain wall limit. A run that waits uses no CPU; the sandbox's
wall clock stops it (grader.batch.isolation.sandbox.WALL_FACTOR).
"""

import collections
import time

import psutil

CPU_WINDOW_S = 3.0  # cores kept busy are averaged over this long


def charge(cpu_s, wall_s):
    """Seconds a run's time limit is charged for ``cpu_s`` of CPU in ``wall_s`` of wall time."""
    return min(cpu_s, wall_s)


class TreeUsage:
    """A process and all its descendants, sampled each time the sandbox looks."""

    def __init__(self, root):
        self.root = root  # a psutil.Process
        self.peak_rss = 0
        self.peak_cores = 0.0
        self.cpu_used = 0.0  # never decreasing: a process that ended unreaped takes its time
        self.samples = collections.deque()

    def members(self):
        try:
            return [self.root] + self.root.children(recursive=True)
        except psutil.Error:
            return [self.root]

    def sample(self):
        """(resident bytes now, cores kept busy on average over the last CPU_WINDOW_S)."""
        rss = used = 0
        for member in self.members():
            try:
                rss += member.memory_info().rss
                times = member.cpu_times()
                used += times.user + times.system + times.children_user + times.children_system
            except psutil.Error:
                pass
        self.peak_rss = max(self.peak_rss, rss)
        self.cpu_used = max(self.cpu_used, used)
        now = time.monotonic()
        self.samples.append((now, used))
        while len(self.samples) > 2 and self.samples[1][0] <= now - CPU_WINDOW_S:
            self.samples.popleft()
        then, before = self.samples[0]
        if now - then < CPU_WINDOW_S:
            return rss, 0.0
        cores = max(0.0, used - before) / (now - then)
        self.peak_cores = max(self.peak_cores, cores)
        return rss, cores
