"""How the tuner picks among its candidates (solutions.tuned.plan.Planner), timings scripted.

Two passes over the candidates, then a runoff of those within RUNOFF_WITHIN of the best,
timed again in alternating rounds: the runoff decides, and a candidate outside the band
is never timed again. No kernel runs; the operands live on the meta device.
"""

import torch

from solutions.tuned import plan
from solutions.tuned.configs import TileConfig

A, B, C = (
    TileConfig(128, 256, 64, 8, 8, 3),
    TileConfig(128, 256, 64, 8, 8, 3, persistent=True),
    TileConfig(128, 128, 64, 8, 4, 4),
)


class NoCache:
    def choice(self, shape_key):
        return None

    def store(self, shape_key, config_name):
        self.stored = config_name


def choose(monkeypatch, passes, runoff):
    """The planner's choice when the two passes give ``passes`` and the runoff ``runoff``
    (ms per name; a runoff list is taken in order), and the names the runoff timed."""
    timed_again = []

    def timing(config, lhs, rhs, out):
        if config.name in passes and len(seen.setdefault(config.name, [])) < 2:
            seen[config.name].append(1)
            return passes[config.name]
        timed_again.append(config.name)
        return runoff[config.name].pop(0)

    seen = {}
    monkeypatch.setattr(plan, "candidates", lambda lhs, rhs: (A, B, C))
    monkeypatch.setattr(plan, "time_candidate", timing)
    monkeypatch.setattr(plan.kernels, "tuned_kernel", lambda config: config.name)
    lhs = torch.empty((4096, 4096), dtype=torch.float16, device="meta")
    run, info = plan.Planner(NoCache()).make_plan(lhs, lhs)
    return run, info, timed_again


def test_the_runoff_decides_between_close_candidates(monkeypatch):
    run, info, timed_again = choose(
        monkeypatch,
        {A.name: 1.00, B.name: 1.02, C.name: 1.20},
        {A.name: [1.05, 1.04, 1.06, 1.05], B.name: [1.01, 1.00, 1.02, 1.01]},
    )
    assert run == B.name and info["source"] == "tuned"
    assert sorted(set(timed_again)) == sorted([A.name, B.name])
    assert len(timed_again) == 2 * plan.RUNOFF_ROUNDS
    assert info["timings_ms"][f"runoff {B.name}"] == 1.01


def test_a_clear_winner_is_not_timed_again(monkeypatch):
    run, info, timed_again = choose(monkeypatch, {A.name: 1.00, B.name: 1.10, C.name: 1.20}, {})
    assert run == A.name and timed_again == []
