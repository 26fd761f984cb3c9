"""The persistent TMA kernel (solutions/tuned/persistent_tma.py) covers every C tile once.

The cases give one whole round of P tiles, a part-full last round (with a last
group of fewer than GROUP_M tile rows and tiles cut by the matrix edge), and
programs with no tile at all. The output starts as NaN: a tile no program
stores shows up as wrong elements.

The interpreter needs a mend to run NineToothed's descriptors (conftest.py,
``tma_ready``).
"""

import pytest
import torch

from benchmarks.tests.test_reference_configs import assert_product, operands
from solutions.tuned import persistent_tma

# (m, n, k), (block_m, block_n, block_k, group, programs); rows of whole 16-byte units.
# Small: the interpreter runs the programs one after another.
CASES = [
    ((64, 64, 64), (32, 32, 32, 1, 4)),  # 4 tiles, one whole round
    ((96, 80, 48), (32, 32, 32, 2, 4)),  # 3x3 tiles: rounds of 4, 4, 1; groups of 2, 1
    ((96, 80, 48), (32, 32, 32, 2, 16)),
]  # 9 tiles, 7 programs with none
FLAGS = [(True, False), (False, False), (True, True), (False, True)]  # (flatten, warp_specialize)


@pytest.mark.parametrize("flatten, warp_specialize", FLAGS)
@pytest.mark.parametrize("shape, config", CASES)
def test_persistent_tma_product(backend, tma_ready, shape, config, flatten, warp_specialize):
    lhs, rhs = operands(*shape, backend.device)
    block_m, block_n, block_k, group, programs = config
    run = persistent_tma.nt_persistent_tma(
        block_m, block_n, block_k, 4, 3, programs, group, flatten, warp_specialize
    )
    assert_product(run, lhs, rhs)


@pytest.mark.parametrize("flatten, warp_specialize", FLAGS[::2])
@pytest.mark.parametrize("m, n, k", [(300, 200, 136), (129, 264, 3000), (1000, 1000, 1000)])
def test_persistent_tma_product_on_the_gpu(backend, tma_ready, m, n, k, flatten, warp_specialize):
    """Exploration-sized tiles, one program per SM: too slow for the interpreter."""
    if backend.is_interpreter:
        pytest.skip("128x128 tiles over hundreds of rows: GPU only")
    lhs, rhs = operands(m, n, k, "cuda")
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    assert_product(
        persistent_tma.nt_persistent_tma(128, 128, 64, 4, 3, sms, 8, flatten, warp_specialize),
        lhs,
        rhs,
    )


def test_launcher_refuses_rows_tma_cannot_read(backend):
    """No kernel runs: the check comes first."""
    lhs, rhs = operands(64, 64, 130, "cpu")
    run = persistent_tma.nt_persistent_tma(32, 32, 32, 4, 3, 4)
    with pytest.raises(ValueError, match="^lhs: TMA loads need contiguous rows"):
        run(lhs, rhs, torch.empty((64, 64), dtype=torch.float16))
