"""Open and read a file of a folder students control, without being hurt by it.

Only regular files are ever opened (``os.lstat`` first, then ``O_NOFOLLOW | O_NONBLOCK``
and ``os.fstat`` again on the open descriptor), so a FIFO, socket or device node never
blocks the grader nor is read, and a symbolic link is never followed; sizes are checked on
the open descriptor, and a read stops one byte past its limit.
"""

import errno
import os
import stat

from grader.batch.names import display

_OPEN_FLAGS = (
    os.O_RDONLY
    | os.O_NONBLOCK
    | os.O_NOFOLLOW
    | getattr(os, "O_NOCTTY", 0)
    | getattr(os, "O_CLOEXEC", 0)
)


def kind(mode):
    """What a non-regular file is, in words."""
    for test, words in (
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISLNK, "a symbolic link"),
        (stat.S_ISFIFO, "a FIFO (named pipe)"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
    ):
        if test(mode):
            return words
    return f"of type {stat.S_IFMT(mode):o}"


class NotRegular(Exception):
    """The path is not a regular file; ``str(error)`` says what it is."""


def open_regular(path):
    """An open descriptor on ``path``, which must be a regular file; never blocks.

    ``os.lstat`` first, so a FIFO or device is never even opened; then
    ``O_NONBLOCK | O_NOFOLLOW`` and ``os.fstat`` on the descriptor, in case the
    entry was swapped between the two. Raises ``NotRegular`` or ``OSError``.
    """
    mode = os.lstat(path).st_mode
    if not stat.S_ISREG(mode):
        raise NotRegular(kind(mode))
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except OSError as error:
        if error.errno == errno.ELOOP:  # O_NOFOLLOW: it became a link since the lstat
            raise NotRegular("a symbolic link") from None
        raise
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise NotRegular(kind(mode))
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_limited(path, limit):
    """(data, problem) for one file of at most ``limit`` bytes: at most ``limit + 1`` read."""
    name = display(os.path.basename(path))
    try:
        fd = open_regular(path)
    except NotRegular as error:
        return None, f"{name} is not a regular file (it is {error})"
    except OSError as error:
        return None, f"{name} cannot be read: {error.strerror or error}"
    try:
        size = os.fstat(fd).st_size
        if size > limit:
            return None, f"{name} is {size} bytes, over the {limit}-byte limit"
        chunks, total = [], 0
        while total <= limit:
            chunk = os.read(fd, limit + 1 - total)
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
    except OSError as error:
        return None, f"{name} cannot be read: {error.strerror or error}"
    finally:
        os.close(fd)
    if total > limit:
        return None, f"{name} is over the {limit}-byte limit (it grew while read)"
    return b"".join(chunks), ""
