"""Timing harness, GEMM ledger and lesson CLIs; every formula lives in benchmarks.formulas."""
