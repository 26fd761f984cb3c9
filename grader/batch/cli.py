"""``python -m grader``: grade a class, merge shards, build the student handout.

    python -m grader grade SUBMISSIONS_DIR --out OUT_DIR [-j N] [--timeout S]
                           [--memory-limit GiB] [--seed N | --seed-file PATH] [--force]
                           [--shard i/N] [--gpus LIST] [--unsafe-no-sandbox]
                           [--speed-sizes LIST | --no-speed] [--speed-points TIERS] [--what-if]
                           [--late-penalty FRACTION] [--overrides CSV]
    python -m grader merge OUT_DIR... --out DIR [--overrides CSV]
    python -m grader handout --out DIR [--answer keep|remove]
    python -m grader share OUT_DIR --out DIR
    python -m grader gradescope --out DIR [--seed N | --seed-file PATH]
    python -m grader export OUT_DIR --format canvas|moodle|csv --out FILE
    python -m grader export OUT_DIR --format canvas-feedback|moodle-feedback --out FILE.zip
    python -m grader constraints OUT_DIR --out FILE

Exit status: 0 when every submission got a verdict, whatever the scores; 1 when
the grader could not do its job (unreadable folder, a worker that cannot start,
an incomplete shard, a submissions folder changed under it); 2 for a bad
command line; 130 when interrupted (run the same command again to resume).

It only parses and dispatches: each command's work is in its room (grade, outputs,
packaging). It stays one file because most of it is the parser's declarations and help
texts, which are read together with the handler when an option is added or changed.
"""

import argparse
import pathlib

from grader.core import cases as catalogue
from grader.batch.isolation import time_policy
from grader.batch.status import ExitCode, GraderError, say
from grader.core import gpu_compile


# --------------------------------------------------------------------------- arguments


def _positive_float(name):
    def parse(text):
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name} must be a number, got {text!r}") from None
        if not value > 0:
            raise argparse.ArgumentTypeError(f"{name} must be greater than 0, got {text!r}")
        return value

    return parse


def _fraction(text):
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--late-penalty must be a number, got {text!r}") from None
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"--late-penalty must be between 0 and 1, got {text!r}")
    return value


def _jobs(text):
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"-j/--jobs must be a whole number, got {text!r}"
        ) from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"-j/--jobs must be at least 1, got {value}")
    return value


def _seed(text):
    try:
        return catalogue.canonical_secret(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"--seed must be a whole number or hex digits, got {text!r}"
        ) from None


def _seed_file(text):
    try:
        content = pathlib.Path(text).read_text(encoding="utf-8", errors="replace")
    except OSError as error:
        raise argparse.ArgumentTypeError(f"--seed-file {text!r}: {error.strerror}") from None
    try:
        return catalogue.canonical_secret(content)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"--seed-file {text!r} must hold the secret: one whole number or a string of hex digits"
        ) from None


def _chosen_seed(args):
    """(the secret the command line gives, the flag it came from), or (None, None)."""
    if args.seed_from_file is not None:
        return args.seed_from_file, "--seed-file"
    if args.seed is not None:
        return args.seed, "--seed"
    return None, None


def _shard(text):
    try:
        index, count = (int(part) for part in text.split("/"))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"--shard must look like i/N (e.g. 1/4), got {text!r}"
        ) from None
    if count < 1 or not 1 <= index <= count:
        raise argparse.ArgumentTypeError(
            f"--shard {text}: i must be between 1 and N (shards are numbered from 1)"
        )
    return index, count


def _speed_sizes(text):
    from grader.batch.timing import speed

    try:
        return speed.parse_sizes(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(f"--speed-sizes: {error}") from None


def _speed_points(text):
    from grader.batch.timing import speed

    try:
        return speed.parse_points(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(f"--speed-points: {error}") from None


def build_parser():
    from grader.batch.packaging import guide_answer

    parser = argparse.ArgumentParser(
        prog="python -m grader",
        description="Grade NineToothed GEMM submissions in batch, merge shards, build the "
        "handout, share the feedback.",
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    grade = commands.add_parser(
        "grade",
        help="grade a folder of submissions into a gradebook",
        description="Grade every submission in SUBMISSIONS_DIR: each runs in its own process "
        "(timeout, memory limit, private copy), the parent judges the outputs, and "
        "OUT_DIR receives gradebook.csv, summary.csv, environment.json and one "
        "folder per student (results.json, feedback.md, logs). On a GPU, each "
        "submission that passed every case is then timed against torch.mm, one at "
        "a time per GPU (speed columns, leaderboard.csv/.png, a card per student), "
        "and a benchmark CSV handed in beside the file is checked against that "
        "measurement. Interrupted batches resume: run the same command again.",
    )
    grade.add_argument(
        "submissions",
        metavar="SUBMISSIONS_DIR",
        help="folder of submissions: <id>/ninetoothed_gemm.py, <id>.py, "
        "<id>_..._ninetoothed_gemm.py or <id>.zip; never modified",
    )
    grade.add_argument(
        "--out",
        required=True,
        metavar="OUT_DIR",
        help="where the gradebook and the per-student folders go",
    )
    grade.add_argument(
        "-j",
        "--jobs",
        type=_jobs,
        default=None,
        help="submissions graded at once (default on a GPU host: one per two CPU "
        "cores, at least one per GPU, since a submission's time goes mostly "
        "to Triton compiling on the CPU; on the interpreter: one per core)",
    )
    grade.add_argument(
        "--timeout",
        type=_positive_float("--timeout"),
        default=120.0,
        metavar="S",
        help="seconds for each of a submission's two sandboxed "
        "runs, import included, on the wall clock less the "
        "time a run waits for a CPU core that others hold "
        "(default: 120). On a GPU, with S over "
        f"{time_policy.FIRST_PASS_S}, two files or more and "
        "-j 2 or more, a class's first pass stops a run "
        f"stuck {time_policy.FIRST_PASS_S} s in one step and "
        "grades its file again at the end with the full S "
        "(the whole policy: docs/instructor-reference.md, "
        '"Time limits")',
    )
    grade.add_argument(
        "--memory-limit",
        type=_positive_float("--memory-limit"),
        default=8.0,
        metavar="GiB",
        help="host memory for each run, its whole process tree (default: 8)",
    )
    seeds = grade.add_mutually_exclusive_group()
    seeds.add_argument(
        "--seed",
        type=_seed,
        default=None,
        help="the secret of the hidden cases, a whole number or hex digits, for "
        "a reproducible run; one under 128 bits gets a warning (default: "
        "the one OUT_DIR/.grader-secret keeps, else a new 256-bit one)",
    )
    seeds.add_argument(
        "--seed-file",
        type=_seed_file,
        default=None,
        metavar="PATH",
        dest="seed_from_file",
        help="read the secret from a file instead, so that it never shows in "
        "the process list; shards to be merged need the same one",
    )
    grade.add_argument(
        "--force",
        action="store_true",
        help="grade again even submissions whose stored result is up to date",
    )
    grade.add_argument(
        "--shard",
        type=_shard,
        default=None,
        metavar="i/N",
        help="grade only the i-th of N deterministic slices (1-based; for job "
        "arrays), then join the outputs with 'merge'",
    )
    grade.add_argument(
        "--gpus",
        default=None,
        metavar="LIST",
        help="GPUs to use: 'all', 'none' or a list like 0,1 (default: those in "
        "CUDA_VISIBLE_DEVICES, else all); one worker per GPU",
    )
    grade.add_argument("--no-progress", action="store_true", help="no progress bar")
    grade.add_argument(
        "--unsafe-no-sandbox",
        action="store_true",
        help="grade even where bubblewrap cannot start: submissions then run as "
        "plain child processes that can read your files and each other's "
        "(recorded in the gradebook and environment.json)",
    )
    timing = grade.add_mutually_exclusive_group()
    timing.add_argument(
        "--speed-sizes",
        type=_speed_sizes,
        default=None,
        metavar="LIST",
        help="on a GPU, after correctness, time every submission that passed "
        "every case at these sizes against torch.mm, one at a time per "
        "GPU (default: 4096,4095, i.e. 4096^3 and a ragged 4095^3); "
        "sizes are N or MxNxK",
    )
    timing.add_argument(
        "--no-speed",
        action="store_true",
        help="time nothing (on the interpreter nothing is ever timed)",
    )
    grade.add_argument(
        "--gpu-target",
        type=gpu_compile.target_argument,
        default=gpu_compile.DEFAULT_TARGET,
        metavar="sm_XY",
        help="the GPU every kernel is compiled for before its cases run "
        f"(default {gpu_compile.DEFAULT_TARGET}, the course's H200; one of "
        f"{', '.join(gpu_compile.TARGETS)}). On the interpreter a kernel "
        "that does not build for it fails every case",
    )
    grade.add_argument(
        "--speed-points",
        type=_speed_points,
        default=(),
        metavar="TIERS",
        help="extra points for speed, off by default: RATIO:POINTS,... where "
        "RATIO is the speed against torch.mm at the first speed size; "
        "a submission gets the highest tier it reaches, e.g. "
        "0.5:1,0.8:2,1.0:3 (max_score grows by the top tier; the case "
        "points do not change)",
    )
    grade.add_argument(
        "--what-if",
        action="store_true",
        help="on a GPU, also rebuild each timed submission's own arrangement() "
        "and application() with other tiles, warps and stages (the "
        "benchmark's --what-if set), check and time each after the graded "
        "sizes, and show the best in feedback.md and what-if.png; advice "
        "only, never a grade. Costs each timed submission about a minute "
        "of compiling, ahead of its turn, and some seconds of the GPU",
    )
    grade.add_argument(
        "--late-penalty",
        type=_fraction,
        default=0.0,
        metavar="FRACTION",
        help="off by default: a submission the LMS marked late (Canvas's LATE in "
        "its download name) keeps (1 - FRACTION) of its case points, "
        "rounded to two decimals; e.g. 0.1",
    )
    _overrides_option(grade)
    grade.add_argument("--cases", default="", help=argparse.SUPPRESS)  # tests only: id,id,...

    merge = commands.add_parser(
        "merge",
        help="join the outputs of several --shard runs into one gradebook",
        description="Join the OUT_DIRs of 'grade --shard i/N' runs into one OUT_DIR whose "
        "gradebook is the one a single run would have written.",
    )
    merge.add_argument("shards", nargs="+", metavar="OUT_DIR", help="outputs of the shard runs")
    merge.add_argument("--out", required=True, metavar="DIR", help="where the merged output goes")
    _overrides_option(merge)

    handout = commands.add_parser(
        "handout",
        help="build the student handout folder and zip",
        description="Write DIR/ntgemm-handout/ and DIR/ntgemm-handout.zip: assignment/, "
        "conftest.py, the grader modules the public tests need, the student docs; "
        "never solutions/ or a grading seed.",
    )
    handout.add_argument("--out", required=True, metavar="DIR", help="folder to write into")
    handout.add_argument(
        "--answer",
        choices=guide_answer.CHOICES,
        default="keep",
        help="the student guides' sections 5 and 6 put arrangement() and "
        "application() together whole, which pasted into the skeleton "
        "earn full marks: keep them, as the course ships the guides "
        "(default), or remove them, and refuse a handout in which a "
        "doc still shows both",
    )

    gradescope = commands.add_parser(
        "gradescope",
        help="build the autograder zip to upload to Gradescope",
        description="Write DIR/autograder.zip: setup.sh (installs the kit with CPU torch), "
        "run_autograder (grades /autograder/submission through this batch grader "
        "and writes results.json in Gradescope's format) and the kit. The secret is "
        "stored in the zip, so keep the zip private.",
    )
    gradescope.add_argument("--out", required=True, metavar="DIR", help="folder to write into")
    seeds = gradescope.add_mutually_exclusive_group()
    seeds.add_argument(
        "--seed",
        type=_seed,
        default=None,
        help="the secret of the hidden cases, a whole number or hex digits "
        "(default: a new 256-bit one)",
    )
    seeds.add_argument(
        "--seed-file",
        type=_seed_file,
        default=None,
        metavar="PATH",
        dest="seed_from_file",
        help="read the secret from a file instead",
    )
    gradescope.add_argument(
        "--hidden-visibility",
        default="after_due_date",
        choices=("hidden", "after_due_date", "after_published", "visible"),
        help="when students see the hidden cases' results (default: after_due_date)",
    )
    gradescope.add_argument(
        "--timeout",
        type=_positive_float("--timeout"),
        default=300.0,
        metavar="S",
        help="seconds for each of the two sandboxed runs, "
        "waits for a CPU core not counted (default: "
        "300, for Gradescope's CPUs)",
    )
    gradescope.add_argument(
        "--allow-unsandboxed",
        action="store_true",
        help="grade even where bubblewrap cannot start in Gradescope's "
        "container; student code then runs without the sandbox, "
        "never as root: as ntgemm-student, an unprivileged user that "
        "setup.sh creates, which cannot read the secret or write the "
        "results but can read what any local user may and reach the "
        'network (docs/instructor-reference.md, "Gradescope")',
    )
    gradescope.add_argument("--cases", default="", help=argparse.SUPPRESS)  # tests only

    export = commands.add_parser(
        "export",
        help="write a gradebook, or the students' feedback, for Canvas, Moodle or a spreadsheet",
        description="Write OUT_DIR's gradebook as FILE in the format an LMS imports: canvas "
        "(Canvas's gradebook import columns, matched by the Canvas user id from "
        "its download names), moodle (the offline grading worksheet, matched by "
        "participant id) or csv (the gradebook itself). UTF-8 with a byte-order "
        "mark, so spreadsheets open non-ASCII names as written. Or write every "
        "student's feedback as FILE, a zip of one HTML page each (pictures inside), "
        "named as the LMS's bulk upload matches them: canvas-feedback (Canvas's "
        "'Re-upload submissions') or moodle-feedback (Moodle's 'Upload multiple "
        "feedback files in a zip').",
    )
    export.add_argument("out_dir", metavar="OUT_DIR", help="the OUT_DIR of 'grade' or 'merge'")
    export.add_argument(
        "--format",
        required=True,
        dest="kind",
        choices=("canvas", "moodle", "csv", "canvas-feedback", "moodle-feedback"),
        help="which tool the file is for",
    )
    _output_option(export, "FILE", "the file to write")
    export.add_argument(
        "--assignment",
        metavar="'NAME (ID)'",
        help="for canvas, required: the assignment's column as Canvas heads "
        "it, its name and its id, e.g. 'NineToothed GEMM (1234)' (the id "
        "ends the assignment's address in Canvas); without the id Canvas "
        "could make a new assignment instead of filling this one",
    )

    share = commands.add_parser(
        "share",
        help="copy each student's feedback out of a gradebook folder, to hand back",
        description="Write DIR/<folder>/feedback.md and results.json for every student of "
        "OUT_DIR, and DIR/index.csv (which folder is whose, for the staff). The "
        "gradebook, the summaries, record.json, environment.json and the logs "
        "stay behind: they are for the staff (the logs show whatever a submission "
        "printed).",
    )
    share.add_argument("out_dir", metavar="OUT_DIR", help="the OUT_DIR of 'grade' or 'merge'")
    _output_option(share, "DIR", "a new (or empty) folder outside OUT_DIR")

    pinned = commands.add_parser(
        "constraints",
        help="write a pip constraints file of the stack a batch graded with",
        description="Write FILE, a pip constraints file that pins every package of the grading "
        "stack (the kit's dependencies and what they require) to the version "
        "OUT_DIR/environment.json records, so that 'python -m pip install -c FILE "
        "-e .' in a checkout of the recorded revision reinstalls what the class was "
        "graded with. The file's comments name the Python, the revision and, for "
        "a torch from PyTorch's index (2.11.0+cu128), the index to add.",
    )
    pinned.add_argument("out_dir", metavar="OUT_DIR", help="the OUT_DIR of 'grade' or 'merge'")
    pinned.add_argument(
        "--out", required=True, dest="target", metavar="FILE", help="the constraints file to write"
    )
    return parser


def _overrides_option(command):
    command.add_argument(
        "--overrides",
        type=pathlib.Path,
        default=None,
        metavar="CSV",
        help="the staff's decisions to apply to the grades: a CSV with the columns "
        "student,change,case,value,reason,by,date, where change is score, points (of "
        "one case), status, flags (cleared), late (extension, excused or late), note, "
        "alias (the student's leaderboard name) or leaderboard (opt-out) "
        '(docs/instructor-reference.md, "The overrides file"). Every row is checked '
        "before any applies. "
        "OUT_DIR keeps a copy, which later runs apply without this option (default: that "
        "copy, else none); an error names it when the file given before has changed",
    )


class _DeprecatedTo(argparse.Action):
    """``--to``, the old name of ``--out`` for export and share: still taken, with a note."""

    def __call__(self, parser, namespace, value, option_string=None):
        say(
            f"note: {option_string} is deprecated and will go; use --out, as every command "
            "that writes does"
        )
        setattr(namespace, self.dest, value)


def _output_option(command, metavar, what):
    """``--out`` for where a command writes (``--to`` still works, deprecated)."""
    group = command.add_mutually_exclusive_group(required=True)
    group.add_argument("--out", dest="target", metavar=metavar, help=what)
    group.add_argument(
        "--to",
        dest="target",
        metavar=metavar,
        action=_DeprecatedTo,
        help="the old name of --out (deprecated)",
    )


# --------------------------------------------------------------------------- grade


def command_grade(args):
    from grader.batch.grade import grading, machine, session
    from grader.batch.outputs import secret

    submissions_dir = pathlib.Path(args.submissions)
    out_dir = pathlib.Path(args.out)
    if not submissions_dir.is_dir():
        raise GraderError(f"SUBMISSIONS_DIR {args.submissions!r} is not a folder")
    if session.inside(out_dir, submissions_dir) or session.inside(submissions_dir, out_dir):
        raise GraderError(
            f"--out {args.out!r} must not be inside SUBMISSIONS_DIR "
            f"{args.submissions!r} (or hold it): the submissions stay untouched"
        )
    if out_dir.exists() and not out_dir.is_dir():
        raise GraderError(f"--out {args.out!r} exists and is not a folder")

    backend_name = machine.decide_backend()
    case_filter = tuple(item for item in args.cases.split(",") if item)
    seed, warning = secret.choose(*_chosen_seed(args), out_dir)
    if warning:
        say(warning)
    settings = grading.Settings(
        seed=seed,
        backend=backend_name,
        timeout_s=args.timeout,
        memory_limit_bytes=int(args.memory_limit * 2**30),
        case_filter=case_filter,
        sandboxed=not args.unsafe_no_sandbox,
        speed=_speed_settings(args, backend_name),
        late_penalty=args.late_penalty,
        gpu_target=args.gpu_target,
    )
    batch = session.start(
        settings,
        out_dir,
        args.jobs,
        args.gpus,
        progress=not args.no_progress,
        overrides_file=args.overrides,
    )
    batch.run(submissions_dir, shard=args.shard, force=args.force)
    return ExitCode.OK


def _speed_settings(args, backend_name):
    from grader.batch.timing import speed

    if args.no_speed:
        if args.speed_points or args.what_if:
            raise GraderError(
                f"{'--speed-points' if args.speed_points else '--what-if'} "
                "needs speed: drop --no-speed"
            )
        return speed.SpeedSettings(sizes=())
    if backend_name != "gpu":
        if args.speed_points:
            raise GraderError(
                "--speed-points needs a GPU: the interpreter times nothing, so "
                "no submission could earn them"
            )
        if args.what_if:
            raise GraderError(
                "--what-if needs a GPU: it times kernels, and the interpreter times nothing"
            )
        return speed.SpeedSettings(sizes=())
    return speed.SpeedSettings(
        sizes=args.speed_sizes or speed.DEFAULT_SIZES,
        points=args.speed_points,
        what_if=args.what_if,
    )


# --------------------------------------------------------------------------- merge


def command_merge(args):
    from grader.batch.grade import session

    session.merge(args.shards, args.out, args.overrides)
    return ExitCode.OK


# --------------------------------------------------------------------------- main


def command_handout(args):
    from grader.batch.packaging import handout

    try:
        folder, archive = handout.build(pathlib.Path(args.out), answer=args.answer)
    except ValueError as error:  # the handout would give something away: say what, no traceback
        raise GraderError(f"cannot build the handout: {error}") from None
    answer = (
        "kept: sections 5 and 6 show the whole answer (--answer remove cuts it)"
        if args.answer == "keep"
        else "removed from the student guides"
    )
    say(f"handout folder: {folder}\nhandout zip:    {archive}\nanswer:         {answer}")
    if args.answer == "keep":
        say(f"warning: {handout.KEPT_ANSWER}")
    return ExitCode.OK


def command_share(args):
    from grader.batch.outputs import share

    try:
        count = share.build(args.out_dir, args.target)
    except ValueError as error:
        raise GraderError(str(error)) from None
    say(
        f"shared the feedback of {count} student(s) into {args.target}: "
        f"{' and '.join(share.SHARED_FILES)} each ({', '.join(share.SHARED_IF_DRAWN)} where "
        f"the feedback links one), and {share.INDEX} for the staff"
    )
    return ExitCode.OK


def command_gradescope(args):
    from grader.batch.outputs import secret
    from grader.batch.packaging import gradescope

    given, flag = _chosen_seed(args)
    if given is None:
        seed = secret.generate()
    else:
        seed = given
        warning = secret.short_warning(seed, flag)
        if warning:
            say(warning)
    path = gradescope.build(
        pathlib.Path(args.out),
        seed=seed,
        hidden_visibility=args.hidden_visibility,
        timeout_s=args.timeout,
        cases=tuple(item for item in args.cases.split(",") if item),
        allow_unsandboxed=args.allow_unsandboxed,
    )
    say(
        f"autograder zip: {path}\nUpload it as the assignment's autograder; it holds the "
        "secret of the hidden cases, so share it with nobody else."
    )
    return ExitCode.OK


def command_export(args):
    from grader.batch.outputs import export, feedback_zip

    feedback, notes = args.kind in feedback_zip.FORMATS, []
    try:
        unmatched = (
            feedback_zip.build(args.out_dir, args.kind, args.target)
            if feedback
            else export.export(args.out_dir, args.kind, args.target, args.assignment, notes)
        )
    except ValueError as error:
        raise GraderError(str(error)) from None
    say(f"{args.kind} {'zip' if feedback else 'gradebook'}: {args.target}")
    for note in notes:
        say(f"note: {note}")
    if unmatched:
        left = (
            "their feedback is left out of the zip"
            if feedback
            else "the LMS cannot match their rows"
        )
        say(
            f"note: {len(unmatched)} student(s) have no LMS id, so {left}: "
            f"{', '.join(unmatched)} (their entries were not LMS download names)"
        )
    return ExitCode.OK


def command_constraints(args):
    from grader.batch.outputs import constraints

    try:
        count = constraints.write(args.out_dir, args.target)
    except ValueError as error:
        raise GraderError(str(error)) from None
    say(f"constraints: {args.target} ({count} packages pinned)")
    return ExitCode.OK


def batch_failure():
    from grader.batch.grade.grading import WorkerFailure

    return WorkerFailure


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    handlers = {
        "grade": command_grade,
        "merge": command_merge,
        "handout": command_handout,
        "share": command_share,
        "gradescope": command_gradescope,
        "export": command_export,
        "constraints": command_constraints,
    }
    try:
        return handlers[args.command](args)
    except GraderError as error:
        say(f"error: {error}")
        return ExitCode.FAILURE
    except batch_failure() as error:
        say(f"error: {error}")
        return ExitCode.FAILURE
    except KeyboardInterrupt:
        say("interrupted: finished grades are kept; run the same command again to resume")
        return ExitCode.INTERRUPTED
