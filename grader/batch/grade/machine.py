"""The machine a batch grades on, as environment.json records it beside the batch's settings.

Written by the session beside the gradebook (and by merge, over its shards), so a gradebook
can always be traced to the stack and the GPUs that graded it.
"""

import datetime
import platform
import subprocess

from benchmarks.environment import git_revision, package_version
from grader.batch.grade import grading


def _gpus(backend_name):
    """The GPUs nvidia-smi lists (index, name, driver, memory); none off a GPU."""
    if backend_name != "gpu":
        return []
    try:
        result = subprocess.run(
            ["nvidia-smi", "--query-gpu=index,name,driver_version,memory.total",
             "--format=csv,noheader"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return []
    gpus = []
    for line in result.stdout.strip().splitlines():
        parts = [part.strip() for part in line.split(",")]
        if len(parts) == 4:
            gpus.append({"index": parts[0], "name": parts[1], "driver": parts[2],
                         "memory": parts[3]})
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
    }
    info.update(extra or {})
    return info
