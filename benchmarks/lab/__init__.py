"""Course staff's performance lab: the baselines, the exploration kernels and their
sweep. It reads the reference solution, so it never goes into the handout.
"""
