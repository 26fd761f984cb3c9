"""The benchmark's one implementation: check each size against torch.mm, then time it.

The student script (``assignment/benchmark_ninetoothed_gemm.py``) and the staff
scripts (``benchmarks/lab/run_baselines.py``) both go through ``run_sizes`` here, so
a student's numbers and the course's baselines are measured the same way.

For every size, in order:

1. Random float16 operands are made on the device from a fixed seed.
2. **Correctness**: the first ``nt_gemm`` call is compared with torch.mm
   (float32 accumulation, TF32 off) under the guide's tolerance,
   ``|out - ref| <= 0.025 + 0.025 * |ref|`` (``grader.core.checks``). That first call
   also compiles the kernel and, with ``NINETOOTHED_AUTOTUNE=1``, runs the
   autotune search; its wall time is kept apart (``first_call_s``,
   ``autotune_search_s``) so that it never leaks into the timings.
   A size that fails is reported FAIL and is not timed.
3. **Timing** (GPU only, see ``benchmarks.timing``): ``nt_gemm`` as the student
   calls it (the wrapper's output allocation included) and ``torch.mm`` on the
   same operands, in alternating rounds; then, when the module has the
   skeleton's ``_kernel()`` handle, the kernel alone on a preallocated output.
"""

import dataclasses

from benchmarks import kernel_config
from benchmarks.kernel_config import KernelConfig
from benchmarks.timing import Timing, bench, bench_pair, wall_clock

DEFAULT_SIZES = tuple((s, s, s) for s in (8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096))
# Ragged shapes: the cliff of a K or N that is not a multiple of 16 never shows in a
# power-of-two sweep (docs/perf-notes.md, "The ragged cliff: where it came from").
RAGGED_SIZES = (
    (1000, 1000, 1000),
    (3000, 3000, 3000),
    (3001, 3001, 3001),
    (4095, 4095, 4095),
    (4095, 4096, 4096),
    (4096, 4095, 4096),
    (4096, 4096, 4095),
    (3000, 4096, 4096),
    (4096, 3000, 4096),
    (4096, 4096, 3000),
    (4096, 4096, 4096),
)
# On the Triton interpreter a kernel costs tens of milliseconds per (program x K tile)
# step: 256^3 at 64^3 tiles takes a few seconds, 512^3 more than half a minute.
INTERPRETER_MAX_DIM = 256
DTYPE_BYTES = 2  # float16 in and out
IMPLEMENTATION = "ninetoothed"
DEFAULT_SEED = 0

PASS, FAIL, SKIP = "PASS", "FAIL", "SKIP"


def parse_size(text):
    """'512' -> (512, 512, 512); '4096x4096x4095' -> (4096, 4096, 4095) as (M, N, K)."""
    parts = str(text).lower().replace("*", "x").split("x")
    if len(parts) not in (1, 3):
        raise ValueError(f"size {text!r}: give one number (a square) or MxNxK")
    try:
        values = tuple(int(part) for part in parts)
    except ValueError:
        raise ValueError(f"size {text!r}: {text!r} is not made of whole numbers") from None
    if any(value <= 0 for value in values):
        raise ValueError(f"size {text!r}: every dimension must be positive")
    return values * 3 if len(values) == 1 else values


def size_label(m, n, k):
    return str(m) if m == n == k else f"{m}x{n}x{k}"


@dataclasses.dataclass
class SizeResult:
    """What happened to one size: its verdict, first-call cost, timings and tile config."""

    m: int
    n: int
    k: int
    verdict: str
    note: str = ""
    first_call_s: float = None
    autotune_search_s: float = None
    ninetoothed: Timing = None  # nt_gemm as called
    kernel: Timing = None  # the kernel alone, preallocated output
    torch_mm: Timing = None
    config: KernelConfig = dataclasses.field(default_factory=KernelConfig)

    @property
    def label(self):
        return size_label(self.m, self.n, self.k)

    @property
    def timed(self):
        return self.ninetoothed is not None and self.torch_mm is not None


def interpreter_skip_reason(m, n, k):
    if max(m, n, k) <= INTERPRETER_MAX_DIM:
        return ""
    return (
        f"{size_label(m, n, k)} is too large for the Triton interpreter on a CPU "
        f"(up to {INTERPRETER_MAX_DIM} per dimension); a GPU checks it"
    )


def make_operands(m, n, k, device, seed=DEFAULT_SEED):
    """float16 operands of shapes (M, K) and (K, N), reproducible per (seed, size)."""
    import torch

    generator = torch.Generator(device=device).manual_seed(seed * 1_000_003 + m * 7919 + n * 31 + k)
    lhs = torch.randn((m, k), device=device, dtype=torch.float16, generator=generator)
    rhs = torch.randn((k, n), device=device, dtype=torch.float16, generator=generator)
    return lhs, rhs


def _verdict(out, lhs, rhs, m, n, k):
    """(passed, note) of ``out`` against the float32-accumulated torch.mm."""
    from grader.core import cases, checks

    case = cases.Case("benchmark", m, n, k, "benchmark", "benchmark")
    verdict = checks.compare(out, checks.reference(lhs, rhs), case, seed=DEFAULT_SEED)
    return verdict.passed, verdict.message


def run_size(module, m, n, k, backend, *, time_it, seed=DEFAULT_SEED, handle=None, watch=None):
    """Check one size and, when asked and correct, time it. Returns a SizeResult."""
    import torch

    if backend.is_interpreter:
        reason = interpreter_skip_reason(m, n, k)
        if reason:
            return SizeResult(m, n, k, SKIP, reason)
    synchronize = torch.cuda.synchronize if backend.device == "cuda" else None

    lhs, rhs = make_operands(m, n, k, backend.device, seed)
    if watch is not None:
        watch.start()
    try:
        out, first_call_s = wall_clock(lambda: module.nt_gemm(lhs, rhs), synchronize)
    except Exception as error:  # noqa: BLE001 - the student's code raised: report it as this size's FAIL
        return SizeResult(m, n, k, FAIL, f"nt_gemm raised {type(error).__name__}: {error}")

    result = SizeResult(m, n, k, PASS, first_call_s=first_call_s)
    if kernel_config.is_autotuned(module) and kernel_config.reports_own_choice(module):
        result.config, result.autotune_search_s = kernel_config.own_choice(module, m, n, k)
    elif kernel_config.is_autotuned(module):
        if watch is not None:
            result.config, result.autotune_search_s = watch.finish()
            if not watch.used():
                handle = None  # nt_gemm never went through _kernel(): no kernel-only time
    else:
        result.config = kernel_config.fixed_config(module, handle)

    passed, message = _verdict(out, lhs, rhs, m, n, k)
    if not passed:
        result.verdict, result.note = FAIL, message
        return result
    if not time_it:
        return result

    try:
        result.ninetoothed, result.torch_mm = bench_pair(
            lambda: module.nt_gemm(lhs, rhs), lambda: torch.mm(lhs, rhs), timer=bench
        )
        result.kernel = _kernel_only(handle, out, lhs, rhs, m, n, k)
    except Exception as error:  # noqa: BLE001 - a timing that fails is this size's note, never the run's end
        result.note = f"timing failed: {type(error).__name__}: {error}"
        result.ninetoothed = result.kernel = result.torch_mm = None
    return result


def _kernel_only(handle, out_as_called, lhs, rhs, m, n, k):
    """Time the kernel handle on a preallocated output, if it gives the same answer."""
    if handle is None:
        return None
    import torch

    out = torch.empty_like(out_as_called)
    try:
        handle(lhs, rhs, out)
    except Exception:  # noqa: BLE001 - the student's kernel: one that raises here has no output to compare
        return None
    passed, _ = _verdict(out, lhs, rhs, m, n, k)
    if not passed:
        return None
    return bench(lambda: handle(lhs, rhs, out))


def run_sizes(
    module, sizes, backend, *, time_it=True, seed=DEFAULT_SEED, iterate=None, on_result=None
):
    """Run every size; ``iterate`` wraps the size list (a progress bar), ``on_result`` sees each.

    Timing needs the GPU backend; the caller refuses earlier, this is the last guard.
    """
    if time_it and backend.is_interpreter:
        raise RuntimeError("timing needs a GPU: the Triton interpreter gives no speeds")
    autotuned = kernel_config.is_autotuned(module)
    if autotuned and kernel_config.reports_own_choice(module):
        handle = watch = None  # the file tunes by itself; _kernel() is not what it runs
    else:
        handle = kernel_config.kernel_handle(module)
        watch = kernel_config.SearchWatch(module, handle) if autotuned else None
    results = []
    for m, n, k in iterate(list(sizes)) if iterate else sizes:
        result = run_size(
            module, m, n, k, backend, time_it=time_it, seed=seed, handle=handle, watch=watch
        )
        results.append(result)
        if on_result is not None:
            on_result(result)
    return results
