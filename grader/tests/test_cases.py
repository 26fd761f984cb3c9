"""The catalogue's promises: stable ids, the guide's public shapes, hidden shapes keyed on
the secret."""

import pytest

from grader.core import cases
from grader.core.mistakes import MISTAKES


def test_ids_read_like_the_case_and_are_unique():
    for backend in ("gpu", "interpreter"):
        ids = [case.id for case in cases.catalogue(backend_name=backend)]
        assert len(ids) == len(set(ids))
    assert "tail_mnk-65x97x130" in ids


def test_public_cases_are_the_guides_six():
    shapes = {case.shape for case in cases.public_cases()}
    assert shapes == {
        (512, 512, 512),
        (128, 256, 192),
        (65, 128, 128),
        (128, 97, 128),
        (128, 128, 130),
        (65, 97, 130),
    }


def test_every_case_targets_a_known_mistake():
    for case in cases.all_fixed_cases() + cases.hidden_cases():
        assert case.targets in MISTAKES, case


def test_interpreter_cases_stay_small():
    for case in cases.catalogue(backend_name="interpreter"):
        assert max(case.m, case.n) <= 256 and case.k <= 1024, case


def test_hidden_shapes_follow_the_seed_and_are_ragged():
    first = cases.hidden_cases(seed=1)
    assert first == cases.hidden_cases(seed="1") == cases.hidden_cases(seed=" 001\n")
    assert first != cases.hidden_cases(seed=2)
    assert cases.hidden_cases("AB" * 16) == cases.hidden_cases("ab" * 16) != first
    for case in first:
        assert all(size % 16 for size in case.shape)


def test_random_case_ids_carry_no_shape_and_are_the_same_for_every_secret():
    """The gradebook's columns and the record's keys: hidden_1 to hidden_3 whatever the
    secret; the fixed cases keep ids that name their (public) shapes."""
    for secret in (1, "ab" * 32):
        hidden = cases.hidden_cases(secret)
        assert [case.id for case in hidden] == ["hidden_1", "hidden_2", "hidden_3"]
        assert all(case.label == f"{case.id}-{case.m}x{case.n}x{case.k}" for case in hidden)
    assert {case.id for case in cases.all_fixed_cases()} == {
        case.label for case in cases.all_fixed_cases()
    }


@pytest.mark.parametrize("text", ["", "12.5", "0x1f", "seed", "1 2", True, None, 1.5])
def test_a_secret_is_a_whole_number_or_hex_digits(text):
    with pytest.raises(ValueError):
        cases.canonical_secret(text)


def test_a_secrets_strength_and_fingerprint():
    assert cases.secret_bits(2026) == 13 and cases.secret_bits("f" * 32) == 128
    assert cases.secret_bits(str(2**255)) >= 250
    assert cases.fingerprint(2026) == cases.fingerprint("2026") != cases.fingerprint(2027)
    assert len(cases.fingerprint("ab" * 32)) == 16 and "abab" not in cases.fingerprint("ab" * 32)


def test_hidden_case_feedback_does_not_reveal_the_shape():
    hidden = cases.hidden_cases()[0]
    assert str(hidden.m) not in hidden.describe(reveal=False).replace(hidden.name, "")
