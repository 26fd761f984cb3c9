"""The tuned kernels' arrangements: the model answer's tiles in an L2-friendly order.

Each takes the block sizes as arguments (``functools.partial`` fixes them per
configuration) and gives every program the same tiles as the model answer's
``arrangement``; only the order in which programs are numbered, or how the
operands reach the kernel, changes.
"""

from ninetoothed import Symbol


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
