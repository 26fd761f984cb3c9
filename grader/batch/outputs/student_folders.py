"""Each student's output folder: the id as written (``李华``, ``Li Hua``), where it can be.

An output folder travels: zipped for a TA, copied to a laptop, handed back through
``share``. So a name is kept as it is when every common file system holds it (ext4,
APFS, and NTFS or exFAT after a copy or an unzip), and escaped only where one cannot:

* a path separator or a character Windows refuses (``/ \\ < > : " | ? *``), a control
  character, or one that does not show (a zero-width space would make two names look one);
* ``.``, ``..``, a leading dot (a hidden folder), a leading or trailing space, a trailing
  dot (Windows drops it), a Windows device name (``CON``, ``nul``, ``COM1``...);
* a name over ``MAX_BYTES`` of UTF-8 (file systems stop at 255);
* a name that starts like a formula (``= + - @``): ``students.csv`` and the share's
  ``index.csv`` name the folders, and grader.batch.outputs.spreadsheet would quote such a cell.

Such an id becomes the part that can be kept, ``_`` for each character that cannot, then
``-`` and ten hex digits of its sha256, so two ids never share a folder. Two ids that
differ only by letter case (``Ada``, ``ada``) would be one folder where case is ignored
(macOS, Windows): both get the hashed form. ``OUT_DIR/students.csv`` maps ids to folders.

Folders stay put: a student keeps the folder an earlier run of the same OUT_DIR gave them
(its ``batch.json``), the ``student-<hash>`` folders of graders before this rule included.
"""

import hashlib
import re
import unicodedata

from grader.core.spreadsheet_cell import FORMULA_STARTS

MAX_BYTES = 150
_REFUSED = re.compile(r'[/\\<>:"|?*]')
_DEVICES = re.compile(r"(con|prn|aux|nul|com[0-9¹²³]|lpt[0-9¹²³])(\..*)?", re.IGNORECASE)
_HASH_DIGITS = 10


def holdable(name):
    """Whether every common file system holds ``name`` as one folder name, as it is."""
    return (
        bool(name)
        and name.isprintable()
        and not _REFUSED.search(name)
        and not name.startswith((".", " ", *FORMULA_STARTS))
        and not name.endswith((".", " "))
        and not _DEVICES.fullmatch(name)
        and len(name.encode("utf-8")) <= MAX_BYTES
    )


def name_for(student, hashed=False):
    """The folder of ``student``: the id as written when it is ``holdable`` (and not
    ``hashed``), else its escaped form with a hash of the id."""
    student = unicodedata.normalize("NFC", student)
    if holdable(student) and not hashed:
        return student
    kept = "".join(
        character if character.isprintable() and not _REFUSED.match(character) else "_"
        for character in student
    ).strip(". ")
    kept = kept.encode("utf-8")[: MAX_BYTES - 1 - _HASH_DIGITS].decode("utf-8", "ignore")
    digest = hashlib.sha256(student.encode("utf-8")).hexdigest()[:_HASH_DIGITS]
    name = f"{kept.rstrip('. ') or 'student'}-{digest}"
    return name if holdable(name) else f"_{name}"  # NUL.txt-<hash>: a device; =x-<hash>: a formula


def assign(students, kept=None):
    """{student: folder} for ``students``: the folder ``kept`` maps each to (an earlier
    run's, when it is holdable), else ``name_for``; folders that differ only by case are
    given the hashed form."""
    kept = kept if isinstance(kept, dict) else {}
    folders = {}
    for student in students:
        earlier = kept.get(student)
        folders[student] = (
            earlier if isinstance(earlier, str) and holdable(earlier) else name_for(student)
        )
    by_case = {}
    for student, folder in folders.items():
        by_case.setdefault(folder.casefold(), []).append(student)
    for group in by_case.values():
        if len(group) > 1:
            for student in group:
                folders[student] = name_for(student, hashed=True)
    return folders
