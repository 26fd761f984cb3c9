"""Inside a timing worker: compile the grader's kernel ahead of its turn, then time it.

Runs in the sandbox (``python -m grader.batch.inside.worker timing``) on the kernel that
grader.core.kernel_source rebuilt and ``ninetoothed.make`` built, never on the
student's ``nt_gemm``, which could call torch.mm itself. The method is the
benchmark's (benchmarks.timing): L2 flushed before every run, the kernel and
torch.mm on the same operands in alternating rounds, medians and p20..p80.
Both write into preallocated outputs, so neither pays for an allocation.
"""

import contextlib

from benchmarks.harness import make_operands
from benchmarks.kernel_config import launch_options
from benchmarks.timing import bench_pair
from grader.core import checks


# Twice the benchmark's rounds: torch.mm's times at 4096^3 on an H200 fall in two
# clusters (about 0.19 and 0.21 ms) once the GPU is hot, and the median of more
# rounds flips between them less, from one batch to the next.
ROUNDS = 8


class NeedsLaunch(Exception):
    """An autotuned kernel cannot be compiled without launching it to choose a config."""


@contextlib.contextmanager
def compile_only():
    """Kernel calls inside this block compile their Triton kernel and launch nothing.

    The next student's worker compiles while another student is being timed, and
    must not put work on the GPU meanwhile. Triton's own ``warmup`` path does
    exactly that; an autotuner would have to launch, so it raises NeedsLaunch.
    """
    from triton.runtime.autotuner import Autotuner
    from triton.runtime.jit import JITFunction

    launching, tuning = JITFunction.run, Autotuner.run

    def compile_without_launch(self, *args, **kwargs):
        kwargs["warmup"] = True
        return launching(self, *args, **kwargs)

    def refuse(self, *args, **kwargs):
        raise NeedsLaunch

    JITFunction.run, Autotuner.run = compile_without_launch, refuse
    try:
        yield
    finally:
        JITFunction.run, Autotuner.run = launching, tuning


def precompile(kernel, sizes, device):
    """Compile ``kernel`` for every size without a launch; '' or why it waits for its turn."""
    import torch

    try:
        with compile_only():
            for m, n, k in sizes:
                kernel(
                    torch.empty((m, k), dtype=torch.float16, device=device),
                    torch.empty((k, n), dtype=torch.float16, device=device),
                    torch.empty((m, n), dtype=torch.float16, device=device),
                )
    except NeedsLaunch:
        return "autotuned: compiled in its own turn"
    except Exception as error:  # noqa: BLE001 - it fails again, and is reported, when timed
        return f"compiling ahead failed ({type(error).__name__}); tried again when timed"
    return ""


def launch_settings(kernel):
    """{"num_warps", "num_stages"} NineToothed wrote into the kernel's launcher ("unknown" if not one)."""
    warps, stages = launch_options(kernel)
    return {"num_warps": warps, "num_stages": stages}


def measure(kernel, m, n, k, device, seed=0):
    """One size: check the kernel's output there, time it against torch.mm, then check
    that the timed launches were the kernel that was checked.

    Returns the fields of a ``timing`` message: ``verdict`` PASS or FAIL,
    ``wrong`` (elements out of tolerance), ``error`` (why a FAIL that is not about the
    first output), and for a PASS the kernel's and torch.mm's [median, p20, p80] in
    milliseconds. The timed launches reuse the operands, so a kernel that marked them, or
    whose later launches wrote less than its first, would be timed doing less: the inputs
    must come out as they went in, and the output, emptied before the timing, must come
    out right again.
    """
    import torch

    lhs, rhs = make_operands(m, n, k, device, seed)  # the benchmark's own inputs
    lhs_before, rhs_before = lhs.clone(), rhs.clone()
    expected = checks.reference(lhs, rhs)
    out = torch.full((m, n), float("nan"), dtype=torch.float16, device=device)
    kernel(lhs, rhs, out)
    torch.cuda.synchronize()
    wrong = int(checks.outside_tolerance(out, expected).sum())
    if wrong:
        return {"verdict": "FAIL", "wrong": wrong, "kernel": None, "torch": None}
    out.fill_(float("nan"))
    theirs = torch.empty_like(out)
    ours, reference = bench_pair(
        lambda: kernel(lhs, rhs, out), lambda: torch.mm(lhs, rhs, out=theirs), rounds=ROUNDS
    )
    torch.cuda.synchronize()
    if not (torch.equal(lhs, lhs_before) and torch.equal(rhs, rhs_before)):
        return {
            "verdict": "FAIL",
            "wrong": 0,
            "kernel": None,
            "torch": None,
            "error": "the kernel changed its inputs (lhs or rhs) while it was timed",
        }
    wrong = int(checks.outside_tolerance(out, expected).sum())
    if wrong:
        return {
            "verdict": "FAIL",
            "wrong": wrong,
            "kernel": None,
            "torch": None,
            "error": f"after the timed launches {wrong} elements of its output were "
            "wrong: the launches timed did not all compute C",
        }
    return {
        "verdict": "PASS",
        "wrong": 0,
        "kernel": [ours.median_ms, ours.p20_ms, ours.p80_ms],
        "torch": [reference.median_ms, reference.p20_ms, reference.p80_ms],
    }
