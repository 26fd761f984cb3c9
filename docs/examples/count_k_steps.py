"""Predict how many K steps one program takes, then check the prediction by running.

Each program of the GEMM walks ``for k in range(lhs.shape[0])``, once per K tile,
so with BLOCK_SIZE_K = BK it should take ceil(K / BK) steps, the last one
partial when BK does not divide K. This script:

1. prints that prediction;
2. copies the file under test into a temporary folder with BLOCK_SIZE_K changed
   (the rest of the file untouched), and reads the loop length from its own
   arrangement: symbolically as a formula in K, and with K substituted
   (``Tensor.subs``);
3. runs that arrangement with an application that adds 1 per loop iteration
   instead of a tile product, so every output element ends up holding the
   number of steps its program took;
4. runs the copy's nt_gemm on the same shape and compares it with torch.

It runs on the CPU (Triton interpreter) or on a GPU, whichever the kit picks.

    python docs/examples/count_k_steps.py --block-k 32             # K = 130
    python docs/examples/count_k_steps.py --block-k 16 --k 200
"""

import argparse
import math
import pathlib
import re
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from grader.core import backend as backends  # noqa: E402

BACKEND = backends.activate()  # before anything imports triton

import ninetoothed  # noqa: E402
import ninetoothed.language as ntl  # noqa: E402
import torch  # noqa: E402
from ninetoothed import Tensor  # noqa: E402

from grader.core.checks import ATOL, RTOL  # noqa: E402
from grader.core.loading import SubmissionError, load_submission  # noqa: E402

# The course file sets BLOCK_SIZE_K = 64 in its non-autotune branch.
BLOCK_SIZE_K_LINE = re.compile(r"^(\s*)BLOCK_SIZE_K\s*=\s*\d+\s*$", re.MULTILINE)


def count_steps(lhs, rhs, output):
    """Stand-in application: the same loop as the GEMM, adding 1 instead of a product."""
    steps = ntl.zeros(output.shape, dtype=ntl.float32)
    for k in range(lhs.shape[0]):
        steps += 1
    output = steps  # noqa: F841


def copy_with_block_k(path, block_k, folder):
    source = pathlib.Path(path).read_text(encoding="utf-8")
    changed, count = BLOCK_SIZE_K_LINE.subn(rf"\g<1>BLOCK_SIZE_K = {block_k}", source)
    if count == 0:
        sys.exit(f"no line `BLOCK_SIZE_K = <number>` in {path}: nothing to change")
    copy = pathlib.Path(folder) / "ninetoothed_gemm.py"
    copy.write_text(changed, encoding="utf-8")
    return copy


def readable(expression, names):
    text = str(expression)
    for symbol, name in names.items():
        text = text.replace(str(symbol), name)
    return text


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--block-k", type=int, default=32,
                        help="the BLOCK_SIZE_K to try: a power of two, 16 or more (default: 32)")
    parser.add_argument("--m", type=int, default=64)
    parser.add_argument("--n", type=int, default=64)
    parser.add_argument("--k", type=int, default=130)
    parser.add_argument("--submission", default=str(ROOT / "assignment" / "ninetoothed_gemm.py"),
                        help="the file to copy (default: assignment/ninetoothed_gemm.py)")
    args = parser.parse_args(argv)
    m, n, k, block_k = args.m, args.n, args.k, args.block_k
    if block_k < 16 or block_k & (block_k - 1):
        parser.error("--block-k must be a power of two and at least 16 (what ntl.dot accepts)")

    steps = math.ceil(k / block_k)
    last = k - (steps - 1) * block_k
    print(f"Prediction: K={k}, BLOCK_SIZE_K={block_k} -> ceil({k}/{block_k}) = {steps} steps; "
          f"the last K tile holds {last} of {block_k} columns")

    with tempfile.TemporaryDirectory() as folder:
        copy = copy_with_block_k(args.submission, block_k, folder)
        try:
            module = load_submission(copy)
        except SubmissionError as error:
            sys.exit(f"[{error.status}] {error}")

        lhs, rhs, output = Tensor(2), Tensor(2), Tensor(2)
        lhs_arranged, _, _ = module.arrangement(lhs, rhs, output)
        formula = lhs_arranged.dtype.shape[0]
        names = {lhs.shape[0]: "M", lhs.shape[1]: "K", rhs.shape[1]: "N"}
        sizes = {lhs: Tensor(shape=(m, k)), rhs: Tensor(shape=(k, n)), output: Tensor(shape=(m, n))}
        substituted = module.arrangement(lhs, rhs, output)[0].subs(sizes).dtype.shape[0]
        print(f"Arrangement: lhs.dtype.shape[0] = {readable(formula, names)}")
        print(f"             with K={k}: {substituted}")

        device = BACKEND.device
        generator = torch.Generator().manual_seed(0)
        a = torch.randn((m, k), generator=generator).half().to(device)
        b = torch.randn((k, n), generator=generator).half().to(device)
        counts = torch.full((m, n), -1.0, dtype=torch.float16, device=device)
        ninetoothed.make(module.arrangement, count_steps, (Tensor(2), Tensor(2), Tensor(2)))(
            a, b, counts
        )
        seen = sorted({int(value) for value in counts.float().unique().tolist()})
        print(f"Run ({BACKEND.name}): every program took {seen} steps"
              if len(seen) == 1 else f"Run ({BACKEND.name}): step counts seen {seen}")

        result = module.nt_gemm(a, b)
        reference = a.float() @ b.float()
        error = (result.float() - reference).abs()
        close = bool((error <= ATOL + RTOL * reference.abs()).all())
        print(f"nt_gemm with BLOCK_SIZE_K={block_k}: max abs error {float(error.max()):.4f}, "
              f"{'within' if close else 'OUTSIDE'} the tolerance")

    agree = seen == [steps] and substituted == steps
    print("Prediction confirmed." if agree else "Prediction NOT confirmed: see the lines above.")
    return 0 if agree and close else 1


if __name__ == "__main__":
    sys.exit(main())
