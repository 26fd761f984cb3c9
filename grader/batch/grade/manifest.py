"""``batch.json``: what a grading session records of itself, so that ``resume`` and
``merge`` can rebuild its settings and check that shards agree."""

import dataclasses
import json
import pathlib

from grader.batch.grade import grading
from grader.batch.isolation import sandbox
from grader.batch.outputs import reports
from grader.batch.status import GraderError
from grader.batch.timing import speed

MANIFEST = "batch.json"


@dataclasses.dataclass
class Manifest:
    """What ``batch.json`` records of a session: its settings, cases and students.

    ``resume`` and ``merge`` rebuild the settings from it, so every setting that
    changes a grade is a field here."""

    grader_version: str
    backend: str
    timeout_s: float
    memory_limit_bytes: int
    isolation: str
    speed: dict | None
    late_penalty: float
    cases: list
    case_filter: list
    shard: list | None
    students: dict
    gpu_target: str = grading.Settings.gpu_target
    secret_fingerprint: str = ""  # never the secret itself (grader.batch.outputs.secret)
    overrides: dict | None = (
        None  # the staff's file applied (grader.batch.outputs.overrides.describe)
    )
    skipped: list | None = None  # the submissions folder's entries intake did not take, and why

    # What shards must share to be merged into one gradebook.
    SHARED = (
        "grader_version",
        "secret_fingerprint",
        "backend",
        "cases",
        "timeout_s",
        "memory_limit_bytes",
        "isolation",
        "speed",
        "late_penalty",
        "gpu_target",
    )

    @classmethod
    def of(cls, settings, cases_list, shard, students):
        return cls(
            grader_version=grading.grader_version(),
            secret_fingerprint=settings.fingerprint,
            backend=settings.backend,
            timeout_s=settings.timeout_s,
            memory_limit_bytes=settings.memory_limit_bytes,
            isolation=settings.isolation,
            speed=settings.speed.describe() if settings.timed else None,
            late_penalty=settings.late_penalty,
            cases=[case.id for case in cases_list],
            case_filter=list(settings.case_filter),
            shard=list(shard) if shard else None,
            students=students,
            gpu_target=settings.gpu_target,
        )

    @classmethod
    def read(cls, folder):
        path = pathlib.Path(folder) / MANIFEST
        if not path.is_file():
            raise GraderError(
                f"{str(folder)!r} is not the output of 'python -m grader grade' (no {MANIFEST})"
            )
        fields = json.loads(path.read_text(encoding="utf-8"))
        known = {field.name for field in dataclasses.fields(cls)}
        return cls(**{name: value for name, value in fields.items() if name in known})

    def write(self, folder):
        reports.atomic_write(
            pathlib.Path(folder) / MANIFEST,
            json.dumps(dataclasses.asdict(self), indent=2, ensure_ascii=False),
        )

    def settings(self, seed):
        """The batch's settings, with ``seed`` its secret (batch.json keeps only its fingerprint)."""
        return grading.Settings(
            seed=seed,
            backend=self.backend,
            timeout_s=self.timeout_s,
            memory_limit_bytes=self.memory_limit_bytes,
            case_filter=tuple(self.case_filter or ()),
            sandboxed=self.isolation != sandbox.UNSAFE,
            speed=speed.from_description(self.speed),
            late_penalty=self.late_penalty,
            gpu_target=self.gpu_target,
        )
