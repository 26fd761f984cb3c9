"""Split-K as a NineToothed arrangement, for the rows a wave split leaves over (round 5).

A wave split (``solutions.tuned.kernels.wave_split``) runs the rows of C that fill whole
waves in one launch and the rows left in another. Here the second launch cuts
the K loop of each leftover tile into chunks: program (s, i, j) sums K tiles
s*chunk .. s*chunk + chunk - 1 of C tile (i, j) into a float32 partial
``partial[s]``; torch then sums the partials and casts the sum into C (two more
launches). 184 leftover rows at 3000^3 become 120 programs instead of 24.

The chunks are cut from the row of K tiles, so they end on tile boundaries and
the only mask is NineToothed's own at K. The operands go in flat, as in the
tuned reference's ``flat_arrangement``, so that K = 3000 is a compile-time constant.

Not part of the reference: it is correct but slower (``python
benchmarks/lab/explore_variants.py --sections split_k``; docs/perf-notes.md).
"""

import functools
import math

import ninetoothed
import torch
from ninetoothed import Symbol, Tensor

from solutions import ninetoothed_gemm


def split_k_arrangement(lhs, rhs, output, block_size_m, block_size_n, block_size_k, chunk):
    """Program (s, i, j): chunk s of lhs tile row i and rhs tile column j, tile (i, j) of output[s]."""
    bm, bn, bk = block_size_m, block_size_n, block_size_k
    output_arranged = output.tile((1, bm, bn))  # (S, M/BM, N/BN) of (1, BM, BN)
    output_arranged.dtype = output_arranged.dtype.squeeze(0)
    _, grid_m, grid_n = output_arranged.shape

    lhs_arranged = lhs.tile((bm, bk)).tile((1, chunk))  # (M/BM, S) of (1, chunk) of (BM, BK)
    lhs_arranged.dtype = lhs_arranged.dtype.squeeze(0)
    lhs_arranged = lhs_arranged.permute((1, 0)).unsqueeze(2).expand((-1, -1, grid_n))

    rhs_arranged = rhs.tile((bk, bn)).tile((chunk, 1))  # (S, N/BN) of (chunk, 1) of (BK, BN)
    rhs_arranged.dtype = rhs_arranged.dtype.squeeze(1)
    rhs_arranged = rhs_arranged.unsqueeze(1).expand((-1, grid_m, -1))
    return lhs_arranged, rhs_arranged, output_arranged


def flat_split_k_arrangement(lhs, rhs, output, **sizes):
    """split_k_arrangement on flat operands with compile-time row lengths."""
    lhs_row = Symbol("lhs_row", constexpr=True)
    rhs_row = Symbol("rhs_row", constexpr=True)
    return split_k_arrangement(
        lhs.tile((lhs_row,)).ravel(), rhs.tile((rhs_row,)).ravel(), output, **sizes
    )


@functools.cache
def split_k(block_m, block_n, block_k, chunk, num_warps, num_stages):
    """A launcher ``run(lhs, rhs, output)``: partial sums per K chunk, then their sum into output."""
    arrange = functools.partial(
        flat_split_k_arrangement,
        block_size_m=block_m,
        block_size_n=block_n,
        block_size_k=block_k,
        chunk=chunk,
    )
    constant = {"constexpr": True}
    kernel = ninetoothed.make(
        arrange,
        ninetoothed_gemm.application,
        (Tensor(1, shape_options=constant), Tensor(1, shape_options=constant), Tensor(3)),
        num_warps=num_warps,
        num_stages=num_stages,
    )

    def run(lhs, rhs, output):
        chunks = math.ceil(math.ceil(lhs.shape[1] / block_k) / chunk)
        partial = torch.empty(
            (chunks, lhs.shape[0], rhs.shape[1]), dtype=torch.float32, device=lhs.device
        )
        kernel(lhs.view(-1), rhs.view(-1), partial, lhs_row=lhs.shape[1], rhs_row=rhs.shape[1])
        output.copy_(partial.sum(0))

    return run
