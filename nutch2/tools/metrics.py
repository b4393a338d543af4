"""Prometheus metrics of the jobs a process runs (prometheus_client): `nutch2 server`'s /metrics and, for `crawl`
and `fetch` run without a server, `-metricsPort N` (served on loopback) and `-metricsFile PATH` (a textfile for
node_exporter's textfile collector, replaced atomically).

Everything comes from the jobs' counters, the one path that brings what tasks count from wherever they ran
(threads, worker processes, Spark executors) to the driver, live while a job runs: the ordinary counters as
`nutch2_job_counter_total{job,counter}`, and the measures (nutch2/mapred/measures.py) as the metrics of METRICS.
`JobCollector` is a custom Collector: at each scrape it adds the counters of the jobs that ended (`JobTotals`,
so counters never go down) to the live ones of the jobs running. Per-host labels are bounded: the hosts with most
errors (metrics.hosts.top) and "other".
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from nutch2.config import Configuration
from nutch2.errors import ConfigError, NutchError
from nutch2.mapred import measures
from nutch2.mapred.job import Counters
from nutch2.mapred.memory import rss_bytes
from nutch2.mapred.processes import worker_pids

log = logging.getLogger(__name__)

PREFIX = "nutch2_"
# measure -> (metric name, help, label names); histograms are in seconds
METRICS: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "fetch_pages": ("fetch_pages", "URLs whose fetch was recorded, by crawl status and protocol status code",
                    ("status", "protocol")),
    "fetch_http": ("fetch_http_responses", "HTTP responses to page requests, by status code ('none': no answer)",
                   ("code",)),
    "fetch_host_errors": ("fetch_host_errors", "failed page requests (no answer, 5xx) of the hosts with most of them; "
                          "the rest under host=\"other\"", ("host",)),
    "fetch_latency": ("fetch_latency_seconds", "time from a page request to its whole answer", ()),
    "fetch_queue_items": ("fetch_queue_items", "URLs waiting in the fetch queues of the running fetch", ()),
    "fetch_queues": ("fetch_queues", "fetch queues (hosts) of the running fetch", ()),
    "fetch_threads": ("fetch_threads", "fetcher threads of the running fetch: active (in a request) and total",
                      ("state",)),
    "parse_failures": ("parse_failures", "pages not parsed, by parser ('none': no parser fits the type) and outcome",
                       ("parser", "outcome")),
    "index_documents": ("index_documents", "documents sent to each index writer", ("writer",)),
    "index_deletes": ("index_deletes", "deletes sent to each index writer", ("writer",)),
    "store_latency": ("store_latency_seconds", "time of the store calls of tasks (a put that fills the write buffer "
                      "includes writing the batch)", ("call",)),
}
ROBOTS = {"robots_denied": "disallow", "robots_denied_crawl_delay": "crawl_delay"}  # fetch counters -> reason


class JobTotals:
    """The counters of jobs that ended, added up per job name: the metrics' counters only grow."""

    def __init__(self) -> None:
        self.runs: dict[str, int] = {}
        self.seconds: dict[str, float] = {}
        self.counts: dict[str, dict[str, int]] = {}

    def add(self, jobs: Iterable[Counters]) -> None:
        for c in jobs:
            self.runs[c.job] = self.runs.get(c.job, 0) + c.runs
            self.seconds[c.job] = self.seconds.get(c.job, 0.0) + c.elapsed()
            total = self.counts.setdefault(c.job, {})
            for name, n in c.as_dict().items():
                if not name.startswith("g."):  # a gauge is the running jobs' only
                    total[name] = total.get(name, 0) + n


class JobCollector:
    """A prometheus_client Collector of the jobs' counters: `ended` (their totals) plus `live()` (the counters of
    the jobs running now), and gauges of the worker processes. `lock` is held while reading both, so that a job
    moved from live to ended is counted once (JobManager moves it under the same lock)."""

    def __init__(self, conf: Configuration, live: Callable[[], list[Counters]], ended: JobTotals | None = None,
                 lock: threading.Lock | None = None) -> None:
        self.live = live
        self.ended = ended or JobTotals()
        self.lock = lock or threading.Lock()
        self.hosts_top = conf.get_int("metrics.hosts.top")
        if self.hosts_top < 1:
            raise ConfigError(f"metrics.hosts.top={self.hosts_top} must be >= 1 (hosts named in the per-host metrics)")

    def describe(self) -> list[Any]:
        return []  # no fixed set: prometheus_client then does not call collect() at registration

    def totals(self) -> tuple[dict[str, int], dict[str, float], dict[str, dict[str, int]], dict[str, int]]:
        """Runs and seconds per job name, counters per job name (ended + running) and the running gauges."""
        with self.lock:
            runs, seconds = dict(self.ended.runs), dict(self.ended.seconds)
            counts = {job: dict(c) for job, c in self.ended.counts.items()}
            live = list(self.live())
        gauges: dict[str, int] = {}
        for c in live:
            runs[c.job] = runs.get(c.job, 0) + c.runs
            seconds[c.job] = seconds.get(c.job, 0.0) + c.elapsed()
            total = counts.setdefault(c.job, {})
            for name, n in c.as_dict().items():
                if name.startswith("g."):
                    gauges[name] = gauges.get(name, 0) + n
                else:
                    total[name] = total.get(name, 0) + n
        return runs, seconds, counts, gauges

    def collect(self) -> Iterator[Any]:
        from prometheus_client.core import CounterMetricFamily

        runs, seconds, counts, gauges = self.totals()
        fam = CounterMetricFamily(PREFIX + "job_runs", "jobs run (a crawl runs several per round)", labels=["job"])
        for job, n in sorted(runs.items()):
            fam.add_metric([job], n)
        yield fam
        fam = CounterMetricFamily(PREFIX + "job_seconds", "seconds jobs ran (running ones so far)", labels=["job"])
        for job, s in sorted(seconds.items()):
            fam.add_metric([job], s)
        yield fam
        fam = CounterMetricFamily(PREFIX + "job_counter", "the jobs' counters (as their summary lines show them)",
                                  labels=["job", "counter"])
        merged: dict[str, int] = {}
        for job, c in sorted(counts.items()):
            for name, n in sorted(c.items()):
                if measures.is_measure(name):
                    merged[name] = merged.get(name, 0) + n
                else:
                    fam.add_metric([job, name], n)
        yield fam
        fetch = counts.get("fetch", {})
        fam = CounterMetricFamily(PREFIX + "fetch_bytes", "bytes of the answers to page requests")
        fam.add_metric([], fetch.get("bytes", 0))
        yield fam
        fam = CounterMetricFamily(PREFIX + "fetch_robots_denied", "URLs not requested because robots.txt forbids "
                                  "it, by reason", labels=["reason"])
        for counter, reason in ROBOTS.items():
            fam.add_metric([reason], fetch.get(counter, 0))
        yield fam
        yield from self._measures(merged, gauges)
        yield from _workers()

    def _measures(self, merged: dict[str, int], gauges: dict[str, int]) -> Iterator[Any]:
        from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily

        labelled: dict[str, dict[tuple[str, ...], int]] = {m: {} for m in METRICS}
        hists: dict[str, dict[tuple[str, ...], dict[str, int]]] = {m: {} for m in METRICS}
        for name, n in (*merged.items(), *gauges.items()):
            m = measures.parse(name)
            if m is None or m.metric not in METRICS or len(m.labels) != len(METRICS[m.metric][2]):
                continue
            if m.kind == "h":
                parts = hists[m.metric].setdefault(m.labels, {})
                parts[m.part] = parts.get(m.part, 0) + n
            else:
                labelled[m.metric][m.labels] = labelled[m.metric].get(m.labels, 0) + n
        hosts = labelled["fetch_host_errors"]
        labelled["fetch_host_errors"] = {(h,): n for h, n in measures.top_labels(
            {k[0]: v for k, v in hosts.items()}, self.hosts_top).items()}
        for metric, (name, doc, labels) in METRICS.items():
            if metric in ("fetch_latency", "store_latency"):
                fam = HistogramMetricFamily(PREFIX + name, doc, labels=list(labels))
                for values, parts in sorted(hists[metric].items()):
                    fam.add_metric(list(values), _buckets(parts), parts.get("sum", 0) / 1e6)
            elif metric.startswith("fetch_q") or metric == "fetch_threads":
                fam = GaugeMetricFamily(PREFIX + name, doc, labels=list(labels))
                for values, n in sorted(labelled[metric].items()):
                    fam.add_metric(list(values), n)
            else:
                fam = CounterMetricFamily(PREFIX + name, doc, labels=list(labels))
                for values, n in sorted(labelled[metric].items()):
                    fam.add_metric(list(values), n)
            yield fam


def _buckets(parts: dict[str, int]) -> list[tuple[str, float]]:
    """Cumulative buckets from a histogram's per-bucket counts b0..bN."""
    return measures.cumulative([parts.get(f"b{i}", 0) for i in range(len(measures.BUCKETS) + 1)])


def _workers() -> Iterator[Any]:
    from prometheus_client.core import GaugeMetricFamily

    pids = worker_pids()
    fam = GaugeMetricFamily(PREFIX + "worker_processes", "worker processes of the processes runner")
    fam.add_metric([], len(pids))
    yield fam
    fam = GaugeMetricFamily(PREFIX + "worker_rss_bytes", "resident memory of each worker process",
                            labels=["worker"])
    for i, pid in enumerate(pids):
        fam.add_metric([str(i)], rss_bytes(pid))
    yield fam


def registry(collectors: Iterable[Any]) -> Any:
    """A registry of the collectors and this process's own (CPU, memory, open files)."""
    try:
        from prometheus_client import CollectorRegistry, ProcessCollector
    except ImportError:
        raise ConfigError("metrics need prometheus_client: pip install 'nutch2[metrics]'") from None
    reg = CollectorRegistry(auto_describe=False)
    ProcessCollector(namespace=PREFIX.rstrip("_"), registry=reg)
    for c in collectors:
        reg.register(c)
    return reg


@contextlib.contextmanager
def exported(conf: Configuration, jobs: Callable[[], list[Counters]], port: int | None,
             path: Path | None) -> Iterator[None]:
    """While a command runs without a server: its metrics served on 127.0.0.1:`port` and/or written to `path`
    every metrics.textfile.interval seconds and at the end (write_to_textfile replaces it atomically)."""
    reg = registry([JobCollector(conf, jobs)])
    from prometheus_client import start_http_server, write_to_textfile

    interval = conf.get_float("metrics.textfile.interval")
    if path is not None and interval <= 0:
        raise ConfigError(f"metrics.textfile.interval={interval:g} must be > 0 (seconds between writes)")
    if path is not None and not path.parent.is_dir():
        raise ConfigError(f"-metricsFile {path}: its folder does not exist; create it or give another path")
    if path is not None:
        try:  # the first write before anything listens: a folder or an unwritable path is one line, nothing left open
            write_to_textfile(str(path), reg)
        except OSError as e:
            raise NutchError(f"-metricsFile {path}: cannot write it ({e.strerror}); give a file in a folder you may "
                             "write to") from None
    server = None
    if port is not None:
        try:
            server, _ = start_http_server(port, addr="127.0.0.1", registry=reg)
        except OSError as e:
            raise NutchError(f"-metricsPort {port}: cannot listen on 127.0.0.1:{port} ({e.strerror}); pick another "
                             "port") from None
        log.info(f"metrics at http://127.0.0.1:{server.server_port}/metrics")
    done = threading.Event()
    writer = None
    if path is not None:
        def write() -> None:
            while not done.wait(interval):
                try:
                    write_to_textfile(str(path), reg)
                except OSError as e:
                    log.warning(f"-metricsFile {path}: {e.strerror}; trying again in {interval:g} s")

        writer = threading.Thread(target=write, name="metrics-textfile", daemon=True)
        writer.start()
    try:
        yield
    finally:
        done.set()
        if writer is not None:
            writer.join()
            try:
                write_to_textfile(str(path), reg)
            except OSError as e:
                log.warning(f"-metricsFile {path}: {e.strerror}")
        if server is not None:
            server.shutdown()
            server.server_close()
