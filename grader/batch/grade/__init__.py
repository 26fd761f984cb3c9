"""A class graded into one folder: ``python -m grader grade`` and ``merge``.

``intake`` reads the submissions folder, hostile, into memory (grader.batch.names turns
entry names into printable student ids, ``safe_read`` opens only regular files and reads them bounded,
``folder_digest`` shows the folder unchanged afterwards); ``grading`` grades one submission
through two sandboxed runs, and ``verdict`` judges what they sent back; ``session`` runs a
batch (resume, the pool of workers, the speed phase, the class reports) and merges shards,
and ``manifest`` is what it records of its settings (batch.json); ``machine`` records what graded it
(environment.json). It may import every room below it: grader.batch.outputs, .timing,
.isolation and .inside.
"""
