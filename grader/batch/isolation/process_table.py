"""The host's process table, read once and shared by every run's looks.

Finding a run's processes means reading the parent of every process on the host (Linux
keeps no list of a process's descendants that stays true while they fork). Each worker's
watch did that by itself at every look, which in the 100-file stress class at ``-j 8`` was
over a third of py-spy's samples of the grader's threads (docs/stress-runs/timeline.md, the
runs with py-spy), mostly Python holding the interpreter's lock that every other thread of
the grader waits for.
One reading now serves every look that can use a table ``max_age`` seconds old.

A table that old misses a process started since: such a process is seen at most
``max_age`` later. Whatever must see everything (a kill, a run near its memory limit,
finding a freshly forked worker) asks for ``max_age=0``, a new reading.
"""

import threading
import time

import psutil

# How old a table the regular looks at a run's limits accept (grader.batch.isolation.sandbox)
SHARED_S = 0.1

_lock = threading.Lock()
_taken = float("-inf")
_children = {}  # pid: [psutil.Process of each child], as read at _taken


def descendants(root, max_age=0.0):
    """Every process below pid ``root`` (children, theirs, ...), from a reading of the
    host's process table at most ``max_age`` seconds old; [] where ``root`` has none."""
    with _lock:
        if time.monotonic() - _taken > max_age:
            _read()
        found, stack = [], list(_children.get(root, ()))
        while stack:
            process = stack.pop()
            found.append(process)
            stack.extend(_children.get(process.pid, ()))
        return found


def _read():
    global _taken, _children
    children = {}
    # No ``attrs``: psutil stores them on Process objects that every caller of
    # process_iter shares, and another thread's call (unprivileged.processes_of) may
    # replace them before they are read here.
    for process in psutil.process_iter():
        try:
            parent = process.ppid()
        except psutil.Error:
            continue  # ended since the listing
        if process.pid != parent:
            children.setdefault(parent, []).append(process)
    _taken, _children = time.monotonic(), children
