"""The speed phase: after every verdict, the grader times each passing kernel itself.

``speed`` holds what is measured and worth points, runs the phase one timing run per GPU
at a time, and turns each report into the record's speed entry; ``handin`` checks a
handed-in benchmark CSV against what the grader knows and measured. It may import
grader.batch.isolation and grader.batch.inside (timing runs and their probe), grader.batch's
own modules, grader.core and the benchmark.
"""
