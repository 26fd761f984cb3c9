"""The staff batch grader (``python -m grader``), never in the handout. Its rooms, bottom up:

* ``inside``: what runs inside the sandbox (the worker, the build guard, the speed probe)
  and the protocol it speaks;
* ``isolation``: the parent's side of the sandbox (bubblewrap, the unprivileged user, the
  limits, the conversation with a worker); with ``inside``, all that crosses the boundary;
* ``timing``: the speed phase and the hand-in check;
* ``outputs``: what a batch writes (reports, the staff's overrides, charts, the leaderboard,
  exports, sharing, the secret and the signing key);
* ``grade``: a class graded into a folder (intake, one submission's grading, the session);
* ``packaging``: the student handout and the Gradescope autograder.

A room imports only itself and the rooms below it. Beneath them all lie this package's
own ``status``, ``record`` (the grading record every room passes on), ``names`` (how ids are read and shown) and ``import_graph``, and above them all ``cli``, which parses the command
line and hands each command to its room. The layers are declared in import_graph.LAYERS.
"""
