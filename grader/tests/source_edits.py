"""Test submissions as text: a base file plus small named edits, never a whole-file copy.

A copy drifts from the reference it was taken from; an edit cannot, since its anchor must
occur exactly once in the base: once the anchor is gone (or doubled), building the
submission fails loudly.
"""

import ast
import dataclasses
import functools
import pathlib
import textwrap

import solutions


def model_answer():
    """The base of the kit's variants: the current reference."""
    return pathlib.Path(solutions.MODEL_ANSWER).read_text(encoding="utf-8")


def replace_once(text, old, new):
    if text.count(old) != 1:
        raise ValueError(f"the base holds {text.count(old)} copies of {old!r}, not one")
    return text.replace(old, new)


def append(text, code):
    """``text`` with module code added at its end (it runs at import, after nt_gemm is defined)."""
    return text.rstrip("\n") + "\n\n\n" + textwrap.dedent(code).strip("\n") + "\n"


def replace_function(text, name, new):
    """``text`` with the top-level function ``name`` (decorators included) replaced by ``new``."""
    tree = ast.parse(text)
    node = next(
        item for item in tree.body if isinstance(item, ast.FunctionDef) and item.name == name
    )
    first = min([node.lineno] + [decorator.lineno for decorator in node.decorator_list])
    lines = text.splitlines(keepends=True)
    return (
        "".join(lines[: first - 1])
        + textwrap.dedent(new).strip("\n")
        + "\n"
        + "".join(lines[node.end_lineno :])
    )


def appended(code):
    """An edit: ``code`` added at the end of the module."""
    return functools.partial(append, code=code)


def function(name, new):
    """An edit: the top-level function ``name`` replaced by ``new``."""
    return functools.partial(replace_function, name=name, new=new)


@dataclasses.dataclass(frozen=True)
class Variant:
    what: str  # what it changes (and, where not plain, what the grader must make of it)
    edits: tuple  # (old, new) pairs, each replaced exactly once, or functions of the text

    def edited(self):
        """The model answer with this variant's edits."""
        text = model_answer()
        for edit in self.edits:
            text = edit(text) if callable(edit) else replace_once(text, *edit)
        return text

    def source(self, name):
        """The submission: ``edited()`` under a comment naming the variant and what it is."""
        header = textwrap.wrap(f"Kit test submission {name}: {self.what}", 88)
        return "".join(f"# {line}\n" for line in header) + self.edited()


def write_class(folder, catalogue, names=None):
    """Write ``catalogue``'s variants (or only ``names``) as a class: one folder each."""
    folder = pathlib.Path(folder)
    for name in names or catalogue:
        (folder / name).mkdir(parents=True, exist_ok=True)
        (folder / name / "ninetoothed_gemm.py").write_text(
            catalogue[name].source(name), encoding="utf-8"
        )
    return folder


def class_command(catalogue, module, what, argv=None):
    """``python -m MODULE FOLDER [NAME ...]``: write ``catalogue`` (or the names given) as a
    class to grade, with --help and the names checked (``--help`` once became a folder)."""
    import argparse

    parser = argparse.ArgumentParser(
        prog=f"python -m {module}",
        description=f"Write {what} as a class to grade: one "
        "folder per variant, each with its "
        "ninetoothed_gemm.py.",
    )
    parser.add_argument("folder", metavar="FOLDER", help="where the class goes")
    parser.add_argument(
        "names",
        metavar="NAME",
        nargs="*",
        help=f"only these (default: all {len(catalogue)}): " + ", ".join(catalogue),
    )
    args = parser.parse_args(argv)
    unknown = [name for name in args.names if name not in catalogue]
    if unknown:
        parser.error(
            f"NAME: no variant {', '.join(map(repr, unknown))}; choose from {', '.join(catalogue)}"
        )
    print(write_class(args.folder, catalogue, args.names or None))


def writer(folder, catalogue):
    """``path(name)``: the variant's file in ``folder``, written on first use."""

    @functools.cache
    def path(name):
        target = pathlib.Path(folder) / f"{name}.py"
        target.write_text(catalogue[name].source(name), encoding="utf-8")
        return target

    return path
