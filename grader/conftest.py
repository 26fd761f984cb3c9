"""Pytest hooks for the grader suite (grader/test_grader.py) only.

* Expands the case catalogue into tests: one per case, with the case's id, for
  this run's backend and ``--seed``. GPU-only cases stay in the list and are
  skipped on the interpreter, so the skip and its reason are visible.
* Prints the grade at the end: score / max per case group, and the likely
  mistakes behind any failures (English and Chinese), from grader.diagnosis.

The kit's own tests under grader/tests also see these hooks; they record no
verdicts, so nothing extra is printed for them.
"""

from grader import cases, diagnosis

CASE_FIXTURE = "grader_case"


def grader_cases(seed, backend_name):
    """The catalogue for this run, plus the GPU-only cases so their skips are shown."""
    runnable = cases.catalogue(seed, backend_name)
    shown = set(case.id for case in runnable)
    skipped = [case for case in cases.all_fixed_cases()
               if not case.runs_on(backend_name) and case.id not in shown]
    fixed_order = [case.id for case in cases.all_fixed_cases()]
    fixed = [case for case in runnable + skipped if case.id in fixed_order]
    fixed.sort(key=lambda case: fixed_order.index(case.id))
    return fixed + [case for case in runnable if case.id not in fixed_order]


def pytest_generate_tests(metafunc):
    if CASE_FIXTURE not in metafunc.fixturenames:
        return
    config = metafunc.config
    backend = config._ntgemm_backend
    seed = config.getoption("--seed")
    selected = grader_cases(seed, backend.name)
    metafunc.parametrize(CASE_FIXTURE, selected, ids=[case.id for case in selected])


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    results = getattr(config, "_ntgemm_results", None)
    if not results:
        return
    write = terminalreporter.write_line
    terminalreporter.section("ntgemm grade")
    backend = config._ntgemm_backend
    write(f"submission: {config.getoption('--submission')}")
    write(f"backend: {backend.name}   seed: {config.getoption('--seed')}")

    order = [case.group for case in grader_cases(config.getoption("--seed"), backend.name)]
    groups = {name: (0, 0, 0, 0) for name in dict.fromkeys(order)
              if any(case.group == name for case, _ in results.values())}
    for case, verdict in results.values():
        score, most, passed, total = groups.get(case.group, (0, 0, 0, 0))
        groups[case.group] = (score + (case.points if verdict.passed else 0),
                              most + case.points, passed + verdict.passed, total + 1)
    width = max(len(name) for name in groups) + 2
    write(f"{'group'.ljust(width)}{'score':>7}  cases passed")
    for name, (score, most, passed, total) in groups.items():
        write(f"{name.ljust(width)}{score:>3} / {most:<3}{passed:>3} of {total}")
    score = sum(group[0] for group in groups.values())
    most = sum(group[1] for group in groups.values())
    write(f"{'total'.ljust(width)}{score:>3} / {most:<3}")
    not_here = [case for case in grader_cases(config.getoption("--seed"), backend.name)
                if not case.runs_on(backend.name)]
    if not_here:
        write(f"not counted here: {len(not_here)} GPU-only case(s), skipped on the "
              f"{backend.name} backend")

    hints = _hints(config, results)
    if hints:
        write("")
        write("likely causes (most likely first):")
        for number, entry in enumerate(hints, 1):
            write(f"{number}. {entry['title']} [{entry['key']}]")
            write(f"   {entry['en']}")
            write(f"   {entry['zh']}")
            for line in entry["evidence"]:
                write(f"   - {line}")


def _hints(config, results):
    module = getattr(config, "_ntgemm_module", None)
    findings = getattr(config, "_ntgemm_findings", None)
    tiles = None
    if module is not None:
        if findings is None:
            findings = diagnosis.inspect_arrangement(module)
        tiles = diagnosis.tile_sizes(module)
    verdicts = [verdict for _, verdict in results.values()]
    case_list = [case for case, _ in results.values()]
    return diagnosis.explain(findings or [], verdicts, case_list, tiles=tiles, reveal=True)
