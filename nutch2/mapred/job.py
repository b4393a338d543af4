"""The job contract: a job is a picklable description of what to read, a map, optional reduce steps and a final
step; a task sees its TaskContext (configuration, store, counters, number, step) and nothing else.

A job never loops over the table itself: it names what it reads as a store Query (fields, a mark or due filter),
or its own inputs; a runner (nutch2/mapred/runner.py) runs one map task per input split, the reduce steps the job
declares, then the job's final step on the driver with the per-task results. Tasks share nothing but what the
runner passes: every task works on its own copy of the job (setup hooks open clients, cleanup hooks close them),
counters are per task and merged by the runner, and partitioning uses a stable hash.
"""

from __future__ import annotations

import logging
import threading
import time
import zlib
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from itertools import groupby
from operator import itemgetter
from typing import Any

from nutch2.config import Configuration
from nutch2.mapred.measures import is_measure
from nutch2.stores.base import DataStore, MarkFilter
from nutch2.stores.query import Partition, Query
from nutch2.webpage import WebPage

log = logging.getLogger(__name__)


class Counters:
    """Thread-safe named counters, printed as one summary line at the end of a job (like Hadoop's). The counters
    of tasks running in this process count in `as_dict()` while they run (the job API shows them live)."""

    runs = 1  # jobs these counters are of (FoldedCounters: several ended jobs of one name)

    def __init__(self, job: str) -> None:
        self.job = job
        self._c: dict[str, int] = defaultdict(int)
        self._lock = threading.Lock()
        self._tasks: list[Counters] = []  # of the tasks running here, until settle() takes their final counts
        self._remote: list[Callable[[], list[dict[str, int]]]] = []  # counts of tasks running elsewhere
        self.started = time.monotonic()
        self.ended: float | None = None  # set by the runner when the job is done

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
        return (self.ended if self.ended is not None else time.monotonic()) - self.started

    def summary(self, stopped: bool = False) -> str:
        """The job's one summary line: its counters (those of a job stopped midway: what it did until then)."""
        parts = " ".join(f"{k}={v}" for k, v in sorted(self.as_dict().items()) if not is_measure(k))
        ended = "stopped after" if stopped else "finished in"
        return f"{self.job}: {ended} {self.elapsed():.1f} s: {parts or 'nothing done'}"


class FoldedCounters(Counters):
    """The counters of ended jobs of one name added up, with their number and seconds: what a long-lived run (a
    continuous crawl, for weeks) keeps of its older jobs instead of one Counters per job. Never changed once made,
    so a reader holding it counts it whole."""

    def __init__(self, job: str, parts: Iterable[Counters]) -> None:
        super().__init__(job)
        self.runs = 0
        self.seconds = 0.0
        for part in parts:
            self.runs += part.runs
            self.seconds += part.elapsed()
            for name, n in part.as_dict().items():
                if not name.startswith("g."):  # a gauge is a running job's only (0 once it ended)
                    self._c[name] += n
        self.ended = self.started

    def elapsed(self) -> float:
        return self.seconds


MAX_MESSAGES = 1000  # lines a task in another process keeps for the driver to print


class TaskContext:
    """What a task sees: the configuration, the store it writes to, its counters, its number and step
    (-1 for a map task, i for the reducers of step i). Lines for the user go through log(): printed at once in
    this process, or kept (the first MAX_MESSAGES) and printed by the driver when the task ran elsewhere, through
    `logger` (the job's: Job.logger).
    `attempt` is None where the runner runs each task once (local, processes); a runner that may run a task
    again, or two attempts of it at once (Spark: retries, lost executors, stage re-runs, speculation), names
    each attempt, so a job whose tasks act on the world (fetch) can keep its attempts apart."""

    def __init__(self, conf: Configuration, store: DataStore, counters: Counters, task: int, step: int = -1,
                 messages: list[str] | None = None, logger: logging.Logger = log) -> None:
        self.conf = conf
        self.logger = logger
        self.store = store
        self.counters = counters
        self.task = task
        self.step = step
        self.messages = messages
        self.dropped = 0
        self.attempt: str | None = None
        self.records = 0  # records read (map) or taken in (reduce) so far: the job's progress line

    @property
    def is_map(self) -> bool:
        """A map task (not a reducer of a step)."""
        return self.step == -1

    def log(self, msg: str) -> None:
        if self.messages is None:
            self.logger.info(msg)
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
class ReduceStep:
    """One reduce step: the number of reducers (None: one per task), the job method each of them runs over its
    sorted partition (run_reducer(items, ctx): what it returns or yields goes to the next step) and the job
    method that gives an item's sort value (None: the shuffle key)."""

    reducers: int | None = None
    reducer: str = "run_reducer"
    sort: str | None = None


class Job:
    """Base of every job. Subclasses set `name` and `fields` and override map (and the reduce side when they
    declare steps). Attributes must pickle: build clients and caches in the setup hooks, on the task's copy."""

    name = "job"
    fields: tuple[str, ...] | None = None  # fields the map reads (None: all)
    has_reduce = False  # a single reduce step (steps() says more)
    progress_line = True  # the runner shows records done and records/s (False: the job shows its own)
    map_phase = "map"  # what the progress line calls the map tasks' work
    map_unit = "rows"  # what it counts in it (record_size of each record read)

    def __init__(self, conf: Configuration) -> None:
        self.conf = conf

    @property
    def logger(self) -> logging.Logger:
        """The logger of the module that defines the job (nutch2.jobs.inject...): its tasks' lines go there."""
        return logging.getLogger(type(self).__module__)

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

    def record_size(self, record: Any) -> int:
        """How many map_units a record read is (the progress line's count): one row by default."""
        return 1

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

    def map_close(self, ctx: TaskContext) -> Iterable[tuple[Any, Any]]:
        """Pairs the map held back (a combiner's buffer), emitted after the task's last record (not after a
        failure)."""
        return ()

    def map_cleanup(self, ctx: TaskContext) -> None:
        """Called once per map task after its last record (also after a failure: close what setup opened)."""

    # ---------------------------------------------------------------- reduce
    def steps(self) -> list[ReduceStep]:
        """The reduce steps; none for a map-only job."""
        return [ReduceStep()] if self.has_reduce else []

    def partition(self, key: Any, value: Any, n: int) -> int:
        return stable_hash(key) % n

    def sort_key(self, step: int = 0) -> Callable[[tuple[Any, Any]], Any]:
        """How the input of the reducers of `step` is sorted: by the method its ReduceStep names, else by key."""
        steps = self.steps()
        name = steps[step].sort if step < len(steps) else None  # (a map-only job's output is read by key)
        return itemgetter(0) if name is None else getattr(self, name)

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

