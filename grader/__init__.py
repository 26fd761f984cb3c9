"""The ntgemm grader: the student core (``grader.core``), the pytest grader beside it
(``test_grader.py``), and the staff batch grader (``grader.batch``).

Importing this package never imports triton, so the backend (GPU or the Triton
interpreter) can still be chosen afterwards; see grader.core.backend.
"""

__version__ = "0.2.0"
