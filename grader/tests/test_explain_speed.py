"""The staff's why-this-speed command on a batch folder and on a CSV, from recorded H200 rows."""

import json
import pathlib

import pandas

from grader.batch.record import Record
from grader.batch.outputs import explain_speed, reports

ROOT = pathlib.Path(__file__).resolve().parents[2]
MIA_CSV = ROOT / "docs" / "demo-speed" / "mia-speed.csv"


def _batch(tmp_path):
    """An OUT_DIR with mia timed (a record from before ``why`` was kept) and ben not timed."""
    rows = json.loads(pandas.read_csv(MIA_CSV, dtype={"size": str}).to_json(orient="records"))
    records = [
        {
            "student": "mia",
            "folder": "mia",
            "status": "passed",
            "speed": {"status": "timed", "rows": rows},
        },
        {
            "student": "ben",
            "folder": "ben",
            "status": "failed",
            "speed": {
                "status": "not_timed",
                "message": "Speed: not timed: only a submission that passes every case is timed.",
            },
        },
    ]
    for record in records:
        (tmp_path / record["folder"]).mkdir()
        reports.store_record(tmp_path, Record.from_json(record))
    (tmp_path / "students.csv").write_text("student,folder\nmia,mia\nben,ben\n", encoding="utf-8")
    return tmp_path


def test_a_batch_folder_prints_each_students_why(tmp_path, capsys):
    out_dir = _batch(tmp_path)
    assert explain_speed.main([str(out_dir)]) == explain_speed.OK
    printed = capsys.readouterr().out
    assert "# mia" in printed and "The limit is feeding tiles into the SMs" in printed
    assert "ragged cliff" in printed  # her 4095 row
    assert "# ben" in printed and "only a submission that passes every case" in printed
    assert explain_speed.main([str(out_dir), "--student", "ben"]) == explain_speed.OK
    assert "# mia" not in capsys.readouterr().out


def test_a_tampered_record_or_a_wrong_path_is_said_not_explained(tmp_path, capsys):
    out_dir = _batch(tmp_path)
    path = out_dir / "mia" / "record.json"
    record = json.loads(path.read_text(encoding="utf-8"))
    record["speed"]["rows"][0]["tflops"] *= 3  # a faster kernel, and the signature not redone
    path.write_text(json.dumps(record), encoding="utf-8")
    assert explain_speed.main([str(out_dir), "--student", "mia"]) == explain_speed.OK
    assert "signature does not hold" in capsys.readouterr().out
    assert explain_speed.main([str(out_dir / "missing")]) == explain_speed.UNUSABLE
    assert (
        explain_speed.main([str(ROOT / "benchmarks" / "baselines" / "explore-round5-tma.csv")])
        == explain_speed.UNUSABLE
    )
    assert "benchmark's columns" in capsys.readouterr().err


def test_a_benchmark_csv_is_explained_as_the_feedback_would(capsys):
    assert explain_speed.main([str(MIA_CSV)]) == explain_speed.OK
    printed = capsys.readouterr().out
    assert printed.startswith("## Why this speed / 为什么是这个速度")
    assert "A is read 64 times and B 32 times" in printed and "A 被读 64 次" in printed


def test_a_hand_in_csv_with_hostile_cells_is_said_not_explained(tmp_path, capsys):
    """The staff run it on students' hand-in CSVs, whose cells may be anything: an empty
    torch.mm rate, an infinite K, a tile of 1e308 or a negative size each crashed it."""
    frame = pandas.read_csv(MIA_CSV, dtype=str)
    for column, cell in (
        ("torch_mm_tflops", ""),
        ("k", "inf"),
        ("block_m", "1e308"),
        ("m", "-1"),
        ("median_ms", "0"),
    ):
        frame[column] = cell
        path = tmp_path / "hand-in.csv"
        frame.to_csv(path, index=False)
        assert explain_speed.main([str(path)]) == explain_speed.OK, column
        assert "No explanation for hand-in.csv" in capsys.readouterr().out
        frame = pandas.read_csv(MIA_CSV, dtype=str)


def test_each_card_is_explained_by_its_own_figures_even_from_an_older_record(tmp_path, capsys):
    """A record of an H100 run whose kept ``why`` was worked out on the H200's readings (as
    every record was before a why named its card) is explained again: the H100's tile feed
    and the best torch.mm of its own run, never the H200's; an H200 run's, the H200's."""
    from benchmarks import why_speed

    runs = {
        "h100": ("reference-autotune-targets-round8-2-h100.csv", "H100 SXM", "H200"),
        "h200": ("reference-autotune-targets.csv", "H200", "H100"),
    }
    for student, (name, _, _) in runs.items():
        rows = json.loads(
            pandas.read_csv(ROOT / "benchmarks" / "baselines" / name, dtype={"size": str}).to_json(
                orient="records"
            )
        )
        older = [
            {
                key: value
                for key, value in why.items()
                if key not in ("card", "feed_recorded_on", "practical_from_run")
            }
            for why in why_speed.explain_rows(rows)
        ]
        (tmp_path / student).mkdir()
        reports.store_record(
            tmp_path,
            Record(
                student=student,
                folder=student,
                status="passed",
                speed={"status": "timed", "rows": rows, "why": older},
            ),
        )
    (tmp_path / "students.csv").write_text(
        "student,folder\nh100,h100\nh200,h200\n", encoding="utf-8"
    )
    for student, (name, card, other) in runs.items():
        assert explain_speed.main([str(tmp_path), "--student", student]) == explain_speed.OK
        printed = capsys.readouterr().out
        best = pandas.read_csv(ROOT / "benchmarks" / "baselines" / name)["torch_mm_tflops"].max()
        assert f"tile feed recorded on the {card} allows" in printed
        assert f"the best torch.mm reached in the same run on this {card}, {best:.0f}" in printed
        said = printed.replace("H200 and H100", "").replace("H200 和 H100", "")  # the rules' check
        assert other not in said
