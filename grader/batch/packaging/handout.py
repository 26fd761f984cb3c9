"""Build the student handout: ``python -m grader handout --out DIR``.

Writes ``DIR/ntgemm-handout/`` and ``DIR/ntgemm-handout.zip`` holding what a
student needs to fill in the skeleton and run the public tests, on a GPU or on
the CPU through the Triton interpreter:

* ``assignment/`` without ``assignment/tests/`` (the kit's own tests);
* ``conftest.py`` and ``pyproject.toml``;
* ``benchmarks/`` (the timing harness the benchmark script runs), without its
  tests and without the staff tools that read ``solutions/``;
* the full grader suite a student runs on their own file, ``pytest grader
  --submission PATH`` (``grader/test_grader.py`` and ``grader/conftest.py``);
* the grader modules that ``conftest.py``, ``assignment/``, ``benchmarks/``,
  the grader suite and the docs' example scripts import, followed import by
  import (the case catalogue, whose hidden-case generator is useless without
  the instructor's ``--seed``, the checks, the backend, loading, execution, the
  mistakes with their hints, ...), never the batch grader's own modules;
* the student docs (``docs/student*``, ``docs/explainer*``), the case table and the
  glossary they link to (``docs/cases.md``, ``docs/glossary.md``), the files of
  ``docs/examples/`` they name (the example scripts they run; the staff's examples there, such
  as the overrides, stay out) and the explainers' pictures (``docs/arrangement/``), when present;
* ``.devcontainer/``, the Linux container the guides send macOS and Windows students to;
* a README.md (``handout_README.md`` beside this module): the set-up, venv first, the
  container, the commands.

The student guides print the answer whole (sections 5 and 6), as the course ships them, and
``handout`` then warns (``KEPT_ANSWER``); ``--answer remove`` cuts the blocks marked for it
(grader.batch.packaging.guide_answer), and ``build`` then refuses a doc that still shows both
functions whole.

Never ``solutions/``, the batch grader, the kit's own tests, the demo class or a grading seed,
and the skeleton only as the pristine placeholder (``arrangement()`` and ``application()``
still raising NotImplementedError); ``build`` checks that before it writes the zip.
"""

import pathlib
import re
import shutil
import zipfile

from grader.batch import import_graph
from grader.batch.packaging import guide_answer
from grader.core.loading import STUDENT_FUNCTIONS, unfinished_functions
from solutions import MODEL_ANSWER

ROOT = import_graph.ROOT
NAME = "ntgemm-handout"
SKELETON = pathlib.Path("assignment") / "ninetoothed_gemm.py"  # inside the handout
# The grader suite a student runs on their own file (``pytest grader --submission PATH``).
STUDENT_SUITE = ("grader/test_grader.py", "grader/conftest.py")
# Under docs/: the guides, the case table and glossary they link to, the explainers' pictures.
STUDENT_DOCS = ("student*", "explainer*", "cases.md", "glossary.md", "arrangement")
# docs/examples/ holds the scripts the student docs run and the staff's examples: a file of it
# is shipped when a shipped doc names it.
EXAMPLES = "docs/examples"
_EXAMPLE_NAME = re.compile(r"(?<![\w/])(?:docs/)?examples/([\w.-]*\w)")
CONTAINER = ".devcontainer"  # the guides send macOS and Windows students there
README = pathlib.Path(__file__).with_name("handout_README.md")
KEPT_ANSWER = (
    "this handout holds the answer: a student who pastes the two blocks of the "
    "student guides' sections 5 and 6 into the skeleton gets full marks; build it "
    "with --answer remove unless the course means to hand the answer out"
)
_ZIP_TIME = (2026, 1, 1, 0, 0, 0)  # fixed, so the same sources give the same zip


def _handout_files():
    """(source path, path inside the handout) for every file the handout holds."""
    files = []
    for path in sorted((ROOT / "assignment").rglob("*")):
        relative = path.relative_to(ROOT)
        if (
            path.is_file()
            and "tests" not in relative.parts[1:]
            and "__pycache__" not in relative.parts
            and path.suffix != ".pyc"
        ):
            files.append((path, relative))
    for path in sorted((ROOT / "benchmarks").rglob("*.py")):
        if import_graph.for_students(import_graph.module_name(path, ROOT)):
            files.append((path, path.relative_to(ROOT)))
    for name in ("conftest.py", "pyproject.toml") + STUDENT_SUITE:
        files.append((ROOT / name, pathlib.Path(name)))
    docs = ROOT / "docs"
    if docs.is_dir():
        for pattern in STUDENT_DOCS:
            for path in sorted(docs.glob(pattern)):
                targets = (
                    [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
                )
                for target in targets:
                    if "__pycache__" not in target.parts and target.suffix != ".pyc":
                        files.append((target, target.relative_to(ROOT)))
        files += [(path, path.relative_to(ROOT)) for path in _examples_named(files)]
    files += [
        (path, path.relative_to(ROOT))
        for path in sorted((ROOT / CONTAINER).glob("*"))
        if path.is_file()
    ]
    shipped = {relative.as_posix() for _, relative in files}
    for relative in modules_needed([path for path, _ in files if path.suffix == ".py"]):
        if relative not in shipped:
            files.append((ROOT / relative, pathlib.Path(relative)))
    return files


def _examples_named(files):
    """The files of docs/examples/ that the markdown files among ``files`` name."""
    names = set()
    for source, _ in files:
        if source.suffix == ".md":
            names |= set(_EXAMPLE_NAME.findall(source.read_text(encoding="utf-8")))
    return [ROOT / EXAMPLES / name for name in sorted(names) if (ROOT / EXAMPLES / name).is_file()]


def modules_needed(entry_points):
    """The kit's files (relative paths) that the entry points import, directly or not."""
    names = set()
    for path in entry_points:
        names |= import_graph.imports(path, ROOT)
    return import_graph.closure_files(names, ROOT)


def check(files):
    """Refuse a handout that would give away the reference, an answer or the batch grader."""
    reference = MODEL_ANSWER.read_bytes() if MODEL_ANSWER.exists() else None
    for source, relative in files:
        parts = relative.parts
        if (
            parts[0] == "solutions"
            or "demo_class" in parts
            or "tests" in parts[1:-1]
            or (
                source.suffix == ".py"
                and parts[0] in ("grader", "benchmarks")
                and not import_graph.for_students(import_graph.module_name(source, ROOT))
            )
        ):
            raise ValueError(f"{relative} must not be in the student handout")
        if reference is not None and source.read_bytes() == reference:
            raise ValueError(f"{relative} is a copy of the reference solution")
    check_skeleton(files)


def check_skeleton(files):
    """Refuse a skeleton whose arrangement() or application() is no longer a placeholder.

    An instructor who tried an answer in the skeleton would otherwise hand it out
    whenever it is not a byte-for-byte copy of solutions/.
    """
    sources = [source for source, relative in files if relative == SKELETON]
    if not sources:
        raise ValueError(f"{SKELETON.as_posix()} is missing: the handout ships the skeleton")
    try:
        unfinished = unfinished_functions(sources[0].read_text(encoding="utf-8"))
    except (SyntaxError, ValueError) as error:
        raise ValueError(
            f"{SKELETON.as_posix()} cannot be parsed ({error}): the handout ships "
            "the pristine skeleton only"
        ) from None
    filled = [name for name in STUDENT_FUNCTIONS if name not in unfinished]
    if filled:
        listed = " and ".join(f"{name}()" for name in filled)
        raise ValueError(
            f"{SKELETON.as_posix()} has {listed} filled in (no `raise "
            "NotImplementedError` placeholder left): the handout ships the "
            "pristine skeleton only"
        )


def shipped_bytes(files, answer):
    """{path inside the handout: bytes}; with ``answer`` "remove", every markdown file is
    cut at its answer markers, then none may still show both functions whole."""
    if answer not in guide_answer.CHOICES:
        raise ValueError(
            f"--answer must be one of {', '.join(guide_answer.CHOICES)}, got {answer!r}"
        )
    contents = {}
    for source, relative in files:
        data = source.read_bytes()
        if answer == "remove" and relative.suffix == ".md":
            text = guide_answer.cut(data.decode("utf-8"), relative.as_posix())
            shown = guide_answer.shown(text)
            if len(shown) == len(STUDENT_FUNCTIONS):
                raise ValueError(
                    f"{relative.as_posix()} shows {' and '.join(shown)} whole "
                    f"outside {guide_answer.BEGIN} ... {guide_answer.END}, and "
                    "--answer remove ships no answer: mark that block"
                )
            data = text.encode("utf-8")
        contents[relative] = data
    return contents


def build(out_dir, answer="keep"):
    """Write the handout folder and zip under ``out_dir``; return both paths. ``answer``:
    "keep" the guides' answer blocks, as the course ships them, or "remove" them."""
    out_dir = pathlib.Path(out_dir)
    files = _handout_files()
    check(files)
    contents = shipped_bytes(files, answer)
    folder = out_dir / NAME
    if folder.exists():
        shutil.rmtree(folder)
    for relative, data in contents.items():
        target = folder / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    (folder / "README.md").write_bytes(README.read_bytes())
    archive = out_dir / f"{NAME}.zip"
    temporary = archive.with_suffix(".zip.tmp")
    with zipfile.ZipFile(temporary, "w", zipfile.ZIP_DEFLATED) as bundle:
        for path in sorted(p for p in folder.rglob("*") if p.is_file()):
            info = zipfile.ZipInfo(f"{NAME}/{path.relative_to(folder).as_posix()}", _ZIP_TIME)
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            bundle.writestr(info, path.read_bytes())
    temporary.replace(archive)
    return folder, archive
