"""Speed grading: the grader times, on the grading GPU, the kernel it built itself.

After every submission has its correctness verdict, each one that passed every
case is timed in a phase of its own, so that no student's timing ever shares a
GPU with another student's work (grader.batch.cli runs this phase after the pool).
On each GPU one timing run holds the GPU at a time; the next students' runs
(PREPARE_AHEAD of them) start meanwhile, build their kernels and compile them
for the timed sizes without launching anything (grader.batch.inside.speed_probe.compile_only),
so that the GPU waits for compilers as little as possible.

What is timed is the rebuilt kernel (grader.core.kernel_source), launched by the
grader into a preallocated output, against ``torch.mm(out=...)`` on the same
operands: benchmarks.timing's method (L2 flushed, alternating rounds,
medians and p20..p80). ``nt_gemm`` is never timed: it could call torch.mm.
Every number kept comes from a timing run's report, checked by
grader.batch.inside.protocol.timing, and turned into the benchmark's own CSV rows by
benchmarks.report, so a student's card from the grader and the card from
their own benchmark are the same picture of the same columns.

With ``--what-if`` each timing run also rebuilds the student's functions with other
tiles, warps and stages, after the graded sizes (grader.batch.timing.what_if_entry):
advice in the feedback, never a grade.

On the interpreter nothing is timed, and the feedback says why in one line.
"""

import collections
import concurrent.futures
import dataclasses
import queue
import threading

from benchmarks.harness import PASS, FAIL, SizeResult, parse_size, size_label
from benchmarks.kernel_config import KernelConfig, UNKNOWN
from benchmarks.timing import REP_MS, Timing
from grader.batch.inside import speed_probe
from grader.batch.timing import what_if_entry
from grader.batch.timing.handin import check_handin

DEFAULT_SIZES = ((4096, 4096, 4096), (4095, 4095, 4095))
CARD_LABEL = "your kernel, launched by the grader"
METHOD = (
    "the grader's own launch of the rebuilt kernel into a preallocated output against "
    "torch.mm(out=...) on the same operands: triton.testing.do_bench, CUDA events, L2 "
    f"flushed before each run, {speed_probe.ROUNDS} alternating rounds of "
    f"{REP_MS // 2} ms, the medians of the rounds' medians, p20 and p80; nt_gemm is not "
    "timed"
)
# Timing runs compiling on each GPU while one is timed: compiling is CPU work and
# launches nothing (grader.batch.inside.speed_probe.compile_only); each holds a CUDA context.
PREPARE_AHEAD = 4
NOT_MEASURED = {
    "interpreter": (
        "Speed: not measured: this batch ran on the Triton interpreter (a CPU), "
        "whose times say nothing about a GPU.",
        "速度：未测量：本次评测在 Triton 解释器（CPU）上运行，其耗时不能说明 GPU 上的速度。",
    ),
    "off": (
        "Speed: not measured: this batch was graded without speed (--no-speed).",
        "速度：未测量：本次评测关闭了速度测量（--no-speed）。",
    ),
}
NOT_TIMED = (
    "Speed: not timed: only a submission that passes every case is timed.",
    "速度：未计时：只有通过全部测试用例的提交才会计时。",
)


@dataclasses.dataclass(frozen=True)
class SpeedSettings:
    """What the speed phase measures and what it is worth; empty ``sizes`` means off."""

    sizes: tuple = DEFAULT_SIZES
    points: tuple = ()  # ((ratio to torch.mm at sizes[0], points), ...), ascending
    what_if: bool = False  # also rebuild each timed kernel with other tiles (advice only)

    @property
    def max_points(self):
        return max((points for _, points in self.points), default=0)

    def describe(self):
        described = {
            "sizes": [size_label(*size) for size in self.sizes],
            "points": [list(tier) for tier in self.points],
            "method": METHOD,
        }
        if self.what_if:  # only then: a batch without it describes itself as before
            described["what_if"] = True
        return described


def from_description(described):
    """The SpeedSettings a batch manifest describes (``describe()``), off for None."""
    if not described:
        return SpeedSettings(sizes=())
    return SpeedSettings(
        sizes=parse_sizes(",".join(described["sizes"])),
        points=tuple((float(ratio), int(points)) for ratio, points in described["points"]),
        what_if=bool(described.get("what_if")),
    )


def parse_sizes(text):
    """'4096,4095x4096x4096' -> ((4096, 4096, 4096), (4095, 4096, 4096)); ValueError if bad."""
    sizes = tuple(parse_size(part.strip()) for part in str(text).split(",") if part.strip())
    if not sizes:
        raise ValueError("give at least one size, e.g. 4096 or 4096x4096x4095")
    return sizes


def parse_points(text):
    """'0.5:1,0.8:2,1.0:3' -> ((0.5, 1), (0.8, 2), (1.0, 3)); ValueError if bad.

    A submission gets the points of the highest tier whose ratio to torch.mm
    (at the first speed size) it reaches, and 0 below the first tier.
    """
    tiers = []
    for part in str(text).split(","):
        ratio, separator, points = part.strip().partition(":")
        try:
            tier = (float(ratio), int(points))
        except ValueError:
            raise ValueError(f"{part.strip()!r} is not RATIO:POINTS, e.g. 0.8:2") from None
        if not separator or tier[0] <= 0 or tier[1] < 0:
            raise ValueError(f"{part.strip()!r}: the ratio must be > 0 and the points >= 0")
        tiers.append(tier)
    tiers.sort()
    if [points for _, points in tiers] != sorted(points for _, points in tiers):
        raise ValueError("a faster tier cannot be worth fewer points than a slower one")
    return tuple(tiers)


def points_for(ratio, tiers):
    return max(
        (points for threshold, points in tiers if ratio is not None and ratio >= threshold),
        default=0,
    )


def needs_timing(record):
    return record.status == "passed" and record.speed is None


def not_measured(reason):
    """The speed entry of a batch that times nothing (``reason``: a key of NOT_MEASURED)."""
    en, zh = NOT_MEASURED[reason]
    return {"status": "not_measured", "message": en, "message_zh": zh}


# --------------------------------------------------------------------------- the phase


def time_class(items, settings, slots, *, on_timed, stop, environments, on_start=None):
    """Time every (submission, record) of ``items``; ``on_timed(record)`` after each.

    One thread per GPU of ``slots``, each timing its share one at a time while
    preparing the next. ``environments`` maps a device to the benchmark
    environment record (benchmarks.environment.capture) of that GPU. ``stop``
    (a threading.Event) is set on an interrupt; the caller then kills the workers.
    """
    work = queue.Queue()
    for item in items:
        work.put(item)
    devices = sorted(set(slots), key=str)
    retried = _Once()
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=len(devices))
    try:
        futures = [
            pool.submit(
                _time_on,
                device,
                work,
                settings,
                on_timed,
                on_start,
                stop,
                environments[device],
                retried,
            )
            for device in devices
        ]
        for future in futures:
            future.result()
    except BaseException:
        stop.set()
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown(wait=True)


def _kernel_text(submission):
    """The rebuilt kernel file (grader.core.kernel_source) that a timing run builds and times."""
    from grader.core import kernel_source, loading

    source = loading.source_text(submission.data)
    return kernel_source.extract(source).text.encode("utf-8")


class _Once:
    """The students given their one retry, shared by every GPU's thread."""

    def __init__(self):
        self.done, self.lock = set(), threading.Lock()

    def first(self, student):
        with self.lock:
            if student in self.done:
                return False
            self.done.add(student)
            return True

    def given(self, student):
        with self.lock:
            return student in self.done


def _time_on(device, work, settings, on_timed, on_start, stop, env, retried):
    from grader.batch.isolation import time_policy
    from grader.batch.isolation.conversation import TimingRun
    from grader.batch.isolation.sandbox import Limits

    def start(item):
        submission, record = item
        # A retry goes without the what-if: its compiles come before the graded timing, and
        # a run that died among them must not die again there and lose its speed.
        what_if_s = (
            time_policy.WHAT_IF_S
            if settings.speed.what_if and not retried.given(record.student)
            else 0
        )
        timeout_s = time_policy.timing_limit(settings.timeout_s, bool(what_if_s))
        return TimingRun(
            _kernel_text(submission),
            settings.speed.sizes,
            backend_name="gpu",
            limits=Limits(timeout_s, settings.memory_limit_bytes, time_policy.cores_for("gpu")),
            device=device,
            sandboxed=settings.sandboxed,
            on_start=on_start,
            what_if_s=what_if_s,
        ).prepare()

    def take():
        try:
            return work.get_nowait()
        except queue.Empty:
            return None

    with concurrent.futures.ThreadPoolExecutor(max_workers=PREPARE_AHEAD) as preparer:
        upcoming = collections.deque()

        def refill():
            while len(upcoming) < PREPARE_AHEAD and (item := take()) is not None:
                upcoming.append((item, preparer.submit(start, item)))

        refill()
        while upcoming:
            (submission, record), prepared = upcoming.popleft()
            run = prepared.result()
            if stop.is_set():
                run.abandon()
                return
            refill()
            run.measure()
            if stop.is_set():
                return  # killed by the interrupt: not a verdict; resume times it again
            if (
                len(run.results) < len(run.sizes)
                and run.note == ""
                and not run.stopped
                and retried.first(record.student)
            ):
                # A run that ended without a word from the kernel (a stuck start, a killed
                # process) gets one more try, at the back of the line.
                work.put((submission, record))
                refill()
                continue
            record.speed = entry(run, record, env)
            if settings.speed.what_if and record.speed["status"] == "timed":
                record.speed["what_if"] = what_if_entry.entry(run, record)
            apply_points(record, settings.speed.points)
            check_handin(submission, record)
            on_timed(record)


# --------------------------------------------------------------------------- the record


def size_results(run, tiles):
    """The timing run's report as the benchmark harness's SizeResults."""
    config = KernelConfig()
    if tiles:
        config = KernelConfig(
            *tiles,
            run.launch.get("num_warps", UNKNOWN),
            run.launch.get("num_stages", UNKNOWN),
            "fixed",
        )
    results = []
    for timing in run.results:
        if timing.verdict == "PASS":
            # The grader's launch of the kernel goes in the benchmark's main columns;
            # the kernel-only columns stay empty: there is no nt_gemm time beside it.
            results.append(
                SizeResult(
                    timing.m,
                    timing.n,
                    timing.k,
                    PASS,
                    "timed by the grader",
                    ninetoothed=Timing(*timing.kernel),
                    torch_mm=Timing(*timing.torch),
                    config=config,
                )
            )
        else:
            first_line = timing.error.splitlines()[0] if timing.error else ""
            note = (
                first_line or f"{timing.wrong} elements out of tolerance"
                if timing.verdict == "FAIL"
                else f"the kernel raised: {first_line}"
            )
            results.append(SizeResult(timing.m, timing.n, timing.k, FAIL, note, config=config))
    return results


def frame(record):
    """A timed record's rows as the benchmark's CSV table (benchmarks.report.COLUMNS)."""
    import pandas

    from benchmarks import report

    return pandas.DataFrame(record.speed["rows"], columns=list(report.COLUMNS))


def entry(run, record, env):
    """The record's ``speed``: status, message, configuration, the benchmark's CSV rows, and
    ``why``: each timed size explained by benchmarks.why_speed from its row and the GPU build."""
    import json

    from benchmarks import report, why_speed

    tiles = record.tiles
    base = {
        "gpu": env.get("gpu_name", ""),
        "tiles": tiles,
        "prepare_s": round(run.prepare_s, 2),
        "measure_s": round(run.measure_s, 2),
        "num_warps": run.launch.get("num_warps", UNKNOWN),
        "num_stages": run.launch.get("num_stages", UNKNOWN),
        "points": None,
        "rows": [],
    }
    if run.stopped:
        record.flags.append(f"speed: the build guard stopped the timing run at {run.stopped}")
    if len(run.results) != len(run.sizes):
        why = run.note or (run.ending.detail if run.ending else "") or "it ended early"
        why = why if len(why) <= 1000 else why[:1000] + " [...]"  # a worker's report, quoted
        kind = run.ending.kind if run.ending else "crashed"
        return {
            **base,
            "status": "not_timed",
            "message": f"Speed: not timed: the timing run ended ({kind}): {why}".strip(),
            "message_zh": f"速度：未计时：计时进程提前结束（{kind}）。",
        }
    table = report.build_frame(
        size_results(run, tiles),
        env,
        submission=record.student,
        autotune=False,
        backend_name="gpu",
        submission_sha256=record.sha256,
    )
    table["timing_method"] = METHOD
    rows = json.loads(table.to_json(orient="records"))
    wrong = [row for row in rows if row["verdict"] != PASS]
    if wrong:
        record.flags.append(
            "speed: "
            + "; ".join(
                f"at {row['size']} the grader's launch of your kernel failed ({row['note']})"
                for row in wrong
            )
            + ", although every case passed: for the instructor to review"
        )
    suspect = [why for why in map(beyond_its_kernel, rows) if why]
    if suspect:
        record.flags.append(
            "speed: "
            + "; ".join(suspect)
            + ": not ranked and worth no speed points, for the instructor "
            "to review"
        )
    first = rows[0]
    if first["verdict"] == PASS:
        message = (
            f"Speed: {first['ratio_vs_torch_mm']:.2f}x torch.mm at {first['size']} "
            f"({first['tflops']:.0f} TFLOPS) on {base['gpu']}"
        )
        message_zh = (
            f"速度：在 {base['gpu']} 上，{first['size']} 规模下为 torch.mm 的 "
            f"{first['ratio_vs_torch_mm']:.2f} 倍（{first['tflops']:.0f} TFLOPS）"
        )
    else:
        message = f"Speed: the kernel failed at {first['size']}, so it has no speed there"
        message_zh = f"速度：kernel 在 {first['size']} 规模下结果错误，因此没有速度"
    return {
        **base,
        "status": "timed",
        "message": message,
        "message_zh": message_zh,
        "rows": rows,
        "why": why_speed.explain_rows(rows, record.gpu_build),
        "suspect": bool(suspect),
    }


# How far past the ledger's tile-feed roof of its own tiles a rate may be before it is no
# longer believed: 64x64x64 tiles with 4 warps and 3 stages measured 1.23x that roof on
# the H200 (docs/benchmarking.md); a kernel that computes less was timed at 2.6x.
SUSPECT_ABOVE_TILE_FEED = 1.5


def beyond_its_kernel(row):
    """Why a timed row's rate is more than its kernel can do, or '' (rows not timed too)."""
    from ledger import formulas

    if row.get("verdict") != PASS or not isinstance(row.get("tflops"), (int, float)):
        return ""
    fraction = row.get("roofline_fraction")
    if isinstance(fraction, (int, float)) and fraction > 1:
        return (
            f"at {row['size']} the kernel ran at {fraction:.0%} of the roofline bound, "
            "which no correct kernel can"
        )
    machine = formulas.machine_for_gpu_name(str(row.get("gpu_name") or ""))
    try:
        block_m, block_n = int(row.get("block_m")), int(row.get("block_n"))
    except (TypeError, ValueError):
        return ""
    if machine is None or block_m <= 0 or block_n <= 0:
        return ""
    roof = formulas.tile_feed_roof_tflops(block_m, block_n, machine)
    if row["tflops"] <= roof * SUSPECT_ABOVE_TILE_FEED:
        return ""
    return (
        f"at {row['size']} the kernel ran at {row['tflops']:.0f} TFLOPS, "
        f"{row['tflops'] / roof:.1f}x the ledger's tile-feed roof of its {block_m}x{block_n} "
        f"tiles ({roof:.0f} TFLOPS)"
    )


def headline(record):
    """The first size's row of a timed record whose rates are believable, or None."""
    speed = record.speed or {}
    rows = speed.get("rows") or []
    if speed.get("suspect"):
        return None
    return rows[0] if rows and rows[0]["verdict"] == PASS else None


def apply_points(record, tiers):
    """Add the speed tier's points to the score (never touching the case points)."""
    if not tiers:
        return
    row = headline(record)
    points = points_for(row["ratio_vs_torch_mm"] if row else None, tiers)
    record.speed["points"] = points
    record.score += points
