"""The explainers' pictures of wrong arrangements: ``python -m grader.tests.arrangement_examples
docs/arrangement`` writes one PNG per mistaken variant, drawn as the graders draw them.

Each variant (grader/tests/build_variants.py) is pictured at the first public case's shape
where one of its programs gets other tiles than it should (grader.core.suite.picture), so
the docs show what a student's feedback would.
"""

import pathlib
import sys
import tempfile

from grader.core import cases, suite
from grader.core.loading import load_submission
from grader.tests.build_variants import VARIANTS

EXAMPLES = ("expand_axis", "expand_by_size", "tile_shape", "floor_mode")


def write(folder, names=EXAMPLES):
    """``folder/<name>.png`` for each variant; the paths written. No kernel is built."""
    public = [case for case in cases.catalogue() if case.visibility == "public"]
    written = []
    with tempfile.TemporaryDirectory() as scratch:
        for name in names:
            source = pathlib.Path(scratch) / f"{name}.py"
            source.write_text(VARIANTS[name].source(name), encoding="utf-8")
            drawn = suite.picture(
                load_submission(source), public, pathlib.Path(folder) / f"{name}.png"
            )
            if drawn is None:
                raise SystemExit(f"{name}: every program gets what it should at the public shapes")
            written.append(drawn)
    return written


if __name__ == "__main__":
    for path in write(sys.argv[1]):
        print(path)
