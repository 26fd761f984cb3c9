"""How deeply a student's file nests, measured before the grader walks its syntax tree.

The grader reads each file's tree in its own process, and many of its walks recurse once
per level: the kernel rebuild and its allowlist (grader.core.kernel_source), the findings
(grader.core.source_mistakes), ``ast.unparse``, ``copy.deepcopy``. A 16 KB line
``X = 1 + 1 + ... + 1`` nests a few thousand levels deep: Python's parser and compiler
give up on it, and those walks give up some hundreds of levels down, so such a file would
stop the grader instead of failing. ``parse`` measures the depth with a loop, never a
recursion, and refuses a file deeper than LIMIT as TooDeep, naming its line. Every
caller that reads a file's tree goes through it, so every walk after it stays bounded.
"""

import ast
import collections
import io
import tokenize

from grader.core.messages import say

# Levels of syntax-tree nodes, the module at level 0. The kit's own files reach 17; long
# elif chains in torch's sources reach 92. Under Python's default limit of 1000 frames,
# with 150 frames already below it, copy.deepcopy of a tree (the most stack-hungry walk
# a kernel's tree meets) gives out past 200 levels, and ast.unparse past 270.
LIMIT = 100


class TooDeep(SyntaxError):
    """A file nested deeper than LIMIT. A SyntaxError, so that whatever reads a file that
    does not parse reads this one alike; ``lineno`` is the line where it passes LIMIT."""

    def __init__(self, line, text=""):
        super().__init__(
            f"the code nests more than {LIMIT} levels deep", ("<unknown>", line, 0, text)
        )


def parse(source):
    """``ast.parse(source)``, or TooDeep where the tree nests deeper than LIMIT or Python's
    parser gives up on how deep it nests; any other SyntaxError (or ValueError) as the
    parser raises it."""
    try:
        tree = ast.parse(source)
    except (RecursionError, MemoryError):  # the parser's own bounds: its stack is C's
        raise _too_deep(source, _line_the_parser_gives_up_on(source)) from None
    line = _line_past_limit(tree)
    if line is not None:
        raise _too_deep(source, line)
    return tree


def too_deep(source):
    """The TooDeep of ``source``, or None: it nests within LIMIT, or does not parse for
    another reason (which compiling it says)."""
    try:
        parse(source)
    except TooDeep as error:
        return error
    except (SyntaxError, ValueError):
        pass
    return None


def message(error, file):
    """What the student reads of ``error`` (a TooDeep) in their file named ``file``."""
    return say("too_deep", file=file, line=error.lineno, limit=LIMIT) + (
        f"\n    {error.text}" if error.text else ""
    )


def _line_past_limit(tree):
    """The first line holding a node deeper than LIMIT, or None; a loop over the tree."""
    found = None
    pending = [(tree, 0, 1)]  # node, its level, the nearest line at or above it
    while pending:
        node, level, line = pending.pop()
        line = getattr(node, "lineno", line)
        if level > LIMIT:
            found = line if found is None else min(found, line)
            continue
        pending.extend((child, level + 1, line) for child in ast.iter_child_nodes(node))
    return found


def _line_the_parser_gives_up_on(source):
    """The first line of the logical line with the most operators and opening brackets:
    where the parser gave up, which leaves no line number. Parsing the file's first lines
    instead cannot tell: Python builds a tree, and gives up, only once the lines parse."""
    counts, start = collections.Counter(), None  # start: the logical line's first line
    try:
        for token in tokenize.generate_tokens(io.StringIO(source, newline="").readline):
            if token.type == tokenize.NEWLINE:
                start = None
            elif token.type not in _BETWEEN:
                if start is None:
                    start = token.start[0]
                if (token.type == tokenize.OP and token.string not in _NOT_NESTING) or (
                    token.type == tokenize.NAME and token.string in _NESTING_WORDS
                ):
                    counts[start] += 1
    except (tokenize.TokenError, SyntaxError):
        pass  # the lines read so far
    return max(counts, key=lambda line: (counts[line], -line), default=1)


_BETWEEN = {tokenize.NL, tokenize.COMMENT, tokenize.INDENT, tokenize.DEDENT, tokenize.ENCODING}
_NOT_NESTING = {",", ":", ";", ")", "]", "}", "=", "->"}
_NESTING_WORDS = {"not", "lambda", "if", "else", "await", "and", "or", "in", "is"}


def _too_deep(source, line):
    lines = list(io.StringIO(source, newline=""))  # as the parser numbers them
    text = lines[line - 1].strip() if 0 < line <= len(lines) else ""
    return TooDeep(line, text if len(text) <= 120 else text[:117] + "...")
