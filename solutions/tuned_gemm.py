"""The tuned reference: the submission's shape, with the tuned kernels behind NINETOOTHED_AUTOTUNE=1.

The benchmark runs it like any file:

    NINETOOTHED_AUTOTUNE=1 python assignment/benchmark_ninetoothed_gemm.py --submission solutions/tuned_gemm.py

With NINETOOTHED_AUTOTUNE=1, nt_gemm on CUDA operands is ``solutions.tuned.plan``'s:
on the first call of each shape it times a few explicit tile configurations
(solutions/tuned/configs.py) and keeps the winner; ``chosen_config(m, n, k)`` tells
the benchmark which one ran. The flag also turns the model answer's BLOCK_SIZE_*
into ninetoothed.block_size() symbols, which is how the benchmark tells that the
file tunes, but no tuned kernel uses them: each is built with its configuration's
explicit block sizes, warps and stages, and no NineToothed or Triton autotuner
runs. Without the flag, or on CPU operands, nt_gemm is the model answer's.
"""

import os

from solutions import ninetoothed_gemm
from solutions.ninetoothed_gemm import (
    BLOCK_SIZE_K,
    BLOCK_SIZE_M,
    BLOCK_SIZE_N,
    application,
    arrangement,
)
from solutions.tuned import plan

__all__ = [
    "BLOCK_SIZE_M",
    "BLOCK_SIZE_N",
    "BLOCK_SIZE_K",
    "arrangement",
    "application",
    "nt_gemm",
    "chosen_config",
]  # the submission's names, and the tuner's report

AUTOTUNE = os.environ.get("NINETOOTHED_AUTOTUNE") == "1"

_kernel = ninetoothed_gemm._kernel  # the skeleton's handle, which the benchmark times alone
nt_gemm = plan.nt_gemm if AUTOTUNE else ninetoothed_gemm.nt_gemm
chosen_config = plan.chosen_config
