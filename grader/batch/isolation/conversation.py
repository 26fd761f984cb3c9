"""The parent's half of a worker run: send each phase's inputs, collect the outputs.

grader.batch.inside.worker speaks the other half (see grader.batch.inside.protocol for the
messages). Nothing here judges; grader.batch.grade.grading does, from the RunReport.
"""

import collections
import concurrent.futures
import dataclasses
import threading
import time

from grader.batch.inside import protocol
from grader.batch.isolation import compile_gate, sandbox, time_policy

KINDS = (
    "hello",
    protocol.Loaded.KIND,
    "compile",
    protocol.Diagnosis.KIND,
    protocol.Arrangement.KIND,
    protocol.CaseResult.KIND,
    "phase_done",
    protocol.Stopped.KIND,
)


@dataclasses.dataclass
class CaseReport:
    """What a worker sent back for one job: outputs by role, or the error it met."""

    error: str = ""
    exited: bool = False  # the submission asked the process to exit (a wrapper run)
    outputs: dict = dataclasses.field(default_factory=dict)
    seconds: float = 0.0


@dataclasses.dataclass
class RunReport:
    ending: sandbox.Ending
    stage: str  # how far it got: "starting", "importing", "running" or "done"
    phase: int = -1  # the phase it was sent last (0: the public cases)
    load_status: str = ""
    load_message: str = ""
    findings: list = dataclasses.field(default_factory=list)
    tiles: list = None
    layout_ok: bool = False  # the symbolic check found the arrangement right (feedback only)
    build: object = None  # grader.core.gpu_compile.Build of the kernel it sent (compile_gate)
    shared_build: bool = False  # that Build was made for another run of the batch
    arrangement: dict = None  # one program's tiles at a public shape (protocol.Arrangement)
    cases: dict = dataclasses.field(default_factory=dict)  # job index -> CaseReport
    stopped: str = ""  # why the build guard (grader.core.build_guard) ended it, if it did
    unbound: tuple = ()  # the names, where it ended on a kernel refused for those alone
    unbuildable: bool = False  # it ended on a kernel refused for what cannot build alone
    seconds: dict = dataclasses.field(default_factory=dict)  # each step, as the parent saw it
    # The stall limit (``run``'s ``stall``) in seconds that stopped it before its full
    # limit; 0 where none did.
    cut_short: float = 0.0


class _Steps:
    """How long each step of a run took, between the parent's sightings of its reports:
    ``start`` (the sandbox and Python up: hello), ``import`` (the kernel stack, CUDA and the
    file: loaded), ``build`` (the kernel and the compile gate: its diagnosis), then each
    phase of cases (``public cases``, ``hidden cases``)."""

    def __init__(self, report, on_step=None):
        self.report, self.last, self.on_step = report, time.monotonic(), on_step

    def done(self, step):
        now = time.monotonic()
        self.report.seconds[step] = round(now - self.last, 2)
        self.last = now
        if self.on_step:
            self.on_step()


class StallLimit:
    """How long a run may stay in one step, shared by the runs of a pass: ``seconds``, which
    ``lower`` shortens for the runs under way as well (grader.batch.grade.session: once
    the pass's last files only hold the class from its second grading)."""

    def __init__(self, seconds):
        self.seconds = seconds
        self._runs, self._lock = set(), threading.Lock()

    def lower(self, seconds):
        with self._lock:
            if seconds >= self.seconds:
                return
            self.seconds = seconds
            runs = list(self._runs)
        for run in runs:
            run.apply()

    def watch(self, run):
        with self._lock:
            self._runs.add(run)

    def forget(self, run):
        with self._lock:
            self._runs.discard(run)


class _StepLimit:
    """A run's limit per step (time_policy.step_limit), moved on as the parent sees each
    step end: a run that goes on making progress is stopped where its full limit would stop
    it; one that stalls in a step is stopped ``stall.seconds`` after that step began
    (``cut``), the seconds in force then, which a lowered StallLimit applies at once."""

    def __init__(self, worker, stall):
        self.worker, self.stall, self.full = worker, stall, worker.limits.timeout_s
        self.began, self.extra, self.applied = 0.0, 0.0, stall.seconds
        self.lock, self.ended = threading.Lock(), False
        stall.watch(self)  # before the first apply: a lowering meanwhile reaches it
        self.apply()

    def apply(self):
        with self.lock:
            # A lowered limit must not rewrite how a run ended, or is being stopped.
            if self.ended or self.worker.stopping:
                return
            self.applied = self.stall.seconds
            self.worker.set_time_limit(
                time_policy.step_limit(self.full, self.began, self.applied, self.extra)
            )

    def step(self):
        with self.lock:
            self.began = self.worker.charged()
        self.apply()

    def extend(self, seconds):
        with self.lock:
            self.full += seconds
            self.extra += seconds
            self.worker.extend_limit(seconds)

    def cut(self, ending):
        """Once the run has ended: the stall limit that stopped it (seconds), or 0 where
        none did."""
        with self.lock:
            self.ended = True
            return time_policy.cut_short(
                ending.kind, self.worker.limits.timeout_s, self.full, self.applied
            )


def payload_bytes(sizes, kind, fields):
    """How many bytes of matrices a message may carry (``sizes``: each sent case's output);
    a ProtocolError for anything else, on the reader's thread, where any other exception
    would end the thread and leave the run to wait out its time limit."""
    if kind not in KINDS:
        raise protocol.ProtocolError(f"an unknown message kind {kind!r}")
    if kind == "compile":
        return protocol.source_bytes(fields)
    if kind != "case":
        return 0
    index = fields.get("index")
    if not protocol.whole(index) or index not in sizes:
        raise protocol.ProtocolError(f"a report for a case that was never sent ({index!r})")
    return sizes[index]


def _worker(mode, source, limits, pool, **options):
    """A worker with this run assigned: warm from ``pool`` (grader.batch.isolation.warm_pool,
    started with the same options), else started now."""
    worker = pool.take(options["device"]) if pool else sandbox.Worker(limits=limits, **options)
    worker.assign(mode, source, limits)
    return worker


def run(
    mode,
    source,
    phases,
    *,
    backend_name,
    limits,
    device=None,
    sandboxed=True,
    on_start=None,
    tiles=None,
    pool=None,
    stall=None,
    gate=None,
):
    """Run a worker through ``phases`` (lists of (Job, lhs, rhs) with CPU float16
    tensors); always returns a RunReport, whatever the submission does.

    The time limit grows by time_policy.extra_for the kernel's tiles: a kernel run's own
    (from its diagnosis), or ``tiles`` for a wrapper run.
    ``stall``: a StallLimit, how long a step may take within ``limits``; the report's
    ``cut_short`` says when it stopped the run, and at how many seconds. ``gate``: the
    batch's grader.batch.isolation.compile_gate.CompileGate (else one for this run alone).
    """
    sizes = {job.index: job.output_bytes for phase in phases for job, _, _ in phase}

    def accept(kind, fields):
        return payload_bytes(sizes, kind, fields)

    report = RunReport(ending=None, stage="starting")
    worker = _worker(
        mode,
        source,
        limits,
        pool,
        backend_name=backend_name,
        device=device,
        sandboxed=sandboxed,
        on_start=on_start,
    )
    stepped = _StepLimit(worker, stall) if stall is not None else None
    steps = _Steps(report, stepped.step if stepped else None)
    jobs = [job for phase in phases for job, _, _ in phase]
    grow = stepped.extend if stepped else worker.extend_limit

    def extend(found):
        grow(time_policy.extra_for(backend_name, jobs, found))

    if mode != "kernel":
        extend(tiles)
        gate = None  # only a kernel run has a diagnosis and a build
    elif gate is None:
        gate = compile_gate.CompileGate(
            backend_name=backend_name, sandboxed=sandboxed, memory_bytes=limits.memory_bytes
        )
    try:
        _converse(
            _Guarded(worker, report),
            accept,
            phases,
            report,
            gate=gate,
            grow=grow,
            extend=extend,
            steps=steps,
        )
    finally:
        report.ending = worker.finish()
        if stepped:
            report.cut_short = stepped.cut(report.ending)
            stall.forget(stepped)
    return report


class _Guarded:
    """A worker whose ``receive`` turns the build guard's report into the run's end."""

    def __init__(self, worker, report):
        self.worker, self.report = worker, report

    def receive(self, accept):
        message = self.worker.receive(accept)
        if message is not None and message.kind == protocol.Stopped.KIND:
            stopped = protocol.Stopped.from_fields(message.fields)
            self.report.stopped, self.report.unbound = stopped.why, stopped.unbound
            self.report.unbuildable = stopped.unbuildable
            self.worker.stop("crashed", "the build guard stopped it")
            return None
        return message

    def __getattr__(self, name):
        return getattr(self.worker, name)


def _expect(worker, accept, kind):
    message = worker.receive(accept)
    if message is not None and message.kind != kind:
        worker.stop("crashed", f"its report was out of order ({message.kind} before {kind})")
        return None
    return message


def _converse(worker, accept, phases, report, gate, grow, extend, steps):
    if _expect(worker, accept, "hello") is None:
        return
    steps.done("start")
    report.stage = "importing"
    loaded = _expect(worker, accept, "loaded")
    if loaded is None:
        return
    steps.done("import")
    try:
        load = protocol.Loaded.from_fields(loaded.fields)
    except protocol.ProtocolError as error:
        worker.stop("crashed", f"its report was malformed ({error})")
        return
    report.load_status, report.load_message = load.status, load.message
    if report.load_status != "ok":
        report.stage = "done"
        return
    report.stage = "running"
    if gate is not None:
        found, gate_s = worker.receive(accept), None
        if found is not None and found.kind == "compile":
            gate_s = _compile(worker, report, found.payload, gate, grow)
            if report.stopped or worker.ending is not None:
                return
            found = worker.receive(accept)
        if found is None:
            return
        if found.kind != protocol.Diagnosis.KIND:
            worker.stop("crashed", f"its report was out of order ({found.kind} before diagnosis)")
            return
        claimed = protocol.Diagnosis.from_fields(found.fields)
        report.findings, report.tiles = claimed.findings, claimed.tiles
        report.layout_ok = claimed.layout_ok
        steps.done("build")
        if gate_s is not None:
            report.seconds["compile gate"] = gate_s  # within the build's seconds
        extend(report.tiles)
    for number, phase in enumerate(phases):
        jobs = {job.index: job for job, _, _ in phase}
        shapes = {(job.m, job.n, job.k) for job in jobs.values()}
        payload = _inputs_payload([matrix for _, lhs, rhs in phase for matrix in (lhs, rhs)])
        worker.send(
            "phase",
            payload,
            cases=[job.to_fields() for job in jobs.values()],
            last=number == len(phases) - 1,
        )
        report.phase = number
        while True:
            message = worker.receive(accept)
            if message is None:
                return
            if message.kind == "phase_done":
                steps.done("public cases" if number == 0 else "hidden cases")
                break
            if (
                message.kind == protocol.Arrangement.KIND
                and number == 0
                and report.arrangement is None
            ):
                try:
                    report.arrangement = protocol.Arrangement.from_fields(
                        message.fields, shapes
                    ).picture
                except protocol.ProtocolError as error:
                    worker.stop("crashed", f"its report was malformed ({error})")
                    return
                continue
            if message.kind != "case" or message.fields.get("index") not in jobs:
                worker.stop("crashed", f"its report was out of order ({message.kind})")
                return
            job = jobs.pop(message.fields["index"])
            report.cases[job.index] = _case_report(job, message)
            if report.cases[job.index].exited:
                return
    report.stage = "done"


def _compile(worker, report, data, gate, grow):
    """Answer a kernel run's ``compile`` with the gate's Build of ``data``; the seconds it
    waited. A refused kernel ends the run, as the build guard's report does. The worker's
    limits are watched meanwhile, and it is charged as time_policy.gate_credit says."""
    started = time.monotonic()
    grow(gate.longest_s)
    future = _in_a_thread(gate.build, data)
    worker.wait_for(future)
    waited = round(time.monotonic() - started, 2)
    if not future.done():  # the worker ended meanwhile; the gate still keeps the Build
        grow(waited - gate.longest_s)
        return waited
    answer = future.result()
    grow(time_policy.gate_credit(waited, answer.compile_s) - gate.longest_s)
    report.build, report.shared_build = answer.build, answer.shared
    if report.build.refused:
        report.stopped = f"compiling for the course's GPU: {report.build.refused}"
        worker.stop("crashed", "the build guard stopped it")
    else:
        worker.send("build", **report.build.to_fields())
    return waited


def _in_a_thread(function, *args):
    """``function(*args)`` on a thread of its own, as a Future: never queued behind other
    runs' calls, whose waits would then be theirs to pay."""
    future = concurrent.futures.Future()

    def resolve():
        try:
            future.set_result(function(*args))
        except BaseException as error:  # noqa: BLE001 - handed to the one who waits
            future.set_exception(error)

    threading.Thread(target=resolve, name="compile-gate", daemon=True).start()
    return future


_payloads = collections.OrderedDict()  # the inputs' ids -> (the inputs, their bytes)
_payloads_lock = threading.Lock()
PAYLOADS_KEPT = 8  # a batch sends three: the public and hidden phases, the wrapper's case


def _inputs_payload(inputs):
    """protocol.matrices of a phase's inputs, made once per batch rather than once per run.
    Every file gets the very same input tensors (grader.core.checks.judging_material builds
    them once), and turning them into bytes again for each run was a seventh of the parent's
    Python time in a 100-file batch (docs/stress-runs/timeline.md), a process whose one core
    paces the batch. Keyed by the tensors' ids, which cannot be reused while the entry holds
    them."""
    key = tuple(id(tensor) for tensor in inputs)
    with _payloads_lock:
        if key in _payloads:
            _payloads.move_to_end(key)
            return _payloads[key][1]
    payload = protocol.matrices(inputs)
    with _payloads_lock:
        _payloads[key] = (tuple(inputs), payload)
        while len(_payloads) > PAYLOADS_KEPT:
            _payloads.popitem(last=False)
    return payload


def _case_report(job, message):
    result = protocol.CaseResult.from_fields(message.fields)
    return CaseReport(
        error=result.error,
        exited=result.exited,
        outputs=job.outputs(message.payload),
        seconds=result.seconds,
    )


class TimingRun:
    """The parent's half of a timing run: start it, let it compile, then let it time.

    ``prepare`` returns once the worker has built and compiled the kernel (or
    ended); nothing has touched the GPU yet. ``measure`` says go and collects one
    SizeTiming per size. The caller decides when ``measure`` may run: never while
    anything else runs on that GPU. With ``what_if_s`` the worker also rebuilds the
    kernel with other tiles, within that many seconds (grader.batch.inside.what_if_probe),
    and ``measure`` collects its plan and timings after every size's.
    """

    KINDS = (
        "hello",
        protocol.Loaded.KIND,
        protocol.Ready.KIND,
        protocol.SizeTiming.KIND,
        protocol.WhatIfPlan.KIND,
        protocol.WhatIfTiming.KIND,
        "timing_done",
        protocol.Stopped.KIND,
    )

    def __init__(
        self,
        source,
        sizes,
        *,
        backend_name,
        limits,
        device=None,
        sandboxed=True,
        on_start=None,
        what_if_s=0,
    ):
        self.sizes = [tuple(size) for size in sizes]
        self.stopped = ""  # why the build guard ended the run, if it did
        self.unbound = ()  # as RunReport's; the kernel run's decides the verdict
        self.unbuildable = False
        self.worker = _Guarded(
            _worker(
                "timing",
                source,
                limits,
                None,
                backend_name=backend_name,
                device=device,
                sandboxed=sandboxed,
                on_start=on_start,
            ),
            self,
        )
        self.ready = False
        self.note = ""
        self.launch = {}
        self.results = []
        self.what_if_s = what_if_s
        self.what_if = None  # WhatIfPlan, then
        self.what_ifs = []  # WhatIfTiming, one per other configuration the worker reported
        self.what_if_done = False  # the worker got to the end of its what-if
        self.what_if_gpu_s = 0.0  # wall seconds from the last size's timing to the what-if's end
        self.ending = None
        self.prepare_s = self.measure_s = 0.0  # wall seconds of each step, for the record

    def _accept(self, kind, fields):
        if kind not in self.KINDS:
            raise protocol.ProtocolError(f"an unknown message kind {kind!r}")
        return 0

    def _next(self, kind):
        return _expect(self.worker, self._accept, kind)

    def prepare(self):
        started = time.monotonic()
        try:
            self._prepare()
        finally:
            self.prepare_s = time.monotonic() - started
        return self

    def _prepare(self):
        if self._next("hello") is None:
            return
        loaded = self._next("loaded")
        if loaded is None:
            return
        try:
            load = protocol.Loaded.from_fields(loaded.fields)
        except protocol.ProtocolError as error:
            self.worker.stop("crashed", f"its report was malformed ({error})")
            return
        if load.status != "ok":
            self.note = load.message
            self.worker.stop("crashed", "the kernel did not load")
            return
        self.worker.send(
            "sizes", sizes=[list(size) for size in self.sizes], what_if_s=self.what_if_s
        )
        ready = self._next("ready")
        if ready is None:
            return
        ready = protocol.Ready.from_fields(ready.fields)
        self.note = ready.note
        self.launch = {"num_warps": ready.num_warps, "num_stages": ready.num_stages}
        self.ready = True

    def measure(self):
        """Let the worker time every size; returns the SizeTimings it reported."""
        started = time.monotonic()
        if self.ready:
            self.worker.restart_clock()
            self.worker.send("go")
            while len(self.results) < len(self.sizes):
                message = self.worker.receive(self._accept)
                if message is None:
                    break
                size = self.sizes[len(self.results)]
                if (
                    message.kind != "timing"
                    or tuple(message.fields.get(key) for key in "mnk") != size
                ):
                    self.worker.stop("crashed", f"its report was out of order ({message.kind})")
                    break
                self.results.append(protocol.SizeTiming.from_fields(size, message.fields))
            else:
                if self.what_if_s:
                    what_if_started = time.monotonic()
                    self._what_if()
                    self.what_if_gpu_s = time.monotonic() - what_if_started
                else:
                    self._next("timing_done")
        self.ending = self.worker.finish()
        self.measure_s = time.monotonic() - started
        return self.results

    def _what_if(self):
        """The what-if's plan, then its timings up to ``timing_done``: each configuration
        once; anything else ends the run, whose graded sizes are already in."""
        message = self._next(protocol.WhatIfPlan.KIND)
        try:
            self.what_if = message and protocol.WhatIfPlan.from_fields(message.fields)
            while self.what_if is not None:
                message = self.worker.receive(self._accept)
                if message is None or message.kind == "timing_done":
                    self.what_if_done = message is not None
                    return
                if message.kind != protocol.WhatIfTiming.KIND or self.what_if.reason:
                    raise protocol.ProtocolError(f"{message.kind} out of order")
                found = protocol.WhatIfTiming.from_fields(message.fields)
                if any(found.config == seen.config for seen in self.what_ifs):
                    raise protocol.ProtocolError(f"the configuration {found.config} twice")
                self.what_ifs.append(found)
        except protocol.ProtocolError as error:
            self.worker.stop("crashed", f"its what-if report was malformed ({error})")

    def abandon(self):
        """End a prepared run that will not be timed (the batch is stopping)."""
        self.worker.stop("crashed", "not timed: the batch stopped")
        self.ending = self.worker.finish()
