"""The build guard, the kernel run's second layer: what a build needs passes, the rest ends the run.

The checker (grader.core.kernel_source) is bypassed on purpose here: these tests stand
for the day it has a bug, and ask that such a bug still forges no grade.
"""

import os
import subprocess
import sys

import pytest

from grader.batch.grade import grading, intake
from grader.core import build_guard
from grader.batch.status import Status
from grader.core import kernel_source
from grader.tests.batch_helpers import NEEDS_INTERPRETER, small_cases
from grader.tests.build_variants import VARIANTS
from solutions import MODEL_ANSWER

ANSWER = MODEL_ANSWER.read_text(encoding="utf-8")
SIGNATURE = "def arrangement(lhs, rhs, output, block_size_m=BLOCK_SIZE_M,"


@pytest.fixture
def policy(tmp_path):
    kernel = tmp_path / "job" / "ninetoothed_gemm.py"
    kernel.parent.mkdir()
    kernel.write_text(ANSWER)
    return build_guard.Policy(kernel, writable=[tmp_path / "home"])


def _code(text, filename="<string>"):
    return compile(text, filename, "eval")


def _statements(text, filename="<string>"):
    return compile(text, filename, "exec")


@pytest.mark.parametrize(
    "event, args",
    [
        ("open", ("/etc/passwd", "r", 0)),
        ("open", (os.path.expanduser("~/.ssh/id_rsa"), "r", 0)),
        ("open", (sys.prefix + "/evil.py", "w", 0)),
        ("import", ("imaplib", None, [], [], [])),
        ("import", ("socket", None, [], [], [])),
        ("subprocess.Popen", ("/bin/sh", ["/bin/sh", "-c", "true"], None, None)),
        ("subprocess.Popen", (sys.executable, [sys.executable, "-c", "print(1)"], None, None)),
        ("os.system", (b"true",)),
        ("os.exec", ("/bin/sh", ["sh"], None)),
        ("os.fork", ()),
        ("os.kill", (1, 9)),
        ("os.putenv", (b"X", b"1")),
        ("os.listdir", ("/etc",)),
        ("os.remove", (sys.prefix + "/lib",)),
        ("socket.connect", (None, ("127.0.0.1", 80))),
        ("sys.addaudithook", ()),
        ("sys.settrace", (None,)),
        ("gc.get_objects", (None,)),
        ("code.__new__", (None,) * 8),
        ("exec", (_code("__import__('os').system('true')"),)),
        ("exec", (_code("0", "/tmp/not-a-library-file.py"),)),
        ("exec", (_code("0", os.__file__),)),  # a library's code, but not run by the import system
        ("object.__setattr__", (len, "__code__", None)),
        ("os.posix_spawn", ("/bin/sh", ["/bin/sh", "-c", "true"], {})),
        ("subprocess.Popen", (None, "cat /etc/passwd", None, None)),
        ("import", ("cuda_utils", "/tmp/elsewhere/cuda_utils.so", [], [], [])),
        ("object.__setattr__", (kernel_source.KernelSource, "ok", True)),
    ],
)
def test_what_no_build_needs_is_refused(policy, event, args):
    assert policy.judge(event, args) is not None


@pytest.mark.parametrize(
    "event, args",
    [
        ("import", ("triton.language.extra", None, [], [], [])),
        ("import", ("grader.core.gpu_compile", None, [], [], [])),
        (
            "subprocess.Popen",
            (
                sys.executable,
                [sys.executable, "-m", "grader.core.gpu_compile", "kernel.py", "sm_90"],
                None,
                None,
            ),
        ),
        ("exec", (_code("Integer(4096)"),)),
        ("exec", (_code("2 * 3 + 1"),)),
        ("compile", (b"x + 1", "<unknown>")),
        ("open", (os.__file__, "r", 0)),
        ("open", (3, "rb", 0)),
        ("builtins.id", (1,)),
        ("object.__setattr__", (type("Fresh", (), {}), "__doc__", "")),
        ("open", ("/dev/null", "r", 0)),
        (
            "os.posix_spawn",
            (
                sys.executable,
                [sys.executable, "-m", "grader.core.gpu_compile", "kernel.py", "sm_90"],
                {},
            ),
        ),
    ],
)
def test_what_a_build_needs_passes(policy, event, args):
    assert policy.judge(event, args) is None


def _judged_from(policy, caller, event, args):
    """``policy.judge`` as called from a frame of the file ``caller``."""
    namespace = {"policy": policy, "event": event, "args": args}
    exec(compile("why = policy.judge(event, args)", caller, "exec"), namespace)
    return namespace["why"]


def test_a_module_s_code_runs_only_from_the_import_system(policy):
    import triton.runtime.jit

    module_code = _code("0", os.__file__)
    assert _judged_from(policy, "<frozen importlib._bootstrap>", "exec", (module_code,)) is None
    assert _judged_from(policy, triton.runtime.jit.__file__, "exec", (module_code,)) is not None


def test_a_generated_kernel_file_is_imported_only_once_checked(tmp_path, monkeypatch):
    import hashlib

    from grader.core import generated_cache

    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    policy = build_guard.Policy(str(tmp_path / "job" / "kernel.py"))
    source = "x = 1\n"
    digest = hashlib.sha256(source.encode()).hexdigest()
    kernel = tmp_path / "home" / ".ninetoothed" / f"{digest}.py"
    kernel.parent.mkdir(parents=True)
    kernel.write_text(source)
    code = _statements(source, str(kernel))
    importing = "<frozen importlib._bootstrap>"
    assert "no check passed" in _judged_from(policy, importing, "exec", (code,))
    monkeypatch.setattr(generated_cache, "checked", {digest})
    assert _judged_from(policy, importing, "exec", (code,)) is None
    kernel.write_text("x = 2\n")  # changed after its check
    assert _judged_from(policy, importing, "exec", (code,)) is not None


def test_triton_s_binder_may_name_only_its_own_names_and_the_kernel_s_parameters(policy):
    import triton.runtime.jit

    binder = triton.runtime.jit.__file__
    written = _statements(
        "def dynamic_func(ninetoothed_a, ninetoothed_b=default_ninetoothed_b, "
        "**options):\n    params = {'a': ninetoothed_a}\n    specialization = "
        "[specialize_impl(backend, ninetoothed_a, False, True, True)]\n"
        "    return params, specialization, options\n"
    )
    assert _judged_from(policy, binder, "exec", (written,)) is None
    for payload in (
        "__import__('os').system('true')",
        "open('/etc/passwd')",
        "ninetoothed_a.__class__",
    ):
        assert _judged_from(policy, binder, "exec", (_code(payload),)) is not None, payload


def test_the_interpreter_may_run_only_a_generated_file_the_check_passed(policy, tmp_path):
    import hashlib

    import triton.runtime.interpreter

    from grader.core import generated_cache

    source = "x = 1\n"
    digest = hashlib.sha256(source.encode()).hexdigest()
    kernel = tmp_path / "home" / f"{digest}.py"
    kernel.parent.mkdir(exist_ok=True)
    kernel.write_text(source)
    interpreter = triton.runtime.interpreter.__file__
    code = _statements(source, str(kernel))
    assert _judged_from(policy, interpreter, "exec", (code,)) is not None  # never checked
    generated_cache.checked.add(digest)
    try:
        assert _judged_from(policy, interpreter, "exec", (code,)) is None
        kernel.write_text("x = 2\n")  # changed after its check
        assert _judged_from(policy, interpreter, "exec", (code,)) is not None
    finally:
        generated_cache.checked.discard(digest)


def test_only_dataclasses_and_namedtuple_may_write_methods_from_the_standard_library(policy):
    import dataclasses
    import timeit

    method = _statements("def __init__(self, a):\n    self.a = a\n")
    assert _judged_from(policy, dataclasses.__file__, "exec", (method,)) is None
    assert _judged_from(policy, timeit.__file__, "exec", (method,)) is not None


def test_the_module_check_sees_torch_mm_and_the_benchmark_s_timer_rebound(monkeypatch):
    """torch.mm is the speed phase's reference, benchmarks.timing its clock."""
    import torch

    import benchmarks.timing

    before = build_guard.snapshot()
    monkeypatch.setattr(torch, "mm", lambda *a, **k: None)
    monkeypatch.setattr(benchmarks.timing, "bench_pair", lambda *a, **k: None)
    found = build_guard.changed(before, build_guard.AFTER_LAUNCH)
    assert "torch.mm" in found and "benchmarks.timing.bench_pair" in found
    monkeypatch.undo()
    assert build_guard.changed(before, build_guard.AFTER_LAUNCH) == []


def test_writes_go_only_to_the_run_s_own_folders(policy, tmp_path):
    mine = tmp_path / "home" / ".ninetoothed" / "kernel.py"
    assert policy.judge("open", (str(mine), "w", 0)) is None
    assert policy.judge("os.mkdir", (str(mine.parent), 0o777, None)) is None
    assert policy.judge("open", (str(tmp_path / "job" / "x.py"), "w", 0)) is not None


def test_a_relative_path_is_judged_in_the_folder_of_its_descriptor(policy, tmp_path):
    """shutil.rmtree removes a temporary folder's files by name, relative to a descriptor."""
    (tmp_path / "home").mkdir()
    for folder, verdict in ((tmp_path / "home", None), (tmp_path / "job", "outside")):
        descriptor = os.open(folder, os.O_RDONLY)
        try:
            why = policy.judge("os.remove", ("launcher.c", descriptor))
        finally:
            os.close(descriptor)
        assert (why is None) if verdict is None else (verdict in why)


def test_triton_s_compiled_launcher_imports_from_the_run_s_cache_only(policy, tmp_path):
    cached = tmp_path / "home" / ".triton" / "cache" / "x" / "__triton_launcher.so"
    assert policy.judge("import", ("__triton_launcher", str(cached), [], [], [])) is None
    assert policy.judge("import", ("__triton_launcher", "/usr/lib/evil.so", [], [], [])) is not None


def test_the_module_check_sees_a_class_s_method_swapped(monkeypatch):
    """Assigning a class attribute raises no audit event: the snapshot sees it instead."""
    import torch
    import triton

    before = build_guard.snapshot()
    monkeypatch.setattr(triton.runtime.jit.JITFunction, "run", lambda *a, **k: None)
    monkeypatch.setattr(torch.Tensor, "cpu", lambda self: self)
    monkeypatch.setattr(triton.language.core.tensor, "__repr__", lambda self: "")
    found = build_guard.changed(before)
    assert "triton.runtime.jit.JITFunction.run" in found
    assert "torch.Tensor.cpu" in found
    after_launch = build_guard.changed(before, build_guard.AFTER_LAUNCH)
    assert "torch.Tensor.cpu" in after_launch
    assert not any(name.startswith("triton.language.") for name in after_launch)
    monkeypatch.undo()
    assert build_guard.changed(before) == []


GUARDED = r"""
import sys
from grader.core import build_guard
refused = []
build_guard.install(build_guard.Policy(sys.argv[1]), refused.append, exit_code=3)
{action}
print("still running")
"""


@pytest.mark.parametrize(
    "action",
    [
        "open('/etc/hostname')",
        "__import__('imaplib')",
        "import subprocess; subprocess.run(['true'])",
        "import os; os.system('true')",
    ],
)
def test_the_first_refused_event_ends_the_process(tmp_path, action):
    script = tmp_path / "run.py"
    script.write_text(GUARDED.replace("{action}", action))
    done = subprocess.run(
        [sys.executable, str(script), str(script)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "HOME": str(tmp_path)},
    )
    assert done.returncode == 3, done.stderr
    assert "still running" not in done.stdout


def test_sympy_may_exec_its_monomial_templates_and_nothing_else(tmp_path):
    """NineToothed's build has sympy write monomial functions from a template when a tile's
    size is a symbol; the same _build would exec any text it were handed."""
    script = tmp_path / "run.py"
    script.write_text(
        "import sympy.polys.monomials as m\n"
        + GUARDED.replace(
            "{action}",
            "print(m.MonomialOps(3).mul()((1, 2, 3), (4, 5, 6)))\n"
            "m.MonomialOps(1)._build('x = 1', 'x')",
        )
    )
    done = subprocess.run(
        [sys.executable, str(script), str(script)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "HOME": str(tmp_path)},
    )
    assert done.stdout.startswith("(5, 7, 9)"), done.stderr
    assert done.returncode == 3 and "still running" not in done.stdout, done.stderr


# A forgery the first checker missed, in the red team's shape: a construct it never
# inspected, run when the rebuilt file is imported, swaps the kernel build for a stand-in.
FORGED_ARRANGEMENT = (
    SIGNATURE + " *extra: (__import__('ninetoothed').__setattr__("
    "'make', lambda *a, **k: (lambda lhs, rhs, out: out.copy_(lhs @ rhs))),"
    " 0)[1],"
)


# A forgery of the second red team's kind, against the guard itself: a kernel that is wrong
# on purpose, and Triton's launch (on a GPU JITFunction.run, on the interpreter
# InterpretedFunction.run) swapped for a product computed by torch.
SWAPPED_LAUNCH = (
    ANSWER.replace("accumulator +=", "accumulator -=")
    + """
import triton.runtime.interpreter as _interpreter, triton.runtime.jit as _jit
def _stand_in(self, *args, grid, warmup, **kwargs):
    args[10].copy_((args[0].float() @ args[5].float()).half())
_interpreter.InterpretedFunction.run = _stand_in
_jit.JITFunction.run = _stand_in
"""
)


@NEEDS_INTERPRETER  # these grade on the interpreter, which some GPU hosts refuse
@pytest.mark.parametrize(
    "forgery",
    [
        ANSWER.replace(SIGNATURE, FORGED_ARRANGEMENT),
        SWAPPED_LAUNCH,
        ANSWER.replace(SIGNATURE, SIGNATURE + " *extra: __import__('imaplib'),"),
        ANSWER.replace(
            "    output_arranged = output.tile(",
            "    open('/etc/hostname').read()\n    output_arranged = output.tile(",
        ),
    ],
    ids=["swapped_make", "swapped_launch", "import", "open"],
)
def test_a_checker_bug_still_forges_no_grade(tmp_path, monkeypatch, forgery):
    """With the checker told to accept everything, the guard ends the kernel run and the
    file is flagged with nothing earned."""
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(kernel_source, "extract", kernel_source.KernelSource)  # keeps it all
    settings = grading.Settings(
        seed=7,
        backend="interpreter",
        timeout_s=120,
        memory_limit_bytes=4 << 30,
        case_filter=tuple(small_cases().split(",")),
    )
    submission = intake.Submission("eve", "eve.py", forgery.encode())
    record = grading.grade(submission, settings, "eve")
    assert record["status"] == Status.FLAGGED, (record["status"], record["message"])
    assert record["score"] == 0
    assert any("build guard" in flag for flag in record["flags"]), record["flags"]


@NEEDS_INTERPRETER  # these grade on the interpreter, which some GPU hosts refuse
def test_the_model_answer_runs_under_the_guard_untouched(tmp_path, monkeypatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    settings = grading.Settings(
        seed=7,
        backend="interpreter",
        timeout_s=120,
        memory_limit_bytes=4 << 30,
        case_filter=tuple(small_cases().split(",")),
    )
    record = grading.grade(intake.Submission("ada", "ada.py", ANSWER.encode()), settings, "ada")
    assert record["status"] == Status.PASSED, (record["message"], record["stderr"][-2000:])


@NEEDS_INTERPRETER  # these grade on the interpreter, which some GPU hosts refuse
def test_a_matrix_size_as_a_tile_size_is_a_mistake_named_and_drawn(tmp_path, monkeypatch):
    """rhs tiled with N itself: NineToothed's build simplifies the symbolic tile with sympy,
    whose polynomial rings exec monomial code. An honest slip, so graded and explained."""
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    settings = grading.Settings(
        seed=7,
        backend="interpreter",
        timeout_s=120,
        memory_limit_bytes=4 << 30,
        case_filter=tuple(small_cases().split(",")),
    )
    source = VARIANTS["tile_rhs_by_n"].source("tile_rhs_by_n")
    record = grading.grade(intake.Submission("tom", "tom.py", source.encode()), settings, "tom")
    assert record["status"] == Status.FAILED, (record["message"], record["stderr"][-2000:])
    assert record["findings"][0]["mistake"] == "size_for_count", record["findings"]
    assert record["arrangement"]["shape"] == [128, 256, 192]  # nonsquare, a public case
    assert record["arrangement"]["grids"]["rhs"] == [2, 1]
