"""Public tests: the guide's 512^3 case and its five extra shapes.

Run ``pytest assignment`` (your file) or ``pytest assignment --submission PATH``.
Without a GPU they run through the Triton interpreter on the CPU; 512^3 is then
skipped (it would take minutes there), and the reason is shown.
"""

import pytest

from grader import cases
from grader.checks import judge
from grader.execution import produce
from grader.mistakes import MISTAKES


@pytest.mark.parametrize("case", cases.public_cases(), ids=lambda case: case.id)
def test_public_case(case, submission, backend):
    if not case.runs_on(backend.name):
        pytest.skip(cases.interpreter_skip_reason(case))
    seed = cases.DEFAULT_SEED
    verdict = judge(case, produce(case, submission.module, seed, backend.device), seed, backend.device)
    if not verdict.passed:
        likely = MISTAKES[verdict.mistake or case.targets]
        pytest.fail(
            f"{case.id} ({case.why}) failed:\n{verdict.message}\n"
            f"likely cause, {likely.title}: {likely.en}\n{likely.zh}",
            pytrace=False,
        )
