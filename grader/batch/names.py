"""Student ids from the names students and LMS downloads give their entries, as printable text.

An entry's name is raw bytes on disk: it is decoded as UTF-8, else GB18030, else with
backslash escapes (``decode_name``), read as an LMS download name where it is one
(``identity``: Canvas, Moodle, Gradescope, the generic ``<id>_..._ninetoothed_gemm``), and
passed through ``printable``, so that no control character, ANSI escape or bidi override
reaches a terminal, CSV or JSON file.
"""

import dataclasses
import os
import re
import unicodedata

# LMS download names (see ``identity``): Canvas's <name>[_LATE]_<user id>_<file id>_<file>,
# Moodle's <full name>_<participant id>_assignsubmission_file_[<file>], Gradescope's
# submission_<id>, and the generic <id>_<anything>_ninetoothed_gemm.
_CANVAS_NAME = re.compile(r"^(?P<id>[^_]+)_(?P<late>LATE_)?(?P<lms>\d+)_\d+_(?P<file>.+)$")
_MOODLE_NAME = re.compile(r"^(?P<id>.+?)_(?P<lms>\d+)_assignsubmission_[a-z]+_(?P<file>.*)$")
# A Moodle folder name ends with the marker: the id is all before the last "_<id>_..._".
_MOODLE_FOLDER = re.compile(r"^(?P<id>.+)_(?P<lms>\d+)_assignsubmission_[a-z]+_?(?P<file>)$")
_GRADESCOPE_NAME = re.compile(r"^submission_(?P<lms>\d+)$")
_LMS_NAME = re.compile(r"^(?P<id>[^_]+)_.*ninetoothed_gemm(-\d+)?$")
# Bidirectional formatting characters (they reorder the text around them on screen).
_BIDI = frozenset([0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A)])


def printable(text):
    """``text`` with every character that could act on a terminal or reorder text escaped.

    C0 and C1 control characters (ANSI escapes, ``\\r``, ``\\n``, ``\\t``, NUL),
    DEL, lone surrogates, line and paragraph separators and the bidi formatting
    characters (U+061C, U+200E, U+200F, U+202A-U+202E, U+2066-U+2069) become
    visible text, as Python writes them: ``\\x1b``, ``\\u202e``. Everything
    else, including any other script (``李华``), is kept as it is; text that is
    already printable comes back unchanged, and ``printable(printable(t)) ==
    printable(t)``. The result always encodes to UTF-8. A backslash is kept as it
    is, so the escaping is for display and cannot be undone exactly. Use it on
    any untrusted text before printing it or writing it to a report.
    """
    if not isinstance(text, str):
        text = str(text)
    if text.isprintable():
        return text
    pieces = []
    for char in text:
        code = ord(char)
        if code in _BIDI or unicodedata.category(char) in ("Cc", "Cs", "Zl", "Zp"):
            pieces.append(f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")
        else:
            pieces.append(char)
    return "".join(pieces)


def decode_name(name):
    """A str for a file name given as raw bytes (or as ``os.listdir`` gives it).

    The raw bytes (``os.fsencode``) are decoded as UTF-8, else as GB18030 (Chinese
    Windows and LMS downloads), else as UTF-8 with backslash escapes for the bad
    bytes. The result may still hold control characters: see ``printable``.
    """
    if isinstance(name, str):
        try:
            name = os.fsencode(name)
        except UnicodeEncodeError:  # a str that never came from the file system
            return name
    for encoding in ("utf-8", "gb18030"):
        try:
            return name.decode(encoding)
        except UnicodeDecodeError:
            pass
    return name.decode("utf-8", "backslashreplace")


def display(name):
    """A file name (str from the file system, or bytes) as printable text."""
    return printable(decode_name(name))


@dataclasses.dataclass(frozen=True)
class Identity:
    """Who an entry belongs to: the student id, the LMS's own id, and whether the LMS
    marked it late (Canvas puts ``LATE`` in the name of a late submission)."""

    student: str
    lms_id: str = ""
    late: bool = False
    uploaded: str = ""  # the name the student uploaded, when the LMS name carries it
    lms: str = ""  # which LMS named it, one of LMS, when it carries an LMS id


LMS = ("canvas", "moodle", "gradescope")


def identity(stem, folder=False):
    """The Identity of a file or archive named ``stem`` (no extension), or of a folder.

    Recognised, in order: Canvas (``smithjohn_12345_67890_ninetoothed_gemm``, late as
    ``smithjohn_LATE_12345_...``), Moodle (``Li Hua_4711_assignsubmission_file_``, a
    folder or a file), Gradescope's export (``submission_123456``), then the generic
    LMS style ``<id>_<anything>_ninetoothed_gemm`` (a file's id is the text before the
    first ``_``). Any other folder or file name is the id as it is. ``stem`` may be raw
    bytes or a str from the file system; the id is decoded as ``decode_name`` says,
    NFC-normalised and made ``printable``.
    """
    stem = unicodedata.normalize("NFC", decode_name(stem))
    patterns = (
        ((_MOODLE_FOLDER, "moodle"),)
        if folder
        else ((_CANVAS_NAME, "canvas"), (_MOODLE_NAME, "moodle"))
    )
    for pattern, lms in patterns:
        match = pattern.match(stem)
        if match:
            return Identity(
                printable(match.group("id")),
                match.group("lms"),
                bool(match.groupdict().get("late")),
                match.group("file"),
                lms,
            )
    match = _GRADESCOPE_NAME.match(stem)
    if match:
        return Identity(printable(stem), match.group("lms"), lms="gradescope")
    match = _LMS_NAME.match(stem)
    if match and not folder and stem != "ninetoothed_gemm":
        return Identity(printable(match.group("id")))
    return Identity(printable(stem))


_ARCHIVE_ORIGIN = re.compile(r"^(?P<stem>[^/]*?)\.zip(:|$)", re.IGNORECASE)


def _download_entry(origin):
    """(the name of the top-level entry of ``origin``, less ``.py`` or ``.zip``; its Identity)."""
    archive = _ARCHIVE_ORIGIN.match(origin)
    if archive:
        return archive.group("stem"), identity(archive.group("stem"))
    if "/" in origin:
        folder = origin.split("/", 1)[0]
        return folder, identity(folder, folder=True)
    stem = re.sub(r"\.py$", "", origin, flags=re.IGNORECASE)
    return stem, identity(stem)


def lms_of(origin):
    """The LMS whose download name the entry of ``origin`` has (grader.batch.grade.intake's
    path of a submission in its folder: ``x.py``, ``x.zip:member``, ``x/...``), else "".

    Its LMS id means something to that LMS alone: an export to another one must refuse it
    (grader.batch.outputs.export)."""
    return _download_entry(origin)[1].lms


def download_prefix(origin):
    """What the LMS download name of the entry of ``origin`` puts before the uploaded file's
    name: Canvas's ``lihua_LATE_4711_101_``, Moodle's ``Li Hua_2231_assignsubmission_file_``
    (a folder's whole name); "" for a name no LMS gave. An LMS's bulk upload matches a file
    by it (grader.batch.outputs.feedback_zip)."""
    stem, who = _download_entry(origin)
    if who.lms not in ("canvas", "moodle"):
        return ""
    stem = unicodedata.normalize("NFC", decode_name(stem))  # as identity read it
    return stem[: len(stem) - len(who.uploaded)]
