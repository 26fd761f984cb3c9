"""The parent's side of the sandbox: it starts a worker confined, watches it, talks to it.

Read in this order: ``sandbox`` (one worker's process, its wall, memory and CPU limits,
how it ended, and whether a worker can start here at all), ``usage`` (what its process
tree uses), ``time_policy`` (every rule on when a run stops and when its file is graded
again), ``warm_pool`` (workers started ahead of their runs), ``launch`` (the bubblewrap
command line and the environment allowlist), ``folders`` (the read-only job folder and the
scratch folder), ``pipes`` (pipes no stray process can block), ``unprivileged`` (the user
student code runs as where there is no sandbox) and ``conversation`` (each run's messages,
in order, into a RunReport; nothing is judged here). With grader.batch.inside this is
everything that crosses the boundary. It may import grader.batch.inside (the protocol),
grader.batch's own modules and grader.core.
"""
