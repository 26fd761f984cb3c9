"""The check that decides: NineToothed's generated kernel file, read as Triton reads it.

The student writes ``arrangement()`` and ``application()``; what runs is something else.
NineToothed inlines helpers (a parameter left at its default becomes a bare name),
rewrites ``ntl.`` and ``:None`` as text, and writes one Python file; Triton's code
generator then evaluates parts of it while compiling (an ``assert``'s message, calls of
Python functions on constants, constexpr expressions), resolves names its own way (it
drops a constant-false branch, so a name bound only there falls through to its builtins,
``getattr`` among them), and the interpreter runs the same file as plain Python. A check
of the student's source cannot see any of that, so this module checks the file itself,
before anything imports, compiles or interprets it (grader.core.generated_cache calls
``check`` on every source NineToothed is about to write, in every kit process).

The rule is an allowlist of capabilities, under both readings of the file:

* the file holds ``import triton``, ``import triton.language``, one ``@triton.jit``
  kernel, at most one ``triton.autotune`` of it with constant configurations, and its
  launcher, whose single statement launches the kernel on a grid of sizes and numbers, each
  tensor to its own pointer parameter; no function of the file takes a builtin's name;
* in the kernel, every name is a parameter, a local, ``triton`` (only as
  ``triton.language.<allowed>``) or one of a few builtins (only called); no local may
  share a name with a builtin or a module global, so a dead branch changes no name's
  meaning; attributes of values are the few a tile has; constants are numbers, except
  docstrings, ``assert`` messages and ``print`` labels, which are constant strings;
* memory is reached only through NineToothed's pointers, inside ``load`` and ``store`` (a
  pointer parameter is read only by NineToothed's line naming its tile pointers, and as
  ``.type.element_ty``): the kernel stores only to its third tensor, the output, and never
  loads from it.

``check(source)`` returns the violations (empty: the file may run). Anything not named
here is a violation: a gap in this rule fails closed. One kind is told apart,
``Unbuildable``: a file that does not parse (NineToothed's text for a slice store into the
output, ``output[:, :] = acc``), and ``Unbound``, a name the kernel uses that nothing could
resolve in any run (a global of the student's file, which NineToothed does not carry into
the kernel). They are refused like the rest; a refusal of those alone is a kernel that
cannot build, not a capability asked for.
"""

import ast
import builtins
import dataclasses
import functools
import pathlib
import re

from grader.core.kernel_allowlist import (
    MODULE_ATTRIBUTES,
    Unbuildable,
    Violation,
    dotted_name,
    module_bindings,
)

LANGUAGE = "triton.language"
# What a generated kernel may call or read of triton.language: what a student may write
# as ntl.<name>, and what NineToothed itself emits around it.
LANGUAGE_ATTRIBUTES = MODULE_ATTRIBUTES["ninetoothed.language"] | {
    "load",
    "store",
    "program_id",
    "arange",
    "constexpr",
    "device_print",
}
ANNOTATIONS = frozenset({"constexpr"})  # triton.language.constexpr, on meta-parameters only
BUILTIN_CALLS = frozenset({"range", "len", "min", "max", "abs", "int", "float", "print"})
# What a kernel may ask of a tile (Triton's tensor) or of a tile's shape and dtype.
VALUE_ATTRIBUTES = frozenset(
    {
        "to",
        "trans",
        "permute",
        "reshape",
        "view",
        "shape",
        "dtype",
        "T",
        "ravel",
        "expand_dims",
        "broadcast_to",
    }
)
STATEMENTS = (
    ast.Assign,
    ast.AugAssign,
    ast.For,
    ast.While,
    ast.If,
    ast.Expr,
    ast.Pass,
    ast.Break,
    ast.Continue,
    ast.Return,
    ast.Assert,
    ast.Raise,
)
# What a ``raise`` may raise (the skeleton's NotImplementedError, a student's own check):
# Triton refuses the statement; the interpreter raises it.
EXCEPTIONS = frozenset(
    {"ValueError", "TypeError", "NotImplementedError", "AssertionError", "RuntimeError"}
)
OPERATORS = (ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.Compare, ast.IfExp)
LEAVES = (ast.operator, ast.unaryop, ast.cmpop, ast.boolop, ast.expr_context)
NUMBERS = (bool, int, float, type(None))
POINTER = re.compile(r"ninetoothed_\w+_pointers?")
GENERATED = re.compile(r"ninetoothed_\w+")
# The names Triton's code generator resolves itself when no live local binds them (its
# CodeGenerator.builtin_namespace), and the module's: a local may not take one, so that a
# branch Triton drops cannot turn a local into one of these. Other builtins (``sum``,
# ``input``) are not found by Triton at all; a student may name a local after them.
SHADOWED = frozenset(
    {
        "len",
        "list",
        "range",
        "float",
        "int",
        "isinstance",
        "getattr",
        "hasattr",
        "print",
        "min",
        "max",
        "triton",
    }
)
PYTHON_BUILTINS = frozenset(dir(builtins))  # as the kit found them, before any student code


@dataclasses.dataclass(frozen=True)
class Unbound(Unbuildable):
    """A name the kernel uses that no run could resolve (``_File.bound_nowhere``): a
    NameError."""

    name: str


class KernelRejected(Exception):
    """NineToothed generated a kernel file that the check refuses; nothing of it ran."""

    def __init__(self, violations, source):
        self.violations, self.source = tuple(violations), source
        # The names, where every violation is a name bound nowhere; else empty: any other
        # violation beside them is what the refusal is about.
        self.unbound = (
            tuple(sorted({violation.name for violation in self.violations}))
            if self.violations
            and all(isinstance(violation, Unbound) for violation in self.violations)
            else ()
        )
        # Whether no violation asks for a capability: the file cannot build at all.
        self.unbuildable = bool(self.violations) and all(
            isinstance(violation, Unbuildable) for violation in self.violations
        )
        super().__init__(describe(self.violations))


REFUSAL = "the generated kernel breaks the kit's rules"


def describe(violations):
    """The violations as the lines a student, a TA and a log read."""
    return f"{REFUSAL}:\n" + "\n".join(f"- generated {violation}" for violation in violations)


def check(source):
    """Every rule the generated file breaks, as Violations (line numbers of the file)."""
    try:
        tree = ast.parse(source)
    except SyntaxError as error:
        lines = source.splitlines()
        line = error.lineno or 0
        text = lines[line - 1].strip() if 0 < line <= len(lines) else ""
        return (
            Unbuildable(
                line,
                f"the file does not parse: {error.msg}"
                + (f" (`{_shortened(text)}`)" if text else ""),
            ),
        )
    return tuple(_File(tree, source).violations())


class _File:
    """The module level: imports, one kernel, an optional autotune, the launcher."""

    def __init__(self, tree, source):
        self.tree, self.lines = tree, source.splitlines()
        self.found = []
        self.bindings = _bindings(tree)
        self.fallback = _fallback_names()

    def flag(self, node, what, unbound=None):
        """A Violation at ``node``'s line, quoting it; an Unbound one for the name ``unbound``."""
        line = getattr(node, "lineno", 0)
        text = self.lines[line - 1].strip() if 0 < line <= len(self.lines) else ""
        what += f" (`{_shortened(text)}`)" if text else ""
        self.found.append(Unbound(line, what, unbound) if unbound else Violation(line, what))

    def bound_nowhere(self, name):
        """Whether no run could resolve ``name``: nothing in the file binds it, in any scope
        or branch, and no namespace a kernel falls back on holds it."""
        return (
            self.bindings is not None
            and name not in self.bindings
            and name not in self.fallback
            and not name.startswith("__")
        )

    def violations(self):
        kernels, launchers, tunings, imports = [], [], [], []
        for statement in self.tree.body:
            if isinstance(statement, ast.Import):
                imports.append(statement)
            elif isinstance(statement, ast.FunctionDef) and statement.decorator_list:
                kernels.append(statement)
            elif isinstance(statement, ast.FunctionDef):
                launchers.append(statement)
            elif isinstance(statement, ast.Assign):
                tunings.append(statement)
            else:
                self.flag(
                    statement,
                    f"module code `{type(statement).__name__}` that NineToothed never writes",
                )
        for statement in imports:
            if [(alias.name, alias.asname) for alias in statement.names] not in (
                [("triton", None)],
                [(LANGUAGE, None)],
            ):
                self.flag(statement, "an import other than triton and triton.language")
        if len(kernels) != 1 or len(launchers) != 1 or len(tunings) > 1:
            self.flag(
                self.tree.body[0] if self.tree.body else self.tree,
                f"{len(kernels)} kernels, {len(launchers)} launchers and "
                f"{len(tunings)} autotunings where NineToothed writes one, one and at "
                "most one (another @triton.jit function is no part of a kernel)",
            )
            return self.found
        kernel, launcher = kernels[0], launchers[0]
        module_names = {kernel.name, launcher.name} | {
            target.id
            for statement in tunings
            for target in statement.targets
            if isinstance(target, ast.Name)
        }
        for name in sorted(module_names & (SHADOWED | BUILTIN_CALLS | EXCEPTIONS)):
            # Triton and the interpreter look the kernel's builtins up in the file first.
            self.flag(
                kernel,
                f"a function of the file named `{name}`, which the kernel would "
                "call or raise in the builtin's place",
            )
        tuned = self._autotuning(tunings[0], kernel) if tunings else None
        self._launcher(launcher, kernel, tuned)
        output = _parameters(launcher)[2:3]
        if output:
            _Kernel(self, kernel, module_names, output[0]).check()
        return self.found

    # -- the autotuning and the launcher, plain Python that runs at every launch

    def _autotuning(self, statement, kernel):
        """The name the autotuned kernel is bound to, if the statement is the one form
        NineToothed writes: ``N = triton.autotune(configs=[triton.Config({...}, ...)],
        key=[...])(kernel)`` with constants only."""
        target = statement.targets[0] if len(statement.targets) == 1 else None
        call = statement.value
        meta = {argument.arg for argument in kernel.args.args if argument.annotation is not None}
        well_formed = (
            isinstance(target, ast.Name)
            and isinstance(call, ast.Call)
            and _is_name(call.args, kernel.name)
            and not call.keywords
            and dotted_name(call.func.func if isinstance(call.func, ast.Call) else None)
            == "triton.autotune"
        )
        if well_formed:
            tuner = call.func
            keywords = {keyword.arg: keyword.value for keyword in tuner.keywords}
            well_formed = (
                not tuner.args
                and set(keywords) <= {"configs", "key"}
                and isinstance(keywords.get("configs"), ast.List)
                and all(self._config(config, meta) for config in keywords["configs"].elts)
                and _constant_list(keywords.get("key", ast.List([])), str)
            )
        if not well_formed:
            self.flag(
                statement,
                "module code other than NineToothed's autotuning of the "
                "kernel with constant configurations",
            )
            return None
        return target.id

    @staticmethod
    def _config(node, meta):
        if not (
            isinstance(node, ast.Call)
            and dotted_name(node.func) == "triton.Config"
            and len(node.args) == 1
            and isinstance(node.args[0], ast.Dict)
        ):
            return False
        values = node.args[0]
        keys_ok = all(isinstance(key, ast.Constant) and key.value in meta for key in values.keys)
        return (
            keys_ok
            and all(_constant(value, int) for value in values.values)
            and all(
                keyword.arg in ("num_warps", "num_stages") and _constant(keyword.value, int)
                for keyword in node.keywords
            )
        )

    def _launcher(self, launcher, kernel, tuned):
        """``def launch_K(a, b, c, *scalars): [name = sizes ...] K[lambda meta: (grid,)](
        arguments, num_warps=.., num_stages=..)``: the three tensors first, then any
        symbols the arrangement declared; names bound to their sizes; one launch."""
        parameters = _parameters(launcher)
        tensors, scalars = set(parameters[:3]), set(parameters[3:])
        *prologue, last = launcher.body
        launch = last.value if isinstance(last, ast.Expr) else None
        fine = (
            launcher.name == f"launch_{kernel.name}"
            and len(tensors) == 3
            and not launcher.decorator_list
            and _plain_arguments(launcher.args)
            and all(not name.startswith("__") for name in parameters)
        )
        for statement in prologue if fine else ():
            target = (
                statement.targets[0]
                if isinstance(statement, ast.Assign) and len(statement.targets) == 1
                else None
            )
            fine = (
                isinstance(target, ast.Name)
                and GENERATED.fullmatch(target.id)
                and target.id not in tensors
                and _size_arithmetic(statement.value, tensors, scalars)
            )
            if not fine:
                break
            scalars.add(target.id)
        fine = (
            fine
            and isinstance(launch, ast.Call)
            and isinstance(launch.func, ast.Subscript)
            and _is_name([launch.func.value], tuned or kernel.name)
        )
        if fine:
            grid = launch.func.slice
            fine = (
                isinstance(grid, ast.Lambda)
                and _plain_arguments(grid.args)
                and [argument.arg for argument in grid.args.args] == ["meta"]
                and isinstance(grid.body, ast.Tuple)
                and all(
                    _size_arithmetic(element, tensors, scalars, meta=True)
                    for element in grid.body.elts
                )
            )
        if fine:
            fine = all(
                _size_arithmetic(argument, tensors, scalars, whole=True) for argument in launch.args
            ) and all(
                keyword.arg in ("num_warps", "num_stages") and _constant(keyword.value, int)
                for keyword in launch.keywords
            )
        if not fine:
            self.flag(
                launcher,
                "a launcher other than NineToothed's: one launch of the "
                "kernel on a grid of sizes, with its tensors, sizes and strides",
            )
        elif not _each_tensor_to_its_pointer(kernel, launch.args, tensors):
            self.flag(
                launcher,
                "a launch that gives a tensor to another parameter than its own "
                "unannotated pointer, or that pointer something else (Triton "
                "binds the arguments by position)",
            )


class _Kernel:
    """The @triton.jit function, under Triton's rules and Python's."""

    def __init__(self, file, node, module_names, output):
        self.file, self.node, self.output = file, node, output
        self.parameters = set(_parameters(node))
        self.locals = _stored(node)
        self.module_names = module_names

    def flag(self, node, what):
        self.file.flag(node, what)

    def check(self):
        node = self.node
        if [dotted_name(decorator) for decorator in node.decorator_list] != [
            "triton.jit"
        ] or not _plain_arguments(node.args):
            self.flag(
                node,
                "a kernel that is not a plain @triton.jit function of NineToothed's parameters",
            )
        for argument in node.args.args:
            if not GENERATED.fullmatch(argument.arg):
                self.flag(
                    argument,
                    f"the parameter `{argument.arg}` is not one NineToothed "
                    "names (Triton's launch binder is written from them)",
                )
            annotation = argument.annotation
            if annotation is not None and dotted_name(annotation) not in {
                f"{LANGUAGE}.{name}" for name in ANNOTATIONS
            }:
                self.flag(
                    argument,
                    f"the parameter `{argument.arg}` is annotated with "
                    "something other than triton.language.constexpr",
                )
        for name in sorted(self.locals | self.parameters):
            if name in SHADOWED or name in self.module_names or name.startswith("__"):
                self.flag(
                    node,
                    f"binds `{name}`, which already means something to Triton "
                    "or Python: a kernel's names mean one thing",
                )
        self.pointer_sources = self._pointer_prologue()
        self.statements(node.body)

    def _pointer_prologue(self):
        """NineToothed's ``t_pointers = ninetoothed_t_pointer`` lines: the only bindings a
        pointer name may have."""
        bound = {}
        for statement in ast.walk(self.node):
            targets = (
                statement.targets
                if isinstance(statement, ast.Assign)
                else [statement.target]
                if isinstance(statement, (ast.AugAssign, ast.For))
                else []
            )
            for target in targets:
                for name in ast.walk(target):
                    if not (isinstance(name, ast.Name) and POINTER.fullmatch(name.id)):
                        continue
                    value = statement.value if isinstance(statement, ast.Assign) else None
                    generated = (
                        isinstance(target, ast.Name)
                        and statement in self.node.body
                        and isinstance(value, ast.Name)
                        and value.id == f"ninetoothed_{name.id[:-1]}"
                        and value.id in self.parameters
                        and name.id not in bound
                    )
                    if generated:
                        bound[name.id] = value.id
                    else:
                        self.flag(
                            statement,
                            f"binds the pointer name `{name.id}` otherwise "
                            "than NineToothed's prologue",
                        )
        return bound

    def _prologue_line(self, node):
        """``t_pointers = ninetoothed_t_pointer`` as _pointer_prologue bound it, and nothing
        beside it: another target there would hold the pointer as a value."""
        target = node.targets[0] if len(node.targets) == 1 else None
        return (
            node in self.node.body
            and isinstance(target, ast.Name)
            and isinstance(node.value, ast.Name)
            and self.pointer_sources.get(target.id) == node.value.id
        )

    # -- statements

    def statements(self, body):
        for statement in body:
            self.statement(statement)

    def statement(self, node):
        if not isinstance(node, STATEMENTS):
            self.flag(node, f"`{type(node).__name__}`, which no kernel of the kit may hold")
            return
        if isinstance(node, ast.Assign):
            if self._prologue_line(node):
                return  # checked whole above
            for target in node.targets:
                self.target(target)
            self.expression(node.value)
        elif isinstance(node, ast.AugAssign):
            self.target(node.target, single=True)
            self.expression(node.value)
        elif isinstance(node, ast.For):
            self.target(node.target)
            self.loop_range(node.iter)
            self.orelse(node)
            self.statements(node.body)
        elif isinstance(node, ast.While):
            self.expression(node.test)
            self.orelse(node)
            self.statements(node.body)
        elif isinstance(node, ast.If):
            self.expression(node.test)
            self.statements(node.body)
            self.statements(node.orelse)
        elif isinstance(node, ast.Expr):
            if not _constant(node.value, str):  # a docstring stays a docstring
                self.expression(node.value)
        elif isinstance(node, ast.Return):
            if node.value is not None:
                self.expression(node.value)
        elif isinstance(node, ast.Raise):
            self.raised(node)
        elif isinstance(node, ast.Assert):
            self.expression(node.test)
            if node.msg is not None and not _constant(node.msg, str):
                self.flag(
                    node,
                    "an assert message that is not a constant string (Triton "
                    "evaluates it while compiling)",
                )

    def raised(self, node):
        exception = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
        arguments = node.exc.args if isinstance(node.exc, ast.Call) else []
        if (
            node.cause is not None
            or not isinstance(exception, ast.Name)
            or exception.id not in EXCEPTIONS
            or exception.id in self.locals
            or isinstance(node.exc, ast.Call)
            and node.exc.keywords
            or not all(_constant(argument, str) for argument in arguments)
        ):
            self.flag(
                node,
                "a raise of something other than a builtin error with a constant "
                f"message ({', '.join(sorted(EXCEPTIONS))})",
            )

    def orelse(self, node):
        if node.orelse:
            self.flag(node, "a loop with an `else`, which no kernel of the kit needs")

    def target(self, node, single=False):
        if isinstance(node, ast.Name):
            return
        if (
            not single
            and isinstance(node, ast.Tuple)
            and all(isinstance(element, ast.Name) for element in node.elts)
        ):
            return
        self.flag(node, "assigns to something other than a local name")

    def loop_range(self, node):
        called = dotted_name(node.func) if isinstance(node, ast.Call) else None
        if (
            called not in ("range", f"{LANGUAGE}.range", f"{LANGUAGE}.static_range")
            or called == "range"
            and "range" in self.locals
        ):
            self.flag(node, "a loop over something other than range()")
            return
        self.expression(node)

    # -- expressions

    def expression(self, node, text_allowed=False):
        if isinstance(node, ast.Constant):
            if not isinstance(node.value, NUMBERS) and not (
                text_allowed and isinstance(node.value, str)
            ):
                self.flag(node, f"the constant {node.value!r}; a kernel's constants are numbers")
        elif isinstance(node, ast.Name):
            self.name(node)
        elif isinstance(node, ast.Call):
            self.call(node)
        elif isinstance(node, ast.Attribute):
            self.attribute(node)
        elif isinstance(node, ast.Subscript):
            self.expression(node.value)
            self.expression(node.slice)
        elif isinstance(node, ast.Slice):
            for part in (node.lower, node.upper, node.step):
                if part is not None:
                    self.expression(part)
        elif isinstance(node, (ast.Tuple, ast.List)) and isinstance(node.ctx, ast.Load):
            for element in node.elts:
                self.expression(element)
        elif isinstance(node, OPERATORS):
            for child in ast.iter_child_nodes(node):
                if not isinstance(child, LEAVES):
                    self.expression(child)
        else:
            self.flag(node, f"`{type(node).__name__}`, which no kernel of the kit may hold")

    def name(self, node):
        name = node.id
        # A pointer parameter too, with or without its prologue line: its address, as an
        # integer, would offset one tensor's pointers onto another's.
        if POINTER.fullmatch(name) and (name in self.pointer_sources or name in self.parameters):
            self.flag(node, f"uses the pointer `{name}` outside a load or store")
        elif name not in self.parameters and name not in self.locals:
            self.unknown(
                node,
                name,
                f"uses `{name}`, which is neither a parameter nor a local "
                "of the kernel (Triton would look it up among its globals "
                "and builtins)",
            )

    def unknown(self, node, name, refusal):
        """A name the kernel may not use: bound nowhere (True), or else refused with
        ``refusal``."""
        if self.file.bound_nowhere(name):
            self.file.flag(
                node,
                f"uses `{name}`, which nothing binds: no parameter, local, "
                "name of the file or builtin (the kernel cannot run)",
                unbound=name,
            )
            return True
        self.flag(node, refusal)
        return False

    def attribute(self, node):
        dotted = dotted_name(node)
        if dotted is not None and dotted.split(".")[0] == "triton" and "triton" not in self.locals:
            attribute = dotted[len(LANGUAGE) + 1 :] if dotted.startswith(LANGUAGE + ".") else None
            if attribute not in LANGUAGE_ATTRIBUTES - {"constexpr"}:
                self.flag(node, f"uses `{dotted}`, which a kernel of the kit may not use")
            return
        if self._element_type(node):
            return
        if node.attr not in VALUE_ATTRIBUTES:
            self.flag(
                node,
                f"asks a value for `.{node.attr}`, which is not on the list of "
                f"what a tile has ({', '.join(sorted(VALUE_ATTRIBUTES))})",
            )
            return
        self.expression(node.value)

    def _element_type(self, node):
        """``<pointer parameter>.type.element_ty``: what NineToothed writes for a student's
        ``output.dtype`` (``ntl.zeros(..., dtype=output.dtype)``, ``accumulator.to(
        output.dtype)``). A dtype, read of the parameter in this one form only."""
        inner = node.value
        return (
            node.attr == "element_ty"
            and isinstance(inner, ast.Attribute)
            and inner.attr == "type"
            and isinstance(inner.value, ast.Name)
            and inner.value.id in self.pointer_sources.values()
        )

    def call(self, node):
        function = node.func
        dotted = dotted_name(function)
        for keyword in node.keywords:
            if keyword.arg is None or keyword.arg.startswith("_"):
                self.flag(keyword.value, "a `**` or underscored keyword argument")
        arguments = list(node.args) + [keyword.value for keyword in node.keywords]
        if isinstance(function, ast.Name):
            if (
                function.id not in BUILTIN_CALLS or function.id in self.locals
            ) and not self.unknown(
                node,
                function.id,
                f"calls `{function.id}`, which a kernel of the kit may not "
                f"call (only {', '.join(sorted(BUILTIN_CALLS))} and "
                "triton.language's functions)",
            ):
                return
            # Checked also where the function is bound nowhere: nothing may hide behind it.
            self.arguments(arguments, text_allowed=function.id == "print" and not node.keywords)
            return
        if dotted in (f"{LANGUAGE}.load", f"{LANGUAGE}.store"):
            self.memory(node, dotted.rsplit(".", 1)[1])
            return
        if isinstance(function, ast.Attribute):
            if self._element_type(function):
                self.flag(node, "calls a pointer's element type, which is a dtype to pass on")
                return
            self.attribute(function)
        else:
            self.flag(node, "calls something other than a function by its name")
            return
        self.arguments(arguments, text_allowed=dotted == f"{LANGUAGE}.device_print")

    def arguments(self, arguments, text_allowed=False):
        for argument in arguments:
            if isinstance(argument, ast.Starred):
                self.flag(argument, "a starred argument")
            else:
                self.expression(argument, text_allowed=text_allowed)

    def memory(self, node, kind):
        """A load or a store: its pointer argument names one tensor's pointers, and a
        store's (and only a store's) names the output."""
        if not node.args or any(isinstance(argument, ast.Starred) for argument in node.args):
            self.flag(node, f"a {kind} without its pointer as the first argument")
            return
        pointer, rest = (
            node.args[0],
            list(node.args[1:]) + [keyword.value for keyword in node.keywords],
        )
        tensors = set()
        for child in ast.walk(pointer):
            if isinstance(child, ast.Name) and child.id in self.pointer_sources:
                tensors.add(child.id[: -len("_pointers")])
            elif isinstance(child, ast.Name) and POINTER.fullmatch(child.id):
                self.flag(
                    child,
                    f"a {kind} through `{child.id}`, which is not one of "
                    "NineToothed's tile pointers",
                )
                return
        if len(tensors) != 1:
            self.flag(node, f"a {kind} whose address is not one tensor's pointers")
            return
        tensor = tensors.pop()
        if kind == "store" and tensor != self.output:
            self.flag(
                node,
                "stores into an input (lhs or rhs): a kernel writes only its "
                "output, so assign only to the output in application()",
            )
        elif kind == "load" and tensor == self.output:
            self.flag(node, "reads the output's values, which C = A @ B never needs")
        self.arguments(_around_pointers(pointer, set(self.pointer_sources)) + rest)


def _each_tensor_to_its_pointer(kernel, arguments, tensors):
    """Whether the launch gives each tensor ``t`` to the parameter ``ninetoothed_t_pointer``,
    unannotated, and that parameter nothing else: the kernel's check reads a load or store
    through ``t_pointers`` as one of ``t``, and the interpreter hands a constexpr parameter
    the host tensor itself."""
    parameters = kernel.args.args
    pointers = {f"ninetoothed_{tensor}_pointer" for tensor in tensors}
    if len(arguments) > len(parameters):
        return False
    for parameter, argument in zip(parameters, arguments + [None] * len(parameters)):
        given = argument.id if isinstance(argument, ast.Name) and argument.id in tensors else None
        if (given is not None or parameter.arg in pointers) and (
            parameter.arg != f"ninetoothed_{given}_pointer" or parameter.annotation
        ):
            return False
    return True


def _around_pointers(node, pointers):
    """The parts of an address expression around its pointer names, to check as usual."""
    if isinstance(node, ast.Name) and node.id in pointers:
        return []
    if isinstance(node, ast.BinOp):
        return _around_pointers(node.left, pointers) + _around_pointers(node.right, pointers)
    return [node]


def _parameters(function):
    return [argument.arg for argument in function.args.args]


def _plain_arguments(arguments):
    return not (
        arguments.posonlyargs
        or arguments.vararg
        or arguments.kwonlyargs
        or arguments.kwarg
        or arguments.defaults
        or arguments.kw_defaults
    )


def _stored(function):
    return {
        node.id
        for node in ast.walk(function)
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store)
    }


def _bindings(tree):
    """Every name the file binds anywhere, in any scope, live or dead: assignments, walrus,
    loop and comprehension variables, ``del``, parameters, imports, defs and classes,
    ``except ... as``, ``global`` and ``nonlocal``, match captures. None where a star import
    may bind any name."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            names.add(node.id)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, ast.alias):
            if node.name == "*":
                return None
            names.add(node.asname or node.name.partition(".")[0])
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            names.update(node.names)
        else:  # a def or class, ``except ... as``, a match capture and a match's ``**rest``
            names.update(
                name
                for name in (getattr(node, "name", None), getattr(node, "rest", None))
                if isinstance(name, str)
            )
    return names


def _fallback_names():
    """The names a kernel's run may find with no binding in its file: Python's builtins (as
    the kit found them, and as they are now: code run before the check may add some),
    Triton's own (SHADOWED), and the globals of Triton's interpreter. Dunders, module
    attributes such as ``__builtins__``, are ``_File.bound_nowhere``'s."""
    return PYTHON_BUILTINS | set(dir(builtins)) | SHADOWED | interpreter_globals()


@functools.cache
def interpreter_globals():
    """The globals of Triton's interpreter, which it copies into the module of every kernel
    it interprets (``np``, ``tl``, ``math``...), read from its file: importing it would bind
    a module of Triton's anew, which a worker's build guard takes for a patch of Triton."""
    import triton.runtime

    path = pathlib.Path(triton.runtime.__file__).with_name("interpreter.py")
    return frozenset(module_bindings(ast.parse(path.read_text(encoding="utf-8")))[0])


def _shortened(line):
    """A generated line as a violation quotes it: its first 117 characters."""
    return line if len(line) <= 120 else line[:117] + "..."


def _is_name(nodes, name):
    return len(nodes) == 1 and isinstance(nodes[0], ast.Name) and nodes[0].id == name


def _constant(node, kind):
    return isinstance(node, ast.Constant) and type(node.value) is kind


def _constant_list(node, kind):
    return isinstance(node, ast.List) and all(_constant(element, kind) for element in node.elts)


def _size_arithmetic(node, tensors, scalars, meta=False, whole=False):
    """Integers, the launcher's scalars, + - * // % of them, ``t.size(i)`` and
    ``t.stride(i)`` of its tensors, ``meta['name']`` inside the grid, and (``whole``, as a
    launch argument) a tensor itself, which the kernel gets as its pointer."""
    if _constant(node, int):
        return True
    if isinstance(node, ast.Name):
        return node.id in scalars or (whole and node.id in tensors)
    if isinstance(node, ast.BinOp):
        return (
            isinstance(node.op, (ast.Add, ast.Sub, ast.Mult, ast.FloorDiv, ast.Mod))
            and _size_arithmetic(node.left, tensors, scalars, meta)
            and _size_arithmetic(node.right, tensors, scalars, meta)
        )
    if isinstance(node, ast.UnaryOp):
        return isinstance(node.op, ast.USub) and _size_arithmetic(
            node.operand, tensors, scalars, meta
        )
    if isinstance(node, ast.Call):
        method = node.func
        return (
            isinstance(method, ast.Attribute)
            and isinstance(method.value, ast.Name)
            and method.value.id in tensors
            and not node.keywords
            and method.attr in ("size", "stride")
            and len(node.args) == 1
            and _constant(node.args[0], int)
        )
    if isinstance(node, ast.Subscript):
        return meta and _is_name([node.value], "meta") and _constant(node.slice, str)
    return False
