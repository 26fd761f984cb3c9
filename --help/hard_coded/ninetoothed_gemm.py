# Kit test submission hard_coded: lhs expanded to a hard-coded 4 N blocks
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


def arrangement(lhs, rhs, output, block_size_m=BLOCK_SIZE_M, block_size_n=BLOCK_SIZE_N,
                block_size_k=BLOCK_SIZE_K):
    """Give program (i, j) row i of lhs tiles, column j of rhs tiles, and C tile (i, j).

    The block sizes default to the module's; autotune mode passes others.
    """
    output_arranged = output.tile((block_size_m, block_size_n))
    grid_m, grid_n = output_arranged.shape

    # (M/BM, K/BK) tiles -> one group per row of tiles -> repeated over the N blocks.
    lhs_arranged = lhs.tile((block_size_m, block_size_k)).tile((1, -1))
    lhs_arranged = lhs_arranged.expand((-1, 4))
    lhs_arranged.dtype = lhs_arranged.dtype.squeeze(0)

    # (K/BK, N/BN) tiles -> one group per column of tiles -> repeated over the M blocks.
    rhs_arranged = rhs.tile((block_size_k, block_size_n)).tile((-1, 1))
    rhs_arranged = rhs_arranged.expand((grid_m, -1))
    rhs_arranged.dtype = rhs_arranged.dtype.squeeze(1)

    return lhs_arranged, rhs_arranged, output_arranged


def application(lhs, rhs, output):
    """Sum the K tile products in float32, then write the tile once."""
    accumulator = ntl.zeros(output.shape, dtype=ntl.float32)
    for k in range(lhs.shape[0]):
        accumulator += ntl.dot(lhs[k], rhs[k])
    output = accumulator  # noqa: F841 (NineToothed turns this into the store)


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
