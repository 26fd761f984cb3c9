"""What would be faster: the student's own kernel rebuilt with other tiles, warps and stages.

``python assignment/benchmark_ninetoothed_gemm.py --what-if`` (GPU only) takes the file's
own ``arrangement()`` and ``application()`` and builds them again with ``ninetoothed.make``
for a small fixed set of configurations (``CANDIDATES``), besides the file's own one. Each
build is first checked against torch.mm at one size; a wrong one is reported, not timed.
The right ones are timed with the benchmark's own method (``benchmarks.timing.bench_pair``),
each beside torch.mm on the same operands, as the kernel alone on a preallocated output, so
the file's own configuration is measured the same way as the others.

Only the block sizes, ``num_warps`` and ``num_stages`` change; the student's layout and
program stay theirs. That needs an arrangement that takes its tiles from its
``block_size_m/n/k`` keyword parameters (the reference's style) or from the module's
``BLOCK_SIZE_M/N/K`` (the skeleton's), rebuilt by grader.core.retile as the grader's cases
at other block sizes are. ``plan`` finds out which, by rebuilding the
arrangement on symbolic tensors with every candidate and reading the tiles it really lays
out (``grader.core.layout.tile_sizes``, no GPU needed): hard-coded tiles, an autotuned file
or a layout the reader does not recognise get a reason instead of a what-if.

It is advice printed beside the benchmark, never part of a grade; the batch grader runs the
same set with ``grade --what-if`` (grader.batch.inside.what_if_probe). The outputs (text in
English and Chinese, a CSV, a picture) are in ``benchmarks.what_if_output``.
"""

import dataclasses

from benchmarks import kernel_config
from grader.core import retile
from grader.core.retile import takes_keywords, tiles_used

# Around the course default and the H200 autotuner's usual pick (benchmarks/baselines/README.md:
# 128x256x64, 8 warps, 3 stages): square tiles doubling from the default, the two
# rectangles that double one side, a shorter K step, then the two large 8-warp tiles. Eight
# builds and timings cost about a minute on an H200 (a few seconds of compiling each, then
# 4 rounds of 50 ms for the pair); the set is fixed so that every student's what-if costs
# the same and two students' what-ifs compare.
CANDIDATES = (
    (64, 64, 64, 4, 3),
    (64, 128, 64, 4, 4),
    (128, 64, 64, 4, 4),
    (128, 128, 32, 4, 4),
    (128, 128, 64, 4, 4),
    (128, 128, 64, 8, 3),
    (128, 256, 64, 8, 3),
    (256, 128, 64, 8, 3),
)
TIMED, WRONG = "timed", "wrong"
BUILD_FAILED, TIMING_FAILED = "build failed", "timing failed"
SKIPPED = "skipped"  # the batch grader's what-if ran out of its time before this one
STATUSES = (TIMED, WRONG, BUILD_FAILED, TIMING_FAILED, SKIPPED)


@dataclasses.dataclass(frozen=True)
class Config:
    block_m: int
    block_n: int
    block_k: int
    num_warps: object = None  # None: ninetoothed.make's default
    num_stages: object = None

    @classmethod
    def launched(cls, blocks, warps, stages):
        """The config of a build whose launch options were read (``kernel_config.launch_options``:
        "unknown" where they could not be) as None where unknown."""
        return cls(*blocks, *(v if isinstance(v, int) else None for v in (warps, stages)))

    @property
    def blocks(self):
        return (self.block_m, self.block_n, self.block_k)

    @property
    def label(self):
        text = "x".join(str(b) for b in self.blocks)
        if self.num_warps is not None and self.num_stages is not None:
            text += f" {self.num_warps}w{self.num_stages}s"
        return text


# Why no what-if can be run; Plan.reason holds one, and reason_text turns it into words.
AUTOTUNED, UNREADABLE, IGNORED = "autotuned", "unreadable", "ignored"
REASONS = (AUTOTUNED, UNREADABLE, IGNORED)
ROUTES = {"keywords": "block_size_m/n/k parameters", "constants": "BLOCK_SIZE_M/N/K"}


@dataclasses.dataclass
class Plan:
    """What can be tried: the file's own config and the others, or why nothing can.

    The why is a code (REASONS) with the tiles it concerns, not text: the batch grader gets
    it from a sandboxed worker and words it itself (``reason_text``)."""

    theirs: Config = None
    others: tuple = ()
    reason: str = ""
    given: tuple = None  # IGNORED: the tiles the arrangement was given ...
    used: tuple = None  # ... and the ones it laid out instead
    route: str = ""  # IGNORED: a key of ROUTES, how it was given them

    @property
    def runnable(self):
        return not self.reason

    @property
    def reason_en(self):
        return reason_text(self)[0]

    @property
    def reason_zh(self):
        return reason_text(self)[1]


def reason_text(the_plan):
    """(English, Chinese) of why ``the_plan`` runs nothing; ("", "") when it runs."""
    if the_plan.reason == AUTOTUNED:
        return (
            "BLOCK_SIZE_M/N/K are ninetoothed.block_size() symbols here "
            "(NINETOOTHED_AUTOTUNE=1): the autotuner already picks the tiles per size, "
            "so there is no one configuration of yours to compare with. Run without "
            "NINETOOTHED_AUTOTUNE for the what-if.",
            "这里的 BLOCK_SIZE_M/N/K 是 ninetoothed.block_size() 符号"
            "（NINETOOTHED_AUTOTUNE=1）：自动调优已按尺寸挑选分块，没有一个"
            "“你的配置”可比。去掉 NINETOOTHED_AUTOTUNE 再运行 what-if。",
        )
    if the_plan.reason == UNREADABLE:
        return (
            "the tiles your arrangement lays out could not be read on symbolic "
            "tensors (a layout other than the guide's one row of lhs tiles and one "
            "column of rhs tiles per output tile), so a rebuild could not be shown "
            "to use the tiles it was given.",
            "无法在符号张量上读出你的 arrangement 实际使用的分块（排布不是指南中"
            "“每个输出分块对应一行 lhs 分块和一列 rhs 分块”的形式），因此无法确认"
            "换用其他分块重建后真的用了这些分块。",
        )
    if the_plan.reason == IGNORED:
        given, used = ("x".join(map(str, tiles)) for tiles in (the_plan.given, the_plan.used))
        route = ROUTES[the_plan.route]
        return (
            f"your arrangement does not take its tiles from its {route}: given "
            f"{given} it still lays out {used} tiles (a size written into "
            "tile(...)), so every rebuild would run the same kernel. Use the "
            "block sizes in tile(...) to get a what-if.",
            f"你的 arrangement 没有从 {route} 取分块大小：给它 {given}，它仍然"
            f"按 {used} 分块（tile(...) 里写死了数字），所以每次重建都是同一个 "
            "kernel。在 tile(...) 里使用分块大小常量，才能做 what-if。",
        )
    return ("", "")


@dataclasses.dataclass
class Outcome:
    config: Config
    theirs: bool
    status: str
    note: str = ""
    kernel: object = None  # benchmarks.timing.Timing
    torch_mm: object = None


def candidates():
    return tuple(Config(*row) for row in CANDIDATES)


def plan(module, handle=None):
    """The file's own config and the candidates to try, or the reason none can be tried."""
    if kernel_config.is_autotuned(module):
        return Plan(reason=AUTOTUNED)
    own = (module.BLOCK_SIZE_M, module.BLOCK_SIZE_N, module.BLOCK_SIZE_K)
    warps, stages = kernel_config.launch_options(handle) if handle is not None else (None, None)
    theirs = Config.launched(own, warps, stages)
    others = tuple(c for c in candidates() if c != theirs)
    seen = {c.blocks: tiles_used(module, c.blocks) for c in (theirs, *others)}
    if any(used is None for used in seen.values()):
        return Plan(reason=UNREADABLE)
    ignored = sorted(blocks for blocks, used in seen.items() if used != blocks)
    if ignored:
        return Plan(
            reason=IGNORED,
            given=ignored[0],
            used=seen[ignored[0]],
            route="keywords" if takes_keywords(module) else "constants",
        )
    return Plan(theirs, others)


def build(module, config):
    """``ninetoothed.make`` of the file's arrangement and application with ``config``."""
    return retile.make(
        module, config.blocks, num_warps=config.num_warps, num_stages=config.num_stages
    )


def check(handle, lhs, rhs):
    """(passed, note, output) of one launch into a NaN-filled output against torch.mm."""
    import torch

    from benchmarks import harness

    m, k = lhs.shape
    n = rhs.shape[1]
    out = torch.full((m, n), float("nan"), dtype=torch.float16, device=lhs.device)
    handle(lhs, rhs, out)
    passed, note = harness._verdict(out, lhs, rhs, m, n, k)
    return passed, note, out


def try_one(module, config, lhs, rhs, *, theirs=False):
    """Build, check and (when right) time one configuration; never raises."""
    import torch

    from benchmarks import timing

    try:
        handle = build(module, config)
    except Exception as error:  # noqa: BLE001 - the student's code, or a config the GPU refuses
        return Outcome(config, theirs, BUILD_FAILED, one_line(error))
    try:
        passed, note, out = check(handle, lhs, rhs)
    except Exception as error:  # noqa: BLE001 - the rebuilt kernel's run: whatever it raises is this config's verdict
        return Outcome(config, theirs, WRONG, one_line(error))
    if not passed:
        return Outcome(config, theirs, WRONG, note)
    try:
        kernel, torch_mm = timing.bench_pair(
            lambda: handle(lhs, rhs, out), lambda: torch.mm(lhs, rhs)
        )
    except Exception as error:  # noqa: BLE001 - a timing that fails is this config's verdict
        return Outcome(config, theirs, TIMING_FAILED, one_line(error))
    return Outcome(config, theirs, TIMED, kernel=kernel, torch_mm=torch_mm)


def run(module, the_plan, size, backend, seed, on_outcome=None):
    """Every configuration of ``the_plan`` at ``size`` (M, N, K); the file's own one first."""
    from benchmarks import harness

    if backend.is_interpreter:
        raise RuntimeError("the what-if times kernels: it needs a GPU")
    lhs, rhs = harness.make_operands(*size, backend.device, seed)
    outcomes = []
    for config in (the_plan.theirs, *the_plan.others):
        outcome = try_one(module, config, lhs, rhs, theirs=config is the_plan.theirs)
        outcomes.append(outcome)
        if on_outcome is not None:
            on_outcome(outcome)
    return outcomes


def one_line(error):
    """The error's type and last line, at most 300 characters."""
    lines = str(error).strip().splitlines()
    return f"{type(error).__name__}: {lines[-1] if lines else ''}"[:300]
