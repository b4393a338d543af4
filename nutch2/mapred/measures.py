"""What tasks measure for the metrics (`nutch2 server`'s /metrics, `crawl -metricsPort`): labelled counts,
histograms and gauges carried as ordinary job counters, so they travel from a task on any runner (threads, worker
processes, Spark executors) to the driver by the counter path every job already has, live while it runs.

A measure is a counter whose name says what it is (nothing else starts with these prefixes):

    l.<metric>|<label>|...        a count per label values (l.fetch_pages|FETCHED|SUCCESS)
    h.<metric>|<label>|...|b<i>   observations in bucket i of BUCKETS (i = len(BUCKETS): above the last bound)
    h.<metric>|<label>|...|sum    their sum in microseconds
    g.<metric>|<label>|...        a gauge: a task adds the change of its value and takes it back to 0 when it ends,
                                  so the job's live counters show the current value and its final ones 0

Summary lines and the job API's counters leave measures out (`is_measure`); the metrics collector reads them
(`parse`). A task keeps the label values it records bounded (per-host errors: its top hosts and "other").
"""

from __future__ import annotations

import threading
import time
from bisect import bisect_left
from typing import NamedTuple, Protocol

PREFIXES = ("l.", "h.", "g.")
SEP = "|"
# seconds: Prometheus's default buckets and two more for slow fetches
BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
OTHER = "other"  # the label of what a bounded label set leaves out


class Counting(Protocol):
    def incr(self, name: str, n: int = 1) -> None: ...


def is_measure(name: str) -> bool:
    return name[:2] in PREFIXES


def _key(prefix: str, metric: str, labels: tuple[str, ...]) -> str:
    return SEP.join((prefix + metric, *(str(v).replace(SEP, "/") for v in labels)))


def count_name(metric: str, *labels: object) -> str:
    """The counter name of a labelled count."""
    return _key("l.", metric, tuple(map(str, labels)))


def count(counters: Counting, metric: str, *labels: object, n: int = 1) -> None:
    """Count `n` for the label values."""
    counters.incr(count_name(metric, *labels), n)


def observe(counters: Counting, metric: str, seconds: float, *labels: object) -> None:
    """One observation of a histogram (a latency in seconds)."""
    base = _key("h.", metric, tuple(map(str, labels)))
    counters.incr(f"{base}{SEP}b{bucket(seconds)}")
    counters.incr(f"{base}{SEP}sum", max(0, round(seconds * 1e6)))


def bucket(seconds: float) -> int:
    """The index of the histogram bucket of an observation (len(BUCKETS): above the last bound)."""
    return bisect_left(BUCKETS, seconds)


def cumulative(counts: list[int]) -> list[tuple[str, float]]:
    """Prometheus's cumulative buckets ("le" bound, count) from the counts per bucket index."""
    out, total = [], 0
    for i, bound in enumerate((*BUCKETS, None)):
        total += counts[i] if i < len(counts) else 0
        out.append(("+Inf" if bound is None else repr(bound), total))
    return out


class Gauge:
    """A task's share of a gauge: set() adds the change, close() takes it back to 0."""

    def __init__(self, counters: Counting, metric: str, *labels: object) -> None:
        self.counters = counters
        self.key = _key("g.", metric, tuple(map(str, labels)))
        self.value = 0
        self._lock = threading.Lock()

    def set(self, value: int) -> None:
        with self._lock:
            change, self.value = value - self.value, value
        if change:
            self.counters.incr(self.key, change)

    def close(self) -> None:
        self.set(0)


class Measure(NamedTuple):
    """A measure counter read back: kind "l", "h" or "g", the metric, its label values and, for a histogram, the
    part ("b<i>" or "sum")."""

    kind: str
    metric: str
    labels: tuple[str, ...]
    part: str = ""


def parse(name: str) -> Measure | None:
    """The measure a counter name holds; None for an ordinary counter."""
    if not is_measure(name):
        return None
    metric, *labels = name[2:].split(SEP)
    if name[0] == "h":
        if not labels:
            return None
        return Measure("h", metric, tuple(labels[:-1]), labels[-1])
    return Measure(name[0], metric, tuple(labels))


def top_labels(counts: dict[str, int], n: int) -> dict[str, int]:
    """The `n` largest counts by label, the rest added up under OTHER (a bounded label set)."""
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    out = dict(ranked[:n])
    rest = sum(v for _, v in ranked[n:])
    if rest:
        out[OTHER] = out.get(OTHER, 0) + rest
    return out


TIMED = ("get", "get_many", "put", "delete", "flush")  # the store calls a task's store latency measures
PUSH_EVERY = 0.5  # seconds between the moves of a TimedStore's observations into the task's counters


class TimedStore:
    """A task's store, its reads and writes timed (the `store_latency` histogram by call; a put that fills the
    write buffer includes writing the batch). Everything else passes through unchanged. Observations are added
    up here and moved into the task's counters every PUSH_EVERY seconds and by settle() (at the task's end): a
    put costs a microsecond more, not a counter update per bucket."""

    def __init__(self, store: object, counters: Counting) -> None:
        self._store = store
        self._counters = counters
        self._lock = threading.Lock()
        self._pending: dict[str, int] = {}
        self._pushed = time.perf_counter()

    def __getattr__(self, name: str) -> object:
        value = getattr(self._store, name)
        if name not in TIMED:
            return value
        base = _key("h.", "store_latency", (name,))
        keys = [f"{base}{SEP}b{i}" for i in range(len(BUCKETS) + 1)]
        total = f"{base}{SEP}sum"

        def timed(*args: object, **kw: object) -> object:
            started = time.perf_counter()
            try:
                return value(*args, **kw)  # type: ignore[operator]
            finally:
                self._note(keys[bisect_left(BUCKETS, time.perf_counter() - started)], total, started)

        self.__dict__[name] = timed  # found as an attribute from now on
        return timed

    def _note(self, key: str, total: str, started: float) -> None:
        now = time.perf_counter()
        with self._lock:
            pending = self._pending
            pending[key] = pending.get(key, 0) + 1
            pending[total] = pending.get(total, 0) + int((now - started) * 1e6)
            if now - self._pushed < PUSH_EVERY:
                return
            self._pending, self._pushed = {}, now
        for name, n in pending.items():
            self._counters.incr(name, n)

    def settle(self) -> None:
        """Move what was observed into the task's counters (before they are read for the last time)."""
        with self._lock:
            pending, self._pending = self._pending, {}
        for name, n in pending.items():
            self._counters.incr(name, n)
