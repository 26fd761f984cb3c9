"""The GPU time other processes took while a run lived, from NVML's per-process SM use.

Runs that share a GPU take turns on it: while another process's kernel runs, a run's own
kernels wait. The time limit already discounts a wait for a CPU core
(grader.batch.isolation.usage); this discounts a wait for the GPU the same way, so that a
neighbour's busy kernels (a ``device_print`` in every program held an H200 at 100% for 90 s)
cannot turn a correct run into a timeout. A run that put work on the GPU itself is not
charged the seconds other processes held it while the run lived (``Share.credit``); a run
that never did (a hang in plain Python) gets no credit: no GPU kernel of others slowed it.

NVML (the ``nvml`` extra, nvidia-ml-py) samples each process's share of SM time; a thread
per GPU polls it. Where NVML cannot say, or has not yet named a process of any run (its
pids might not be the ones the grader sees), a run's share is not ``measured``: the batch
then grades its timeout a second time, alone (grader.batch.grade.session).
"""

import threading
import time

PERIOD_S = 0.5  # how often NVML is asked; it keeps its own samples between asks
KEPT_S = 3600.0  # samples older than this are dropped: no run lives that long


class Sampler:
    """One GPU's per-process SM use over time: (when, seconds covered, {pid: share 0..1})."""

    def __init__(self, device):
        """``device``: a worker's CUDA_VISIBLE_DEVICES entry (grader.batch.grade.machine), a
        GPU's index among all the host's (NVML's too) or its UUID."""
        import pynvml

        self.nvml = pynvml
        pynvml.nvmlInit()
        device = str(device)
        self.handle = pynvml.nvmlDeviceGetHandleByUUID(device) if device.startswith("GPU-") \
            else pynvml.nvmlDeviceGetHandleByIndex(int(device))
        self.samples = []
        self.lock = threading.Lock()
        self.attributed = False  # NVML named a process of some run: its pids are ours
        self.last = 0  # NVML's timestamp of the newest sample read
        self.before = time.monotonic()
        threading.Thread(target=self._run, daemon=True).start()

    def poll(self):
        try:
            rows = self.nvml.nvmlDeviceGetProcessUtilization(self.handle, self.last)
        except self.nvml.NVMLError:  # none sampled since the last ask (or none ever: then
            rows = []                # no run is ever ``measured``)
        now = time.monotonic()
        shares = {}
        for row in rows:
            shares.setdefault(row.pid, []).append(min(100, row.smUtil) / 100)
            self.last = max(self.last, row.timeStamp)
        with self.lock:
            self.samples.append((now, now - self.before,
                                 {pid: sum(values) / len(values) for pid, values in shares.items()}))
            while self.samples and self.samples[0][0] < now - KEPT_S:
                self.samples.pop(0)
        self.before = now

    def _run(self):
        while True:
            time.sleep(PERIOD_S)
            self.poll()

    def fresh(self):
        """Whether it is still sampling (a thread that died would leave runs uncredited)."""
        with self.lock:
            return bool(self.samples) and time.monotonic() - self.samples[-1][0] < 10 * PERIOD_S

    def seconds(self, pids, since):
        """(GPU seconds of ``pids``, GPU seconds of every other process) since ``since``."""
        own = others = 0.0
        with self.lock:
            samples = [sample for sample in self.samples if sample[0] > since]
        for _, covered, shares in samples:
            own += covered * min(1.0, sum(share for pid, share in shares.items() if pid in pids))
            others += covered * min(1.0, sum(share for pid, share in shares.items()
                                             if pid not in pids))
        return own, others


_samplers = {}
_lock = threading.Lock()


def sampler(device):
    """The Sampler of ``device`` (as a worker's CUDA_VISIBLE_DEVICES names it), started on
    first use; None where NVML cannot sample it per process (a MIG slice, say)."""
    with _lock:
        if device not in _samplers:
            try:
                _samplers[device] = Sampler(device)
            except Exception:  # noqa: BLE001 - no pynvml, no driver, not supported: no share
                _samplers[device] = None
        return _samplers[device]


class Share:
    """What one run's time limit is credited for the GPU: see the module's docstring."""

    def __init__(self, device):
        self.sampler = sampler(device) if device is not None else None
        self.own_s = self.others_s = 0.0

    def credit(self, pids, since):
        """Seconds not charged: other processes' GPU time since ``since``, once ``pids`` (the
        run's processes, every one seen) used the GPU themselves."""
        if self.sampler is None:
            return 0.0
        self.own_s, self.others_s = self.sampler.seconds(pids, since)
        if self.own_s > 0:
            self.sampler.attributed = True
            return self.others_s
        return 0.0

    @property
    def measured(self):
        """Whether NVML told this run's GPU time from others': it named a process of this
        run, or of another run before (so its pids are the ones we see, and this run, named
        never, used no GPU)."""
        return self.sampler is not None and self.sampler.fresh() \
            and (self.own_s > 0 or self.sampler.attributed)
