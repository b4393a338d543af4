"""The `processes` runner: map and reduce tasks in worker processes on this machine (`mapreduce.job.tasks` of
them), so that parsing — in the parse job and in fetch's inline parse — uses every core.

Each task gets the pickled job, opens its own store from the job's configuration and the crawl id, and writes
its map output as spill files into the job's spill folder; the driver hands each reducer the files of its
partition. Workers are started (spawned) once per command and kept for the jobs that follow (they keep nothing
between tasks); they die with the command. A worker that dies (kill -9, out of memory) fails the job with one
line; every job can then be run again with the same command.
"""

from __future__ import annotations

import atexit
import ctypes
import multiprocessing
import os
import pickle
import signal
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from nutch2.config import Configuration
from nutch2.errors import ConfigError, NutchError
from nutch2.mapred import stop
from nutch2.mapred.runner import Job, Runner, TaskOutput, release_memory, run_map_task, run_reduce_task
from nutch2.mapred.shuffle import MapOutput, Run, SpillDir
from nutch2.stores import open_store
from nutch2.stores.base import DataStore

_PR_SET_PDEATHSIG = 1  # prctl(2): the signal this process gets when its parent dies
_pool: ProcessPoolExecutor | None = None
_pool_size = 0


class ProcessRunner(Runner):
    """Runs every task in a worker process."""

    to_disk = True

    def __init__(self, conf: Configuration, num_tasks: int | None = None) -> None:
        super().__init__(conf, num_tasks)
        limit = max_workers()
        if self.num_tasks > limit:
            raise ConfigError(f"{self.num_tasks} tasks: the processes runner starts one worker process per task, "
                              f"at most {limit} on this machine ({os.cpu_count() or 1} cores); give -numTasks "
                              f"{limit} or less (mapreduce.job.tasks)")

    def check(self, job: Job, store: DataStore) -> None:
        if store.name == "memory":
            raise ConfigError("mapreduce.framework.name=processes cannot use the memory store (its rows live in "
                              "one process); use storage.data.store.class=sqlite, hbase or cassandra, or the "
                              "local runner")
        store.flush()  # what the driver wrote must be visible to the workers

    def map_tasks(self, job: Job, splits: list[Any], store: DataStore, spill: SpillDir,
                  parts: int) -> list[TaskOutput]:
        spill.create()
        data = pickle.dumps(job, pickle.HIGHEST_PROTOCOL)
        pool = self._pool()
        return self._gather(job, [pool.submit(_map_worker, data, split, i, store.crawl_id, parts, self.budget, spill)
                                  for i, split in enumerate(splits)])

    def reduce_tasks(self, job: Job, step: int, runs: list[list[Run]], store: DataStore, spill: SpillDir,
                     parts: int) -> list[TaskOutput]:
        data = pickle.dumps(job, pickle.HIGHEST_PROTOCOL)
        pool = self._pool()
        return self._gather(job, [pool.submit(_reduce_worker, data, step, p_runs, p, store.crawl_id, parts,
                                              self.budget, spill) for p, p_runs in enumerate(runs)])

    def _pool(self) -> ProcessPoolExecutor:
        global _pool, _pool_size
        if _pool is None or _pool_size != self.num_tasks:
            shutdown_pool()
            ctx = multiprocessing.get_context("spawn")  # not fork: the driver has threads (and a store client)
            _pool = ProcessPoolExecutor(max_workers=self.num_tasks, mp_context=ctx, initializer=_init_worker,
                                        initargs=(os.getpid(),))
            _pool_size = self.num_tasks
        return _pool

    @staticmethod
    def _gather(job: Job, futures: list[Future[TaskOutput]]) -> list[TaskOutput]:
        try:
            return [f.result() for f in futures]
        except BrokenProcessPool:
            shutdown_pool()
            if stop.requested():
                raise stop.Stopped() from None
            raise NutchError(f"{job.name}: a worker process died (killed, or out of memory); what it wrote is kept "
                             "and the job is safe to run again: run the same command") from None
        except stop.Stopped:
            shutdown_pool()  # its workers saw the stop; the next command (or API job) gets fresh ones
            raise
        finally:
            for f in futures:
                f.cancel()


def max_workers() -> int:
    """Worker processes a command may start here: 4 per core (parsing is CPU-bound; fetching waits)."""
    return max(2, 4 * (os.cpu_count() or 1))


def shutdown_pool() -> None:
    """Stop the worker processes (at exit, or after one died)."""
    global _pool, _pool_size
    if _pool is not None:
        _pool.shutdown(wait=False, cancel_futures=True)
        _pool, _pool_size = None, 0


atexit.register(shutdown_pool)


def _forward_stop() -> None:
    """A stop request of the driver reaches every worker (a terminal's Ctrl-C reaches them too, and they ignore
    it: the driver decides)."""
    pool = _pool
    for proc in list(getattr(pool, "_processes", {}).values()) if pool is not None else []:
        try:
            os.kill(proc.pid, signal.SIGTERM)
        except (ProcessLookupError, PermissionError):
            pass


stop.on_request(_forward_stop)


def _init_worker(driver: int) -> None:
    """A worker dies with the command that started it (kill -9 of the command leaves nothing running)."""
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):  # not Linux/glibc: the pool's own pipes end the worker after its task
        pass
    if os.getppid() != driver:  # the command died before prctl took effect
        os._exit(1)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, lambda *_: stop.request())


def _open(job: Job, crawl_id: str | None) -> DataStore:
    return open_store(job.conf, crawl_id, create=False)


def _map_worker(data: bytes, split: Any, task: int, crawl_id: str | None, parts: int, budget: int,
                spill: SpillDir) -> TaskOutput:
    job: Job = pickle.loads(data)
    store = _open(job, crawl_id)
    try:
        out = MapOutput(parts, job.sort_key(0), budget, spill, to_disk=True) if parts else None
        result = run_map_task(job, split, task, store, out, remote=True)
        store.flush()
        return result
    finally:
        store.close()
        release_memory()


def _reduce_worker(data: bytes, step: int, runs: list[Run], task: int, crawl_id: str | None, parts: int,
                   budget: int, spill: SpillDir) -> TaskOutput:
    job: Job = pickle.loads(data)
    store = _open(job, crawl_id)
    try:
        out = MapOutput(parts, job.sort_key(step + 1), budget, spill, to_disk=True) if parts else None
        result = run_reduce_task(job, step, runs, task, store, out, remote=True)
        store.flush()
        return result
    finally:
        store.close()
        release_memory()
