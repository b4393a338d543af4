"""Runners: a runner runs a job (nutch2/mapred/job.py) as map tasks over its input splits, then each reduce step
the job declares, then the job's final step here. It partitions what the maps emit over the first step's
reducers, sorts each partition by key and hands it to the step's reducer; what a reducer emits goes to the next
step.

Runners, chosen by `mapreduce.framework.name` (nutch2/mapred/frameworks.py): `local` (tasks in threads of this
process, here), `processes` (worker processes; nutch2/mapred/processes.py) and `spark` (nutch2/mapred/spark.py).
All run the same task bodies (nutch2/mapred/task.py).
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from nutch2 import failpoints
from nutch2.config import Configuration
from nutch2.errors import ConfigError
from nutch2.mapred import affinity, progress
from nutch2.mapred.job import Counters, Job, ReduceStep, TaskContext
from nutch2.mapred.memory import release_memory
from nutch2.mapred.shuffle import MapOutput, Run, SpillDir
from nutch2.mapred.task import TaskOutput, run_map_task, run_reduce_task, task_copy
from nutch2.stores.base import DataStore

log = logging.getLogger(__name__)


def default_tasks(conf: Configuration) -> int:
    """mapreduce.job.tasks, or one task per core of this machine when it is 0 (the default)."""
    n = conf.get_int("mapreduce.job.tasks")
    return n if n > 0 else os.cpu_count() or 1


class Runner:
    """Runs a job: map tasks over the input splits, then each reduce step, then the final step here."""

    to_disk = False  # map output always written to files (reducers in other processes)
    framework = "local"  # mapreduce.framework.name
    here = True  # a task runs in this process (a job that shows its own progress line shows it here)

    def __init__(self, conf: Configuration, num_tasks: int | None = None) -> None:
        self.conf = conf
        self.num_tasks = max(1, num_tasks or default_tasks(conf))
        self.counters = Counters("")  # the running job's (run() sets them): its local tasks count into them live
        sort_mb = conf.get_float("mapreduce.task.io.sort.mb")
        if sort_mb <= 0:
            raise ConfigError(f"mapreduce.task.io.sort.mb={sort_mb:g} must be > 0 (MB of map output held in memory)")
        self.budget = int(sort_mb * 1024 * 1024)

    def run(self, job: Job, store: DataStore, counters: Counters | None = None) -> Counters:
        counters = self.counters = counters or Counters(job.name)
        self.check(job, store)
        splits = job.inputs(store, self.num_tasks)
        steps = job.steps()
        log.debug(f"{job.name}: {self.framework} runner: {len(splits)} map tasks"
                  + "".join(f", reduce step {s}: {self._reducers(steps, s)} tasks" for s in range(len(steps))))
        spill = SpillDir(self.conf.get_str("mapreduce.cluster.local.dir"))
        results: list[Any] = []
        watch = progress.JobProgress(job.name, job.map_phase, self.conf, self.records_done, job.map_unit) \
            if job.progress_line or not self.here else None
        try:
            parts = self._reducers(steps, 0)
            outs = self.map_tasks(job, splits, store, spill, parts)
            runs = self._collect(job, outs, counters, results, parts)
            for s in range(len(steps)):
                if watch is not None:
                    watch.phase("reduce" if len(steps) == 1 else f"reduce {s}", "records")
                parts = self._reducers(steps, s + 1)
                outs = self.reduce_tasks(job, s, runs, store, spill, parts)
                runs = self._collect(job, outs, counters, results, parts)
        finally:
            spill.remove()
            if watch is not None:
                watch.close()
        job.finish(results, TaskContext(self.conf, store, counters, 0, logger=job.logger))
        store.flush()
        release_memory()
        failpoints.reach("runner.job")
        counters.ended = time.monotonic()
        return counters

    def check(self, job: Job, store: DataStore) -> None:
        """Refuse a job this runner cannot run (before any task starts)."""

    def records_done(self) -> int:
        """Records done so far by every task this runner ran (it only grows): the progress line's count."""
        return progress.records()

    def _reducers(self, steps: list[ReduceStep], s: int) -> int:
        if s >= len(steps):
            return 0
        return max(1, steps[s].reducers or self.num_tasks)

    def _output(self, job: Job, parts: int, step: int, spill: SpillDir) -> MapOutput | None:
        if not parts:
            return None
        return MapOutput(parts, job.sort_key(step), self.budget, spill, to_disk=self.to_disk)

    @staticmethod
    def _collect(job: Job, outs: list[TaskOutput], counters: Counters, results: list[Any],
                 parts: int) -> list[list[Run]]:
        runs: list[list[Run]] = [[] for _ in range(parts)]
        counters.settle([out.counters for out in outs])
        for out in outs:
            for msg in out.messages:  # lines of tasks that ran in another process
                job.logger.info(msg)
            if out.spilled:
                counters.incr("spilled_records", out.spilled)
            if out.result is not None:
                results.append(out.result)
            for p, task_runs in enumerate(out.runs):
                runs[p].extend(task_runs)
        release_memory()
        return runs

    def map_tasks(self, job: Job, splits: list[Any], store: DataStore, spill: SpillDir,
                  parts: int) -> list[TaskOutput]:
        raise NotImplementedError

    def reduce_tasks(self, job: Job, step: int, runs: list[list[Run]], store: DataStore, spill: SpillDir,
                     parts: int) -> list[TaskOutput]:
        raise NotImplementedError


class LocalRunner(Runner):
    """Tasks in threads of this process, each on its own copy of the job, all writing through one store."""

    def map_tasks(self, job: Job, splits: list[Any], store: DataStore, spill: SpillDir,
                  parts: int) -> list[TaskOutput]:
        outs = self._parallel(lambda i: run_map_task(task_copy(job), splits[i], i, store,
                                                     self._output(job, parts, 0, spill),
                                                     counters=self.counters.task()), len(splits))
        store.flush()
        return outs

    def reduce_tasks(self, job: Job, step: int, runs: list[list[Run]], store: DataStore, spill: SpillDir,
                     parts: int) -> list[TaskOutput]:
        outs = self._parallel(lambda p: run_reduce_task(task_copy(job), step, runs[p], p, store,
                                                        self._output(job, parts, step + 1, spill),
                                                        counters=self.counters.task()), len(runs))
        store.flush()
        return outs

    def _parallel(self, fn: Callable[[int], TaskOutput], n: int) -> list[TaskOutput]:
        def task(i: int) -> TaskOutput:
            with affinity.pinned(self.conf):  # one process: every task's threads on its processor
                return fn(i)

        if n == 1:
            return [task(0)]
        with ThreadPoolExecutor(max_workers=n) as pool:
            return results([pool.submit(task, i) for i in range(n)])


def results(futures: list[Future[TaskOutput]]) -> list[TaskOutput]:
    """Each task's output, in order (the first failure raised). The waiting (main) thread wakes a few times a
    second: a SIGINT the kernel handed to another thread only runs its Python handler (the stop) once the main
    thread runs, which a plain wait would delay until a task ended."""
    out = []
    for f in futures:
        while True:
            try:
                out.append(f.result(timeout=0.2))
                break
            except TimeoutError:
                continue
    return out


