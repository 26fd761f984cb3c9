"""A file is read as Python reads it (grader.core.loading.source_text): a Windows editor's
byte-order mark or a coding line must not turn a working file into an import_error."""

import pytest

from grader.batch.grade import grading
from grader.core import kernel_source, loading, source_mistakes
from solutions import MODEL_ANSWER

MODEL = MODEL_ANSWER.read_text(encoding="utf-8")
CHINESE = "# 作业：矩阵乘法\n"
GBK = "# -*- coding: gbk -*-\nx = '矩阵'\n"


@pytest.mark.parametrize(
    "data, expected",
    [
        (b"\xef\xbb\xbfx = 1\n", "x = 1\n"),
        (b"x = 1\r\ny = 2\r\n", "x = 1\ny = 2\n"),
        (GBK.encode("gbk"), GBK),
        (b"x = '\xff'\n", "x = '\ufffd'\n"),  # not UTF-8, no coding line: replaced, as before
    ],
)
def test_source_text_reads_as_python_does(data, expected):
    assert loading.source_text(data) == expected


@pytest.mark.parametrize(
    "encoded",
    [
        b"\xef\xbb\xbf" + (CHINESE + MODEL).encode("utf-8"),
        ("# -*- coding: gbk -*-\n" + CHINESE + MODEL).encode("gbk"),
        (CHINESE + MODEL).replace("\n", "\r\n").encode("utf-8"),
    ],
    ids=["utf-8 with BOM", "gbk with a coding line", "CRLF"],
)
def test_a_working_file_saved_by_a_windows_editor_is_graded(encoded, tmp_path):
    source = loading.source_text(encoded)
    assert grading._static_verdict(source) is None  # it was import_error with a BOM
    assert kernel_source.extract(source).ok
    path = tmp_path / "ninetoothed_gemm.py"
    path.write_bytes(encoded)
    module = loading.load_submission(path)  # the pytest grader's and the worker's reading
    assert module.BLOCK_SIZE_M == 64
    assert source_mistakes.inspect_file(path) == []
