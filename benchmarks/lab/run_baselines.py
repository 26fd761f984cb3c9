"""Measure the course baselines on one GPU: the reference, fixed and autotuned, square and ragged.

    python benchmarks/lab/run_baselines.py OUT_DIR

runs, each in its own process (NINETOOTHED_AUTOTUNE is read when the kernel
file is imported, so the two configurations cannot share one):

1. the model answer (solutions/ninetoothed_gemm.py) at the course default
   64x64x64, squares 8..4096;
2. the tuned reference (solutions/tuned_gemm.py) with NINETOOTHED_AUTOTUNE=1,
   squares 8..4096;
3. the model answer at 64x64x64 on ragged shapes (a K or N that is not a multiple
   of 16 is where NineToothed falls off a cliff, which squares never show);
4. the same ragged shapes, tuned.

Each step writes its CSV, report card and log into OUT_DIR through the same
command students run (``assignment/benchmark_ninetoothed_gemm.py``). Steps that
would start after the time budget are skipped and say so. Copy the results
into ``benchmarks/baselines/`` to commit them.
"""

import argparse
import os
import pathlib
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import solutions  # noqa: E402
from benchmarks.cli import NO_GPU  # noqa: E402
from benchmarks.harness import RAGGED_SIZES, size_label  # noqa: E402

SCRIPT = ROOT / "assignment" / "benchmark_ninetoothed_gemm.py"
RAGGED = [
    size_label(*shape) if shape[0] == shape[1] == shape[2] else "x".join(map(str, shape))
    for shape in RAGGED_SIZES
]

STEPS = (
    # (label, autotune, sizes or None for the default squares)
    ("reference-64x64x64", False, None),
    ("reference-autotune", True, None),
    ("reference-64x64x64-ragged", False, RAGGED),
    ("reference-autotune-ragged", True, RAGGED),
)


def step_command(label, sizes, out_dir, autotune=False):
    submission = solutions.TUNED if autotune else solutions.MODEL_ANSWER
    command = [
        sys.executable,
        str(SCRIPT),
        "--submission",
        str(submission),
        "--out",
        str(out_dir),
        "--label",
        label,
        "--no-progress",
    ]
    if sizes:
        command += ["--sizes", *sizes]
    return command


def step_env(autotune):
    env = dict(os.environ)
    env.pop("NINETOOTHED_AUTOTUNE", None)
    if autotune:
        env["NINETOOTHED_AUTOTUNE"] = "1"
        # The reference may keep its tuning choices between runs; a baseline measures the
        # search from scratch, so that its cost is on record.
        env["NTGEMM_TUNING_CACHE"] = "off"
    env["NTGEMM_BACKEND"] = "gpu"  # fail at once rather than fall back to the interpreter
    return env


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python benchmarks/lab/run_baselines.py",
        description="Run the reference baselines (fixed and autotuned, square and ragged) "
        "on this GPU, writing CSVs, report cards and logs into OUT_DIR.",
    )
    parser.add_argument(
        "out",
        nargs="?",
        default="benchmark-results/baselines",
        help="output folder (default: %(default)s)",
    )
    parser.add_argument(
        "--budget",
        type=float,
        default=450.0,
        metavar="SECONDS",
        help="skip steps that would start after this many seconds, and stop "
        "a step that runs past it (default: %(default)s)",
    )
    parser.add_argument(
        "--skip",
        nargs="*",
        default=[],
        metavar="LABEL",
        help=f"steps to leave out: {', '.join(s[0] for s in STEPS)}",
    )
    args = parser.parse_args(argv)

    out_dir = pathlib.Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    summary = []
    no_gpu = False
    for label, autotune, sizes in STEPS:
        if no_gpu:
            summary.append((label, "skipped (no GPU)", 0.0))
            continue
        if label in args.skip:
            summary.append((label, "skipped (--skip)", 0.0))
            continue
        left = args.budget - (time.perf_counter() - started)
        if left <= 10:
            summary.append((label, "skipped (time budget spent)", 0.0))
            continue
        command = step_command(label, sizes, out_dir, autotune)
        shown = " ".join(command[1:]).replace(str(ROOT) + os.sep, "")
        print(f"\n=== {label}: {'NINETOOTHED_AUTOTUNE=1 ' if autotune else ''}{shown}", flush=True)
        step_start = time.perf_counter()
        try:
            result = subprocess.run(
                command,
                cwd=ROOT,
                env=step_env(autotune),
                text=True,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                timeout=left,
            )
            output, status = result.stdout, f"exit {result.returncode}"
            no_gpu = result.returncode == NO_GPU
        except subprocess.TimeoutExpired as error:
            output = error.stdout or ""
            output = output.decode() if isinstance(output, bytes) else output
            status = f"stopped after {left:.0f} s (time budget)"
        seconds = time.perf_counter() - step_start
        print(output, end="" if output.endswith("\n") else "\n", flush=True)
        (out_dir / f"{label}.log").write_text(output)
        summary.append((label, status, seconds))
        print(f"=== {label}: {status} in {seconds:.1f} s", flush=True)

    total = time.perf_counter() - started
    print("\nsummary:")
    for label, status, seconds in summary:
        print(f"  {label:<28} {status:<32} {seconds:7.1f} s")
    print(f"  {'total':<28} {'':<32} {total:7.1f} s")
    print(f"results in {out_dir}/")
    ok = all(
        status == "exit 0" or status.startswith("skipped (--skip)") for _, status, _ in summary
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
