"""Make a large class for measuring the batch grader's cost: copies of the demo class, the
hostile submissions and the variants, in turn, each under a student id of its own.

    python -m grader.tests.stress_class OUT_DIR [--students 100]

The mix is the one the grading-cost figures in docs/instructor-guide.md were measured
with: correct files, common mistakes, cheats, crashes and hangs.
"""

import argparse
import pathlib
import shutil

ROOT = pathlib.Path(__file__).resolve().parents[2]


def sources():
    """Every submission file of the kit's own test material, in a stable order."""
    demo = ROOT / "grader" / "demo_class"
    files = sorted(demo.glob("*/ninetoothed_gemm.py")) + sorted(demo.glob("*.py"))
    files += sorted((ROOT / "grader" / "tests" / "adversarial").glob("*/ninetoothed_gemm.py"))
    files += sorted((ROOT / "grader" / "tests" / "variants").glob("*.py"))
    return files


def make(out_dir, students):
    out_dir = pathlib.Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=False)
    pool = sources()
    for number in range(students):
        source = pool[number % len(pool)]
        name = source.parent.name if source.name == "ninetoothed_gemm.py" else source.stem
        folder = out_dir / f"s{number:03d}-{name}"
        folder.mkdir()
        shutil.copyfile(source, folder / "ninetoothed_gemm.py")
    return out_dir


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m grader.tests.stress_class",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("out_dir", metavar="OUT_DIR", help="a new folder for the class")
    parser.add_argument("--students", type=int, default=100, help="how many (default: 100)")
    args = parser.parse_args(argv)
    make(args.out_dir, args.students)
    print(f"{args.students} submissions in {args.out_dir}")


if __name__ == "__main__":
    main()
