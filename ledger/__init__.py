"""The GEMM ledger's formulas (``ledger.formulas``): roofline, tiles, occupancy, waves.

The bottom of the kit: plain arithmetic that imports nothing of it. The compile gate
(grader.core.gpu_compile), the benchmark's roofline columns (benchmarks.report) and the
lessons (``python -m benchmarks.lessons.ledger``, ``.tiling``, ``.occupancy``) all read
their numbers from here, so each printed number traces back to one function.
"""
