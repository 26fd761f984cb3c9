"""The tuned reference's kernels: how far NineToothed goes on one GPU (NINETOOTHED_AUTOTUNE=1).

solutions/tuned_gemm.py selects them; the model answer (solutions/ninetoothed_gemm.py)
stays what a student writes. The course default gives each program a 64x64 tile and
64-wide K steps: 32 FLOP per byte it loads (BM*BN/(BM+BN) for fp16), too few to keep
the tensor cores fed, about 0.4x of torch.mm on an H200. Seven steps close the gap, each
measured in docs/perf-notes.md:

1. Larger tiles, 128x256x64 with 8 warps and 3 pipeline stages: 85 FLOP per byte.
2. A grouped program order, expressed in the arrangement: consecutive programs walk
   a band of group_size_m tile rows down one column of B, so the tiles they share
   are still in L2 (``arrangements.grouped_arrangement``).
3. A short explicit list of configurations per size class (``configs``), timed on
   the first call of each shape (those within 3% of the best a second time, side by
   side) and remembered, also across runs (``plan``, ``cache``), instead of a wide
   block_size() search behind Triton's per-call autotuner.
4. The ragged cliff: when K or N is not a multiple of 16, Triton cannot prove that a
   tile row's mask and start address come in runs of 8 elements, and the kernel
   drops to 0.15-0.35x. ``arrangements.flat_arrangement`` passes the operands flat
   and tiles them by their row lengths as compile-time constants: 3000^3 runs 3.7x
   faster. For a ragged N over an aligned K, the strided kernel on a padded copy of
   rhs is a further candidate, copy included.
5. Ragged rows hurt on the rhs side of the dot only: with a ragged N, a flat kernel
   computing C^T = B^T A^T (``arrangements.transposed_flat_arrangement``) runs
   4096x3000x4096 at 0.95x instead of 0.80x.
6. A grid whose last wave is nearly empty (3072^3 in 128x256 tiles: 288 tiles on
   132 SMs) runs its whole waves in one launch and the rows left over in small
   tiles in a second one (``kernels.wave_split``, ``waves``).
7. On a GPU with TMA (H100, H200), aligned operands also get a persistent kernel:
   one program per SM walking its tiles, loaded through tensor descriptors
   (``persistent_tma``): on an H100, 8192^3 at up to 686 TFLOPS against 636-649,
   and 6144x1024x4096 at 0.88-0.90x against 0.81x.

Modules, bottom up: ``arrangements`` (which tiles each program gets), ``configs``
(TileConfig and the candidate tables), ``waves`` (how a grid fills the SMs),
``persistent_tma`` (the persistent kernel), ``kernels`` (a launcher per
TileConfig), ``cache`` (choices kept between runs) and
``plan`` (candidates per shape, timing, ``nt_gemm`` and ``chosen_config``).
"""
