"""The TMA kernels of the exploration script compute C = A @ B, or refuse to run.

benchmarks/lab/tma_kernels.py (NineToothed) and benchmarks/lab/triton_ceiling.py (plain
Triton, persistent and Stream-K) need tensor-memory-accelerator loads, so a GPU of
compute capability 9.0 or later; they are exploration kernels, left without the
interpreter's mend that the shipped persistent kernel's tests use (conftest.py).
TMA reads rows wrong when they are not whole 16-byte units (K = 130 gave 59,248
wrong elements on an H200), so the launchers refuse such operands, and any dtype
but float16, before they launch anything.
"""

import pytest
import torch

from benchmarks.lab import tma_kernels, triton_ceiling
from benchmarks.tests.test_reference_configs import assert_product, operands
from solutions.tuned.persistent_tma import require_tma_rows, use_torch_scratch

# Rows of whole 16-byte units (multiples of 8 halves); all but 64^3 ragged against the tiles.
SHAPES = [(300, 200, 136), (129, 264, 3000), (64, 64, 64), (1000, 1000, 1000)]

needs_tma = pytest.mark.skipif(
    not (torch.cuda.is_available() and torch.cuda.get_device_capability() >= (9, 0)),
    reason="TMA loads need a GPU of compute capability 9.0 or later",
)


@pytest.fixture(scope="module")
def scratch():
    use_torch_scratch()


def launchers():
    sms = (
        torch.cuda.get_device_properties(0).multi_processor_count
        if torch.cuda.is_available()
        else 1
    )
    return {
        "ninetoothed": lambda: tma_kernels.nt_tma(128, 128, 64, 4, 3),
        "persistent": lambda: triton_ceiling.persistent_tma(128, 128, 64, 4, 3, False, sms),
        "persistent-ws": lambda: triton_ceiling.persistent_tma(128, 128, 64, 4, 3, True, sms),
        "stream-k": lambda: triton_ceiling.stream_k(128, 256, 64, 8, 3, sms, 2, 2),
    }


@needs_tma
@pytest.mark.parametrize("kernel", ["ninetoothed", "persistent", "persistent-ws", "stream-k"])
@pytest.mark.parametrize("m, n, k", SHAPES)
def test_tma_kernel_product(scratch, kernel, m, n, k):
    lhs, rhs = operands(m, n, k, "cuda")
    assert_product(launchers()[kernel](), lhs, rhs)


@pytest.mark.parametrize("m, n, k, name", [(64, 64, 130, "lhs"), (64, 257, 64, "rhs")])
def test_rows_tma_cannot_read_are_refused(m, n, k, name):
    lhs, rhs = operands(m, n, k, "cpu")
    output = torch.empty((m, n), dtype=torch.float16)
    with pytest.raises(ValueError, match=f"^{name}: TMA loads need contiguous rows"):
        require_tma_rows(lhs, rhs, output)


def test_other_dtypes_are_refused():
    lhs, rhs = operands(64, 64, 64, "cpu")
    with pytest.raises(ValueError, match="^lhs: the TMA kernels take float16"):
        require_tma_rows(lhs.float(), rhs, torch.empty((64, 64), dtype=torch.float16))


def test_aligned_rows_pass_the_check():
    lhs, rhs = operands(64, 264, 3000, "cpu")
    require_tma_rows(lhs, rhs, torch.empty((64, 264), dtype=torch.float16))


@pytest.mark.parametrize("kernel", ["ninetoothed", "persistent"])
def test_launchers_refuse_before_launching(backend, kernel):
    """No GPU needed: the check runs before anything is launched."""
    lhs, rhs = operands(64, 64, 130, "cpu")
    with pytest.raises(ValueError, match="^lhs: TMA loads need contiguous rows"):
        launchers()[kernel]()(lhs, rhs, torch.empty((64, 64), dtype=torch.float16))
