"""Intake on hostile submissions folders: FIFOs, huge sparse files, names in any
encoding, control characters in ids, and folder_digest. No kernels: fast."""

import json
import os
import threading

import pytest

from grader.batch import names
from grader.batch.grade import intake
from grader.batch.grade.folder_digest import folder_digest

needs_fifo = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs os.mkfifo")


def within(seconds, function, *args):
    """``function(*args)`` in a thread: a test that would hang fails instead."""
    outcome = {}

    def target():
        try:
            outcome["value"] = function(*args)
        except BaseException as error:  # noqa: BLE001 - handed back to the test
            outcome["error"] = error

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(timeout=seconds)
    if thread.is_alive():
        pytest.fail(f"{function.__name__} still running after {seconds} s (blocked?)")
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def by_student(root):
    return {s.student: s for s in within(10, intake.discover, root)}


@needs_fifo
def test_a_fifo_named_like_a_submission_at_top_level_does_not_block(tmp_path):
    os.mkfifo(tmp_path / "mallory.py")
    os.mkfifo(tmp_path / "trudy.zip")
    (tmp_path / "ada.py").write_text("A = 1\n")
    found = by_student(tmp_path)
    assert sorted(found) == ["ada", "mallory", "trudy"]
    assert found["ada"].data == b"A = 1\n" and not found["ada"].problem
    for student in ("mallory", "trudy"):
        assert "not a regular file" in found[student].problem and not found[student].data


@needs_fifo
def test_fifos_inside_a_student_folder_do_not_block(tmp_path):
    (tmp_path / "mallory").mkdir()
    os.mkfifo(tmp_path / "mallory" / "ninetoothed_gemm.py")
    (tmp_path / "eve" / "junk").mkdir(parents=True)
    os.mkfifo(tmp_path / "eve" / "junk.fifo")
    os.mkfifo(tmp_path / "eve" / "junk" / "more.py")
    (tmp_path / "eve" / "ninetoothed_gemm.py").write_text("E = 1\n")
    found = by_student(tmp_path)
    assert "not a regular file" in found["mallory"].problem and not found["mallory"].data
    assert found["eve"].data == b"E = 1\n" and not found["eve"].problem


def test_a_huge_sparse_file_is_rejected_by_size_unread(tmp_path, monkeypatch):
    for name in ("mallory.py", "trudy.zip"):
        with open(tmp_path / name, "wb"):
            pass
        os.truncate(tmp_path / name, 2 << 30)
    (tmp_path / "eve").mkdir()
    with open(tmp_path / "eve" / "ninetoothed_gemm.py", "wb"):
        pass
    os.truncate(tmp_path / "eve" / "ninetoothed_gemm.py", 2 << 30)
    reads = []
    real_read = os.read
    monkeypatch.setattr(os, "read", lambda fd, n: reads.append(n) or real_read(fd, n))
    found = by_student(tmp_path)
    assert sorted(found) == ["eve", "mallory", "trudy"]
    for submission in found.values():
        assert str(2 << 30) in submission.problem and not submission.data
    assert sum(reads) <= 3 * (intake.MAX_FILE_BYTES + 1)


def test_a_folder_named_in_gbk_bytes_is_read_with_a_readable_id(tmp_path):
    raw = "李华".encode("gbk")
    folder = os.path.join(os.fsencode(tmp_path), raw)
    os.mkdir(folder)
    with open(os.path.join(folder, b"ninetoothed_gemm.py"), "wb") as stream:
        stream.write(b"L = 1\n")
    with open(os.path.join(os.fsencode(tmp_path), b"Zo\xeb.py"), "wb") as stream:
        stream.write(b"Z = 1\n")
    found = by_student(tmp_path)
    assert sorted(found) == ["Zo\\xeb", "李华"]
    assert found["李华"].data == b"L = 1\n" and not found["李华"].problem
    assert found["Zo\\xeb"].data == b"Z = 1\n"
    for submission in found.values():
        submission.student.encode("utf-8")
        submission.origin.encode("utf-8")
        assert submission.student.isprintable()
    json.dumps([s.origin for s in found.values()], ensure_ascii=False).encode("utf-8")


def test_control_characters_in_ids_are_escaped_at_intake(tmp_path):
    (tmp_path / "\x1b[31mada\x1b[0m").mkdir()
    (tmp_path / "\x1b[31mada\x1b[0m" / "ninetoothed_gemm.py").write_text("A = 1\n")
    (tmp_path / "eli\r\n\t\u202egnp.py").write_text("E = 1\n")
    (tmp_path / "bob\x9b2J_1_ninetoothed_gemm.py").write_text("B = 1\n")
    found = by_student(tmp_path)
    assert sorted(found) == ["\\x1b[31mada\\x1b[0m", "bob\\x9b2J", "eli\\x0d\\x0a\\x09\\u202egnp"]
    for submission in found.values():
        assert submission.student.isprintable() and submission.origin.isprintable()
        assert "\x1b" not in submission.origin
    assert found["\\x1b[31mada\\x1b[0m"].data == b"A = 1\n"


def test_printable_keeps_fine_text_and_escapes_the_rest():
    for fine in ("李华", "ada", "eli", "Zoë", "a b", "张伟_2"):
        assert names.printable(fine) == fine
    assert names.printable("\x1b[31m") == "\\x1b[31m"
    assert names.printable("a\u2066b\u2069\x7f") == "a\\u2066b\\u2069\\x7f"
    messy = "\x00\x85\u2028\ud800\u202a"
    assert names.printable(messy).isprintable() and names.printable(messy).isascii()
    assert names.printable(names.printable(messy)) == names.printable(messy)


@needs_fifo
def test_folder_digest_skips_a_fifo_keeps_links_and_odd_names(tmp_path):
    root = os.fsencode(tmp_path)
    (tmp_path / "ada").mkdir()
    (tmp_path / "ada" / "ninetoothed_gemm.py").write_text("A = 1\n")
    os.mkfifo(tmp_path / "ada" / "pipe")
    os.symlink("/etc/passwd", tmp_path / "ada" / "link")
    os.symlink(".", tmp_path / "loop")
    with open(os.path.join(root, "李华".encode("gbk") + b".py"), "wb") as stream:
        stream.write(b"L = 1\n")
    with open(tmp_path / "sparse.bin", "wb"):
        pass
    os.truncate(tmp_path / "sparse.bin", 2 << 30)
    skipped = []
    first = within(30, folder_digest, tmp_path, skipped)
    assert len(first) == 64 and within(30, folder_digest, tmp_path) == first
    assert skipped == [("ada/pipe", "a FIFO (named pipe)")]
    os.unlink(tmp_path / "ada" / "link")
    os.symlink("/etc/hosts", tmp_path / "ada" / "link")
    assert within(30, folder_digest, tmp_path) != first


def test_folder_digest_changes_when_one_byte_changes(tmp_path):
    (tmp_path / "ada").mkdir()
    path = tmp_path / "ada" / "ninetoothed_gemm.py"
    path.write_bytes(b"x" * (3 << 20))  # more than one chunk
    before = folder_digest(tmp_path)
    with open(path, "r+b") as stream:
        stream.seek((3 << 20) - 7)
        stream.write(b"y")
    after = folder_digest(tmp_path)
    assert after != before
    with open(path, "r+b") as stream:
        stream.seek((3 << 20) - 7)
        stream.write(b"x")
    assert folder_digest(tmp_path) == before
    (tmp_path / "ada" / "new").write_bytes(b"")
    assert folder_digest(tmp_path) != before
