"""Build a kernel for the course's GPU on any machine: would it compile there, what would it use?

The Triton interpreter says whether a kernel computes the right numbers, and it accepts
kernels that Triton's compiler rejects (a float16 accumulator, say). Triton compiles for a
GPU target with no GPU present (its wheel bundles ptxas), so every backend runs this check
before any case: a kernel that would not build for the course's GPU fails everywhere, with
the compiler's own message and the student's line, and a kernel that builds gets a report
of its registers, spills and shared memory, read through the occupancy lesson's formulas.

The compile runs in a child process (``python -m grader.core.gpu_compile FILE SHA256 TARGET``):
the interpreter rewrites triton.language in the process that runs it, which breaks the
compiler there, and a child keeps the compiler's own crashes apart. Triton's code generator
evaluates Python while it compiles, so the child is held to what the parent checked: it
compiles only a file whose sha256 is the one grader.core.generated_kernel passed in the
parent, checks it again, and runs under the build guard (grader.core.build_guard)
from before it imports the file; the guard's refusal comes back as ``refused``. ``check``
starts it from the process that built the kernel (the pytest grader, the benchmark); the
batch grader starts it in a sandbox of its own, once per distinct generated file
(grader.batch.isolation.compile_gate).
"""

import dataclasses
import difflib
import hashlib
import importlib.util
import json
import os
import pathlib
import re
import subprocess
import sys

ENV_VAR = "NTGEMM_GPU_TARGET"
TRITON_KEY_VAR = "NTGEMM_TRITON_KEY"  # see triton_key()
DEFAULT_TARGET = "sm_90"
# Compute capability and the most shared memory one block may use (bytes, opt-in).
TARGETS = {
    "sm_80": (80, 166912),
    "sm_86": (86, 101376),
    "sm_89": (89, 101376),
    "sm_90": (90, 232448),
}
CHILD_TIMEOUT_S = 180
MESSAGE_LIMIT = 1500


@dataclasses.dataclass
class Build:
    """What compiling for ``target`` gave: ``ok``, or the compiler's message and where."""

    target: str
    ok: bool
    message: str = ""  # the compiler's own words, without the generated code around them
    checked: bool = True  # False: the check itself could not run; the kernel is not judged
    refused: str = ""  # why the build guard or the kernel check ended the compile, if one did
    line: str = ""  # the generated line it points at (see student_line)
    registers: int = None  # per thread
    spilled_bytes: int = None  # local memory per thread: registers spilled to DRAM
    shared_bytes: int = None  # per block
    num_warps: int = None
    num_stages: int = None

    def to_fields(self):
        return dataclasses.asdict(self)

    @classmethod
    def from_fields(cls, fields):
        """A Build from a worker's claim, every field type-checked (never trusted further)."""
        if not isinstance(fields, dict):
            return None
        text = lambda key: str(fields.get(key) or "")[:MESSAGE_LIMIT]
        number = lambda key: (
            fields.get(key)
            if isinstance(fields.get(key), int)
            and not isinstance(fields.get(key), bool)
            and 0 <= fields.get(key) < 2**31
            else None
        )
        return cls(
            target=text("target")[:16],
            ok=fields.get("ok") is True,
            checked=fields.get("checked") is not False,
            refused=text("refused"),
            message=text("message"),
            line=text("line"),
            registers=number("registers"),
            spilled_bytes=number("spilled_bytes"),
            shared_bytes=number("shared_bytes"),
            num_warps=number("num_warps"),
            num_stages=number("num_stages"),
        )


def parse_target(text):
    """``sm_90`` (or ``90``) as a key of TARGETS; a clear error otherwise."""
    value = str(text).strip().lower()
    value = value if value.startswith("sm_") else f"sm_{value}"
    if value not in TARGETS:
        raise ValueError(f"GPU target {text!r} is not one of {', '.join(TARGETS)}")
    return value


def target_argument(text):
    """``parse_target`` as a command-line option's type: argparse (and pytest) say what is wrong."""
    import argparse

    try:
        return parse_target(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def requested_target():
    return parse_target(os.environ.get(ENV_VAR) or DEFAULT_TARGET)


def check(kernel, target=None):
    """Compile a ninetoothed.make handle for ``target`` in a child process; a Build."""
    target = parse_target(target or requested_target())
    found = kernel_file(kernel, target)
    if isinstance(found, Build):
        return found
    path, digest = found
    environment = {key: value for key, value in os.environ.items() if key != "TRITON_INTERPRET"}
    environment[TRITON_KEY_VAR] = triton_key()
    try:
        done = subprocess.run(
            [sys.executable, *child_arguments(path, digest, target)],
            capture_output=True,
            text=True,
            timeout=CHILD_TIMEOUT_S,
            env=environment,
        )
    except subprocess.TimeoutExpired:
        return timed_out(target)
    return read_child(target, done.returncode, done.stdout, done.stderr)


def kernel_file(kernel, target):
    """(the file of a ninetoothed.make handle's generated kernel, its sha256) when this
    process's kernel check passed it (grader.core.generated_cache); else the Build that
    says why it cannot be compiled."""
    from grader.core import generated_cache

    source = getattr(kernel, "_source", None)
    if not source:
        return Build(target, False, "the kernel has no generated source to compile", checked=False)
    digest = pathlib.Path(source).stem
    if digest not in generated_cache.checked:
        return Build(
            target, False, "the generated kernel was not checked in this process", checked=False
        )
    return pathlib.Path(source), digest


def child_arguments(path, digest, target):
    """The compile child's command line after ``python``: see the module's docstring."""
    return ["-m", "grader.core.gpu_compile", str(path), digest, target]


def timed_out(target):
    return Build(
        target, False, f"compiling for {target} took over {CHILD_TIMEOUT_S} s", checked=False
    )


def read_child(target, returncode, stdout, stderr):
    """The Build a compile child printed last; an unchecked one that says how it ended
    when it printed none."""
    last = stdout.strip().splitlines()[-1:] or [""]
    try:
        build = Build.from_fields(json.loads(last[0]))
    except ValueError:
        build = None
    if build is None:
        tail = (stderr.strip().splitlines() or ["no output"])[-1]
        return Build(
            target, False, f"the compiler process ended ({returncode}): {tail}", checked=False
        )
    return build


def triton_key():
    """The first part of every Triton cache key: by default a hash of Triton's own installed
    files, its compiled library included (477 MB in Triton 3.9), about 0.4 s of a core. Made
    once per process and handed to each compile child, as Triton's own pools hand it on."""
    from triton.runtime import cache

    return cache.triton_key()


def key_by_version_in_a_private_cache():
    """In a batch run, name Triton's cache entries by Triton's version alone, without hashing
    its files. The key tells apart what different Triton builds wrote into one cache; a run's
    cache is its own and starts empty (the sandbox is wiped after every run, an unsandboxed
    run gets a fresh folder), so all it ever holds this Triton wrote. Only when
    ``TRITON_CACHE_DIR`` is set and empty: a cache that holds anything keeps the full key.
    Each sandbox's start and each unsandboxed run spend about 0.4 s less of a core."""
    import triton

    folder = os.environ.get("TRITON_CACHE_DIR")
    if folder and not (os.path.isdir(folder) and os.listdir(folder)):
        _take_triton_key(f"{triton.__version__}-one-run")


# --------------------------------------------------------------------------- the child


class Refused(Exception):
    """The file is not the one the parent checked, or the check refuses it."""


def _checked_source(path, digest):
    """The file's text, if its sha256 is ``digest`` and the kernel check passes it."""
    from grader.core import generated_cache, generated_kernel

    with open(path, "rb") as handle:
        data = handle.read()
    if hashlib.sha256(data).hexdigest() != digest:
        raise Refused("the generated kernel file changed after it was checked")
    source = data.decode("utf-8")
    violations = generated_kernel.check(source)
    if violations:
        raise Refused(generated_kernel.describe(violations))
    generated_cache.checked.add(digest)  # what the build guard lets this process import
    return source


def _guard(path):
    """The build guard, for the rest of this process; a refusal is printed as the child's
    Build, then ends it."""
    from grader.core import build_guard

    def refuse(why):
        print(
            json.dumps(
                Build(
                    "", False, "the build guard stopped the compile", checked=False, refused=why
                ).to_fields()
            ),
            flush=True,
        )

    build_guard.install(build_guard.Policy(path), refuse, exit_code=0)


def _compile(path, target, digest=None):
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    arch, shared_limit = TARGETS[target]
    source = _checked_source(path, digest)
    _guard(path)
    spec = importlib.util.spec_from_file_location("ntgemm_generated_kernel", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    kernel, constants, options = _kernel_and_options(module, source)
    signature, attributes = {}, {}
    for index, param in enumerate(kernel.params):
        name = param.name
        if param.is_constexpr:
            signature[name] = "constexpr"
        elif name.endswith("stride_1"):  # contiguous rows: Triton specializes a stride of 1
            signature[name], constants[name] = "constexpr", 1
        else:
            signature[name] = "*fp16" if name.endswith("pointer") else "i32"
            # Sizes, strides and pointers divisible by 16, as at 4096^3: the launch that
            # pipelines deepest, so needs the most shared memory.
            attributes[(index,)] = [["tt.divisibility", 16]]
    try:
        compiled = triton.compile(
            ASTSource(kernel, signature, constexprs=constants, attrs=attributes),
            target=GPUTarget("cuda", arch, 32),
            options=options,
        )
    except Exception as error:  # noqa: BLE001 - the compiler's verdict, whatever it raised
        message, line = describe_error(error)
        return Build(target, False, message, line=line)
    registers, spilled = _resources(compiled.asm["cubin"])
    build = Build(
        target,
        True,
        registers=registers,
        spilled_bytes=spilled,
        shared_bytes=int(compiled.metadata.shared),
        num_warps=options["num_warps"],
        num_stages=options["num_stages"],
    )
    if build.shared_bytes > shared_limit:
        build.ok = False
        build.message = (
            f"out of resources: the kernel needs {build.shared_bytes} bytes of shared "
            f"memory per block and {target} allows at most {shared_limit}"
        )
    return build


def _kernel_and_options(module, source):
    """The generated @triton.jit function, its constexpr values and its launch options."""
    from triton.runtime.autotuner import Autotuner
    from triton.runtime.jit import JITFunction

    for value in vars(module).values():
        if isinstance(value, Autotuner):  # block_size() symbols: build the first config
            config = value.configs[0]
            return (
                value.fn,
                dict(config.kwargs),
                {"num_warps": config.num_warps, "num_stages": config.num_stages},
            )
    for value in vars(module).values():
        if isinstance(value, JITFunction):
            warps = re.search(r"num_warps=(\d+)", source)
            stages = re.search(r"num_stages=(\d+)", source)
            return (
                value,
                {},
                {
                    "num_warps": int(warps.group(1)) if warps else 4,
                    "num_stages": int(stages.group(1)) if stages else 3,
                },
            )
    raise RuntimeError("the generated file defines no Triton kernel")


def _resources(cubin):
    """(registers, local bytes) per thread, read back from the cubin with cuobjdump."""
    import tempfile

    from triton.backends.nvidia.compiler import get_ptxas

    tool = os.path.join(os.path.dirname(get_ptxas(90).path), "cuobjdump")
    with tempfile.NamedTemporaryFile(suffix=".cubin") as handle:
        handle.write(cubin)
        handle.flush()
        try:
            text = subprocess.run(
                [tool, "-res-usage", handle.name], capture_output=True, text=True, timeout=60
            ).stdout
        except (OSError, subprocess.SubprocessError):
            return None, None
    registers = re.search(r"REG:(\d+)", text)
    local = re.search(r"LOCAL:(\d+)", text)
    return (int(registers.group(1)) if registers else None, int(local.group(1)) if local else None)


def describe_error(error):
    """(the compiler's message, the generated line it points at) of a Triton compile error.

    Its ``str`` leads with a dozen lines of generated code; the cause is at the end, or in
    a chained exception, and hints must see it whole.
    """
    message = getattr(error, "error_message", None)
    cause = error.__cause__ or error.__context__
    if not message and cause is not None:
        message = f"{type(cause).__name__}: {cause}"
    if not message:
        message = str(error).strip().splitlines()[-1:] or [type(error).__name__]
        message = message[0]
    line = ""
    node, src = getattr(error, "node", None), getattr(error, "src", None)
    if src and getattr(node, "lineno", None):
        lines = src.split("\n")
        if 0 < node.lineno <= len(lines):
            line = lines[node.lineno - 1].strip()
    return f"{type(error).__name__}: {message}"[:MESSAGE_LIMIT], line[:MESSAGE_LIMIT]


def _take_triton_key(key):
    """Use the parent's triton_key() when it is one for this Triton, instead of hashing its
    files again."""
    import triton
    from triton.runtime import cache

    if key.startswith(triton.__version__):
        cache.triton_key = lambda: key


def main(argv=None):
    path, digest, target = sys.argv[1:] if argv is None else argv
    target = parse_target(target)
    _take_triton_key(os.environ.get(TRITON_KEY_VAR, ""))
    try:
        build = _compile(path, target, digest)
    except Refused as refusal:
        build = Build(
            target,
            False,
            "the generated kernel was refused",
            checked=False,
            refused=str(refusal)[:MESSAGE_LIMIT],
        )
    except Exception as error:  # noqa: BLE001 - the check could not run: say so, judge nothing
        build = Build(
            target, False, f"{type(error).__name__}: {error}"[:MESSAGE_LIMIT], checked=False
        )
    print(json.dumps(build.to_fields()), flush=True)
    return 0


# --------------------------------------------------------------------------- reading it


def where(build, source):
    """The line that shows where a failed build went wrong: the student's own, else the
    generated kernel's, else ''."""
    found = student_line(source, build.line) if source else None
    if found:
        return f"your line {found[0]}: {found[1]}"
    return f"in the generated kernel: {build.line[:160]}" if build.line else ""


def refused_line(source, violations):
    """(line number, text) of the student's line behind the first of ``violations`` (a
    generated kernel's, grader.core.generated_kernel, each quoting its line) that can be
    traced back to the file, or None."""
    for violation in violations[:3]:
        line = student_line(source, violation.what.rpartition("(`")[2][:-2])
        if line is not None:
            return line
    return None


def student_line(source, generated):
    """(line number, text) of the student's line that ``generated`` came from, or None.

    NineToothed copies application()'s body into the kernel with ``ntl.`` spelled
    ``triton.language.`` and the parameters replaced by loads; the closest line of the
    file, compared after undoing the spelling, is the one to show.
    """
    if not generated:
        return None
    wanted = generated.replace("triton.language.", "ntl.").strip()
    if wanted.startswith("ntl.store("):  # the store is the line that assigns the output tile
        output = _output_parameter(source)
        wanted = f"{output} = " if output else wanted
    head = re.split(r"[(\[=]", wanted, maxsplit=1)[0].strip()
    best, best_score = None, 0.0
    for number, text in enumerate(source.splitlines(), 1):
        line = text.strip()
        if not line or line.startswith("#"):
            continue
        score = difflib.SequenceMatcher(None, wanted[:200], line[:200]).ratio()
        if head and re.split(r"[(\[=]", line, maxsplit=1)[0].strip() == head:
            score += 0.5
        if score > best_score:
            best, best_score = (number, line), score
    return best if best_score >= 0.6 else None


def _output_parameter(source):
    """The name application() gives its third parameter, the output tile."""
    import ast

    from grader.core import nesting

    try:
        tree = nesting.parse(source)
    except (SyntaxError, ValueError):
        return None
    for node in tree.body:
        if (
            isinstance(node, ast.FunctionDef)
            and node.name == "application"
            and len(node.args.args) >= 3
        ):
            return node.args.args[2].arg
    return None


_LIMITERS_ZH = {
    "blocks": "每个 SM 的块数上限",
    "warps": "warp 数上限",
    "registers": "寄存器",
    "shared_mem": "共享内存",
    "cannot launch": "无法启动",
}


def _occupancy(build):
    """ledger.formulas.occupancy of the build on the course's H200, or None."""
    if (
        not build.ok
        or build.registers is None
        or build.num_warps is None
        or build.target != "sm_90"
    ):
        return None
    from ledger import formulas

    threads = build.num_warps * formulas.WARP_SIZE
    result = formulas.occupancy(threads, build.registers, build.shared_bytes or 0, formulas.H200)
    return {**result, "threads": threads, "max_warps": formulas.H200.max_warps_per_sm}


def occupancy_text(build):
    """One line through the occupancy lesson's formulas: how many blocks fit on an SM, and why."""
    result = _occupancy(build)
    if result is None:
        return "" if not build.ok else "occupancy is modelled for sm_90 (the H200) only"
    blocks = result["blocks_per_sm"]
    return (
        f"{blocks} block{'s' if blocks != 1 else ''} of {result['threads']} threads fit on an "
        f"H200 SM ({result['active_warps']} of {result['max_warps']} warps), limited by "
        f"{result['limiter'].replace('_', ' ')}"
    )


def summary(build):
    """The report's line: what the kernel uses on the target, or why it does not build."""
    if not build.checked:
        return f"not checked for {build.target}: {build.message.splitlines()[0]}"
    if not build.ok:
        return f"does not build for {build.target}: {build.message.splitlines()[0]}"
    spills = (
        f"{build.spilled_bytes} bytes spilled per thread" if build.spilled_bytes else "no spills"
    )
    return (
        f"builds for {build.target}: {build.registers} registers per thread, {spills}, "
        f"{(build.shared_bytes or 0) / 1024:.0f} KiB shared memory per block, "
        f"{build.num_warps} warps, {build.num_stages} stages; {occupancy_text(build)}"
    )


def summary_zh(build):
    """``summary`` in Chinese, for the bilingual feedback."""
    if not build.checked:
        return f"未能检查 {build.target} 上的编译：{build.message.splitlines()[0]}"
    if not build.ok:
        return f"无法为 {build.target} 编译：{build.message.splitlines()[0]}"
    text = (
        f"可以为 {build.target} 编译：每线程 {build.registers} 个寄存器，"
        f"溢出 {build.spilled_bytes or 0} 字节，每块共享内存 "
        f"{(build.shared_bytes or 0) / 1024:.0f} KiB，{build.num_warps} 个 warp，"
        f"{build.num_stages} 级流水"
    )
    result = _occupancy(build)
    if result is not None:
        text += (
            f"；H200 每个 SM 可同时驻留 {result['blocks_per_sm']} 个块"
            f"（{result['active_warps']}/{result['max_warps']} 个 warp），"
            f"受{_LIMITERS_ZH.get(result['limiter'], result['limiter'])}限制"
        )
    return text


if __name__ == "__main__":
    sys.exit(main())
