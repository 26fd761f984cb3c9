"""Stream-K on the persistent TMA kernel: the tiles of a part-full last wave shared by K.

A grid whose tiles do not fill whole waves of the SMs leaves SMs idle in its last
wave: 6144x1024x4096 in 128x256 tiles is 192 tiles on 132 SMs, one whole wave and one
45% full. Here the P programs (the SM count) first walk the whole waves' tiles as
``persistent_tma`` does (tiles p, p + P, ...), then share the rest by their K steps:
the K steps of those tiles, laid end to end, are cut into P equal ranges, one per
program, so every SM ends at about the same time. SK_WAVES = 2 shares one whole wave
more, which gives each program a longer range; SK_WAVES = 0 shares none (the persistent
kernel, with this module's stores).

A tile whose K steps two or more ranges cover is summed in float32: each program whose
range ends inside a tile writes its partial sum to its own slot of ``partials`` and
raises its flag; the program whose range holds the tile's last K step adds those
partials and stores the tile. That program waits only on programs of lower number
(with P the SM count and one program per SM they all run at once; the interpreter has
already run them), and walks its range from the end, so the partials it waits for were
the first thing their programs computed. It lowers each flag it read, so ``flags`` is all zeros again after a launch.

One launch at a time may use a (partials, flags) pair: ``scratch`` keeps one per
device, stream and tile. STORE_SPLIT = 2 stores each C tile in two halves of BLOCK_N / 2
columns, which halves the shared memory the store takes.

Not part of the reference yet: it has run on the interpreter only (its tests), and the
tuner offers a kernel only once a GPU has timed it against the kernels it would replace
(``python benchmarks/lab/explore_variants.py --sections stream_k``; docs/perf-notes.md,
round 9).

Constants ride in the arrangement as in ``persistent_tma``: PROGRAMS and GROUP_M in
output's per-program shape, SK_WAVES and STORE_SPLIT in partials'. This module must
hold no ``triton.jit`` function (NineToothed copies every one it finds into the
generated source).
"""

import functools

import ninetoothed
import ninetoothed.language as ntl
import torch
from ninetoothed import Symbol, Tensor

from grader.core import generated_cache
from solutions.tuned.persistent_tma import (
    BLOCK_K,
    BLOCK_M,
    BLOCK_N,
    GROUP_M,
    PROGRAMS,
    every_program,
    refusing_misread_rows,
    under_constants,
    use_torch_scratch,
)

SK_WAVES = Symbol("SK_WAVES", constexpr=True)
STORE_SPLIT = Symbol("STORE_SPLIT", constexpr=True)


def stream_k_arrangement(lhs, rhs, output, partials, flags):
    """A grid of PROGRAMS; partials is (PROGRAMS * BLOCK_M, BLOCK_N) float32, flags
    (PROGRAMS,) int32. Only their addresses are read in the application."""
    return (
        every_program(lhs, (BLOCK_M, BLOCK_K)),
        every_program(rhs, (BLOCK_K, BLOCK_N)),
        under_constants(output, (BLOCK_M, BLOCK_N), (PROGRAMS, GROUP_M)),
        under_constants(partials, (BLOCK_M, BLOCK_N), (SK_WAVES, STORE_SPLIT)),
        flags.tile((1,)).tile((-1,)).expand((PROGRAMS,)),
    )


def tile_position(tile, grid_m, grid_n, group):
    """(row, column) of a tile number in grouped order, as ``persistent_tma`` walks them."""
    first_row = (tile // (group * grid_n)) * group
    rows = ntl.minimum(grid_m - first_row, group)
    return first_row + (tile % (group * grid_n)) % rows, (tile % (group * grid_n)) // rows


def k_steps(lhs_tiles, rhs_tiles, row, column, first, last, block_m, block_n, block_k):
    """The float32 sum over K steps first .. last - 1 of one C tile."""
    accumulator = ntl.zeros((block_m, block_n), dtype=ntl.float32)
    for k in range(first, last):
        a = lhs_tiles.load([row * block_m, k * block_k])
        b = rhs_tiles.load([k * block_k, column * block_n])
        accumulator = ntl.dot(a, b, accumulator)
    return accumulator


def store_tile(output_tiles, row, column, accumulator, block_m, block_n, split):
    """Store a C tile as float16, whole or (split == 2) in two halves of columns."""
    if split == 2:
        halves = ntl.permute(ntl.reshape(accumulator, (block_m, 2, block_n // 2)), (0, 2, 1))
        left, right = ntl.split(halves)
        output_tiles.store([row * block_m, column * block_n], left.to(ntl.float16))
        output_tiles.store([row * block_m, column * block_n + block_n // 2], right.to(ntl.float16))
    else:
        output_tiles.store([row * block_m, column * block_n], accumulator.to(ntl.float16))


def partial_offsets(program, block_m, block_n):
    """Offsets of a program's (block_m, block_n) slot in partials, row-major."""
    rows = ntl.expand_dims(program * block_m + ntl.arange(0, block_m), 1)
    return rows * block_n + ntl.expand_dims(ntl.arange(0, block_n), 0)


def application(lhs, rhs, output, partials, flags):
    """Whole waves tile by tile, then the shared tiles by ranges of K steps.

    lhs.dtype.shape is (BLOCK_M, BLOCK_K), rhs.dtype.shape (BLOCK_K, BLOCK_N), output.shape
    (PROGRAMS, GROUP_M) and partials.shape (SK_WAVES, STORE_SPLIT), written out where
    used: the interpreter turns a constexpr assigned to a name into a tensor.
    """
    m_size = lhs.source.shape[0]
    k_size = lhs.source.shape[1]
    n_size = rhs.source.shape[1]
    lhs_tiles = ntl.make_tensor_descriptor(
        lhs.source.data_ptr(),
        shape=[m_size, k_size],
        strides=[lhs.source.stride(0), 1],
        block_shape=[lhs.dtype.shape[0], lhs.dtype.shape[1]],
    )
    rhs_tiles = ntl.make_tensor_descriptor(
        rhs.source.data_ptr(),
        shape=[k_size, n_size],
        strides=[rhs.source.stride(0), 1],
        block_shape=[rhs.dtype.shape[0], rhs.dtype.shape[1]],
    )
    output_tiles = ntl.make_tensor_descriptor(
        output.source.data_ptr(),
        shape=[m_size, n_size],
        strides=[output.source.stride(0), 1],
        block_shape=[lhs.dtype.shape[0], rhs.dtype.shape[1] // partials.shape[1]],
    )
    grid_m = ntl.cdiv(m_size, lhs.dtype.shape[0])
    grid_n = ntl.cdiv(n_size, rhs.dtype.shape[1])
    tiles = grid_m * grid_n
    steps = ntl.cdiv(k_size, lhs.dtype.shape[1])
    # No tile is shared when the tiles fill whole waves, or when SK_WAVES is 0.
    shared = ntl.where(
        (tiles % output.shape[0] == 0) | (partials.shape[0] == 0),
        0,
        tiles % output.shape[0]
        + ntl.minimum(tiles // output.shape[0], partials.shape[0] - 1) * output.shape[0],
    )
    whole = tiles - shared
    program = ntl.program_id(0)
    for tile in ntl.range(program, whole, output.shape[0], flatten=True):
        row, column = tile_position(tile, grid_m, grid_n, output.shape[1])
        accumulator = k_steps(
            lhs_tiles,
            rhs_tiles,
            row,
            column,
            0,
            steps,
            lhs.dtype.shape[0],
            rhs.dtype.shape[1],
            lhs.dtype.shape[1],
        )
        store_tile(
            output_tiles,
            row,
            column,
            accumulator,
            lhs.dtype.shape[0],
            rhs.dtype.shape[1],
            partials.shape[1],
        )
    # This program's range of the shared tiles' K steps, walked from its end.
    per_program = ntl.cdiv(shared * steps, output.shape[0])
    start = program * per_program
    high = ntl.minimum(start + per_program, shared * steps)
    while high > start:
        first = ((high - 1) // steps) * steps  # the first K step of the tile holding high - 1
        low = ntl.maximum(first, start)
        row, column = tile_position(whole + first // steps, grid_m, grid_n, output.shape[1])
        accumulator = k_steps(
            lhs_tiles,
            rhs_tiles,
            row,
            column,
            low - first,
            high - first,
            lhs.dtype.shape[0],
            rhs.dtype.shape[1],
            lhs.dtype.shape[1],
        )
        offsets = partial_offsets(program, lhs.dtype.shape[0], rhs.dtype.shape[1])
        if high == first + steps:  # the tile's last K step: add the others' partials, store
            for other in range(first // per_program, program):
                while ntl.atomic_cas(flags.source.data_ptr() + other, 1, 0) != 1:
                    pass
                accumulator += ntl.load(
                    partials.source.data_ptr()
                    + offsets
                    + (other - program) * lhs.dtype.shape[0] * rhs.dtype.shape[1],
                    cache_modifier=".cg",
                )
            store_tile(
                output_tiles,
                row,
                column,
                accumulator,
                lhs.dtype.shape[0],
                rhs.dtype.shape[1],
                partials.shape[1],
            )
        else:  # the range ends inside the tile: hand the partial to the tile's last program
            ntl.store(partials.source.data_ptr() + offsets, accumulator, cache_modifier=".cg")
            ntl.debug_barrier()
            ntl.atomic_xchg(flags.source.data_ptr() + program, 1)
        high = low


@functools.cache
def stream_k_kernel(num_warps, num_stages):
    """The NineToothed kernel; block sizes, GROUP_M, PROGRAMS, SK_WAVES and STORE_SPLIT
    are given at launch."""
    with generated_cache.staff_kernel():  # tensor descriptors: beyond a student's kernel
        return ninetoothed.make(
            stream_k_arrangement,
            application,
            (Tensor(2), Tensor(2), Tensor(2), Tensor(2), Tensor(1)),
            num_warps=num_warps,
            num_stages=num_stages,
        )


@functools.cache
def scratch(device, stream, block_m, block_n, programs):
    """(partials, flags) for launches on one stream: a slot per program, flags at zero."""
    return (
        torch.empty((programs * block_m, block_n), dtype=torch.float32, device=device),
        torch.zeros((programs,), dtype=torch.int32, device=device),
    )


@functools.cache
def unchecked_launcher(
    block_m, block_n, block_k, num_warps, num_stages, programs, group=8, sk_waves=1, store_split=1
):
    """``run(lhs, rhs, output)`` for operands already found TMA-readable, on ``programs``
    programs (the SM count)."""
    kernel = stream_k_kernel(num_warps, num_stages)

    def run(lhs, rhs, output):
        use_torch_scratch(lhs.device)
        partials, flags = scratch(
            lhs.device,
            torch.cuda.current_stream(lhs.device).stream_id if lhs.is_cuda else 0,
            block_m,
            block_n,
            programs,
        )
        kernel(
            lhs,
            rhs,
            output,
            partials,
            flags,
            BLOCK_M=block_m,
            BLOCK_N=block_n,
            BLOCK_K=block_k,
            GROUP_M=group,
            PROGRAMS=programs,
            SK_WAVES=sk_waves,
            STORE_SPLIT=store_split,
        )

    return run


@functools.cache
def nt_stream_k(*args, **kwargs):
    """``unchecked_launcher(*args, **kwargs)``, refusing operands TMA would read wrong."""
    return refusing_misread_rows(unchecked_launcher(*args, **kwargs))
