"""A GPU kernel run compiles each kernel once (grader.core.one_compile): Triton's binder,
as installed, gives every case's argument values the same pattern once the handle is
passed through ``compile_once``, and different patterns without it."""

import pytest
import torch
import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.compiler import make_backend
from triton.runtime.jit import JITFunction, create_function_from_signature

from grader.core.gpu_compile import Build
from grader.core.one_compile import compile_once, for_cases


def _kernel(pointer, size, stride, BLOCK: tl.constexpr):
    pass


class _Handle:
    """What ``ninetoothed.make`` returns, as far as compile_once looks."""

    def __init__(self, kernel):
        self._kernel = kernel


def _patterns(function):
    """The specialization Triton's binder gives each case-like set of arguments."""
    binder = create_function_from_signature(
        function.signature, function.params, make_backend(GPUTarget("cuda", 90, 32))
    )
    data = torch.empty(64, dtype=torch.float16)
    arguments = [(data, 1, 1), (data, 16, 32), (data, 17, 3), (data[1:], 17, 3)]
    return {str(binder(*values, BLOCK=16)[1]) for values in arguments}


def test_without_it_triton_compiles_a_kernel_once_per_pattern_of_values():
    assert len(_patterns(JITFunction(_kernel))) == 4


@pytest.mark.parametrize(
    "wrap",
    [
        lambda fn: fn,
        lambda fn: triton.autotune([triton.Config({})], key=[])(fn),
        lambda fn: triton.heuristics({})(fn),
    ],
    ids=["plain", "autotuned", "heuristics"],
)
def test_every_case_shares_one_compile_after_compile_once(wrap):
    function = JITFunction(_kernel)
    handle = _Handle(wrap(function))
    assert compile_once(handle) is handle
    assert len(_patterns(function)) == 1


@pytest.mark.parametrize("built, patterns", [(True, 1), (False, 4), (None, 4)])
def test_only_a_kernel_that_built_for_the_course_s_gpu_is_compiled_once(built, patterns):
    function = JITFunction(_kernel)
    build = None if built is None else Build("sm_90", built)
    for_cases(_Handle(function), build)
    assert len(_patterns(function)) == patterns
