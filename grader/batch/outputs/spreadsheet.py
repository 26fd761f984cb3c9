"""Cells a spreadsheet shows as text, never evaluates: every CSV the batch grader writes.

Student ids come from folder and LMS download names, which students choose, and a
spreadsheet takes a cell starting with ``=``, ``+``, ``-`` or ``@`` (a tab or a carriage
return before one too) for a formula: ``=HYPERLINK(...)`` in ``gradebook.csv`` would be
a live link. OWASP's rule against CSV injection: such a text cell gets a leading single
quote. Numbers stay numbers (``-2`` is no formula), and a cell already quoted is left
alone, so a CSV read back and written again (grader.batch.outputs.export) is not quoted twice.
Nothing takes the quote off when reading: ``'=x`` may as well be an id as written.
Markdown and pictures show ids as written. The rule for one cell is
grader.core.spreadsheet_cell's, which the student's benchmark uses too.
"""

from grader.core.spreadsheet_cell import safe_cell


def safe_row(row):
    """One csv.writer row, every cell through safe_cell."""
    return [safe_cell(cell) for cell in row]


def csv_text(frame, bom=False):
    """``frame`` as CSV text without its index, every cell and heading through safe_cell.

    Rows end in CRLF (RFC 4180, as csv.writer writes): with pandas' ``\n`` a cell holding
    a bare carriage return goes unquoted, and a reader starts a new row, and a new cell
    that may look like a formula, after it. With ``bom``, a byte-order mark first: Excel
    then reads the file as UTF-8 (ids such as 李华) whatever the locale; pandas and csv
    with "utf-8-sig" skip it.
    """
    safe = frame.apply(lambda column: column.map(safe_cell)).rename(columns=safe_cell)
    return ("\ufeff" if bom else "") + safe.to_csv(index=False, lineterminator="\r\n")
