"""What a student's copy of the kit needs to judge a kernel: the case catalogue, the
checks and their diagnosis, the backend, and the compile gate.

It imports nothing from ``grader.batch``; the student handout ships it whole.
"""
