"""Every student's feedback as a zip an LMS's bulk upload hands back, one HTML file each.

    python -m grader export OUT_DIR --format canvas-feedback|moodle-feedback --out FILE.zip

Each student's file is feedback.md as one page with its pictures inside
(grader.batch.outputs.feedback_html), named from the LMS download name the student's
entry had (grader.batch.names.download_prefix), as that LMS's upload matches it:

* ``canvas-feedback``: for Canvas's "Re-upload submissions" (SpeedGrader attaches each file
  as a submission comment). Files sit at the top of the zip, named
  ``<name>[_LATE]_<user id>_<attachment id>_ntgemm-feedback.html``: Canvas reads the first
  two parts that are all digits as the user id and the id of a file of that user's
  submission, and ignores a file whose ids do not match one
  (``infer_comment_context_from_filename`` in
  https://github.com/instructure/canvas-lms/blob/master/app/models/assignment.rb). Canvas
  shows the comment's file under the name of the student's own file
  (https://github.com/instructure/canvas-lms/issues/2406).
* ``moodle-feedback``: for Moodle's "Upload multiple feedback files in a zip" (the
  assignment's feedback type "Feedback files"). One folder per participant, named as in
  Moodle's download, ``<full name>_<participant id>_assignsubmission_file_``, holding
  ``ntgemm-feedback.html``: Moodle reads the participant id from the second ``_`` part of
  the folder's name and the plugin from the next two
  (``is_valid_filename_for_import`` in
  https://github.com/moodle/moodle/blob/master/mod/assign/feedback/file/importziplib.php).

The gradebook is checked as for the gradebook exports (grader.batch.outputs.export): ids
another LMS gave are refused. Students without an LMS id are left out, and returned.
"""

import io
import pathlib
import zipfile

from grader.batch.names import download_prefix
from grader.batch.outputs import export, feedback_html, share
from grader.batch.outputs.atomic_file import atomic_write

FORMATS = {"canvas-feedback": "canvas", "moodle-feedback": "moodle"}
FILE_NAME = "ntgemm-feedback.html"


def build(out_dir, kind, target):
    """Write the zip ``target`` for ``kind`` (one of FORMATS); returns the students left out
    (no LMS id)."""
    lms = FORMATS[kind]
    book = export.checked_gradebook(out_dir, lms)
    rows = {row["student"]: row for row in share.student_rows(out_dir)}
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for student, lms_id in zip(book["student"], book["lms_id"]):
            if not lms_id:
                continue
            row = rows[student]
            prefix = download_prefix(row["origin"])
            name = prefix + FILE_NAME if lms == "canvas" else f"{prefix}/{FILE_NAME}"
            archive.writestr(name, feedback_html.page(pathlib.Path(out_dir) / row["folder"]))
    atomic_write(target, buffer.getvalue())
    return export.unmatched(book)
