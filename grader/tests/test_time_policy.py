"""A TA's prediction from ``--timeout``, the backend, the cores and ``-j`` holds: what limit
each run gets, when it is stopped, when the first pass cuts a step, and when a timeout is
confirmed (grader.batch.isolation.time_policy, pure: no worker runs here). The instructor
reference's paragraph is the module's, with its numbers."""

import pathlib
import types
from dataclasses import replace

from grader.batch.isolation import time_policy as policy
from grader.batch.record import Record

REFERENCE = pathlib.Path(__file__).resolve().parents[2] / "docs" / "instructor-reference.md"


def job(m, n, k, roles=("out",)):
    return types.SimpleNamespace(m=m, n=n, k=k, roles=roles)


def test_a_run_s_limit_is_the_timeout_plus_the_interpreter_s_steps_at_its_tiles():
    wrapper = [job(65, 97, 130)]  # 2 x 2 x 3 programs x K tiles at 64 x 64 x 64
    assert 120 + policy.extra_for("interpreter", wrapper, (64, 64, 64)) == 123
    assert policy.extra_for("interpreter", wrapper, None) == 3  # tiles unknown: 64 a side
    assert (
        policy.extra_for("interpreter", wrapper, (8, 8, 8))
        == policy.extra_for("interpreter", wrapper, (16, 16, 16))
        == 0.25 * 5 * 7 * 9
    )
    assert policy.extra_for("interpreter", [job(64, 64, 64, ("out", "again"))], None) == 0.5
    assert policy.extra_for("gpu", wrapper, (16, 16, 16)) == 0  # a GPU run: --timeout alone
    assert policy.timing_limit(120, what_if=False) == 120
    assert policy.timing_limit(120, what_if=True) == 240
    # a kernel run is charged its compile, never the rest of its wait for the gate
    assert policy.gate_credit(waited_s=10.0, compile_s=2.0) == 8.0
    assert policy.gate_credit(waited_s=0.1, compile_s=1.8) == -1.7  # shared: still charged


def test_a_run_is_charged_the_wall_clock_less_its_wait_for_a_core():
    assert policy.charge(cpu_s=0.0, wall_s=100.0, starved_s=0.0) == 100.0  # a sleeping hang
    assert policy.charge(cpu_s=10.0, wall_s=100.0, starved_s=60.0) == 40.0  # starved by others
    assert policy.charge(cpu_s=50.0, wall_s=100.0, starved_s=90.0) == 50.0  # its own threads
    assert policy.charge(cpu_s=300.0, wall_s=100.0, starved_s=0.0) == 100.0  # several cores
    assert policy.credited_wait([30.0, 30.0], lowered=False) == 60.0
    assert policy.credited_wait([30.0, 30.0], lowered=True) == 0.0  # waits by choice


def test_a_run_stops_at_its_limit_at_ten_times_it_on_the_wall_clock_or_over_its_cores():
    cores = policy.cores_for("interpreter")
    assert (cores, policy.cores_for("gpu")) == (1.5, 4.0)
    assert policy.stop_reason(123, cores, charged_s=123.0, wall_s=500.0, cores=1.0) == ""
    assert policy.stop_reason(123, cores, charged_s=123.1, wall_s=130.0, cores=1.0) == "charged"
    assert policy.stop_reason(123, cores, charged_s=20.0, wall_s=1230.0, cores=0.1) == ""
    assert policy.stop_reason(123, cores, charged_s=20.0, wall_s=1230.1, cores=0.1) == "wall"
    assert policy.stop_reason(123, cores, charged_s=20.0, wall_s=30.0, cores=1.6) == "cores"
    assert policy.stop_reason(123, 4.0, charged_s=20.0, wall_s=30.0, cores=1.6) == ""


def test_the_first_pass_cuts_a_stalled_step_on_a_gpu_with_neighbours():
    # --timeout 120, 100 files at -j 8 on a GPU: 30 s a step, never past 120
    assert policy.first_pass_step("gpu", 120, files=100, slots=8) == 30
    assert policy.step_limit(full_s=120, began_s=0, stall_s=30, extra_s=0) == 30
    assert policy.step_limit(full_s=120, began_s=25.04, stall_s=30, extra_s=2) == 57.0
    assert policy.step_limit(full_s=120, began_s=100, stall_s=30, extra_s=0) == 120
    assert policy.cut_short("timeout", limit_s=55, full_s=120, stall_s=30) == 30
    assert policy.cut_short("timeout", limit_s=120, full_s=120, stall_s=30) == 0
    assert policy.cut_short("finished", limit_s=55, full_s=120, stall_s=30) == 0
    # no step limit: on the interpreter, for a file alone, at -j 1, or a --timeout of 30 s
    assert policy.first_pass_step("interpreter", 120, files=100, slots=8) is None
    assert policy.first_pass_step("gpu", 120, files=1, slots=8) is None
    assert policy.first_pass_step("gpu", 120, files=100, slots=1) is None
    assert policy.first_pass_step("gpu", 30, files=100, slots=8) is None
    # the tail: every file started, one due, and it fits the 8 slots beside 7 under way
    assert policy.tail_lowers(unstarted=0, due=1, active=7, slots=8)
    assert not policy.tail_lowers(unstarted=1, due=1, active=6, slots=8)
    assert not policy.tail_lowers(unstarted=0, due=0, active=7, slots=8)
    assert not policy.tail_lowers(unstarted=0, due=2, active=7, slots=8)
    assert policy.TAIL_STALL_S < policy.FIRST_PASS_S


def test_a_gpu_timeout_beside_others_or_a_cut_short_file_is_confirmed_by_a_second_grading():
    beside = Record(status="timeout", neighbours=3)
    assert policy.unconfirmed(beside, "gpu")
    assert not policy.unconfirmed(beside, "interpreter")
    assert not policy.unconfirmed(replace(beside, neighbours=0), "gpu")  # graded alone
    assert not policy.unconfirmed(replace(beside, confirmed={"first_status": "timeout"}), "gpu")
    cut = Record(status="failed", neighbours=0, cut_short_s=10)
    assert policy.unconfirmed(cut, "gpu")


def test_the_reference_states_the_module_s_policy_in_one_paragraph_with_its_numbers():
    reference = REFERENCE.read_text(encoding="utf-8")
    bullet = reference.split("- **When a run stops: `--timeout S`**", 1)[1].split("\n- ", 1)[0]
    stated = " ".join(bullet.split()).split("time_policy.py`). ", 1)[1]
    assert stated == " ".join(policy.__doc__.split("\n\n")[1].split())
    for number in (
        f"passes {policy.WALL_FACTOR:g} times its limit",
        f"more than {policy.CORES['interpreter']:g} CPU cores",
        f"or {policy.CORES['gpu']:g} on a GPU",
        f"every {policy.CPU_WINDOW_S:g}-second average for {policy.SUSTAIN_S:g} second",
        f"{policy.STEP_S:g} s for every program x K-tile step",
        f"at least {policy.SMALLEST} a side",
        " x ".join(str(size) for size in policy.DEFAULT_TILES),
        f"grows by {policy.WHAT_IF_ALLOWANCE_S} s with `--what-if`",
        f"S is over {policy.FIRST_PASS_S} s",
        f"at {policy.FIRST_PASS_S} charged seconds",
        f"that becomes {policy.TAIL_STALL_S} s",
    ):
        assert number in stated, number
