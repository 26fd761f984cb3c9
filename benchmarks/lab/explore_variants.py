"""Explore tile configurations of the reference GEMM on one GPU, side by side with torch.mm.

One script for one lease: it builds every variant from the reference file itself
(solutions/ninetoothed_gemm.py: its fixed 64x64x64 kernel and its
``grouped_arrangement`` with explicit block sizes, warps and stages), checks each
on NaN-poisoned outputs against a float32 torch.mm (the guide's tolerance), and
times it with ``triton.testing.do_bench`` (median) next to ``torch.mm`` on the
same inputs in the same run. Then it runs the reference's autotune mode the way
a benchmark would: a square sweep from a cold Triton cache (tuning time, chosen
configuration, speed, per-call overhead against the fixed path at n <= 512),
and again with the tuning choices it persisted.

    python benchmarks/lab/explore_variants.py --out OUT_DIR [--budget-s 300] [--sections main,sweep,ragged]

Round 4's sections ask where 3000^3 loses: ``waves`` (two launches, whole waves
then the leftover rows), ``padded`` (rhs copied into aligned rows), ``limits``
(the aligned neighbours of the ragged shapes), ``transposed`` and ``deeper``
(C^T = B^T A^T), ``wide_k`` (BK = 128), and ``runtime_size`` (flat kernels whose
1-D sizes are run-time ints). Round 5's ask what schedules beyond NineToothed's
pointer loads would give: ``tma`` (tiles loaded through TMA descriptors, in
NineToothed and in a plain Triton persistent kernel), ``persistent`` (one
program per SM, as a NineToothed arrangement) and ``split_k`` (a wave split whose
leftover rows cut their K loops in chunks). Each is one device call.

Writes OUT_DIR/explore.csv (one row per measurement), OUT_DIR/explore.log and
OUT_DIR/sweep_{cold,warm}.json, and prints a short table last. The results and
what they mean are in docs/perf-notes.md.
"""

import argparse
import contextlib
import csv
import dataclasses
import functools
import importlib.util
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks import timing  # noqa: E402  (run as a script: the kit's root is not on the path)

SOLUTION = ROOT / "solutions" / "ninetoothed_gemm.py"
ATOL = RTOL = 0.025  # the guide's tolerance, as in grader/core/checks.py

FIELDS = ["section", "variant", "m", "n", "k", "operands", "ms", "tflops", "torch_ms",
          "torch_tflops", "ratio", "correct", "bad", "max_abs_err", "build_s", "note"]

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
SWEEP_EXTRA = [(8192, 8192, 8192), (3000, 3000, 3000), (4096, 4096, 3000), (4096, 3000, 4096),
               (3000, 4096, 4096), (4096, 4096, 4095), (1000, 1000, 1000)]


def log(*parts):
    line = " ".join(str(p) for p in parts)
    print(line, flush=True)
    if LOG is not None:
        LOG.write(line + "\n")
        LOG.flush()


LOG = None


def load_solution(autotune, name):
    previous = os.environ.pop("NINETOOTHED_AUTOTUNE", None)
    if autotune:
        os.environ["NINETOOTHED_AUTOTUNE"] = "1"
    try:
        spec = importlib.util.spec_from_file_location(name, SOLUTION)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        return module
    finally:
        os.environ.pop("NINETOOTHED_AUTOTUNE", None)
        if previous is not None:
            os.environ["NINETOOTHED_AUTOTUNE"] = previous


class Bench:
    def __init__(self, out_dir, budget_s):
        import torch
        import triton.testing

        self.torch = torch
        self.do_bench = triton.testing.do_bench
        self.deadline = time.monotonic() + budget_s
        self.rows = []
        self.csv_path = out_dir / "explore.csv"
        self.fixed = load_solution(False, "ntgemm_fixed")
        self.tuned = load_solution(True, "ntgemm_tuned")
        self.inputs = {}
        self.refs = {}

    @property
    def sms(self):
        """The GPU's SM count, as the reference's wave split reads it."""
        return self.tuned._sm_count(self.torch.device("cuda"))

    def time_left(self):
        return self.deadline - time.monotonic()

    def operands(self, m, n, k):
        torch = self.torch
        if (m, n, k) not in self.inputs:
            gen = torch.Generator(device="cuda").manual_seed(m * 1_000_003 + n * 1009 + k)
            a = torch.randn((m, k), device="cuda", dtype=torch.float16, generator=gen)
            b = torch.randn((k, n), device="cuda", dtype=torch.float16, generator=gen)
            self.inputs = {(m, n, k): (a, b)}  # keep one shape's operands alive
            self.refs = {}
        return self.inputs[(m, n, k)]

    def reference(self, a, b):
        torch = self.torch
        key = (a.shape, b.shape)
        if key not in self.refs:
            previous = torch.backends.cuda.matmul.allow_tf32
            torch.backends.cuda.matmul.allow_tf32 = False
            self.refs[key] = a.float() @ b.float()
            torch.backends.cuda.matmul.allow_tf32 = previous
        return self.refs[key]

    def check(self, out, ref):
        error = (out.float() - ref).abs()
        bad = int((~(error <= ATOL + RTOL * ref.abs())).sum())
        finite = error.nan_to_num(nan=float("inf"))
        return bad == 0, bad, float(finite.max())

    def bench(self, fn):
        return self.do_bench(fn, warmup=10, rep=50, return_mode="median")

    def measure(self, section, variant, m, n, k, make_call, operands="contiguous", note="",
                build=None):
        """make_call(a, b, out) -> a no-argument function that fills out."""
        torch = self.torch
        row = dict(section=section, variant=variant, m=m, n=n, k=k, operands=operands, note=note)
        try:
            started = time.perf_counter()
            kernel = build() if build is not None else None
            a, b = self.operands(m, n, k)
            out = torch.full((m, n), float("nan"), dtype=torch.float16, device="cuda")
            call = make_call(kernel, a, b, out)
            call()
            torch.cuda.synchronize()
            row["build_s"] = round(time.perf_counter() - started, 2)
            row["correct"], row["bad"], row["max_abs_err"] = self.check(out, self.reference(a, b))
            ms, torch_ms = paired(self.bench, call, lambda: torch.mm(a, b))
            flop = 2 * m * n * k
            row.update(ms=round(ms, 5), tflops=round(flop / ms / 1e9, 1),
                       torch_ms=round(torch_ms, 5), torch_tflops=round(flop / torch_ms / 1e9, 1),
                       ratio=round(torch_ms / ms, 3))
        except Exception as error:  # noqa: BLE001 - a variant that fails is a result too
            row["note"] = (note + " " if note else "") + f"error: {type(error).__name__}: {error}"[:300]
        self.rows.append(row)
        with open(self.csv_path, "w", newline="") as file:
            writer = csv.DictWriter(file, FIELDS)
            writer.writeheader()
            writer.writerows(self.rows)
        log(f"{section:7s} {variant:24s} {m}x{n}x{k} {operands:14s} ms={row.get('ms')} "
            f"TF={row.get('tflops')} torch={row.get('torch_tflops')} ratio={row.get('ratio')} "
            f"ok={row.get('correct')} build={row.get('build_s')} {row.get('note', '')}")
        return row

    # -- kernels -----------------------------------------------------------------------------
    def variant_kernel(self, spec, flat=False):
        _, bm, bn, bk, group, warps, stages = spec
        config = self.tuned.TileConfig(bm, bn, bk, group, warps, stages, flat=flat)
        return lambda: self.tuned._tuned_kernel(config)


def paired(bench, ours, theirs, rounds=5):
    """Medians of ``rounds`` timings of each, the order alternating (benchmarks.timing).

    A GPU at its power limit runs whatever comes first in a cool state faster:
    timing one after the other, the first can gain 10% on the second.
    """
    mine, others = timing.alternating(ours, theirs, bench, rounds)
    return statistics.median(mine), statistics.median(others)


def plain_call(kernel, a, b, out):
    """Any launcher here, the reference's configured ones included, takes 2-D operands."""
    return lambda: kernel(a, b, out)


def section_main(bench):
    log("== main: square shapes, every variant")
    for m, n, k in MAIN_SHAPES:
        if bench.time_left() < 0:
            log("budget spent: main stops"); return
        bench.measure("main", "default 64x64x64 8w7s", m, n, k, plain_call,
                      build=bench.fixed._kernel)
        for spec in VARIANTS:
            if m == 1024 and spec[0].startswith("g16"):
                continue
            bench.measure("main", spec[0], m, n, k, plain_call, build=bench.variant_kernel(spec))


RAGGED_SHAPES = [(3000, 3000, 3000), (4096, 4096, 3000), (4096, 3000, 4096), (4096, 4096, 4095),
                 (3001, 3001, 3001), (1000, 1000, 1000)]


def section_ragged(bench):
    log("== ragged: K or N not a multiple of 16, strided kernels against flat ones")
    by_name = {spec[0]: spec for spec in VARIANTS}
    for shape in RAGGED_SHAPES:
        large = shape[0] * shape[1] * shape[2] >= 1536**3
        names = (["g128x256x64 8w3s", "g128x128x64 8w3s", "g128x256x64 8w4s"] if large
                 else ["g64x128x64 4w4s", "g128x128x64 4w4s"])
        for name in names:
            if bench.time_left() < 0:
                log("budget spent: ragged stops")
                return
            bench.measure("ragged", "flat " + name, *shape, plain_call, "flat",
                          build=bench.variant_kernel(by_name[name], flat=True))
        bench.measure("ragged", names[0], *shape, plain_call, "strided",
                      build=bench.variant_kernel(by_name[names[0]]))


WAVE_MAINS = [(128, 256, 64, 1, 8, 3), (128, 256, 64, 1, 8, 4), (128, 256, 64, 2, 8, 3),
              (128, 256, 64, 11, 8, 3), (256, 128, 64, 1, 8, 3)]
WAVE_TAILS = [(64, 64, 64, 1, 4, 3), (64, 64, 64, 1, 4, 4), (64, 128, 64, 1, 4, 4),
              (64, 128, 64, 1, 4, 3), (128, 64, 64, 1, 4, 4), (64, 256, 64, 1, 8, 3),
              (128, 128, 64, 1, 8, 3), (128, 128, 64, 1, 4, 4)]
WAVE_SHAPES = [(3000, 3000, 3000), (2500, 2500, 2500), (2560, 2560, 2560)]


def section_waves(bench):
    """Wave splits: whole waves of large tiles, then the leftover rows in small tiles."""
    log("== waves: two launches per product, the second on the rows past the last whole wave")
    tuned = bench.tuned
    sms = bench.sms

    def config(spec, flat, tail=None):
        return tuned.TileConfig(*spec, flat=flat, tail=tail)

    for m, n, k in WAVE_SHAPES:
        flat = bool(k % 16 or n % 16)
        kind = "flat" if flat else "strided"
        baseline = config((128, 256, 64, 8, 8, 3), flat)
        bench.measure("waves", "whole " + baseline.name, m, n, k, plain_call, kind,
                      build=lambda c=baseline: tuned._tuned_kernel(c))
        split = tuned._whole_wave_rows(m, n, 128, 256, sms)
        log(f"waves {m}x{n}x{k}: main rows {split}, tail rows {m - split}")
        mains = WAVE_MAINS if (m, n, k) == WAVE_SHAPES[0] else WAVE_MAINS[:2]
        tails = WAVE_TAILS if (m, n, k) == WAVE_SHAPES[0] else WAVE_TAILS[:4]
        for main in mains:
            if bench.time_left() < 0:
                log("budget spent: waves stops")
                return
            main_rows = tuned._whole_wave_rows(m, n, main[0], main[1], sms)
            bench.measure("waves", "main " + config(main, flat).name, main_rows, n, k, plain_call,
                          kind, build=lambda c=config(main, flat): tuned._tuned_kernel(c))
            for tail in tails:
                combined = config(main, flat, config(tail, flat))
                bench.measure("waves", combined.name, m, n, k, plain_call, kind,
                              build=lambda c=combined: tuned._tuned_kernel(c))
        for tail in tails:
            bench.measure("waves", "tail " + config(tail, flat).name, m - split, n, k, plain_call,
                          kind, build=lambda c=config(tail, flat): tuned._tuned_kernel(c))
        concurrent(bench, m, n, k, config(WAVE_MAINS[0], flat), config(WAVE_TAILS[2], flat), sms)


def concurrent(bench, m, n, k, main_config, tail_config, sms):
    """The two launches on two streams, either one first: does the tail fill the last wave's gaps?"""
    torch, tuned = bench.torch, bench.tuned
    main, tail = tuned._tuned_kernel(main_config), tuned._tuned_kernel(tail_config)
    split = tuned._whole_wave_rows(m, n, main_config.block_m, main_config.block_n, sms)
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
        bench.measure("waves", f"2 streams, {order}: {main_config.name} + {tail_config.name}",
                      m, n, k, make(tail_first), "flat" if main_config.flat else "strided")


PADDED_SHAPES = [(4096, 3000, 4096), (3000, 3000, 3000)]


def section_padded(bench):
    """A ragged N: is the cliff in the loads of rhs rows 3000 elements apart?

    The flat kernel runs once on rhs as given and once on a copy whose rows are
    padded to a multiple of 16 (the kernel alone, then with the copy), and the
    copy alone is timed two ways.
    """
    log("== padded: flat kernels on rhs as given against a padded copy of rhs")
    torch, tuned = bench.torch, bench.tuned
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
                wide[:, :b.shape[1]].copy_(b)
                wide[:, b.shape[1]:].zero_()

            call = by_pad if how == "pad" else by_copy

            def fill_too():  # measure() checks out: give it the product once
                call()
                out.copy_(a @ b)
            fill_too()
            return call
        return build_call

    tile = tuned.TileConfig
    for m, n, k in PADDED_SHAPES:
        if bench.time_left() < 0:
            log("budget spent: padded stops")
            return
        flat = tile(128, 256, 64, 8, 8, 3, flat=True)
        narrow = tile(256, 128, 64, 4, 8, 3, flat=True)
        for config in (flat, narrow):
            bench.measure("padded", config.name, m, n, k, plain_call, "as given",
                          build=lambda c=config: tuned._tuned_kernel(c))
            bench.measure("padded", config.name + " (kernel only)", m, n, k, padded_call,
                          "rhs padded", build=lambda c=config: tuned._tuned_kernel(c))
            with_copy = dataclasses.replace(config, pad_n=True)
            bench.measure("padded", with_copy.name, m, n, k, plain_call, "copy inside",
                          build=lambda c=with_copy: tuned._tuned_kernel(c))
        for how in ("pad", "copy"):
            bench.measure("padded", f"rhs copy alone ({how})", m, n, k, copy_call(how), "copy")
        if (m, n, k) != (3000, 3000, 3000):
            continue
        for tail in ((64, 128, 64, 1, 4, 4), (64, 128, 64, 1, 4, 3), (128, 64, 64, 1, 4, 4)):
            split = tile(128, 256, 64, 1, 8, 3, flat=True, tail=tile(*tail, flat=True))
            bench.measure("padded", split.name + " (kernel only)", m, n, k, padded_call,
                          "rhs padded", build=lambda c=split: tuned._tuned_kernel(c))
            split = dataclasses.replace(split, pad_n=True)
            bench.measure("padded", split.name, m, n, k, plain_call, "copy inside",
                          build=lambda c=split: tuned._tuned_kernel(c))


def measure_plan(bench, section, plan):
    """Measure every configuration of a [(shape, [TileConfig, ...]), ...] plan through the
    reference's own launchers, until the time budget runs out."""
    for shape, configs in plan:
        for config in configs:
            if bench.time_left() < 0:
                log(f"budget spent: {section} stops")
                return
            bench.measure(section, config.name, *shape, plain_call,
                          "flat" if config.flat else "strided",
                          build=lambda c=config: bench.tuned._tuned_kernel(c))


def section_limits(bench):
    """What 3000^3 could reach: the same tiles on aligned neighbours of the ragged shapes.

    Flat against strided kernels where both are aligned (what do the flat kernels'
    extra masks cost?), 3008 against 3000 (what do rows 6000 bytes apart cost?),
    and the wave split on the aligned 3000x3008x3008 (the ceiling of a padded copy
    whose copying were free).
    """
    log("== limits: the ragged shapes' aligned neighbours")
    tile = bench.tuned.TileConfig
    big = (128, 256, 64, 8, 8, 3)
    split_main = (128, 256, 64, 1, 8, 3)
    tail = (64, 128, 64, 1, 4, 4)
    plan = [
        ((4096, 4096, 4096), [tile(*big), tile(*big, flat=True)]),
        ((4096, 3008, 4096), [tile(*big), tile(*big, flat=True)]),
        ((3008, 3008, 3008), [tile(*big), tile(*big, flat=True),
                              tile(*split_main, tail=tile(*tail))]),
        ((3000, 3008, 3008), [tile(*big), tile(*split_main, tail=tile(*tail)),
                              tile(*split_main, tail=tile(64, 128, 64, 1, 4, 3))]),
        ((3000, 3000, 3000), [tile(*big, flat=True),
                              tile(*split_main, flat=True, tail=tile(*tail, flat=True))]),
    ]
    measure_plan(bench, "limits", plan)


def section_transposed(bench, deeper_round=False):
    """Swap the operands' roles (C^T = B^T A^T): does a ragged N then cost what a ragged K does?

    ``deeper_round`` (section "deeper", run after the first) adds longer pipelines.
    """
    log("== transposed: flat kernels computing C^T = B^T A^T")
    tile = bench.tuned.TileConfig
    flat = dict(flat=True)
    swapped = dict(flat=True, transposed=True)
    # Tiles are named as tiles of C: flat-t 256x128 computes C^T in 128x256 tiles.
    whole = [tile(128, 256, 64, 8, 8, 3, **flat), tile(256, 128, 64, 8, 8, 3, **swapped),
             tile(256, 128, 64, 8, 8, 4, **swapped), tile(128, 256, 64, 4, 8, 3, **swapped)]
    splits = [tile(256, 128, 64, 1, 8, 3, **swapped, tail=tile(64, 128, 64, 1, 4, 4, **flat)),
              tile(256, 128, 64, 1, 8, 3, **swapped, tail=tile(64, 128, 64, 1, 4, 4, **swapped)),
              tile(256, 128, 64, 1, 8, 3, **swapped, tail=tile(64, 128, 64, 1, 4, 3, **flat)),
              tile(128, 256, 64, 1, 8, 3, **flat, tail=tile(64, 128, 64, 1, 4, 4, **flat))]
    deeper = [tile(256, 128, 64, 4, 8, 4, **swapped), tile(256, 128, 32, 8, 8, 6, **swapped),
              tile(256, 128, 32, 8, 8, 8, **swapped), tile(128, 256, 32, 8, 8, 6, **flat),
              tile(256, 128, 64, 1, 8, 4, **swapped, tail=tile(64, 128, 64, 1, 4, 4, **swapped)),
              tile(256, 128, 64, 1, 8, 4, **swapped, tail=tile(64, 128, 64, 1, 4, 4, **flat))]
    if deeper_round:
        plan = [((3000, 3000, 3000), whole[1:3] + deeper), ((4096, 3000, 4096), whole[1:3])]
    else:
        plan = [((4096, 3000, 4096), whole), ((4096, 4096, 3000), whole[:2]),
                ((4096, 4096, 4096), whole[:2]), ((3000, 3000, 3000), whole + splits),
                ((3000, 4096, 4096), whole[:2])]
    measure_plan(bench, "transp", plan)


def section_wide_k(bench):
    """The 4096^3 gap (0.93x): fewer, longer K steps, and the group sizes once more."""
    log("== wide_k: BK = 128 with two stages, against the shipped 4096-class candidates")
    tile = bench.tuned.TileConfig
    square = [tile(128, 256, 64, 8, 8, 3), tile(128, 256, 64, 8, 8, 4), tile(128, 256, 64, 4, 8, 4),
              tile(128, 256, 64, 16, 8, 4), tile(128, 256, 128, 8, 8, 2),
              tile(256, 128, 128, 8, 8, 2), tile(128, 128, 128, 8, 4, 3),
              tile(128, 128, 128, 8, 8, 3)]
    ragged = [tile(256, 128, 64, 8, 8, 4, flat=True, transposed=True),
              tile(256, 128, 128, 8, 8, 2, flat=True, transposed=True),
              tile(128, 256, 128, 8, 8, 2, flat=True)]
    measure_plan(bench, "wide_k", [((4096, 4096, 4096), square), ((8192, 8192, 8192), square[:5]),
                                   ((3000, 3000, 3000), ragged)])


def runtime_size_kernel(tuned, config):
    """A flat kernel like the reference's, but with its 1-D sizes as run-time ints.

    Only the row lengths stay compile-time constants. The reference's flat kernels
    make every size a constant; their TTGIR differs from the strided kernel's in
    little else, and at 4096x3008x4096 they run 12% slower (round 4).
    """
    import ninetoothed
    from ninetoothed import Tensor

    block_m, block_n = ((config.block_n, config.block_m) if config.transposed
                        else (config.block_m, config.block_n))
    arrange = functools.partial(
        tuned.transposed_flat_arrangement if config.transposed else tuned.flat_arrangement,
        block_size_m=block_m, block_size_n=block_n, block_size_k=config.block_k,
        group_size_m=config.group_size_m)
    kernel = ninetoothed.make(arrange, tuned.application, (Tensor(1), Tensor(1), Tensor(1)),
                              num_warps=config.num_warps, num_stages=config.num_stages)
    return tuned._flattening(kernel, config.transposed)


def section_runtime_size(bench):
    """Flat kernels with run-time 1-D sizes against the reference's all-constant ones."""
    log("== runtime_size: the flat kernels' sizes as run-time ints, rows still constant")
    tuned, tile = bench.tuned, bench.tuned.TileConfig
    plan = [((4096, 3008, 4096), [tile(128, 256, 64, 8, 8, 3, flat=True)]),
            ((4096, 3000, 4096), [tile(256, 128, 64, 8, 8, 4, flat=True, transposed=True),
                                  tile(128, 256, 64, 8, 8, 3, flat=True)]),
            ((3000, 3000, 3000), [tile(256, 128, 64, 8, 8, 4, flat=True, transposed=True),
                                  tile(128, 256, 64, 8, 8, 3, flat=True)])]
    for shape, configs in plan:
        for config in configs:
            if bench.time_left() < 0:
                log("budget spent: runtime_size stops")
                return
            for label, build in (("constant sizes", tuned._tuned_kernel),
                                 ("run-time sizes", functools.partial(runtime_size_kernel, tuned))):
                bench.measure("rtsize", f"{config.name} ({label})", *shape, plain_call, "flat",
                              build=lambda c=config, b=build: b(c))


def section_tma(bench):
    """TMA tile loads, in a NineToothed kernel and in a plain Triton persistent ceiling."""
    from benchmarks.lab import tma_kernels, triton_ceiling

    log("== tma: tiles loaded through tensor descriptors (benchmarks/lab/tma_kernels.py, "
        "benchmarks/lab/triton_ceiling.py)")
    tma_kernels.use_torch_scratch()
    sms = bench.sms
    builds = [("reference autotuned", None)]
    builds += [(f"nt-tma {bm}x{bn}x{bk} g8 {w}w{s}s",
                functools.partial(tma_kernels.nt_tma, bm, bn, bk, w, s))
               for bm, bn, bk, w, s in ((128, 256, 64, 8, 3), (128, 256, 64, 8, 4),
                                        (256, 128, 64, 8, 3))]
    builds += [(f"persistent {bm}x{bn}x{bk} g8 {w}w{s}s{' ws' if ws else ''}",
                functools.partial(triton_ceiling.persistent_tma, bm, bn, bk, w, s, ws, sms))
               for bm, bn, bk, w, s, ws in ((128, 256, 64, 8, 3, False),
                                            (128, 256, 64, 8, 3, True),
                                            (128, 128, 64, 4, 4, True))]
    measure_builds(bench, "tma", [(3000, 3000, 3000), (4096, 4096, 4096), (8192, 8192, 8192),
                                  (2048, 2048, 2048), (4096, 3000, 4096)], builds)


def section_persistent(bench):
    """One program per SM looping over C tiles, as a NineToothed arrangement."""
    from benchmarks.lab import persistent_arrangement

    log("== persistent: P programs, tile j*P + p to program p (benchmarks/lab/persistent_arrangement.py)")
    sms = bench.sms
    builds = [("reference autotuned", None)]
    builds += [(f"persistent 128x256x64 g8 P{sms} 8w{stages}s{' flattened' if flatten else ''}",
                functools.partial(persistent_arrangement.persistent_kernel, 128, 256, 64, 8, sms,
                                  8, stages, flatten))
               for stages, flatten in ((3, False), (4, False), (3, True))]
    measure_builds(bench, "persist", [(4096, 4096, 4096), (8192, 8192, 8192), (2048, 2048, 2048),
                                      (3008, 3008, 3008)], builds)


def section_split_k(bench):
    """3000^3 as two whole waves plus the 184 rows left, those in split-K programs."""
    from benchmarks.lab import split_k

    log("== split_k: whole waves, then the rows left with their K loops cut in chunks "
        "(benchmarks/lab/split_k.py)")
    sms = bench.sms
    main = bench.tuned.TileConfig(256, 128, 64, 8, 8, 4, flat=True, transposed=True)
    tails = {"128x256 chunks of 10 8w3s": (128, 256, 64, 10, 8, 3),
             "64x256 chunks of 16 8w3s": (64, 256, 64, 16, 8, 3)}
    rows = bench.tuned._whole_wave_rows(3000, 3000, main.block_m, main.block_n, sms)
    measure_builds(bench, "split_k", [(3000, 3000, 3000)], [("reference autotuned", None)])
    measure_builds(bench, "split_k", [(rows, 3000, 3000)],
                   [(f"whole waves alone, {main.name}", lambda: bench.tuned._tuned_kernel(main))])
    measure_builds(bench, "split_k", [(3000 - rows, 3000, 3000)],
                   [(f"rows left alone, split-K {name}", functools.partial(split_k.split_k, *spec))
                    for name, spec in tails.items()])
    measure_builds(bench, "split_k", [(3000, 3000, 3000)], [
        (f"{main.name} + split-K {name}",
         lambda spec=spec: bench.tuned._wave_split(bench.tuned._tuned_kernel(main),
                                                   split_k.split_k(*spec), main.block_m,
                                                   main.block_n))
        for name, spec in tails.items()])


def measure_builds(bench, section, shapes, builds):
    """Each (variant, build) at each shape; a build of None is the autotuned reference."""
    for shape in shapes:
        for variant, build in builds:
            if bench.time_left() < 0:
                log(f"budget spent: {section} stops")
                return
            if build is None:
                bench.measure(section, variant, *shape, autotuned_call(bench.tuned))
            else:
                bench.measure(section, variant, *shape, plain_call, build=build)


def autotuned_call(tuned):
    """The reference's autotuned nt_gemm: fills out once (the check), then times plain calls."""
    def make(_, a, b, out):
        out.copy_(tuned.nt_gemm(a, b))
        return lambda: tuned.nt_gemm(a, b)

    return make


# -- the reference's autotune mode, as a benchmark sees it --------------------------------------
def sweep_child(out_path):
    import torch

    fixed = load_solution(False, "ntgemm_fixed")
    tuned = load_solution(True, "ntgemm_tuned")
    import triton.testing

    def bench(fn):
        return triton.testing.do_bench(fn, warmup=10, rep=50, return_mode="median")

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
        gen = torch.Generator(device="cuda").manual_seed(7 + m + 3 * n + 5 * k)
        a = torch.randn((m, k), device="cuda", dtype=torch.float16, generator=gen)
        b = torch.randn((k, n), device="cuda", dtype=torch.float16, generator=gen)
        torch.cuda.synchronize()
        started = time.perf_counter()
        out = tuned.nt_gemm(a, b)
        torch.cuda.synchronize()
        first_call_s = time.perf_counter() - started
        previous = torch.backends.cuda.matmul.allow_tf32
        torch.backends.cuda.matmul.allow_tf32 = False
        ref = a.float() @ b.float()
        torch.backends.cuda.matmul.allow_tf32 = previous
        # the same plan once more on a NaN-poisoned output: every element written?
        run, _ = tuned._PLANS[(a.shape, b.shape, a.stride(), b.stride())]
        poisoned = torch.full((m, n), float("nan"), dtype=torch.float16, device="cuda")
        run(a, b, poisoned)
        ok = True
        for result in (out, poisoned):
            error = (result.float() - ref).abs()
            ok &= bool((error <= ATOL + RTOL * ref.abs()).all())
        ms, torch_ms = paired(bench, lambda: tuned.nt_gemm(a, b), lambda: torch.mm(a, b))
        fixed_ms = bench(lambda: fixed.nt_gemm(a, b))
        flop = 2 * m * n * k
        entry = dict(m=m, n=n, k=k, first_call_s=round(first_call_s, 3), correct=ok,
                     ms=ms, tflops=flop / ms / 1e9, torch_ms=torch_ms,
                     torch_tflops=flop / torch_ms / 1e9, ratio=torch_ms / ms,
                     fixed_ms=fixed_ms, fixed_ratio=torch_ms / fixed_ms,
                     config=tuned.chosen_config(m, n, k))
        results["shapes"].append(entry)
        print(f"sweep {m}x{n}x{k} first={first_call_s:.2f}s ok={ok} TF={entry['tflops']:.1f} "
              f"torch={entry['torch_tflops']:.1f} ratio={entry['ratio']:.3f} "
              f"fixed_ratio={entry['fixed_ratio']:.3f} cfg={entry['config']['name']} "
              f"src={entry['config']['source']} tuning={entry['config']['tuning_s']}s", flush=True)
        del a, b, out, ref, poisoned
    results["sweep_first_call_s"] = sum(
        e["first_call_s"] for e in results["shapes"] if e["m"] == e["n"] == e["k"] and e["m"] in SWEEP)
    print(f"sweep 8..4096 first calls (tuning + compiles): {results['sweep_first_call_s']:.1f} s",
          flush=True)
    for size in [8, 16, 32, 64, 128, 256, 512]:
        a = torch.randn((size, size), device="cuda", dtype=torch.float16)
        b = torch.randn((size, size), device="cuda", dtype=torch.float16)
        tuned_us, fixed_us = paired(lambda fn: per_call_us(fn, repeats=1),
                                    lambda: tuned.nt_gemm(a, b), lambda: fixed.nt_gemm(a, b),
                                    rounds=9)
        entry = dict(n=size, fixed_us=fixed_us, tuned_us=tuned_us,
                     torch_us=per_call_us(lambda: torch.mm(a, b)))
        entry["tuned_over_fixed"] = entry["tuned_us"] / entry["fixed_us"]
        results["overhead"].append(entry)
        print(f"overhead n={size}: fixed {entry['fixed_us']:.1f} us/call, tuned "
              f"{tuned_us:.1f} us/call ({entry['tuned_over_fixed']:.3f}x), torch.mm "
              f"{entry['torch_us']:.1f}", flush=True)
    pathlib.Path(out_path).write_text(json.dumps(results, indent=1, default=str))


def section_sweep(out_dir):
    log("== sweep: the reference's autotune mode, cold Triton cache, then warm")
    scratch = pathlib.Path(tempfile.mkdtemp(prefix="ntgemm-sweep-"))
    env = dict(os.environ, TRITON_CACHE_DIR=str(scratch / "triton"),
               NTGEMM_TUNING_CACHE=str(scratch / "tuning.json"), PYTHONUNBUFFERED="1")
    for label, limit in (("cold", 200), ("warm", 110)):
        started = time.perf_counter()
        try:
            done = subprocess.run([sys.executable, __file__, "--sweep-child",
                                   str(out_dir / f"sweep_{label}.json")], env=env,
                                  capture_output=True, text=True, timeout=limit)
        except subprocess.TimeoutExpired as expired:
            log(f"[{label}] timed out after {limit} s; output so far:")
            for line in ((expired.stdout or b"").decode() + (expired.stderr or b"").decode()).splitlines():
                log(f"[{label}] {line}")
            continue
        for line in (done.stdout + done.stderr).splitlines():
            log(f"[{label}] {line}")
        log(f"[{label}] whole process: {time.perf_counter() - started:.1f} s, rc={done.returncode}")


def print_table(bench):
    log("\n== summary: TFLOPS (ratio to torch.mm, same run); x = wrong output")
    keys = {}
    for row in bench.rows:
        if row.get("ms") is None or row["section"] not in ("main", "ragged", "waves", "padded",
                                                                  "limits", "transp", "wide_k", "rtsize",
                                                                  "tma", "persist", "split_k"):
            continue
        shape = f"{row['m']}x{row['n']}x{row['k']}" + ("" if row["operands"] == "contiguous"
                                                        else f" {row['operands']}")
        keys.setdefault(row["variant"], {})[shape] = (
            f"{row['tflops']}({row['ratio']}){'' if row['correct'] else 'x'}")
    shapes = sorted({s for v in keys.values() for s in v})
    for variant, cells in keys.items():
        log(f"{variant:24s} " + " | ".join(f"{s}: {cells[s]}" for s in shapes if s in cells))


def main():
    global LOG
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="explore-out")
    parser.add_argument("--budget-s", type=float, default=300)
    parser.add_argument("--sections", default="main,sweep,ragged",
                        help="which sections to run, in this order: main, sweep, ragged, waves, "
                        "padded, limits, transposed, deeper, wide_k, runtime_size, tma, persistent, split_k")
    parser.add_argument("--sweep-child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.sweep_child:
        sweep_child(args.sweep_child)
        return
    out_dir = pathlib.Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    LOG = open(out_dir / "explore.log", "a")
    sections = args.sections.split(",")
    import torch
    import triton

    log(f"GPU {torch.cuda.get_device_name()}, torch {torch.__version__} (CUDA {torch.version.cuda}), "
        f"triton {triton.__version__}")
    with contextlib.suppress(Exception):
        log(subprocess.run(["nvidia-smi", "--query-gpu=driver_version,clocks.sm,power.draw,"
                            "temperature.gpu", "--format=csv"], capture_output=True,
                           text=True).stdout.strip())
    bench = Bench(out_dir, args.budget_s)
    order = {"sweep": lambda: section_sweep(out_dir), "ragged": lambda: section_ragged(bench),
             "waves": lambda: section_waves(bench), "padded": lambda: section_padded(bench),
             "limits": lambda: section_limits(bench),
             "transposed": lambda: section_transposed(bench),
             "deeper": lambda: section_transposed(bench, deeper_round=True),
             "wide_k": lambda: section_wide_k(bench),
             "runtime_size": lambda: section_runtime_size(bench),
             "tma": lambda: section_tma(bench),
             "persistent": lambda: section_persistent(bench),
             "split_k": lambda: section_split_k(bench),
             "main": lambda: section_main(bench)}
    for name in sections:
        order[name]()
    print_table(bench)


if __name__ == "__main__":
    main()
