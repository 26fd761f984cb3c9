"""The compile-gate and application-mistake variants, as (base, named edits) of the reference.

Each is the demo class's reference (ada) with small textual edits, so it cannot drift from
the reference: an edit whose old text is gone fails loudly. ``python -m
grader.tests.build_variants FOLDER`` writes them as a class (one folder each) to grade.
"""

import pathlib
import sys

BASE = pathlib.Path(__file__).resolve().parents[1] / "demo_class" / "ada" / "ninetoothed_gemm.py"

DOT = "accumulator += ntl.dot(lhs[k], rhs[k])"
ZEROS = "accumulator = ntl.zeros(output.shape, dtype=ntl.float32)"
STORE = "    output = accumulator  # noqa"
BLOCKS = ("BLOCK_SIZE_M = 64\n    BLOCK_SIZE_N = 64\n    BLOCK_SIZE_K = 64",)


def _blocks(m, n, k):
    return (BLOCKS[0], f"BLOCK_SIZE_M = {m}\n    BLOCK_SIZE_N = {n}\n    BLOCK_SIZE_K = {k}")


# name: (edits, the hint that must come first)
VARIANTS = {
    "fp16_accumulator": ([(ZEROS, ZEROS.replace("float32", "float16"))], "accumulator_dtype"),
    "fp16_running_sum": ([(ZEROS, ZEROS.replace("float32", "float16")),
                          (DOT, DOT + ".to(ntl.float16)")], "accumulator_dtype"),
    "accumulator_in_loop": ([(f"    {ZEROS}\n    for k in range(lhs.shape[0]):\n",
                              f"    for k in range(lhs.shape[0]):\n        {ZEROS}\n")],
                            "accumulator"),
    "dot_swapped": ([(DOT, "accumulator += ntl.dot(rhs[k], lhs[k])")], "dot_order"),
    "dot_swapped_rect_tiles": ([(DOT, "accumulator += ntl.dot(rhs[k], lhs[k])"),
                                _blocks(64, 64, 32)], "build_error"),
    "output_transposed": ([(STORE, "    output = ntl.trans(accumulator)  # noqa")],
                          "output_tile"),
    "expand_by_size": ([("expand((-1, grid_n))", "expand((-1, output.shape[1]))")],
                       "grid_mismatch"),
    # NineToothed's 7 stages on an H200 need 448 KiB of shared memory at 128^3 (measured on
    # the H200, 2026-11-30: OutOfResources at every size divisible by 16).
    "tiles_128x128x128": ([_blocks(128, 128, 128)], "gpu_resources"),
}

# Correct with other tiles: what the time budget and the gate must pass.
CORRECT = {
    "tiles_32x32x32": [_blocks(32, 32, 32)],
    "tiles_128x64x32": [_blocks(128, 64, 32)],
    "tiles_16x128x64": [_blocks(16, 128, 64)],
}


def source(edits):
    text = BASE.read_text(encoding="utf-8")
    for old, new in edits:
        if old not in text:
            raise ValueError(f"the reference no longer contains {old!r}")
        text = text.replace(old, new)
    return text


def write(path, edits):
    path.write_text(source(edits), encoding="utf-8")
    return path


def write_class(folder, names=None):
    folder = pathlib.Path(folder)
    everything = {**{name: edits for name, (edits, _) in VARIANTS.items()}, **CORRECT}
    for name in names or everything:
        (folder / name).mkdir(parents=True, exist_ok=True)
        write(folder / name / "ninetoothed_gemm.py", everything[name])
    return folder


if __name__ == "__main__":
    write_class(sys.argv[1], sys.argv[2:] or None)
