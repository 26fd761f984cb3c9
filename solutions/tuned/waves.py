"""How a grid of C tiles fills the GPU's SMs, one program per SM at a time.

The wave split (``kernels.wave_split``) runs the rows of C that fill whole waves
in one launch and the rest in smaller tiles; these say where to split and whether
it is worth a candidate. Callers read the SM count as ``waves.sm_count`` at call
time, so a test can stand in any GPU.
"""

import functools

import torch

from solutions.tuned import configs


@functools.cache
def sm_count(device):
    return torch.cuda.get_device_properties(device).multi_processor_count


@functools.cache
def has_tma(device):
    """Whether the GPU loads tiles through tensor descriptors (compute capability 9.0 on)."""
    return torch.cuda.get_device_capability(device) >= (9, 0)


@functools.cache
def whole_wave_rows(m, n, block_m, block_n, sms):
    """How many rows of C fill whole waves of (block_m, block_n) tiles on ``sms`` SMs.

    At most all but the last row of tiles, so that the tail launch has rows left.
    """
    tiles_per_row = cdiv(n, block_n)
    waves = cdiv(m, block_m) * tiles_per_row // sms
    rows = min(waves * sms // tiles_per_row, cdiv(m, block_m) - 1)
    return max(rows, 0) * block_m


def last_wave_share(m, n, block_m, block_n, sms):
    """How full the grid's last wave of SMs is, one program per SM at a time.

    1 when the tiles fill whole waves; 0.18 for 288 tiles on 132 SMs. Grids of
    less than one wave are left alone (1): there is no whole wave to split off.
    """
    tiles = cdiv(m, block_m) * cdiv(n, block_n)
    if tiles <= sms or tiles % sms == 0:
        return 1.0
    return (tiles % sms) / sms


def wave_split_pays(m, n, config, sms):
    """Whether the grid's last wave is nearly empty and the split fills the waves before it.

    Whole rows of tiles must cover at least 90% of the whole waves: with rows of
    many tiles (256 x 17920 has 70 a row) they cannot, and the split only adds a launch.
    """
    if last_wave_share(m, n, config.block_m, config.block_n, sms) >= configs.LAST_WAVE_SPLIT_BELOW:
        return False
    tiles_per_row = cdiv(n, config.block_n)
    whole_waves = cdiv(m, config.block_m) * tiles_per_row // sms
    rows = whole_wave_rows(m, n, config.block_m, config.block_n, sms) // config.block_m
    return rows * tiles_per_row >= 0.9 * whole_waves * sms


def smaller_tiles_pay(m, n, sms):
    """Whether the large tiles leave the last wave partly empty and 128x128 tiles fill it
    better: then the tuner times them too."""
    large, smaller = configs.LARGE_CONFIGS[0], configs.WAVE_TILE_CONFIGS[0]
    share = last_wave_share(m, n, large.block_m, large.block_n, sms)
    return (
        share < configs.SMALLER_TILES_BELOW
        and last_wave_share(m, n, smaller.block_m, smaller.block_n, sms) > share
    )


def cdiv(a, b):
    return -(-a // b)
