"""Choose where kernels run: the GPU, or the Triton interpreter on the CPU.

NineToothed asks Triton's active driver for device properties while it builds a
kernel, and with no GPU there is no driver at all, even with TRITON_INTERPRET=1.
On the CPU we therefore set TRITON_INTERPRET=1 before triton is imported and
install a tiny stand-in driver that answers those two questions. CPU results say
whether a kernel is *correct*; they say nothing about its speed. The interpreter also
skips the integer-overflow checks that nothing enforces (``_skip_unenforced_checks``).

Set ``NTGEMM_BACKEND`` to ``interpreter`` to force the CPU path on a GPU machine
(to reproduce what a student without a GPU sees), ``gpu`` to insist on CUDA, or
leave it unset (``auto``).

Activating also makes NineToothed write its generated kernel files atomically
(grader.core.generated_cache), so processes that share a home never import half a file.
"""

import dataclasses
import importlib.metadata
import importlib.util
import os
import pathlib
import sys

from grader.core import generated_cache

ENV_VAR = "NTGEMM_BACKEND"
CHOICES = ("auto", "gpu", "interpreter")

# What the stand-in driver reports: an H100/H200-class SM. NineToothed only
# uses these to bound tile sizes while generating code.
_STAND_IN_PROPERTIES = {"max_shared_mem": 232448, "max_num_regs": 65536}


@dataclasses.dataclass(frozen=True)
class Backend:
    name: str  # "gpu" or "interpreter"
    device: str  # the torch device tensors live on: "cuda" or "cpu"
    detail: str  # one line for humans: what runs, and what the results mean

    @property
    def is_interpreter(self):
        return self.name == "interpreter"


_active = None


def requested():
    """The backend asked for through NTGEMM_BACKEND, validated."""
    value = os.environ.get(ENV_VAR, "auto").strip().lower() or "auto"
    if value not in CHOICES:
        raise ValueError(
            f"{ENV_VAR}={value!r} is not understood: expected one of {', '.join(CHOICES)}"
        )
    return value


def activate():
    """Pick and set up the backend once per process; later calls return it."""
    global _active
    if _active is not None:
        return _active

    choice = requested()
    import torch

    has_cuda = torch.cuda.is_available()
    if choice == "gpu" and not has_cuda:
        raise RuntimeError(f"{ENV_VAR}=gpu, but torch sees no CUDA device")

    if choice == "interpreter" or not has_cuda:
        _enable_interpreter()
        why = "forced by NTGEMM_BACKEND" if has_cuda else "no CUDA device found"
        chosen = Backend(
            "interpreter",
            "cpu",
            f"Triton interpreter on the CPU ({why}); results check correctness only, never speed",
        )
    else:
        chosen = Backend(
            "gpu", "cuda", f"GPU: {torch.cuda.get_device_name(0)} (CUDA {torch.version.cuda})"
        )
    # Processes sharing a home must never import a half-written kernel file.
    generated_cache.install()
    _active = chosen
    return _active


def interpreter_problem():
    """Why Triton's interpreter cannot run in this environment, or None.

    Read from the installed files, without importing triton (the batch grader's
    parent process must not). The one known clash: numpy 2.4 stopped turning
    one-element arrays into Python ints, and Triton's interpreter relied on it
    until triton-lang/triton#9172 (Triton 3.6.0 still does); every kernel then
    fails with "only 0-dimensional arrays can be converted to Python scalars".
    """
    if not _numpy_refuses_one_element_ints():
        return None
    source = _interpreter_source()
    if source is None or "int(self.handle.data))" not in source:
        return None
    import numpy

    return (
        f"Triton {_version('triton')}'s interpreter cannot run with numpy {numpy.__version__} "
        "(numpy 2.4 no longer turns one-element arrays into ints, and this Triton still "
        "relies on it; see triton-lang/triton#9171). Install an older numpy with "
        'python -m pip install "numpy<2.4", or a Triton release newer than '
        f"{_version('triton')}."
    )


def _numpy_refuses_one_element_ints():
    import warnings

    import numpy

    with warnings.catch_warnings():  # numpy 1.25-2.3 only warn, and -W error must not crash here
        warnings.simplefilter("ignore")
        try:
            int(numpy.zeros(1))
        except TypeError:
            return True
    return False


def _interpreter_source():
    spec = importlib.util.find_spec("triton")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = pathlib.Path(next(iter(spec.submodule_search_locations))) / "runtime" / "interpreter.py"
    try:
        return path.read_text(encoding="utf-8")
    except OSError:
        return None


def _version(package):
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return "?"


def _enable_interpreter():
    if "triton" in sys.modules and os.environ.get("TRITON_INTERPRET") != "1":
        raise RuntimeError(
            "triton was imported before the interpreter backend was chosen; "
            "import grader.core.backend and call activate() first"
        )
    problem = interpreter_problem()
    if problem:
        raise RuntimeError(problem)
    os.environ["TRITON_INTERPRET"] = "1"
    import triton

    triton.runtime.driver.set_active(_StandInDriver())
    _skip_unenforced_checks()


def _skip_unenforced_checks():
    """Triton wraps every integer +, - and * of a kernel in an int64 overflow check whose only
    effect is a device_assert, which Triton drops unless the kernel is compiled for debugging
    (``semantic.device_assert``). A GPU build optimises the unused check away; the interpreter
    computed it for every element of every program: about 70% of a GEMM's time on the CPU,
    for nothing. Turned off only where nothing would enforce it, so every kernel computes
    exactly what it computed before."""
    from triton.runtime import interpreter

    builder = getattr(interpreter, "interpreter_builder", None)
    options = getattr(builder, "options", None)
    if (
        options is None
        or getattr(options, "debug", True)
        or not getattr(options, "sanitize_overflow", False)
    ):
        return
    builder.options = dataclasses.replace(options, sanitize_overflow=False)


class _StandInUtils:
    @staticmethod
    def get_device_properties(device):
        return dict(_STAND_IN_PROPERTIES)


class _StandInDriver:
    """Just enough of a Triton driver for NineToothed's code generator."""

    utils = _StandInUtils()

    def get_current_device(self):
        return 0

    def get_active_torch_device(self):
        import torch

        return torch.device("cpu")
