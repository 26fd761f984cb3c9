"""The kit's own import graph, read from its source files' syntax trees.

What the handout ships, what the sandbox copies into a job's ``lib/`` and what
a regrade digest covers are each the import closure of some entry points, so
none of them is a list kept by hand; the import-graph test reads the same edges.
"""

import ast
import functools
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[2]
PACKAGES = ("ledger", "grader", "benchmarks", "solutions")
STUDENT, STAFF = "student", "staff"
# The kit's packages from the bottom up, and who gets them. A module belongs to the
# longest name that prefixes its own; it may import its own layer and those below,
# never one above (grader/tests/test_import_graph.py). The kit's tests sit outside.
LAYERS = (
    ("ledger", STUDENT),  # the ledger's formulas: arithmetic that imports nothing of the kit
    ("grader.core", STUDENT),  # cases, checks, diagnosis, backend, compile gate
    ("benchmarks", STUDENT),  # the benchmark students run: harness, timing, report, card
    ("benchmarks.lessons", STUDENT),  # python -m benchmarks.lessons.ledger, .tiling, .occupancy
    ("grader", STUDENT),  # the pytest grader: grader/test_grader.py and its conftest
    ("solutions", STAFF),  # the model answer and the tuned reference
    ("benchmarks.lab", STAFF),  # baselines and the exploration kernels
    # The batch grader (python -m grader), room by room (see grader/batch/__init__.py):
    ("grader.batch", STAFF),  # status and import_graph, which every room may import
    ("grader.batch.inside", STAFF),  # what runs in the sandbox, and its protocol
    ("grader.batch.isolation", STAFF),  # the parent's side of the sandbox
    ("grader.batch.timing", STAFF),  # the speed phase and the hand-in check
    ("grader.batch.outputs", STAFF),  # what a batch writes
    ("grader.batch.grade", STAFF),  # intake, grading, the session, the secret
    ("grader.batch.packaging", STAFF),  # the handout and the Gradescope autograder
    ("grader.batch.cli", STAFF),  # the command line, which hands each command to its room
    ("grader.__main__", STAFF),
)
TESTS = ("grader.tests", "benchmarks.tests")


def layer(module):
    """The index in LAYERS of the dotted kit module's layer, or None for a test."""
    if any(module == test or module.startswith(test + ".") for test in TESTS):
        return None
    matches = [
        index
        for index, (prefix, _) in enumerate(LAYERS)
        if module == prefix or module.startswith(prefix + ".")
    ]
    return max(matches, key=lambda index: len(LAYERS[index][0]))


def for_students(module):
    """Whether a student's handout may hold the dotted kit module."""
    index = layer(module)
    return index is not None and LAYERS[index][1] == STUDENT


def module_file(name, root=ROOT):
    """The file that defines the kit module ``name`` (dotted), or None."""
    base = root.joinpath(*name.split("."))
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


def module_name(path, root=ROOT):
    """The dotted name of the kit module in ``path`` (a package for ``__init__.py``)."""
    parts = pathlib.Path(path).resolve().relative_to(root.resolve()).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@functools.cache  # a grade reads the closure of the grader and of its worker, mostly the same files
def imports(path, root=ROOT):
    """The kit modules a Python file names in its imports, as dotted names: the
    submodule for ``from package import module``, else the module imported from."""
    try:
        tree = ast.parse(pathlib.Path(path).read_text(encoding="utf-8"))
    except (SyntaxError, ValueError, OSError):
        return frozenset()
    here = module_name(path, root).split(".") if _inside(path, root) else []
    package = here if pathlib.Path(path).name == "__init__.py" else here[:-1]
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package[: len(package) - node.level + 1] + ([base] if base else []))
            submodules = {f"{base}.{alias.name}" for alias in node.names}
            submodules = {name for name in submodules if module_file(name, root)}
            names |= submodules if len(submodules) == len(node.names) else submodules | {base}
    return frozenset(
        name for name in names if name.split(".")[0] in PACKAGES and module_file(name, root)
    )


def _inside(path, root):
    try:
        pathlib.Path(path).resolve().relative_to(root.resolve())
    except ValueError:
        return False
    return True


@functools.cache
def closure(names, root=ROOT):
    """Every kit module that importing ``names`` (dotted) loads, directly or not,
    with its packages: the dotted names, sorted."""
    todo, needed = set(names), set()
    while todo:
        name = todo.pop()
        path = module_file(name, root)
        if name in needed or path is None:
            continue
        parts = name.split(".")
        needed.update(".".join(parts[:end]) for end in range(1, len(parts) + 1))
        todo |= imports(path, root) - needed
    return tuple(sorted(needed))


def closure_files(names, root=ROOT):
    """The files of ``closure(names)``, relative to the repository, as POSIX strings."""
    return tuple(
        module_file(name, root).relative_to(root).as_posix()
        for name in closure(tuple(sorted(names)), root)
    )
