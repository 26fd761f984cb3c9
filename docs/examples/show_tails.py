"""Show how partial tiles are masked, for C = A @ B with M=65, N=97, K=130.

With 64x64x64 blocks every dimension ends in a partial tile: 65 = 64 + 1,
97 = 64 + 33, 130 = 64 + 64 + 2. Tiles keep their full (64, 64) shape anyway;
the generated code masks the positions that fall outside the matrix.

1. ``Tensor.eval`` turns the file's arrangement into numbers: for each position
   of a tile, the element offset it reads or writes, or -1 where it is masked.
   Symbolic, on the CPU, no kernel run.
2. A real run (CPU interpreter or GPU): A, B and C are windows into larger
   buffers filled with NaN. If a load read past the window, NaN would reach C;
   if a store wrote past it, the NaN around C would be overwritten.

    python docs/examples/show_tails.py
    python docs/examples/show_tails.py --m 100 --n 70 --k 90
"""

import argparse
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from grader.core import backend as backends  # noqa: E402

BACKEND = backends.activate()  # before anything imports triton

import numpy as np  # noqa: E402
import torch  # noqa: E402
from ninetoothed import Tensor  # noqa: E402

from grader.core.checks import ATOL, RTOL  # noqa: E402
from grader.core.execution import own_kernel  # noqa: E402
from grader.core.loading import SubmissionError, load_submission  # noqa: E402

np.set_printoptions(linewidth=120)


def valid_extent(offsets):
    """How many rows and columns of a 2-D tile of offsets are not masked."""
    live = offsets >= 0
    return int(live.any(axis=1).sum()), int(live.any(axis=0).sum())


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--m", type=int, default=65)
    parser.add_argument("--n", type=int, default=97)
    parser.add_argument("--k", type=int, default=130)
    parser.add_argument("--submission", default=str(ROOT / "assignment" / "ninetoothed_gemm.py"),
                        help="the ninetoothed_gemm.py to use (default: assignment/ninetoothed_gemm.py)")
    args = parser.parse_args(argv)
    m, n, k = args.m, args.n, args.k

    try:
        module = load_submission(args.submission)
    except SubmissionError as error:
        sys.exit(f"[{error.status}] {error}")
    bm, bn, bk = module.BLOCK_SIZE_M, module.BLOCK_SIZE_N, module.BLOCK_SIZE_K
    if not all(isinstance(size, int) for size in (bm, bn, bk)):
        sys.exit("the block sizes are symbols (NINETOOTHED_AUTOTUNE=1?): unset it to run this")

    print(f"C = A @ B with M={m}, N={n}, K={k}; blocks {bm}x{bn}x{bk}")
    for name, size, block in (("M", m, bm), ("N", n, bn), ("K", k, bk)):
        count = -(-size // block)
        print(f"  {name}={size}: {count} tiles, the last holds {size - (count - 1) * block} of {block}")
    print()

    lhs, rhs, output = Tensor(2), Tensor(2), Tensor(2)
    lhs_arranged, _, output_arranged = module.arrangement(lhs, rhs, output)
    sizes = {lhs: Tensor(shape=(m, k)), rhs: Tensor(shape=(k, n)), output: Tensor(shape=(m, n))}

    out_offsets = output_arranged.eval(sizes)  # (grid_m, grid_n, bm, bn)
    last_i, last_j = out_offsets.shape[0] - 1, out_offsets.shape[1] - 1
    corner = out_offsets[last_i, last_j]
    rows, cols = valid_extent(corner)
    print(f"1. Offsets from Tensor.eval (C is {m}x{n}, row-major: element (r, c) is at r*{n} + c)")
    print(f"   output offsets, shape {out_offsets.shape}: (programs) x (one tile)")
    print(f"   output tile ({last_i}, {last_j}): {rows} of {bm} rows and {cols} of {bn} columns "
          "are real; the rest is -1")
    c0 = max(cols - 3, 0)
    print(f"   its rows 0:3, columns {c0}:{c0 + 6}:")
    print("   " + str(corner[0:3, c0:c0 + 6]).replace("\n", "\n   "))

    lhs_offsets = lhs_arranged.eval(sizes)  # (grid_m, grid_n, k_steps, bm, bk)
    last_k = lhs_offsets.shape[2] - 1
    tile = lhs_offsets[0, 0, last_k]
    rows, cols = valid_extent(tile)
    print(f"   lhs offsets, shape {lhs_offsets.shape}: (programs) x (K steps) x (one tile)")
    print(f"   program (0, 0), K step {last_k}: {cols} of {bk} columns are real "
          f"(A columns {last_k * bk}:{last_k * bk + cols}); rows 0:2, columns 0:6:")
    print("   " + str(tile[0:2, 0:6]).replace("\n", "\n   "))
    print()

    print(f"2. A run on the {BACKEND.name} backend, each operand a window into a NaN-filled buffer")
    device = BACKEND.device
    generator = torch.Generator().manual_seed(0)
    nan = float("nan")

    a_buffer = torch.full((m + bm, k + bk), nan, dtype=torch.float16, device=device)
    b_buffer = torch.full((k + bk, n + bn), nan, dtype=torch.float16, device=device)
    c_buffer = torch.full((m + bm, n + bn), nan, dtype=torch.float16, device=device)
    a, b, c = a_buffer[:m, :k], b_buffer[:k, :n], c_buffer[:m, :n]
    a.copy_(torch.randn((m, k), generator=generator).half())
    b.copy_(torch.randn((k, n), generator=generator).half())

    own_kernel(module)(a, b, c)  # arrangement + application, built as the grader builds them

    outside = c_buffer.numel() - c.numel()
    untouched = int(torch.isnan(c_buffer).sum()) - int(torch.isnan(c).sum())
    reference = a.float() @ b.float()
    error = (c.float() - reference).abs()
    close = bool((error <= ATOL + RTOL * reference.abs()).all())
    leaked = int(torch.isnan(c).sum())
    if leaked == 0:
        note = "  (masked loads read 0, never the NaN past A's and B's edges)"
    else:
        note = "  (part of C was never written, or a load read past an edge)"
    print(f"   NaN inside C: {leaked}{note}")
    print(f"   NaN left around C: {untouched} of {outside}"
          + ("  (masked stores wrote nothing there)" if untouched == outside
             else "  (something was written past C's edges)"))
    print(f"   max abs error against torch: {float(error.max()):.4f}, "
          f"{'within' if close else 'OUTSIDE'} the tolerance")
    return 0 if close and untouched == outside else 1


if __name__ == "__main__":
    sys.exit(main())
