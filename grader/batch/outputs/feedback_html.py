"""A student's feedback.md as one HTML page that needs nothing beside it.

An LMS hands the student one file (grader.batch.outputs.feedback_zip), so the pictures
feedback.md links beside it go inside the page as base64 ``data:`` URIs, and a picture that
is not there is left as its caption, never a link. The Markdown read is what
grader.batch.outputs.feedback writes: headings, paragraphs, ``-`` lists (continued and
nested by two spaces), tables, fenced code, ``**bold**``, ``code``, backslash escapes and
pictures; the standard library renders it, so no Markdown package joins the grading stack.
Every character of text is HTML-escaped before any tag is added: a student's id or message
stays text.
"""

import base64
import html
import re

from grader.batch.outputs import feedback

PICTURES = (feedback.ARRANGEMENT_PICTURE, feedback.WHAT_IF_PICTURE)
_FENCE = re.compile(r"^(`{3,})\w*\s*$")
_HEADING = re.compile(r"^(#{1,6}) (.*)$")
_INLINE = re.compile(
    r"\\(?P<escaped>[!-/:-@\[-`{-~])|(?P<ticks>`+)(?P<code>.+?)(?P=ticks)"
    r"|\*\*(?P<bold>.+?)\*\*|!\[(?P<alt>[^\]]*)\]\((?P<src>[^)\s]+)\)"
)
_CELL_BORDER = re.compile(r"(?<!\\)\|")
STYLE = (
    "body{font-family:sans-serif;max-width:60em;margin:2em auto;padding:0 1em;"
    "line-height:1.5}table{border-collapse:collapse}td,th{border:1px solid #bbb;"
    "padding:.2em .6em}pre{background:#f4f4f4;padding:.6em;overflow-x:auto}"
    "img{max-width:100%}"
)


def page(folder):
    """The HTML of OUT_DIR/<folder>/feedback.md, its pictures inlined."""
    lines = (folder / "feedback.md").read_text(encoding="utf-8").splitlines()
    title = next((line[2:] for line in lines if line.startswith("# ")), "ntgemm feedback")
    body = "\n".join(_blocks(lines, lambda name: _picture(folder, name)))
    return (
        f'<!DOCTYPE html>\n<html>\n<head>\n<meta charset="utf-8">\n'
        f"<title>{_inline(title, lambda name: None)}</title>\n<style>{STYLE}</style>\n</head>\n"
        f"<body>\n{body}\n</body>\n</html>\n"
    )


def _picture(folder, name):
    """The data: URI of a picture feedback.md links beside it, None when there is none."""
    path = folder / name
    if name not in PICTURES or not path.is_file():
        return None
    return "data:image/png;base64," + base64.b64encode(path.read_bytes()).decode("ascii")


def _blocks(lines, picture):
    """The HTML blocks of Markdown ``lines``."""
    out, index = [], 0
    while index < len(lines):
        line = lines[index]
        fence, heading = _FENCE.match(line), _HEADING.match(line)
        if fence:  # closed by a run of backticks at least as long (feedback.fenced)
            closing = re.compile(f"^`{{{len(fence.group(1))},}}\\s*$")
            end = next(
                (at for at in range(index + 1, len(lines)) if closing.match(lines[at])), len(lines)
            )
            code = "\n".join(lines[index + 1 : end])
            out.append(f"<pre><code>{html.escape(code)}</code></pre>")
            index = end + 1
            continue
        if heading:
            level = len(heading.group(1))
            out.append(f"<h{level}>{_inline(heading.group(2), picture)}</h{level}>")
            index += 1
            continue
        if not line.strip():
            index += 1
            continue
        end = index + 1
        if line.startswith("|"):
            while end < len(lines) and lines[end].startswith("|"):
                end += 1
            out.append(_table(lines[index:end], picture))
        elif line.startswith("- "):
            while end < len(lines) and lines[end].startswith(("- ", "  ")):
                end += 1
            out.append(_list(lines[index:end], picture))
        else:
            while end < len(lines) and lines[end].strip() and not _starts_block(lines[end]):
                end += 1
            out.append(f"<p>{_joined(lines[index:end], picture)}</p>")
        index = end
    return out


def _starts_block(line):
    return bool(_FENCE.match(line) or _HEADING.match(line)) or line.startswith(("|", "- "))


def _table(lines, picture):
    """A Markdown table: its first row the header, its ``| --- |`` row dropped."""
    rows = [
        [cell.strip() for cell in _CELL_BORDER.split(line.strip()[1:-1])]
        for line in lines
        if not re.fullmatch(r"[\s|:-]+", line)
    ]
    head = "".join(f"<th>{_inline(cell, picture)}</th>" for cell in rows[0])
    body = "".join(
        "<tr>" + "".join(f"<td>{_inline(cell, picture)}</td>" for cell in row) + "</tr>\n"
        for row in rows[1:]
    )
    return f"<table>\n<tr>{head}</tr>\n{body}</table>"


def _list(lines, picture):
    """``- `` items; a line indented two spaces continues the item above, ``  - `` nests."""
    items = []
    for line in lines:
        if line.startswith("- "):
            items.append([line[2:]])
        else:
            items[-1].append(line[2:])
    out = []
    for first, *rest in items:
        nested = [line for line in rest if line.startswith("- ")]
        text = [first] + [line for line in rest if not line.startswith("- ")]
        out.append(
            f"<li>{_joined(text, picture)}" + (_list(nested, picture) if nested else "") + "</li>"
        )
    return "<ul>\n" + "\n".join(out) + "\n</ul>"


def _joined(lines, picture):
    """Lines of one paragraph: a line that ends in two spaces breaks there."""
    return "".join(
        _inline(line.strip(), picture)
        + ("" if at == len(lines) - 1 else "<br>\n" if line.endswith("  ") else "\n")
        for at, line in enumerate(lines)
    )


def _inline(text, picture):
    """One line of Markdown text as HTML, everything but the markup escaped."""
    out, at = [], 0
    for match in _INLINE.finditer(text):
        out.append(html.escape(text[at : match.start()]))
        at = match.end()
        if match.group("escaped"):
            out.append(html.escape(match.group("escaped")))
        elif match.group("code"):
            out.append(f"<code>{html.escape(match.group('code'))}</code>")
        elif match.group("bold"):
            out.append(f"<strong>{_inline(match.group('bold'), picture)}</strong>")
        else:
            uri, alt = picture(match.group("src")), html.escape(match.group("alt"))
            out.append(f'<img src="{uri}" alt="{alt}">' if uri else f"<em>[{alt}]</em>")
    return "".join(out) + html.escape(text[at:])
