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

What is kept is checked against an allowlist that is one: every node of its
syntax tree and every field of every node is visited (``_Checker.visit``), and
a node type, a non-empty field or an attribute name that is not on the lists
below is a *violation*. Names resolve as Python resolves them: a function may
not bind a name that the module, the allowed builtins or Python's builtins
also define, so every name means one thing wherever it is used; lambdas,
nested functions and classes are not on the list, comprehensions are (their
names are bound like any other). Annotations are violations wherever they
stand, and constants are numbers, except docstrings and the messages of
``assert`` and ``raise``. The batch grader flags a file with a violation and
runs nothing from it; grader.batch.inside.build_guard is the second layer, for the
day this one has a bug.
"""

import ast
import builtins
import dataclasses

from grader.core.loading import STUDENT_FUNCTIONS

BUILTINS = frozenset({
    "range", "len", "min", "max", "abs", "int", "float", "bool", "tuple", "list", "dict",
    "enumerate", "zip", "reversed", "sum", "all", "any", "divmod", "round", "pow", "print",
    "isinstance", "sorted", "map", "True", "False", "None",
    "ValueError", "TypeError", "NotImplementedError", "AssertionError", "RuntimeError",
})
_PYTHON_BUILTINS = frozenset(dir(builtins))

_INTEGER_TYPES = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")
_FLOAT_TYPES = ("float16", "float32", "float64", "bfloat16")
# What each allowed module may be asked for. ``ninetoothed.language`` stands for what
# NineToothed's code generator binds it to in a kernel, ``triton.language``.
MODULE_ATTRIBUTES = {
    "ninetoothed": frozenset({"block_size", "language", *_FLOAT_TYPES, *_INTEGER_TYPES}),
    "ninetoothed.language": frozenset({
        *_FLOAT_TYPES, *_INTEGER_TYPES, "int1", "float8e4nv", "float8e5",
        "dot", "zeros", "zeros_like", "full", "where", "maximum", "minimum", "max", "min",
        "sum", "cast", "arange", "trans", "permute", "reshape", "view", "broadcast_to",
        "expand_dims", "exp", "exp2", "log", "log2", "sqrt", "rsqrt", "abs", "fma", "cdiv",
        "program_id", "num_programs", "cumsum", "argmax", "argmin", "sigmoid", "softmax",
        "floor", "ceil", "clamp", "range", "static_range", "multiple_of", "max_contiguous",
    }),
    "math": frozenset({"ceil", "floor", "prod", "gcd", "lcm", "log2", "isqrt", "sqrt", "inf",
                       "pi"}),
}
SUBMODULES = {("ninetoothed", "language"): "ninetoothed.language"}
ROOT_MODULES = frozenset(MODULE_ATTRIBUTES)
# Attributes of the values a kernel handles: arranged tensors (NineToothed's Tensor, in
# arrangement()) and tiles (Triton's tensors, in application()).
VALUE_ATTRIBUTES = frozenset({
    "tile", "expand", "squeeze", "unsqueeze", "permute", "flatten", "ravel", "pad",
    "dtype", "shape", "ndim", "size", "to", "T", "trans", "reshape",
})
ASSIGNABLE_ATTRIBUTES = frozenset({"dtype"})  # ``arranged.dtype = arranged.dtype.squeeze(0)``

# Every node type a kept function may hold, with the fields it may fill; any other field
# must be empty. Operators and contexts have no fields.
_LEAVES = (ast.operator, ast.unaryop, ast.cmpop, ast.boolop, ast.Load, ast.Store)
FIELDS = {
    ast.FunctionDef: {"name", "args", "body"},
    ast.arguments: {"posonlyargs", "args", "vararg", "kwonlyargs", "kw_defaults", "kwarg",
                    "defaults"},
    ast.arg: {"arg"},
    ast.Expr: {"value"}, ast.Assign: {"targets", "value"},
    ast.AugAssign: {"target", "op", "value"}, ast.For: {"target", "iter", "body", "orelse"},
    ast.While: {"test", "body", "orelse"}, ast.If: {"test", "body", "orelse"},
    ast.Return: {"value"}, ast.Pass: set(), ast.Break: set(), ast.Continue: set(),
    ast.Assert: {"test", "msg"}, ast.Raise: {"exc"},
    ast.Name: {"id", "ctx"}, ast.Constant: {"value", "kind"},
    ast.Attribute: {"value", "attr", "ctx"}, ast.Subscript: {"value", "slice", "ctx"},
    ast.Slice: {"lower", "upper", "step"}, ast.Tuple: {"elts", "ctx"},
    ast.List: {"elts", "ctx"}, ast.BinOp: {"left", "op", "right"},
    ast.UnaryOp: {"op", "operand"}, ast.BoolOp: {"op", "values"},
    ast.Compare: {"left", "ops", "comparators"}, ast.Call: {"func", "args", "keywords"},
    ast.keyword: {"arg", "value"}, ast.IfExp: {"test", "body", "orelse"},
    ast.Starred: {"value", "ctx"}, ast.ListComp: {"elt", "generators"},
    ast.GeneratorExp: {"elt", "generators"}, ast.comprehension: {"target", "iter", "ifs"},
}
MESSAGE_FIELDS = {ast.JoinedStr: {"values"},
                  ast.FormattedValue: {"value", "conversion", "format_spec"}}
NUMBERS = (bool, int, float, complex, type(None))


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


def _attribute_of_module(dotted, attribute):
    """('value', None), ('module', name) or ('denied', why) for ``module.attribute``."""
    if (dotted, attribute) in SUBMODULES:
        return "module", SUBMODULES[dotted, attribute]
    if attribute in MODULE_ATTRIBUTES[dotted]:
        return "value", None
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
            elif isinstance(statement, ast.Assign):
                self.constant(statement)
            elif isinstance(statement, ast.AnnAssign):
                self.exclude(statement, f"an annotated assignment (line {statement.lineno}): "
                                        "annotations are not allowed in a kernel's file")
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
        targets = statement.targets
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
            checker = _Checker(self.scope, _bound_names_in(node), where=f"{name}()")
            checker.function(node)
            self.violations += checker.violations
            if name == "application":
                self.violations += _output_reads(node)
            wanted += sorted(checker.called_functions)
            self.keep(node, indent=node.col_offset)

    def text(self):
        return "\n".join("; ".join(text for _, text in sorted(self.pieces.get(number, ())))
                         for number in range(1, len(self.lines) + 1)) + "\n"


_COMPREHENSIONS = (ast.ListComp, ast.GeneratorExp, ast.SetComp, ast.DictComp)


def _stored_names(node, skip_comprehensions=True):
    """Names bound by Store targets under ``node``; a comprehension's own targets belong to
    its scope, not to the function's."""
    names, todo = set(), [node]
    while todo:
        current = todo.pop()
        if isinstance(current, ast.Name) and isinstance(current.ctx, ast.Store):
            names.add(current.id)
        for child in ast.iter_child_nodes(current):
            if not (skip_comprehensions and isinstance(child, _COMPREHENSIONS)):
                todo.append(child)
    return names


def _bound_names_in(function):
    """The names the function's own scope binds: its parameters and its targets (the
    checker lets no other construct bind one). Comprehensions bind theirs in scopes of
    their own (``_Checker.visit_ListComp``), as Python does."""
    arguments = function.args
    names = {argument.arg for argument in arguments.posonlyargs + arguments.args
             + arguments.kwonlyargs + [arguments.vararg, arguments.kwarg] if argument}
    return names | _stored_names(function)


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
    """Checks one kept function (or a module constant) against the allowlist, every node
    and every field of it."""

    def __init__(self, scope, local_names, where):
        self.scope, self.local_names, self.where = scope, local_names, where
        self.violations, self.called_functions = [], set()
        self.visited, self.root = set(), None
        self.inner = []  # the names bound by each comprehension the walk is inside

    def flag(self, node, what):
        self.violations.append(Violation(getattr(node, "lineno", 0), f"{self.where}: {what}"))

    def function(self, node):
        arguments = node.args
        parameters = [argument for argument in arguments.posonlyargs + arguments.args
                      + arguments.kwonlyargs + [arguments.vararg, arguments.kwarg] if argument]
        targets = [child for child in ast.walk(node)
                   if isinstance(child, ast.Name) and isinstance(child.ctx, ast.Store)]
        flagged = set()
        for binding, name in [(argument, argument.arg) for argument in parameters] + [
                (target, target.id) for target in targets]:
            shadowed = self.global_meaning(name)
            if shadowed and (name, binding.lineno) not in flagged:
                flagged.add((name, binding.lineno))
                self.flag(binding, f"binds `{name}`, which is already {shadowed}: a name means "
                                   "one thing in a kernel")
        self.root = node
        self.visit(node)
        self.check_coverage(node)

    def expression(self, node):
        self.visit(node)
        self.check_coverage(node)

    def check_coverage(self, root):
        """Fail closed: a node the visit did not reach is a violation, never a pass."""
        if self.violations:
            return  # rejected already
        for child in ast.walk(root):
            if id(child) not in self.visited and not isinstance(child, _LEAVES):
                self.flag(child, f"`{type(child).__name__}` was not checked")
                return

    def global_meaning(self, name):
        """Why a kernel may not bind ``name``, or ''. Other names a module or builtins also
        define (``input``, ``BLOCK_SIZE_M=BLOCK_SIZE_M``) resolve as Python resolves them."""
        if name.startswith("__"):
            return "a dunder name"
        if name in self.scope.modules:
            return "an imported module"
        return ""

    def is_local(self, name):
        return name in self.local_names or any(name in scope for scope in self.inner)

    # -- the walk

    def visit(self, node, message=False):
        """Check ``node`` and everything under it. ``message``: inside the message of an
        ``assert`` or ``raise``, where strings may stand."""
        self.visited.add(id(node))
        if isinstance(node, _LEAVES):
            return
        kind = type(node)
        allowed = FIELDS.get(kind, MESSAGE_FIELDS.get(kind) if message else None)
        if kind is ast.FunctionDef and node is not self.root:
            allowed = None  # a nested function: a scope of its own
        if allowed is None:
            what = "strings" if kind in MESSAGE_FIELDS else f"`{kind.__name__}`"
            self.flag(node, f"{what} {'are' if what == 'strings' else 'is'} not allowed in a "
                            "kernel" + (" (only in docstrings, assert and raise messages)"
                                        if what == "strings" else ""))
            self.visited.update(id(child) for child in ast.walk(node))
            return
        for field, value in ast.iter_fields(node):
            if field not in allowed:
                if value not in (None, [], 0, -1):
                    self.flag(node, _unlisted_field(kind, field))
                    self.visited.update(id(child) for child in ast.walk(node))
                    return
        special = getattr(self, f"visit_{kind.__name__}", None)
        if special is not None:
            special(node, message)
            return
        self.children(node, message)

    def children(self, node, message, skip=()):
        for field, value in ast.iter_fields(node):
            if field in skip:
                continue
            for child in value if isinstance(value, list) else [value]:
                if isinstance(child, ast.AST):
                    self.visit(child, message)

    def visit_FunctionDef(self, node, message):
        self.visit(node.args)
        for statement in node.body:
            if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant) \
                    and isinstance(statement.value.value, str):
                self.mark(statement)  # a docstring, or a string standing as a comment
            else:
                self.visit(statement)

    def visit_Assert(self, node, message):
        self.visit(node.test)
        if node.msg is not None:
            self.visit(node.msg, message=True)

    def visit_Raise(self, node, message):
        if node.exc is not None:
            self.visit(node.exc, message=True)

    def visit_ListComp(self, node, message):
        """The first iterable is evaluated where the comprehension stands; the rest, in its
        own scope, where its targets are bound."""
        first, *others = node.generators
        self.visited.add(id(first))
        if first.is_async:
            self.flag(first, "`async` comprehensions are not allowed in a kernel")
        self.visit(first.iter, message)
        self.inner.append(set().union(*(_stored_names(generator.target, False)
                                        for generator in node.generators)))
        try:
            self.visit(first.target, message)
            for condition in first.ifs:
                self.visit(condition, message)
            for generator in others:
                self.visit(generator, message)
            self.visit(node.elt, message)
        finally:
            self.inner.pop()

    visit_GeneratorExp = visit_ListComp

    def visit_Constant(self, node, message):
        if isinstance(node.value, str) and message:
            return
        if not isinstance(node.value, NUMBERS):
            what = "strings are" if isinstance(node.value, str) else \
                f"the constant {node.value!r} is"
            self.flag(node, f"{what} not allowed in a kernel (constants are numbers; "
                            "strings only in docstrings, assert and raise messages)")

    def visit_keyword(self, node, message):
        if node.arg is None:
            self.flag(node, "`**` arguments are not allowed in a kernel")
        elif node.arg.startswith("_"):
            self.flag(node, f"the keyword `{node.arg}` (names starting with _ are off limits)")
        self.visit(node.value, message)

    def visit_Name(self, node, message):
        if isinstance(node.ctx, ast.Store):
            return  # checked once for the whole function (``function``)
        if self.scope.modules.get(node.id) and not self.is_local(node.id):
            self.flag(node, f"uses the module `{self.scope.modules[node.id]}` as a value; only "
                            "its attributes are allowed")
            return
        self.name(node)

    def visit_Attribute(self, node, message):
        if node.attr.startswith("_"):
            self.flag(node, f"uses `.{node.attr}` (names starting with _ are off limits)")
            return
        module = self.module_of(node.value)
        if module is not None:
            self.mark(node.value)
            if isinstance(node.ctx, ast.Store):
                self.flag(node, f"assigns to {module}.{node.attr}: a kernel never changes a "
                                "module")
                return
            kind, detail = _attribute_of_module(module, node.attr)
            if kind == "denied":
                self.flag(node, f"uses {detail}, which a kernel may not use")
            elif kind == "module":  # a module's attribute reaches its own Attribute first
                self.flag(node, f"uses the module `{detail}` as a value; only its attributes "
                                "are allowed")
            return
        base = node.value
        if isinstance(base, ast.Name) and base.id in self.scope.excluded \
                and not self.is_local(base.id):
            self.visit(base, message)  # what the name comes from says it all
            return
        if isinstance(node.ctx, ast.Store):
            if node.attr not in ASSIGNABLE_ATTRIBUTES or not self.rooted_in_a_local(node):
                self.flag(node, f"assigns to `.{node.attr}`; a kernel assigns only the "
                                "`.dtype` of its own arranged tensors")
        elif node.attr not in VALUE_ATTRIBUTES:
            self.flag(node, f"uses `.{node.attr}`, which is not on the list of what a kernel "
                            f"may ask of a tensor ({', '.join(sorted(VALUE_ATTRIBUTES))})")
        self.visit(node.value, message)

    def visit_Subscript(self, node, message):
        if isinstance(node.ctx, ast.Store) and not self.rooted_in_a_local(node):
            self.flag(node, "assigns into something that is not a local name of the kernel")
        self.children(node, message)

    # -- names and modules

    def mark(self, node):
        self.visited.update(id(child) for child in ast.walk(node))

    def rooted_in_a_local(self, node):
        while isinstance(node, (ast.Attribute, ast.Subscript)):
            node = node.value
        return isinstance(node, ast.Name) and self.is_local(node.id)

    def name(self, node):
        name = node.id
        if self.is_local(name) or name in self.scope.constants:
            return
        if name in self.scope.functions and name not in self.scope.excluded:
            self.called_functions.add(name)
            return
        if name in self.scope.excluded:
            self.flag(node, f"uses `{name}`, which comes from {self.scope.excluded[name]}")
        elif name not in BUILTINS and (name in _PYTHON_BUILTINS or name.startswith("__")):
            self.flag(node, f"uses the builtin `{name}`, which a kernel never needs")
        # Any other unknown name is the student's own NameError, reported when it runs.

    def module_of(self, node):
        """The dotted name of the allowed module ``node`` stands for, or None."""
        if isinstance(node, ast.Name):
            return None if self.is_local(node.id) else self.scope.modules.get(node.id)
        if isinstance(node, ast.Attribute):
            parent = self.module_of(node.value)
            if parent is not None:
                kind, detail = _attribute_of_module(parent, node.attr)
                return detail if kind == "module" else None
        return None


def _unlisted_field(kind, field):
    if field in ("annotation", "returns"):
        return "annotations are not allowed in a kernel"
    if field == "decorator_list":
        return "decorators are not allowed on a kernel function"
    return f"`{kind.__name__}.{field}` is not allowed in a kernel"


def extract(source):
    """The rebuilt file for the kernel run, with every whitelist violation found."""
    tree = ast.parse(source)
    rebuilder = _Rebuilder(source)
    rebuilder.statements(tree.body)
    rebuilder.functions()
    violations = sorted(set(rebuilder.violations), key=lambda v: (v.line, v.what))
    return KernelSource(rebuilder.text(), tuple(violations))
