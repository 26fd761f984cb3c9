"""The child process of the batch grader: runs ONE submission, judges nothing.

    python -m grader.worker --submission FILE --results DIR --seed N --backend NAME

It activates the backend, installs the runtime anti-cheat monitor, imports the
submission, runs the arrangement diagnosis, then calls the submission on every
case of the catalogue and saves what came back (CPU copies, ``torch.save``) to
``DIR/case-<index>.pt``. ``DIR/worker.json`` says how far it got; it is rewritten
atomically after every case, so a crash or a kill still leaves the cases done so
far. The parent (grader.cli) judges the saved tensors itself; see grader.sandbox.

Exit codes: 0 finished (or the submission could not be loaded, which worker.json
says), 3 out of memory, 4 the submission asked the process to exit, 5 the private
copy no longer matches the digest the parent gave (someone else wrote over it).
"""

import argparse
import json
import os
import pathlib
import signal
import sys
import threading
import time
import traceback

EXIT_MEMORY = 3
EXIT_EARLY = 4
EXIT_TAMPERED = 5


def _atomic_write(path, text):
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(text, encoding="utf-8")
    os.replace(temporary, path)


def _guard_against_orphaning(deadline_s):
    """Die with the parent, and never outlive the wall timeout by much, even if orphaned."""
    parent = os.getppid()
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
    started = time.monotonic()

    def watch():
        while True:
            time.sleep(0.5)
            if os.getppid() != parent or time.monotonic() - started > deadline_s:
                try:
                    os.killpg(os.getpgid(0), signal.SIGKILL)
                finally:
                    os._exit(137)

    threading.Thread(target=watch, daemon=True, name="ntgemm-watchdog").start()


def _is_out_of_memory(error):
    if isinstance(error, MemoryError):
        return True
    text = str(error)
    return type(error).__name__ == "OutOfMemoryError" or "can't allocate memory" in text \
        or "CUDA out of memory" in text


def _short_traceback(error, limit=6):
    lines = traceback.format_exception(type(error), error, error.__traceback__)
    body = lines[1:-1][-limit:]
    return "".join(body)[-4000:]


def _portable(value, case):
    """What to save for one produced value: a CPU tensor, or a small description."""
    import torch

    if not isinstance(value, torch.Tensor):
        return {"non_tensor": type(value).__name__}
    if value.numel() > 4 * case.m * case.n + 64:
        return {"meta_shape": list(value.shape), "meta_dtype": str(value.dtype)}
    return value.detach().to("cpu", copy=True).contiguous()


class _Traced:
    """The submission as grader.execution sees it, with nt_gemm watched by the monitor."""

    def __init__(self, module, monitor, evidence):
        self._module = module
        self._run = monitor.traced(module.nt_gemm)
        self._evidence = evidence

    def __getattr__(self, name):
        return getattr(self._module, name)

    def nt_gemm(self, lhs, rhs):
        result, evidence = self._run(lhs, rhs)
        self._evidence.extend(evidence)
        return result


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m grader.worker")
    parser.add_argument("--submission", required=True)
    parser.add_argument("--results", required=True)
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--backend", required=True)
    parser.add_argument("--cases", default="")
    parser.add_argument("--deadline", type=float, default=3600.0)
    parser.add_argument("--sha256", default="")
    args = parser.parse_args(argv)
    _guard_against_orphaning(args.deadline)

    results = pathlib.Path(args.results)
    record = {"finished": False, "load": None, "findings": [], "diagnosis_error": "",
              "cases": {}}

    def save():
        _atomic_write(results / "worker.json", json.dumps(record))

    from grader import backend as backends

    os.environ[backends.ENV_VAR] = args.backend
    active = backends.activate()
    record["backend"] = active.name
    import torch

    from grader import anticheat, cases as catalogue, execution
    from grader.loading import SubmissionError, load_submission

    monitor = anticheat.Monitor()
    monitor.install()
    selected = catalogue.catalogue(args.seed, active.name)
    if args.cases:
        wanted = set(args.cases.split(","))
        selected = [case for case in selected if case.id in wanted]
    save()

    import hashlib

    if args.sha256 and hashlib.sha256(
            pathlib.Path(args.submission).read_bytes()).hexdigest() != args.sha256:
        return EXIT_TAMPERED  # another run wrote over this copy: the parent runs it again
    try:
        module = load_submission(args.submission)
    except SubmissionError as error:
        record["load"] = {"status": error.status, "message": str(error)}
        record["finished"] = True
        save()
        return 0
    except BaseException as error:  # noqa: BLE001 - anything at import time
        if _is_out_of_memory(error):
            record["load"] = {"status": "memory_limit", "message": "out of memory at import"}
            save()
            return EXIT_MEMORY
        if isinstance(error, (SystemExit, KeyboardInterrupt)):
            record["load"] = {"status": "crashed",
                              "message": f"the file called exit while being imported ({error!r})"}
            save()
            return EXIT_EARLY
        raise
    record["load"] = {"status": "ok", "message": ""}
    save()

    try:
        from grader import diagnosis

        findings = diagnosis.inspect_arrangement(module)
        record["findings"] = [dict(finding) for finding in findings or []]
        tiles = diagnosis.tile_sizes(module)
        record["tiles"] = [int(size) for size in tiles] if tiles else None
    except Exception as error:  # noqa: BLE001 - a diagnosis problem must not stop grading
        record["diagnosis_error"] = f"{type(error).__name__}: {error}"
    except BaseException as error:  # noqa: BLE001
        record["diagnosis_error"] = f"{type(error).__name__}: {error}"
    save()

    for index, case in enumerate(selected):
        evidence = []
        entry = {"index": index, "error": "", "traceback": "", "evidence": evidence}
        record["cases"][case.id] = entry
        started = time.perf_counter()
        try:
            outputs = execution.produce(case, _Traced(module, monitor, evidence), args.seed,
                                        active.device)
            portable = {role: _portable(value, case) for role, value in outputs.items()}
            path = results / f"case-{index}.pt"
            torch.save(portable, path.with_name(path.name + ".tmp"))
            os.replace(path.with_name(path.name + ".tmp"), path)
            entry["saved"] = path.name
            execution.scrub(outputs)
        except BaseException as error:  # noqa: BLE001 - student code may raise anything
            entry["seconds"] = round(time.perf_counter() - started, 3)
            if _is_out_of_memory(error):
                entry["error"] = f"out of memory: {error}"[:500]
                save()
                return EXIT_MEMORY
            if isinstance(error, (SystemExit, KeyboardInterrupt)):
                entry["error"] = f"nt_gemm asked the process to exit ({error!r})"
                record["exit_request"] = entry["error"]
                save()
                return EXIT_EARLY
            entry["error"] = f"{type(error).__name__}: {error}"[:2000]
            entry["traceback"] = _short_traceback(error)
        entry.setdefault("seconds", round(time.perf_counter() - started, 3))
        save()

    record["finished"] = True
    save()
    return 0


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # skip interpreter teardown: a submission's atexit hooks do not run
