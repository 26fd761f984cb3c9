"""The Stream-K kernel (benchmarks/lab/stream_k.py) computes every C tile once, whole.

The cases give shared tiles that one program finishes alone, tiles that two or
more programs' ranges cover (so partials are handed over), ranges shorter than one
tile, programs with no range at all, and tiles that fill whole waves (nothing
shared). The output starts as NaN, and the flags must be all zeros after each launch.
"""

import pytest
import torch

from benchmarks.tests.test_reference_configs import assert_product, operands
from benchmarks.lab import stream_k

# (m, n, k), (block_m, block_n, block_k, group, programs, sk_waves); rows of whole
# 16-byte units. Small: the interpreter runs the programs one after another.
CASES = [
    ((96, 64, 96), (32, 32, 32, 2, 4, 1)),  # 6 tiles on 4: 4 whole, 2 shared by 3 steps
    ((96, 64, 96), (32, 32, 32, 2, 4, 2)),  # 6 tiles, all shared: 18 steps in ranges of 5
    ((96, 80, 48), (32, 32, 32, 2, 4, 1)),  # 9 tiles: 8 whole, 1 tile of 2 steps on 4
    ((64, 64, 160), (32, 32, 32, 1, 3, 1)),  # 4 tiles on 3: 3 whole, 5 steps in ranges of 2
    ((64, 64, 64), (32, 32, 32, 1, 4, 2)),  # 4 tiles on 4: whole waves, nothing shared
    ((96, 64, 96), (32, 32, 32, 2, 4, 0)),  # SK_WAVES 0: 6 tiles on 4, none shared
    ((40, 72, 136), (32, 32, 32, 2, 5, 2)),  # cut tiles, a ragged K step: 6 tiles on 5
]


@pytest.mark.parametrize("store_split", [1, 2])
@pytest.mark.parametrize("shape, config", CASES)
def test_stream_k_product(backend, tma_ready, shape, config, store_split):
    lhs, rhs = operands(*shape, backend.device)
    block_m, block_n, block_k, group, programs, sk_waves = config
    run = stream_k.nt_stream_k(
        block_m, block_n, block_k, 4, 3, programs, group, sk_waves, store_split
    )
    assert_product(run, lhs, rhs)
    _, flags = stream_k.scratch(lhs.device, current_stream(lhs), block_m, block_n, programs)
    assert not bool(flags.any()), "a flag was left raised"


@pytest.mark.parametrize("sk_waves, store_split", [(1, 1), (2, 2)])
@pytest.mark.parametrize("m, n, k", [(6144, 1024, 4096), (3000, 3000, 3000), (1000, 1000, 1000)])
def test_stream_k_product_on_the_gpu(backend, tma_ready, m, n, k, sk_waves, store_split):
    """The exploration's tiles, one program per SM, 20 launches in a row: too slow for the
    interpreter. A hand-over that raced would show up as a wrong tile in some launch."""
    if backend.is_interpreter:
        pytest.skip("128x256 tiles over thousands of rows: GPU only")
    lhs, rhs = operands(m, n, k, "cuda")
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    run = stream_k.nt_stream_k(128, 256, 64, 8, 3, sms, 8, sk_waves, store_split)
    for _ in range(20):
        assert_product(run, lhs, rhs)


def test_launcher_refuses_rows_tma_cannot_read(backend):
    """No kernel runs: the check comes first."""
    lhs, rhs = operands(64, 64, 130, "cpu")
    run = stream_k.nt_stream_k(32, 32, 32, 4, 3, 4)
    with pytest.raises(ValueError, match="^lhs: TMA loads need contiguous rows"):
        run(lhs, rhs, torch.empty((64, 64), dtype=torch.float16))


def current_stream(tensor):
    return torch.cuda.current_stream(tensor.device).stream_id if tensor.is_cuda else 0
