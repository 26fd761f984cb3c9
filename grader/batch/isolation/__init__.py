"""The parent's side of the sandbox: it starts a worker confined, watches it, talks to it.

Read in this order: ``sandbox`` (bubblewrap, the job folder, the environment allowlist,
the wall, memory and CPU limits, the pipes no stray process can block), ``unprivileged``
(the user student code runs as where there is no sandbox), ``time_budget`` (the
interpreter's extra seconds) and ``conversation`` (each run's messages, in order, into a
RunReport; nothing is judged here). With grader.batch.inside this is everything that
crosses the boundary. It may import grader.batch.inside (the protocol), grader.batch's
own modules and grader.core.
"""
