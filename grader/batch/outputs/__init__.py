"""What a batch writes, from its records: every file a student, the staff or an LMS reads.

``reports`` writes each student's folder (the signed record beside what ``feedback``
makes: feedback.md and results.json) and the class's files, with the staff's
``overrides`` applied, in folders ``student_folders`` names; ``class_chart`` and
``leaderboard`` draw, the latter under ``pseudonyms``; ``export`` writes gradebooks for
Canvas and Moodle, ``feedback_zip`` the zips of feedback pages (``feedback_html``) they take
back, ``share`` copies out what students may see, ``constraints`` pins the
grading stack and ``explain_speed`` prints the timed students' why-this-speed sections. Every file appears whole (``atomic_file``), every CSV goes through
``spreadsheet``, and the signing key and the grading ``secret`` are made by
``private_file``. It may import grader.batch.timing (a record's speed
entry), the rooms below it, grader.batch's own modules, grader.core and the benchmark; it
runs nothing.
"""
