"""Intake over download trees a program makes: whatever the names and layouts, every entry
ends in one student's row or in the skipped list, the file graded is the one the written
rules pick (grader.batch.grade.intake's docstring), and no file is read twice.

Each generated student is a model: the entries it was written as, which of them holds a
file to grade, that file's bytes (each unique) and its modification time. The test works
out from the model alone which bytes the rules grade, then compares with ``discover``.
Intake only: no kernel is built or run.
"""

import collections
import dataclasses
import io
import os
import tempfile
import unicodedata
import zipfile

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from grader.batch.grade import intake
from grader.batch.names import printable

# Letters of several scripts, some with an NFD form of their own (é, ñ, ü, Å), emoji, and a
# space: no "_" (it would read as an LMS name), ".", "/" or ":".
LETTERS = "abcXYZ019 -éñüÅ李华王芳سلامשלום😀🚀"
TIMES = (1_700_000_000, 1_700_000_100, 1_700_000_200)  # few, so that ties happen


@dataclasses.dataclass
class Unit:
    """One of a student's candidates for grading: the top-level entries it is made of, the
    bytes it should be graded from (None: nothing to grade), the path intake reports for
    it, and the time of the file read."""

    entries: set
    data: bytes | None
    origin: str = ""
    mtime: float = 0.0


@dataclasses.dataclass
class Student:
    units: list = dataclasses.field(default_factory=list)

    @property
    def expected(self):
        """The bytes the rules grade: a unit with a file first, then the latest, then by path."""
        best = min(self.units, key=lambda u: (u.data is None, -u.mtime, u.origin))
        return best.data

    @property
    def entries(self):
        return set().union(*(unit.entries for unit in self.units))


class Tree:
    """Writes one download into ``root`` and keeps the model of who is whose."""

    def __init__(self, root, draw):
        self.root, self.draw, self.serial = root, draw, 0
        self.students = []

    def marker(self):
        self.serial += 1
        return f"x = {self.serial}\n".encode()

    def touch(self, path):
        when = self.draw(st.sampled_from(TIMES))
        os.utime(path, (when, when))
        return when

    def write(self, relative, data):
        path = os.path.join(self.root, relative)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as handle:
            handle.write(data)
        return path

    def archive(self, kind):
        """(zip bytes, the bytes it should be graded from or None, the member's path)."""
        data = self.marker()
        buffer = io.BytesIO()
        if kind == "corrupt":
            return b"PK\x03\x04 not really a zip", None, ""
        with zipfile.ZipFile(buffer, "w") as archive:
            if kind in ("file", "file_csv"):
                archive.writestr("work/ninetoothed_gemm.py", data)
                if kind == "file_csv":
                    archive.writestr("ntgemm-bench.csv", "m,n,k\n")
                member = "work/ninetoothed_gemm.py"
            elif kind == "other_py":
                archive.writestr("solution.py", data)
                member = "solution.py"
            elif kind == "nested":
                inner, data, member = self.archive("file")
                archive.writestr("inner.zip", inner)
                member = f"inner.zip:{member}"
            elif kind == "symlink_member":
                link = zipfile.ZipInfo("ninetoothed_gemm.py")
                link.external_attr = 0o120777 << 16
                archive.writestr(link, "/etc/passwd")
                data, member = None, ""
            elif kind == "no_py":
                archive.writestr("report.pdf", b"%PDF")
                data, member = None, ""
            else:  # empty
                data, member = None, ""
        return buffer.getvalue(), data, member

    def plain(self, name):
        """A student with no LMS id: a folder, a flat file, an archive, in NFC or NFD."""
        student = Student()
        kinds = self.draw(
            st.lists(st.sampled_from(["folder", "py", "zip"]), min_size=1, max_size=3)
        )
        used = set()
        for kind in kinds:
            form = self.draw(st.sampled_from(["NFC", "NFD"]))
            base = unicodedata.normalize(form, name)
            entry = base + {"folder": "", "py": ".py", "zip": ".zip"}[kind]
            if entry in used:
                continue
            used.add(entry)
            if kind == "py":
                data = self.marker()
                path = self.write(entry, data)
                student.units.append(Unit({entry}, data, entry, self.touch(path)))
            elif kind == "zip":
                blob, data, member = self.archive(
                    self.draw(
                        st.sampled_from(
                            [
                                "file",
                                "file_csv",
                                "nested",
                                "other_py",
                                "empty",
                                "corrupt",
                                "symlink_member",
                                "no_py",
                            ]
                        )
                    )
                )
                path = self.write(entry, blob)
                student.units.append(Unit({entry}, data, f"{entry}:{member}", self.touch(path)))
            else:
                student.units.append(self.folder(entry))
        self.students.append(student)

    def folder(self, entry):
        content = self.draw(
            st.sampled_from(["file", "deep", "other_py", "two_py", "empty", "zip_inside"])
        )
        os.makedirs(os.path.join(self.root, entry))
        self.write(f"{entry}/notes.txt", b"notes")
        if content in ("file", "deep", "other_py"):
            inside = {
                "file": "ninetoothed_gemm.py",
                "deep": "src/ninetoothed_gemm.py",
                "other_py": "solution.py",
            }[content]
            data = self.marker()
            path = self.write(f"{entry}/{inside}", data)
            return Unit({entry}, data, f"{entry}/{inside}", self.touch(path))
        if content == "zip_inside":
            blob, data, member = self.archive("file")
            path = self.write(f"{entry}/handin.zip", blob)
            return Unit({entry}, data, f"{entry}/handin.zip:{member}", self.touch(path))
        if content == "two_py":
            self.write(f"{entry}/a.py", self.marker())
            self.write(f"{entry}/b.py", self.marker())
        return Unit({entry}, None, f"{entry}/")

    def canvas(self, name, uid):
        """A Canvas user's flat files: re-uploads, other names, a CSV, an archive."""
        uploads = self.draw(
            st.lists(
                st.sampled_from(
                    [
                        "ninetoothed_gemm.py",
                        "ninetoothed_gemm-1.py",
                        "ninetoothed_gemm-2.py",
                        "solution.py",
                        "helper.py",
                        "notes.txt",
                        "bench.csv",
                        "ninetoothed_gemm.zip",
                    ]
                ),
                min_size=1,
                max_size=4,
                unique=True,
            )
        )
        late = self.draw(st.booleans())
        entries, files = set(), {}
        for number, upload in enumerate(uploads):
            entry = f"{name}{'_LATE' if late else ''}_{uid}_{900 + number}_{upload}"
            if upload.endswith(".zip"):
                blob, data, _ = self.archive("file_csv")
            else:
                data = blob = self.marker()
            path = self.write(entry, blob)
            entries.add(entry)
            files[upload] = (entry, data, path)
        named = sorted(
            (u for u in uploads if u.startswith("ninetoothed_gemm") and u.endswith(".py")),
            key=lambda u: int(u[:-3].rpartition("-")[2] if "-" in u else 0),
        )
        python = [u for u in uploads if u.endswith(".py")]
        chosen = (
            named[-1]
            if named
            else python[0]
            if len(python) == 1
            else "ninetoothed_gemm.zip"
            if not python and "ninetoothed_gemm.zip" in files
            else None
        )
        if chosen is None:
            self.students.append(Student([Unit(entries, None)]))
            return
        entry, data, path = files[chosen]
        self.students.append(Student([Unit(entries, data, entry, self.touch(path))]))

    def moodle(self, name, pid):
        """A Moodle participant: the file submission folder, the online text folder, or both."""
        student = Student()
        parts = self.draw(
            st.lists(st.sampled_from(["file", "onlinetext"]), min_size=1, max_size=2, unique=True)
        )
        for part in parts:
            entry = f"{name}_{pid}_assignsubmission_{part}_"
            if part == "onlinetext":
                os.makedirs(os.path.join(self.root, entry))
                self.write(f"{entry}/onlinetext.html", b"<p>see my file</p>")
                student.units.append(Unit({entry}, None, f"{entry}/"))
            else:
                student.units.append(self.folder(entry))
        self.students.append(student)

    def noise(self):
        """What intake must skip, each entry listed: hidden files, an index, a link."""
        self.write(".DS_Store", b"")
        self.write("__MACOSX/._x", b"")
        self.write("roster.csv", b"who\n")
        os.symlink("/etc/passwd", os.path.join(self.root, "linked.py"))
        return {".DS_Store", "__MACOSX", "roster.csv", "linked.py"}


# Short names, and long ones up to what a file system takes with Moodle's suffix after them.
names = (
    st.one_of(st.text(LETTERS, min_size=1, max_size=12), st.text(LETTERS, min_size=40, max_size=60))
    .map(str.strip)
    .filter(
        lambda name: (
            name
            and not name.startswith("-")
            and len(unicodedata.normalize("NFD", name).encode()) <= 180
        )
    )
)


@st.composite
def downloads(draw, root):
    """A download tree written into ``root``: (its model, the entries it must skip)."""
    tree = Tree(root, draw)
    plain = draw(
        st.lists(names, min_size=0, max_size=5, unique_by=lambda n: unicodedata.normalize("NFC", n))
    )
    for name in plain:
        tree.plain(name)
    canvas_names = draw(
        st.lists(
            st.sampled_from(
                ["lihua", "ada", "bob"] + [n.replace(" ", "") for n in plain if n.replace(" ", "")]
            ),
            max_size=4,
        )
    )
    for uid, name in enumerate(canvas_names, start=4700):  # homonyms: a uid each
        tree.canvas(name, uid)
    moodle_names = draw(st.lists(names, max_size=3))
    for pid, name in enumerate(moodle_names, start=123400):
        tree.moodle(name, pid)
    return tree.students, tree.noise()


def top(path):
    """The top-level entry a path intake reports lies in (``x.zip:member`` lies in ``x.zip``)."""
    return path.split("/", 1)[0].split(":", 1)[0]


@pytest.fixture
def reads(monkeypatch):
    """The files intake opens, counted by path, from the moment the test clears the count."""
    counts = collections.Counter()
    for name in ("read_limited", "open_regular"):
        real = getattr(intake, name)

        def counted(path, *args, _real=real):
            counts[os.path.realpath(path)] += 1
            return _real(path, *args)

        monkeypatch.setattr(intake, name, counted)
    return counts


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(data=st.data())
def test_every_generated_download_is_read_whole_by_the_written_rules(data, reads):
    with tempfile.TemporaryDirectory() as root:
        students, noise = data.draw(downloads(root))
        reads.clear()
        skipped = []
        found = intake.discover(root, skipped)

    # No file is read twice.
    assert not [path for path, count in reads.items() if count > 1], reads
    # One row per student id.
    assert len({s.student for s in found}) == len(found)
    # Every top-level entry is in exactly one row or in the skipped list.
    owner = collections.Counter(entry for entry, _ in skipped)
    rows = {}
    for submission in found:
        tops = {top(submission.origin)} | {top(path) for path, _ in submission.seen}
        if (
            submission.handin_origin
            and "/" not in submission.handin_origin
            and submission.handin_origin in {e for s in students for e in s.entries}
        ):
            tops.add(submission.handin_origin)
        owner.update(tops)
        rows.update({entry: submission for entry in tops})
    everything = {printable(e) for s in students for e in s.entries} | noise
    assert set(owner) == everything and max(owner.values()) == 1, owner
    assert {entry for entry, _ in skipped} == noise
    # Each student's entries make one row, graded from the bytes the rules pick.
    for student in students:
        (submission,) = {
            id(rows[printable(e)]): rows[printable(e)] for e in student.entries
        }.values()
        if student.expected is None:
            assert submission.problem and not submission.data
        else:
            assert (submission.data, submission.problem) == (student.expected, "")
