"""The benchmark harness on a CPU: CSV schema, metadata, --compare, the no-GPU refusal,
--check-only, the tile-config read-out and the report card.

Nothing here needs a GPU. Timed results are made up (``synthetic_results``) and go
through the same code that turns real ones into a CSV and a card; every test below
shares them and the script runner, hence one long file.
"""

import os
import pathlib
import shutil
import stat
import subprocess
import sys

import pandas as pd
import pytest

import solutions
from benchmarks import card, cli, compare, environment, harness, kernel_config, report, timing
from benchmarks.harness import FAIL, PASS, SKIP, SizeResult
from benchmarks.kernel_config import KernelConfig
from benchmarks.timing import Timing
from grader.tests.batch_helpers import NEEDS_INTERPRETER

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "assignment" / "benchmark_ninetoothed_gemm.py"
REFERENCE = solutions.MODEL_ANSWER

ENV = {
    "timestamp": "2026-11-29T10:44:55+00:00",
    "host": "node-7",
    "git_revision": "abc123",
    "gpu_name": "NVIDIA H200",
    "driver": "570.86.15",
    "cuda": "12.8",
    "torch_version": "2.11.0",
    "triton_version": "3.6.0",
    "ninetoothed_version": "0.26.0",
    "python_version": "3.12.3",
    "sm_clock_mhz": 1980.0,
    "temperature_c": 35.0,
    "power_w": 120.0,
    "telemetry_source": "nvidia-smi",
}


def synthetic_results(fail_at=None, autotune=False):
    """H200-like numbers for the default squares (the course default's 286 and torch.mm's 686
    TFLOPS at 4096^3: CHANGELOG.md, 0.1.0); ``fail_at`` is one FAIL size."""
    results = []
    for m, n, k in harness.DEFAULT_SIZES:
        ms = 2 * m * n * k / 286e12 * 1e3 + 0.01
        ref = 2 * m * n * k / 686e12 * 1e3 + 0.006
        config = (
            KernelConfig(128, 128, 64, 8, 3, "autotuned")
            if autotune
            else KernelConfig(64, 64, 64, 8, 7, "fixed")
        )
        if m == fail_at:
            results.append(
                SizeResult(
                    m, n, k, FAIL, "12 of 64 elements outside ...", first_call_s=0.4, config=config
                )
            )
            continue
        results.append(
            SizeResult(
                m,
                n,
                k,
                PASS,
                first_call_s=0.4,
                autotune_search_s=1.5 if autotune else None,
                ninetoothed=Timing(ms, ms * 0.98, ms * 1.02),
                kernel=Timing(ms * 0.9, ms * 0.89, ms * 0.91),
                torch_mm=Timing(ref, ref * 0.99, ref * 1.01),
                config=config,
            )
        )
    return results


def frame_for(results, autotune=False, env=ENV):
    return report.build_frame(
        results,
        env,
        submission="solutions/ninetoothed_gemm.py",
        autotune=autotune,
        backend_name="gpu",
        run_id="run1",
    )


def run_script(*args, env_extra=None, timeout=600):
    env = dict(os.environ)
    env.pop("NINETOOTHED_AUTOTUNE", None)
    env.update(env_extra or {})
    return subprocess.run(
        [sys.executable, str(SCRIPT), "--no-progress", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


# --- sizes ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, expected",
    [
        ("512", (512, 512, 512)),
        ("4096x4096x4095", (4096, 4096, 4095)),
        ("64X96x40", (64, 96, 40)),
    ],
)
def test_parse_size(text, expected):
    assert harness.parse_size(text) == expected


@pytest.mark.parametrize("text", ["", "0", "12x4", "axbxc", "-8"])
def test_parse_size_rejects(text):
    with pytest.raises(ValueError):
        harness.parse_size(text)


def test_default_sizes_are_the_guides_squares():
    assert [m for m, _, _ in harness.DEFAULT_SIZES] == [2**p for p in range(3, 13)]


# --- the CSV --------------------------------------------------------------------------------


def test_every_row_carries_every_contract_field(tmp_path):
    frame = frame_for(synthetic_results())
    path = report.write_csv(frame, tmp_path, "run")
    back = pd.read_csv(path)
    assert list(back.columns) == list(report.COLUMNS)
    assert len(back) == len(harness.DEFAULT_SIZES)
    for column in (*report.CONTRACT_COLUMNS, "timestamp", "host", "git_revision"):
        assert back[column].notna().all(), column
    assert set(back["implementation"]) == {"ninetoothed"}
    assert set(back["verdict"]) == {"PASS"}
    assert (back["block_m"] == 64).all() and not back["autotune"].any()


def test_rates_ratio_and_roofline_columns():
    row = frame_for(synthetic_results()).set_index("size").loc["4096"]
    flops = 2 * 4096**3
    assert row["flops"] == flops
    assert row["tflops"] == pytest.approx(flops / (row["median_ms"] * 1e-3) / 1e12)
    assert row["ratio_vs_torch_mm"] == pytest.approx(row["torch_mm_median_ms"] / row["median_ms"])
    assert row["machine"] == "H200" and row["peak_tflops"] == pytest.approx(989.0)
    assert row["roofline_fraction"] == pytest.approx(row["roofline_time_ms"] / row["median_ms"])
    assert 0 < row["roofline_fraction"] < 1
    assert row["tile_count"] == 64 * 64
    assert row["waves"] >= 1 and 0 < row["last_wave_utilization"] <= 1


def test_unknown_gpu_leaves_the_roofline_empty_but_keeps_the_rest():
    frame = frame_for(synthetic_results(), env={**ENV, "gpu_name": "Some Future GPU"})
    assert (frame["roofline_time_ms"] == "").all() and (frame["machine"] == "").all()
    assert (frame["flops"] > 0).all() and (frame["tile_count"] != "").all()


def test_a_failed_size_has_a_row_and_no_times():
    frame = frame_for(synthetic_results(fail_at=256)).set_index("size")
    assert frame.loc["256", "verdict"] == FAIL
    assert frame.loc["256", "median_ms"] == "" and frame.loc["256", "torch_mm_median_ms"] == ""
    assert frame.loc["256", "note"]
    assert frame.loc["512", "verdict"] == PASS


def test_file_names_never_collide(tmp_path):
    stem = report.run_stem(ENV, autotune=True, label="my run/1")
    assert stem.startswith("ntgemm-bench_20261129T104455Z_node-7_autotune_my-run-1_")
    assert "/" not in stem
    assert stem != report.run_stem(ENV, autotune=True, label="my run/1")
    frame = frame_for(synthetic_results())
    first, second = (
        report.write_csv(frame, tmp_path, "same"),
        report.write_csv(frame, tmp_path, "same"),
    )
    assert first != second and first.exists() and second.exists()


def test_table_shows_size_times_rates_ratio_and_verdict():
    results = synthetic_results(fail_at=16)
    text = report.format_table(
        report.table_headers(timed=True), report.table_rows(results, timed=True)
    )
    assert "NineToothed(ms)" in text and "PyTorch(ms)" in text and "PyTorch TFLOPS" in text
    lines = {line.split()[0]: line for line in text.splitlines()[2:]}
    assert lines["16"].endswith("FAIL") and lines["4096"].endswith("PASS")
    assert "x" in lines["4096"]  # the ratio


# --- environment ----------------------------------------------------------------------------


def _fake_smi(folder, line):
    script = folder / "nvidia-smi"
    script.write_text(f"#!/bin/sh\necho '{line}'\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return folder


def test_metadata_without_nvidia_smi_or_nvml(monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name, *a, **k: None)
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import pynvml -> ImportError
    assert environment.query_nvidia_smi() == {}
    assert environment.query_nvml() == {}
    assert environment.telemetry() == ({}, "")
    record = environment.capture(with_gpu=True)
    assert set(environment.COLUMNS) <= set(record)
    for column in ("sm_clock_mhz", "temperature_c", "power_w", "telemetry_source", "driver"):
        assert record[column] == ""
    assert record["torch_version"] and record["host"] and record["timestamp"]
    assert record["git_revision"] == ""  # no git either: which() finds nothing


@pytest.mark.skipif(os.name != "posix", reason="the fake nvidia-smi is a shell script")
def test_metadata_from_nvidia_smi(monkeypatch, tmp_path):
    folder = _fake_smi(tmp_path, "NVIDIA H200, 570.86.15, 1980 MHz, 1980, 34, 118.52, 700.00")
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ.get('PATH', '')}")
    record, source = environment.telemetry()
    assert source == "nvidia-smi"
    assert record["driver"] == "570.86.15" and record["smi_gpu_name"] == "NVIDIA H200"
    assert record["sm_clock_mhz"] == 1980.0 and record["temperature_c"] == 34.0
    assert record["power_w"] == pytest.approx(118.52)


@pytest.mark.skipif(os.name != "posix", reason="the fake nvidia-smi is a shell script")
def test_unreadable_nvidia_smi_fields_stay_empty(monkeypatch, tmp_path):
    folder = _fake_smi(tmp_path, "NVIDIA H200, 570.86.15, [N/A], [N/A], 34, [N/A], [N/A]")
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ.get('PATH', '')}")
    record, _ = environment.telemetry()
    assert (
        record["sm_clock_mhz"] == "" and record["power_w"] == "" and record["temperature_c"] == 34
    )


def test_git_revision_of_the_kit():
    revision = environment.git_revision()
    if shutil.which("git") and (ROOT / ".git").exists():
        assert revision and revision.split("+")[0].isalnum()


# --- compare --------------------------------------------------------------------------------


def _timed_frame(median, spread=0.01, torch_median=1.0, sizes=((512, 512, 512),)):
    rows = []
    for m, n, k in sizes:
        rows.append(
            {
                "size": harness.size_label(m, n, k),
                "m": m,
                "n": n,
                "k": k,
                "gpu_name": "NVIDIA H200",
                "run_id": "r",
                "median_ms": median,
                "p20_ms": median * (1 - spread),
                "p80_ms": median * (1 + spread),
                "torch_mm_median_ms": torch_median,
                "torch_mm_p20_ms": torch_median * 0.99,
                "torch_mm_p80_ms": torch_median * 1.01,
            }
        )
    return pd.DataFrame(rows)


def test_compare_flags_a_slowdown_beyond_noise():
    out = compare.compare(_timed_frame(1.10), _timed_frame(1.00))
    row = out.iloc[0]
    assert row["compare_status"] == compare.REGRESSION
    assert row["speedup_vs_baseline"] == pytest.approx(1 / 1.1)
    assert row["torch_mm_compare_status"] == compare.SAME
    assert len(compare.regressions(out)) == 1
    assert "REGRESSION" in compare.summary(out)


def test_compare_does_not_flag_a_change_within_noise():
    small = compare.compare(_timed_frame(1.01), _timed_frame(1.00))
    assert small.iloc[0]["compare_status"] == compare.SAME
    # 10% slower, but both runs spread +-8%: not a regression.
    noisy = compare.compare(_timed_frame(1.10, spread=0.08), _timed_frame(1.00, spread=0.08))
    assert noisy.iloc[0]["compare_status"] == compare.SAME
    assert noisy.iloc[0]["compare_noise"] == pytest.approx(0.16)
    assert compare.regressions(noisy).empty


def test_compare_reports_improvements_new_sizes_and_untimed_rows():
    faster = compare.compare(_timed_frame(0.8), _timed_frame(1.0))
    assert faster.iloc[0]["compare_status"] == compare.IMPROVEMENT
    new = compare.compare(_timed_frame(1.0, sizes=((100, 100, 100),)), _timed_frame(1.0))
    assert new.iloc[0]["compare_status"] == compare.NO_BASELINE
    failed = _timed_frame(1.0)
    failed.loc[0, ["median_ms", "p20_ms", "p80_ms"]] = float("nan")  # as read_csv gives it
    assert compare.compare(failed, _timed_frame(1.0)).iloc[0]["compare_status"] == compare.NOT_TIMED


def test_compare_blames_the_machine_when_torch_mm_slowed_too():
    out = compare.compare(_timed_frame(1.2, torch_median=1.2), _timed_frame(1.0))
    assert out.iloc[0]["torch_mm_compare_status"] == compare.REGRESSION
    assert "torch.mm slower too" in compare.summary(out)


def test_compare_against_a_written_csv(tmp_path):
    baseline_path = report.write_csv(frame_for(synthetic_results()), tmp_path, "baseline")
    slower = synthetic_results()
    slower[-1].ninetoothed = Timing(
        *(
            t * 1.5
            for t in (
                slower[-1].ninetoothed.median_ms,
                slower[-1].ninetoothed.p20_ms,
                slower[-1].ninetoothed.p80_ms,
            )
        )
    )
    out = compare.compare(frame_for(slower), report.read_csv(baseline_path))
    statuses = dict(zip(out["size"], out["compare_status"]))
    assert statuses["4096"] == compare.REGRESSION
    assert all(status == compare.SAME for size, status in statuses.items() if size != "4096")
    assert set(compare.COLUMNS) <= set(out.columns)


def test_compare_rejects_a_csv_that_is_not_a_benchmark():
    with pytest.raises(ValueError, match="lacks"):
        compare.compare(_timed_frame(1.0), pd.DataFrame({"student": ["a"], "score": [1]}))


def test_one_table_across_two_cards(tmp_path, capsys):
    """Each size's lines stay together, one per file, with that file's card and numbers."""
    h200 = _timed_frame(1.0, sizes=((512, 512, 512), (64, 64, 64)))
    h100 = _timed_frame(2.0, sizes=((64, 64, 64), (512, 512, 512), (8, 8, 8)))
    h100["gpu_name"] = "NVIDIA H100 80GB HBM3"
    for frame, ratio in ((h200, 0.9), (h100, 0.5)):
        frame["tflops"], frame["torch_mm_tflops"] = 100.0, 100.0 / ratio
        frame["ratio_vs_torch_mm"], frame["config_name"] = ratio, "128x256x64 g8 8w3s"
    h200.to_csv(tmp_path / "h200.csv", index=False)
    h100.to_csv(tmp_path / "h100.csv", index=False)
    compare.main([str(tmp_path / "h200.csv"), str(tmp_path / "h100.csv")])
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines] == [
        "size",
        "512x512x512",
        "512x512x512",
        "64x64x64",
        "64x64x64",
        "8x8x8",
    ]
    assert lines[2].split()[1:5] == ["NVIDIA", "H100", "80GB", "HBM3"]
    assert "0.500" in lines[2] and lines[2].endswith("(h100.csv)")
    assert "NVIDIA H200" in lines[1] and "0.900" in lines[1] and "111" in lines[1]
    with pytest.raises(SystemExit):
        compare.main([str(tmp_path / "nowhere.csv")])


# --- the card -------------------------------------------------------------------------------


@pytest.mark.parametrize("autotune", [False, True], ids=["fixed", "autotune"])
def test_card_from_a_synthetic_run(tmp_path, autotune):
    frame = frame_for(synthetic_results(fail_at=32, autotune=autotune), autotune=autotune)
    path = card.render(frame, tmp_path / "card.png")
    data = path.read_bytes()
    assert data.startswith(b"\x89PNG") and len(data) > 20_000


def test_card_redrawn_from_a_csv_with_ragged_shapes_and_no_roofline(tmp_path):
    results = []
    for m, n, k in harness.RAGGED_SIZES:
        results.append(
            SizeResult(
                m,
                n,
                k,
                PASS,
                ninetoothed=Timing(1.0, 0.99, 1.01),
                torch_mm=Timing(0.5, 0.49, 0.51),
                config=KernelConfig(64, 64, 64, 8, 7, "fixed"),
            )
        )
    frame = frame_for(results, env={**ENV, "gpu_name": "Unknown GPU"})
    csv_path = report.write_csv(frame, tmp_path, "ragged")
    assert card.main([str(csv_path)]) == 0
    assert csv_path.with_suffix(".png").stat().st_size > 20_000


@pytest.mark.parametrize(
    ("sizes", "log2"), [((1024, 2048, 4096), True), ((2048, 3000, 3072, 4096), False)]
)
def test_card_spaces_sizes_evenly_unless_they_double(sizes, log2):
    """3000 and 3072 on a log axis would draw one bar over the other."""
    results = [
        SizeResult(
            s, s, s, PASS, ninetoothed=Timing(1.0, 0.99, 1.01), torch_mm=Timing(0.5, 0.49, 0.51)
        )
        for s in sizes
    ]
    xs, labels, on_log2 = card._x_positions(frame_for(results))
    assert on_log2 == log2 and labels == [str(s) for s in sizes]
    assert xs == ([float(s) for s in sizes] if log2 else list(range(len(sizes))))


# --- the tile configuration -----------------------------------------------------------------


def test_fixed_config_of_the_reference_is_read_from_the_module(backend):
    from grader.core.loading import load_submission

    module = load_submission(REFERENCE)
    assert not kernel_config.is_autotuned(module)
    config = kernel_config.fixed_config(module, kernel_config.kernel_handle(module))
    assert (config.block_m, config.block_n, config.block_k) == (64, 64, 64)
    assert config.launch_known and config.source == "fixed"


def test_a_files_own_choice_is_read(tmp_path):
    class Module:
        @staticmethod
        def chosen_config(m, n, k):
            return {
                "block_m": 128,
                "block_n": 256,
                "block_k": 64,
                "num_warps": 8,
                "num_stages": 3,
                "name": "128x256x64 g8 8w3s",
                "source": "tuned",
                "tuning_s": 2.5,
            }

    config, seconds = kernel_config.own_choice(Module, 4096, 4096, 4096)
    assert (config.block_m, config.block_n, config.num_stages) == (128, 256, 3)
    assert config.label() == "128x256x64 g8 8w3s" and seconds == 2.5


def test_timing_refuses_the_interpreter(backend):
    if not backend.is_interpreter:
        pytest.skip("this machine has a GPU")
    with pytest.raises(RuntimeError, match="GPU"):
        harness.run_sizes(object(), [(8, 8, 8)], backend, time_it=True)


# --- the command ----------------------------------------------------------------------------


def test_no_gpu_refusal_times_nothing(tmp_path):
    out = tmp_path / "results"
    result = run_script(
        "--submission",
        str(REFERENCE),
        "--out",
        str(out),
        env_extra={"NTGEMM_BACKEND": "interpreter"},
    )
    assert result.returncode == cli.NO_GPU, result.stdout + result.stderr
    assert "No CUDA GPU found: nothing was timed" in result.stderr
    assert "--check-only" in result.stderr
    assert not out.exists()
    assert "PASS" not in result.stdout


@NEEDS_INTERPRETER
def test_check_only_on_the_cpu_passes_the_reference(tmp_path):
    out = tmp_path / "results"
    result = run_script(
        "--submission",
        str(REFERENCE),
        "--check-only",
        "--out",
        str(out),
        "--sizes",
        "8",
        "16",
        "64x96x40",
        "512",
        env_extra={"NTGEMM_BACKEND": "interpreter"},
    )
    assert result.returncode == cli.OK, result.stdout + result.stderr
    lines = {
        line.split()[0]: line.split()[-1]
        for line in result.stdout.splitlines()
        if line.strip() and line.split()[0] in ("8", "16", "64x96x40", "512")
    }
    assert lines == {"8": PASS, "16": PASS, "64x96x40": PASS, "512": SKIP}
    assert "too large for the Triton interpreter" in result.stdout
    assert "3 of 3 checked sizes PASS" in result.stdout
    assert not out.exists()


@NEEDS_INTERPRETER
@pytest.mark.parametrize(
    "variant, code, build",
    [
        (None, cli.OK, "GPU build: builds for sm_90"),
        ("fp16_accumulator", cli.SOME_FAILED, "GPU build: does not build for sm_90"),
    ],
)
def test_check_only_on_the_cpu_runs_the_compile_gate(tmp_path, variant, code, build):
    """The interpreter runs a float16 accumulator that Triton's compiler refuses: the
    check-only pass compiles the kernel for the course's GPU too, as the grader does."""
    from grader.tests.build_variants import VARIANTS

    path = REFERENCE
    if variant:
        path = tmp_path / "ninetoothed_gemm.py"
        path.write_text(VARIANTS[variant].source(variant), encoding="utf-8")
    result = run_script(
        "--submission",
        str(path),
        "--check-only",
        "--sizes",
        "64",
        env_extra={"NTGEMM_BACKEND": "interpreter"},
    )
    assert result.returncode == code, result.stdout + result.stderr
    assert "1 of 1 checked sizes PASS" in result.stdout and build in result.stdout
    assert ("every size would fail there" in result.stderr) == bool(variant)


@NEEDS_INTERPRETER
def test_check_only_with_nothing_checkable_is_not_a_pass(tmp_path):
    result = run_script(
        "--submission",
        str(REFERENCE),
        "--check-only",
        "--sizes",
        "512",
        "--no-progress",
        env_extra={"NTGEMM_BACKEND": "interpreter"},
    )
    assert result.returncode == cli.UNUSABLE, result.stdout + result.stderr
    assert "none of the 1 size(s) could be checked" in result.stderr


@NEEDS_INTERPRETER
def test_check_only_reports_a_broken_submission_per_size(tmp_path):
    broken = tmp_path / "ninetoothed_gemm.py"
    source = REFERENCE.read_text()
    assert "accumulator += ntl.dot" in source
    broken.write_text(source.replace("accumulator += ntl.dot", "accumulator = ntl.dot", 1))
    result = run_script(
        "--submission",
        str(broken),
        "--check-only",
        "--sizes",
        "8",
        "64x96x40",
        "64x64x192",
        env_extra={"NTGEMM_BACKEND": "interpreter"},
    )
    assert result.returncode == cli.SOME_FAILED, result.stdout + result.stderr
    verdicts = {
        line.split()[0]: line.split()[-1]
        for line in result.stdout.splitlines()
        if line.strip() and line.split()[0] in ("8", "64x96x40", "64x64x192")
    }
    # One K tile hides the missing accumulation; three K tiles show it.
    assert verdicts == {"8": PASS, "64x96x40": PASS, "64x64x192": FAIL}
    assert "elements outside" in result.stdout


@NEEDS_INTERPRETER
def test_unfinished_skeleton_is_named_not_benchmarked():
    result = run_script("--check-only", "--sizes", "8", env_extra={"NTGEMM_BACKEND": "interpreter"})
    assert result.returncode == cli.UNUSABLE
    assert "[not_implemented]" in result.stderr and "arrangement()" in result.stderr


def test_bad_arguments_are_usage_errors():
    assert run_script("--sizes", "12x4").returncode == 2
    assert run_script("--check-only", "--compare", "x.csv").returncode == 2


def test_help_documents_the_options():
    result = run_script("--help")
    assert result.returncode == 0
    for option in ("--submission", "--sizes", "--out", "--check-only", "--compare"):
        assert option in result.stdout
    assert "NINETOOTHED_AUTOTUNE" in result.stdout


def test_baseline_steps_run_the_students_command_on_the_reference(tmp_path):
    from benchmarks.lab import run_baselines

    labels = [label for label, _, _ in run_baselines.STEPS]
    assert labels[:2] == ["reference-64x64x64", "reference-autotune"]
    command = run_baselines.step_command("x", ["4096x4096x4095"], tmp_path)
    assert command[1] == str(SCRIPT) and str(REFERENCE) in command
    assert command[-2:] == ["--sizes", "4096x4096x4095"]
    assert "NINETOOTHED_AUTOTUNE" not in run_baselines.step_env(False)
    assert run_baselines.step_env(True)["NINETOOTHED_AUTOTUNE"] == "1"
    assert "4096x4096x4095" in run_baselines.RAGGED and "3000" in run_baselines.RAGGED


def test_baselines_stop_at_once_without_a_gpu(tmp_path, monkeypatch):
    from benchmarks.lab import run_baselines

    monkeypatch.setenv("NTGEMM_BACKEND", "interpreter")
    monkeypatch.setattr(
        run_baselines, "step_env", lambda autotune: {**os.environ, "NTGEMM_BACKEND": "interpreter"}
    )
    assert run_baselines.main([str(tmp_path)]) == 1
    logs = sorted(p.name for p in tmp_path.iterdir())
    assert logs == ["reference-64x64x64.log"]
    assert "No CUDA GPU" in (tmp_path / "reference-64x64x64.log").read_text()


def test_timed_path_wiring_with_a_stub_timer(backend, monkeypatch):
    """The GPU path end to end on the CPU: only do_bench (which needs a GPU) is stubbed."""
    if not backend.is_interpreter:
        pytest.skip("a stand-in for the GPU path on a CPU; on a GPU the timing tests run it")
    from grader.core.backend import Backend
    from grader.core.loading import load_submission

    calls = []

    def fake_bench(fn, warmup=0, rep=0):
        fn()
        calls.append(fn)
        return Timing(1.0 + len(calls), 0.9, 1.1)

    monkeypatch.setattr(harness, "bench", fake_bench)
    module = load_submission(REFERENCE)
    pretend_gpu = Backend("gpu", "cpu", "stub")
    results = harness.run_sizes(module, [(8, 8, 8), (64, 96, 40)], pretend_gpu)
    assert [r.verdict for r in results] == [PASS, PASS]
    first = results[0]
    assert first.timed and first.kernel is not None  # as called, kernel only, torch.mm
    # Calls 1-8 alternate nt_gemm and torch.mm (2, 3 | 4, 5 | 6, 7 | 8, 9: nt_gemm got
    # 2, 5, 6, 9 and torch.mm 3, 4, 7, 8); call 9 is the kernel alone.
    assert (first.ninetoothed.median_ms, first.torch_mm.median_ms, first.kernel.median_ms) == (
        5.5,
        5.5,
        10.0,
    )
    # Which timing went where: the stub saw nt_gemm's and torch.mm's own functions.
    assert [fn.__code__.co_names[-1] for fn in calls[:4]] == ["nt_gemm", "mm", "mm", "nt_gemm"]
    assert first.first_call_s > 0 and first.config.source == "fixed"
    frame = frame_for(results)
    assert frame.loc[0, "kernel_median_ms"] == 10.0 and frame.loc[1, "size"] == "64x96x40"


def test_pairs_are_timed_in_alternating_rounds():
    order = []

    def timer(fn, rep):
        name = fn()
        order.append(name)
        return Timing({"ours": 1.0, "theirs": 2.0}[name] + len(order) / 100, 0.5, 3.0 + len(order))

    ours, theirs = timing.bench_pair(lambda: "ours", lambda: "theirs", timer=timer)
    assert order == ["ours", "theirs", "theirs", "ours", "ours", "theirs", "theirs", "ours"]
    assert ours.median_ms == pytest.approx(1.0 + (0.04 + 0.05) / 2)  # median of 1.01 1.04 1.05 1.08
    assert (ours.p20_ms, ours.p80_ms) == (0.5, 7.5)  # the medians of the rounds' 4, 7, 8, 11


def test_autotuner_choice_is_mapped_back_to_block_names():
    class Config:
        kwargs = {"sym_m": 128, "sym_n": 64, "sym_k": 32}
        num_warps, num_stages = 4, 3

    class Tuner:
        cache = {}
        best_config = None
        bench_time = 4.2

    module = type(
        "Module", (), {"BLOCK_SIZE_M": "sym_m", "BLOCK_SIZE_N": "sym_n", "BLOCK_SIZE_K": "sym_k"}
    )
    watch = kernel_config.SearchWatch(module, None)
    watch.tuner = Tuner()
    watch.start()
    assert not watch.used()
    Tuner.cache = {("key",): Config()}
    Tuner.best_config = Config()
    config, seconds = watch.finish()
    assert (config.block_m, config.block_n, config.block_k) == (128, 64, 32)
    assert (config.num_warps, config.num_stages, config.source) == (4, 3, "autotuned")
    assert seconds == 4.2 and watch.used()
    watch.start()  # the next call of the same shape: no new search
    assert watch.finish()[1] is None
