"""The grading secret, and what it keys, never reach a student.

What a red team found: the public cases' inputs came from the secret seed, a failing
public case prints expected values, and the handout's grader/core/cases.py turns a seed
into every hidden shape, so a search over small seeds (about 8,000 a second on one core)
found the seed, and every hidden shape with it. Now the public cases' inputs depend on
nothing secret, the hidden cases' shapes and inputs are keyed on the secret (HMAC-SHA256),
and the outputs keep only its fingerprint.
"""

import json
import re
import stat

import pytest
import torch

from grader.batch.grade import grading, verdict
from grader.core import cases, checks
from grader.tests.batch_helpers import DEMO, batch_backend, run_grader

SECRET = cases.canonical_secret("9f3c" * 16)  # 256 bits, distinctive
OTHER = 918273645
SMALL = 3141  # a secret a search over small numbers reaches
SEARCH = range(4096)  # the red team's search, cut to keep this test short


def _case(check=cases.GEMM):
    return cases.Case("small", 24, 20, 40, "tail", "tail_mask", visibility="public", check=check)


def _assert_no_seed(verdict, case):
    assert not verdict.passed
    for secret in (SECRET, str(checks.case_seed(case, SECRET))):
        assert secret not in verdict.message, verdict.message
    assert "seed" not in verdict.message.lower(), verdict.message
    assert SECRET not in json.dumps(verdict.details)


def _wrong(case):
    return torch.zeros((case.m, case.n), dtype=torch.float16)


def test_a_mismatch_names_no_secret_and_its_details_keep_only_the_case_seed():
    case = _case()
    lhs, rhs = checks.make_inputs(case, SECRET, "cpu")
    verdict = checks.compare(_wrong(case), checks.reference(lhs, rhs), case, SECRET)
    _assert_no_seed(verdict, case)
    assert "seed" not in verdict.details
    assert verdict.details["case_seed"] == checks.case_seed(case, SECRET)


def test_judge_messages_name_no_secret_for_every_kind_of_check():
    case = _case()
    lhs, rhs = checks.make_inputs(case, SECRET, "cpu")
    last_tile = checks.reference(lhs[:, 32:], rhs[32:, :]).half()  # a named partial sum
    _assert_no_seed(checks.judge(case, {"out": _wrong(case)}, SECRET, "cpu"), case)
    named = checks.judge(case, {"out": last_tile}, SECRET, "cpu")
    assert named.mistake == "accumulator"
    _assert_no_seed(named, case)
    determinism = _case(cases.DETERMINISM)
    _assert_no_seed(
        checks.judge(
            determinism,
            {"first": _wrong(determinism), "second": _wrong(determinism)},
            SECRET,
            "cpu",
        ),
        determinism,
    )
    coverage = _case(cases.COVERAGE)
    _assert_no_seed(
        checks.judge(coverage, {"prefilled": _wrong(coverage)}, SECRET, "cpu"), coverage
    )


def test_public_inputs_ignore_the_secret_and_hidden_shapes_and_inputs_follow_it():
    for case in cases.public_cases():
        mine = checks.make_inputs(case, SECRET, "cpu")
        theirs = checks.make_inputs(case, OTHER, "cpu")
        assert all(torch.equal(a, b) for a, b in zip(mine, theirs)), case.id
    assert [c.shape for c in cases.hidden_cases(SECRET)] != [
        c.shape for c in cases.hidden_cases(OTHER)
    ]
    for case in cases.catalogue(SECRET):
        if case.visibility != "public" and case.m * case.k > 1:
            mine, theirs = (
                checks.make_inputs(case, SECRET, "cpu")[0],
                checks.make_inputs(case, OTHER, "cpu")[0],
            )
            assert not torch.equal(mine, theirs), case.label


def test_the_grader_sends_a_students_own_public_inputs():
    """A student's pytest run (the public default) and a batch with a secret of its own
    hand the public cases the same inputs."""
    public = [case for case in cases.catalogue(SECRET) if case.visibility == "public"]
    for job, lhs, rhs in grading._phases(public, SECRET)[0]:
        case = public[job.index]
        local = checks.make_inputs(case, cases.DEFAULT_SEED, "cpu")
        assert torch.equal(lhs, local[0]) and torch.equal(rhs, local[1]), case.id


# --------------------------------------------------------------------------- the attack

SAMPLE = re.compile(r"out\((\d+), (\d+)\) = \S+, expected (\S+)")


def _public_feedback(secret):
    """What a failing public case tells its student: the check's message (feedback.md
    shows it whole), here for a kernel that adds up only the first K tile."""
    case = next(case for case in cases.public_cases() if case.name == "tail_m")
    lhs, rhs = checks.make_inputs(case, secret, "cpu")
    wrong = checks.reference(lhs[:, :64], rhs[:64, :]).half()
    verdict = checks.judge(case, {"out": wrong}, secret, "cpu")
    assert not verdict.passed and SAMPLE.search(verdict.message)
    return case, verdict.message


def _explains(case, seed, samples):
    lhs, rhs = checks.make_inputs(case, seed, "cpu")
    ref = checks.reference(lhs, rhs)
    return all(f"{float(ref[i, j]):.5g}" == want for i, j, want in samples)


@pytest.mark.parametrize("secret", [SMALL, SECRET], ids=["small", "256-bit"])
def test_a_search_over_small_seeds_no_longer_finds_the_hidden_shapes(secret):
    """The red team's attack with the kit's own derivation: keep every seed whose public
    inputs give the expected values the feedback printed, then read the hidden shapes off
    the survivors. Every seed survives (the public inputs ignore the seed), so the feedback
    singles out none, even when the secret is small enough to be among them."""
    case, feedback = _public_feedback(secret)
    samples = [(int(i), int(j), want) for i, j, want in SAMPLE.findall(feedback)]
    survivors = [seed for seed in SEARCH if _explains(case, seed, samples)]
    assert survivors == list(SEARCH)
    found = {tuple(c.shape for c in cases.hidden_cases(seed)) for seed in survivors}
    assert len(found) == len(survivors)  # one candidate per seed: nothing was narrowed
    truth = tuple(c.shape for c in cases.hidden_cases(secret))
    assert (truth in found) == (secret == SMALL)


# --------------------------------------------------------------------------- a batch

# Every public case of the interpreter, the random cases and a few fixed hidden ones.
BATCH_CASES = [
    "nonsquare-128x256x192",
    "tail_m-65x128x128",
    "tail_n-128x97x128",
    "tail_k-128x128x130",
    "tail_mnk-65x97x130",
    "square-16x16x16",
    "tail_k_small-128x128x40",
    "tiny-1x2x3",
    "hidden_1",
    "hidden_2",
    "hidden_3",
]


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """dana (a plain wrong kernel) graded with the secret the grader makes, then again."""
    base = tmp_path_factory.mktemp("secret")
    (base / "class").mkdir()
    (base / "class" / "dana.py").write_bytes((DEMO / "dana.py").read_bytes())
    command = [
        "grade",
        str(base / "class"),
        "--out",
        str(base / "out"),
        "-j",
        "1",
        "--timeout",
        "60",
        "--cases",
        ",".join(BATCH_CASES),
        "--no-progress",
    ]
    first = run_grader(base, *command)
    kept = (base / "out" / ".grader-secret").read_bytes()
    again = run_grader(base, *command)
    return base, first, again, kept


def _shape_texts(case):
    m, n, k = case.shape
    return {
        f"{m}x{n}x{k}",
        f"{m} x {n} x {k}",
        f"({m}, {n})",
        f"({m}, {k})",
        f"({k}, {n})",
        f"K={k}",
        f"[{m}, {n}]",
        f"M={m}",
        f"N={n}",
    }


def _hidden_traces(secret):
    """What of the hidden cases must appear nowhere: each random shape, written as the
    kit writes shapes (less what a public case writes alike: a hidden K of 130 beside the
    public tail_k-128x128x130 is no trace), and the first input bytes of every hidden case."""
    chosen = [case for case in cases.catalogue(secret, batch_backend()) if case.id in BATCH_CASES]
    public = set().union(*(_shape_texts(case) for case in chosen if case.group != cases.HIDDEN))
    texts = sorted(
        set().union(*(_shape_texts(case) for case in chosen if case.group == cases.HIDDEN)) - public
    )
    raw = []
    for case in chosen:
        if case.visibility != "public" and case.m * case.k >= 8:
            lhs, _ = checks.make_inputs(case, secret, "cpu")
            raw.append(lhs.flatten()[:8].numpy().tobytes())
    return chosen, texts, raw


def test_nothing_in_the_output_folder_carries_the_secret_or_a_hidden_case(graded):
    base, first, _, _ = graded
    assert first.returncode == 0, first.stderr[-3000:]
    out = base / "out"
    path = out / ".grader-secret"
    secret = cases.canonical_secret(path.read_text())
    assert cases.secret_bits(secret) >= cases.SECRET_BITS
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    chosen, texts, raw = _hidden_traces(secret)
    public = {case.id: case for case in chosen if case.visibility == "public"}
    files = [p for p in out.rglob("*") if p.is_file() and p != path]
    assert {
        "feedback.md",
        "results.json",
        "record.json",
        "stderr.log",
        "stdout.log",
        "gradebook.csv",
        "batch.json",
        "environment.json",
    } <= {p.name for p in files}
    for file in files:
        data = file.read_bytes()
        assert secret.encode() not in data, (file.name, "the secret")
        for trace in texts:  # whole numbers: a hidden K=19 is not the public K=192
            assert not re.search(
                rb"(?<![0-9])" + re.escape(trace.encode()) + rb"(?![0-9])", data
            ), (file.name, trace)
        for pattern in raw:
            assert pattern not in data, (file.name, "hidden input bytes")
    for stream in (first.stdout, first.stderr):
        for trace in [secret] + texts:
            assert trace not in stream, trace
    # Every value a file prints as expected is a public case's.
    references = {
        case_id: checks.judging_material(case, secret, "cpu")[2] for case_id, case in public.items()
    }
    feedback = (out / "dana" / "feedback.md").read_text(encoding="utf-8")
    printed = SAMPLE.findall(feedback)
    assert printed, "dana fails public cases: their messages show samples"
    for i, j, want in printed:
        i, j = int(i), int(j)
        assert any(
            i < ref.shape[0] and j < ref.shape[1] and f"{float(ref[i, j]):.5g}" == want
            for ref in references.values()
        ), (i, j, want)
    record = json.loads((out / "dana" / "record.json").read_text())
    for entry in record["cases"]:
        if entry["visibility"] != "public":
            assert entry["message"] == verdict.HIDDEN_MESSAGE and not entry.get("details")
            assert entry["id"] in BATCH_CASES
            assert not entry["id"].startswith("hidden_") or re.fullmatch(r"hidden_\d", entry["id"])
    fingerprint = cases.fingerprint(secret)
    manifest = json.loads((out / "batch.json").read_text())
    environment = json.loads((out / "environment.json").read_text())
    assert (
        record["secret_fingerprint"]
        == manifest["secret_fingerprint"]
        == environment["secret_fingerprint"]
        == fingerprint
    )
    assert not {"seed"} & (set(record) | set(manifest) | set(environment))


def test_resume_grades_with_the_stored_secret(graded):
    base, first, again, kept = graded
    assert again.returncode == 0, again.stderr[-3000:]
    assert "1 already graded, 0 to grade" in again.stderr
    assert "warning" not in first.stderr + again.stderr
    assert (base / "out" / ".grader-secret").read_bytes() == kept
