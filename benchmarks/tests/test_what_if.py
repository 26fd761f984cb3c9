"""The benchmark's --what-if on a CPU: its candidate set, which files it can rebuild, one
rebuilt candidate checked through the interpreter, its CSV, summary and picture from
made-up timings, and the refusal to time anything without a GPU.

Nothing here times a kernel: the interpreter's speed says nothing about a GPU's.
"""

import csv

import pytest

import solutions
from benchmarks import cli, timing, what_if, what_if_output
from benchmarks.tests.test_harness import run_script
from benchmarks.timing import Timing
from benchmarks.what_if import Config, Outcome
from grader.core.loading import load_submission
from grader.tests.build_variants import VARIANTS
from grader.tests.batch_helpers import NEEDS_INTERPRETER
from ledger import formulas

SIZE = (4096, 4096, 4096)


def _module(tmp_path, name, text):
    path = tmp_path / f"{name}.py"
    path.write_text(text, encoding="utf-8")
    return load_submission(path)


def _variant(tmp_path, name):
    return _module(tmp_path, name, VARIANTS[name].source(name))


# --- the candidate set --------------------------------------------------------------------


def test_candidates_are_few_distinct_and_fit_an_h200():
    configs = what_if.candidates()
    assert 6 <= len(configs) <= 10 and len(set(configs)) == len(configs)
    labels = {c.label for c in configs}
    assert {"64x64x64 4w3s", "128x256x64 8w3s"} <= labels  # course default, autotuner's pick
    for c in configs:
        smem = formulas.smem_bytes(c.block_m, c.block_n, c.block_k, 2, c.num_stages)
        assert smem <= formulas.H200.max_smem_per_block_bytes, c.label


# --- which files can be rebuilt -----------------------------------------------------------


def test_the_reference_rebuilds_through_its_keyword_parameters(tmp_path):
    module = load_submission(solutions.MODEL_ANSWER)
    assert what_if.takes_keywords(module)
    plan = what_if.plan(module)
    assert plan.runnable and plan.theirs.blocks == (64, 64, 64)
    assert plan.theirs not in plan.others and len(plan.others) == len(what_if.CANDIDATES)
    assert what_if.tiles_used(module, (128, 256, 32)) == (128, 256, 32)


def test_the_skeleton_style_rebuilds_through_the_module_constants(tmp_path):
    module = _variant(tmp_path, "other_style")  # reads BLOCK_SIZE_* as globals
    assert not what_if.takes_keywords(module)
    assert what_if.plan(module).runnable
    assert what_if.tiles_used(module, (32, 128, 16)) == (32, 128, 16)
    assert (module.BLOCK_SIZE_M, module.BLOCK_SIZE_N, module.BLOCK_SIZE_K) == (64, 64, 64)


def test_hard_coded_tiles_are_named_and_nothing_is_tried(tmp_path):
    text = (
        VARIANTS["other_style"]
        .source("hard")
        .replace("c.tile((BLOCK_SIZE_M, BLOCK_SIZE_N))", "c.tile((64, 64))")
    )
    plan = what_if.plan(_module(tmp_path, "hard_coded_tiles", text))
    assert not plan.runnable and plan.others == ()
    assert "does not take its tiles" in plan.reason_en and "64x64x64 tiles" in plan.reason_en
    assert "写死" in plan.reason_zh


def test_an_autotuned_file_gets_a_reason(tmp_path):
    import ninetoothed

    module = load_submission(solutions.MODEL_ANSWER)
    saved = module.BLOCK_SIZE_M
    module.BLOCK_SIZE_M = ninetoothed.block_size(lower_bound=64, upper_bound=128)
    try:
        plan = what_if.plan(module)
    finally:
        module.BLOCK_SIZE_M = saved
    assert not plan.runnable and "autotuner" in plan.reason_en and "自动调优" in plan.reason_zh


# --- one candidate, built and checked on the interpreter ------------------------------------


@NEEDS_INTERPRETER
def test_one_rebuilt_candidate_is_checked_before_it_is_timed(tmp_path, backend, monkeypatch):
    import torch

    if not backend.is_interpreter:
        pytest.skip("a GPU is here: the GPU run of --what-if covers this")
    made_up = (Timing(0.5, 0.49, 0.51), Timing(0.2, 0.19, 0.21))
    timed = []
    monkeypatch.setattr(timing, "bench_pair", lambda ours, theirs: timed.append(1) or made_up)
    module = _variant(tmp_path, "other_style")
    lhs = torch.randn((96, 80), dtype=torch.float16)
    rhs = torch.randn((80, 112), dtype=torch.float16)
    outcome = what_if.try_one(module, Config(32, 64, 16), lhs, rhs)
    assert outcome.status == what_if.TIMED, outcome.note
    assert (outcome.kernel, outcome.torch_mm) == made_up
    assert module.BLOCK_SIZE_K == 64 and module.application.__annotations__ == {}

    wrong = _variant(tmp_path, "loop_stops_early")
    outcome = what_if.try_one(wrong, Config(32, 32, 16), lhs, rhs)
    assert outcome.status == what_if.WRONG and outcome.kernel is None and len(timed) == 1


# --- what it shows, from made-up timings ------------------------------------------------------


def _made_up():
    def timed(config, ms, theirs=False):
        return Outcome(
            config,
            theirs,
            what_if.TIMED,
            kernel=Timing(ms, ms * 0.99, ms * 1.01),
            torch_mm=Timing(0.2, 0.199, 0.201),
        )

    configs = what_if.candidates()
    return [
        timed(Config(64, 64, 64, 8, 7), 0.48, theirs=True),
        timed(configs[4], 0.29),
        timed(configs[6], 0.226),
        Outcome(configs[7], False, what_if.WRONG, "=12 of 64 elements outside"),
    ]


def test_summary_names_the_best_against_theirs_and_torch_mm():
    text = what_if_output.summary(_made_up(), SIZE)
    assert "Best: 128x256x64 8w3s, 608.1 TFLOPS, 2.12x yours (286.3), 0.88x torch.mm" in text
    assert "最快：128x256x64 8w3s" in text and "never changes a grade" in text
    assert "256x128x64 8w3s" in text and "wrong" in text


def test_summary_when_theirs_is_fastest():
    outcomes = _made_up()[:1]
    assert "Yours is the fastest" in what_if_output.summary(outcomes, SIZE)


def test_csv_has_every_configuration_tried(tmp_path):
    path = what_if_output.write_csv(_made_up(), SIZE, tmp_path / "w.csv")
    with path.open(encoding="utf-8") as handle:
        found = list(csv.DictReader(handle))
    assert [row["config"] for row in found][:1] == ["64x64x64 8w7s"]
    assert found[0]["theirs"] == "True" and len(found) == 4
    assert float(found[2]["speedup_over_theirs"]) == pytest.approx(0.48 / 0.226)
    assert found[3]["status"] == "wrong" and found[3]["tflops"] == ""
    assert found[3]["note"].startswith("'=")  # never a spreadsheet formula


def test_picture_is_drawn(tmp_path):
    path = what_if_output.render(_made_up(), SIZE, tmp_path / "w.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


# --- the command on a CPU ---------------------------------------------------------------------


def test_what_if_on_a_cpu_says_it_needs_a_gpu(tmp_path):
    out = tmp_path / "results"
    result = run_script(
        "--what-if",
        "--submission",
        str(solutions.MODEL_ANSWER),
        "--out",
        str(out),
        env_extra={"NTGEMM_BACKEND": "interpreter"},
    )
    assert result.returncode == cli.NO_GPU, result.stdout + result.stderr
    assert "--what-if needs a CUDA GPU" in result.stderr and "需要 CUDA GPU" in result.stderr
    assert "TFLOPS" not in result.stdout and not out.exists()


def test_the_command_prints_and_writes_what_the_what_if_found(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(
        what_if, "run", lambda module, plan, size, backend, seed, on_outcome: _made_up()
    )
    args = cli._parser("benchmark", solutions.MODEL_ANSWER).parse_args(["--what-if"])
    module = load_submission(solutions.MODEL_ANSWER)
    cli._what_if(module, SIZE, None, args, tmp_path / "bench_node-7.lab_run-what-if")
    printed = capsys.readouterr().out
    assert "Best: 128x256x64 8w3s" in printed and "what-if cost" in printed
    written = sorted(path.name for path in tmp_path.iterdir())
    assert written == ["bench_node-7.lab_run-what-if.csv", "bench_node-7.lab_run-what-if.png"]


def test_what_if_with_check_only_is_a_usage_error():
    result = run_script("--what-if", "--check-only")
    assert result.returncode == cli.UNUSABLE and "--what-if times kernels" in result.stderr
