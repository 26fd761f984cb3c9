"""The full grader for one submission: ``pytest grader --submission PATH``.

Every case of the catalogue (grader.cases) runs in this process: produce (run
the student's kernel) then judge (compare with a float32-accumulated reference).
Cases too large for the Triton interpreter are skipped on a CPU, with the reason.
A kernel that raises fails its case with the error and a hint, not a traceback.

The terminal summary (grader/conftest.py) adds up the points per case group and
names the likely mistake behind any failures, in English and Chinese. Run with
``--junitxml FILE`` for tools that read JUnit XML: each case carries its points,
group and score as properties.
"""

import warnings

import pytest

from grader import cases, checks, diagnosis, execution
from grader.checks import Verdict
from grader.mistakes import MISTAKES

# The catalogue is expanded into test ids in grader/conftest.py
# (pytest_generate_tests), from the backend and --seed of this run.


def test_arrangement_symbolic(submission, request, record_property):
    """Check the arrangement's shapes at several sizes without running a kernel.

    Worth no points: it is there to explain failures. A layout other than the
    plain block grid (a grouped launch order, say) is skipped, not judged.
    """
    record_property("points", 0)
    record_property("group", "diagnosis")
    module = _load(submission, request.config, None)
    levels = diagnosis.arranged_levels_or_none(module)
    if levels is not None and not all(diagnosis.is_standard_layout(at) for at in levels.values()):
        pytest.skip("the output is not arranged as a plain 2-D grid of tiles; the symbolic "
                    "check only judges that layout (the cases still grade the kernel)")
    findings = diagnosis.inspect_arrangement(module)
    request.config._ntgemm_findings = findings
    # A length-1 level left in can be right when application() indexes around it,
    # so on its own it is a warning; the cases decide.
    hard = [finding for finding in findings if finding["mistake"] != "missing_squeeze"]
    for finding in findings:
        if finding["mistake"] == "missing_squeeze":
            warnings.warn(f"symbolic check: {finding['message']}", UserWarning, stacklevel=1)
    if hard:
        lines = ["the arrangement does not give each program the tiles a GEMM needs "
                 "(checked symbolically, no kernel run):"]
        for finding in hard:
            mistake = MISTAKES[finding["mistake"]]
            lines += [f"- {finding['message']}", f"  likely cause, {mistake.title}: {mistake.en}",
                      f"  {mistake.zh}"]
        pytest.fail("\n".join(lines), pytrace=False)


def test_case(grader_case, submission, backend, grading_seed, request, record_property):
    case = grader_case
    record_property("points", case.points)
    record_property("group", case.group)
    if not case.runs_on(backend.name):
        pytest.skip(cases.interpreter_skip_reason(case))

    module = _load(submission, request.config, case)
    try:
        outputs = execution.produce(case, module, grading_seed, backend.device)
    except Exception as error:  # the student's kernel failed to build or launch
        verdict = checks.error_verdict(case, error)
    else:
        try:
            verdict = checks.judge(case, outputs, grading_seed, backend.device)
        except Exception as error:  # what it returned could not even be compared
            verdict = Verdict(case.id, False,
                              f"the result could not be checked: {type(error).__name__}: {error}")
    _record(request.config, case, verdict)
    record_property("score", case.points if verdict.passed else 0)
    if verdict.mistake:
        record_property("mistake", verdict.mistake)
    if not verdict.passed:
        pytest.fail(_failure_text(case, verdict, request.config), pytrace=False)


def _load(submission, config, case):
    """The submission's module; a file that cannot be loaded fails with its status."""
    try:
        module = submission.module
    except pytest.fail.Exception:
        error = getattr(submission, "_error", None)
        status = getattr(error, "status", "import_error")
        if case is not None:
            mistake = "not_implemented" if status == "not_implemented" else "import_error"
            _record(config, case, Verdict(case.id, False, str(error), mistake))
        raise
    config._ntgemm_module = module
    return module


def _record(config, case, verdict):
    results = getattr(config, "_ntgemm_results", None)
    if results is None:
        results = config._ntgemm_results = {}
    results[case.id] = (case, verdict)


def _failure_text(case, verdict, config):
    """The verdict, then the likely cause: the check's own, the arrangement's, or the case's."""
    key = verdict.mistake
    if not key or key == "build_error":  # the arrangement may say why it did not build
        findings = getattr(config, "_ntgemm_findings", None)
        if findings is None and getattr(config, "_ntgemm_module", None) is not None:
            findings = config._ntgemm_findings = diagnosis.inspect_arrangement(
                config._ntgemm_module)
        for finding in findings or ():
            if finding["mistake"] != "build_error":
                key = finding["mistake"]
                break
    key = key or case.targets
    likely = MISTAKES[key]
    return (f"{case.describe()} ({case.why}) failed:\n{verdict.message}\n"
            f"likely cause, {likely.title}: {likely.en}\n{likely.zh}")
