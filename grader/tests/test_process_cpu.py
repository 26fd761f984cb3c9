"""The CPU split a batch's cost is measured with (grader.tests.process_cpu): the processes
it names, and what it refuses."""

import json
import sys

import pytest

from grader.tests import process_cpu

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")

BUSY = "import time\nstart = time.process_time()\nwhile time.process_time() - start < {}: pass\n"


def test_a_command_and_the_processes_it_starts_are_counted_by_kind(tmp_path):
    child = [sys.executable, "-m", "grader.core.gpu_compile"]  # named by module, not run
    # Its --help alone ends within a sample or two: a sitecustomize holds it 0.5 s first.
    (tmp_path / "slow").mkdir()
    (tmp_path / "slow" / "sitecustomize.py").write_text("import time\ntime.sleep(0.5)\n")
    script = tmp_path / "spawn.py"
    script.write_text(
        BUSY.format(0.3) + "import os, subprocess, sys\n"
        f"subprocess.run([sys.executable, '-c', {BUSY.format(0.8)!r}])\n"
        f"subprocess.run({child!r} + ['--help'], capture_output=True, "
        f"env={{**os.environ, 'PYTHONPATH': {str(tmp_path / 'slow')!r}}})\n"
    )
    code, wall, busy, kinds, _ = process_cpu.measure([sys.executable, str(script)], every=0.05)
    assert code == 0
    assert kinds["the command itself"][0] == 1 and kinds["the command itself"][1] >= 0.2
    python = [entry for name, entry in kinds.items() if name.startswith("python")]
    assert python and python[0][1] >= 0.5, kinds
    assert kinds["compile gate child"][0] == 1, kinds
    assert busy >= sum(cpu for _, cpu in kinds.values()) - 0.5 and wall > 1.0


def test_by_test_counts_what_a_test_starts_for_that_test(tmp_path, capsys):
    """A pytest run of two tests: the one whose child burns a second of CPU is named first,
    with that child's seconds; the one that starts nothing costs nothing of its own."""
    (tmp_path / "test_two.py").write_text(
        "import subprocess, sys\n\n"
        "def test_busy():\n"
        f"    subprocess.run([sys.executable, '-c', {BUSY.format(1.0)!r}], check=True)\n\n"
        "def test_idle():\n"
        "    pass\n"
    )
    code = process_cpu.main(
        [
            "--every",
            "0.05",
            "--by-test",
            "5",
            "--json",
            str(tmp_path / "cpu.json"),
            "--",
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            str(tmp_path / "test_two.py"),
        ]
    )
    assert code == 0
    tests = json.loads((tmp_path / "cpu.json").read_text())["tests"]
    busy = [
        cpu
        for test, costs in tests.items()
        if test.endswith("::test_busy")
        for cpu in costs.values()
    ]
    assert sum(busy) >= 0.7, tests
    assert not [test for test in tests if test.endswith("::test_idle")], tests
    shown = capsys.readouterr().err.split("test: its costliest kinds of process\n")[1]
    assert shown.splitlines()[0].split()[1].endswith("::test_busy:"), shown


def test_bubblewrap_naming_the_fork_server_is_not_taken_for_it():
    seen = {
        1: {"ppid": 0, "argv": ["python3", "-m", "grader", "grade"]},
        2: {
            "ppid": 1,
            "argv": [
                "bwrap",
                "--die-with-parent",
                "python3",
                "-m",
                "grader.batch.inside.forkserver",
                "3",
                "f",
            ],
        },
        3: {"ppid": 2, "argv": ["python3", "-m", "grader.batch.inside.forkserver"]},
        4: {"ppid": 3, "argv": ["python3", "-m", "grader.batch.inside.forkserver"]},
    }
    assert [process_cpu.kind(pid, seen, 1) for pid in (1, 2, 3, 4)] == [
        "the command itself",
        "bwrap",
        "fork server",
        "run (forked)",
    ]
    seen[5] = {"ppid": 1, "argv": ["python3", "-m", "grader", "merge", "a", "b"]}
    seen[6] = {"ppid": 1, "argv": ["python3", "-m", "pytest", "-q"]}
    assert [process_cpu.kind(pid, seen, 1) for pid in (5, 6)] == [
        "grader merge",
        "python -m pytest",
    ]


def test_the_unsandboxed_fork_server_and_its_runs_are_named():
    server = ["python3", "/kit/grader/batch/inside/plain_forkserver.py", "7", "interpreter"]
    seen = {
        1: {"ppid": 0, "argv": ["python3", "-m", "grader", "grade"]},
        2: {"ppid": 1, "argv": server},
        3: {"ppid": 2, "argv": server},
        4: {"ppid": 1, "argv": ["python3", "/kit/other.py"]},
    }
    assert [process_cpu.kind(pid, seen, 1) for pid in (2, 3, 4)] == [
        "fork server",
        "run (forked)",
        "python3",
    ]


@pytest.mark.parametrize(
    "argv, said",
    [
        ([], "give the command to run after --"),
        (["--every", "0", "--", "true"], "--every must be"),
        (["--by-test", "-1", "--", "true"], "--by-test must be"),
    ],
)
def test_bad_arguments_are_named(argv, said, capsys):
    with pytest.raises(SystemExit):
        process_cpu.main(argv)
    assert said in capsys.readouterr().err
