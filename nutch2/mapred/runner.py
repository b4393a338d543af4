"""Jobs and runners. A job is a picklable description: what to read, a map, optional reduce steps, a final step.

A job never loops over the table itself: it names what it reads as a store Query (fields, a mark or due
filter), or its own inputs; a runner asks the store for the query's partitions, runs one map task per partition,
partitions what the maps emit over the first step's reducers,
sorts each partition by key and runs the reducers; what a reducer emits goes to the next step; at the end the
job's final step runs on the driver with the per-task results. Tasks share nothing but what the runner passes:
every task works on its own copy of the job (setup hooks open clients, cleanup hooks close them), counters are
per task and merged by the runner, and partitioning uses a stable hash.

Runners, chosen by `mapreduce.framework.name` (nutch2/mapred/runners.py): `local` (tasks in threads of this
process, here), `processes` (worker processes; nutch2/mapred/processes.py) and `spark` (nutch2/mapred/spark.py). All
run the same task bodies (map_pairs, reduce_pairs).
"""

from __future__ import annotations

import os
import pickle
import threading
import time
import zlib
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from itertools import groupby
from operator import itemgetter
from typing import Any

from nutch2 import failpoints
from nutch2.config import Configuration
from nutch2.errors import ConfigError
from nutch2.logs import debug, log
from nutch2.mapred import progress, stop
from nutch2.mapred.memory import release_memory
from nutch2.mapred.shuffle import MapOutput, Run, SpillDir, merge
from nutch2.stores.base import DataStore, MarkFilter
from nutch2.stores.query import Partition, Query
from nutch2.webpage import WebPage


class Counters:
    """Thread-safe named counters, printed as one summary line at the end of a job (like Hadoop's). The counters
    of tasks running in this process count in `as_dict()` while they run (the job API shows them live)."""

    def __init__(self, job: str) -> None:
        self.job = job
        self._c: dict[str, int] = defaultdict(int)
        self._lock = threading.Lock()
        self._tasks: list[Counters] = []  # of the tasks running here, until settle() takes their final counts
        self._remote: list[Callable[[], list[dict[str, int]]]] = []  # counts of tasks running elsewhere
        self.started = time.monotonic()

    def task(self) -> Counters:
        """New counters for a task that runs in this process, counted live until its phase is settled."""
        counters = Counters(self.job)
        with self._lock:
            self._tasks.append(counters)
        return counters

    def watch(self, counts: Callable[[], list[dict[str, int]]]) -> None:
        """Counts of tasks that run in other processes, as they last reported them (each task's only grow),
        counted live until settle()."""
        with self._lock:
            self._remote.append(counts)

    def settle(self, counts: list[dict[str, int]]) -> None:
        """The tasks of a phase ended: their final counts (from wherever they ran) replace the live ones."""
        with self._lock:
            self._tasks.clear()
            self._remote.clear()
            for task in counts:
                for name, n in task.items():
                    self._c[name] += n

    def incr(self, name: str, n: int = 1) -> None:
        with self._lock:
            self._c[name] += n

    def merge(self, counts: dict[str, int]) -> None:
        with self._lock:
            for name, n in counts.items():
                self._c[name] += n

    def get(self, name: str) -> int:
        return self._c.get(name, 0)

    def as_dict(self) -> dict[str, int]:
        with self._lock:
            out, tasks, remote = dict(self._c), list(self._tasks), list(self._remote)
        live = [task.as_dict() for task in tasks] + [counts for fn in remote for counts in fn()]
        for counts in live:
            for name, n in counts.items():
                out[name] = out.get(name, 0) + n
        return out

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def summary(self) -> str:
        parts = " ".join(f"{k}={v}" for k, v in sorted(self.as_dict().items()))
        return f"{self.job}: finished in {self.elapsed():.1f} s: {parts or 'nothing done'}"


MAX_MESSAGES = 1000  # lines a task in another process keeps for the driver to print


class TaskContext:
    """What a task sees: the configuration, the store it writes to, its counters, its number and step
    (-1 for a map task, i for the reducers of step i). Lines for the user go through log(): printed at once in
    this process, or kept (the first MAX_MESSAGES) and printed by the driver when the task ran elsewhere.
    `attempt` is None where the runner runs each task once (local, processes); a runner that may run a task
    again, or two attempts of it at once (Spark: retries, lost executors, stage re-runs, speculation), names
    each attempt, so a job whose tasks act on the world (fetch) can keep its attempts apart."""

    def __init__(self, conf: Configuration, store: DataStore, counters: Counters, task: int, step: int = -1,
                 messages: list[str] | None = None) -> None:
        self.conf = conf
        self.store = store
        self.counters = counters
        self.task = task
        self.step = step
        self.messages = messages
        self.dropped = 0
        self.attempt: str | None = None
        self.records = 0  # records read (map) or taken in (reduce) so far: the job's progress line

    def log(self, msg: str) -> None:
        if self.messages is None:
            log(msg)
        elif len(self.messages) < MAX_MESSAGES:
            self.messages.append(msg)
        else:
            self.dropped += 1

    def write(self, page: WebPage) -> None:
        """Write the page's dirty fields (the store batches them)."""
        if page.is_dirty():
            self.store.put(page.key, page)

    def incr(self, name: str, n: int = 1) -> None:
        self.counters.incr(name, n)


@dataclass(frozen=True)
class Step:
    """One reduce step: the number of reducers (None: one per task)."""

    reducers: int | None = None


class Job:
    """Base of every job. Subclasses set `name` and `fields` and override map (and the reduce side when they
    declare steps). Attributes must pickle: build clients and caches in the setup hooks, on the task's copy."""

    name = "job"
    fields: tuple[str, ...] | None = None  # fields the map reads (None: all)
    has_reduce = False  # a single reduce step (steps() says more)
    progress_line = True  # the runner shows records done and records/s (False: the job shows its own)
    map_phase = "map"  # what the progress line calls the map tasks' work

    def __init__(self, conf: Configuration) -> None:
        self.conf = conf

    # ---------------------------------------------------------------- input (driver, then task)
    def mark_filter(self) -> MarkFilter | None:
        """Only rows carrying this mark (name, value or None for any) reach the map."""
        return None

    def query(self) -> Query:
        """What the map reads from the store: the job's fields and mark filter."""
        return Query(self.fields, self.mark_filter())

    def inputs(self, store: DataStore, n: int) -> list[Any]:
        """What each map task reads, as picklable descriptions: by default the store's partitions of query()."""
        return list(store.partitions(self.query(), n))

    def read(self, split: Any, store: DataStore) -> Iterable[Any]:
        """The records of one input (in the task): by default the rows of one partition of query()."""
        part: Partition = split
        return store.read(self.query(), part)

    # ---------------------------------------------------------------- map
    def map_setup(self, ctx: TaskContext) -> None:
        """Called once per map task before its first record."""

    def map(self, record: Any, ctx: TaskContext) -> Iterable[tuple[Any, Any]]:
        """Process one record; write through ctx or yield (shuffle key, value) pairs for the reduce."""
        return ()

    def map_cleanup(self, ctx: TaskContext) -> None:
        """Called once per map task after its last record (also after a failure: close what setup opened)."""

    # ---------------------------------------------------------------- reduce
    def steps(self) -> list[Step]:
        """The reduce steps; none for a map-only job."""
        return [Step()] if self.has_reduce else []

    def partition(self, key: Any, value: Any, n: int) -> int:
        return stable_hash(key) % n

    def sort_key(self, step: int = 0) -> Callable[[tuple[Any, Any]], Any]:
        """How the input of the reducers of `step` is sorted."""
        return itemgetter(0)

    def reduce_setup(self, ctx: TaskContext) -> None:
        """Called once per reduce task before its first record."""

    def run_reducer(self, items: Iterator[tuple[Any, Any]], ctx: TaskContext) -> Iterable[tuple[Any, Any]] | None:
        """Consume one sorted partition; what it returns (or yields) goes to the next step. The default groups
        values by key and calls reduce."""
        for key, group in groupby(items, key=itemgetter(0)):
            self.reduce(key, [v for _, v in group], ctx)
        return None

    def reduce(self, key: Any, values: list[Any], ctx: TaskContext) -> None:
        """Process all values of one shuffle key."""

    def reduce_cleanup(self, ctx: TaskContext) -> None:
        """Called once per reduce task after its last record (also after a failure)."""

    # ---------------------------------------------------------------- results (task, then driver)
    def result(self, ctx: TaskContext) -> Any:
        """What this task hands to the final step (None: nothing)."""
        return None

    def finish(self, results: list[Any], ctx: TaskContext) -> None:
        """The final, single step on the driver, after every task, with the tasks' results."""


def stable_hash(key: Any) -> int:
    """A hash that is the same in every process and on every machine (str's hash is salted per process)."""
    data = key.encode("utf-8") if isinstance(key, str) else repr(key).encode("utf-8")
    return zlib.crc32(data)


@dataclass
class TaskOutput:
    """What a task gives back to its runner."""

    counters: dict[str, int]
    result: Any = None
    runs: list[list[Run]] = field(default_factory=list)  # per partition of the next step
    spilled: int = 0
    messages: list[str] = field(default_factory=list)  # lines for the driver to print (tasks in other processes)


def map_pairs(job: Job, split: Any, ctx: TaskContext) -> Iterator[tuple[Any, Any]]:
    """The body of a map task: setup, every record of the split through map, cleanup (also when the task fails
    or its consumer stops early); yields what the map emits. Every runner runs its map tasks through it."""
    job.map_setup(ctx)
    try:
        for record in job.read(split, ctx.store):
            stop.check()  # a stop request ends the task between records (the job is safe to run again)
            ctx.records += 1
            yield from job.map(record, ctx) or ()
    finally:
        job.map_cleanup(ctx)


def reduce_pairs(job: Job, items: Iterator[tuple[Any, Any]], ctx: TaskContext) -> Iterator[tuple[Any, Any]]:
    """The body of a reduce task of step ctx.step over its sorted partition; yields what goes to the next step."""
    job.reduce_setup(ctx)
    try:
        yield from job.run_reducer(_until_stopped(items, ctx), ctx) or ()
        stop.check()  # a reducer that ended early because of a stop did not finish its partition
    finally:
        job.reduce_cleanup(ctx)


def _until_stopped(items: Iterator[tuple[Any, Any]], ctx: TaskContext) -> Iterator[tuple[Any, Any]]:
    for item in items:
        stop.check()
        ctx.records += 1
        yield item


def task_context(job: Job, store: DataStore, task: int, step: int = -1, remote: bool = False,
                 counters: Counters | None = None) -> TaskContext:
    """A task's context: its own counters (given: live ones of the job's, Counters.task); remote (another
    process), its lines go back to the driver."""
    return TaskContext(job.conf, store, counters or Counters(job.name), task, step,
                       messages=[] if remote else None)


def run_map_task(job: Job, split: Any, task: int, store: DataStore, out: MapOutput | None,
                 remote: bool = False, counters: Counters | None = None) -> TaskOutput:
    """One map task on its own copy of the job, its output partitioned into `out`."""
    ctx = task_context(job, store, task, remote=remote, counters=counters)
    with _task(job, ctx, "map"):
        _collect_into(job, map_pairs(job, split, ctx), out)
    return _output(job, ctx, out)


def run_reduce_task(job: Job, step: int, runs: list[Run], task: int, store: DataStore,
                    out: MapOutput | None, remote: bool = False, counters: Counters | None = None) -> TaskOutput:
    """One reduce task of `step` on its own copy of the job: its partition's runs, merged."""
    ctx = task_context(job, store, task, step, remote, counters)
    with _task(job, ctx, f"reduce {step}"):
        _collect_into(job, reduce_pairs(job, merge(runs, job.sort_key(step)), ctx), out)
    return _output(job, ctx, out)


@contextmanager
def _task(job: Job, ctx: TaskContext, kind: str) -> Iterator[None]:
    """A task's debug lines and its share of the job's progress."""
    started = time.monotonic()
    debug(f"{job.name}: {kind} task {ctx.task} started")
    progress.task_started(ctx)
    how = "failed"
    try:
        yield
        how = "ended"
    except stop.Stopped:
        how = "stopped"
        raise
    finally:
        progress.task_ended(ctx)
        debug(f"{job.name}: {kind} task {ctx.task} {how}: {ctx.records} records in "
              f"{time.monotonic() - started:.1f} s")


def _collect_into(job: Job, pairs: Iterator[tuple[Any, Any]], out: MapOutput | None) -> None:
    for key, value in pairs:
        if out is None:
            raise RuntimeError(f"{job.name}: a task emitted a pair but no reduce step follows")
        out.collect(job.partition(key, value, out.partitions), key, value)


def _output(job: Job, ctx: TaskContext, out: MapOutput | None) -> TaskOutput:
    runs = out.close() if out is not None else []
    messages = list(ctx.messages or ())
    if ctx.dropped:
        messages.append(f"{job.name}: task {ctx.task}: {ctx.dropped} more lines like these")
    return TaskOutput(ctx.counters.as_dict(), job.result(ctx), runs, out.spilled_records if out else 0, messages)


def default_tasks(conf: Configuration) -> int:
    """mapreduce.job.tasks, or one task per core of this machine when it is 0 (the default)."""
    n = conf.get_int("mapreduce.job.tasks")
    return n if n > 0 else os.cpu_count() or 1


class Runner:
    """Runs a job: map tasks over the input splits, then each reduce step, then the final step here."""

    to_disk = False  # map output always written to files (reducers in other processes)
    framework = "local"  # mapreduce.framework.name

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
        debug(f"{job.name}: {self.framework} runner: {len(splits)} map tasks"
              + "".join(f", reduce step {s}: {self._reducers(steps, s)} tasks" for s in range(len(steps))))
        spill = SpillDir(self.conf.get_str("mapreduce.cluster.local.dir"))
        results: list[Any] = []
        watch = progress.JobProgress(job.name, job.map_phase, self.conf, self.records_done) \
            if job.progress_line else None
        try:
            parts = self._reducers(steps, 0)
            outs = self.map_tasks(job, splits, store, spill, parts)
            runs = self._collect(outs, counters, results, parts)
            for s in range(len(steps)):
                if watch is not None:
                    watch.phase("reduce" if len(steps) == 1 else f"reduce {s}", "records")
                parts = self._reducers(steps, s + 1)
                outs = self.reduce_tasks(job, s, runs, store, spill, parts)
                runs = self._collect(outs, counters, results, parts)
        finally:
            spill.remove()
            if watch is not None:
                watch.close()
        job.finish(results, TaskContext(self.conf, store, counters, 0))
        store.flush()
        release_memory()
        failpoints.reach("runner.job")
        return counters

    def check(self, job: Job, store: DataStore) -> None:
        """Refuse a job this runner cannot run (before any task starts)."""

    def records_done(self) -> int:
        """Records done so far by every task this runner ran (it only grows): the progress line's count."""
        return progress.records()

    def _reducers(self, steps: list[Step], s: int) -> int:
        if s >= len(steps):
            return 0
        return max(1, steps[s].reducers or self.num_tasks)

    def _output(self, job: Job, parts: int, step: int, spill: SpillDir) -> MapOutput | None:
        if not parts:
            return None
        return MapOutput(parts, job.sort_key(step), self.budget, spill, to_disk=self.to_disk)

    @staticmethod
    def _collect(outs: list[TaskOutput], counters: Counters, results: list[Any], parts: int) -> list[list[Run]]:
        runs: list[list[Run]] = [[] for _ in range(parts)]
        counters.settle([out.counters for out in outs])
        for out in outs:
            for msg in out.messages:
                log(msg)
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

    @staticmethod
    def _parallel(fn: Callable[[int], TaskOutput], n: int) -> list[TaskOutput]:
        if n == 1:
            return [fn(0)]
        with ThreadPoolExecutor(max_workers=n) as pool:
            return results([pool.submit(fn, i) for i in range(n)])


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


def task_copy(job: Job) -> Job:
    """The task's own copy of the job, made the way a worker process gets it (so local runs prove it ships)."""
    return pickle.loads(pickle.dumps(job, pickle.HIGHEST_PROTOCOL))
