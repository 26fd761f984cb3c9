"""Grade one submission from the parent process: run it in the sandbox, judge, decide.

The parent never imports student code. It reads the source only as text (the
syntax check and grader.anticheat's static scan), runs it through
grader.sandbox, and judges the tensors the child saved with grader.checks,
rebuilding inputs and references from the seed itself. The result is one plain
dict per student, the *record*, from which grader.reports writes everything.

Status precedence: ``missing_file``, ``import_error``, ``not_implemented`` (the
file cannot be graded), then how the process ended (``timeout``,
``memory_limit``, ``crashed``), then ``flagged`` (anti-cheat evidence, see the
policy in grader.anticheat), then ``passed`` when every case passed, else ``failed``.
Cases finished before a timeout or crash are judged and keep their points;
the others score 0 and say why they did not run.
"""

import dataclasses
import hashlib
import json
import pathlib
import re
import time

from benchmarks.environment import package_version
from grader import __version__, anticheat
from grader import cases as catalogue
from grader import checks

STATUSES = ("passed", "failed", "not_implemented", "import_error", "missing_file", "timeout",
            "crashed", "memory_limit", "flagged")
GRADER_DIR = pathlib.Path(__file__).resolve().parent
_KEY_MODULES = ("backend", "cases", "checks", "execution", "loading", "mistakes", "diagnosis",
                "anticheat", "worker", "sandbox", "batch")


class WorkerFailure(Exception):
    """The worker died before any student code ran: the grader's fault, not the student's."""


@dataclasses.dataclass(frozen=True)
class Settings:
    seed: int
    backend: str
    timeout_s: float
    memory_limit_bytes: int
    case_filter: tuple = ()  # test-only subset of case ids; empty means the whole catalogue

    def cases(self):
        selected = catalogue.catalogue(self.seed, self.backend)
        if self.case_filter:
            selected = [case for case in selected if case.id in self.case_filter]
        return selected


def grader_version():
    """The version plus a digest of the grading code: any change to it means regrading."""
    digest = hashlib.sha256()
    for name in _KEY_MODULES:
        path = GRADER_DIR / f"{name}.py"
        if path.exists():
            digest.update(name.encode() + b"\0" + path.read_bytes())
    return f"{__version__}+{digest.hexdigest()[:12]}"


def grading_key(submission, settings):
    """What a stored result depends on; a different key means grading again."""
    material = {
        "file": submission.sha256 or submission.problem,
        "grader": grader_version(),
        "seed": settings.seed,
        "backend": settings.backend,
        "timeout_s": settings.timeout_s,
        "memory_limit_bytes": settings.memory_limit_bytes,
        "cases": list(settings.case_filter),
        # The stack the kernels are compiled and run with: a new one may judge differently.
        "stack": [package_version(name) for name in ("torch", "triton", "ninetoothed")],
    }
    return hashlib.sha256(json.dumps(material, sort_keys=True).encode()).hexdigest()


def syntax_problem(source):
    """The import_error message for a file that does not compile, in grader.loading's words."""
    try:
        compile(source, "ninetoothed_gemm.py", "exec", dont_inherit=True)
    except SyntaxError as error:
        return (f"syntax error in ninetoothed_gemm.py, line {error.lineno}: {error.msg}\n"
                f"    {(error.text or '').rstrip()}")
    except ValueError as error:  # e.g. null bytes
        return f"ninetoothed_gemm.py cannot be compiled: {error}"
    return ""


def _tidy(text, workdir):
    """Messages without the private run folder's random path."""
    if not text:
        return ""
    text = text.replace(str(workdir / "submission") + "/", "").replace(str(workdir), "<run>")
    return re.sub(r"ntgemm_submission_[0-9a-f]{16}", "ntgemm_gemm", text)


def _load_saved(path, case):
    """The tensors the child saved for ``case``, as grader.checks.judge expects them."""
    import torch

    limit = 16 * (case.m * case.n * 4 + 4096)
    if not path.is_file() or path.stat().st_size > limit:
        raise ValueError("the saved output is missing or too large")
    data = torch.load(path, map_location="cpu", weights_only=True)
    if not isinstance(data, dict):
        raise ValueError("the saved output is not what the worker writes")
    outputs = {}
    for role, value in data.items():
        if isinstance(value, dict) and "non_tensor" in value:
            outputs[role] = type(str(value["non_tensor"]), (), {})()
        elif isinstance(value, dict) and "meta_shape" in value:
            outputs[role] = torch.empty(value["meta_shape"], device="meta",
                                        dtype=getattr(torch, str(value["meta_dtype"])
                                                      .replace("torch.", ""), torch.float32))
        elif isinstance(value, torch.Tensor):
            outputs[role] = value
        else:
            raise ValueError(f"unexpected saved value for {role}")
    return outputs


def _judge_case(case, entry, results_dir, seed):
    """(passed, message, mistake) for one case the child reported on."""
    if entry.get("error"):
        return False, entry["error"] + ("\n" + entry["traceback"] if entry.get("traceback") else ""), \
            "build_error"
    saved = entry.get("saved")
    if not saved:
        return False, "no output was saved for this case", ""
    try:
        outputs = _load_saved(results_dir / pathlib.PurePath(str(saved)).name, case)
        verdict = checks.judge(case, outputs, seed, "cpu")
    except Exception as error:  # noqa: BLE001 - a malformed save is the student's failure
        return False, f"the output could not be judged: {type(error).__name__}: {error}", ""
    return verdict.passed, verdict.message, verdict.mistake


def display_names(cases_list):
    """What a student sees for each case: the id when public, a numbered name when hidden."""
    names, seen = {}, {}
    for case in cases_list:
        base = case.describe(reveal=False)
        if case.visibility != "public":
            seen[base] = seen.get(base, 0) + 1
            if sum(c.describe(reveal=False) == base for c in cases_list) > 1:
                base = base.replace(" (hidden)", f" #{seen[base]} (hidden)")
        names[case.id] = base
    return names


def case_entries_for(cases_list, reason):
    names = display_names(cases_list)
    return [{"id": case.id, "name": names[case.id], "visibility": case.visibility,
             "points": 0, "max_points": case.points, "status": "not_run", "message": reason,
             "mistake": "", "flags": []} for case in cases_list]


def base_record(submission, settings, folder):
    cases_list = settings.cases()
    return {
        "student": submission.student,
        "folder": folder,
        "origin": submission.origin,
        "sha256": submission.sha256,
        "key": grading_key(submission, settings),
        "grader_version": grader_version(),
        "seed": settings.seed,
        "backend": settings.backend,
        "status": "",
        "message": "",
        "score": 0,
        "max_score": sum(case.points for case in cases_list),
        "flags": [],
        "static_findings": [],
        "cases": case_entries_for(cases_list, "not run"),
        "findings": [],
        "tiles": None,
        "wall_time_s": 0.0,
        "stdout": "",
        "stderr": "",
    }


def grade(submission, settings, folder, device=None, on_start=None):
    """Grade one intake.Submission; returns its record (never raises for the student's doing)."""
    from grader import sandbox

    record = base_record(submission, settings, folder)
    cases_list = settings.cases()
    if submission.problem:
        record.update(status="missing_file", message=submission.problem)
        record["cases"] = case_entries_for(cases_list, "no submission file")
        return record

    source = submission.data.decode("utf-8", errors="replace")
    findings = anticheat.scan_source(source)
    record["static_findings"] = [dataclasses.asdict(finding) for finding in findings]
    tamper = [finding for finding in findings if finding.kind == anticheat.TAMPER]
    flags = [f"{finding.kind}: {finding.evidence()}" for finding in findings]

    problem = syntax_problem(source)
    if problem:
        record.update(status="import_error", message=problem, flags=flags)
        record["cases"] = case_entries_for(cases_list, "the file does not compile")
        return record

    for attempt in range(6):
        try:
            run = sandbox.run_submission(
                submission.data, seed=settings.seed, backend_name=settings.backend,
                timeout_s=settings.timeout_s, memory_limit_bytes=settings.memory_limit_bytes,
                device=device, cases=list(settings.case_filter) or None, on_start=on_start)
        except OSError as error:
            raise WorkerFailure(f"cannot start the grading worker: {error}") from None
        if run.ending != "tampered":
            break
        run.cleanup()  # another submission wrote over this one's copy: run it again, later
        time.sleep(2 ** attempt)
    else:
        raise WorkerFailure(f"{submission.student}'s private copy kept being overwritten "
                            "(run the grader as root with a sandbox user, see grader.sandbox)")
    try:
        if run.ending == "crashed" and not run.record:
            raise WorkerFailure(
                f"the grading worker failed before loading {submission.student}'s file "
                f"({run.detail}):\n{run.stderr[-3000:]}")
        record["wall_time_s"] = round(run.wall_time_s, 2)
        record["stdout"] = _tidy(run.stdout, run.workdir)
        record["stderr"] = _tidy(run.stderr, run.workdir)
        child = run.record
        load = child.get("load") or {}
        record["findings"] = [f for f in child.get("findings") or [] if isinstance(f, dict)]
        tiles = child.get("tiles")
        record["tiles"] = tiles if isinstance(tiles, list) and len(tiles) == 3 else None

        entries, names, seen_evidence = [], display_names(cases_list), {}
        reported = child.get("cases") if isinstance(child.get("cases"), dict) else {}
        for case in cases_list:
            entry = reported.get(case.id)
            base = {"id": case.id, "name": names[case.id],
                    "visibility": case.visibility, "points": 0, "max_points": case.points,
                    "mistake": "", "flags": []}
            if not isinstance(entry, dict) or not (entry.get("saved") or entry.get("error")):
                entries.append({**base, "status": "not_run", "message": "not run"})
                continue
            passed, message, mistake = _judge_case(case, entry, run.results_dir, settings.seed)
            evidence = [str(item) for item in entry.get("evidence") or []][:10]
            for item in evidence:
                seen_evidence.setdefault(item, []).append(
                    case.id if case.visibility == "public" else names[case.id])
            if tamper:
                evidence = evidence + ["tampering found by the static scan (see flags)"]
            status = "flagged" if evidence else ("passed" if passed else
                                                 ("error" if entry.get("error") else "failed"))
            entries.append({**base, "status": status, "passed": passed,
                            "points": case.points if passed and not evidence else 0,
                            "message": _tidy(message, run.workdir), "mistake": mistake or "",
                            "flags": evidence})
        record["cases"] = entries

        load_status = load.get("status")
        if run.ending == "finished" and load_status in ("import_error", "not_implemented"):
            record.update(status=load_status, message=_tidy(load.get("message", ""), run.workdir))
            for entry in entries:
                entry["message"] = f"not run: {load_status}"
        elif run.ending != "finished":
            record.update(status=run.ending, message=_tidy(run.detail, run.workdir))
            if load_status not in ("ok",) and run.ending == "timeout":
                record["message"] += " (while importing the file)"
            for entry in entries:
                if entry["status"] == "not_run":
                    entry["message"] = f"not run: the process ended ({run.ending})"
        for item, where in seen_evidence.items():
            shown = ", ".join(where[:3]) + (f" and {len(where) - 3} more" if len(where) > 3 else "")
            flags.append(f"runtime: {item} ({len(where)} case{'s' if len(where) > 1 else ''}: "
                         f"{shown})")
        if tamper:
            flags.append("every case flagged: the file tampers with the grader or the sandbox")
        if record["status"]:
            pass
        elif any(entry["status"] == "flagged" for entry in entries):
            record.update(status="flagged",
                          message="anti-cheat evidence: flagged cases score 0 (see flags)")
        elif all(entry["status"] == "passed" for entry in entries):
            record.update(status="passed")
        else:
            failing = sum(entry["status"] != "passed" for entry in entries)
            record.update(status="failed", message=f"{failing} of {len(entries)} cases failed")
        if child.get("diagnosis_error"):
            record["stderr"] += f"\n[grader] diagnosis skipped: {child['diagnosis_error']}"
        record["flags"] = list(dict.fromkeys(flags))
        record["score"] = sum(entry["points"] for entry in entries)
        return record
    finally:
        run.cleanup()
