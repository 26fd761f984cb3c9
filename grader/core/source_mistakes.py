"""First-hour mistakes read from the submission's own source, each named with its line.

Some mistakes leave the arrangement's layout right and are plain on one line of the file:
``return accumulator`` where ``output = accumulator`` belongs, ``ntl.zeros`` without a
float32 dtype, ``ntl.dot(lhs[k], rhs[0])``. What the kernel does with them says little (it
computes zeros, or Triton fails deep inside its compiler), so ``inspect_source(source)``
reads them with ``ast`` before anything compiles. Nothing of the file runs, so the pytest
grader and the batch grader's worker call it alike; the batch's rebuilt file keeps the
student's line numbers (grader.core.kernel_source). It never raises.

Some make the kit's rules refuse the kernel: ``explain_refusal`` says which line, if any,
explains a refusal, for the batch's verdict and the pytest grader alike.
"""

import ast
import builtins

from grader.core import nesting
from grader.core.kernel_allowlist import dotted_name, module_bindings
from grader.core.loading import read_source
from grader.core.size_slips import quoted
from grader.core.source_slips import called as _called
from grader.core.source_slips import code as _code
from grader.core.source_slips import finding as _finding
from grader.core.source_slips import parameters as _parameters
from grader.core.source_slips import slips

# The mistakes the kit's rules refuse by their nature, so that a refusal they explain is a
# kernel that cannot build, not a capability asked for: arrangement() returning other than
# three tensors in a tuple (the launcher the generated kernel's check expects). Any other
# finding beside a refusal explains nothing of it: torch in application() is also how a
# cheat reaches cuBLAS. A name the generated kernel does not have is explained only name by
# name (``explain_refusal``).
EXPLAINS_REFUSAL = {"arrangement_return"}


def inspect_file(path):
    """``inspect_source`` of the file at ``path``; [] when it cannot be read."""
    try:
        return inspect_source(read_source(path))
    except (OSError, TypeError):
        return []


def inspect_source(source):
    """Findings ``{"mistake": key, "message": "line N: ..."}``, in line order."""
    return _read(source)[0]


def explain_refusal(source, unbound=()):
    """(``inspect_source(source)``, the finding that explains why the kit's rules refused
    the file's kernel, or None: then no mistake of the file explains it).

    ``unbound``: the names, where the generated kernel was refused for names bound nowhere
    alone (grader.core.generated_kernel.KernelRejected.unbound). Such a refusal is explained
    where a line of application() reads each of those names from outside it; the first
    such line is the explanation. Else a finding of EXPLAINS_REFUSAL explains it.
    """
    findings, outside = _read(source)
    if unbound and set(unbound) <= set(outside):
        return findings, min((outside[name] for name in unbound), key=lambda pair: pair[0])[1]
    explaining = [finding for finding in findings if finding["mistake"] in EXPLAINS_REFUSAL]
    return findings, explaining[0] if explaining else None


def _read(source):
    """(the findings in line order, {name: (line, finding)} for each name application()
    reads from outside it, its first line's)."""
    try:
        tree = nesting.parse(source)
        functions = {node.name: node for node in tree.body if isinstance(node, ast.FunctionDef)}
        findings, outside = [], {}
        if "arrangement" in functions:
            findings += _arrangement_return(functions["arrangement"])
        findings += slips(functions)
        if "application" in functions:
            torch_names = _torch_names(tree)
            findings += _application(functions["application"], torch_names)
            for names, pair in _from_outside(tree, functions, torch_names):
                findings.append(pair)
                outside.update((name, pair) for name in names if name not in outside)
    except (SyntaxError, ValueError):  # nesting.TooDeep too
        return [], {}  # loading the file says why it cannot run
    return [finding for _, finding in sorted(findings, key=lambda pair: pair[0])], outside


def _names(names):
    return ", ".join(f"`{name}`" for name in names)


def _torch_names(tree):
    """``torch`` and what the file imports it as: the batch's rebuilt file drops the import."""
    names = {"torch"}
    for node in tree.body:
        if isinstance(node, ast.Import):
            names |= {
                alias.asname or alias.name.split(".")[0]
                for alias in node.names
                if alias.name.split(".")[0] == "torch"
            }
    return names


# -- arrangement()


def _arrangement_return(function):
    """A return that is not the tuple (lhs's, rhs's, output's) arranged tensor, in that
    order: NineToothed pairs them with application()'s parameters by position."""
    parameters = _parameters(function)[:3]
    findings = []
    nodes = list(ast.walk(function))
    if not any(
        isinstance(node, ast.Return) and node.value is not None for node in nodes
    ) and not any(isinstance(node, ast.Raise) for node in nodes):  # a placeholder's
        return [_finding("arrangement_return", function, "returns_nothing")]  # raise says why
    for node in ast.walk(function):
        if not isinstance(node, ast.Return) or node.value is None:
            continue
        value = node.value
        if isinstance(value, (ast.List, ast.Dict, ast.Set)):
            kind = type(value).__name__.lower()
            findings.append(
                _finding(
                    "arrangement_return", node, "returns_container", kind=kind, code=_code(value)
                )
            )
        elif isinstance(value, ast.Tuple) and len(value.elts) != 3:
            findings.append(
                _finding(
                    "arrangement_return",
                    node,
                    "returns_count",
                    count=len(value.elts),
                    code=_code(value),
                )
            )
        elif isinstance(value, ast.Tuple) and len(parameters) == 3:
            sources = [_source_parameter(function, element, parameters) for element in value.elts]
            if sorted(sources, key=str) == sorted(parameters) and sources != parameters:
                findings.append(
                    _finding(
                        "arrangement_return",
                        node,
                        "returns_order",
                        got=_names(sources),
                        parameters=_names(parameters),
                    )
                )
    return findings


def _source_parameter(function, node, parameters, depth=0):
    """The parameter an arranged tensor is made from (``lhs`` for
    ``lhs.tile(...).tile(...)``, or a name assigned from it earlier), else None."""
    if depth > 50:
        return None
    if isinstance(node, ast.Name):
        if node.id in parameters and not _assignments_before(function, node):
            return node.id
        earlier = _assignments_before(function, node)
        return _source_parameter(function, earlier[-1], parameters, depth + 1) if earlier else None
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        return _source_parameter(function, node.func.value, parameters, depth + 1)
    if isinstance(node, (ast.Attribute, ast.Subscript)):
        return _source_parameter(function, node.value, parameters, depth + 1)
    return None


def _assignments_before(function, name):
    """The values assigned to ``name``'s variable on lines before it, in line order."""
    values = []
    for node in ast.walk(function):
        if isinstance(node, ast.Assign) and node.lineno < name.lineno:
            if any(
                isinstance(target, ast.Name) and target.id == name.id for target in node.targets
            ):
                values.append((node.lineno, node.value))
    return [value for _, value in sorted(values, key=lambda pair: pair[0])]


# -- application()


def _application(function, torch_names):
    parameters = _parameters(function)
    if len(parameters) != 3:
        return []
    lhs, rhs, output = parameters
    findings = _output_written(function, output)
    findings += _loops(function, (lhs, rhs))
    for node in ast.walk(function):
        if (
            isinstance(node, ast.Call)
            and _called(node) == "zeros"
            and (dotted_name(node.func) or "").split(".")[0] not in torch_names
        ):
            findings += _accumulator(node, lhs, rhs)
        elif isinstance(node, (ast.BinOp, ast.AugAssign)) and isinstance(node.op, ast.MatMult):
            findings.append(_finding("matmul_operator", node, "matmul_operator", code=_code(node)))
        elif isinstance(node, ast.Call) and (
            dotted_name(node.func) == "print" or _called(node) == "device_print"
        ):
            findings.append(_finding("debug_print", node, "prints_in_kernel", code=_code(node)))
        elif (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in torch_names
        ):
            findings.append(_finding("torch_in_kernel", node, "torch_in_kernel", code=_code(node)))
    return findings


def _from_outside(tree, functions, torch_names):
    """application() and the helpers it calls (NineToothed inlines them) read a name of
    none of theirs: a global of the file, or a name bound nowhere. The kernel NineToothed
    generates has only its parameters and its own names, so it cannot build. Returns
    [(names, (line, finding))], one per line of a function that reads such names."""
    module, modules = module_bindings(tree)
    known = set(dir(builtins)) | modules | torch_names | set(functions)
    found, wanted, done = [], ["application"], set()
    while wanted:
        name = wanted.pop(0)
        if name in done or name not in functions:
            continue
        done.add(name)
        function = functions[name]
        body = [node for statement in function.body for node in ast.walk(statement)]
        own = {node.arg for node in ast.walk(function) if isinstance(node, ast.arg)} | {
            node.id
            for node in body
            if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load)
        }
        calls = [
            node for node in body if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
        ]
        wanted += [call.func.id for call in calls]
        for call in calls:
            names = [
                name
                for name in _left_to_default(call, functions.get(call.func.id))
                if name not in own | known
            ]  # else the inlined name means another
            if names:
                found.append(
                    (
                        names,
                        _finding(
                            "global_in_application",
                            call,
                            "helper_default",
                            helper=call.func.id,
                            names=_names(names),
                        ),
                    )
                )
        lines = {}  # line -> (its first such name's node, the names in order)
        for node in sorted(
            (
                node
                for node in body
                if isinstance(node, ast.Name)
                and isinstance(node.ctx, ast.Load)
                and node.id not in own | known
            ),
            key=lambda node: (node.lineno, node.col_offset),
        ):
            names = lines.setdefault(node.lineno, (node, []))[1]
            names += [] if node.id in names else [node.id]
        for first, names in lines.values():
            template = "outside_global" if set(names) <= module else "outside_undefined"
            fields = {"names": ", ".join(f"`{name}`" for name in names)}
            if name != "application":
                template, fields["helper"] = f"helper_{template}", name
            found.append((names, _finding("global_in_application", first, template, **fields)))
    return found


def _left_to_default(call, helper):
    """The parameters of ``helper`` that ``call`` leaves to their defaults and its body
    reads: NineToothed inlines the helper without them (a bare name in the kernel)."""
    if (
        helper is None
        or any(isinstance(argument, ast.Starred) for argument in call.args)
        or any(keyword.arg is None for keyword in call.keywords)
    ):
        return []
    arguments = helper.args
    positional = arguments.posonlyargs + arguments.args
    defaulted = positional[len(positional) - len(arguments.defaults) :] + [
        parameter
        for parameter, default in zip(arguments.kwonlyargs, arguments.kw_defaults)
        if default is not None
    ]
    given = {parameter.arg for parameter in positional[: len(call.args)]} | {
        keyword.arg for keyword in call.keywords
    }
    read = {
        node.id
        for statement in helper.body
        for node in ast.walk(statement)
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)
    }
    return [
        parameter.arg
        for parameter in defaulted
        if parameter.arg not in given and parameter.arg in read
    ]


def _output_written(function, output):
    returns = [
        node
        for node in ast.walk(function)
        if isinstance(node, ast.Return) and node.value is not None
    ]
    if returns:
        value = quoted(ast.unparse(returns[0].value))
        return [
            _finding("unwritten_output", returns[0], "returns_result", output=output, value=value)
        ]
    assigned = any(
        isinstance(node, (ast.Name, ast.Subscript)) and _stored_name(node) == output
        for node in ast.walk(function)
    )  # a slice store is named on its own line
    if assigned or any(isinstance(node, ast.Raise) for node in ast.walk(function)):
        return []  # a placeholder's raise says itself what is missing
    return [_finding("unwritten_output", function, "never_assigns", output=output)]


def _stored_name(node):
    """The name a store target writes to: ``output`` for ``output`` and ``output[:, :]``."""
    if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store):
        while isinstance(node, ast.Subscript):
            node = node.value
        return node.id if isinstance(node, ast.Name) else None
    return node.id if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) else None


def _accumulator(call, lhs, rhs):
    """``ntl.zeros`` with no dtype or another than float32, or not of the output's shape."""
    findings = []
    dtype = next(
        (keyword.value for keyword in call.keywords if keyword.arg == "dtype"),
        call.args[1] if len(call.args) > 1 else None,
    )
    if dtype is None:
        findings.append(
            _finding("accumulator_dtype", call, "zeros_without_dtype", code=_code(call))
        )
    elif (dotted_name(dtype) or "").rpartition(".")[2] != "float32":
        findings.append(_finding("accumulator_dtype", call, "zeros_of_dtype", dtype=_code(dtype)))
    shape = next(
        (keyword.value for keyword in call.keywords if keyword.arg == "shape"),
        call.args[0] if call.args else None,
    )
    if (
        isinstance(shape, ast.Attribute)
        and shape.attr == "shape"
        and isinstance(shape.value, ast.Name)
        and shape.value.id in (lhs, rhs)
    ):
        findings.append(
            _finding(
                "accumulator_shape",
                call,
                "accumulator_of_operand",
                shape=_code(shape),
                operand=shape.value.id,
            )
        )
    elif isinstance(shape, (ast.Tuple, ast.List)) and any(
        isinstance(node, ast.Name) and node.id.upper() == "BLOCK_SIZE_K" for node in ast.walk(shape)
    ):
        findings.append(
            _finding("accumulator_shape", call, "accumulator_block_k", shape=_code(shape))
        )
    return findings


def _loops(function, operands):
    """ntl.dot given other than the k-th tile of each operand (the k of a ``for``, or the
    counter of a ``while``), and loops over the K tiles bounded by another dimension than the
    sequence's own."""
    findings = []

    def visit(node, loop_names):
        if isinstance(node, ast.For):
            findings.extend(_loop_bound(node, operands))
            names = {name.id for name in ast.walk(node.target) if isinstance(name, ast.Name)}
            loop_names = loop_names | names
        if isinstance(node, ast.While):  # its counter: read by its test, stepped in its body
            tested = {name.id for name in ast.walk(node.test) if isinstance(name, ast.Name)}
            stepped = {
                name.id
                for statement in node.body
                for name in ast.walk(statement)
                if isinstance(name, ast.Name) and isinstance(name.ctx, ast.Store)
            }
            loop_names = loop_names | (tested & stepped)
        if isinstance(node, ast.Call) and _called(node) == "dot":
            findings.extend(_dot_operands(node, operands, loop_names))
        for child in ast.iter_child_nodes(node):
            visit(child, loop_names)

    for statement in function.body:
        visit(statement, frozenset())
    return findings


def _dot_operands(call, operands, loop_names):
    roots = [
        argument.value.id
        if isinstance(argument, ast.Subscript) and isinstance(argument.value, ast.Name)
        else None
        for argument in call.args[:2]
    ]
    if len(roots) == 2 and roots[0] == roots[1] and roots[0] in operands:
        return [_finding("k_steps", call, "dot_same_operand", code=_code(call), operand=roots[0])]
    for argument in call.args[:2]:
        if isinstance(argument, ast.Name) and argument.id in operands:
            return [
                _finding(
                    "k_steps", call, "dot_whole_sequence", code=_code(call), operand=argument.id
                )
            ]
        if (
            isinstance(argument, ast.Subscript)
            and isinstance(argument.value, ast.Name)
            and argument.value.id in operands
        ):
            used = {node.id for node in ast.walk(argument.slice) if isinstance(node, ast.Name)}
            if not loop_names:
                return [_finding("k_steps", call, "dot_outside_loop", code=_code(call))]
            if not used & loop_names:
                return [
                    _finding(
                        "k_steps", call, "dot_fixed_tile", code=_code(call), tile=_code(argument)
                    )
                ]
            indices = (
                argument.slice.elts if isinstance(argument.slice, ast.Tuple) else [argument.slice]
            )
            if not any(isinstance(index, ast.Name) and index.id in loop_names for index in indices):
                return [
                    _finding(
                        "k_steps", call, "dot_shifted_tile", code=_code(call), tile=_code(argument)
                    )
                ]
    return []


def _loop_bound(loop, operands):
    """``for k in range(lhs.shape[1])`` while the body takes ``lhs[k]``: lhs is the 1-D
    sequence of K tiles, whose length is lhs.shape[0]."""
    call = loop.iter
    if not (isinstance(call, ast.Call) and dotted_name(call.func) == "range" and call.args):
        return []
    bound = call.args[-1] if len(call.args) == 1 else call.args[1]
    if not (
        isinstance(bound, ast.Subscript)
        and isinstance(bound.value, ast.Attribute)
        and bound.value.attr == "shape"
        and isinstance(bound.value.value, ast.Name)
        and bound.value.value.id in operands
        and isinstance(bound.slice, ast.Constant)
        and bound.slice.value != 0
    ):
        return []
    operand = bound.value.value.id
    single = any(
        isinstance(node, ast.Subscript)
        and isinstance(node.value, ast.Name)
        and node.value.id == operand
        and not isinstance(node.slice, ast.Tuple)
        for statement in loop.body
        for node in ast.walk(statement)
    )
    if not single:
        return []  # indexed around a kept length-1 dimension, as lhs[0, k]: that can be right
    return [_finding("k_loop_bound", loop, "k_loop_bound", code=_code(call), operand=operand)]
