"""The check that decides (grader.core.generated_kernel), tried on what finally runs.

Three layers of proof:

* every correct style the kit knows generates a kernel the check passes, and each attack of
  grader.tests.generated_attacks passes the source check yet is refused once NineToothed
  has generated its kernel (on today's code before this check, each of them ran);
* a mutation test of the generated file itself: the reference's generated kernel, edited to
  hold each construct the check must refuse, in the form Triton and the interpreter read;
* the batch grader, sandboxed and not, flags every attack; the pytest grader says the batch
  would; the compile gate's child compiles only the file the parent checked, under the guard.
"""

import json
import os
import pathlib
import subprocess
import sys

import pytest

from grader.batch.record import Record
from grader.core import gpu_compile, kernel_source
from grader.core.generated_kernel import KernelRejected, Unbound, check, interpreter_globals
from grader.tests import build_variants
from grader.tests.batch_helpers import (
    NEEDS_INTERPRETER,
    ROOT,
    environment,
    gradebook,
    grader_command,
    run_grader,
    run_pytest,
    small_cases,
)
from grader.tests.generated_attacks import ATTACKS
from grader.tests.source_edits import model_answer

pytestmark = NEEDS_INTERPRETER


def _module(source, tmp_path, name):
    """The rebuilt kernel file (what the batch grader imports) as a module."""
    import importlib.util

    path = tmp_path / f"{name}.py"
    path.write_text(kernel_source.extract(source).text, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(f"generated_test_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _make(module):
    import ninetoothed
    from ninetoothed import Tensor

    from grader.core import backend

    backend.activate()
    return ninetoothed.make(
        module.arrangement, module.application, (Tensor(2), Tensor(2), Tensor(2))
    )


@pytest.mark.parametrize("name", sorted(ATTACKS))
def test_each_attack_passes_the_source_check_and_its_generated_kernel_is_refused(name, tmp_path):
    variant, expected = ATTACKS[name]
    source = variant.source(name)
    assert kernel_source.extract(source).ok, "the attack no longer needs the generated check"
    with pytest.raises(KernelRejected) as rejection:
        _make(_module(source, tmp_path, name))
    assert expected in str(rejection.value), str(rejection.value)


@pytest.mark.parametrize("name", sorted(build_variants.CORRECT))
def test_every_correct_style_generates_a_kernel_the_check_passes(name, tmp_path):
    kernel = _make(_module(build_variants.CORRECT[name].source(name), tmp_path, name))
    assert check(pathlib.Path(kernel._source).read_text(encoding="utf-8")) == ()


def test_the_autotuned_reference_generates_a_kernel_the_check_passes(tmp_path, monkeypatch):
    from grader.core.loading import import_file

    monkeypatch.setenv("NINETOOTHED_AUTOTUNE", "1")  # the rebuild decides it for an empty one
    kernel = _make(import_file(ROOT / "solutions" / "ninetoothed_gemm.py"))
    source = pathlib.Path(kernel._source).read_text(encoding="utf-8")
    assert "triton.autotune(" in source and check(source) == ()


# --------------------------------------------------------------------------- mutations


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    """The model answer's generated kernel file, as NineToothed wrote it, its three tensors
    renamed ninetoothed_tensor_0, _1 and _2 (NineToothed numbers them per process)."""
    import ast
    import re

    module = _module(model_answer(), tmp_path_factory.mktemp("reference"), "reference")
    source = pathlib.Path(_make(module)._source).read_text(encoding="utf-8")
    launcher = next(
        node
        for node in ast.parse(source).body
        if isinstance(node, ast.FunctionDef) and node.name.startswith("launch_")
    )
    names = [argument.arg for argument in launcher.args.args]
    for index, name in enumerate(names):
        source = re.sub(rf"{name}(?!\d)", f"TENSOR{index}", source)
    return re.sub(r"TENSOR(\d)", r"ninetoothed_tensor_\1", source)


ACCUMULATOR = "    accumulator = triton.language.zeros("
OUTPUT_POINTER = "ninetoothed_ninetoothed_tensor_2_pointer"
STORE = "    triton.language.store("
LAUNCH = "def launch_application("
# (name, anchor, replacement, a fragment of the violation). The anchor must occur in the
# generated file; its first occurrence becomes the replacement.
MUTATIONS = [
    (
        "getattr_call",
        ACCUMULATOR,
        "    x = getattr(ninetoothed_pid, 'real')\n" + ACCUMULATOR,
        "calls `getattr`",
    ),
    ("builtins_name", ACCUMULATOR, "    x = __builtins__\n" + ACCUMULATOR, "`__builtins__`"),
    (
        "dunder_attribute",
        ACCUMULATOR,
        "    x = ninetoothed_pid.__class__\n" + ACCUMULATOR,
        "`.__class__`",
    ),
    (
        "other_triton_module",
        ACCUMULATOR,
        "    x = triton.runtime.driver\n" + ACCUMULATOR,
        "`triton.runtime.driver`",
    ),
    (
        "libdevice",
        ACCUMULATOR,
        "    x = triton.language.extra.libdevice.pow(1.0, 2.0)\n" + ACCUMULATOR,
        "`triton.language.extra.libdevice.pow`",
    ),
    (
        "inline_asm",
        ACCUMULATOR,
        "    x = triton.language.inline_asm_elementwise(1, 2, 3, 4, 5, 6)\n" + ACCUMULATOR,
        "`triton.language.inline_asm_elementwise`",
    ),
    (
        "atomic",
        ACCUMULATOR,
        "    x = triton.language.atomic_add(ninetoothed_tensor_2_pointers, 1)\n" + ACCUMULATOR,
        "`triton.language.atomic_add`",
    ),
    (
        "assert_fstring",
        ACCUMULATOR,
        "    assert ninetoothed_pid >= 0, f'{len(\"abc\")}'\n" + ACCUMULATOR,
        "assert message",
    ),
    (
        "assert_name_message",
        ACCUMULATOR,
        "    assert ninetoothed_pid >= 0, ninetoothed_pid\n" + ACCUMULATOR,
        "assert message",
    ),
    ("local_named_builtin", ACCUMULATOR, "    hasattr = 1\n" + ACCUMULATOR, "binds `hasattr`"),
    (
        "dead_branch_builtin",
        ACCUMULATOR,
        "    if False:\n        getattr = max\n    x = getattr(ninetoothed_pid, 1)\n" + ACCUMULATOR,
        "binds `getattr`",
    ),
    ("local_named_range", ACCUMULATOR, "    range = 2\n" + ACCUMULATOR, "binds `range`"),
    (
        "local_named_like_the_kernel",
        ACCUMULATOR,
        "    application = 1\n" + ACCUMULATOR,
        "binds `application`",
    ),
    ("triton_as_value", ACCUMULATOR, "    x = triton\n" + ACCUMULATOR, "uses `triton`"),
    ("string_constant", ACCUMULATOR, "    x = 'os'\n" + ACCUMULATOR, "the constant 'os'"),
    ("bytes_constant", ACCUMULATOR, "    x = b'os'\n" + ACCUMULATOR, "the constant b'os'"),
    (
        "print_fstring",
        ACCUMULATOR,
        "    print(f'{ninetoothed_pid}')\n" + ACCUMULATOR,
        "`JoinedStr`",
    ),
    (
        "capability_in_a_call_bound_nowhere",
        ACCUMULATOR,
        "    x = helper(getattr(ninetoothed_pid, 1))\n" + ACCUMULATOR,
        "calls `getattr`",
    ),
    (
        "lambda_in_kernel",
        ACCUMULATOR,
        "    x = (lambda: 1)()\n" + ACCUMULATOR,
        "calls something other than",
    ),
    ("comprehension", ACCUMULATOR, "    x = [i for i in range(2)]\n" + ACCUMULATOR, "`ListComp`"),
    ("walrus", ACCUMULATOR, "    x = (y := 1)\n" + ACCUMULATOR, "`NamedExpr`"),
    ("dict", ACCUMULATOR, "    x = {1: 2}\n" + ACCUMULATOR, "`Dict`"),
    ("starred_call", ACCUMULATOR, "    x = max(*(1, 2))\n" + ACCUMULATOR, "a starred argument"),
    ("double_star", ACCUMULATOR, "    x = max(1, **{})\n" + ACCUMULATOR, "`**`"),
    (
        "underscore_keyword",
        ACCUMULATOR,
        "    x = triton.language.zeros((1,), dtype=triton.language.float32, _semantic=1)\n"
        + ACCUMULATOR,
        "underscored keyword",
    ),
    ("method_outside_the_list", ACCUMULATOR, "    x = (1, 2).index(2)\n" + ACCUMULATOR, "`.index`"),
    ("import_in_kernel", ACCUMULATOR, "    import os\n" + ACCUMULATOR, "`Import`"),
    ("with_statement", ACCUMULATOR, "    with x:\n        pass\n" + ACCUMULATOR, "`With`"),
    (
        "try_statement",
        ACCUMULATOR,
        "    try:\n        pass\n    except Exception:\n        pass\n" + ACCUMULATOR,
        "`Try`",
    ),
    ("global_statement", ACCUMULATOR, "    global x\n" + ACCUMULATOR, "`Global`"),
    ("delete", ACCUMULATOR, "    x = 1\n    del x\n" + ACCUMULATOR, "`Delete`"),
    ("nested_function", ACCUMULATOR, "    def f():\n        pass\n" + ACCUMULATOR, "`FunctionDef`"),
    ("annotated_assignment", ACCUMULATOR, "    x: int = 1\n" + ACCUMULATOR, "`AnnAssign`"),
    (
        "loop_over_a_tuple",
        ACCUMULATOR,
        "    for i in (1, 2):\n        pass\n" + ACCUMULATOR,
        "a loop over something other than range()",
    ),
    (
        "loop_else",
        ACCUMULATOR,
        "    for i in range(2):\n        pass\n    else:\n        pass\n" + ACCUMULATOR,
        "a loop with an `else`",
    ),
    (
        "attribute_assignment",
        ACCUMULATOR,
        "    ninetoothed_pid.x = 1\n" + ACCUMULATOR,
        "assigns to something other than a local name",
    ),
    (
        "raise_expression",
        ACCUMULATOR,
        "    raise ValueError(len('x'))\n" + ACCUMULATOR,
        "a raise of something other than",
    ),
    (
        "store_into_lhs",
        STORE,
        "    triton.language.store(ninetoothed_tensor_0_pointers, 0.0)\n" + STORE,
        "stores into an input",
    ),
    (
        "load_from_output",
        ACCUMULATOR,
        "    x = triton.language.load(ninetoothed_tensor_2_pointers)\n" + ACCUMULATOR,
        "reads the output",
    ),
    (
        "store_through_a_copied_pointer",
        STORE,
        "    x = ninetoothed_tensor_0_pointers\n    triton.language.store(x, 0.0)\n" + STORE,
        "uses the pointer",
    ),
    (
        "pointer_rebound",
        STORE,
        "    ninetoothed_tensor_2_pointers = ninetoothed_ninetoothed_tensor_0_pointer\n" + STORE,
        "binds the pointer name",
    ),
    (
        "store_to_two_tensors",
        STORE,
        "    triton.language.store(ninetoothed_tensor_2_pointers + "
        "ninetoothed_tensor_0_pointers, 0.0)\n" + STORE,
        "not one tensor's pointers",
    ),
    ("module_code", LAUNCH, "import os\n" + LAUNCH, "an import other than triton"),
    ("module_statement", LAUNCH, "x = print('loaded')\n" + LAUNCH, "NineToothed's autotuning"),
    (
        "second_jit_function",
        LAUNCH,
        "@triton.jit\ndef helper(x):\n    return x\n\n" + LAUNCH,
        "2 kernels",
    ),
    (
        "launcher_statement",
        "    application[",
        "    print('launch')\n    application[",
        "a launcher other than NineToothed's",
    ),
    (
        "launcher_grid_call",
        "(ninetoothed_tensor_0.size(0)",
        "(__import__('os').getpid() + ninetoothed_tensor_0.size(0)",
        "a launcher other than NineToothed's",
    ),
    (
        "launcher_argument",
        "num_warps=",
        "extra=torch.mm, num_warps=",
        "a launcher other than NineToothed's",
    ),
    (
        "annotation",
        "ninetoothed_ninetoothed_tensor_0_pointer,",
        "ninetoothed_ninetoothed_tensor_0_pointer: print('x'),",
        "annotated with something other than",
    ),
    ("decorator", "@triton.jit", "@triton.jit(debug=True)", "not a plain @triton.jit"),
    # Triton binds the launch's arguments by position: the output given as lhs's pointer is
    # read through lhs's loads, a tensor given as a size is a pointer the kernel may compute
    # with, and an annotated (constexpr) pointer parameter gets the interpreter's host tensor.
    (
        "output_launched_as_lhs",
        ")](ninetoothed_tensor_0, ",
        ")](ninetoothed_tensor_2, ",
        "gives a tensor to another parameter",
    ),
    (
        "tensor_launched_as_a_size",
        "ninetoothed_tensor_0, ninetoothed_tensor_0.size(0),",
        "ninetoothed_tensor_0, ninetoothed_tensor_2,",
        "gives a tensor to another parameter",
    ),
    (
        "pointer_parameter_annotated",
        "ninetoothed_ninetoothed_tensor_0_pointer,",
        "ninetoothed_ninetoothed_tensor_0_pointer: triton.language.constexpr,",
        "gives a tensor to another parameter",
    ),
    # A pointer's element type is read only as NineToothed writes a tile's dtype.
    ("pointer_type", ACCUMULATOR, f"    x = {OUTPUT_POINTER}.type\n" + ACCUMULATOR, "`.type`"),
    (
        "element_type_attribute",
        ACCUMULATOR,
        f"    x = {OUTPUT_POINTER}.type.element_ty.name\n" + ACCUMULATOR,
        "`.name`",
    ),
    (
        "element_type_called",
        ACCUMULATOR,
        f"    x = {OUTPUT_POINTER}.type.element_ty(1)\n" + ACCUMULATOR,
        "calls a pointer's element",
    ),
    (
        "element_type_of_the_pointer_block",
        ACCUMULATOR,
        "    x = ninetoothed_tensor_2_pointers.type.element_ty\n" + ACCUMULATOR,
        "`.element_ty`",
    ),
    (
        "element_type_of_a_local",
        ACCUMULATOR,
        "    x = ninetoothed_pid.type.element_ty\n" + ACCUMULATOR,
        "`.element_ty`",
    ),
    (
        "element_type_called_through_a_local",
        ACCUMULATOR,
        f"    x = {OUTPUT_POINTER}.type.element_ty\n    y = x(1)\n" + ACCUMULATOR,
        "calls `x`",
    ),
    (
        "element_type_called_through_a_subscript",
        ACCUMULATOR,
        f"    x = ({OUTPUT_POINTER}.type.element_ty,)[0](1)\n" + ACCUMULATOR,
        "calls something other than a function by its name",
    ),
    (
        "element_type_called_inside_a_call_bound_nowhere",
        ACCUMULATOR,
        f"    x = helper({OUTPUT_POINTER}.type.element_ty(1))\n" + ACCUMULATOR,
        "calls a pointer's element",
    ),
    (
        "element_type_in_an_address",
        ACCUMULATOR,
        "    x = triton.language.load("
        f"ninetoothed_tensor_0_pointers + {OUTPUT_POINTER}.type.element_ty)\n" + ACCUMULATOR,
        "not one of NineToothed's tile pointers",
    ),
    (
        "element_type_in_an_assert_message",
        ACCUMULATOR,
        f"    assert ninetoothed_pid >= 0, {OUTPUT_POINTER}.type.element_ty\n" + ACCUMULATOR,
        "assert message",
    ),
    (
        "pointer_type_scalar",
        ACCUMULATOR,
        f"    x = {OUTPUT_POINTER}.type.scalar\n" + ACCUMULATOR,
        "`.scalar`",
    ),
    # A pointer parameter is read by its prologue line alone: as a value, its address (an
    # integer with .to(int64)) offsets one tensor's pointers onto another's.
    (
        "pointer_parameter_aliased",
        ACCUMULATOR,
        f"    x = {OUTPUT_POINTER}\n" + ACCUMULATOR,
        f"uses the pointer `{OUTPUT_POINTER}`",
    ),
    (
        "pointer_parameter_aliased_beside_its_prologue",
        "    ninetoothed_tensor_2_pointers = ",
        "    x = ninetoothed_tensor_2_pointers = ",
        f"uses the pointer `{OUTPUT_POINTER}`",
    ),
    (
        "store_into_lhs_through_addresses",
        STORE,
        f"    c = {OUTPUT_POINTER}\n    a = ninetoothed_ninetoothed_tensor_0_pointer\n"
        "    triton.language.store(ninetoothed_tensor_2_pointers + (a.to(triton.language.int64) "
        "- c.to(triton.language.int64)) // 2, 0.0)\n" + STORE,
        f"uses the pointer `{OUTPUT_POINTER}`",
    ),
    (
        "pointer_parameter_without_its_prologue",
        "    ninetoothed_tensor_1_pointers = ",
        "    x = ",
        "uses the pointer `ninetoothed_ninetoothed_tensor_1_pointer`",
    ),
]


@pytest.mark.parametrize(
    "name, anchor, replacement, expected", MUTATIONS, ids=[mutation[0] for mutation in MUTATIONS]
)
def test_each_construct_is_refused_in_the_generated_file(
    generated, name, anchor, replacement, expected
):
    assert check(generated) == ()
    assert anchor in generated, f"{name}: NineToothed no longer writes {anchor!r}"
    found = check(generated.replace(anchor, replacement, 1))
    assert any(expected in str(violation) for violation in found), (name, found)


@pytest.mark.parametrize(
    "name, anchor, replacement, expected", MUTATIONS, ids=[mutation[0] for mutation in MUTATIONS]
)
def test_a_name_bound_nowhere_beside_a_construct_leaves_the_refusal_about_it(
    generated, name, anchor, replacement, expected
):
    """A global the kernel cannot have, added to a file the check refuses for a construct,
    changes nothing: the refusal is about the construct still."""
    source = generated.replace(anchor, replacement, 1).replace(
        ACCUMULATOR, "    x = BLOCK_SIZE_M\n" + ACCUMULATOR, 1
    )
    assert KernelRejected(check(source), source).unbound == (), name


# A name nothing binds is told apart (generated_kernel.Unbound): refused, and where it is
# all the refusal is about, a kernel that cannot build (NameError), not a capability.
BOUND_NOWHERE = [
    (
        "global_block_sizes",
        "    x = BLOCK_SIZE_M * BLOCK_SIZE_N\n",
        ("BLOCK_SIZE_M", "BLOCK_SIZE_N"),
    ),
    ("global_asked_for_a_tile_attribute", "    x = SIZES.shape\n", ("SIZES",)),
    ("call_of_a_name", "    x = helper(ninetoothed_pid)\n", ("helper",)),
    ("torch", "    x = torch\n", ("torch",)),  # the source says why (torch_in_kernel): flagged
]


@pytest.mark.parametrize(
    "name, line, names", BOUND_NOWHERE, ids=[case[0] for case in BOUND_NOWHERE]
)
def test_a_name_bound_nowhere_is_refused_as_such(generated, name, line, names):
    source = generated.replace(ACCUMULATOR, line + ACCUMULATOR, 1)
    found = check(source)
    assert found and all(isinstance(violation, Unbound) for violation in found), found
    assert KernelRejected(found, source).unbound == names
    assert "nothing binds" in str(found[0])


USES_SIZE = "    x = SIZE\n" + ACCUMULATOR
# Where a run could resolve the name after all: something of the file binds it, in any scope
# or branch, or a namespace the kernel falls back on holds it. None is bound nowhere.
# (name, [(anchor, replacement), ...])
COULD_RESOLVE = [
    ("python_builtin", [(ACCUMULATOR, "    x = open\n" + ACCUMULATOR)]),
    ("module_attribute", [(ACCUMULATOR, "    x = __name__\n" + ACCUMULATOR)]),
    ("builtins_of_the_module", [(ACCUMULATOR, "    x = __builtins__\n" + ACCUMULATOR)]),
    # Triton's interpreter copies its own globals into each interpreted kernel's module.
    ("interpreter_numpy", [(ACCUMULATOR, "    x = np\n" + ACCUMULATOR)]),
    ("interpreter_language", [(ACCUMULATOR, "    x = tl\n" + ACCUMULATOR)]),
    ("interpreter_math", [(ACCUMULATOR, "    x = math\n" + ACCUMULATOR)]),
    ("the_kernel", [(ACCUMULATOR, "    x = application\n" + ACCUMULATOR)]),
    ("the_launcher", [(ACCUMULATOR, "    x = launch_application\n" + ACCUMULATOR)]),
    ("triton", [(ACCUMULATOR, "    x = triton\n" + ACCUMULATOR)]),
    ("launcher_parameter", [(ACCUMULATOR, "    x = ninetoothed_tensor_0\n" + ACCUMULATOR)]),
    ("grid_parameter", [(ACCUMULATOR, "    x = meta\n" + ACCUMULATOR)]),
    ("dead_branch", [(ACCUMULATOR, "    if False:\n        SIZE = 1\n" + USES_SIZE)]),
    ("global_statement", [(ACCUMULATOR, "    global SIZE\n" + USES_SIZE)]),
    ("nonlocal_statement", [(ACCUMULATOR, "    nonlocal SIZE\n" + USES_SIZE)]),
    (
        "comprehension_variable",
        [(ACCUMULATOR, "    y = [SIZE for SIZE in range(2)]\n" + USES_SIZE)],
    ),
    ("walrus", [(ACCUMULATOR, "    y = (SIZE := 1)\n" + USES_SIZE)]),
    ("delete", [(ACCUMULATOR, "    del SIZE\n" + USES_SIZE)]),
    ("import_in_kernel", [(ACCUMULATOR, "    import SIZE\n" + USES_SIZE)]),
    ("import_as_in_kernel", [(ACCUMULATOR, "    import os.path as SIZE\n" + USES_SIZE)]),
    (
        "except_as",
        [
            (
                ACCUMULATOR,
                "    try:\n        pass\n    except ValueError as SIZE:\n"
                "        pass\n" + USES_SIZE,
            )
        ],
    ),
    ("with_as", [(ACCUMULATOR, "    with ninetoothed_pid as SIZE:\n        pass\n" + USES_SIZE)]),
    ("nested_function", [(ACCUMULATOR, "    def SIZE():\n        pass\n" + USES_SIZE)]),
    ("nested_class", [(ACCUMULATOR, "    class SIZE:\n        pass\n" + USES_SIZE)]),
    ("lambda_parameter", [(ACCUMULATOR, "    f = (lambda SIZE: 1)\n" + USES_SIZE)]),
    (
        "match_capture",
        [(ACCUMULATOR, "    match 1:\n        case SIZE:\n            pass\n" + USES_SIZE)],
    ),
    (
        "match_rest",
        [(ACCUMULATOR, "    match 1:\n        case {**SIZE}:\n            pass\n" + USES_SIZE)],
    ),
    ("module_assignment", [(LAUNCH, "SIZE = 1\n" + LAUNCH), (ACCUMULATOR, USES_SIZE)]),
    ("module_function", [(LAUNCH, "def SIZE():\n    pass\n\n" + LAUNCH), (ACCUMULATOR, USES_SIZE)]),
    ("module_import", [(LAUNCH, "import SIZE\n" + LAUNCH), (ACCUMULATOR, USES_SIZE)]),
    ("star_import", [(LAUNCH, "from os import *\n" + LAUNCH), (ACCUMULATOR, USES_SIZE)]),
]


@pytest.mark.parametrize("name, edits", COULD_RESOLVE, ids=[case[0] for case in COULD_RESOLVE])
def test_a_name_a_run_could_resolve_is_never_bound_nowhere(generated, name, edits):
    source = generated
    for anchor, replacement in edits:
        assert anchor in source, f"{name}: NineToothed no longer writes {anchor!r}"
        source = source.replace(anchor, replacement, 1)
    found = check(source)
    assert "does not parse" not in str(found), found
    assert not [violation for violation in found if isinstance(violation, Unbound)], found


def test_a_builtin_added_before_the_check_is_not_bound_nowhere(generated, monkeypatch):
    """Code that ran before the check (a student's module, at import) may have added a
    builtin, which the interpreter would then find."""
    import builtins

    monkeypatch.setattr(builtins, "SIZE", 64, raising=False)
    found = check(generated.replace(ACCUMULATOR, USES_SIZE, 1))
    assert found and not [violation for violation in found if isinstance(violation, Unbound)]


def test_the_interpreter_globals_read_from_its_file_are_those_it_copies():
    from triton.runtime import interpreter

    assert interpreter_globals() == {
        name for name in vars(interpreter) if not name.startswith("__")
    }


def test_the_check_binds_nothing_new_in_the_stack_a_gpu_worker_compares(generated, tmp_path):
    """A worker on a GPU (no interpreter) compares Triton's modules before and after the
    build (grader.core.build_guard.changed): the check must leave them as they were."""
    path = tmp_path / "kernel.py"
    path.write_text(
        generated.replace(ACCUMULATOR, "    x = BLOCK_SIZE_M\n" + ACCUMULATOR, 1), encoding="utf-8"
    )
    script = (
        "import ninetoothed, triton\n"
        "from grader.core import build_guard, generated_kernel\n"
        "before = build_guard.snapshot()\n"
        f"assert generated_kernel.check(open({str(path)!r}).read())\n"
        "print(build_guard.changed(before))\n"
    )
    environment = {name: value for name, value in os.environ.items() if name != "TRITON_INTERPRET"}
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=300,
        env={**environment, "PYTHONPATH": str(ROOT)},
    )
    assert done.stdout.strip().splitlines()[-1:] == ["[]"], done.stdout + done.stderr[-3000:]


def test_a_local_may_take_a_builtin_name_triton_does_not_resolve(generated):
    """``sum`` or ``input`` as a local name is a student's choice, not a trick: Triton finds
    no such builtin, so no branch it drops could make the name mean one."""
    assert (
        check(
            generated.replace(ACCUMULATOR, "    input = 1\n    sum = input + 1\n" + ACCUMULATOR, 1)
        )
        == ()
    )


@pytest.mark.parametrize("name", ["min", "range", "ValueError"])
def test_a_function_of_the_file_may_not_take_a_builtin_the_kernel_uses(generated, name):
    """Triton and the interpreter look a kernel's ``min(...)`` up among the file's names
    first: a kernel named min would call itself there."""
    found = check(generated.replace("application", name))
    assert any(f"named `{name}`" in str(violation) for violation in found), found


def test_a_file_that_does_not_parse_is_refused():
    assert "does not parse" in str(check("def application(:\n")[0])


# --------------------------------------------------------------------------- the compile gate


def _compile_child(path, digest):
    done = subprocess.run(
        [sys.executable, "-m", "grader.core.gpu_compile", str(path), digest, "sm_90"],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    return gpu_compile.Build.from_fields(json.loads(done.stdout.strip().splitlines()[-1]))


def test_the_compile_child_refuses_a_file_changed_after_its_check(generated, tmp_path):
    import hashlib

    path = tmp_path / "kernel.py"
    path.write_text(generated, encoding="utf-8")
    digest = hashlib.sha256(generated.encode()).hexdigest()
    path.write_text(generated.replace("num_warps=8", "num_warps=4"), encoding="utf-8")
    build = _compile_child(path, digest)
    assert not build.ok and "changed after it was checked" in build.refused


def test_the_compile_child_refuses_a_file_the_check_refuses(generated, tmp_path):
    import hashlib

    source = generated.replace(
        ACCUMULATOR, "    x = getattr(ninetoothed_pid, 1)\n" + ACCUMULATOR, 1
    )
    path = tmp_path / "kernel.py"
    path.write_text(source, encoding="utf-8")
    build = _compile_child(path, hashlib.sha256(source.encode()).hexdigest())
    assert not build.ok and "calls `getattr`" in build.refused


def test_the_compile_child_runs_under_the_build_guard(tmp_path):
    """What the compile does after the guard is up ends it with a refusal on stdout."""
    kernel = tmp_path / "kernel.py"
    kernel.write_text("\n", encoding="utf-8")
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from grader.core import gpu_compile; "
            f"gpu_compile._guard({str(kernel)!r}); open('/etc/hostname').read(); "
            "print('still running')",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert "still running" not in done.stdout
    build = gpu_compile.Build.from_fields(json.loads(done.stdout.strip().splitlines()[-1]))
    assert "/etc/hostname" in build.refused


def test_the_compile_gate_compiles_only_what_this_process_checked(tmp_path):
    class Handle:  # a kernel handle whose file no check of this process passed
        _source = str(tmp_path / ("0" * 64 + ".py"))

    build = gpu_compile.check(Handle())
    assert not build.checked and "not checked in this process" in build.message


# --------------------------------------------------------------------------- the graders

ATTACKED = sorted(ATTACKS)
# Honest first-hour mistakes the rules refuse too (the source allowlist or the generated
# kernel's check), each explained by a line of the file: failed and named, not flagged.
# torch inside application() is also how a cheat reaches cuBLAS: it stays flagged, named.
REFUSED_MISTAKES = {
    "accumulator_with_block_k": "global_in_application",
    "accumulator_with_global_blocks": "global_in_application",
    "global_constant_in_application": "global_in_application",
    "helper_default_argument": "global_in_application",
    "dot_imported_by_name": "global_in_application",
    "returns_two": "arrangement_return",
    "returns_dict": "arrangement_return",
}
FLAGGED_MISTAKES = {"torch_matmul": "torch_in_kernel"}
GLOBAL_BLOCKS = "ntl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=ntl.float32)"


@pytest.mark.parametrize("name", ATTACKED)
def test_an_attack_beside_a_global_in_application_stays_flagged(name, tmp_path):
    """The global block sizes an honest accumulator may take, added to an attack: its kernel
    is refused for the attack still, and the verdict stays flagged."""
    from grader.batch.grade import verdict

    source = ATTACKS[name][0].source(name)
    combined = source.replace("ntl.zeros(output.shape, dtype=ntl.float32)", GLOBAL_BLOCKS)
    assert combined != source, "the attack no longer creates the reference's accumulator"
    with pytest.raises(KernelRejected) as rejection:
        _make(_module(combined, tmp_path, name))
    assert rejection.value.unbound == ()
    record = Record()
    assert (
        verdict.refusal(
            record,
            combined,
            "flagged message",
            ["refused"],
            rejection.value.unbound,
            rejection.value.unbuildable,
        )[0]
        == "flagged"
    )
    assert "global_in_application" in [finding["mistake"] for finding in record["findings"]]
    assert record["flags"] == ["refused"]


@pytest.mark.parametrize(
    "name", sorted(name for name, key in REFUSED_MISTAKES.items() if key == "global_in_application")
)
def test_a_global_in_application_is_failed_on_its_line(name, tmp_path):
    from grader.batch.grade import verdict

    source = build_variants.FIRST_MISTAKES[name].source(name)
    with pytest.raises(KernelRejected) as rejection:
        _make(_module(source, tmp_path, name))
    assert rejection.value.unbound and rejection.value.unbuildable
    record = Record()
    status, message = verdict.refusal(
        record,
        source,
        "flagged message",
        ["refused"],
        rejection.value.unbound,
        rejection.value.unbuildable,
    )
    assert status == "failed", message
    assert record["flags"] == [], "a kernel that cannot build is no evidence for a review"
    assert all(f"`{unbound}`" in message for unbound in rejection.value.unbound), message
    assert "cannot run as written: line " in message
    assert "application() uses " in message or "is called here without" in message, message


@pytest.mark.parametrize("name", ATTACKED)
def test_an_attack_beside_an_unrelated_mistake_stays_flagged(name):
    """Only a mistake that the rules refuse by its nature turns a refusal into ``failed``:
    an attack whose accumulator also lacks its dtype is still flagged."""
    from grader.batch.grade import verdict

    source = ATTACKS[name][0].source(name)
    sloppy = source.replace("ntl.zeros(output.shape, dtype=ntl.float32)", "ntl.zeros(output.shape)")
    assert sloppy != source, "the attack no longer creates the reference's accumulator"
    record = Record()
    status, _ = verdict.refusal(record, sloppy, "flagged message", ["refused"])
    assert status == "flagged" and record["flags"] == ["refused"]
    assert [finding["mistake"] for finding in record["findings"]] == ["accumulator_dtype"]


@pytest.fixture(scope="module")
def attack_class(tmp_path_factory):
    base = tmp_path_factory.mktemp("generated-attacks")
    sources = {name: ATTACKS[name][0].source(name) for name in ATTACKED}
    sources |= {
        name: build_variants.FIRST_MISTAKES[name].source(name)
        for name in REFUSED_MISTAKES | FLAGGED_MISTAKES
    }
    for name, source in sources.items():
        (base / "class" / name).mkdir(parents=True)
        (base / "class" / name / "ninetoothed_gemm.py").write_text(source, encoding="utf-8")
    (base / "class" / "reference").mkdir()
    (base / "class" / "reference" / "ninetoothed_gemm.py").write_text(
        (ROOT / "solutions" / "ninetoothed_gemm.py").read_text(), encoding="utf-8"
    )
    return base


def _every_attack_flagged(out):
    book = gradebook(out)
    assert book["reference"]["status"] == "passed", book["reference"]
    for name in ATTACKED:
        row = book[name]
        assert row["status"] == "flagged" and row["score"] == "0", (name, row)
        assert "generated kernel" in row["flags"], (name, row["flags"])
        record = json.loads((out / name / "record.json").read_text(encoding="utf-8"))
        assert {case["message"] for case in record["cases"]} == {
            "not run: the kernel was refused"
        }, (name, record["cases"][:1])
    for name, mistake in REFUSED_MISTAKES.items():
        row = book[name]
        assert row["status"] == "failed" and row["score"] == "0", (name, row)
        assert "cannot run as written: line " in row["message"], (name, row)
        # A global the kernel lacks only cannot build; another refusal stays for review.
        assert bool(row["flags"]) == (mistake != "global_in_application"), (name, row)
        record = json.loads((out / name / "record.json").read_text(encoding="utf-8"))
        assert [
            finding
            for finding in record["findings"]
            if finding["mistake"] == mistake and finding["message"] in record["message"]
        ], (name, record)
    for name, mistake in FLAGGED_MISTAKES.items():
        assert book[name]["status"] == "flagged" and book[name]["score"] == "0", book[name]
        record = json.loads((out / name / "record.json").read_text(encoding="utf-8"))
        assert record["findings"][0]["mistake"] == mistake, (name, record["findings"])


def test_the_sandboxed_batch_grader_flags_every_attack_on_what_runs(attack_class, tmp_path):
    done = run_grader(
        tmp_path,
        "grade",
        str(attack_class / "class"),
        "--out",
        str(tmp_path / "out"),
        "--no-progress",
        "--cases",
        small_cases(),
    )
    assert done.returncode == 0, done.stderr[-3000:]
    _every_attack_flagged(tmp_path / "out")
    # Where the seconds went, per run and for the class (issue: a batch's time explained).
    record = json.loads((tmp_path / "out" / "reference" / "record.json").read_text())
    assert list(record["seconds"]["kernel run"]) == [
        "start",
        "import",
        "build",
        "compile gate",
        "public cases",
        "hidden cases",
    ]
    assert list(record["seconds"]["nt_gemm run"]) == ["start", "import", "public cases"]
    assert list(record["seconds"]["grader"]) == ["judge"]
    environment = json.loads((tmp_path / "out" / "environment.json").read_text())
    imported = [
        path
        for path in (tmp_path / "out").glob("*/record.json")
        if "import" in json.loads(path.read_text()).get("seconds", {}).get("kernel run", {})
    ]
    kernel_run = environment["seconds"]["kernel run"]
    assert "median_s" in kernel_run["build"] and kernel_run["import"]["runs"] == len(imported) > 10


def test_the_unsandboxed_batch_grader_flags_every_attack_on_what_runs(attack_class, tmp_path):
    """The mode of a Gradescope container without user namespaces (grader.batch.isolation
    .unprivileged): no bubblewrap, the student's code run as an unprivileged user."""
    from grader.batch.isolation import unprivileged
    from grader.tests.unprivileged_view import View

    view = View(unprivileged.identity())
    if view.problem:
        pytest.skip(view.problem)
    try:
        command = grader_command(
            "grade",
            str(attack_class / "class"),
            "--out",
            str(tmp_path / "out"),
            "--unsafe-no-sandbox",
            "--no-progress",
            "--cases",
            small_cases(),
        )
        done = subprocess.run(
            view.command(command),
            capture_output=True,
            text=True,
            timeout=900,
            env={**environment(tmp_path), "TMPDIR": str(view.tmp)},
        )
    finally:
        view.close()
    assert done.returncode == 0, done.stderr[-3000:]
    _every_attack_flagged(tmp_path / "out")


def _pytest_grader(attack_class, name, selection):
    """The kit's pytest grader run on the class's ``name``, its tests chosen by ``-k``."""
    return run_pytest(
        "grader",
        "-p",
        "no:cacheprovider",
        "-q",
        "--submission",
        str(attack_class / "class" / name / "ninetoothed_gemm.py"),
        "-k",
        selection,
    )


def test_the_pytest_grader_says_the_batch_would_fail_a_global_in_application(attack_class):
    done = _pytest_grader(
        attack_class, "accumulator_with_global_blocks", "kernel_is_what_the_batch_grader_runs"
    )
    assert "your kernel cannot run as written: line " in done.stdout, done.stdout[-3000:]
    assert "application() uses `BLOCK_SIZE_M`, `BLOCK_SIZE_N`" in done.stdout
    assert "the batch grader fails such a file (score 0)" in done.stdout
    assert "would flag" not in done.stdout


def test_the_pytest_grader_says_the_batch_would_flag_it(attack_class):
    done = _pytest_grader(
        attack_class, "store_into_input", "kernel_is_what_the_batch_grader_runs or nonsquare"
    )
    assert "the batch grader would flag this file" in done.stdout, done.stdout[-3000:]
    assert "stores into an input" in done.stdout
    assert "4 failed" in done.stdout, done.stdout[-2000:]  # the rule and 3 nonsquare cases
