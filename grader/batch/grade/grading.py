"""Grade one submission from the parent process: run it in the sandbox, judge, decide.

The parent never imports student code. It reads the source as text (the
syntax, the contract's names, the placeholders, and grader.core.kernel_source's
rebuild of the kernel), then starts two sandboxed workers side by side
(grader.batch.isolation.sandbox, grader.batch.isolation.conversation):

* the **kernel run** gets the rebuilt file, only the two functions and their
  constants, builds the kernel itself and launches it on the inputs the parent
  sends, the public cases first, then the hidden ones. Every point comes from
  the outputs of these launches, judged by grader.core.checks;
* the **wrapper run** gets the whole file, imports it and calls its
  ``nt_gemm`` once, on the smallest public case. It holds nothing secret. It
  can only cost points: the file as handed in must import and work, and
  ``nt_gemm`` must return exactly what its kernel writes.

The result is one grader.batch.record.Record per student, from which
grader.batch.outputs.reports writes everything.

What the runs sent back is judged, and the status decided, by grader.batch.grade.verdict.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import functools
import hashlib
import json
import time
from typing import TYPE_CHECKING

from benchmarks.environment import package_version
from grader import __version__
from grader.batch import import_graph
from grader.batch.grade import verdict
from grader.core import build_refusal
from grader.batch.inside import protocol
from grader.batch.isolation import conversation, time_policy
from grader.batch.timing import speed
from grader.core import checks, kernel_source, loading, nesting, source_mistakes
from grader.core.messages import say
from grader.core import cases as catalogue
from grader.batch.isolation.sandbox import Limits
from grader.batch.timing.handin import check_handin
from grader.batch.timing.speed import SpeedSettings
from grader.batch.record import CaseEntry, Record
from grader.batch.status import Status

if TYPE_CHECKING:
    from grader.batch.grade.intake import Submission


class WorkerFailure(Exception):
    """The worker died before any student code ran: the grader's fault, not the student's."""


@dataclasses.dataclass(frozen=True)
class Settings:
    seed: str = dataclasses.field(repr=False)  # the grading secret (grader.batch.outputs.secret)
    backend: str
    timeout_s: float
    memory_limit_bytes: int
    case_filter: tuple = ()  # test-only subset of case ids; empty means the whole catalogue
    sandboxed: bool = True  # False only with --unsafe-no-sandbox
    speed: SpeedSettings = SpeedSettings(sizes=())  # grader.batch.timing.speed; off unless given
    # Share of the case points a late submission loses (--late-penalty): applied when the
    # reports are written (grader.batch.outputs.override_view), so changing it regrades nobody.
    late_penalty: float = 0.0
    gpu_target: str = "sm_90"  # what every kernel is compiled for first (grader.core.gpu_compile)

    @property
    def fingerprint(self):
        """What the outputs keep of the secret (grader.core.cases.fingerprint)."""
        return catalogue.fingerprint(self.seed)

    @property
    def timed(self):
        """Whether passing submissions are timed: on a GPU, with speed sizes."""
        return self.backend == "gpu" and bool(self.speed.sizes)

    def cases(self):
        selected = catalogue.catalogue(self.seed, self.backend)
        if self.case_filter:
            selected = [case for case in selected if case.id in self.case_filter]
        return selected

    @property
    def isolation(self):
        from grader.batch.isolation import sandbox

        return sandbox.BUBBLEWRAP if self.sandboxed else sandbox.UNSAFE


@functools.cache  # the code cannot change under a running batch; reading it takes 0.2 s
def grader_version() -> str:
    """The version plus a digest of the grading code: any change to it means regrading."""
    digest = hashlib.sha256()
    for relative in import_graph.closure_files(
        [
            "grader.batch.grade.grading",
            "grader.batch.inside.forkserver",
            "grader.batch.inside.plain_forkserver",
            "grader.batch.inside.worker",
        ]
    ):
        digest.update(relative.encode() + b"\0" + (import_graph.ROOT / relative).read_bytes())
    return f"{__version__}+{digest.hexdigest()[:12]}"


def grading_key(submission: Submission, settings: Settings) -> str:
    """What a stored result depends on; a different key means grading again."""
    material = {
        "file": submission.sha256 or submission.problem,
        "handin": hashlib.sha256(submission.handin).hexdigest() if submission.handin else "",
        "lms": [getattr(submission, "lms_id", ""), getattr(submission, "late", False)],
        "grader": grader_version(),
        "secret": settings.fingerprint,
        "backend": settings.backend,
        "timeout_s": settings.timeout_s,
        "memory_limit_bytes": settings.memory_limit_bytes,
        "cases": list(settings.case_filter),
        "gpu_target": settings.gpu_target,
        "isolation": settings.isolation,
        "speed": settings.speed.describe() if settings.timed else None,
        # The stack the kernels are compiled and run with: a new one may judge differently.
        "stack": [package_version(name) for name in ("torch", "triton", "ninetoothed")],
    }
    return hashlib.sha256(json.dumps(material, sort_keys=True).encode()).hexdigest()


def syntax_problem(source: str) -> str:
    """The import_error message for a file that does not compile, in grader.core.loading's words."""
    try:
        compile(source, "ninetoothed_gemm.py", "exec", dont_inherit=True)
    except SyntaxError as error:
        return loading.syntax_message("ninetoothed_gemm.py", error)
    except ValueError as error:  # e.g. null bytes
        return say("cannot_compile", file="ninetoothed_gemm.py", error=error)
    return ""


def case_entries_for(cases_list, reason):
    names = verdict.display_names(cases_list)
    return [
        CaseEntry(case.id, names[case.id], case.visibility, 0, case.points, "not_run", reason)
        for case in cases_list
    ]


def base_record(submission: Submission, settings: Settings, folder: str) -> Record:
    cases_list = settings.cases()
    return Record(
        student=submission.student,
        folder=folder,
        origin=submission.origin,
        taken=submission.taken,
        seen=[{"path": path, "why": why} for path, why in submission.seen],
        lms_id=submission.lms_id,
        late=submission.late,
        sha256=submission.sha256,
        key=grading_key(submission, settings),
        grader_version=grader_version(),
        secret_fingerprint=settings.fingerprint,
        backend=settings.backend,
        isolation=settings.isolation,
        max_score=sum(case.points for case in cases_list)
        + (settings.speed.max_points if settings.timed else 0),
        cases=case_entries_for(cases_list, say("case_not_run")),
        speed=_speed_placeholder(settings),
    )


def could_not_grade(
    submission: Submission, settings: Settings, folder: str, error: Exception
) -> Record:
    """The row of a file whose grading raised in the grader itself: 0 points, the error, and
    what the TA should do. ``could_not_grade`` makes the next run grade it again."""
    return dataclasses.replace(
        base_record(submission, settings, folder),
        status=Status.CRASHED.value,
        could_not_grade=True,
        message=say("could_not_grade", why=f"{type(error).__name__}: {error}"),
    )


def _speed_placeholder(settings):
    """What the record says of speed until the speed phase (grader.batch.timing.speed) times it."""
    if settings.backend != "gpu":
        return speed.not_measured("interpreter")
    if not settings.speed.sizes:
        return speed.not_measured("off")
    return {"status": "not_timed", "message": speed.NOT_TIMED[0], "message_zh": speed.NOT_TIMED[1]}


def _static_verdict(source):
    """(status, message, flags) for a file the grader must not run at all, else None."""
    too_deep = nesting.too_deep(source)  # first: compiling it may be what gives up
    if too_deep is not None:
        return Status.FAILED, nesting.message(too_deep, "ninetoothed_gemm.py"), []
    problem = syntax_problem(source)
    if problem:
        return Status.IMPORT_ERROR, problem, []
    missing = [
        name for name in loading.REQUIRED_NAMES if name not in kernel_source.defined_names(source)
    ]
    if missing:
        return (
            Status.IMPORT_ERROR,
            say("does_not_define", file="ninetoothed_gemm.py", names=", ".join(missing)),
            [],
        )
    unfinished = loading.unfinished_functions(source)
    if unfinished:
        return Status.NOT_IMPLEMENTED, loading.not_implemented_message(unfinished), []
    return None


def may_run(submission: Submission) -> bool:
    """False for a file the grader refuses before any run for what its text alone says (no
    file, no parse, a name missing, an unfinished function); True otherwise, the kernel
    check's refusals included: that check costs more, and a file it refuses only leaves the
    sandbox started ahead for it unused (grader.batch.grade.session._first_files)."""
    if submission.problem:
        return False
    try:
        return _static_verdict(loading.source_text(submission.data)) is None
    except Exception:  # noqa: BLE001 - what Python's parser gives up on: the file's own grading says so
        return True


def _phases(cases_list, seed):
    """The kernel run's phases: the public cases, then the hidden ones, as (Job, lhs, rhs)."""
    public, hidden = [], []
    for index, case in enumerate(cases_list):
        lhs, rhs, _ = checks.judging_material(case, seed, "cpu")
        job = protocol.Job(index, case.m, case.n, case.k, verdict.ROLES[case.check], case.blocks)
        (public if case.visibility == "public" else hidden).append((job, lhs, rhs))
    return [phase for phase in (public, hidden) if phase]


def _wrapper_phase(phases, cases_list):
    """The wrapper run's one job: the smallest public product case, else the smallest case."""
    candidates = [item for item in phases[0] if cases_list[item[0].index].check == catalogue.GEMM]
    job, lhs, rhs = min(candidates or phases[0], key=lambda item: item[0].input_bytes)
    return [[(dataclasses.replace(job, roles=("out",)), lhs, rhs)]]


RUNS = 2  # workers a graded file takes: the kernel run and the wrapper run


def grade(
    submission: Submission,
    settings: Settings,
    folder: str,
    device: int | None = None,
    on_start=None,
    pool=None,
    stall=None,
    gate=None,
) -> Record:
    """Grade one intake.Submission; returns its record (never raises for the student's doing).
    ``pool``: warm workers (grader.batch.isolation.warm_pool) expecting RUNS for this file;
    ``stall``: a first pass's limit per step (a conversation.StallLimit of
    grader.batch.isolation.time_policy.first_pass_step), where a run it stops leaves the
    record ``cut_short_s`` for the full limit to judge; ``gate``: the batch's compile gate
    (grader.batch.isolation.compile_gate), else one for this file alone."""
    record = base_record(submission, settings, folder)
    cases_list = settings.cases()
    source = None if submission.problem else loading.source_text(submission.data)
    kernel = _refused(record, submission, source, cases_list)
    if kernel is None:
        if pool:
            pool.forgo(RUNS)
        return record
    phases = _phases(cases_list, settings.seed)
    wrapper_phases = _wrapper_phase(phases, cases_list)
    options = dict(
        backend_name=settings.backend,
        device=device,
        sandboxed=settings.sandboxed,
        limits=limits(settings),
        on_start=on_start,
        pool=pool,
        stall=stall,
    )
    # Side by side on a GPU, where they overlap; one after the other on the interpreter,
    # whose -j already keeps every core busy, and where the wrapper's time limit grows
    # with the tiles the kernel run showed (grader.batch.isolation.time_policy.extra_for).
    if settings.backend == "gpu":
        with concurrent.futures.ThreadPoolExecutor(max_workers=2) as threads:
            kernel_future = threads.submit(
                conversation.run,
                "kernel",
                kernel.text.encode("utf-8"),
                phases,
                gate=gate,
                **options,
            )
            wrapper_future = threads.submit(
                conversation.run, "wrapper", submission.data, wrapper_phases, **options
            )
            kernel_run, wrapper_run = kernel_future.result(), wrapper_future.result()
    else:
        kernel_run = conversation.run(
            "kernel", kernel.text.encode("utf-8"), phases, gate=gate, **options
        )
        wrapper_run = conversation.run(
            "wrapper", submission.data, wrapper_phases, tiles=kernel_run.tiles, **options
        )
    for run in (kernel_run, wrapper_run):
        if run.stage == "starting" and run.ending.kind == "crashed":
            raise WorkerFailure(
                f"the grading worker failed before loading {submission.student}'s "
                f"file ({run.ending.detail}):\n{run.ending.stderr[-3000:]}"
            )

    record.wall_time_s = round(
        max(kernel_run.ending.wall_time_s, wrapper_run.ending.wall_time_s), 2
    )
    record.peak_cores = max(kernel_run.ending.peak_cores, wrapper_run.ending.peak_cores)
    record.cpu_time_s = max(kernel_run.ending.cpu_time_s, wrapper_run.ending.cpu_time_s)
    record.cpu_wait_s = max(kernel_run.ending.cpu_wait_s, wrapper_run.ending.cpu_wait_s)
    record.seconds = {"kernel run": kernel_run.seconds, "nt_gemm run": wrapper_run.seconds}
    record.stdout = ""
    record.stderr = verdict.tidy(
        f"[kernel run: {kernel_run.ending.kind} {kernel_run.ending.detail}]\n"
        f"{kernel_run.ending.stderr}\n"
        f"[nt_gemm run: {wrapper_run.ending.kind} {wrapper_run.ending.detail}]"
        f"\n{wrapper_run.ending.stderr}"
    )
    record.findings = kernel_run.findings
    record.tiles = kernel_run.tiles
    record.layout_ok = kernel_run.layout_ok
    build = kernel_run.build
    record.gpu_build = build.to_fields() if build else None
    record.gpu_build_shared = kernel_run.shared_build
    unbuilt = build if (build is not None and build.checked and not build.ok) else None
    judging = time.perf_counter()
    record.cases = verdict.judge_cases(
        cases_list,
        kernel_run,
        settings.seed,
        unbuilt,
        source,
        every=settings.backend == "interpreter",
    )
    # The grader's own CPU work per student, beside the workers (grader.core.checks).
    record.seconds["grader"] = {"judge": round(time.perf_counter() - judging, 2)}
    record.arrangement = _failing_arrangement(kernel_run.arrangement, record.cases, cases_list)
    verdict.decide(record, kernel_run, wrapper_run, wrapper_phases[0][0][0], cases_list, source)
    record.score = sum(entry.points for entry in record.cases)
    if record.status == "passed" and settings.timed:
        record.speed = None  # to be timed (grader.batch.timing.speed.needs_timing)
    if kernel_run.cut_short or wrapper_run.cut_short:
        record.cut_short_s = max(kernel_run.cut_short, wrapper_run.cut_short)
    check_handin(submission, record)
    return record


def limits(settings):
    """What each run of a file is given (grader.batch.isolation.sandbox.Limits)."""
    return Limits(
        settings.timeout_s, settings.memory_limit_bytes, time_policy.cores_for(settings.backend)
    )


def prints_in_its_kernel(submission: Submission) -> bool:
    """Whether the file's application() prints (the mistake ``debug_print``). Every program
    of its kernel then prints, which holds the GPU at 100% for the first pass's whole step
    limit while the CPUs idle and the runs beside it wait (docs/stress-runs/timeline.md). The
    first pass grades such files last (grader.batch.grade.session), beside its last files
    only, and its tail leaves their limit as it is; the order decides no verdict."""
    if submission.problem:
        return False
    findings = source_mistakes.inspect_source(loading.source_text(submission.data))
    return any(finding["mistake"] == "debug_print" for finding in findings)


def _refused(record, submission, source, cases_list):
    """The kernel to run (grader.core.kernel_source), or None where the file is not run at
    all: ``record`` then holds its verdict."""
    if submission.problem:
        record.status, record.message = Status.MISSING_FILE, submission.problem
        record.cases = case_entries_for(cases_list, say("no_submission_file"))
        return None
    refused = _static_verdict(source)
    if refused:
        record.status, record.message = refused[0], refused[1]
        record.cases = case_entries_for(cases_list, say("not_run", error=refused[0]))
        return None
    kernel = kernel_source.extract(source)
    if kernel.violations:
        status, message = verdict.refusal(
            record,
            source,
            say("kernel_refused"),
            [f"kernel: {item}" for item in kernel.violations],
            unbuildable=build_refusal.unbuildable(kernel.violations),
        )
        record.status, record.message = status, message
        record.cases = case_entries_for(cases_list, say("not_run", error=status))
        return None
    return kernel


def _failing_arrangement(picture, entries, cases_list):
    """The kernel run's picture of one program's tiles (grader.core.program_tiles), kept
    when a public case of its shape failed: the feedback draws it beside feedback.md."""
    if picture is None:
        return None
    failed = {
        case.shape
        for case, entry in zip(cases_list, entries)
        if case.visibility == "public" and entry.status != "passed"
    }
    return picture if tuple(picture["shape"]) in failed else None
