"""The Gradescope autograder, offline: build the zip, unpack it into a fake /autograder
tree, run its run_autograder on a submission, and check results.json against the spec.

The spec is Gradescope's ``docs/specs.md`` (gradescope/autograder_samples) and its
documented result fields (status, output_format, number, tags, leaderboard):
``check_results`` below is that spec written as code, field by field.
"""

import json
import re
import os
import shutil
import signal
import stat
import subprocess
import sys
import time
import zipfile

import pytest

from grader.batch.record import Record
from grader.core import cases
from grader.tests.batch_helpers import DEMO, batch_backend, kit_files_loaded_alone, run_grader
from solutions import MODEL_ANSWER

SEED = 4242


def chosen_cases():
    """Two public cases and one hidden case of the seed the zip is built with."""
    catalogue = {case.name: case.id for case in cases.catalogue(SEED, batch_backend())}
    return ",".join(["nonsquare-128x256x192", "tail_mnk-65x97x130", catalogue["hidden_1"]])


VISIBILITY = {"hidden", "after_due_date", "after_published", "visible"}
FORMATS = {"text", "html", "simple_format", "md", "ansi"}
TOP = {
    "score": (int, float),
    "execution_time": (int, float),
    "output": str,
    "output_format": str,
    "test_output_format": str,
    "test_name_format": str,
    "visibility": str,
    "stdout_visibility": str,
    "extra_data": dict,
    "tests": list,
    "leaderboard": list,
}
TEST = {
    "score": (int, float),
    "max_score": (int, float),
    "status": str,
    "name": str,
    "name_format": str,
    "number": str,
    "output": str,
    "output_format": str,
    "tags": list,
    "visibility": str,
    "extra_data": dict,
}


def check_results(results):
    """Every field is one the spec defines, of the type and values it allows."""
    assert set(results) <= set(TOP), set(results) - set(TOP)
    for field, kind in TOP.items():
        if field in results:
            assert isinstance(results[field], kind), field
    assert "score" in results or all("score" in test for test in results.get("tests", []))
    for field in ("visibility", "stdout_visibility"):
        assert results.get(field, "visible") in VISIBILITY
    for field in ("output_format", "test_output_format"):
        assert results.get(field, "text") in FORMATS
    for test in results.get("tests", []):
        assert set(test) <= set(TEST), set(test) - set(TEST)
        for field, kind in TEST.items():
            if field in test:
                assert isinstance(test[field], kind), (field, test)
        assert test.get("status", "passed") in {"passed", "failed"}
        assert test.get("visibility", "visible") in VISIBILITY
        assert all(isinstance(tag, str) for tag in test.get("tags", []))
        assert 0 <= test.get("score", 0) <= test.get("max_score", float("inf"))
    for entry in results.get("leaderboard", []):
        assert set(entry) <= {"name", "value", "order"} and "name" in entry and "value" in entry
        assert entry.get("order", "desc") in {"asc", "desc"}


@pytest.fixture(scope="module")
def autograder(tmp_path_factory):
    base = tmp_path_factory.mktemp("gradescope")
    result = run_grader(
        base,
        "gradescope",
        "--out",
        str(base),
        "--seed",
        str(SEED),
        "--timeout",
        "60",
        "--cases",
        chosen_cases(),
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    source = base / "autograder" / "source"
    with zipfile.ZipFile(base / "autograder.zip") as archive:
        names = archive.namelist()
        assert {"setup.sh", "run_autograder", "gradescope.json"} <= set(names)
        assert not any("/tests/" in name or "demo_class" in name for name in names)
        archive.extractall(source)
        for name in ("setup.sh", "run_autograder"):
            assert stat.S_IMODE(archive.getinfo(name).external_attr >> 16) & 0o111
    for name in ("setup.sh", "run_autograder"):
        assert subprocess.run(["bash", "-n", str(source / name)]).returncode == 0
    return base


def test_the_zip_holds_every_module_the_autograder_runs(autograder):
    """Imported without site (so without this checkout's editable install), the unpacked
    kit loads every module the grading process and its worker use from the zip alone."""
    kit = autograder / "autograder" / "source" / "ntgemm"
    imports = (
        "import grader.batch.packaging.gradescope as g, grader.batch.inside.worker, "
        "grader.core.gpu_compile"
        "\ng._preload()"
    )
    loaded = kit_files_loaded_alone(kit, imports, timeout=120)
    assert all(path.startswith(str(kit)) for path in loaded), loaded


def grade_in_tree(base, submission_file, name, uploaded=("ninetoothed_gemm.py",)):
    """results.json of run_autograder on ``submission_file`` uploaded under each name of
    ``uploaded``."""
    root = base / name
    shutil.copytree(base / "autograder" / "source", root / "source")
    for upload in uploaded:
        (root / "submission" / upload).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(submission_file, root / "submission" / upload)
    (root / "results").mkdir()
    environment = {
        **os.environ,
        "AUTOGRADER_ROOT": str(root),
        "NTGEMM_PYTHON": sys.executable,
        "TMPDIR": str(base),
    }
    environment.pop("PYTHONPATH", None)
    completed = subprocess.run(
        ["bash", str(root / "source" / "run_autograder")],
        capture_output=True,
        text=True,
        timeout=600,
        env=environment,
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    return json.loads((root / "results" / "results.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize(
    "name, path, status",
    [
        ("reference", MODEL_ANSWER, "passed"),
        ("mistake", DEMO / "chen" / "ninetoothed_gemm.py", "failed"),
        ("cheat", DEMO / "fay" / "ninetoothed_gemm.py", "flagged"),
        ("crash", DEMO / "kai" / "ninetoothed_gemm.py", "crashed"),
    ],
)
def test_run_autograder_writes_spec_valid_results(autograder, name, path, status):
    results = grade_in_tree(autograder, path, name)
    check_results(results)
    assert results["extra_data"]["status"] == status
    assert results["extra_data"]["isolation"] == "bubblewrap"
    assert results["output_format"] == "md" and "ntgemm feedback" in results["output"]
    total = sum(test["max_score"] for test in results["tests"])
    assert len(results["tests"]) == 3 and results["extra_data"]["max_score"] == total
    # No top-level score while hidden cases are hidden: Gradescope adds up the tests,
    # each shown when its visibility allows, and the always-visible output tells only
    # what the public cases say.
    assert "score" not in results
    score = sum(test["score"] for test in results["tests"])
    expected = {"passed": total, "flagged": 0, "crashed": 0}
    if status in expected:
        assert score == expected[status]
    else:
        assert 0 < score < total
    public = [test for test in results["tests"] if "public" in test["tags"]]
    shown = re.search(r"Score / 得分: (\S+) / (\S+)\*\*", results["output"])
    assert float(shown.group(2)) == sum(test["max_score"] for test in public) < total
    assert "hidden" not in results["output"]
    hidden = [test for test in results["tests"] if "hidden" in test["tags"]]
    assert hidden and all(test["visibility"] == "after_due_date" for test in hidden)
    assert all(str(SEED) not in json.dumps(test) for test in results["tests"])


def test_a_misnamed_upload_is_told_what_it_uploaded_and_what_is_expected(autograder):
    uploaded = ("ninetoothed_gemm.ipynb", "hw3/gemm_v1.py", "hw3/gemm_v2.py")
    results = grade_in_tree(autograder, MODEL_ANSWER, "misnamed", uploaded)
    check_results(results)
    assert results["extra_data"]["status"] == "missing_file"
    output = results["output"]
    assert r"You uploaded: ninetoothed\_gemm.ipynb, hw3/gemm\_v1.py, hw3/gemm\_v2.py." in output
    assert "only a file named ninetoothed_gemm.py" in output
    assert r"你上传的是：ninetoothed\_gemm.ipynb、hw3/gemm\_v1.py、hw3/gemm\_v2.py。" in output
    assert "只评测名为 ninetoothed_gemm.py 的文件" in output


def test_a_long_upload_lists_its_first_names_and_counts_the_rest():
    from grader.batch.outputs import feedback

    lines = feedback.uploaded_markdown(Record(uploaded=[f"f{i}.txt" for i in range(25)]))
    assert "f19.txt and 5 more." in lines[1] and "f20.txt" not in lines[1]
    assert "f19.txt 等共 25 个文件。" in lines[2]
    assert feedback.uploaded_markdown(Record()) == []


def test_bad_visibility_is_refused_with_the_choices(tmp_path):
    result = run_grader(
        tmp_path, "gradescope", "--out", str(tmp_path), "--hidden-visibility", "never", timeout=60
    )
    assert result.returncode == 2 and "after_due_date" in result.stderr


def test_without_its_sandbox_it_refuses_to_grade_and_says_why(autograder, monkeypatch, tmp_path):
    """Where bubblewrap cannot start, grading as root beside the grader could be forged:
    the zip refuses unless built with --allow-unsandboxed."""
    from grader.batch.isolation import sandbox
    from grader.batch.packaging import gradescope

    root = tmp_path / "autograder"
    shutil.copytree(autograder / "autograder" / "source", root / "source")
    (root / "submission").mkdir()
    shutil.copyfile(
        DEMO / "ada" / "ninetoothed_gemm.py", root / "submission" / "ninetoothed_gemm.py"
    )
    monkeypatch.setattr(sandbox, "check", lambda gpu, device=None: "no user namespaces here")
    assert gradescope.run(root) == 0
    results = json.loads((root / "results" / "results.json").read_text())
    check_results(results)
    assert results["score"] == 0 and results["extra_data"]["status"] == "grader_error"
    assert (
        "no user namespaces here" in results["output"]
        and "--allow-unsandboxed" in results["output"]
    )


# A student file that is correct, and at its import (the nt_gemm run) starts a daemon that
# leaves the worker's tree, tries to become root again, reads what it should not, keeps
# every pipe of its worker for HOLD_S, then rewrites results.json once the grader wrote it.
HOLD_S = 20
HOSTILE = r'''

import os as _os
import sys as _sys
import time as _time

_DAEMON = """
import glob, json, os, sys, time
root, tmp, drop, hold = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
notes = {"pid": os.getpid(), "uid": os.getuid(), "started": time.time()}
def attempt(name, action):
    try:
        notes[name] = "done: " + repr(action())[:300]
    except Exception as error:
        notes[name] = "refused: " + type(error).__name__
attempt("setuid", lambda: os.setuid(0))
attempt("setresuid", lambda: os.setresuid(4321, 0, 0))  # another real uid, root still
attempt("config", lambda: open(os.path.join(root, "source", "gradescope.json")).read())
attempt("seed", lambda: [open(os.path.join(folder, "seed")).read()
                         for folder in glob.glob(os.path.join(tmp, "ntgemm-gradescope-*"))])
results = os.path.join(root, "results", "results.json")
attempt("results", lambda: open(results, "a").write(""))
with open(os.path.join(drop, "notes.json"), "w") as stream:
    json.dump(notes, stream)
time.sleep(hold)
os.closerange(0, 256)
end = time.time() + 120
while time.time() < end:
    try:
        with open(results) as stream:
            written = json.load(stream)
    except (OSError, ValueError):
        written = {}
    if "tests" in written and written.get("score") != 999:
        time.sleep(1)
        with open(results, "w") as stream:
            stream.write(json.dumps({"score": 999, "output": "forged", "tests": []}))
        break
    time.sleep(0.2)
"""
if _os.fork() == 0:
    try:
        _os.setsid()
        if _os.fork() == 0:
            for _fd in range(256):  # the worker's pipes, its protocol channel included
                try:
                    _os.set_inheritable(_fd, True)
                except OSError:
                    pass
            _os.execv(_sys.executable, [_sys.executable, "-c", _DAEMON, ROOT, TMP, DROP, HOLD,
                                        TOKEN])
    finally:
        _os._exit(0)
_os.wait()
_waited = _time.time() + 30
while not _os.path.exists(_os.path.join(DROP, "notes.json")) and _time.time() < _waited:
    _time.sleep(0.05)
'''


def _running(pid, token):
    """Whether ``pid`` still runs (a zombie does not) with ``token`` on its command line."""
    import psutil

    try:
        process = psutil.Process(pid)
        return process.status() != psutil.STATUS_ZOMBIE and token in " ".join(process.cmdline())
    except psutil.Error:
        return False


@pytest.mark.skipif(
    os.geteuid() != 0,
    reason="the unsandboxed mode grades only as root, "
    "where it can run student code as another user (refused otherwise: "
    "test_unsandboxed_it_refuses_where_it_cannot_change_user)",
)
def test_unsandboxed_a_hostile_submission_cannot_touch_the_grade(autograder, tmp_path):
    """A container without bwrap, a zip built with --allow-unsandboxed, a submission whose
    daemon attacks the grader: results.json stays as the grader wrote it, the daemon is
    dead, and a process of the grader's own user, started beside the run, lives on."""
    from grader.batch.isolation import unprivileged
    from grader.tests.unprivileged_view import View

    who = unprivileged.identity()
    view = View(who)
    if view.problem:
        pytest.skip(view.problem)
    token = f"ntgemm-hostile-{os.getpid()}-{time.time_ns()}"
    base, beside, daemon = view.tmp, None, None
    try:
        root, drop = base / "autograder", base / "drop"
        shutil.copytree(autograder / "autograder" / "source", root / "source")
        config_file = root / "source" / "gradescope.json"
        config = json.loads(config_file.read_text(encoding="utf-8"))
        config_file.write_text(json.dumps({**config, "allow_unsandboxed": True}))
        (base / "tmp").mkdir()
        drop.mkdir()
        drop.chmod(0o777)
        (root / "results").mkdir()
        (root / "results").chmod(0o777)  # careless: the grader must close it
        hostile = HOSTILE
        for name, value in (
            ("ROOT", root),
            ("TMP", base / "tmp"),
            ("DROP", drop),
            ("HOLD", HOLD_S),
            ("TOKEN", token),
        ):
            hostile = hostile.replace(name, repr(str(value)))
        (root / "submission").mkdir()
        (root / "submission" / "ninetoothed_gemm.py").write_text(
            MODEL_ANSWER.read_text(encoding="utf-8") + hostile, encoding="utf-8"
        )
        shim = base / "python"
        shim.write_text(  # run_autograder's interpreter, in a container where bwrap fails
            f"#!/bin/sh\nshift 2\nexec {sys.executable} -c 'import sys\n"
            "from grader.batch.isolation import sandbox\n"
            "from grader.batch.packaging import gradescope\n"
            'sandbox.check = lambda gpu, device=None: "no user namespaces in this container"\n'
            'sys.exit(gradescope.main(sys.argv[1:]))\' "$@"\n'
        )
        shim.chmod(0o755)
        environment = {
            **os.environ,
            "AUTOGRADER_ROOT": str(root),
            "NTGEMM_PYTHON": str(shim),
            "TMPDIR": str(base / "tmp"),
        }
        environment.pop("PYTHONPATH", None)
        grading = subprocess.Popen(
            view.command(["bash", str(root / "source" / "run_autograder")]),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=environment,
        )
        deadline = time.monotonic() + 500
        while (
            not (drop / "notes.json").exists()
            and grading.poll() is None
            and time.monotonic() < deadline
        ):
            time.sleep(0.1)
        beside = subprocess.Popen(["sleep", "300"])  # our user's, started while it grades
        stdout, stderr = grading.communicate(timeout=600)
        assert grading.returncode == 0, stderr[-3000:]
        written = (root / "results" / "results.json").read_bytes()
        written_at = (root / "results" / "results.json").stat().st_mtime
        notes = json.loads((drop / "notes.json").read_text())
        daemon = notes["pid"]
        # A daemon still alive forges results.json once its hold is over: wait past that
        # moment, or until it is gone, after which nothing of it can write.
        while _running(daemon, token) and time.time() < notes["started"] + HOLD_S + 8:
            time.sleep(0.2)

        assert (root / "results" / "results.json").read_bytes() == written
        results = json.loads(written)
        check_results(results)
        assert results["extra_data"]["status"] == "passed", results["output"]
        assert results["extra_data"]["isolation"].endswith(f"student code ran as {who.name}")
        assert notes["uid"] == who.uid
        assert all(
            notes[name] == "refused: PermissionError"
            for name in ("setuid", "setresuid", "config", "results")
        ), notes
        assert notes["seed"] in ("done: []", "refused: PermissionError"), notes
        assert written_at - notes["started"] < HOLD_S  # the grader did not wait on its pipes
        assert not _running(daemon, token)
        assert beside.poll() is None
    finally:
        if daemon is not None and _running(daemon, token):
            os.kill(daemon, signal.SIGKILL)
        if beside is not None:
            beside.kill()
            beside.wait()
        view.close()


def test_unsandboxed_it_refuses_where_it_cannot_change_user(autograder, monkeypatch, tmp_path):
    """A grader that is not root, or whose unprivileged user cannot run the kit's Python,
    grades nothing without the sandbox, and says why."""
    from grader.batch.isolation import sandbox, unprivileged
    from grader.batch.packaging import gradescope

    for reason, identity, expected in (
        (None, None, "not root"),
        (
            "ntgemm-student may not search /opt/python",
            unprivileged.Identity(1, 1, "x"),
            "may not search /opt/python",
        ),
    ):
        root = tmp_path / expected.replace(" ", "-") / "autograder"
        shutil.copytree(autograder / "autograder" / "source", root / "source")
        config_file = root / "source" / "gradescope.json"
        config = json.loads(config_file.read_text(encoding="utf-8"))
        config_file.write_text(json.dumps({**config, "allow_unsandboxed": True}))
        (root / "submission").mkdir()
        shutil.copyfile(
            DEMO / "ada" / "ninetoothed_gemm.py", root / "submission" / "ninetoothed_gemm.py"
        )
        monkeypatch.setattr(sandbox, "check", lambda gpu, device=None: "no user namespaces here")
        monkeypatch.setattr(sandbox, "check_unsandboxed", lambda: reason)  # noqa: B023 - run below
        monkeypatch.setattr(unprivileged, "identity", lambda: identity)  # noqa: B023 - run below
        assert gradescope.run(root) == 0
        results = json.loads((root / "results" / "results.json").read_text())
        check_results(results)
        assert results["score"] == 0 and results["extra_data"]["status"] == "grader_error"
        assert "no user namespaces here" in results["output"] and expected in results["output"]


def test_the_zip_keeps_a_long_hex_secret_as_written(tmp_path):
    """A batch's .grader-secret is 64 hex digits; int() of it failed before."""
    import zipfile

    from grader.batch.packaging import gradescope

    secret = "0f" * 32
    path = gradescope.build(tmp_path, seed=secret)
    config = json.loads(zipfile.ZipFile(path).read(gradescope.CONFIG))
    assert config["seed"] == secret


def test_the_zip_is_private_as_the_secret_it_holds(tmp_path):
    """It was written 0644 beside a 0600 .grader-secret: anyone on the machine could read
    the hidden cases' secret out of it. A zip of an earlier build is replaced, not reused."""
    from grader.batch.packaging import gradescope

    (tmp_path / "autograder.zip").write_bytes(b"old")
    (tmp_path / "autograder.zip").chmod(0o644)
    path = gradescope.build(tmp_path, seed=SEED)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert json.loads(zipfile.ZipFile(path).read(gradescope.CONFIG))["seed"] == str(SEED)


def test_setup_installs_the_stack_the_zip_was_built_with(tmp_path):
    """setup.sh pinned nothing, so each image build took whatever was newest that day."""
    import importlib.metadata

    from grader.batch.outputs import constraints
    from grader.batch.packaging import gradescope

    archive = zipfile.ZipFile(gradescope.build(tmp_path, seed=SEED))
    setup = archive.read("setup.sh").decode()
    assert (
        f"-c /autograder/source/{gradescope.CONSTRAINTS} /autograder/source/ntgemm"
        in setup.replace("\\\n    ", "")
    )
    pinned = dict(
        line.split("==")
        for line in archive.read(gradescope.CONSTRAINTS).decode().splitlines()
        if line and not line.startswith("#")
    )
    stack = constraints.installed_stack()
    assert set(pinned) == set(stack)
    for name in ("ninetoothed", "triton", "numpy", "pandas"):
        assert pinned[name] == importlib.metadata.version(name)
    # torch by its release: the CPU build on PyTorch's index (2.11.0+cpu) matches 2.11.0
    assert pinned["torch"] == importlib.metadata.version("torch").partition("+")[0]


def test_the_help_of_allow_unsandboxed_says_who_student_code_runs_as(tmp_path):
    """It said "runs as root", which the grader never does (grader.batch.isolation.unprivileged)."""
    from grader.batch.isolation import unprivileged
    from grader.batch.packaging import gradescope

    result = run_grader(tmp_path, "gradescope", "--help", timeout=60)
    text = " ".join(result.stdout.split())
    assert result.returncode == 0
    assert "runs as root" not in text and "never as root" in text
    assert f"as {unprivileged.USER}, an unprivileged user that setup.sh creates" in text
    assert (
        f"useradd --system --no-create-home --user-group --shell /usr/sbin/nologin "
        f"{unprivileged.USER}" in gradescope.SETUP_INSTALL
    )


def stand_ins(folder, version):
    """A PATH folder of stand-ins that log their arguments to ``folder/log`` and install
    nothing: ``python3`` (which reports ``version``), apt-get, dnf and useradd."""
    folder.mkdir()
    log = folder / "log"
    for name in ("python3", "apt-get", "dnf", "useradd"):
        answer = (
            f'if [ "$1" = --version ]; then echo "Python {version}"; exit 0; fi\n'
            if name == "python3"
            else ""
        )
        (folder / name).write_text(
            f'#!/bin/sh\n{answer}echo "{name} $*" >> "{log}"\n', encoding="utf-8"
        )
        (folder / name).chmod(0o755)
    return log


def run_setup(script, tmp_path, version):
    """``script`` run by bash with the stand-ins first on the PATH: (its result, their log)."""
    log = stand_ins(tmp_path / "bin", version)
    result = subprocess.run(
        ["bash", str(script)],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PATH": f"{tmp_path / 'bin'}:{os.environ['PATH']}"},
    )
    return result, (log.read_text(encoding="utf-8").splitlines() if log.exists() else [])


@pytest.mark.parametrize(
    "version, goes_on", [("3.10.12", False), ("3.12.3", True), ("3.16.0", False)]
)
def test_setup_checks_the_images_python_before_it_installs(autograder, tmp_path, version, goes_on):
    """It installed on the image's python3 whatever it was: on Gradescope's default Ubuntu
    22.04 (Python 3.10) pip failed half-way, on numpy 2.4.6, pandas 3.1.1 or triton 3.9.0,
    which need 3.11 or later, and nothing said which base image to pick."""
    result, log = run_setup(autograder / "autograder" / "source" / "setup.sh", tmp_path, version)
    if not goes_on:
        assert result.returncode == 1 and log == [], (result.stderr, log)  # nothing installed
        assert (
            f"this image has Python {version}, and the grading stack that constraints.txt "
            "pins installs on Python 3.11 to 3.15 only (" in result.stderr
        )
        assert "numpy 2.4.6 needs >=3.11" in result.stderr
        assert (
            "on the assignment's Configure Autograder page, choose the base image "
            "Fedora 38 (or Fedora 37), whose python3 is one of those" in result.stderr
        )
        assert (
            "build the zip with python -m grader gradescope under the image's own Python "
            "(the kit needs 3.10 or newer)" in result.stderr
        )
        return
    assert result.returncode == 0, result.stderr
    assert log[:2] == ["apt-get update", "apt-get install -y python3-pip"]
    assert any(
        line.startswith("python3 -m pip install")
        and line.endswith("-c /autograder/source/constraints.txt /autograder/source/ntgemm")
        for line in log
    ), log


@pytest.mark.parametrize(
    "version, goes_on",
    [("3.12.3", False), ("3.12.4", True), ("3.13.0", True), ("3.14.1", False), ("4.12.4", False)],
)
def test_the_check_follows_the_pins_requires_python_to_the_patch(
    monkeypatch, tmp_path, version, goes_on
):
    from grader.batch.packaging import image_python

    monkeypatch.setattr(
        image_python,
        "requirements",
        lambda stack: {"early 1.0": ">=3.12.4", "late 2.0": ">=3.8,<3.14"},
    )
    script = tmp_path / "check.sh"
    script.write_text(
        "set -euo pipefail\n" + image_python.setup_check({}) + "echo checked\n", encoding="utf-8"
    )
    result, _ = run_setup(script, tmp_path, version)
    assert (result.returncode == 0 and result.stdout == "checked\n") == goes_on, result.stderr
    if not goes_on:
        assert (
            "installs on Python 3.12.4 to 3.13 only (early 1.0 needs >=3.12.4, late 2.0 "
            "needs >=3.8,<3.14)" in result.stderr
        )
        assert (
            "no base image of Gradescope has such a python3; choose Ubuntu 22.04" in result.stderr
        )


def test_a_stack_that_installs_on_python_3_10_names_the_default_image_first():
    """torch alone says >=3.10, as the kit does: Gradescope's default image has such a Python."""
    from grader.batch.packaging import image_python

    supported = image_python.Supported({"torch": "2.13.0"})
    assert supported.range_text() == "Python 3.10 or newer"
    assert supported.images()[:2] == ["Ubuntu 22.04", "Fedora 38"]
