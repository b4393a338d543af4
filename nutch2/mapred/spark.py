"""The `spark` runner: every job on Apache Spark, through PySpark's RDD API (classic mode, not Spark Connect).

A job maps onto Spark unchanged: its input splits become the partitions of a parallelized RDD; mapPartitions runs
the map task body (nutch2.mapred.task.map_pairs) with a store client opened in the partition from the shipped
configuration; each pair leaves the map side keyed by (partition, sort key) — computed there, since Spark's
partition and key functions see only the key — so that repartitionAndSortWithinPartitions gives each reducer its
partition in the job's order; mapPartitionsWithIndex runs the reduce task body (the fetcher's feeder and fetcher
threads run unchanged inside one partition), and what it emits goes to the next step the same way.

Counters, task results and the lines for the user are task results, not accumulators: each task ends its output
with one Report record, sorted after its data, which the next step's task adds to its own; the last step's tasks
return their reports to the driver (collect). Spark hands each reduce task exactly one output of every map task,
and the driver one result per last-step task, so a retried or re-run task is counted once.

Spark retries tasks as it is configured to (spark.task.maxFailures, its default: 4 on a cluster, 1 with a local
master): every job is safe to run twice, and the fetch job keeps its attempts apart (claims and task leases), so a
retried, re-run or speculative fetch task never requests a URL twice. A job Spark gives up on fails with one line
naming the cause and the command to run again. One SparkContext serves every job of a command (a whole `crawl`),
and is stopped at exit.
"""

from __future__ import annotations

import atexit
import logging
import os
import pickle
import re
import signal
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from nutch2 import failpoints
from nutch2.config import Configuration
from nutch2.errors import ConfigError, NutchError
from nutch2.mapred import stop
from nutch2.mapred.job import Counters, Job, TaskContext
from nutch2.mapred.memory import release_memory
from nutch2.mapred.runner import Runner
from nutch2.mapred.task import map_pairs, reduce_pairs, settle, task_context
from nutch2.stores import open_store
from nutch2.stores.base import DataStore
from nutch2.stores.query import Capability

log = logging.getLogger(__name__)

# defaults the user can override with -D spark.*=...
SPARK_DEFAULTS = {
    "spark.app.name": "nutch2",
    "spark.ui.showConsoleProgress": "false",
    "spark.python.worker.reuse": "true",
}
_sc: Any = None
_sc_props: dict[str, str] | None = None


def spark_properties(conf: Configuration) -> dict[str, str]:
    """The SparkConf of a configuration: defaults, then every spark.* property; a local master binds to loopback;
    the executors' Python is spark.pyspark.python, else $PYSPARK_PYTHON, else this Python (the one nutch2 runs in,
    not the python3 first on the executors' PATH)."""
    props = {**SPARK_DEFAULTS, **conf.with_prefix("spark.")}
    log4j = f"-Dlog4j2.configurationFile=file:{conf.resource('log4j2-spark.properties')}"
    props["spark.driver.extraJavaOptions"] = f"{log4j} {props.get('spark.driver.extraJavaOptions', '')}".strip()
    props.setdefault("spark.pyspark.python", os.environ.get("PYSPARK_PYTHON") or sys.executable)
    if is_local(props["spark.master"]):
        props.setdefault("spark.driver.host", "127.0.0.1")
        props.setdefault("spark.driver.bindAddress", "127.0.0.1")
    return props


def is_local(master: str) -> bool:
    """A master whose executors all run on this machine (they see its files)."""
    return master.strip().lower().startswith("local")


def spark_context(conf: Configuration) -> Any:
    """The SparkContext of this process, made on first use and kept for the jobs that follow (made anew when the
    spark.* properties change)."""
    global _sc, _sc_props
    props = spark_properties(conf)
    if _sc is not None and props == _sc_props:
        return _sc
    try:
        from pyspark import SparkConf, SparkContext
    except ImportError:
        raise ConfigError("mapreduce.framework.name=spark needs PySpark: pip install 'nutch2[spark]' "
                          "(and Java 17 or later)") from None
    stop_spark()
    if is_local(props["spark.master"]):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")  # executors and block managers on loopback too
    started = time.monotonic()
    try:
        handler = signal.getsignal(signal.SIGINT) if threading.current_thread() is threading.main_thread() else None
        _sc = SparkContext(conf=SparkConf().setAll(list(props.items())))
        if handler is not None:  # PySpark installs its own Ctrl-C handler: the command's stop rules stay
            signal.signal(signal.SIGINT, handler)
    except Exception as e:  # no Java, a master that does not answer, a bad property
        raise NutchError(f"cannot start Spark (spark.master={props['spark.master']}): {_one_line(e)}; check "
                         "spark.master and that Java 17+ is installed") from None
    _sc.setLogLevel("ERROR")
    # PySpark ships the executors' Python with each function from here (spark.pyspark.python alone is read only by
    # spark-submit, which a plain `python` driver does not run)
    _sc.pythonExec = props["spark.pyspark.python"]
    _sc_props = props
    log.info(f"spark: SparkContext started in {time.monotonic() - started:.1f} s: master {props['spark.master']}, "
             f"application {_sc.applicationId}, executors run {_sc.pythonExec}")
    return _sc


def stop_spark() -> None:
    global _sc, _sc_props
    if _sc is not None:
        _sc.stop()
        _sc, _sc_props = None, None


atexit.register(stop_spark)


@dataclass
class Report:
    """What a task sends the driver: counters, results, lines to print (its own and those of the tasks before it
    that fed it)."""

    counters: dict[str, int] = field(default_factory=dict)
    results: list[Any] = field(default_factory=list)
    messages: list[str] = field(default_factory=list)

    def add(self, other: Report) -> Report:
        for k, v in other.counters.items():
            self.counters[k] = self.counters.get(k, 0) + v
        self.results += other.results
        self.messages += other.messages
        return self


class SparkRunner(Runner):
    """Runs a job as Spark stages: map partitions, then one shuffle and reduce partitions per step."""

    def check(self, job: Job, store: DataStore) -> None:
        master = spark_properties(self.conf)["spark.master"]
        if not store.has(Capability.SHARED_PROCESSES):
            raise ConfigError(f"mapreduce.framework.name=spark cannot use the {store.name} store (its rows live in "
                              "one process); use storage.data.store.class=postgres, hbase or cassandra")
        if not store.has(Capability.SHARED_MACHINES) and not is_local(master):
            raise ConfigError(f"the {store.name} store is on this machine only: executors of spark.master={master} "
                              "cannot reach it; use storage.data.store.class=postgres, hbase or cassandra (or a "
                              "local[N] master)")
        store.flush()  # what the driver wrote must be visible to the executors

    def run(self, job: Job, store: DataStore, counters: Counters | None = None) -> Counters:
        counters = counters or Counters(job.name)
        self.check(job, store)
        sc = spark_context(self.conf)
        splits = job.inputs(store, self.num_tasks)
        steps = job.steps()
        data = sc.broadcast(pickle.dumps(job, pickle.HIGHEST_PROTOCOL))
        parts = self._reducers(steps, 0)
        rdd = sc.parallelize(splits, max(1, len(splits))).mapPartitionsWithIndex(
            partial(_map_partition, data, store.crawl_id, parts))
        for s in range(len(steps)):
            rdd = rdd.repartitionAndSortWithinPartitions(parts, _partition_of, True, _sort_of)
            parts = self._reducers(steps, s + 1)
            rdd = rdd.mapPartitionsWithIndex(partial(_reduce_partition, data, s, store.crawl_id, parts))
        sc.setJobDescription(f"nutch2 {job.name}")
        stop.check()
        # a stop cancels the job's tasks (as a kill would end them); from a thread of its own, since the request may
        # come from a signal handler that interrupted this thread's call into the JVM
        unhook = stop.on_request(lambda: threading.Thread(target=sc.cancelAllJobs, daemon=True).start())
        try:
            reports: list[Report] = rdd.collect()
        except Exception as e:
            if stop.requested():
                raise stop.Stopped() from None
            raise _failure(job, e) from None
        finally:
            unhook()
            data.unpersist()
        merged = Report()
        for r in reports:
            merged.add(r)
        for msg in merged.messages:
            job.logger.info(msg)
        counters.merge(merged.counters)
        job.finish(merged.results, TaskContext(self.conf, store, counters, 0, logger=job.logger))
        store.flush()
        release_memory()
        failpoints.reach("runner.job")
        counters.ended = time.monotonic()
        return counters


# ---------------------------------------------------------------- what runs in the executors' Python workers
# A record between steps: ((partition, (DATA, sort key)), (key, value)) or ((partition, (REPORT, task)), Report);
# reports sort after every data record of their partition.
DATA, REPORT = 0, 1


def _partition_of(key: tuple[int, Any]) -> int:
    return key[0]


def _sort_of(key: tuple[int, Any]) -> Any:
    return key[1]


def _task(data: Any, crawl_id: str | None) -> tuple[Job, DataStore]:
    job: Job = pickle.loads(data.value)
    return job, open_store(job.conf, crawl_id, create=False)


def _attempt() -> str | None:
    """This task attempt's id (unique in the application), for jobs that keep attempts apart."""
    from pyspark import TaskContext as SparkTaskContext

    tc = SparkTaskContext.get()
    if tc is None:
        return None
    return f"{tc.taskAttemptId()}.{uuid.uuid4().hex[:6]} (stage {tc.stageId()}, task {tc.partitionId()}." \
           f"{tc.attemptNumber()})"


def _emit(job: Job, pairs: Any, parts: int, step: int) -> Any:
    """Pairs keyed for the next shuffle."""
    sort_key = job.sort_key(step)
    for key, value in pairs:
        if not parts:
            raise RuntimeError(f"{job.name}: a task emitted a pair but no reduce step follows")
        yield (job.partition(key, value, parts), (DATA, sort_key((key, value)))), (key, value)


def _report(job: Job, ctx: TaskContext, before: Report) -> Report:
    ctx.store.flush()
    settle(ctx)
    result = job.result(ctx)
    r = Report(ctx.counters.as_dict(), [] if result is None else [result], list(ctx.messages or ()))
    if ctx.dropped:
        r.messages.append(f"{job.name}: task {ctx.task}: {ctx.dropped} more lines like these")
    return before.add(r)


def _send(report: Report, index: int, parts: int) -> Any:
    """The task's report: to one reducer of the next step, or to the driver after the last step."""
    if parts:
        yield (index % parts, (REPORT, index)), report
    else:
        yield report


def _map_partition(data: Any, crawl_id: str | None, parts: int, index: int, splits: Any) -> Any:
    report = Report()
    for split in splits:
        job, store = _task(data, crawl_id)
        try:
            ctx = task_context(job, store, index, remote=True)
            ctx.attempt = _attempt()
            yield from _emit(job, map_pairs(job, split, ctx), parts, 0)
            report = _report(job, ctx, report)
        finally:
            store.close()
            release_memory()
    yield from _send(report, index, parts)


def _reduce_partition(data: Any, step: int, crawl_id: str | None, parts: int, index: int, items: Any) -> Any:
    upstream = Report()

    def pairs() -> Any:  # the data records; the reports sorted after them are kept aside
        for (_, (kind, _)), value in items:
            if kind == REPORT:
                upstream.add(value)
            else:
                yield value

    job, store = _task(data, crawl_id)
    try:
        ctx = task_context(job, store, index, step, remote=True)
        ctx.attempt = _attempt()
        yield from _emit(job, reduce_pairs(job, pairs(), ctx), parts, step + 1)
        for (_, (kind, _)), value in items:  # after a reducer that stopped early: the reports still count
            if kind == REPORT:
                upstream.add(value)
        report = _report(job, ctx, upstream)
    finally:
        store.close()
        release_memory()
    yield from _send(report, index, parts)


# ---------------------------------------------------------------- errors
_PY_ERROR = re.compile(r"^(?:: )?((?:[\w.]+\.)?(\w+(?:Error|Exception|Unavailable|Lost))): (.+)$", re.M)
_LOST_TASK = re.compile(r"Task (\d+) in stage (\d+)\.\d+ failed (\d+) times?, most recent failure: Lost task "
                        r"[\d.]+ in stage [\d.]+ \(TID \d+\) \(([^)]*)\): (.*)")
_PY4J_CALL = re.compile(r"^An error occurred while calling \S+$")


def _failure(job: Job, e: Exception) -> NutchError:
    """A job Spark gave up on, as one line: the cause (the task's Python error, a Python worker or an executor
    that died, Spark's own reason) and how to finish the job."""
    again = "run the same command" + (" with -resume" if job.name in ("fetch", "parse") else "")
    return NutchError(f"{job.name}: the Spark job failed: {_cause(str(e))}; what its tasks wrote is kept and the "
                      f"job is safe to run again: {again}")


def _cause(text: str) -> str:
    lost = _LOST_TASK.search(text)
    found = [m for m in _PY_ERROR.finditer(text) if "Py4J" not in m.group(2) and m.group(2) != "SparkException"]
    if "Python worker exited unexpectedly" in text or ("crashed" in text.lower() and "worker" in text.lower()):
        reason = "its Python worker died (killed, or out of memory)"
    elif "ExecutorLostFailure" in text:
        why = re.search(r"ExecutorLostFailure \((executor \S+)[^)]*\)(?: Reason: (.*))?", text)
        reason = f"{why.group(1) if why else 'its executor'} was lost" + (
            f" ({why.group(2).strip()})" if why and why.group(2) else "")
    elif found:  # the task's own error: nutch2's errors say it all, others are named
        name, message = found[-1].group(1), found[-1].group(3).strip()
        reason = message if name.startswith("nutch2.") else f"{found[-1].group(2)}: {message}"
    elif lost:
        reason = lost.group(5).strip()
    else:
        return _one_line(text)
    if lost:
        times = "once" if lost.group(3) == "1" else f"{lost.group(3)} times"
        return f"task {lost.group(1)} of stage {lost.group(2)} failed {times}, last on {lost.group(4)}: {reason}"[:400]
    return reason[:400]


def _one_line(e: Exception | str) -> str:
    lines = [x.strip().removeprefix(": ") for x in str(e).splitlines() if x.strip()]
    lines = [x for x in lines if not _PY4J_CALL.match(x)]
    return (lines[0] if lines else type(e).__name__)[:300]


__all__ = ["SparkRunner", "spark_context", "stop_spark", "spark_properties", "is_local"]
