"""The ideas behind the assignment as runnable lessons (``python -m
benchmarks.lessons.ledger``, ``.tiling``, ``.occupancy``, ``.cliff``): formulas only, no GPU.
"""
