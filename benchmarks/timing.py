"""How a function is timed: CUDA events, L2 flushed before every run, median and spread.

``triton.testing.do_bench`` does the work: it calls the function once, estimates
its cost from five runs, warms up for ``warmup`` ms, then times as many runs as
fit in ``rep`` ms, each run between two CUDA events and each preceded by zeroing
a buffer larger than L2, so no run finds its inputs already cached. We keep the
20th, 50th and 80th percentiles of those per-run times: the median is the
number to quote, and p20..p80 is the spread that ``--compare`` treats as noise.

Two functions compared with each other are timed in alternating rounds
(``bench_pair``): a GPU at its power limit runs whatever comes first after a
pause in a cooler state, which moved an 8192^3 ratio by up to 10% on an H200.
"""

import dataclasses
import statistics
import time

WARMUP_MS = 25
REP_MS = 100
ROUNDS = 4  # of a pair, alternating which goes first; each round gets REP_MS / 2
QUANTILES = (0.5, 0.2, 0.8)

METHOD = (
    f"triton.testing.do_bench(warmup={WARMUP_MS} ms), CUDA events, L2 flushed before each run; "
    f"nt_gemm and torch.mm in {ROUNDS} alternating rounds of {REP_MS // 2} ms, the medians of "
    f"the rounds' medians, p20 and p80; the kernel alone in one {REP_MS} ms run"
)


@dataclasses.dataclass(frozen=True)
class Timing:
    median_ms: float
    p20_ms: float
    p80_ms: float

    @property
    def relative_spread(self):
        """Half the p20..p80 width, as a share of the median."""
        return (self.p80_ms - self.p20_ms) / (2 * self.median_ms)


def bench(fn, warmup=WARMUP_MS, rep=REP_MS):
    """Time ``fn`` on the GPU; returns a Timing in milliseconds."""
    import triton.testing

    median, p20, p80 = triton.testing.do_bench(
        fn, warmup=warmup, rep=rep, quantiles=list(QUANTILES)
    )
    return Timing(float(median), float(p20), float(p80))


def alternating(ours, theirs, measure, rounds=ROUNDS):
    """``measure`` each function once per round, the order alternating; returns both lists.

    Round 1 runs ``ours`` first, round 2 ``theirs`` first, and so on, so that
    neither always meets the GPU in the state the other left it in.
    """
    mine, others = [], []
    for round_ in range(rounds):
        pair = [(ours, mine), (theirs, others)]
        for fn, results in pair if round_ % 2 == 0 else pair[::-1]:
            results.append(measure(fn))
    return mine, others


def bench_pair(ours, theirs, timer=bench, rounds=ROUNDS):
    """Time two functions in alternating rounds; returns their two pooled Timings."""
    mine, others = alternating(ours, theirs, lambda fn: timer(fn, rep=REP_MS // 2), rounds)
    return _pooled(mine), _pooled(others)


def _pooled(timings):
    """The rounds' median of each statistic: one slow round moves none of them much."""
    return Timing(
        statistics.median(t.median_ms for t in timings),
        statistics.median(t.p20_ms for t in timings),
        statistics.median(t.p80_ms for t in timings),
    )


def wall_clock(fn, synchronize=None):
    """(result, seconds) of one call, waiting for the device when ``synchronize`` is given.

    Used for the first call of each size, which carries the JIT compilation and,
    with NINETOOTHED_AUTOTUNE=1, the autotune search.
    """
    if synchronize is not None:
        synchronize()
    start = time.perf_counter()
    result = fn()
    if synchronize is not None:
        synchronize()
    return result, time.perf_counter() - start


def tflops(flops, milliseconds):
    """Rate in 1e12 FLOP/s, or None without a time."""
    if milliseconds is None or milliseconds <= 0:
        return None
    return flops / (milliseconds * 1e-3) / 1e12
