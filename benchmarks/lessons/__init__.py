"""The ideas behind the assignment as runnable lessons (``python -m
benchmarks.lessons.ledger``, ``.tiling``, ``.occupancy``): formulas only, no GPU.
"""
