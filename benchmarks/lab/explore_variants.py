"""Explore tile configurations of the reference GEMM on one GPU, side by side with torch.mm.

One script for one lease: it builds every variant from the reference itself (the
model answer's fixed 64x64x64 kernel, and ``solutions.tuned``'s kernels with
explicit block sizes, warps and stages), checks each on NaN-poisoned outputs
against the grader's float32 reference and tolerance (``grader.core.checks``),
and times it next to ``torch.mm`` on the same inputs in the same run, in
alternating rounds (``benchmarks.timing``). Then it runs the tuned reference the
way a benchmark would: a square sweep from a cold Triton cache (tuning time,
chosen configuration, speed, per-call overhead against the fixed path at
n <= 512), and again with the tuning choices it persisted.

    python benchmarks/lab/explore_variants.py --out OUT_DIR [--budget-s 300] [--sections main,sweep,ragged]

Round 4's sections ask where 3000^3 loses: ``waves`` (two launches, whole waves
then the leftover rows), ``padded`` (rhs copied into aligned rows), ``limits``
(the aligned neighbours of the ragged shapes), ``transposed`` and ``deeper``
(C^T = B^T A^T), ``wide_k`` (BK = 128), and ``runtime_size`` (flat kernels whose
1-D sizes are run-time ints). Round 5's ask what schedules beyond NineToothed's
pointer loads would give: ``tma`` (tiles loaded through TMA descriptors, in
NineToothed and in a plain Triton persistent kernel), ``persistent`` (one
program per SM, as a NineToothed arrangement) and ``split_k`` (a wave split whose
leftover rows cut their K loops in chunks). Each is one device call. Round 6's
pick tiles by the wave: ``wave_tiles`` (128x128, 64x256 and 256x128 beside
128x256 where the last wave is partly empty) and ``ladder`` (3000^3 beside
2992, 3008 and 3072). ``persistent_tma`` puts round 5's two halves together in
NineToothed: one program per SM walking its tiles, loaded through TMA descriptors,
beside the plain Triton ceiling.

Writes OUT_DIR/explore.csv (one row per measurement), OUT_DIR/explore.log and
OUT_DIR/sweep_{cold,warm}.json, and prints a short table last. The results and
what they mean are in docs/perf-notes.md.

It stays one file, longer than the kit's others: it is the one script a GPU lease runs,
its sections share the Bench and its CSV, and docs/perf-notes.md and the committed
baselines cite its command lines section by section.
"""

import argparse
import contextlib
import dataclasses
import functools
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # run as a script: the kit's root is not on the path
# The fixed kernel is the course default's; the tuned kernels never read the flag.
os.environ.pop("NINETOOTHED_AUTOTUNE", None)

import pandas  # noqa: E402
import torch  # noqa: E402

from benchmarks import harness, kernel_config, timing  # noqa: E402
from grader.core import checks  # noqa: E402
from solutions import ninetoothed_gemm  # noqa: E402
from solutions.tuned import arrangements, kernels, waves  # noqa: E402
from solutions.tuned import plan as tuned  # noqa: E402
from solutions.tuned.configs import TileConfig  # noqa: E402

FIELDS = [
    "section",
    "variant",
    "m",
    "n",
    "k",
    "operands",
    "ms",
    "tflops",
    "torch_ms",
    "torch_tflops",
    "ratio",
    "correct",
    "bad",
    "max_abs_err",
    "build_s",
    "note",
]

# (name, block_m, block_n, block_k, group_size_m, num_warps, num_stages), most telling first.
VARIANTS = [
    ("p128x128x64 4w4s", 128, 128, 64, 1, 4, 4),
    ("p128x256x64 8w3s", 128, 256, 64, 1, 8, 3),
    ("g128x256x64 8w3s", 128, 256, 64, 8, 8, 3),
    ("g128x256x64 8w4s", 128, 256, 64, 8, 8, 4),
    ("g256x128x64 8w3s", 256, 128, 64, 8, 8, 3),
    ("g128x128x64 4w4s", 128, 128, 64, 8, 4, 4),
    ("g128x128x64 8w3s", 128, 128, 64, 8, 8, 3),
    ("g64x256x64 4w4s", 64, 256, 64, 8, 4, 4),
    ("g128x256x32 8w4s", 128, 256, 32, 8, 8, 4),
    ("g16-128x256x64 8w3s", 128, 256, 64, 16, 8, 3),
    ("g64x128x64 4w4s", 64, 128, 64, 8, 4, 4),
    ("g64x64x64 4w3s", 64, 64, 64, 8, 4, 3),
]
MAIN_SHAPES = [(8192, 8192, 8192), (4096, 4096, 4096), (2048, 2048, 2048), (1024, 1024, 1024)]
SWEEP = [8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096]
SWEEP_EXTRA = [
    (8192, 8192, 8192),
    (3000, 3000, 3000),
    (4096, 4096, 3000),
    (4096, 3000, 4096),
    (3000, 4096, 4096),
    (4096, 4096, 4095),
    (1000, 1000, 1000),
]


def log(*parts):
    line = " ".join(str(p) for p in parts)
    print(line, flush=True)
    if LOG is not None:
        LOG.write(line + "\n")
        LOG.flush()


LOG = None


class BudgetSpent(Exception):
    """The time budget is spent: the section measuring stops, and so does every later one."""


class Bench:
    def __init__(self, out_dir, budget_s):
        self.deadline = time.monotonic() + budget_s
        self.rows = []
        self.csv_path = out_dir / "explore.csv"
        self.shape = self.operands_and_reference = None  # one shape's, kept alive

    @property
    def sms(self):
        """The GPU's SM count, as the tuned wave split reads it."""
        return waves.sm_count(torch.device("cuda"))

    def operands(self, m, n, k):
        """The benchmark's operands for this shape and the grader's float32 reference product."""
        if self.shape != (m, n, k):
            a, b = harness.make_operands(m, n, k, "cuda")
            self.shape, self.operands_and_reference = (m, n, k), (a, b, checks.reference(a, b))
        return self.operands_and_reference

    def measure(
        self, section, variant, m, n, k, make_call, operands="contiguous", note="", build=None
    ):
        """make_call(kernel, a, b, out) -> a no-argument function that fills out."""
        if time.monotonic() > self.deadline:
            raise BudgetSpent
        row = dict(section=section, variant=variant, m=m, n=n, k=k, operands=operands, note=note)
        try:
            started = time.perf_counter()
            kernel = build() if build is not None else None
            a, b, ref = self.operands(m, n, k)
            out = torch.full((m, n), float("nan"), dtype=torch.float16, device="cuda")
            call = make_call(kernel, a, b, out)
            call()
            torch.cuda.synchronize()
            row["build_s"] = round(time.perf_counter() - started, 2)
            row["bad"] = int(checks.outside_tolerance(out, ref).sum())
            row["correct"] = row["bad"] == 0
            row["max_abs_err"] = float((out.float() - ref).abs().nan_to_num(nan=float("inf")).max())
            ours, theirs = timing.bench_pair(call, lambda: torch.mm(a, b), rounds=5)
            ms, torch_ms = ours.median_ms, theirs.median_ms
            flop = 2 * m * n * k
            row.update(
                ms=round(ms, 5),
                tflops=round(flop / ms / 1e9, 1),
                torch_ms=round(torch_ms, 5),
                torch_tflops=round(flop / torch_ms / 1e9, 1),
                ratio=round(torch_ms / ms, 3),
            )
        except Exception as error:  # noqa: BLE001 - a variant that fails is a result too
            row["note"] = (note + " " if note else "") + f"error: {type(error).__name__}: {error}"[
                :300
            ]
        self.rows.append(row)
        # Rewritten after every row: a lease that ends mid-section keeps what it measured.
        pandas.DataFrame(self.rows, columns=FIELDS, dtype=object).to_csv(self.csv_path, index=False)
        log(
            f"{section:7s} {variant:24s} {m}x{n}x{k} {operands:14s} ms={row.get('ms')} "
            f"TF={row.get('tflops')} torch={row.get('torch_tflops')} ratio={row.get('ratio')} "
            f"ok={row.get('correct')} build={row.get('build_s')} {row.get('note', '')}"
        )
        return row


def built(config):
    """A build: the tuned launcher of ``config``, made when measured."""
    return functools.partial(kernels.tuned_kernel, config)


def variant_kernel(spec, flat=False):
    _, bm, bn, bk, group, warps, stages = spec
    return built(TileConfig(bm, bn, bk, group, warps, stages, flat=flat))


def plain_call(kernel, a, b, out):
    """Any launcher here, the reference's configured ones included, takes 2-D operands."""
    return lambda: kernel(a, b, out)


def section_main(bench):
    log("== main: square shapes, every variant")
    for m, n, k in MAIN_SHAPES:
        bench.measure(
            "main",
            "default 64x64x64 8w7s",
            m,
            n,
            k,
            plain_call,
            build=functools.partial(kernel_config.kernel_handle, ninetoothed_gemm),
        )
        for spec in VARIANTS:
            if m == 1024 and spec[0].startswith("g16"):
                continue
            bench.measure("main", spec[0], m, n, k, plain_call, build=variant_kernel(spec))


RAGGED_SHAPES = [
    (3000, 3000, 3000),
    (4096, 4096, 3000),
    (4096, 3000, 4096),
    (4096, 4096, 4095),
    (3001, 3001, 3001),
    (1000, 1000, 1000),
]


def section_ragged(bench):
    log("== ragged: K or N not a multiple of 16, strided kernels against flat ones")
    by_name = {spec[0]: spec for spec in VARIANTS}
    for shape in RAGGED_SHAPES:
        large = shape[0] * shape[1] * shape[2] >= 1536**3
        names = (
            ["g128x256x64 8w3s", "g128x128x64 8w3s", "g128x256x64 8w4s"]
            if large
            else ["g64x128x64 4w4s", "g128x128x64 4w4s"]
        )
        for name in names:
            bench.measure(
                "ragged",
                "flat " + name,
                *shape,
                plain_call,
                "flat",
                build=variant_kernel(by_name[name], flat=True),
            )
        bench.measure(
            "ragged",
            names[0],
            *shape,
            plain_call,
            "strided",
            build=variant_kernel(by_name[names[0]]),
        )


WAVE_MAINS = [
    (128, 256, 64, 1, 8, 3),
    (128, 256, 64, 1, 8, 4),
    (128, 256, 64, 2, 8, 3),
    (128, 256, 64, 11, 8, 3),
    (256, 128, 64, 1, 8, 3),
]
WAVE_TAILS = [
    (64, 64, 64, 1, 4, 3),
    (64, 64, 64, 1, 4, 4),
    (64, 128, 64, 1, 4, 4),
    (64, 128, 64, 1, 4, 3),
    (128, 64, 64, 1, 4, 4),
    (64, 256, 64, 1, 8, 3),
    (128, 128, 64, 1, 8, 3),
    (128, 128, 64, 1, 4, 4),
]
WAVE_SHAPES = [(3000, 3000, 3000), (2500, 2500, 2500), (2560, 2560, 2560)]


def section_waves(bench):
    """Wave splits: whole waves of large tiles, then the leftover rows in small tiles."""
    log("== waves: two launches per product, the second on the rows past the last whole wave")
    sms = bench.sms

    def config(spec, flat, tail=None):
        return TileConfig(*spec, flat=flat, tail=tail)

    for m, n, k in WAVE_SHAPES:
        flat = bool(k % 16 or n % 16)
        kind = "flat" if flat else "strided"
        baseline = config((128, 256, 64, 8, 8, 3), flat)
        bench.measure(
            "waves", "whole " + baseline.name, m, n, k, plain_call, kind, build=built(baseline)
        )
        split = waves.whole_wave_rows(m, n, 128, 256, sms)
        log(f"waves {m}x{n}x{k}: main rows {split}, tail rows {m - split}")
        mains = WAVE_MAINS if (m, n, k) == WAVE_SHAPES[0] else WAVE_MAINS[:2]
        tails = WAVE_TAILS if (m, n, k) == WAVE_SHAPES[0] else WAVE_TAILS[:4]
        for main in mains:
            main_rows = waves.whole_wave_rows(m, n, main[0], main[1], sms)
            bench.measure(
                "waves",
                "main " + config(main, flat).name,
                main_rows,
                n,
                k,
                plain_call,
                kind,
                build=built(config(main, flat)),
            )
            for tail in tails:
                combined = config(main, flat, config(tail, flat))
                bench.measure(
                    "waves", combined.name, m, n, k, plain_call, kind, build=built(combined)
                )
        for tail in tails:
            bench.measure(
                "waves",
                "tail " + config(tail, flat).name,
                m - split,
                n,
                k,
                plain_call,
                kind,
                build=built(config(tail, flat)),
            )
        concurrent(bench, m, n, k, config(WAVE_MAINS[0], flat), config(WAVE_TAILS[2], flat), sms)


def concurrent(bench, m, n, k, main_config, tail_config, sms):
    """The two launches on two streams, either one first: does the tail fill the last wave's gaps?"""
    main, tail = kernels.tuned_kernel(main_config), kernels.tuned_kernel(tail_config)
    split = waves.whole_wave_rows(m, n, main_config.block_m, main_config.block_n, sms)
    side = torch.cuda.Stream()

    def make(tail_first):
        def build_call(_, a, b, out):
            def call():
                here = torch.cuda.current_stream()
                side.wait_stream(here)
                if not tail_first:
                    main(a[:split], b, out[:split])
                with torch.cuda.stream(side):
                    tail(a[split:], b, out[split:])
                if tail_first:
                    main(a[:split], b, out[:split])
                here.wait_stream(side)

            return call

        return build_call

    for tail_first in (False, True):
        order = "tail first" if tail_first else "main first"
        bench.measure(
            "waves",
            f"2 streams, {order}: {main_config.name} + {tail_config.name}",
            m,
            n,
            k,
            make(tail_first),
            "flat" if main_config.flat else "strided",
        )


PADDED_SHAPES = [(4096, 3000, 4096), (3000, 3000, 3000)]


def section_padded(bench):
    """A ragged N: is the cliff in the loads of rhs rows 3000 elements apart?

    The flat kernel runs once on rhs as given and once on a copy whose rows are
    padded to a multiple of 16 (the kernel alone, then with the copy), and the
    copy alone is timed two ways.
    """
    log("== padded: flat kernels on rhs as given against a padded copy of rhs")
    pad = torch.nn.functional.pad

    def padded_call(kernel, a, b, out):
        wide = pad(b, (0, -b.shape[1] % 16))
        return lambda: kernel(a, wide, out)

    def copy_call(how):
        def build_call(_, a, b, out):
            def by_pad():
                pad(b, (0, -b.shape[1] % 16))

            def by_copy():
                wide = b.new_empty((b.shape[0], b.shape[1] - b.shape[1] % -16))
                wide[:, : b.shape[1]].copy_(b)
                wide[:, b.shape[1] :].zero_()

            call = by_pad if how == "pad" else by_copy

            def fill_too():  # measure() checks out: give it the product once
                call()
                out.copy_(a @ b)

            fill_too()
            return call

        return build_call

    tile = TileConfig
    for m, n, k in PADDED_SHAPES:
        flat = tile(128, 256, 64, 8, 8, 3, flat=True)
        narrow = tile(256, 128, 64, 4, 8, 3, flat=True)
        for config in (flat, narrow):
            bench.measure(
                "padded", config.name, m, n, k, plain_call, "as given", build=built(config)
            )
            bench.measure(
                "padded",
                config.name + " (kernel only)",
                m,
                n,
                k,
                padded_call,
                "rhs padded",
                build=built(config),
            )
            with_copy = dataclasses.replace(config, pad_n=True)
            bench.measure(
                "padded", with_copy.name, m, n, k, plain_call, "copy inside", build=built(with_copy)
            )
        for how in ("pad", "copy"):
            bench.measure("padded", f"rhs copy alone ({how})", m, n, k, copy_call(how), "copy")
        if (m, n, k) != (3000, 3000, 3000):
            continue
        for tail in ((64, 128, 64, 1, 4, 4), (64, 128, 64, 1, 4, 3), (128, 64, 64, 1, 4, 4)):
            split = tile(128, 256, 64, 1, 8, 3, flat=True, tail=tile(*tail, flat=True))
            bench.measure(
                "padded",
                split.name + " (kernel only)",
                m,
                n,
                k,
                padded_call,
                "rhs padded",
                build=built(split),
            )
            split = dataclasses.replace(split, pad_n=True)
            bench.measure(
                "padded", split.name, m, n, k, plain_call, "copy inside", build=built(split)
            )


def measure_plan(bench, section, plan):
    """Measure every configuration of a [(shape, [TileConfig, ...]), ...] plan through the
    tuned reference's own launchers."""
    for shape, configs in plan:
        for config in configs:
            bench.measure(
                section,
                config.name,
                *shape,
                plain_call,
                "flat" if config.flat else "strided",
                build=built(config),
            )


def section_limits(bench):
    """What 3000^3 could reach: the same tiles on aligned neighbours of the ragged shapes.

    Flat against strided kernels where both are aligned (what do the flat kernels'
    extra masks cost?), 3008 against 3000 (what do rows 6000 bytes apart cost?),
    and the wave split on the aligned 3000x3008x3008 (the ceiling of a padded copy
    whose copying were free).
    """
    log("== limits: the ragged shapes' aligned neighbours")
    tile = TileConfig
    big = (128, 256, 64, 8, 8, 3)
    split_main = (128, 256, 64, 1, 8, 3)
    tail = (64, 128, 64, 1, 4, 4)
    plan = [
        ((4096, 4096, 4096), [tile(*big), tile(*big, flat=True)]),
        ((4096, 3008, 4096), [tile(*big), tile(*big, flat=True)]),
        (
            (3008, 3008, 3008),
            [tile(*big), tile(*big, flat=True), tile(*split_main, tail=tile(*tail))],
        ),
        (
            (3000, 3008, 3008),
            [
                tile(*big),
                tile(*split_main, tail=tile(*tail)),
                tile(*split_main, tail=tile(64, 128, 64, 1, 4, 3)),
            ],
        ),
        (
            (3000, 3000, 3000),
            [tile(*big, flat=True), tile(*split_main, flat=True, tail=tile(*tail, flat=True))],
        ),
    ]
    measure_plan(bench, "limits", plan)


def section_transposed(bench, deeper_round=False):
    """Swap the operands' roles (C^T = B^T A^T): does a ragged N then cost what a ragged K does?

    ``deeper_round`` (section "deeper", run after the first) adds longer pipelines.
    """
    log("== transposed: flat kernels computing C^T = B^T A^T")
    tile = TileConfig
    flat = dict(flat=True)
    swapped = dict(flat=True, transposed=True)
    # Tiles are named as tiles of C: flat-t 256x128 computes C^T in 128x256 tiles.
    whole = [
        tile(128, 256, 64, 8, 8, 3, **flat),
        tile(256, 128, 64, 8, 8, 3, **swapped),
        tile(256, 128, 64, 8, 8, 4, **swapped),
        tile(128, 256, 64, 4, 8, 3, **swapped),
    ]
    splits = [
        tile(256, 128, 64, 1, 8, 3, **swapped, tail=tile(64, 128, 64, 1, 4, 4, **flat)),
        tile(256, 128, 64, 1, 8, 3, **swapped, tail=tile(64, 128, 64, 1, 4, 4, **swapped)),
        tile(256, 128, 64, 1, 8, 3, **swapped, tail=tile(64, 128, 64, 1, 4, 3, **flat)),
        tile(128, 256, 64, 1, 8, 3, **flat, tail=tile(64, 128, 64, 1, 4, 4, **flat)),
    ]
    deeper = [
        tile(256, 128, 64, 4, 8, 4, **swapped),
        tile(256, 128, 32, 8, 8, 6, **swapped),
        tile(256, 128, 32, 8, 8, 8, **swapped),
        tile(128, 256, 32, 8, 8, 6, **flat),
        tile(256, 128, 64, 1, 8, 4, **swapped, tail=tile(64, 128, 64, 1, 4, 4, **swapped)),
        tile(256, 128, 64, 1, 8, 4, **swapped, tail=tile(64, 128, 64, 1, 4, 4, **flat)),
    ]
    if deeper_round:
        plan = [((3000, 3000, 3000), whole[1:3] + deeper), ((4096, 3000, 4096), whole[1:3])]
    else:
        plan = [
            ((4096, 3000, 4096), whole),
            ((4096, 4096, 3000), whole[:2]),
            ((4096, 4096, 4096), whole[:2]),
            ((3000, 3000, 3000), whole + splits),
            ((3000, 4096, 4096), whole[:2]),
        ]
    measure_plan(bench, "transp", plan)


def section_wide_k(bench):
    """The 4096^3 gap (0.93x): fewer, longer K steps, and the group sizes once more."""
    log("== wide_k: BK = 128 with two stages, against the shipped 4096-class candidates")
    tile = TileConfig
    square = [
        tile(128, 256, 64, 8, 8, 3),
        tile(128, 256, 64, 8, 8, 4),
        tile(128, 256, 64, 4, 8, 4),
        tile(128, 256, 64, 16, 8, 4),
        tile(128, 256, 128, 8, 8, 2),
        tile(256, 128, 128, 8, 8, 2),
        tile(128, 128, 128, 8, 4, 3),
        tile(128, 128, 128, 8, 8, 3),
    ]
    ragged = [
        tile(256, 128, 64, 8, 8, 4, flat=True, transposed=True),
        tile(256, 128, 128, 8, 8, 2, flat=True, transposed=True),
        tile(128, 256, 128, 8, 8, 2, flat=True),
    ]
    measure_plan(
        bench,
        "wide_k",
        [
            ((4096, 4096, 4096), square),
            ((8192, 8192, 8192), square[:5]),
            ((3000, 3000, 3000), ragged),
        ],
    )


def runtime_size_kernel(config):
    """A flat kernel like the tuned reference's, but with its 1-D sizes as run-time ints.

    Only the row lengths stay compile-time constants. The tuned reference's flat kernels
    make every size a constant; their TTGIR differs from the strided kernel's in
    little else, and at 4096x3008x4096 they run 12% slower (round 4).
    """
    import ninetoothed
    from ninetoothed import Tensor

    block_m, block_n = (
        (config.block_n, config.block_m) if config.transposed else (config.block_m, config.block_n)
    )
    arrange = functools.partial(
        arrangements.transposed_flat_arrangement
        if config.transposed
        else arrangements.flat_arrangement,
        block_size_m=block_m,
        block_size_n=block_n,
        block_size_k=config.block_k,
        group_size_m=config.group_size_m,
    )
    kernel = ninetoothed.make(
        arrange,
        ninetoothed_gemm.application,
        (Tensor(1), Tensor(1), Tensor(1)),
        num_warps=config.num_warps,
        num_stages=config.num_stages,
    )
    return kernels.flattening(kernel, config.transposed)


def section_runtime_size(bench):
    """Flat kernels with run-time 1-D sizes against the tuned reference's all-constant ones."""
    log("== runtime_size: the flat kernels' sizes as run-time ints, rows still constant")
    tile = TileConfig
    plan = [
        ((4096, 3008, 4096), [tile(128, 256, 64, 8, 8, 3, flat=True)]),
        (
            (4096, 3000, 4096),
            [
                tile(256, 128, 64, 8, 8, 4, flat=True, transposed=True),
                tile(128, 256, 64, 8, 8, 3, flat=True),
            ],
        ),
        (
            (3000, 3000, 3000),
            [
                tile(256, 128, 64, 8, 8, 4, flat=True, transposed=True),
                tile(128, 256, 64, 8, 8, 3, flat=True),
            ],
        ),
    ]
    for shape, configs in plan:
        for config in configs:
            for label, build in (
                ("constant sizes", kernels.tuned_kernel),
                ("run-time sizes", runtime_size_kernel),
            ):
                bench.measure(
                    "rtsize",
                    f"{config.name} ({label})",
                    *shape,
                    plain_call,
                    "flat",
                    build=functools.partial(build, config),
                )


def section_tma(bench):
    """TMA tile loads, in a NineToothed kernel and in a plain Triton persistent ceiling."""
    from benchmarks.lab import tma_kernels, triton_ceiling
    from solutions.tuned.persistent_tma import use_torch_scratch

    log(
        "== tma: tiles loaded through tensor descriptors (benchmarks/lab/tma_kernels.py, "
        "benchmarks/lab/triton_ceiling.py)"
    )
    use_torch_scratch()
    sms = bench.sms
    builds = [("reference autotuned", None)]
    builds += [
        (
            f"nt-tma {bm}x{bn}x{bk} g8 {w}w{s}s",
            functools.partial(tma_kernels.nt_tma, bm, bn, bk, w, s),
        )
        for bm, bn, bk, w, s in ((128, 256, 64, 8, 3), (128, 256, 64, 8, 4), (256, 128, 64, 8, 3))
    ]
    builds += [
        (
            f"persistent {bm}x{bn}x{bk} g8 {w}w{s}s{' ws' if ws else ''}",
            functools.partial(triton_ceiling.persistent_tma, bm, bn, bk, w, s, ws, sms),
        )
        for bm, bn, bk, w, s, ws in (
            (128, 256, 64, 8, 3, False),
            (128, 256, 64, 8, 3, True),
            (128, 128, 64, 4, 4, True),
        )
    ]
    measure_builds(
        bench,
        "tma",
        [
            (3000, 3000, 3000),
            (4096, 4096, 4096),
            (8192, 8192, 8192),
            (2048, 2048, 2048),
            (4096, 3000, 4096),
        ],
        builds,
    )


def section_persistent(bench):
    """One program per SM looping over C tiles, as a NineToothed arrangement."""
    from benchmarks.lab import persistent_arrangement

    log(
        "== persistent: P programs, tile j*P + p to program p (benchmarks/lab/persistent_arrangement.py)"
    )
    sms = bench.sms
    builds = [("reference autotuned", None)]
    builds += [
        (
            f"persistent 128x256x64 g8 P{sms} 8w{stages}s{' flattened' if flatten else ''}",
            functools.partial(
                persistent_arrangement.persistent_kernel, 128, 256, 64, 8, sms, 8, stages, flatten
            ),
        )
        for stages, flatten in ((3, False), (4, False), (3, True))
    ]
    measure_builds(
        bench,
        "persist",
        [(4096, 4096, 4096), (8192, 8192, 8192), (2048, 2048, 2048), (3008, 3008, 3008)],
        builds,
    )


PERSISTENT_TMA_SHAPES = [
    (4096, 4096, 4096),
    (8192, 8192, 8192),
    (6144, 1024, 4096),
    (2048, 2048, 2048),
    (3000, 3000, 3000),
    (4096, 3000, 4096),
]


def section_persistent_tma(bench):
    """Round 5's persistent TMA schedule in NineToothed, beside the plain-Triton ceiling."""
    from benchmarks.lab import triton_ceiling
    from solutions.tuned import persistent_tma

    log(
        "== persistent_tma: P programs walking tiles p, p + P, ... with TMA loads, in "
        "NineToothed (solutions/tuned/persistent_tma.py) and in plain Triton"
    )
    persistent_tma.use_torch_scratch()
    sms = bench.sms
    builds = [("reference autotuned", None)]
    # (block_m, block_n, block_k, warps, stages, flatten, warp_specialize), group 8, P = SMs.
    # 128x256x64 with 4 stages asks 256 KiB of shared memory, flattened or not (an H100
    # has 227 KiB a block): Triton refuses to build it, so it is not listed.
    builds += [
        (
            f"nt-ptma {bm}x{bn}x{bk} g8 P{sms} {w}w{s}s"
            f"{'' if flatten else ' unflattened'}{' ws' if ws else ''}",
            functools.partial(
                persistent_tma.nt_persistent_tma, bm, bn, bk, w, s, sms, 8, flatten, ws
            ),
        )
        for bm, bn, bk, w, s, flatten, ws in (
            (128, 256, 64, 8, 3, True, False),
            (128, 256, 64, 8, 3, False, False),
            (128, 256, 64, 8, 3, True, True),
            (128, 128, 64, 4, 4, True, False),
            (128, 128, 64, 4, 4, True, True),
            (128, 128, 64, 8, 3, True, False),
        )
    ]
    builds += [
        (
            f"persistent {bm}x{bn}x{bk} g8 {w}w{s}s{' ws' if ws else ''}",
            functools.partial(triton_ceiling.persistent_tma, bm, bn, bk, w, s, ws, sms),
        )
        for bm, bn, bk, w, s, ws in ((128, 256, 64, 8, 3, False), (128, 256, 64, 8, 3, True))
    ]
    measure_builds(bench, "ptma", PERSISTENT_TMA_SHAPES, builds)


STREAM_K_SHAPES = [
    (6144, 1024, 4096),
    (3000, 3000, 3000),
    (8192, 8192, 8192),
    (4096, 4096, 4096),
    (2048, 2048, 2048),
]


def section_stream_k(bench):
    """Round 9: Stream-K (the last wave's tiles shared by K) and split stores, in NineToothed
    (benchmarks/lab/stream_k.py) and in plain Triton, beside the persistent kernels."""
    from benchmarks.lab import triton_ceiling
    from benchmarks.lab import stream_k
    from solutions.tuned import persistent_tma

    log("== stream_k: whole waves tile by tile, the rest by ranges of K steps")
    persistent_tma.use_torch_scratch()
    sms = bench.sms
    builds = [("reference autotuned", None)]
    # (block_m, block_n, block_k, warps, stages, flag), group 8, P = SMs; the flag is
    # warp specialisation for the persistent kernels, (sk_waves, store_split) for Stream-K.
    for bm, bn, bk, w, s, ws in (
        (128, 256, 64, 8, 3, False),
        (128, 256, 64, 8, 3, True),
        (128, 128, 64, 4, 4, True),
    ):
        builds.append(
            (
                f"triton-ptma {bm}x{bn}x{bk} g8 {w}w{s}s{' ws' if ws else ''}",
                functools.partial(triton_ceiling.persistent_tma, bm, bn, bk, w, s, ws, sms),
            )
        )
    for bm, bn, bk, w, s, (sk, split) in (
        (128, 256, 64, 8, 3, (1, 1)),
        (128, 256, 64, 8, 3, (2, 1)),
        (128, 256, 64, 8, 4, (1, 2)),
    ):
        builds.append(
            (
                f"triton-sk{sk} {bm}x{bn}x{bk} g8 {w}w{s}s split{split}",
                functools.partial(triton_ceiling.stream_k, bm, bn, bk, w, s, sms, sk, split),
            )
        )
    for bm, bn, bk, w, s, (sk, split) in (
        (128, 256, 64, 8, 3, (1, 1)),
        (128, 256, 64, 8, 3, (2, 1)),
        (128, 256, 64, 8, 4, (1, 2)),
        (128, 256, 64, 8, 4, (0, 2)),
        (256, 128, 64, 8, 3, (1, 1)),
    ):
        builds.append(
            (
                f"nt-sk{sk} {bm}x{bn}x{bk} g8 {w}w{s}s split{split}",
                functools.partial(stream_k.nt_stream_k, bm, bn, bk, w, s, sms, 8, sk, split),
            )
        )
    measure_builds(bench, "sk", STREAM_K_SHAPES, builds)


def section_split_k(bench):
    """3000^3 as two whole waves plus the 184 rows left, those in split-K programs."""
    from benchmarks.lab import split_k

    log(
        "== split_k: whole waves, then the rows left with their K loops cut in chunks "
        "(benchmarks/lab/split_k.py)"
    )
    sms = bench.sms
    main = TileConfig(256, 128, 64, 8, 8, 4, flat=True, transposed=True)
    tails = {
        "128x256 chunks of 10 8w3s": (128, 256, 64, 10, 8, 3),
        "64x256 chunks of 16 8w3s": (64, 256, 64, 16, 8, 3),
    }
    rows = waves.whole_wave_rows(3000, 3000, main.block_m, main.block_n, sms)
    measure_builds(bench, "split_k", [(3000, 3000, 3000)], [("reference autotuned", None)])
    measure_builds(
        bench, "split_k", [(rows, 3000, 3000)], [(f"whole waves alone, {main.name}", built(main))]
    )
    measure_builds(
        bench,
        "split_k",
        [(3000 - rows, 3000, 3000)],
        [
            (f"rows left alone, split-K {name}", functools.partial(split_k.split_k, *spec))
            for name, spec in tails.items()
        ],
    )
    measure_builds(
        bench,
        "split_k",
        [(3000, 3000, 3000)],
        [
            (
                f"{main.name} + split-K {name}",
                lambda spec=spec: kernels.wave_split(
                    kernels.tuned_kernel(main), split_k.split_k(*spec), main.block_m, main.block_n
                ),
            )
            for name, spec in tails.items()
        ],
    )


WAVE_TILE_SHAPES = [
    (6144, 1024, 4096),
    (4096, 4096, 4096),
    (8192, 8192, 8192),
    (2048, 2048, 2048),
    (4096, 2048, 4096),
    (1024, 6144, 4096),
]


def section_wave_tiles(bench):
    """Tiles chosen by the wave: where 128x256 tiles leave the last wave of SMs partly
    empty (6144x1024x4096: 192 tiles on 132 SMs), do 128x128, 64x256 or 256x128 fill it?"""
    log("== wave_tiles: one launch, the tile size picked by how full its last wave is")
    sms = bench.sms
    specs = [
        (128, 256, 64, 8, 8, 3),
        (128, 128, 64, 8, 8, 3),
        (128, 128, 64, 8, 8, 4),
        (128, 128, 64, 8, 4, 4),
        (128, 128, 64, 8, 4, 3),
        (128, 128, 64, 16, 8, 4),
        (64, 256, 64, 8, 8, 3),
        (64, 256, 64, 8, 8, 4),
        (64, 256, 64, 8, 4, 4),
        (256, 128, 64, 8, 8, 3),
        (128, 128, 128, 8, 8, 3),
    ]
    builds = [("reference autotuned", None)]
    builds += [(TileConfig(*spec).name, built(TileConfig(*spec))) for spec in specs]
    for shape in WAVE_TILE_SHAPES:
        for bm, bn in ((128, 256), (128, 128), (64, 256)):
            log(
                f"wave_tiles {shape}: {bm}x{bn} last wave "
                f"{waves.last_wave_share(shape[0], shape[1], bm, bn, sms):.2f} full"
            )
        measure_builds(bench, "wavetile", [shape], builds)


def section_ladder(bench):
    """3000^3 beside its neighbours 2992, 3008 (aligned, one tile row more or less) and 3072,
    and the ragged 3000 on one side at a time: where the cliff is.

    Round 6 also ran both operands through zero-padded aligned copies here (a pad-k
    configuration, at 232ce34); it ran at 0.50x, the copies costing more than the
    cliff, and was dropped.
    """
    log("== ladder: 3000^3 and its aligned neighbours")
    tile = TileConfig
    measure_builds(
        bench,
        "ladder",
        [(3000, 3000, 3000), (3000, 3000, 4096), (4096, 4096, 3000)],
        [("reference autotuned", None)],
    )
    measure_builds(
        bench,
        "ladder",
        [(2992, 2992, 2992), (3008, 3008, 3008), (3072, 3072, 3072)],
        [
            ("reference autotuned", None),
            *(
                (c.name, built(c))
                for c in (tile(128, 256, 64, 8, 8, 3), tile(128, 128, 64, 8, 8, 3))
            ),
        ],
    )


def measure_builds(bench, section, shapes, builds):
    """Each (variant, build) at each shape; a build of None is the autotuned reference."""
    for shape in shapes:
        for variant, build in builds:
            if build is None:
                bench.measure(section, variant, *shape, autotuned_call)
            else:
                bench.measure(section, variant, *shape, plain_call, build=build)


def autotuned_call(_, a, b, out):
    """The tuned reference's nt_gemm: fills out once (the check), then times plain calls."""
    out.copy_(tuned.nt_gemm(a, b))
    log(f"reference chose {tuned.chosen_config(a.shape[0], b.shape[1], a.shape[1])['name']}")
    return lambda: tuned.nt_gemm(a, b)


# -- the tuned reference, as a benchmark sees it -----------------------------------------------
def sweep_child(out_path):
    def per_call_us(fn, calls=300, repeats=7):
        fn()
        torch.cuda.synchronize()
        samples = []
        for _ in range(repeats):
            started = time.perf_counter()
            for _ in range(calls):
                fn()
            torch.cuda.synchronize()
            samples.append((time.perf_counter() - started) / calls * 1e6)
        return sorted(samples)[repeats // 2]

    results = {"shapes": [], "overhead": []}
    shapes = [(s, s, s) for s in SWEEP] + SWEEP_EXTRA
    for m, n, k in shapes:
        a, b = harness.make_operands(m, n, k, "cuda")
        out, first_call_s = timing.wall_clock(lambda: tuned.nt_gemm(a, b), torch.cuda.synchronize)
        ref = checks.reference(a, b)
        # the same plan once more on a NaN-poisoned output: every element written?
        run, _ = tuned.PLANNER.plan(a, b)
        poisoned = torch.full((m, n), float("nan"), dtype=torch.float16, device="cuda")
        run(a, b, poisoned)
        ok = not any(
            bool(checks.outside_tolerance(result, ref).any()) for result in (out, poisoned)
        )
        ours, theirs = timing.bench_pair(
            lambda: tuned.nt_gemm(a, b), lambda: torch.mm(a, b), rounds=5
        )
        ms, torch_ms = ours.median_ms, theirs.median_ms
        fixed_ms = timing.bench(lambda: ninetoothed_gemm.nt_gemm(a, b)).median_ms
        flop = 2 * m * n * k
        entry = dict(
            m=m,
            n=n,
            k=k,
            first_call_s=round(first_call_s, 3),
            correct=ok,
            ms=ms,
            tflops=flop / ms / 1e9,
            torch_ms=torch_ms,
            torch_tflops=flop / torch_ms / 1e9,
            ratio=torch_ms / ms,
            fixed_ms=fixed_ms,
            fixed_ratio=torch_ms / fixed_ms,
            config=tuned.chosen_config(m, n, k),
        )
        results["shapes"].append(entry)
        print(
            f"sweep {m}x{n}x{k} first={first_call_s:.2f}s ok={ok} TF={entry['tflops']:.1f} "
            f"torch={entry['torch_tflops']:.1f} ratio={entry['ratio']:.3f} "
            f"fixed_ratio={entry['fixed_ratio']:.3f} cfg={entry['config']['name']} "
            f"src={entry['config']['source']} tuning={entry['config']['tuning_s']}s",
            flush=True,
        )
        del a, b, out, ref, poisoned
    results["sweep_first_call_s"] = sum(
        e["first_call_s"]
        for e in results["shapes"]
        if e["m"] == e["n"] == e["k"] and e["m"] in SWEEP
    )
    print(
        f"sweep 8..4096 first calls (tuning + compiles): {results['sweep_first_call_s']:.1f} s",
        flush=True,
    )
    for size in [8, 16, 32, 64, 128, 256, 512]:
        a = torch.randn((size, size), device="cuda", dtype=torch.float16)
        b = torch.randn((size, size), device="cuda", dtype=torch.float16)
        tuned_us, fixed_us = map(
            statistics.median,
            timing.alternating(
                lambda: tuned.nt_gemm(a, b),
                lambda: ninetoothed_gemm.nt_gemm(a, b),
                lambda fn: per_call_us(fn, repeats=1),
                rounds=9,
            ),
        )
        entry = dict(
            n=size,
            fixed_us=fixed_us,
            tuned_us=tuned_us,
            torch_us=per_call_us(lambda: torch.mm(a, b)),
        )
        entry["tuned_over_fixed"] = entry["tuned_us"] / entry["fixed_us"]
        results["overhead"].append(entry)
        print(
            f"overhead n={size}: fixed {entry['fixed_us']:.1f} us/call, tuned "
            f"{tuned_us:.1f} us/call ({entry['tuned_over_fixed']:.3f}x), torch.mm "
            f"{entry['torch_us']:.1f}",
            flush=True,
        )
    pathlib.Path(out_path).write_text(json.dumps(results, indent=1, default=str))


def section_sweep(out_dir):
    log("== sweep: the tuned reference, cold Triton cache, then warm")
    scratch = pathlib.Path(tempfile.mkdtemp(prefix="ntgemm-sweep-"))
    env = dict(
        os.environ,
        TRITON_CACHE_DIR=str(scratch / "triton"),
        NTGEMM_TUNING_CACHE=str(scratch / "tuning.json"),
        PYTHONUNBUFFERED="1",
    )
    for label, limit in (("cold", 200), ("warm", 110)):
        started = time.perf_counter()
        try:
            done = subprocess.run(
                [sys.executable, __file__, "--sweep-child", str(out_dir / f"sweep_{label}.json")],
                env=env,
                capture_output=True,
                text=True,
                timeout=limit,
            )
        except subprocess.TimeoutExpired as expired:
            log(f"[{label}] timed out after {limit} s; output so far:")
            for line in (
                (expired.stdout or b"").decode() + (expired.stderr or b"").decode()
            ).splitlines():
                log(f"[{label}] {line}")
            continue
        for line in (done.stdout + done.stderr).splitlines():
            log(f"[{label}] {line}")
        log(f"[{label}] whole process: {time.perf_counter() - started:.1f} s, rc={done.returncode}")


def print_table(bench):
    log("\n== summary: TFLOPS (ratio to torch.mm, same run); x = wrong output")
    keys = {}
    for row in bench.rows:
        if row.get("ms") is None or row["section"] not in (
            "main",
            "ragged",
            "waves",
            "padded",
            "limits",
            "transp",
            "wide_k",
            "rtsize",
            "tma",
            "persist",
            "split_k",
            "wavetile",
            "ladder",
            "ptma",
            "sk",
        ):
            continue
        shape = f"{row['m']}x{row['n']}x{row['k']}" + (
            "" if row["operands"] == "contiguous" else f" {row['operands']}"
        )
        keys.setdefault(row["variant"], {})[shape] = (
            f"{row['tflops']}({row['ratio']}){'' if row['correct'] else 'x'}"
        )
    shapes = sorted({s for v in keys.values() for s in v})
    for variant, cells in keys.items():
        log(f"{variant:24s} " + " | ".join(f"{s}: {cells[s]}" for s in shapes if s in cells))


def main():
    global LOG
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="explore-out")
    parser.add_argument("--budget-s", type=float, default=300)
    parser.add_argument(
        "--sections",
        default="main,sweep,ragged",
        help="which sections to run, in this order: main, sweep, ragged, waves, "
        "padded, limits, transposed, deeper, wide_k, runtime_size, tma, persistent, split_k, "
        "wave_tiles, ladder, persistent_tma, stream_k",
    )
    parser.add_argument("--sweep-child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.sweep_child:
        sweep_child(args.sweep_child)
        return
    out_dir = pathlib.Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    LOG = open(out_dir / "explore.log", "a")
    sections = args.sections.split(",")
    import triton

    log(
        f"GPU {torch.cuda.get_device_name()}, torch {torch.__version__} (CUDA {torch.version.cuda}), "
        f"triton {triton.__version__}"
    )
    with contextlib.suppress(Exception):
        log(
            subprocess.run(
                [
                    "nvidia-smi",
                    "--query-gpu=driver_version,clocks.sm,power.draw,temperature.gpu",
                    "--format=csv",
                ],
                capture_output=True,
                text=True,
            ).stdout.strip()
        )
    bench = Bench(out_dir, args.budget_s)
    order = {
        "sweep": lambda: section_sweep(out_dir),
        "ragged": lambda: section_ragged(bench),
        "waves": lambda: section_waves(bench),
        "padded": lambda: section_padded(bench),
        "limits": lambda: section_limits(bench),
        "transposed": lambda: section_transposed(bench),
        "deeper": lambda: section_transposed(bench, deeper_round=True),
        "wide_k": lambda: section_wide_k(bench),
        "runtime_size": lambda: section_runtime_size(bench),
        "tma": lambda: section_tma(bench),
        "persistent": lambda: section_persistent(bench),
        "persistent_tma": lambda: section_persistent_tma(bench),
        "split_k": lambda: section_split_k(bench),
        "stream_k": lambda: section_stream_k(bench),
        "wave_tiles": lambda: section_wave_tiles(bench),
        "ladder": lambda: section_ladder(bench),
        "main": lambda: section_main(bench),
    }
    for name in sections:
        try:
            order[name]()
        except BudgetSpent:
            log(f"budget spent: {name} stops")
    print_table(bench)


if __name__ == "__main__":
    main()
