"""Workers started ahead of need, so that a run does not wait for one to warm up.

A worker's first seconds are the same whoever it will grade. Most of them, the imports, a
sandbox's fork server makes once (grader.batch.isolation.hosts); the rest is the fork, the
backend's start (CUDA, on a GPU) and, when no sandbox is idle, a new sandbox's imports. While
a run goes on, the pool warms up the workers of the runs after it. Each worker serves one
run and is then ended, as before: warming up ahead changes when a worker starts, never what
it holds, and no worker holds a student's file before it is handed over
(grader.batch.isolation.sandbox.Worker.assign).

The pool warms up no more workers than the runs still to come can take (``expect``,
``forgo``), so a class ends with none wasted; a run that finds none ready starts its own,
and the pool starts the next ones then. A warm-up never takes a sandbox a run is waiting
for (grader.batch.isolation.hosts.take): the batch's first runs get the sandboxes started
ahead for them, and the warm-ups' new sandboxes import while those runs work.
"""

import collections
import concurrent.futures
import threading

from grader.batch.isolation import sandbox


class WarmPool:
    """Warm workers for one phase of a batch, per device; ``close`` ends those not taken."""

    def __init__(
        self, *, backend_name, limits, sandboxed=True, on_start=None, ahead=None, before_take=None
    ):
        """``limits``: what a worker has while it warms up (its run sets its own);
        ``ahead``: {device: how many workers to keep warm for it}; ``before_take``: called
        at each take, before any worker starts (what it raises, ``take`` raises)."""
        self.before_take = before_take
        self.options = dict(
            backend_name=backend_name, limits=limits, sandboxed=sandboxed, on_start=on_start
        )
        self.ahead = dict(ahead or {})
        self.ready = collections.defaultdict(collections.deque)
        self.starting = collections.Counter()  # per device, workers being started now
        self.expected = 0  # runs still to come, at most
        self.lock = threading.Lock()
        self.changed = threading.Condition(self.lock)  # a worker started, or failed to
        self.closed = False
        # Each start waits for a sandbox's imports when no idle one is there: they go on
        # side by side (grader.batch.isolation.hosts starts every sandbox on a thread of
        # its own that outlives them, as bubblewrap's --die-with-parent needs).
        self.starter = concurrent.futures.ThreadPoolExecutor(
            max_workers=max(1, sum(self.ahead.values()))
        )

    def expect(self, runs):
        """``runs`` more runs will (at most) take a worker. None is started before the first
        run takes one: a class whose files all are refused unrun starts no worker at all."""
        with self.lock:
            self.expected += runs

    def forgo(self, runs):
        """``runs`` of those expected will not come (a file refused before it ran)."""
        with self.lock:
            self.expected = max(0, self.expected - runs)

    def take(self, device):
        """A worker for one run on ``device``: a warm one (or one the starter is starting),
        else one started now."""
        if self.before_take is not None:
            self.before_take()
        with self.changed:
            self.expected = max(0, self.expected - 1)
            self.changed.wait_for(lambda: self.ready[device] or not self.starting[device])
            worker = self.ready[device].popleft() if self.ready[device] else None
        if worker is not None and worker.process.poll() is not None:
            worker.abandon()  # it died waiting (the host's OOM killer, say): not the run's
            worker = None
        if worker is None:
            worker = sandbox.Worker(device=device, **self.options)
        self._fill()
        return worker

    def _fill(self):
        """Have the starter start workers until each device has its ``ahead`` warm, or the
        runs to come are covered."""
        while True:
            with self.lock:
                held = {
                    device: len(self.ready[device]) + self.starting[device] for device in self.ahead
                }
                short = [device for device, count in self.ahead.items() if held[device] < count]
                if self.closed or not short or sum(held.values()) >= self.expected:
                    return
                device = min(short, key=held.get)
                self.starting[device] += 1
            self.starter.submit(self._start, device)

    def _start(self, device):
        """On one of the starter's threads."""
        worker = None
        try:
            worker = sandbox.Worker(device=device, warming=True, **self.options)
        finally:
            with self.changed:
                self.starting[device] -= 1
                closed = self.closed
                if worker is not None and not closed:
                    self.ready[device].append(worker)
                self.changed.notify_all()
        if closed:
            worker.abandon()

    def close(self):
        """End every worker no run took."""
        with self.lock:
            self.closed = True
        self.starter.shutdown(wait=True)
        with self.lock:
            left = [worker for queue in self.ready.values() for worker in queue]
            self.ready.clear()
        for worker in left:
            worker.abandon()
