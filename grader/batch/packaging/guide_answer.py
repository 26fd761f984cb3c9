"""The answer the student guides print, and a handout without it (``handout --answer remove``).

Sections 5 and 6 of the student guides (en, zh) put ``arrangement()`` and ``application()``
together whole; pasted into the skeleton they earn full marks. Each such block is marked
once, in the guide's source, between ``BEGIN`` and ``END`` (HTML comments, so a reader of
the guide sees nothing of them). A course that wants the students to write the functions
themselves ships the guides cut there; ``shown`` is what the handout checks a cut guide by,
so a block someone adds later without the markers is caught rather than handed out.
"""

import ast
import re

from grader.core.loading import STUDENT_FUNCTIONS, unfinished_functions

BEGIN = "<!-- answer: begin -->"
END = "<!-- answer: end -->"
CHOICES = ("keep", "remove")  # handout --answer; keep is what the course ships
_FENCED = re.compile(r"^(```|~~~)[^\n]*\n(.*?)^\1[ \t]*$", re.MULTILINE | re.DOTALL)


def cut(text, name):
    """``text`` without its marked answer blocks, markers included; ``name`` (the doc's path)
    names it when a marker has no partner, since then the cut cannot be trusted."""
    lines, kept, inside = text.splitlines(keepends=True), [], False
    for number, line in enumerate(lines, start=1):
        marker = line.strip()
        if marker in (BEGIN, END):
            if (marker == BEGIN) == inside:
                raise ValueError(
                    f"{name}, line {number}: {marker} without its {END if inside else BEGIN}"
                )
            inside = marker == BEGIN
            continue
        if not inside:
            kept.append(line)
    if inside:
        raise ValueError(f"{name}: {BEGIN} without its {END}")
    return "".join(kept)


def shown(text):
    """The student functions that ``text``'s fenced code blocks define with a body other
    than the skeleton's placeholder, in STUDENT_FUNCTIONS order."""
    found = set()
    for match in _FENCED.finditer(text):
        block = match.group(2)
        try:
            tree = ast.parse(block)
        except SyntaxError:
            continue
        unfinished = unfinished_functions(block)
        found |= {
            node.name
            for node in tree.body
            if isinstance(node, ast.FunctionDef)
            and node.name in STUDENT_FUNCTIONS
            and node.name not in unfinished
        }
    return [name for name in STUDENT_FUNCTIONS if name in found]
