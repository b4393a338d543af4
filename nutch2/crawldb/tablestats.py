"""Statistics of the webpage table (readdb -stats, the searcher's dashboard): counted per task, added up."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from nutch2.config import Configuration
from nutch2.mapred.runner import Job, TaskContext
from nutch2.status import CrawlStatus
from nutch2.urls.tableutil import host_of_key
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

    def add(self, page: WebPage, per_host: bool = True) -> None:
        self.total += 1
        self.status[status_name(page.status)] += 1
        self.retries[page.retries_since_fetch] += 1
        s = page.score
        self.score_sum += s
        self.score_min = s if self.score_min is None else min(self.score_min, s)
        self.score_max = s if self.score_max is None else max(self.score_max, s)
        if per_host:
            self.hosts[host_of_key(page.key)] += 1

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

    def map_setup(self, ctx: TaskContext) -> None:
        self.stats = self.new_stats()

    def map(self, page: WebPage, ctx: TaskContext) -> tuple:
        self.stats.add(page, self.per_host)
        return ()

    def result(self, ctx: TaskContext) -> Any:
        return self.stats

    def finish(self, results: list[Any], ctx: TaskContext) -> None:
        self.stats = self.new_stats()
        for part in results:
            self.stats.merge(part)
