"""The shared process table: what it finds, how old a reading it hands out, and that
concurrent looks share one reading."""

import os
import subprocess
import sys
import threading

import pytest

from grader.batch.isolation import process_table

SLEEPER = [sys.executable, "-c", "import time; time.sleep(60)"]
PARENT = [
    sys.executable,
    "-c",
    "import subprocess, sys, time\n"
    "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
    "print('started', flush=True)\ntime.sleep(60)",
]


@pytest.fixture
def started():
    """Start commands; end them all after the test."""
    processes = []

    def start(command):
        process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
        processes.append(process)
        return process

    yield start
    for process in processes:
        for child in process_table.descendants(process.pid):
            child.kill()
        process.kill()
        process.wait()


def test_descendants_are_children_and_theirs(started):
    parent = started(PARENT)
    assert parent.stdout.readline() == "started\n"
    found = process_table.descendants(parent.pid)
    assert len(found) == 1 and found[0].ppid() == parent.pid
    assert process_table.descendants(found[0].pid) == []


def test_a_reading_younger_than_max_age_is_reused_and_misses_what_started_since(started):
    _mine(0.0)  # a fresh reading
    late = started(SLEEPER)
    assert late.pid not in _mine(60.0)  # the reading above, taken before it started
    assert late.pid in _mine(0.0)
    assert late.pid in _mine(60.0)  # the new reading is now the shared one


def test_looks_at_the_same_time_share_one_reading(monkeypatch):
    reads = []
    read = process_table._read
    monkeypatch.setattr(process_table, "_read", lambda: reads.append(1) or read())
    process_table.descendants(1)  # a fresh reading, now 0 s old
    threads = [threading.Thread(target=process_table.descendants, args=(1, 30.0)) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(reads) == 1


def _mine(max_age):
    """The pids of this test process's children in a table at most ``max_age`` old."""
    return {process.pid for process in process_table.descendants(os.getpid(), max_age)}
