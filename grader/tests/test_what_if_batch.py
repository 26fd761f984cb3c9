"""The batch grader's what-if (``grade --what-if``): the worker's claims, the parent's checks
of them, the record, the feedback and the picture, and that it never touches a grade.

On a CPU the timing worker runs for real in the sandbox on the interpreter, where nothing
can be timed, so every configuration comes back untimed: that still shows the rebuilds
pass the build guard and the protocol end to end. The timed what-if is the last test, on
a GPU only.
"""

import threading

import pytest

from benchmarks import what_if
from grader.batch.grade import intake
from grader.batch.grade.grading import Settings
from grader.batch.inside import protocol, what_if_probe
from grader.batch.isolation import conversation, time_policy
from grader.batch.outputs import feedback, reports
from grader.batch.timing import speed, what_if_entry
from grader.tests.batch_helpers import DEMO, batch_backend, run_grader
from grader.tests.test_speed import H200_ENV, SIZES, FakeRun, passed_record
from solutions import MODEL_ANSWER

CANDIDATES = what_if.candidates()


def timing_of(config, ms):
    return protocol.WhatIfTiming.of(
        config, what_if.TIMED, kernel=(ms, ms * 0.99, ms * 1.01), torch=(0.2, 0.198, 0.202)
    )


class WhatIfRun(FakeRun):
    """A made-up timing run that also reports a what-if: each candidate at ``ms``."""

    def __init__(
        self,
        source,
        sizes,
        *,
        what_if_s=0,
        plan=protocol.WhatIfPlan(),  # noqa: B008 - frozen
        found=None,
        done=True,
        **options,
    ):
        super().__init__(source, sizes, kernel_ms=0.5, **options)
        self.what_if_s, self.what_if, self.what_ifs = what_if_s, None, []
        self.plan, self.found, self.what_if_done, self.what_if_gpu_s = plan, found, done, 3.2

    def measure(self):
        results = super().measure()
        if self.what_if_s:
            self.what_if = self.plan
            if not self.plan.reason:
                self.what_ifs = (
                    self.found
                    if self.found is not None
                    else [timing_of(config, 0.5 * 64 / config.block_m) for config in CANDIDATES[1:]]
                )
        return results


def graded(monkeypatch, what_if_on=True, first_ends_early=False, **run_options):
    """ada's record after the speed phase with made-up timing runs, and the options each
    timing run was started with."""
    made = []

    def fake(source, sizes, **options):
        made.append(options)
        return WhatIfRun(
            source,
            sizes,
            ends_early=first_ends_early and len(made) == 1,
            **{**options, **run_options},
        )

    monkeypatch.setattr(conversation, "TimingRun", fake)
    monkeypatch.setattr(speed, "_kernel_text", lambda submission: submission.data)
    record = passed_record("ada", tiles=(64, 64, 64))
    settings = Settings(
        seed=0,
        backend="gpu",
        timeout_s=30,
        memory_limit_bytes=1 << 30,
        speed=speed.SpeedSettings(SIZES, what_if=what_if_on),
    )
    speed.time_class(
        [(intake.Submission("ada", "ada.py", b"ada"), record)],
        settings,
        [0],
        on_timed=lambda _: None,
        stop=threading.Event(),
        environments={0: H200_ENV},
    )
    return record, made


# --------------------------------------------------------------------------- the protocol


def test_a_what_if_timing_is_kept_only_for_a_listed_candidate_with_a_known_status():
    sent = timing_of(CANDIDATES[2], 0.3).to_fields()
    kept = protocol.WhatIfTiming.from_fields(sent)
    assert kept.config == what_if.CANDIDATES[2] and kept.kernel[0] == pytest.approx(0.3)
    floats = {**sent, "config": [float(v) for v in sent["config"]]}
    assert all(type(v) is int for v in protocol.WhatIfTiming.from_fields(floats).config)
    for bad in (
        {**sent, "config": [16, 16, 16, 4, 3]},  # not a candidate
        {**sent, "config": "64x64x64"},
        {**sent, "status": "fastest"},
        {**sent, "config": [64, 64, 64, 4]},
    ):
        with pytest.raises(protocol.ProtocolError):
            protocol.WhatIfTiming.from_fields(bad)
    untimed = protocol.WhatIfTiming.from_fields({**sent, "kernel": [1e-300, 1e-300, 1e-300]})
    assert untimed.status == what_if.TIMING_FAILED and untimed.kernel is None
    wrong = protocol.WhatIfTiming.from_fields({**sent, "status": what_if.WRONG})
    assert wrong.kernel is None and wrong.torch is None  # a wrong one carries no speed


def test_a_what_if_plan_is_a_reason_code_the_parent_words_itself():
    assert protocol.WhatIfPlan.from_fields({"reason": ""}) == protocol.WhatIfPlan()
    ignored = protocol.WhatIfPlan.from_fields(
        {"reason": "ignored", "given": [128, 128, 64], "used": [64, 64, 64], "route": "constants"}
    )
    en, zh = what_if.reason_text(ignored)
    assert "given 128x128x64 it still lays out 64x64x64" in en and "写死" in zh
    for bad in (
        {"reason": "Full marks: the grader says so"},
        {"reason": "ignored", "given": [128, 128, 64], "route": "constants"},
        {"reason": "ignored", "given": [1, 2, 3], "used": [1, 2, 3], "route": "x"},
    ):
        with pytest.raises(protocol.ProtocolError):
            protocol.WhatIfPlan.from_fields(bad)


class Script:
    """A worker that sends what it is given, in order, and records how the parent stopped it."""

    def __init__(self, messages):
        self.messages, self.stopped = list(messages), None

    def receive(self, accept):
        if not self.messages:
            return None
        kind, fields = self.messages.pop(0)
        accept(kind, fields)
        return protocol.Message(kind, fields, b"")

    def stop(self, kind, detail):
        self.stopped = (kind, detail)


def collected(messages):
    run = object.__new__(conversation.TimingRun)
    run.worker, run.what_if, run.what_ifs, run.what_if_done = Script(messages), None, [], False
    run._what_if()
    return run


def test_the_parent_takes_each_configuration_once_and_nothing_after_a_reason():
    plan = ("what_if_plan", {"reason": ""})
    first, second = (("what_if", timing_of(c, 0.4).to_fields()) for c in CANDIDATES[:2])
    run = collected([plan, first, second, ("timing_done", {})])
    assert run.what_if_done and len(run.what_ifs) == 2 and run.worker.stopped is None
    twice = collected([plan, first, first, ("timing_done", {})])
    assert "twice" in twice.worker.stopped[1] and not twice.what_if_done
    after_reason = collected([("what_if_plan", {"reason": "autotuned"}), first])
    assert after_reason.worker.stopped and after_reason.what_ifs == []
    forged = collected([plan, ("what_if", {**first[1], "config": [512, 512, 512, 8, 3]})])
    assert "not a candidate" in forged.worker.stopped[1]
    cut = collected([plan, first])  # the run ended (a timeout) before timing_done
    assert not cut.what_if_done and len(cut.what_ifs) == 1


@pytest.mark.parametrize("route", [["keywords"], {"keywords": 1}])
def test_a_plan_whose_route_is_not_text_ends_the_run_not_the_batch(route):
    """A list or dict is unhashable: looked up among the routes it raised TypeError, which
    the parent does not catch, and the whole speed phase stopped."""
    run = collected(
        [
            (
                "what_if_plan",
                {"reason": "ignored", "given": [64, 64, 64], "used": [64, 64, 64], "route": route},
            )
        ]
    )
    assert "malformed" in run.worker.stopped[1] and run.what_if is None


# --------------------------------------------------------------------------- the record


def test_the_what_if_rows_take_the_graded_timing_as_the_students_own(monkeypatch):
    record, made = graded(monkeypatch)
    found = record["speed"]["what_if"]
    assert found["status"] == "run" and found["size"] == "4096"
    theirs = found["rows"][0]
    assert theirs["theirs"] and theirs["config"] == "64x64x64 8w3s"
    assert theirs["median_ms"] == pytest.approx(record["speed"]["rows"][0]["median_ms"])
    best = max(found["rows"], key=lambda row: row["tflops"])
    assert best["config"].startswith("256x128x64") and best["speedup_over_theirs"] == pytest.approx(
        4.0
    )
    assert made[0]["what_if_s"] == time_policy.WHAT_IF_S
    assert made[0]["limits"].timeout_s == 30 + time_policy.WHAT_IF_ALLOWANCE_S


def test_the_retry_of_a_run_that_ended_early_goes_without_the_what_if(monkeypatch):
    """Compiling the other configurations comes before the graded timing: a run that died
    there (a compiler that aborts on one of them, say) would have died again in its retry,
    and a correct kernel lost its speed to advice."""
    record, tries = graded(monkeypatch, first_ends_early=True)
    assert [options["what_if_s"] for options in tries] == [time_policy.WHAT_IF_S, 0]
    assert tries[1]["limits"].timeout_s == 30
    assert record["speed"]["status"] == "timed"
    found = record["speed"]["what_if"]
    assert found["status"] == "not_run" and "retry" in found["message"]


def test_without_the_option_nothing_changes(monkeypatch):
    record, made = graded(monkeypatch, what_if_on=False)
    with_it, _ = graded(monkeypatch)
    assert "what_if" not in record["speed"] and made[0]["what_if_s"] == 0
    assert made[0]["limits"].timeout_s == 30
    assert "what_if" not in speed.SpeedSettings(SIZES).describe()
    for key in ("status", "points", "message", "why"):
        assert record["speed"][key] == with_it["speed"][key]  # it never changes a grade
    measured = ("size", "verdict", "median_ms", "tflops", "ratio_vs_torch_mm")
    assert [[row[k] for k in measured] for row in record["speed"]["rows"]] == [
        [row[k] for k in measured] for row in with_it["speed"]["rows"]
    ]
    assert record["score"] == with_it["score"] and record["flags"] == with_it["flags"]


def test_a_batch_manifest_keeps_the_option_for_resume():
    settings = speed.SpeedSettings(SIZES, what_if=True)
    assert speed.from_description(settings.describe()) == settings
    assert not speed.from_description(speed.SpeedSettings(SIZES).describe()).what_if


def test_a_plan_that_raises_is_a_reason_not_a_crash_of_the_timing_run():
    import types

    def arrangement(lhs, rhs, output):
        raise ValueError("only my own tiles")

    module = types.SimpleNamespace(
        arrangement=arrangement, application=None, BLOCK_SIZE_M=64, BLOCK_SIZE_N=64, BLOCK_SIZE_K=64
    )
    trials = what_if_probe.Trials(module, None, (128, 128, 128), "cpu", 60)
    trials.build()
    assert trials.plan.reason == what_if.UNREADABLE and trials.builds == []


def test_why_a_what_if_ended_is_short_and_never_empty(monkeypatch):
    ending = type("Ending", (), {"kind": "crashed", "detail": "x" * 100_000})()
    record, _ = graded(monkeypatch, found=[], done=False)
    run = WhatIfRun(b"", SIZES, what_if_s=60, found=[], done=False)
    run.measure()
    for detail, words in (("x" * 100_000, " [...]"), ("", "it ended early")):
        ending.detail = detail
        run.ending = ending
        message = what_if_entry.entry(run, record)["message"]
        assert message.endswith(words) and len(message) < 400


@pytest.mark.parametrize(
    "options, words",
    [
        ({"plan": protocol.WhatIfPlan("autotuned")}, "autotuner already picks"),
        ({"found": [], "done": False}, "ended before every configuration"),
    ],
)
def test_a_what_if_that_could_not_run_says_why(monkeypatch, options, words):
    record, _ = graded(monkeypatch, **options)
    found = record["speed"]["what_if"]
    assert words in "\n".join(what_if_entry.summary(found))
    assert record["speed"]["status"] == "timed" and record["score"] == 29


def test_feedback_shows_the_what_if_and_its_picture(monkeypatch, tmp_path):
    from grader.core import cases

    worker_note = "ValueError: ``` \n## Score: 100 / 29"
    sent = [
        timing_of(CANDIDATES[1], 0.25),
        protocol.WhatIfTiming.of(CANDIDATES[2], what_if.BUILD_FAILED, note=worker_note),
    ]
    found = [protocol.WhatIfTiming.from_fields(item.to_fields()) for item in sent]
    record, _ = graded(monkeypatch, found=found)
    record.folder, record.message, record.cases = "ada", "", []
    reports.write_student(tmp_path, record, cases.catalogue(0, "gpu")[:1])
    text = (tmp_path / "ada" / "feedback.md").read_text(encoding="utf-8")
    assert "## What-if" in text and "Best: 64x128x64 4w4s" in text and "换用其他分块" in text
    assert f"]({feedback.WHAT_IF_PICTURE})" in text
    # The worker's note is one line, inside a fence longer than its backticks.
    assert not any(line.startswith("## Score") for line in text.splitlines())
    assert "\n````text\n" in text and "ValueError: ``` ## Score: 100 / 29" in text
    assert (tmp_path / "ada" / feedback.WHAT_IF_PICTURE).read_bytes()[:4] == b"\x89PNG"


def test_the_share_folder_carries_the_what_if_picture_its_feedback_links(monkeypatch, tmp_path):
    """feedback.md shows what-if.png; a share folder without it showed students a broken
    picture (it holds the student's own timings only, as the feedback's summary does)."""
    from grader.batch.outputs import share
    from grader.core import cases

    record, _ = graded(monkeypatch)
    record.folder, record.message, record.cases = "ada", "", []
    out = tmp_path / "out"
    reports.write_student(out, record, cases.catalogue(0, "gpu")[:1])
    (out / "students.csv").write_text("student,folder\nada,ada\n", encoding="utf-8")
    share.build(out, tmp_path / "share")
    shared = tmp_path / "share" / "ada"
    assert f"]({feedback.WHAT_IF_PICTURE})" in (shared / "feedback.md").read_text("utf-8")
    assert (shared / feedback.WHAT_IF_PICTURE).read_bytes()[:4] == b"\x89PNG"


def test_a_regrade_without_a_what_if_leaves_no_old_picture_behind(monkeypatch, tmp_path):
    """A student graded again into the same folder (a new file, a batch without --what-if)
    kept the last grade's what-if.png and arrangement.png, which share then handed out
    beside a feedback.md that no longer links them."""
    from grader.core import cases

    record, _ = graded(monkeypatch)
    record.folder, record.message, record.cases = "ada", "", []
    chosen = cases.catalogue(0, "gpu")[:1]
    reports.write_student(tmp_path, record, chosen)
    (tmp_path / "ada" / feedback.ARRANGEMENT_PICTURE).write_bytes(b"an older grade's")
    again, _ = graded(monkeypatch, what_if_on=False)
    again.folder, again.message, again.cases = "ada", "", []
    reports.write_student(tmp_path, again, chosen)
    assert not (tmp_path / "ada" / feedback.WHAT_IF_PICTURE).exists()
    assert not (tmp_path / "ada" / feedback.ARRANGEMENT_PICTURE).exists()


# --------------------------------------------------------------------------- the worker


class Channel:
    def __init__(self):
        self.sent = []

    def report(self, record):
        self.sent.append(record)


def test_the_worker_reports_a_plan_and_one_line_per_other_configuration(monkeypatch):
    from grader.core.loading import load_submission

    module = load_submission(MODEL_ANSWER)
    monkeypatch.setattr(what_if_probe.speed_probe, "precompile", lambda *args: "")
    monkeypatch.setattr(
        what_if_probe.speed_probe,
        "measure",
        lambda handle, m, n, k, device: {
            "verdict": "PASS",
            "wrong": 0,
            "kernel": [0.4, 0.39, 0.41],
            "torch": [0.2, 0.19, 0.21],
        },
    )
    trials = what_if_probe.Trials(module, None, (128, 128, 128), "cpu", budget_s=60)
    trials.build()
    trials.compile()
    channel = Channel()
    trials.report(channel)
    plan, *timings = channel.sent
    assert plan == protocol.WhatIfPlan()
    # Without a kernel its own warps and stages are unknown, so no candidate is its own.
    assert [t.config for t in timings] == list(what_if.CANDIDATES)
    assert {t.status for t in timings} == {what_if.TIMED}
    spent = what_if_probe.Trials(module, None, (128, 128, 128), "cpu", budget_s=-1)
    spent.build()
    spent.compile()
    channel = Channel()
    spent.report(channel)
    assert {t.status for t in channel.sent[1:]} == {what_if.SKIPPED}


def test_hard_coded_tiles_send_a_reason_and_nothing_else(tmp_path):
    from grader.core.loading import load_submission
    from grader.tests.build_variants import VARIANTS

    path = tmp_path / "hard_coded_tiles.py"
    path.write_text(
        VARIANTS["other_style"]
        .source("hard")
        .replace("c.tile((BLOCK_SIZE_M, BLOCK_SIZE_N))", "c.tile((64, 64))"),
        encoding="utf-8",
    )
    trials = what_if_probe.Trials(load_submission(path), None, (128, 128, 128), "cpu", 60)
    trials.build()
    channel = Channel()
    trials.report(channel)
    assert [type(item) for item in channel.sent] == [protocol.WhatIfPlan]
    assert channel.sent[0].reason == what_if.IGNORED


def test_a_sandboxed_timing_run_rebuilds_every_configuration_past_the_build_guard():
    """On the interpreter nothing can be timed (no CUDA), so each size is an ERROR and each
    configuration is untimed; what is shown is that the rebuilds and their compiles run
    inside the sandbox under the build guard, and the report reaches the parent whole."""
    if batch_backend() == "gpu":
        pytest.skip("on a GPU the last test times the what-if for real")
    from grader.batch.isolation.sandbox import Limits
    from grader.core import kernel_source

    source = kernel_source.extract(MODEL_ANSWER.read_text()).text
    run = conversation.TimingRun(
        source.encode(),
        [(64, 64, 64)],
        backend_name="interpreter",
        limits=Limits(300, 4 << 30, time_policy.cores_for("interpreter")),
        what_if_s=120,
    ).prepare()
    assert run.ready, run.note
    run.measure()
    assert run.stopped == "" and run.what_if_done, (run.ending, run.what_ifs)
    assert run.what_if == protocol.WhatIfPlan()
    own = (64, 64, 64, run.launch["num_warps"], run.launch["num_stages"])
    assert [found.config for found in run.what_ifs] == [c for c in what_if.CANDIDATES if c != own]
    assert {found.status for found in run.what_ifs} == {what_if.WRONG}


def test_a_rebuild_that_patches_triton_is_stopped_before_the_graded_timing():
    """The what-if runs the student's arrangement again after the kernel is made; what it
    does there must meet the build guard's check before any launch, not only the one after,
    which leaves Triton's modules alone: a rebound triton.testing.do_bench would time the
    graded sizes. (Only an allowlist bug could let a submission write this; the guard is
    there for that day.)"""
    if batch_backend() == "gpu":
        pytest.skip("the sandboxed interpreter run shows it; the GPU test times for real")
    from grader.batch.isolation.sandbox import Limits
    from grader.core import kernel_source

    source = kernel_source.extract(MODEL_ANSWER.read_text()).text
    source = "import triton\n" + source.replace(
        "    output_arranged = output.tile(",
        "    if block_size_m == 128:\n"
        "        triton.testing.do_bench = lambda *args, **kwargs: (1e-3, 1e-3, 1e-3)\n"
        "    output_arranged = output.tile(",
        1,
    )
    run = conversation.TimingRun(
        source.encode(),
        [(64, 64, 64)],
        backend_name="interpreter",
        limits=Limits(300, 4 << 30, time_policy.cores_for("interpreter")),
        what_if_s=120,
    ).prepare()
    run.measure()
    assert not run.ready and "triton.testing.do_bench" in run.stopped, run.ending


# --------------------------------------------------------------------------- command line


@pytest.mark.parametrize(
    "arguments, message",
    [
        (["--no-speed", "--what-if"], "--what-if needs speed: drop --no-speed"),
        (["--what-if"], "--what-if needs a GPU"),
    ],
)
def test_what_if_without_a_timing_gpu_stops_before_grading(tmp_path, arguments, message):
    if batch_backend() == "gpu" and "--no-speed" not in arguments:
        pytest.skip("this machine has a GPU: the what-if runs here")
    result = run_grader(
        tmp_path, "grade", str(DEMO), "--out", str(tmp_path / "out"), *arguments, timeout=120
    )
    assert result.returncode == 1 and message in result.stderr
    assert not (tmp_path / "out" / "gradebook.csv").exists()


# --------------------------------------------------------------------------- on a GPU


def test_the_what_if_times_other_tiles_of_the_course_default_on_a_gpu():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("the what-if times kernels: it needs a GPU")
    from grader.batch.isolation.sandbox import Limits
    from grader.core import kernel_source

    source = kernel_source.extract(MODEL_ANSWER.read_text()).text
    run = conversation.TimingRun(
        source.encode(),
        [(4096, 4096, 4096)],
        backend_name="gpu",
        limits=Limits(300, 8 << 30, 4.0),
        device=0,
        what_if_s=time_policy.WHAT_IF_S,
    ).prepare()
    assert run.ready, run.note
    run.measure()
    assert run.what_if_done and run.stopped == "", run.ending
    record = passed_record("ref", tiles=(64, 64, 64))
    found = what_if_entry.entry(run, record)
    timed = [row for row in found["rows"] if row["tflops"]]
    assert len(timed) >= len(what_if.CANDIDATES) - 2, found
    best = max(timed, key=lambda row: row["tflops"])
    # The reference keeps the course default, 64x64x64: issue 24 asks for 1.5x over it.
    assert best["speedup_over_theirs"] >= 1.5, found
    print("\n".join(what_if_entry.summary(found)), f"\nGPU held {found['gpu_s']} s")
