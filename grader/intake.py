"""Find every student's submission in a folder, without changing anything in it.

Accepted layouts, mixed freely in one folder:

* a folder per student: ``<id>/ninetoothed_gemm.py`` (the shallowest file of that
  name inside the folder counts; other files, such as the benchmark CSV and
  picture, are ignored). A folder without it is a ``missing_file`` student;
* flat files: ``<id>.py``, or the LMS style ``<id>_<anything>_ninetoothed_gemm.py``
  (Canvas/Moodle downloads), where the id is the text before the first ``_``;
* ``.zip`` archives, ``<id>.zip`` (or LMS style), holding ``ninetoothed_gemm.py``
  somewhere inside. Archives are never extracted: the one member is read into
  memory, after guards on member count, total uncompressed size, member size,
  symlinks and paths that would escape the archive. A rejected archive is a
  ``missing_file`` student, with the reason.

Everything is read once, here, into memory (``Submission.data``): the batch
grader then works on private copies and never opens the submissions folder again.
Hidden entries (``.git``, ``.DS_Store``, ``__MACOSX``) and ``__pycache__`` are skipped.
"""

import dataclasses
import hashlib
import pathlib
import re
import stat
import unicodedata
import zipfile

FILE_NAME = "ninetoothed_gemm.py"
MAX_FILE_BYTES = 1 << 20  # a submission is one small source file
MAX_ZIP_MEMBERS = 500
MAX_ZIP_TOTAL_BYTES = 64 << 20
_LMS_NAME = re.compile(r"^(?P<id>[^_]+)_.*ninetoothed_gemm(-\d+)?$")


class IntakeError(Exception):
    """The folder cannot be read as a class: the grader stops and says why."""


@dataclasses.dataclass
class Submission:
    student: str
    origin: str  # where it came from, relative to the submissions folder
    data: bytes = b""
    problem: str = ""  # non-empty: the student has no usable file (missing_file)

    @property
    def sha256(self):
        return hashlib.sha256(self.data).hexdigest() if not self.problem else ""


def _skip(path):
    return path.name.startswith(".") or path.name in ("__pycache__", "__MACOSX")


def student_id(stem):
    """The student id for a flat file or archive named ``stem`` (no extension)."""
    stem = unicodedata.normalize("NFC", stem)
    match = _LMS_NAME.match(stem)
    if match and stem != "ninetoothed_gemm":
        return match.group("id")
    return stem


def discover(root):
    """Every submission under ``root``, sorted by student id."""
    root = pathlib.Path(root)
    if not root.is_dir():
        raise IntakeError(f"SUBMISSIONS_DIR {str(root)!r} is not a folder")
    found = {}
    for entry in sorted(root.iterdir(), key=lambda p: p.name):
        if _skip(entry) or entry.is_symlink():
            continue
        if entry.is_dir():
            submission = _from_folder(root, entry)
        elif entry.suffix.lower() == ".py":
            submission = _from_file(root, entry, student_id(entry.stem))
        elif entry.suffix.lower() == ".zip":
            submission = _from_zip(root, entry, student_id(entry.stem))
        else:
            continue  # a CSV, a picture, an LMS index: not a submission
        if submission.student in found:
            raise IntakeError(
                f"two entries for student {submission.student!r}: "
                f"{found[submission.student].origin!r} and {submission.origin!r}; "
                "keep one of them"
            )
        found[submission.student] = submission
    return [found[key] for key in sorted(found)]


def _read_limited(path):
    size = path.stat().st_size
    if size > MAX_FILE_BYTES:
        return None, f"{path.name} is {size} bytes, over the {MAX_FILE_BYTES}-byte limit"
    return path.read_bytes(), ""


def _from_file(root, path, student):
    data, problem = _read_limited(path)
    return Submission(student, path.relative_to(root).as_posix(), data or b"", problem)


def _from_folder(root, folder):
    student = unicodedata.normalize("NFC", folder.name)
    candidates = []
    for path in folder.rglob(FILE_NAME):
        relative = path.relative_to(folder)
        if any(part.startswith(".") or part in ("__pycache__", "__MACOSX")
               for part in relative.parts):
            continue
        if path.is_symlink() or not path.is_file():
            continue
        candidates.append((len(relative.parts), relative.as_posix(), path))
    origin = folder.relative_to(root).as_posix() + "/"
    if not candidates:
        return Submission(student, origin, problem=f"no {FILE_NAME} in the folder {folder.name}/")
    path = min(candidates)[2]
    data, problem = _read_limited(path)
    return Submission(student, path.relative_to(root).as_posix(), data or b"", problem)


def _from_zip(root, path, student):
    origin = path.relative_to(root).as_posix()
    try:
        with zipfile.ZipFile(path) as archive:
            problem, member = _check_archive(archive)
            if problem:
                return Submission(student, origin, problem=f"archive rejected: {problem}")
            if member is None:
                return Submission(student, origin, problem=f"no {FILE_NAME} in {path.name}")
            with archive.open(member) as handle:
                data = handle.read(MAX_FILE_BYTES + 1)
            if len(data) > MAX_FILE_BYTES:
                return Submission(student, origin,
                                  problem=f"archive rejected: {member.filename} is too large")
            return Submission(student, f"{origin}:{member.filename}", data)
    except (zipfile.BadZipFile, OSError, RuntimeError, NotImplementedError) as error:
        return Submission(student, origin, problem=f"archive unreadable: {error}")


def _check_archive(archive):
    """(problem, member): the reason to reject the archive, or the member to read."""
    members = archive.infolist()
    if len(members) > MAX_ZIP_MEMBERS:
        return f"{len(members)} members, over the limit of {MAX_ZIP_MEMBERS}", None
    total = sum(info.file_size for info in members)
    if total > MAX_ZIP_TOTAL_BYTES:
        return f"{total} bytes uncompressed, over the limit of {MAX_ZIP_TOTAL_BYTES}", None
    candidates = []
    for info in members:
        name = info.filename
        parts = pathlib.PurePosixPath(name.replace("\\", "/")).parts
        if name.startswith(("/", "\\")) or re.match(r"^[A-Za-z]:", name) or ".." in parts:
            return f"member {name!r} would land outside the archive's folder", None
        if stat.S_ISLNK(info.external_attr >> 16):
            return f"member {name!r} is a symbolic link", None
        if info.is_dir() or not parts or parts[0] == "__MACOSX":
            continue
        if parts[-1] == FILE_NAME and not any(part.startswith(".") for part in parts):
            candidates.append((len(parts), name, info))
    return "", (min(candidates, key=lambda c: c[:2])[2] if candidates else None)


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
