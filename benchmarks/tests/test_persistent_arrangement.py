"""The persistent arrangement (benchmarks/lab/persistent_arrangement.py) covers every C tile once.

The shapes below give whole rows of P tiles, a last row only part full (with a
group padded past the last tile row), and programs with no tile at all. The
output starts as NaN: a tile no program computes shows up as wrong elements.
"""

import pytest

from benchmarks.lab import persistent_arrangement
from benchmarks.tests.test_reference_configs import assert_product, operands

# (m, n, k), (block_m, block_n, block_k, group, programs)
# Small: the interpreter runs a program's tiles one after another.
CASES = [
    ((50, 40, 40), (16, 16, 16, 2, 3)),  # 12 tiles in 4 whole rows of 3; sizes ragged
    ((40, 24, 20), (16, 16, 16, 2, 5)),  # a padded group, the last row of 5 part full
    ((16, 16, 16), (16, 16, 16, 1, 4)),
]  # one tile, three programs with none


@pytest.mark.parametrize("shape, config", CASES)
def test_persistent_arrangement_product(backend, shape, config):
    lhs, rhs = operands(*shape, backend.device)
    kernel = persistent_arrangement.persistent_kernel(*config, num_warps=4, num_stages=3)
    assert_product(kernel, lhs, rhs)


def test_flattened_loop_product(backend):
    lhs, rhs = operands(40, 24, 20, backend.device)
    kernel = persistent_arrangement.persistent_kernel(16, 16, 16, 2, 5, 4, 3, flatten=True)
    assert_product(kernel, lhs, rhs)
