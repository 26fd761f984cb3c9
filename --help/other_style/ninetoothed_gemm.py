# Kit test submission other_style: other parameter names, helper variables and order
"""Reference solution: C = A @ B in NineToothed, float16 in and out.

Same file shape as the student skeleton (assignment/ninetoothed_gemm.py), so the
tests, the grader and the benchmark treat it like any other submission.

The idea: one program computes one (BLOCK_SIZE_M, BLOCK_SIZE_N) tile of C. It
needs the whole row of A tiles and the whole column of B tiles that meet at that
tile, paired by their K index, and it sums their products in float32.

This is the model answer and nothing more. The staff's tuned reference, which
picks larger tiles and a better program order per shape, is solutions/tuned_gemm.py
(the kernels in solutions/tuned/, the measurements in docs/perf-notes.md).
"""

import functools
import os

import ninetoothed
import ninetoothed.language as ntl
import torch
from ninetoothed import Tensor

# The course default is 64 x 64 x 64. With NINETOOTHED_AUTOTUNE=1 (GPU only)
# the three sizes become meta-parameters that NineToothed tunes over the ranges
# below: M and N in [64, 128], K in [32, 64], powers of two. That is this file's
# _kernel() only: the tuned reference (solutions/tuned_gemm.py) never uses these
# symbols; it builds its own kernels with explicit block sizes and times them.
if os.environ.get("NINETOOTHED_AUTOTUNE") == "1":
    BLOCK_SIZE_M = ninetoothed.block_size(lower_bound=64, upper_bound=128)
    BLOCK_SIZE_N = ninetoothed.block_size(lower_bound=64, upper_bound=128)
    BLOCK_SIZE_K = ninetoothed.block_size(lower_bound=32, upper_bound=64)
else:
    BLOCK_SIZE_M = 64
    BLOCK_SIZE_N = 64
    BLOCK_SIZE_K = 64


def arrangement(a, b, c):
    """Same layout as the reference, written with other names and in another order."""
    c_tiles = c.tile((BLOCK_SIZE_M, BLOCK_SIZE_N))
    rows_of_blocks = c_tiles.shape[0]
    cols_of_blocks = c_tiles.shape[1]

    b_tiles = b.tile((BLOCK_SIZE_K, BLOCK_SIZE_N))
    b_columns = b_tiles.tile((-1, 1)).expand((rows_of_blocks, -1))
    b_columns.dtype = b_columns.dtype.squeeze(1)

    a_tiles = a.tile((BLOCK_SIZE_M, BLOCK_SIZE_K))
    a_rows = a_tiles.tile((1, -1)).expand((-1, cols_of_blocks))
    a_rows.dtype = a_rows.dtype.squeeze(0)

    return a_rows, b_columns, c_tiles


def application(a, b, c):
    """A while-free loop with a named tile count and an explicit sum."""
    num_k_tiles = a.shape[0]
    acc = ntl.zeros(c.shape, dtype=ntl.float32)
    for step in range(num_k_tiles):
        partial = ntl.dot(a[step], b[step])
        acc = acc + partial
    c = acc.to(ntl.float16)  # noqa: F841


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

    output = torch.empty((lhs.shape[0], rhs.shape[1]), dtype=torch.float16, device=lhs.device)
    _kernel()(lhs, rhs, output)
    return output
