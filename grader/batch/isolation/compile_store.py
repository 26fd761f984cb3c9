"""Compile-gate Builds kept between batches, in a folder only the grader writes.

``NTGEMM_COMPILE_CACHE`` names a folder where the batch's compile gate
(grader.batch.isolation.compile_gate) keeps each Build it would keep for the batch, with the
seconds its compile took. Regrading a class, grading its shards one after the other on one
machine, or a test suite that grades the same kernels in many batches then compiles each
generated file once. An entry is named by the sha256 of (the generated file's sha256, the
GPU target, Triton's version, the grader's version, the ptxas Triton was told to use): a new
grader, Triton or assembler never reads an old entry.

An entry written by anyone but the grader would be a forged Build, so the folder must be the
grader's user's own and closed to everyone else (made with mode 700 when it does not exist).
Runs never see it: no sandbox binds it, and a run only ever sends bytes to the gate.
"""

import hashlib
import importlib.metadata
import json
import os
import pathlib
import stat
import uuid

from grader.batch.status import GraderError

ENV_VAR = "NTGEMM_COMPILE_CACHE"


class Store:
    """The folder, opened once: every entry is read and written through that descriptor, so
    whoever may rename the folder's parent later cannot put another folder in its place."""

    def __init__(self, folder, version):
        """``version``: the grader's (grader.batch.grade.grading.grader_version). Raises
        OSError where ``folder`` is not a folder (a link to one is not)."""
        self.folder, self.version = pathlib.Path(folder), version
        self.triton = importlib.metadata.version("triton")  # the compiler this grader runs
        self.fd = os.open(self.folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)

    def _name(self, digest, target):
        name = json.dumps(
            [digest, target, self.triton, self.version, os.environ.get("TRITON_PTXAS_PATH", "")]
        )  # the assembler it used
        return f"{hashlib.sha256(name.encode()).hexdigest()}.json"

    def get(self, digest, target):
        """(the Build's fields, the compile's seconds) kept for this file, else None."""
        try:
            handle = os.open(
                self._name(digest, target),
                os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC,
                dir_fd=self.fd,
            )
            with os.fdopen(handle, encoding="utf-8") as stream:
                entry = json.load(stream)
            fields, seconds = entry["build"], float(entry["compile_s"])
        except (OSError, ValueError, KeyError, TypeError):
            return None
        return (fields, seconds) if isinstance(fields, dict) and seconds >= 0 else None

    def put(self, digest, target, fields, seconds):
        """Keep an entry, whole or not at all (a reader never sees half of one)."""
        temporary = f".entry-{uuid.uuid4().hex}"
        handle = os.open(
            temporary,
            os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
            0o600,
            dir_fd=self.fd,
        )
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as stream:
                json.dump({"build": fields, "compile_s": seconds}, stream)
            os.replace(
                temporary, self._name(digest, target), src_dir_fd=self.fd, dst_dir_fd=self.fd
            )
        except BaseException:
            try:
                os.unlink(temporary, dir_fd=self.fd)
            except OSError:
                pass
            raise


def from_environment(version):
    """The Store ``NTGEMM_COMPILE_CACHE`` names, made if missing; None when it is unset.
    A GraderError when the folder is not this user's alone."""
    folder = os.environ.get(ENV_VAR)
    if not folder:
        return None
    folder = pathlib.Path(folder)
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        store = Store(folder, version)
    except OSError as error:
        raise GraderError(
            f"{ENV_VAR}={str(folder)!r}: cannot make or open it as a folder ({error})"
        ) from None
    info = os.fstat(store.fd)
    if info.st_uid != os.geteuid() or info.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        os.close(store.fd)
        raise GraderError(
            f"{ENV_VAR}={str(folder)!r} must be a folder of this user's with mode 700 (it is "
            f"{stat.filemode(info.st_mode)}, owned by uid {info.st_uid}): anyone else who may "
            "write there could forge a kernel's build. Use a folder of your own, or unset it"
        )
    return store
