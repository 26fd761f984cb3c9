"""Gradescope: the autograder zip, and the grading it runs in Gradescope's container.

    python -m grader gradescope --out DIR [--seed N | --seed-file PATH]
                                [--hidden-visibility WHEN] [--timeout S]

writes ``DIR/autograder.zip``, which Gradescope takes as it is. At its root:

* ``setup.sh`` checks that the image's ``python3`` is one the pinned stack installs on, and
  otherwise stops, naming the base image to choose (grader.batch.packaging.image_python);
  then it installs pip, the CPU build of torch and the kit, under ``constraints.txt``: the
  stack of the machine that built the zip (grader.batch.outputs.constraints), torch pinned to
  its release so that its CPU build installs;
* ``run_autograder`` grades ``/autograder/submission`` with
  ``python -m grader.batch.packaging.gradescope``;
* ``gradescope.json`` holds the grading secret (grader.core.cases.canonical_secret) and the
  settings. The secret comes from this file and nowhere else: never from the submission or
  its environment;
* ``ntgemm/`` holds the kit's ``grader`` and ``benchmarks`` packages, without their tests.

The zip is written readable by its owner alone, as ``.grader-secret`` is: it holds the secret.

The grading goes through a session of the batch grader (grader.batch.grade.session, as
``python -m grader grade`` does), on a class of one, and so through the same sandboxed runs. Where bubblewrap cannot start (a container
without user namespaces), it refuses to grade and says why in results.json, unless the
zip was built with ``--allow-unsandboxed``. Then student code runs without the sandbox,
beside the grader, and what holds is this (grader.batch.isolation.unprivileged):

* it runs as ``ntgemm-student``, an unprivileged user that ``setup.sh`` creates (else a
  fixed uid and gid that no account uses), without supplementary groups, with no_new_privs,
  non-dumpable, with at most 4096 processes, 512 MiB per file and no core dumps;
* it cannot read ``gradescope.json`` (made readable to root only before anything runs) or
  the grader's output (a private temporary folder, the secret's copy in it), nor write
  ``results/``; it reads its own job folder and writes its own scratch folder;
* every process of that user is killed when its runs end (after each, on the CPU, where
  they run one after the other) and again before results.json is written; no process of
  another user is touched; the grader never waits on a pipe that one of them holds open;
* every module the grader needs is imported before any student code runs, and
  ``extra_data.isolation`` says what ran, and as whom.

A grader that is not root cannot change user, and so refuses to grade unsandboxed (results.json
says why), as it does where that user cannot run the kit's Python. What does not hold without
the sandbox: student code can read whatever every local user may (the kit's own sources, the
system), use the network, see the other processes, and leave files in world-writable
folders (``/tmp``, ``/dev/shm``); its two runs share the one user, so the nt_gemm run could
disturb the kernel run where both run at once (on a GPU); memory and CPU are watched for each
run's process tree only, so a process it leaves behind escapes them until the run ends.
Gradescope's container per submission keeps students apart.
"""

import argparse
import dataclasses
import io
import json
import pathlib
import shutil
import sys
import tempfile
import time
import zipfile

ROOT = pathlib.Path(__file__).resolve().parents[3]
CONFIG = "gradescope.json"
CONSTRAINTS = "constraints.txt"  # what setup.sh installs under: the builder's stack
VISIBILITIES = ("hidden", "after_due_date", "after_published", "visible")
STUDENT = "submission"
MEMORY_LIMIT_BYTES = 8 << 30  # host memory for each run, as grade's --memory-limit default
SETUP_HEAD = """#!/usr/bin/env bash
# Gradescope runs this once, when it builds the autograder image.
set -euo pipefail
"""
SETUP_INSTALL = """# pip for the image's python3: apt on Ubuntu, dnf on Fedora, Rocky and CentOS.
if command -v apt-get >/dev/null 2>&1; then
    apt-get update
    apt-get install -y python3-pip
else
    dnf install -y python3-pip
fi
flags=""
if python3 -m pip install --help | grep -q break-system-packages; then
    flags="--break-system-packages"
fi
python3 -m pip install $flags --extra-index-url https://download.pytorch.org/whl/cpu \\
    -c /autograder/source/constraints.txt /autograder/source/ntgemm
# Without the sandbox (--allow-unsandboxed), student code runs as this user, not as root.
id -u ntgemm-student >/dev/null 2>&1 || \\
    useradd --system --no-create-home --user-group --shell /usr/sbin/nologin ntgemm-student
"""
RUN = """#!/usr/bin/env bash
# Gradescope runs this for every submission; it writes /autograder/results/results.json.
set -uo pipefail
root="${AUTOGRADER_ROOT:-/autograder}"
cd "$root/source/ntgemm"
PYTHONPATH="$root/source/ntgemm" exec "${NTGEMM_PYTHON:-python3}" \\
    -m grader.batch.packaging.gradescope --root "$root"
"""


def _kit_files():
    """(path, name in the zip) of every file of the kit the autograder needs."""
    from grader.batch import import_graph

    files = [
        (ROOT / "pyproject.toml", "ntgemm/pyproject.toml"),
        (ROOT / "README.md", "ntgemm/README.md"),
    ]
    # The worker runs as ``python -m`` and the unsandboxed fork server as a script, so
    # nothing imports them: each is an entry point of its own.
    for relative in import_graph.closure_files(
        [
            "grader.batch.packaging.gradescope",
            "grader.batch.inside.forkserver",
            "grader.batch.inside.plain_forkserver",
            "grader.batch.inside.worker",
        ]
    ):
        files.append((ROOT / relative, f"ntgemm/{relative}"))
    return files


def build(
    out_dir,
    *,
    seed,
    hidden_visibility="after_due_date",
    timeout_s=300.0,
    cases=(),
    allow_unsandboxed=False,
):
    """Write ``out_dir/autograder.zip``; returns its path."""
    if hidden_visibility not in VISIBILITIES:
        raise ValueError(
            f"hidden visibility must be one of {', '.join(VISIBILITIES)}, got {hidden_visibility!r}"
        )
    from grader.core.cases import canonical_secret

    config = {
        "seed": canonical_secret(seed),
        "hidden_visibility": hidden_visibility,
        "timeout_s": float(timeout_s),
        "cases": list(cases),
        "allow_unsandboxed": bool(allow_unsandboxed),
    }
    from grader.batch.outputs import constraints
    from grader.batch.outputs.atomic_file import atomic_write
    from grader.batch.packaging import image_python

    stack = constraints.installed_stack()
    setup = SETUP_HEAD + image_python.setup_check(stack) + SETUP_INSTALL
    content = io.BytesIO()
    with zipfile.ZipFile(content, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, text in (("setup.sh", setup), ("run_autograder", RUN)):
            info = zipfile.ZipInfo(name)
            info.external_attr = 0o100755 << 16
            archive.writestr(info, text)
        archive.writestr(CONFIG, json.dumps(config, indent=2) + "\n")
        archive.writestr(CONSTRAINTS, _constraints(stack))
        for source, name in _kit_files():
            archive.write(source, name)
    path = pathlib.Path(out_dir) / "autograder.zip"
    atomic_write(path, content.getvalue())  # mode 600, as .grader-secret: it holds the secret
    return path


def _constraints(stack):
    """constraints.txt for setup.sh: ``stack``, the grading stack installed here, with torch
    pinned to its release alone (2.11.0 of 2.11.0+cu128), which the CPU build on PyTorch's
    index matches."""
    import datetime
    import platform

    from benchmarks.environment import git_revision
    from grader.batch.grade.grading import grader_version
    from grader.batch.outputs import constraints

    stack = dict(stack)
    if "torch" in stack:
        stack["torch"] = stack["torch"].partition("+")[0]
    return constraints.text(
        {
            "packages": stack,
            "python": platform.python_version(),
            "platform": platform.platform(),
            "grader_revision": git_revision(),
            "grader_version": grader_version(),
            "timestamp": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        },
        "the machine that built autograder.zip",
    )


# --------------------------------------------------------------------------- in the container


def _preload():
    """Import every module the grading process uses, before any student code runs."""
    import benchmarks.card
    import benchmarks.report  # noqa: F401
    from grader.batch.grade import grading, session  # noqa: F401
    from grader.batch.isolation import sandbox  # noqa: F401
    from grader.batch.outputs import class_chart, leaderboard, reports  # noqa: F401
    from grader.batch.timing import handin, speed  # noqa: F401
    from grader.core import diagnosis  # noqa: F401


def _failure(message):
    return {
        "score": 0,
        "output": message,
        "output_format": "text",
        "visibility": "visible",
        "stdout_visibility": "hidden",
        "tests": [],
        "extra_data": {"status": "grader_error"},
    }


def _student_output(record, config):
    """The feedback Gradescope shows at once: all of it when hidden cases are visible,
    else only what the public cases say (grader.batch.outputs.feedback.public_view), hints
    included; Gradescope shows no file beside it, so it links no picture."""
    from grader.batch.outputs import feedback
    from grader.core import cases

    if config["hidden_visibility"] != "visible":
        record = feedback.public_view(record)
    shown = {entry.id for entry in record.cases}
    cases_list = [
        case for case in cases.catalogue(config["seed"], record.backend) if case.id in shown
    ]
    return feedback.feedback_markdown(
        record, feedback.hints_for(record, cases_list), pictures=False
    )


def _refuse(root, message, started):
    from grader.batch.outputs import reports

    results = _failure(message)
    results["execution_time"] = int(round(time.monotonic() - started))
    reports.atomic_write(
        root / "results" / "results.json", json.dumps(results, indent=2, ensure_ascii=False) + "\n"
    )
    return 0


def _unsandboxed_user():
    """The unprivileged user student code will run as (grader.batch.isolation.unprivileged),
    or why there is none: a str."""
    from grader.batch.isolation import sandbox, unprivileged

    problem = sandbox.check_unsandboxed()
    if problem:
        return problem
    who = unprivileged.identity()
    return who or "the grader is not root, so it cannot run student code as another user"


def _grade(class_dir, out_dir, config, unsafe):
    """Grade the class of one through a session, as ``python -m grader grade -j 1`` would;
    whether it did (else stderr says why)."""
    from grader.batch.grade import grading, machine, session
    from grader.batch.outputs import secret
    from grader.batch.status import GraderError, say
    from grader.batch.timing import speed

    try:
        backend = machine.decide_backend()
        seed, warning = secret.choose(config["seed"], CONFIG, out_dir)
        if warning:
            say(warning)
        settings = grading.Settings(
            seed=seed,
            backend=backend,
            timeout_s=float(config["timeout_s"]),
            memory_limit_bytes=MEMORY_LIMIT_BYTES,
            case_filter=tuple(config.get("cases") or ()),
            sandboxed=not unsafe,
            speed=speed.SpeedSettings() if backend == "gpu" else speed.SpeedSettings(sizes=()),
        )
        session.start(settings, out_dir, jobs=1, progress=False).run(class_dir)
    except (GraderError, grading.WorkerFailure) as error:
        say(f"error: {error}")
        return False
    except KeyboardInterrupt:
        say("interrupted")
        return False
    return True


def run(root):
    """Grade ``root/submission`` and write ``root/results/results.json``; returns 0."""
    from grader.batch.grade import intake
    from grader.batch.isolation import sandbox, unprivileged
    from grader.batch.outputs import feedback, reports

    started = time.monotonic()
    root = pathlib.Path(root)
    config_file = root / "source" / CONFIG
    config_file.chmod(0o600)  # the seed: never readable to student code
    config = json.loads(config_file.read_text(encoding="utf-8"))
    _preload()
    problem = sandbox.check(False, None)  # as the session asks it: one cached check
    unsafe = problem is not None
    if unsafe and not config.get("allow_unsandboxed"):
        return _refuse(
            root,
            "The autograder grades only inside its sandbox, and bubblewrap "
            f"cannot start in this container ({problem}). Please tell the "
            "course staff; they can rebuild the autograder with "
            "--allow-unsandboxed.",
            started,
        )
    who = _unsandboxed_user() if unsafe else None
    if isinstance(who, str):
        return _refuse(
            root,
            "The autograder cannot start its sandbox in this container "
            f"({problem}), and cannot grade without it either: {who}. "
            "Please tell the course staff.",
            started,
        )
    results_dir = root / "results"
    results_dir.mkdir(exist_ok=True)
    results_dir.chmod(results_dir.stat().st_mode & 0o755)  # writable to root alone
    with tempfile.TemporaryDirectory(prefix="ntgemm-gradescope-") as scratch:
        scratch = pathlib.Path(scratch)
        shutil.copytree(root / "submission", scratch / "class" / STUDENT, symlinks=True)
        graded = _grade(scratch / "class", scratch / "out", config, unsafe)
        if who is not None:
            unprivileged.sweep(who)  # each run's end killed them already: make sure
        record = reports.read_record(scratch / "out", STUDENT)
        if not graded or record is None:
            results = _failure(
                "The autograder could not grade this submission; please tell the course staff."
            )
        else:
            if record.status == "missing_file":  # tell what was uploaded instead
                record = dataclasses.replace(record, uploaded=intake.files_in(root / "submission"))
            results = feedback.results_json(
                record, config["hidden_visibility"], output=_student_output(record, config)
            )
            results["extra_data"]["isolation"] = record.isolation + (
                f"; student code ran as {who.name}" if who is not None else ""
            )
    results["execution_time"] = int(round(time.monotonic() - started))
    reports.atomic_write(
        results_dir / "results.json", json.dumps(results, indent=2, ensure_ascii=False) + "\n"
    )
    return 0


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m grader.batch.packaging.gradescope",
        description="Grade /autograder/submission inside Gradescope's container (run_autograder).",
    )
    parser.add_argument("--root", default="/autograder", help="the autograder folder")
    args = parser.parse_args(argv)
    return run(args.root)


if __name__ == "__main__":
    sys.exit(main())
