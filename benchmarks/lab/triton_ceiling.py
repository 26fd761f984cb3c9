"""The ceiling for rounds 5 and 9: plain Triton GEMMs with TMA loads, persistent and Stream-K.

Not NineToothed. One program per SM loops over the C tiles in grouped order,
optionally warp-specialised (``tl.range(..., warp_specialize=True)``): the best
schedule this Triton offers without writing CUDA. If it cannot reach a goal, no
NineToothed arrangement on the same Triton will. benchmarks/lab/tma_kernels.py is
the NineToothed kernel it is measured against (``--sections tma``).
"""

import torch
import triton
import triton.language as tl

from benchmarks.lab.stream_k import scratch
from solutions.tuned.persistent_tma import require_tma_rows


@triton.jit
def _persistent_tma_kernel(
    a_ptr,
    b_ptr,
    c_ptr,
    m_size,
    n_size,
    k_size,
    a_stride,
    b_stride,
    c_stride,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP: tl.constexpr,
    PROGRAMS: tl.constexpr,
    WARP_SPECIALIZE: tl.constexpr,
):
    a_tiles = tl.make_tensor_descriptor(a_ptr, [m_size, k_size], [a_stride, 1], [BLOCK_M, BLOCK_K])
    b_tiles = tl.make_tensor_descriptor(b_ptr, [k_size, n_size], [b_stride, 1], [BLOCK_K, BLOCK_N])
    c_tiles = tl.make_tensor_descriptor(c_ptr, [m_size, n_size], [c_stride, 1], [BLOCK_M, BLOCK_N])
    grid_m = tl.cdiv(m_size, BLOCK_M)
    per_group = GROUP * tl.cdiv(n_size, BLOCK_N)
    for tile in tl.range(
        tl.program_id(0),
        grid_m * tl.cdiv(n_size, BLOCK_N),
        PROGRAMS,
        flatten=True,
        warp_specialize=WARP_SPECIALIZE,
    ):
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


def persistent_tma(block_m, block_n, block_k, num_warps, num_stages, warp_specialize, sms, group=8):
    """A launcher ``run(lhs, rhs, output)`` for the plain Triton persistent kernel."""

    def run(lhs, rhs, output):
        require_tma_rows(lhs, rhs, output)
        m_size, k_size = lhs.shape
        n_size = rhs.shape[1]
        tiles = triton.cdiv(m_size, block_m) * triton.cdiv(n_size, block_n)
        _persistent_tma_kernel[(min(sms, tiles),)](
            lhs,
            rhs,
            output,
            m_size,
            n_size,
            k_size,
            lhs.stride(0),
            rhs.stride(0),
            output.stride(0),
            BLOCK_M=block_m,
            BLOCK_N=block_n,
            BLOCK_K=block_k,
            GROUP=group,
            PROGRAMS=sms,
            WARP_SPECIALIZE=warp_specialize,
            num_warps=num_warps,
            num_stages=num_stages,
        )

    return run


@triton.jit
def _tile_position(tile, grid_m, grid_n, GROUP: tl.constexpr):
    first_row = (tile // (GROUP * grid_n)) * GROUP
    rows = tl.minimum(grid_m - first_row, GROUP)
    return first_row + (tile % (GROUP * grid_n)) % rows, (tile % (GROUP * grid_n)) // rows


@triton.jit
def _k_steps(
    a_tiles,
    b_tiles,
    row,
    column,
    first,
    last,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
):
    accumulator = tl.zeros((BLOCK_M, BLOCK_N), tl.float32)
    for k in range(first, last):
        a = a_tiles.load([row * BLOCK_M, k * BLOCK_K])
        b = b_tiles.load([k * BLOCK_K, column * BLOCK_N])
        accumulator = tl.dot(a, b, accumulator)
    return accumulator


@triton.jit
def _store_tile(
    c_tiles,
    row,
    column,
    accumulator,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    STORE_SPLIT: tl.constexpr,
):
    if STORE_SPLIT == 2:
        halves = tl.permute(tl.reshape(accumulator, (BLOCK_M, 2, BLOCK_N // 2)), (0, 2, 1))
        left, right = tl.split(halves)
        c_tiles.store([row * BLOCK_M, column * BLOCK_N], left.to(tl.float16))
        c_tiles.store([row * BLOCK_M, column * BLOCK_N + BLOCK_N // 2], right.to(tl.float16))
    else:
        c_tiles.store([row * BLOCK_M, column * BLOCK_N], accumulator.to(tl.float16))


@triton.jit
def _stream_k_kernel(
    a_ptr,
    b_ptr,
    c_ptr,
    partials_ptr,
    flags_ptr,
    m_size,
    n_size,
    k_size,
    a_stride,
    b_stride,
    c_stride,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP: tl.constexpr,
    PROGRAMS: tl.constexpr,
    SK_WAVES: tl.constexpr,
    STORE_SPLIT: tl.constexpr,
):
    """benchmarks/lab/stream_k.py's schedule in plain Triton (its docstring says how)."""
    a_tiles = tl.make_tensor_descriptor(a_ptr, [m_size, k_size], [a_stride, 1], [BLOCK_M, BLOCK_K])
    b_tiles = tl.make_tensor_descriptor(b_ptr, [k_size, n_size], [b_stride, 1], [BLOCK_K, BLOCK_N])
    c_tiles = tl.make_tensor_descriptor(
        c_ptr, [m_size, n_size], [c_stride, 1], [BLOCK_M, BLOCK_N // STORE_SPLIT]
    )
    grid_m = tl.cdiv(m_size, BLOCK_M)
    grid_n = tl.cdiv(n_size, BLOCK_N)
    tiles = grid_m * grid_n
    steps = tl.cdiv(k_size, BLOCK_K)
    shared = tl.where(
        (tiles % PROGRAMS == 0) | (SK_WAVES == 0),
        0,
        tiles % PROGRAMS + tl.minimum(tiles // PROGRAMS, SK_WAVES - 1) * PROGRAMS,
    )
    whole = tiles - shared
    program = tl.program_id(0)
    for tile in tl.range(program, whole, PROGRAMS, flatten=True):
        row, column = _tile_position(tile, grid_m, grid_n, GROUP)
        accumulator = _k_steps(a_tiles, b_tiles, row, column, 0, steps, BLOCK_M, BLOCK_N, BLOCK_K)
        _store_tile(c_tiles, row, column, accumulator, BLOCK_M, BLOCK_N, STORE_SPLIT)
    per_program = tl.cdiv(shared * steps, PROGRAMS)
    start = program * per_program
    high = tl.minimum(start + per_program, shared * steps)
    offsets = (program * BLOCK_M + tl.arange(0, BLOCK_M))[:, None] * BLOCK_N + tl.arange(
        0, BLOCK_N
    )[None, :]
    while high > start:
        first = ((high - 1) // steps) * steps
        low = tl.maximum(first, start)
        row, column = _tile_position(whole + first // steps, grid_m, grid_n, GROUP)
        accumulator = _k_steps(
            a_tiles, b_tiles, row, column, low - first, high - first, BLOCK_M, BLOCK_N, BLOCK_K
        )
        if high == first + steps:
            for other in range(first // per_program, program):
                while tl.atomic_cas(flags_ptr + other, 1, 0) != 1:
                    pass
                accumulator += tl.load(
                    partials_ptr + offsets + (other - program) * BLOCK_M * BLOCK_N,
                    cache_modifier=".cg",
                )
            _store_tile(c_tiles, row, column, accumulator, BLOCK_M, BLOCK_N, STORE_SPLIT)
        else:
            tl.store(partials_ptr + offsets, accumulator, cache_modifier=".cg")
            tl.debug_barrier()
            tl.atomic_xchg(flags_ptr + program, 1)
        high = low


def stream_k(
    block_m, block_n, block_k, num_warps, num_stages, sms, sk_waves=1, store_split=1, group=8
):
    """A launcher ``run(lhs, rhs, output)`` for the plain Triton Stream-K kernel; it shares
    benchmarks.lab.stream_k's scratch (partials and flags)."""

    def run(lhs, rhs, output):
        require_tma_rows(lhs, rhs, output)
        partials, flags = scratch(
            lhs.device, torch.cuda.current_stream(lhs.device).stream_id, block_m, block_n, sms
        )
        _stream_k_kernel[(sms,)](
            lhs,
            rhs,
            output,
            partials,
            flags,
            lhs.shape[0],
            rhs.shape[1],
            lhs.shape[1],
            lhs.stride(0),
            rhs.stride(0),
            output.stride(0),
            BLOCK_M=block_m,
            BLOCK_N=block_n,
            BLOCK_K=block_k,
            GROUP=group,
            PROGRAMS=sms,
            SK_WAVES=sk_waves,
            STORE_SPLIT=store_split,
            num_warps=num_warps,
            num_stages=num_stages,
        )

    return run
