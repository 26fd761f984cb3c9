"""Make a large class for measuring the batch grader's cost: copies of the demo class, the
hostile submissions and the variants, in turn, each under a student id of its own.

    python -m grader.tests.stress_class OUT_DIR [--students 100]

The grading-cost figures in docs/stress-runs/ were measured with such a mix:
correct files, common mistakes, cheats, crashes and hangs (before the compile-gate
variants of build_variants joined it).
"""

import argparse
import pathlib

from grader.tests.adversarial_class import ATTACKS
from grader.tests.build_variants import VARIANTS

ROOT = pathlib.Path(__file__).resolve().parents[2]


def sources():
    """Every submission of the kit's own test material as (name, text), in a stable order."""
    demo = ROOT / "grader" / "demo_class"
    files = sorted(demo.glob("*/ninetoothed_gemm.py")) + sorted(demo.glob("*.py"))
    pool = [
        (
            path.parent.name if path.name == "ninetoothed_gemm.py" else path.stem,
            path.read_text(encoding="utf-8"),
        )
        for path in files
    ]
    for catalogue in (ATTACKS, VARIANTS):
        pool += [(name, catalogue[name].source(name)) for name in sorted(catalogue)]
    return pool


def make(out_dir, students):
    out_dir = pathlib.Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=False)
    pool = sources()
    for number in range(students):
        name, text = pool[number % len(pool)]
        folder = out_dir / f"s{number:03d}-{name}"
        folder.mkdir()
        (folder / "ninetoothed_gemm.py").write_text(text, encoding="utf-8")
    return out_dir


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m grader.tests.stress_class", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("out_dir", metavar="OUT_DIR", help="a new folder for the class")
    parser.add_argument("--students", type=int, default=100, help="how many (default: 100)")
    args = parser.parse_args(argv)
    make(args.out_dir, args.students)
    print(f"{args.students} submissions in {args.out_dir}")


if __name__ == "__main__":
    main()
