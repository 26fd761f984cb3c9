"""Files that appear whole: every file a batch writes goes through a temporary file in the
same folder and ``os.replace``, so an interrupted batch never leaves half a file."""

import os
import pathlib
import tempfile


def atomic_write(path, data):
    """Write ``data`` (str or bytes) to ``path`` through a temporary file and os.replace."""
    path = pathlib.Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(data.encode("utf-8") if isinstance(data, str) else data)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temporary, path)
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise
