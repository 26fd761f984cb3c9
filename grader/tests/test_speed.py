"""Speed grading (grader.batch.timing.speed and .handin, grader.batch.outputs.leaderboard)
without a GPU.

The timing itself needs a GPU (the last test, skipped elsewhere); everything
around it is checked here with timing runs made up in the test: the one-at-a-
time rule per GPU, the retry, the record's rows, points, the gradebook
columns, the feedback, the Gradescope leaderboard, the class leaderboard, and
the hand-in check against made-up and genuine numbers. One file, a little over 400
lines: the tests share the made-up timing runs and records defined at its top.
"""

import dataclasses
import io
import threading
import time
import zipfile

import pandas
import pytest

from benchmarks import report
from grader.batch.record import Record
from grader.batch.grade import intake
from grader.batch.inside import protocol
from grader.batch.isolation import conversation
from grader.batch.outputs import feedback, leaderboard, reports
from grader.batch.timing import handin, speed
from grader.batch.grade.grading import Settings
from grader.tests.batch_helpers import DEMO, run_grader
from solutions import MODEL_ANSWER

H200_ENV = {
    "gpu_name": "NVIDIA H200",
    "driver": "580",
    "cuda": "13.0",
    "timestamp": "2026-11-30T20:00:00+00:00",
    "host": "gpu-box",
}
SIZES = ((4096, 4096, 4096), (4095, 4095, 4095))


class FakeRun:
    """A TimingRun that times nothing: fixed milliseconds, or a run that ends early.

    It records, per GPU, how many runs measure at once and whether another run of
    that GPU was being prepared meanwhile."""

    measuring = {}  # device -> runs measuring right now
    overlaps = 0  # two measures on one GPU at once: never allowed
    prepared_meanwhile = 0  # a prepare while a measure ran on the same GPU: the point
    lock = threading.Lock()

    def __init__(
        self,
        source,
        sizes,
        *,
        kernel_ms=0.5,
        torch_ms=0.2,
        ends_early=False,
        device=0,
        pause=0.0,
        **_options,
    ):
        self.sizes, self.kernel_ms, self.torch_ms = list(sizes), kernel_ms, torch_ms
        self.ends_early, self.device, self.pause = ends_early, device, pause
        self.launch = {"num_warps": 8, "num_stages": 3}
        self.note, self.results, self.ending = "", [], None
        self.stopped = ""  # as conversation.TimingRun: the build guard never stops a stand-in
        self.prepare_s = self.measure_s = 0.0

    def prepare(self):
        time.sleep(self.pause)
        with FakeRun.lock:
            FakeRun.prepared_meanwhile += bool(FakeRun.measuring.get(self.device))
        return self

    def measure(self):
        with FakeRun.lock:
            FakeRun.measuring[self.device] = FakeRun.measuring.get(self.device, 0) + 1
            FakeRun.overlaps += FakeRun.measuring[self.device] > 1
        time.sleep(self.pause)
        with FakeRun.lock:
            FakeRun.measuring[self.device] -= 1
        if self.ends_early:
            self.ending = type("Ending", (), {"kind": "timeout", "detail": "stuck"})()
            return []
        for m, n, k in self.sizes:
            ms = self.kernel_ms * (1 if m % 16 == 0 else 3)
            self.results.append(
                protocol.SizeTiming(
                    m,
                    n,
                    k,
                    "PASS",
                    kernel=(ms, ms * 0.99, ms * 1.01),
                    torch=(self.torch_ms, self.torch_ms * 0.99, self.torch_ms * 1.01),
                )
            )
        return self.results

    def abandon(self):
        pass


def passed_record(student="ada", tiles=(64, 64, 64), sha="a" * 64):
    return Record(
        student=student, sha256=sha, status="passed", score=29, max_score=29, tiles=list(tiles)
    )


def timed_record(student="ada", kernel_ms=0.5, torch_ms=0.2, **fields):
    """A record timed at made-up speeds; its tiles (128x256 unless given) allow them."""
    record = passed_record(student, **{"tiles": (128, 256, 64), **fields})
    run = FakeRun(b"", SIZES, kernel_ms=kernel_ms, torch_ms=torch_ms)
    run.measure()
    record["speed"] = speed.entry(run, record, H200_ENV)
    return record


# --------------------------------------------------------------------------- settings


def test_sizes_and_points_parse_and_refuse_with_the_argument_named():
    assert speed.parse_sizes("4096, 4096x4096x4095") == ((4096,) * 3, (4096, 4096, 4095))
    assert speed.parse_points("1.0:3,0.5:1,0.8:2") == ((0.5, 1), (0.8, 2), (1.0, 3))
    for bad in ("", "0", "4096x2"):
        with pytest.raises(ValueError):
            speed.parse_sizes(bad)
    for bad in ("fast", "0.5", "0.5:-1", "0:1", "0.5:2,0.8:1"):
        with pytest.raises(ValueError):
            speed.parse_points(bad)
    tiers = speed.parse_points("0.5:1,0.8:2")
    assert [speed.points_for(r, tiers) for r in (None, 0.49, 0.5, 0.79, 0.8, 3.0)] == [
        0,
        0,
        1,
        1,
        2,
        2,
    ]
    described = speed.SpeedSettings(SIZES, tiers).describe()
    assert speed.from_description(described) == speed.SpeedSettings(SIZES, tiers)
    assert speed.from_description(None).sizes == ()


def test_nothing_is_timed_on_the_interpreter_and_the_record_says_why_in_one_line():
    settings = Settings(
        seed=0,
        backend="interpreter",
        timeout_s=5,
        memory_limit_bytes=1 << 30,
        speed=speed.SpeedSettings(SIZES, ((0.5, 2),)),
    )
    assert not settings.timed
    from grader.batch.grade.grading import base_record

    record = base_record(intake.Submission("ada", "ada.py", b"x"), settings, "ada")
    assert record["speed"]["status"] == "not_measured"
    assert "interpreter" in record["speed"]["message"] and record["max_score"] == sum(
        case.points for case in settings.cases()
    )
    lines = feedback.speed_markdown(record)
    assert len([line for line in lines if line.startswith("- ")]) == 2  # English, Chinese
    assert not any(character.isdigit() for character in "".join(lines[2:]).replace("## ", ""))


def test_timing_values_from_a_worker_are_kept_only_when_they_make_sense():
    assert protocol.timing([0.5, 0.4, 0.6]) == (0.5, 0.4, 0.6)
    for bad in (
        [0.5, 0.6, 0.4],
        [0, 0, 0],
        [-1, -2, 0],
        [float("nan")] * 3,
        [1e9] * 3,
        [True, True, True],
        "0.5",
        [0.5, 0.5],
        None,
    ):
        assert protocol.timing(bad) is None, bad
    assert protocol.tiles((64, 64, 32)) == [64, 64, 32]  # as the worker's diagnosis gives it
    assert protocol.tiles([64, True, 32]) is None
    assert protocol.small_int(8) == 8 and protocol.small_int("8") == "unknown"


# --------------------------------------------------------------------------- the phase


def test_one_timing_at_a_time_per_gpu_and_one_retry_for_a_run_that_ends_early(monkeypatch):
    starts = {}

    def fake(source, sizes, *, device, **options):
        student = source.decode()
        starts[student] = starts.get(student, 0) + 1
        return FakeRun(
            source, sizes, device=device, pause=0.03, ends_early=student == "bob"
        )  # bob is stuck every time

    monkeypatch.setattr(conversation, "TimingRun", fake)
    monkeypatch.setattr(speed, "_kernel_text", lambda submission: submission.data)
    FakeRun.overlaps = FakeRun.prepared_meanwhile = 0
    names = ("ada", "bob", "cai", "dee", "eve", "fay", "gus", "hal")
    records = {name: passed_record(name) for name in names}
    items = [
        (intake.Submission(name, f"{name}.py", name.encode()), record)
        for name, record in records.items()
    ]
    settings = Settings(
        seed=0,
        backend="gpu",
        timeout_s=5,
        memory_limit_bytes=1 << 30,
        speed=speed.SpeedSettings(SIZES, ((0.5, 1), (0.8, 2))),
    )
    done = []
    speed.time_class(
        items,
        settings,
        [0, 1, 0, 1],
        on_timed=done.append,
        stop=threading.Event(),
        environments={0: H200_ENV, 1: H200_ENV},
    )
    assert FakeRun.overlaps == 0
    assert FakeRun.prepared_meanwhile > 0  # the next runs compile while one is timed
    assert sorted(r["student"] for r in done) == sorted(records)
    assert starts["bob"] == 2 and records["bob"]["speed"]["status"] == "not_timed"
    for name in names:
        if name != "bob":
            assert records[name]["speed"]["status"] == "timed" and starts[name] == 1
            assert records[name]["speed"]["points"] == 0 and records[name]["score"] == 29


def test_an_interrupted_timing_is_left_for_the_resume(monkeypatch):
    stop, tries = threading.Event(), []

    def fake(source, sizes, **options):
        run = FakeRun(source, sizes, ends_early=True)
        tries.append(run)
        if len(tries) == 2:  # its retry: Ctrl-C kills the run mid-measure
            run.measure = lambda: (stop.set(), [])[1]
        return run

    monkeypatch.setattr(conversation, "TimingRun", fake)
    monkeypatch.setattr(speed, "_kernel_text", lambda submission: submission.data)
    record = passed_record()
    settings = Settings(
        seed=0,
        backend="gpu",
        timeout_s=5,
        memory_limit_bytes=1 << 30,
        speed=speed.SpeedSettings(SIZES),
    )
    speed.time_class(
        [(intake.Submission("ada", "ada.py", b"ada"), record)],
        settings,
        [0],
        on_timed=lambda r: None,
        stop=stop,
        environments={0: H200_ENV},
    )
    assert len(tries) == 2 and record["speed"] is None and speed.needs_timing(record)


# --------------------------------------------------------------------------- the record


def test_a_timed_record_holds_benchmark_rows_and_earns_its_tier():
    record = timed_record(kernel_ms=0.25, torch_ms=0.2)  # 0.8x at 4096
    rows = record["speed"]["rows"]
    assert [row["size"] for row in rows] == ["4096", "4095"]
    assert rows[0]["ratio_vs_torch_mm"] == pytest.approx(0.8)
    assert rows[0]["tflops"] == pytest.approx(2 * 4096**3 / 0.25e-3 / 1e12)
    assert 0 < rows[0]["roofline_fraction"] < 1  # the H200 is in ledger.formulas
    assert rows[0]["submission_sha256"] == "a" * 64
    assert set(report.CONTRACT_COLUMNS) <= set(speed.frame(record).columns)
    assert "0.80x torch.mm at 4096" in record["speed"]["message"]
    speed.apply_points(record, speed.parse_points("0.5:1,0.8:2,1.0:3"))
    assert record["speed"]["points"] == 2 and record["score"] == 31


def test_a_timed_record_says_why_this_speed_in_both_languages():
    record = passed_record()  # 64x64 tiles at 275 TFLOPS, as the course default ran on the H200
    record["gpu_build"] = {"ok": True, "target": "sm_90", "registers": 128, "shared_bytes": 98304}
    run = FakeRun(b"", SIZES)
    run.measure()
    record["speed"] = speed.entry(run, record, H200_ENV)
    why = record["speed"]["why"]
    assert [entry["size"] for entry in why] == ["4096", "4095"]
    assert why[0]["occupancy_source"] == "cubin" and why[0]["limit"] == "tile_feed"
    markdown = feedback.feedback_markdown(record, [])
    assert "## Why this speed / 为什么是这个速度" in markdown
    assert "The limit is feeding tiles into the SMs" in markdown and "限制来自" in markdown


def test_a_speed_beyond_the_roofline_is_flagged():
    record = timed_record(kernel_ms=0.05, torch_ms=0.2)  # 2750 TFLOPS on a 989 TFLOPS GPU
    assert any(
        "of the roofline bound, which no correct kernel can" in flag for flag in record["flags"]
    )
    assert not timed_record(kernel_ms=0.5)["flags"]


def test_a_speed_beyond_its_own_tiles_is_flagged_and_neither_ranked_nor_scored():
    """64x64 tiles: the ledger's tile-feed roof is about 276 TFLOPS on an H200. 340 was
    measured for an honest kernel (4 warps, 3 stages); 747 was timed for one that computed
    less than C on later launches."""
    from ledger import formulas

    roof = formulas.tile_feed_roof_tflops(64, 64, formulas.H200)
    flops = 2 * 4096**3
    honest = timed_record(kernel_ms=flops / (1.25 * roof * 1e12) * 1e3, tiles=(64, 64, 64))
    assert not honest["flags"] and speed.headline(honest) is not None
    forged = timed_record(kernel_ms=flops / 747e12 * 1e3, tiles=(64, 64, 64))
    assert any(
        "tile-feed roof of its 64x64 tiles" in flag and "not ranked" in flag
        for flag in forged["flags"]
    ), forged["flags"]
    assert speed.headline(forged) is None
    assert leaderboard.frame([forged, honest])["student"].tolist() == ["ada"]
    speed.apply_points(forged, speed.parse_points("0.5:1,1.0:3"))
    assert forged["speed"]["points"] == 0 and forged["score"] == 29


def test_a_timed_launch_that_changed_its_inputs_or_wrote_less_is_no_speed():
    record = passed_record()
    run = FakeRun(b"", SIZES)
    run.measure()
    run.results[0] = protocol.SizeTiming(
        4096,
        4096,
        4096,
        "FAIL",
        error="the kernel changed its inputs (lhs or rhs) while it was timed",
    )
    record["speed"] = speed.entry(run, record, H200_ENV)
    assert speed.headline(record) is None
    assert "changed its inputs" in record["flags"][0]


def test_a_kernel_wrong_at_a_speed_size_is_flagged_but_keeps_its_grade():
    record = passed_record()
    run = FakeRun(b"", SIZES)
    run.measure()
    run.results[1] = protocol.SizeTiming(4095, 4095, 4095, "FAIL", wrong=123)
    record["speed"] = speed.entry(run, record, H200_ENV)
    assert record["status"] == "passed" and record["score"] == 29
    assert "at 4095" in record["flags"][0] and "123 elements" in record["flags"][0]
    markdown = feedback.feedback_markdown(record, [])
    assert "grade unchanged" in markdown and "FAIL" in markdown


def test_gradebook_results_and_feedback_carry_the_speed(tmp_path):
    from grader.core import cases

    fast, slow = timed_record("ada", 0.2, 0.2), timed_record("李华", 1.0, 0.2)
    failing = dataclasses.replace(
        passed_record("ben"),
        status="failed",
        speed={"status": "not_timed", "message": speed.NOT_TIMED[0]},
    )
    book = reports.gradebook_frame([fast, slow, failing], cases.catalogue(0, "gpu")[:1])
    assert list(book.columns[-3:]) == ["wall_time_s", "isolation", "overrides"]
    by_id = book.set_index("student")
    assert by_id.loc["ada", "ratio_4096"] == pytest.approx(1.0)
    assert by_id.loc["李华", "ratio_4095"] == pytest.approx(0.2 / 3.0, rel=1e-3)
    assert by_id.loc["ben", "speed"] == "not_timed" and by_id.loc["ben", "ratio_4096"] == ""
    board = leaderboard.frame([slow, failing, fast])
    assert list(board["student"]) == ["ada", "李华"] and list(board["rank"]) == [1, 2]
    assert leaderboard.render(board)[:8] == b"\x89PNG\r\n\x1a\n"
    results = feedback.results_json(dataclasses.replace(fast, score=29, max_score=29, message=""))
    assert results["leaderboard"][0] == {
        "name": "vs torch.mm at 4096",
        "value": 1.0,
        "order": "desc",
    }
    assert "leaderboard" not in feedback.results_json(dataclasses.replace(failing, message=""))
    reports.write_speed(tmp_path, fast)
    assert (tmp_path / "card.png").read_bytes()[:4] == b"\x89PNG"
    back = pandas.read_csv(tmp_path / "speed.csv")
    assert list(back.columns) == list(report.COLUMNS) and len(back) == 2


# --------------------------------------------------------------------------- hand-ins


def handin_csv(record, scale=1.0, **overrides):
    """The CSV a student's own benchmark run would write, its speeds scaled by ``scale``."""
    table = speed.frame(record)
    table["submission"] = "ninetoothed_gemm.py"
    for column in ("median_ms", "p20_ms", "p80_ms"):
        table[column] = table[column] / scale
    table["tflops"] = table["tflops"] * scale
    table["ratio_vs_torch_mm"] = table["ratio_vs_torch_mm"] * scale
    table["block_m"], table["block_n"], table["block_k"] = record["tiles"]
    for column, value in overrides.items():
        table[column] = value
    return table.to_csv(index=False).encode()


def test_made_up_speeds_are_flagged_with_both_numbers_and_the_grade_kept():
    record = timed_record(kernel_ms=0.5, torch_ms=0.2)  # really 0.40x
    checked = handin.check(handin_csv(record, scale=2.3), "bench.csv", record)
    assert checked["verdict"] == "mismatch"
    assert any(
        "self-reported 0.92x torch.mm, measured 0.40x torch.mm" in flag for flag in checked["flags"]
    )
    assert record["score"] == 29


def test_genuine_numbers_within_the_noise_band_are_consistent():
    record = timed_record(kernel_ms=0.5, torch_ms=0.2)
    for scale in (0.95, 1.0, 1.06):
        checked = handin.check(handin_csv(record, scale=scale), "bench.csv", record)
        assert checked["verdict"] == "consistent", (scale, checked)


def test_another_file_or_other_tiles_are_flagged_even_without_a_gpu():
    record = passed_record()
    timed = timed_record(tiles=(64, 64, 64))
    for csv, expected in (
        (handin_csv(timed, submission_sha256="b" * 64), "another file"),
        (handin_csv(timed, block_m=128), "128x64x64 tiles"),
    ):
        checked = handin.check(csv, "bench.csv", record)
        assert checked["verdict"] == "mismatch" and expected in checked["flags"][0]
    checked = handin.check(handin_csv(timed), "bench.csv", record)
    assert checked["verdict"] == "not compared" and not checked["flags"]
    assert "timed nothing" in checked["notes"][-1]


def test_what_cannot_be_compared_is_a_note_not_a_flag():
    record = timed_record()
    cases = {
        "another GPU": handin_csv(record, scale=3, gpu_name="NVIDIA A100-SXM4-80GB"),
        "not a benchmark CSV": b"name,score\nada,100\n",
        "cannot be read": b'm,n\n"1,2\n',
    }
    for expected, data in cases.items():
        checked = handin.check(data, "x.csv", record)
        assert not checked["flags"], expected
        assert any(expected in note for note in checked["notes"]), (expected, checked)
    other_size = handin.check(
        handin_csv(record).replace(b"4095,4095,4095", b"2048,2048,2048"), "x.csv", record
    )
    assert any("no row at 4095" in note for note in other_size["notes"])


def without_hash_column(data):
    table = pandas.read_csv(io.BytesIO(data), dtype=str, keep_default_na=False)
    return table.drop(columns="submission_sha256").to_csv(index=False).encode()


@pytest.mark.parametrize("case", ["column missing", "column empty"])
def test_a_csv_without_the_files_hash_is_flagged_unverifiable_and_the_grade_kept(case):
    """Deleting or emptying submission_sha256 must not skip the check of the file."""
    record = timed_record(kernel_ms=0.5, torch_ms=0.2)
    genuine = handin_csv(record)
    data = (
        without_hash_column(genuine)
        if case == "column missing"
        else handin_csv(record, submission_sha256="")
    )
    checked = handin.check(data, "bench.csv", record)
    assert checked["verdict"] == "unverifiable"
    assert checked["flags"] == [
        "hand-in bench.csv: the CSV records no submission_sha256, so "
        "the file it measured cannot be verified (the benchmark writes "
        "one; an older one, or an edited CSV, does not)"
    ]
    assert record["score"] == 29
    made_up = handin.check(without_hash_column(handin_csv(record, scale=2.3)), "b.csv", record)
    assert made_up["verdict"] == "mismatch" and "cannot be verified" in made_up["flags"][0]
    assert all("self-reported" in flag for flag in made_up["flags"][1:])


def test_the_hash_check_flags_another_file_and_passes_the_right_one():
    record = timed_record(kernel_ms=0.5, torch_ms=0.2)
    wrong = handin.check(handin_csv(record, submission_sha256="b" * 64), "bench.csv", record)
    assert wrong["verdict"] == "mismatch"
    assert wrong["flags"] == [
        "hand-in bench.csv: the CSV was measured on another file "
        f"(sha256 {'b' * 12}, the file handed in is {'a' * 12})"
    ]
    right = handin.check(handin_csv(record), "bench.csv", record)
    assert right["verdict"] == "consistent" and not right["flags"]


def test_hostile_csvs_neither_stop_nor_stall_the_grader_nor_widen_the_band():
    record = timed_record(kernel_ms=0.5, torch_ms=0.2)
    genuine = handin_csv(record)
    mixed_tiles = genuine.replace(b",64,64,64,", b",64,,64,", 1)  # one row's tiles blank
    assert handin.check(mixed_tiles, "x.csv", record)["verdict"] == "consistent"
    started = time.monotonic()
    for data in (
        b"x," * 300_000 + b"\n",
        b"m,m,n,k,ratio_vs_torch_mm,tflops\n" * 20,
        b"a\n" + b"1\n" * 5000,
        b"\xff\xfe" * 100,
    ):
        checked = handin.check(data, "x.csv", record)
        assert checked["verdict"] == "not compared" and not checked["flags"]
    assert time.monotonic() - started < 5
    wide = handin_csv(
        record, scale=5.0, p20_ms=1e-4, p80_ms=1e4, torch_mm_p20_ms=1e-4, torch_mm_p80_ms=1e4
    )
    assert handin.check(wide, "x.csv", record)["verdict"] == "mismatch"
    negative = handin_csv(record, ratio_vs_torch_mm=-0.4)
    assert any(
        "self-reported -0.40x" in flag for flag in handin.check(negative, "x.csv", record)["flags"]
    )


def test_intake_keeps_the_csv_beside_the_file_in_a_folder_and_in_a_zip(tmp_path):
    (tmp_path / "ada").mkdir()
    (tmp_path / "ada" / "ninetoothed_gemm.py").write_text("x = 1\n")
    (tmp_path / "ada" / "results").mkdir()
    (tmp_path / "ada" / "results" / "deep.csv").write_text("deep\n")
    (tmp_path / "ada" / "run.csv").write_text("m,n\n")
    with zipfile.ZipFile(tmp_path / "bob.zip", "w") as archive:
        archive.writestr("bob/ninetoothed_gemm.py", "x = 2\n")
        archive.writestr("bob/out/ntgemm-bench.csv", "m,n,k\n")
    (tmp_path / "cai.py").write_text("x = 3\n")
    found = {s.student: s for s in intake.discover(tmp_path)}
    assert (found["ada"].handin, found["ada"].handin_origin) == (b"m,n\n", "run.csv")
    assert (found["bob"].handin, found["bob"].handin_origin) == (
        b"m,n,k\n",
        "bob/out/ntgemm-bench.csv",
    )
    assert found["cai"].handin == b""


def test_demo_hand_ins_are_measured_on_the_files_beside_them():
    """ada's CSV is a real H200 run of her file; mia's claims 2.3 times her real speed."""
    found = {s.student: s for s in intake.discover(DEMO)}
    for student in ("ada", "mia"):
        table, problem = handin.read(found[student].handin)
        assert not problem
        assert set(table["submission_sha256"]) == {found[student].sha256}
        assert set(table["gpu_name"]) == {"NVIDIA H200"}


# --------------------------------------------------------------------------- command line


@pytest.mark.parametrize(
    "arguments, message",
    [
        (["--speed-points", "fast"], "--speed-points: 'fast' is not RATIO:POINTS"),
        (["--speed-sizes", "4096x1"], "--speed-sizes: size '4096x1'"),
        (["--no-speed", "--speed-sizes", "4096"], "not allowed with argument"),
    ],
)
def test_bad_speed_options_are_refused_with_the_option_named(tmp_path, arguments, message):
    result = run_grader(
        tmp_path, "grade", str(DEMO), "--out", str(tmp_path / "out"), *arguments, timeout=120
    )
    assert result.returncode == 2 and message in result.stderr


def test_speed_points_without_a_gpu_stop_before_grading(tmp_path):
    from grader.tests.batch_helpers import batch_backend

    if batch_backend() == "gpu":
        pytest.skip("this machine has a GPU: speed points can be earned here")
    result = run_grader(
        tmp_path,
        "grade",
        str(DEMO),
        "--out",
        str(tmp_path / "out"),
        "--speed-points",
        "0.5:1",
        timeout=120,
    )
    assert result.returncode == 1 and "--speed-points needs a GPU" in result.stderr
    assert not (tmp_path / "out" / "gradebook.csv").exists()


# --------------------------------------------------------------------------- on a GPU


def test_the_reference_is_timed_against_torch_mm_on_a_gpu():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("timing needs a GPU: the Triton interpreter gives no speeds")
    from grader.core import kernel_source
    from grader.batch.isolation.sandbox import Limits

    source = kernel_source.extract(MODEL_ANSWER.read_text()).text
    run = conversation.TimingRun(
        source.encode(),
        [(512, 512, 512), (511, 513, 515)],
        backend_name="gpu",
        limits=Limits(300, 8 << 30, 4.0),
        device=0,
    ).prepare()
    assert run.ready, run.note
    results = run.measure()
    assert [r.verdict for r in results] == ["PASS", "PASS"], results
    assert all(r.kernel[0] > 0 and r.torch[0] > 0 for r in results)


@pytest.mark.parametrize(
    "cheat, expected",
    [
        ("marks_inputs", "changed its inputs"),
        ("first_launch_only", "did not all compute C"),
    ],
)
def test_timed_launches_that_differ_from_the_checked_one_get_no_speed_on_a_gpu(cheat, expected):
    """Stand-ins for a kernel that skips work once it has run: one marks its inputs, one
    computes C on its first launch only. The checked first launch is right for both."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("timing needs a GPU: the Triton interpreter gives no speeds")
    from grader.batch.inside import speed_probe

    launches = []

    def kernel(lhs, rhs, out):
        launches.append(1)
        if len(launches) == 1:
            torch.mm(lhs, rhs, out=out)
        elif cheat == "marks_inputs":
            lhs[0, 0] = 0.0

    fields = speed_probe.measure(kernel, 256, 256, 256, "cuda")
    assert fields["verdict"] == "FAIL" and expected in fields["error"], fields
