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

REQUIRED_NAMES = (
    "arrangement",
    "application",
    "BLOCK_SIZE_M",
    "BLOCK_SIZE_N",
    "BLOCK_SIZE_K",
    "nt_gemm",
)
STUDENT_FUNCTIONS = ("arrangement", "application")


class SubmissionError(Exception):
    """A submission that cannot be graded as it is; ``status`` says which kind."""

    def __init__(self, status, message):
        super().__init__(message)
        self.status = status  # "missing_file", "import_error" or "not_implemented"


def module_name_for(path):
    digest = hashlib.sha256(str(pathlib.Path(path).resolve()).encode()).hexdigest()[:16]
    return f"ntgemm_submission_{digest}"


def unfinished_functions(source):
    """Names of the student functions whose body still raises NotImplementedError.

    Read from the source, not by running it: a placeholder in ``application``
    would otherwise only surface as a Triton compile error.
    """
    tree = ast.parse(source)
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
    listed = " and ".join(f"{name}()" for name in names)
    verb = "is" if len(names) == 1 else "are"
    return (
        f"{listed} {verb} not filled in yet: replace the `raise NotImplementedError(...)` "
        f"placeholder in {listed} with your code"
    )


def load_submission(path):
    """Import the file at ``path`` and check it has the contract's names.

    Raises SubmissionError with a message meant for a student.
    """
    path = pathlib.Path(path)
    if not path.is_file():
        raise SubmissionError("missing_file", f"no submission file at {path}")
    module = import_file(path)
    missing = [attr for attr in REQUIRED_NAMES if not hasattr(module, attr)]
    if missing:
        raise SubmissionError(
            "import_error", f"{path.name} does not define {', '.join(missing)}"
        )

    unfinished = unfinished_functions(path.read_text(encoding="utf-8", errors="replace"))
    if unfinished:
        raise SubmissionError("not_implemented", not_implemented_message(unfinished))
    return module


def import_file(path):
    """Import one file as a module of its own; a failure is an ``import_error`` SubmissionError."""
    path = pathlib.Path(path)
    source = path.read_text(encoding="utf-8", errors="replace")
    try:
        compile(source, str(path), "exec")
    except SyntaxError as error:
        raise SubmissionError(
            "import_error",
            f"syntax error in {path.name}, line {error.lineno}: {error.msg}\n"
            f"    {(error.text or '').rstrip()}",
        ) from None

    name = module_name_for(path)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as error:
        del sys.modules[name]
        raise SubmissionError(
            "import_error",
            f"importing {path.name} failed with {type(error).__name__}: {error}\n"
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
