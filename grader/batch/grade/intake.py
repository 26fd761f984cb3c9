"""Find every student's submission in a folder, without changing anything in it.

Accepted layouts, mixed freely in one folder:

* a folder per student: ``<id>/ninetoothed_gemm.py`` (the shallowest file of that
  name inside the folder counts). A folder without it is a ``missing_file``
  student. The shallowest ``*.csv`` beside it, if any, is kept as the student's
  hand-in benchmark CSV (grader.batch.timing.handin checks it); other files are ignored;
* flat files: ``<id>.py``, or an LMS download name (``identity``): Canvas's
  ``<name>[_LATE]_<user id>_<file id>_<file>``, Moodle's
  ``<full name>_<participant id>_assignsubmission_file_<file>``, or the generic
  ``<id>_<anything>_ninetoothed_gemm.py``. The LMS's id and Canvas's late mark are
  kept (``Submission.lms_id``, ``Submission.late``); Moodle's and Gradescope's
  (``submission_<id>``) folder names are read the same way;
* ``.zip`` archives, ``<id>.zip`` (or LMS style), holding ``ninetoothed_gemm.py``
  somewhere inside. Archives are never extracted: the one member is read into
  memory, after guards on member count, total uncompressed size, member size,
  symlinks and paths that would escape the archive. A rejected archive is a
  ``missing_file`` student, with the reason. The shallowest ``*.csv`` member is
  kept as the hand-in CSV, read the same way.

Everything is read once, here, into memory (``Submission.data``): the batch
grader then works on private copies and never opens the submissions folder again.
Hidden entries (``.git``, ``.DS_Store``, ``__MACOSX``) and ``__pycache__`` are skipped.

The folder is treated as hostile:

* only regular files are ever opened (``os.lstat`` first, then ``O_NOFOLLOW |
  O_NONBLOCK`` and ``os.fstat`` again on the open descriptor), so a FIFO, socket
  or device node never blocks the grader nor is read; a submission that is not a
  regular file is a ``missing_file`` student, with the reason. Symbolic links are
  never followed;
* sizes are checked on the open descriptor before reading, and at most
  ``MAX_FILE_BYTES + 1`` bytes are read, so a huge (or sparse) file costs nothing;
* names are raw bytes on disk: ids are decoded as UTF-8, else GB18030, else
  with backslash escapes, then passed through ``printable`` so that no control
  character, ANSI escape or bidi override reaches a terminal, CSV or JSON file.
"""

import dataclasses
import errno
import hashlib
import os
import pathlib
import re
import stat
import unicodedata
import zipfile

FILE_NAME = "ninetoothed_gemm.py"
MAX_FILE_BYTES = 1 << 20  # a submission is one small source file
MAX_ZIP_MEMBERS = 500
MAX_ZIP_TOTAL_BYTES = 64 << 20
MAX_ZIP_BYTES = MAX_ZIP_TOTAL_BYTES + (4 << 20)  # the archive file itself, before opening it
MAX_FOLDER_ENTRIES = 100_000  # entries looked at in one student's folder
DIGEST_CHUNK_BYTES = 1 << 20
DIGEST_STREAM_LIMIT = 64 << 20  # folder_digest: larger files are hashed by their metadata
# LMS download names (see ``identity``): Canvas's <name>[_LATE]_<user id>_<file id>_<file>,
# Moodle's <full name>_<participant id>_assignsubmission_file_[<file>], Gradescope's
# submission_<id>, and the generic <id>_<anything>_ninetoothed_gemm.
_CANVAS_NAME = re.compile(r"^(?P<id>[^_]+)_(?P<late>LATE_)?(?P<lms>\d+)_\d+_(?P<file>.+)$")
_MOODLE_NAME = re.compile(r"^(?P<id>.+?)_(?P<lms>\d+)_assignsubmission_[a-z]+_(?P<file>.*)$")
# A Moodle folder name ends with the marker: the id is all before the last "_<id>_..._".
_MOODLE_FOLDER = re.compile(r"^(?P<id>.+)_(?P<lms>\d+)_assignsubmission_[a-z]+_(?P<file>)$")
_SUBMISSION_STEM = re.compile(r"^ninetoothed_gemm(-(?P<version>\d+))?$")
_GRADESCOPE_NAME = re.compile(r"^submission_(?P<lms>\d+)$")
_LMS_NAME = re.compile(r"^(?P<id>[^_]+)_.*ninetoothed_gemm(-\d+)?$")
_OPEN_FLAGS = (os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW
               | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0))
# Bidirectional formatting characters (they reorder the text around them on screen).
_BIDI = frozenset([0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A)])


class IntakeError(Exception):
    """The folder cannot be read as a class: the grader stops and says why."""


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

    def __post_init__(self):
        # Everything here came from the students' folder: safe to print and to write.
        self.student = printable(self.student)
        self.origin = printable(self.origin)
        self.problem = printable(self.problem)
        self.handin_origin = printable(self.handin_origin)

    @property
    def sha256(self):
        return hashlib.sha256(self.data).hexdigest() if not self.problem else ""


def _hidden(name):
    return name.startswith(".") or name in ("__pycache__", "__MACOSX")


def _display(name):
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
    for pattern in ((_MOODLE_FOLDER,) if folder else (_CANVAS_NAME, _MOODLE_NAME)):
        match = pattern.match(stem)
        if match:
            return Identity(printable(match.group("id")), match.group("lms"),
                            bool(match.groupdict().get("late")), match.group("file"))
    match = _GRADESCOPE_NAME.match(stem)
    if match:
        return Identity(printable(stem), match.group("lms"))
    match = _LMS_NAME.match(stem)
    if match and not folder and stem != "ninetoothed_gemm":
        return Identity(printable(match.group("id")))
    return Identity(printable(stem))


def _kind(mode):
    """What a non-regular file is, in words."""
    for test, words in ((stat.S_ISDIR, "a folder"), (stat.S_ISLNK, "a symbolic link"),
                        (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISSOCK, "a socket"),
                        (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device")):
        if test(mode):
            return words
    return f"of type {stat.S_IFMT(mode):o}"


class _NotRegular(Exception):
    """The path is not a regular file; ``str(error)`` says what it is."""


def _open_regular(path):
    """An open descriptor on ``path``, which must be a regular file; never blocks.

    ``os.lstat`` first, so a FIFO or device is never even opened; then
    ``O_NONBLOCK | O_NOFOLLOW`` and ``os.fstat`` on the descriptor, in case the
    entry was swapped between the two. Raises ``_NotRegular`` or ``OSError``.
    """
    mode = os.lstat(path).st_mode
    if not stat.S_ISREG(mode):
        raise _NotRegular(_kind(mode))
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except OSError as error:
        if error.errno == errno.ELOOP:  # O_NOFOLLOW: it became a link since the lstat
            raise _NotRegular("a symbolic link") from None
        raise
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise _NotRegular(_kind(mode))
    except BaseException:
        os.close(fd)
        raise
    return fd


def _read_limited(path):
    """(data, problem) for one submission file: at most ``MAX_FILE_BYTES + 1`` bytes read."""
    name = _display(os.path.basename(path))
    try:
        fd = _open_regular(path)
    except _NotRegular as error:
        return None, f"{name} is not a regular file (it is {error})"
    except OSError as error:
        return None, f"{name} cannot be read: {error.strerror or error}"
    try:
        size = os.fstat(fd).st_size
        if size > MAX_FILE_BYTES:
            return None, f"{name} is {size} bytes, over the {MAX_FILE_BYTES}-byte limit"
        chunks, total = [], 0
        while total <= MAX_FILE_BYTES:
            chunk = os.read(fd, MAX_FILE_BYTES + 1 - total)
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
    except OSError as error:
        return None, f"{name} cannot be read: {error.strerror or error}"
    finally:
        os.close(fd)
    if total > MAX_FILE_BYTES:
        return None, f"{name} is over the {MAX_FILE_BYTES}-byte limit (it grew while read)"
    return b"".join(chunks), ""


def _relative(root, path):
    """``path`` relative to ``root``, as printable text with ``/`` separators."""
    parts = pathlib.PurePath(os.path.relpath(path, root)).parts
    return "/".join(_display(part) for part in parts)


def discover(root):
    """Every submission under ``root``, sorted by student id."""
    root = pathlib.Path(root)
    if not root.is_dir():
        raise IntakeError(f"SUBMISSIONS_DIR {printable(str(root))!r} is not a folder")
    found = {}
    with os.scandir(root) as listing:
        entries = sorted(listing, key=lambda e: e.name)
    for entry in entries:
        if _hidden(entry.name):
            continue
        try:
            mode = os.lstat(entry.path).st_mode
        except OSError:
            continue  # gone since the listing
        if stat.S_ISLNK(mode):
            continue
        suffix = pathlib.PurePath(entry.name).suffix.lower()
        stem = entry.name[:-len(suffix)] if suffix else entry.name
        if stat.S_ISDIR(mode):
            who = identity(entry.name, folder=True)
            submission = _from_folder(root, entry.path, who.student)
        elif suffix == ".py":
            who = identity(stem)
            if who.uploaded and not _SUBMISSION_STEM.match(who.uploaded):
                continue  # another file the student uploaded beside the submission
            submission = _from_file(root, entry.path, who.student)
        elif suffix == ".zip":
            who = identity(stem)
            submission = _from_zip(root, entry.path, who.student)
        else:
            continue  # a CSV, a picture, an LMS index, a stray FIFO: not a submission
        submission.lms_id, submission.late = who.lms_id, who.late
        if submission.student in found and _same_upload(found[submission.student], submission):
            found[submission.student] = max(found[submission.student], submission,
                                            key=_upload_version)
            continue
        if submission.student in found:
            raise IntakeError(
                f"two entries for student {submission.student!r}: "
                f"{found[submission.student].origin!r} and {submission.origin!r}; "
                "keep one of them"
            )
        found[submission.student] = submission
    return [found[key] for key in sorted(found)]


def _upload_version(submission):
    """The LMS's number for a re-upload (``ninetoothed_gemm-2.py`` is 2), 0 for the first."""
    stem = pathlib.PurePath(submission.origin).stem
    match = re.search(r"-(\d+)$", stem)
    return int(match.group(1)) if match else 0


def _same_upload(first, second):
    """Two versions of one student's file in one LMS download (same LMS id)."""
    return bool(first.lms_id) and first.lms_id == second.lms_id


def _from_file(root, path, student):
    data, problem = _read_limited(path)
    return Submission(student, _relative(root, path), data or b"", problem)


def _is_submission(name):
    return name == FILE_NAME


def _is_handin(name):
    return name.lower().endswith(".csv")


def _find_in_folder(folder, wanted=_is_submission):
    """(path, problem): the shallowest entry whose name is ``wanted``, not a link or folder.

    Breadth first, ties broken by relative path; hidden folders, ``__pycache__``
    and ``__MACOSX`` are skipped; links are never followed; nothing is opened.
    """
    level, seen, links = [(folder, "")], 0, []
    while level:
        candidates, deeper = [], []
        for directory, relative in level:
            try:
                with os.scandir(directory) as listing:
                    entries = list(listing)
            except OSError:
                continue
            seen += len(entries)
            if seen > MAX_FOLDER_ENTRIES:
                return None, f"stopped looking after {MAX_FOLDER_ENTRIES} entries"
            for entry in entries:
                if _hidden(entry.name):
                    continue
                try:
                    mode = os.lstat(entry.path).st_mode
                except OSError:
                    continue
                inside = f"{relative}/{entry.name}" if relative else entry.name
                if stat.S_ISLNK(mode):
                    if wanted(entry.name):
                        links.append(inside)
                elif stat.S_ISDIR(mode):
                    deeper.append((entry.path, inside))
                elif wanted(entry.name):
                    candidates.append((inside, entry.path))
        if candidates:
            return min(candidates)[1], ""
        level = sorted(deeper, key=lambda item: item[1])
    if links:
        return None, f"{_display(min(links))} is a symbolic link, which is not followed"
    return None, ""


def _from_folder(root, folder, student):
    name = _display(os.path.basename(folder))
    origin = _relative(root, folder) + "/"
    path, note = _find_in_folder(folder)
    if path is None:
        return Submission(student, origin, problem=f"no {FILE_NAME} in the folder {name}/"
                          + (f" ({note})" if note else ""))
    data, problem = _read_limited(path)
    submission = Submission(student, _relative(root, path), data or b"", problem)
    handin, _ = _find_in_folder(folder, _is_handin)
    if handin is not None:
        handin_data, handin_problem = _read_limited(handin)
        if not handin_problem:
            submission.handin = handin_data
            submission.handin_origin = _relative(folder, handin)
    return submission


def _from_zip(root, path, student):
    origin = _relative(root, path)
    name = _display(os.path.basename(path))
    try:
        fd = _open_regular(path)
    except _NotRegular as error:
        return Submission(student, origin, problem=f"{name} is not a regular file (it is {error})")
    except OSError as error:
        return Submission(student, origin, problem=f"archive unreadable: {error.strerror or error}")
    with os.fdopen(fd, "rb") as stream:
        size = os.fstat(fd).st_size
        if size > MAX_ZIP_BYTES:
            return Submission(student, origin, problem=f"archive rejected: {name} is {size} "
                                                       f"bytes, over the limit of {MAX_ZIP_BYTES}")
        try:
            with zipfile.ZipFile(stream) as archive:
                problem, member = _check_archive(archive)
                if problem:
                    return Submission(student, origin, problem=f"archive rejected: {problem}")
                if member is None:
                    return Submission(student, origin, problem=f"no {FILE_NAME} in {name}")
                with archive.open(member) as handle:
                    data = handle.read(MAX_FILE_BYTES + 1)
                if len(data) > MAX_FILE_BYTES:
                    return Submission(student, origin,
                                      problem=f"archive rejected: {member.filename} is too large")
                submission = Submission(student, f"{origin}:{member.filename}", data)
                handin = _member(archive, _is_handin)
                if handin is not None and handin.file_size <= MAX_FILE_BYTES:
                    with archive.open(handin) as handle:
                        submission.handin = handle.read(MAX_FILE_BYTES + 1)[:MAX_FILE_BYTES]
                    submission.handin_origin = printable(decode_name(handin.filename))
                return submission
        except (zipfile.BadZipFile, OSError, RuntimeError, NotImplementedError, ValueError,
                EOFError) as error:
            return Submission(student, origin, problem=f"archive unreadable: {error}")


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
        if stat.S_ISLNK(info.external_attr >> 16):
            return f"member {name!r} is a symbolic link", None
    return "", _member(archive, _is_submission)


def _member(archive, wanted):
    """The shallowest regular member whose name is ``wanted`` (ties by name), or None."""
    candidates = []
    for info in archive.infolist():
        parts = pathlib.PurePosixPath(info.filename.replace("\\", "/")).parts
        if info.is_dir() or not parts or parts[0] == "__MACOSX":
            continue
        if wanted(parts[-1]) and not any(part.startswith(".") for part in parts):
            candidates.append((len(parts), info.filename, info))
    return min(candidates, key=lambda c: c[:2])[2] if candidates else None


def safe_folder_name(student):
    """A folder name for any student id: ASCII letters, digits, ``.``, ``_``, ``-``.

    Ids that are already safe are kept as they are; others get an ASCII rendering
    plus a short hash, so two ids never share a folder (see ``students.csv``).
    """
    if re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]{0,80}", student) and student not in (".", ".."):
        return student
    ascii_part = unicodedata.normalize("NFKD", student).encode("ascii", "ignore").decode()
    ascii_part = re.sub(r"[^A-Za-z0-9._-]+", "_", ascii_part).strip("._-")[:40]
    digest = hashlib.sha256(student.encode("utf-8")).hexdigest()[:10]
    return f"{ascii_part or 'student'}-{digest}"


def shard(submissions, index, count):
    """The ``index``-th (1-based) of ``count`` deterministic slices: every count-th sorted id."""
    ordered = sorted(submissions, key=lambda s: s.student)
    return [s for position, s in enumerate(ordered) if position % count == index - 1]


def folder_digest(root, skipped=None):
    """A sha256 (hex) of every path under ``root`` and of every regular file's bytes.

    Made to check that the submissions folder is unchanged by grading: compare a
    digest taken before with one taken after, in the same run, on the same machine.

    * Every entry, hidden ones included, is named by its raw path bytes relative to
      ``root`` (``os.fsencode``: any encoding), with its permission bits; entries
      are taken in the order of their name bytes, so the digest is deterministic.
    * Regular files are opened as ``discover`` opens them (``O_NOFOLLOW |
      O_NONBLOCK``, ``fstat`` again) and streamed in 1 MiB chunks: never read whole.
    * Symbolic links are never followed: their target text is hashed instead.
    * A FIFO, socket or device node is never opened: its name and type are hashed,
      and, when ``skipped`` is a list, ``(path, what it is)`` is appended to it.
    * Files over ``DIGEST_STREAM_LIMIT`` (64 MiB) are hashed by their metadata,
      ``(size, mtime_ns, ctime_ns, device, inode)``, not their bytes. Nothing that
      big can be a submission (``discover`` rejects it by size, unread), and
      streaming one costs seconds per GiB (a 2 GiB sparse file took about 6 s),
      so a hostile folder could make the check slow. The metadata still catch any
      change: a write moves ``ctime``, which no ordinary program can set back
      (``os.utime`` sets only ``atime`` and ``mtime``), and a replacement changes
      the inode. The catch is that this part of the digest only compares within
      one machine and copy of the folder, which is how it is meant to be used.
    """
    top = os.fsencode(os.fspath(root))
    try:
        is_folder = stat.S_ISDIR(os.stat(top).st_mode)  # root itself may be a link
    except OSError as error:
        raise IntakeError(f"{_display(top)!r} cannot be read: {error.strerror}") from None
    if not is_folder:
        raise IntakeError(f"{_display(top)!r} is not a folder")
    digest = hashlib.sha256(b"grader.batch.intake.folder_digest 1\0")

    def record(tag, relative, detail):
        digest.update(tag + b"\0" + relative + b"\0" + detail + b"\0")

    pending = [b""]  # folders still to list, relative to top
    while pending:
        folder = pending.pop()
        try:
            with os.scandir(os.path.join(top, folder) if folder else top) as listing:
                names = sorted(entry.name for entry in listing)
        except OSError as error:
            record(b"unlistable", folder, str(error.errno).encode())
            continue
        subfolders = []
        for name in names:
            relative = os.path.join(folder, name) if folder else name
            path = os.path.join(top, relative)
            try:
                info = os.lstat(path)
            except OSError as error:
                record(b"vanished", relative, str(error.errno).encode())
                continue
            perm = b"%o" % stat.S_IMODE(info.st_mode)
            if stat.S_ISDIR(info.st_mode):
                record(b"dir", relative, perm)
                subfolders.append(relative)
            elif stat.S_ISLNK(info.st_mode):
                try:
                    record(b"link", relative, os.readlink(path))
                except OSError as error:
                    record(b"link-unreadable", relative, str(error.errno).encode())
            elif stat.S_ISREG(info.st_mode):
                tag, detail = _file_digest(path)
                record(tag, relative, perm + b" " + detail)
            else:
                what = _kind(info.st_mode)
                record(b"special", relative, perm + b" " + what.encode())
                if skipped is not None:
                    skipped.append((_display(relative), what))
        pending.extend(reversed(subfolders))
    return digest.hexdigest()


def _file_digest(path):
    """(tag, detail) for one regular file: its size and the sha256 of its bytes, or metadata."""
    try:
        fd = _open_regular(path)
    except _NotRegular as error:  # swapped since the lstat: it is not read
        return b"not-regular", str(error).encode()
    except OSError as error:
        return b"file-unreadable", str(error.errno).encode()
    try:
        if os.fstat(fd).st_size <= DIGEST_STREAM_LIMIT:
            content, size = hashlib.sha256(), 0
            while size <= DIGEST_STREAM_LIMIT:
                chunk = os.read(fd, DIGEST_CHUNK_BYTES)
                if not chunk:
                    return b"file", b"%d %s" % (size, content.hexdigest().encode())
                content.update(chunk)
                size += len(chunk)
        info = os.fstat(fd)  # too big, or it grew past the limit while read
        return b"file-metadata", b"%d %d %d %d %d" % (
            info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_dev, info.st_ino)
    except OSError as error:
        return b"file-unreadable", str(error.errno).encode()
    finally:
        os.close(fd)
