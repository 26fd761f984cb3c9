"""Public tests: the guide's 512^3 case and its five extra shapes.

Run ``pytest assignment`` (your file) or ``pytest assignment --submission PATH``.
Without a GPU they run through the Triton interpreter on the CPU; 512^3 is then
skipped (it would take minutes there), and the reason is shown.
"""

import pytest

from grader.core import cases, suite


@pytest.mark.parametrize("case", cases.public_cases(), ids=lambda case: case.id)
def test_public_case(case, submission, backend, request):
    suite.check_case(case, submission, backend, cases.DEFAULT_SEED, request)
