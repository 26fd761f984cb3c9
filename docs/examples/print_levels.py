"""Print the nested shapes at every level of the GEMM arrangement, on the CPU.

Nothing runs on a GPU and no kernel is built: NineToothed tensors are symbolic
descriptions, and ``Tensor.subs`` puts real sizes into them.

Part 1 replays the arrangement one operation at a time on tensors of known
shape, with the block sizes of the file under test. Part 2 calls that file's own
``arrangement()`` on the three symbolic ``Tensor(2)`` that ``ninetoothed.make``
would give it, substitutes the sizes, and prints what it produced: the levels a
program really gets. If your file is right, part 2 matches the last rows of
part 1.

    python docs/examples/print_levels.py                      # 128x256x192, your file
    python docs/examples/print_levels.py --m 65 --n 97 --k 130
    python docs/examples/print_levels.py --submission solutions/ninetoothed_gemm.py
"""

import argparse
import importlib.util
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from ninetoothed import Tensor  # noqa: E402

from grader.core.loading import (  # noqa: E402
    SubmissionError,
    load_submission,
    module_name_for,
    unfinished_functions,
)


def load(path):
    """The file under test; arrangement() alone is enough here, application() may wait."""
    try:
        return load_submission(path)
    except SubmissionError as error:
        source = pathlib.Path(path).read_text(encoding="utf-8") if error.status == "not_implemented" else ""
        if error.status != "not_implemented" or "arrangement" in unfinished_functions(source):
            sys.exit(f"[{error.status}] {error}")
    spec = importlib.util.spec_from_file_location(module_name_for(path) + "_levels", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def levels(tensor):
    """The shape of each level, outermost first: [(2, 4), (3,), (64, 64)]."""
    shapes = []
    while isinstance(tensor, Tensor):
        shapes.append(tuple(tensor.shape))
        tensor = tensor.dtype
    return shapes


def show(shapes):
    return " -> ".join(str(shape) for shape in shapes)


def block_sizes(module):
    sizes = (module.BLOCK_SIZE_M, module.BLOCK_SIZE_N, module.BLOCK_SIZE_K)
    if not all(isinstance(size, int) for size in sizes):
        sys.exit("the block sizes are symbols (NINETOOTHED_AUTOTUNE=1?): "
                 "unset NINETOOTHED_AUTOTUNE to print concrete shapes")
    return sizes


def replay(m, n, k, bm, bn, bk):
    """The arrangement written out step by step on tensors of known shape."""
    print("Part 1: the arrangement, one step at a time (outer shape -> inner levels)")
    print()

    output = Tensor(shape=(m, n)).tile((bm, bn))
    grid_m, grid_n = output.shape
    print(f"output {(m, n)}")
    print(f"  output.tile(({bm}, {bn}))".ljust(44) + show(levels(output)))
    print()

    print(f"lhs {(m, k)}")
    lhs = Tensor(shape=(m, k)).tile((bm, bk))
    print(f"  lhs.tile(({bm}, {bk}))".ljust(44) + show(levels(lhs)))
    lhs = lhs.tile((1, -1))
    print("    .tile((1, -1))".ljust(44) + show(levels(lhs)))
    lhs = lhs.expand((-1, grid_n))
    print(f"    .expand((-1, {grid_n}))".ljust(44) + show(levels(lhs)))
    lhs.dtype = lhs.dtype.squeeze(0)
    print("    .dtype = .dtype.squeeze(0)".ljust(44) + show(levels(lhs)))
    print()

    print(f"rhs {(k, n)}")
    rhs = Tensor(shape=(k, n)).tile((bk, bn))
    print(f"  rhs.tile(({bk}, {bn}))".ljust(44) + show(levels(rhs)))
    rhs = rhs.tile((-1, 1))
    print("    .tile((-1, 1))".ljust(44) + show(levels(rhs)))
    rhs = rhs.expand((grid_m, -1))
    print(f"    .expand(({grid_m}, -1))".ljust(44) + show(levels(rhs)))
    rhs.dtype = rhs.dtype.squeeze(1)
    print("    .dtype = .dtype.squeeze(1)".ljust(44) + show(levels(rhs)))
    print()
    return {"lhs": levels(lhs), "rhs": levels(rhs), "output": levels(output)}


def from_file(module, m, n, k):
    """The file's own arrangement() on symbolic tensors, then the sizes substituted."""
    lhs, rhs, output = Tensor(2), Tensor(2), Tensor(2)
    arranged = module.arrangement(lhs, rhs, output)
    sizes = {lhs: Tensor(shape=(m, k)), rhs: Tensor(shape=(k, n)), output: Tensor(shape=(m, n))}
    return {
        name: levels(tensor.subs(sizes))
        for name, tensor in zip(("lhs", "rhs", "output"), arranged)
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--m", type=int, default=128)
    parser.add_argument("--n", type=int, default=256)
    parser.add_argument("--k", type=int, default=192)
    parser.add_argument("--submission", default=str(ROOT / "assignment" / "ninetoothed_gemm.py"),
                        help="the ninetoothed_gemm.py to inspect (default: assignment/ninetoothed_gemm.py)")
    args = parser.parse_args(argv)

    module = load(args.submission)
    bm, bn, bk = block_sizes(module)
    print(f"C = A @ B with M={args.m}, N={args.n}, K={args.k}; "
          f"BLOCK_SIZE_M={bm}, BLOCK_SIZE_N={bn}, BLOCK_SIZE_K={bk}")
    print()

    expected = replay(args.m, args.n, args.k, bm, bn, bk)

    print(f"Part 2: arrangement() from {pathlib.Path(args.submission).name}, sizes substituted")
    print()
    got = from_file(module, args.m, args.n, args.k)
    mismatched = []
    for name in ("lhs", "rhs", "output"):
        verdict = "as in part 1" if got[name] == expected[name] else f"expected {show(expected[name])}"
        if got[name] != expected[name]:
            mismatched.append(name)
        print(f"  {name:<8}{show(got[name]):<32}{verdict}")
    print()
    grid = got["output"][0]
    print(f"One program per element of the output's outer shape {grid}: "
          f"{grid[0] * grid[1]} programs.")
    if mismatched:
        print(f"Differs from part 1: {', '.join(mismatched)}. All three outer shapes must be the "
              "output's block grid, and lhs and rhs must hold a 1-D sequence of K tiles.")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
