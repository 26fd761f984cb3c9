"""Run a submission on one case and hand back what it produced. This runs student code.

The outputs go to grader.core.checks.judge, in the same process for the pytest grader,
or through a file to a parent that never runs student code for the batch grader.
"""

import ninetoothed
import torch
from ninetoothed import Tensor

from grader.core import cases as catalogue
from grader.core import retile
from grader.core.checks import make_inputs
from grader.core.layout import launch_mismatch

_own_kernels = {}


def own_kernel(module, blocks=None):
    """The submission's arrangement and application built into a kernel by the grader,
    as the skeleton builds it or with ``blocks`` as its tiles (grader.core.retile).

    Lets the coverage check hand the kernel an output it filled itself, whatever
    the submission's wrapper allocates, and the cases at other block sizes run the
    kernel the file makes at those sizes.
    """
    key = (id(module), blocks)
    if key not in _own_kernels:
        _own_kernels[key] = (
            retile.make(module, blocks)
            if blocks
            else ninetoothed.make(
                module.arrangement, module.application, (Tensor(2), Tensor(2), Tensor(2))
            )
        )
    return _own_kernels[key]


class NotLaunched(Exception):
    """A case failed before its launch: the arranged tensors cannot line up at its shape,
    or the file lays out its own tiles whatever block sizes the case builds it at."""


def produce(case, module, seed, device):
    """Call the submission as the case asks; return its outputs keyed by role."""
    arranged = module
    if case.blocks:
        refused = retile.refusal(module, case.blocks)
        if refused:
            raise NotLaunched(refused)
        arranged = retile.retiled(module, case.blocks)
    mismatch = launch_mismatch(arranged, case.shape)
    if mismatch:
        raise NotLaunched(mismatch)
    lhs, rhs = make_inputs(case, seed, device)
    if case.check == catalogue.DETERMINISM:
        return {"first": module.nt_gemm(lhs, rhs), "second": module.nt_gemm(lhs, rhs)}
    if case.check == catalogue.COVERAGE:
        out = torch.full((case.m, case.n), float("nan"), dtype=torch.float16, device=device)
        own_kernel(module)(lhs, rhs, out)
        return {"prefilled": out}
    if case.blocks:
        out = torch.full((case.m, case.n), float("nan"), dtype=torch.float16, device=device)
        own_kernel(module, case.blocks)(lhs, rhs, out)
        return {"out": out}
    return {"out": module.nt_gemm(lhs, rhs)}


def scrub(outputs):
    """Overwrite judged outputs with NaN before they are freed.

    A later allocation in the same process may reuse their memory; a kernel that
    leaves part of its output unwritten must then find NaN there, never an old
    right answer.
    """
    for value in outputs.values():
        if isinstance(value, torch.Tensor) and value.is_floating_point():
            value.detach().fill_(float("nan"))
