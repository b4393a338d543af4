"""The `spark` runner: every job on Apache Spark, through PySpark's RDD API (classic mode, not Spark Connect).

A job maps onto Spark unchanged: its input splits become the partitions of a parallelized RDD; mapPartitions runs
the map task body (nutch2.runner.map_pairs) with a store client opened in the partition from the shipped
configuration; each pair leaves the map side keyed by (partition, sort key) — computed there, since Spark's
partition and key functions see only the key — so that repartitionAndSortWithinPartitions gives each reducer its
partition in the job's order; mapPartitionsWithIndex runs the reduce task body (the fetcher's feeder and fetcher
threads run unchanged inside one partition), and what it emits goes to the next step the same way. Counters, task
results and the lines for the user travel in one accumulator, merged on the driver before the job's final step.

Tasks are not retried by Spark (spark.task.maxFailures=1, no speculation): a failed task fails the job with one
line, and every job is safe to run again (a fetch with -resume), so no URL is fetched twice behind the user's back.
"""

from __future__ import annotations

import atexit
import os
import pickle
import re
from functools import partial
from typing import Any

from nutch2 import failpoints
from nutch2.config import Configuration
from nutch2.errors import ConfigError, NutchError
from nutch2.runner import Counters, Job, Runner, TaskContext, log, map_pairs, reduce_pairs, release_memory, task_context
from nutch2.stores import open_store
from nutch2.stores.base import DataStore

# defaults the user can override with -D spark.*=...
SPARK_DEFAULTS = {
    "spark.app.name": "nutch2",
    "spark.task.maxFailures": "1",  # jobs are rerun by the user (safe), never by Spark behind their back
    "spark.speculation": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.python.worker.reuse": "true",
}
_sc: Any = None
_sc_props: dict[str, str] | None = None


def spark_properties(conf: Configuration) -> dict[str, str]:
    """The SparkConf of a configuration: defaults, then every spark.* property; a local master binds to loopback."""
    props = {**SPARK_DEFAULTS, **conf.with_prefix("spark.")}
    log4j = f"-Dlog4j2.configurationFile=file:{conf.resource('log4j2-spark.properties')}"
    props["spark.driver.extraJavaOptions"] = f"{log4j} {props.get('spark.driver.extraJavaOptions', '')}".strip()
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
    try:
        _sc = SparkContext(conf=SparkConf().setAll(list(props.items())))
    except Exception as e:  # no Java, a master that does not answer, a bad property
        raise NutchError(f"cannot start Spark (spark.master={props['spark.master']}): {_one_line(e)}; check "
                         "spark.master and that Java 17+ is installed") from None
    _sc.setLogLevel("ERROR")
    _sc_props = props
    return _sc


def stop_spark() -> None:
    global _sc, _sc_props
    if _sc is not None:
        _sc.stop()
        _sc, _sc_props = None, None


atexit.register(stop_spark)


class Report:
    """What tasks send the driver: counters, results, lines to print."""

    def __init__(self) -> None:
        self.counters: dict[str, int] = {}
        self.results: list[Any] = []
        self.messages: list[str] = []

    def add(self, other: Report) -> Report:
        for k, v in other.counters.items():
            self.counters[k] = self.counters.get(k, 0) + v
        self.results += other.results
        self.messages += other.messages
        return self


def _report_param() -> Any:
    from pyspark.accumulators import AccumulatorParam

    class ReportParam(AccumulatorParam):
        def zero(self, value: Report) -> Report:
            return Report()

        def addInPlace(self, a: Report, b: Report) -> Report:  # noqa: N802 - PySpark's name
            return a.add(b)

    return ReportParam()


class SparkRunner(Runner):
    """Runs a job as Spark stages: map partitions, then one shuffle and reduce partitions per step."""

    def check(self, job: Job, store: DataStore) -> None:
        master = spark_properties(self.conf)["spark.master"]
        if store.name == "memory":
            raise ConfigError("mapreduce.framework.name=spark cannot use the memory store (its rows live in one "
                              "process); use storage.data.store.class=hbase or cassandra")
        if store.name == "sqlite" and not is_local(master):
            raise ConfigError(f"the sqlite store is a file on this machine: executors of spark.master={master} "
                              "cannot reach it; use storage.data.store.class=hbase or cassandra (or a local[N] "
                              "master)")
        store.flush()  # what the driver wrote must be visible to the executors

    def run(self, job: Job, store: DataStore, counters: Counters | None = None) -> Counters:
        counters = counters or Counters(job.name)
        self.check(job, store)
        sc = spark_context(self.conf)
        splits = job.inputs(store, self.num_tasks)
        steps = job.steps()
        data = sc.broadcast(pickle.dumps(job, pickle.HIGHEST_PROTOCOL))
        report = sc.accumulator(Report(), _report_param())
        parts = self._reducers(steps, 0)
        rdd = sc.parallelize(splits, max(1, len(splits))).mapPartitionsWithIndex(
            partial(_map_partition, data, store.crawl_id, parts, report))
        for s in range(len(steps)):
            rdd = rdd.repartitionAndSortWithinPartitions(parts, _partition_of, True, _sort_of)
            parts = self._reducers(steps, s + 1)
            rdd = rdd.mapPartitionsWithIndex(partial(_reduce_partition, data, s, store.crawl_id, parts, report))
        try:
            rdd.foreach(_nothing)
        except Exception as e:
            raise _failure(job, e) from None
        finally:
            data.unpersist()
        merged: Report = report.value
        for msg in merged.messages:
            log(msg)
        counters.merge(merged.counters)
        job.finish(merged.results, TaskContext(self.conf, store, counters, 0))
        store.flush()
        release_memory()
        failpoints.reach("runner.job")
        return counters


# ---------------------------------------------------------------- what runs in the executors' Python workers
def _partition_of(key: tuple[int, Any]) -> int:
    return key[0]


def _sort_of(key: tuple[int, Any]) -> Any:
    return key[1]


def _nothing(_: Any) -> None:
    pass


def _task(data: Any, crawl_id: str | None) -> tuple[Job, DataStore]:
    job: Job = pickle.loads(data.value)
    return job, open_store(job.conf, crawl_id, create=False)


def _emit(job: Job, pairs: Any, parts: int, step: int) -> Any:
    """Pairs keyed for the next shuffle: ((partition, sort key), (key, value))."""
    sort_key = job.sort_key(step)
    for key, value in pairs:
        if not parts:
            raise RuntimeError(f"{job.name}: a task emitted a pair but no reduce step follows")
        yield (job.partition(key, value, parts), sort_key((key, value))), (key, value)


def _finish(job: Job, ctx: TaskContext, report: Any) -> None:
    ctx.store.flush()
    r = Report()
    r.counters = ctx.counters.as_dict()
    result = job.result(ctx)
    r.results = [] if result is None else [result]
    r.messages = list(ctx.messages or ())
    if ctx.dropped:
        r.messages.append(f"{job.name}: task {ctx.task}: {ctx.dropped} more lines like these")
    report.add(r)


def _map_partition(data: Any, crawl_id: str | None, parts: int, report: Any, index: int, splits: Any) -> Any:
    for split in splits:
        job, store = _task(data, crawl_id)
        try:
            ctx = task_context(job, store, index, remote=True)
            yield from _emit(job, map_pairs(job, split, ctx), parts, 0)
            _finish(job, ctx, report)
        finally:
            store.close()
            release_memory()


def _reduce_partition(data: Any, step: int, crawl_id: str | None, parts: int, report: Any, index: int,
                      items: Any) -> Any:
    job, store = _task(data, crawl_id)
    try:
        ctx = task_context(job, store, index, step, remote=True)
        yield from _emit(job, reduce_pairs(job, (pair for _, pair in items), ctx), parts, step + 1)
        _finish(job, ctx, report)
    finally:
        store.close()
        release_memory()


# ---------------------------------------------------------------- errors
_PY_ERROR = re.compile(r"^(?:[\w.]+\.)?(\w+(?:Error|Exception|Unavailable)): (.+)$", re.M)


def _failure(job: Job, e: Exception) -> NutchError:
    """A failed Spark job as one line: the Python error of the task when there is one, else Spark's reason."""
    text = str(e)
    if "Python worker exited unexpectedly" in text or "crashed" in text.lower() and "worker" in text.lower():
        return NutchError(f"{job.name}: a Spark task's Python worker died (killed, or out of memory); what it "
                          "wrote is kept and the job is safe to run again: run the same command"
                          + (" (with -resume)" if job.name == "fetch" else ""))
    found = [m for m in _PY_ERROR.finditer(text) if "Py4J" not in m.group(1)]
    if found:
        return NutchError(f"{job.name}: a Spark task failed: {found[-1].group(2).strip()}")
    return NutchError(f"{job.name}: the Spark job failed: {_one_line(e)}")


def _one_line(e: Exception) -> str:
    lines = [x.strip() for x in str(e).splitlines() if x.strip()]
    return (lines[0] if lines else type(e).__name__)[:300]


__all__ = ["SparkRunner", "spark_context", "stop_spark", "spark_properties", "is_local"]
