"""NineToothed's generated kernel files appear whole (grader.core.generated_cache).

Processes that share a home and generate the same kernel at once used to race on
``~/.ninetoothed/<sha256>.py``, which NineToothed writes in place: a reader could import
an empty or cut file (KeyError, SyntaxError), and a late second writer could truncate a
file another process had imported, so that Triton's source read raised "@jit functions
should be defined in a Python file". The in-place arms below show both deterministically
on NineToothed's own write; the kit's arms, and processes contending for real, must
never see them.
"""

import builtins
import hashlib
import multiprocessing
import os
import sys
import threading
import uuid

import pytest

from grader.core import generated_cache

ROUNDS = 60  # fresh files raced for by every process
BUILDS = 4  # whole ninetoothed.make builds and launches, also raced for
PROCESSES = 4

KERNEL = (
    "import triton\nimport triton.language\n\n\n@triton.jit\n"
    "def kernel(ninetoothed_a_pointer, ninetoothed_b_pointer, ninetoothed_c_pointer, "
    "ninetoothed_n):\n"
    + "".join(f"    y{i} = ninetoothed_n + {i}  # {'padding ' * 8}\n" for i in range(150))
    + "\n\ndef launch_kernel(a, b, c):\n    kernel[lambda meta: (1,)](a, b, c, a.size(0))\n"
)  # over 8 KiB, so that a Python write of it takes more than one system call; shaped as
# NineToothed writes a kernel, which grader.core.generated_kernel checks before any write


def _read_as_triton_does(path):
    """Import the file as NineToothed does and wrap its kernel as Triton's @jit does."""
    import triton
    from ninetoothed.jit import import_from_path

    module = vars(import_from_path(path, path))
    triton.runtime.jit.JITFunction(module["kernel"].fn)  # reads the source via linecache
    return module["launch_kernel"]


class _PausedWrite:
    """A text file whose first write stops at ``fraction`` of its text until ``resume``."""

    def __init__(self, real, fraction, paused, resume):
        self.real, self.fraction, self.paused, self.resume = real, fraction, paused, resume

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.real.close()

    def write(self, text):
        cut = int(len(text) * self.fraction)
        self.real.write(text[:cut])
        self.real.flush()
        self.paused.set()
        assert self.resume.wait(30)
        return cut + self.real.write(text[cut:])


@pytest.fixture
def paused_writes(monkeypatch):
    """Make writes through ``open`` in a given module pause partway; yields a starter."""
    paused, resume = threading.Event(), threading.Event()

    def start(module, work, fraction=0.5):
        def paused_open(*args, **kwargs):
            return _PausedWrite(builtins.open(*args, **kwargs), fraction, paused, resume)

        monkeypatch.setattr(module, "open", paused_open, raising=False)
        worker = threading.Thread(target=work, daemon=True)
        worker.start()
        assert paused.wait(30), "the write never started"
        return worker

    yield start, resume
    resume.set()


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    from ninetoothed import generation

    monkeypatch.setattr(generation, "CACHE_DIR", tmp_path)
    return tmp_path


def _in_place_write(path, text):
    """What NineToothed 0.26's cache_source does once it found no file at ``path``."""
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)


def _final_path(folder):
    return folder / f"{hashlib.sha256(KERNEL.encode('utf-8')).hexdigest()}.py"


def test_the_kit_replaces_ninetootheds_cache_source():
    from ninetoothed import debugging, generation

    assert generation.cache_source is generated_cache.cache_source  # activate() installed it
    assert debugging.cache_source is generated_cache.cache_source
    generated_cache.install()  # again: nothing to do
    assert generation.cache_source is generated_cache.cache_source


def test_the_file_is_ninetootheds_own(cache_dir, tmp_path_factory, monkeypatch):
    from ninetoothed import generation

    path = generated_cache.cache_source(KERNEL)
    elsewhere = tmp_path_factory.mktemp("ninetoothed")
    monkeypatch.setattr(generation, "CACHE_DIR", elsewhere)
    theirs = generated_cache._original(KERNEL)
    assert path.name == theirs.name and path.parent == cache_dir
    assert path.read_bytes() == theirs.read_bytes()
    assert path.stat().st_mode == theirs.stat().st_mode
    assert [entry.name for entry in cache_dir.iterdir()] == [path.name]  # no temporary left


def test_a_leftover_cut_file_is_rewritten_whole(cache_dir):
    path = _final_path(cache_dir)
    path.write_text(KERNEL[:100], encoding="utf-8")  # a writer killed mid-write
    assert generated_cache.cache_source(KERNEL) == path
    assert path.read_text(encoding="utf-8") == KERNEL


def test_a_changed_ninetoothed_fails_loudly_with_its_version(monkeypatch):
    from ninetoothed import generation

    def cache_source(source):
        return generation.CACHE_DIR / "elsewhere.py"

    monkeypatch.setattr(generation, "cache_source", cache_source)
    with pytest.raises(RuntimeError, match=r"ninetoothed \S+: .*is not the function it was in"):
        generated_cache.install()
    assert generation.cache_source is cache_source  # left alone, never half-replaced


@pytest.mark.parametrize("writer", ["in place", "kit"])
def test_a_reader_never_finds_a_partial_file(writer, cache_dir, paused_writes):
    from ninetoothed import generation

    start, resume = paused_writes
    path = _final_path(cache_dir)
    if writer == "in place":
        worker = start(generation, lambda: generated_cache._original(KERNEL))
        assert 0 < path.stat().st_size < len(KERNEL)  # half a module, there to import
        with pytest.raises((KeyError, SyntaxError)):
            _read_as_triton_does(str(path))
    else:
        worker = start(generated_cache, lambda: generated_cache.cache_source(KERNEL))
        assert not path.exists()
    resume.set()
    worker.join(30)
    assert path.read_text(encoding="utf-8") == KERNEL


@pytest.mark.parametrize("writer", ["in place", "kit"])
def test_a_late_second_writer_never_cuts_a_file_already_imported(
    writer, cache_dir, paused_writes, monkeypatch
):
    """The second writer checked for the file before the first one had written it."""
    import triton
    from ninetoothed.jit import import_from_path

    start, resume = paused_writes
    path = generated_cache.cache_source(KERNEL)
    fn = vars(import_from_path(str(path), str(path)))["kernel"].fn
    if writer == "in place":  # paused just after open() emptied the file
        worker = start(sys.modules[__name__], lambda: _in_place_write(path, KERNEL), fraction=0)
        with pytest.raises(ValueError, match="@jit functions should be defined in a Python file"):
            triton.runtime.jit.JITFunction(fn)
    else:
        monkeypatch.setattr(generated_cache, "_holds", lambda *_: False)
        worker = start(generated_cache, lambda: generated_cache.cache_source(KERNEL), fraction=0)
        triton.runtime.jit.JITFunction(fn)
    resume.set()
    worker.join(30)
    triton.runtime.jit.JITFunction(fn)


def _contender(home, tag, barrier, results):
    """One process: race the others for fresh files in ``home``, then for whole builds."""
    os.environ["HOME"] = home
    failures = []
    try:
        from grader.core import backend

        device = backend.activate().device
        import torch
        from ninetoothed import Tensor, generation, make

        from solutions import ninetoothed_gemm as reference

        for index in range(ROUNDS):
            source = f"# {tag} round {index}\n{KERNEL}"
            barrier.wait(120)
            try:
                _read_as_triton_does(str(generation.cache_source(source)))
            except Exception as error:  # noqa: BLE001 - every failure is counted
                failures.append(f"round {index}: {type(error).__name__}: {error}")
        lhs = torch.randn(20, 30, dtype=torch.float16, device=device)
        rhs = torch.randn(30, 10, dtype=torch.float16, device=device)
        want = lhs.float() @ rhs.float()
        for index in range(BUILDS):
            barrier.wait(120)
            out = torch.full((20, 10), float("nan"), dtype=torch.float16, device=device)
            try:
                make(
                    reference.arrangement,
                    reference.application,
                    (Tensor(2), Tensor(2), Tensor(2)),
                    kernel_name=f"gemm_{tag}_{index}",
                )(lhs, rhs, out)
                if not torch.allclose(out.float(), want, atol=0.05, rtol=0.01):
                    failures.append(f"build {index}: wrong result")
            except Exception as error:  # noqa: BLE001
                failures.append(f"build {index}: {type(error).__name__}: {error}")
    except BaseException as error:  # noqa: BLE001 - reported, never hung on
        failures.append(f"process: {type(error).__name__}: {error}")
        barrier.abort()
    results.put(failures)


@pytest.mark.slow
def test_processes_sharing_a_home_all_build_the_same_kernels(tmp_path):
    context = multiprocessing.get_context("spawn")
    barrier, results = context.Barrier(PROCESSES), context.Queue()
    tag = uuid.uuid4().hex[:8]
    processes = [
        context.Process(target=_contender, args=(str(tmp_path), tag, barrier, results))
        for _ in range(PROCESSES)
    ]
    for process in processes:
        process.start()
    failures = [failure for _ in processes for failure in results.get(timeout=300)]
    for process in processes:
        process.join(30)
    assert failures == []
    cache = tmp_path / ".ninetoothed"
    assert len(list(cache.glob("*.py"))) == ROUNDS + BUILDS
    assert not list(cache.glob(".*.tmp"))


def test_a_kernel_the_check_refuses_is_never_written(tmp_path, monkeypatch):
    """The one door every build passes: a refused source raises, and no file appears."""
    from ninetoothed import generation

    from grader.core.generated_kernel import KernelRejected

    monkeypatch.setattr(generation, "CACHE_DIR", tmp_path)
    refused = KERNEL.replace("y0 = ninetoothed_n + 0", "y0 = getattr(ninetoothed_n, 0)")
    with pytest.raises(KernelRejected, match="calls `getattr`"):
        generated_cache.cache_source(refused)
    assert list(tmp_path.iterdir()) == []
    assert generated_cache.cache_source(KERNEL).parent == tmp_path
