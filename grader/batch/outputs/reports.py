"""Write what a batch produced: per-student files, the gradebook, the summary, the environment.

Everything is written by the parent process, atomically (a temporary file in
the same folder, then ``os.replace``), so an interrupted batch never leaves a
half-written file, and a stored ``record.json`` always describes a finished grade.

Per student, in ``OUT/<folder>/`` (``folder`` is a safe name for the student id,
see grader.batch.grade.intake.safe_folder_name and ``OUT/students.csv``):

* ``record.json``: everything the grade was computed from, and its resume key;
* ``results.json``: the Gradescope autograder results shape;
* ``feedback.md``: status, score, each case, the likely mistakes, in English and Chinese;
* ``stdout.log`` and ``stderr.log``: the submission's output, truncated;
* on a GPU, for a timed submission (grader.batch.timing.speed): ``speed.csv``, the grader's
  measurement in the benchmark's CSV columns, and ``card.png``, the benchmark's
  report card drawn from it.

Beside the gradebook, a batch that timed anyone writes ``leaderboard.csv`` and
``leaderboard.png`` (grader.batch.outputs.leaderboard).

Hidden cases are named ``hidden_<i> (hidden)`` in everything a student sees,
with a pass/fail line and no shape, sizes or element positions.
"""

import hashlib
import hmac
import json
import os
import pathlib
import shutil
import tempfile

from grader.batch.outputs import spreadsheet
from grader.batch.status import Status

LOG_LIMIT = 64 * 1024


def atomic_write(path, data):
    """Write ``data`` (str or bytes) to ``path`` through a temporary file and os.replace."""
    path = pathlib.Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(data.encode("utf-8") if isinstance(data, str) else data)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temporary, path)
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise


def _json(value):
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=False) + "\n"


def _public_message(entry):
    status = entry["status"]
    if entry["visibility"] == "public":
        if status == "flagged" and not entry.get("message"):
            return "flagged by the anti-cheat check (score 0): see the flags in your feedback"
        return entry.get("message", "")
    if status == "passed":
        return "passed"
    if status == "not_run":
        return entry.get("message", "not run")
    if status == "flagged":
        return "flagged by the anti-cheat check (score 0)"
    if status == "error":
        return "failed: the kernel raised an error on this hidden case"
    return "failed: the output does not match the reference on this hidden case"


HIDDEN_VISIBILITY = "after_due_date"  # Gradescope shows hidden cases' results after the deadline


def public_view(record):
    """The record as a student may see it before the hidden cases are shown: the public
    cases only, their points, and a status and message that say nothing of the hidden
    ones (for Gradescope's always-visible output while hidden tests are not)."""
    public = [entry for entry in record["cases"] if entry["visibility"] == "public"]
    view = {**record, "cases": public, "score": sum(entry["points"] for entry in public),
            "max_score": sum(entry["max_points"] for entry in public)}
    if record["status"] in ("passed", "failed"):
        failing = sum(entry["status"] != "passed" for entry in public)
        view["status"] = "failed" if failing else "passed"
        view["message"] = f"{failing} of {len(public)} public cases failed" if failing else ""
    return view


def results_json(record, hidden_visibility=HIDDEN_VISIBILITY, output=None, total=None):
    """The record in Gradescope's autograder results format (``specs.md`` of
    gradescope/autograder_samples): one test per case, numbered, tagged public or
    hidden, the hidden ones with ``hidden_visibility``; ``output`` (Markdown, the
    feedback) for the whole submission; the maximum in ``extra_data``, since the
    spec has no top-level ``max_score``."""
    tests = []
    for number, entry in enumerate(record["cases"], start=1):
        public = entry["visibility"] == "public"
        tests.append({
            "name": entry["id"] if public else entry["name"],
            "number": str(number),
            "score": entry["points"],
            "max_score": entry["max_points"],
            "status": "passed" if entry["status"] == "passed" else "failed",
            "output": _public_message(entry),
            "tags": [entry["visibility"]],
            "visibility": "visible" if public else hidden_visibility,
        })
    case_points = sum(entry["max_points"] for entry in record["cases"])
    points = (record.get("speed") or {}).get("points")
    if record["max_score"] > case_points:
        tests.append({"name": "speed points", "number": str(len(tests) + 1),
                      "score": points or 0, "max_score": record["max_score"] - case_points,
                      "status": "passed" if points else "failed",
                      "output": (record.get("speed") or {}).get("message", ""),
                      "tags": ["speed"], "visibility": "visible"})
    if record.get("late_deduction"):
        tests.append({"name": "late penalty", "number": str(len(tests) + 1),
                      "score": -record["late_deduction"], "max_score": 0, "status": "failed",
                      "output": "points deducted by the course's late policy",
                      "tags": ["late"], "visibility": "visible"})
    summary = f"status: {record['status']}"
    if record.get("message"):
        summary += f"\n{record['message']}"
    results = {"execution_time": int(round(record.get("wall_time_s") or 0)),
               "output": output or summary, "output_format": "md" if output else "text",
               "visibility": "visible", "stdout_visibility": "hidden",
               "extra_data": {"status": record["status"], "max_score": record["max_score"]},
               "tests": tests}
    show_total = hidden_visibility == "visible" if total is None else total
    if show_total:
        # A top-level score shows the total, hidden cases included, at once; without it
        # Gradescope adds up the tests, each shown when its visibility allows. The batch's
        # own results.json keeps it: its feedback.md shows every case anyway.
        results = {"score": record["score"], **results}
    from grader.batch.timing import speed

    row = speed.headline(record)
    if row is not None:
        results["leaderboard"] = [
            {"name": f"vs torch.mm at {row['size']}", "value": round(row["ratio_vs_torch_mm"], 4),
             "order": "desc"},
            {"name": f"TFLOPS at {row['size']}", "value": round(row["tflops"], 2),
             "order": "desc"}]
    return results


def speed_markdown(record):
    """The feedback's speed section: one line when nothing was timed, else a table."""
    entry = record.get("speed")
    if not entry:
        return []
    lines = ["", "## Speed / 速度", "", f"- {entry['message']}", f"- {entry.get('message_zh', '')}"]
    rows = entry.get("rows") or []
    if rows:
        tiles = entry.get("tiles")
        lines += ["", "Timed by the grader: its own launch of your kernel into a preallocated "
                  "output, in alternating rounds with torch.mm on the same operands (L2 flushed, "
                  "medians). / 由评测程序计时：评测程序自行启动你的 kernel（输出预先分配），与 "
                  "torch.mm 在相同输入上交替计时（清空 L2，取中位数）。", "",
                  f"Tiles / 分块: {'x'.join(map(str, tiles)) if tiles else 'unknown'}, "
                  f"{entry.get('num_warps')} warps, {entry.get('num_stages')} stages", "",
                  "| size | yours (TFLOPS) | torch.mm (TFLOPS) | vs torch.mm | roofline | spread |",
                  "| --- | --- | --- | --- | --- | --- |"]
        from benchmarks import report

        for row in rows:
            if row["verdict"] != "PASS":
                lines.append(f"| {row['size']} | FAIL: {row['note']} | | | | |")
                continue
            roofline = row["roofline_fraction"]
            lines.append(f"| {row['size']} | {row['tflops']:.1f} | {row['torch_mm_tflops']:.1f} "
                         f"| {row['ratio_vs_torch_mm']:.2f}x | "
                         f"{'' if roofline in (None, '') else f'{roofline:.0%}'} | "
                         f"±{report.spread(row):.1%} |")
    if entry.get("points") is not None:
        lines += ["", f"Speed points / 速度加分: {entry['points']}"]
    return lines


def hints_for(record, cases_list):
    """The diagnosis hints (grader.core.diagnosis.explain) for a record; pure."""
    try:
        from grader.core import diagnosis
    except ImportError:
        return []
    verdicts = [{"case_id": entry["id"], "passed": bool(entry.get("passed")),
                 "mistake": entry.get("mistake", ""), "message": entry.get("message", "")}
                for entry in record["cases"] if entry["status"] not in ("not_run",)]
    if record["status"] == "not_implemented":
        verdicts = [{"case_id": case.id, "passed": False, "mistake": "not_implemented",
                     "message": record["message"]} for case in cases_list]
    tiles = tuple(record["tiles"]) if record.get("tiles") else None
    try:
        return diagnosis.explain(record.get("findings") or [], verdicts, cases_list, tiles=tiles)
    except Exception:  # noqa: BLE001 - hints are a bonus, never a reason to fail a batch
        return []


def flags(record):
    """Every flag of a record: the grading's own, then the hand-in check's
    (grader.batch.timing.handin)."""
    return list(record.get("flags") or []) + list((record.get("handin") or {}).get("flags") or [])


def build_markdown(record):
    """What the kernel uses on the course's GPU (grader.core.gpu_compile), checked without one."""
    from grader.core import gpu_compile

    build = gpu_compile.Build.from_fields(record.get("gpu_build"))
    if build is None:
        return []
    return ["", "## GPU build / GPU 编译", "", f"- {gpu_compile.summary(build)}",
            f"- {gpu_compile.summary_zh(build)}"]


def feedback_markdown(record, hints):
    status = Status(record["status"])
    en, zh = status.en, status.zh
    lines = [
        f"# ntgemm feedback: {record['student']}",
        "",
        f"**Score / 得分: {record['score']} / {record['max_score']}**  ",
        f"**Status / 状态: `{record['status']}`**",
        "",
        f"- {en}",
        f"- {zh}",
    ]
    if record.get("message"):
        lines += ["", "```text", record["message"].strip(), "```"]
    if record.get("late_deduction"):
        lines += ["", f"- Late: {record['late_deduction']} points deducted by the course's late "
                  "policy. / 迟交：按课程的迟交规定扣除 "
                  f"{record['late_deduction']} 分。"]
    if flags(record) and record["status"] == "flagged":
        lines += ["", "## Anti-cheat evidence / 违规证据", ""]
        lines += [f"- {flag}" for flag in flags(record)]
    elif flags(record):
        lines += ["", "## For review, grade unchanged / 待复核（成绩不变）", "",
                  "These do not change your score; your instructor will look at them. / "
                  "以下标记不影响你的得分，老师会人工复核。", ""]
        lines += [f"- {flag}" for flag in flags(record)]
    if hints:
        lines += ["", "## Likely mistakes / 可能的错误", ""]
        for hint in hints:
            lines += [f"### {hint['title']}", "", hint["en"], "", hint["zh"], ""]
            for evidence in hint.get("evidence") or []:
                lines.append(f"- evidence / 依据: {evidence}")
            lines.append("")
    lines += build_markdown(record)
    lines += speed_markdown(record)
    lines += ["", "## Cases / 测试用例", "", "| case | points | result |", "| --- | --- | --- |"]
    details = []
    for entry in record["cases"]:
        public = entry["visibility"] == "public"
        name = entry["id"] if public else entry["name"]
        lines.append(f"| {name} | {entry['points']}/{entry['max_points']} | {entry['status']} |")
        if public and entry["status"] not in ("passed", "not_run") and entry.get("message"):
            details += [f"### {name}", "", "```text", entry["message"].strip()[:3000], "```", ""]
        elif not public and entry["status"] not in ("passed",):
            details += [f"### {name}", "", _public_message(entry), ""]
    if details:
        lines += ["", "## Details / 详情", ""] + details
    lines += ["", "Logs: stdout.log and stderr.log next to this file (truncated). / "
              "输出日志见同目录的 stdout.log 与 stderr.log（已截断）。", ""]
    return "\n".join(lines)


def _truncate(text):
    data = text.encode("utf-8", errors="replace")
    if len(data) <= LOG_LIMIT:
        return text
    half = LOG_LIMIT // 2
    return (data[:half].decode("utf-8", "ignore") + f"\n[... {len(data) - LOG_LIMIT} bytes cut ...]\n"
            + data[-half:].decode("utf-8", "ignore"))


def write_student(out_dir, record, cases_list):
    """All of one student's files; record.json last, so it marks a finished grade."""
    folder = pathlib.Path(out_dir) / record["folder"]
    folder.mkdir(parents=True, exist_ok=True)
    hints = hints_for(record, cases_list)
    record["hints"] = hints
    feedback = feedback_markdown(record, hints)
    atomic_write(folder / "results.json", _json(results_json(record, output=feedback, total=True)))
    atomic_write(folder / "feedback.md", feedback)
    atomic_write(folder / "stdout.log", _truncate(record.get("stdout", "")))
    atomic_write(folder / "stderr.log", _truncate(record.get("stderr", "")))
    if (record.get("speed") or {}).get("rows"):
        write_speed(folder, record)
    store_record(out_dir, record)


def write_speed(folder, record):
    """speed.csv (the benchmark's columns) and card.png (the benchmark's card) of a timed record."""
    from benchmarks import card
    from grader.batch.timing import speed

    table = speed.frame(record)
    atomic_write(folder / "speed.csv", spreadsheet.csv_text(table))
    with tempfile.TemporaryDirectory(dir=folder) as scratch:
        drawn = card.render(table, pathlib.Path(scratch) / "card.png",
                            title="NineToothed GEMM speed, measured by the grader",
                            ours=speed.CARD_LABEL)
        atomic_write(folder / "card.png", drawn.read_bytes())


def store_record(out_dir, record):
    """Sign the record with the output folder's key and write it: resume trusts only that."""
    record["signature"] = _signature(record, signing_key(out_dir))
    atomic_write(pathlib.Path(out_dir) / record["folder"] / "record.json", _json(record))


KEY_FILE = ".grader-key"


def signing_key(out_dir):
    """The output folder's secret for signing records; made on first use, readable by the
    grader's user alone. Workers never see the output folder, so never this key."""
    from grader.batch.outputs import private_file

    return private_file.made_once(pathlib.Path(out_dir) / KEY_FILE, lambda: os.urandom(32))


def _signature(record, key):
    body = json.dumps({k: v for k, v in record.items() if k != "signature"}, sort_keys=True,
                      ensure_ascii=True).encode("ascii")
    return hmac.new(key, body, hashlib.sha256).hexdigest()


def read_record(out_dir, folder):
    """A stored record whose signature holds, else None (it is graded again)."""
    path = pathlib.Path(out_dir) / folder / "record.json"
    try:
        if path.is_symlink() or path.stat().st_size > 16 << 20:
            return None
        record = json.loads(path.read_text(encoding="utf-8"))
        key = (pathlib.Path(out_dir) / KEY_FILE).read_bytes()
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict) or not hmac.compare_digest(
            str(record.get("signature", "")), _signature(record, key)):
        return None
    return record


def gradebook_frame(records, cases_list):
    import pandas

    speed_sizes = timed_sizes(records)
    rows = []
    for record in sorted(records, key=lambda r: r["student"]):
        points = {entry["id"]: entry["points"] for entry in record["cases"]}
        row = {"student": record["student"], "score": record["score"],
               "max_score": record["max_score"], "status": record["status"],
               "flags": " | ".join(flags(record)),
               "lms_id": record.get("lms_id", ""), "late": bool(record.get("late"))}
        for case in cases_list:
            row[case.id] = points.get(case.id, 0)
        speed_columns = _speed_columns(record, speed_sizes)
        row.update(speed_columns)
        row["wall_time_s"] = record.get("wall_time_s", 0.0)
        row["isolation"] = record.get("isolation", "")
        rows.append(row)
    columns = ["student", "score", "max_score", "status", "flags", "lms_id", "late"] + \
        [case.id for case in cases_list] + list(_speed_columns(None, speed_sizes)) + \
        ["wall_time_s", "isolation"]
    return pandas.DataFrame(rows, columns=columns)


def timed_sizes(records):
    """The size labels any record was timed at, in order; empty when nobody was timed."""
    sizes = []
    for record in records:
        for row in (record.get("speed") or {}).get("rows") or []:
            if row["size"] not in sizes:
                sizes.append(row["size"])
    return sizes


def _speed_columns(record, sizes):
    """The gradebook's speed columns of one record (all blank for None); none when
    the batch measured no speed."""
    if not sizes:
        return {}
    from benchmarks import report

    entry = (record or {}).get("speed") or {}
    rows = {row["size"]: row for row in entry.get("rows") or [] if row["verdict"] == "PASS"}
    tiles = entry.get("tiles")
    columns = {"speed": entry.get("status", ""),
               "tiles": "x".join(map(str, tiles)) if tiles and rows else "",
               "speed_points": "" if entry.get("points") is None else entry["points"]}
    for size in sizes:
        row = rows.get(size)
        columns[f"ratio_{size}"] = round(row["ratio_vs_torch_mm"], 4) if row else ""
        columns[f"tflops_{size}"] = round(row["tflops"], 2) if row else ""
        columns[f"roofline_{size}"] = ("" if not row or row["roofline_fraction"] in (None, "")
                                       else round(row["roofline_fraction"], 4))
        columns[f"spread_{size}"] = round(report.spread(row), 4) if row else ""
    return columns


def summary_frame(records, cases_list):
    import pandas

    rows = []
    for case in cases_list:
        ran = passed = 0
        for record in records:
            entry = next((e for e in record["cases"] if e["id"] == case.id), None)
            if entry and entry["status"] != "not_run":
                ran += 1
            if entry and entry["status"] == "passed":
                passed += 1
        rows.append({"case": case.id, "visibility": case.visibility, "points": case.points,
                     "targets": case.targets, "students": len(records), "ran": ran,
                     "passed": passed,
                     "pass_rate": round(passed / len(records), 4) if records else 0.0})
    return pandas.DataFrame(rows)


def write_class(out_dir, records, cases_list):
    """gradebook.csv, summary.csv, summary.png and students.csv from every record of the batch;
    every CSV through grader.batch.outputs.spreadsheet, so no id in it is taken for a formula."""
    import pandas

    out_dir = pathlib.Path(out_dir)
    gradebook = gradebook_frame(records, cases_list)
    summary = summary_frame(records, cases_list)
    atomic_write(out_dir / "gradebook.csv", spreadsheet.csv_text(gradebook, bom=True))
    atomic_write(out_dir / "summary.csv", spreadsheet.csv_text(summary))
    if records:
        from grader.batch.outputs import class_chart

        atomic_write(out_dir / "summary.png", class_chart.render(summary, gradebook))
    from grader.batch.outputs import leaderboard

    board = leaderboard.frame(records)
    if len(board):
        atomic_write(out_dir / "leaderboard.csv", spreadsheet.csv_text(board, bom=True))
        atomic_write(out_dir / "leaderboard.png", leaderboard.render(board))
    mapping = pandas.DataFrame(
        [{"student": r["student"], "folder": r["folder"], "origin": r.get("origin", ""),
          "status": r["status"]} for r in sorted(records, key=lambda r: r["student"])],
        columns=["student", "folder", "origin", "status"])
    atomic_write(out_dir / "students.csv", spreadsheet.csv_text(mapping))


def write_environment(out_dir, info):
    atomic_write(pathlib.Path(out_dir) / "environment.json", _json(info))


def copy_student_folder(source, target):
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(source, target)
