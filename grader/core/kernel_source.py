"""The part of a submission the batch grader runs to earn points: its kernel, and nothing else.

The assignment is two functions, ``arrangement()`` and ``application()``. The
grader builds the kernel from them itself (``ninetoothed.make``, as the skeleton
does) and judges what that launch writes, so nothing else in the file can
stand in for the kernel. ``extract(source)`` rebuilds the file keeping only:

* imports of ``ninetoothed``, ``ninetoothed.language``, ``triton.language`` and ``math``;
* module constants (``BLOCK_SIZE_M = 64``, or ``BLOCK_SIZE_M: int = 64`` without its
  annotation, ``ninetoothed.block_size(...)``, arithmetic on other constants); a constant
  or ``if`` that reads the environment is decided here, for an empty environment (the
  skeleton's ``NINETOOTHED_AUTOTUNE`` switch takes its default branch);
* the two functions, and the module functions they call.

Each kept statement is copied exactly, its parser span and nothing around it,
onto its original lines, so tracebacks name the student's own lines;
everything else is blank. ``nt_gemm`` and any other
module code never run where the graded outputs are made.

What is kept is checked against an allowlist that is one (grader.core.kernel_allowlist):
every node and every field, names resolved as Python resolves them. The batch grader flags
a file with a violation and runs nothing from it; grader.core.build_guard is the
second layer, for the day the allowlist has a bug.
"""

import ast
import dataclasses
import io

from grader.core.kernel_allowlist import (
    ROOT_MODULES,
    Checker,
    Violation,
    attribute_of_module,
    bound_names_in,
    dotted_name,
    output_reads,
)
from grader.core import nesting
from grader.core.loading import STUDENT_FUNCTIONS


@dataclasses.dataclass(frozen=True)
class KernelSource:
    """The rebuilt file, line for line, and what stopped it from being complete."""

    text: str
    violations: tuple = ()

    @property
    def ok(self):
        return not self.violations


@dataclasses.dataclass
class _Scope:
    """What the module level of the rebuilt file binds, and what it leaves out and why."""

    modules: dict = dataclasses.field(default_factory=dict)  # name -> dotted module
    constants: dict = dataclasses.field(default_factory=dict)  # name -> line
    functions: dict = dataclasses.field(default_factory=dict)  # name -> FunctionDef
    excluded: dict = dataclasses.field(default_factory=dict)  # name -> why it is not kept
    environment_modules: set = dataclasses.field(default_factory=set)  # names standing for os


_UNKNOWN = object()


class _Environment:
    """Evaluates the few expressions that read the environment, for an empty environment."""

    def __init__(self, scope, values):
        self.scope, self.values = scope, values

    def reads_environment(self, node):
        return any(
            isinstance(sub, ast.Name) and sub.id in self.scope.environment_modules
            for sub in ast.walk(node)
        )

    def evaluate(self, node):
        """The expression's value with no environment variable set, or _UNKNOWN."""
        try:
            return self._value(node)
        except (ValueError, TypeError, ArithmeticError, KeyError):
            return _UNKNOWN

    def _value(self, node):
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name) and node.id in self.values:
            return self.values[node.id]
        if isinstance(node, ast.Call) and not node.keywords:
            name = dotted_name(node.func)
            args = [self._value(arg) for arg in node.args]
            if _UNKNOWN in args:
                return _UNKNOWN
            module, _, call = (name or "").rpartition(".")
            environ = module in {f"{os}.environ" for os in self.scope.environment_modules}
            if (environ and call == "get") or (
                module in self.scope.environment_modules and call == "getenv"
            ):
                return args[1] if len(args) > 1 else None
            if name in ("int", "float", "str", "bool") and len(args) == 1:
                return {"int": int, "float": float, "str": str, "bool": bool}[name](args[0])
            return _UNKNOWN
        if isinstance(node, ast.Compare) and len(node.ops) == 1:
            left, right = self._value(node.left), self._value(node.comparators[0])
            if isinstance(node.ops[0], (ast.In, ast.NotIn)) and dotted_name(
                node.comparators[0]
            ) in {f"{os}.environ" for os in self.scope.environment_modules}:
                return isinstance(node.ops[0], ast.NotIn)
            if _UNKNOWN in (left, right):
                return _UNKNOWN
            compare = {
                ast.Eq: lambda a, b: a == b,
                ast.NotEq: lambda a, b: a != b,
                ast.Is: lambda a, b: a is b,
                ast.IsNot: lambda a, b: a is not b,
            }
            operation = compare.get(type(node.ops[0]))
            return operation(left, right) if operation else _UNKNOWN
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            value = self._value(node.operand)
            return _UNKNOWN if value is _UNKNOWN else not value
        if isinstance(node, ast.BoolOp):
            values = [self._value(value) for value in node.values]
            if _UNKNOWN in values:
                return _UNKNOWN
            return all(values) if isinstance(node.op, ast.And) else any(values)
        if isinstance(node, ast.IfExp):
            test = self._value(node.test)
            return _UNKNOWN if test is _UNKNOWN else self._value(node.body if test else node.orelse)
        return _UNKNOWN


def _bound_names(statement):
    names = set()
    for node in ast.walk(statement):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((alias.asname or alias.name.split(".")[0]) for alias in node.names)
    return names


def defined_names(source):
    """Every name the module level of ``source`` may bind, however (for the contract's names)."""
    tree = nesting.parse(source)
    names = set()
    for statement in tree.body:
        names |= _bound_names(statement)
    return names


def _annotated_constant(statement):
    """``BLOCK_SIZE_M: int = 64`` (or ``: Final``) on one line: a constant like any other,
    rebuilt as ``BLOCK_SIZE_M = 64`` so that its annotation is never evaluated."""
    return (
        statement.simple
        and isinstance(statement.target, ast.Name)
        and statement.value is not None
        and statement.lineno == statement.end_lineno
    )


def _position(statement):
    """The parser's span of ``statement``, for a node standing in for it (kept as its text)."""
    return {
        field: getattr(statement, field)
        for field in ("lineno", "col_offset", "end_lineno", "end_col_offset")
    }


def _parser_lines(source):
    """``source``'s lines as the parser numbers them: only \\n, \\r\\n and \\r end one.
    ``str.splitlines`` also ends one at \\x0c, \\x85, \\u2028 and the like, which may stand
    in a comment: each kept statement after it would be copied from the line above it."""
    return [line.rstrip("\r\n") for line in io.StringIO(source, newline="")]


class _Rebuilder:
    def __init__(self, source):
        self.lines = _parser_lines(source)
        self.pieces = {}  # line number -> [(column, text)] of the kept statements on it
        self.scope = _Scope()
        self.values = {}  # constants whose values are known, for environment reads
        self.environment = _Environment(self.scope, self.values)
        self.violations = []
        self.indent = 0  # of the block being read: kept lines lose it

    # -- statements

    def statements(self, body):
        self.indent = body[0].col_offset if body else 0
        for statement in body:
            if isinstance(statement, (ast.Import, ast.ImportFrom)):
                self.imports(statement)
            elif isinstance(statement, ast.FunctionDef):
                self.scope.functions[statement.name] = statement
                self.scope.excluded.pop(statement.name, None)
            elif isinstance(statement, ast.Assign):
                self.constant(statement)
            elif isinstance(statement, ast.AnnAssign) and _annotated_constant(statement):
                value = ast.get_source_segment("\n".join(self.lines), statement.value)
                self.constant(
                    ast.Assign(
                        targets=[statement.target], value=statement.value, **_position(statement)
                    ),
                    text=f"{statement.target.id} = {value}",
                )
            elif isinstance(statement, ast.AnnAssign):
                self.exclude(
                    statement,
                    f"an annotated assignment (line {statement.lineno}) the grader does not run",
                )
            elif isinstance(statement, ast.If) and self.environment.reads_environment(
                statement.test
            ):
                decided = self.environment.evaluate(statement.test)
                if decided is _UNKNOWN:
                    self.exclude(statement, "an `if` on the environment the grader cannot decide")
                else:
                    self.statements(statement.body if decided else statement.orelse)
                    self.indent = statement.col_offset
            elif isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant):
                continue  # a docstring
            else:
                self.exclude(
                    statement, f"module code (line {statement.lineno}) the grader does not run"
                )

    def exclude(self, statement, why):
        """Names the statement binds are unavailable from here on, even if kept before:
        the file would use this statement's value, the rebuild could not."""
        for name in _bound_names(statement):
            self.scope.excluded.setdefault(name, why)
            self.scope.constants.pop(name, None)
            self.values.pop(name, None)

    def imports(self, statement):
        if isinstance(statement, ast.Import):
            for alias in statement.names:
                if alias.name == "os" and alias.asname in (None, "os"):
                    self.scope.environment_modules.add("os")
                if alias.name in ROOT_MODULES:
                    local = alias.asname or alias.name.split(".")[0]
                    self.scope.modules[local] = alias.name if alias.asname else local
                else:
                    self.scope.excluded[alias.asname or alias.name.split(".")[0]] = (
                        f"`import {alias.name}` (line {statement.lineno}), which the grader drops"
                    )
            if all(alias.name in ROOT_MODULES for alias in statement.names):
                self.keep(statement)
            return
        module = statement.module or ""
        allowed = module in ROOT_MODULES and statement.level == 0
        for alias in statement.names:
            local = alias.asname or alias.name
            if not allowed:
                self.scope.excluded[local] = (
                    f"`from {module} import {alias.name}` "
                    f"(line {statement.lineno}), which the grader drops"
                )
                continue
            kind, detail = attribute_of_module(module, alias.name)
            if kind == "module":
                self.scope.modules[local] = detail
            elif kind == "value":
                self.scope.constants[local] = statement.lineno
            else:
                allowed = False
                self.scope.excluded[local] = f"{detail}, which a kernel may not use"
        if allowed:
            self.keep(statement)

    def constant(self, statement, text=None):
        """A module constant kept, or its names excluded; ``text``: what the rebuilt file
        holds in its place, if not its own source."""
        targets = statement.targets
        names = []
        for target in targets:
            elements = target.elts if isinstance(target, (ast.Tuple, ast.List)) else [target]
            if not all(isinstance(element, ast.Name) for element in elements):
                self.exclude(
                    statement, f"an assignment (line {statement.lineno}) the grader does not run"
                )
                return
            names += [element.id for element in elements]
        value = statement.value
        if value is None:
            return
        if self.environment.reads_environment(value):
            decided = self.environment.evaluate(value)
            # Numbers only: a string could reach a Symbol, whose text NineToothed runs as code.
            if (
                decided is _UNKNOWN
                or len(names) != 1
                or not isinstance(decided, (int, float, bool, type(None)))
            ):
                self.exclude(
                    statement,
                    f"a value read from the environment (line "
                    f"{statement.lineno}) the grader cannot decide",
                )
                return
            self.values[names[0]] = decided
            self.pieces.setdefault(statement.lineno, []).append(
                (statement.col_offset, f"{names[0]} = {decided!r}")
            )
            self.scope.constants[names[0]] = statement.lineno
            for name in names:
                self.scope.excluded.pop(name, None)
            return
        checker = Checker(self.scope, local_names=set(), where="a module constant")
        checker.expression(value)
        if checker.called_functions:
            self.exclude(
                statement,
                f"the assignment on line {statement.lineno}, which calls "
                "a function of the file at import",
            )
            return
        if checker.violations:
            self.exclude(
                statement,
                f"the assignment on line {statement.lineno}, which "
                f"{checker.violations[0].what.split(': ', 1)[-1]}",
            )
            return
        if len(names) == 1 and isinstance(value, ast.Constant):
            self.values[names[0]] = value.value
        for name in names:
            self.scope.constants[name] = statement.lineno
            self.scope.excluded.pop(name, None)
        if text is None:
            self.keep(statement)
        else:
            self.pieces.setdefault(statement.lineno, []).append((statement.col_offset, text))

    def keep(self, statement, indent=None):
        """Copy exactly the statement's own source, the parser's span, onto its own lines,
        less its block's indentation: whatever shares a line with it stays behind."""
        indent = self.indent if indent is None else indent
        first, last = statement.lineno, statement.end_lineno
        for number in range(first, last + 1):
            raw = self.lines[number - 1].encode("utf-8")  # the parser's offsets count bytes
            start = statement.col_offset if number == first else 0
            end = statement.end_col_offset if number == last else len(raw)
            text = raw[start:end].decode("utf-8")
            if number != first:
                text = text[min(indent, len(text) - len(text.lstrip(" "))) :]
            self.pieces.setdefault(number, []).append((start, text))

    # -- functions

    def functions(self):
        # (name, whether it runs only inside the kernel): a helper that arrangement() calls
        # runs as plain Python, and is checked as such even if application() calls it too.
        wanted = [(name, name == "application") for name in STUDENT_FUNCTIONS]
        done, kept = set(), set()
        while wanted:
            name, in_kernel = wanted.pop(0)
            if (name, in_kernel) in done:
                continue
            done.add((name, in_kernel))
            node = self.scope.functions.get(name)
            if node is None:
                continue
            if name in self.scope.excluded:
                self.violations.append(
                    Violation(node.lineno, f"{name}() is redefined by {self.scope.excluded[name]}")
                )
                continue
            checker = Checker(
                self.scope, bound_names_in(node), where=f"{name}()", in_kernel=in_kernel
            )
            checker.function(node)
            self.violations += checker.violations
            if name == "application":
                self.violations += output_reads(node)
            wanted += [(called, in_kernel) for called in sorted(checker.called_functions)]
            if name not in kept:
                kept.add(name)
                self.keep(node, indent=node.col_offset)

    def text(self):
        return (
            "\n".join(
                "; ".join(text for _, text in sorted(self.pieces.get(number, ())))
                for number in range(1, len(self.lines) + 1)
            )
            + "\n"
        )


def extract(source):
    """The rebuilt file for the kernel run, with every whitelist violation found; a
    SyntaxError (grader.core.nesting.TooDeep among them) for a file it does not read."""
    tree = nesting.parse(source)
    rebuilder = _Rebuilder(source)
    rebuilder.statements(tree.body)
    rebuilder.functions()
    violations = sorted(set(rebuilder.violations), key=lambda v: (v.line, v.what))
    return KernelSource(rebuilder.text(), tuple(violations))
