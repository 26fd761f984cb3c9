"""Reference solution: C = A @ B in NineToothed, float16 in and out.

Same file shape as the student skeleton (assignment/ninetoothed_gemm.py), so the
tests, the grader and the benchmark treat it like any other submission.

The idea: one program computes one (BLOCK_SIZE_M, BLOCK_SIZE_N) tile of C. It
needs the whole row of A tiles and the whole column of B tiles that meet at that
tile, paired by their K index, and it sums their products in float32.

Everything above the "Autotune mode" section is what a student writes. With
NINETOOTHED_AUTOTUNE=1 on a GPU, ``nt_gemm`` instead picks, per shape, one of a
few explicit tile configurations built from ``grouped_arrangement`` (the same
idea with an L2-friendly program order), times them on the first call of each
shape and remembers the winner; see that section and docs/perf-notes.md.
"""

import dataclasses
import functools
import importlib.metadata
import json
import os
import pathlib
import time

import ninetoothed
import ninetoothed.language as ntl
import torch
from ninetoothed import Symbol, Tensor

# The course default is 64 x 64 x 64. With NINETOOTHED_AUTOTUNE=1 (GPU only)
# the three sizes become meta-parameters that NineToothed tunes over the ranges
# below: M and N in [64, 128], K in [32, 64], powers of two.
if os.environ.get("NINETOOTHED_AUTOTUNE") == "1":
    BLOCK_SIZE_M = ninetoothed.block_size(lower_bound=64, upper_bound=128)
    BLOCK_SIZE_N = ninetoothed.block_size(lower_bound=64, upper_bound=128)
    BLOCK_SIZE_K = ninetoothed.block_size(lower_bound=32, upper_bound=64)
else:
    BLOCK_SIZE_M = 64
    BLOCK_SIZE_N = 64
    BLOCK_SIZE_K = 64


def arrangement(lhs, rhs, output, block_size_m=BLOCK_SIZE_M, block_size_n=BLOCK_SIZE_N,
                block_size_k=BLOCK_SIZE_K):
    """Give program (i, j) row i of lhs tiles, column j of rhs tiles, and C tile (i, j).

    The block sizes default to the module's; autotune mode passes others.
    """
    output_arranged = output.tile((block_size_m, block_size_n))
    grid_m, grid_n = output_arranged.shape

    # (M/BM, K/BK) tiles -> one group per row of tiles -> repeated over the N blocks.
    lhs_arranged = lhs.tile((block_size_m, block_size_k)).tile((1, -1))
    lhs_arranged = lhs_arranged.expand((-1, grid_n))
    lhs_arranged.dtype = lhs_arranged.dtype.squeeze(0)

    # (K/BK, N/BN) tiles -> one group per column of tiles -> repeated over the M blocks.
    rhs_arranged = rhs.tile((block_size_k, block_size_n)).tile((-1, 1))
    rhs_arranged = rhs_arranged.expand((grid_m, -1))
    rhs_arranged.dtype = rhs_arranged.dtype.squeeze(1)

    return lhs_arranged, rhs_arranged, output_arranged


def application(lhs, rhs, output):
    """Sum the K tile products in float32, then write the tile once."""
    accumulator = ntl.zeros(output.shape, dtype=ntl.float32)
    for k in range(lhs.shape[0]):
        accumulator += ntl.dot(lhs[k], rhs[k])
    output = accumulator  # noqa: F841 (NineToothed turns this into the store)


@functools.cache
def _kernel():
    """Build the kernel on first use, so that importing this file never fails."""
    return ninetoothed.make(arrangement, application, (Tensor(2), Tensor(2), Tensor(2)))


def _check_operand(name, tensor):
    if not isinstance(tensor, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(tensor).__name__}")
    if tensor.dtype != torch.float16:
        raise TypeError(f"{name} must be float16, got {tensor.dtype}")
    if tensor.ndim != 2:
        raise ValueError(f"{name} must be 2-D, got {tensor.ndim}-D with shape {tuple(tensor.shape)}")
    if tensor.numel() == 0:
        raise ValueError(f"{name} must be non-empty, got shape {tuple(tensor.shape)}")


def nt_gemm(lhs, rhs):
    """Return lhs @ rhs as a new float16 tensor of shape (M, N)."""
    _check_operand("lhs", lhs)
    _check_operand("rhs", rhs)
    if lhs.device != rhs.device:
        raise ValueError(f"lhs and rhs must be on the same device, got {lhs.device} and {rhs.device}")
    if lhs.shape[1] != rhs.shape[0]:
        raise ValueError(
            f"inner dimensions must match: lhs is {tuple(lhs.shape)}, rhs is {tuple(rhs.shape)}"
        )

    if _AUTOTUNE and lhs.is_cuda:
        return _tuned_gemm(lhs, rhs)

    output = torch.empty((lhs.shape[0], rhs.shape[1]), dtype=torch.float16, device=lhs.device)
    _kernel()(lhs, rhs, output)
    return output


# ---------------------------------------------------------------------------
# Autotune mode (NINETOOTHED_AUTOTUNE=1, GPU only): how far NineToothed goes.
#
# The course default gives each program a 64x64 tile and 64-wide K steps: 32
# FLOP per byte it loads (BM*BN/(BM+BN) for fp16), too few to keep the tensor
# cores fed: about 0.4x of torch.mm on an H200. Four steps close the gap, each
# measured in docs/perf-notes.md:
#
# 1. Larger tiles, 128x256x64 with 8 warps and 3 pipeline stages: 85 FLOP per
#    byte instead of 32.
# 2. A grouped program order, expressed in the arrangement: consecutive
#    programs walk a band of group_size_m tile rows down one column of B, so
#    the tiles they share are still in L2 (grouped_arrangement below).
# 3. A short explicit list of configurations per size class, timed on the
#    first call of each shape and remembered (also across runs), instead of a
#    wide block_size() search behind Triton's per-call autotuner.
# 4. The ragged cliff: when K or N is not a multiple of 16, Triton cannot prove
#    that a tile row's mask and start address come in runs of 8 elements, and
#    the kernel drops to 0.15-0.35x (padding the strides alone did not help).
#    flat_arrangement passes the operands flat and tiles them by their row
#    lengths as compile-time constants: the compiler sees K = 3000 = 8 * 375,
#    and 3000^3 runs 3.7x faster. For a ragged N over an aligned K, the strided
#    kernel on a padded copy of rhs is a further candidate, copy included.
# 5. Ragged rows hurt on the rhs side of the dot only: with a ragged N, a flat
#    kernel computing C^T = B^T A^T (transposed_flat_arrangement) runs a
#    4096x3000x4096 product at 0.95x instead of 0.80x.
# 6. A grid whose last wave is nearly empty (3072^3 in 128x256 tiles: 288 tiles
#    on 132 SMs) runs its whole waves in one launch and the rows left over in
#    small tiles in a second one (_wave_split).
#
# After the first call of a shape, nt_gemm costs one dictionary lookup more
# than the fixed path. chosen_config(m, n, k) and LAST_CONFIG say which
# configuration ran; the choices are kept in NTGEMM_TUNING_CACHE (default:
# ~/.ninetoothed/ntgemm_tuning.json; "off" keeps nothing) for later runs.
# ---------------------------------------------------------------------------

_AUTOTUNE = os.environ.get("NINETOOTHED_AUTOTUNE") == "1"


def grouped_arrangement(lhs, rhs, output, block_size_m, block_size_n, block_size_k, group_size_m):
    """``arrangement`` with programs launched in groups of ``group_size_m`` tile rows.

    NineToothed numbers programs row-major over the outer shape. Giving all three
    tensors the outer shape (M groups, N blocks, group_size_m) makes consecutive
    programs share one column of B tiles and a band of group_size_m rows of A.
    """
    bm, bn, bk, group = block_size_m, block_size_n, block_size_k, group_size_m

    # (M/BM, N/BN) tiles -> groups of (group, 1) tiles -> one flat level
    # (groups, N/BN, group, 1, BM, BN) -> program grid (groups, N/BN, group).
    output_arranged = output.tile((bm, bn)).tile((group, 1)).ravel()
    output_arranged = output_arranged.tile((1, 1, 1, 1, -1, -1))
    output_arranged.dtype = output_arranged.dtype.squeeze((0, 1, 2, 3))
    output_arranged = output_arranged.squeeze((3, 4, 5))
    groups, grid_n, _ = output_arranged.shape

    # (M/BM, K/BK) tiles -> (groups, 1, group, K/BK, BM, BK) -> per program the
    # row of K tiles -> repeated over the N blocks.
    lhs_arranged = lhs.tile((bm, bk)).tile((group, -1)).ravel()
    lhs_arranged = lhs_arranged.tile((1, 1, 1, -1, -1, -1))
    lhs_arranged.dtype = lhs_arranged.dtype.tile((1, 1, 1, 1, -1, -1))
    lhs_arranged.dtype.dtype = lhs_arranged.dtype.dtype.squeeze((0, 1, 2, 3))
    lhs_arranged.dtype = lhs_arranged.dtype.squeeze((0, 1, 2, 4, 5))
    lhs_arranged = lhs_arranged.squeeze((3, 4, 5)).expand((-1, grid_n, -1))

    # As in arrangement(), with one more dimension expanded over the group.
    rhs_arranged = rhs.tile((bk, bn)).tile((-1, 1))
    rhs_arranged.dtype = rhs_arranged.dtype.squeeze(1)
    rhs_arranged = rhs_arranged.unsqueeze(2).expand((groups, -1, group))

    return lhs_arranged, rhs_arranged, output_arranged


def flat_arrangement(lhs, rhs, output, **block_sizes):
    """grouped_arrangement on flat operands, re-shaped by compile-time row lengths.

    ``lhs.tile((K,)).ravel()`` is the (M, K) matrix again, with row stride K a
    constant the compiler can see (``lhs_row``, ``rhs_row`` and ``output_row`` are
    constexpr arguments of the launcher), where a strided tensor's stride is a
    run-time int. rhs may be wider than the output (a padded copy).
    """
    lhs_row = Symbol("lhs_row", constexpr=True)
    rhs_row = Symbol("rhs_row", constexpr=True)
    output_row = Symbol("output_row", constexpr=True)
    return grouped_arrangement(
        lhs.tile((lhs_row,)).ravel(),
        rhs.tile((rhs_row,)).ravel(),
        output.tile((output_row,)).ravel(),
        **block_sizes,
    )


def transposed_flat_arrangement(rhs, lhs, output, **block_sizes):
    """flat_arrangement for C^T = B^T A^T: the kernel's first operand is rhs.

    The roles of the operands swapped: rhs rows feed the lhs side of each dot,
    and the block sizes tile C^T, so block_size_m runs along N. Permuting the
    flat views costs nothing; only the memory order of each load changes.
    """
    rhs_row = Symbol("rhs_row", constexpr=True)
    lhs_row = Symbol("lhs_row", constexpr=True)
    output_row = Symbol("output_row", constexpr=True)
    return grouped_arrangement(
        rhs.tile((rhs_row,)).ravel().permute((1, 0)),
        lhs.tile((lhs_row,)).ravel().permute((1, 0)),
        output.tile((output_row,)).ravel().permute((1, 0)),
        **block_sizes,
    )


@dataclasses.dataclass(frozen=True)
class TileConfig:
    block_m: int
    block_n: int
    block_k: int
    group_size_m: int
    num_warps: int
    num_stages: int
    flat: bool = False  # operands passed flat to a flat_arrangement kernel
    pad_n: bool = False  # strided kernel on a copy of rhs whose N is padded to a multiple of 16
    transposed: bool = False  # flat kernel computing C^T = B^T A^T, C's tiles as named
    # A wave split: this config runs the rows of C that fill whole waves of the
    # SMs, and ``tail`` (a smaller tile) runs the rows left over.
    tail: "TileConfig | None" = None

    def __post_init__(self):
        if self.transposed and not self.flat:
            raise ValueError("a transposed TileConfig needs flat=True: only flat kernels swap roles")

    @property
    def name(self):
        kind = (("flat-t " if self.transposed else "flat " if self.flat else "")
                + ("pad-n " if self.pad_n else ""))
        name = (f"{kind}{self.block_m}x{self.block_n}x{self.block_k} "
                f"g{self.group_size_m} {self.num_warps}w{self.num_stages}s")
        return f"waves {name} + tail {self.tail.name}" if self.tail else name


# The candidates per size class (by 2*M*N*K), chosen from H200 measurements
# (docs/perf-notes.md). Each list is short: every entry costs a compile per
# Triton specialisation and a timing per new shape.
LARGE_FLOPS = 2 * 1536**3
SMALL_FLOPS = 2 * 640**3  # up to 512^3: launch-bound on an H200, the plain grid is as fast
# Within 2-3% of each other from 2048^3 to 8192^3; which one wins moves with the shape.
LARGE_CONFIGS = (
    TileConfig(128, 256, 64, 8, 8, 3),
    TileConfig(128, 256, 64, 8, 8, 4),
    TileConfig(128, 256, 64, 16, 8, 3),
    TileConfig(128, 256, 64, 16, 8, 4),
)
MEDIUM_CONFIGS = (
    TileConfig(64, 128, 64, 8, 4, 4),
    TileConfig(128, 128, 64, 8, 4, 4),
    TileConfig(64, 64, 64, 8, 4, 3),
)
# Launch-bound: nothing worth timing; the plain grid (g1) has the leanest launcher.
SMALL_CONFIGS = (TileConfig(64, 64, 64, 1, 4, 3),)
# Extra candidates when K or N is not a multiple of 16 and the operands are
# contiguous (the flat kernels compile once per shape).
LARGE_FLAT_CONFIGS = (
    TileConfig(128, 256, 64, 8, 8, 3, flat=True),
    TileConfig(128, 128, 64, 8, 8, 3, flat=True),
)
MEDIUM_FLAT_CONFIGS = (TileConfig(64, 128, 64, 8, 4, 4, flat=True),)
# A ragged N: the same tiles with the operands' roles swapped (C^T = B^T A^T).
# Rows of a length like 3000 cost little on the lhs side of a dot and much on the
# rhs side (docs/perf-notes.md, round 4); swapping puts rhs on the lhs side.
RAGGED_N_FLAT_CONFIGS = (
    TileConfig(256, 128, 64, 8, 8, 3, flat=True, transposed=True),
    TileConfig(256, 128, 64, 8, 8, 4, flat=True, transposed=True),
)
# A ragged N over an aligned K: the strided kernel on a padded copy of rhs has no
# cliff left; the copy is part of what the tuner times.
PADDED_N_CONFIGS = (
    TileConfig(128, 256, 64, 8, 8, 3, pad_n=True),
    TileConfig(128, 256, 64, 8, 8, 4, pad_n=True),
)
# An aligned grid whose last wave is nearly empty (3072^3: 288 tiles of 128x256 on
# 132 SMs, the third wave 18% full): whole waves of 128x256 tiles, then the rows
# left over in 64x128 tiles. The main kernel runs in plain row order: a group size
# would have to divide its number of tile rows.
WAVE_SPLIT_CONFIGS = (
    TileConfig(128, 256, 64, 1, 8, 3, tail=TileConfig(64, 128, 64, 1, 4, 4)),
)
LAST_WAVE_SPLIT_BELOW = 0.25  # the split is tried when the last wave is less full than this
EVERY_CONFIG = (LARGE_CONFIGS + MEDIUM_CONFIGS + SMALL_CONFIGS
                + LARGE_FLAT_CONFIGS + MEDIUM_FLAT_CONFIGS + RAGGED_N_FLAT_CONFIGS
                + PADDED_N_CONFIGS + WAVE_SPLIT_CONFIGS)

LAST_CONFIG = None  # what the latest autotuned nt_gemm call ran, as chosen_config() gives it

_PLANS = {}  # (lhs shape, rhs shape, lhs strides, rhs strides) -> (run, info)
_CHOSEN = {}  # (m, n, k) -> the info dict of its latest plan
_STORED = None  # the persisted choices for this GPU and software, loaded on first use


def chosen_config(m, n, k):
    """The configuration nt_gemm chose for an (m, n, k) product, or None before its first call.

    A dict: block_m, block_n, block_k (C's tile), group_size_m, num_warps,
    num_stages, flat (flat_arrangement kernel or not), pad_n (rhs copied into
    padded rows), transposed (C^T = B^T A^T), tail (the second launch's config of a
    wave split, or None), name, source ("tuned", "stored" or "only candidate"),
    tuning_s and timings_ms (per candidate, the mean of two passes, when tuned here).
    """
    return _CHOSEN.get((m, n, k))


@functools.cache
def _tuned_kernel(config):
    """A launcher ``run(lhs, rhs, output)`` on 2-D tensors for one configuration.

    Strided kernels are NineToothed's own handles; flat, padded and wave-split
    configurations wrap them.
    """
    if config.pad_n:
        return _padding_n(_tuned_kernel(dataclasses.replace(config, pad_n=False)))
    if config.tail is not None:
        return _wave_split(_tuned_kernel(dataclasses.replace(config, tail=None)),
                           _tuned_kernel(config.tail), config.block_m, config.block_n)
    # Block sizes name C's tile; a transposed kernel tiles C^T.
    block_m, block_n = ((config.block_n, config.block_m) if config.transposed
                        else (config.block_m, config.block_n))
    block_sizes = dict(block_size_m=block_m, block_size_n=block_n, block_size_k=config.block_k)
    if config.group_size_m > 1 or config.flat:
        block_sizes["group_size_m"] = config.group_size_m
    if config.group_size_m == 1 and not config.flat:
        # The plain row-major grid: the leanest launcher, for launch-bound sizes.
        arrange = functools.partial(arrangement, **block_sizes)
        tensors = (Tensor(2), Tensor(2), Tensor(2))
    elif config.flat:
        arrange = functools.partial(
            transposed_flat_arrangement if config.transposed else flat_arrangement,
            **block_sizes)
        constant = {"constexpr": True}
        tensors = (Tensor(1, shape_options=constant), Tensor(1, shape_options=constant),
                   Tensor(1, shape_options=constant))
    else:
        arrange = functools.partial(grouped_arrangement, **block_sizes)
        tensors = (Tensor(2), Tensor(2), Tensor(2))
    kernel = ninetoothed.make(
        arrange, application, tensors, num_warps=config.num_warps, num_stages=config.num_stages
    )
    return _flattening(kernel, config.transposed) if config.flat else kernel


def _flattening(kernel, transposed=False):
    """Wrap a flat_arrangement kernel to take 2-D contiguous operands."""
    def run(lhs, rhs, output):
        first, second = (rhs, lhs) if transposed else (lhs, rhs)
        kernel(first.view(-1), second.view(-1), output.view(-1),
               lhs_row=lhs.shape[1], rhs_row=rhs.shape[1], output_row=output.shape[1])

    return run


def _padding_n(kernel):
    """Wrap a launcher to run on a copy of rhs whose N is padded to a multiple of 16.

    With every size and stride of the loads a multiple of 16, the ragged-N cliff is
    gone. The output stays (M, N): it is stored once per tile, where rhs is loaded
    at every K step, so its masked store costs little and it needs no copy. The
    grid does not change: cdiv(N padded, BN) == cdiv(N, BN) for BN a multiple of 16.
    """
    def run(lhs, rhs, output):
        kernel(lhs, torch.nn.functional.pad(rhs, (0, -rhs.shape[1] % 16)), output)

    return run


def _wave_split(main, tail, block_m, block_n):
    """Run C's rows in two launches, ``main`` then ``tail``.

    ``main`` gets the most rows whose (block_m, block_n) tiles fill whole waves of
    the SMs; ``tail`` gets the rows left, in its smaller tiles. 3072^3 in 128x256
    tiles is 288 tiles on 132 SMs: three waves, the last one 18% full. Split, it
    is two full waves and 256 rows in 64x128 tiles, a short, well-filled wave.
    """
    def run(lhs, rhs, output):
        split = _whole_wave_rows(lhs.shape[0], rhs.shape[1], block_m, block_n,
                                 _sm_count(lhs.device))
        if split:
            main(lhs[:split], rhs, output[:split])
        tail(lhs[split:], rhs, output[split:])

    return run


@functools.cache
def _whole_wave_rows(m, n, block_m, block_n, sms):
    """How many rows of C fill whole waves of (block_m, block_n) tiles on ``sms`` SMs.

    At most all but the last row of tiles, so that the tail launch has rows left.
    """
    tiles_per_row = _cdiv(n, block_n)
    waves = _cdiv(m, block_m) * tiles_per_row // sms
    rows = min(waves * sms // tiles_per_row, _cdiv(m, block_m) - 1)
    return max(rows, 0) * block_m


@functools.cache
def _sm_count(device):
    return torch.cuda.get_device_properties(device).multi_processor_count


def _candidates(lhs, rhs):
    """The configurations worth timing for this shape.

    Its size class, plus flat, padded and wave-split kernels only where a ragged K
    or N, or a nearly empty last wave, makes them worth a compile and a timing.
    """
    m, k = lhs.shape
    n = rhs.shape[1]
    flops = 2 * m * n * k
    if flops < SMALL_FLOPS:
        return SMALL_CONFIGS
    ragged = k % 16 or n % 16
    flat_ok = ragged and lhs.is_contiguous() and rhs.is_contiguous()
    if flops < LARGE_FLOPS:
        return MEDIUM_CONFIGS + (MEDIUM_FLAT_CONFIGS if flat_ok else ())

    configs = LARGE_CONFIGS
    if n % 16 and not k % 16:
        configs += PADDED_N_CONFIGS
    if flat_ok:
        configs += LARGE_FLAT_CONFIGS
        if n % 16:
            configs += RAGGED_N_FLAT_CONFIGS
    if not ragged and _wave_split_pays(m, n, WAVE_SPLIT_CONFIGS[0], _sm_count(lhs.device)):
        configs += WAVE_SPLIT_CONFIGS
    return configs


def _wave_split_pays(m, n, config, sms):
    """Whether the grid's last wave is nearly empty and the split fills the waves before it.

    Whole rows of tiles must cover at least 90% of the whole waves: with rows of
    many tiles (256 x 17920 has 70 a row) they cannot, and the split only adds a launch.
    """
    if _last_wave_share(m, n, config.block_m, config.block_n, sms) >= LAST_WAVE_SPLIT_BELOW:
        return False
    tiles_per_row = _cdiv(n, config.block_n)
    whole_waves = _cdiv(m, config.block_m) * tiles_per_row // sms
    rows = _whole_wave_rows(m, n, config.block_m, config.block_n, sms) // config.block_m
    return rows * tiles_per_row >= 0.9 * whole_waves * sms


def _last_wave_share(m, n, block_m, block_n, sms):
    """How full the grid's last wave of SMs is, one program per SM at a time.

    1 when the tiles fill whole waves; 0.18 for 288 tiles on 132 SMs. Grids of
    less than one wave are left alone (1): there is no whole wave to split off.
    """
    tiles = _cdiv(m, block_m) * _cdiv(n, block_n)
    if tiles <= sms or tiles % sms == 0:
        return 1.0
    return (tiles % sms) / sms


def _cdiv(a, b):
    return -(-a // b)


def _tuned_gemm(lhs, rhs):
    global LAST_CONFIG
    key = (lhs.shape, rhs.shape, lhs.stride(), rhs.stride())
    plan = _PLANS.get(key)
    if plan is None:
        plan = _PLANS[key] = _make_plan(lhs, rhs)
        _CHOSEN[(lhs.shape[0], rhs.shape[1], lhs.shape[1])] = plan[1]
    run, LAST_CONFIG = plan
    output = torch.empty((lhs.shape[0], rhs.shape[1]), dtype=torch.float16, device=lhs.device)
    run(lhs, rhs, output)
    return output


def _make_plan(lhs, rhs):
    started = time.perf_counter()
    m, k = lhs.shape
    n = rhs.shape[1]
    candidates = _candidates(lhs, rhs)
    shape_key = f"{m}x{n}x{k} lhs{tuple(lhs.stride())} rhs{tuple(rhs.stride())}"

    timings = {}
    stored = _stored_choices().get(shape_key)
    by_name = {config.name: config for config in candidates}
    if stored in by_name:
        config, source = by_name[stored], "stored"
    elif len(candidates) == 1:
        config, source = candidates[0], "only candidate"
    else:
        out = torch.empty((m, n), dtype=torch.float16, device=lhs.device)
        # Two passes, the second in reverse order: on a GPU at its power limit the
        # first candidate timed after a pause runs cooler than the rest.
        for candidate in candidates + candidates[::-1]:
            timings.setdefault(candidate.name, []).append(_time(candidate, lhs, rhs, out))
        timings = {name: sum(both) / 2 for name, both in timings.items()}
        config = min(candidates, key=lambda candidate: timings[candidate.name])
        source = "tuned"
        if timings[config.name] < float("inf"):
            _store_choice(shape_key, config.name)

    info = dataclasses.asdict(config) | {
        "name": config.name,
        "source": source,
        "timings_ms": timings,
        "tuning_s": round(time.perf_counter() - started, 3),  # untimed plans compile later
    }
    return _tuned_kernel(config), info


def _time(config, lhs, rhs, out):
    """Median milliseconds of one candidate on these operands (inf if it cannot run)."""
    import triton.testing

    try:
        run = _tuned_kernel(config)
        return triton.testing.do_bench(
            lambda: run(lhs, rhs, out),
            warmup=5, rep=25, return_mode="median",
        )
    except Exception:  # a config the GPU cannot hold (shared memory, registers)
        return float("inf")


def _tuning_cache_path():
    where = os.environ.get("NTGEMM_TUNING_CACHE", "")
    if where.lower() == "off":
        return None
    if where:
        return pathlib.Path(where)
    return pathlib.Path.home() / ".ninetoothed" / "ntgemm_tuning.json"


def _version(package):
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return "?"


def _environment_key():
    import triton

    return " | ".join((
        torch.cuda.get_device_name(),
        f"torch {torch.__version__}",
        f"triton {triton.__version__}",
        f"ninetoothed {_version('ninetoothed')}",
        ",".join(config.name for config in EVERY_CONFIG),
    ))


def _read_tuning_cache(path):
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


def _stored_choices():
    global _STORED
    if _STORED is None:
        path = _tuning_cache_path()
        everything = _read_tuning_cache(path) if path is not None else {}
        _STORED = dict(everything.get(_environment_key(), {}))
    return _STORED


def _store_choice(shape_key, config_name):
    _stored_choices()[shape_key] = config_name
    path = _tuning_cache_path()
    if path is None:
        return
    try:
        everything = _read_tuning_cache(path)
        everything.setdefault(_environment_key(), {})[shape_key] = config_name
        path.parent.mkdir(parents=True, exist_ok=True)
        scratch = path.with_suffix(f".{os.getpid()}.tmp")
        scratch.write_text(json.dumps(everything, indent=1, sort_keys=True))
        scratch.replace(path)
    except OSError:
        pass  # a read-only home only costs the next run its tuning
