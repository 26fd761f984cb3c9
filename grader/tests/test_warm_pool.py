"""Workers warmed up ahead (grader.batch.isolation.warm_pool): no more than the runs to come
can take, none left behind, and none holding a file before its run is assigned."""

import stat

import pytest

from grader.batch.isolation import folders, sandbox, warm_pool

pytestmark = pytest.mark.skipif(
    sandbox.check(False) is not None, reason=f"bubblewrap cannot start here: {sandbox.check(False)}"
)
LIMITS = sandbox.Limits(timeout_s=60, memory_bytes=2 << 30)


def _pool(ahead):
    return warm_pool.WarmPool(backend_name="interpreter", limits=LIMITS, ahead={None: ahead})


def _held(pool):
    return len(pool.ready[None]) + pool.starting[None]


def _started(pool):
    """The workers the pool's starter has started, once it has started all it was asked."""
    with pool.changed:
        pool.changed.wait_for(lambda: not pool.starting[None], timeout=30)
        return list(pool.ready[None])


def _released(worker):
    """Its process ended and its run's file gone (the job folder serves its sandbox's next
    run: grader.batch.isolation.hosts)."""
    return worker.process.poll() is not None and not (worker.job / folders.FILE).exists()


def test_the_pool_warms_up_only_what_the_runs_to_come_can_take():
    pool = _pool(ahead=2)
    pool.expect(2)
    assert _held(pool) == 0  # nothing before a run takes a worker
    taken = pool.take(None)
    assert _held(pool) == 1  # one run to come: one worker, though two may wait
    pool.expect(2)
    pool.take(None).abandon()
    assert _held(pool) == 2  # two to come, two warm
    pool.forgo(2)
    waiting = _started(pool)
    second = pool.take(None)
    assert second in waiting  # a run no one expected still gets a warm one
    assert _held(pool) == 1  # and none is started in its place
    pool.close()
    for worker in (taken, second):
        worker.abandon()
    for worker in waiting + [taken]:
        assert _released(worker)


def test_closing_ends_every_worker_no_run_took():
    pool = _pool(ahead=3)
    pool.expect(4)
    pool.take(None).abandon()
    waiting = _started(pool)
    assert len(waiting) == 3
    pool.close()
    assert all(_released(worker) for worker in waiting)
    pool.expect(5)
    pool.take(None).abandon()
    assert _held(pool) == 0  # a closed pool starts nothing ahead


def test_a_warm_worker_holds_no_file_until_its_run_is_assigned():
    pool = _pool(ahead=1)
    pool.expect(1)
    worker = pool.take(None)
    try:
        assert sorted(path.name for path in worker.job.iterdir()) == ["lib"]
        worker.assign("wrapper", b"SOURCE = 1\n", LIMITS)
        placed = worker.job / folders.FILE
        assert placed.read_bytes() == b"SOURCE = 1\n"
        assert stat.S_IMODE(placed.stat().st_mode) == 0o444
        assert stat.S_IMODE(worker.job.stat().st_mode) == 0o555
    finally:
        worker.abandon()
        pool.close()


def test_a_worker_warmed_up_for_a_run_outlives_the_thread_whose_take_started_it():
    """bubblewrap ends its sandbox when the thread that started it ends; on a GPU each run
    has a thread of its own, which ends before the workers started ahead are taken. On the
    H200 every such worker was killed (SIGKILL) as soon as its run began."""
    import threading
    import time

    pool = _pool(ahead=1)
    pool.expect(2)
    first = []
    thread = threading.Thread(target=lambda: first.append(pool.take(None)))
    thread.start()
    thread.join()
    (warm,) = _started(pool)
    time.sleep(1.5)
    try:
        assert warm.process.poll() is None
    finally:
        pool.close()
        first[0].abandon()


def test_a_worker_that_died_while_it_waited_is_not_handed_to_a_run():
    """A dead warm worker would end its run at ``starting``, which the batch takes for the
    grader's own failure and stops on."""
    pool = _pool(ahead=1)
    pool.expect(3)
    pool.take(None).abandon()
    (warm,) = _started(pool)
    warm.process.kill()
    warm.process.wait()
    worker = pool.take(None)
    try:
        assert worker is not warm and worker.process.poll() is None
        assert _released(warm)
    finally:
        worker.abandon()
        pool.close()
