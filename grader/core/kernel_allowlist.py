"""The allowlist a kernel's kept code must pass: every node, every field, every name.

grader.core.kernel_source rebuilds a submission keeping only its kernel; each kept function
and module constant is checked here (``Checker``). The allowlist is one: every node of the
syntax tree and every field of every node is visited (``Checker.visit``), and a node type,
a non-empty field or an attribute name that is not on the lists below is a *violation*.
Names resolve as Python resolves them: a function may not bind a name that the module, the
allowed builtins or Python's builtins also define, so every name means one thing wherever
it is used; lambdas, nested functions and classes are not on the list, comprehensions are
(their names are bound like any other). Annotations are violations wherever they stand,
and constants are numbers, except docstrings, the messages of ``assert`` and ``raise`` and
the labels of a ``print``.
A node the walk did not reach is a violation too: a gap in the checker fails closed.
"""

import ast
import builtins
import dataclasses

BUILTINS = frozenset(
    {
        "range",
        "len",
        "min",
        "max",
        "abs",
        "int",
        "float",
        "bool",
        "tuple",
        "list",
        "dict",
        "enumerate",
        "zip",
        "reversed",
        "sum",
        "all",
        "any",
        "divmod",
        "round",
        "pow",
        "print",
        "isinstance",
        "sorted",
        "map",
        "True",
        "False",
        "None",
        "ValueError",
        "TypeError",
        "NotImplementedError",
        "AssertionError",
        "RuntimeError",
    }
)
_PYTHON_BUILTINS = frozenset(dir(builtins))

_INTEGER_TYPES = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")
_FLOAT_TYPES = ("float16", "float32", "float64", "bfloat16")
_DTYPES = frozenset({*_FLOAT_TYPES, *_INTEGER_TYPES, "int1", "float8e4nv", "float8e5"})
# What each allowed module may be asked for. ``ninetoothed.language`` stands for what
# NineToothed's code generator binds it to in a kernel, ``triton.language``; a student who
# writes ``tl.dot`` gets the same generated line as one who writes ``ntl.dot``, so the two
# may be asked for the same.
_LANGUAGE = _DTYPES | frozenset(
    {
        "dot",
        "zeros",
        "zeros_like",
        "full",
        "where",
        "maximum",
        "minimum",
        "max",
        "min",
        "sum",
        "cast",
        "arange",
        "trans",
        "permute",
        "reshape",
        "view",
        "broadcast_to",
        "expand_dims",
        "exp",
        "exp2",
        "log",
        "log2",
        "sqrt",
        "rsqrt",
        "abs",
        "fma",
        "cdiv",
        "program_id",
        "num_programs",
        "cumsum",
        "argmax",
        "argmin",
        "sigmoid",
        "softmax",
        "floor",
        "ceil",
        "clamp",
        "range",
        "static_range",
        "multiple_of",
        "max_contiguous",
        "device_print",
    }
)
MODULE_ATTRIBUTES = {
    "ninetoothed": frozenset({"block_size", "language", *_FLOAT_TYPES, *_INTEGER_TYPES}),
    "ninetoothed.language": _LANGUAGE,
    "triton": frozenset({"language"}),
    "triton.language": _LANGUAGE,
    "math": frozenset(
        {"ceil", "floor", "prod", "gcd", "lcm", "log2", "isqrt", "sqrt", "inf", "pi"}
    ),
}
SUBMODULES = {
    ("ninetoothed", "language"): "ninetoothed.language",
    ("triton", "language"): "triton.language",
}
ROOT_MODULES = frozenset(MODULE_ATTRIBUTES)
# Attributes of the values a kernel handles: arranged tensors (NineToothed's Tensor, in
# arrangement()) and tiles (Triton's tensors, in application()).
VALUE_ATTRIBUTES = frozenset(
    {
        "tile",
        "expand",
        "squeeze",
        "unsqueeze",
        "permute",
        "flatten",
        "ravel",
        "pad",
        "dtype",
        "shape",
        "ndim",
        "size",
        "to",
        "T",
        "trans",
        "reshape",
    }
)
ASSIGNABLE_ATTRIBUTES = frozenset({"dtype"})  # ``arranged.dtype = arranged.dtype.squeeze(0)``

# Every node type a kept function may hold, with the fields it may fill; any other field
# must be empty. Operators and contexts have no fields.
_LEAVES = (ast.operator, ast.unaryop, ast.cmpop, ast.boolop, ast.Load, ast.Store)
FIELDS = {
    ast.FunctionDef: {"name", "args", "body"},
    ast.arguments: {
        "posonlyargs",
        "args",
        "vararg",
        "kwonlyargs",
        "kw_defaults",
        "kwarg",
        "defaults",
    },
    ast.arg: {"arg"},
    ast.Expr: {"value"},
    ast.Assign: {"targets", "value"},
    ast.AugAssign: {"target", "op", "value"},
    ast.For: {"target", "iter", "body", "orelse"},
    ast.While: {"test", "body", "orelse"},
    ast.If: {"test", "body", "orelse"},
    ast.Return: {"value"},
    ast.Pass: set(),
    ast.Break: set(),
    ast.Continue: set(),
    ast.Assert: {"test", "msg"},
    ast.Raise: {"exc"},
    ast.Name: {"id", "ctx"},
    ast.Constant: {"value", "kind"},
    ast.Attribute: {"value", "attr", "ctx"},
    ast.Subscript: {"value", "slice", "ctx"},
    ast.Slice: {"lower", "upper", "step"},
    ast.Tuple: {"elts", "ctx"},
    ast.List: {"elts", "ctx"},
    ast.BinOp: {"left", "op", "right"},
    ast.UnaryOp: {"op", "operand"},
    ast.BoolOp: {"op", "values"},
    ast.Compare: {"left", "ops", "comparators"},
    ast.Call: {"func", "args", "keywords"},
    ast.keyword: {"arg", "value"},
    ast.IfExp: {"test", "body", "orelse"},
    ast.Starred: {"value", "ctx"},
    ast.ListComp: {"elt", "generators"},
    ast.GeneratorExp: {"elt", "generators"},
    ast.comprehension: {"target", "iter", "ifs"},
}
MESSAGE_FIELDS = {
    ast.JoinedStr: {"values"},
    ast.FormattedValue: {"value", "conversion", "format_spec"},
}
NUMBERS = (bool, int, float, complex, type(None))


@dataclasses.dataclass(frozen=True)
class Violation:
    line: int
    what: str

    def __str__(self):
        return f"line {self.line}: {self.what}"


@dataclasses.dataclass(frozen=True)
class Unbuildable(Violation):
    """What no run could build, and that asks for nothing: refused all the same, and told
    apart so that a refusal of these alone can be read as the build failure it is
    (grader.core.build_refusal): the constant ``...`` (``output[...] = acc``), and
    grader.core.generated_kernel's."""


def dotted_name(node):
    """``a.b.c`` for a chain of attributes on a name, else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        return ".".join([node.id] + parts[::-1])
    return None


def attribute_of_module(dotted, attribute):
    """('value', None), ('module', name) or ('denied', why) for ``module.attribute``."""
    if (dotted, attribute) in SUBMODULES:
        return "module", SUBMODULES[dotted, attribute]
    if attribute in MODULE_ATTRIBUTES[dotted]:
        return "value", None
    return "denied", f"{dotted}.{attribute}"


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


def bound_names_in(function):
    """The names the function's own scope binds: its parameters and its targets (the
    checker lets no other construct bind one). Comprehensions bind theirs in scopes of
    their own (``Checker.visit_ListComp``), as Python does."""
    arguments = function.args
    names = {
        argument.arg
        for argument in arguments.posonlyargs
        + arguments.args
        + arguments.kwonlyargs
        + [arguments.vararg, arguments.kwarg]
        if argument
    }
    return names | _stored_names(function)


def module_bindings(tree):
    """(every name the module level of ``tree`` binds, in any branch, the names its imports
    bind to modules among them): the globals its functions may find. What a function or a
    class binds inside is its own. A value imported by name (``from triton.language import
    dot``) is a global like any other: NineToothed rewrites only a module's attributes."""
    bound, modules, pending = set(), set(), list(tree.body)
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
            continue
        if isinstance(node, ast.Import):
            modules |= {alias.asname or alias.name.partition(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            for alias in node.names:
                is_module = (node.module, alias.name) in SUBMODULES
                (modules if is_module else bound).add(alias.asname or alias.name)
        elif isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            bound.add(node.id)
        pending.extend(ast.iter_child_nodes(node))
    return bound | modules, modules


OUTPUT_METADATA = ("shape", "dtype", "ndim")


def output_reads(function):
    """Where application() reads the values of its output (its third parameter).

    C = A @ B never needs them: ``output`` is only assigned, or asked for its
    shape or dtype. A kernel that looked at what C already holds could skip
    work done by an earlier launch, and then no timing of it would be fair.
    """
    parameters = [argument.arg for argument in function.args.posonlyargs + function.args.args]
    if len(parameters) < 3:
        return []
    output = parameters[2]
    parent_of = {
        id(child): parent for parent in ast.walk(function) for child in ast.iter_child_nodes(parent)
    }
    found = []
    for node in ast.walk(function):
        if not (
            isinstance(node, ast.Name) and node.id == output and isinstance(node.ctx, ast.Load)
        ):
            continue
        parent = parent_of.get(id(node))
        if isinstance(parent, ast.Attribute) and parent.attr in OUTPUT_METADATA:
            continue
        if isinstance(parent, ast.Subscript) and isinstance(parent.ctx, ast.Store):
            continue
        found.append(
            Violation(
                node.lineno,
                f"application(): reads the values of `{output}`, "
                "which C = A @ B never needs (only assign it, or "
                "use its .shape or .dtype)",
            )
        )
    return found


class Checker:
    """Checks one kept function (or a module constant) against the allowlist, every node
    and every field of it."""

    def __init__(self, scope, local_names, where, in_kernel=False):
        """``in_kernel``: the code runs only inside the generated kernel (application() and
        the helpers it calls), not as plain Python in the grader's worker."""
        self.scope, self.local_names, self.where = scope, local_names, where
        self.in_kernel = in_kernel
        self.violations, self.called_functions = [], set()
        self.visited, self.root = set(), None
        self.inner = []  # the names bound by each comprehension the walk is inside

    def flag(self, node, what, kind=Violation):
        self.violations.append(kind(getattr(node, "lineno", 0), f"{self.where}: {what}"))

    def function(self, node):
        arguments = node.args
        parameters = [
            argument
            for argument in arguments.posonlyargs
            + arguments.args
            + arguments.kwonlyargs
            + [arguments.vararg, arguments.kwarg]
            if argument
        ]
        targets = [
            child
            for child in ast.walk(node)
            if isinstance(child, ast.Name) and isinstance(child.ctx, ast.Store)
        ]
        flagged = set()
        for binding, name in [(argument, argument.arg) for argument in parameters] + [
            (target, target.id) for target in targets
        ]:
            shadowed = self.global_meaning(name)
            if shadowed and (name, binding.lineno) not in flagged:
                flagged.add((name, binding.lineno))
                self.flag(
                    binding,
                    f"binds `{name}`, which is already {shadowed}: a name means "
                    "one thing in a kernel",
                )
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
            self.flag(
                node,
                f"{what} {'are' if what == 'strings' else 'is'} not allowed in a "
                "kernel"
                + (" (only in docstrings, assert and raise messages)" if what == "strings" else ""),
            )
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
        in_kernel, self.in_kernel = self.in_kernel, False  # defaults run where it is defined
        self.visit(node.args)
        self.in_kernel = in_kernel
        for statement in node.body:
            if (
                isinstance(statement, ast.Expr)
                and isinstance(statement.value, ast.Constant)
                and isinstance(statement.value.value, str)
            ):
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
        self.inner.append(
            set().union(*(_stored_names(generator.target, False) for generator in node.generators))
        )
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
            what = (
                "strings are" if isinstance(node.value, str) else f"the constant {node.value!r} is"
            )
            kind = Unbuildable if node.value is Ellipsis else Violation
            self.flag(
                node,
                f"{what} not allowed in a kernel (constants are numbers; "
                "strings only in docstrings, assert and raise messages and "
                "print labels)",
                kind,
            )

    def visit_Call(self, node, message):
        """A print's labels may be strings: ``print("k =", k)`` (Triton's device_print) or
        ``ntl.device_print("k =", k)``, its positional constants, as the generated kernel's
        check allows them; a debugging line left in is no capability."""
        if self.prints(node.func):
            self.visit(node.func, message)
            for argument in node.args:
                if isinstance(argument, ast.Constant) and isinstance(argument.value, str):
                    self.mark(argument)
                else:
                    self.visit(argument, message)
            for keyword in node.keywords:
                self.visit(keyword, message)
            return
        self.children(node, message)

    def prints(self, function):
        if isinstance(function, ast.Name):
            name = function.id
            return (
                name == "print"
                and not self.is_local(name)
                and not any(
                    name in names
                    for names in (
                        self.scope.constants,
                        self.scope.functions,
                        self.scope.excluded,
                        self.scope.modules,
                    )
                )
            )
        return (
            isinstance(function, ast.Attribute)
            and function.attr == "device_print"
            and self.module_of(function.value) in ("ninetoothed.language", "triton.language")
        )

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
            self.flag(
                node,
                f"uses the module `{self.scope.modules[node.id]}` as a value; only "
                "its attributes are allowed",
            )
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
                self.flag(node, f"assigns to {module}.{node.attr}: a kernel never changes a module")
                return
            kind, detail = attribute_of_module(module, node.attr)
            if kind == "denied":
                self.flag(node, f"uses {detail}, which a kernel may not use")
            elif module == "triton.language" and not self.in_kernel and node.attr not in _DTYPES:
                # Outside application() this runs as plain Python, where triton.language is
                # Triton's real module: calling its functions there (tl.cdiv in arrangement())
                # makes the interpreter patch Triton's language in the grader's worker.
                self.flag(
                    node,
                    f"uses triton.language.{node.attr} outside application(), "
                    "where Python runs it, not Triton (only its dtypes mean "
                    "something there)",
                )
            elif kind == "module":  # a module's attribute reaches its own Attribute first
                self.flag(
                    node, f"uses the module `{detail}` as a value; only its attributes are allowed"
                )
            return
        base = node.value
        if (
            isinstance(base, ast.Name)
            and base.id in self.scope.excluded
            and not self.is_local(base.id)
        ):
            self.visit(base, message)  # what the name comes from says it all
            return
        if isinstance(node.ctx, ast.Store):
            if node.attr not in ASSIGNABLE_ATTRIBUTES or not self.rooted_in_a_local(node):
                self.flag(
                    node,
                    f"assigns to `.{node.attr}`; a kernel assigns only the "
                    "`.dtype` of its own arranged tensors",
                )
        elif node.attr not in VALUE_ATTRIBUTES:
            self.flag(
                node,
                f"uses `.{node.attr}`, which is not on the list of what a kernel "
                f"may ask of a tensor ({', '.join(sorted(VALUE_ATTRIBUTES))})",
            )
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
                kind, detail = attribute_of_module(parent, node.attr)
                return detail if kind == "module" else None
        return None


def _unlisted_field(kind, field):
    if field in ("annotation", "returns"):
        return "annotations are not allowed in a kernel"
    if field == "decorator_list":
        return "decorators are not allowed on a kernel function"
    return f"`{kind.__name__}.{field}` is not allowed in a kernel"
