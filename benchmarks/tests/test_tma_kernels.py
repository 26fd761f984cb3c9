"""The TMA kernels of the exploration script (benchmarks/tma_kernels.py) compute C = A @ B.

They need tensor-memory-accelerator loads, so a GPU of compute capability 9.0 or
later. The Triton interpreter cannot stand in: it passes the block sizes of a
NineToothed kernel to ``make_tensor_descriptor`` as tensors, which it refuses.
"""

import pytest
import torch

from benchmarks.tests.test_reference_configs import assert_product, operands

SHAPES = [(300, 200, 130), (129, 257, 3000), (64, 64, 64), (1000, 1000, 1000)]


def _tma_gpu():
    return torch.cuda.is_available() and torch.cuda.get_device_capability() >= (9, 0)


pytestmark = pytest.mark.skipif(not _tma_gpu(),
                                reason="TMA loads need a GPU of compute capability 9.0 or later")


@pytest.fixture(scope="module")
def tma_kernels():
    from benchmarks import tma_kernels

    tma_kernels.use_torch_scratch(torch)
    return tma_kernels


@pytest.mark.parametrize("m, n, k", SHAPES)
def test_ninetoothed_tma_kernel(tma_kernels, m, n, k):
    lhs, rhs = operands(m, n, k, "cuda")
    assert_product(tma_kernels.nt_tma(128, 128, 64, 4, 3), lhs, rhs)


@pytest.mark.parametrize("warp_specialize", [False, True])
@pytest.mark.parametrize("m, n, k", SHAPES)
def test_persistent_tma_kernel(tma_kernels, m, n, k, warp_specialize):
    lhs, rhs = operands(m, n, k, "cuda")
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    assert_product(tma_kernels.persistent_tma(128, 128, 64, 4, 3, warp_specialize, sms), lhs, rhs)
