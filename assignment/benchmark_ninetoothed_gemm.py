"""Benchmark your NineToothed GEMM against torch.mm, on a GPU.

From the repository root:

    python assignment/benchmark_ninetoothed_gemm.py
    python assignment/benchmark_ninetoothed_gemm.py --sizes 512 4096 4096x4096x4095
    NINETOOTHED_AUTOTUNE=1 python assignment/benchmark_ninetoothed_gemm.py
    python assignment/benchmark_ninetoothed_gemm.py --check-only     # no GPU needed

Every size (default: the squares 8, 16, ..., 4096) is first compared with
torch.mm under the guide's tolerance; a size that fails is reported FAIL and is
not timed. The rest are timed, nt_gemm as you call it (its output allocation
included) beside torch.mm on the same inputs. You get a table here, and a CSV
and a PNG report card in benchmark-results/ (new names on every run): hand in
the CSV and the PNG with your ninetoothed_gemm.py.

Without a GPU the script says so and stops (the interpreter gives no speeds);
``--check-only`` still tells you whether your kernel is right.
Run with ``--help`` for every option. The measurement itself lives in
``benchmarks/`` and is the same one the course staff use for their baselines.
"""

import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(
        main(
            prog="python assignment/benchmark_ninetoothed_gemm.py",
            default_submission=pathlib.Path(__file__).resolve().parent / "ninetoothed_gemm.py",
        )
    )
