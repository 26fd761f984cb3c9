"""The backend's check for an interpreter that cannot run, and who stops on it.

Triton 3.6.0's interpreter with numpy 2.4 fails every kernel with "only
0-dimensional arrays can be converted to Python scalars" (triton-lang/triton#9171).
The kit names that clash instead of grading every student as crashed.
"""

import pytest

from grader.batch import cli
from grader.batch.status import ExitCode
from grader.core import backend

OLD_INTERPRETER = 'scope.set_attr(tensor, "__index__", lambda self: int(self.handle.data))\n'
FIXED_INTERPRETER = (
    'scope.set_attr(tensor, "__index__", lambda self: int(self.handle.data.squeeze()))\n'
)


@pytest.fixture
def environment(monkeypatch):
    def set_up(numpy_refuses, source):
        monkeypatch.setattr(backend, "_numpy_refuses_one_element_ints", lambda: numpy_refuses)
        monkeypatch.setattr(backend, "_interpreter_source", lambda: source)

    return set_up


def test_old_triton_with_new_numpy_is_named_with_its_fix(environment):
    environment(True, OLD_INTERPRETER)
    problem = backend.interpreter_problem()
    assert "triton-lang/triton#9171" in problem and 'pip install "numpy<2.4"' in problem


@pytest.mark.parametrize(
    ("numpy_refuses", "source"),
    [
        (True, FIXED_INTERPRETER),  # a Triton with the fix
        (False, OLD_INTERPRETER),  # a numpy before 2.4
        (True, None),  # no triton installed: nothing to say here
    ],
)
def test_no_problem_without_both_halves_of_the_clash(environment, numpy_refuses, source):
    environment(numpy_refuses, source)
    assert backend.interpreter_problem() is None


def test_the_numpy_probe_reads_this_numpy():
    import numpy

    major, minor = (int(part) for part in numpy.__version__.split(".")[:2])
    assert backend._numpy_refuses_one_element_ints() == ((major, minor) >= (2, 4))


def test_the_batch_stops_before_grading_anyone(environment, monkeypatch, tmp_path, capsys):
    environment(True, OLD_INTERPRETER)
    monkeypatch.setenv(backend.ENV_VAR, "interpreter")
    (tmp_path / "class" / "ada").mkdir(parents=True)
    (tmp_path / "class" / "ada" / "ninetoothed_gemm.py").write_text("x = 1\n")
    code = cli.main(["grade", str(tmp_path / "class"), "--out", str(tmp_path / "book")])
    assert code == ExitCode.FAILURE
    assert "numpy<2.4" in capsys.readouterr().err
    assert not (tmp_path / "book" / "gradebook.csv").exists()


def _interpreter_builder():
    if not backend.activate().is_interpreter:
        pytest.skip("the overflow checks are the interpreter's: this run uses the GPU")
    from triton.runtime import interpreter

    return interpreter.interpreter_builder


def test_the_interpreter_skips_the_overflow_checks_nothing_enforces():
    options = _interpreter_builder().options
    assert options.debug is False and options.sanitize_overflow is False


@pytest.mark.parametrize("sanitize", [True, False])
def test_an_overflowing_kernel_computes_the_same_with_or_without_the_checks(monkeypatch, sanitize):
    """What skipping rests on: without debug, Triton's overflow check raises nothing and
    changes no value, so int32 products wrap as they do on a GPU either way."""
    import dataclasses

    import torch
    import triton
    import triton.language as tl

    builder = _interpreter_builder()
    monkeypatch.setattr(
        builder, "options", dataclasses.replace(builder.options, sanitize_overflow=sanitize)
    )

    @triton.jit
    def square(source, target, count: tl.constexpr):
        offsets = tl.arange(0, count)
        values = tl.load(source + offsets)
        tl.store(target + offsets, values * values + values)

    source = torch.tensor([3, 46341, 2**31 - 1, -(2**31)], dtype=torch.int32)
    target = torch.empty_like(source)
    square[(1,)](source, target, 4)
    wide = source.to(torch.int64)
    expected = ((wide * wide + wide + 2**31) % 2**32 - 2**31).to(torch.int32)
    assert torch.equal(target, expected)
