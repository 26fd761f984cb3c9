"""The 3000^3 cliff lesson (section 5 of docs/explainer.en.md and .zh.md) against its sources.

Each measured number the lesson prints is read here from the committed baselines
(benchmarks/baselines/*.csv) or, for the runs that left no CSV, found in docs/perf-notes.md;
each number of its arithmetic comes from ledger.formulas. Both languages are checked, and
a ratio, time, percentage or date in the section's prose that none of these gives fails
the test, so a re-measured baseline cannot leave the lesson stale.
"""

import csv
import pathlib
import re
import subprocess
import sys

import pytest

from benchmarks.lessons.cliff import BLOCK_K, BLOCK_M, BLOCK_N, SIZES, STAGES, WARPS
from benchmarks.lessons.ledger import binary_bytes
from ledger import formulas as f

ROOT = pathlib.Path(__file__).resolve().parents[2]
BASELINES = ROOT / "benchmarks" / "baselines"
LADDER_CSV = "explore-round6-wave-tiles.csv"  # 2992, 3000, 3008, 3072 side by side
TARGETS_CSV = "reference-autotune-targets-round6.csv"  # the benchmark's run, the same day
TMA_CSV = "explore-round5-tma.csv"
PERSISTENT_CSV = "explore-round5-persistent.csv"
REFERENCE, PLAIN = "reference autotuned", "128x256x64 g8 8w3s"
LANGUAGES = ("en", "zh")
DTYPE_BYTES = f.DTYPE_BYTES["fp16"]
# The runs that left no CSV: (the number as the lesson prints it, the line of perf-notes it is).
FROM_PERF_NOTES = {
    "strided kernel at 3000^3": ("0.15", "| 3000^3 | 99 (0.15) |"),
    "first flat kernel": ("0.56", "| 3000^3 | 99 (0.15) | 369 (0.56) |"),
    "wave split at 3000^3": (
        "0.63",
        "| split: those two waves + 64x128x64 g1 4w4s on 184 rows | 399 | 0.63 |",
    ),
    "a perfect spread": ("0.70", "against about 83 µs for `torch.mm`: 0.70x."),
}
# The dates of the runs the lesson cites, by the perf-notes heading that dates them.
DATED_HEADINGS = (
    "## Round 4: where 3000^3 loses, and two fixes (H200, 2026-11-29)",
    "## Round 5: TMA loads, persistent and split-K schedules (H200, 2026-11-29)",
    "## Round 6: tiles picked by the wave, and 3000^3 on padded copies (H200, 2026-12-03)",
)
DECIMAL = re.compile(r"(?<![\d.])\d+\.\d+(?![\d.])")
PERCENT = re.compile(r"(?<![\d.])\d+(?:\.\d+)?%")
DATE = re.compile(r"\b\d{4}-\d{2}-\d{2}\b")


def read_csv(name):
    with open(BASELINES / name, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def square(rows, variant, n):
    """The one row of ``variant`` at n^3, or None."""
    hits = [
        row
        for row in rows
        if row["variant"] == variant and int(row["m"]) == int(row["n"]) == int(row["k"]) == n
    ]
    assert len(hits) <= 1, (variant, n)
    return hits[0] if hits else None


def us(row, column="ms"):
    return f"{float(row[column]) * 1000:.1f}"


def ratio(value):
    return f"{float(value):.2f}"


def span(values):
    low, high = min(values), max(values)
    return ratio(low) if ratio(low) == ratio(high) else f"{ratio(low)}–{ratio(high)}"


@pytest.fixture(scope="module")
def ladder():
    return read_csv(LADDER_CSV)


@pytest.fixture(scope="module")
def targets():
    return {int(row["m"]): row for row in read_csv(TARGETS_CSV) if row["m"] == row["n"] == row["k"]}


@pytest.fixture(scope="module")
def perf_notes():
    return (ROOT / "docs" / "perf-notes.md").read_text(encoding="utf-8")


def section(language):
    text = (ROOT / "docs" / f"explainer.{language}.md").read_text(encoding="utf-8")
    start = text.index("\n## 5. ")
    end = text.find("\n## ", start + 1)
    return text[start:] if end < 0 else text[start:end]


def prose(text):
    """The section without its fenced blocks (the doc check compares those with the run)."""
    return re.sub(r"^```.*?^```$", "", text, flags=re.MULTILINE | re.DOTALL)


@pytest.fixture(scope="module")
def expected(ladder, targets, perf_notes):
    """{what: the string the lesson prints}, every one derived from a source."""
    facts = {}
    reference = {n: square(ladder, REFERENCE, n) for n in SIZES}
    plain = {n: square(ladder, PLAIN, n) for n in SIZES}
    for n in SIZES:
        facts[f"reference at {n}^3"] = f"{us(reference[n])} µs ({ratio(reference[n]['ratio'])})"
        facts[f"torch.mm at {n}^3"] = f"{us(reference[n], 'torch_ms')} µs"
        if plain[n] is not None:
            facts[f"plain kernel at {n}^3"] = f"{us(plain[n])} µs ({ratio(plain[n]['ratio'])})"
    facts["benchmark run at 3000^3"] = ratio(targets[3000]["ratio_vs_torch_mm"])
    facts["benchmark run at 3072^3"] = ratio(targets[3072]["ratio_vs_torch_mm"])
    facts["3000^3 range"] = span(
        [float(targets[3000]["ratio_vs_torch_mm"]), float(reference[3000]["ratio"])]
    )
    facts["more work than 2992^3"] = f"{(3000 / 2992) ** 3 - 1:.1%}"
    facts["longer than 2992^3"] = (
        f"{float(reference[3000]['ms']) / float(reference[2992]['ms']) - 1:.0%}"
    )
    facts["tuned slower than plain at 3072^3"] = (
        f"{float(reference[3072]['ms']) / float(plain[3072]['ms']) - 1:.0%}"
    )
    padded = [
        float(row["ratio"])
        for row in ladder
        if row["variant"].startswith("pad-k")
        and int(row["m"]) == int(row["n"]) == int(row["k"]) == 3000
    ]
    facts["zero-padded copies"] = ratio(max(padded))
    tma = [
        float(row["ratio"])
        for row in read_csv(TMA_CSV)
        if row["variant"].startswith("nt-tma 128x256")
        and row["m"] == row["n"] == row["k"] == "3000"
    ]
    facts["TMA loads"] = span(tma)
    facts["wave split at 3008^3"] = ratio(
        square(read_csv(PERSISTENT_CSV), REFERENCE, 3008)["ratio"]
    )
    for what, (number, line) in FROM_PERF_NOTES.items():
        assert line in perf_notes, f"perf-notes no longer has {line!r}"
        facts[what] = number
    return facts


@pytest.fixture(scope="module")
def arithmetic():
    """{what: the string the lesson prints}, every one from ledger.formulas."""
    machine = f.H200
    per_sm = f.occupancy_estimate(BLOCK_M, BLOCK_N, BLOCK_K, WARPS, STAGES, DTYPE_BYTES, machine)[
        "blocks_per_sm"
    ]
    programs = f.tile_count(3000, 3000, BLOCK_M, BLOCK_N)
    count, last, overall = f.waves(programs, per_sm, machine.n_sm)
    assert {f.tile_count(n, n, BLOCK_M, BLOCK_N) for n in SIZES} == {programs}
    same_waves = {
        f.waves(f.tile_count(n, n, BLOCK_M, BLOCK_N), per_sm, machine.n_sm) for n in SIZES
    }
    assert same_waves == {(count, last, overall)}
    assert (
        f.tile_count(3000, 3000, BLOCK_N, BLOCK_M) == programs
    )  # the 256x128 tiles chosen at 3000^3
    vector = f.VECTOR_BYTES // DTYPE_BYTES  # elements in a 16-byte load
    d = f.TRITON_DIVISIBILITY
    assert f.rows_whole_vectors(3000, DTYPE_BYTES) and not f.divisibility_marked(3000)
    assert all(f.divisibility_marked(n) for n in (2992, 3008, 3072))
    assert f.last_tile(3072, BLOCK_M) == BLOCK_M and f.last_tile(3072, BLOCK_N) == BLOCK_N
    assert all(f.last_tile(n, BLOCK_M) < BLOCK_M for n in (2992, 3000, 3008))
    padded = f.cdiv(3000, d) * d
    assert f.divisibility_marked(padded)
    return {
        "SMs": str(machine.n_sm),
        "grid": f"{f.cdiv(3000, BLOCK_M)} x {f.cdiv(3000, BLOCK_N)} = {programs}",
        "grid of 256x128 tiles": f"{f.cdiv(3000, BLOCK_N)} x {f.cdiv(3000, BLOCK_M)}",
        "programs in the last wave": str(programs - (count - 1) * per_sm * machine.n_sm),
        "last wave busy": f"{last:.0%}",
        "shared memory": binary_bytes(f.smem_bytes(BLOCK_M, BLOCK_N, BLOCK_K, DTYPE_BYTES, STAGES)),
        "bytes per row at 3000": str(f.row_bytes(3000, DTYPE_BYTES)),
        "16-byte units at 3000": str(f.row_bytes(3000, DTYPE_BYTES) // f.VECTOR_BYTES),
        "3000 unmarked": f"3000 = {d} x {3000 // d} + {3000 % d}",
        "2992 marked": f"2992 = {d} x {2992 // d}",
        "3008 marked": f"3008 = {d} x {3008 // d}",
        "3000 as a constant": f"3000 = {vector} x {3000 // vector}",
        "bytes per row at 3072": str(f.row_bytes(3072, DTYPE_BYTES)),
        "3072 in whole tiles": f"3072 = {3072 // BLOCK_M} x {BLOCK_M} = {3072 // BLOCK_N} x {BLOCK_N}",
        "padded length": str(padded),
    }


@pytest.mark.parametrize("language", LANGUAGES)
def test_the_lesson_prints_its_sources_numbers(language, expected, arithmetic):
    text = " ".join(section(language).split())  # a number may wrap across lines
    missing = {
        what: value for what, value in {**expected, **arithmetic}.items() if value not in text
    }
    assert missing == {}, f"docs/explainer.{language}.md section 5 lacks these (stale?)"


@pytest.mark.parametrize("language", LANGUAGES)
def test_the_ladder_table_is_the_csvs(language, ladder):
    lines = section(language).splitlines()
    for n in SIZES:
        reference, plain = square(ladder, REFERENCE, n), square(ladder, PLAIN, n)
        rows = [line for line in lines if line.startswith(f"| {n}^3 |")]
        assert len(rows) == 1, n
        cells = [cell.strip() for cell in rows[0].strip("|").split("|")]
        assert cells[1] == f"{us(reference)} µs ({ratio(reference['ratio'])})"
        assert cells[3] == f"{us(reference, 'torch_ms')} µs"
        if plain is None:
            assert "µs" not in cells[2]  # not run: 3000 is ragged
        else:
            assert cells[2] == f"{us(plain)} µs ({ratio(plain['ratio'])})"


@pytest.mark.parametrize("language", LANGUAGES)
def test_no_number_in_the_prose_comes_from_nowhere(
    language, expected, arithmetic, targets, perf_notes
):
    text = prose(section(language))
    row = targets[3000]
    versions_columns = ("torch_version", "triton_version")
    versions = {".".join(row[column].split(".")[:2]) for column in versions_columns}
    assert row["gpu_name"] == "NVIDIA H200" and "NVIDIA H200" in text
    torch_version, triton_version = (
        ".".join(row[column].split(".")[:2]) for column in versions_columns
    )
    words = " ".join(text.split())
    assert f"torch {torch_version}" in words and f"Triton {triton_version}" in words
    assert f"ninetoothed {row['ninetoothed_version']}" in words
    known = " ".join([*expected.values(), *arithmetic.values()])
    decimals = set(DECIMAL.findall(known)) | versions | {"0.5"}  # 0.5: the example of a ratio
    percents = set(PERCENT.findall(known))
    dates = {row["timestamp"][:10]} | {
        DATE.search(heading).group() for heading in DATED_HEADINGS if heading in perf_notes
    }
    assert len(dates) == 2
    assert set(DECIMAL.findall(text)) - decimals == set()
    assert set(PERCENT.findall(text)) - percents == set()
    assert set(DATE.findall(text)) - dates == set()


@pytest.mark.parametrize("language", LANGUAGES)
def test_the_shown_output_is_the_lessons(language):
    """The doc check compares it too, on the interpreter; this runs anywhere."""
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.lessons.cliff"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    block = (
        section(language).split("$ python -m benchmarks.lessons.cliff\n", 1)[1].split("\n```", 1)[0]
    )
    assert block == done.stdout.rstrip("\n")


def test_both_languages_cite_the_same_files():
    cited = [
        set(re.findall(r"`([\w./-]+\.(?:csv|md|py))`", section(language))) for language in LANGUAGES
    ]
    assert cited[0] == cited[1]
    assert all(
        (BASELINES / name).is_file() or (ROOT / "docs" / name).is_file() or (ROOT / name).is_file()
        for name in cited[0]
    )
