"""The machine a batch grades on: the backend its workers use, the GPU each worker slot
gets, and what environment.json records of them.

environment.json is written by the session beside the gradebook (and by merge, over its
shards), so a gradebook can always be traced to the stack and the GPUs that graded it.
"""

import datetime
import os
import platform
import subprocess

from benchmarks.environment import capture, git_revision, package_version
from grader.batch.grade import grading
from grader.batch.outputs.constraints import installed_stack
from grader.batch.status import GraderError


def decide_backend():
    """The backend the workers will use, decided without importing triton here.

    An interpreter that cannot run here stops the batch before anyone is graded:
    otherwise every student would get the same crash as a verdict.
    """
    from grader.core import backend as backends

    try:
        choice = backends.requested()
    except ValueError as error:
        raise GraderError(str(error)) from None
    if choice != "interpreter":
        import torch

        if torch.cuda.is_available():
            return "gpu"
        if choice == "gpu":
            raise GraderError(f"{backends.ENV_VAR}=gpu, but torch sees no CUDA device")
    problem = backends.interpreter_problem()
    if problem:
        raise GraderError(problem)
    return "interpreter"


def default_jobs(cores, gpus):
    """Submissions graded at once when -j is not given. On a GPU host a submission spends
    most of its time in Triton's compiler, on the CPU, two runs at a time, and more workers
    than half the cores made a 100-file batch slower (docs/stress-runs/timeline.md, -j 12 and
    -j 16 against -j 8). On the interpreter every run is CPU work: one per core."""
    if gpus == 0:
        return cores
    return max(gpus, cores // 2)


def assign_devices(jobs, visible):
    """The device each of ``jobs`` worker slots gets: one GPU per slot, round robin.

    ``visible`` lists the GPUs the grader may use (from ``--gpus`` or the parent's
    own ``CUDA_VISIBLE_DEVICES``); an empty list means no GPU (every slot gets None).
    """
    if not visible:
        return [None] * jobs
    return [visible[slot % len(visible)] for slot in range(jobs)]


def parse_gpus(text, environ=None, count=None):
    """The GPU list from ``--gpus`` (``all``, ``none`` or ``0,2,3``); the default is what
    ``CUDA_VISIBLE_DEVICES`` allows, else ``count`` devices."""
    environ = os.environ if environ is None else environ
    if text is not None and text.strip().lower() == "none":
        return []
    if text is not None and text.strip().lower() != "all":
        items = [item.strip() for item in text.split(",") if item.strip()]
        if not items:
            raise ValueError("--gpus: give 'all', 'none' or a comma-separated list such as 0,1")
        return items
    if environ.get("CUDA_VISIBLE_DEVICES", "").strip():
        return [
            item.strip()
            for item in environ["CUDA_VISIBLE_DEVICES"].split(",")
            if item.strip() and item.strip() != "-1"
        ]
    return [str(index) for index in range(count or 0)]


def gpu_environment(device):
    """benchmarks.environment's record of one GPU, before any timing heats it.

    ``device`` is what a worker gets as CUDA_VISIBLE_DEVICES; this process sees the GPUs
    of its own CUDA_VISIBLE_DEVICES, so the device is found by its place in that list."""
    import torch

    visible = [
        entry.strip()
        for entry in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",")
        if entry.strip()
    ]
    position = visible.index(str(device)) if str(device) in visible else device
    try:
        with torch.cuda.device(int(position)):
            return capture(with_gpu=True)
    except (ValueError, RuntimeError):  # a UUID, or a GPU this process cannot select
        return capture(with_gpu=True)


def _gpus(backend_name):
    """The GPUs nvidia-smi lists (index, name, driver, memory); none off a GPU."""
    if backend_name != "gpu":
        return []
    try:
        result = subprocess.run(
            [
                "nvidia-smi",
                "--query-gpu=index,name,driver_version,memory.total",
                "--format=csv,noheader",
            ],
            capture_output=True,
            text=True,
            timeout=20,
        )
    except (OSError, subprocess.SubprocessError):
        return []
    gpus = []
    for line in result.stdout.strip().splitlines():
        parts = [part.strip() for part in line.split(",")]
        if len(parts) == 4:
            gpus.append(
                {"index": parts[0], "name": parts[1], "driver": parts[2], "memory": parts[3]}
            )
    return gpus


def environment(settings, extra=None):
    """What environment.json records of a batch: when, the settings that change a grade, the
    GPUs, the software stack and the grader's version, then ``extra`` (the session's own)."""
    import torch

    gpus = _gpus(settings.backend)
    info = {
        "timestamp": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "backend": settings.backend,
        "secret_fingerprint": settings.fingerprint,
        "timeout_s": settings.timeout_s,
        "memory_limit_gib": round(settings.memory_limit_bytes / 2**30, 3),
        "isolation": settings.isolation,
        "gpus": gpus,
        "gpu": gpus[0]["name"] if gpus else None,
        "driver": gpus[0]["driver"] if gpus else None,
        "cuda": torch.version.cuda,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "torch": torch.__version__,
        "triton": package_version("triton"),
        "ninetoothed": package_version("ninetoothed"),
        "pandas": package_version("pandas"),
        "grader_revision": git_revision(),
        "grader_version": grading.grader_version(),
        "packages": installed_stack(),  # what 'python -m grader constraints' pins
    }
    info.update(extra or {})
    return info
