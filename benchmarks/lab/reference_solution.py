"""The reference solution as one module, for the exploration kernels built from its pieces.

benchmarks/lab/tma_kernels.py, persistent_arrangement.py and split_k.py reuse its
arrangements and application; importing the file once serves them all. It reads
solutions/, so the student handout leaves it, and every module importing it, out.
"""

import functools
import pathlib

from grader.core.loading import load_submission

PATH = pathlib.Path(__file__).resolve().parents[2] / "solutions" / "ninetoothed_gemm.py"


@functools.cache
def reference():
    """solutions/ninetoothed_gemm.py, imported on first use."""
    return load_submission(PATH)
