"""Jobs and the local runner. A job says what to read, maps records, optionally shuffles and reduces, and writes.

A job never loops over the table itself: it names fields and a mark filter; the runner asks the store for
splits, runs one map task per split, partitions what the maps emit over reducers, sorts each partition by
key and runs the reducers. A distributed runner can execute the same Job unchanged.
"""

from __future__ import annotations

import ctypes
import sys
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from itertools import groupby
from operator import itemgetter
from typing import Any

from nutch2 import failpoints
from nutch2.config import Configuration
from nutch2.errors import ConfigError
from nutch2.shuffle import Shuffle
from nutch2.stores.base import DataStore, MarkFilter
from nutch2.webpage import WebPage


class Counters:
    """Thread-safe named counters, printed as one summary line at the end of a job (like Hadoop's)."""

    def __init__(self, job: str) -> None:
        self.job = job
        self._c: dict[str, int] = defaultdict(int)
        self._lock = threading.Lock()
        self.started = time.monotonic()

    def incr(self, name: str, n: int = 1) -> None:
        with self._lock:
            self._c[name] += n

    def get(self, name: str) -> int:
        return self._c.get(name, 0)

    def as_dict(self) -> dict[str, int]:
        with self._lock:
            return dict(self._c)

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def summary(self) -> str:
        parts = " ".join(f"{k}={v}" for k, v in sorted(self.as_dict().items()))
        return f"{self.job}: finished in {self.elapsed():.1f} s: {parts or 'nothing done'}"


class TaskContext:
    """What a map or reduce task sees: the configuration, the store to write to, and the counters."""

    def __init__(self, job: Job, conf: Configuration, store: DataStore, counters: Counters, task: int) -> None:
        self.job = job
        self.conf = conf
        self.store = store
        self.counters = counters
        self.task = task

    def write(self, page: WebPage) -> None:
        """Write the page's dirty fields (the store batches them)."""
        if page.is_dirty():
            self.store.put(page.key, page)

    def incr(self, name: str, n: int = 1) -> None:
        self.counters.incr(name, n)


class Job:
    """Base of every job. Subclasses set `name`, `fields` and override map (and reduce when shuffling)."""

    name = "job"
    fields: tuple[str, ...] | None = None  # fields the map reads (None: all)
    has_reduce = False

    def __init__(self, conf: Configuration) -> None:
        self.conf = conf

    def mark_filter(self) -> MarkFilter | None:
        """Only rows carrying this mark (name, value or None for any) reach the map."""
        return None

    def inputs(self, store: DataStore, n: int) -> list[Iterable[Any]]:
        """One iterable of records per map task: by default the store's splits, scanned with fields+mark."""
        mark = self.mark_filter()
        return [_Scan(store, split, self.fields, mark) for split in store.splits(n)]

    def setup(self, ctx: TaskContext) -> None:
        """Called once per task before its first record."""

    def map(self, record: Any, ctx: TaskContext) -> Iterable[tuple[Any, Any]]:
        """Process one record; write through ctx or yield (shuffle key, value) pairs for the reduce."""
        return ()

    def cleanup(self, ctx: TaskContext) -> None:
        """Called once per task after its last record."""

    def num_reducers(self, num_tasks: int) -> int:
        return num_tasks

    def partition(self, key: Any, value: Any, n: int) -> int:
        return hash(key) % n

    def run_reducer(self, items: Iterator[tuple[Any, Any]], ctx: TaskContext) -> None:
        """Consume one partition sorted by key. The default groups values by key and calls reduce."""
        for key, group in groupby(items, key=itemgetter(0)):
            self.reduce(key, [v for _, v in group], ctx)

    def reduce(self, key: Any, values: list[Any], ctx: TaskContext) -> None:
        """Process all values of one shuffle key."""

    def sort_key(self) -> Callable[[tuple[Any, Any]], Any]:
        return itemgetter(0)

    def finish(self, ctx: TaskContext) -> None:
        """Called once after every reducer has finished (a final, single-task step)."""


class _Scan:
    """A lazy scan of one split; iterating it reads the store."""

    def __init__(self, store: DataStore, split: Any, fields: tuple[str, ...] | None, mark: MarkFilter | None) -> None:
        self.store, self.split, self.fields, self.mark = store, split, fields, mark

    def __iter__(self) -> Iterator[WebPage]:
        return iter(self.store.scan_split(self.split, self.fields, self.mark))


class JobFailed(Exception):
    """A task raised; the original exception is the cause."""


class LocalRunner:
    """Runs a job on this machine: num_tasks map threads, then num_reducers reduce threads."""

    def __init__(self, conf: Configuration, num_tasks: int | None = None) -> None:
        self.conf = conf
        self.num_tasks = max(1, num_tasks or conf.get_int("mapreduce.job.tasks"))

    def run(self, job: Job, store: DataStore, counters: Counters | None = None) -> Counters:
        counters = counters or Counters(job.name)
        inputs = job.inputs(store, self.num_tasks)
        nred = job.num_reducers(self.num_tasks) if job.has_reduce else 0
        sort_mb = self.conf.get_float("mapreduce.task.io.sort.mb")
        if sort_mb <= 0:
            raise ConfigError(f"mapreduce.task.io.sort.mb={sort_mb:g} must be > 0 (MB of map output held in memory)")
        shuffle = Shuffle(nred, job.sort_key(), int(sort_mb * 1024 * 1024),
                          self.conf.get_str("mapreduce.cluster.local.dir"))

        def map_task(i: int) -> None:
            ctx = TaskContext(job, self.conf, store, counters, i)
            job.setup(ctx)
            out = shuffle.collector()
            for record in inputs[i]:
                for key, value in job.map(record, ctx) or ():
                    if not nred:
                        raise RuntimeError(f"{job.name}: map emitted a pair but the job has no reduce")
                    out.collect(job.partition(key, value, nred), key, value)
            job.cleanup(ctx)
            out.close()

        try:
            self._parallel(map_task, len(inputs))
            store.flush()
            release_memory()
            if shuffle.spilled_records:
                counters.incr("spilled_records", shuffle.spilled_records)
            if nred:
                def reduce_task(p: int) -> None:
                    ctx = TaskContext(job, self.conf, store, counters, p)
                    job.setup(ctx)
                    job.run_reducer(shuffle.reader(p), ctx)
                    job.cleanup(ctx)

                self._parallel(reduce_task, nred)
                store.flush()
        finally:
            shuffle.close()
        job.finish(TaskContext(job, self.conf, store, counters, 0))
        store.flush()
        release_memory()
        failpoints.reach("runner.job")
        return counters

    @staticmethod
    def _parallel(fn: Callable[[int], None], n: int) -> None:
        if n == 1:
            fn(0)
            return
        with ThreadPoolExecutor(max_workers=n) as pool:
            futures = [pool.submit(fn, i) for i in range(n)]
            for f in futures:
                f.result()


def _load_malloc_trim() -> Callable[[int], int] | None:
    try:
        return ctypes.CDLL("libc.so.6").malloc_trim
    except (OSError, AttributeError):  # not glibc
        return None


_malloc_trim = _load_malloc_trim()


def release_memory() -> None:
    """Give the heap's free pages back to the OS (glibc malloc_trim) after a job or phase.

    Python frees a phase's objects, but glibc keeps the freed pages mapped, so the process would stay at the
    high-water mark of its biggest job for the rest of a crawl. No-op on other C libraries.
    """
    if _malloc_trim is not None:
        _malloc_trim(0)


def log(msg: str) -> None:
    """A progress or summary line on stderr."""
    print(msg, file=sys.stderr, flush=True)
