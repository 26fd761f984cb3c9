"""The parent's half of a worker run: send each phase's inputs, collect the outputs.

grader.worker speaks the other half (see grader.protocol for the messages).
Nothing here judges; grader.batch does, from the RunReport.
"""

import dataclasses

from grader import protocol, sandbox

KINDS = ("hello", "loaded", "diagnosis", "case", "phase_done")


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
    cases: dict = dataclasses.field(default_factory=dict)  # job index -> CaseReport


def run(mode, source, phases, *, backend_name, limits, device=None, sandboxed=True,
        on_start=None):
    """Run a worker through ``phases`` (lists of (Job, lhs, rhs) with CPU float16
    tensors); always returns a RunReport, whatever the submission does."""
    sizes = {job.index: job.output_bytes for phase in phases for job, _, _ in phase}

    def accept(kind, fields):
        if kind not in KINDS:
            raise protocol.ProtocolError(f"an unknown message kind {kind!r}")
        if kind != "case":
            return 0
        index = fields.get("index")
        if index not in sizes:
            raise protocol.ProtocolError(f"a report for a case that was never sent ({index!r})")
        return sizes[index]

    worker = sandbox.Worker(mode, source, backend_name=backend_name, limits=limits,
                            device=device, sandboxed=sandboxed, on_start=on_start)
    report = RunReport(ending=None, stage="starting")
    try:
        _converse(worker, accept, phases, report, diagnosis=mode == "kernel")
    finally:
        report.ending = worker.finish()
    return report


def _expect(worker, accept, kind):
    message = worker.receive(accept)
    if message is not None and message.kind != kind:
        worker.stop("crashed", f"its report was out of order ({message.kind} before {kind})")
        return None
    return message


def _converse(worker, accept, phases, report, diagnosis):
    if _expect(worker, accept, "hello") is None:
        return
    report.stage = "importing"
    loaded = _expect(worker, accept, "loaded")
    if loaded is None:
        return
    report.load_status = str(loaded.fields.get("status"))
    if report.load_status not in protocol.LOADED_STATUSES:
        worker.stop("crashed", f"its report was malformed (load status {report.load_status!r})")
        return
    report.load_message = protocol.text(loaded.fields.get("message", ""))
    if report.load_status != "ok":
        report.stage = "done"
        return
    report.stage = "running"
    if diagnosis:
        found = _expect(worker, accept, "diagnosis")
        if found is None:
            return
        report.findings = protocol.findings(found.fields.get("findings"))
        report.tiles = protocol.tiles(found.fields.get("tiles"))
    for number, phase in enumerate(phases):
        jobs = {job.index: job for job, _, _ in phase}
        payload = b"".join(lhs.numpy().tobytes() + rhs.numpy().tobytes() for _, lhs, rhs in phase)
        worker.send("phase", payload, cases=[job.to_fields() for job in jobs.values()],
                    last=number == len(phases) - 1)
        report.phase = number
        while True:
            message = worker.receive(accept)
            if message is None:
                return
            if message.kind == "phase_done":
                break
            if message.kind != "case" or message.fields.get("index") not in jobs:
                worker.stop("crashed", f"its report was out of order ({message.kind})")
                return
            job = jobs.pop(message.fields["index"])
            report.cases[job.index] = _case_report(job, message)
            if report.cases[job.index].exited:
                return
    report.stage = "done"


def _case_report(job, message):
    import torch

    outputs = {}
    if message.payload:
        size = 2 * job.m * job.n
        for position, role in enumerate(job.roles):
            data = bytearray(message.payload[position * size:(position + 1) * size])
            outputs[role] = torch.frombuffer(data, dtype=torch.float16).reshape(job.m, job.n)
    seconds = message.fields.get("seconds")
    return CaseReport(error=protocol.text(message.fields.get("error") or ""),
                      exited=bool(message.fields.get("exited")), outputs=outputs,
                      seconds=float(seconds) if isinstance(seconds, (int, float)) else 0.0)
