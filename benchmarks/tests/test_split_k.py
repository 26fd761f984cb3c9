"""Split-K (benchmarks/lab/split_k.py) computes C = A @ B, alone and after a wave split.

The chunks are cut from each row of K tiles, so a K that ends inside a chunk, or
a chunk count that leaves the last chunk short, must still sum to the product.
"""

import pytest

from benchmarks.lab import split_k
from benchmarks.tests.test_reference_configs import assert_product, operands
from solutions.tuned import configs, kernels, waves

# (m, n, k), (block_m, block_n, block_k, chunk): K tiles 13, 9 and 2 in chunks of 2, 3 and 5.
CASES = [
    ((100, 72, 200), (32, 32, 16, 2)),
    ((70, 50, 130), (16, 32, 16, 3)),
    ((40, 24, 24), (16, 16, 16, 5)),
]


@pytest.mark.parametrize("shape, config", CASES)
def test_split_k_product(backend, shape, config):
    lhs, rhs = operands(*shape, backend.device)
    assert_product(split_k.split_k(*config, 4, 3), lhs, rhs)


def test_wave_split_with_split_k_product(backend, monkeypatch):
    monkeypatch.setattr(waves, "sm_count", lambda device: 4)
    lhs, rhs = operands(90, 40, 70, backend.device)
    main = kernels.tuned_kernel(configs.TileConfig(32, 32, 16, 1, 4, 3, flat=True))
    # 3 tile rows x 2 tile columns on 4 SMs: one whole wave (2 tile rows), then 26 rows.
    run = kernels.wave_split(main, split_k.split_k(16, 16, 16, 2, 4, 3), 32, 32)
    assert_product(run, lhs, rhs)
