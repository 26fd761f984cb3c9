"""Pytest hooks for the grader suite (grader/test_grader.py) only.

* Adds ``--pictures DIR``: where the grade's summary draws the arrangement of a failing
  submission (grader.core.suite.picture).
* Expands the case catalogue into tests: one per case, with the case's id, for
  this run's backend and grading secret (``--seed`` or ``--seed-file``). GPU-only
  cases stay in the list and are skipped on the interpreter, so the skip and its
  reason are visible.

The grade printed at the end comes from grader.core.suite, through the root conftest.
"""

from grader.core import cases

CASE_FIXTURE = "grader_case"


def pytest_addoption(parser):
    parser.getgroup("ntgemm").addoption(
        "--pictures",
        default=None,
        metavar="DIR",
        help="when cases fail and the arrangement is off, draw DIR/arrangement.png: which "
        "tiles one program gets, beside the expected ones",
    )


def grader_cases(seed, backend_name):
    """The catalogue for this run, plus the GPU-only cases so their skips are shown."""
    runnable = cases.catalogue(seed, backend_name)
    shown = set(case.id for case in runnable)
    skipped = [
        case
        for case in cases.all_fixed_cases()
        if not case.runs_on(backend_name) and case.id not in shown
    ]
    fixed_order = [case.id for case in cases.all_fixed_cases()]
    fixed = [case for case in runnable + skipped if case.id in fixed_order]
    fixed.sort(key=lambda case: fixed_order.index(case.id))
    return fixed + [case for case in runnable if case.id not in fixed_order]


def pytest_generate_tests(metafunc):
    if CASE_FIXTURE not in metafunc.fixturenames:
        return
    config = metafunc.config
    backend = config._ntgemm_backend
    selected = grader_cases(config._ntgemm_seed, backend.name)
    metafunc.parametrize(CASE_FIXTURE, selected, ids=[case.id for case in selected])
