"""What a batch writes, from its records: every file a student, the staff or an LMS reads.

``reports`` writes each student's folder (the signed record beside what ``feedback``
makes: feedback.md and results.json) and the class's files; ``class_chart`` and
``leaderboard`` draw; ``export`` writes gradebooks for Canvas and Moodle and ``share``
copies out what students may see. Every CSV goes through ``spreadsheet``, and the signing
key is made by ``private_file``. It may import grader.batch.timing (a record's speed
entry), the rooms below it, grader.batch's own modules, grader.core and the benchmark; it
runs nothing.
"""
