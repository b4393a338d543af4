"""Statistics of the webpage table (readdb -stats): counted per task, added up, and kept beside the table.

Counting them reads every row, so only an operator starts it (`nutch2 readdb -stats`, or the job API's readdb);
the last result is stored in the table's state (`stats`) with its time, for the searcher's dashboard to show
without reading a row.
"""

from __future__ import annotations

import json
import math
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from nutch2.config import Configuration
from nutch2.mapred.job import Counters, Job, TaskContext
from nutch2.mapred.runner import Runner
from nutch2.status import CrawlStatus
from nutch2.stores.base import DataStore
from nutch2.stores.query import Aggregate
from nutch2.urls.tableutil import unreverse_host
from nutch2.webpage import WebPage


def status_name(code: int) -> str:
    try:
        return CrawlStatus(code).name
    except ValueError:
        return f"UNKNOWN_{code}"


@dataclass
class TableStats:
    """Counts per status, retry count and host, score min/avg/max; the stats of two parts add up (merge)."""

    total: int = 0
    status: Counter[str] = field(default_factory=Counter)
    retries: Counter[int] = field(default_factory=Counter)
    hosts: Counter[str] = field(default_factory=Counter)
    score_sum: float = 0.0
    score_min: float | None = None
    score_max: float | None = None

    def merge(self, other: TableStats) -> None:
        self.total += other.total
        self.status.update(other.status)
        self.retries.update(other.retries)
        self.hosts.update(other.hosts)
        self.score_sum += other.score_sum
        for s in (other.score_min, other.score_max):
            if s is not None:
                self.score_min = s if self.score_min is None else min(self.score_min, s)
                self.score_max = s if self.score_max is None else max(self.score_max, s)

    def statuses(self) -> list[tuple[str, int]]:
        """(status name, count) in CrawlStatus order, unknown codes last."""
        order = {s.name: i for i, s in enumerate(CrawlStatus)}
        return sorted(self.status.items(), key=lambda kv: (order.get(kv[0], len(order)), kv[0]))

    def top_hosts(self, n: int) -> list[tuple[str, int]]:
        return sorted(self.hosts.items(), key=lambda kv: (-kv[1], kv[0]))[:n]


class Tally:
    """Rows counted the cheap way, for a task that reads them all: (status, retries) pairs as ints and each key's
    reversed host, turned into names once, by stats(), not per row (a row cost ~5 us, ~14 us with hosts; now
    ~2 us either way)."""

    def __init__(self, per_host: bool) -> None:
        self.per_host = per_host
        self.pairs: Counter[tuple[int, int]] = Counter()
        self.heads: Counter[str] = Counter()
        self.score_sum = 0.0
        self.score_min = math.inf
        self.score_max = -math.inf

    def add(self, page: WebPage) -> None:
        values = page.values()
        self.pairs[(values.get("status", 0), values.get("retries_since_fetch", 0))] += 1
        s = values.get("score", 0.0)
        self.score_sum += s
        if s < self.score_min:
            self.score_min = s
        if s > self.score_max:
            self.score_max = s
        if self.per_host:
            self.heads[key_host(page.key)] += 1

    def stats(self) -> TableStats:
        return from_aggregate(Aggregate.of(self.pairs, self.score_sum, self.score_min, self.score_max, self.heads))


def from_aggregate(agg: Aggregate) -> TableStats:
    """The stats of a store's aggregate (or a Tally's counts): status codes and reversed hosts named."""
    st = TableStats(total=agg.total, score_sum=agg.score_sum, score_min=agg.score_min, score_max=agg.score_max)
    for code, n in agg.status.items():
        st.status[status_name(code)] += n
    st.retries.update(agg.retries)
    for head, n in (agg.hosts or {}).items():
        st.hosts[host_name(head)] += n
    return st


def key_host(key: str) -> str:
    """The reversed host of a row key, cheaply: the key up to its first ':' (an IPv6 host up to its ']')."""
    return key[:key.find("]") + 1] if key.startswith("[") else key.partition(":")[0]


def host_name(reversed_host: str) -> str:
    """The host name of a key_host() (an IPv6 host is not reversed)."""
    return reversed_host if reversed_host.startswith("[") else unreverse_host(reversed_host)


STATE = "stats"  # the state name of the last readdb -stats result
HOSTS_KEPT = 1000  # hosts a recorded result keeps (the most URLs first)


def record_stats(store: DataStore, stats: TableStats, per_host: bool) -> None:
    """Keep `stats` beside the table, with the time, as the last result of readdb -stats. Without per-host counts
    (no -sort) the last per-host counts are kept, with the time they were counted (hostsTime)."""
    now = time.time()
    value = {"time": now, "total": stats.total, "status": dict(stats.statuses()),
             "retries": {str(k): v for k, v in sorted(stats.retries.items())},
             "score": {"min": stats.score_min, "avg": stats.score_sum / stats.total if stats.total else None,
                       "max": stats.score_max},
             "hosts": stats.top_hosts(HOSTS_KEPT) if per_host else None,
             "hostCount": len(stats.hosts) if per_host else None, "hostsTime": now if per_host else None}
    if not per_host:
        last = last_stats(store)
        if last is not None and last.get("hosts") is not None:
            value.update(hosts=last["hosts"], hostCount=last.get("hostCount"),
                         hostsTime=last.get("hostsTime", last["time"]))
    store.put_state(STATE, json.dumps(value))


def last_stats(store: DataStore) -> dict[str, Any] | None:
    """The last result record_stats kept (None: readdb -stats never ran, or the value is unreadable)."""
    raw = store.get_state(STATE)
    if raw is None:
        return None
    try:
        value = json.loads(raw)
        return value if isinstance(value, dict) and isinstance(value.get("time"), (int, float)) else None
    except ValueError:
        return None


class TableStatsJob(Job):
    """Map only: each task counts its split into its own stats (new_stats()); the final step adds them up."""

    name = "readdb"
    fields: tuple[str, ...] | None = ("status", "retries_since_fetch", "score")

    def __init__(self, conf: Configuration, per_host: bool = False) -> None:
        super().__init__(conf)
        self.per_host = per_host
        self.stats = self.new_stats()

    def new_stats(self) -> TableStats:
        return TableStats()

    def compute(self, store: DataStore, runner: Runner, counters: Counters | None = None) -> TableStats:
        """The stats from the store's own aggregate where it has one (a GROUP BY), else counted by the job."""
        agg = store.aggregate(self.per_host)
        if agg is None:
            runner.run(self, store, counters)
            return self.stats
        st = from_aggregate(agg)
        self.stats = st
        if counters is not None:
            counters.incr("aggregated_rows", agg.total)
        return st

    def map_setup(self, ctx: TaskContext) -> None:
        self.tally = Tally(self.per_host)

    def map(self, page: WebPage, ctx: TaskContext) -> tuple:
        self.tally.add(page)
        return ()

    def result(self, ctx: TaskContext) -> Any:
        return self.tally.stats()

    def finish(self, results: list[Any], ctx: TaskContext) -> None:
        self.stats = self.new_stats()
        for part in results:
            self.stats.merge(part)
