"""How the kit's own suite runs: what the root conftest sets up for the README's command."""

import pytest


def test_each_xdist_worker_runs_torch_on_one_thread(request):
    """Under ``-n auto`` the workers and the processes their tests start keep every core
    busy; torch's pool of threads would spin for cores it does not get (conftest.py)."""
    import torch

    if not hasattr(request.config, "workerinput"):
        pytest.skip("not a pytest-xdist worker: torch keeps its threads")
    assert torch.get_num_threads() == 1
