"""Every configuration the tuned reference (solutions.tuned) can pick computes the right product.

The speed of these kernels is measured on a GPU (docs/perf-notes.md); here each one
runs on small ragged shapes, through the Triton interpreter on a CPU or compiled on a
GPU, its output poisoned with NaN first, so a tile the kernel never writes shows up
as a failure.
"""

import dataclasses

import pytest
import torch

from solutions.tuned import configs, kernels, persistent_tma, plan, waves


@pytest.fixture(scope="module")
def device(backend):
    return backend.device


def operands(m, n, k, device, seed=0):
    generator = torch.Generator().manual_seed(seed)
    lhs = torch.randn((m, k), generator=generator).half()
    rhs = torch.randn((k, n), generator=generator).half()
    return lhs.to(device), rhs.to(device)


def assert_product(run, lhs, rhs):
    output = torch.full(
        (lhs.shape[0], rhs.shape[1]), float("nan"), dtype=torch.float16, device=lhs.device
    )
    run(lhs, rhs, output)
    expected = lhs.float() @ rhs.float()
    error = (output.float() - expected).abs()
    assert bool((error <= 0.025 + 0.025 * expected.abs()).all()), (
        f"{int((~(error <= 0.025 + 0.025 * expected.abs())).sum())} wrong elements"
    )


def shipped_configs(device="cpu"):
    """The candidates the tuner may time; on the interpreter, each tiling once.

    Warps, stages and warp specialisation change nothing on the interpreter, so there
    configurations that differ only in those are run once. A GPU compiles and runs
    every one.
    """

    def tiling(config):
        if device != "cpu":
            return config
        tail = config.tail and tiling(config.tail)
        return dataclasses.replace(
            config, num_warps=4, num_stages=3, tail=tail, warp_specialize=False
        )

    return list({tiling(config): config for config in configs.EVERY_CONFIG}.values())


def test_every_shipped_configuration_is_correct_on_ragged_shapes(device):
    # M, N and K all off the tile grid; K = 72 leaves a partial K tile for BK = 64.
    lhs, rhs = operands(130, 140, 72, device)
    for config in shipped_configs(device):
        if config.tail is not None or config.persistent:
            continue  # wave splits and persistent kernels: tests of their own below
        assert_product(kernels.tuned_kernel(config), lhs, rhs)


@pytest.mark.parametrize(("sms", "split"), [(2, 384), (5, 256)])
def test_wave_splits_cover_every_row(device, monkeypatch, sms, split):
    """The split point moves with the SM count; rows on either side of it are all computed.

    392 x 264 in 128x256 tiles is 4 x 2 tiles: on 2 SMs the first 3 tile rows fill
    whole waves, on 5 SMs the first 2; the tail gets 8 or 136 rows.
    """
    monkeypatch.setattr(waves, "sm_count", lambda device: sms)
    lhs, rhs = operands(392, 264, 72, device, seed=sms)
    splits = [config for config in shipped_configs(device) if config.tail is not None]
    assert splits, "the reference ships no wave split"
    for config in splits:
        assert waves.whole_wave_rows(392, 264, config.block_m, config.block_n, sms) == split
        assert_product(kernels.tuned_kernel(config), lhs, rhs)


@pytest.mark.parametrize(
    ("m", "n", "block_m", "block_n", "sms", "rows"),
    [
        (3000, 3000, 128, 256, 132, 2816),  # 288 tiles: two whole waves, 22 tile rows of 128
        (3000, 3000, 256, 128, 132, 2816),
        (2500, 2500, 128, 256, 132, 1664),  # 200 tiles: one wave of 13 rows
        (1000, 1000, 128, 256, 132, 0),  # 32 tiles: not even one wave
        (4096, 4096, 128, 256, 132, 3072),  # 512 tiles: 3 waves of 8.25 tile rows -> 24 rows
        (384, 256, 128, 256, 1, 256),  # never all the rows: the tail keeps at least one
    ],
)
def test_whole_wave_rows(m, n, block_m, block_n, sms, rows):
    assert waves.whole_wave_rows(m, n, block_m, block_n, sms) == rows


@pytest.mark.parametrize(
    ("m", "n", "k", "offered", "withheld"),
    [
        (3072, 3072, 3072, "waves", "flat"),  # 288 tiles on 132 SMs: the last wave 18% full
        (2560, 2560, 2560, "", "waves"),  # 200 tiles: the last wave 52% full, the split lost
        (4096, 4096, 4096, "", "waves"),  # 512 tiles: 3.9 waves
        (3000, 3000, 3000, "flat-t", "waves"),  # ragged: flat kernels, no split
        (4096, 3000, 4096, "flat-t", "waves"),
        (4096, 4096, 3000, "flat ", "flat-t"),  # a ragged K alone: the rhs rows are aligned
        (6144, 1024, 4096, "128x128x64", "waves"),  # 192 tiles of 128x256: the last wave 45% full
        (4096, 4096, 4096, "", "128x128x64"),  # 512 tiles: the last wave 88% full
        (2048, 2048, 2048, "", "128x128x64"),  # 128 tiles: one wave
        (3000, 3000, 3000, "", "128x128x64"),  # ragged: the flat kernels' own tables
        (4096, 4096, 4096, "persistent-tma 128x256x64", "persistent-tma 128x128x64"),
        (6144, 1024, 4096, "persistent-tma 128x128x64", "waves"),
        (3000, 3000, 3000, "flat-t", "persistent-tma"),  # ragged: rows TMA reads, but flat wins
        (4096, 4096, 3000, "flat ", "persistent-tma"),
    ],
)
def test_candidates_per_shape(monkeypatch, m, n, k, offered, withheld):
    """Which kinds of kernel the tuner times, on an H200's 132 SMs."""
    monkeypatch.setattr(waves, "sm_count", lambda device: 132)
    monkeypatch.setattr(waves, "has_tma", lambda device: True)
    lhs = torch.empty((m, k), dtype=torch.float16, device="meta")
    rhs = torch.empty((k, n), dtype=torch.float16, device="meta")
    names = [config.name for config in plan.candidates(lhs, rhs)]
    assert not offered or any(name.startswith(offered) for name in names), names
    assert not any(name.startswith(withheld) for name in names), names


@pytest.mark.parametrize(
    ("tiles", "share"), [(288, 24 / 132), (264, 1.0), (100, 1.0), (200, 68 / 132)]
)
def test_last_wave_share(tiles, share):
    assert waves.last_wave_share(tiles * 128, 256, 128, 256, 132) == pytest.approx(share)


def test_a_transposed_kernel_tiles_c_transposed(monkeypatch):
    """flat-t 256x128 names C's tile: the kernel tiles C^T, so its block_size_m is 128.

    The product is right either way round, so only the arguments can tell.
    """
    made = []
    monkeypatch.setattr(
        kernels.ninetoothed, "make", lambda arrange, *args, **options: made.append(arrange.keywords)
    )
    kernels.tuned_kernel.cache_clear()
    try:
        kernels.tuned_kernel(configs.TileConfig(256, 128, 64, 8, 8, 4, flat=True, transposed=True))
        kernels.tuned_kernel(configs.TileConfig(256, 128, 64, 8, 8, 4, flat=True))
    finally:
        kernels.tuned_kernel.cache_clear()
    assert [(k["block_size_m"], k["block_size_n"]) for k in made] == [(128, 256), (256, 128)]


def test_a_transposed_config_must_be_flat():
    with pytest.raises(ValueError, match="flat"):
        configs.TileConfig(256, 128, 64, 8, 8, 4, transposed=True)


@pytest.mark.parametrize(
    ("m", "n", "pays"),
    [
        (3072, 3072, True),  # 288 tiles, 264 of them in 22 whole rows
        (256, 17920, False),  # 2 rows of 70 tiles: one whole row fills 70 of 132 SMs
        (2560, 2560, False),  # the last wave 52% full
        (1024, 1024, False),  # under one wave
    ],
)
def test_the_wave_split_is_offered_only_where_it_fills_the_waves(m, n, pays):
    config = configs.WAVE_SPLIT_CONFIGS[0]
    assert waves.wave_split_pays(m, n, config, 132) == pays


@pytest.mark.parametrize(
    ("has_tma", "column_major"),
    [
        (False, False),  # a GPU before compute capability 9.0
        (True, True),  # rhs column-major: its rows are not contiguous
    ],
)
def test_no_persistent_candidate_where_tma_cannot_load(monkeypatch, has_tma, column_major):
    monkeypatch.setattr(waves, "sm_count", lambda device: 132)
    monkeypatch.setattr(waves, "has_tma", lambda device: has_tma)
    lhs = torch.empty((4096, 4096), dtype=torch.float16, device="meta")
    rhs = torch.empty((4096, 4096), dtype=torch.float16, device="meta")
    names = [config.name for config in plan.candidates(lhs, rhs.t() if column_major else rhs)]
    assert names and not any("persistent" in name for name in names), names


# (m, n, k): rows of whole 16-byte units; 2 x 2 tiles of 128x256 on 3 SMs, so a program
# walks two tiles and the last round is part full; 128x128 tiles: 2 x 3 on 3 SMs.
ALIGNED = (136, 272, 80)


def test_persistent_configurations_run_their_tma_kernel(tma_ready, device, monkeypatch):
    """Aligned operands take the persistent kernel itself, not the grouped fallback."""
    monkeypatch.setattr(waves, "sm_count", lambda device: 3)
    launched = []
    original = persistent_tma.unchecked_launcher
    monkeypatch.setattr(
        persistent_tma,
        "unchecked_launcher",
        lambda *args, **options: launched.append(args) or original(*args, **options),
    )
    lhs, rhs = operands(*ALIGNED, device)
    persistent = [config for config in shipped_configs(device) if config.persistent]
    assert persistent, "the reference ships no persistent configuration"
    for config in persistent:
        assert_product(kernels.tuned_kernel(config), lhs, rhs)
    assert [args[5] for args in launched] == [3] * len(persistent)


def test_a_view_tma_would_misread_runs_the_grouped_kernel(device, monkeypatch):
    """A plan is kept per shape and strides: a view starting off a 16-byte boundary, with
    the strides of an aligned one, must still get the right product."""
    monkeypatch.setattr(persistent_tma, "unchecked_launcher", None)  # calling it fails
    m, n, k = ALIGNED
    wide, rhs = operands(m, n, k + 8, device)
    lhs = wide[:, 1 : k + 1]  # 2 bytes past a boundary, rows of k + 8 halves
    rhs = rhs[:k]
    assert persistent_tma.tma_rows_problem(lhs, rhs, torch.empty((m, n), dtype=torch.float16))
    for config in shipped_configs(device):
        if config.persistent:
            assert_product(kernels.tuned_kernel(config), lhs, rhs)


@pytest.mark.parametrize(
    "options",
    [
        dict(persistent=True, flat=True),
        dict(persistent=True, pad_n=True),
        dict(persistent=True, tail=configs.TileConfig(64, 128, 64, 1, 4, 4)),
    ],
)
def test_a_persistent_config_takes_its_operands_as_they_are(options):
    with pytest.raises(ValueError, match="persistent TileConfig"):
        configs.TileConfig(128, 256, 64, 8, 8, 3, **options)


def test_warp_specialisation_needs_a_persistent_config():
    with pytest.raises(ValueError, match="warp_specialize needs persistent"):
        configs.TileConfig(128, 256, 64, 8, 8, 3, warp_specialize=True)
