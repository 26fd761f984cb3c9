"""Gradescope: the autograder zip, and the grading it runs in Gradescope's container.

    python -m grader gradescope --out DIR [--seed N | --seed-file PATH]
                                [--hidden-visibility WHEN] [--timeout S]

writes ``DIR/autograder.zip``, which Gradescope takes as it is. At its root:

* ``setup.sh`` installs Python, the CPU build of torch and the kit;
* ``run_autograder`` grades ``/autograder/submission`` with ``python -m grader.batch.gradescope``;
* ``gradescope.json`` holds the seed and the settings. The seed comes from this file and
  nowhere else: never from the submission or its environment;
* ``ntgemm/`` holds the kit's ``grader`` and ``benchmarks`` packages, without their tests.

The grading goes through the batch grader itself (``python -m grader grade``, on a class of
one) and so through the same sandboxed runs. Where bubblewrap cannot start (a container
without user namespaces), it refuses to grade and says why in results.json, unless the
zip was built with ``--allow-unsandboxed``. Without the sandbox, student code runs as the
grader's own user (root, on Gradescope) beside the grader: it could read the seed and
rewrite the stored grade. Gradescope's container per submission keeps students apart,
not the student from the grader. With the option, every module the grader needs is
imported before any student code runs, every process student code left behind is
killed before results.json is written, and ``extra_data.isolation`` says what ran.
"""

import argparse
import json
import os
import pathlib
import shutil
import sys
import tempfile
import time
import zipfile

ROOT = pathlib.Path(__file__).resolve().parents[2]
CONFIG = "gradescope.json"
VISIBILITIES = ("hidden", "after_due_date", "after_published", "visible")
STUDENT = "submission"
SETUP = """#!/usr/bin/env bash
# Gradescope runs this once, when it builds the autograder image.
set -euo pipefail
apt-get update
apt-get install -y python3 python3-pip
flags=""
if python3 -m pip install --help | grep -q break-system-packages; then
    flags="--break-system-packages"
fi
python3 -m pip install $flags --extra-index-url https://download.pytorch.org/whl/cpu \\
    /autograder/source/ntgemm
"""
RUN = """#!/usr/bin/env bash
# Gradescope runs this for every submission; it writes /autograder/results/results.json.
set -uo pipefail
root="${AUTOGRADER_ROOT:-/autograder}"
cd "$root/source/ntgemm"
PYTHONPATH="$root/source/ntgemm" exec "${NTGEMM_PYTHON:-python3}" -m grader.batch.gradescope \\
    --root "$root"
"""


def _kit_files():
    """(path, name in the zip) of every file of the kit the autograder needs."""
    from grader.batch import import_graph

    files = [(ROOT / "pyproject.toml", "ntgemm/pyproject.toml"),
             (ROOT / "README.md", "ntgemm/README.md")]
    # The worker runs as ``python -m``, so nothing imports it: it is an entry point of its own.
    for relative in import_graph.closure_files(["grader.batch.gradescope", "grader.batch.worker"]):
        files.append((ROOT / relative, f"ntgemm/{relative}"))
    return files


def build(out_dir, *, seed, hidden_visibility="after_due_date", timeout_s=300.0, cases=(),
          allow_unsandboxed=False):
    """Write ``out_dir/autograder.zip``; returns its path."""
    if hidden_visibility not in VISIBILITIES:
        raise ValueError(f"hidden visibility must be one of {', '.join(VISIBILITIES)}, "
                         f"got {hidden_visibility!r}")
    config = {"seed": int(seed), "hidden_visibility": hidden_visibility,
              "timeout_s": float(timeout_s), "cases": list(cases),
              "allow_unsandboxed": bool(allow_unsandboxed)}
    out_dir = pathlib.Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / "autograder.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, text in (("setup.sh", SETUP), ("run_autograder", RUN)):
            info = zipfile.ZipInfo(name)
            info.external_attr = 0o100755 << 16
            archive.writestr(info, text)
        archive.writestr(CONFIG, json.dumps(config, indent=2) + "\n")
        for source, name in _kit_files():
            archive.write(source, name)
    return path


# --------------------------------------------------------------------------- in the container

def _preload():
    """Import every module the grading process uses, before any student code runs."""
    import benchmarks.card  # noqa: F401
    import benchmarks.report  # noqa: F401
    from grader.batch import (class_chart, cli, grading, handin, leaderboard,  # noqa: F401
                              reports, sandbox, speed)
    from grader.core import diagnosis  # noqa: F401


def _end_strays(started):
    """Kill what student code left behind in this container: processes of our user,
    started after us, that are neither us nor our ancestors."""
    import psutil

    me = psutil.Process()
    keep = {me.pid} | {parent.pid for parent in me.parents()}
    for process in psutil.process_iter(["pid", "uids", "create_time"]):
        try:
            if process.pid in keep or process.info["create_time"] < started \
                    or process.info["uids"].real != os.getuid():
                continue
            process.kill()
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            pass


def _failure(message):
    return {"score": 0, "output": message, "output_format": "text", "visibility": "visible",
            "stdout_visibility": "hidden", "tests": [],
            "extra_data": {"status": "grader_error"}}


def _student_output(record, config):
    """The feedback Gradescope shows at once: all of it when hidden cases are visible,
    else only what the public cases say (grader.batch.reports.public_view), hints included."""
    from grader.batch import reports
    from grader.core import cases

    if config["hidden_visibility"] != "visible":
        record = reports.public_view(record)
    shown = {entry["id"] for entry in record["cases"]}
    cases_list = [case for case in cases.catalogue(config["seed"], record["backend"])
                  if case.id in shown]
    return reports.feedback_markdown(record, reports.hints_for(record, cases_list))


def run(root):
    """Grade ``root/submission`` and write ``root/results/results.json``; returns 0."""
    from grader.batch import cli, reports, sandbox
    from grader.batch.status import ExitCode

    started_wall, started = time.time(), time.monotonic()
    root = pathlib.Path(root)
    config = json.loads((root / "source" / CONFIG).read_text(encoding="utf-8"))
    _preload()
    problem = sandbox.check(False)
    unsafe = problem is not None
    if unsafe and not config.get("allow_unsandboxed"):
        results = _failure("The autograder grades only inside its sandbox, and bubblewrap "
                           f"cannot start in this container ({problem}). Please tell the "
                           "course staff; they can rebuild the autograder with "
                           "--allow-unsandboxed.")
        results["execution_time"] = int(round(time.monotonic() - started))
        reports.atomic_write(root / "results" / "results.json",
                             json.dumps(results, indent=2, ensure_ascii=False) + "\n")
        return 0
    with tempfile.TemporaryDirectory(prefix="ntgemm-gradescope-") as scratch:
        scratch = pathlib.Path(scratch)
        shutil.copytree(root / "submission", scratch / "class" / STUDENT, symlinks=True)
        seed_file = scratch / "seed"
        seed_file.write_text(str(config["seed"]))
        seed_file.chmod(0o600)
        arguments = ["grade", str(scratch / "class"), "--out", str(scratch / "out"), "-j", "1",
                     "--timeout", str(config["timeout_s"]), "--seed-file", str(seed_file),
                     "--no-progress"]
        if config.get("cases"):
            arguments += ["--cases", ",".join(config["cases"])]
        if unsafe:
            arguments.append("--unsafe-no-sandbox")
        status = cli.main(arguments)
        if unsafe:
            _end_strays(started_wall)
        record = reports.read_record(scratch / "out", STUDENT)
        if status != ExitCode.OK or record is None:
            results = _failure("The autograder could not grade this submission; please tell "
                               "the course staff.")
        else:
            results = reports.results_json(record, config["hidden_visibility"],
                                           output=_student_output(record, config))
            results["extra_data"]["isolation"] = record["isolation"]
    results["execution_time"] = int(round(time.monotonic() - started))
    reports.atomic_write(root / "results" / "results.json",
                         json.dumps(results, indent=2, ensure_ascii=False) + "\n")
    return 0


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m grader.batch.gradescope",
                                     description="Grade /autograder/submission inside "
                                                 "Gradescope's container (run_autograder).")
    parser.add_argument("--root", default="/autograder", help="the autograder folder")
    args = parser.parse_args(argv)
    return run(args.root)


if __name__ == "__main__":
    sys.exit(main())
