"""DeduplicationJob (`nutch2 dedup`): rows of one signature are one page; all but the best become DUPLICATE.

As Nutch 1.x's DeduplicationJob, on the table rather than in one index, so that every index writer gets the same
answer: `clean` (or `dedup` itself, which runs it after) then deletes the duplicates from every active writer.

Map: each fetched (or unchanged) row with a signature -> (signature, its rank). Reduce per signature: the row
ranked first keeps its status; the others are written with status DUPLICATE. The rank is Nutch's compare order:
the highest score, then the newest fetch time, then the shortest URL (then the row key, so that the choice is the
same in every run). The index job never sends a DUPLICATE row; a later fetch of it gives it a fetch status again,
and the next dedup judges it again.

Crash safety: the job only writes statuses it computes from rows it does not change otherwise, and rows already
DUPLICATE are not read again: a rerun after a kill finds the same winner of every group (a duplicate never is one)
and marks the duplicates left, so its rows equal an uninterrupted run's.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from nutch2.mapred.job import Job, TaskContext
from nutch2.status import CrawlStatus
from nutch2.urls.tableutil import unreverse_url
from nutch2.webpage import WebPage

DEDUPABLE = (CrawlStatus.FETCHED, CrawlStatus.NOTMODIFIED)


class DeduplicationJob(Job):
    """Map: (signature, rank) of each fetched row; reduce: mark all but the best of a signature DUPLICATE."""

    name = "dedup"
    fields = ("status", "signature", "score", "fetch_time")
    has_reduce = True

    def map(self, page: WebPage, ctx: TaskContext) -> Iterator[tuple[Any, Any]]:
        if page.status not in DEDUPABLE or not page.signature:
            return
        url = unreverse_url(page.key)
        yield page.signature.hex(), (-page.score, -page.fetch_time, len(url), page.key)

    def reduce(self, key: Any, values: list[Any], ctx: TaskContext) -> None:
        ctx.incr("signatures")
        if len(values) < 2:
            return
        for _, _, _, row_key in sorted(values)[1:]:
            ctx.write(WebPage(row_key, status=CrawlStatus.DUPLICATE))
            ctx.incr("duplicates")
