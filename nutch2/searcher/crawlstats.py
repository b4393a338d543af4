"""The crawl dashboard's figures: readdb-style stats, and the batches as the journal keeps them.

Statuses, retries, scores and hosts come from one map-only job over the table (each map task counts into its
own partial, `finish` merges them); the batches and their per-step counts come from the batch journal (each
step records the rows it left with its mark when it ends), so a finished batch still shows what it went
through after updatedb removed its marks. The app keeps the result for a few seconds (StatsCache).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from nutch2.config import Configuration
from nutch2.crawldb.journal import COUNTS, ORDER, BatchRecord, Journal
from nutch2.crawldb.tablestats import TableStats, TableStatsJob
from nutch2.mapred.runner import LocalRunner, TaskContext
from nutch2.marks import Mark
from nutch2.searcher.pages import StoreAccess
from nutch2.status import CrawlStatus

# the marks a row carries through a batch's steps (the page info view shows them)
STEPS: tuple[tuple[str, Mark], ...] = (
    ("generated", Mark.GENERATE), ("fetched", Mark.FETCH), ("parsed", Mark.PARSE),
    ("updated", Mark.UPDATEDB), ("indexed", Mark.INDEX),
)
STATUS_ORDER = [s.name for s in CrawlStatus]


@dataclass
class CrawlStats(TableStats):
    """What `readdb -stats -sort` prints, plus the journal's batches."""

    journal: list[BatchRecord] = field(default_factory=list)
    computed_at: float = 0.0  # epoch seconds

    def statuses(self) -> list[tuple[str, int]]:
        """(status name, count) in CrawlStatus order, unknown codes last."""
        order = {n: i for i, n in enumerate(STATUS_ORDER)}
        return sorted(self.status.items(), key=lambda kv: (order.get(kv[0], len(order)), kv[0]))

    def top_hosts(self, n: int) -> list[tuple[str, int]]:
        return sorted(self.hosts.items(), key=lambda kv: (-kv[1], kv[0]))[:n]

    def batch_rows(self) -> list[dict[str, Any]]:
        """Newest batch first, each with the rows every step left with its mark and the step it reached."""
        rows = []
        for rec in self.journal:
            if rec.state not in ORDER or rec.batch_id == "-all":
                continue
            row: dict[str, Any] = {"batchId": rec.batch_id, "generatedAt": _iso(rec.time),
                                   "rows": rec.counts.get("generated", rec.rows)}
            row.update({step: rec.counts.get(step, 0) for step in COUNTS})
            row["stage"] = rec.state
            rows.append(row)
        return sorted(rows, key=lambda r: (r["generatedAt"] or "", r["batchId"]), reverse=True)

    def to_json(self, top: int) -> dict[str, Any]:
        return {
            "total": self.total,
            "status": dict(self.statuses()),
            "retries": {str(k): v for k, v in sorted(self.retries.items())},
            "score": {"min": self.score_min, "avg": self.score_sum / self.total if self.total else None,
                      "max": self.score_max},
            "hosts": [{"host": h, "count": n} for h, n in self.top_hosts(top)],
            "hostCount": len(self.hosts),
            "computedAt": _iso(self.computed_at),
        }


def _iso(secs: float) -> str | None:
    if not secs:
        return None
    return datetime.fromtimestamp(secs, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


class CrawlStatsJob(TableStatsJob):
    """Map only: every task counts into its own CrawlStats; the final step adds them up into `stats`."""

    name = "crawlstats"
    fields = ("status", "retries_since_fetch", "score")

    def __init__(self, conf: Configuration) -> None:
        super().__init__(conf, per_host=True)

    def new_stats(self) -> CrawlStats:
        return CrawlStats()

    def finish(self, results: list[Any], ctx: TaskContext) -> None:
        super().finish(results, ctx)
        self.stats.computed_at = time.time()


def compute_stats(conf: Configuration, access: StoreAccess) -> CrawlStats:
    job = CrawlStatsJob(conf)
    access.run(lambda store: LocalRunner(conf).run(job, store))
    stats: CrawlStats = job.stats  # type: ignore[assignment]
    stats.journal = access.run(lambda store: Journal(store).batches())
    return stats


class StatsCache:
    """The last CrawlStats for `ttl` seconds; one computation at a time (callers in between wait for it)."""

    def __init__(self, compute: Callable[[], CrawlStats], ttl: float = 10.0) -> None:
        self.compute = compute
        self.ttl = ttl
        self._lock = threading.Lock()
        self._value: CrawlStats | None = None
        self._at = 0.0

    def get(self) -> CrawlStats:
        with self._lock:
            if self._value is None or time.monotonic() - self._at > self.ttl:
                self._value = self.compute()
                self._at = time.monotonic()
            return self._value

    def invalidate(self) -> None:
        with self._lock:
            self._value = None


def bar_chart(items: list[tuple[str, int]], width: int = 560, bar: int = 22, label: int = 130) -> dict[str, Any]:
    """Geometry of a horizontal bar chart (rendered as SVG by the template): one bar per (label, count)."""
    top = max((n for _, n in items), default=0) or 1
    span = width - label - 70
    bars = [{"label": name, "count": n, "y": i * (bar + 6), "x": label, "w": max(1, round(span * n / top)),
             "h": bar} for i, (name, n) in enumerate(items)]
    return {"width": width, "height": max(1, len(items) * (bar + 6)), "bars": bars, "label": label}
