"""The grading record: what one student's grade was computed from, as typed fields.

grader.batch.grade.grading builds it, the verdict, the speed phase and the hand-in check
fill it, and grader.batch.outputs writes everything from it without changing it. On disk
(``record.json``, signed by grader.batch.outputs.reports) it is plain JSON with the keys
the kit has always written, plus ``record_version``; a record written before the version
existed reads as version 1, the same keys. Keys this grader does not know are kept as
they were (``extra``), so a record read and stored again loses nothing.

Why fields: the record crosses a dozen modules between the grading and the feedback page,
and a misspelt dict key there reads as a silent ``None``.
"""

import dataclasses

VERSION = 2  # 1: the same keys without "record_version" (every record.json before it)


class _ByKey:
    """Item access by field name, the dict record's reads and writes, which tests written
    against the dict still use. The kit's own modules read fields."""

    def __getitem__(self, name):
        if name not in _NAMES[type(self)]:
            raise KeyError(name)
        return getattr(self, name)

    def __setitem__(self, name, value):
        self[name]  # a misspelt key raises KeyError, as a field would
        setattr(self, name, value)

    def __contains__(self, name):
        return name in _NAMES[type(self)] and getattr(self, name) is not None

    def get(self, name, default=None):
        return self[name] if name in self else default


@dataclasses.dataclass
class CaseEntry(_ByKey):
    """One case's judgement (grader.batch.grade.verdict.judge_cases)."""

    id: str
    name: str
    visibility: str
    points: float
    max_points: float
    status: str
    message: str = ""
    mistake: str = ""
    flags: list = dataclasses.field(default_factory=list)
    passed: bool | None = None  # absent where the case was never judged
    details: dict | None = None

    @property
    def public(self):
        return self.visibility == "public"

    def to_json(self):
        return _without_none(dataclasses.asdict(self), ("passed", "details"))

    @classmethod
    def from_json(cls, fields):
        return cls(**{name: fields[name] for name in _NAMES[cls] if name in fields})


# Written only when set: what a refused file, a file never confirmed or a staff view lacks.
_OPTIONAL = (
    "peak_cores",
    "cpu_time_s",
    "cpu_wait_s",
    "seconds",
    "layout_ok",
    "gpu_build",
    "gpu_build_shared",
    "cut_short_s",
    "could_not_grade",
    "confirmed",
    "neighbours",
    "uploaded",
    "hints",
    "overrides",
    "overrides_withheld",
    "late_excused",
    "late_deduction",
    "status_kept",
    "reviewed_flags",
    "leaderboard_name",
    "leaderboard_opt_out",
)


@dataclasses.dataclass
class Record(_ByKey):
    """One student's grade. ``speed``, ``handin``, ``findings`` and ``hints`` keep the JSON
    shapes their own modules define (grader.batch.timing.speed, .handin, grader.core.diagnosis)."""

    # intake's facts (grader.batch.grade.intake)
    student: str = ""
    folder: str = ""
    origin: str = ""
    taken: str = ""
    seen: list = dataclasses.field(default_factory=list)  # [{"path", "why"}]
    lms_id: str = ""
    late: bool = False
    sha256: str = ""
    # what the grade depends on (grader.batch.grade.grading.grading_key)
    key: str = ""
    grader_version: str = ""
    secret_fingerprint: str = ""
    backend: str = ""
    isolation: str = ""
    # the verdict
    status: str = ""
    message: str = ""
    score: float = 0
    max_score: float = 0
    flags: list = dataclasses.field(default_factory=list)
    cases: list = dataclasses.field(default_factory=list)  # [CaseEntry]
    findings: list = dataclasses.field(default_factory=list)
    tiles: list | None = None
    arrangement: dict | None = None
    speed: dict | None = None  # None: passed and still to be timed
    handin: dict | None = None
    # the runs
    wall_time_s: float = 0.0
    stdout: str = ""
    stderr: str = ""
    peak_cores: float | None = None
    cpu_time_s: float | None = None
    cpu_wait_s: float | None = None
    seconds: dict | None = None
    layout_ok: bool | None = None
    gpu_build: dict | None = None
    gpu_build_shared: bool | None = None
    cut_short_s: float | None = None
    could_not_grade: bool | None = None
    confirmed: dict | None = None  # what the first of two gradings said
    neighbours: int | None = None  # how many files ran beside it, at most
    uploaded: list | None = None  # Gradescope: the names handed in without the file
    hints: list | None = None
    # the staff's overrides (grader.batch.outputs.override_view): stored as applied
    overrides: list | None = None
    overrides_withheld: list | None = None
    # a view's alone: set by override_view.applied and reports, never stored
    late_excused: bool | None = None
    late_deduction: float | None = None
    status_kept: str | None = None
    reviewed_flags: list | None = None
    leaderboard_name: str | None = None
    leaderboard_opt_out: bool | None = None
    extra: dict = dataclasses.field(default_factory=dict)  # keys of another grader, kept

    def to_json(self):
        """The record.json shape (the signature aside), the version first."""
        fields = {name: getattr(self, name) for name in _NAMES[Record] if name != "extra"}
        fields["cases"] = [entry.to_json() for entry in self.cases]
        return {"record_version": VERSION, **_without_none(fields, _OPTIONAL), **self.extra}

    @classmethod
    def from_json(cls, fields):
        """A record from its JSON, of this version or an earlier one; ValueError for one a
        newer grader wrote (its fields may mean what this one cannot tell)."""
        version = fields.get("record_version", 1)
        if not isinstance(version, int) or not 1 <= version <= VERSION:
            raise ValueError(f"record_version {version!r}: this grader reads 1 to {VERSION}")
        known = {name: fields[name] for name in _NAMES[cls] if name in fields and name != "extra"}
        known["cases"] = [CaseEntry.from_json(entry) for entry in fields.get("cases") or []]
        extra = {
            name: value
            for name, value in fields.items()
            if name not in _NAMES[cls] and name not in ("record_version", "signature")
        }
        return cls(**known, extra=extra)

    def case(self, case_id):
        """The entry of ``case_id``."""
        return next(entry for entry in self.cases if entry.id == case_id)


def _without_none(fields, optional):
    return {
        name: value for name, value in fields.items() if not (name in optional and value is None)
    }


_NAMES = {kind: [field.name for field in dataclasses.fields(kind)] for kind in (CaseEntry, Record)}
