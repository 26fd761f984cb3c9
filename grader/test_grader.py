"""The full grader for one submission: ``pytest grader --submission PATH``.

Every case of the catalogue (grader.core.cases) runs in this process: produce (run
the student's kernel) then judge (compare with a float32-accumulated reference).
Cases too large for the Triton interpreter are skipped on a CPU, with the reason.
A kernel that raises fails its case with the error and a hint, not a traceback.

The terminal summary (grader/conftest.py) adds up the points per case group and
names the likely mistake behind any failures, in English and Chinese. Run with
``--junitxml FILE`` for tools that read JUnit XML: each case carries its points,
group and score as properties (``points`` 0 for a case skipped on this backend).
They are testcase-level ``<property>`` elements (pytest's ``xunit1`` family):
``junitparser.xunit2.JUnitXml`` reads them; junitparser's default API does not.
"""

import pathlib
import warnings

import pytest

from grader.core import build_refusal, execution, kernel_source, layout, mistakes, suite
from grader.core.generated_kernel import KernelRejected
from grader.core.loading import read_source

# The catalogue is expanded into test ids in grader/conftest.py
# (pytest_generate_tests), from the backend and --seed of this run.


def test_arrangement_symbolic(submission, request, record_property):
    """Check the arrangement's shapes at several sizes without running a kernel.

    Worth no points: it is there to explain failures. A layout other than the
    plain block grid (a grouped launch order, say) is skipped, not judged.
    """
    record_property("points", 0)
    record_property("group", "diagnosis")
    module = suite.load(submission, request.config)
    levels = layout.arranged_levels_or_none(module)
    if levels is not None and not all(layout.is_standard_layout(at) for at in levels.values()):
        pytest.skip(
            "the output is not arranged as a plain 2-D grid of tiles; the symbolic "
            "check only judges that layout (the cases still grade the kernel)"
        )
    findings = suite.findings(request.config)
    # A length-1 level left in can be right when application() indexes around it,
    # so on its own it is a warning; the cases decide.
    arranged = [
        finding for finding in findings if finding["mistake"] in mistakes.found_by(mistakes.LAYOUT)
    ]
    hard = [finding for finding in arranged if finding["mistake"] != "missing_squeeze"]
    for finding in arranged:
        if finding["mistake"] == "missing_squeeze":
            warnings.warn(f"symbolic check: {finding['message']}", UserWarning, stacklevel=1)
    if hard:
        lines = [
            "the arrangement does not give each program the tiles a GEMM needs "
            "(checked symbolically, no kernel run):"
        ]
        for finding in hard:
            mistake = mistakes.MISTAKES[finding["mistake"]]
            lines += [
                f"- {finding['message']}",
                f"  likely cause, {mistake.title}: {mistake.en}",
                f"  {mistake.zh}",
            ]
        pytest.fail("\n".join(lines), pytrace=False)


def test_kernel_is_what_the_batch_grader_runs(submission, record_property):
    """The batch grader builds the kernel from arrangement() and application() alone.

    Worth no points here: in the batch, anything those two functions (or the
    helpers and constants they use) reach outside grader.core.kernel_source's
    whitelist, or a kernel NineToothed generates from them that the kit's rules
    refuse, flags the file, and nothing of it runs; where a mistake on a line of the
    file explains the refusal, the file fails instead. This says which line first.
    """
    record_property("points", 0)
    record_property("group", "diagnosis")
    path = pathlib.Path(submission.path)
    if not path.is_file():
        pytest.skip(f"no file at {path}")
    source = read_source(path)
    try:
        rebuilt = kernel_source.extract(source)
    except SyntaxError:  # grader.core.nesting.TooDeep too
        pytest.skip("the file does not parse, or nests too deep to read; the cases say where")
    if rebuilt.violations:
        _refused(
            source,
            " and run nothing of it:\n"
            + "\n".join(f"- {item}" for item in rebuilt.violations)
            + "\narrangement() and application() may use only ninetoothed, "
            "ninetoothed.language (or triton.language), math, the file's constants "
            'and its own helper functions (see docs/instructor-reference.md, "What is '
            'graded, and the threat model")',
            unbuildable=build_refusal.unbuildable(rebuilt.violations),
        )
    rejection = _rejection(submission.module)
    if rejection is not None:
        _refused(
            source,
            f": {rejection}\nwhat NineToothed generates from arrangement() and "
            "application() is checked as Triton runs it "
            '(docs/instructor-reference.md, "What is graded, '
            'and the threat model")',
            rejection.unbound,
            rejection.unbuildable,
        )


def _rejection(module):
    """The KernelRejected of the module's kernel, if the kit's rules refuse it."""
    try:
        execution.own_kernel(module)
    except KernelRejected as rejection:
        return rejection
    except Exception:  # noqa: BLE001 - a kernel that cannot be made: the cases say why
        pass
    return None


def _refused(source, why, unbound=(), unbuildable=False):
    """Fail as the batch grader decides a refusal (grader.core.build_refusal): on the line
    that explains it, else as a flagged file."""
    line = build_refusal.decide(source, unbound, unbuildable).line
    if not line:
        pytest.fail(f"the batch grader would flag this file (score 0){why}", pytrace=False)
    pytest.fail(
        f"your kernel cannot run as written: {line}\n"
        "the batch grader fails such a file (score 0) and runs nothing of it",
        pytrace=False,
    )


def test_case(grader_case, submission, backend, grading_seed, request, record_property):
    case = grader_case
    # A case skipped on this backend is worth nothing here, so a tool adding up the
    # points reads 30 of 30 for a perfect file on a CPU, not 30 of 35.
    record_property("points", case.points if case.runs_on(backend.name) else 0)
    record_property("group", case.group)
    try:
        verdict = suite.check_case(case, submission, backend, grading_seed, request)
    except pytest.fail.Exception:
        record_property("score", 0)
        raise
    record_property("score", case.points)
    if verdict.mistake:
        record_property("mistake", verdict.mistake)
