"""DeduplicationJob (`nutch2 dedup`): rows of one signature are one page; all but the best become DUPLICATE.

As Nutch 1.x's DeduplicationJob, on the table rather than in one index, so that every index writer gets the same
answer: `clean` (or `dedup` itself, which runs it after) then deletes the duplicates from every active writer.

Map: each row the index job sends (fetched or unchanged, parsed, no redirect, not noindex) with a signature ->
(signature, its rank): a noindex copy kept as the original would leave the page in no index. Reduce per signature:
the row ranked first keeps its status; the others are written with status DUPLICATE. The rank is Nutch's compare order:
the highest score, then the newest fetch time, then the shortest URL (then the row key, so that the choice is the
same in every run). The index job never sends a DUPLICATE row; a later fetch of it gives it a fetch status again,
and the next dedup judges it again.

Near-duplicates (db.signature.class=simhash, dedup.simhash.distance d > 0): after the exact step above, the rows
left (one per signature) whose SimHashes differ in at most d bits are near-duplicates, within a host or across hosts
(dedup.simhash.scope). They are resolved best first, the rule that keeps every dropped page represented: in rank
order, a row is kept unless a row already kept is near it; then it is DUPLICATE. So with A ~ B and B ~ C but A not
near C, ranked A, B, C: A is kept, B is a duplicate of A, and C is kept (its only near row, B, is not in the index).
Two steps find the pairs as a map/reduce: the 64 bits are cut into d + 1 bands, and two SimHashes within d bits
are equal in at least one of them (pigeonhole), so step 1 sends each row once per band to the reducer of
(host, band, band value), which compares the full SimHashes of the rows there and emits each near pair once (from
the first band the two share) as (worse row, better row). Step 2, one reducer, reads the pairs sorted by the worse
row's rank and marks a row DUPLICATE when one of its better near rows is not: that row's own pairs came before it.
It holds the keys of the near-duplicates only; the pairs stream through the shuffle (sorted runs on disk).

Crash safety: the job only writes statuses it computes from rows it does not change otherwise, and rows already
DUPLICATE are not read again: a rerun after a kill finds the same winner of every group (a duplicate never is one)
and marks the duplicates left, so its rows equal an uninterrupted run's. The near-duplicate rule keeps this: whether
a row is kept depends only on the rows kept before it in rank order, so leaving out rows that were found duplicates
changes no decision. Step 2 writes only after every exact duplicate of step 0 is durable (a step's tasks flush
before the next step starts), so a rerun never sees a group's winner gone and a duplicate of it in its place.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from itertools import groupby
from operator import itemgetter
from typing import Any

from nutch2.config import Configuration
from nutch2.errors import ConfigError
from nutch2.index.filters import indexable
from nutch2.mapred.job import Job, ReduceStep, TaskContext
from nutch2.parse.signature import signature_class, simhash_bands
from nutch2.status import CrawlStatus
from nutch2.urls.domains import host_of
from nutch2.urls.tableutil import unreverse_url
from nutch2.webpage import WebPage

log = logging.getLogger(__name__)

SCOPES = ("host", "all")
SIMHASH_BYTES = 8
MAX_DISTANCE = 15  # bands of 4 bits: past it a band no longer narrows the candidates down


def first_common_band(a: int, b: int, distance: int) -> int | None:
    """The first band in which two SimHashes agree (None: in none, so they are more than `distance` bits apart)."""
    pairs = zip(simhash_bands(a, distance), simhash_bands(b, distance), strict=True)
    return next((i for i, (x, y) in enumerate(pairs) if x == y), None)


class DeduplicationJob(Job):
    """Map: (signature, rank) of each fetched row; reduce: mark all but the best of a signature DUPLICATE; with
    SimHash signatures, two more steps mark the near-duplicates (the module's docstring says how)."""

    name = "dedup"
    fields = ("status", "signature", "score", "fetch_time", "parse_status", "metadata")

    def __init__(self, conf: Configuration) -> None:
        super().__init__(conf)
        self.distance = conf.get_int("dedup.simhash.distance")
        if not 0 <= self.distance <= MAX_DISTANCE:
            raise ConfigError(f"dedup.simhash.distance={self.distance} is out of range; give a number of bits between "
                              f"0 (exact duplicates only) and {MAX_DISTANCE}")
        self.scope = conf.get_str("dedup.simhash.scope").strip().lower()
        if self.scope not in SCOPES:
            raise ConfigError(f"dedup.simhash.scope={self.scope!r} is not known; use host or all")
        self.near = signature_class(conf) == "simhash" and self.distance > 0

    def steps(self) -> list[ReduceStep]:
        if not self.near:
            return [ReduceStep()]
        return [ReduceStep(), ReduceStep(reducer="near_pairs"), ReduceStep(reducers=1, reducer="resolve")]

    def map(self, page: WebPage, ctx: TaskContext) -> Iterator[tuple[Any, Any]]:
        if not indexable(page) or not page.signature:  # a noindex or redirect row must not win over a page indexed
            return
        url = unreverse_url(page.key)
        host = host_of(url) if self.near and self.scope == "host" else ""
        yield page.signature.hex(), (-page.score, -page.fetch_time, len(url), page.key, host)

    def run_reducer(self, items: Iterator[tuple[Any, Any]], ctx: TaskContext) -> Iterator[tuple[Any, Any]]:
        """Step 0, per signature: all rows but the best become DUPLICATE; with near-duplicates, the best goes on to
        the reducer of each of its bands."""
        for signature, group in groupby(items, key=itemgetter(0)):
            rows = sorted(value for _, value in group)
            ctx.incr("signatures")
            for row in rows[1:]:
                self._duplicate(row[3], ctx)
            if self.near and len(signature) == 2 * SIMHASH_BYTES:  # a row of an earlier signature class: exact only
                *rank, host = rows[0]
                value = int(signature, 16)
                for band, part in enumerate(simhash_bands(value, self.distance)):
                    yield (host, band, part), (value, tuple(rank))

    def near_pairs(self, items: Iterator[tuple[Any, Any]], ctx: TaskContext) -> Iterator[tuple[Any, Any]]:
        """Step 1, per (host, band, band value): each pair of rows there within the distance, once (from the first
        band they share), as (worse rank, better rank)."""
        for (_, band, _), group in groupby(items, key=itemgetter(0)):
            rows = [value for _, value in group]
            for i, (a, rank_a) in enumerate(rows):
                for b, rank_b in rows[i + 1:]:
                    if (a ^ b).bit_count() <= self.distance and first_common_band(a, b, self.distance) == band:
                        ctx.incr("near_pairs")
                        yield (rank_a, rank_b) if rank_b < rank_a else (rank_b, rank_a)

    def resolve(self, items: Iterator[tuple[Any, Any]], ctx: TaskContext) -> Iterator[tuple[Any, Any]]:
        """Step 2 (one reducer), the pairs by the worse row's rank: a row is DUPLICATE when one of its better near
        rows is kept (not DUPLICATE: its own pairs came before, and a row in no pair as the worse one is kept)."""
        duplicates: set[str] = set()
        for worse, group in groupby(items, key=itemgetter(0)):
            if any(better[3] not in duplicates for _, better in group):
                duplicates.add(worse[3])
                self._duplicate(worse[3], ctx)
                ctx.incr("near_duplicates")
        return iter(())

    @staticmethod
    def _duplicate(key: str, ctx: TaskContext) -> None:
        ctx.write(WebPage(key, status=CrawlStatus.DUPLICATE))
        ctx.incr("duplicates")
