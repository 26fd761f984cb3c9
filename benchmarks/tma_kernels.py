"""GEMM kernels that load tiles through TMA tensor descriptors (H100/H200 and later).

Round 5 of docs/perf-notes.md asks whether hardware tile loads would close the
last gaps to torch.mm, mainly at 3000^3. Two kernels answer it:

- ``nt_tma``: a NineToothed kernel. The arrangement is the reference's
  ``arrangement`` (one program per C tile); the application does not use its
  tiles' pointer loads but builds tensor descriptors from NineToothed's
  ``data_ptr()``, ``stride()`` and source shapes, and walks the tiles in groups
  of ``GROUP_SIZE_M`` rows itself.
- ``persistent_tma``: plain Triton, not NineToothed. One program per SM loops
  over C tiles, optionally warp-specialised. It is the ceiling: the best
  schedule this Triton offers without writing CUDA.

Neither is part of the reference; the exploration script measures them
(``--sections tma``). Device-side descriptors need scratch memory, which
``use_torch_scratch`` provides.
"""

import functools
import pathlib

import ninetoothed
import ninetoothed.language as ntl
import triton
import triton.language as tl
from ninetoothed import Symbol, Tensor

from grader.loading import load_submission

GROUP_SIZE_M = 8  # written as a literal in nt_tma_application: it has no name there
REFERENCE = pathlib.Path(__file__).resolve().parent.parent / "solutions" / "ninetoothed_gemm.py"

BLOCK_M = Symbol("BLOCK_M", constexpr=True)
BLOCK_N = Symbol("BLOCK_N", constexpr=True)
BLOCK_K = Symbol("BLOCK_K", constexpr=True)


def use_torch_scratch(torch):
    """Let Triton allocate descriptor scratch space through torch on the current GPU."""
    triton.set_allocator(
        lambda size, alignment, stream: torch.empty(size, device="cuda", dtype=torch.int8))


def nt_tma_arrangement(lhs, rhs, output):
    """The reference's plain arrangement; it sets the grid and names the block sizes."""
    return load_submission(REFERENCE).arrangement(lhs, rhs, output, BLOCK_M, BLOCK_N, BLOCK_K)


def nt_tma_application(lhs, rhs, output):
    """One C tile per program, its operand tiles loaded by TMA in grouped program order."""
    m_size = lhs.source.shape[0]
    k_size = lhs.source.shape[1]
    n_size = rhs.source.shape[1]
    lhs_tiles = ntl.make_tensor_descriptor(
        lhs.source.data_ptr(), shape=[m_size, k_size], strides=[lhs.source.stride(0), 1],
        block_shape=[output.shape[0], rhs.dtype.shape[0]])
    rhs_tiles = ntl.make_tensor_descriptor(
        rhs.source.data_ptr(), shape=[k_size, n_size], strides=[rhs.source.stride(0), 1],
        block_shape=[rhs.dtype.shape[0], output.shape[1]])
    output_tiles = ntl.make_tensor_descriptor(
        output.source.data_ptr(), shape=[m_size, n_size], strides=[output.source.stride(0), 1],
        block_shape=[output.shape[0], output.shape[1]])
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
    output_tiles.store([row * output.shape[0], column * output.shape[1]],
                       accumulator.to(ntl.float16))


@functools.cache
def nt_tma(block_m, block_n, block_k, num_warps, num_stages):
    """A launcher ``run(lhs, rhs, output)`` for the NineToothed TMA kernel."""
    kernel = ninetoothed.make(nt_tma_arrangement, nt_tma_application,
                              (Tensor(2), Tensor(2), Tensor(2)),
                              num_warps=num_warps, num_stages=num_stages)

    def run(lhs, rhs, output):
        kernel(lhs, rhs, output, BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=block_k)

    return run


@triton.jit
def _persistent_tma_kernel(a_ptr, b_ptr, c_ptr, m_size, n_size, k_size, a_stride, b_stride,
                           c_stride, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                           BLOCK_K: tl.constexpr, GROUP: tl.constexpr, PROGRAMS: tl.constexpr,
                           WARP_SPECIALIZE: tl.constexpr):
    a_tiles = tl.make_tensor_descriptor(a_ptr, [m_size, k_size], [a_stride, 1], [BLOCK_M, BLOCK_K])
    b_tiles = tl.make_tensor_descriptor(b_ptr, [k_size, n_size], [b_stride, 1], [BLOCK_K, BLOCK_N])
    c_tiles = tl.make_tensor_descriptor(c_ptr, [m_size, n_size], [c_stride, 1], [BLOCK_M, BLOCK_N])
    grid_m = tl.cdiv(m_size, BLOCK_M)
    per_group = GROUP * tl.cdiv(n_size, BLOCK_N)
    for tile in tl.range(tl.program_id(0), grid_m * tl.cdiv(n_size, BLOCK_N), PROGRAMS,
                         flatten=True, warp_specialize=WARP_SPECIALIZE):
        first_row = (tile // per_group) * GROUP
        rows = tl.minimum(grid_m - first_row, GROUP)
        row = first_row + (tile % per_group) % rows
        column = (tile % per_group) // rows
        accumulator = tl.zeros((BLOCK_M, BLOCK_N), tl.float32)
        for k in range(tl.cdiv(k_size, BLOCK_K)):
            a = a_tiles.load([row * BLOCK_M, k * BLOCK_K])
            b = b_tiles.load([k * BLOCK_K, column * BLOCK_N])
            accumulator = tl.dot(a, b, accumulator)
        c_tiles.store([row * BLOCK_M, column * BLOCK_N], accumulator.to(tl.float16))


def persistent_tma(block_m, block_n, block_k, num_warps, num_stages, warp_specialize, sms,
                   group=GROUP_SIZE_M):
    """A launcher ``run(lhs, rhs, output)`` for the plain Triton persistent kernel."""
    def run(lhs, rhs, output):
        m_size, k_size = lhs.shape
        n_size = rhs.shape[1]
        tiles = triton.cdiv(m_size, block_m) * triton.cdiv(n_size, block_n)
        _persistent_tma_kernel[(min(sms, tiles),)](
            lhs, rhs, output, m_size, n_size, k_size, lhs.stride(0), rhs.stride(0),
            output.stride(0), BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=block_k, GROUP=group,
            PROGRAMS=sms, WARP_SPECIALIZE=warp_specialize, num_warps=num_warps,
            num_stages=num_stages)

    return run
