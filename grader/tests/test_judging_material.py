"""The judge's inputs and reference are built once per case, however many threads ask."""

import threading
import time

from grader.core import cases, checks


def test_threads_asking_for_a_case_at_once_build_its_reference_once(monkeypatch):
    """A batch's workers reach the same case together at its start; each used to build the
    reference itself (on the H200, 8 times 12 s of torch's threads beside the first runs)."""
    built = []
    reference = checks.reference

    def slow_reference(lhs, rhs):
        built.append(threading.current_thread())
        time.sleep(0.2)  # long enough for every thread to ask while it is built
        return reference(lhs, rhs)

    monkeypatch.setattr(checks, "reference", slow_reference)
    checks._material.cache_clear()
    case = cases.public_cases()[0]
    got = []
    threads = [
        threading.Thread(
            target=lambda: got.append(checks.judging_material(case, cases.DEFAULT_SEED, "cpu"))
        )
        for _ in range(8)
    ]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        checks._material.cache_clear()
    # Only this test's threads count: a thread an earlier test of this worker left may judge
    # a case of its own meanwhile (CI, 2026-12-05: 3 builds seen here).
    assert len([thread for thread in built if thread in threads]) == 1 and len(got) == 8
    assert all(material is got[0] for material in got)
