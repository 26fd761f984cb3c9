"""Record what a benchmark ran on: GPU, driver, software versions, host, revision, clocks.

Every field is a plain string or number so that it can go on every CSV row. A
field that cannot be found is an empty string, never a guess: the GPU's SM
clock, temperature and power come from ``nvidia-smi`` when it is on the PATH,
else from NVML through ``pynvml`` (the nvidia-ml-py package) when it imports,
else they stay empty.
"""

import datetime
import importlib.metadata
import pathlib
import os
import platform
import shutil
import socket
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent

# nvidia-smi --query-gpu field -> our column name.
SMI_FIELDS = {
    "name": "smi_gpu_name",
    "driver_version": "driver",
    "clocks.sm": "sm_clock_mhz",
    "clocks.max.sm": "max_sm_clock_mhz",
    "temperature.gpu": "temperature_c",
    "power.draw": "power_w",
    "power.limit": "power_limit_w",
}
TELEMETRY_COLUMNS = tuple(SMI_FIELDS.values())

# Columns every run records, in CSV order.
COLUMNS = (
    "timestamp",
    "host",
    "git_revision",
    "gpu_name",
    "driver",
    "cuda",
    "torch_version",
    "triton_version",
    "ninetoothed_version",
    "python_version",
    "sm_clock_mhz",
    "max_sm_clock_mhz",
    "temperature_c",
    "power_w",
    "power_limit_w",
    "telemetry_source",
)


def package_version(name):
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        module = sys.modules.get(name)
        return str(getattr(module, "__version__", "")) if module else ""


def git_revision(root=ROOT):
    """Short commit of the kit's checkout, with ``+dirty`` when files differ; '' without git.

    A copy without its .git folder (a GPU box the tree was shipped to) can name its
    revision through NTGEMM_GIT_REVISION.
    """
    if os.environ.get("NTGEMM_GIT_REVISION"):
        return os.environ["NTGEMM_GIT_REVISION"]
    git = shutil.which("git")
    if git is None:
        return ""
    try:
        rev = subprocess.run(
            [git, "rev-parse", "--short=12", "HEAD"],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=10,
        )
        if rev.returncode != 0:
            return ""
        dirty = subprocess.run(
            [git, "status", "--porcelain", "--untracked-files=no"],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=10,
        )
        suffix = "+dirty" if dirty.returncode == 0 and dirty.stdout.strip() else ""
        return rev.stdout.strip() + suffix
    except (OSError, subprocess.SubprocessError):
        return ""


def _number(text):
    """'1980 MHz' / '45' / '[N/A]' -> 1980.0 / 45.0 / ''."""
    text = str(text).strip().split(" ")[0]
    try:
        return float(text)
    except ValueError:
        return ""


def query_nvidia_smi(gpu_id=None):
    """Telemetry from nvidia-smi, or {} when it is missing or fails.

    ``gpu_id`` is what ``nvidia-smi -i`` takes (an index or a ``GPU-...`` UUID).
    """
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return {}
    command = [smi, f"--query-gpu={','.join(SMI_FIELDS)}", "--format=csv,noheader,nounits"]
    if gpu_id is not None:
        command += ["-i", str(gpu_id)]
    try:
        result = subprocess.run(command, capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return {}
    lines = [line for line in result.stdout.splitlines() if line.strip()]
    if result.returncode != 0 or not lines:
        return {}
    values = [value.strip() for value in lines[0].split(",")]
    if len(values) != len(SMI_FIELDS):
        return {}
    record = {}
    for column, value in zip(SMI_FIELDS.values(), values):
        record[column] = value if column in ("smi_gpu_name", "driver") else _number(value)
    return record


def query_nvml(index=0):
    """The same telemetry through NVML (pynvml), or {} when it is unavailable."""
    try:
        import pynvml
    except Exception:  # noqa: BLE001 - not installed, or a broken install: both mean "no NVML here"
        return {}
    try:
        pynvml.nvmlInit()
    except Exception:  # noqa: BLE001 - NVML present but unusable: no telemetry, an empty field
        return {}
    try:
        handle = pynvml.nvmlDeviceGetHandleByIndex(index)

        def attempt(call, scale=1.0):
            try:
                return float(call()) * scale
            except Exception:  # noqa: BLE001 - one reading NVML refuses leaves its field empty
                return ""

        def text(value):
            return value.decode() if isinstance(value, bytes) else str(value)

        return {
            "smi_gpu_name": text(pynvml.nvmlDeviceGetName(handle)),
            "driver": text(pynvml.nvmlSystemGetDriverVersion()),
            "sm_clock_mhz": attempt(
                lambda: pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_SM)
            ),
            "max_sm_clock_mhz": attempt(
                lambda: pynvml.nvmlDeviceGetMaxClockInfo(handle, pynvml.NVML_CLOCK_SM)
            ),
            "temperature_c": attempt(
                lambda: pynvml.nvmlDeviceGetTemperature(handle, pynvml.NVML_TEMPERATURE_GPU)
            ),
            "power_w": attempt(lambda: pynvml.nvmlDeviceGetPowerUsage(handle), 1e-3),
            "power_limit_w": attempt(lambda: pynvml.nvmlDeviceGetEnforcedPowerLimit(handle), 1e-3),
        }
    except Exception:  # noqa: BLE001 - NVML failing midway: no telemetry, empty fields
        return {}
    finally:
        try:
            pynvml.nvmlShutdown()
        except Exception:  # noqa: BLE001 - shutting NVML down is best effort
            pass


def telemetry(gpu_id=None, index=0):
    """(record, source): nvidia-smi first, NVML second, empty fields last."""
    record = query_nvidia_smi(gpu_id)
    if not record and gpu_id is not None:
        record = query_nvidia_smi(index)
    if record:
        return record, "nvidia-smi"
    record = query_nvml(index)
    if record:
        return record, "nvml"
    return {}, ""


def _gpu_identity():
    """(name, CUDA version, nvidia-smi id) of torch's current device; blanks without CUDA."""
    import torch

    cuda = torch.version.cuda or ""
    if not torch.cuda.is_available():
        return "", cuda, None
    index = torch.cuda.current_device()
    properties = torch.cuda.get_device_properties(index)
    uuid = getattr(properties, "uuid", None)
    gpu_id = None
    if uuid is not None:
        text = str(uuid)
        gpu_id = text if text.startswith(("GPU-", "MIG-")) else f"GPU-{text}"
    return properties.name, cuda, gpu_id


def capture(with_gpu=True):
    """The run's environment as one flat dict with every key of COLUMNS."""
    record = dict.fromkeys(COLUMNS, "")
    record["timestamp"] = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    record["host"] = socket.gethostname()
    record["git_revision"] = git_revision()
    record["python_version"] = platform.python_version()
    record["torch_version"] = package_version("torch")
    record["triton_version"] = package_version("triton")
    record["ninetoothed_version"] = package_version("ninetoothed")

    if with_gpu:
        name, cuda, gpu_id = _gpu_identity()
        record["gpu_name"] = name
        record["cuda"] = cuda
        measured, source = telemetry(gpu_id)
        for column in TELEMETRY_COLUMNS:
            if column in record and column in measured:
                record[column] = measured[column]
        record["telemetry_source"] = source
        if not record["gpu_name"]:
            record["gpu_name"] = measured.get("smi_gpu_name", "")
    else:
        import torch

        record["cuda"] = torch.version.cuda or ""
    return record
