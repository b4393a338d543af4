"""The `processes` runner: map and reduce tasks in worker processes on this machine (`mapreduce.job.tasks` of
them, the first in the driver itself), so that fetching, parsing and updating use every core.

Each task gets the pickled job, opens its own store from the job's configuration and the crawl id, and writes
its map output as spill files into the job's spill folder; the driver hands each reducer the files of its
partition. Task 0 of every phase runs in a thread of the driver, the same way (its own copy of the job and its own
store), so n tasks take n - 1 workers: one interpreter fewer. Workers are started (spawned) once per command and
kept for the jobs that follow (they keep nothing between tasks); they die with the command. A worker that dies
(kill -9, out of memory) fails the job with one line; every job can then be run again with the same command.

Workers log as the driver does (its levels and log file) and report, a few times a second, the records their
tasks have done and their requests in flight (nutch2/mapred/workers.py): the job's progress line and the stop line
("finishing N requests in flight") count them.
"""

from __future__ import annotations

import atexit
import logging
import os
import pickle
import signal
import threading
from collections.abc import Callable
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from typing import Any

from nutch2 import logs
from nutch2.config import Configuration
from nutch2.errors import ConfigError, WorkerDied
from nutch2.mapred import affinity, progress, stop, timebox
from nutch2.mapred.job import Counters, Job
from nutch2.mapred.memory import release_memory
from nutch2.mapred.runner import Runner
from nutch2.mapred.shuffle import MapOutput, Run, SpillDir
from nutch2.mapred.task import TaskOutput, run_map_task, run_reduce_task
from nutch2.mapred.workers import BrokenPool, WorkerPool
from nutch2.stores import open_store
from nutch2.stores.base import DataStore
from nutch2.stores.query import Capability

_pool: WorkerPool | None = None
_uncount: Any = None  # removes the pool's count of requests in flight from the stop line
_busy = 0  # jobs of this process whose tasks are in the pool now (a pipelined crawl runs two at once)
_base = 0  # workers per job of the pool now (it has more when it grew for jobs beside each other)
_pool_lock = threading.Lock()
log = logging.getLogger(__name__)


class ProcessRunner(Runner):
    """Runs every task in a worker process."""

    to_disk = True
    framework = "processes"

    def __init__(self, conf: Configuration, num_tasks: int | None = None) -> None:
        super().__init__(conf, num_tasks)
        self.driver_task = conf.get_bool("mapreduce.processes.driver.task")  # task 0 in a thread of the command
        self.here = self.driver_task
        limit = max_workers()
        if self.num_tasks > limit:
            raise ConfigError(f"{self.num_tasks} tasks: the processes runner starts one worker process per task, "
                              f"at most {limit} on this machine ({os.cpu_count() or 1} cores); give -numTasks "
                              f"{limit} or less (mapreduce.job.tasks)")

    def run(self, job: Job, store: DataStore, counters: Counters | None = None) -> Counters:
        self.here = self.driver_task and not _left_behind()  # task 0 of each phase in the driver, or in a worker
        return super().run(job, store, counters)

    def check(self, job: Job, store: DataStore) -> None:
        if not store.has(Capability.SHARED_PROCESSES):
            raise ConfigError(f"mapreduce.framework.name=processes cannot use the {store.name} store (its rows live "
                              "in one process); use storage.data.store.class=sqlite, postgres, hbase or cassandra, "
                              "or the local runner")
        store.flush()  # what the driver wrote must be visible to the workers

    def map_tasks(self, job: Job, splits: list[Any], store: DataStore, spill: SpillDir,
                  parts: int) -> list[TaskOutput]:
        spill.create()
        data = pickle.dumps(job, pickle.HIGHEST_PROTOCOL)
        return self._run(job, [(_map_worker, (data, split, i, store.crawl_id, parts, self.budget, spill))
                               for i, split in enumerate(splits)])

    def reduce_tasks(self, job: Job, step: int, runs: list[list[Run]], store: DataStore, spill: SpillDir,
                     parts: int) -> list[TaskOutput]:
        data = pickle.dumps(job, pickle.HIGHEST_PROTOCOL)
        return self._run(job, [(_reduce_worker, (data, step, p_runs, p, store.crawl_id, parts, self.budget, spill))
                               for p, p_runs in enumerate(runs)])

    def _run(self, job: Job, tasks: list[tuple[Callable[..., TaskOutput], tuple[Any, ...]]]) -> list[TaskOutput]:
        """Task 0 here, in a thread of the driver (which would only wait), the others in the worker processes:
        n tasks take n - 1 workers, so one interpreter fewer holds its libraries and pages. Without `here`
        (mapreduce.processes.driver.task false: the job server), every task in a worker."""
        if not tasks:  # a job with no input splits (e.g. an empty seed list)
            return []
        futures: list[Future[TaskOutput]] = []
        pool: WorkerPool | None = None
        remote = tasks[1:] if self.here else tasks
        if remote:
            pool = self._pool()
        remote_futures: list[Future[TaskOutput]] = []
        try:
            if pool is not None:
                futures = remote_futures = [pool.submit(fn, *args) for fn, args in remote]
                self._count_live(pool, futures)
            if not self.here:
                return self._gather(job, futures, here=False)
            with ThreadPoolExecutor(max_workers=1, thread_name_prefix="task") as here:
                fn, args = tasks[0]
                futures = [here.submit(fn, *args, live=self.counters.task()), *futures]
                return self._gather(job, futures)
        except BaseException:
            if pool is not None:  # a stop or a failure: what the workers' unfinished tasks counted is kept
                for f in remote_futures:
                    if not f.done() or f.cancelled() or f.exception() is not None:
                        self.counters.merge(pool.live_counts(f))
            raise
        finally:
            if pool is not None:
                pool.forget(futures)
                _release()

    def _count_live(self, pool: WorkerPool, futures: list[Future[TaskOutput]]) -> None:
        """The job's counters count the workers' tasks while they run (the job API shows them live): each task's
        counters as it last reported them, then its final ones, until the phase settles them."""
        final: dict[int, dict[str, int]] = {}

        def ended(future: Future[TaskOutput]) -> None:
            if not future.cancelled() and future.exception() is None:
                final[id(future)] = future.result().counters

        for future in futures:
            future.add_done_callback(ended)
        self.counters.watch(lambda: [final.get(id(f)) or pool.live_counts(f) for f in futures])

    def records_done(self) -> int:
        """Records of the driver's own tasks and of the workers' (as they last reported)."""
        pool = _pool
        return progress.records() + (pool.records() if pool is not None else 0)

    def _pool(self) -> WorkerPool:
        """The process's pool, with a worker per task of this job (the driver runs one) besides those of the jobs
        already running in it (released by _release())."""
        global _pool, _uncount, _busy, _base
        workers = max(1, self.num_tasks - 1) if self.here else self.num_tasks  # the driver runs a task too
        max_mb = self.conf.get_float("mapreduce.processes.worker.max.mb")
        with _pool_lock:
            if _pool is None or _pool.broken or _pool.max_rss_mb != max_mb or (_busy == 0 and _base != workers):
                shutdown_pool()
                # fresh interpreters, not forks: the driver has threads (and a store client)
                _pool = WorkerPool(workers * (_busy + 1), _init_worker, (logs.settings(), logs.levels()), max_mb)
                _uncount = stop.count_in_flight(_workers_in_flight)
                _base = workers
            elif len(_pool.reports) < workers * (_busy + 1):  # kept while the crawl goes on: not started again
                _pool.grow(workers * (_busy + 1))
            _busy += 1
            return _pool

    @staticmethod
    def _gather(job: Job, futures: list[Future[TaskOutput]], here: bool = True) -> list[TaskOutput]:
        """Each task's output in order. The first failure ends the job at once: the driver's own task (futures[0],
        with `here`) is asked to stop, and the failure is raised once it has."""
        stopped_by_user = False
        try:
            pending = set(futures)
            while pending:  # wakes a few times a second: the main thread must run the signal handler
                done, pending = wait(pending, timeout=0.2, return_when=FIRST_EXCEPTION)
                if any(f.exception() is not None for f in done if not f.cancelled()):
                    break
            failed = next((f for f in futures if f.done() and not f.cancelled() and f.exception() is not None), None)
            if failed is None:
                return [f.result() for f in futures]
            stopped_by_user = stop.requested()
            if here and not futures[0].done():
                stop.request()  # the job has failed: the driver's own task finishes what it holds and ends
                while not futures[0].done():
                    wait(futures[:1], timeout=0.2)
                if not stopped_by_user:
                    stop.reset()  # that stop was this job's, not a request for the next one
            shutdown_pool()  # its workers may have seen the stop: the next job gets fresh ones
            raise failed.exception()  # type: ignore[misc]
        except BrokenPool:
            shutdown_pool()
            if stopped_by_user:
                raise stop.Stopped() from None
            raise WorkerDied(f"{job.name}: a worker process died (killed, or out of memory); what it wrote is kept "
                             "and the job is safe to run again") from None
        except stop.Stopped:
            shutdown_pool()  # its workers saw the stop; the next command (or API job) gets fresh ones
            raise
        finally:
            for f in futures:
                f.cancel()


def _release() -> None:
    """A job's tasks have left the pool."""
    global _busy
    with _pool_lock:
        _busy = max(0, _busy - 1)


_named_left: set[str] = set()  # the left-behind threads already named in a warning


def _left_behind() -> bool:
    """A task of this process gave up on a thread that still runs (a hung fetcher thread, a parse past its time
    limit: nutch2/mapred/timebox.py). A worker process is replaced after such a task; the driver cannot be. So
    that a long crawl (`crawl -continuous`) does not pile such threads up in it, every task goes to a worker while
    one runs."""
    left = timebox.stuck()
    if not left:
        _named_left.clear()  # a later fetch's hung thread may have an ended one's name (FetcherThread-0)
        return False
    new = [name for name in left if name not in _named_left]
    if new:
        _named_left.update(new)
        log.warning(f"a task of this process left {', '.join(new)} running (a thread it gave up on): while it runs, "
                    "jobs run every task in a worker process, which is replaced after such a task (this one cannot "
                    "be)")
    return True


def max_workers() -> int:
    """Worker processes a command may start here: 4 per core (parsing is CPU-bound; fetching waits)."""
    return max(2, 4 * (os.cpu_count() or 1))


def worker_pids() -> list[int]:
    """The process ids of this process's worker pool (none before a job has started it)."""
    pool = _pool
    return [] if pool is None or pool.broken else pool.pids()


def shutdown_pool(wait: bool = False) -> None:
    """Stop the worker processes (after one died or the job failed; with wait, at exit)."""
    global _pool, _uncount
    if _pool is not None:
        _pool.shutdown(wait)
        _pool = None
    if _uncount is not None:
        _uncount()
        _uncount = None


def _workers_in_flight() -> int | None:
    """Requests in flight in the workers (as they last reported), None when none of them runs a fetcher."""
    pool = _pool
    counts = [n for _, n in pool.reports if n >= 0] if pool is not None else []
    return sum(counts) if counts else None


atexit.register(shutdown_pool, wait=True)


def _forward_stop() -> None:
    """A stop request of the driver reaches every worker (a terminal's Ctrl-C reaches them too, and they ignore
    it: the driver decides)."""
    pool = _pool
    for pid in pool.pids() if pool is not None else []:
        try:
            os.kill(pid, signal.SIGTERM)
        except (ProcessLookupError, PermissionError):
            pass


stop.on_request(_forward_stop)


def kill_workers() -> int:
    """SIGKILL the worker processes (a stopped job whose tasks do not end: a call that holds the interpreter); their
    tasks fail as after any worker's death, and the next job gets fresh workers. The number killed."""
    pool = _pool
    killed = 0
    for pid in pool.pids() if pool is not None else []:
        try:
            os.kill(pid, signal.SIGKILL)
            killed += 1
        except (ProcessLookupError, PermissionError):
            pass
    return killed


def _init_worker(log_settings: tuple[str, Any], levels: dict[str, str] | None = None) -> None:
    """A worker takes SIGTERM as a stop request (the driver forwards its own) and logs as the driver does (its
    levels, those of single loggers too, and its log file)."""
    signal.signal(signal.SIGTERM, lambda *_: stop.request())
    level, log_file = log_settings
    logs.setup(level, log_file, worker=True, levels=levels)


def _open(job: Job, crawl_id: str | None) -> DataStore:
    return open_store(job.conf, crawl_id, create=False)


def _map_worker(data: bytes, split: Any, task: int, crawl_id: str | None, parts: int, budget: int,
                spill: SpillDir, live: Counters | None = None) -> TaskOutput:
    """A map task in a worker, or in the driver (task 0: `live`, the job's counters for it, counted as it runs)."""
    job: Job = pickle.loads(data)
    with affinity.pinned(job.conf):
        store = _open(job, crawl_id)
        try:
            out = MapOutput(parts, job.sort_key(0), budget, spill, to_disk=True) if parts else None
            result = run_map_task(job, split, task, store, out, remote=True, counters=live)
            store.flush()
            return result
        finally:
            store.close()
            release_memory()


def _reduce_worker(data: bytes, step: int, runs: list[Run], task: int, crawl_id: str | None, parts: int,
                   budget: int, spill: SpillDir, live: Counters | None = None) -> TaskOutput:
    job: Job = pickle.loads(data)
    with affinity.pinned(job.conf):
        store = _open(job, crawl_id)
        try:
            out = MapOutput(parts, job.sort_key(step + 1), budget, spill, to_disk=True) if parts else None
            result = run_reduce_task(job, step, runs, task, store, out, remote=True, counters=live)
            store.flush()
            return result
        finally:
            store.close()
            release_memory()
