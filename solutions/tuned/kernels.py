"""A launcher ``run(lhs, rhs, output)`` on 2-D tensors for each TileConfig.

The kernels are the model answer's ``arrangement`` (plain row order) or one of
``arrangements`` (grouped, flat, transposed), with the model answer's
``application`` and the configuration's explicit block sizes, warps and stages.
Flat, padded and wave-split configurations wrap those kernels.
"""

import dataclasses
import functools

import ninetoothed
import torch
from ninetoothed import Tensor

from solutions import ninetoothed_gemm
from solutions.tuned import arrangements, persistent_tma, waves


@functools.cache
def tuned_kernel(config):
    """The launcher for one configuration, built on first use.

    Strided kernels are NineToothed's own handles; flat, padded and wave-split
    configurations wrap them.
    """
    if config.persistent:
        return persistent(config)
    if config.pad_n:
        return padding_n(tuned_kernel(dataclasses.replace(config, pad_n=False)))
    if config.tail is not None:
        return wave_split(
            tuned_kernel(dataclasses.replace(config, tail=None)),
            tuned_kernel(config.tail),
            config.block_m,
            config.block_n,
        )
    # Block sizes name C's tile; a transposed kernel tiles C^T.
    block_m, block_n = (
        (config.block_n, config.block_m) if config.transposed else (config.block_m, config.block_n)
    )
    block_sizes = dict(block_size_m=block_m, block_size_n=block_n, block_size_k=config.block_k)
    if config.group_size_m > 1 or config.flat:
        block_sizes["group_size_m"] = config.group_size_m
    if config.group_size_m == 1 and not config.flat:
        # The plain row-major grid: the leanest launcher, for launch-bound sizes.
        arrange = functools.partial(ninetoothed_gemm.arrangement, **block_sizes)
        tensors = (Tensor(2), Tensor(2), Tensor(2))
    elif config.flat:
        arrange = functools.partial(
            arrangements.transposed_flat_arrangement
            if config.transposed
            else arrangements.flat_arrangement,
            **block_sizes,
        )
        constant = {"constexpr": True}
        tensors = (
            Tensor(1, shape_options=constant),
            Tensor(1, shape_options=constant),
            Tensor(1, shape_options=constant),
        )
    else:
        arrange = functools.partial(arrangements.grouped_arrangement, **block_sizes)
        tensors = (Tensor(2), Tensor(2), Tensor(2))
    kernel = ninetoothed.make(
        arrange,
        ninetoothed_gemm.application,
        tensors,
        num_warps=config.num_warps,
        num_stages=config.num_stages,
    )
    return flattening(kernel, config.transposed) if config.flat else kernel


def flattening(kernel, transposed=False):
    """Wrap a flat_arrangement kernel to take 2-D contiguous operands."""

    def run(lhs, rhs, output):
        first, second = (rhs, lhs) if transposed else (lhs, rhs)
        kernel(
            first.view(-1),
            second.view(-1),
            output.view(-1),
            lhs_row=lhs.shape[1],
            rhs_row=rhs.shape[1],
            output_row=output.shape[1],
        )

    return run


def padding_n(kernel):
    """Wrap a launcher to run on a copy of rhs whose N is padded to a multiple of 16.

    With every size and stride of the loads a multiple of 16, the ragged-N cliff is
    gone. The output stays (M, N): it is stored once per tile, where rhs is loaded
    at every K step, so its masked store costs little and it needs no copy. The
    grid does not change: cdiv(N padded, BN) == cdiv(N, BN) for BN a multiple of 16.
    """

    def run(lhs, rhs, output):
        kernel(lhs, torch.nn.functional.pad(rhs, (0, -rhs.shape[1] % 16)), output)

    return run


def wave_split(main, tail, block_m, block_n):
    """Run C's rows in two launches, ``main`` then ``tail``.

    ``main`` gets the most rows whose (block_m, block_n) tiles fill whole waves of
    the SMs; ``tail`` gets the rows left, in its smaller tiles. 3072^3 in 128x256
    tiles is 288 tiles on 132 SMs: three waves, the last one 18% full. Split, it
    is two full waves and 256 rows in 64x128 tiles, a short, well-filled wave.
    """

    def run(lhs, rhs, output):
        split = waves.whole_wave_rows(
            lhs.shape[0], rhs.shape[1], block_m, block_n, waves.sm_count(lhs.device)
        )
        if split:
            main(lhs[:split], rhs, output[:split])
        tail(lhs[split:], rhs, output[split:])

    return run


def persistent(config):
    """The persistent TMA kernel on the device's SMs, for operands TMA reads right.

    A plan is kept per shape and strides, not per address: a later call may bring a
    view that starts off a 16-byte boundary, which TMA would read wrong. That call
    runs the grouped kernel of the same tiles instead.
    """

    def run(lhs, rhs, output):
        if persistent_tma.tma_rows_problem(lhs, rhs, output):
            return tuned_kernel(
                dataclasses.replace(config, persistent=False, warp_specialize=False)
            )(lhs, rhs, output)
        launch = persistent_tma.unchecked_launcher(
            config.block_m,
            config.block_n,
            config.block_k,
            config.num_warps,
            config.num_stages,
            waves.sm_count(lhs.device),
            config.group_size_m,
            warp_specialize=config.warp_specialize,
        )
        return launch(lhs, rhs, output)

    return run
