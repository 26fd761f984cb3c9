"""How long a worker may run: ``--timeout``, plus what the interpreter needs at the kernel's tiles.

The Triton interpreter costs about the same per (program x K tile) step at every tile size:
31 to 43 ms per step from 16x16x16 to 128x128x128 tiles on a 2-core box (2026-11-30). A
kernel's time there grows with its step count, and 16x16x16 tiles take 46 times the steps of
64x64x64 over the catalogue. So on the interpreter a run gets, on top of ``--timeout``,
STEP_S for every step of the cases it is sent, counted at the tiles its arrangement shows.
A correct kernel with any tiles the guide allows (16 to 128 per dimension) then finishes in
its limit, and a hang is still stopped. On a GPU the limit is ``--timeout`` alone.
"""

import math

STEP_S = 0.25  # about 7 times the measured cost of a step: room for -j workers sharing cores
SMALLEST = 16  # the guide's smallest block size: a claim of smaller tiles earns no more time
DEFAULT_TILES = (64, 64, 64)  # when the layout is not the plain grid, and tiles are unknown


def steps(m, n, k, tiles, launches=1):
    """Programs x K tiles of one case at ``tiles`` (BM, BN, BK), over its launches."""
    bm, bn, bk = (max(SMALLEST, size) for size in tiles)
    return math.ceil(m / bm) * math.ceil(n / bn) * math.ceil(k / bk) * launches


def interpreter_extra(jobs, tiles):
    """Seconds added to an interpreter run's limit for ``jobs`` (grader.batch.inside.protocol's
    Jobs)."""
    tiles = tuple(tiles) if tiles else DEFAULT_TILES
    return STEP_S * sum(steps(job.m, job.n, job.k, tiles, len(job.roles)) for job in jobs)
