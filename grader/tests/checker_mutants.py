"""Mutants of the model answer for the kernel checker's mutation test (test_checker_mutants.py).

Every expression and statement kind of Python's grammar, carrying a payload, at every
place of the file that the rebuilt kernel keeps: the bodies of the two functions and of
a helper they call, the functions' defaults, annotations and decorators, the module
constants and the module's own statements. A payload is either hostile (it reads a
file, imports, lists a folder or starts a process when it is evaluated) or harmless
(a number, a constant): the checker must reject every hostile mutant that could run,
and what it accepts must do, when built and launched, nothing beyond what a kernel
build needs (grader.core.build_guard.Policy, the same policy the worker enforces).

    python -m grader.tests.checker_mutants FOLDER   # build and launch every FOLDER/*.py

prints one JSON line per file: its name, the audit events the policy refused, and the
error its build or launch raised, if any (errors are the mutant's own business).
"""

import ast
import dataclasses
import json
import pathlib
import sys

from solutions import MODEL_ANSWER

PAYLOADS = {
    "open": "open('/etc/hostname').read()",
    "import": "__import__('imaplib')",
    # Bound in a comprehension, used outside it: the first checker's scope confusion.
    "shadowed_module": (
        "([ninetoothed for ninetoothed in (0,)], tuple(ninetoothed.generation."
        "pathlib.Path(ninetoothed.generation.pathlib.os.sep).iterdir()))"
    ),
    "shadowed_builtin": "([open for open in (0,)], open('/etc/hostname'))",
    "number": "BLOCK_SIZE_M",
}
HOSTILE = ("open", "import", "shadowed_module", "shadowed_builtin")

# One template per expression kind; {p} is the payload.
EXPRESSIONS = {
    "BoolOp": "(0 or {p})",
    "NamedExpr": "(_w := {p})",
    "BinOp": "(0 + {p})",
    "UnaryOp": "(not {p})",
    "Lambda": "(lambda: {p})()",
    "IfExp": "({p} if 1 else 0)",
    "Dict": "{{0: {p}}}",
    "Set": "{{{p}}}",
    "ListComp": "[{p} for _i in (0,)]",
    "SetComp": "{{{p} for _i in (0,)}}",
    "DictComp": "{{0: {p} for _i in (0,)}}",
    "GeneratorExp": "tuple({p} for _i in (0,))",
    "Await": "(await {p})",
    "Yield": "(yield {p})",
    "YieldFrom": "(yield from ({p},))",
    "Compare": "(0 < {p})",
    "Call": "max(0, {p})",
    "FormattedValue": 'f"{{{p}}}"',
    "JoinedStr": 'f"x{{{p}!r:>{{{p}}}}}"',
    "Constant": "('text', {p})[1]",
    "Attribute": "({p}).real",
    "Subscript": "(0, {p})[1]",
    "Starred": "[*({p},)]",
    "Name": "{p}",
    "List": "[{p}]",
    "Tuple": "({p},)",
    "Slice": "(0, 1)[{p}:]",
}
# One template per statement kind, as lines at one indentation; {p} is the payload.
STATEMENTS = {
    "FunctionDef": ["def _inner(_a={p}):", "    return _a", "_inner()"],
    "AsyncFunctionDef": ["async def _inner(_a={p}):", "    return _a"],
    "ClassDef": ["class _Inner:", "    value = {p}"],
    "Return": ["return {p}"],
    "Delete": ["_d = [0, 0]", "del _d[{p} * 0]"],
    "Assign": ["_x = {p}"],
    "AugAssign": ["_x = 0", "_x += {p}"],
    "AnnAssign": ["_x: int = {p}"],
    "For": ["for _i in ({p},):", "    pass"],
    "AsyncFor": ["async for _i in {p}:", "    pass"],
    "While": ["while not {p}:", "    break"],
    "If": ["if {p}:", "    pass"],
    "With": ["with {p}:", "    pass"],
    "AsyncWith": ["async with {p}:", "    pass"],
    "Match": ["match {p}:", "    case _:", "        pass"],
    "Raise": ["if 0:", "    raise ValueError({p})"],
    "Try": ["try:", "    _x = {p}", "except Exception:", "    pass"],
    "TryStar": ["try:", "    _x = {p}", "except* Exception:", "    pass"],
    "Assert": ["assert 1, {p}", "assert {p} or 1"],
    "Import": ["import imaplib", "_x = {p}"],
    "ImportFrom": ["from os import listdir", "_x = {p}"],
    "Global": ["global BLOCK_SIZE_N", "BLOCK_SIZE_N = {p}"],
    "Nonlocal": ["nonlocal _x", "_x = {p}"],
    "Expr": ["{p}"],
    "Pass": ["pass", "_x = {p}"],
    "Break": ["for _i in (0,):", "    _x = {p}", "    break"],
    "Continue": ["for _i in (0,):", "    _x = {p}", "    continue"],
    "TypeAlias": ["type _T = {p}"],
}

ARRANGEMENT = "def arrangement(lhs, rhs, output, block_size_m=BLOCK_SIZE_M,"
ARRANGEMENT_BODY = "    output_arranged = output.tile((block_size_m, block_size_n))\n"
APPLICATION_BODY = "    accumulator = ntl.zeros(output.shape, dtype=ntl.float32)\n"
CONSTANTS = "    BLOCK_SIZE_K = 64\n"


@dataclasses.dataclass(frozen=True)
class Mutant:
    name: str  # place-kind-payload
    payload: str
    source: str

    @property
    def hostile(self):
        return self.payload in HOSTILE


def _once(base, anchor, replacement):
    assert base.count(anchor) == 1, anchor
    return base.replace(anchor, replacement)


def _indented(lines, indent):
    return "".join(" " * indent + line + "\n" for line in lines)


def _expression_places(base, expression):
    """(place, source) for each place an expression can stand in the kept code."""
    yield (
        "arrangement_body",
        _once(base, ARRANGEMENT_BODY, f"    _x = {expression}\n" + ARRANGEMENT_BODY),
    )
    yield (
        "application_body",
        _once(base, APPLICATION_BODY, f"    _x = {expression}\n" + APPLICATION_BODY),
    )
    yield "default", _once(base, ARRANGEMENT, ARRANGEMENT + f" _extra={expression},")
    yield "keyword_default", _once(base, ARRANGEMENT, ARRANGEMENT + f" *, _extra={expression},")
    yield "annotation", _once(base, "def arrangement(lhs,", f"def arrangement(lhs: {expression},")
    yield "vararg_annotation", _once(base, ARRANGEMENT, ARRANGEMENT + f" *_a: {expression},")
    yield (
        "kwarg_annotation",
        _once(
            base,
            "    block_size_k=BLOCK_SIZE_K):",
            f"    block_size_k=BLOCK_SIZE_K, **_k: {expression}):",
        ),
    )
    yield (
        "return_annotation",
        _once(
            base,
            "    block_size_k=BLOCK_SIZE_K):",
            f"    block_size_k=BLOCK_SIZE_K) -> {expression}:",
        ),
    )
    yield "decorator", _once(base, "\ndef arrangement(", f"\n@{expression}\ndef arrangement(")
    yield "module_constant", _once(base, CONSTANTS, CONSTANTS + f"    EXTRA = {expression}\n")
    yield (
        "helper_default",
        _once(base, ARRANGEMENT_BODY, "    _x = _helper()\n" + ARRANGEMENT_BODY)
        + f"\n\ndef _helper(_a={expression}):\n    return _a\n",
    )


def _statement_places(base, lines):
    yield "arrangement_body", _once(base, ARRANGEMENT_BODY, _indented(lines, 4) + ARRANGEMENT_BODY)
    yield "application_body", _once(base, APPLICATION_BODY, _indented(lines, 4) + APPLICATION_BODY)
    yield (
        "helper_body",
        _once(base, ARRANGEMENT_BODY, "    _y = _helper()\n" + ARRANGEMENT_BODY)
        + "\n\ndef _helper():\n"
        + _indented(lines, 4)
        + "    return 0\n",
    )
    yield "module_statement", _once(base, CONSTANTS, CONSTANTS + _indented(lines, 4))
    yield "module_level", base + "\n" + _indented(lines, 0)


def mutants(base=None):
    """Every mutant that Python compiles (the grader stops any other file before its
    checker), with a name that says what and where."""
    base = base or MODEL_ANSWER.read_text(encoding="utf-8")
    found = []
    for payload, text in PAYLOADS.items():
        for kind, template in EXPRESSIONS.items():
            expression = template.format(p=text)
            for place, source in _expression_places(base, expression):
                found.append(Mutant(f"{place}-{kind}-{payload}", payload, source))
        for kind, lines in STATEMENTS.items():
            filled = [line.format(p=text) for line in lines]
            for place, source in _statement_places(base, filled):
                found.append(Mutant(f"{place}-{kind}-{payload}", payload, source))
    return [mutant for mutant in found if compiles(mutant.source)]


def compiles(source):
    try:
        compile(source, "mutant", "exec", dont_inherit=True)
    except (SyntaxError, ValueError):
        return False
    return True


def grammar_kinds():
    """Every concrete expression and statement kind of this Python's grammar."""

    def concrete(kind):
        return {
            sub.__name__
            for sub in kind.__subclasses__()
            if sub.__module__ == "ast" and sub._fields is not None
        } - {"Num", "Str", "Bytes", "NameConstant", "Ellipsis", "Index", "ExtSlice", "Suite"}

    return concrete(ast.expr), concrete(ast.stmt)


def _run(folder):
    """Build and launch every mutant under the build guard, recording what it refuses."""
    from grader.core import backend

    active = backend.activate()
    import ninetoothed
    import torch
    from ninetoothed import Tensor

    from grader.core import build_guard
    from grader.core.loading import SubmissionError, import_file

    files = sorted(pathlib.Path(folder).glob("*.py"))
    refusals = []
    build_guard.install(build_guard.Policy(files[0] if files else folder), refusals.append)
    operands = [torch.randn(16, 16, dtype=torch.float16, device=active.device) for _ in "ab"]
    for path in files:
        refusals.clear()
        error = ""
        try:
            module = import_file(path)
            kernel = ninetoothed.make(
                module.arrangement, module.application, (Tensor(2), Tensor(2), Tensor(2))
            )
            kernel(*operands, torch.empty(16, 16, dtype=torch.float16, device=active.device))
        except (SubmissionError, Exception) as caught:  # noqa: BLE001 - the mutant's own
            error = f"{type(caught).__name__}: {caught}"[:300]
        print(
            json.dumps({"name": path.stem, "refused": list(refusals), "error": error}), flush=True
        )


if __name__ == "__main__":
    _run(sys.argv[1])
