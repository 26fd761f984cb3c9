"""Slips on one line of a file that otherwise reads like a GEMM, named with that line.

A tile product written `lhs[k] * rhs[k]`, an input tile transposed, a loop over the K tiles
that starts late or ends early, ``len()`` of a tile sequence, a store into a slice of the
output or a sum kept in it, a cast to float16 at every step, an accumulator made in the loop
or combined by another operator than +, no product at all, ``strides=`` or
``floor_mode=True`` given to tile(), a block count worked out by floor division. What the
kernel computes with them is wrong in ways that match other mistakes (the cases alone took
a loop that ends early for a dropped K tail), so ``slips(functions)`` reads them from the
file's own lines, as grader.core.source_mistakes reads the first hour's mistakes, and says
which line. Each slip is reported only where its line leaves no doubt; nothing of the file
runs.
"""

import ast

from grader.core.kernel_allowlist import dotted_name
from grader.core.messages import say
from grader.core.size_slips import quoted

_PRODUCTS = ("dot", "matmul", "mm")  # torch's are named on their own line
_NARROW = ("float16", "bfloat16", "float8e4nv", "float8e5", "int8")


def finding(key, node, template, **fields):
    """(its line, the finding), so that the findings can be put in line order; its message
    is grader.core.messages's ``template`` with ``fields``, after its line."""
    return node.lineno, {
        "mistake": key,
        "message": say("at_line", line=node.lineno, evidence=say(template, **fields)),
    }


def code(node):
    return f"`{quoted(ast.unparse(node))}`"


def called(call):
    """The last part of a call's dotted name: ``dot`` for ``ntl.dot(...)``."""
    return (dotted_name(call.func) or "").rpartition(".")[2]


def parameters(function):
    return [argument.arg for argument in function.args.args]


def slips(functions):
    """[(line, finding)] of arrangement() and application() in ``functions`` (name -> def)."""
    found = []
    if "arrangement" in functions:
        found += _arrangement(functions["arrangement"])
    application = functions.get("application")
    if application is not None and len(parameters(application)) == 3:
        found += _application(application)
        if not _multiplies(application, functions, set()) and not any(
            isinstance(node, ast.Raise) for node in ast.walk(application)
        ):
            found.append(finding("k_steps", application, "no_product"))
    return found


def _multiplies(function, functions, seen):
    """Whether ``function``, or a function of the file it calls, multiplies tiles: ntl.dot,
    or Python's ``@`` or ``*`` (named on their own lines)."""
    seen.add(function.name)
    for node in ast.walk(function):
        if (
            isinstance(node, ast.Call)
            and called(node) in _PRODUCTS
            or isinstance(node, (ast.BinOp, ast.AugAssign))
            and isinstance(node.op, (ast.MatMult, ast.Mult))
        ):
            return True
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in functions
            and node.func.id not in seen
            and _multiplies(functions[node.func.id], functions, seen)
        ):
            return True
    return False


# -- arrangement()


def _arrangement(function):
    found = []
    for call in ast.walk(function):
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)):
            continue
        method = call.func.attr
        keywords = {keyword.arg: keyword.value for keyword in call.keywords}
        if method == "tile" and "strides" in keywords:
            found.append(
                finding(
                    "tile_strides",
                    call,
                    "tile_strides",
                    code=code(call),
                    strides=quoted(ast.unparse(keywords["strides"])),
                )
            )
        if (
            method == "tile"
            and isinstance(keywords.get("floor_mode"), ast.Constant)
            and keywords["floor_mode"].value is True
        ):
            found.append(finding("tail_mask", call, "floor_mode", code=code(call)))
        if method == "expand" and call.args and isinstance(call.args[0], (ast.Tuple, ast.List)):
            for position, count in enumerate(call.args[0].elts):
                if (
                    isinstance(count, ast.BinOp)
                    and isinstance(count.op, ast.FloorDiv)
                    and isinstance(count.left, (ast.Name, ast.Attribute, ast.Subscript))
                ):
                    found.append(
                        finding(
                            "floor_count", call, "floor_count", code=code(count), position=position
                        )
                    )
    return found


# -- application()


def _application(function):
    lhs, rhs, output = parameters(function)
    operands = (lhs, rhs)
    found = _output_slips(function, output)
    for node in ast.walk(function):
        if (
            isinstance(node, ast.BinOp)
            and isinstance(node.op, ast.Mult)
            and _tile_of(node.left, operands)
            and _tile_of(node.right, operands)
        ):
            found.append(
                finding(
                    "elementwise_product",
                    node,
                    "elementwise_product",
                    code=code(node),
                    left=ast.unparse(node.left),
                    right=ast.unparse(node.right),
                )
            )
        elif (
            isinstance(node, ast.Call)
            and called(node) == "trans"
            and node.args
            and _tile_of(node.args[0], operands)
        ):
            found.append(
                finding(
                    "transposed_tile",
                    node,
                    "transposed_tile",
                    code=code(node),
                    operand=_tile_of(node.args[0], operands),
                )
            )
        elif (
            isinstance(node, ast.Call)
            and dotted_name(node.func) == "len"
            and node.args
            and isinstance(node.args[0], ast.Name)
            and node.args[0].id in operands
        ):
            found.append(
                finding(
                    "len_of_tiles", node, "len_of_tiles", code=code(node), operand=node.args[0].id
                )
            )
    found += _loop_range(function, operands)
    found += _cast_each_step(function, output)
    found += _accumulation(function)
    lines = set()  # one slip a line: the first, which the others on it follow from
    return [pair for pair in found if not (pair[0] in lines or lines.add(pair[0]))]


def _accumulation(function):
    """The accumulator (the name ``ntl.zeros`` is assigned to) created inside the loop over
    the K tiles, assigned there without itself, or combined with a product by another
    operator than +."""
    starts = [
        node
        for node in ast.walk(function)
        if isinstance(node, ast.Assign)
        and isinstance(node.value, ast.Call)
        and called(node.value) == "zeros"
        and len(node.targets) == 1
        and isinstance(node.targets[0], ast.Name)
    ]
    if len(starts) != 1:
        return []
    start, accumulator = starts[0], starts[0].targets[0].id
    found = []
    for loop in ast.walk(function):
        if not isinstance(loop, (ast.For, ast.While)):
            continue
        for statement in (node for part in loop.body for node in ast.walk(part)):
            if statement is start:
                found.append(finding("accumulator", start, "zeros_in_loop", code=code(start)))
            elif (
                isinstance(statement, ast.AugAssign)
                and _names(statement.target) == {accumulator}
                and not isinstance(statement.op, ast.Add)
            ):
                found.append(_combined(statement, accumulator, statement.op, "="))
            elif (
                isinstance(statement, ast.Assign)
                and statement is not start
                and any(_names(target) == {accumulator} for target in statement.targets)
            ):
                found += _assigned(statement, accumulator)
    return found


_OPERATOR_TEXT = {
    ast.Sub: "-",
    ast.Mult: "*",
    ast.Div: "/",
    ast.FloorDiv: "//",
    ast.Mod: "%",
    ast.Pow: "**",
    ast.MatMult: "@",
}


def _names(node):
    return {sub.id for sub in ast.walk(node) if isinstance(sub, ast.Name)}


def _assigned(statement, accumulator):
    """``acc = <value>`` inside the loop: right when the value adds to ``acc`` (``acc +
    ...``, or ntl.dot's own accumulator argument)."""
    value = statement.value
    if accumulator not in _names(value):
        return [
            finding(
                "accumulator",
                statement,
                "assigned_in_loop",
                code=code(statement),
                accumulator=accumulator,
            )
        ]
    if (
        isinstance(value, ast.BinOp)
        and not isinstance(value.op, ast.Add)
        and any(
            isinstance(side, ast.Name) and side.id == accumulator
            for side in (value.left, value.right)
        )
    ):
        return [_combined(statement, accumulator, value.op)]
    return []


def _combined(statement, accumulator, operator, augmented=""):
    """The accumulator combined with a product by ``operator``, not added to."""
    return finding(
        "accumulator",
        statement,
        "accumulates_with",
        code=code(statement),
        accumulator=accumulator,
        op=_OPERATOR_TEXT.get(type(operator), "?") + augmented,
    )


def _tile_of(node, operands):
    """The operand whose tile ``node`` is (``lhs[k]``, ``lhs[0, k]``), else None."""
    if (
        isinstance(node, ast.Subscript)
        and isinstance(node.value, ast.Name)
        and node.value.id in operands
    ):
        return node.value.id
    return None


def _output_slips(function, output):
    """``output[...] = ...`` (a store into a slice) and ``output += ...`` or any other read
    of the output tile."""
    found = []
    for node in ast.walk(function):
        targets = (
            node.targets
            if isinstance(node, ast.Assign)
            else [node.target]
            if isinstance(node, ast.AugAssign)
            else []
        )
        for target in targets:
            if isinstance(target, ast.Subscript) and _root(target) == output:
                found.append(
                    finding(
                        "slice_store",
                        node,
                        "slice_store",
                        code=code(node),
                        output=output,
                        value=quoted(ast.unparse(node.value)),
                    )
                )
            elif (
                isinstance(node, ast.AugAssign)
                and isinstance(target, ast.Name)
                and target.id == output
            ):
                found.append(
                    finding(
                        "reads_output", node, "output_augmented", code=code(node), output=output
                    )
                )
    if found:
        return found
    reads = sorted(
        (
            node
            for node in ast.walk(function)
            if isinstance(node, ast.Name) and node.id == output and isinstance(node.ctx, ast.Load)
        ),
        key=lambda node: (node.lineno, node.col_offset),
    )
    for node in reads:
        parent = _parent_attribute(function, node)
        if parent is None or parent.attr not in ("shape", "dtype"):
            return [finding("reads_output", node, "output_read", output=output)]
    return []


def _parent_attribute(function, name):
    return next(
        (
            node
            for node in ast.walk(function)
            if isinstance(node, ast.Attribute) and node.value is name
        ),
        None,
    )


def _root(node):
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _loop_range(function, operands):
    """A loop over the K tiles whose range is not the sequence's: it starts late, ends early,
    runs past the end or steps over tiles. Read where the loop's variable indexes an operand
    and no operand tile is taken outside the loop (a first tile taken before the loop makes
    a later start right)."""
    found = []
    loops = [node for node in ast.walk(function) if isinstance(node, (ast.For, ast.While))]
    for loop in loops:
        inside = {id(node) for node in ast.walk(loop)}
        if any(_tile_of(node, operands) for node in ast.walk(function) if id(node) not in inside):
            continue
        if isinstance(loop, ast.For):
            found += _for_range(loop, operands)
        else:
            found += _while_range(function, loop, operands)
    return found


def _indexes_with(loop, names, operands):
    return any(
        _tile_of(node, operands)
        and names & {sub.id for sub in ast.walk(node.slice) if isinstance(sub, ast.Name)}
        for statement in loop.body
        for node in ast.walk(statement)
    )


def _for_range(loop, operands):
    call = loop.iter
    if not (
        isinstance(call, ast.Call)
        and dotted_name(call.func) == "range"
        and 1 <= len(call.args) <= 3
        and isinstance(loop.target, ast.Name)
        and _indexes_with(loop, {loop.target.id}, operands)
    ):
        return []
    start = call.args[0] if len(call.args) >= 2 else None
    stop = call.args[1] if len(call.args) >= 2 else call.args[0]
    step = call.args[2] if len(call.args) == 3 else None
    if start is not None and not _is_number(start, 0):
        return [_start(loop, call, start)]
    if step is not None and not _is_number(step, 1):
        return [
            finding(
                "k_loop_range",
                loop,
                "loop_steps_over",
                code=code(call),
                step=quoted(ast.unparse(step)),
            )
        ]
    return _bound(loop, call, stop)


def _while_range(function, loop, operands):
    test = loop.test
    if not (
        isinstance(test, ast.Compare)
        and len(test.ops) == 1
        and isinstance(test.left, ast.Name)
        and _indexes_with(loop, {test.left.id}, operands)
    ):
        return []
    counter = test.left.id
    starts = [
        node
        for node in function.body
        if isinstance(node, ast.Assign)
        and node.lineno < loop.lineno
        and any(isinstance(target, ast.Name) and target.id == counter for target in node.targets)
    ]
    if not starts and counter not in parameters(function):
        return [finding("k_loop_range", loop, "counter_unset", counter=counter)]
    if starts and _number(starts[-1].value) not in (None, 0):
        return [_start(starts[-1], starts[-1], starts[-1].value)]
    if isinstance(test.ops[0], ast.LtE):
        return [finding("k_loop_range", loop, "loop_runs_past", code=code(test))]
    if isinstance(test.ops[0], (ast.Gt, ast.GtE)) and starts and _number(starts[-1].value) == 0:
        return [finding("k_loop_range", loop, "loop_never_runs", code=code(test), counter=counter)]
    return _bound(loop, test, test.comparators[0]) if isinstance(test.ops[0], ast.Lt) else []


def _start(node, shown, start):
    """A loop that starts after the first K tile, or before it."""
    early = (_number(start) or 0) < 0
    return finding(
        "k_loop_range",
        node,
        "loop_starts_early" if early else "loop_starts_late",
        code=code(shown),
        start=quoted(ast.unparse(start)),
    )


def _bound(loop, shown, stop):
    """A stop written as the count less or more a number."""
    if isinstance(stop, ast.BinOp) and _number(stop.right) not in (None, 0):
        less = isinstance(stop.op, ast.Sub) == (_number(stop.right) > 0)
        if isinstance(stop.op, (ast.Sub, ast.Add)):
            return [
                finding(
                    "k_loop_range",
                    loop,
                    "loop_ends_early" if less else "loop_runs_past",
                    code=code(shown),
                )
            ]
    return []


def _number(node):
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        value = _number(node.operand)
        return None if value is None else -value
    return None


def _is_number(node, value):
    return _number(node) == value


def _cast_each_step(function, output):
    """A cast to a narrow dtype inside the loop over the K tiles: each step's product (or the
    running sum) is rounded to float16 before it is added. A cast in the output's own store
    (a running sum stored at every step) rounds nothing that is added later."""
    found = []
    for loop in ast.walk(function):
        if not isinstance(loop, (ast.For, ast.While)):
            continue
        for statement in loop.body:
            if any(
                isinstance(node, ast.Name) and node.id == output and isinstance(node.ctx, ast.Store)
                for node in ast.walk(statement)
            ):
                continue
            for node in ast.walk(statement):
                if (
                    isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "to"
                    and node.args
                    and (dotted_name(node.args[0]) or "").rpartition(".")[2] in _NARROW
                ):
                    found.append(
                        finding(
                            "accumulator_dtype",
                            node,
                            "cast_each_step",
                            code=code(node),
                            dtype=(dotted_name(node.args[0]) or "").rpartition(".")[2],
                        )
                    )
    return found
