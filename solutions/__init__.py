"""The reference, for course staff: files with the submission's shape, graded and
benchmarked like any student's. These paths are the one place that names them.

MODEL_ANSWER is what a student writes; TUNED runs the tuned kernels of
``solutions.tuned`` when NINETOOTHED_AUTOTUNE=1 is set on a GPU.
"""

import pathlib

MODEL_ANSWER = pathlib.Path(__file__).resolve().parent / "ninetoothed_gemm.py"
TUNED = pathlib.Path(__file__).resolve().parent / "tuned_gemm.py"
