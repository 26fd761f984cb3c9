"""A persistent schedule written as a NineToothed arrangement (round 5, docs/perf-notes.md).

The reference launches one program per C tile. Here a fixed number of programs
(one per SM, say) each loop over several tiles: program p computes tiles
p, p + P, p + 2P, ... of ``grouped_arrangement``'s order, so the programs that
run at the same moment still share rows of A and columns of B in L2.

Only arrangement steps do it: flatten the grid of tiles, cut it into rows of P,
make those rows one level with ``ravel``, swap the two axes with ``permute`` and
tile again, so that P becomes the grid and the tile index j a loop level.
The last row of P is partly past the end; NineToothed masks those tiles.

Not part of the reference: it is correct but not faster (measured with
``python benchmarks/lab/explore_variants.py --sections persistent``).
"""

import functools

import ninetoothed
import ninetoothed.language as ntl
from ninetoothed import Tensor

from solutions.tuned import arrangements


def spread(arranged, programs, loop_dims):
    """(groups, N blocks, group) of X -> (P,) of (J, ...) of tiles: tile j*P + p to program p.

    ``loop_dims`` is how many loop dimensions the tensor has besides j: one (the
    K tiles) for an operand, none for the output.
    """
    flat = arranged.flatten().tile((programs,)).ravel()  # one level: (J, P, [K,] rows, columns)
    ndim = flat.ndim
    flat = flat.permute((1, 0) + tuple(range(2, ndim)))  # (P, J, [K,] rows, columns)
    flat = flat.tile((1,) + (-1,) * (ndim - 1))  # (P, 1, ...) of (1, J, [K,] rows, columns)
    flat.dtype = flat.dtype.squeeze(0)
    flat = flat.squeeze(tuple(range(1, ndim)))  # the grid: (P,)
    loop = 1 + loop_dims
    inner = flat.dtype.tile((1,) * loop + (-1, -1))  # (J, [K,] 1, 1) of (1, [1,] rows, columns)
    inner.dtype = inner.dtype.squeeze(tuple(range(loop)))
    flat.dtype = inner.squeeze((loop, loop + 1))  # (J, [K]) of tiles
    return flat


def persistent_arrangement(
    lhs, rhs, output, block_size_m, block_size_n, block_size_k, group_size_m, programs
):
    """The reference's grouped arrangement, spread over ``programs`` programs."""
    arranged = arrangements.grouped_arrangement(
        lhs, rhs, output, block_size_m, block_size_n, block_size_k, group_size_m
    )
    lhs_arranged, rhs_arranged, output_arranged = arranged
    return (
        spread(lhs_arranged, programs, 1),
        spread(rhs_arranged, programs, 1),
        spread(output_arranged, programs, 0),
    )


def persistent_application(lhs, rhs, output):
    """For each of this program's tiles, the reference's K loop and one store."""
    for j in range(lhs.shape[0]):
        accumulator = ntl.zeros(output.dtype.shape, dtype=ntl.float32)
        for k in range(lhs.shape[1]):
            accumulator += ntl.dot(lhs[j, k], rhs[j, k])
        output[j] = accumulator


def flattened_application(lhs, rhs, output):
    """The same, with Triton asked to flatten and pipeline the two loops as one."""
    for j in ntl.range(lhs.shape[0], flatten=True):
        accumulator = ntl.zeros(output.dtype.shape, dtype=ntl.float32)
        for k in range(lhs.shape[1]):
            accumulator += ntl.dot(lhs[j, k], rhs[j, k])
        output[j] = accumulator


@functools.cache
def persistent_kernel(
    block_m, block_n, block_k, group, programs, num_warps, num_stages, flatten=False
):
    """A NineToothed kernel ``kernel(lhs, rhs, output)`` for one configuration."""
    arrange = functools.partial(
        persistent_arrangement,
        block_size_m=block_m,
        block_size_n=block_n,
        block_size_k=block_k,
        group_size_m=group,
        programs=programs,
    )
    application = flattened_application if flatten else persistent_application
    return ninetoothed.make(
        arrange,
        application,
        (Tensor(2), Tensor(2), Tensor(2)),
        num_warps=num_warps,
        num_stages=num_stages,
    )
