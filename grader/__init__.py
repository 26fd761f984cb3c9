"""The ntgemm grader: case catalogue, checks, diagnosis, and the batch grader.

Importing this package never imports triton, so the backend (GPU or the Triton
interpreter) can still be chosen afterwards; see grader.core.backend.
"""

__version__ = "0.1.0"
