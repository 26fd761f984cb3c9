"""The ceiling for round 5: a plain Triton GEMM with TMA loads and a persistent schedule.

Not NineToothed. One program per SM loops over the C tiles in grouped order,
optionally warp-specialised (``tl.range(..., warp_specialize=True)``): the best
schedule this Triton offers without writing CUDA. If it cannot reach a goal, no
NineToothed arrangement on the same Triton will. benchmarks/lab/tma_kernels.py is
the NineToothed kernel it is measured against (``--sections tma``).
"""

import triton
import triton.language as tl

from solutions.tuned.persistent_tma import require_tma_rows


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
                   group=8):
    """A launcher ``run(lhs, rhs, output)`` for the plain Triton persistent kernel."""
    def run(lhs, rhs, output):
        require_tma_rows(lhs, rhs, output)
        m_size, k_size = lhs.shape
        n_size = rhs.shape[1]
        tiles = triton.cdiv(m_size, block_m) * triton.cdiv(n_size, block_n)
        _persistent_tma_kernel[(min(sms, tiles),)](
            lhs, rhs, output, m_size, n_size, k_size, lhs.stride(0), rhs.stride(0),
            output.stride(0), BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=block_k, GROUP=group,
            PROGRAMS=sms, WARP_SPECIALIZE=warp_specialize, num_warps=num_warps,
            num_stages=num_stages)

    return run
