"""What the tuner may run: TileConfig, and the candidates per size class.

The tables come from H200 measurements (docs/perf-notes.md). Each list is short:
every entry costs a compile per Triton specialisation and a timing per new shape.
``plan.candidates`` picks the lists that fit a shape.
"""

import dataclasses


@dataclasses.dataclass(frozen=True)
class TileConfig:
    """One candidate: C's tile and K step, program order, warps, stages, kernel kind."""

    block_m: int
    block_n: int
    block_k: int
    group_size_m: int
    num_warps: int
    num_stages: int
    flat: bool = False  # operands passed flat to a flat_arrangement kernel
    pad_n: bool = False  # strided kernel on a copy of rhs whose N is padded to a multiple of 16
    transposed: bool = False  # flat kernel computing C^T = B^T A^T, C's tiles as named
    # A wave split: this config runs the rows of C that fill whole waves of the
    # SMs, and ``tail`` (a smaller tile) runs the rows left over.
    tail: "TileConfig | None" = None
    # One program per SM walking its tiles, loaded through TMA (persistent_tma);
    # operands TMA cannot read go to the grouped kernel of the same tiles.
    persistent: bool = False
    warp_specialize: bool = False  # a persistent kernel's tile loop, warp-specialised

    def __post_init__(self):
        if self.transposed and not self.flat:
            raise ValueError(
                "a transposed TileConfig needs flat=True: only flat kernels swap roles"
            )
        if self.persistent and (self.flat or self.pad_n or self.tail):
            raise ValueError(
                "a persistent TileConfig takes its operands as they are: "
                "not flat, padded or wave-split"
            )
        if self.warp_specialize and not self.persistent:
            raise ValueError(
                "warp_specialize needs persistent=True: only the persistent "
                "kernel has a tile loop to specialise"
            )

    @property
    def name(self):
        kind = (
            ("flat-t " if self.transposed else "flat " if self.flat else "")
            + ("pad-n " if self.pad_n else "")
            + ("persistent-tma " if self.persistent else "")
        )
        name = (
            f"{kind}{self.block_m}x{self.block_n}x{self.block_k} "
            f"g{self.group_size_m} {self.num_warps}w{self.num_stages}s"
            + (" ws" if self.warp_specialize else "")
        )
        return f"waves {name} + tail {self.tail.name}" if self.tail else name


# The size classes, by 2*M*N*K.
LARGE_FLOPS = 2 * 1536**3
SMALL_FLOPS = 2 * 640**3  # up to 512^3: launch-bound on an H200, the plain grid is as fast
# Within 2-3% of each other from 2048^3 to 8192^3; which one wins moves with the shape.
LARGE_CONFIGS = (
    TileConfig(128, 256, 64, 8, 8, 3),
    TileConfig(128, 256, 64, 8, 8, 4),
    TileConfig(128, 256, 64, 16, 8, 3),
    TileConfig(128, 256, 64, 16, 8, 4),
)
MEDIUM_CONFIGS = (
    TileConfig(64, 128, 64, 8, 4, 4),
    TileConfig(128, 128, 64, 8, 4, 4),
    TileConfig(64, 64, 64, 8, 4, 3),
)
# Launch-bound: nothing worth timing; the plain grid (g1) has the leanest launcher.
SMALL_CONFIGS = (TileConfig(64, 64, 64, 1, 4, 3),)
# Extra candidates when K or N is not a multiple of 16 and the operands are
# contiguous (the flat kernels compile once per shape).
LARGE_FLAT_CONFIGS = (
    TileConfig(128, 256, 64, 8, 8, 3, flat=True),
    TileConfig(128, 128, 64, 8, 8, 3, flat=True),
)
MEDIUM_FLAT_CONFIGS = (TileConfig(64, 128, 64, 8, 4, 4, flat=True),)
# A ragged N: the same tiles with the operands' roles swapped (C^T = B^T A^T).
# Rows of a length like 3000 cost little on the lhs side of a dot and much on the
# rhs side (docs/perf-notes.md, round 4); swapping puts rhs on the lhs side.
RAGGED_N_FLAT_CONFIGS = (
    TileConfig(256, 128, 64, 8, 8, 3, flat=True, transposed=True),
    TileConfig(256, 128, 64, 8, 8, 4, flat=True, transposed=True),
)
# A ragged N over an aligned K: the strided kernel on a padded copy of rhs has no
# cliff left; the copy is part of what the tuner times.
PADDED_N_CONFIGS = (
    TileConfig(128, 256, 64, 8, 8, 3, pad_n=True),
    TileConfig(128, 256, 64, 8, 8, 4, pad_n=True),
)
# An aligned grid whose last wave is nearly empty (3072^3: 288 tiles of 128x256 on
# 132 SMs, the third wave 18% full): whole waves of 128x256 tiles, then the rows
# left over in 64x128 tiles. The main kernel runs in plain row order: a group size
# would have to divide its number of tile rows.
WAVE_SPLIT_CONFIGS = (TileConfig(128, 256, 64, 1, 8, 3, tail=TileConfig(64, 128, 64, 1, 4, 4)),)
LAST_WAVE_SPLIT_BELOW = 0.25  # the split is tried when the last wave is less full than this
# An aligned grid whose 128x256 tiles leave the last wave partly empty (6144x1024x4096:
# 192 tiles on 132 SMs, the second wave 45% full): in 128x128 tiles the same product
# is 384 tiles, its third wave 91% full. On the H200 (round 6) that ran in 97.7 us
# against 99.3 us: fuller waves of tiles that feed the tensor cores less (64 FLOP per
# byte loaded against 85) nearly cancel out, so the tuner times both. 64x256 and
# 256x128 tiles lost at every shape tried.
WAVE_TILE_CONFIGS = (
    TileConfig(128, 128, 64, 8, 8, 3),
    TileConfig(128, 128, 64, 8, 4, 3),
)
SMALLER_TILES_BELOW = 0.6  # offered when the 128x256 grid's last wave is less full than this
# Aligned operands on a GPU with TMA (compute capability 9.0 on): one program per SM
# walking its tiles, loaded by the hardware. On an H100 (round 7) 128x256 tiles ran
# 8192^3 at 661-686 TFLOPS, the grid of one program per tile at 636-649; which of the
# two loops (warp-specialised or not) won moved from run to run. 128x256 with 4 stages
# does not fit an H100's shared memory.
PERSISTENT_CONFIGS = (
    TileConfig(128, 256, 64, 8, 8, 3, persistent=True),
    TileConfig(128, 256, 64, 8, 8, 3, persistent=True, warp_specialize=True),
)
# Where the 128x256 grid leaves its last wave partly empty (WAVE_TILE_CONFIGS' rule):
# 6144x1024x4096 ran at 585-591 TFLOPS in persistent 128x128 tiles (0.88-0.90x), against
# 538 (0.81x); warp-specialised, it was no faster.
PERSISTENT_WAVE_TILE_CONFIGS = (TileConfig(128, 128, 64, 8, 4, 4, persistent=True),)
EVERY_CONFIG = (
    LARGE_CONFIGS
    + MEDIUM_CONFIGS
    + SMALL_CONFIGS
    + LARGE_FLAT_CONFIGS
    + MEDIUM_FLAT_CONFIGS
    + RAGGED_N_FLAT_CONFIGS
    + PADDED_N_CONFIGS
    + WAVE_SPLIT_CONFIGS
    + WAVE_TILE_CONFIGS
    + PERSISTENT_CONFIGS
    + PERSISTENT_WAVE_TILE_CONFIGS
)
