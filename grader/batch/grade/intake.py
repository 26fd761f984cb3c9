"""Find every student's submission in a folder, without changing anything in it.

Accepted layouts, mixed freely in one folder:

* a folder per student: ``<id>/ninetoothed_gemm.py`` (the shallowest file of that
  name inside the folder counts). A folder without it is graded from its only ``.py``
  file, else from its only ``.zip`` archive; else it is a ``missing_file`` student.
  The shallowest ``*.csv`` beside it, if any, is kept as the student's hand-in
  benchmark CSV (grader.batch.timing.handin checks it); other files are ignored;
* flat files: ``<id>.py``, or an LMS download name (``identity``): Canvas's
  ``<name>[_LATE]_<user id>_<file id>_<file>``, Moodle's
  ``<full name>_<participant id>_assignsubmission_<plugin>_<file>``, or the generic
  ``<id>_<anything>_ninetoothed_gemm.py``. The LMS's id and Canvas's late mark are
  kept (``Submission.lms_id``, ``Submission.late``); Moodle's and Gradescope's
  (``submission_<id>``) folder names are read the same way. Every flat file whose
  LMS name carries a user id belongs to that student, whatever its name: the
  latest ``ninetoothed_gemm[-N].py`` counts, else the student's only ``.py`` file
  (``Submission.taken`` names it), else the latest ``.zip``, else the student is
  ``missing_file``, the files found named; a ``.csv`` among them is the hand-in CSV
  unless the graded archive holds one;
* ``.zip`` archives, ``<id>.zip`` (or LMS style), holding ``ninetoothed_gemm.py``
  somewhere inside, else one ``.py`` file, else one ``.zip`` archive read the same
  way (``MAX_ZIP_DEPTH`` deep). Archives are never extracted: the one member is read
  into memory, after guards on member count, total uncompressed size, member size and
  paths that would escape the archive; symbolic-link members are never read. A
  rejected or unreadable archive is a ``missing_file`` student, with the reason. The
  shallowest ``*.csv`` member is kept as the hand-in CSV, read the same way.

Every top-level entry ends in exactly one student's row or in the skipped list, and
nothing here stops the class (``IntakeError`` only when SUBMISSIONS_DIR itself cannot be
listed). The written rules, in the order they apply:

1. Hidden entries (``.git``, ``.DS_Store``, ``__MACOSX``, ``__pycache__``), symbolic
   links and files of another kind are skipped, each with why (``discover``'s ``skipped``).
2. An entry whose reading raises is that entry's own row: ``missing_file``, "could not
   read", the error, and what the TA should do.
3. Entries belong to one student when their ids are equal after Unicode NFC (macOS writes
   names in NFD) and their LMS ids are equal (or both absent). So Moodle's
   ``..._assignsubmission_file_`` and ``..._assignsubmission_onlinetext_`` folders of one
   participant, ``alice/`` beside ``alice.py``, and one name in NFC and NFD are one student.
4. Of one student's entries, the graded one is the first of: those that hold a file to
   grade; then the latest modified (the file read, ``os.lstat``'s mtime); then the first
   by path. The others are kept on the row as seen (``Submission.seen``), with why.
5. Students whose ids are equal but whose LMS ids differ are two students: each one with
   an LMS id is shown with it (``lihua (4711)``). An id still taken after that gets
   `` (2)``, `` (3)``, ... in path order.

Everything is read once, here, into memory (``Submission.data``): the batch
grader then works on private copies and never opens the submissions folder again.

The folder is treated as hostile:

* only regular files are ever opened, never blocking, and at most ``MAX_FILE_BYTES + 1``
  bytes of one are read (grader.batch.grade.safe_read), so a FIFO, a device or a huge
  (or sparse) file costs nothing; a submission that is not a regular file is a
  ``missing_file`` student, with the reason. Symbolic links are never followed;
* names are raw bytes on disk: ids are decoded and made printable, so that no control
  character, ANSI escape or bidi override reaches a terminal, CSV or JSON file
  (grader.batch.names).

grader.batch.grade.folder_digest checks that the folder is unchanged after the batch.
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import os
import pathlib
import re
import stat
import zipfile

from grader.batch.names import Identity, decode_name, display, identity, printable
from grader.batch.grade.safe_read import NotRegular, open_regular, read_limited
from grader.core.messages import say

FILE_NAME = "ninetoothed_gemm.py"
MAX_FILE_BYTES = 1 << 20  # a submission is one small source file
MAX_ZIP_MEMBERS = 500
MAX_ZIP_TOTAL_BYTES = 64 << 20
MAX_ZIP_BYTES = MAX_ZIP_TOTAL_BYTES + (4 << 20)  # the archive file itself, before opening it
MAX_ZIP_DEPTH = 3  # an archive inside an archive inside an archive, no deeper
MAX_FOLDER_ENTRIES = 100_000  # entries looked at in one student's folder
_SUBMISSION_STEM = re.compile(r"^ninetoothed_gemm(-(?P<version>\d+))?$")


class IntakeError(Exception):
    """The folder cannot be read as a class: the grader stops and says why."""


@dataclasses.dataclass
class Submission:
    student: str
    origin: str  # where it came from, relative to the submissions folder
    data: bytes = b""
    problem: str = ""  # non-empty: the student has no usable file (missing_file)
    handin: bytes = b""  # the benchmark CSV handed in beside the file, if any
    handin_origin: str = ""
    lms_id: str = ""  # the LMS's own id for the student, from its download names
    late: bool = False  # the LMS marked the submission late
    taken: str = ""  # the file graded in place of ninetoothed_gemm.py: the only Python file
    # The student's other entries and files, not graded: (path, why), paths as ``origin``.
    seen: list = dataclasses.field(default_factory=list)
    modified: float = 0.0  # the mtime of what was read, for rule 4 of the module's docstring

    def __post_init__(self):
        # Everything here came from the students' folder: safe to print and to write.
        self.student = printable(self.student)
        self.origin = printable(self.origin)
        self.problem = printable(self.problem)
        self.handin_origin = printable(self.handin_origin)
        self.taken = printable(self.taken)

    @property
    def sha256(self):
        return hashlib.sha256(self.data).hexdigest() if not self.problem else ""


def _hidden(name):
    return name.startswith(".") or name in ("__pycache__", "__MACOSX")


def _relative(root, path):
    """``path`` relative to ``root``, as printable text with ``/`` separators."""
    parts = pathlib.PurePath(os.path.relpath(path, root)).parts
    return "/".join(display(part) for part in parts)


def _mtime(path):
    try:
        return os.lstat(path).st_mtime
    except OSError:
        return 0.0


def discover(
    root: str | os.PathLike, skipped: list[tuple[str, str]] | None = None
) -> list[Submission]:
    """Every submission under ``root``, sorted by student id. ``skipped``, a list, gets
    (entry, why) for each top-level entry that is not a student's submission."""
    root = pathlib.Path(root)
    if not root.is_dir():
        hint = (
            ": it is an archive, as an LMS hands the whole class out; unzip it into a "
            "folder (unzip -d FOLDER ARCHIVE) and give that folder"
            if zipfile.is_zipfile(root)
            else ""
        )
        raise IntakeError(f"SUBMISSIONS_DIR {printable(str(root))!r} is not a folder{hint}")
    skipped = [] if skipped is None else skipped
    try:
        with os.scandir(root) as listing:
            entries = sorted(listing, key=lambda e: os.fsencode(e.name))
    except OSError as error:
        raise IntakeError(
            f"SUBMISSIONS_DIR {printable(str(root))!r} cannot be listed: {error.strerror or error}"
        ) from None
    found, uploads = [], {}
    for entry, mode in _visible(entries, skipped):
        name = display(entry.name)
        if stat.S_ISLNK(mode):
            skipped.append((name, "a symbolic link, which is not followed"))
            continue
        suffix = pathlib.PurePath(entry.name).suffix.lower()
        stem = entry.name[: -len(suffix)] if suffix else entry.name
        folder = stat.S_ISDIR(mode)
        who = identity(entry.name if folder else stem, folder=folder)
        if not folder and who.lms_id and who.uploaded:  # one of the files an LMS id uploaded
            uploads.setdefault((who.lms, who.lms_id), []).append(_Upload(entry.path, who, suffix))
            continue
        if not folder and suffix not in (".py", ".zip"):
            skipped.append((name, "not a folder, .py or .zip, nor a file of an LMS download"))
            continue
        reader = _from_folder if folder else _from_zip if suffix == ".zip" else _from_file
        submission = _guarded(root, entry.path, who, reader, root, entry.path, who.student)
        submission.lms_id, submission.late = who.lms_id, who.late
        found.append(submission)
    for files in uploads.values():
        found.append(_guarded(root, files[0].path, files[0].who, _from_uploads, root, files))
    return _by_student(found)


def _guarded(root, path, who, read, *args):
    """``read(*args)``, or, when reading the entry at ``path`` raises, a row saying so
    (rule 2)."""
    try:
        return read(*args)
    except Exception as error:  # noqa: BLE001 - one entry's trouble is that entry's row, never the class's
        why = f"{type(error).__name__}: {error}"
        return Submission(
            who.student, _relative(root, path), problem=say("could_not_read", why=why)
        )


@dataclasses.dataclass
class _Upload:
    """One flat file of an LMS download: its path, whose it is, and its suffix."""

    path: str
    who: Identity
    suffix: str

    @property
    def name(self):
        """The file's name as the student uploaded it."""
        return display(self.who.uploaded + self.suffix)

    @property
    def version(self):
        """The LMS's number for a re-upload (``ninetoothed_gemm-2.py`` is 2), 0 for the first."""
        match = re.search(r"-(\d+)$", self.who.uploaded)
        return int(match.group(1)) if match else 0


def _from_uploads(root, files):
    """One student's Submission from the flat files an LMS download holds of one user id."""
    who = files[0].who
    late = any(upload.who.late for upload in files)
    python = [upload for upload in files if upload.suffix == ".py"]
    named = [upload for upload in python if _SUBMISSION_STEM.match(upload.who.uploaded)]
    archives = [upload for upload in files if upload.suffix == ".zip"]
    chosen, taken = None, ""
    if named:
        chosen = max(named, key=lambda upload: upload.version)
    elif len(python) == 1:
        chosen, taken = python[0], python[0].name
    elif not python and archives:
        chosen = max(archives, key=lambda upload: (upload.version, upload.name))
    if chosen is None:
        listed = ", ".join(sorted(upload.name for upload in files))
        submission = Submission(
            who.student,
            _relative(root, files[0].path),
            problem=say(
                "none_handed_in_of_several" if python else "none_handed_in",
                file=FILE_NAME,
                listed=listed,
            ),
        )
    elif chosen.suffix == ".zip":
        submission = _from_zip(root, chosen.path, who.student)
    else:
        submission = _from_file(root, chosen.path, who.student)
        submission.taken = taken
    used = {chosen.path if chosen else files[0].path}  # the row's origin is no other file
    handins = [upload for upload in files if upload.suffix == ".csv"]
    handin = max(handins, key=lambda upload: (upload.version, upload.name), default=None)
    if handin is not None and not submission.problem and not submission.handin_origin:
        data, problem = read_limited(handin.path, MAX_FILE_BYTES)
        if not problem:
            submission.handin, submission.handin_origin = data, _relative(root, handin.path)
            used.add(handin.path)
    submission.lms_id, submission.late = who.lms_id, late
    submission.seen += [
        (_relative(root, upload.path), say("seen_another_file"))
        for upload in files
        if upload.path not in used
    ]
    return submission


def _by_student(found):
    """``found`` as one Submission per student, sorted by id (rules 3 to 5 of the module's
    docstring): never an error, whatever the names."""
    groups = {}
    for submission in found:
        groups.setdefault((submission.student, submission.lms_id), []).append(submission)
    merged = [_merge(group) for group in groups.values()]
    names = {}
    for submission in merged:
        names.setdefault(submission.student, []).append(submission)
    for student, same in names.items():
        if len(same) > 1:
            for submission in same:
                if submission.lms_id:
                    submission.student = f"{student} ({submission.lms_id})"
    chosen = {}
    for submission in sorted(merged, key=lambda s: s.origin):
        base, count = submission.student, 1
        while submission.student in chosen:
            count += 1
            submission.student = f"{base} ({count})"
        chosen[submission.student] = submission
    return [chosen[key] for key in sorted(chosen)]


def _merge(group):
    """The one Submission of a student's entries (rule 4), the others kept as seen."""
    group = sorted(group, key=lambda s: (bool(s.problem), -s.modified, s.origin))
    graded, others = group[0], group[1:]
    for other in others:
        why = (
            say("seen_nothing_to_grade", why=other.problem)
            if other.problem
            else say("seen_older", graded=graded.origin)
        )
        graded.seen.append((other.origin, why))
        graded.seen += other.seen
        graded.late = graded.late or other.late
    return graded


def _from_file(root, path, student):
    data, problem = read_limited(path, MAX_FILE_BYTES)
    return Submission(student, _relative(root, path), data or b"", problem, modified=_mtime(path))


def _is_submission(name):
    return name == FILE_NAME


def _is_handin(name):
    return name.lower().endswith(".csv")


def _is_python(name):
    return name.lower().endswith(".py")


def _is_archive(name):
    return name.lower().endswith(".zip")


def _visible(entries, skipped=None):
    """(entry, its lstat mode) for each entry not hidden and not gone since the listing;
    ``skipped``, if a list, gets (name, why) for each hidden one."""
    for entry in entries:
        if _hidden(entry.name):
            if skipped is not None:
                skipped.append(
                    (display(entry.name), "hidden (a dot file, __MACOSX or __pycache__)")
                )
            continue
        try:
            mode = os.lstat(entry.path).st_mode
        except OSError:
            if skipped is not None:
                skipped.append((display(entry.name), "gone before it could be read"))
            continue
        yield entry, mode


def _find_in_folder(folder, wanted=_is_submission, shallowest=True):
    """(paths, problem): the entries whose names are ``wanted``, not links or folders,
    as (path relative to ``folder``, path), shallowest first, ties by relative path; with
    ``shallowest``, those of the shallowest level that has any.

    Breadth first; hidden folders, ``__pycache__`` and ``__MACOSX`` are skipped; links
    are never followed; nothing is opened.
    """
    level, seen, links, found = [(folder, "")], 0, [], []
    while level and not (shallowest and found):
        candidates, deeper = [], []
        for directory, relative in level:
            try:
                with os.scandir(directory) as listing:
                    entries = list(listing)
            except OSError:
                continue
            seen += len(entries)
            if seen > MAX_FOLDER_ENTRIES:
                return [], f"stopped looking after {MAX_FOLDER_ENTRIES} entries"
            for entry, mode in _visible(entries):
                inside = f"{relative}/{entry.name}" if relative else entry.name
                if stat.S_ISLNK(mode):
                    if wanted(entry.name):
                        links.append(inside)
                elif stat.S_ISDIR(mode):
                    deeper.append((entry.path, inside))
                elif wanted(entry.name):
                    candidates.append((inside, entry.path))
        found += sorted(candidates)
        level = sorted(deeper, key=lambda item: item[1])
    if links and not found:
        return [], f"{display(min(links))} is a symbolic link, which is not followed"
    return found, ""


def _from_folder(root, folder, student):
    name = display(os.path.basename(folder))
    origin = _relative(root, folder) + "/"
    found, note = _find_in_folder(folder)
    taken = ""
    if not found:
        python, _ = _find_in_folder(folder, _is_python, shallowest=False)
        archives, _ = _find_in_folder(folder, _is_archive, shallowest=False)
        if not python and len(archives) == 1:
            return _from_zip(root, archives[0][1], student)
        listed = ", ".join(display(inside) for inside, _ in python)
        if len(python) != 1:
            problem = say(
                "none_in_folder", file=FILE_NAME, folder=f"{name}/" + (f" ({note})" if note else "")
            )
            if python:
                problem = say("several_python_files", evidence=problem, listed=listed)
            return Submission(student, origin, problem=problem)
        found, taken = python, listed
    path = found[0][1]
    data, problem = read_limited(path, MAX_FILE_BYTES)
    submission = Submission(
        student, _relative(root, path), data or b"", problem, taken=taken, modified=_mtime(path)
    )
    handin, _ = _find_in_folder(folder, _is_handin)
    if handin:
        handin_data, handin_problem = read_limited(handin[0][1], MAX_FILE_BYTES)
        if not handin_problem:
            submission.handin = handin_data
            submission.handin_origin = _relative(folder, handin[0][1])
    return submission


def files_in(folder: str | os.PathLike) -> list[str]:
    """The printable paths of the files in ``folder`` and below, as intake looks (hidden
    entries and links aside): what a student handed in, to tell one whose upload has no
    ninetoothed_gemm.py what it had instead."""
    found, _ = _find_in_folder(folder, lambda name: True, shallowest=False)
    return [display(inside) for inside, _ in found]


def _from_zip(root, path, student):
    origin = _relative(root, path)
    name = display(os.path.basename(path))
    modified = _mtime(path)
    try:
        fd = open_regular(path)
    except NotRegular as error:
        return Submission(student, origin, problem=f"{name} is not a regular file (it is {error})")
    except OSError as error:
        return Submission(
            student, origin, problem=say("archive_unreadable", why=error.strerror or error)
        )
    with os.fdopen(fd, "rb") as stream:
        size = os.fstat(fd).st_size
        if size > MAX_ZIP_BYTES:
            return Submission(
                student,
                origin,
                problem=say(
                    "archive_rejected",
                    why=f"{name} is {size} bytes, over the limit of {MAX_ZIP_BYTES}",
                ),
            )
        submission = _from_archive(stream, student, origin, name)
    submission.modified = modified
    return submission


def _from_archive(stream, student, origin, name, depth=1):
    """The Submission an archive (a file object) holds: its ``ninetoothed_gemm.py``, else
    its only ``.py`` member, else its only ``.zip`` member, read the same way."""
    try:
        with zipfile.ZipFile(stream) as archive:
            problem, member = _check_archive(archive)
            if problem:
                return Submission(student, origin, problem=say("archive_rejected", why=problem))
            taken = ""
            if member is None:
                python = _members(archive, _is_python)
                nested = _members(archive, _is_archive)
                if len(python) == 1:
                    member, taken = python[0], printable(decode_name(python[0].filename))
                elif not python and len(nested) == 1 and depth < MAX_ZIP_DEPTH:
                    inner = nested[0]
                    with archive.open(inner) as handle:
                        data = handle.read(MAX_ZIP_TOTAL_BYTES + 1)
                    inner_name = printable(decode_name(inner.filename))
                    return _from_archive(
                        io.BytesIO(data), student, f"{origin}:{inner_name}", inner_name, depth + 1
                    )
                else:
                    return Submission(
                        student,
                        origin,
                        problem=say("none_in_archive", file=FILE_NAME, archive=name),
                    )
            with archive.open(member) as handle:
                data = handle.read(MAX_FILE_BYTES + 1)
            if len(data) > MAX_FILE_BYTES:
                return Submission(
                    student,
                    origin,
                    problem=say("archive_rejected", why=f"{member.filename} is too large"),
                )
            submission = Submission(student, f"{origin}:{member.filename}", data, taken=taken)
            handin = _member(archive, _is_handin)
            if handin is not None and handin.file_size <= MAX_FILE_BYTES:
                with archive.open(handin) as handle:
                    submission.handin = handle.read(MAX_FILE_BYTES + 1)[:MAX_FILE_BYTES]
                submission.handin_origin = printable(decode_name(handin.filename))
            return submission
    except (
        zipfile.BadZipFile,
        OSError,
        RuntimeError,
        NotImplementedError,
        ValueError,
        EOFError,
        zipfile.LargeZipFile,
    ) as error:
        return Submission(student, origin, problem=say("archive_unreadable", why=error))


def _check_archive(archive):
    """(problem, member): the reason to reject the archive, or the member to read."""
    members = archive.infolist()
    if len(members) > MAX_ZIP_MEMBERS:
        return f"{len(members)} members, over the limit of {MAX_ZIP_MEMBERS}", None
    total = sum(info.file_size for info in members)
    if total > MAX_ZIP_TOTAL_BYTES:
        return f"{total} bytes uncompressed, over the limit of {MAX_ZIP_TOTAL_BYTES}", None
    for info in members:
        name = info.filename
        parts = pathlib.PurePosixPath(name.replace("\\", "/")).parts
        if name.startswith(("/", "\\")) or re.match(r"^[A-Za-z]:", name) or ".." in parts:
            return f"member {name!r} would land outside the archive's folder", None
    member = _member(archive, _is_submission)
    links = [
        info.filename
        for info in members
        if stat.S_ISLNK(info.external_attr >> 16)
        and _is_submission(pathlib.PurePosixPath(info.filename).name)
    ]
    if member is None and links:
        return f"member {links[0]!r} is a symbolic link, which is never read", None
    return "", member


def _members(archive, wanted):
    """The regular members whose names are ``wanted``, shallowest first, ties by name:
    no folder, no symbolic link, nothing hidden or under ``__MACOSX``."""
    candidates = []
    for info in archive.infolist():
        parts = pathlib.PurePosixPath(info.filename.replace("\\", "/")).parts
        if info.is_dir() or not parts or parts[0] == "__MACOSX":
            continue
        if stat.S_ISLNK(info.external_attr >> 16):
            continue
        if wanted(parts[-1]) and not any(part.startswith(".") for part in parts):
            candidates.append((len(parts), info.filename, info))
    return [info for _, _, info in sorted(candidates, key=lambda c: c[:2])]


def _member(archive, wanted):
    """The shallowest member ``_members`` gives, or None."""
    members = _members(archive, wanted)
    return members[0] if members else None


def shard(submissions: list[Submission], index: int, count: int) -> list[Submission]:
    """The ``index``-th (1-based) of ``count`` deterministic slices: every count-th sorted id."""
    ordered = sorted(submissions, key=lambda s: s.student)
    return [s for position, s in enumerate(ordered) if position % count == index - 1]
