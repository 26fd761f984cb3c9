"""Catch submissions that do not compute C with their own NineToothed kernel.

Two kinds of evidence, each with enough detail for a TA to check by hand:

* **Static**, ``scan_source``: the batch grader's parent reads the file's syntax
  tree (it never runs it) and lists forbidden constructs with their line:
  matrix products outside ``application`` (``torch.mm``, ``matmul``, ``bmm``,
  ``addmm``, ``einsum``, ``linear``, ``@``, ``numpy``, ...), and ways out of the
  sandbox or into the grader (``ctypes``, ``subprocess``, ``os.system``,
  ``importlib``, ``__import__``, ``sys.modules``, ``builtins``, ``eval``/``exec``,
  ``open(..., "w")``, file writes, frame inspection, assigning attributes of
  ``torch``, ``pytest``, ``grader``, ``ninetoothed`` or ``triton``, ...).
* **Runtime**, ``Monitor`` (in the worker process, around every ``nt_gemm``
  call): a TorchDispatchMode records matrix-product aten ops (``mm``, ``addmm``,
  ``bmm``, ``matmul``, ``dot``, ``linear``, ...) run outside NineToothed launches,
  and a wrapper on the kernel handles NineToothed builds records, after each
  launch, the output it was given (its last tensor argument) and a copy of its
  bytes. When ``nt_gemm`` returns, every element of the result must lie in an
  output a NineToothed launch of this call wrote, and those outputs must still
  hold exactly the bytes the launches left in them. Each launch's output is
  filled with NaN just before the launch, so an answer placed there beforehand
  cannot pass for a kernel that writes nothing. A handle built any other way, or
  whose launcher was replaced, is plain Python to the monitor.

Scoring policy (the default, cited by the instructor guide):

* a case whose ``nt_gemm`` call broke a runtime rule is *flagged*: it scores 0,
  whatever its output, and the evidence goes to the gradebook's ``flags`` column;
* a **tamper** finding of the static scan (a way into the grader or out of the
  sandbox, see ``TAMPER``) flags every case: the runtime evidence of such a file
  cannot be trusted, so it scores 0 overall;
* an **io** finding (file writes, listings) is evidence only: the child's
  working folder is private and every report is written by the parent;
* a **compute** finding of the static scan (a matrix product written outside
  ``application``) is listed in ``flags`` as evidence but costs nothing by
  itself: dead debugging code is not cheating. If it ever runs inside
  ``nt_gemm`` the runtime check flags that case;
* a submission with any flagged case gets the status ``flagged``, unless the
  process itself ended badly (timeout, crash, memory limit), which wins.

The runtime monitor lives in the same process as the student's code, so a
determined submission could switch it off; doing so needs one of the tamper
constructs above, which the parent's static scan (which no submission can touch)
flags. The correctness verdicts do not depend on any of this: see grader.sandbox.
"""

import ast
import dataclasses

COMPUTE = "compute"  # a matrix product outside application(): evidence only
TAMPER = "tamper"  # a way into the grader or out of the sandbox: every case flagged
IO = "io"  # touches the file system: evidence only (writes land in a private folder)

MATMUL_NAMES = {
    "mm", "matmul", "bmm", "addmm", "addbmm", "baddbmm", "einsum", "linear", "dot", "vdot",
    "mv", "addmv", "tensordot", "inner", "outer", "ger", "chain_matmul", "multi_dot",
    "__matmul__", "__rmatmul__", "_scaled_mm", "_int_mm", "bilinear", "kron",
}
FORBIDDEN_MODULES = {
    "ctypes": "imports ctypes",
    "cffi": "imports cffi",
    "subprocess": "imports subprocess",
    "multiprocessing": "imports multiprocessing",
    "threading": "imports threading",
    "signal": "imports signal",
    "socket": "imports socket",
    "importlib": "imports importlib",
    "builtins": "imports builtins",
    "gc": "imports gc",
    "inspect": "imports inspect",
    "pickle": "imports pickle",
    "marshal": "imports marshal",
    "atexit": "imports atexit",
    "pytest": "imports pytest",
    "grader": "imports the grader",
    "resource": "imports resource",
    "mmap": "imports mmap",
    "pty": "imports pty",
    "psutil": "imports psutil",
}
# A second way to multiply matrices: evidence only, since the result must still come out
# of a NineToothed launch's output, NaN-filled before it and byte-checked after it.
COMPUTE_MODULES = {"numpy": "imports numpy"}
HARMLESS_SUBMODULES = {"importlib.metadata", "importlib.resources"}
IO_MODULES = {"shutil": "imports shutil", "tempfile": "imports tempfile", "glob": "imports glob"}
OS_TAMPER = {"system", "popen", "fork", "forkpty", "kill", "killpg", "_exit", "abort", "setsid",
             "setpgid", "putenv", "unsetenv", "dup2", "getppid", "execv", "execve", "execvp",
             "execl", "execlp", "spawnv", "spawnl", "posix_spawn", "closerange", "close"}
OS_IO = {"remove", "unlink", "rename", "replace", "rmdir", "removedirs", "makedirs", "mkdir",
         "chmod", "chown", "write", "open", "symlink", "link", "truncate", "chdir", "walk",
         "listdir", "scandir", "fdopen", "utime"}
# Reading sys.stdout or sys.stderr is only printing; assigning them is caught as any
# assignment to a sys attribute is.
SYS_ATTRS = {"modules", "exit", "settrace", "setprofile", "_getframe", "argv", "meta_path",
             "path_hooks", "addaudithook", "breakpointhook", "excepthook", "orig_argv"}
BUILTIN_CALLS = {"eval", "exec", "compile", "__import__", "globals", "breakpoint",
                 "setattr", "delattr", "exit", "quit"}
DUNDER_ATTRS = {"__builtins__", "__globals__", "__code__", "__subclasses__", "__dict__",
                "__class__", "__bases__", "__mro__", "f_back", "f_globals", "f_locals",
                "tb_frame", "gi_frame", "__closure__", "__loader__", "__spec__"}
PROTECTED_ROOTS = {"torch", "pytest", "grader", "ninetoothed", "triton", "ntl", "F"}
PATH_WRITES = {"write_text", "write_bytes", "unlink", "rename", "replace", "rmdir", "mkdir",
               "touch", "chmod", "symlink_to", "hardlink_to", "rmtree", "iterdir", "glob",
               "rglob"}
TORCH_IO = {"save", "load"}
PURE_MODULES = {"dataclasses", "functools", "itertools", "math", "re", "string", "copy"}


@dataclasses.dataclass(frozen=True)
class Finding:
    kind: str  # COMPUTE or TAMPER
    line: int
    what: str

    def evidence(self):
        return f"line {self.line}: {self.what}"


def _is_main_guard(test):
    return (isinstance(test, ast.Compare) and isinstance(test.left, ast.Name)
            and test.left.id == "__name__" and len(test.comparators) == 1
            and isinstance(test.comparators[0], ast.Constant)
            and test.comparators[0].value == "__main__")


def _reaches_internals(full):
    """Whether a dotted name reaches the machinery the runtime monitor is built on."""
    return "_python_dispatch" in full or "_Handle" in full or full.startswith("torch._C")


def _dotted(node):
    """'torch.nn.functional.linear' for an attribute chain, or None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


class _Scanner(ast.NodeVisitor):
    def __init__(self):
        self.findings = []
        self.in_application = 0
        self.aliases = {}  # local name -> module it stands for

    def add(self, kind, node, what):
        self.findings.append(Finding(kind, getattr(node, "lineno", 0), what))

    def flag_module(self, node, root):
        """What importing the top-level package ``root`` is evidence of, if anything."""
        for kind, modules in ((TAMPER, FORBIDDEN_MODULES), (COMPUTE, COMPUTE_MODULES),
                              (IO, IO_MODULES)):
            if root in modules:
                self.add(kind, node, modules[root])

    def visit_FunctionDef(self, node):
        inside = node.name == "application"
        self.in_application += inside
        self.generic_visit(node)
        self.in_application -= inside

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_If(self, node):
        """A ``if __name__ == "__main__":`` self-test never runs when the grader imports the file."""
        if _is_main_guard(node.test):
            for statement in node.orelse:
                self.visit(statement)
            return
        self.generic_visit(node)

    def _module_root(self, name):
        return self.aliases.get(name, name)

    def _pure_module_call(self, func):
        """``dataclasses.replace(...)`` and the like: a module's function, not a file operation."""
        return isinstance(func.value, ast.Name) and \
            self._module_root(func.value.id) in PURE_MODULES

    def visit_Import(self, node):
        for alias in node.names:
            root = alias.name.split(".")[0]
            self.aliases[alias.asname or root] = alias.name if alias.asname else root
            if alias.name in HARMLESS_SUBMODULES:
                continue
            if _reaches_internals(alias.name):
                self.add(TAMPER, node, f"imports {alias.name}")
            self.flag_module(node, root)
        self.generic_visit(node)

    def visit_ImportFrom(self, node):
        root = (node.module or "").split(".")[0]
        if node.module in HARMLESS_SUBMODULES:
            root = ""
        self.flag_module(node, root)
        for alias in node.names:
            name = alias.name
            local = alias.asname or name
            self.aliases[local] = f"{node.module}.{name}"
            if _reaches_internals(f"{node.module}.{name}"):
                self.add(TAMPER, node, f"imports {node.module}.{name}")
            if root == "os" and name in OS_TAMPER:
                self.add(TAMPER, node, f"imports os.{name}")
            if root == "os" and name in OS_IO:
                self.add(IO, node, f"imports os.{name}")
            if root == "sys" and name in SYS_ATTRS:
                self.add(TAMPER, node, f"imports sys.{name}")
            if root in ("torch", "numpy") and name in MATMUL_NAMES and not self.in_application:
                self.add(COMPUTE, node, f"imports {node.module}.{name}")
        self.generic_visit(node)

    def visit_BinOp(self, node):
        if isinstance(node.op, ast.MatMult) and not self.in_application:
            self.add(COMPUTE, node, "uses the @ operator outside application()")
        self.generic_visit(node)

    def visit_AugAssign(self, node):
        if isinstance(node.op, ast.MatMult) and not self.in_application:
            self.add(COMPUTE, node, "uses the @= operator outside application()")
        self._check_target(node.target)
        self.generic_visit(node)

    def visit_Assign(self, node):
        for target in node.targets:
            self._check_target(target)
        self.generic_visit(node)

    def _check_target(self, target):
        for node in ast.walk(target):
            if isinstance(node, ast.Attribute):
                dotted = _dotted(node)
                if dotted and self._module_root(dotted.split(".")[0]).split(".")[0] in (
                        PROTECTED_ROOTS | {"sys", "os", "builtins"}):
                    if dotted.startswith("os.environ"):
                        continue
                    self.add(TAMPER, node, f"assigns {dotted}")
            if isinstance(node, ast.Subscript):
                dotted = _dotted(node.value)
                if dotted in ("sys.modules", "__builtins__"):
                    self.add(TAMPER, node, f"assigns into {dotted}")

    def visit_Attribute(self, node):
        if node.attr in DUNDER_ATTRS:
            self.add(TAMPER, node, f"uses .{node.attr}")
        dotted = _dotted(node)
        if dotted:
            head, _, rest = dotted.partition(".")
            module = self._module_root(head)
            full = f"{module}.{rest}" if rest else module
            if full.startswith("sys.") and full.split(".")[1] in SYS_ATTRS:
                self.add(TAMPER, node, f"uses {full}")
            if full.startswith("os.") and full.split(".")[1] in OS_TAMPER:
                self.add(TAMPER, node, f"uses {full}")
            if full.startswith("os.") and full.split(".")[1] in OS_IO:
                self.add(IO, node, f"uses {full}")
            if full.startswith("torch.") and node.attr in TORCH_IO:
                self.add(TAMPER, node, f"uses {full}")
            if _reaches_internals(full):
                self.add(TAMPER, node, f"uses {full}")
        self.generic_visit(node)

    def visit_Constant(self, node):
        if isinstance(node.value, str) and "/proc" in node.value:
            self.add(TAMPER, node, "reads /proc (other processes' command lines)")
        self.generic_visit(node)

    def visit_Name(self, node):
        if node.id in ("__builtins__", "__loader__", "__spec__"):
            self.add(TAMPER, node, f"uses {node.id}")
        if node.id == "__name__" and isinstance(node.ctx, ast.Store):
            # It would make a skipped ``if __name__ == "__main__":`` block run on import.
            self.add(TAMPER, node, "assigns __name__")
        self.generic_visit(node)

    def visit_Call(self, node):
        func = node.func
        if isinstance(func, ast.Name):
            name = self.aliases.get(func.id, func.id)
            if func.id in BUILTIN_CALLS:
                self.add(TAMPER, node, f"calls {func.id}()")
            if func.id == "open" and _opens_for_writing(node):
                self.add(IO, node, "calls open() for writing")
            tail = name.rsplit(".", 1)[-1]
            if tail in MATMUL_NAMES and name != func.id and not self.in_application:
                self.add(COMPUTE, node, f"calls {name}")
        elif isinstance(func, ast.Attribute):
            dotted = _dotted(func) or f"<expr>.{func.attr}"
            if func.attr in MATMUL_NAMES and not self.in_application:
                self.add(COMPUTE, node, f"calls {dotted}")
            if func.attr in PATH_WRITES and not self._pure_module_call(func):
                self.add(IO, node, f"calls {dotted}()")
            if func.attr == "open" and _opens_for_writing(node, method=True):
                self.add(IO, node, f"calls {dotted}() for writing")
        self.generic_visit(node)


def _opens_for_writing(call, method=False):
    mode = None
    position = 0 if method else 1
    if len(call.args) > position:
        mode = call.args[position]
    for keyword in call.keywords:
        if keyword.arg == "mode":
            mode = keyword.value
    if mode is None:
        return False
    if isinstance(mode, ast.Constant) and isinstance(mode.value, str):
        return any(flag in mode.value for flag in "wax+")
    return True  # a computed mode: assume the worst


def scan_source(source):
    """Static findings for a submission's source, in line order. Never runs it.

    A file that does not parse has no findings (it is an import_error anyway).
    """
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    scanner = _Scanner()
    scanner.visit(tree)
    unique = sorted(set(scanner.findings), key=lambda f: (f.line, f.kind, f.what))
    return unique


# --------------------------------------------------------------------------- runtime

FORBIDDEN_ATEN = {
    "mm", "addmm", "bmm", "baddbmm", "addbmm", "matmul", "dot", "vdot", "mv", "addmv",
    "linear", "einsum", "tensordot", "_scaled_mm", "_int_mm", "inner", "outer", "ger",
    "convolution", "_convolution", "addr", "kron", "bilinear", "_addmm_activation",
    "mkldnn_linear", "_mkldnn_linear", "cudnn_convolution", "chain_matmul",
}


def _bytes_of(tensor):
    import torch

    flat = tensor.detach().contiguous().reshape(-1)
    return flat.view(torch.uint8) if flat.numel() else flat


class Monitor:
    """Runtime evidence for one process. ``install()`` must run before the submission is imported."""

    def __init__(self):
        self.launches = None  # storage pointer -> {layout: (output, its bytes)}, inside nt_gemm
        self.aten_calls = None
        self.depth = 0

    def install(self):
        import sys
        import weakref

        import ninetoothed  # noqa: F401 - loads ninetoothed.jit, whose name the package shadows

        jit_module = sys.modules["ninetoothed.jit"]
        monitor = self
        original = jit_module._Handle.__call__
        build = jit_module.JIT.__call__
        genuine = weakref.WeakKeyDictionary()  # handle NineToothed built -> its launcher

        def built(jit, *args, **kwargs):
            handle = build(jit, *args, **kwargs)
            genuine[handle] = handle._launch
            return handle

        def call(handle, *args, **kwargs):
            from torch.utils._python_dispatch import _disable_current_modes

            launcher = genuine.get(handle)
            if launcher is None or launcher is not getattr(handle, "_launch", None):
                # A handle NineToothed did not build, or whose launcher was swapped:
                # plain Python, watched like the rest of nt_gemm.
                return original(handle, *args, **kwargs)
            monitor.depth += 1
            try:
                with _disable_current_modes():
                    if monitor.launches is not None:
                        _poison_output(list(args) + list(kwargs.values()))
                    result = original(handle, *args, **kwargs)
                    if monitor.launches is not None:
                        monitor._record_launch(list(args) + list(kwargs.values()))
            finally:
                monitor.depth -= 1
            return result

        call.__wrapped__ = original
        built.__wrapped__ = build
        jit_module._Handle.__call__ = call
        jit_module.JIT.__call__ = built

    def _record_launch(self, arguments):
        """Remember the output a launch wrote and a copy of its bytes right after.

        The output is the launch's last tensor argument (``arrangement(lhs, rhs,
        output)``): a tensor the kernel only read proves nothing. Bytes, not version
        counters: ``.data``, ``untyped_storage()`` and ``.numpy()`` write without
        bumping the counter. A launch repeated on the same view (an autotuner timing
        it) keeps one copy; a launch on another view of the same storage (a kernel
        run in chunks) may overlap the views already there, so their copies are
        taken again.
        """
        import torch

        tensors = [value for value in arguments if isinstance(value, torch.Tensor)]
        if not tensors:
            return
        output = tensors[-1].detach()
        layout = (output.storage_offset(), tuple(output.shape), output.stride(), output.dtype)
        views = self.launches.setdefault(output.untyped_storage().data_ptr(), {})
        for key, (view, _) in views.items():
            if key != layout:
                views[key] = (view, _bytes_of(view).clone())
        views[layout] = (output, _bytes_of(output).clone())

    def traced(self, function):
        """``function`` wrapped so that each call returns (result, evidence list)."""
        from torch.utils._python_dispatch import TorchDispatchMode

        monitor = self

        class _Recorder(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                if monitor.depth == 0:
                    packet = getattr(func, "overloadpacket", None)
                    base = getattr(packet, "__name__", str(func))
                    if base in FORBIDDEN_ATEN or base.lstrip("_") in FORBIDDEN_ATEN:
                        monitor.aten_calls.append(f"aten.{base}")
                return func(*args, **(kwargs or {}))

        def run(*args, **kwargs):
            monitor.launches, monitor.aten_calls = {}, []
            try:
                with _Recorder():
                    result = function(*args, **kwargs)
                return result, monitor._evidence(result)
            finally:
                monitor.launches, monitor.aten_calls = None, None

        return run

    def _evidence(self, result):
        import torch

        evidence = []
        for name in dict.fromkeys(self.aten_calls):
            evidence.append(f"nt_gemm ran {name} (a matrix product outside the NineToothed kernel)")
        if not isinstance(result, torch.Tensor):
            return evidence  # not a tensor at all: the checks fail it, no cheat to flag
        if not self.launches:
            evidence.append("nt_gemm returned a tensor without launching any NineToothed kernel")
            return evidence
        launched = self.launches.get(result.untyped_storage().data_ptr())
        if not launched or not _covers([view for view, _ in launched.values()], result):
            evidence.append("nt_gemm returned a tensor that no NineToothed kernel wrote")
            return evidence
        if any(not torch.equal(_bytes_of(view), copy) for view, copy in launched.values()):
            evidence.append("the NineToothed kernel's output was changed after the kernel "
                            "wrote it, before nt_gemm returned")
        return evidence


def _poison_output(arguments):
    """Fill a launch's output with NaN first: what the kernel leaves unwritten shows.

    Without it a wrapper could put the answer (computed without a matrix product)
    into the output and launch a kernel that writes nothing. The contract's kernel
    only writes its output, so an honest kernel never sees the NaN.
    """
    import torch

    tensors = [value for value in arguments if isinstance(value, torch.Tensor)]
    if tensors and tensors[-1].is_floating_point():
        tensors[-1].detach().fill_(float("nan"))


def _covers(views, tensor):
    """Whether every byte of ``tensor`` lies in one of ``views`` (all on its storage)."""
    import torch

    def span(mask, view):
        size = view.element_size()
        return mask.as_strided(tuple(view.shape) + (size,),
                               tuple(stride * size for stride in view.stride()) + (1,),
                               view.storage_offset() * size)

    mask = torch.zeros(tensor.untyped_storage().nbytes(), dtype=torch.bool, device=tensor.device)
    for view in views:
        span(mask, view).fill_(True)
    return bool(span(mask, tensor).all())
