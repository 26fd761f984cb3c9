"""The kernel run's second layer: an audit hook that ends the run at the first event its
build does not need.

grader.core.kernel_source decides what of a file a kernel run imports; this module is
there for the day that checker has a bug. The worker imports the kernel stack, then
``install``s the hook, then imports the rebuilt file. From then on every audit event
(PEP 578: imports, ``open``, ``exec``, ``compile``, subprocesses, ``os`` and ``shutil``
calls, sockets, ``ctypes``...) goes through ``Policy.judge``, and the first one that a
build, a launch and the compile gate do not need ends the process on the spot, after
one report to the parent, which flags the file. A hook cannot be removed, and the
process ends inside the hook, so no code of the file can catch the refusal.

What a build needs (measured with the interpreter and on the H200):

* reading the Python stack's own files (imports of triton, ninetoothed, torch, numpy,
  sympy and the grader's modules, their ``exec``), the rebuilt file, and the caches;
* writing under the run's private folders only: ``$HOME`` (NineToothed's
  ``~/.ninetoothed``), ``$TMPDIR`` and Triton's cache;
* ``exec`` of the monomial functions sympy's polynomial rings write from a template
  (when a tile's size is a symbol: a mistake, not a trick), of Triton's launch binder
  (its own names and the kernel's parameters, nothing else), of the interpreter's
  rewrite of a generated file the kernel check passed (grader.core.generated_kernel;
  its sha256 is read back first) and of Triton's own functions, and of the methods dataclasses and namedtuple write;
  never an ``exec`` only because Triton, NineToothed or the standard library calls it;
* ``exec`` of code that names nothing but arithmetic (``ninetoothed.eval`` evaluates its
  arithmetic from text, and ``Tensor.eval`` its offsets with ``np.where`` and
  ``np.arange``), and ``compile`` (``ast.parse``), which runs nothing;
* three kinds of subprocess: the compile gate (``python -m grader.core.gpu_compile``),
  the tools Triton ships (ptxas, cuobjdump), and on a GPU the C compiler and ldconfig
  that Triton's launcher build calls;
* ``ctypes`` (the CUDA driver), and introspection that changes nothing.

Anything else is refused: other files, other imports, ``os.system`` and its kin,
sockets, new audit hooks, tracing, ``gc`` walks, new code objects, and changes to the
code of functions or to the classes of NineToothed and the grader. What raises no event
(rebinding a module's or a class's attribute) the worker compares with ``snapshot`` and
``changed``. What Python reaches with no event at all (``_posixsubprocess.fork_exec``, a
call through ``ctypes``) passes: the hook is a second layer, not a sandbox.
"""

import hashlib
import os
import re
import sys
import threading
import traceback

PACKAGES = frozenset({"triton", "ninetoothed", "torch", "numpy", "sympy", "mpmath", "grader"})
HARMLESS = frozenset(
    {
        "builtins.id",
        "object.__getattr__",
        "sys._getframe",
        "sys._getframemodulename",
        "marshal.loads",
        "marshal.load",
        "compile",
        "time.sleep",
        "sys.excepthook",
        "sys.unraisablehook",
        "array.__new__",
    }
)
READS = frozenset(
    {
        "os.listdir",
        "os.scandir",
        "glob.glob",
        "glob.glob/2",
        "os.listxattr",
        "os.getxattr",
        "pathlib.Path.glob",
        "pathlib.Path.rglob",
    }
)
WRITES = frozenset(
    {
        "os.mkdir",
        "os.remove",
        "os.rmdir",
        "os.chmod",
        "os.utime",
        "os.truncate",
        "os.rename",
        "os.link",
        "os.symlink",
        "shutil.copyfile",
        "shutil.copymode",
        "shutil.copystat",
        "shutil.copytree",
        "shutil.rmtree",
        "shutil.move",
        "tempfile.mkstemp",
        "tempfile.mkdtemp",
    }
)
# What sympy's parser and ninetoothed.eval put in the code they evaluate from text.
SYMBOLIC_NAMES = frozenset(
    {
        "sympy",
        "Integer",
        "Float",
        "Rational",
        "Symbol",
        "Add",
        "Mul",
        "Pow",
        "Mod",
        "floor",
        "ceiling",
        "Max",
        "Min",
        "Abs",
        "Eq",
        "Ne",
        "Lt",
        "Le",
        "Gt",
        "Ge",
        "E",
    }
)  # sympy's parser names its constant e where a size is symbolic
# What Tensor.eval (ninetoothed.eval, the arrangement's simulation) adds: np.where, np.arange.
SIMULATION_NAMES = frozenset({"np", "where", "arange", "slice"})
# Every name sympy.polys.monomials.MonomialOps's templates use (monomial_mul(A, B), with a0,
# b0, r0, ... and k): its _build would exec any text, so the text must be one of those.
MONOMIAL_NAME = re.compile(r"monomial_[a-z]+|[ABk]|[abr][0-9]+")
# Where the import system runs a module's code (importlib's frames, frozen or not).
IMPORT_SYSTEM = frozenset(
    {"<frozen importlib._bootstrap>", "<frozen importlib._bootstrap_external>"}
)
# Triton's launch binder (triton.runtime.jit.create_function_from_signature): its own
# names, and the kernel's parameters with their defaults (NineToothed names every one).
BINDER_NAMES = frozenset(
    {
        "dynamic_func",
        "params",
        "specialization",
        "options",
        "specialize_impl",
        "backend",
        "JITCallable",
    }
)
GENERATED_PARAMETER = re.compile(r"(default_)?ninetoothed_\w+")
# The standard library's modules that write a class's methods from its field names.
STDLIB_WRITERS = ("dataclasses.py", os.path.join("collections", "__init__.py"))
TOOLS = frozenset({"cc", "gcc", "clang", "ldconfig", "ldconfig.real"})
# Extension modules Triton compiles into its cache and imports (on a GPU).
TRITON_EXTENSIONS = frozenset({"cuda_utils", "__triton_launcher", "hip_utils"})
DEVICES = frozenset({"/dev/null", "/dev/urandom"})
# Where a write event carries the folder descriptor its relative path is taken from
# (shutil.rmtree removes a temporary folder's files that way).
DIR_FD = {
    "os.remove": (1,),
    "os.rmdir": (1,),
    "os.mkdir": (2,),
    "os.chmod": (2,),
    "os.utime": (3,),
    "os.rename": (2, 3),
}
FUNCTION_INTERNALS = frozenset(
    {"__code__", "__globals__", "__closure__", "__defaults__", "__kwdefaults__"}
)
PROTECTED_PACKAGES = ("ninetoothed", "grader", "benchmarks")
# torch's modules whose public functions the grader calls or times a kernel against
# (torch.mm is the speed phase's reference): compared by their functions only, since
# torch binds other names lazily as it is used.
TORCH_MODULES = ("torch", "torch.cuda", "torch.testing", "torch.functional")


def _real(path):
    return os.path.realpath(os.fsdecode(path))


def _under(path, roots):
    path = _real(path)
    return any(path == root or path.startswith(root + os.sep) for root in roots)


def _absolute_paths(event, args):
    """The paths a write event names, a relative one joined to the folder of its descriptor."""
    folders = {}
    for index in DIR_FD.get(event, ()):
        descriptor = args[index] if index < len(args) else None
        if isinstance(descriptor, int) and descriptor >= 0:
            try:
                folders[index] = os.readlink(f"/proc/self/fd/{descriptor}")
            except OSError:
                folders[index] = "/"  # unknown: judged as a path outside every root
    base = next(iter(folders.values()), None)
    paths = []
    for arg in args:
        if isinstance(arg, (str, bytes, os.PathLike)):
            path = os.fsdecode(arg)
            paths.append(os.path.join(base, path) if base and not os.path.isabs(path) else path)
    return paths


def _package_folders():
    folders = set()
    for name in PACKAGES - {"grader"}:
        module = sys.modules.get(name)
        if module is not None and getattr(module, "__file__", None):
            folders.add(os.path.dirname(os.path.dirname(_real(module.__file__))))
    return folders


def _module_file(name):
    module = sys.modules.get(name)
    return (
        _real(module.__file__) if module is not None and getattr(module, "__file__", None) else None
    )


def _checked_kernel(filename):
    """Whether ``filename`` is a generated kernel file whose content this process's check
    passed (grader.core.generated_cache names each file by its content's sha256)."""
    from grader.core import generated_cache

    digest = os.path.splitext(os.path.basename(filename))[0]
    if digest not in generated_cache.checked:
        return False
    try:
        with open(filename, "rb") as handle:
            return hashlib.sha256(handle.read()).hexdigest() == digest
    except OSError:
        return False


def _names(code):
    """Every name a code object, or one it holds, uses."""
    names = set(code.co_names) | set(code.co_varnames) | set(code.co_freevars)
    for constant in code.co_consts:
        if hasattr(constant, "co_names"):
            names |= _names(constant)
    return names


def _caller_file():
    """The file of the first frame outside this module: who raised the event."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename == __file__:
        frame = frame.f_back
    return frame.f_code.co_filename if frame is not None else ""


class Policy:
    """What one kernel run may do: ``judge(event, args)`` is None, or why not."""

    def __init__(self, kernel_file, writable=None):
        home = os.environ.get("HOME", "")
        import tempfile

        writable = writable or [
            home,
            tempfile.gettempdir(),
            os.environ.get("TRITON_CACHE_DIR", ""),
            os.environ.get("XDG_CACHE_HOME", ""),
        ]
        self.writable = tuple(sorted({_real(folder) for folder in writable if folder}))
        readable = {_real(entry) for entry in sys.path if entry and os.path.isdir(entry)}
        readable |= {
            _real(prefix)
            for prefix in (sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix)
        }
        readable |= _package_folders() | {os.path.dirname(_real(kernel_file))}
        self.readable = tuple(sorted(readable | set(self.writable)))
        self.tools = tuple(sorted(_package_folders()))
        self.kernel_file = _real(kernel_file)
        import sysconfig

        stdlib = _real(sysconfig.get_paths()["stdlib"])
        self.writers = {os.path.join(stdlib, name) for name in STDLIB_WRITERS}
        self.monomials = _module_file("sympy.polys.monomials")
        # NineToothed's generated kernel files (generation.CACHE_DIR): imported only when
        # their content is what grader.core.generated_kernel passed in this process.
        self.generated = (_real(os.path.join(home, ".ninetoothed")),) if home else ()
        triton = sys.modules.get("triton")
        self.triton = (os.path.dirname(_real(triton.__file__)),) if triton else ()
        # Triton's binder and interpreter by their files: they may not be imported yet.
        runtime = os.path.join(self.triton[0], "runtime") if triton else ""
        self.binder = os.path.join(runtime, "jit.py") if triton else None
        self.interpreter = os.path.join(runtime, "interpreter.py") if triton else None

    def judge(self, event, args):
        if event in HARMLESS or event.startswith("ctypes."):
            return None
        check = getattr(self, "_" + event.replace(".", "_").replace("/", "_"), None)
        if check is not None:
            return check(args)
        if event in READS:
            return self._paths(event, args[:1], self.readable)
        if event in WRITES:
            return self._paths(event, _absolute_paths(event, args), self.writable)
        return f"{event}, which no kernel build needs"

    def _paths(self, event, paths, roots):
        for path in paths:
            if isinstance(path, int) or path is None:
                continue
            if not _under(path, roots):
                return f"{event} on {os.fsdecode(path)!r}, outside the run's own folders"
        return None

    def _open(self, args):
        path, mode = args[0], args[1] or "r"
        if isinstance(path, int) or (isinstance(path, str) and path in DEVICES):
            return None  # a descriptor already open, or /dev/null
        writing = any(letter in str(mode) for letter in "wax+")
        return self._paths(
            f"open(mode={mode!r})", [path], self.writable if writing else self.readable
        )

    def _import(self, args):
        name, filename = str(args[0]), args[1]
        if name.split(".")[0] in PACKAGES:
            return None
        if name in TRITON_EXTENSIONS and filename and _under(filename, self.writable):
            return None  # Triton's launcher, compiled into the run's own cache
        return f"import {name}, which no kernel build needs"

    def _exec(self, args):
        """Code runs only where the build needs it, each kind by what it may hold: never
        because Triton, NineToothed or the standard library is the caller."""
        code = args[0]
        filename = getattr(code, "co_filename", "")
        caller = _caller_file()
        names = _names(code)
        if (
            caller in IMPORT_SYSTEM
            and filename
            and not filename.startswith("<")
            and _under(filename, self.readable)
        ):
            if _under(filename, self.generated) and not _checked_kernel(filename):
                return f"import of the generated kernel {filename!r}, which no check passed"
            return None  # a module's own code, imported from its file
        if filename == "<string>" and names <= SYMBOLIC_NAMES | SIMULATION_NAMES:
            return None  # arithmetic from text: ninetoothed.eval, sympy's parser
        if (
            filename == "<string>"
            and caller == self.binder
            and all(name in BINDER_NAMES or GENERATED_PARAMETER.fullmatch(name) for name in names)
        ):
            return None  # Triton's launch binder, written from the checked kernel's parameters
        if caller == self.interpreter and (
            _checked_kernel(filename) or _under(filename, self.triton)
        ):
            return None  # the interpreter's rewrite of a generated file the check passed,
            # or of Triton's own functions (tl.zeros), read from Triton's installed files
        if (
            filename == "<string>"
            and caller in self.writers
            and all(name.isidentifier() for name in names)
        ):
            return None  # dataclasses and namedtuple write methods of a class being defined
        if (
            filename == "<string>"
            and caller == self.monomials
            and all(MONOMIAL_NAME.fullmatch(name) for name in names)
        ):
            return None  # sympy's polynomial rings write their monomial arithmetic from a
            # template: NineToothed simplifies a tile whose size is a symbol (M, say) that way
        return f"exec of code from {filename!r} (called from {caller!r})"

    def _os_posix_spawn(self, args):
        return self._subprocess_Popen(args[:2])  # (path, argv, env): subprocess's fast path

    def _subprocess_Popen(self, args):
        executable, arguments = args[0], args[1] or []
        arguments = [
            os.fsdecode(arg)
            for arg in ([arguments] if isinstance(arguments, (str, bytes)) else arguments)
        ]
        if arguments[:3] == [sys.executable, "-m", "grader.core.gpu_compile"]:
            return None
        program = executable or (arguments[0] if arguments else "")
        if program and (
            _under(program, self.tools)
            or os.path.basename(os.fsdecode(program)) in TOOLS
            and _real(program).startswith(("/usr/", "/sbin/", "/bin/"))
        ):
            return None
        return f"a subprocess {os.fsdecode(program)!r}"

    def _object___setattr__(self, args):
        target, name = args[0], args[1]
        if name in FUNCTION_INTERNALS:
            return f"a change of {name} on {target!r}"
        module = getattr(target, "__module__", "") or ""
        if isinstance(target, type) and module.startswith(PROTECTED_PACKAGES) and name != "__doc__":
            return f"a change of {module}.{target.__name__}.{name}"
        return None

    _object___delattr__ = _object___setattr__


def install(policy, on_refusal, exit_code=None):
    """Judge every audit event from now on; the first refused one calls
    ``on_refusal(why)`` once and ends the process with ``exit_code``. Without an exit
    code every refusal is only reported (the checker's mutation test records them)."""
    busy = threading.local()

    def hook(event, args):
        if getattr(busy, "judging", False):
            return  # events of this thread's judging, or of the refusal's own report
        busy.judging = True
        try:
            why = policy.judge(event, args)
            if why is not None:
                on_refusal(why)
                if exit_code is not None:
                    # Where it happened, for the staff's stderr.log: a refusal of what a build
                    # does need is the guard's bug, and the stack says whose call it was.
                    print(f"build guard: {why}", file=sys.stderr)
                    traceback.print_stack(limit=16, file=sys.stderr)
                    sys.stderr.flush()
                    os._exit(exit_code)
        finally:
            busy.judging = False

    sys.addaudithook(hook)


# What the module check compares: before any launch, Triton's modules too; after one, only
# PROTECTED_PACKAGES (Triton's interpreter patches triton.language at every launch).
BEFORE_LAUNCH = PROTECTED_PACKAGES + ("triton",)
AFTER_LAUNCH = PROTECTED_PACKAGES
# Whose classes it compares too, at every check: assigning a class attribute raises no
# audit event either, and a swapped JITFunction.run or Tensor.cpu launches or reads back a
# stand-in. After a launch, the classes of triton.language (the interpreter's) are not.
CLASS_PACKAGES = PROTECTED_PACKAGES + ("triton", "torch")
LAUNCH_PATCHED = "triton.language"


def snapshot(packages=BEFORE_LAUNCH):
    """What every loaded module of ``packages`` binds, the public functions of
    TORCH_MODULES, and what code every class of CLASS_PACKAGES holds, by identity: neither
    change raises an audit event, so a patched ``ninetoothed.make``, ``torch.mm`` or
    ``JITFunction.run`` shows only here."""
    bindings, classes = {}, {}
    for name, module in list(sys.modules.items()):
        top = name.split(".")[0]
        if module is None or top not in CLASS_PACKAGES:
            continue
        if top in packages:
            bindings[name] = {key: id(value) for key, value in list(vars(module).items())}
        elif name in TORCH_MODULES:
            bindings[name] = {
                key: id(value)
                for key, value in list(vars(module).items())
                if not key.startswith("_") and callable(value)
            }
        for value in list(vars(module).values()):
            # type(value), not isinstance: a deprecated alias warns when asked its __class__
            if issubclass(type(value), type) and (value.__module__ or "").split(".")[0] == top:
                classes[f"{value.__module__}.{value.__qualname__}"] = _class_code(value)
    return {"modules": bindings, "classes": classes}


def _class_code(cls):
    """A class's methods, descriptors and nested classes by identity; its plain values
    (counters, caches such as ``__slotnames__``) change as it is used."""
    return {
        key: id(value)
        for key, value in list(vars(cls).items())
        if callable(value) or isinstance(value, (property, staticmethod, classmethod))
    }


def changed(before, packages=BEFORE_LAUNCH):
    """The ``module.attribute`` names of ``packages``, and the ``Class.attribute`` names of
    CLASS_PACKAGES, bound otherwise than in ``before`` (modules and classes made since
    then are new code, judged by the hook when they were imported)."""
    now = snapshot(packages)
    skip = () if "triton" in packages else (LAUNCH_PATCHED + ".",)
    found = []
    for kind, names in (("modules", packages), ("classes", CLASS_PACKAGES)):
        for name, bindings in before[kind].items():
            torch = kind == "modules" and name in TORCH_MODULES
            if (name.split(".")[0] not in names and not torch) or name.startswith(skip):
                continue
            current = now[kind].get(name, {})
            for key in sorted(set(bindings) if torch else set(bindings) | set(current)):
                if bindings.get(key) != current.get(key):
                    found.append(f"{name}.{key}")
    return found
