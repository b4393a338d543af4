"""The crawl dashboard's figures, read without reading a row: the page costs the same on any table size.

- the rows in the table now: the store's kept count (DataStore.cheap_count; None on a store that keeps none);
- the batches and their per-step counts: the batch journal (each step records the rows it left with its mark
  when it ends), so a finished batch still shows what it went through after updatedb removed its marks;
- statuses, retries, scores and hosts: the last `readdb -stats` result kept beside the table, with its time.
  Counting those reads every row, so only an operator starts it (the CLI, or the job API's readdb).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from nutch2.crawldb.journal import COUNTS, ORDER, BatchRecord, Journal, reached
from nutch2.crawldb.tablestats import last_stats
from nutch2.marks import Mark
from nutch2.stores.base import DataStore
from nutch2.stores.lease import held_leases

# the marks a row carries through a batch's steps (the page info view shows them)
STEPS: tuple[tuple[str, Mark], ...] = (
    ("generated", Mark.GENERATE), ("fetched", Mark.FETCH), ("parsed", Mark.PARSE),
    ("updated", Mark.UPDATEDB), ("indexed", Mark.INDEX),
)


@dataclass
class CrawlView:
    """What /crawl and /api/stats show."""

    rows: int | None  # rows in the table now (None: the store keeps no count)
    journal: list[BatchRecord] = field(default_factory=list)
    readdb: dict[str, Any] | None = None  # the last readdb -stats result (tablestats.record_stats)
    crawl: dict[str, Any] | None = None  # a `crawl` not finished: {"round": k, "rounds": n, "running": bool}
    at: float = field(default_factory=time.time)
    _rows: list[dict[str, Any]] | None = field(default=None, init=False, repr=False)

    def batch_rows(self) -> list[dict[str, Any]]:
        """Newest batch first, each with the rows every step left with its mark and the step it reached."""
        if self._rows is None:
            self._rows = self._batch_rows()
        return self._rows

    def _batch_rows(self) -> list[dict[str, Any]]:
        rows = []
        for rec in self.journal:
            if rec.state not in ORDER:
                continue
            row: dict[str, Any] = {"batchId": rec.batch_id, "generatedAt": _iso(rec.time),
                                   "rows": rec.counts.get("generated", rec.rows)}
            # a step the batch went through without a count (recorded by an older nutch2, which kept none): not
            # counted (None, shown "—"), not 0 rows; a step not reached yet left 0 rows
            row.update({step: rec.counts.get(step, None if reached(rec.state, step) else 0) for step in COUNTS})
            row["stage"] = rec.state
            rows.append(row)
        return sorted(rows, key=lambda r: (r["generatedAt"] or "", r["batchId"]), reverse=True)

    def readdb_json(self, top: int) -> dict[str, Any] | None:
        if self.readdb is None:
            return None
        out = {k: v for k, v in self.readdb.items() if k not in ("time", "hostsTime")}
        if out.get("hosts") is not None:
            out["hosts"] = [{"host": h, "count": n} for h, n in out["hosts"][:top]]
            hosts_time = self.readdb.get("hostsTime")  # older results: counted with the rest
            out["hostsCountedAt"] = _iso(hosts_time if isinstance(hosts_time, (int, float)) else self.readdb["time"])
        out["computedAt"] = _iso(self.readdb["time"])
        return out

    def to_json(self, top: int) -> dict[str, Any]:
        return {"total": self.rows, "countedAt": _iso(self.at), "batches": len(self.batch_rows()),
                "crawl": self.crawl, "readdb": self.readdb_json(top)}


def _iso(secs: float) -> str | None:
    if not secs:
        return None
    return datetime.fromtimestamp(secs, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def crawl_view(store: DataStore) -> CrawlView:
    """The dashboard's figures: a kept count and a few small state values, never a scan. The journal's crawl entry
    stays after a crawl stopped (so that the same command goes on from it): whether a crawl runs now is whether a
    crawl command holds the crawl's `crawler` lease."""
    journal = Journal(store)
    crawl = journal.crawl()
    if crawl is not None:
        crawl = {**crawl, "running": bool(held_leases(store, "crawler"))}
    return CrawlView(store.cheap_count(), journal.batches(), last_stats(store), crawl)


def bar_chart(items: list[tuple[str, int]], width: int = 560, bar: int = 22, label: int = 130) -> dict[str, Any]:
    """Geometry of a horizontal bar chart (rendered as SVG by the template): one bar per (label, count)."""
    top = max((n for _, n in items), default=0) or 1
    span = width - label - 70
    bars = [{"label": name, "count": n, "y": i * (bar + 6), "x": label, "w": max(1, round(span * n / top)),
             "h": bar} for i, (name, n) in enumerate(items)]
    return {"width": width, "height": max(1, len(items) * (bar + 6)), "bars": bars, "label": label}
