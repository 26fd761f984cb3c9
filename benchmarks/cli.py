"""The benchmark command: argument parsing, the no-GPU refusal, the table, CSV and card.

``assignment/benchmark_ninetoothed_gemm.py`` (students) and
``benchmarks/lab/run_baselines.py`` (staff) both call ``main`` here.

Exit status: 0 when every size checked passed, 1 when any size FAILed, 2 when
the submission cannot be used or the arguments are wrong, 3 when there is no GPU
to time on (``--check-only`` still works there).
"""

import argparse
import os
import pathlib
import sys
import time

OK, SOME_FAILED, UNUSABLE, NO_GPU = 0, 1, 2, 3
ROOT = pathlib.Path(__file__).resolve().parent.parent
DEFAULT_SUBMISSION = ROOT / "assignment" / "ninetoothed_gemm.py"
DEFAULT_OUT = ROOT / "benchmark-results"  # git-ignored, wherever the command runs from

NO_GPU_MESSAGE = """\
No CUDA GPU found: nothing was timed.
The benchmark measures speed, and on a CPU the kernel can only run through the
Triton interpreter, which says whether it is right but nothing about how fast it
is. Check correctness here with
    python assignment/benchmark_ninetoothed_gemm.py --check-only
(and `pytest assignment`), then run the benchmark on a machine with a GPU."""

WHAT_IF_NEEDS_GPU = """\
--what-if needs a CUDA GPU: it times your kernel with other tiles, warps and stages,
and the Triton interpreter on a CPU gives no speeds. Nothing was timed.
--what-if 需要 CUDA GPU：它用其他分块、warp 数和流水线级数为你的 kernel 计时，
而 CPU 上的 Triton 解释器给不出速度。没有计时任何东西。"""


def _parser(prog, default_submission):
    from benchmarks.harness import DEFAULT_SIZES, INTERPRETER_MAX_DIM
    from benchmarks.what_if import CANDIDATES

    squares = ", ".join(str(m) for m, _, _ in DEFAULT_SIZES)
    parser = argparse.ArgumentParser(
        prog=prog,
        description=(
            "Benchmark a NineToothed GEMM against torch.mm, and write a table, a CSV and\n"
            "a PNG report card.\n\n"
            "Each size is first checked against torch.mm with the guide's tolerance\n"
            "(|out - ref| <= 0.025 + 0.025*|ref|); a size that fails is reported FAIL and is\n"
            "not timed. Passing sizes are timed with CUDA events, L2 flushed before each\n"
            "run (median and p20-p80 spread of triton.testing.do_bench): nt_gemm as called\n"
            "(output allocation included) and torch.mm on the same inputs, in alternating\n"
            "rounds, then the kernel alone when the file has the skeleton's _kernel()."
        ),
        epilog=(
            "Autotuning: NINETOOTHED_AUTOTUNE=1 before the command turns the block sizes\n"
            "into meta-parameters. The search runs on the first call of each size, before\n"
            "timing; its cost and the chosen blocks are reported separately.\n\n"
            f"Without a GPU only --check-only runs; sizes above {INTERPRETER_MAX_DIM} per dimension\n"
            "are skipped there (the Triton interpreter is too slow for them).\n\n"
            "Exit status: 0 every size passed, 1 a size failed, 2 unusable submission or\n"
            "arguments, 3 no GPU to time on."
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--submission",
        default=str(default_submission),
        metavar="PATH",
        help="the ninetoothed_gemm.py to benchmark "
        f"(default: {_submission_name(default_submission)})",
    )
    parser.add_argument(
        "--sizes",
        nargs="+",
        metavar="SIZE",
        help=f"sizes to run: N for an N x N x N square, or MxNxK (default: {squares})",
    )
    parser.add_argument(
        "--out",
        default=str(DEFAULT_OUT),
        metavar="DIR",
        help="folder for the CSV and the PNG; each run gets new file names "
        "(default: benchmark-results/ at the top of the kit)",
    )
    parser.add_argument(
        "--check-only",
        action="store_true",
        help="only check correctness against torch.mm, time nothing (works on a CPU too)",
    )
    parser.add_argument(
        "--compare",
        metavar="BASELINE_CSV",
        help="compare with a stored benchmark CSV: speedup per matching size, regressions "
        "beyond the measured noise flagged",
    )
    parser.add_argument(
        "--noise-floor",
        type=float,
        default=None,
        metavar="FRACTION",
        help="smallest relative change --compare calls a regression (default: 0.02)",
    )
    parser.add_argument(
        "--what-if",
        action="store_true",
        help="after the sweep, rebuild your arrangement() and application() with "
        f"{len(CANDIDATES)} other tile/warp/stage configurations and time each (checked "
        "first) beside torch.mm at the first size: the best one, a CSV and a picture "
        "(GPU only; about a minute; never part of a grade)",
    )
    parser.add_argument("--label", default="", help="a word added to the output file names")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random inputs")
    parser.add_argument("--no-card", action="store_true", help="skip the PNG")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    return parser


def gpu_available():
    """A CUDA device that the run may use (NTGEMM_BACKEND=interpreter says no)."""
    from grader.core import backend

    if backend.requested() == "interpreter":
        return False
    import torch

    return torch.cuda.is_available()


def _sha256(path):
    import hashlib

    return hashlib.sha256(pathlib.Path(path).read_bytes()).hexdigest()


def _submission_name(path):
    """The path as it should appear in a CSV: relative to the kit, never a machine path."""
    path = pathlib.Path(path).resolve()
    try:
        return path.relative_to(ROOT).as_posix()
    except ValueError:
        return path.name


def _progress(enabled):
    if not enabled:
        return None
    try:
        from tqdm import tqdm
    except ImportError:
        return None

    def iterate(sizes):
        bar = tqdm(sizes, desc="sizes", unit="size", leave=False, file=sys.stderr)
        for size in bar:
            bar.set_postfix_str("x".join(str(d) for d in size))
            yield size

    return iterate


def main(argv=None, prog=None, default_submission=DEFAULT_SUBMISSION):
    parser = _parser(prog, default_submission)
    args = parser.parse_args(argv)

    from benchmarks import harness

    try:
        sizes = (
            [harness.parse_size(s) for s in args.sizes]
            if args.sizes
            else list(harness.DEFAULT_SIZES)
        )
    except ValueError as error:
        parser.error(str(error))
    if args.check_only and args.compare:
        parser.error("--compare needs timings; drop --check-only")
    if args.check_only and args.what_if:
        parser.error("--what-if times kernels; drop --check-only")

    try:
        has_gpu = gpu_available()
    except ValueError as error:  # a bad NTGEMM_BACKEND value
        print(f"error: {error}", file=sys.stderr)
        return UNUSABLE
    if args.what_if and not has_gpu:
        print(WHAT_IF_NEEDS_GPU, file=sys.stderr)
        return NO_GPU
    if not args.check_only and not has_gpu:
        print(NO_GPU_MESSAGE, file=sys.stderr)
        return NO_GPU

    if not has_gpu and os.environ.get("NINETOOTHED_AUTOTUNE") == "1":
        os.environ.pop("NINETOOTHED_AUTOTUNE")
        print("note: NINETOOTHED_AUTOTUNE ignored: autotuning needs a GPU")

    baseline = None
    if args.compare:
        from benchmarks import compare, report

        try:
            baseline = report.read_csv(args.compare)
            compare.check_baseline(baseline)
        except (OSError, ValueError) as error:
            print(f"error: cannot use {args.compare} as a baseline: {error}", file=sys.stderr)
            return UNUSABLE

    from grader.core import backend as backends

    try:
        backend = backends.activate()  # before anything imports triton
    except RuntimeError as error:  # an interpreter that cannot run here
        print(f"error: {error}", file=sys.stderr)
        return UNUSABLE
    from grader.core.loading import SubmissionError, load_submission

    try:
        module = load_submission(args.submission)
    except SubmissionError as error:
        print(f"[{error.status}] {error}", file=sys.stderr)
        return UNUSABLE

    from benchmarks import environment, kernel_config, report

    autotune = kernel_config.is_autotuned(module)
    print(f"backend: {backend.detail}")
    print(f"submission: {args.submission}")
    print(
        f"autotune: {'on (the search runs on the first call of each size)' if autotune else 'off'}"
    )

    timed = not args.check_only
    # Clock, temperature and power are recorded before the sweep heats the GPU.
    env = environment.capture(with_gpu=True) if timed else None

    started = time.perf_counter()
    results = harness.run_sizes(
        module,
        sizes,
        backend,
        time_it=not args.check_only,
        seed=args.seed,
        iterate=_progress(not args.no_progress),
    )
    elapsed = time.perf_counter() - started

    print()
    print(
        report.format_table(
            report.table_headers(timed=timed), report.table_rows(results, timed=timed)
        )
    )
    extra = report.notes(results)
    if extra:
        print("\n" + extra)

    failed = any(r.verdict == harness.FAIL for r in results)
    if not timed:
        checked = [r for r in results if r.verdict != harness.SKIP]
        if not checked:  # every size too large for the interpreter: not a pass
            print(
                f"\nerror: none of the {len(results)} size(s) could be checked here (see the "
                "skip reasons above); pick smaller sizes",
                file=sys.stderr,
            )
            return UNUSABLE
        build = _gpu_build(module) if backend.is_interpreter else None
        if build is not None:
            from grader.core import gpu_compile

            print(f"\nGPU build: {gpu_compile.summary(build)}")
        print(
            f"\n{sum(r.verdict == harness.PASS for r in checked)} of {len(checked)} checked "
            f"sizes PASS ({elapsed:.1f} s); nothing timed (--check-only)"
        )
        if build is not None and build.checked and not build.ok:
            where = gpu_compile.where(
                build, pathlib.Path(args.submission).read_text(encoding="utf-8", errors="replace")
            )
            print(
                f"error: the kernel does not build for {build.target} (the course's GPU), so "
                "every size would fail there: the interpreter accepts what a GPU refuses"
                + (f"\n{where}" if where else ""),
                file=sys.stderr,
            )
            return SOME_FAILED
        return SOME_FAILED if failed else OK

    first_calls = [r.first_call_s for r in results if r.first_call_s]
    searches = [r.autotune_search_s for r in results if r.autotune_search_s]
    if autotune:
        print(
            f"\nautotune search (first call of each size, not in the timings): "
            f"{sum(searches):.1f} s in all"
            if searches
            else "\nautotune search cost: not observable with this ninetoothed/triton"
        )
    print(
        f"first calls (compilation{' and search' if autotune else ''}): "
        f"{sum(first_calls):.1f} s; whole sweep: {elapsed:.1f} s"
    )

    run_id = report.new_run_id()
    frame = report.build_frame(
        results,
        env,
        submission=_submission_name(args.submission),
        autotune=autotune,
        backend_name=backend.name,
        run_id=run_id,
        submission_sha256=_sha256(args.submission),
    )
    if baseline is not None:
        from benchmarks import compare

        floor = compare.DEFAULT_NOISE_FLOOR if args.noise_floor is None else args.noise_floor
        frame = compare.compare(frame, baseline, noise_floor=floor)
        print(f"\ncompared with {args.compare}:")
        print(compare.summary(frame))

    # The compile gate builds the file's own configuration; an autotuned row ran another one.
    build = (
        None
        if autotune or not any(r.verdict == harness.PASS for r in results)
        else _gpu_build(module)
    )
    why = report.why_text(frame, build.to_fields() if build is not None else None)
    if why:
        print(why)

    stem = report.run_stem(env, autotune=autotune, label=args.label, run_id=run_id)
    csv_path = report.write_csv(frame, args.out, stem)
    print(f"\nCSV:  {csv_path}")
    if not args.no_card:
        from benchmarks import card

        png_path = card.render(frame, csv_path.with_suffix(".png"))
        print(f"card: {png_path}")
    if args.what_if:
        _what_if(
            module,
            sizes[0] if args.sizes else WHAT_IF_DEFAULT_SIZE,
            backend,
            args,
            csv_path.parent / f"{csv_path.stem}-what-if",
        )
    return SOME_FAILED if failed else OK


# The default sweep starts at 8^3, where a launch costs more than the product: without
# --sizes the what-if runs at 4096^3, the sweep's largest and the size the kit's first H200
# measurements used (CHANGELOG.md, 0.1.0).
WHAT_IF_DEFAULT_SIZE = (4096, 4096, 4096)


def _what_if(module, size, backend, args, stem):
    """The what-if after the sweep (benchmarks.what_if): printed, STEM.csv and STEM.png.

    The suffixes are added, not swapped in: a host name in the run's stem may hold a dot.
    """
    from benchmarks import kernel_config, what_if, what_if_output

    print(f"\nwhat-if / 换个配置会更快吗（{'x'.join(map(str, size))}）:")
    plan = what_if.plan(module, kernel_config.kernel_handle(module))
    if not plan.runnable:
        print(f"no what-if: {plan.reason_en}\n未运行 what-if：{plan.reason_zh}")
        return
    started = time.perf_counter()
    outcomes = what_if.run(
        module,
        plan,
        size,
        backend,
        args.seed,
        on_outcome=lambda o: print(f"  tried {o.config.label}: {o.status}", file=sys.stderr),
    )
    print(what_if_output.summary(outcomes, size))
    print(f"what-if cost: {time.perf_counter() - started:.1f} s")
    csv_path = what_if_output.write_csv(outcomes, size, f"{stem}.csv")
    print(f"what-if CSV:  {csv_path}")
    if not args.no_card:
        print(f"what-if picture: {what_if_output.render(outcomes, size, f'{stem}.png')}")


def _gpu_build(module):
    """The grader's compile gate (grader.core.gpu_compile) on the file's own kernel, or None
    when the kernel cannot even be made (the sizes above then failed and say why)."""
    from grader.core import execution, gpu_compile

    try:
        kernel = execution.own_kernel(module)
    except Exception:  # noqa: BLE001 - the student's kernel may fail to build
        return None
    return gpu_compile.check(kernel)


if __name__ == "__main__":
    sys.exit(main(prog="python -m benchmarks.cli"))
