"""Files of ``OUT_DIR`` that only the grader's user may read: the signing key, the secret."""

import os
import pathlib
import tempfile


def made_once(path, make):
    """The bytes of ``path``, first written from ``make()`` when it does not exist.

    The bytes go to a temporary file (mkstemp: mode 600), which is then linked into
    place: the file appears whole, and a file another thread or process made first is
    never written over, so every caller reads the same bytes."""
    path = pathlib.Path(path)
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=".private-")
        with os.fdopen(descriptor, "wb") as stream:
            stream.write(make())
        try:
            os.link(temporary, path)
        except FileExistsError:
            pass
        finally:
            os.unlink(temporary)
    return path.read_bytes()


KEY_FILE = ".grader-key"


def signing_key(out_dir):
    """The output folder's secret for signing records; made on first use, readable by the
    grader's user alone. Workers never see the output folder, so never this key."""
    return made_once(pathlib.Path(out_dir) / KEY_FILE, lambda: os.urandom(32))
