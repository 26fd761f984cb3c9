"""The part of a submission the batch grader runs to earn points: its kernel, and nothing else.

The assignment is two functions, ``arrangement()`` and ``application()``. The
grader builds the kernel from them itself (``ninetoothed.make``, as the skeleton
does) and judges what that launch writes, so nothing else in the file can
stand in for the kernel. ``extract(source)`` rebuilds the file keeping only:

* imports of ``ninetoothed``, ``ninetoothed.language`` and ``math``;
* module constants (``BLOCK_SIZE_M = 64``, ``ninetoothed.block_size(...)``,
  arithmetic on other constants); a constant or ``if`` that reads the
  environment is decided here, for an empty environment (the skeleton's
  ``NINETOOTHED_AUTOTUNE`` switch takes its default branch);
* the two functions, and the module functions they call.

Each kept statement is copied exactly, its parser span and nothing around it,
onto its original lines, so tracebacks name the student's own lines;
everything else is blank. ``nt_gemm`` and any other
module code never run where the graded outputs are made.

Inside the kept functions only what an arrangement or an application needs is
allowed (a whitelist, not a list of known attacks): local names, the allowed
modules' public non-module attributes, the file's constants and kept functions,
a few harmless builtins, arithmetic, loops, conditions, calls, and
subscripts. No attribute starting with ``_``, no strings outside docstrings,
``assert`` messages and ``raise``, no ``Symbol`` (its text becomes kernel
source), no imports, lambdas, walruses, nested functions, ``global``, ``with``
or ``try``. Anything else is a *violation*: the batch grader flags the
submission and runs nothing from it.
"""

import ast
import builtins
import dataclasses
import functools
import inspect

from grader.core.loading import STUDENT_FUNCTIONS

BUILTINS = frozenset({
    "range", "len", "min", "max", "abs", "int", "float", "bool", "tuple", "list", "dict",
    "enumerate", "zip", "reversed", "sum", "all", "any", "divmod", "round", "pow", "print",
    "isinstance", "sorted", "map", "True", "False", "None",
    "ValueError", "TypeError", "NotImplementedError", "AssertionError", "RuntimeError",
})
_PYTHON_BUILTINS = frozenset(dir(builtins))
# Public names that still reach code execution or the file system: never needed by a kernel.
DENIED_ATTRIBUTES = frozenset({
    "make", "jit", "build", "aot", "eval", "evalf", "subs", "sympify", "format", "format_map",
    "exec", "compile", "load", "save", "system", "popen", "mro", "modules", "environ",
    "builtins", "globals", "locals", "vars", "getattr", "setattr",
    # NineToothed's code-generation handles: a Symbol's text becomes kernel source.
    "Symbol", "call", "attribute", "find_and_replace", "node",
})
# Submodules a kernel may reach through an allowed module.
ALLOWED_SUBMODULES = frozenset({"ninetoothed.language", "ninetoothed.language.libdevice"})
ROOT_MODULES = frozenset({"ninetoothed", "ninetoothed.language", "math"})


@dataclasses.dataclass(frozen=True)
class Violation:
    line: int
    what: str

    def __str__(self):
        return f"line {self.line}: {self.what}"


@dataclasses.dataclass(frozen=True)
class KernelSource:
    """The rebuilt file, line for line, and what stopped it from being complete."""

    text: str
    violations: tuple = ()

    @property
    def ok(self):
        return not self.violations


@functools.cache
def _module_members(dotted):
    """(public non-module attributes, submodule attributes) of an allowed module.

    ``ninetoothed.language`` stands for what NineToothed's code generator binds
    it to in a kernel, ``triton.language``, as well as for itself.
    """
    import importlib

    sources = [importlib.import_module(dotted)]
    if dotted == "ninetoothed.language":
        sources.append(importlib.import_module("triton.language"))
    values, modules = set(), {}
    for source in sources:
        for name in dir(source):
            if name.startswith("_"):
                continue
            value = getattr(source, name)
            if inspect.ismodule(value):
                modules.setdefault(name, value.__name__)
            else:
                values.add(name)
    if dotted == "ninetoothed.language":
        modules["libdevice"] = "ninetoothed.language.libdevice"
    return frozenset(values - DENIED_ATTRIBUTES - set(modules)), modules


def _attribute_of_module(dotted, attribute):
    """('value', None), ('module', name) or ('denied', why) for ``module.attribute``."""
    if attribute.startswith("_") or attribute in DENIED_ATTRIBUTES:
        return "denied", f"{dotted}.{attribute}"
    if dotted == "ninetoothed.language.libdevice":
        return "value", None  # math functions, one per name
    values, modules = _module_members(dotted)
    if attribute in values:
        return "value", None
    target = modules.get(attribute)
    if target in ALLOWED_SUBMODULES:
        return "module", target
    if target:
        return "denied", f"the module {dotted}.{attribute}"
    return "denied", f"{dotted}.{attribute}"


# --------------------------------------------------------------------------- module level

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
        return any(isinstance(sub, ast.Name) and sub.id in self.scope.environment_modules
                   for sub in ast.walk(node))

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
            name = _dotted(node.func)
            args = [self._value(arg) for arg in node.args]
            if _UNKNOWN in args:
                return _UNKNOWN
            module, _, call = (name or "").rpartition(".")
            environ = module in {f"{os}.environ" for os in self.scope.environment_modules}
            if (environ and call == "get") or (
                    module in self.scope.environment_modules and call == "getenv"):
                return args[1] if len(args) > 1 else None
            if name in ("int", "float", "str", "bool") and len(args) == 1:
                return {"int": int, "float": float, "str": str, "bool": bool}[name](args[0])
            return _UNKNOWN
        if isinstance(node, ast.Compare) and len(node.ops) == 1:
            left, right = self._value(node.left), self._value(node.comparators[0])
            if isinstance(node.ops[0], (ast.In, ast.NotIn)) and _dotted(
                    node.comparators[0]) in {f"{os}.environ" for os in self.scope.environment_modules}:
                return isinstance(node.ops[0], ast.NotIn)
            if _UNKNOWN in (left, right):
                return _UNKNOWN
            compare = {ast.Eq: lambda a, b: a == b, ast.NotEq: lambda a, b: a != b,
                       ast.Is: lambda a, b: a is b, ast.IsNot: lambda a, b: a is not b}
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


def _dotted(node):
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        return ".".join([node.id] + parts[::-1])
    return None


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
    tree = ast.parse(source)
    names = set()
    for statement in tree.body:
        names |= _bound_names(statement)
    return names


class _Rebuilder:
    def __init__(self, source):
        self.lines = source.splitlines()
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
            elif isinstance(statement, (ast.Assign, ast.AnnAssign)):
                self.constant(statement)
            elif isinstance(statement, ast.If) and self.environment.reads_environment(statement.test):
                decided = self.environment.evaluate(statement.test)
                if decided is _UNKNOWN:
                    self.exclude(statement, "an `if` on the environment the grader cannot decide")
                else:
                    self.statements(statement.body if decided else statement.orelse)
                    self.indent = statement.col_offset
            elif isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant):
                continue  # a docstring
            else:
                self.exclude(statement, f"module code (line {statement.lineno}) the grader "
                                        "does not run")

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
                    self.scope.excluded[alias.asname or alias.name.split(".")[0]] = \
                        f"`import {alias.name}` (line {statement.lineno}), which the grader drops"
            if all(alias.name in ROOT_MODULES for alias in statement.names):
                self.keep(statement)
            return
        module = statement.module or ""
        allowed = module in ROOT_MODULES and statement.level == 0
        for alias in statement.names:
            local = alias.asname or alias.name
            if not allowed:
                self.scope.excluded[local] = (f"`from {module} import {alias.name}` "
                                              f"(line {statement.lineno}), which the grader drops")
                continue
            kind, detail = _attribute_of_module(module, alias.name)
            if kind == "module":
                self.scope.modules[local] = detail
            elif kind == "value":
                self.scope.constants[local] = statement.lineno
            else:
                allowed = False
                self.scope.excluded[local] = f"{detail}, which a kernel may not use"
        if allowed:
            self.keep(statement)

    def constant(self, statement):
        targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
        names = []
        for target in targets:
            elements = target.elts if isinstance(target, (ast.Tuple, ast.List)) else [target]
            if not all(isinstance(element, ast.Name) for element in elements):
                self.exclude(statement, f"an assignment (line {statement.lineno}) the grader "
                                        "does not run")
                return
            names += [element.id for element in elements]
        value = statement.value
        if value is None:
            return
        if self.environment.reads_environment(value):
            decided = self.environment.evaluate(value)
            # Numbers only: a string could reach a Symbol, whose text NineToothed runs as code.
            if decided is _UNKNOWN or len(names) != 1 or not isinstance(
                    decided, (int, float, bool, type(None))):
                self.exclude(statement, f"a value read from the environment (line "
                                        f"{statement.lineno}) the grader cannot decide")
                return
            self.values[names[0]] = decided
            self.pieces.setdefault(statement.lineno, []).append(
                (statement.col_offset, f"{names[0]} = {decided!r}"))
            self.scope.constants[names[0]] = statement.lineno
            for name in names:
                self.scope.excluded.pop(name, None)
            return
        checker = _Checker(self.scope, local_names=set(), where="a module constant")
        checker.expression(value)
        if checker.called_functions:
            self.exclude(statement, f"the assignment on line {statement.lineno}, which calls "
                                    "a function of the file at import")
            return
        if checker.violations:
            self.exclude(statement, f"the assignment on line {statement.lineno}, which "
                                    f"{checker.violations[0].what.split(': ', 1)[-1]}")
            return
        if len(names) == 1 and isinstance(value, ast.Constant):
            self.values[names[0]] = value.value
        for name in names:
            self.scope.constants[name] = statement.lineno
            self.scope.excluded.pop(name, None)
        self.keep(statement)

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
                text = text[min(indent, len(text) - len(text.lstrip(" "))):]
            self.pieces.setdefault(number, []).append((start, text))

    # -- functions

    def functions(self):
        wanted = list(STUDENT_FUNCTIONS)
        done = set()
        while wanted:
            name = wanted.pop(0)
            if name in done:
                continue
            done.add(name)
            node = self.scope.functions.get(name)
            if node is None:
                continue
            if name in self.scope.excluded:
                self.violations.append(Violation(node.lineno, f"{name}() is redefined by "
                                                 f"{self.scope.excluded[name]}"))
                continue
            checker = _Checker(self.scope, _local_names(node), where=f"{name}()")
            checker.function(node)
            self.violations += checker.violations
            if name == "application":
                self.violations += _output_reads(node)
            wanted += sorted(checker.called_functions)
            self.keep(node, indent=node.col_offset)

    def text(self):
        return "\n".join("; ".join(text for _, text in sorted(self.pieces.get(number, ())))
                         for number in range(1, len(self.lines) + 1)) + "\n"


def _local_names(function):
    names = set()
    arguments = function.args
    for argument in arguments.posonlyargs + arguments.args + arguments.kwonlyargs:
        names.add(argument.arg)
    for argument in (arguments.vararg, arguments.kwarg):
        if argument:
            names.add(argument.arg)
    for node in ast.walk(function):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
    return names


_STATEMENTS = (ast.Expr, ast.Assign, ast.AugAssign, ast.AnnAssign, ast.For, ast.While, ast.If,
               ast.Return, ast.Pass, ast.Break, ast.Continue, ast.Assert, ast.Raise)
_EXPRESSIONS = (ast.Name, ast.Constant, ast.Attribute, ast.Subscript, ast.Slice, ast.Tuple,
                ast.List, ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.Compare, ast.Call, ast.IfExp,
                ast.ListComp, ast.GeneratorExp, ast.Starred)
_PARTS = (ast.keyword, ast.comprehension, ast.operator, ast.unaryop, ast.boolop, ast.cmpop,
          ast.expr_context, ast.arguments, ast.arg)


OUTPUT_METADATA = ("shape", "dtype", "ndim")


def _output_reads(function):
    """Where application() reads the values of its output (its third parameter).

    C = A @ B never needs them: ``output`` is only assigned, or asked for its
    shape or dtype. A kernel that looked at what C already holds could skip
    work done by an earlier launch, and then no timing of it would be fair.
    """
    parameters = [argument.arg for argument in function.args.posonlyargs + function.args.args]
    if len(parameters) < 3:
        return []
    output = parameters[2]
    parent_of = {id(child): parent for parent in ast.walk(function)
                 for child in ast.iter_child_nodes(parent)}
    found = []
    for node in ast.walk(function):
        if not (isinstance(node, ast.Name) and node.id == output
                and isinstance(node.ctx, ast.Load)):
            continue
        parent = parent_of.get(id(node))
        if isinstance(parent, ast.Attribute) and parent.attr in OUTPUT_METADATA:
            continue
        if isinstance(parent, ast.Subscript) and isinstance(parent.ctx, ast.Store):
            continue
        found.append(Violation(node.lineno, f"application(): reads the values of `{output}`, "
                                            "which C = A @ B never needs (only assign it, or "
                                            "use its .shape or .dtype)"))
    return found


class _Checker:
    """Checks one kept function (or a module constant) against the whitelist."""

    def __init__(self, scope, local_names, where):
        self.scope, self.local_names, self.where = scope, local_names, where
        self.violations, self.called_functions = [], set()

    def flag(self, node, what):
        self.violations.append(Violation(getattr(node, "lineno", 0), f"{self.where}: {what}"))

    def function(self, node):
        if node.decorator_list:
            self.flag(node, "decorators are not allowed on a kernel function")
        arguments = node.args
        for default in arguments.defaults + [d for d in arguments.kw_defaults if d is not None]:
            self.expression(default)
        for argument in arguments.posonlyargs + arguments.args + arguments.kwonlyargs:
            if argument.annotation is not None:
                self.expression(argument.annotation)
        if node.returns is not None:
            self.expression(node.returns)
        body = node.body
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                and isinstance(body[0].value.value, str):
            body = body[1:]  # the docstring
        for statement in body:
            self.statement(statement)

    def statement(self, node):
        if not isinstance(node, _STATEMENTS):
            self.flag(node, f"`{type(node).__name__}` statements are not allowed")
            return
        if isinstance(node, ast.Assert):  # a string may be its message, never its test
            self.expression(node.test)
            if node.msg is not None:
                self.expression(node.msg, strings=True)
            return
        strings = isinstance(node, ast.Raise) or (
            isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant))
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.stmt):
                self.statement(child)
            elif isinstance(child, ast.expr):
                self.expression(child, strings)

    def expression(self, node, strings=False):
        bases = {id(child.value) for child in ast.walk(node) if isinstance(child, ast.Attribute)}
        for child in ast.walk(node):
            if id(child) not in bases and self.module_of(child) is not None:
                self.flag(child, f"uses the module `{self.module_of(child)}` as a value; only "
                                 "its attributes are allowed")
            if isinstance(child, _PARTS):
                continue
            if not isinstance(child, _EXPRESSIONS) and not (
                    strings and isinstance(child, (ast.JoinedStr, ast.FormattedValue))):
                self.flag(child, f"`{type(child).__name__}` expressions are not allowed")
            elif isinstance(child, ast.Constant):
                if isinstance(child.value, bytes) or (isinstance(child.value, str) and not strings):
                    self.flag(child, "strings are allowed only in docstrings, assert and raise")
            elif isinstance(child, ast.Name) and isinstance(child.ctx, ast.Load):
                self.name(child)
            elif isinstance(child, ast.Attribute):
                self.attribute(child)

    def name(self, node):
        name = node.id
        if name in self.local_names or name in self.scope.constants or name in self.scope.modules:
            return
        if name in self.scope.functions and name not in self.scope.excluded:
            self.called_functions.add(name)
            return
        if name in self.scope.excluded:
            self.flag(node, f"uses `{name}`, which comes from {self.scope.excluded[name]}")
        elif name not in BUILTINS and (name in _PYTHON_BUILTINS or name.startswith("__")):
            self.flag(node, f"uses the builtin `{name}`, which a kernel never needs")
        # Any other unknown name is the student's own NameError, reported when it runs.

    def attribute(self, node):
        if node.attr.startswith("_"):
            self.flag(node, f"uses `.{node.attr}` (names starting with _ are off limits)")
            return
        if node.attr in DENIED_ATTRIBUTES:
            self.flag(node, f"uses `.{node.attr}`, which a kernel never needs")
            return
        module = self.module_of(node.value)
        if module is None:
            return
        kind, detail = _attribute_of_module(module, node.attr)
        if kind == "denied":
            self.flag(node, f"uses {detail}, which a kernel may not use")

    def module_of(self, node):
        """The dotted name of the allowed module ``node`` stands for, or None."""
        if isinstance(node, ast.Name) and node.id not in self.local_names:
            return self.scope.modules.get(node.id)
        if isinstance(node, ast.Attribute):
            parent = self.module_of(node.value)
            if parent is not None:
                kind, detail = _attribute_of_module(parent, node.attr)
                return detail if kind == "module" else None
        return None


def extract(source):
    """The rebuilt file for the kernel run, with every whitelist violation found."""
    tree = ast.parse(source)
    rebuilder = _Rebuilder(source)
    rebuilder.statements(tree.body)
    rebuilder.functions()
    violations = sorted(set(rebuilder.violations), key=lambda v: (v.line, v.what))
    return KernelSource(rebuilder.text(), tuple(violations))
