"""The rebuild of a submission's kernel: every correct style passes, every way out is named.

No kernel runs here: grader.core.kernel_source reads source text only.
"""

import pathlib

import pytest

from grader.core.kernel_source import defined_names, extract
from grader.tests.build_variants import VARIANTS
from solutions import MODEL_ANSWER

ROOT = pathlib.Path(__file__).resolve().parents[2]
STYLES = {name: variant.source(name) for name, variant in VARIANTS.items()} | {
    path.parent.name: path.read_text(encoding="utf-8")
    for path in [
        MODEL_ANSWER,
        ROOT / "assignment" / "ninetoothed_gemm.py",
        ROOT / "grader" / "demo_class" / "ada" / "ninetoothed_gemm.py",
        ROOT / "grader" / "demo_class" / "fay" / "ninetoothed_gemm.py",
    ]
}
# First mistakes (build_variants.FIRST_MISTAKES) that the allowlist refuses, so the batch
# flags them rather than runs them: what the refusal says.
FLAGGED = {"torch_matmul": "uses `torch`", "returns_dict": "`Dict` is not allowed"}
# A correct file in the course's shape: the demo class's reference.
KERNEL = (ROOT / "grader" / "demo_class" / "ada" / "ninetoothed_gemm.py").read_text(
    encoding="utf-8"
)


def _with_line(line):
    """KERNEL with ``line`` as the first statement of application() after its docstring."""
    lines = KERNEL.splitlines()
    lines.insert(lines.index("    accumulator = ntl.zeros(output.shape, dtype=ntl.float32)"), line)
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("name", [name for name in STYLES if name not in FLAGGED])
def test_every_kit_style_is_kept_whole(name):
    source = STYLES[name]
    rebuilt = extract(source)
    assert rebuilt.ok, rebuilt.violations
    compile(rebuilt.text, name, "exec")
    assert len(rebuilt.text.splitlines()) == len(source.splitlines())


@pytest.mark.parametrize("name", FLAGGED)
def test_a_first_mistake_outside_the_allowlist_is_refused(name):
    violations = extract(STYLES[name]).violations
    assert any(FLAGGED[name] in violation.what for violation in violations), violations


def test_kept_lines_stay_where_they_were_and_the_rest_is_gone():
    source = (
        "import os\nimport torch\n"
        + KERNEL
        + "\ndef nt_gemm(a, b):\n    return torch.mm(a, b)\n\nprint('imported')\n"
    )
    rebuilt = extract(source)
    assert rebuilt.ok
    lines, kept = source.splitlines(), rebuilt.text.splitlines()
    for number, line in enumerate(kept):
        assert line.strip() in lines[number], (number, line)  # blank, or its own text
    assert "torch" not in rebuilt.text and "print(" not in rebuilt.text
    assert "def arrangement" in rebuilt.text and "accumulator +=" in rebuilt.text


def test_the_autotune_switch_takes_its_default_branch():
    source = (
        "import os\nimport ninetoothed\n"
        'if os.environ.get("NINETOOTHED_AUTOTUNE") == "1":\n'
        "    BLOCK_SIZE_M = ninetoothed.block_size(lower_bound=64, upper_bound=128)\n"
        "else:\n    BLOCK_SIZE_M = 32\n"
        'BLOCK_SIZE_N = int(os.getenv("BN", "16")); BLOCK_SIZE_K = 16\n'
    )
    rebuilt = extract(source)
    namespace = {}
    exec(compile(rebuilt.text, "rebuilt", "exec"), namespace)  # only constants and imports
    assert (namespace["BLOCK_SIZE_M"], namespace["BLOCK_SIZE_N"], namespace["BLOCK_SIZE_K"]) == (
        32,
        16,
        16,
    )


@pytest.mark.parametrize(
    "line, words",
    [
        ("    import os", "Import"),
        ("    x = __import__('os')", "__import__"),
        ("    x = lhs.__class__", "names starting with _"),
        ("    x = getattr(lhs, 'tile')", "getattr"),
        ("    x = torch.mm(lhs, rhs)", "`torch`"),
        ("    x = (lambda: 0)()", "Lambda"),
        ("    x = ntl", "as a value"),
        ("    x = ntl.core.builtins", "ninetoothed.language.core"),
        ("    x = ninetoothed.make", "make"),
        ("    x = lhs.subs(BLOCK_SIZE_M)", "subs"),
        ("    x = f'{lhs}'", "strings"),
        ("    x = 'os.system'", "strings"),
        ("    global BLOCK_SIZE_M", "Global"),
        ("    with lhs: pass", "With"),
        ("    x = open", "open"),
        ("    x = exec", "exec"),
        ("    x = eval", "eval"),
        ("    x = globals()", "globals"),
        ("    x = {}.__class__", "_"),
        ("    x = [c for c in ().__class__.__mro__]", "_"),
        ("    x = os.environ", "`os`"),
        ("    x = sys.modules", "`sys`"),
        ("    x = ntl.extra.cuda", "ninetoothed.language.extra"),
        ("    x = ninetoothed.language.ast.parse", "ast"),
        ("    x = CHEAT", "CHEAT"),
        # A print's labels are its own positional constants, and only a real print's.
        ("    print('k', sep='os.system')", "strings"),
        ("    print(('os.system', 1))", "strings"),
        ("    print(ntl.full((1,), 'os', ntl.float32))", "strings"),
        ("    print(f'{lhs}')", "strings"),
        ("    ntl.static_print('os.system')", "static_print"),
        ("    torch.device_print('x')", "`torch`"),
    ],
)
def test_every_way_out_is_a_violation_with_its_line(line, words):
    source = (
        "import os\nimport sys\nimport torch\nimport ninetoothed\nCHEAT = torch.mm\n"
        "def helper_that_cheats():\n    return torch.mm\n" + _with_line(line)
    )
    rebuilt = extract(source)
    assert not rebuilt.ok
    number = source.splitlines().index(line) + 1
    found = [str(item) for item in rebuilt.violations if item.line == number]
    assert any(words in text for text in found), (found, rebuilt.violations)


@pytest.mark.parametrize(
    "source",
    [
        _with_line("    print = max") + "",
        "print = max\n" + KERNEL,
        "def print(*what):\n    return what\n" + KERNEL,
    ],
)
def test_a_label_is_allowed_only_to_the_builtin_print(source):
    """Where ``print`` is a local, a constant or a function of the file, its strings are not
    labels: they would reach that, not Triton's device_print."""
    source = source.replace(
        "    accumulator = ntl.zeros(", "    print('os.system', 1)\n    accumulator = ntl.zeros(", 1
    )
    assert any("strings are not allowed" in str(item) for item in extract(source).violations)


TL = "import triton.language as tl\n"
ARRANGE = "    output_arranged = output.tile((BLOCK_SIZE_M, BLOCK_SIZE_N))\n"


@pytest.mark.parametrize(
    "source",
    [
        TL + KERNEL.replace(ARRANGE, "    grid = tl.cdiv(BLOCK_SIZE_M, 16)\n" + ARRANGE),
        TL + KERNEL.replace(ARRANGE, "    size = tl.max\n" + ARRANGE),
        TL + "GRID = tl.cdiv(128, 64)\n" + KERNEL.replace(ARRANGE, "    grid = GRID\n" + ARRANGE),
        TL
        + "def blocks():\n    return tl.cdiv(128, 64)\n"
        + KERNEL.replace(ARRANGE, "    grid = blocks()\n" + ARRANGE).replace(
            "    output = accumulator", "    output = accumulator\n    grid = blocks()"
        ),
        TL
        + KERNEL.replace(
            "def application(lhs, rhs, output):",
            "def application(lhs, rhs, output, steps=tl.cdiv(128, 64)):",
        ),
    ],
)
def test_triton_s_functions_are_for_the_kernel_only(source):
    """Outside the kernel Python runs them: the interpreter patches triton.language in the
    worker (its build guard then stops the run), and a GPU's Triton refuses the call."""
    assert any("outside application()" in str(item) for item in extract(source).violations)


def test_triton_s_dtypes_are_values_anywhere_and_its_functions_in_the_kernel():
    source = (
        TL
        + "ACCUMULATOR = tl.float32\ndef product(a, b):\n    return tl.dot(a, b)\n"
        + KERNEL.replace(ARRANGE, "    dtype = tl.float16\n" + ARRANGE).replace(
            "ntl.dot(", "product("
        )
    )
    assert extract(source).ok, extract(source).violations


def test_a_helper_the_kernel_calls_is_checked_where_it_is_written():
    source = "import torch\ndef helper():\n    return torch.mm\n" + KERNEL.replace(
        "    output = accumulator", "    output = helper()"
    )
    violations = extract(source).violations
    assert {violation.line for violation in violations} == {3}
    assert any("helper(): uses `torch`" in str(violation) for violation in violations)


@pytest.mark.parametrize(
    "head",
    [
        "def arrangement(lhs, rhs, output, hook=__import__('os')):",
        "def arrangement(lhs, rhs, output, hook=print.__self__):",
    ],
)
def test_defaults_of_the_two_functions_are_checked_too(head):
    source = KERNEL.replace("def arrangement(lhs, rhs, output):", head)
    assert not extract(source).ok


def test_decorators_and_module_code_around_the_kernel():
    decorated = KERNEL.replace("def application", "@staticmethod\ndef application")
    assert any("decorator" in str(item) for item in extract(decorated).violations)
    # Code the kernel does not use is left out, however hostile: it never runs there.
    hostile = "import ctypes\nctypes.string_at(0)\n" + KERNEL + "\nclass Evil:\n    pass\n"
    rebuilt = extract(hostile)
    assert rebuilt.ok and "ctypes" not in rebuilt.text and "Evil" not in rebuilt.text


@pytest.mark.parametrize("kept", ["BLOCK_SIZE_K = 64", "BLOCK_SIZE_K: int = 64"])
def test_a_kept_statement_never_carries_a_dropped_one_along(kept):
    source = KERNEL.replace(
        "    BLOCK_SIZE_K = 64\n", f"    {kept}; import subprocess; subprocess.run('true')\n"
    )
    rebuilt = extract(source)
    assert rebuilt.ok and "BLOCK_SIZE_K = 64" in rebuilt.text
    assert "subprocess" not in rebuilt.text


@pytest.mark.parametrize(
    "separator", ["\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"]
)
@pytest.mark.parametrize("constant", ["{name} = 1", "{name}: int = 1"])
def test_a_line_separator_in_a_comment_never_shifts_a_kept_line(separator, constant):
    """Python ends a line at \\n and \\r only; split at any other separator, every kept
    statement below it was copied from the line above it: here, module code it drops."""
    payload = "import os; os.system('exit 3')"
    kept = constant.format(name="P" * len(payload))
    source = KERNEL + f"# a note{separator}\n{payload}\n{kept}\n"
    rebuilt = extract(source)
    assert rebuilt.ok, rebuilt.violations
    assert "system" not in rebuilt.text
    assert rebuilt.text.splitlines()[-1] == "P" * len(payload) + " = 1"


def test_defined_names_see_every_binding():
    names = defined_names(
        "import os\nif 1:\n    A = 2\nelse:\n    from x import B\ndef nt_gemm():\n    pass\n"
    )
    assert {"os", "A", "B", "nt_gemm"} <= names


SKIPS_DONE_WORK = """
import ninetoothed.language as ntl


def arrangement(lhs, rhs, output):
    return lhs, rhs, output


def application(lhs, rhs, output):
    accumulator = ntl.zeros(output.shape, dtype=ntl.float32)
    for k in range(lhs.shape[0]):
        accumulator += ntl.dot(lhs[k], rhs[k])
    output = ntl.where(output != output, accumulator.to(output.dtype), {read})
"""


@pytest.mark.parametrize("read", ["output", "output + 0", "ntl.maximum(output, output)"])
def test_an_application_that_reads_what_c_already_holds_is_a_violation(read):
    """A kernel could skip tiles an earlier launch already wrote (NaN-check on C): every
    case passes on fresh NaN outputs, and the grader's timing would be a lie."""
    rebuilt = extract(SKIPS_DONE_WORK.replace("{read}", read))
    assert not rebuilt.ok
    assert any("reads the values of `output`" in v.what for v in rebuilt.violations)


def test_passing_the_output_to_a_helper_reads_it_too():
    source = SKIPS_DONE_WORK.replace(
        "    output = ntl.where(output != output, accumulator.to(output.dtype), {read})\n",
        "    output = finish(accumulator, output)\n\n\ndef finish(accumulator, c):\n"
        "    return accumulator.to(c.dtype)\n",
    )
    rebuilt = extract(source)
    assert [v.line for v in rebuilt.violations if "reads the values" in v.what] == [13]


def test_the_output_s_shape_and_dtype_and_assigning_it_are_fine():
    source = SKIPS_DONE_WORK.replace(
        "output = ntl.where(output != output, accumulator.to(output.dtype), {read})",
        "output = accumulator",
    )
    assert extract(source).ok


# What the first checker let through (the attacks of issue "Trust by construction"): a
# construct in a field it never looked at, and a name bound in an inner scope that
# exempted every use of it. Each must now be a violation at the line that holds it.
@pytest.mark.parametrize(
    "head",
    [
        "def arrangement(lhs, rhs, output, *extra: __import__('os')):",
        "def arrangement(lhs, rhs, output, **extra: __import__('os')):",
        "def arrangement(lhs: __import__('os'), rhs, output):",
        "def arrangement(lhs, rhs, output) -> __import__('os'):",
        "def arrangement(lhs, rhs, output, *, hook=__import__('os')):",
        "def arrangement(lhs, rhs, output, hook=BLOCK_SIZE_M.__class__):",
    ],
)
def test_every_field_of_the_signature_is_checked(head):
    source = KERNEL.replace("def arrangement(lhs, rhs, output):", head)
    assert not extract(source).ok, head


@pytest.mark.parametrize(
    "line, words",
    [
        ("    shadow = [ninetoothed for ninetoothed in (0,)]", "binds `ninetoothed`"),
        ("    shadow = [ntl for ntl in (0,)]", "binds `ntl`"),
        ("    shadow = [open for open in (0,)] + [open('/etc/passwd')]", "the builtin `open`"),
        ("    shadow = [x for x in open('/etc/passwd')]", "the builtin `open`"),
        ("    shadow = [[ntl for ntl in (0,)] for x in ntl.libdevice]", "libdevice"),
        ("    __builtins__ = 0", "binds `__builtins__`"),
        ("    x = (y := 0)", "NamedExpr"),
        ("    x: int = 0", "AnnAssign"),
        ("    x = {0: 1}", "Dict"),
        ("    x = {1}", "Set"),
        ("    x = {i for i in (0,)}", "SetComp"),
        ("    x = {i: i for i in (0,)}", "DictComp"),
        ("    x = (yield 0)", "Yield"),
        ("    x = ...", "the constant Ellipsis"),
        ("    x = b'0'", "the constant b'0'"),
        ("    x = ntl.full((1,), 0, 'float16')", "strings"),
        ("    x = ntl.zeros(output.shape, **{})", "`**`"),
        ("    x = ntl.zeros(output.shape, _builder=0)", "_builder"),
        ("    ninetoothed.block_size = 0", "assigns to ninetoothed.block_size"),
        ("    lhs.tile = 0", "assigns to `.tile`"),
        ("    BLOCK_SIZE_M.dtype = 0", "assigns to `.dtype`"),
        ("    x = lhs.eval", "`.eval`"),
        ("    x = lhs.offsets_string", "`.offsets_string`"),
        ("    x = ntl.inline_asm_elementwise", "inline_asm_elementwise"),
        ("    x = ntl.load", "ninetoothed.language.load"),
        ("    x = ntl.libdevice", "ninetoothed.language.libdevice"),
        ("    x = ninetoothed.Tensor", "ninetoothed.Tensor"),
        ("    x = ninetoothed.language", "as a value"),
        ("    x = math.sys", "math.sys"),
        ("    del x", "Delete"),
        ("    def inner(): pass", "FunctionDef"),
        ("    class Inner: pass", "ClassDef"),
        ("    try: pass\n    except Exception: pass", "Try"),
        ("    assert 0, open", "open"),
        ("    raise ValueError(__import__('os'))", "__import__"),
    ],
)
def test_every_construct_off_the_list_is_a_violation(line, words):
    source = "import math\n" + _with_line(line)
    rebuilt = extract(source)
    number = source.splitlines().index(line.splitlines()[0]) + 1
    found = [str(item) for item in rebuilt.violations if item.line == number]
    assert any(words in text for text in found), (found, rebuilt.violations)


@pytest.mark.parametrize(
    "line",
    [
        "    assert lhs.ndim == 2, 'lhs must be 2-D'",
        "    assert lhs.ndim == 2, f'lhs is {lhs.ndim}-D, expected 2-D'",
        "    steps = [k for k in range(lhs.shape[0])]",
        "    total = sum(k for k in range(3))",
        "    'a string standing as a comment'",
        "    BLOCK_SIZE_N = 3",
        "    input = lhs",
        "    steps = [min(k, BLOCK_SIZE_M) for k in range(3)]",
        "    print('lhs has', lhs.shape[0], 'K tiles')",
        "    ntl.device_print('K tiles: ', lhs.shape[0])",
        "    print(lhs.shape[0])",
    ],
)
def test_messages_comments_and_comprehensions_stay_allowed(line):
    assert extract(_with_line(line)).ok


@pytest.mark.parametrize(
    "annotation",
    ["int", "Final", "typing.Final[int]", "'int'", "__import__('os').system('exit 3')"],
)
def test_an_annotated_module_constant_is_kept_without_its_annotation(annotation):
    """Typed constants are an honest style; the rebuilt file never evaluates the annotation
    (here ``Final`` is not even imported), so none can run code."""
    source = KERNEL.replace("BLOCK_SIZE_K = 64", f"BLOCK_SIZE_K: {annotation} = 64  # typed")
    rebuilt = extract(source)
    assert rebuilt.ok, rebuilt.violations
    assert "BLOCK_SIZE_K = 64" in rebuilt.text.splitlines()
    assert annotation not in rebuilt.text and "# typed" not in rebuilt.text
    namespace = {}
    exec(compile(rebuilt.text, "rebuilt", "exec"), namespace)
    assert namespace["BLOCK_SIZE_K"] == 64


@pytest.mark.parametrize(
    "statement",
    ["BLOCK_SIZE_K: int = (\n    64)", "BLOCK_SIZE_K: int = torch.mm", "BLOCK_SIZE_K: int"],
)
def test_an_annotated_constant_the_grader_cannot_keep_is_named(statement):
    source = "import torch\n" + KERNEL.replace("BLOCK_SIZE_K = 64", statement)
    rebuilt = extract(source)
    assert any("BLOCK_SIZE_K" in str(item) for item in rebuilt.violations), rebuilt.violations


def test_nine_toothed_s_own_naming_style_passes():
    """NineToothed's examples name the operands ``input`` and ``other`` (builtins' names)
    and pass the block sizes as parameters named like the module constants."""
    source = KERNEL.replace(
        "def arrangement(lhs, rhs, output):",
        "def arrangement(input, other, output, BLOCK_SIZE_M=BLOCK_SIZE_M,"
        " BLOCK_SIZE_N=BLOCK_SIZE_N, BLOCK_SIZE_K=BLOCK_SIZE_K):\n"
        "    lhs, rhs = input, other",
    ).replace(
        "def application(lhs, rhs, output):",
        "def application(input, other, output):\n    lhs, rhs = input, other",
    )
    assert extract(source).ok, extract(source).violations
