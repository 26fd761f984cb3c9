"""What crosses between the batch grader and a sandboxed worker: typed records, encoded
right beside their decoding. One file on purpose: a reviewer reads every record that crosses
the boundary, with its bounds, in one place.

The channel is a pair of pipes: the parent writes to the worker's stdin, the
worker writes to a private copy of its stdout (its fd 1 then points at stderr,
so nothing a submission prints can reach the channel by accident). A message is

    8 bytes: the header's length, little-endian
    header:  UTF-8 JSON, at most MAX_HEADER bytes: {"kind": ..., "payload": n, ...}
    payload: n raw bytes (float16 matrices, row-major)

The parent never unpickles anything and never reads more than it asked for:
before reading a payload it checks the header against what it expects (the
exact byte count of the outputs of the case it sent), so a worker can neither
make it read gigabytes nor slip in a value of another shape.

Messages, in the order a run sends them:

| from   | kind        | fields                                   | payload |
| ------ | ----------- | ---------------------------------------- | ------- |
| worker | hello       | (the worker is up; no student code ran)  | |
| parent | job         | mode: "kernel", "wrapper" or "timing" (the file is in place now) | |
| worker | loaded      | Loaded: status (LOADED_STATUSES), message | |
| worker | compile     | bytes (kernel runs with a kernel: its generated file, for the compile gate) | the file |
| parent | build       | a grader.core.gpu_compile.Build of those bytes (grader.batch.isolation.compile_gate) | |
| worker | diagnosis   | Diagnosis: findings, tiles, layout_ok (kernel runs only) | |
| parent | phase       | cases: [Job], last: bool                 | every job's lhs then rhs |
| worker | arrangement | Arrangement: shape, program, grids, tiles (phase 0 only, at most once) | |
| worker | case        | CaseResult: index, error, exited, seconds | the job's outputs, role by role |
| worker | phase_done  |                                          | |
| worker | stopped     | Stopped: why, unbound, unbuildable (the run ended: the build guard, the kernel check) | |

A timing run (grader.batch.timing.speed) instead sends, after ``loaded``:

| from   | kind        | fields                                   |
| ------ | ----------- | ---------------------------------------- |
| parent | sizes       | sizes: [[m, n, k], ...], what_if_s (0: no what-if) |
| worker | ready       | Ready: note, num_warps, num_stages (compiled, nothing launched) |
| parent | go          | (the GPU is this run's alone now)        |
| worker | timing      | SizeTiming: m, n, k, verdict, wrong, kernel, torch, error (one per size) |
| worker | what_if_plan | WhatIfPlan: reason, given, used, route (only if ``sizes`` asked for a what-if) |
| worker | what_if     | WhatIfTiming: config, status, note, kernel, torch (one per other configuration) |
| worker | timing_done |                                          |

Each record's ``to_fields`` is what the worker sends and its ``from_fields`` what the
parent keeps: bounded text, numbers of the right type, or a ProtocolError.
"""

import dataclasses
import json
import struct

MAX_HEADER = 256 * 1024
MAX_TEXT = 8000  # characters kept of any text a worker sends
# Lists and dicts within lists and dicts a header may hold (an arrangement's tiles hold 4):
# a value nested hundreds deep still parses on the reader's thread, but repr() or str() of
# it raises RecursionError on the deeper stack of the thread that checks it.
MAX_DEPTH = 8
MAX_SOURCE = 1 << 20  # bytes of a generated kernel file a worker may send to be compiled
LOADED_STATUSES = ("ok", "import_error", "not_implemented", "exited")
_LENGTH = struct.Struct("<Q")


class ProtocolError(Exception):
    """The other side broke the protocol: the run is over, and says so."""


@dataclasses.dataclass(frozen=True)
class Message:
    kind: str
    fields: dict
    payload: bytes = b""


@dataclasses.dataclass(frozen=True)
class Job:
    """One case as a worker sees it: shapes and the outputs wanted, never its id or seed."""

    index: int
    m: int
    n: int
    k: int
    roles: tuple  # names of the outputs to make, each a fresh NaN-filled (m, n) float16
    blocks: tuple = None  # the tiles to build the kernel at (grader.core.retile); None: its own

    @property
    def input_bytes(self):
        return 2 * (self.m * self.k + self.k * self.n)

    @property
    def output_bytes(self):
        return 2 * self.m * self.n * len(self.roles)

    def to_fields(self):
        return {
            "index": self.index,
            "m": self.m,
            "n": self.n,
            "k": self.k,
            "roles": list(self.roles),
            "blocks": list(self.blocks) if self.blocks else None,
        }

    @classmethod
    def from_fields(cls, fields):
        blocks = fields.get("blocks")
        return cls(
            int(fields["index"]),
            int(fields["m"]),
            int(fields["n"]),
            int(fields["k"]),
            tuple(str(role) for role in fields["roles"]),
            tuple(int(size) for size in blocks) if blocks else None,
        )

    def inputs(self, data):
        """(lhs, rhs) as float16 CPU tensors from this job's ``input_bytes`` of a phase."""
        split = 2 * self.m * self.k
        return _matrix(data[:split], self.m, self.k), _matrix(data[split:], self.k, self.n)

    def outputs(self, payload):
        """{role: float16 (m, n) CPU tensor} from a case message's payload."""
        size = 2 * self.m * self.n
        return (
            {
                role: _matrix(payload[place * size : (place + 1) * size], self.m, self.n)
                for place, role in enumerate(self.roles)
            }
            if payload
            else {}
        )


def matrices(tensors):
    """The bytes of float16 matrices, row-major, one after another: a phase's inputs
    (each job's lhs then rhs) or a case's outputs (role by role)."""
    return b"".join(tensor.detach().contiguous().cpu().numpy().tobytes() for tensor in tensors)


def _matrix(data, rows, columns):
    import torch

    return torch.frombuffer(bytearray(data), dtype=torch.float16).reshape(rows, columns)


@dataclasses.dataclass(frozen=True)
class Loaded:
    """How the worker's import of the file went."""

    KIND = "loaded"
    status: str  # one of LOADED_STATUSES
    message: str = ""

    def to_fields(self):
        return {"status": self.status, "message": text(self.message)}

    @classmethod
    def from_fields(cls, fields):
        status = str(fields.get("status"))
        if status not in LOADED_STATUSES:
            raise ProtocolError(f"load status {status!r}")
        return cls(status, text(fields.get("message", "")))


@dataclasses.dataclass(frozen=True)
class Diagnosis:
    """What a kernel run found before any case: the arrangement's findings, its tiles, and
    whether the symbolic check found the arrangement right (grader.core.layout.checked_right;
    feedback only). Its build for the course's GPU is the parent's own
    (grader.batch.isolation.compile_gate)."""

    KIND = "diagnosis"
    findings: list
    tiles: list = None
    layout_ok: bool = False

    def to_fields(self):
        return {
            "findings": findings(self.findings),
            "tiles": tiles(self.tiles),
            "layout_ok": self.layout_ok,
        }

    @classmethod
    def from_fields(cls, fields):
        return cls(
            findings(fields.get("findings")),
            tiles(fields.get("tiles")),
            fields.get("layout_ok") is True,
        )


def source_bytes(fields):
    """How many bytes of generated kernel a ``compile`` message may carry: what it says,
    from 1 to MAX_SOURCE."""
    size = fields.get("bytes")
    if not whole(size, 1, MAX_SOURCE):
        raise ProtocolError(f"a generated kernel of {size!r} bytes (1 to {MAX_SOURCE})")
    return size


@dataclasses.dataclass(frozen=True)
class Arrangement:
    """What one program gets where it differs from what it should, at a public case's shape
    (grader.core.program_tiles): plain numbers the parent draws (grader.core.tile_picture)."""

    KIND = "arrangement"
    picture: dict

    def to_fields(self):
        return dict(self.picture)

    @classmethod
    def from_fields(cls, fields, shapes):
        """The picture, if its shape is one of ``shapes`` and every number is in bounds."""
        from grader.core.program_tiles import MAX_STEPS, ROLES

        shape = fields.get("shape")
        # Whole numbers before the look-up: a list among them cannot be looked up (TypeError,
        # which would end the batch, not the run), and 128.0 would pass it and be drawn.
        if (
            not (isinstance(shape, list) and all(whole(size) for size in shape))
            or tuple(shape) not in shapes
        ):
            raise ProtocolError(f"an arrangement at a shape no public case has ({shape!r})")
        m, n, k = shape
        bounds = {"lhs": (m, k), "rhs": (k, n), "output": (m, n)}
        grids, tiles = fields.get("grids"), fields.get("tiles")
        if not (isinstance(grids, dict) and isinstance(tiles, dict)):
            raise ProtocolError("an arrangement without grids or tiles")
        kept = {
            "shape": list(shape),
            "program": _bounded(fields.get("program"), 1 << 20),
            "grids": {},
            "tiles": {},
        }
        for role in ROLES:
            grid = grids.get(role)
            if not (isinstance(grid, list) and 1 <= len(grid) <= 4):
                raise ProtocolError(f"an arrangement's {role} grid {grid!r}")
            kept["grids"][role] = [_bounded(size, 1 << 20) for size in grid]
            rectangles = tiles.get(role)
            if not (isinstance(rectangles, list) and len(rectangles) <= MAX_STEPS):
                raise ProtocolError(f"an arrangement's {role} tiles")
            rows, columns = bounds[role]
            kept["tiles"][role] = [_rectangle(item, rows, columns) for item in rectangles]
        return cls(kept)


def whole(value, low=0, limit=float("inf")):
    """Whether ``value`` is an int (never a bool, which JSON's true would give) from ``low``
    to ``limit``."""
    return isinstance(value, int) and not isinstance(value, bool) and low <= value <= limit


def _bounded(value, limit):
    if whole(value, 0, limit):
        return value
    raise ProtocolError(f"{value!r} is not a whole number up to {limit}")


def _rectangle(value, rows, columns):
    """[row0, row1, col0, col1] inside a rows x columns matrix, not empty."""
    if not (isinstance(value, list) and len(value) == 4):
        raise ProtocolError(f"a tile {value!r}")
    row0, row1, col0, col1 = (_bounded(item, max(rows, columns)) for item in value)
    if not (row0 < row1 <= rows and col0 < col1 <= columns):
        raise ProtocolError(f"a tile {value!r} outside a {rows} x {columns} matrix")
    return [row0, row1, col0, col1]


@dataclasses.dataclass(frozen=True)
class CaseResult:
    """One job's report; its outputs travel as the message's payload."""

    KIND = "case"
    index: int
    error: str = ""
    exited: bool = False  # the submission asked the process to exit (a wrapper run)
    seconds: float = 0.0

    def to_fields(self):
        return {
            "index": self.index,
            "error": text(self.error),
            "exited": self.exited,
            "seconds": round(self.seconds, 3),
        }

    @classmethod
    def from_fields(cls, fields):
        seconds = fields.get("seconds")
        return cls(
            fields.get("index"),
            text(fields.get("error") or ""),
            bool(fields.get("exited")),
            float(seconds) if isinstance(seconds, (int, float)) else 0.0,
        )


# What a worker writes on stderr when the parent, its time limit up, asks (SIGUSR1) where
# it is: every thread's stack, then ``HANG_SITE thread <ident>``, the main thread's, whose
# stack shows the submission's line. Feedback only, never a grade.
HANG_SITE = "ntgemm-hang-site:"


@dataclasses.dataclass(frozen=True)
class Stopped:
    """The build guard (grader.core.build_guard) ended a kernel or timing run at an event
    no build needs, or the check of its generated kernel refused it; the worker exits right
    after sending it, at any point of the run. ``unbound``: the names, where the kernel was
    refused for names bound nowhere alone; ``unbuildable``: whether it was refused for what
    no run could build alone (grader.core.generated_kernel.KernelRejected). Both are claims
    of the worker: the parent believes them only where the file's source explains them
    (grader.batch.grade.verdict.refusal)."""

    KIND = "stopped"
    why: str
    unbound: tuple = ()
    unbuildable: bool = False

    def to_fields(self):
        return {
            "why": text(self.why, 1000),
            "unbound": list(self.unbound),
            "unbuildable": self.unbuildable,
        }

    @classmethod
    def from_fields(cls, fields):
        return cls(
            text(fields.get("why", ""), 1000),
            names(fields.get("unbound")),
            fields.get("unbuildable") is True,
        )


@dataclasses.dataclass(frozen=True)
class Ready:
    """A timing run has compiled its kernel for every size and launched nothing."""

    KIND = "ready"
    note: str = ""
    num_warps: object = "unknown"
    num_stages: object = "unknown"

    def to_fields(self):
        return {
            "note": text(self.note, 2000),
            "num_warps": self.num_warps,
            "num_stages": self.num_stages,
        }

    @classmethod
    def from_fields(cls, fields):
        return cls(
            text(fields.get("note") or "", 2000),
            small_int(fields.get("num_warps")),
            small_int(fields.get("num_stages")),
        )


@dataclasses.dataclass(frozen=True)
class SizeTiming:
    """What a timing run reported for one size: its verdict and both [median, p20, p80] ms."""

    KIND = "timing"
    m: int
    n: int
    k: int
    verdict: str  # PASS, FAIL (wrong output there) or ERROR (the kernel raised)
    wrong: int = 0
    kernel: tuple = None
    torch: tuple = None
    error: str = ""

    def to_fields(self):
        return {
            "m": self.m,
            "n": self.n,
            "k": self.k,
            "verdict": self.verdict,
            "wrong": self.wrong,
            "kernel": list(self.kernel) if self.kernel else None,
            "torch": list(self.torch) if self.torch else None,
            "error": text(self.error),
        }

    @classmethod
    def from_fields(cls, size, fields):
        """The report for ``size`` (m, n, k); a PASS without two valid timings is an ERROR."""
        verdict = (
            fields.get("verdict") if fields.get("verdict") in ("PASS", "FAIL", "ERROR") else "ERROR"
        )
        kernel, torch_mm = timing(fields.get("kernel")), timing(fields.get("torch"))
        if verdict == "PASS" and (kernel is None or torch_mm is None):
            verdict = "ERROR"
        wrong = fields.get("wrong")
        return cls(
            *size,
            verdict=verdict,
            wrong=wrong if isinstance(wrong, int) and wrong >= 0 else 0,
            kernel=kernel if verdict == "PASS" else None,
            torch=torch_mm if verdict == "PASS" else None,
            error=text(fields.get("error") or "", 3000),
        )


@dataclasses.dataclass(frozen=True)
class WhatIfPlan:
    """Whether the student's functions can be rebuilt with other tiles, as a reason code
    (benchmarks.what_if.REASONS, "" when they can) that the parent words itself."""

    KIND = "what_if_plan"
    reason: str = ""
    given: tuple = None
    used: tuple = None
    route: str = ""

    @classmethod
    def of(cls, plan):
        return cls(plan.reason, plan.given, plan.used, plan.route)

    def to_fields(self):
        return {
            "reason": self.reason,
            "given": self.given and list(self.given),
            "used": self.used and list(self.used),
            "route": self.route,
        }

    @classmethod
    def from_fields(cls, fields):
        from benchmarks import what_if

        reason = fields.get("reason")
        if reason not in ("", *what_if.REASONS):
            raise ProtocolError(f"a what-if plan's reason {reason!r}")
        if reason != what_if.IGNORED:
            return cls(reason)
        given, used, route = (
            tiles(fields.get("given")),
            tiles(fields.get("used")),
            fields.get("route"),
        )
        # A str before the look-up: a list is unhashable, and its TypeError would end the batch.
        if (
            given is None
            or used is None
            or not isinstance(route, str)
            or route not in what_if.ROUTES
        ):
            raise ProtocolError("a what-if plan without its tiles or their route")
        return cls(reason, tuple(given), tuple(used), route)


@dataclasses.dataclass(frozen=True)
class WhatIfTiming:
    """One other configuration of the what-if: one of benchmarks.what_if.CANDIDATES, its
    status, and for a timed one the kernel's and torch.mm's [median, p20, p80] ms."""

    KIND = "what_if"
    config: tuple  # (block_m, block_n, block_k, num_warps, num_stages)
    status: str
    note: str = ""
    kernel: tuple = None
    torch: tuple = None

    @classmethod
    def of(cls, config, status, note="", kernel=None, torch=None):
        return cls(
            (*config.blocks, config.num_warps, config.num_stages), status, note, kernel, torch
        )

    def to_fields(self):
        return {
            "config": list(self.config),
            "status": self.status,
            "note": text(self.note, 300),
            "kernel": self.kernel and list(self.kernel),
            "torch": self.torch and list(self.torch),
        }

    @classmethod
    def from_fields(cls, fields):
        from benchmarks import what_if

        config = fields.get("config")
        if not (isinstance(config, list) and tuple(config) in what_if.CANDIDATES):
            raise ProtocolError(f"a what-if configuration {config!r} that is not a candidate")
        config = what_if.CANDIDATES[what_if.CANDIDATES.index(tuple(config))]  # ints, as listed
        status = fields.get("status")
        if status not in what_if.STATUSES:
            raise ProtocolError(f"a what-if status {status!r}")
        kernel, torch_mm = timing(fields.get("kernel")), timing(fields.get("torch"))
        if status == what_if.TIMED and (kernel is None or torch_mm is None):
            status, kernel, torch_mm = what_if.TIMING_FAILED, None, None
        if status != what_if.TIMED:
            kernel = torch_mm = None
        note = " ".join(text(fields.get("note") or "", 300).split())  # one line of a list
        return cls(config, status, note, kernel, torch_mm)


def send_record(stream, record, payload=b""):
    """Send one of the records above as its message."""
    send(stream, record.KIND, payload, **record.to_fields())


def send(stream, kind, payload=b"", **fields):
    header = json.dumps({"kind": kind, "payload": len(payload), **fields}).encode("utf-8")
    if len(header) > MAX_HEADER:
        raise ProtocolError(f"a {kind} header of {len(header)} bytes is over {MAX_HEADER}")
    stream.write(_LENGTH.pack(len(header)) + header)
    if payload:
        stream.write(payload)
    stream.flush()


def _read_exactly(stream, count):
    chunks, left = [], count
    while left:
        chunk = stream.read(min(left, 1 << 20))
        if not chunk:
            raise EOFError(f"the stream ended {left} bytes early")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def receive(stream, accept):
    """The next message, or None at a clean end of stream.

    ``accept(kind, fields)`` returns how many payload bytes that message may
    carry (it raises ProtocolError for a message that is not expected); the
    payload is read only once its size is allowed.
    """
    start = stream.read(_LENGTH.size)
    if not start:
        return None
    try:
        if len(start) < _LENGTH.size:
            start += _read_exactly(stream, _LENGTH.size - len(start))
        (length,) = _LENGTH.unpack(start)
        if length > MAX_HEADER:
            raise ProtocolError(f"a header of {length} bytes is over the {MAX_HEADER}-byte limit")
        header = json.loads(_read_exactly(stream, length).decode("utf-8"))
    except (EOFError, ValueError, UnicodeDecodeError, RecursionError) as error:
        # RecursionError: a header of nested lists, which would end the reader's thread
        raise ProtocolError(f"a malformed message: {error}") from None
    if (
        not isinstance(header, dict)
        or not isinstance(header.get("kind"), str)
        or not isinstance(header.get("payload"), int)
    ):
        raise ProtocolError("a message without a kind or a payload size")
    if _too_deep(header):
        raise ProtocolError(f"a header nested more than {MAX_DEPTH} deep")
    kind, size = header.pop("kind"), header.pop("payload")
    allowed = accept(kind, header)
    if size not in (0, allowed):
        raise ProtocolError(f"a {kind} message carries {size} bytes where {allowed} were expected")
    try:
        payload = _read_exactly(stream, size) if size else b""
    except EOFError as error:
        raise ProtocolError(str(error)) from None
    return Message(kind, header, payload)


def _too_deep(value):
    """Whether ``value`` holds lists or dicts more than MAX_DEPTH deep (without recursion)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children = (
            item.values() if isinstance(item, dict) else item if isinstance(item, list) else ()
        )
        if children and depth > MAX_DEPTH:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


def text(value, limit=MAX_TEXT):
    """A worker's text as the parent keeps it: a bounded str, control characters escaped."""
    value = value if isinstance(value, str) else repr(value)
    if len(value) > limit:
        value = value[: limit // 2] + "\n[...]\n" + value[-limit // 2 :]
    return "".join(
        character
        if character in "\n\t" or character.isprintable()
        else character.encode("unicode_escape").decode("ascii")
        for character in value
    )


def findings(value):
    """The diagnosis findings a kernel run sent, kept only in their documented shape."""
    kept = []
    for item in value if isinstance(value, list) else []:
        if isinstance(item, dict) and isinstance(item.get("mistake"), str):
            kept.append(
                {
                    "mistake": text(item["mistake"], 64),
                    "message": text(item.get("message", ""), 2000),
                }
            )
    return kept[:20]


def names(value):
    """A list of Python names as a tuple, kept only whole: else () (up to 20, each of 100
    characters at most)."""
    if (
        isinstance(value, list)
        and len(value) <= 20
        and all(
            isinstance(item, str) and item.isidentifier() and len(item) <= 100 for item in value
        )
    ):
        return tuple(value)
    return ()


MIN_MS = 1e-3  # no launch and its events take less than a microsecond


def timing(value):
    """A [median, p20, p80] in milliseconds, kept only when it is three ordered finite
    numbers from MIN_MS (as a tuple), else None: a median of 1e-300 ms made the rate
    infinite, and the speed message, the feedback and the card raised in the parent."""
    if not (
        isinstance(value, list)
        and len(value) == 3
        and all(isinstance(item, (int, float)) and not isinstance(item, bool) for item in value)
    ):
        return None
    try:
        median, p20, p80 = (float(item) for item in value)
    except OverflowError:  # an int too large for a float
        return None
    if not (MIN_MS <= p20 <= median <= p80 < 1e6):  # also false for NaN
        return None
    return (median, p20, p80)


def small_int(value, limit=1 << 16):
    """A positive int up to ``limit`` as sent, else "unknown"."""
    return value if whole(value, 1, limit) else "unknown"


def tiles(value):
    """(BM, BN, BK) as a list of three positive ints, else None."""
    if (
        isinstance(value, (list, tuple))
        and len(value) == 3
        and all(whole(size, 1, 1 << 16) for size in value)
    ):
        return list(value)
    return None
