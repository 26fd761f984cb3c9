"""A matrix size passed where a block count or a block size belongs, named with its call.

``lhs_arranged.expand((-1, output.shape[1]))`` repeats lhs N times instead of once per
N block: the grids cannot line up, and the shapes alone only say that 256 is not 4.
``size_slips(module)`` runs the arrangement once on symbolic tensors while recording each
``tile`` and ``expand`` call made from the submission's own file, and reports every
argument that is one of the matrices' sizes itself (M, N or K, whichever tensor it was
read from), with the line that made the call. Symbols are compared, not numbers, so the
slip is found however the size was named (``N = output.shape[1]``) and never confused
with a block count that happens to equal it.

It runs the student's ``arrangement``, so like grader.core.layout it runs inside the
batch grader's sandbox; it never raises.
"""

import contextlib
import linecache
import sys

from grader.core.messages import say

_RECORDED = ("tile", "expand")


@contextlib.contextmanager
def _recording_calls(filename):
    """Record (method, line, first argument, the tensor called) for tile/expand calls made
    from ``filename``."""
    from ninetoothed import Tensor

    calls = []
    originals = {name: getattr(Tensor, name) for name in _RECORDED}

    def recorder(name, original):
        def recorded(self, *args, **kwargs):
            caller = sys._getframe(1)
            if caller.f_code.co_filename == filename:
                first = args[0] if args else kwargs.get("tile_shape", kwargs.get("shape"))
                calls.append((name, caller.f_lineno, first, self))
            return original(self, *args, **kwargs)

        return recorded

    try:
        for name, original in originals.items():
            setattr(Tensor, name, recorder(name, original))
        yield calls
    finally:
        for name, original in originals.items():
            setattr(Tensor, name, original)


QUOTE_LIMIT = 120  # characters of the student's line quoted


def quoted(line):
    """The student's line as it may stand between backticks in feedback.md: its own
    backticks (a comment's, an assert message's) would close the code span and let the rest
    of the line be read as markdown or HTML, so they become quotes; a long line is cut."""
    code = line.strip().replace("`", "'")
    return code if len(code) <= QUOTE_LIMIT else code[: QUOTE_LIMIT - 3] + "..."


def _grouped_wrong(argument, tensor, tensor_type):
    """Whether a tile() of tiles (the grouping of lhs's or rhs's K tiles) groups them other
    than a whole row or column at a time: one entry 1, the other -1 or the whole length."""
    if not isinstance(getattr(tensor, "dtype", None), tensor_type) or len(argument) != 2:
        return False
    sizes = [str(size) for size in argument]
    whole = [size in ("-1", str(tensor.shape[position])) for position, size in enumerate(sizes)]
    return not ((sizes[0] == "1" and whole[1]) or (sizes[1] == "1" and whole[0]))


def size_slips(module, levels):
    """Findings ``{"mistake": "size_for_count", "message": ...}``, one per slipped argument,
    and ``group_size`` for a grouping of K tiles other than a whole row or column.

    ``levels`` is grader.core.layout.arranged_levels's answer; its first size is the one
    quoted, and its output grid the block counts that belong in an expand.
    """
    try:
        return _size_slips(module, levels)
    except Exception:  # noqa: BLE001 - the student's arrangement can fail in any way; layout says how
        return []


def _size_slips(module, levels):
    from ninetoothed import Tensor

    arrangement = module.arrangement
    filename = arrangement.__code__.co_filename
    lhs, rhs, output = Tensor(2), Tensor(2), Tensor(2)
    sizes = {
        str(lhs.shape[0]): "M",
        str(lhs.shape[1]): "K",
        str(rhs.shape[0]): "K",
        str(rhs.shape[1]): "N",
        str(output.shape[0]): "M",
        str(output.shape[1]): "N",
    }
    with _recording_calls(filename) as calls:
        arrangement(lhs, rhs, output)
    shape, at = next(iter(levels.items()))
    m, n, k = shape
    value = {"M": m, "N": n, "K": k}
    grid = at["output"][0] if len(at["output"]) > 1 else ()
    where = f"M={m}, N={n}, K={k}"
    findings = []
    for method, line, argument, tensor in calls:
        if not isinstance(argument, (tuple, list)):
            continue
        code = quoted(linecache.getline(filename, line))
        if method == "tile" and _grouped_wrong(argument, tensor, Tensor):
            findings.append(
                {
                    "mistake": "group_size",
                    "message": say(
                        "group_size",
                        line=line,
                        code=code,
                        shape="(" + ", ".join(map(str, argument)) + ")",
                    ),
                }
            )
            continue
        for position, size in enumerate(argument):
            letter = sizes.get(str(size))
            if letter is None:
                continue
            fields = dict(
                line=line,
                code=code,
                letter=letter,
                value=value[letter],
                where=where,
                position=position,
            )
            if method == "tile":
                message = say("tile_by_size", **fields)
            elif position < len(grid):
                message = say("expand_by_size", count=grid[position], **fields)
            else:
                message = say("expand_by_size_uncounted", **fields)
            findings.append({"mistake": "size_for_count", "message": message})
    return findings
