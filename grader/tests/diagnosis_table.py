"""The diagnosis measured on the mutation corpus (grader/tests/diagnosis_mutants.py):
docs/mutation-table.md.

    python -m grader.tests.diagnosis_table [--sample N] [--seed S] [-j JOBS] [--table FILE]

Each mutant is graded as ``pytest grader --submission`` grades it on the CPU, in a worker
process: every case of the catalogue (grader.core.suite.case_verdict, the GPU build
included), the findings on its lines and its arrangement, the summary's likely causes
(grader.core.diagnosis.explain, which the batch's feedback shows too) and the cause under
each failing case (grader.core.diagnosis.case_cause). Then it is judged:

* passes: every case passes (equivalent, or wrong only where the CPU cannot see);
* silent: it fails and no hint is shown;
* named: it fails and every hint shown explains it;
* misleading: it fails and some hint shown does not explain it.

A hint explains a mutant when its mistake's declaration (grader.core.mistakes.Mistake
.explains) covers the mutant's subject and kind, and every line its evidence names is the
mutated statement's (any line of its function, for a deleted statement).
"""

import argparse
import collections
import dataclasses
import fnmatch
import hashlib
import inspect
import json
import multiprocessing
import os
import pathlib
import re
import sys
import tempfile

from grader.core.mistakes import MISTAKES
from grader.tests import diagnosis_mutants

CLASSES = ("passes", "named", "silent", "misleading")
TIMEOUT_S = 300
GOAL_NAMED, GOAL_MISLEADING = 0.75, 0.02
DEFAULT_SEED = 20261207
TABLE = pathlib.Path(__file__).resolve().parents[2] / "docs" / "mutation-table.md"
# The modules whose code decides a case's verdict: a cached verdict (--cache) is kept only
# while they are unchanged. Hints are worked out afresh on every run.
VERDICT_MODULES = (
    "backend",
    "cases",
    "checks",
    "execution",
    "generated_cache",
    "generated_kernel",
    "gpu_compile",
    "kernel_allowlist",
    "loading",
    "messages",
    "retile",
    "run_messages",
    "suite",
)
_LINE = re.compile(r"^line (\d+)\b")


@dataclasses.dataclass
class Graded:
    mutant: diagnosis_mutants.Mutant
    verdicts: list  # [{"case_id", "passed", "mistake", "message"}]
    hints: list  # [{"key", "evidence"}], the summary's likely causes
    causes: list  # the cause under each failing case, one key each ("" for none)

    @property
    def failing(self):
        return not all(verdict["passed"] for verdict in self.verdicts)

    def shown(self):
        """(key, evidence lines) of every hint shown: the summary's, then the cases' own."""
        shown = [(hint["key"], hint["evidence"]) for hint in self.hints]
        keys = {key for key, _ in shown}
        return shown + [(key, []) for key in dict.fromkeys(self.causes) if key and key not in keys]

    def wrong(self):
        """The hints shown that do not explain this mutant."""
        return [key for key, evidence in self.shown() if not explains(key, evidence, self.mutant)]

    @property
    def verdict_class(self):
        if not self.failing:
            return "passes"
        if not self.shown():
            return "silent"
        return "misleading" if self.wrong() else "named"


def explains(key, evidence, mutant):
    """Whether mistake ``key``, shown with ``evidence``, explains ``mutant``."""
    declared = MISTAKES[key].explains
    if not any(_covers(pattern, mutant) for pattern in declared):
        return False
    first, last = mutant.function_lines if mutant.kind == "deleted_statement" else mutant.lines
    lines = [int(match.group(1)) for line in evidence for match in [_LINE.match(line)] if match]
    return all(first <= line <= last for line in lines)


def _covers(pattern, mutant):
    """``subject`` or ``subject/kind,kind``, the subject a glob: ``*.expand``, ``step``."""
    subject, _, kinds = pattern.partition("/")
    return fnmatch.fnmatchcase(mutant.subject, subject) and (
        not kinds or mutant.kind in kinds.split(",")
    )


# -- grading, in worker processes


def _worker(connection, folder):
    """Grade the sources sent down ``connection`` until it sends None."""
    os.environ["NTGEMM_BACKEND"] = "interpreter"
    from grader.core import backend

    active = backend.activate()
    import torch

    torch.set_num_threads(1)
    while True:
        request = connection.recv()
        if request is None:
            return
        index, source, verdicts = request
        path = pathlib.Path(folder) / f"m{index}" / "ninetoothed_gemm.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source, encoding="utf-8")
        connection.send(_grade(path, active, verdicts))


def _grade(path, active, verdicts=None):
    from grader.core import cases, diagnosis, layout, source_mistakes, suite
    from grader.core.checks import Verdict
    from grader.core.loading import SubmissionError, load_submission, read_source

    catalogue = cases.catalogue(cases.DEFAULT_SEED, active.name)
    module, findings = None, source_mistakes.inspect_file(path)
    try:
        module = load_submission(path)
    except SubmissionError as error:
        mistake = "not_implemented" if error.status == "not_implemented" else "import_error"
        verdicts = [Verdict(case.id, False, str(error), mistake) for case in catalogue]
    else:
        findings = findings + layout.inspect_arrangement(module)
        if verdicts is None:
            build = suite.gpu_build(module)
            verdicts = [
                suite.case_verdict(
                    case, module, build, lambda: read_source(path), active, cases.DEFAULT_SEED
                )
                for case in catalogue
            ]
    verdicts = [_fields(verdict) for verdict in verdicts]
    if module is None:
        findings = []  # the pytest grader reads findings of a loaded file only
    hints = diagnosis.explain(
        findings,
        verdicts,
        catalogue,
        reveal=True,
        tiles=layout.tile_sizes(module) if module is not None else None,
    )
    return {
        "verdicts": verdicts,
        "hints": [{"key": hint["key"], "evidence": hint["evidence"]} for hint in hints],
        "causes": [
            diagnosis.case_cause(verdict, findings) for verdict in verdicts if not verdict["passed"]
        ],
    }


def _fields(verdict):
    if isinstance(verdict, dict):
        return verdict
    return {
        "case_id": verdict.case_id,
        "passed": bool(verdict.passed),
        "mistake": verdict.mistake or "",
        "message": verdict.message or "",
    }


class _Pool:
    """Worker processes, one mutant each at a time; one that runs past TIMEOUT_S is
    replaced."""

    def __init__(self, jobs, folder):
        self.context = multiprocessing.get_context("spawn")
        self.folder = folder
        self.workers = [self._start() for _ in range(jobs)]

    def _start(self):
        parent, child = self.context.Pipe()
        process = self.context.Process(target=_worker, args=(child, self.folder), daemon=True)
        process.start()
        return [process, parent, None]  # the mutant's index it is grading

    def run(self, requests, done):
        """Grade ``requests`` [(index, source, cached verdicts)]; ``done(index, result)``."""
        pending = list(requests)
        started = {}
        while pending or any(worker[2] is not None for worker in self.workers):
            for worker in self.workers:
                if worker[2] is None and pending:
                    request = pending.pop(0)
                    worker[1].send(request)
                    worker[2] = request[0]
                    started[request[0]] = _now()
            busy = [worker for worker in self.workers if worker[2] is not None]
            ready = multiprocessing.connection.wait([worker[1] for worker in busy], timeout=5)
            for worker in busy:
                index = worker[2]
                if worker[1] in ready:
                    try:
                        result = worker[1].recv()
                    except EOFError:  # the worker died: a crash is no hint
                        result = None
                elif _now() - started[index] > TIMEOUT_S or not worker[0].is_alive():
                    result = None
                else:
                    continue
                if result is None:
                    worker[0].kill()
                    worker[:] = self._start()
                worker[2] = None
                done(index, result)

    def close(self):
        for process, connection, _ in self.workers:
            try:
                connection.send(None)
            except OSError:
                pass
            process.join(10)
            if process.is_alive():
                process.kill()


def _now():
    import time

    return time.monotonic()


def grade(mutants, jobs=1, cache=None, progress=None):
    """[Graded] of ``mutants``, in their order. A mutant whose worker crashed or ran past
    TIMEOUT_S fails every case with no hint. ``cache``: a folder of verdicts kept by source
    (VERDICT_MODULES)."""
    import multiprocessing.connection  # noqa: F401 - _Pool waits on it

    cache = pathlib.Path(cache) if cache else None
    keys = [_cache_key(mutant.source) for mutant in mutants]
    requests = []
    for index, mutant in enumerate(mutants):
        cached = cache / f"{keys[index]}.json" if cache else None
        verdicts = json.loads(cached.read_text()) if cached and cached.is_file() else None
        requests.append((index, mutant.source, verdicts))
    results = [None] * len(mutants)

    def done(index, result):
        if result is None:
            result = {
                "verdicts": [
                    {
                        "case_id": "the run",
                        "passed": False,
                        "mistake": "",
                        "message": "the worker crashed or ran out of time",
                    }
                ],
                "hints": [],
                "causes": [],
            }
        elif cache:
            cache.mkdir(parents=True, exist_ok=True)
            (cache / f"{keys[index]}.json").write_text(json.dumps(result["verdicts"]))
        results[index] = Graded(
            mutants[index], result["verdicts"], result["hints"], result["causes"]
        )
        if progress:
            progress.update(1)

    with tempfile.TemporaryDirectory(prefix="ntgemm-mutants-") as folder:
        pool = _Pool(max(1, min(jobs, len(mutants))), folder)
        try:
            pool.run(requests, done)
        finally:
            pool.close()
    return results


def _cache_key(source):
    from grader.core import layout

    digest = hashlib.sha256(source.encode())
    core = pathlib.Path(layout.__file__).parent
    for name in VERDICT_MODULES:
        digest.update((core / f"{name}.py").read_bytes())
    digest.update(inspect.getsource(layout.launch_mismatch).encode())
    digest.update(inspect.getsource(layout.arranged_levels).encode())
    return digest.hexdigest()[:32]


# -- the table


def tally(graded, by):
    """{group: Counter of classes}, the groups in first-seen order, by ``by(mutant)``."""
    counts = {}
    for item in graded:
        counts.setdefault(by(item.mutant), collections.Counter())[item.verdict_class] += 1
    return counts


def rates(counter):
    """(failing, named share, misleading share) of a Counter of classes."""
    failing = sum(counter[name] for name in CLASSES[1:])
    return (
        failing,
        (counter["named"] / failing if failing else 1.0),
        (counter["misleading"] / failing if failing else 0.0),
    )


def _rows(counts):
    lines = [
        "| | mutants | passes | failing | named | silent | misleading |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    total = collections.Counter()
    for group, counter in counts.items():
        total.update(counter)
        lines.append(_row(f"`{group}`", counter))
    lines.append(_row("**all**", total))
    return lines


def _row(label, counter):
    failing, named, misleading = rates(counter)
    return (
        f"| {label} | {sum(counter.values())} | {counter['passes']} | {failing} | "
        f"{counter['named']} ({named:.0%}) | {counter['silent']} | "
        f"{counter['misleading']} ({misleading:.0%}) |"
    )


def table(graded, command, seed):
    """docs/mutation-table.md's text for ``graded``."""
    total = collections.Counter(item.verdict_class for item in graded)
    failing, named, misleading = rates(total)
    lines = [
        "# The diagnosis measured on mutants",
        "",
        "Written by `grader/tests/diagnosis_table.py`; do not edit by hand. Each mutant is one",
        "change of a correct file (the reference, and the styles `"
        + "`, `".join(diagnosis_mutants.STYLES)
        + "` of",
        "`grader/tests/build_variants.py`), graded as `pytest grader --submission` grades it on",
        "the CPU. It *passes* when every case passes; when it fails, it is *named* when every",
        "hint shown (the likely causes, and the cause under each failing case) explains it,",
        "*misleading* when one does not, and *silent* when none is shown. A hint explains a",
        "mutant when its declaration in `grader/core/mistakes.py` (`explains`) covers the",
        "mutant's subject and kind and each line its evidence names is the mutated one.",
        "",
        f"Goal: misleading at most {GOAL_MISLEADING:.0%} of the failing mutants, named at "
        f"least {GOAL_NAMED:.0%}. Here: {failing} failing, named {named:.1%}, misleading "
        f"{misleading:.1%}.",
        "",
        "The command that wrote this table"
        + (
            f" (seed {seed} draws the sample)"
            if "--sample" in command
            else " (every mutant: the corpus is the same on every run, and `--sample N --seed S` "
            "draws a seeded part of it, as grader/tests/test_diagnosis_mutants.py does in CI)"
        )
        + ":",
        "",
        "<!-- doc-check: slow -->",
        "```console",
        f"$ {command}",
        "```",
        "",
        "## By kind of change",
        "",
        *_rows(tally(graded, lambda mutant: mutant.kind)),
        "",
        "## By the part of the GEMM changed",
        "",
        *_rows(tally(graded, lambda mutant: f"{mutant.function}: {mutant.subject}")),
        "",
        "## By base",
        "",
        *_rows(tally(graded, lambda mutant: mutant.base)),
        "",
        "## Misleading",
        "",
    ]
    wrong = [item for item in graded if item.verdict_class == "misleading"]
    lines += [
        f"- {_escape(item.mutant.name)}: {', '.join(sorted(set(item.wrong())))}" for item in wrong
    ] or ["None."]
    return "\n".join(lines) + "\n"


def _escape(text):
    return text.replace("|", "\\|")


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m grader.tests.diagnosis_table",
        description="Grade the mutation corpus (grader/tests/diagnosis_mutants.py) on the CPU "
        "and write the table of what the diagnosis made of it.",
    )
    parser.add_argument(
        "--sample",
        type=int,
        metavar="N",
        help="grade N mutants drawn with --seed (default: all of them)",
    )
    parser.add_argument(
        "--seed",
        type=int,
        default=DEFAULT_SEED,
        help=f"the sample's seed (default: {DEFAULT_SEED})",
    )
    parser.add_argument("-j", "--jobs", type=int, default=1, help="worker processes (default: 1)")
    parser.add_argument(
        "--table",
        type=pathlib.Path,
        default=None,
        metavar="FILE",
        help="where the table goes (default: print it)",
    )
    parser.add_argument(
        "--records",
        type=pathlib.Path,
        metavar="FILE",
        help="also write each mutant's verdicts and hints as JSON lines",
    )
    parser.add_argument(
        "--cache",
        type=pathlib.Path,
        metavar="DIR",
        help="keep the cases' verdicts here by source and reuse them while "
        "the code that judges is unchanged",
    )
    args = parser.parse_args(argv)
    if args.sample is not None and args.sample < 1:
        parser.error(f"--sample: expected a positive number of mutants, got {args.sample}")
    if args.jobs < 1:
        parser.error(f"-j/--jobs: expected at least 1 worker, got {args.jobs}")
    from tqdm import tqdm

    chosen = (
        diagnosis_mutants.sample(args.sample, args.seed)
        if args.sample
        else diagnosis_mutants.mutants()
    )
    with tqdm(total=len(chosen), unit="mutant", file=sys.stderr) as progress:
        graded = grade(chosen, args.jobs, args.cache, progress)
    command = (
        "python -m grader.tests.diagnosis_table"
        + (f" --sample {args.sample} --seed {args.seed}" if args.sample else "")
        + (f" -j {args.jobs}" if args.jobs > 1 else "")
        + (f" --table {args.table.as_posix()}" if args.table else "")
    )
    text = table(graded, command, args.seed)
    if args.records:
        with args.records.open("w", encoding="utf-8") as handle:
            for item in graded:
                fields = dataclasses.asdict(item.mutant)
                fields.pop("source")
                handle.write(
                    json.dumps(
                        {
                            **fields,
                            "class": item.verdict_class,
                            "wrong": item.wrong(),
                            "hints": item.hints,
                            "causes": item.causes,
                            "verdicts": item.verdicts,
                        }
                    )
                    + "\n"
                )
    if args.table:
        args.table.write_text(text, encoding="utf-8")
    else:
        print(text)


if __name__ == "__main__":
    main()
