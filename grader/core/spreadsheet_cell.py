"""The rule that keeps one CSV cell from being evaluated by a spreadsheet (OWASP's rule
against CSV injection), for every CSV the kit writes: the batch grader's
(grader.batch.outputs.spreadsheet) and the benchmark's what-if, whose notes quote errors.

A cell starting with ``=``, ``+``, ``-`` or ``@`` (a tab or a carriage return before one
too) is a formula to a spreadsheet: such a text cell gets a leading single quote. Numbers
stay numbers (``-2`` is no formula), and a cell already quoted is left alone.
"""

import re

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")


def safe_cell(value):
    """``value``, with a leading ``'`` when it is text a spreadsheet would evaluate."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS) and not _NUMBER.fullmatch(value):
        return "'" + value
    return value
