"""The catalogue's promises: stable ids, the guide's public shapes, seeded hidden shapes."""

from grader.core import cases
from grader.core.mistakes import MISTAKES


def test_ids_read_like_the_case_and_are_unique():
    for backend in ("gpu", "interpreter"):
        ids = [case.id for case in cases.catalogue(backend_name=backend)]
        assert len(ids) == len(set(ids))
    assert "tail_mnk-65x97x130" in ids


def test_public_cases_are_the_guides_six():
    shapes = {case.shape for case in cases.public_cases()}
    assert shapes == {(512, 512, 512), (128, 256, 192), (65, 128, 128), (128, 97, 128),
                      (128, 128, 130), (65, 97, 130)}


def test_every_case_targets_a_known_mistake():
    for case in cases.all_fixed_cases() + cases.hidden_cases():
        assert case.targets in MISTAKES, case


def test_interpreter_cases_stay_small():
    for case in cases.catalogue(backend_name="interpreter"):
        assert max(case.m, case.n) <= 256 and case.k <= 1024, case


def test_hidden_shapes_follow_the_seed_and_are_ragged():
    first = cases.hidden_cases(seed=1)
    assert first == cases.hidden_cases(seed=1)
    assert first != cases.hidden_cases(seed=2)
    for case in first:
        assert all(size % 16 for size in case.shape)


def test_hidden_case_feedback_does_not_reveal_the_shape():
    hidden = cases.hidden_cases()[0]
    assert str(hidden.m) not in hidden.describe(reveal=False).replace(hidden.name, "")
