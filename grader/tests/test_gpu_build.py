"""Issue: a CPU verdict a student can trust on the GPU.

The compile gate (grader.core.gpu_compile), the grids that fail before launch, the
application-level mistakes named from the output, and the interpreter's time budget.
Variants are the model answer with named edits (grader/tests/build_variants.py).
"""

import pathlib
import subprocess
import sys
import time

import pytest

from grader.batch.inside import protocol
from grader.batch.isolation import time_policy
from grader.core import cases, checks, diagnosis, execution, gpu_compile, layout
from grader.core.loading import load_submission
from grader.core.suite import ruled_out
from grader.tests import build_variants
from grader.tests.batch_helpers import NEEDS_INTERPRETER, run_pytest
from grader.tests.source_edits import write_class, writer
from solutions import MODEL_ANSWER

ROOT = pathlib.Path(__file__).resolve().parents[2]
SEED = cases.DEFAULT_SEED


@pytest.fixture(scope="module")
def variant(tmp_path_factory):
    path_of = writer(tmp_path_factory.mktemp("variants"), build_variants.VARIANTS)
    made = {}

    def make(name):
        if name not in made:
            path = MODEL_ANSWER if name == "reference" else path_of(name)
            made[name] = (path, load_submission(path))
        return made[name]

    return make


def _build(module):
    return gpu_compile.check(execution.own_kernel(module), "sm_90")


def _case(case_id):
    return next(case for case in cases.all_fixed_cases() if case.id == case_id)


# --------------------------------------------------------------------------- the gate


def test_the_reference_builds_and_reports_what_it_uses(variant):
    build = _build(variant("reference")[1])
    assert build.ok and build.checked, build
    assert build.registers > 0 and build.shared_bytes > 0 and build.spilled_bytes == 0
    assert (build.num_warps, build.num_stages) == (8, 7)  # ninetoothed's defaults for an H200
    line = gpu_compile.summary(build)
    assert "registers per thread" in line and "fit on an H200 SM" in line, line
    assert "寄存器" in gpu_compile.summary_zh(build)


@pytest.mark.parametrize(
    "name, mistake, line",
    [
        ("fp16_accumulator", "accumulator_dtype", "for k in range(lhs.shape[0]):"),
        ("accumulator_in_loop", "accumulator", "output = accumulator"),
        ("dot_swapped_rect_tiles", "build_error", "accumulator += ntl.dot(rhs[k], lhs[k])"),
    ],
)
def test_a_kernel_the_gpu_rejects_fails_every_case_with_its_line(variant, name, mistake, line):
    path, module = variant(name)
    build = _build(module)
    assert build.checked and not build.ok, build
    verdict = checks.build_verdict(_case("nonsquare-128x256x192"), build, path.read_text())
    assert not verdict.passed and verdict.mistake == mistake, verdict
    assert "does not build for sm_90" in verdict.message.splitlines()[0]
    assert line in verdict.message, verdict.message
    assert "ninetoothed_tensor" not in verdict.message  # the compiler's words, not its code


def test_shared_memory_over_the_target_fails(variant):
    build = _build(variant("tiles_128x128x128")[1])
    assert not build.ok and build.checked, build
    assert "458752" in build.message  # what the H200 itself refused, measured
    verdict = checks.build_verdict(_case("square-64x64x64"), build)
    assert verdict.mistake == "gpu_resources", verdict
    forged = gpu_compile.Build("sm_90", False, "out of resources: shared memory")
    assert checks.build_verdict(_case("square-64x64x64"), forged).mistake == "gpu_resources"


def test_a_check_that_cannot_run_judges_nothing():
    class NoSource:
        pass

    build = gpu_compile.check(NoSource(), "sm_90")
    assert not build.checked and "not checked" in gpu_compile.summary(build)


def test_build_fields_from_a_worker_are_type_checked():
    build = gpu_compile.Build.from_fields(
        {
            "target": "sm_90",
            "ok": "yes",
            "registers": 2**40,
            "shared_bytes": True,
            "message": "x" * 10**5,
        }
    )
    assert build.ok is False and build.registers is None and build.shared_bytes is None
    assert len(build.message) <= gpu_compile.MESSAGE_LIMIT
    assert gpu_compile.Build.from_fields("nonsense") is None


def test_a_compile_child_takes_only_a_triton_key_of_this_triton(monkeypatch):
    """The parent's key spares each child 0.5 s of hashing Triton's files; anything else
    (empty, another version's) leaves the child to hash them itself."""
    import triton
    from triton.runtime import cache

    own = cache.triton_key
    monkeypatch.setattr(cache, "triton_key", own)
    for other in ("", "not a key", "0.0.1-abc"):
        gpu_compile._take_triton_key(other)
        assert cache.triton_key is own
    gpu_compile._take_triton_key(f"{triton.__version__}parent")
    assert cache.triton_key() == f"{triton.__version__}parent"
    assert gpu_compile.triton_key() == f"{triton.__version__}parent"  # what it hands on


def test_a_batch_run_names_an_empty_cache_by_triton_s_version_alone(monkeypatch, tmp_path):
    """A run's cache is its own and starts empty: the version names what this Triton writes
    there, without 0.4 s of hashing. A cache that holds anything, or none named, keeps the
    full key."""
    import triton
    from triton.runtime import cache

    own = cache.triton_key
    monkeypatch.setattr(cache, "triton_key", own)
    (tmp_path / "used" / "entry").mkdir(parents=True)
    (tmp_path / "empty").mkdir()
    monkeypatch.delenv("TRITON_CACHE_DIR", raising=False)
    gpu_compile.key_by_version_in_a_private_cache()
    assert cache.triton_key is own
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "used"))
    gpu_compile.key_by_version_in_a_private_cache()
    assert cache.triton_key is own
    for folder in ("empty", "missing"):
        monkeypatch.setattr(cache, "triton_key", own)
        monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / folder))
        gpu_compile.key_by_version_in_a_private_cache()
        assert gpu_compile.triton_key() == f"{triton.__version__}-one-run"


def test_a_worker_names_its_cache_before_anything_is_compiled(monkeypatch, tmp_path):
    """The worker's warm-up sets the key before the driver or a compile child uses it."""
    import triton
    from triton.runtime import cache

    from grader.batch.inside import worker

    monkeypatch.setattr(cache, "triton_key", cache.triton_key)
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "cache"))
    worker._warm_up()
    assert gpu_compile.triton_key() == f"{triton.__version__}-one-run"


@pytest.mark.parametrize(
    "text, expected", [("sm_90", "sm_90"), ("90", "sm_90"), ("SM_80", "sm_80")]
)
def test_targets_parse(text, expected):
    assert gpu_compile.parse_target(text) == expected


def test_an_unknown_target_is_refused_by_name():
    with pytest.raises(ValueError, match="sm_75"):
        gpu_compile.parse_target("sm_75")


def test_pytest_grader_fails_a_float16_accumulator_at_once_and_names_it(variant):
    path, _ = variant("fp16_accumulator")
    started = time.monotonic()
    done = run_pytest("-q", "-p", "no:cacheprovider", "grader", "--submission", str(path))
    assert time.monotonic() - started < 120  # no case ran on the interpreter
    assert "[accumulator_dtype]" in done.stdout and "累加器要用 float32" in done.stdout
    assert "GPU build: does not build for sm_90" in done.stdout
    assert "failed" in done.stdout.splitlines()[-1]


# --------------------------------------------------------------------------- fail fast


def test_a_grid_that_cannot_line_up_fails_before_launch(variant, backend):
    _, module = variant("expand_by_size")
    case = _case("nonsquare-128x256x192")
    started = time.monotonic()
    with pytest.raises(execution.NotLaunched) as raised:
        execution.produce(case, module, SEED, backend.device)
    assert time.monotonic() - started < 5
    verdict = checks.error_verdict(case, raised.value)
    assert verdict.mistake == "grid_mismatch" and "(2, 256)" in verdict.message, verdict.message
    hints = diagnosis.explain(layout.inspect_arrangement(module), [verdict], [case])
    assert [hint["key"] for hint in hints] == ["size_for_count"]  # a finding is said alone


def test_a_correct_grid_is_never_stopped(variant):
    for name in ("reference", "tiles_16x128x64", "tiles_32x32x32", "tiles_128x64x32"):
        module = variant(name)[1]
        for case in cases.catalogue(SEED, "gpu"):
            assert layout.launch_mismatch(module, case.shape) is None, (name, case.id)


# --------------------------------------------------------------------------- application


@pytest.mark.parametrize(
    "name, case_ids, mistake",
    [
        (
            "dot_swapped",
            ["nonsquare-128x256x192", "tail_mnk-65x97x130", "long_k-64x64x1024"],
            "dot_order",
        ),
        ("output_transposed", ["nonsquare-128x256x192", "square-256x256x256"], "output_tile"),
    ],
)
def test_application_mistakes_are_named_from_the_output(variant, backend, name, case_ids, mistake):
    _, module = variant(name)
    selected = [_case(case_id) for case_id in case_ids]
    verdicts = []
    for case in selected:
        outputs = execution.produce(case, module, SEED, backend.device)
        verdicts.append(checks.judge(case, outputs, SEED, backend.device))
    assert all(not verdict.passed for verdict in verdicts)
    assert all(verdict.mistake == mistake for verdict in verdicts), [v.mistake for v in verdicts]
    hints = diagnosis.explain([], verdicts, selected)
    assert [hint["key"] for hint in hints] == [mistake]
    assert not any(ruled_out(mistake, verdict) for verdict in verdicts)


def test_a_float16_running_sum_fails_only_the_cancellation_case(variant, backend):
    if not backend.is_interpreter:
        pytest.skip(
            "on a GPU a float16 running sum also fails other cases (21 of 33 on an "
            "H200, 2026-11-30): only the interpreter isolates the cancellation case"
        )
    _, module = variant("fp16_running_sum")
    cancellation = _case("cancellation-64x64x384")
    # Not long_k-64x64x1024: there a float16 sum misses the tolerance by an element or so on
    # most secrets' inputs, none on others.
    others = [_case("nonsquare-128x256x192"), _case("square-256x256x256")]
    verdicts = [
        checks.judge(case, execution.produce(case, module, SEED, "cpu"), SEED, "cpu")
        for case in [cancellation] + others
    ]
    assert not verdicts[0].passed and all(verdict.passed for verdict in verdicts[1:])
    hints = diagnosis.explain([], verdicts, [cancellation] + others)
    assert hints[0]["key"] == "accumulator_dtype", hints


def test_the_reference_passes_the_cancellation_case(variant, backend):
    case = _case("cancellation-64x64x384")
    outputs = execution.produce(case, variant("reference")[1], SEED, backend.device)
    assert checks.judge(case, outputs, SEED, backend.device).passed


def test_a_wrong_value_rules_out_causes_it_cannot_be():
    wrong = checks.Verdict(
        "x",
        False,
        "",
        details={"mismatches": 3, "samples": [{"index": [0, 0], "got": 1.0, "expected": 2.0}]},
    )
    assert ruled_out("nondeterministic", wrong) and ruled_out("wrong_dtype", wrong)
    assert ruled_out("unwritten_output", wrong) and not ruled_out("accumulator", wrong)
    nan = checks.Verdict(
        "x",
        False,
        "",
        details={
            "mismatches": 1,
            "samples": [{"index": [0, 0], "got": float("nan"), "expected": 2.0}],
        },
    )
    assert not ruled_out("unwritten_output", nan)


# --------------------------------------------------------------------------- time budget


def test_the_budget_grows_with_the_tiles_steps():
    jobs = [
        protocol.Job(0, 256, 256, 256, ("out",)),
        protocol.Job(1, 96, 80, 144, ("first", "second")),
    ]

    def extra(tiles):
        return time_policy.extra_for("interpreter", jobs, tiles)

    reference = extra((64, 64, 64))
    assert reference == time_policy.STEP_S * (64 + 2 * 2 * 2 * 3)
    assert extra((16, 16, 16)) > 40 * reference
    assert extra((1, 1, 1)) == extra((16, 16, 16))  # no more time below the guide's 16
    assert extra(None) == reference


@NEEDS_INTERPRETER
def test_a_cpu_batch_passes_32_cubed_tiles_with_default_limits_and_reports_builds(tmp_path):
    """The default limits on the interpreter (the issue: 32x32x32 used to time out)."""
    import csv
    import json

    write_class(tmp_path / "class", build_variants.VARIANTS, ["tiles_32x32x32", "fp16_accumulator"])
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "grader",
            "grade",
            str(tmp_path / "class"),
            "--out",
            str(tmp_path / "out"),
            "-j",
            "2",
            "--no-progress",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=1500,
        env={**__import__("os").environ, "NTGEMM_BACKEND": "interpreter"},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    rows = {
        row["student"]: row
        for row in csv.DictReader(open(tmp_path / "out" / "gradebook.csv", encoding="utf-8-sig"))
    }
    assert rows["tiles_32x32x32"]["status"] == "passed", rows["tiles_32x32x32"]
    assert rows["fp16_accumulator"]["status"] == "failed"
    record = json.loads((tmp_path / "out" / "fp16_accumulator" / "record.json").read_text())
    assert [hint["key"] for hint in record["hints"]][:1] == ["accumulator_dtype"]
    assert record["wall_time_s"] < 60
    passed = (tmp_path / "out" / "tiles_32x32x32" / "feedback.md").read_text(encoding="utf-8")
    assert "## GPU build / GPU 编译" in passed and "registers per thread" in passed


def test_a_float16_running_sum_is_named_from_the_output():
    """What a float16 accumulator gives on a GPU: every K tile's product added into a float16
    sum. The judge replays that sum and names it; a partial sum is still named as such."""
    import torch

    case = _case("long_k-64x64x1024")
    lhs, rhs, ref = checks.judging_material(case, SEED, "cpu")
    total = torch.zeros_like(ref)
    for start in range(0, case.k, 32):
        part = lhs[:, start : start + 32].float() @ rhs[start : start + 32, :].float()
        total = (total.float() + part.half().float()).half()
    verdict = checks.judge(case, {"out": total}, SEED, "cpu")
    assert not verdict.passed and verdict.mistake == "accumulator_dtype", verdict.message
    assert "float16 running sum" in verdict.message.splitlines()[-1]
    last_tile = (lhs[:, -32:].float() @ rhs[-32:, :].float()).half()
    assert checks.judge(case, {"out": last_tile}, SEED, "cpu").mistake == "accumulator"
    assert checks.judge(case, {"out": ref.half()}, SEED, "cpu").passed
