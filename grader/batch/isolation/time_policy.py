"""When a run of a student's file stops, and when the file is graded again: every time rule
of the batch grader, as pure functions of what the grader knows. The sandbox, the
conversation with a worker, the timing phase and the session ask these;
docs/instructor-reference.md ("Time limits") states the same policy in one paragraph:

Each file is graded by two runs, the kernel run and the `nt_gemm` run (side by side on a
GPU, one after the other on the interpreter), and, when it passes on a GPU with speed sizes,
by a timing run; a run's clock starts when a worker is handed the file. A run is charged its
wall time less the time its threads waited, ready to run, for a CPU core that others held,
never less than its CPU time nor more than its wall time (a run that lowers its own priority
is charged its whole wall time). It is stopped as `timeout` at the first of: its charged
seconds pass its limit; its wall time passes 10 times its limit; it keeps more than 1.5 CPU
cores busy on the interpreter, or 4 on a GPU, in every 3-second average for 1 second. Its
limit is `--timeout` S plus three things: on the interpreter, 0.25 s for every program x
K-tile step of the cases it is sent, counted at the kernel's tiles (at least 16 a side;
64 x 64 x 64 where the layout does not show them; the `nt_gemm` run counts at the kernel
run's); for a kernel run, its wait for the batch's compile of its kernel less that
compile's own seconds; for a timing run, S counts once while it compiles and again from
the moment its turn on the GPU comes, and grows by 120 s with `--what-if`. On a GPU, where
the batch grades at least 2 files on at least 2 slots (`-j`) and S is over 30 s, the first
pass also stops a run at 30 charged seconds past the start of the step it is in (start,
import, build, public cases, hidden cases; plus the additions above, and never past its
limit); once every file has started, some file is due for a second grading, and the files
under way and those due fit the slots together, that becomes 10 s for every run under way
but those whose `application()` prints. Then, on a GPU only, a file with a run that ended
as `timeout` while such a step limit held it below its full limit (`cut_short_s` in its
`record.json`), or that timed out while another file was graded beside it (`neighbours`
above 0), is graded again once the class is graded, beside only the others graded again,
with S and no step limit, and that verdict stands (the first one is kept under
`confirmed`); until then its result is unfinished: a resumed `grade` grades it again and
`merge` refuses it. Every other first verdict stands. So at `--timeout 120` on the
interpreter, the reference's kernel run may take about 210 charged seconds and a hang in
`nt_gemm` is stopped at 123 (one small case at 64 x 64 x 64); on a GPU at `-j 8`, a hang in
a class of 100 is stopped 30 s (10 s in the pass's tail) into its step, then graded again
and stopped at 120 s.
"""

import math

# The charge and the wall clock (``charge``, ``stop_reason``). The charge discounts waits
# for a core so that load cannot fail a correct kernel: in CI a correct file got 3 s of CPU
# in 40 s on a 2-core box whose cores its neighbours held. A run starved for ever must still
# end, hence a cap on the wall clock, in units of the limit.
WALL_FACTOR = 10.0

# CPU cores a run's process tree may keep busy (``cores_for``): a worker that starts
# processes of its own to take the machine's cores would slow its neighbours past their
# timeouts. An interpreter worker is one thread; a GPU worker also compiles.
CORES = {"interpreter": 1.5, "gpu": 4.0}
CPU_WINDOW_S = 3.0  # cores kept busy are averaged over this long
# and count only when every average over this long says so: one sample can be wrong (a
# child reaped between the listing and its parent's reading once stopped a mistaken file
# for a second busy core 12 s into a 120 s limit, grader.batch.isolation.usage).
SUSTAIN_S = 1.0

# The interpreter's share (``extra_for``). The Triton interpreter costs about the same per
# (program x K tile) step at every tile size, and 16 x 16 x 16 tiles take 46 times the
# steps of 64 x 64 x 64 over the catalogue: one flat limit would either time out correct
# small-tile kernels or let hangs run for an hour. STEP_S is several times the cost of a
# step (docs/instructor-reference.md, "Time limits"), room for -j workers sharing cores.
STEP_S = 0.25
SMALLEST = 16  # the guide's smallest block size: a claim of smaller tiles earns no more time
DEFAULT_TILES = (64, 64, 64)  # when the layout is not the plain grid, and tiles are unknown

# A timing run's growth with ``--what-if`` (``timing_limit``): the worker's own wall
# seconds for each of the what-if's two steps (compiling the other configurations, then
# checking and timing them), plus one configuration's compile or timing begun just before
# that budget ran out.
WHAT_IF_S = 60
WHAT_IF_ALLOWANCE_S = WHAT_IF_S + 60

# The first pass's limit per step on a GPU (``first_pass_step``). Every GPU timeout beside
# other files is graded again anyway (``unconfirmed``), so the first pass need not wait a
# whole --timeout for a hang. It is just over the longest step of any file in three loaded
# 100-file H200 batches (docs/stress-runs/timeline.md); a step cut short costs its file a
# second grading, never its verdict.
FIRST_PASS_S = 30
# The same once the files still under way only hold the class from its second grading
# (``tail_lowers``), which lasts a whole --timeout whenever a file hangs and grades any
# file cut here beside it: a hang started last held the first pass 25 s past its other
# files on the H200 (docs/stress-runs/timeline.md).
TAIL_STALL_S = 10


def charge(cpu_s, wall_s, starved_s):
    """Seconds a run's time limit is charged for ``wall_s`` of wall time, of which its
    threads used ``cpu_s`` of CPU and waited ``starved_s`` for a core (summed over threads):
    a run that works or sleeps is charged as on a plain wall clock; threads that starve each
    other on cores the run holds buy it no time; a run that keeps several cores busy is
    stopped no sooner than under a wall limit."""
    return min(wall_s, max(cpu_s, wall_s - starved_s))


def credited_wait(waits_s, lowered):
    """The seconds of waiting for a core a run is credited, of its threads' ``waits_s``:
    none once a thread of it was seen at a lower priority than it started with (``lowered``),
    since such a thread waits behind every busy core by choice, and a sleeping hang could
    then run WALL_FACTOR times its limit."""
    return 0.0 if lowered else sum(waits_s)


def wall_cap(limit_s):
    """Wall seconds after which a run with ``limit_s`` stops, whatever it waited."""
    return WALL_FACTOR * limit_s


def cores_for(backend_name):
    """How many cores a run on ``backend_name`` may keep busy."""
    return CORES[backend_name]


def stop_reason(limit_s, cores_limit, charged_s, wall_s, cores):
    """Which time rule stops a run now, as its ``timeout`` message says: "charged" (its
    limit), "wall" (WALL_FACTOR times it), "cores" (over ``cores_limit``, as
    grader.batch.isolation.usage sustains it), or "" where none does."""
    if charged_s > limit_s:
        return "charged"
    if wall_s > wall_cap(limit_s):
        return "wall"
    if cores > cores_limit:
        return "cores"
    return ""


def steps(m, n, k, tiles, launches=1):
    """Programs x K tiles of one case at ``tiles`` (BM, BN, BK), over its launches."""
    bm, bn, bk = (max(SMALLEST, size) for size in tiles)
    return math.ceil(m / bm) * math.ceil(n / bn) * math.ceil(k / bk) * launches


def extra_for(backend_name, jobs, tiles):
    """Seconds a run's limit grows by for ``jobs`` (grader.batch.inside.protocol's Jobs) at
    the kernel's ``tiles`` (None: unknown): STEP_S a step on the interpreter, none on a GPU."""
    if backend_name != "interpreter":
        return 0.0
    tiles = tuple(tiles) if tiles else DEFAULT_TILES
    return STEP_S * sum(steps(job.m, job.n, job.k, tiles, len(job.roles)) for job in jobs)


def gate_credit(waited_s, compile_s):
    """Seconds a kernel run's limit grows by for ``waited_s`` spent waiting for the compile
    gate's Build, whose compile took ``compile_s``: the run is charged the compile, as if it
    had compiled its kernel itself, and not the rest of its wait, so that whether another
    run compiled the same kernel first changes no verdict."""
    return waited_s - compile_s


def timing_limit(timeout_s, what_if):
    """A timing run's limit (counted again from its turn on the GPU): ``--timeout``, plus
    WHAT_IF_ALLOWANCE_S where it also runs the what-if."""
    return timeout_s + (WHAT_IF_ALLOWANCE_S if what_if else 0)


def first_pass_step(backend_name, timeout_s, files, slots):
    """The first pass's limit per step over ``files`` on ``slots`` worker slots, or None:
    only on a GPU, where a timeout is graded again, and only where a file can have a
    neighbour (two files, two slots) and the step limit is shorter than ``timeout_s``."""
    if backend_name != "gpu" or min(files, slots) < 2 or FIRST_PASS_S >= timeout_s:
        return None
    return FIRST_PASS_S


def tail_lowers(unstarted, due, active, slots):
    """Whether the first pass's step limit drops to TAIL_STALL_S: every file has started,
    ``due`` files already wait for a second grading, and they fit the slots together with
    the ``active`` files under way."""
    return not unstarted and due > 0 and due + active <= slots


def step_limit(full_s, began_s, stall_s, extra_s):
    """A run's limit in charged seconds while a step limit holds it: ``stall_s`` past the
    ``began_s`` its step began at, plus the ``extra_s`` its limit grew by, never past its
    ``full_s``."""
    return min(full_s, round(began_s + stall_s + extra_s, 1))


def cut_short(kind, limit_s, full_s, stall_s):
    """The step limit ``stall_s`` that stopped a run which ended as ``kind`` under
    ``limit_s``, or 0 where its full limit ``full_s`` did (or nothing did)."""
    return stall_s if kind == "timeout" and limit_s < full_s else 0.0


def unconfirmed(record, backend_name):
    """Whether a grading record is not yet a finished grade: on a GPU, a timeout graded
    beside other files, or a file a step limit cut short, not yet graded again. A GPU
    wait is charged (per-process GPU samples undercount who holds a GPU), so such a
    verdict stands only as graded again with the full limit and no neighbour but the
    others graded again; on the interpreter every wait is for a core, already credited."""
    beside = record.status == "timeout" and bool(record.neighbours)
    return backend_name == "gpu" and not record.confirmed and (beside or bool(record.cut_short_s))
