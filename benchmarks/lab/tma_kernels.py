"""A NineToothed GEMM that loads its tiles through TMA tensor descriptors (H100/H200 on).

Round 5 of docs/perf-notes.md asks whether hardware tile loads would close the
last gaps to torch.mm, mainly at 3000^3. The arrangement is the model answer's
``arrangement`` (one program per C tile). The application does not use its
tiles' pointer loads: it builds tensor descriptors from NineToothed's
``data_ptr()``, ``stride()`` and source shapes, and walks the tiles in groups of
8 rows itself (a literal: the application has no name for a group size). benchmarks/lab/triton_ceiling.py is the same idea in
plain Triton with a persistent schedule.

Not part of the reference; the exploration script measures it (``--sections
tma``). Float16 only, like the reference. TMA needs row strides of whole 16-byte
units, which ``require_tma_rows`` checks, and device-side descriptors need
scratch memory (``use_torch_scratch``); both live beside the persistent TMA kernel
the reference ships (solutions/tuned/persistent_tma.py).

This module must hold no ``triton.jit`` function: NineToothed copies every one
it finds beside the application into the generated kernel's source.
"""

import functools

import ninetoothed
import ninetoothed.language as ntl
from ninetoothed import Symbol, Tensor

from grader.core import generated_cache
from solutions import ninetoothed_gemm
from solutions.tuned.persistent_tma import require_tma_rows

BLOCK_M = Symbol("BLOCK_M", constexpr=True)
BLOCK_N = Symbol("BLOCK_N", constexpr=True)
BLOCK_K = Symbol("BLOCK_K", constexpr=True)


def nt_tma_arrangement(lhs, rhs, output):
    """The model answer's plain arrangement; it sets the grid and names the block sizes."""
    return ninetoothed_gemm.arrangement(lhs, rhs, output, BLOCK_M, BLOCK_N, BLOCK_K)


def nt_tma_application(lhs, rhs, output):
    """One C tile per program, its operand tiles loaded by TMA in grouped program order."""
    m_size = lhs.source.shape[0]
    k_size = lhs.source.shape[1]
    n_size = rhs.source.shape[1]
    lhs_tiles = ntl.make_tensor_descriptor(
        lhs.source.data_ptr(),
        shape=[m_size, k_size],
        strides=[lhs.source.stride(0), 1],
        block_shape=[output.shape[0], rhs.dtype.shape[0]],
    )
    rhs_tiles = ntl.make_tensor_descriptor(
        rhs.source.data_ptr(),
        shape=[k_size, n_size],
        strides=[rhs.source.stride(0), 1],
        block_shape=[rhs.dtype.shape[0], output.shape[1]],
    )
    output_tiles = ntl.make_tensor_descriptor(
        output.source.data_ptr(),
        shape=[m_size, n_size],
        strides=[output.source.stride(0), 1],
        block_shape=[output.shape[0], output.shape[1]],
    )
    pid = ntl.program_id(0)
    grid_m = ntl.cdiv(m_size, output.shape[0])
    per_group = 8 * ntl.cdiv(n_size, output.shape[1])
    first_row = (pid // per_group) * 8
    rows = ntl.minimum(grid_m - first_row, 8)
    row = first_row + (pid % per_group) % rows
    column = (pid % per_group) // rows
    accumulator = ntl.zeros(output.shape, dtype=ntl.float32)
    for k in range(lhs.shape[0]):
        a = lhs_tiles.load([row * output.shape[0], k * rhs.dtype.shape[0]])
        b = rhs_tiles.load([k * rhs.dtype.shape[0], column * output.shape[1]])
        accumulator = ntl.dot(a, b, accumulator)
    output_tiles.store(
        [row * output.shape[0], column * output.shape[1]], accumulator.to(ntl.float16)
    )


@functools.cache
def nt_tma(block_m, block_n, block_k, num_warps, num_stages):
    """A launcher ``run(lhs, rhs, output)`` for the NineToothed TMA kernel."""
    with generated_cache.staff_kernel():  # tensor descriptors: beyond a student's kernel
        kernel = ninetoothed.make(
            nt_tma_arrangement,
            nt_tma_application,
            (Tensor(2), Tensor(2), Tensor(2)),
            num_warps=num_warps,
            num_stages=num_stages,
        )

    def run(lhs, rhs, output):
        require_tma_rows(lhs, rhs, output)
        kernel(lhs, rhs, output, BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=block_k)

    return run
