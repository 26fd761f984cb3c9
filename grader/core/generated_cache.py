"""Make NineToothed's generated kernel files appear whole, for every kit process.

``ninetoothed.make`` writes the Triton code it generates to ``~/.ninetoothed/<sha256>.py``
(``ninetoothed.generation.cache_source``), then imports that file; Triton reads it again
through ``linecache`` when it wraps the kernel (on a GPU at import, in the interpreter at
the first launch). NineToothed writes the file in place, after checking that it does not
exist yet, so processes that share a home and generate the same kernel at once race:

* a reader that finds the file between its creation and the end of the write imports an
  empty or cut module (``KeyError`` for the kernel's name, or a ``SyntaxError``);
* a second writer that checked a moment earlier truncates the file (``open(..., "w")``)
  under a process that already imported it; Triton's source read then finds no lines and
  raises "@jit functions should be defined in a Python file".

``install`` replaces ``cache_source`` with one that writes a temporary file in the same
folder and renames it into place, so the final path only ever names a complete file, and
that rewrites a file whose content is not the source (a leftover of a writer killed
mid-write would otherwise break that kernel for good). The path, the folder and the
content stay NineToothed's own. A writer that is not a kit process (NineToothed run
directly) still writes in place.

It is also the one door every generated kernel passes before anything imports, compiles
or interprets it, so the check that decides (grader.core.generated_kernel) stands here: a
source it refuses is never written, and NineToothed's build raises ``KernelRejected``.
A process that must end on a refusal (the batch grader's worker) says so with
``stop_on_rejection``; then the refusal reaches it before any code could catch it.
"""

import contextlib
import hashlib
import inspect
import os
import pathlib
import uuid

from grader.core import generated_kernel

# ninetoothed.generation.cache_source as this module was written against (0.26.0).
_EXPECTED_SOURCE = """def cache_source(source):
    digest = hashlib.sha256(source.encode("utf-8")).hexdigest()
    cache_file = CACHE_DIR / f"{digest}.py"

    if not cache_file.exists():
        with open(cache_file, "w", encoding="utf-8") as f:
            f.write(source)

    return cache_file
"""

_original = None  # NineToothed's own cache_source, once replaced
_on_rejection = None  # called with the KernelRejected before it is raised, if set
_unchecked = False  # inside staff_kernel()
checked = set()  # sha256 of every generated source this process's check passed


def stop_on_rejection(callback):
    """Call ``callback(rejection)`` on every refused kernel, before anything else sees it."""
    global _on_rejection
    _on_rejection = callback


@contextlib.contextmanager
def staff_kernel():
    """Build a staff kernel that uses Triton beyond what a student's kernel may (the lab's
    tensor-descriptor kernels): inside, the check that decides does not run. Refused in a
    process that stops on a rejection (a grading worker), where only checked kernels run."""
    global _unchecked
    if _on_rejection is not None:
        raise RuntimeError("a grading worker builds no unchecked kernel")
    _unchecked = True
    try:
        yield
    finally:
        _unchecked = False


def cache_source(source):
    """``ninetoothed.generation.cache_source``, but the file appears whole (see the module),
    and only once grader.core.generated_kernel passed it."""
    from ninetoothed import generation

    violations = () if _unchecked else generated_kernel.check(source)
    if violations:
        rejection = generated_kernel.KernelRejected(violations, source)
        if _on_rejection is not None:
            _on_rejection(rejection)
        raise rejection
    digest = hashlib.sha256(source.encode("utf-8")).hexdigest()
    checked.add(digest)
    cache_file = generation.CACHE_DIR / f"{digest}.py"
    if _holds(cache_file, source):
        return cache_file
    temporary = cache_file.with_name(f".{digest}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        # Created as NineToothed's open() creates it (0o666 less the umask), never reused.
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        with open(descriptor, "w", encoding="utf-8") as handle:
            handle.write(source)
        os.replace(temporary, cache_file)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    return cache_file


def _holds(path, source):
    try:
        return path.read_text(encoding="utf-8") == source
    except (OSError, UnicodeDecodeError):
        return False


def install():
    """Replace NineToothed's cache_source once per process; a clear error if it changed."""
    global _original
    from ninetoothed import generation

    if generation.cache_source is cache_source:
        return
    problem = _mismatch(generation)
    if problem:
        raise RuntimeError(
            f"ninetoothed {_version()}: {problem}, and grader.core.generated_cache replaces "
            "it to write each generated kernel file whole. Check how this version writes "
            "~/.ninetoothed/<sha256>.py, then update grader/core/generated_cache.py (or "
            "install ninetoothed 0.26.0)."
        )
    _original = generation.cache_source
    generation.cache_source = cache_source  # ninetoothed.debugging, imported later, takes it too


def _mismatch(generation):
    """Why this ninetoothed's cache_source is not the one replaced here, or None."""
    original = getattr(generation, "cache_source", None)
    if not callable(original) or not isinstance(
        getattr(generation, "CACHE_DIR", None), pathlib.Path
    ):
        return "ninetoothed.generation has no cache_source(source) writing under CACHE_DIR"
    try:
        text = inspect.getsource(original)
    except (OSError, TypeError):
        text = None
    if text != _EXPECTED_SOURCE:
        return "ninetoothed.generation.cache_source is not the function it was in 0.26.0"
    call = getattr(getattr(generation, "CodeGenerator", None), "__call__", None)  # noqa: B004 - the method itself
    if "cache_source" not in getattr(getattr(call, "__code__", None), "co_names", ()):
        return "ninetoothed's CodeGenerator no longer calls generation.cache_source"
    return None


def _version():
    import importlib.metadata

    try:
        return importlib.metadata.version("ninetoothed")
    except importlib.metadata.PackageNotFoundError:
        return "(version unknown)"
