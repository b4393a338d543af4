"""The bodies of map and reduce tasks, which every runner (local, processes, Spark) runs: a task on its own copy
of the job, its records through the job's hooks, its output partitioned for the next step."""

from __future__ import annotations

import logging
import pickle
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from nutch2.mapred import progress, stop
from nutch2.mapred.job import Counters, Job, TaskContext
from nutch2.mapred.measures import TimedStore
from nutch2.mapred.shuffle import MapOutput, Run, merge
from nutch2.stores.base import DataStore

log = logging.getLogger(__name__)


@dataclass
class TaskOutput:
    """What a task gives back to its runner."""

    counters: dict[str, int]
    result: Any = None
    runs: list[list[Run]] = field(default_factory=list)  # per partition of the next step
    spilled: int = 0
    messages: list[str] = field(default_factory=list)  # lines for the driver to print (tasks in other processes)


def map_pairs(job: Job, split: Any, ctx: TaskContext) -> Iterator[tuple[Any, Any]]:
    """The body of a map task: setup, every record of the split through map, what the map held back, cleanup
    (also when the task fails or its consumer stops early); yields what the map emits. Every runner runs its map
    tasks through it."""
    job.map_setup(ctx)
    try:
        for record in job.read(split, ctx.store):
            stop.check()  # a stop request ends the task between records (the job is safe to run again)
            ctx.records += job.record_size(record)
            yield from job.map(record, ctx) or ()
        yield from job.map_close(ctx) or ()
    finally:
        job.map_cleanup(ctx)


def reduce_pairs(job: Job, items: Iterator[tuple[Any, Any]], ctx: TaskContext) -> Iterator[tuple[Any, Any]]:
    """The body of a reduce task of step ctx.step over its sorted partition; yields what goes to the next step."""
    reducer = getattr(job, job.steps()[ctx.step].reducer)
    job.reduce_setup(ctx)
    try:
        yield from reducer(_until_stopped(items, ctx), ctx) or ()
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
    """A task's context: its own counters (given: live ones of the job's, Counters.task), its store with the calls
    timed (measures.TimedStore); remote (another process), its lines go back to the driver."""
    counters = counters or Counters(job.name)
    return TaskContext(job.conf, TimedStore(store, counters), counters, task, step,  # type: ignore[arg-type]
                       messages=[] if remote else None, logger=job.logger)


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
    log.debug(f"{job.name}: {kind} task {ctx.task} started")
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
        log.debug(f"{job.name}: {kind} task {ctx.task} {how}: {ctx.records} records in "
                  f"{time.monotonic() - started:.1f} s")


def _collect_into(job: Job, pairs: Iterator[tuple[Any, Any]], out: MapOutput | None) -> None:
    for key, value in pairs:
        if out is None:
            raise RuntimeError(f"{job.name}: a task emitted a pair but no reduce step follows")
        out.collect(job.partition(key, value, out.partitions), key, value)


def _output(job: Job, ctx: TaskContext, out: MapOutput | None) -> TaskOutput:
    settle(ctx)
    runs = out.close() if out is not None else []
    messages = list(ctx.messages or ())
    if ctx.dropped:
        messages.append(f"{job.name}: task {ctx.task}: {ctx.dropped} more lines like these")
    return TaskOutput(ctx.counters.as_dict(), job.result(ctx), runs, out.spilled_records if out else 0, messages)


def settle(ctx: TaskContext) -> None:
    """The task's store timings into its counters (measures.TimedStore), before they are read at its end."""
    if isinstance(ctx.store, TimedStore):
        ctx.store.settle()


def task_copy(job: Job) -> Job:
    """The task's own copy of the job, made the way a worker process gets it (so local runs prove it ships)."""
    return pickle.loads(pickle.dumps(job, pickle.HIGHEST_PROTOCOL))

