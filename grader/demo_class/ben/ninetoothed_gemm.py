"""Task: C = A @ B in NineToothed, float16 in and out, float32 accumulation.

Fill in the two functions marked TODO:

* ``arrangement(lhs, rhs, output)`` decides which tiles each GPU program gets.
  One program computes one (BLOCK_SIZE_M, BLOCK_SIZE_N) tile of the output, so
  the outermost shape of all three arranged tensors must be the output's block
  grid. lhs must carry, per program, the sequence of its (BLOCK_SIZE_M,
  BLOCK_SIZE_K) tiles along K; rhs the sequence of its (BLOCK_SIZE_K,
  BLOCK_SIZE_N) tiles along K.
* ``application(lhs, rhs, output)`` is what one program does with its tiles:
  walk the K sequence, accumulate ``ntl.dot`` products in float32, and assign
  the result to ``output``.

Check your work with ``pytest assignment`` (it runs on a CPU too), then
``pytest grader --submission assignment/ninetoothed_gemm.py`` for the full
grader and ``python assignment/benchmark_ninetoothed_gemm.py`` on a GPU.

Leave the rest of the file as it is: the grader relies on its names.
"""

import functools
import os

import ninetoothed
import ninetoothed.language as ntl  # noqa: F401 (application() will need it)
import torch
from ninetoothed import Tensor

# The course default is 64 x 64 x 64. With NINETOOTHED_AUTOTUNE=1 (GPU only)
# the three sizes become meta-parameters that NineToothed tunes over the ranges
# below: M and N in [64, 128], K in [32, 64], powers of two.
if os.environ.get("NINETOOTHED_AUTOTUNE") == "1":
    BLOCK_SIZE_M = ninetoothed.block_size(lower_bound=64, upper_bound=128)
    BLOCK_SIZE_N = ninetoothed.block_size(lower_bound=64, upper_bound=128)
    BLOCK_SIZE_K = ninetoothed.block_size(lower_bound=32, upper_bound=64)
else:
    BLOCK_SIZE_M = 64
    BLOCK_SIZE_N = 64
    BLOCK_SIZE_K = 64


def arrangement(lhs, rhs, output):
    # TODO: tile output by (BLOCK_SIZE_M, BLOCK_SIZE_N); tile lhs and rhs, group
    # each row (lhs) or column (rhs) of tiles, expand them across the output's
    # block grid and squeeze the length-1 dimension of their dtype.
    raise NotImplementedError(
        "arrangement() is not filled in yet: return (lhs_arranged, rhs_arranged, "
        "output_arranged), all three with the output's block grid as outer shape"
    )


def application(lhs, rhs, output):
    # TODO: a float32 accumulator of output.shape, a loop over the K tiles
    # adding ntl.dot(lhs[k], rhs[k]), then assign the accumulator to output.
    raise NotImplementedError(
        "application() is not filled in yet: accumulate ntl.dot(lhs[k], rhs[k]) "
        "over k in float32, then assign the result to output"
    )


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
