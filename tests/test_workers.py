"""The processes runner's worker pool (nutch2/mapred/workers.py): tasks in plain interpreters, no resource tracker."""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from types import SimpleNamespace

import psutil
import pytest

from nutch2.mapred import progress
from nutch2.mapred.workers import BrokenPool, WorkerPool


def _setup(tag: str) -> None:
    os.environ["WORKER_TAG"] = tag


def _task(x: int) -> tuple[int, int, str]:
    ctx = SimpleNamespace(records=10)  # a task that did 10 records (the progress line counts them)
    progress.task_started(ctx)
    progress.task_ended(ctx)
    return x * x, os.getpid(), os.environ.get("WORKER_TAG", "")


def _fail(message: str) -> None:
    raise KeyError(message)


def _leave_a_thread() -> int:
    threading.Thread(target=time.sleep, args=(3600,), name="left-running").start()  # not a daemon: exit waits
    return os.getpid()


def _abandon_a_stuck_thread() -> int:
    from nutch2.mapred import timebox

    with contextlib.suppress(timebox.Overrun):
        timebox.run(lambda: time.sleep(3600), 0.2, "nutch2-parse-filter")  # a plugin stuck for good
    return os.getpid()


def _between_records() -> int:
    from nutch2.mapred import stop

    stop.check()  # as a task does between records
    return os.getpid()


def _sleep(seconds: float) -> int:
    time.sleep(seconds)
    return os.getpid()


def _trackers() -> set[int]:
    """multiprocessing resource trackers under this process (a zombie left by an earlier test has no cmdline)."""
    found = set()
    for p in psutil.Process().children(recursive=True):
        try:
            if "resource_tracker" in " ".join(p.cmdline()):
                found.add(p.pid)
        except psutil.Error:
            continue
    return found


def test_tasks_run_in_the_workers_set_up_once_with_their_failures_raised_here() -> None:
    trackers = _trackers()
    pool = WorkerPool(2, _setup, ("set up",))
    try:
        futures = [pool.submit(_task, i) for i in range(6)]
        results = [f.result(timeout=60) for f in futures]
        assert [r[0] for r in results] == [i * i for i in range(6)]
        assert {r[1] for r in results} <= set(pool.pids()) and os.getpid() not in {r[1] for r in results}
        assert {r[2] for r in results} == {"set up"}
        with pytest.raises(KeyError, match="bad row"):
            pool.submit(_fail, "bad row").result(timeout=60)
        assert pool.submit(_task, 7).result(timeout=60)[0] == 49  # a failed task leaves its worker serving
        new = _trackers() - trackers
        assert not new  # multiprocessing's tracker process is not started
    finally:
        pool.shutdown()


def test_a_killed_worker_breaks_the_pool_and_its_task_fails_at_once() -> None:
    pool = WorkerPool(1, _setup, ("x",))
    try:
        running = pool.submit(_sleep, 60)
        queued = pool.submit(_task, 2)
        time.sleep(0.5)
        os.kill(pool.pids()[0], signal.SIGKILL)
        with pytest.raises(BrokenPool, match="died"):
            running.result(timeout=30)
        with pytest.raises(BrokenPool):
            queued.result(timeout=30)
        with pytest.raises(BrokenPool):
            pool.submit(_task, 3)
    finally:
        pool.shutdown()


def test_a_pool_started_by_a_thread_that_ended_keeps_serving() -> None:
    """The job API runs each job in a thread of its own: the workers the first job's thread started serve the
    next job after that thread has ended (PR_SET_PDEATHSIG fires with the thread that started a process)."""
    made: list[WorkerPool] = []
    first = threading.Thread(target=lambda: made.append(WorkerPool(2, _setup, ("x",))))
    first.start()
    first.join()
    pool = made[0]
    try:
        time.sleep(0.5)
        assert not pool.broken and len(pool.pids()) == 2
        assert [pool.submit(_task, i).result(timeout=60)[0] for i in range(4)] == [0, 1, 4, 9]
    finally:
        pool.shutdown()


def test_a_worker_whose_task_left_a_stuck_plugin_is_replaced() -> None:
    """A task that gave up on a plugin that never returns (nutch2/mapred/timebox.py) leaves its thread behind: the
    worker retires after the task and a fresh interpreter serves the next one."""
    pool = WorkerPool(1, _setup, ("x",))
    try:
        first = pool.submit(_abandon_a_stuck_thread).result(timeout=60)
        second = pool.submit(_task, 2).result(timeout=60)
        assert second[0] == 4 and second[1] != first and pool.retired == 1
    finally:
        pool.shutdown()


def test_a_stop_forwarded_between_tasks_stops_no_later_task() -> None:
    """The driver forwards a stop (SIGTERM) to its workers for the work running then; a long-lived process (tests,
    the job API) runs more jobs on the same workers, whose next task starts with no stop request."""
    from nutch2.mapred.processes import _init_worker  # the runner's setup: SIGTERM is a stop request

    pool = WorkerPool(1, _init_worker, (("INFO", None),))
    try:
        pid = pool.submit(_between_records).result(timeout=60)
        os.kill(pid, signal.SIGTERM)
        time.sleep(0.5)
        assert pool.submit(_between_records).result(timeout=60) == pid  # not Stopped, the same worker
    finally:
        pool.shutdown()


def test_shutdown_lets_the_workers_go() -> None:
    pool = WorkerPool(2, _setup, ("x",))
    pool.submit(_task, 1).result(timeout=60)
    procs = [psutil.Process(pid) for pid in pool.pids()]
    pool.shutdown()
    gone, alive = psutil.wait_procs(procs, timeout=30)
    assert not alive


def _explode() -> None:
    raise ValueError("not here")


class _Unreadable:
    """Pickles in the worker; unpickling it in the driver raises."""

    def __reduce__(self):  # type: ignore[no-untyped-def]
        return _explode, ()


def _unreadable() -> _Unreadable:
    return _Unreadable()


def test_a_result_that_cannot_be_read_fails_its_task_not_the_pool() -> None:
    pool = WorkerPool(1, _setup, ("x",))
    try:
        with pytest.raises(RuntimeError, match="cannot read a worker's result.*not here"):
            pool.submit(_unreadable).result(timeout=60)
        assert pool.submit(_task, 5).result(timeout=60)[0] == 25
    finally:
        pool.shutdown(wait=True)


def _served_by(pool: WorkerPool, n: int) -> list[int]:
    futures = [pool.submit(_task, i) for i in range(n)]  # queued at once: some wait for a retiring worker
    results = [f.result(timeout=60) for f in futures]
    assert [r[0] for r in results] == [i * i for i in range(n)]
    assert {r[2] for r in results} == {"set up"}  # a fresh worker is set up as the first ones were
    return [r[1] for r in results]


def test_a_worker_over_its_memory_bound_retires_after_its_task_and_a_fresh_one_takes_its_place() -> None:
    pool = WorkerPool(1, _setup, ("set up",), max_rss_mb=1)  # every interpreter is over 1 MB
    try:
        pids = _served_by(pool, 5)
        assert len(set(pids)) == 5  # a task per process
        deadline = time.monotonic() + 30
        while pool.retired < 5 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert pool.retired == 5 and len(pool.pids()) == 1 and pool.pids()[0] not in pids
        assert pool.records() == 50  # the records of the workers that retired still count
        assert not any(psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE for p in pids)
        with pytest.raises(KeyError, match="bad row"):  # a failed task retires its worker too, the pool serves on
            pool.submit(_fail, "bad row").result(timeout=60)
        assert pool.submit(_task, 3).result(timeout=60)[0] == 9
    finally:
        pool.shutdown(wait=True)


def test_a_worker_under_its_memory_bound_serves_every_task() -> None:
    pool = WorkerPool(1, _setup, ("set up",), max_rss_mb=100_000)
    try:
        assert len(set(_served_by(pool, 5))) == 1 and pool.retired == 0
    finally:
        pool.shutdown(wait=True)


def test_a_retiring_worker_that_does_not_end_is_killed_and_its_slot_still_served(monkeypatch) -> None:
    """A task left a thread running, so the retiring interpreter cannot exit: the pool kills it after _EXIT_WAIT
    rather than leave its slot (and the job) waiting."""
    from nutch2.mapred import workers

    monkeypatch.setattr(workers, "_EXIT_WAIT", 1.0)
    pool = WorkerPool(1, _setup, ("set up",), max_rss_mb=1)
    try:
        stuck = pool.submit(_leave_a_thread).result(timeout=60)
        result = pool.submit(_task, 4).result(timeout=30)
        assert result[0] == 16 and result[1] != stuck
        assert not psutil.pid_exists(stuck) or psutil.Process(stuck).status() == psutil.STATUS_ZOMBIE
    finally:
        pool.shutdown(wait=True)
