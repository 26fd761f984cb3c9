"""The benchmark students run (harness, timing, report, card, and ``why_speed``: why a timed
size ran at its speed, in words by ``why_speed_text``), with the lessons
(``benchmarks.lessons``) and course staff's performance lab (``benchmarks.lab``) beside
it; every formula lives in ledger.formulas."""
