"""Single-point mutants of correct kernels, for measuring the diagnosis (diagnosis_table.py).

Each mutant changes one place of a correct file: an operator, a number, a range bound, an
index, a call's argument or their order, a dtype, a NineToothed call, the store's form, a
statement deleted or doubled, a block count by floor or by ceiling division. The bases are
the reference and correct styles of the kit (build_variants.CORRECT); a style is mutated
only in the functions where it differs from the reference, so no two bases repeat a mutant.

A mutant carries its kind, its function, its lines (those of its statement in the mutant's
own text) and its subject, the part of the GEMM that statement builds, named the same
whatever the file calls its variables: ``lhs.tile`` (an operand's first tiling), ``lhs.group``
(the grouping of its tiles), ``lhs.expand``, ``lhs.squeeze``, ``output.tile``, ``grid`` (block
counts read from an arranged shape), ``return``, in arrangement(); ``accumulator``, ``loop``,
``step`` (the loop's body), ``store`` in application(); ``wrapper`` in nt_gemm. The hints say
which subjects they explain (grader.core.mistakes.Mistake.explains).

``mutants()`` lists them all, in a fixed order; ``sample(count, seed)`` draws a seeded subset.
"""

import ast
import collections
import copy
import dataclasses
import random

from grader.tests import build_variants
from grader.tests.checker_mutants import compiles
from grader.tests.source_edits import model_answer

# The correct styles mutated beside the reference (build_variants.CORRECT).
STYLES = ("other_style", "while_loop", "dot_accumulates")
FUNCTIONS = ("arrangement", "application", "nt_gemm")
ROLES = ("lhs", "rhs", "output")
KINDS = (
    "operator",
    "constant",
    "range_bound",
    "index",
    "name",
    "call_argument",
    "argument_order",
    "dtype",
    "ninetoothed_call",
    "store_form",
    "deleted_statement",
    "duplicated_statement",
    "floor_division",
    "ceiling_division",
)


@dataclasses.dataclass(frozen=True)
class Mutant:
    base: str  # "reference" or a key of build_variants.CORRECT
    kind: str  # one of KINDS
    function: str  # one of FUNCTIONS
    subject: str  # the part of the GEMM its statement builds (see the module's docstring)
    lines: tuple  # (first, last): its statement's lines in ``source``
    function_lines: tuple  # (first, last): its function's lines in ``source``
    what: str  # the change, as `old` -> `new`
    source: str
    ordinal: int = 1  # the same change at another place of the same line: 2, 3, ...

    @property
    def name(self):
        name = f"{self.base}:{self.function}:{self.lines[0]}:{self.kind}:{self.what}"
        return name if self.ordinal == 1 else f"{name} #{self.ordinal}"


def bases():
    """{base name: its source}: the reference and the styles."""
    found = {"reference": model_answer()}
    for style in STYLES:
        found[style] = build_variants.CORRECT[style].edited()
    return found


def mutants():
    """Every mutant of every base that Python compiles, each text once, in a fixed order, each
    name once."""
    texts = bases()
    reference = _functions(ast.parse(texts["reference"]))
    found, seen, names = [], set(texts.values()), collections.Counter()
    for base, text in texts.items():
        tree = ast.parse(text)
        for name, function in _functions(tree).items():
            if base != "reference" and ast.dump(function) == ast.dump(reference.get(name)):
                continue  # the reference's own mutants cover it
            for mutant in _function_mutants(base, text, function):
                if mutant.source not in seen and compiles(mutant.source):
                    seen.add(mutant.source)
                    names[mutant.name] += 1
                    found.append(dataclasses.replace(mutant, ordinal=names[mutant.name]))
    return found


def sample(count, seed, pool=None):
    """``count`` mutants drawn with ``random.Random(seed)``, in the corpus's order."""
    pool = mutants() if pool is None else pool
    chosen = set(random.Random(seed).sample(range(len(pool)), min(count, len(pool))))
    return [mutant for index, mutant in enumerate(pool) if index in chosen]


def _functions(tree):
    return {
        node.name: node
        for node in tree.body
        if isinstance(node, ast.FunctionDef) and node.name in FUNCTIONS
    }


# -- where a statement sits, and what it builds


def _statements(body):
    """(statement, the body it is in) for a body and the bodies inside it, the docstring
    left out."""
    for index, statement in enumerate(body):
        if (
            index == 0
            and isinstance(statement, ast.Expr)
            and isinstance(statement.value, ast.Constant)
        ):
            continue
        yield statement, body
        for field in ("body", "orelse"):
            if isinstance(statement, (ast.For, ast.While, ast.If)):
                yield from _statements(getattr(statement, field))


def _header(statement):
    """The nodes a mutation of ``statement`` may change: not those of the bodies it holds."""
    if isinstance(statement, ast.For):
        return [statement.target, statement.iter]
    if isinstance(statement, (ast.While, ast.If)):
        return [statement.test]
    return [statement]


class _Reader:
    """What a function's statements build, from its parameters and assignments."""

    def __init__(self, function):
        self.function = function
        parameters = [argument.arg for argument in function.args.args][:3]
        self.roles = dict(zip(parameters, ROLES))
        self.origin = {}  # a local name -> (role, tiled, grid)
        self.accumulator = None
        for node in sorted(
            (node for node in ast.walk(function) if isinstance(node, ast.Assign)),
            key=lambda node: node.lineno,
        ):
            if isinstance(node.value, ast.Call) and _method(node.value) == "zeros":
                self.accumulator = next(
                    (target.id for target in node.targets if isinstance(target, ast.Name)), None
                )
            role, tiled, grid = self.trace(node.value)
            for target in node.targets:
                names = target.elts if isinstance(target, ast.Tuple) else [target]
                for name in names:
                    if isinstance(name, ast.Name):
                        self.origin[name.id] = (role, tiled, grid)

    def trace(self, node):
        """(the role a value derives from, whether it was tiled, whether it reads a shape)."""
        if isinstance(node, ast.Name):
            if node.id in self.roles:
                return self.roles[node.id], False, False
            return self.origin.get(node.id, (None, False, False))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            role, tiled, grid = self.trace(node.func.value)
            return role, tiled or node.func.attr == "tile", grid
        if isinstance(node, ast.Attribute):
            role, tiled, grid = self.trace(node.value)
            return role, tiled, grid or node.attr == "shape"
        if isinstance(node, ast.Subscript):
            return self.trace(node.value)
        return None, False, False

    def subject(self, statement, node):
        """The subject of a change at ``node`` (None: the whole statement) of ``statement``."""
        name = self.function.name
        if name == "nt_gemm":
            return "wrapper"
        if name == "application":
            return self._application_subject(statement)
        if isinstance(statement, ast.Return):
            return "return"
        value = getattr(statement, "value", None)
        if value is None:
            return "other"
        role, tiled, grid = self.trace(value)
        if grid and tiled:
            return "grid"
        call = _enclosing_call(value, node) or (value if isinstance(value, ast.Call) else None)
        if role is None or call is None:
            return f"{role}.other" if role else "other"
        method = _method(call)
        if method == "tile" and self.trace(call.func.value)[1]:
            method = "group"
        return f"{role}.{method}"

    def _application_subject(self, statement):
        stores = [
            node
            for node in ast.walk(statement)
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store)
        ]
        output = next(
            (parameter for parameter, role in self.roles.items() if role == "output"), None
        )
        if (
            isinstance(statement, ast.Return)
            or any(node.id == output for node in stores)
            or isinstance(statement, ast.AugAssign)
            and _root(statement.target) == output
        ):
            return "store"
        if isinstance(statement, (ast.For, ast.While)):
            return "loop"
        value = getattr(statement, "value", None)
        if isinstance(value, ast.Call) and _method(value) == "zeros":
            return "accumulator"
        if any(
            isinstance(node, ast.Call) and _method(node) == "dot" for node in ast.walk(statement)
        ) or any(node.id == self.accumulator for node in stores):
            return "step"
        return "loop"  # a counter or a tile count the loop reads


def _method(call):
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")


def _root(node):
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _enclosing_call(value, node):
    """The innermost NineToothed method call whose arguments hold ``node``, or the call that
    ``node`` is."""
    found = None
    for call in ast.walk(value):
        if not (
            isinstance(call, ast.Call) and _method(call) in ("tile", "expand", "squeeze", "permute")
        ):
            continue
        inside = call is node or any(
            node is sub
            for argument in call.args + [keyword.value for keyword in call.keywords]
            for sub in ast.walk(argument)
        )
        if inside and (found is None or any(call is sub for sub in ast.walk(found))):
            found = call
    return found


# -- the mutation operators: each yields (kind, the node's replacement, what changed)

_OPERATORS = {
    ast.Add: (ast.Sub, ast.Mult),
    ast.Sub: (ast.Add,),
    ast.Mult: (ast.Add, ast.FloorDiv),
    ast.FloorDiv: (ast.Div, ast.Mult),
    ast.Div: (ast.FloorDiv,),
    ast.Lt: (ast.LtE, ast.Gt),
    ast.LtE: (ast.Lt,),
    ast.Gt: (ast.GtE,),
    ast.GtE: (ast.Gt,),
    ast.Eq: (ast.NotEq,),
    ast.NotEq: (ast.Eq,),
}
_AUGMENTED = {ast.Add: (ast.Sub, ast.Mult, ast.Div), ast.Sub: (ast.Add,)}
_DTYPES = {"float32": ("float16", "bfloat16"), "float16": ("float32",), "bfloat16": ("float16",)}


def _code(node):
    return ast.unparse(ast.fix_missing_locations(node))


def _expression_changes(node, reader, in_index):
    """The changes of one expression node."""
    if isinstance(node, ast.BinOp):
        for new in _OPERATORS.get(type(node.op), ()):
            yield "operator", ast.BinOp(node.left, new(), node.right)
    if isinstance(node, ast.Compare) and len(node.ops) == 1:
        for new in _OPERATORS.get(type(node.ops[0]), ()):
            yield "operator", ast.Compare(node.left, [new()], node.comparators)
    number = _number(node)
    if number is not None:
        kind = "index" if in_index else "constant"
        for value in dict.fromkeys((number + 1, number - 1, 0, -number)):
            if value != number:
                yield kind, _number_node(value)
    if (
        isinstance(node, ast.Subscript)
        and isinstance(node.slice, ast.Name)
        and isinstance(node.value, ast.Name)
    ):
        k = node.slice
        for index in (
            ast.BinOp(k, ast.Add(), ast.Constant(1)),
            ast.BinOp(k, ast.Sub(), ast.Constant(1)),
            ast.Constant(0),
        ):
            yield "index", ast.Subscript(node.value, index, node.ctx)
    if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
        for other in _siblings(node.id, reader):
            yield "name", ast.Name(other, ast.Load())
    if isinstance(node, ast.Attribute) and node.attr in _DTYPES:
        for other in _DTYPES[node.attr]:
            yield "dtype", ast.Attribute(node.value, other, node.ctx)
    if isinstance(node, ast.Call):
        yield from _call_changes(node, reader)
    if (
        isinstance(node, ast.Subscript)
        and isinstance(node.value, ast.Attribute)
        and node.value.attr == "shape"
        and isinstance(node.value.value, ast.Name)
        and node.value.value.id in reader.roles
        and reader.function.name == "application"
    ):
        yield "ninetoothed_call", ast.Call(ast.Name("len", ast.Load()), [node.value.value], [])


def _call_changes(call, reader):
    method = _method(call)
    if len(call.args) >= 2 and _code(call.args[0]) != _code(call.args[1]):
        yield (
            "argument_order",
            ast.Call(call.func, [call.args[1], call.args[0]] + call.args[2:], call.keywords),
        )
    for index, argument in enumerate(call.args):
        if (
            isinstance(argument, ast.Tuple)
            and len(argument.elts) == 2
            and _code(argument.elts[0]) != _code(argument.elts[1])
        ):
            swapped = ast.Tuple(argument.elts[::-1], ast.Load())
            yield (
                "argument_order",
                ast.Call(
                    call.func, call.args[:index] + [swapped] + call.args[index + 1 :], call.keywords
                ),
            )
    if len(call.args) >= 2:
        yield "call_argument", ast.Call(call.func, call.args[:-1], call.keywords)
    for index in range(len(call.keywords)):
        yield (
            "call_argument",
            ast.Call(call.func, call.args, call.keywords[:index] + call.keywords[index + 1 :]),
        )
    receiver = call.func.value if isinstance(call.func, ast.Attribute) else None
    if method in ("squeeze", "expand") and receiver is not None:
        yield "ninetoothed_call", receiver
    if method == "tile" and receiver is not None:
        for keyword in (
            ast.keyword("floor_mode", ast.Constant(True)),
            ast.keyword("strides", ast.Tuple([ast.Constant(1), ast.Constant(1)], ast.Load())),
        ):
            yield "ninetoothed_call", ast.Call(call.func, call.args, call.keywords + [keyword])
    if method == "dot" and len(call.args) >= 2:
        language = call.func.value if isinstance(call.func, ast.Attribute) else None
        yield "ninetoothed_call", ast.BinOp(call.args[0], ast.Mult(), call.args[1])
        if language is not None:
            for index in (0, 1):
                transposed = ast.Call(
                    ast.Attribute(language, "trans", ast.Load()), [call.args[index]], []
                )
                arguments = list(call.args)
                arguments[index] = transposed
                yield "ninetoothed_call", ast.Call(call.func, arguments, call.keywords)
            yield (
                "dtype",
                ast.Call(
                    ast.Attribute(call, "to", ast.Load()),
                    [ast.Attribute(language, "float16", ast.Load())],
                    [],
                ),
            )
    if method == "to" and receiver is not None:
        yield "dtype", receiver
    if method == "range":
        yield from _range_changes(call)


def _range_changes(call):
    arguments = call.args
    stop = arguments[0] if len(arguments) == 1 else arguments[1] if len(arguments) >= 2 else None
    if stop is None:
        return
    start = arguments[0] if len(arguments) >= 2 else ast.Constant(0)
    for new in (
        [ast.Constant(1), stop],
        [start, ast.BinOp(stop, ast.Sub(), ast.Constant(1))],
        [start, ast.BinOp(stop, ast.Add(), ast.Constant(1))],
        [start, stop, ast.Constant(2)],
    ):
        if _code(new[0]) == "0" and len(new) == 2:
            new = new[1:]
        yield "range_bound", ast.Call(call.func, new, [])


def _number(node):
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if (
        isinstance(node, ast.UnaryOp)
        and isinstance(node.op, ast.USub)
        and isinstance(node.operand, ast.Constant)
        and type(node.operand.value) is int
    ):
        return -node.operand.value
    return None


def _number_node(value):
    return ast.Constant(value) if value >= 0 else ast.UnaryOp(ast.USub(), ast.Constant(-value))


def _siblings(name, reader):
    """Names that stand where ``name`` does in a slip: another block size, block count or
    operand."""
    for family in _families(reader):
        if name in family:
            yield from (other for other in family if other != name)


def _families(reader):
    function = reader.function
    defaults = [argument.arg for argument in function.args.args[3:]]
    grids = [name for name, (_, tiled, grid) in reader.origin.items() if grid and tiled]
    operands = [parameter for parameter, role in reader.roles.items() if role != "output"]
    constants = [f"BLOCK_SIZE_{letter}" for letter in "MNK"]
    return [family for family in (defaults, grids, operands, constants) if len(family) > 1]


# -- turning changes into mutants


def _function_mutants(base, text, function):
    reader = _Reader(function)
    steps = _counter_steps(function)
    for statement, body in _statements(function.body):
        if id(statement) in steps:
            continue  # most changes of it never end: the time limit speaks for them, no hint
        header = _header(statement)
        nodes = [node for part in header for node in ast.walk(part)]
        index_nodes = {
            id(sub)
            for node in nodes
            if isinstance(node, ast.Subscript)
            for sub in ast.walk(node.slice)
        }
        negated = {
            id(node.operand)
            for node in nodes
            if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub)
        }  # -1 is one number, changed as a whole
        for node in nodes:
            if isinstance(node, ast.Constant) and (
                isinstance(node.value, str) or id(node) in negated
            ):
                continue
            for kind, new in _expression_changes(node, reader, id(node) in index_nodes):
                changed = _replaced(statement, node, new)
                yield _mutant(
                    base,
                    text,
                    function,
                    statement,
                    changed,
                    kind,
                    reader.subject(statement, node),
                    f"`{_code(node)}` -> `{_code(new)}`",
                )
        yield from _statement_mutants(base, text, function, statement, body, reader)


def _counter_steps(function):
    """The ids of the statements that step a while loop's counter."""
    steps = set()
    for loop in ast.walk(function):
        if isinstance(loop, ast.While):
            tested = {node.id for node in ast.walk(loop.test) if isinstance(node, ast.Name)}
            steps |= {
                id(statement)
                for statement in loop.body
                if isinstance(statement, ast.AugAssign)
                and isinstance(statement.target, ast.Name)
                and statement.target.id in tested
            }
    return steps


def _statement_mutants(base, text, function, statement, body, reader):
    whole = reader.subject(statement, None)
    alone = [
        item
        for item in body
        if item is not statement
        and not (isinstance(item, ast.Expr) and isinstance(item.value, ast.Constant))
    ] == []
    yield _mutant(
        base,
        text,
        function,
        statement,
        ast.Pass() if alone else None,
        "deleted_statement",
        whole,
        f"`{_first_line(statement)}` deleted",
    )
    if not isinstance(statement, (ast.Return, ast.For, ast.While, ast.If)):
        yield _mutant(
            base,
            text,
            function,
            statement,
            [statement, statement],
            "duplicated_statement",
            whole,
            f"`{_first_line(statement)}` doubled",
        )
    if isinstance(statement, ast.AugAssign):
        plain = ast.Assign([copy.deepcopy(statement.target)], statement.value, type_comment=None)
        plain.targets[0].ctx = ast.Store()
        changes = [
            ast.AugAssign(statement.target, new(), statement.value)
            for new in _AUGMENTED.get(type(statement.op), ())
        ] + [plain]
        for new in changes:
            yield _mutant(
                base,
                text,
                function,
                statement,
                new,
                "operator",
                whole,
                f"`{_first_line(statement)}` -> `{_first_line(new)}`",
            )
    if (
        whole == "store"
        and isinstance(statement, ast.Assign)
        and isinstance(statement.targets[0], ast.Name)
    ):
        target, value = statement.targets[0], statement.value
        sliced = ast.Subscript(
            ast.Name(target.id, ast.Store()),
            ast.Tuple([ast.Slice(), ast.Slice()], ast.Load()),
            ast.Store(),
        )
        for new in (
            ast.Assign([sliced], value, type_comment=None),
            ast.AugAssign(target, ast.Add(), value),
            ast.Return(value),
        ):
            yield _mutant(
                base,
                text,
                function,
                statement,
                new,
                "store_form",
                "store",
                f"`{_first_line(statement)}` -> `{_first_line(new)}`",
            )
        trans = ast.Call(
            ast.Attribute(ast.Name("ntl", ast.Load()), "trans", ast.Load()), [value], []
        )
        yield _mutant(
            base,
            text,
            function,
            statement,
            ast.Assign([target], trans, type_comment=None),
            "ninetoothed_call",
            "store",
            f"`{_code(value)}` -> `{_code(trans)}`",
        )
    if whole == "accumulator":
        yield from _output_read(base, text, function, statement, reader)
    if function.name == "arrangement":
        yield from _count_mutants(base, text, function, statement, reader)


def _output_read(base, text, function, start, reader):
    """No accumulator: the loop adds into the output itself (``output += ...``), as if it
    were a buffer of the running sum, and nothing stores it at the end."""
    output = next(parameter for parameter, role in reader.roles.items() if role == "output")
    edits, step = [(start, None)], None
    for statement, _ in _statements(function.body):
        if isinstance(statement, (ast.For, ast.While)) or statement is start:
            continue
        names = [
            node
            for node in ast.walk(statement)
            if isinstance(node, ast.Name) and node.id == reader.accumulator
        ]
        if not names:
            continue
        if reader.subject(statement, None) == "store":
            edits.append((statement, None))
            continue
        changed = copy.deepcopy(statement)
        for node in ast.walk(changed):
            if isinstance(node, ast.Name) and node.id == reader.accumulator:
                node.id = output
        edits.append((statement, changed))
        step = step or statement
    if step is not None and len(edits) > 2:
        yield _edited(
            base,
            text,
            function,
            edits,
            step,
            "store_form",
            "step",
            f"`{reader.accumulator}` replaced by `{output}`, read and added to",
        )


def _count_mutants(base, text, function, statement, reader):
    """A block count in expand() written as a division of the output's size: floor division
    drops the partial tile's block; ceiling division is right."""
    output = next(parameter for parameter, role in reader.roles.items() if role == "output")
    tiles = [
        node
        for node in ast.walk(function)
        if isinstance(node, ast.Call)
        and _method(node) == "tile"
        and isinstance(node.func, ast.Attribute)
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == output
    ]
    if not tiles or not tiles[0].args or not isinstance(tiles[0].args[0], ast.Tuple):
        return
    sizes = tiles[0].args[0].elts
    for call in ast.walk(statement):
        if not (
            isinstance(call, ast.Call)
            and _method(call) == "expand"
            and call.args
            and isinstance(call.args[0], ast.Tuple)
        ):
            continue
        for position, count in enumerate(call.args[0].elts):
            if _number(count) is not None or position >= len(sizes):
                continue
            size = ast.parse(f"{output}.shape[{position}]", mode="eval").body
            floor = ast.BinOp(size, ast.FloorDiv(), sizes[position])
            ceiling = ast.BinOp(
                ast.BinOp(ast.BinOp(size, ast.Add(), sizes[position]), ast.Sub(), ast.Constant(1)),
                ast.FloorDiv(),
                sizes[position],
            )
            for kind, new in (("floor_division", floor), ("ceiling_division", ceiling)):
                yield _mutant(
                    base,
                    text,
                    function,
                    statement,
                    _replaced(statement, count, new),
                    kind,
                    reader.subject(statement, count),
                    f"`{_code(count)}` -> `{_code(new)}`",
                )


def _replaced(statement, node, new):
    """A copy of ``statement`` with ``node`` (one of its nodes) replaced by ``new``."""
    if node is statement:
        return copy.deepcopy(new)
    order = list(ast.walk(statement))
    position = next(index for index, item in enumerate(order) if item is node)
    changed = copy.deepcopy(statement)
    target = list(ast.walk(changed))[position]
    for parent in ast.walk(changed):
        for field, value in ast.iter_fields(parent):
            if value is target:
                setattr(parent, field, copy.deepcopy(new))
                return changed
            if isinstance(value, list) and any(item is target for item in value):
                value[[id(item) for item in value].index(id(target))] = copy.deepcopy(new)
                return changed
    raise ValueError("the node is not in the statement")


def _first_line(statement):
    return _code(statement).splitlines()[0]


def _mutant(base, text, function, statement, new, kind, subject, what):
    """The mutant whose ``statement`` is ``new``: a statement, a list of them, or None
    (deleted: its lines left blank, so every other line keeps its number)."""
    return _edited(base, text, function, [(statement, new)], statement, kind, subject, what)


def _edited(base, text, function, edits, main, kind, subject, what):
    """The mutant of ``edits`` [(statement, new)], its lines those of ``main``'s change."""
    lines = text.splitlines(keepends=True)
    grown = {}  # a statement's first line -> how many lines its edit added
    for statement, new in sorted(edits, key=lambda edit: -edit[0].lineno):
        first, last = statement.lineno, statement.end_lineno
        if new is None:
            replacement = ["\n"] * (last - first + 1)
        else:
            statements = new if isinstance(new, list) else [new]
            rendered = "\n".join(_code(item) for item in statements)
            replacement = [
                " " * statement.col_offset + line + "\n" for line in rendered.splitlines()
            ]
        lines[first - 1 : last] = replacement
        grown[first] = len(replacement) - (last - first + 1)

    def moved(line):
        return line + sum(added for start, added in grown.items() if start < line)

    first = moved(main.lineno)
    last = (
        first
        if dict(edits)[main] is None
        else first + main.end_lineno - main.lineno + grown[main.lineno]
    )
    return Mutant(
        base,
        kind,
        function.name,
        subject,
        (first, last),
        (function.lineno, moved(function.end_lineno + 1) - 1),
        what,
        "".join(lines),
    )
