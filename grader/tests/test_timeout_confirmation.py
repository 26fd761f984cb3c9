"""A GPU timeout graded beside other submissions stands only once graded again without them,
and with the full time limit where a shorter first pass stopped it (grader.batch.grade.session:
issue 32, the same verdict on every run). The workers are stand-ins here: what is tested is
the session's bookkeeping of who ran beside whom, and under which limit."""

import dataclasses
import threading
import time

import pytest

from grader.batch.record import Record
from grader.batch.grade import grading, intake, session
from grader.batch.inside import protocol
from grader.batch.isolation import conversation, sandbox, time_policy, warm_pool
from grader.batch.isolation.conversation import RunReport
from grader.batch.isolation.sandbox import Ending
from grader.batch.outputs import reports
from grader.tests.attack_sources import REFERENCE
from grader.tests.batch_helpers import DEMO, NEEDS_INTERPRETER, small_cases


class StandIns:
    """grading.grade for the session: ``slow`` times out while any other student is being
    graded, and passes alone; ``stuck`` stalls in one step for 60 s, so it passes only
    where no step limit stops it; every other student passes once ``slow`` has started."""

    def __init__(self):
        self.calls, self.lock, self.slow_started = [], threading.Lock(), threading.Event()
        self.active, self.steps = set(), []

    def grade(
        self,
        submission,
        settings,
        folder,
        device=None,
        on_start=None,
        pool=None,
        stall=None,
        gate=None,
    ):
        step_s = stall.seconds if stall is not None else None
        with self.lock:
            self.calls.append(submission.student)
            self.steps.append((submission.student, step_s))
            self.active.add(submission.student)
        try:
            if submission.student == "lag":
                return self.lag(stall)
            if submission.student.startswith("stuck"):
                self.slow_started.set()
                if step_s is not None and step_s < 60:
                    return Record(
                        student=submission.student,
                        status="timeout",
                        message="timeout",
                        score=0,
                        max_score=1,
                        wall_time_s=step_s,
                        cut_short_s=step_s,
                    )
                return Record(
                    student=submission.student,
                    status="passed",
                    message="",
                    score=1,
                    max_score=1,
                    wall_time_s=60.0,
                )
            if submission.student == "slow":
                self.slow_started.set()
                crowded = False
                for _ in range(200):  # up to 2 s for a neighbour to show
                    with self.lock:
                        crowded = len(self.active) > 1
                    if crowded:
                        break
                    time.sleep(0.01)
                status = "timeout" if crowded else "passed"
            else:
                self.slow_started.wait(5)
                time.sleep(0.2)
                status = "passed"
            return Record(
                student=submission.student,
                status=status,
                message=status,
                score=0,
                max_score=1,
                wall_time_s=1.0,
            )
        finally:
            with self.lock:
                self.active.discard(submission.student)

    def lag(self, stall):
        """A file stalled in a step: cut short as soon as its stall limit is the tail's
        (time_policy.TAIL_STALL_S); where that does not come within 1.5 s, it passes."""
        deadline = time.monotonic() + 1.5
        while stall is not None and time.monotonic() < deadline:
            if stall.seconds <= time_policy.TAIL_STALL_S:
                return Record(
                    student="lag",
                    status="timeout",
                    message="timeout",
                    score=0,
                    max_score=1,
                    wall_time_s=stall.seconds,
                    cut_short_s=stall.seconds,
                )
            time.sleep(0.01)
        return Record(
            student="lag", status="passed", message="", score=1, max_score=1, wall_time_s=1.5
        )


class NoPool:
    """No warm workers: the stand-ins start none."""

    def __init__(self, **options):
        pass

    def expect(self, runs):
        pass

    def close(self):
        pass


@pytest.fixture
def stand_ins(monkeypatch):
    fake = StandIns()
    monkeypatch.setattr(grading, "grade", fake.grade)
    monkeypatch.setattr(warm_pool, "WarmPool", NoPool)
    monkeypatch.setattr(reports, "write_student", lambda *args, **kwargs: None)
    return fake


def graded(backend, students, slots, tmp_path, timeout_s=1):
    settings = grading.Settings(
        seed="1", backend=backend, timeout_s=timeout_s, memory_limit_bytes=1 << 30
    )
    chosen = [intake.Submission(name, f"{name}.py", b"x = 1\n") for name in students]
    folders = {name: name for name in students}
    run = session.Session(settings, tmp_path, slots, progress=False)
    records = {}
    run._grade_class(chosen, folders, [], records)
    return records


def test_a_gpu_timeout_beside_others_is_graded_again_and_the_second_verdict_stands(
    stand_ins, tmp_path
):
    records = graded("gpu", ["slow", "quick"], [0, 0], tmp_path)
    assert stand_ins.calls.count("slow") == 2 and stand_ins.calls.count("quick") == 1
    slow = records["slow"]
    assert slow["status"] == "passed" and slow["neighbours"] == 0
    assert slow["confirmed"] == {
        "first_status": "timeout",
        "first_message": "timeout",
        "first_wall_time_s": 1.0,
        "first_neighbours": 1,
    }
    assert records["quick"]["neighbours"] == 1 and "confirmed" not in records["quick"]
    assert not time_policy.unconfirmed(slow, "gpu")


def test_a_timeout_graded_alone_or_on_the_interpreter_is_not_graded_again(stand_ins, tmp_path):
    alone = graded("gpu", ["slow"], [0, 0], tmp_path)  # no neighbour: it passes at once
    assert stand_ins.calls == ["slow"] and alone["slow"]["neighbours"] == 0
    stand_ins.calls.clear()
    interpreted = graded("interpreter", ["slow", "quick"], [None, None], tmp_path)
    # There the time limit discounts every wait for the one shared resource, a CPU core.
    assert stand_ins.calls.count("slow") == 1 and interpreted["slow"]["status"] == "timeout"
    assert "confirmed" not in interpreted["slow"]


def test_a_file_the_first_pass_cut_short_is_judged_under_the_full_limit(stand_ins, tmp_path):
    records = graded("gpu", ["stuck", "quick"], [0, 0], tmp_path, timeout_s=90)
    first = time_policy.FIRST_PASS_S
    # quick, started once stuck was due, may meet the pass's tail (the tests below)
    assert sorted(stand_ins.steps[:2]) in (
        [("quick", first), ("stuck", first)],
        [("quick", time_policy.TAIL_STALL_S), ("stuck", first)],
    )
    assert stand_ins.steps[2:] == [("stuck", None)]  # graded again: the full limit alone
    assert records["stuck"]["status"] == "passed" and records["stuck"]["score"] == 1
    assert records["stuck"]["confirmed"]["first_status"] == "timeout"
    assert records["stuck"]["confirmed"]["first_cut_short_s"] == first
    assert "confirmed" not in records["quick"]


def test_the_first_pass_s_tail_cuts_a_stall_short_once_a_second_grading_has_a_slot_for_it(
    stand_ins, tmp_path
):
    """``stuck`` is cut short at once, so a second grading is due; ``lag``, started last, stalls.
    Once ``quick`` is done, ``lag`` and ``stuck`` fit the two slots of the second grading,
    and ``lag`` is cut at the tail's limit instead of holding the first pass."""
    records = graded("gpu", ["stuck", "quick", "lag"], [0, 0], tmp_path, timeout_s=90)
    assert records["lag"]["confirmed"]["first_cut_short_s"] == time_policy.TAIL_STALL_S
    assert records["lag"]["status"] == "passed" and stand_ins.calls.count("lag") == 2
    assert sorted(stand_ins.steps[-2:]) == [("lag", None), ("stuck", None)]  # the full limit
    assert "confirmed" not in records["quick"]


@pytest.mark.parametrize(
    "students",
    [
        ["quick", "lag"],  # no second grading is due: nothing is gained by a cut
        ["stuck", "stuck2", "quick", "lag"],  # two due and lag: more than the two slots
    ],
)
def test_the_first_pass_s_tail_keeps_its_limit_where_a_cut_gains_nothing(
    stand_ins, tmp_path, students
):
    records = graded("gpu", students, [0, 0], tmp_path, timeout_s=90)
    assert records["lag"]["status"] == "passed" and "confirmed" not in records["lag"]
    assert stand_ins.calls.count("lag") == 1


def test_a_file_whose_kernel_prints_is_known_from_its_source():
    from grader.tests.build_variants import VARIANTS

    def submission(text, problem=""):
        return intake.Submission("x", "x.py", text.encode("utf-8"), problem=problem)

    printing = VARIANTS["debug_print"].source("debug_print")
    assert grading.prints_in_its_kernel(submission(printing))
    assert grading.prints_in_its_kernel(
        submission(printing.replace('print("k =", k)', 'ntl.device_print("k =", k)'))
    )
    assert not grading.prints_in_its_kernel(submission(REFERENCE.read_text()))
    assert not grading.prints_in_its_kernel(submission(printing, problem="no file"))
    assert not grading.prints_in_its_kernel(submission("def application(:\n"))


def test_the_first_pass_grades_the_files_whose_kernel_prints_last(monkeypatch, tmp_path):
    """Their GPU time slows every file beside them: graded last, they meet the pass's tail,
    and the order of grading is all that changes (the interpreter keeps the class order)."""
    from grader.tests.build_variants import VARIANTS

    order = []

    def grade(
        submission, settings, folder, device=None, on_start=None, pool=None, stall=None, gate=None
    ):
        order.append(submission.student)
        return Record(
            student=submission.student,
            status="passed",
            message="",
            score=1,
            max_score=1,
            wall_time_s=0.1,
        )

    monkeypatch.setattr(grading, "grade", grade)
    monkeypatch.setattr(warm_pool, "WarmPool", NoPool)
    monkeypatch.setattr(reports, "write_student", lambda *args, **kwargs: None)
    texts = {
        "printer": VARIANTS["debug_print"].source("debug_print").encode("utf-8"),
        "ada": REFERENCE.read_bytes(),
        "bo": REFERENCE.read_bytes(),
    }
    chosen = [intake.Submission(name, f"{name}.py", texts[name]) for name in texts]
    for backend, slots, expected in (
        ("gpu", [0], ["printer", "ada", "bo"]),
        ("gpu", [0, 0], ["ada", "bo", "printer"]),
        ("interpreter", [None], ["printer", "ada", "bo"]),
    ):
        order.clear()
        settings = grading.Settings(
            seed="1", backend=backend, timeout_s=90, memory_limit_bytes=1 << 30
        )
        run = session.Session(settings, tmp_path, slots, progress=False)
        records = {}
        run._grade_class(chosen, {name: name for name in texts}, [], records)
        assert sorted(records) == sorted(texts)
        if len(slots) == 1:  # no first pass's limit: one slot has no neighbour
            assert order == expected
        else:
            assert sorted(order[:2]) == expected[:2] and order[2] == "printer"


def test_the_first_pass_s_tail_leaves_a_file_whose_kernel_prints_its_limit(stand_ins, tmp_path):
    """Cut short, ``lag`` would print beside the files graded again, whose verdicts stand:
    where its kernel prints, the tail leaves its step limit as it was, and it finishes in
    the first pass (the same class as the tail test above)."""
    from grader.tests.build_variants import VARIANTS

    printing = VARIANTS["debug_print"].source("debug_print").encode("utf-8")
    settings = grading.Settings(seed="1", backend="gpu", timeout_s=90, memory_limit_bytes=1 << 30)
    chosen = [
        intake.Submission(name, f"{name}.py", printing if name == "lag" else b"x = 1\n")
        for name in ("stuck", "quick", "lag")
    ]
    records = {}
    session.Session(settings, tmp_path, [0, 0], progress=False)._grade_class(
        chosen, {s.student: s.student for s in chosen}, [], records
    )
    assert records["lag"]["status"] == "passed" and "confirmed" not in records["lag"]
    assert stand_ins.calls.count("lag") == 1 and records["stuck"]["confirmed"]


def test_a_run_being_stopped_keeps_the_limit_that_stopped_it():
    """A lowering that comes while a run is being stopped (its where-wait and kill take
    seconds) must not make a run its full limit stopped read as cut short."""
    stall = conversation.StallLimit(30)
    worker = Clocked(90)
    worker.now = 50
    limit = conversation._StepLimit(worker, stall)
    limit.step()  # its step began at 50 s: its limit is 80 s
    worker.stopping = True
    stall.lower(10)
    assert worker.limits.timeout_s == 80
    assert limit.cut(Ending("timeout", "", 80.0, "")) == 30  # the step limit, as it stood


def test_a_lowered_stall_limit_reaches_the_runs_under_way_and_no_ended_run():
    stall = conversation.StallLimit(30)
    stuck, moving, ended = Clocked(90), Clocked(90), Clocked(90)
    limits = {
        name: conversation._StepLimit(worker, stall)  # each watched from its start
        for name, worker in (("stuck", stuck), ("moving", moving), ("ended", ended))
    }
    moving.now = 25
    limits["moving"].step()  # its step began at 25 s
    ended.now = 12
    assert limits["ended"].cut(Ending("finished", "", 12.0, "")) == 0
    stall.lower(10)
    assert stuck.limits.timeout_s == 10 and moving.limits.timeout_s == 35
    assert ended.limits.timeout_s == 30  # ended before the lowering: left as it ended
    assert limits["stuck"].cut(Ending("timeout", "", 10.0, "")) == 10
    stall.lower(20)  # never raised again
    assert stall.seconds == 10 and moving.limits.timeout_s == 35
    late = Clocked(90)
    conversation._StepLimit(late, stall)
    assert late.limits.timeout_s == 10


def test_the_first_pass_limit_applies_only_where_a_timeout_is_graded_again():
    step = time_policy.first_pass_step
    assert time_policy.FIRST_PASS_S < 90
    assert step("gpu", 90, 100, 8) == time_policy.FIRST_PASS_S
    assert step("gpu", 20, 100, 8) is None  # never longer
    assert step("gpu", 90, 1, 8) is None  # a file alone
    assert step("gpu", 90, 100, 1) is None  # -j 1: no neighbour
    assert step("interpreter", 90, 100, 8) is None


class Clocked:
    """A worker whose charged seconds the test sets."""

    def __init__(self, timeout_s):
        self.limits, self.now = sandbox.Limits(timeout_s, 1 << 30), 0.0
        self.stopping = False  # as sandbox.Worker's, until ``stop`` begins

    def charged(self):
        return self.now

    def set_time_limit(self, seconds):
        self.limits = dataclasses.replace(self.limits, timeout_s=seconds)

    def extend_limit(self, seconds):
        self.set_time_limit(self.limits.timeout_s + seconds)


def test_a_step_limit_stops_a_stalled_step_and_never_a_run_that_makes_progress():
    worker = Clocked(90)
    limit = conversation._StepLimit(worker, conversation.StallLimit(30))
    assert worker.limits.timeout_s == 30  # the first step: 30 s
    for now in (20, 45, 70):  # each step finishes within 30 s of the one before
        worker.now = now
        limit.step()
        assert worker.limits.timeout_s == min(90, now + 30)
    assert worker.limits.timeout_s == 90  # never past the full limit
    assert not limit.cut(Ending("timeout", "", 90.0, ""))  # stopped by the full limit
    stalled = Clocked(90)
    limit = conversation._StepLimit(stalled, conversation.StallLimit(30))
    stalled.now = 10
    limit.step()
    assert stalled.limits.timeout_s == 40
    limit.extend(5)  # the interpreter's share for the tiles grows both limits
    assert stalled.limits.timeout_s == 45 and limit.full == 95
    stalled.now = 20
    limit.step()  # and every step after
    assert stalled.limits.timeout_s == 55
    assert limit.cut(Ending("timeout", "", 55.0, "")) == 30
    finished = conversation._StepLimit(Clocked(90), conversation.StallLimit(30))
    assert finished.cut(Ending("finished", "", 12.0, "")) == 0
    odd = Clocked(45.26)  # a --timeout of hundredths: the limit never passes it
    limit = conversation._StepLimit(odd, conversation.StallLimit(30))
    odd.now = 15.27
    limit.step()
    assert odd.limits.timeout_s == 45.26 and not limit.cut(Ending("timeout", "", 45.3, ""))


class Scripted:
    """A worker that sends its messages at the charged seconds the test gives, and is
    stopped, as the sandbox's watcher stops one, when a message comes after its limit."""

    def __init__(self, limits, script):
        self.limits, self.script, self.now, self.ending = limits, list(script), 0.0, None
        self.stopping = False

    def receive(self, accept):
        if self.ending is not None or not self.script:
            return None
        self.now, kind, fields = self.script.pop(0)
        if self.now > self.limits.timeout_s:
            self.ending = Ending("timeout", "", self.now, "")
            return None
        return protocol.Message(kind, fields)

    def stop(self, kind, detail):
        self.ending = self.ending or Ending(kind, detail, self.now, "")

    def finish(self):
        return self.ending or Ending("finished", "", self.now, "")

    def charged(self):
        return self.now

    set_time_limit, extend_limit = Clocked.set_time_limit, Clocked.extend_limit


@pytest.mark.parametrize(
    "loaded_at,step_s,ends,cut",
    [
        (40, 30, "finished", False),  # each step within 30 s of the last: 40 s in all is fine
        (40, None, "finished", False),
        (50, 30, "timeout", True),  # 35 s without a step after the first: stalled
        (95, None, "timeout", False),  # past the full limit: a timeout of its own
    ],
)
def test_a_run_s_steps_move_its_limit(monkeypatch, loaded_at, step_s, ends, cut):
    script = [(15, "hello", {}), (loaded_at, "loaded", {"status": "ok"})]
    monkeypatch.setattr(
        conversation,
        "_worker",
        lambda mode, source, limits, pool, **options: Scripted(limits, script),
    )
    report = conversation.run(
        "wrapper",
        b"",
        [],
        backend_name="gpu",
        limits=sandbox.Limits(90, 1 << 30),
        stall=step_s and conversation.StallLimit(step_s),
    )
    assert report.ending.kind == ends and report.cut_short == (step_s if cut else 0)
    assert report.stage == ("done" if ends == "finished" else "importing")


@pytest.mark.parametrize("kernel,wrapper", [(True, False), (False, True)])
def test_a_run_the_step_limit_stopped_leaves_its_file_to_be_graded_again(
    monkeypatch, kernel, wrapper
):
    seen = []

    def run(mode, source, phases, *, limits, stall=None, **options):
        seen.append((limits.timeout_s, stall and stall.seconds))
        hangs = kernel if mode == "kernel" else wrapper  # times out, cut short if it can be
        ending = Ending("timeout" if hangs else "finished", "", 1.0, "")
        return RunReport(
            ending,
            "running",
            0,
            load_status="ok",
            cut_short=stall.seconds if hangs and stall else 0.0,
        )

    monkeypatch.setattr(conversation, "run", run)
    settings = grading.Settings(seed="1", backend="gpu", timeout_s=90, memory_limit_bytes=1 << 30)
    submission = intake.Submission("gus", "gus.py", REFERENCE.read_bytes())
    cut = grading.grade(submission, settings, "gus", stall=conversation.StallLimit(30))
    assert seen == [(90, 30), (90, 30)] and cut["status"] == "timeout"
    assert cut["cut_short_s"] == 30
    assert time_policy.unconfirmed(dataclasses.replace(cut, neighbours=0), "gpu")
    assert not time_policy.unconfirmed(
        dataclasses.replace(cut, confirmed={"first_status": "timeout"}), "gpu"
    )
    full = grading.grade(submission, settings, "gus")
    assert seen[2:] == [(90, None), (90, None)] and full["status"] == "timeout"
    assert "cut_short_s" not in full
    assert not time_policy.unconfirmed(dataclasses.replace(full, neighbours=0), "gpu")


@NEEDS_INTERPRETER
@pytest.mark.skipif(sandbox.check(False) is not None, reason="bubblewrap cannot start here")
def test_a_real_hang_is_stopped_a_step_limit_after_its_last_step(tmp_path, monkeypatch):
    """gus loops for ever in nt_gemm: with a 5 s step limit inside a 120 s one, his nt_gemm
    run ends within seconds, and says it was cut short."""
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    settings = grading.Settings(
        seed="7",
        backend="interpreter",
        timeout_s=120,
        memory_limit_bytes=4 << 30,
        case_filter=tuple(small_cases().split(",")[:1]),
    )
    phases = grading._wrapper_phase(
        grading._phases(settings.cases(), settings.seed), settings.cases()
    )
    started = time.monotonic()
    report = conversation.run(
        "wrapper",
        (DEMO / "gus" / "ninetoothed_gemm.py").read_bytes(),
        phases,
        backend_name="interpreter",
        limits=grading.limits(settings),
        stall=conversation.StallLimit(5),
    )
    assert report.ending.kind == "timeout" and report.cut_short, report.ending.detail
    assert "public cases" not in report.seconds and report.stage == "running"
    assert time.monotonic() - started < 60


def test_an_unconfirmed_gpu_timeout_is_graded_again_on_resume():
    first = Record(status="timeout", neighbours=3)
    assert time_policy.unconfirmed(first, "gpu")
    assert not time_policy.unconfirmed(
        dataclasses.replace(first, confirmed={"first_status": "timeout"}), "gpu"
    )
    assert not time_policy.unconfirmed(dataclasses.replace(first, neighbours=0), "gpu")
    assert not time_policy.unconfirmed(dataclasses.replace(first, status="failed"), "gpu")
    # a file the first pass cut short, whatever its status, until graded again
    cut = Record(status="failed", neighbours=0, cut_short_s=30)
    assert time_policy.unconfirmed(cut, "gpu") and not time_policy.unconfirmed(cut, "interpreter")
    # merge refuses such a record as unfinished, by the same rule
    assert not time_policy.unconfirmed(first, "interpreter")


def test_a_confirmed_timeout_says_so_on_the_student_s_page():
    from grader.batch.outputs import feedback

    record = Record(
        student="gus",
        status="timeout",
        max_score=35,
        message="still running",
        confirmed={"first_status": "timeout"},
    )
    page = feedback.feedback_markdown(record, [])
    assert "timed out twice" in page and "两次超时" in page
    record["confirmed"]["first_cut_short_s"] = 30
    page = feedback.feedback_markdown(record, [])
    assert "finished no step for 30 s" in page and "30 秒内没有完成任何一步" in page
    assert "twice" not in page
    record.confirmed = None
    assert "twice" not in feedback.feedback_markdown(record, [])


def test_a_file_s_feedback_is_written_while_the_next_file_takes_its_slot(monkeypatch, tmp_path):
    """A slot is given back before the file's feedback (pictures: a second) is written, and
    another file is graded in it meanwhile; never more files at once than slots."""
    changed, active, most, started, place = threading.Condition(), [0], [0], [0], {}
    overlapped = []

    def grade(
        submission, settings, folder, device=None, on_start=None, pool=None, stall=None, gate=None
    ):
        with changed:
            active[0] += 1
            most[0] = max(most[0], active[0])
            started[0] += 1
            place[submission.student] = started[0]
            changed.notify_all()
        time.sleep(0.1)
        with changed:
            active[0] -= 1
        return {
            "student": submission.student,
            "status": "passed",
            "message": "",
            "score": 1,
            "max_score": 1,
            "wall_time_s": 0.1,
        }

    def write_student(out_dir, record, *args):
        with changed:  # the next file, graded while this one's feedback is written
            overlapped.append(
                changed.wait_for(lambda: started[0] > place[record["student"]], timeout=3)
            )

    monkeypatch.setattr(grading, "grade", grade)
    monkeypatch.setattr(warm_pool, "WarmPool", NoPool)
    monkeypatch.setattr(reports, "write_student", write_student)
    records = graded("gpu", ["a", "b", "c"], [0], tmp_path)
    assert sorted(records) == ["a", "b", "c"] and most[0] == 1
    assert overlapped.count(True) == 2, overlapped  # the last file has none after it


def test_a_grader_failure_in_a_second_grading_leaves_only_that_file_ungraded(
    stand_ins, monkeypatch, tmp_path
):
    """A bug of the grader that one file triggers (here in its second grading) must not
    stop the class: the file is named as failed, its first-pass record is not kept, and
    every other verdict stands."""
    real = stand_ins.grade
    seen = []

    def grade(submission, *args, **kwargs):
        seen.append(submission.student)
        if submission.student == "slow" and seen.count("slow") == 2:
            raise ValueError("a bug in the parent that slow's output triggers")
        return real(submission, *args, **kwargs)

    monkeypatch.setattr(grading, "grade", grade)
    settings = grading.Settings(seed="1", backend="gpu", timeout_s=1, memory_limit_bytes=1 << 30)
    chosen = [intake.Submission(name, f"{name}.py", b"x = 1\n") for name in ("slow", "quick")]
    run = session.Session(settings, tmp_path, [0, 0], progress=False)
    records = {}
    run._grade_class(chosen, {"slow": "slow", "quick": "quick"}, [], records)
    assert run.failed == ["slow"] and seen.count("slow") == 2
    assert records["quick"]["status"] == "passed"
