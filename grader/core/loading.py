"""Import one submission file in isolation, and say clearly why it cannot be used.

Every file is imported under a module name derived from its resolved path, and
its folder is never put on sys.path, so two files both called
``ninetoothed_gemm.py`` in different folders never shadow each other.
"""

import ast
import hashlib
import importlib.util
import pathlib
import sys
import traceback

from grader.core import nesting
from grader.core.messages import say

REQUIRED_NAMES = (
    "arrangement",
    "application",
    "BLOCK_SIZE_M",
    "BLOCK_SIZE_N",
    "BLOCK_SIZE_K",
    "nt_gemm",
)
STUDENT_FUNCTIONS = ("arrangement", "application")


def source_text(data):
    """The text Python itself reads from a file's bytes: a UTF-8 byte-order mark dropped and a
    coding line honoured, as Windows editors write them. Bytes that cannot be decoded are
    replaced, so that the file's own import, not this reading, says why it fails."""
    try:
        return importlib.util.decode_source(data)
    except (SyntaxError, UnicodeDecodeError, LookupError):
        return data.decode("utf-8", errors="replace")


def read_source(path):
    """``source_text`` of the file at ``path``."""
    return source_text(pathlib.Path(path).read_bytes())


class SubmissionError(Exception):
    """A submission that cannot be graded as it is; ``status`` says which kind."""

    def __init__(self, status, message):
        super().__init__(message)
        # "missing_file", "import_error", "not_implemented", or "failed" (grader.core.nesting)
        self.status = status


def module_name_for(path):
    digest = hashlib.sha256(str(pathlib.Path(path).resolve()).encode()).hexdigest()[:16]
    return f"ntgemm_submission_{digest}"


def unfinished_functions(source):
    """Names of the student functions whose body still raises NotImplementedError.

    Read from the source, not by running it: a placeholder in ``application``
    would otherwise only surface as a Triton compile error.
    """
    tree = nesting.parse(source)
    unfinished = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name in STUDENT_FUNCTIONS:
            if any(_raises_not_implemented(stmt) for stmt in ast.walk(node)):
                unfinished.append(node.name)
    return unfinished


def _raises_not_implemented(node):
    if not isinstance(node, ast.Raise) or node.exc is None:
        return False
    exc = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
    return isinstance(exc, ast.Name) and exc.id == "NotImplementedError"


def not_implemented_message(names):
    """What a student reads of the functions ``names`` (one or both of STUDENT_FUNCTIONS)."""
    calls = [f"{name}()" for name in names]
    if len(calls) == 1:
        return say("unfinished", name=calls[0])
    return say("two_unfinished", first=", ".join(calls[:-1]), second=calls[-1])


def syntax_message(name, error):
    """The import_error message of the file ``name`` for its SyntaxError: where, and the line."""
    return (
        say("syntax_error", file=name, line=error.lineno, error=error.msg)
        + f"\n    {(error.text or '').rstrip()}"
    )


def load_submission(path):
    """Import the file at ``path`` and check it has the contract's names.

    Raises SubmissionError with a message meant for a student.
    """
    path = pathlib.Path(path)
    if not path.is_file():
        raise SubmissionError("missing_file", f"no submission file at {path}")
    too_deep = nesting.too_deep(read_source(path))
    if too_deep is not None:  # the grader reads its tree; Python may not even compile it
        raise SubmissionError("failed", nesting.message(too_deep, path.name))
    module = import_file(path)
    missing = [attr for attr in REQUIRED_NAMES if not hasattr(module, attr)]
    if missing:
        raise SubmissionError(
            "import_error", say("does_not_define", file=path.name, names=", ".join(missing))
        )

    unfinished = unfinished_functions(read_source(path))
    if unfinished:
        raise SubmissionError("not_implemented", not_implemented_message(unfinished))
    return module


def import_file(path):
    """Import one file as a module of its own; a failure is an ``import_error`` SubmissionError."""
    path = pathlib.Path(path)
    source = read_source(path)
    try:
        compile(source, str(path), "exec")
    except SyntaxError as error:
        raise SubmissionError("import_error", syntax_message(path.name, error)) from None

    name = module_name_for(path)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as error:  # noqa: BLE001 - whatever importing the student's file raises is its import error
        del sys.modules[name]
        raise SubmissionError(
            "import_error",
            say("import_failed", file=path.name, error=f"{type(error).__name__}: {error}")
            + "\n"
            + _short_traceback(error, path),
        ) from None
    return module


def _short_traceback(error, path):
    """The frames of the traceback that are in the submission itself."""
    frames = [
        frame
        for frame in traceback.extract_tb(error.__traceback__)
        if pathlib.Path(frame.filename).resolve() == path.resolve()
    ]
    return "".join(traceback.format_list(frames))
