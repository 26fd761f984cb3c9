"""The staff batch grader (``python -m grader``): intake, the sandbox, the worker
and its protocol, the speed phase, reports, and exports. Never in the handout.
"""
