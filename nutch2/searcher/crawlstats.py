"""The crawl dashboard's figures: readdb-style stats and the batches in the table, counted from the marks.

One map-only job over the table (fields status, retries, score, markers, batch id): each map task counts
into its own partial, `finish` merges them. The app keeps the result for a few seconds (StatsCache), so a
dashboard that many people reload costs one scan per interval, not one per request.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from nutch2.config import Configuration
from nutch2.marks import Mark
from nutch2.runner import LocalRunner, TaskContext
from nutch2.searcher.pages import StoreAccess
from nutch2.status import CrawlStatus
from nutch2.tablestats import TableStats, TableStatsJob
from nutch2.webpage import WebPage

# how far a batch got: (step, mark) in the order a batch goes through them
STEPS: tuple[tuple[str, Mark], ...] = (
    ("generated", Mark.GENERATE), ("fetched", Mark.FETCH), ("parsed", Mark.PARSE),
    ("updated", Mark.UPDATEDB), ("indexed", Mark.INDEX),
)
STATUS_ORDER = [s.name for s in CrawlStatus]


@dataclass
class CrawlStats(TableStats):
    """What `readdb -stats -sort` prints, plus per batch the rows that carry each step's mark."""

    batches: dict[str, Counter[str]] = field(default_factory=dict)  # batch id -> step (or "rows") -> count
    computed_at: float = 0.0  # epoch seconds

    def add(self, page: WebPage, per_host: bool = True) -> None:
        super().add(page, per_host)
        if page.batch_id:
            self.batches.setdefault(page.batch_id, Counter())["rows"] += 1
        for step, mark in STEPS:
            value = mark.check(page)
            if value:
                self.batches.setdefault(value, Counter())[step] += 1

    def merge(self, other: TableStats) -> None:
        super().merge(other)
        for batch, counts in getattr(other, "batches", {}).items():
            self.batches.setdefault(batch, Counter()).update(counts)

    def statuses(self) -> list[tuple[str, int]]:
        """(status name, count) in CrawlStatus order, unknown codes last."""
        order = {n: i for i, n in enumerate(STATUS_ORDER)}
        return sorted(self.status.items(), key=lambda kv: (order.get(kv[0], len(order)), kv[0]))

    def top_hosts(self, n: int) -> list[tuple[str, int]]:
        return sorted(self.hosts.items(), key=lambda kv: (-kv[1], kv[0]))[:n]

    def batch_rows(self) -> list[dict[str, Any]]:
        """Newest batch first (ids start with the generate time in seconds), each with its step counts."""
        rows = []
        for batch, counts in self.batches.items():
            row: dict[str, Any] = {"batchId": batch, "generatedAt": _batch_time(batch), "rows": counts["rows"]}
            row.update({step: counts[step] for step, _ in STEPS})
            row["stage"] = _stage(counts)
            rows.append(row)
        return sorted(rows, key=lambda r: (_batch_seconds(r["batchId"]), r["batchId"]), reverse=True)

    def to_json(self, top: int) -> dict[str, Any]:
        return {
            "total": self.total,
            "status": dict(self.statuses()),
            "retries": {str(k): v for k, v in sorted(self.retries.items())},
            "score": {"min": self.score_min, "avg": self.score_sum / self.total if self.total else None,
                      "max": self.score_max},
            "hosts": [{"host": h, "count": n} for h, n in self.top_hosts(top)],
            "hostCount": len(self.hosts),
            "computedAt": datetime.fromtimestamp(self.computed_at, UTC).isoformat(timespec="seconds")
            .replace("+00:00", "Z"),
        }


def _stage(counts: Counter[str]) -> str:
    """The batch's furthest step: in flight while rows still carry its generate mark (updatedb removes the
    generate, fetch and parse marks and sets the updatedb mark)."""
    if counts["generated"]:
        for step in ("parsed", "fetched"):
            if counts[step]:
                return step
        return "generated"
    if counts["indexed"]:
        return "indexed"
    if counts["updated"]:
        return "updated"
    return "superseded"  # every row of it was generated again into a newer batch


def _batch_seconds(batch: str) -> int:
    head = batch.split("-", 1)[0]
    return int(head) if head.isdigit() else 0


def _batch_time(batch: str) -> str | None:
    secs = _batch_seconds(batch)
    if not 946684800 <= secs <= 32503680000:  # a batch id Nutch made: seconds between 2000 and 3000
        return None
    return datetime.fromtimestamp(secs, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


class CrawlStatsJob(TableStatsJob):
    """Map only: every task counts into its own CrawlStats; the final step adds them up into `stats`."""

    name = "crawlstats"
    fields = ("status", "retries_since_fetch", "score", "markers", "batch_id")

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
    return job.stats  # type: ignore[return-value]


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
