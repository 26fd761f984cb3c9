"""The grading secret of a batch, kept in ``OUT_DIR/.grader-secret`` beside the signing key.

The hidden cases' shapes and the inputs of every case but the public ones are keyed on it
(grader.core.cases.derive); the public cases' inputs do not depend on it, so no feedback can
give it away. ``grade`` makes a 256-bit one unless ``--seed`` or ``--seed-file`` gives one,
and resume finds it there again. Records, ``batch.json`` and ``environment.json`` hold only
its fingerprint (grader.core.cases.fingerprint); shards to be merged need the same secret.
"""

import pathlib
import secrets

from grader.batch.outputs import private_file
from grader.batch.outputs.atomic_file import atomic_write
from grader.core import cases

FILE = ".grader-secret"


def generate():
    """A fresh secret of 256 bits, written as a whole number: whatever reads a seed reads it."""
    return str(secrets.randbits(256))


def stored(out_dir):
    """The secret kept in ``out_dir``, or None when it holds none."""
    path = pathlib.Path(out_dir) / FILE
    try:
        return cases.canonical_secret(path.read_text(encoding="ascii"))
    except (OSError, ValueError):
        return None


def keep(out_dir, secret):
    """Store ``secret`` in ``out_dir``, readable by the grader's user alone; a different one
    stored before is replaced (every grade then depends on the new one, so all are redone)."""
    path = pathlib.Path(out_dir) / FILE
    text = cases.canonical_secret(secret)
    if private_file.made_once(path, text.encode) != text.encode():
        atomic_write(path, text)  # mkstemp, then os.replace: mode 600 as well


def choose(given, flag, out_dir):
    """(secret, warning) for a batch into ``out_dir``: ``given`` (from ``flag``) when there is
    one, else the one stored there, else a new one. The warning, else '', names where a
    secret too short to withstand an offline search came from."""
    if given is not None:
        chosen, source = cases.canonical_secret(given), flag
    else:
        chosen, source = stored(out_dir), f"{pathlib.Path(out_dir) / FILE}"
        if chosen is None:
            return generate(), ""
    return chosen, short_warning(chosen, source)


def short_warning(secret, source):
    """A warning for a secret under grader.core.cases.SECRET_BITS bits, else ''."""
    bits = cases.secret_bits(secret)
    if bits >= cases.SECRET_BITS:
        return ""
    return (
        f"warning: the secret from {source} has about {bits} bits, under "
        f"{cases.SECRET_BITS}: a search over every value that short finds it offline, "
        "and with it every hidden shape and input. Fine for a trial run; for a class, "
        "leave out --seed and --seed-file (the grader makes a 256-bit secret) or put 32 "
        "or more hex digits in the --seed-file"
    )
