"""The batch grader's worker: runs inside the sandbox, speaks grader.batch.inside.protocol,
judges nothing.

    python -m grader.batch.inside.worker FILE

A worker warms up before it has a file: it imports the kernel stack and the grader's
modules, which takes seconds and is the same for every student, and only then waits for
the parent's ``job`` message, which says the file is now at FILE and which run to make of
it (grader.batch.isolation.warm_pool starts workers ahead so that no run waits for them):

    kernel   the rebuilt kernel (grader.core.kernel_source)
    wrapper  the student's whole file
    timing   the rebuilt kernel, to be timed

A *kernel* run imports the rebuilt file (the two functions and their constants,
nothing else), reports the symbolic diagnosis, builds the kernel with
``ninetoothed.make`` as the skeleton does (and at each other block size a case asks
for, grader.core.retile), asks the parent for the kernel's build for the course's GPU
(grader.batch.isolation.compile_gate: it sends the generated file), and for every job of every phase
launches it on the inputs the parent sent, into fresh NaN-filled outputs. When the
diagnosis found the layout off, it first reports what one program gets at a public
case's shape (grader.core.program_tiles), which the parent draws.
A *wrapper* run imports the whole file and calls its ``nt_gemm`` on the one
job it gets, so that the parent can check that the file as handed in works.
A *timing* run builds the rebuilt kernel like a kernel run, compiles it for the
sizes the parent names without launching anything, says it is ready, and
times it (grader.batch.inside.speed_probe) only when the parent says go: the parent lets
one timing run at a time touch a GPU, after every other run there has ended. Asked for
a what-if, it also rebuilds the functions with other tiles (grader.batch.inside.what_if_probe),
compiled after the graded kernel and timed after every graded size.

The worker never sees a seed, a case id, a path outside the sandbox or the
inputs of a phase before that phase starts (public cases come first, in a
phase of their own). What it reports is only ever a claim: the parent judges
the bytes it sent back, and takes nothing else from it that could raise a grade.
"""

import faulthandler
import functools
import os
import signal
import sys
import threading
import time
import traceback

from grader.batch.inside import protocol
from grader.core import build_guard, generated_cache, retile
from grader.core.messages import say
from grader.batch.status import ExitCode


class Channel:
    """The protocol's pipes, moved off fds 0 and 1 so that prints cannot reach them."""

    def __init__(self):
        self.incoming = os.fdopen(os.dup(0), "rb", buffering=0)
        self.outgoing = os.fdopen(os.dup(1), "wb")
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
        os.dup2(2, 1)
        sys.stdout = sys.stderr

    def send(self, kind, payload=b"", **fields):
        protocol.send(self.outgoing, kind, payload, **fields)

    def report(self, record, payload=b""):
        protocol.send_record(self.outgoing, record, payload)

    def compile(self, data):
        """The parent's Build of the generated kernel file ``data`` (the compile gate)."""
        from grader.core import gpu_compile

        self.send("compile", data, bytes=len(data))
        return gpu_compile.Build.from_fields(self.expect("build").fields)

    def expect(self, kind):
        """The next message from the parent, which must be a ``kind`` without a payload."""

        def accept(got, fields):
            if got != kind:
                raise protocol.ProtocolError(f"expected {kind}, got {got}")
            return 0

        message = protocol.receive(self.incoming, accept)
        if message is None:
            raise protocol.ProtocolError(f"the parent closed the channel before {kind}")
        return message

    def phases(self):
        """Each phase the parent sends, as [(Job, its input bytes)], until the last."""
        while True:
            message = protocol.receive(self.incoming, _phase_size)
            if message is None:
                return
            jobs = [protocol.Job.from_fields(fields) for fields in message.fields["cases"]]
            offset, work = 0, []
            for job in jobs:
                work.append((job, message.payload[offset : offset + job.input_bytes]))
                offset += job.input_bytes
            yield work
            if message.fields.get("last"):
                return


def _phase_size(kind, fields):
    if kind != "phase":
        raise protocol.ProtocolError(f"expected a phase, got {kind}")
    return sum(protocol.Job.from_fields(job).input_bytes for job in fields["cases"])


def _student_traceback(error, path, limit=8):
    """The error and the frames in the student's own file, bounded."""
    frames = [
        frame for frame in traceback.extract_tb(error.__traceback__) if frame.filename == str(path)
    ]
    lines = traceback.format_list(frames[-limit:])
    return "".join(lines)


def _error_text(error, path):
    if hasattr(error, "error_message") and hasattr(error, "src"):  # Triton's compile error
        from grader.core import gpu_compile

        message, line = gpu_compile.describe_error(error)
        text = (f"at the generated line: {line}\n" if line else "") + message
    else:
        text = f"{type(error).__name__}: {error}"
    return protocol.text(text + "\n" + _student_traceback(error, path))


def _operands(job, data, device):
    """The job's lhs and rhs, float16 on ``device``."""
    return tuple(matrix.to(device) for matrix in job.inputs(data))


def _launch(kernel, job, lhs, rhs, device):
    """Each wanted output made by one launch into a NaN-filled tensor, as bytes."""
    import torch

    outputs = []
    for _ in job.roles:
        out = torch.full((job.m, job.n), float("nan"), dtype=torch.float16, device=device)
        kernel(lhs, rhs, out)
        outputs.append(out)
    if device != "cpu":
        torch.cuda.synchronize()
    return protocol.matrices(outputs)


def _warm_up():
    """Import what every run needs before a student's file is here: the kernel stack, set
    up (Triton's driver starts on first use: on a GPU it compiles its cuda_utils and asks
    `file` about the interpreter), and the grader's modules the runs use."""
    import ninetoothed  # noqa: F401
    import triton

    from grader.core import cases, gpu_compile, layout, loading, program_tiles  # noqa: F401

    gpu_compile.key_by_version_in_a_private_cache()  # before the driver writes to the cache
    triton.runtime.driver.active.get_current_device()
    from grader.batch.inside import speed_probe, what_if_probe  # noqa: F401
    from grader.core import source_mistakes  # noqa: F401


def _import_kernel(channel, path):
    """(the rebuilt kernel file as a module, a check that it changed no library) once the
    parent knows it loaded; else None. The build guard watches from just before the
    import to the end of the run; the kernel stack was imported before it (``_warm_up``)."""
    from grader.core.loading import SubmissionError, import_file

    build_guard.install(build_guard.Policy(path), lambda why: _stop(channel, why), ExitCode.STOPPED)
    generated_cache.stop_on_rejection(functools.partial(_refuse_kernel, channel, path))
    before = build_guard.snapshot()
    try:
        module = import_file(path)
    except SubmissionError as error:
        channel.report(protocol.Loaded(error.status, str(error)))
        return None
    _check_untouched(channel, before)
    channel.report(protocol.Loaded("ok"))
    return module, functools.partial(_check_untouched, channel, before)


def _stop(channel, why, unbound=(), unbuildable=False):
    channel.report(protocol.Stopped(why, unbound, unbuildable))


def _refuse_kernel(channel, path, rejection):
    """End the run on a generated kernel the check refused (grader.core.generated_kernel):
    nothing of it was written, imported or compiled, and no code of the file can catch it."""
    from grader.core import gpu_compile

    why = str(rejection)
    with open(path, encoding="utf-8") as handle:
        source = handle.read()
    line = gpu_compile.refused_line(source, rejection.violations)
    if line is not None:
        why += f"\nyour line {line[0]}: {line[1]}"
    _stop(channel, why, rejection.unbound, rejection.unbuildable)
    sys.stderr.flush()
    os._exit(ExitCode.STOPPED)


def _check_untouched(channel, before, packages=build_guard.BEFORE_LAUNCH):
    """End the run if the file rebound a name of NineToothed, the grader or Triton (no audit
    event sees a module's attribute set): a patched ``ninetoothed.make`` could build a
    stand-in instead of the student's kernel. After a launch, ask for AFTER_LAUNCH only."""
    found = build_guard.changed(before, packages)
    if found:
        _stop(channel, f"a change of {', '.join(found[:5])}, which no kernel build makes")
        sys.stderr.flush()
        os._exit(ExitCode.STOPPED)


def _make(module, path, blocks=None):
    """(kernel, None) built as the skeleton builds it, or with ``blocks`` as its tiles
    (grader.core.retile); (None, the error as text) when it cannot be."""
    import ninetoothed
    from ninetoothed import Tensor

    try:
        if blocks:
            refused = retile.refusal(module, blocks)
            return (None, refused) if refused else (retile.make(module, blocks), None)
        return ninetoothed.make(
            module.arrangement, module.application, (Tensor(2), Tensor(2), Tensor(2))
        ), None
    except Exception as error:  # noqa: BLE001 - the student's kernel may fail to build
        return None, _error_text(error, path)


def kernel_run(channel, path, active):
    from grader.core import cases, layout, one_compile, program_tiles, source_mistakes

    loaded = _import_kernel(channel, path)
    if loaded is None:
        return
    module, untouched = loaded
    arranged = layout.inspect_arrangement(module)
    findings = source_mistakes.inspect_file(path) + arranged
    kernel, problem = _make(module, path)
    # Every block size a case may ask for, built before the guard's check like the kernel.
    kernels = {
        None: (kernel, problem),
        **{blocks: _make(module, path, blocks) for blocks in cases.other_blocks()},
    }
    untouched()
    build = _gate(channel, kernel) if kernel is not None else None
    if not active.is_interpreter:
        one_compile.for_cases(kernel, build)
    channel.report(
        protocol.Diagnosis(
            findings, layout.tile_sizes(module), layout.checked_right(module, arranged)
        )
    )
    if build is not None and build.checked and not build.ok and active.is_interpreter:
        # the parent fails every case with the build's verdict
        kernels = {blocks: (None, build.message) for blocks in kernels}
    for number, work in enumerate(channel.phases()):
        if number == 0 and arranged:  # the layout is off: what one program gets, to be drawn
            picture = program_tiles.first_difference(
                module, [(job.m, job.n, job.k) for job, _ in work]
            )
            if picture is not None:
                channel.report(protocol.Arrangement(picture))
        for job, data in work:
            started = time.perf_counter()
            job_kernel, problem = kernels.get(job.blocks, (None, "no kernel at these tiles"))
            arranged = retile.retiled(module, job.blocks) if job.blocks else module
            mismatch = problem or layout.launch_mismatch(arranged, (job.m, job.n, job.k))
            if mismatch:
                channel.report(protocol.CaseResult(job.index, error=mismatch))
                continue
            try:
                lhs, rhs = _operands(job, data, active.device)
                payload = _launch(job_kernel, job, lhs, rhs, active.device)
            except Exception as error:  # noqa: BLE001 - whatever the kernel raises
                channel.report(
                    protocol.CaseResult(
                        job.index,
                        error=_error_text(error, path),
                        seconds=time.perf_counter() - started,
                    )
                )
                continue
            channel.report(
                protocol.CaseResult(job.index, seconds=time.perf_counter() - started), payload
            )
        untouched(build_guard.AFTER_LAUNCH)
        channel.send("phase_done")


def _gate(channel, kernel):
    """The kernel's Build for the course's GPU: its generated file's bytes, as checked in
    this process, sent to the parent's compile gate (grader.batch.isolation.compile_gate),
    which ends the run itself on a refusal. A kernel without a checked file gets an
    unchecked Build here, which judges nothing, and the parent none."""
    import hashlib

    from grader.core import gpu_compile

    found = gpu_compile.kernel_file(kernel, gpu_compile.requested_target())
    if isinstance(found, gpu_compile.Build):
        return found
    path, digest = found
    data = path.read_bytes()
    if hashlib.sha256(data).hexdigest() != digest:
        _stop(channel, "the generated kernel file changed after it was checked")
        sys.stderr.flush()
        os._exit(ExitCode.STOPPED)
    return channel.compile(data)


def wrapper_run(channel, path, active):
    from grader.core.loading import SubmissionError, load_submission

    try:
        module = load_submission(path)
    except SubmissionError as error:
        channel.report(protocol.Loaded(error.status, str(error)))
        return
    except (SystemExit, KeyboardInterrupt) as error:
        channel.report(protocol.Loaded("exited", say("exit_while_importing", error=repr(error))))
        return
    except BaseException as error:  # noqa: BLE001 - anything at import time
        channel.report(protocol.Loaded("import_error", _error_text(error, path)))
        return
    channel.report(protocol.Loaded("ok"))
    import torch

    for work in channel.phases():
        for job, data in work:
            started = time.perf_counter()
            try:
                lhs, rhs = _operands(job, data, active.device)
                result = module.nt_gemm(lhs, rhs)
                payload, error = b"", ""
                if not isinstance(result, torch.Tensor):
                    error = say("not_tensor", kind=type(result).__name__)
                elif tuple(result.shape) != (job.m, job.n) or result.dtype != torch.float16:
                    error = say(
                        "not_float16_output",
                        dtype=result.dtype,
                        shape=tuple(result.shape),
                        m=job.m,
                        n=job.n,
                    )
                else:
                    payload = protocol.matrices([result])
                channel.report(
                    protocol.CaseResult(
                        job.index, error=error, seconds=time.perf_counter() - started
                    ),
                    payload,
                )
            except (SystemExit, KeyboardInterrupt) as error:
                channel.report(
                    protocol.CaseResult(
                        job.index, error=say("asked_to_exit", error=repr(error)), exited=True
                    )
                )
                return
            except BaseException as error:  # noqa: BLE001 - student code may raise anything
                channel.report(
                    protocol.CaseResult(
                        job.index,
                        error=_error_text(error, path),
                        seconds=time.perf_counter() - started,
                    )
                )
        channel.send("phase_done")


def timing_run(channel, path, active):
    from grader.batch.inside import speed_probe, what_if_probe

    loaded = _import_kernel(channel, path)
    if loaded is None:
        return
    module, untouched = loaded
    kernel, problem = _make(module, path)
    request = channel.expect("sizes")
    sizes = [tuple(int(value) for value in size) for size in request.fields["sizes"]]
    trials = None
    if request.fields.get("what_if_s") and not problem:
        # Made before the guard's check below: making them runs the student's code again.
        trials = what_if_probe.Trials(
            module, kernel, sizes[0], active.device, float(request.fields["what_if_s"])
        )
        trials.build()
    untouched()
    if problem:
        channel.report(protocol.Ready(problem))
        return
    note = speed_probe.precompile(kernel, sizes, active.device)
    if trials is not None:  # compiled after the graded kernel
        trials.compile()
    channel.report(protocol.Ready(note, **speed_probe.launch_settings(kernel)))
    channel.expect("go")
    for m, n, k in sizes:
        try:
            fields = speed_probe.measure(kernel, m, n, k, active.device)
        except Exception as error:  # noqa: BLE001 - whatever the kernel raises at this size
            fields = {
                "verdict": "ERROR",
                "wrong": 0,
                "kernel": None,
                "torch": None,
                "error": _error_text(error, path),
            }
        channel.report(protocol.SizeTiming(m, n, k, **fields))
    if trials is not None:  # after every graded size has been reported
        trials.report(channel)
    untouched(build_guard.AFTER_LAUNCH)
    channel.send("timing_done")


RUNS = {"kernel": kernel_run, "wrapper": wrapper_run, "timing": timing_run}


def _answer_where():
    """From a thread of its own: when the parent's time limit is up and it asks (SIGUSR1)
    where the run is, write every thread's stack on stderr, then which thread is the
    main one (protocol.HANG_SITE); the parent reads the submission's line from that
    thread's stack (grader.batch.isolation.sandbox.hang_site).

    The signal stays blocked in every thread, this one waits for it: a handler would be
    replaced by whatever installs its own later, as LLVM does in the first GPU compile
    (with a handler, the GPU hangs of nt_gemm said nowhere: docs/stress-runs/timeline.md).
    Nothing here raises an audit
    event (grader.core.build_guard): ``sys._current_frames`` would."""
    main_thread = threading.main_thread().ident
    while True:
        signal.sigwait({signal.SIGUSR1})
        faulthandler.dump_traceback(2, all_threads=True)  # fd 2, whatever sys.stderr is
        os.write(2, f"\n{protocol.HANG_SITE} thread {main_thread:#x}\n".encode())


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    # Before any other thread starts, so that every thread inherits the blocked signal.
    # The stacks also show staff where any run was, the grader's own frames too (issue 32:
    # a correct file timed out once under load).
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1})
    threading.Thread(target=_answer_where, name="where", daemon=True).start()
    if len(argv) != 1:
        print("usage: python -m grader.batch.inside.worker FILE", file=sys.stderr)
        return ExitCode.USAGE
    (path,) = argv
    channel = Channel()
    channel.send("hello")
    from grader.core import backend as backends

    active = backends.activate()
    _warm_up()
    mode = channel.expect("job").fields.get("mode")
    if mode not in RUNS:
        print(f"the parent asked for an unknown run {mode!r}", file=sys.stderr)
        return ExitCode.USAGE
    RUNS[mode](channel, path, active)
    return ExitCode.OK


if __name__ == "__main__":
    code = main()
    sys.stderr.flush()
    os._exit(code)  # skip interpreter teardown: a submission's atexit hooks do not run
