"""The benchmark students run (harness, timing, report, card), with the lessons
(``benchmarks.lessons``) and course staff's performance lab (``benchmarks.lab``) beside
it; every formula lives in ledger.formulas."""
