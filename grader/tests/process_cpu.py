"""Run a command and say which kinds of process used the machine's CPU while it ran.

    python -m grader.tests.process_cpu [--every S] [--json FILE] [--by-test N] -- COMMAND [ARG...]

For a batch (``-- python -m grader grade ...``) it splits the CPU seconds between the
grader itself, the sandboxes' fork servers, the runs they fork, the compile gate's
children, and the C compiler and ptxas that Triton starts, so that a cut aims at what
costs most. A process's seconds are its own (not its reaped children's), read from
/proc every ``--every`` seconds: a process that lives less than that may be missed, and
the last moments of each are lost, so the sum is a lower bound of the machine's busy time,
which is printed beside it. Linux only.

For the test suite (``-- python -m pytest ...``), ``--by-test N`` also names the N tests
whose processes cost most: a process counts for the test named by pytest's
PYTEST_CURRENT_TEST in its environment or its nearest ancestor's, as it started. So the
processes a test starts (a batch, a sandbox, a run) are its own; what a test does in the
pytest worker itself stays the worker's.
"""

import argparse
import collections
import json
import os
import subprocess
import sys
import time

import psutil

PLAIN_SERVER = os.path.join("grader", "batch", "inside", "plain_forkserver.py")


def busy_seconds():
    """CPU seconds of every core, not idle nor waiting for I/O, since boot."""
    times = psutil.cpu_times()
    return sum(times) - times.idle - getattr(times, "iowait", 0.0)


def snapshot(seen):
    """Update ``seen`` {pid: {"ppid", "argv", "cpu_s"}} with every process there now."""
    for process in psutil.process_iter(["ppid", "cmdline", "name", "cpu_times"]):
        info = process.info
        if info["cpu_times"] is None:
            continue  # not ours to read, or it ended meanwhile
        entry = seen.get(process.pid)
        if entry is None:
            entry = seen[process.pid] = {
                "ppid": info["ppid"],
                "argv": [info["name"] or "?"],
                "test": _test(process),
            }
        if info["cmdline"]:  # the latest: one seen between its fork and its exec had its parent's
            entry["argv"] = info["cmdline"]
        entry["cpu_s"] = info["cpu_times"].user + info["cpu_times"].system


def _test(process):
    """The pytest test a process was started for (see ``--by-test``), or None."""
    try:
        named = process.environ().get("PYTEST_CURRENT_TEST")
    except (psutil.Error, OSError):
        return None
    return named.rsplit(" (", 1)[0] if named else None


def module(process):
    """The module of ``python -m MODULE ...``, else None (bubblewrap's own command line
    names the module too, as an argument: it is not a Python process). The unsandboxed
    fork server, run as a script, is named as its module."""
    argv = process["argv"]
    if not os.path.basename(argv[0]).startswith("python"):
        return None
    if argv[1:2] == ["-m"] and argv[2:]:
        return argv[2]
    if argv[1:2] and argv[1].endswith(PLAIN_SERVER):
        return "grader.batch.inside.plain_forkserver"
    return None


def kind(pid, seen, root):
    """What a process is, for the batch grader: by its command, and by its parent's."""
    if pid == root:
        return "the command itself"
    name = module(seen[pid])
    if name == "grader.core.gpu_compile":
        return "compile gate child"
    if name in ("grader.batch.inside.forkserver", "grader.batch.inside.plain_forkserver"):
        parent = seen.get(seen[pid]["ppid"])
        return "run (forked)" if parent and module(parent) == name else "fork server"
    if name == "grader.batch.inside.worker":
        return "run (started)"
    if name == "grader":  # a batch, a merge, an export...: by its subcommand
        return " ".join(["grader", *seen[pid]["argv"][3:4]])
    if name:
        return f"python -m {name}"
    return os.path.basename(seen[pid]["argv"][0]) or "?"


def descendants(seen, root):
    children = collections.defaultdict(list)
    for pid, process in seen.items():
        children[process["ppid"]].append(pid)
    found, stack = set(), [root]
    while stack:
        pid = stack.pop()
        found.add(pid)
        stack.extend(child for child in children[pid] if child not in found)
    return found


def by_test(seen, root):
    """{test: {kind: CPU seconds}} over ``root``'s tree, each process counted for its own
    test or its nearest ancestor's below ``root`` (the command is no test's, even where it
    inherited a test's name: a suite measured from inside a test)."""
    tests = collections.defaultdict(collections.Counter)
    for pid in descendants(seen, root) & set(seen):
        ancestor = pid
        while ancestor != root and ancestor in seen and not seen[ancestor]["test"]:
            ancestor = seen[ancestor]["ppid"]
        test = seen[ancestor]["test"] if ancestor != root and ancestor in seen else None
        if test:
            tests[test][kind(pid, seen, root)] += seen[pid]["cpu_s"]
    return tests


def measure(command, every=0.2):
    """Run ``command``; (its exit code, wall seconds, busy CPU seconds of the machine,
    {kind: [processes, CPU seconds]} over the command's process tree, {test: {kind: CPU
    seconds}} as ``by_test`` gives)."""
    seen, before, started = {}, busy_seconds(), time.monotonic()
    process = subprocess.Popen(command)
    root = process.pid
    while process.poll() is None:
        snapshot(seen)
        time.sleep(every)
    wall, busy = time.monotonic() - started, busy_seconds() - before
    kinds = collections.defaultdict(lambda: [0, 0.0])
    for pid in descendants(seen, root) & set(seen):
        entry = kinds[kind(pid, seen, root)]
        entry[0] += 1
        entry[1] += seen[pid]["cpu_s"]
    return process.returncode, wall, busy, dict(kinds), by_test(seen, root)


def report(wall, busy, kinds):
    lines = [
        f"{wall:.1f} s of wall time; the machine was busy for {busy:.1f} CPU seconds",
        f"{'CPU s':>9} {'processes':>9}  kind",
    ]
    for name, (count, cpu_s) in sorted(kinds.items(), key=lambda item: -item[1][1]):
        lines.append(f"{cpu_s:9.1f} {count:9d}  {name}")
    lines.append(f"{sum(cpu for _, cpu in kinds.values()):9.1f} {'':9}  in all (a lower bound)")
    return "\n".join(lines)


def report_tests(tests, count):
    """The ``count`` tests whose processes cost most, each with its three costliest kinds."""
    lines = [f"{'CPU s':>9}  test: its costliest kinds of process"]
    for test, costs in sorted(tests.items(), key=lambda item: -sum(item[1].values()))[:count]:
        top = ", ".join(f"{name} {cpu:.1f}" for name, cpu in costs.most_common(3))
        lines.append(f"{sum(costs.values()):9.1f}  {test}: {top}")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m grader.tests.process_cpu", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument(
        "--every",
        type=float,
        default=0.2,
        metavar="S",
        help="seconds between two readings of /proc (default: 0.2)",
    )
    parser.add_argument("--json", metavar="FILE", help="also write the figures to FILE")
    parser.add_argument(
        "--by-test",
        type=int,
        default=0,
        metavar="N",
        help="also name the N tests whose processes cost most (for a pytest command)",
    )
    parser.add_argument("command", nargs=argparse.REMAINDER, help="the command to run, after --")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give the command to run after --, e.g. -- python -m grader grade ...")
    if args.every <= 0:
        parser.error(f"--every must be more than 0 seconds, not {args.every}")
    if args.by_test < 0:
        parser.error(f"--by-test must be 0 or more tests, not {args.by_test}")
    code, wall, busy, kinds, tests = measure(command, args.every)
    print(report(wall, busy, kinds), file=sys.stderr)
    if args.by_test:
        print(report_tests(tests, args.by_test), file=sys.stderr)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as stream:
            json.dump(
                {
                    "wall_s": wall,
                    "busy_cpu_s": busy,
                    "returncode": code,
                    "kinds": {
                        name: {"processes": count, "cpu_s": cpu_s}
                        for name, (count, cpu_s) in kinds.items()
                    },
                    "tests": {test: dict(costs) for test, costs in tests.items()},
                },
                stream,
                indent=1,
            )
    return code


if __name__ == "__main__":
    sys.exit(main())
