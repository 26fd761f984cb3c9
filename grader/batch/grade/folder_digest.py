"""A digest of the submissions folder, which shows that grading left it unchanged."""

import hashlib
import os
import stat

from grader.batch.grade.intake import IntakeError
from grader.batch.names import display
from grader.batch.grade.safe_read import NotRegular, kind, open_regular

DIGEST_CHUNK_BYTES = 1 << 20
DIGEST_STREAM_LIMIT = 64 << 20  # folder_digest: larger files are hashed by their metadata


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
        raise IntakeError(f"{display(top)!r} cannot be read: {error.strerror}") from None
    if not is_folder:
        raise IntakeError(f"{display(top)!r} is not a folder")
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
                what = kind(info.st_mode)
                record(b"special", relative, perm + b" " + what.encode())
                if skipped is not None:
                    skipped.append((display(relative), what))
        pending.extend(reversed(subfolders))
    return digest.hexdigest()


def _file_digest(path):
    """(tag, detail) for one regular file: its size and the sha256 of its bytes, or metadata."""
    try:
        fd = open_regular(path)
    except NotRegular as error:  # swapped since the lstat: it is not read
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
            info.st_size,
            info.st_mtime_ns,
            info.st_ctime_ns,
            info.st_dev,
            info.st_ino,
        )
    except OSError as error:
        return b"file-unreadable", str(error.errno).encode()
    finally:
        os.close(fd)
