"""Judge what a kernel produced. Nothing here runs student code.

Inputs are derived from the case and the grading secret alone, so the process that
judges (the batch grader's parent, which never imports a submission) can rebuild them
and the float32-accumulated reference by itself. A public case's inputs do not depend
on the secret at all: its feedback shows values of them, and a student's own run sees
the very inputs the grader's public cases see.
"""

import dataclasses
import functools
import hashlib
import re
import threading
import traceback

import torch

from grader.core import cases as catalogue
from grader.core.generated_kernel import KernelRejected
from grader.core.messages import line_zh, say

# The guide's tolerance, per element: |out - ref| <= ATOL + RTOL * |ref|.
ATOL = 0.025
RTOL = 0.025
SAMPLES = 5


def case_seed(case, seed):
    """A stable 63-bit seed of a case's inputs, order-independent: from the case's id alone
    for a public case, keyed on the secret ``seed`` (grader.core.cases.derive) for any other."""
    if case.visibility == "public":
        digest = hashlib.sha256(f"ntgemm-public-inputs:{case.id}".encode()).digest()
    else:
        digest = catalogue.derive(seed, f"inputs:{case.id}")
    return int.from_bytes(digest[:8], "little") >> 1


def make_inputs(case, seed, device):
    generator = torch.Generator().manual_seed(case_seed(case, seed))
    if case.inputs == catalogue.CANCELLATION:
        lhs, rhs = _cancellation(case, generator)
    else:
        lhs = torch.randn((case.m, case.k), generator=generator, dtype=torch.float32)
        rhs = torch.randn((case.k, case.n), generator=generator, dtype=torch.float32)
    return lhs.half().to(device), rhs.half().to(device)


def _cancellation(case, generator, big=64.0, small=0.025, edge=32):
    """Inputs whose every product is +big over the first ``edge`` K columns, -big over the
    last ``edge`` and ``small`` in between (each row times a random sign, each column times
    a random scale in [0.5, 1]). In float32 the big terms cancel and the small ones add up
    to about 8; a float16 running sum of about 2048 cannot hold steps of a tile's small
    terms, so a float16 accumulator ends far from it with any block size from 16 to 128."""
    signs = torch.randint(0, 2, (case.m, 1), generator=generator).float() * 2 - 1
    scales = 0.5 + 0.5 * torch.rand((1, case.n), generator=generator)
    profile = torch.full((case.k, 1), small)
    profile[:edge], profile[-edge:] = big, -big
    return signs.expand(case.m, case.k).clone(), profile * scales


def reference(lhs, rhs):
    """lhs @ rhs accumulated in float32 (TF32 off), as a float32 tensor."""
    previous = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    try:
        return lhs.float() @ rhs.float()
    finally:
        torch.backends.cuda.matmul.allow_tf32 = previous


@dataclasses.dataclass
class Verdict:
    """The outcome of one case: ``passed`` plus what a student needs to see why not."""

    case_id: str
    passed: bool
    message: str = ""
    mistake: str = ""  # a key of grader.core.mistakes.MISTAKES when the check itself names one
    details: dict = dataclasses.field(default_factory=dict)


def compare(out, ref, case, seed):
    """Closeness of ``out`` to ``ref`` with the guide's tolerance, explained on failure."""
    if not isinstance(out, torch.Tensor):
        return Verdict(case.id, False, say("not_tensor", kind=type(out).__name__), "wrong_dtype")
    expected_shape = (case.m, case.n)
    if tuple(out.shape) != expected_shape:
        return Verdict(
            case.id,
            False,
            say("wrong_shape", got=tuple(out.shape), expected=expected_shape),
            "wrong_dtype",
        )
    if out.dtype != torch.float16:
        return Verdict(case.id, False, say("wrong_dtype", dtype=out.dtype), "wrong_dtype")

    got = out.detach().float().cpu()
    want = ref.detach().float().cpu()
    error = (got - want).abs()
    bad = ~(error <= ATOL + RTOL * want.abs())  # NaN counts as bad
    mismatches = int(bad.sum())
    if mismatches == 0:
        return Verdict(case.id, True, details={"max_abs_error": float(error.max())})

    finite_error = torch.where(torch.isnan(error), torch.full_like(error, float("inf")), error)
    worst = int(finite_error.argmax())
    worst_index = divmod(worst, case.n)
    relative = finite_error / want.abs().clamp_min(1e-6)
    sample_positions = _first_positions(bad, SAMPLES)
    details = {
        "mismatches": mismatches,
        "total": case.m * case.n,
        "worst_index": list(worst_index),
        "max_abs_error": float(finite_error.max()),
        "max_rel_error": float(relative[bad].max()),
        "samples": [
            {"index": [i, j], "got": float(got[i, j]), "expected": float(want[i, j])}
            for i, j in sample_positions
        ],
        "case_seed": case_seed(case, seed),  # to replay the inputs; never in a message
    }
    return Verdict(case.id, False, describe_mismatch(details), details=details)


def _first_positions(bad, count, rows=64):
    """The first ``count`` [row, column] where ``bad`` holds, in row order: read a band of
    rows at a time, since all of a wrong 4096^3 output's positions cost half a second."""
    found = []
    for start in range(0, bad.shape[0], rows):
        band = bad[start : start + rows].nonzero()[: count - len(found)]
        found += [[start + i, j] for i, j in band.tolist()]
        if len(found) == count:
            break
    return found


def describe_mismatch(details):
    """The student-facing text of a mismatch: never the case seed, which stays in the
    Verdict's details. Batch feedback shows this message for public cases only."""
    lines = [
        say("mismatches", bad=details["mismatches"], total=details["total"], atol=ATOL, rtol=RTOL),
        say(
            "worst",
            index=tuple(details["worst_index"]),
            absolute=details["max_abs_error"],
            relative=details["max_rel_error"],
        ),
    ]
    for sample in details["samples"]:
        lines.append(
            say(
                "sample",
                index=tuple(sample["index"]),
                got=sample["got"],
                expected=sample["expected"],
            )
        )
    return "\n".join(lines)


def judging_material(case, seed, device):
    """Inputs and reference of a case, built once per batch rather than once per student.

    Only the judge reads them (never student code, which gets fresh inputs from
    grader.core.execution.produce), so sharing them cannot let one submission affect another.
    One thread builds them while the others wait: the batch's workers all reach the same
    cases at its start, and otherwise each of them builds every reference itself, beside the
    first runs (docs/stress-runs/timeline.md, the runs with py-spy).
    """
    with _building:
        return _material(case, seed, device)


_building = threading.Lock()


@functools.lru_cache(maxsize=64)
def _material(case, seed, device):
    lhs, rhs = make_inputs(case, seed, device)
    return lhs, rhs, reference(lhs, rhs)


def judge(case, outputs, seed, device):
    """Turn what the student's code produced for ``case`` into a Verdict.

    ``outputs`` is what grader.core.execution.produce returned: tensors keyed by role.
    """
    lhs, rhs, ref = judging_material(case, seed, device)
    if case.check == catalogue.DETERMINISM:
        first, second = outputs["first"], outputs["second"]
        verdict = compare(first, ref, case, seed)
        if verdict.passed and not torch.equal(first, second):
            differing = int((first != second).sum())
            return Verdict(
                case.id, False, say("nondeterministic", differing=differing), "nondeterministic"
            )
        return verdict
    if case.check == catalogue.COVERAGE:
        out = outputs["prefilled"]
        unwritten = int(torch.isnan(out.float()).sum()) if isinstance(out, torch.Tensor) else 0
        if unwritten:
            return Verdict(
                case.id,
                False,
                say("unwritten", unwritten=unwritten, total=case.m * case.n),
                "unwritten_output",
            )
        return compare(out, ref, case, seed)
    verdict = compare(outputs["out"], ref, case, seed)
    if case.m * case.n * case.k > _NAMING_WORK:
        return verdict
    for namer in (_name_partial_sum, _name_swapped_dot, _name_misplaced_tiles, _name_float16_sum):
        if verdict.passed or verdict.mistake:
            break
        namer(verdict, outputs["out"], lhs, rhs, ref)
    return verdict


# The most multiply-adds of a case whose wrong output the namers below replay. They compute
# on the grader's CPU, beside the workers, for every failing case of every student: at
# 4096^3 one failing case cost 13 s of two cores, and a loaded batch host starved its
# workers (issue 32's stray timeouts). Every mistake they name shows at the catalogue's
# small shapes too (every public case is within this), so the large ones go unnamed.
_NAMING_WORK = 1 << 27

# Block sizes along K tried when recognising a partial sum; no student code is
# asked for its own, so the judge stays independent of the submission. Several
# sizes give the same columns (K = 130: the last tile is 128:130 for 16, 32 and
# 64), so the messages name columns, never a block size.
_K_BLOCKS = (16, 32, 64, 128, 256)


def _name_partial_sum(verdict, out, lhs, rhs, _ref):
    """Name the mistake when the wrong output is exactly a known partial sum over K.

    With random inputs a full product and a partial one differ far beyond the
    tolerance, so a match is strong evidence: the last K tile alone means the
    accumulator was reset or assigned in the loop; the first whole tiles alone
    mean the K tail was dropped or the loop stopped a tile early.
    """
    k = lhs.shape[1]
    suffixes, prefixes = set(), set()
    for block_k in _K_BLOCKS:
        if k <= block_k:
            break
        last = (k - 1) // block_k * block_k
        if last not in suffixes:
            suffixes.add(last)
            if _close(out, reference(lhs[:, last:], rhs[last:, :])):
                verdict.mistake = "accumulator"
                verdict.message += "\n" + say("last_tile_only", last=last, k=k)
                return
        for stop in (k // block_k * block_k, last):  # every whole tile; all tiles but the last
            if 0 < stop < k and stop not in prefixes:
                prefixes.add(stop)
                if _close(out, reference(lhs[:, :stop], rhs[:stop, :])):
                    verdict.mistake = "k_tail"
                    verdict.message += "\n" + say("k_prefix", stop=stop, k=k)
                    return


def _name_float16_sum(verdict, out, lhs, rhs, _ref):
    """Name a float16 accumulator when the wrong output is what adding each K tile's
    product into a float16 running sum gives, at some K tile size.

    Such a sum drops the small terms of a long K, so it misses the float32 product by
    a little; a mix-up of tiles or a partial sum misses it by far more. An output of zeros
    is no evidence: the cancellation case's float16 sum ends near zero, as does a kernel
    that adds nothing.
    """
    (m, k), n = lhs.shape, rhs.shape[1]
    lhs, rhs = lhs.float(), rhs.float()
    if isinstance(out, torch.Tensor) and not out.float().abs().gt(ATOL).any():
        return
    for block_k in _K_BLOCKS:
        if k <= block_k:
            return  # one tile: the sum is the rounded product itself, no evidence
        total = torch.zeros((m, n), dtype=torch.float16, device=lhs.device)
        for part in _tile_products(lhs, rhs, block_k).half():
            total = (total.float() + part.float()).half()
        if _close(out, total):
            verdict.mistake = "accumulator_dtype"
            verdict.message += "\n" + say("float16_sum", block_k=block_k)
            return


def _tile_products(lhs, rhs, block_k):
    """Each K tile's product lhs[:, tile] @ rhs[tile, :], in order, as one batched product:
    a long K has hundreds of tiles, and one small product at a time held the grader's CPU
    for seconds. The last tile is zero-padded, which adds exact zeros to its sums."""
    (m, k), n = lhs.shape, rhs.shape[1]
    tiles = -(-k // block_k)
    padded_lhs = torch.zeros((m, tiles * block_k), dtype=lhs.dtype, device=lhs.device)
    padded_rhs = torch.zeros((tiles * block_k, n), dtype=rhs.dtype, device=rhs.device)
    padded_lhs[:, :k], padded_rhs[:k] = lhs, rhs
    return torch.bmm(
        padded_lhs.reshape(m, tiles, block_k).transpose(0, 1), padded_rhs.reshape(tiles, block_k, n)
    )


# Square tiles tried when recognising a tile-level mix-up (no student code is asked).
_TILES = (16, 32, 64, 128)


def _block_view(matrix, rows, columns):
    """``matrix`` zero-padded to whole tiles, as (row blocks, column blocks, rows, columns)."""
    height, width = -(-matrix.shape[0] // rows), -(-matrix.shape[1] // columns)
    padded = torch.zeros(height * rows, width * columns)
    padded[: matrix.shape[0], : matrix.shape[1]] = matrix.float()
    return padded.reshape(height, rows, width, columns).permute(0, 2, 1, 3)


def _name_swapped_dot(verdict, out, lhs, rhs, _ref):
    """Name ``ntl.dot(rhs[k], lhs[k])``: with square b x b tiles it compiles, and output
    tile (i, j) becomes the sum over k of rhs tile (k, j) @ lhs tile (i, k)."""
    m, k = lhs.shape
    n = rhs.shape[1]
    for size in _TILES:
        if size >= max(m, n, k) * 2:
            break
        left, right = _block_view(lhs.cpu(), size, size), _block_view(rhs.cpu(), size, size)
        tiles = torch.einsum("kjab,ikbc->ijac", right, left)
        swapped = tiles.permute(0, 2, 1, 3).reshape(left.shape[0] * size, right.shape[1] * size)
        if _close(out, swapped[:m, :n]):
            verdict.mistake = "dot_order"
            verdict.message += "\n" + say("swapped_dot", size=size)
            return


def _name_misplaced_tiles(verdict, out, _lhs, _rhs, ref):
    """Name an output whose tiles each hold a right product, but of another tile or
    transposed: the result written to the wrong place."""
    expected = ref.cpu()
    got = out.detach().float().cpu()
    m, n = expected.shape
    for rows in _TILES:
        for columns in _TILES:
            if (
                m % rows
                or n % columns
                or (m // rows) * (n // columns) < 2
                or (m // rows) * (n // columns) > 256
            ):
                continue
            mine, right = _block_view(got, rows, columns), _block_view(expected, rows, columns)
            found = _tile_sources(mine, right)
            if found:
                verdict.mistake = "output_tile"
                verdict.message += "\n" + say(found[0], rows=rows, columns=columns, **found[1])
                return


def _tile_sources(mine, right):
    """How the output's tiles relate to the right ones, when every tile is some right tile
    (or one transposed) and not all in place, as (template key, its fields); else None.

    Each comparison is one tensor operation over every tile at once: a tile at a time, a
    student whose tiles were all moved held the grader's CPU for seconds per case."""
    grid = [(i, j) for i in range(mine.shape[0]) for j in range(mine.shape[1])]
    if mine.shape[2] == mine.shape[3] and not outside_tolerance(mine, right.transpose(2, 3)).any():
        return "transposed_tiles", {}
    mine, right = mine.reshape(len(grid), -1), right.reshape(len(grid), -1)
    misplaced = outside_tolerance(mine, right).any(dim=1).nonzero().flatten().tolist()
    moved = []
    for index in misplaced:
        sources = (~outside_tolerance(mine[index].expand_as(right), right).any(dim=1)).nonzero()
        if not len(sources):
            return None
        moved.append((grid[index], grid[int(sources[0])]))
    if not moved:
        return None
    tile, source = moved[0]
    return "moved_tiles", {"moved": len(moved), "total": len(grid), "tile": tile, "source": source}


def outside_tolerance(out, expected):
    """Where ``out`` misses the guide's tolerance around ``expected`` (NaN misses), as a
    bool tensor on their device."""
    want = expected.float()
    return ~((out.float() - want).abs() <= ATOL + RTOL * want.abs())


def _close(out, expected):
    if not isinstance(out, torch.Tensor) or tuple(out.shape) != tuple(expected.shape):
        return False
    return not bool(outside_tolerance(out.detach().cpu(), expected.cpu()).any())


_LOOP_LOCAL = re.compile(r"NameError\('(\w+) is not defined'\)")
_LOOP_TYPE = re.compile(r"Loop-carried variable (\w+) has initial type [^>]*fp16")
_RESOURCES = re.compile(r"out of resources|OutOfResources", re.IGNORECASE)


def error_verdict(case, error, limit=12, source=""):
    """A failed Verdict for a case whose kernel raised instead of returning.

    ``error`` is the exception (or its text, when it was caught in another
    process). The message leads with a plain line, not the stack's own words: those
    follow as detail, the last ``limit`` lines of a long compile error with the error
    itself last; the mistake is read from the whole text. ``source``: the file's, where a
    kernel that cannot build is shown by the student's line, not the generated one.
    """
    from grader.core.layout import NOT_LAUNCHED
    from grader.core.retile import NOT_RETILED

    if str(error).startswith(NOT_LAUNCHED):  # a grid known to be wrong before any launch
        return Verdict(
            case.id,
            False,
            say("not_launched", why=str(error)[len(NOT_LAUNCHED) :]),
            "grid_mismatch",
        )
    if str(error).startswith(NOT_RETILED):  # the file's tiles do not follow its block sizes
        return Verdict(
            case.id, False, say("not_retiled", why=str(error)[len(NOT_RETILED) :]), "fixed_tiles"
        )
    if isinstance(error, KernelRejected):
        return _refused_verdict(case, error, source)
    raised_at = _wrapper_frame(error)
    if raised_at is not None:  # the file's own Python around the kernel, not the kernel
        return Verdict(
            case.id,
            False,
            say(
                "wrapper_raised",
                raised=f"{type(error).__name__}: {_first(error)}",
                line=raised_at.lineno,
                function=raised_at.name,
            ),
            "wrapper_broken",
            details={"error": f"{type(error).__name__}: {error}"[-4000:]},
        )
    if isinstance(error, BaseException):
        mistake = "not_implemented" if isinstance(error, NotImplementedError) else "build_error"
        name, text = type(error).__name__, str(error).strip()
    else:
        mistake, name, text = "build_error", "", str(error).strip()
    lines = [line.rstrip() for line in text.splitlines() if line.strip()]
    last = lines[-1].strip() if lines else ""
    raised = (f"{name}: {last}" if name else last) or "an error"
    if mistake == "not_implemented":
        return Verdict(
            case.id,
            False,
            say("raised", raised=raised),
            mistake,
            details={"error": (f"{name}: " if name else "") + text[-4000:]},
        )
    # NineToothed's and Triton's own words are detail, under a plain line and above the
    # named cause, if any: the error itself last but for that cause.
    head = say("did_not_build")
    context = lines[-limit:-1]
    body = (["..."] if len(lines) > limit else []) + context + [raised]
    mistake, why = _named_build_error(text)
    if why:
        body.append(why)
    return Verdict(
        case.id,
        False,
        "\n".join([head] + body),
        mistake,
        details={"error": (f"{name}: " if name else "") + text[-4000:]},
    )


def library_words(message):
    """(the kit's lines, the lines NineToothed or Triton wrote) of a case message that
    ``error_verdict`` introduced as theirs, else (message, ''): a page or a summary shows
    their words once, however many cases raised them."""
    lines = message.splitlines()
    if not lines or lines[0] != say("did_not_build"):
        return message, ""
    kit = [line for line in lines if line_zh(line)]
    theirs = [line for line in lines[1:] if not line_zh(line)]
    return "\n".join(kit), "\n".join(theirs)


def _refused_verdict(case, error, source):
    """Nothing ran; the batch grader flags the file, unless its only violations are what
    cannot build (grader.core.generated_kernel.Unbuildable): names the kernel does not have,
    or a file that does not parse, shown by the student's line it came from."""
    from grader.core import gpu_compile

    found = (
        gpu_compile.refused_line(source, error.violations)
        if source and error.unbuildable and not error.unbound
        else None
    )
    if found:
        text = say("not_run", error=say("unbuildable_line", line=found[0], code=found[1]))
    else:
        text = say("not_run", error=error)
    if error.unbound:
        consequence = say("unbound_names", names=", ".join(f"`{name}`" for name in error.unbound))
    else:
        consequence = say("cannot_build") if error.unbuildable else say("flags_such_a_file")
    return Verdict(case.id, False, text + "\n" + consequence, details={"error": str(error)[-4000:]})


def _wrapper_frame(error):
    """The frame of the submission that raised ``error`` where that is nt_gemm() or a helper
    of it (the innermost frame is in nt_gemm()'s own file, outside arrangement() and
    application()); else None: NineToothed, Triton or the kernel raised it."""
    if not isinstance(error, BaseException):
        return None
    frames = traceback.extract_tb(error.__traceback__)
    wrapper = next((frame for frame in frames if frame.name == "nt_gemm"), None)
    innermost = frames[-1] if frames else None
    if (
        wrapper is None
        or innermost.filename != wrapper.filename
        or innermost.name in ("arrangement", "application")
    ):
        return None
    return innermost


def _first(error):
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    return lines[-1] if lines else ""


def _named_build_error(text):
    """(mistake, one line of why) for the build errors a message names outright."""
    undefined = _LOOP_LOCAL.search(text)
    if undefined:
        # Triton only lets a value assigned inside a loop outlive it when it was
        # defined before the loop: the accumulator created inside the loop.
        return "accumulator", say("defined_in_loop", name=undefined.group(1))
    retyped = _LOOP_TYPE.search(text)
    if retyped:
        return "accumulator_dtype", say("float16_start", name=retyped.group(1))
    if _RESOURCES.search(text):
        return "gpu_resources", ""
    return "build_error", ""


def build_verdict(case, build, source=""):
    """The failed Verdict of every case of a kernel that does not build for the course's GPU
    (grader.core.gpu_compile.Build), whatever the interpreter would make of it."""
    from grader.core import gpu_compile

    text = say("not_for_gpu", target=build.target)
    where = gpu_compile.where(build, source)
    if where:
        text += f"\n{where}"
    text += "\n" + say("compiler_words", words=build.message)  # detail, last but for a cause
    mistake, why = _named_build_error(build.message)
    return Verdict(
        case.id,
        False,
        text + (f"\n{why}" if why else ""),
        mistake,
        details={"error": build.message},
    )
