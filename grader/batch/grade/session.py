"""A grading session: one class graded into one folder, from its settings to its gradebook.

``python -m grader grade`` and ``merge`` only parse their arguments and report; this
module owns what a batch is: its settings (recorded in ``batch.json`` by
grader.batch.grade.manifest), resuming from what is already graded, the pool of sandboxed
workers, the speed phase, the class reports, and merging shards.
"""

import collections
import concurrent.futures
import dataclasses
import itertools
import json
import os
import pathlib
import queue
import sys
import threading
import time
import traceback

from grader.batch.grade import grading, intake, machine, step_times
from grader.batch.isolation import hosts, plain_forks
from grader.batch.outputs import secret
from grader.batch.grade.folder_digest import folder_digest
from grader.batch.grade.manifest import MANIFEST, Manifest
from grader.batch.isolation import (
    compile_gate,
    compile_store,
    conversation,
    sandbox,
    time_policy,
    warm_pool,
)
from grader.batch.outputs import class_mistakes, overrides, reports
from grader.batch.outputs import student_folders as folder_names
from grader.batch.timing import speed
from grader.batch.status import GraderError, report, say
from grader.core import cases, gpu_compile


@dataclasses.dataclass
class Session:
    """One batch: grade ``submissions_dir`` into ``out_dir`` with ``settings``.

    ``slots`` holds one entry per worker, the GPU it uses (None on the interpreter);
    ``overrides_file`` is the staff's overrides.csv given on the command line, if any."""

    settings: grading.Settings
    out_dir: pathlib.Path
    slots: list
    progress: bool = True
    overrides_file: pathlib.Path | None = None
    book: overrides.Overrides = overrides.Overrides()
    # Seconds of each phase this run went through ("grading", "confirming", "timing"), for
    # environment.json: a batch's time split the way it is spent, one phase after another.
    phase_s: dict = dataclasses.field(default_factory=dict)
    # Students whose grading raised in the grader itself (a bug a file may trigger): each
    # gets a "could not grade" row, which the next run grades again; the command says so.
    failed: list = dataclasses.field(default_factory=list)

    def __post_init__(self):
        if self.settings.backend == "interpreter":
            _judge_on_one_thread()
        self._sandboxes = _Opening(self._open_sandboxes, len(self.slots))
        self.gate = compile_gate.CompileGate(
            backend_name=self.settings.backend,
            sandboxed=self.settings.sandboxed,
            target=self.settings.gpu_target,
            memory_bytes=self.settings.memory_limit_bytes,
            store=compile_store.from_environment(grading.grader_version()),
        )

    def run(self, submissions_dir, shard=None, force=False):
        """Grade whoever is not graded yet, time who passed, write the class reports;
        returns the count of each status."""
        submissions_dir = pathlib.Path(submissions_dir)
        cases_list = self.settings.cases()
        previous = Manifest.read(self.out_dir) if (self.out_dir / MANIFEST).is_file() else None
        chosen, folders, everyone, skipped = self._intake(
            submissions_dir, shard, previous and previous.students
        )
        before = folder_digest(submissions_dir)
        self.book = overrides.for_batch(
            self.overrides_file,
            self.out_dir,  # before any write
            previous and previous.overrides,
            everyone,
            self.settings,
        )
        self.out_dir.mkdir(parents=True, exist_ok=True)
        secret.keep(self.out_dir, self.settings.seed)
        overrides.keep(self.out_dir, self.book)
        manifest = Manifest.of(
            self.settings, cases_list, shard, {s.student: folders[s.student] for s in chosen}
        )
        dataclasses.replace(
            manifest,
            overrides=self.book.describe(),
            skipped=[{"entry": entry, "why": why} for entry, why in skipped],
        ).write(self.out_dir)
        reports.write_skipped(self.out_dir, skipped)

        records, todo = self.resume(chosen, folders, force)
        for record in records.values():  # the overrides may have changed since
            reports.write_feedback(self.out_dir, record, cases_list, self.book)
        self._sandboxes.files = _first_files(todo, len(self.slots))
        if self.book.rows:
            kept = self.out_dir / overrides.FILE
            say(
                f"overrides: {len(self.book.rows)} row(s) "
                + (
                    f"of {self.overrides_file}, kept as {kept}"
                    if self.overrides_file
                    else f"kept in {kept}, given before"
                )
            )
        say(
            f"ntgemm grader: {len(chosen)} submission(s), {len(records)} already graded, "
            f"{len(todo)} to grade; backend {self.settings.backend}, {len(cases_list)} cases, "
            f"-j {len(self.slots)}, timeout {self.settings.timeout_s:g} s, memory "
            f"{self.settings.memory_limit_bytes / 2**30:g} GiB"
        )

        started = time.monotonic()
        self._grade_class(todo, folders, cases_list, records)
        graded = [s for s in chosen if s.student in records]
        speed_record = self._time(graded, cases_list, records)
        ordered = [records[s.student] for s in graded]
        reports.write_class(self.out_dir, ordered, cases_list, self.book)
        say_file_warnings(ordered, self.book)
        statuses = count_statuses(ordered)
        after = folder_digest(submissions_dir)
        reports.write_environment(
            self.out_dir,
            machine.environment(
                self.settings,
                {
                    "jobs": len(self.slots),
                    "devices": [d for d in self.slots if d is not None],
                    "shard": list(shard) if shard else None,
                    "students": len(ordered),
                    "statuses": statuses,
                    "graded_now": len(todo),
                    "elapsed_s": round(time.monotonic() - started, 1),
                    "phase_s": self.phase_s,
                    "grader_cpu_s": grader_cpu_s(),
                    "submissions_unchanged": before == after,
                    "isolation": self.settings.isolation,
                    "speed": speed_record,
                    "seconds": step_times.summary(ordered),
                    "sandboxes": hosts.counts() if self.settings.sandboxed else None,
                    "compile_gate": dict(self.gate.counts),
                },
            ),
        )
        report("statuses: " + ", ".join(f"{k} {v}" for k, v in sorted(statuses.items())))
        report(class_mistakes.console_line(ordered, cases_list))
        report(f"gradebook: {self.out_dir / 'gradebook.csv'}")
        if self.failed:
            say(
                f"could not grade {len(self.failed)} file(s), not through the students' fault: "
                f"{', '.join(sorted(self.failed))}. Each has a row saying so, with 0 points; "
                "everyone else is graded. What failed is printed above: please report it. The "
                "same command grades only those again"
            )
        if before != after:
            raise GraderError(
                f"the submissions folder {str(submissions_dir)!r} changed during "
                "the batch; the grades used the copies read at the start, but "
                "check it"
            )
        return statuses

    def _intake(self, submissions_dir, shard, kept=None):
        """(the submissions to grade, their folders, every id of the class, the entries
        skipped, each said); ``kept``: the folders an earlier run of this OUT_DIR gave
        (grader.batch.folders.assign)."""
        skipped = []
        try:
            everyone = intake.discover(submissions_dir, skipped)
        except intake.IntakeError as error:
            raise GraderError(str(error)) from None
        for entry, why in skipped:
            say(f"skipped {entry!r}: {why}")
        chosen = intake.shard(everyone, *shard) if shard else everyone
        students = [submission.student for submission in everyone]
        assigned = folder_names.assign(students, kept)
        folders = {submission.student: assigned[submission.student] for submission in chosen}
        if len(set(folders.values())) < len(folders):
            raise GraderError(
                f"two student ids map to one folder ({sorted(folders.values())}); rename one"
            )
        return chosen, folders, students, skipped

    def resume(self, chosen, folders, force=False):
        """(records already graded with these settings and files, submissions to grade)."""
        records, todo = {}, []
        for submission in chosen:
            stored = reports.read_record(self.out_dir, folders[submission.student])
            key = grading.grading_key(submission, self.settings)
            if (
                stored
                and stored.key == key
                and stored.student == submission.student
                and not force
                and not time_policy.unconfirmed(stored, self.settings.backend)
                and not stored.could_not_grade
            ):
                records[submission.student] = stored
            else:
                todo.append(submission)
        return records, todo

    def _grade_class(self, todo, folders, cases_list, records):
        """The correctness verdicts: a first pass over ``todo``, then the timeouts again.
        The first pass takes the files whose kernel prints last (``prints_in_its_kernel``):
        their GPU time slows every file beside them. Its tail leaves their step limit as
        it is (``_grade``'s ``steady``): one cut there would print beside the files graded
        again, whose verdicts stand."""
        step_s = time_policy.first_pass_step(
            self.settings.backend, self.settings.timeout_s, len(todo), len(self.slots)
        )
        printing = set()
        if step_s is not None:
            printing = {s.student for s in todo if grading.prints_in_its_kernel(s)}
            todo = sorted(todo, key=lambda submission: submission.student in printing)
        self._grade(todo, folders, cases_list, records, step_s=step_s, steady=printing)
        self._confirm_timeouts(todo, folders, cases_list, records)

    def _confirm_timeouts(self, todo, folders, cases_list, records):
        """Grade again, once the class is graded, each file time_policy.unconfirmed names,
        with the full ``--timeout`` and no other submission's runs beside it but the others
        graded again; the record keeps what the first grading said (``confirmed``)."""
        again = [
            s
            for s in todo
            if s.student in records
            and time_policy.unconfirmed(records[s.student], self.settings.backend)
        ]
        if not again:
            return
        say(
            f"grading {len(again)} again with the full time limit, beside no other "
            "submission but those: each timed out beside others, or stalled in a step "
            "longer than the first pass allows"
        )
        first = {s.student: records[s.student] for s in again}

        def keep_first(record):
            earlier = first[record.student]
            record.confirmed = {
                "first_status": earlier.status,
                "first_message": earlier.message,
                "first_wall_time_s": earlier.wall_time_s,
                "first_neighbours": earlier.neighbours,
            }
            if earlier.cut_short_s:
                record.confirmed["first_cut_short_s"] = earlier.cut_short_s

        self._grade(again, folders, cases_list, records, "confirming", keep_first)

    def _grade(
        self, todo, folders, cases_list, records, what="grading", amend=None, step_s=None, steady=()
    ):
        """Grade ``todo`` on the worker slots, writing each student's folder as it ends
        (after ``amend(record)``, if given); ``step_s``: the first pass's limit per step
        (time_policy.first_pass_step), lowered for its tail (``_Tail``)
        but for the students in ``steady``. Each record counts its ``neighbours``: the
        other submissions graded at some moment while it was."""
        if not todo:
            return
        free = queue.Queue()
        for device in self.slots:
            free.put(device)
        processes = _Processes()
        pool = self._pool(grading.limits(self.settings), processes, self._warm_ahead())
        pool.expect(grading.RUNS * len(todo))
        active, neighbours, lock = set(), {}, threading.Lock()  # neighbours: a count each
        stall = conversation.StallLimit(step_s) if step_s is not None else None
        kept = conversation.StallLimit(step_s) if step_s is not None else None  # never lowered
        tail = _Tail(len(todo), len(self.slots), stall)

        def work(submission):
            if processes.stop.is_set():
                return None
            device = free.get()
            if processes.stop.is_set():
                free.put(device)
                return None
            me = submission.student
            with lock:
                neighbours[me] = len(active)
                for other in active:
                    neighbours[other] += 1
                active.add(me)
                tail.started(len(active))
            try:
                record = grading.grade(
                    submission,
                    self.settings,
                    folders[me],
                    device,
                    on_start=processes.track,
                    pool=pool,
                    stall=kept if me in steady else stall,
                    gate=self.gate,
                )
            finally:
                with lock:
                    active.discard(me)
                free.put(device)
            if processes.stop.is_set():
                return None
            with lock:
                record.neighbours = neighbours.pop(me)
                tail.ended(time_policy.unconfirmed(record, self.settings.backend), len(active))
            if amend is not None:
                amend(record)
            reports.write_student(self.out_dir, record, cases_list, self.book)
            return record

        def guarded(submission):
            """``work``, but a bug of the grader that this file triggers (on purpose, maybe)
            leaves only this file ungraded instead of stopping the class; ``run`` drops a
            record an earlier pass gave it, so the next run grades it again."""
            try:
                return work(submission)
            except GraderError:
                raise  # the grader cannot work at all (no sandbox, say): the batch stops
            except Exception as error:  # noqa: BLE001 - a grader bug one file triggers is that file's row, never the class's
                self.failed.append(submission.student)
                say(
                    f"  {submission.student}: the grader failed while {what} this file (not "
                    f"the student's fault):\n{traceback.format_exc()}"
                )
                record = grading.could_not_grade(
                    submission, self.settings, folders[submission.student], error
                )
                reports.write_student(self.out_dir, record, cases_list, self.book)
                return record

        bar = _bar(len(todo), not self.progress, what)
        began = time.monotonic()
        # Twice the slots: a thread writing a file's feedback (its pictures take a second)
        # has given its slot back, and another thread takes that slot meanwhile.
        executor = concurrent.futures.ThreadPoolExecutor(max_workers=2 * len(self.slots))
        try:
            futures = {executor.submit(guarded, s): s for s in todo}
            for future in concurrent.futures.as_completed(futures):
                record = future.result()
                if record is None:
                    continue
                records[record.student] = record
                bar.update(1)
                report(
                    f"  {record.student}: {record.status} "
                    f"{record.score}/{record.max_score} "
                    f"({record.wall_time_s:.1f} s)",
                    bar,
                )
        except BaseException as error:
            processes.stop_all()
            # The grader's own error (no sandbox, say) waits for the files under way, which
            # end at once now (a record is never written after the stop); an interrupt does not.
            executor.shutdown(wait=isinstance(error, GraderError), cancel_futures=True)
            bar.close()
            raise
        finally:
            pool.close()
        executor.shutdown(wait=True)
        bar.close()
        self.phase_s[what] = round(time.monotonic() - began, 1)

    def _open_sandboxes(self, files):
        """Before the batch's first run: start the first files' sandboxes side by side, and
        check with the first of them to be ready that it starts a worker as every run's
        does (given back clean, it then serves a run). Unsandboxed: start the fork server
        of its runs (grader.batch.isolation.plain_forks)."""
        if not self.settings.sandboxed:
            plain_forks.start_ahead(self.settings.backend, self._first_wave(files))
            return
        hosts.start_ahead(self.settings.backend, self._first_wave(files))
        problem = sandbox.check(self.settings.backend == "gpu", self.slots[0])
        if problem:
            raise GraderError(
                f"the sandbox (bubblewrap) cannot start here: {problem}\nFix that, or pass "
                "--unsafe-no-sandbox to grade without isolation (each submission could then "
                "read your files and harm the others)"
            )

    def _per_slot(self):
        """Runs of a file at once: both on a GPU, one after the other on the interpreter."""
        return grading.RUNS if self.settings.backend == "gpu" else 1

    def _first_wave(self, files):
        """The device of each run the first files start at once: a sandbox each."""
        return [d for d in self.slots[:files] for _ in range(self._per_slot())]

    def _warm_ahead(self):
        """Workers the pool keeps warm per slot. On a GPU, a file's two runs (a worker's
        CUDA start is seconds). On the interpreter none: a worker forked from the sandbox its
        slot's last run gave back starts in a moment, while one warmed ahead holds a
        sandbox of its own, whose imports cost as much CPU as a small file's grading."""
        return self._per_slot() if self.settings.backend == "gpu" else 0

    def _pool(self, limits, processes, per_slot):
        """Warm workers (grader.batch.isolation.warm_pool): ``per_slot`` ahead for each slot
        (none: every run starts its own worker)."""
        ahead = {
            device: count * per_slot for device, count in collections.Counter(self.slots).items()
        }
        return warm_pool.WarmPool(
            backend_name=self.settings.backend,
            limits=limits,
            sandboxed=self.settings.sandboxed,
            on_start=processes.track,
            ahead=ahead,
            before_take=self._sandboxes.ensure,
        )

    def _time(self, chosen, cases_list, records):
        """The speed phase (grader.batch.timing.speed), after every correctness verdict; what
        environment.json records of it, or None when the batch times nothing."""
        if not self.settings.timed:
            return None
        items = [(s, records[s.student]) for s in chosen if speed.needs_timing(records[s.student])]
        if items:
            self._sandboxes.ensure()
        environments = {
            device: machine.gpu_environment(device) for device in sorted(set(self.slots), key=str)
        }
        started = time.monotonic()
        bar = _bar(len(items), not self.progress, "timing")
        processes = _Processes()
        # Drawing a card takes about a second: a thread of its own does the writing, so that
        # the GPU goes on to the next timing meanwhile.
        writer, written = concurrent.futures.ThreadPoolExecutor(max_workers=1), []

        def write(record):
            reports.write_student(self.out_dir, record, cases_list, self.book)
            bar.update(1)
            report(f"  {record.student}: {record.speed['message']}", bar)

        try:
            speed.time_class(
                items,
                self.settings,
                self.slots,
                on_timed=lambda record: written.append(writer.submit(write, record)),
                on_start=processes.track,
                stop=processes.stop,
                environments=environments,
            )
            for future in written:
                future.result()
        except BaseException:
            processes.stop_all()
            writer.shutdown(wait=True)
            bar.close()
            raise
        writer.shutdown(wait=True)
        bar.close()
        self.phase_s["timing"] = round(time.monotonic() - started, 1)
        return {
            **self.settings.speed.describe(),
            "timed_now": len(items),
            "elapsed_s": self.phase_s["timing"],
            "gpus_at_start": {str(device): env for device, env in environments.items()},
        }


def start(settings, out_dir, jobs=None, gpus=None, progress=True, overrides_file=None):
    """The Session that grades with ``settings`` into ``out_dir`` on this machine.

    Worker slots over the GPUs of ``gpus`` (``--gpus``: 'all', 'none' or a list; by default
    what CUDA_VISIBLE_DEVICES allows), as many as ``machine.default_jobs`` gives unless
    ``jobs`` (``-j``) says how many; every worker compiles for ``settings.gpu_target``. Unknown ids
    in ``settings.case_filter`` are a GraderError. ``overrides_file`` is the staff's
    ``--overrides`` (grader.batch.outputs.overrides)."""
    os.environ[gpu_compile.ENV_VAR] = settings.gpu_target  # the workers' compile check reads it
    if settings.case_filter and len(settings.cases()) != len(set(settings.case_filter)):
        known = {case.id for case in cases.catalogue(settings.seed, settings.backend)}
        raise GraderError(f"--cases: unknown case ids {sorted(set(settings.case_filter) - known)}")
    devices = []
    if settings.backend == "gpu":
        import torch

        try:
            devices = machine.parse_gpus(gpus, count=torch.cuda.device_count())
        except ValueError as error:
            raise GraderError(str(error)) from None
    jobs = jobs or machine.default_jobs(len(os.sched_getaffinity(0)), len(devices))
    if devices and jobs > len(devices):
        say(f"note: -j {jobs} with {len(devices)} GPU(s): several workers share a GPU")
    return Session(
        settings,
        pathlib.Path(out_dir),
        machine.assign_devices(jobs, devices),
        progress=progress,
        overrides_file=overrides_file,
    )


def merge(shards, out_dir, overrides_file=None):
    """One gradebook from the output folders of ``grade --shard``, with the staff's overrides
    (``overrides_file``, else the shards' own); returns the student count."""
    out_dir = pathlib.Path(out_dir)
    manifests = []
    for shard in shards:
        manifests.append((pathlib.Path(shard), Manifest.read(shard)))
        if inside(out_dir, shard):
            raise GraderError(f"--out {str(out_dir)!r} must not be inside the shard {shard!r}")
    first = manifests[0][1]
    for shard, manifest in manifests[1:]:
        if manifest.secret_fingerprint != first.secret_fingerprint:
            raise GraderError(
                f"cannot merge: {shard} was graded with a different secret "
                f"(fingerprint {manifest.secret_fingerprint!r} against "
                f"{first.secret_fingerprint!r}); grade every shard with the same "
                "--seed-file"
            )
        for field in Manifest.SHARED:
            if getattr(manifest, field) != getattr(first, field):
                raise GraderError(
                    f"cannot merge: {shard} was graded with a different {field} "
                    f"({getattr(manifest, field)!r} against "
                    f"{getattr(first, field)!r})"
                )
    seed = secret.stored(manifests[0][0])
    if seed is None or cases.fingerprint(seed) != first.secret_fingerprint:
        raise GraderError(
            f"cannot merge: {manifests[0][0]} has no {secret.FILE} matching its "
            f"{MANIFEST}; copy the shard's folder whole, dot files included"
        )
    records, sources = {}, {}
    for shard, manifest in manifests:
        for student, folder in manifest.students.items():
            record = reports.read_record(shard, folder)
            if record is None or record.student != student:
                raise GraderError(
                    f"cannot merge: {student!r} has no finished result in "
                    f"{shard}; run that shard's grade command again to finish it"
                )
            if time_policy.unconfirmed(record, first.backend):
                raise GraderError(
                    f"cannot merge: {student!r} timed out in {shard} and "
                    "was not graded again with the full time limit; run that "
                    "shard's grade command again to finish it"
                )
            if record.status == "passed" and first.speed and speed.needs_timing(record):
                raise GraderError(
                    f"cannot merge: {student!r} passed but was never timed in "
                    f"{shard}; run that shard's grade command again to time it"
                )
            if student in records and records[student].key != record.key:
                raise GraderError(
                    f"cannot merge: {student!r} was graded differently in "
                    f"{sources[student]} and {shard}"
                )
            records[student] = record
            sources[student] = shard
    settings = first.settings(seed)
    cases_list = settings.cases()
    if [case.id for case in cases_list] != first.cases:
        raise GraderError("cannot merge: this grader's case catalogue differs from the shards'")
    book = overrides.for_merge(
        overrides_file,
        [(shard, manifest.overrides) for shard, manifest in manifests],
        list(records),
        settings,
    )
    out_dir.mkdir(parents=True, exist_ok=True)
    secret.keep(out_dir, seed)
    overrides.keep(out_dir, book)
    for student, record in sorted(records.items()):
        reports.copy_student_folder(sources[student] / record.folder, out_dir / record.folder)
        reports.write_feedback(out_dir, record, cases_list, book)
    ordered = [records[student] for student in sorted(records)]
    reports.write_class(out_dir, ordered, cases_list, book)
    say_file_warnings(ordered, book)
    dataclasses.replace(
        first,
        shard=None,
        overrides=book.describe(),
        students={student: records[student].folder for student in sorted(records)},
    ).write(out_dir)
    environments = []
    for shard, _ in manifests:
        try:
            environments.append(json.loads((shard / "environment.json").read_text()))
        except (OSError, ValueError):
            environments.append(None)
    reports.write_environment(
        out_dir,
        machine.environment(
            settings,
            {
                "merged_shards": len(manifests),
                "shard_environments": environments,
                "students": len(ordered),
                "statuses": count_statuses(ordered),
            },
        ),
    )
    say(f"merged {len(manifests)} shard(s), {len(ordered)} students: {out_dir / 'gradebook.csv'}")
    return len(ordered)


def say_file_warnings(records, book):
    """Say each override row that was written for an earlier file, or names no file
    (grader.batch.outputs.override_view.file_warnings)."""
    from grader.batch.outputs import override_view

    for record in records:
        for line in override_view.file_warnings(record, book):
            say(f"warning: override of {line}")


def grader_cpu_s():
    """CPU seconds of this process, every thread of it: the parent's own share of a batch
    (judging, watching the runs, drawing), beside its workers' (each record's ``cpu_time_s``)."""
    import resource

    used = resource.getrusage(resource.RUSAGE_SELF)
    return round(used.ru_utime + used.ru_stime, 1)


def count_statuses(records):
    statuses = {}
    for record in records:
        statuses[record.status] = statuses.get(record.status, 0) + 1
    return statuses


def _judge_on_one_thread():
    """The parent's torch (inputs, references, judging) on one thread where the workers run
    on the interpreter: -j fills every core with them, and a pool of torch threads then
    spins for cores it does not get: one thread built a small case's inputs and reference 14
    times faster than two on a busy 2-core box (docs/stress-runs/timeline.md, "Measurements
    behind the rules"). On a GPU the judged outputs are up to 4096 x 4096: torch keeps its
    threads there."""
    import torch

    torch.set_num_threads(1)


def _first_files(todo, slots):
    """How many files run at once at the batch's start: a sandbox is started ahead for
    each (``_first_wave``). Files refused for their text alone are not counted: a class of
    one runnable file and a placeholder started two sandboxes, the second never used
    (one fork server's imports, 1.7 CPU seconds on a 2-core box). Only the first
    ``4 * slots`` files are read for it, since their grading reads each again: a class of
    a hundred 1 MiB placeholders costs no more than a few such reads, and a count too low
    only lets a run start its own sandbox when it comes."""
    looked_at = itertools.islice(todo, 4 * slots)
    return sum(1 for _ in itertools.islice(filter(grading.may_run, looked_at), slots))


def inside(child, parent):
    child, parent = pathlib.Path(child).resolve(), pathlib.Path(parent).resolve()
    return child == parent or parent in child.parents


class _Opening:
    """Opens the sandboxes once, when the first run needs one: a batch whose files are all
    refused before they run, or were all graded before, starts none. Every later caller
    gets the first one's GraderError again, or nothing; an opening cut short otherwise (an
    interrupt) is tried again by the next."""

    def __init__(self, open_them, files):
        self.open_them, self.files = open_them, files  # files: at most that many run at first
        self.lock, self.done, self.error = threading.Lock(), False, None

    def ensure(self):
        with self.lock:
            if not self.done:
                try:
                    self.open_them(self.files)
                except GraderError as error:
                    self.error = error
                self.done = True
            if self.error is not None:
                raise self.error


class _Tail:
    """The first pass's tail: counts the files not yet started and those due for a second
    grading, and lowers the pass's step limit to time_policy.TAIL_STALL_S once
    time_policy.tail_lowers says so (``stall.lower``). Called under the pass's lock;
    without a stall limit (later passes, the interpreter, a file alone) it does nothing."""

    def __init__(self, files, slots, stall):
        self.unstarted, self.slots, self.stall, self.due = files, slots, stall, 0

    def started(self, active):
        self.unstarted -= 1
        self._check(active)

    def ended(self, due, active):
        self.due += bool(due)
        self._check(active)

    def _check(self, active):
        if self.stall is not None and time_policy.tail_lowers(
            self.unstarted, self.due, active, self.slots
        ):
            self.stall.lower(time_policy.TAIL_STALL_S)


class _Processes:
    """The workers a phase started, so that an interrupt can stop every one of them."""

    def __init__(self):
        self.running, self.lock, self.stop = set(), threading.Lock(), threading.Event()

    def track(self, process):
        with self.lock:
            self.running.add(process)
        if self.stop.is_set():
            _kill(process)

    def stop_all(self):
        """Kill every run still going. An ended one is left alone: its server reaped it once
        the grader was done with it, so its pid may name another process by now."""
        self.stop.set()
        with self.lock:
            for process in self.running:
                if process.poll() is None:
                    _kill(process)


def _kill(process):
    import signal

    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _bar(total, disabled, what="grading"):
    from tqdm import tqdm

    return tqdm(
        total=total,
        unit="student",
        desc=what,
        file=sys.stderr,
        disable=disabled,
        dynamic_ncols=True,
        smoothing=0.1,
    )
