"""Check a handed-in benchmark CSV against what the grader knows of the same file.

Students hand in the CSV their benchmark run wrote (benchmarks.report's
columns) beside ``ninetoothed_gemm.py``. Each claim in it that the grader can
check is checked:

* the file: the CSV's ``submission_sha256`` must be the hash of the file handed in; a
  CSV without one (the column deleted or emptied) is flagged as unverifiable, since
  otherwise deleting the column would skip the check;
* the tiles: ``block_m/n/k`` must be the tiles the grader's build of the kernel uses;
* the numbers, once the grader has timed the file (grader.batch.timing.speed) on the same GPU
  model: at each size both measured, the self-reported ratio to torch.mm and
  TFLOPS must lie within the noise band around the grader's own.

The noise band is ±max(TOLERANCE_FLOOR, SPREADS x sqrt(2) x the combined
relative spread of the grader's two timings): the student's run is taken to be
as noisy as the grader's, and its own claimed spread is never used, since a
CSV may claim any. Two runs on two machines of one GPU model differ by a few
percent (clocks, power, temperature); a made-up number is usually off by far
more. A claim outside it is *flagged*, with both numbers side by side, and the
grade is never changed: a person decides.
What cannot be compared (another GPU, another size, nothing timed) is a *note*,
not a flag.
"""

import io
import math

from benchmarks.report import spread

TOLERANCE_FLOOR = 0.10
SPREADS = 3
NEEDED = ("m", "n", "k", "ratio_vs_torch_mm", "tflops")


def _number(value):
    try:
        value = float(value)
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) else None


MAX_BYTES = 256 * 1024  # a benchmark CSV of every default size is about 20 KiB
MAX_COLUMNS = 200
MAX_ROWS = 1000


def read(data):
    """The CSV as a DataFrame of strings, or (None, why it is not a benchmark CSV).

    The shape is checked with the csv module before pandas sees the file: pandas
    takes minutes over a header of thousands of repeated names.
    """
    import csv

    import pandas

    if len(data) > MAX_BYTES:
        return None, f"it is {len(data)} bytes, over the {MAX_BYTES} a benchmark CSV needs"
    try:
        rows = list(csv.reader(io.StringIO(data.decode("utf-8-sig"))))
    except (UnicodeDecodeError, csv.Error) as error:
        return None, f"it cannot be read as a CSV ({type(error).__name__})"
    if (
        not rows
        or len(rows) > MAX_ROWS + 1
        or max(len(row) for row in rows) > MAX_COLUMNS
        or len(set(rows[0])) != len(rows[0])
    ):
        return None, (
            "it is not a benchmark CSV (no header, repeated column names, or over "
            f"{MAX_ROWS} rows or {MAX_COLUMNS} columns)"
        )
    try:
        table = pandas.read_csv(
            io.BytesIO(data), dtype=str, keep_default_na=False, encoding="utf-8-sig"
        )
    except Exception as error:  # noqa: BLE001 - any malformed file
        return None, f"it cannot be read as a CSV ({type(error).__name__})"
    missing = [column for column in NEEDED if column not in table.columns]
    if missing:
        return None, f"it is not a benchmark CSV (no {', '.join(missing)} column)"
    return table, ""


def band(measured_row):
    """The relative tolerance around one of the grader's rows: its own spreads, never the
    CSV's (a claimed p20..p80 as wide as one likes would widen the band at will)."""
    spreads = [spread(measured_row), spread(measured_row, "torch_mm_")]
    # The student's run is taken to be as noisy as the grader's: hence the sqrt(2).
    return max(TOLERANCE_FLOOR, SPREADS * math.sqrt(2 * sum(value * value for value in spreads)))


def check(data, origin, record):
    """{"file", "verdict", "flags", "notes"} for the hand-in ``data`` of ``record``.

    ``verdict``: "mismatch" (a claim was contradicted), "unverifiable" (no claim was
    contradicted, but the CSV names no file), "consistent" (the numbers were compared
    and every claim holds) or "not compared" (no flag, but the numbers could not be
    compared).
    """
    flags, notes = [], []
    table, problem = read(data)
    if table is None:
        return {
            "file": origin,
            "verdict": "not compared",
            "flags": [],
            "notes": [f"{origin}: {problem}"],
        }
    hashes = {value for value in table.get("submission_sha256", []) if value}
    unverifiable = (
        []
        if hashes
        else [
            "the CSV records no submission_sha256, so the file it measured cannot be verified "
            "(the benchmark writes one; an older one, or an edited CSV, does not)"
        ]
    )
    if hashes and hashes != {record.sha256}:
        flags.append(
            f"the CSV was measured on another file (sha256 {sorted(hashes)[0][:12]}, "
            f"the file handed in is {record.sha256[:12]})"
        )
    tiles = record.tiles
    claimed_tiles = {
        tiles
        for tiles in (
            tuple(_int(row.get(name)) for name in ("block_m", "block_n", "block_k"))
            for _, row in table.iterrows()
        )
        if None not in tiles
    }
    if tiles and claimed_tiles:
        other = sorted(t for t in claimed_tiles if t != tuple(tiles))
        if other:
            flags.append(
                f"the CSV reports {'x'.join(map(str, other[0]))} tiles; the file "
                f"handed in uses {'x'.join(map(str, tiles))}"
            )
    compared = _check_numbers(table, record, flags, notes)
    verdict = (
        "mismatch"
        if flags
        else "unverifiable"
        if unverifiable
        else "consistent"
        if compared
        else "not compared"
    )
    return {
        "file": origin,
        "verdict": verdict,
        "flags": [f"hand-in {origin}: {flag}" for flag in unverifiable + flags],
        "notes": notes,
    }


def check_handin(submission, record):
    """Check the hand-in CSV against what is known now: grading checks it once it has the
    verdict, and the speed phase again with its timings, replacing that. Its flags stay in
    record.handin (grader.batch.status.flags shows them with the rest)."""
    if not submission.handin:
        return
    try:
        record.handin = check(submission.handin, submission.handin_origin, record)
    except Exception as error:  # noqa: BLE001 - a hostile CSV must never stop the batch
        record.handin = {
            "file": submission.handin_origin,
            "verdict": "not compared",
            "flags": [],
            "notes": [f"the CSV could not be checked ({type(error).__name__})"],
        }


def _int(value):
    number = _number(value)
    return int(number) if number is not None and number == int(number) else None


def _check_numbers(table, record, flags, notes):
    """Compare the claimed numbers with the grader's timings; how many rows were compared."""
    measured = [row for row in ((record.speed or {}).get("rows") or []) if row["verdict"] == "PASS"]
    if not measured:
        notes.append("the numbers were not compared: the grader timed nothing for this file")
        return 0
    gpu = record.speed.get("gpu", "")
    claimed_gpus = {value for value in table.get("gpu_name", []) if value}
    if claimed_gpus and claimed_gpus != {gpu}:
        notes.append(
            f"the numbers were not compared: the CSV was measured on another GPU "
            f"({', '.join(sorted(claimed_gpus))}; the grader timed on {gpu})"
        )
        return 0
    compared = 0
    for row in measured:
        same = [
            claim
            for _, claim in table.iterrows()
            if (_int(claim["m"]), _int(claim["n"]), _int(claim["k"]))
            == (row["m"], row["n"], row["k"])
        ]
        if not same:
            notes.append(f"the CSV has no row at {row['size']}, which the grader timed")
            continue
        for claim in same:
            compared += 1
            tolerance = band(row)
            for column, unit in (("ratio_vs_torch_mm", "x torch.mm"), ("tflops", " TFLOPS")):
                said, got = _number(claim[column]), row[column]
                if said is None or said <= 0 or abs(said / got - 1) > tolerance:
                    low, high = got * (1 - tolerance), got * (1 + tolerance)
                    flags.append(
                        f"at {row['size']}: self-reported "
                        f"{'nothing' if said is None else f'{said:.2f}{unit}'}, "
                        f"measured {got:.2f}{unit} (noise band {low:.2f}-{high:.2f})"
                    )
    return compared
