"""The preloaded grader (grader.tests.preloaded) behaves as a new ``python -m grader`` process:
same streams, exit codes and outputs; the command's own environment and folder; a timeout
that kills it. The batch tests' verdicts rest on it (batch_helpers.run_grader)."""

import json
import os
import re
import shutil
import subprocess
import sys
import time

import psutil
import pytest

from grader.tests import preloaded
from grader.tests.batch_helpers import (
    DEMO,
    ROOT,
    environment,
    gradebook,
    grader_command,
    run_grader,
)


def _fresh(tmp_path, *args, env=None):
    return subprocess.run(
        grader_command(*args),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        env=env or environment(tmp_path),
    )


def _same_text(text):
    """A run's output without what differs between two runs: seconds and the out folder."""
    return re.sub(r"\d+\.\d+ s|out-(fresh|preloaded)", "…", text)


def test_a_class_is_graded_alike_in_a_new_process_and_a_preloaded_one(tmp_path):
    submissions = tmp_path / "class"
    for student in ("ben", "hana", "ivan"):  # nothing to run: every verdict is the parent's
        shutil.copytree(DEMO / student, submissions / student)
    (submissions / "zoe.py").write_text("def arrangement(:\n", encoding="utf-8")
    runs = {}
    for how, run in (("fresh", _fresh), ("preloaded", run_grader)):
        runs[how] = run(
            tmp_path,
            "grade",
            str(submissions),
            "--out",
            str(tmp_path / f"out-{how}"),
            "--no-progress",
        )
    fresh, mine = runs["fresh"], runs["preloaded"]
    assert fresh.returncode == mine.returncode == 0, (fresh.stderr, mine.stderr)
    for stream in ("stdout", "stderr"):  # the files are graded at once: any order
        assert sorted(_same_text(getattr(mine, stream)).splitlines()) == sorted(
            _same_text(getattr(fresh, stream)).splitlines()
        )
    assert gradebook(tmp_path / "out-preloaded") == gradebook(tmp_path / "out-fresh")
    assert (tmp_path / "out-preloaded" / "summary.png").stat().st_size > 10_000


@pytest.mark.parametrize(
    "args",
    [
        ["grade", "no-such-dir", "--out", "x"],  # the grader's own error: exit 1
        ["grade", "grader/demo_class", "--out", "x", "-j", "zero"],  # argparse's: exit 2
    ],
)
def test_errors_and_exit_codes_are_a_new_process_s(tmp_path, args):
    fresh, mine = _fresh(tmp_path, *args), run_grader(tmp_path, *args)
    assert (mine.returncode, mine.stdout, mine.stderr) == (
        fresh.returncode,
        fresh.stdout,
        fresh.stderr,
    )
    assert mine.returncode in (1, 2)


def test_the_command_s_own_environment_is_read_not_the_server_s(tmp_path):
    env = {**environment(tmp_path), "NTGEMM_BACKEND": "abacus"}
    args = ["grade", "grader/demo_class", "--out", str(tmp_path / "out")]
    mine = preloaded.run(args, cwd=ROOT, env=env, timeout=600)
    assert mine.returncode == 1
    assert (
        mine.stderr == "error: NTGEMM_BACKEND='abacus' is not understood: expected one of "
        "auto, gpu, interpreter\n"
    )
    assert mine.stderr == _fresh(tmp_path, *args, env=env).stderr


def test_a_command_past_its_timeout_is_killed_with_its_process_group(tmp_path):
    secret = tmp_path / "secret"
    os.mkfifo(secret)  # nobody writes it: the grader waits for its seed, spending nothing
    started = time.monotonic()
    with pytest.raises(subprocess.TimeoutExpired) as raised:
        run_grader(
            tmp_path,
            "grade",
            str(DEMO),
            "--out",
            str(tmp_path / "out"),
            "--seed-file",
            str(secret),
            timeout=2,
        )
    assert time.monotonic() - started < 60
    assert raised.value.stderr is None  # nothing was written: subprocess.run says None then
    leftovers = [
        process
        for process in psutil.process_iter(["cmdline"])  # a new process
        if str(tmp_path / "out") in " ".join(process.info["cmdline"] or ())
    ]
    if preloaded.server_pid():  # a fork keeps the server's command line: look at its children
        leftovers += psutil.Process(preloaded.server_pid()).children(recursive=True)
    assert not leftovers, leftovers


@pytest.mark.parametrize("module", sorted(preloaded.PRELOADED))
def test_the_server_made_its_imports_and_nothing_else(module):
    """No thread of Python's, no temporary folder chosen (a child follows its own TMPDIR), and
    none of the kit's modules: a child imports those as its command does. (Reading PRELOADED
    here imports grader.tests.preloaded; the server, run as a script, does not.)"""
    code = (
        f"import sys, tempfile, threading\nfrom grader.tests import preloaded\n"
        f"for name in preloaded.PRELOADED[{module!r}]:\n    __import__(name)\n"
        "print(tempfile.tempdir, threading.active_count(), sorted(\n"
        "    name for name in sys.modules if name.split('.')[0] in ('grader', 'benchmarks',\n"
        "    'solutions') and name not in ('grader', 'grader.tests',\n"
        "                                  'grader.tests.preloaded')))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert done.stdout.split() == ["None", "1", "[]"], done.stderr[-2000:]


# What a test run by the nested pytest sees of its process: its path, its arguments, what it
# has imported of the kit and of the modules a server preloads.
PROBE = """
import json, os, sys

def test_report():
    print("REPORT " + json.dumps({
        "path": sys.path, "argv": sys.argv, "cwd": os.getcwd(), "env": dict(os.environ),
        "kit": sorted(name for name in sys.modules if name.split(".")[0] in (
            "grader", "benchmarks", "solutions", "ledger")),
    }))
"""


def test_a_nested_pytest_sees_what_a_new_process_sees(tmp_path):
    """A folder outside the kit, an empty PYTHONPATH (the handout's test runs so): the path is
    the folder's and the environment's, not the server's, and no module of the kit is there
    before the run imports it."""
    (tmp_path / "test_probe.py").write_text(PROBE, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": "", "NTGEMM_PROBE": "x"}
    args = ["-q", "-s", "-p", "no:cacheprovider", "test_probe.py"]
    fresh = subprocess.run(
        [sys.executable, "-m", "pytest", *args],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    mine = preloaded.run(args, cwd=tmp_path, env=env, timeout=300, module="pytest")
    reports = [
        json.loads(line.split(" ", 1)[1])
        for done in (fresh, mine)
        for line in done.stdout.splitlines()
        if line.startswith("REPORT ")
    ]
    assert len(reports) == 2 and fresh.returncode == mine.returncode == 0, (fresh, mine)
    assert reports[0] == reports[1]
    assert reports[0]["path"][0] == str(tmp_path) and str(ROOT) not in reports[0]["path"]


def test_the_doc_check_s_shim_runs_commands_as_written(tmp_path):
    """Through the shim (preloaded.shim_environment) a shell command prints and exits as with
    this interpreter itself: ``python -c`` is exec'd, ``-m grader`` and ``-m pytest`` are
    forked, and nothing they start sees the shim."""
    script = (
        "python -c 'import os, sys; print(sys.executable, os.environ.get(\""
        + preloaded.SHIM
        + '"), os.environ["PATH"].split(os.pathsep)[0])\'; '
        'python -m pytest --version; echo "pytest $?"; '
        'python -m grader grade no-such-dir --out x; echo "grader $?"'
    )
    plain = {
        **os.environ,
        "PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"],
    }
    runs = [
        subprocess.run(
            ["bash", "-c", script],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        for env in (plain, preloaded.shim_environment(plain))
    ]
    assert runs[0].stdout == runs[1].stdout and runs[0].stderr == runs[1].stderr, runs
    python = sys.executable
    assert runs[1].stdout.splitlines()[0] == f"{python} None {os.path.dirname(python)}"
    assert "pytest 0" in runs[1].stdout and "grader 1" in runs[1].stdout
