"""DbUpdaterJob: fold one batch's fetch and parse results back into the table.

Map: each row of the batch, plus one link datum per outlink (OPIC cash share, anchor, distance).
Reduce per URL: schedule the fetched row (default/adaptive, retries, GONE), create rows for new links,
merge inlinks (Nutch 2 replaced them), update score and distance, clear the batch's marks only.

Crash safety: a batch row is the input of the job until the job is done, so it must not change before every
row it gives links to is durable. The job therefore runs in two steps under one run id (the journal keeps it,
so a rerun uses the same one):
1. DbUpdaterJob: link targets outside the batch are written at once, carrying the run id in their metadata
   (UPDATE_RUN); the new state of each batch row is only staged: kept in its own metadata (STAGE_KEY), the row
   otherwise untouched.
   A rerun skips targets and batch rows already written by this run, and recomputes the rest from unchanged
   inputs: the same values.
2. UpdateCommitJob, once step 1 has finished: each batch row takes its staged state in one row write, which
   also drops its generate mark (so the row leaves the batch) and the staged copy. A rerun commits the rest.

A pipelined crawl (nutch2/tools/pipeline.py) runs step 1 while the next batch is fetched: that step leaves alone
the link targets that carry another batch's generate mark (the fetch writes their markers and metadata from
what it read before: a write here would be lost, or would drop the fetch mark), counted `deferred_in_flight`,
and the batch stays "updating". Once that fetch has ended, the same command run again (`update()` with the
journal's run id) writes them, as a rerun after a kill would, and commits.
"""

from __future__ import annotations

import time
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import groupby, islice
from operator import itemgetter
from typing import Any

from nutch2 import failpoints
from nutch2.config import Configuration
from nutch2.crawldb import lifecycle
from nutch2.crawldb.journal import has_rows
from nutch2.crawldb.schedule import STATUS_MODIFIED, STATUS_NOTMODIFIED, STATUS_UNKNOWN, fetch_schedule
from nutch2.crawldb.scoring import ScoreDatum, ScoringFilters
from nutch2.errors import NutchError
from nutch2.mapred.frameworks import make_runner
from nutch2.mapred.job import Counters, Job, TaskContext
from nutch2.marks import OLD_UPDATE_RUN, Mark, get_distance, set_distance
from nutch2.rowkeys import CLAIM, DEFER_KEY, STAGE_KEY, UPDATE_RUN
from nutch2.status import CrawlStatus
from nutch2.stores.base import DataStore, MarkFilter
from nutch2.stores.codec import values_from_json, values_to_json
from nutch2.urls.tableutil import reverse_url, unreverse_url
from nutch2.webpage import ALL_FIELDS, WebPage

UPDATE_FIELDS = tuple(f for f in ALL_FIELDS if f not in ("content", "text", "headers"))
TARGET_FIELDS = ("status", "score", "metadata", "inlinks", "markers")
TARGET_READ = 256  # link targets whose rows one batched get reads


def staged_run(metadata: dict[str, bytes]) -> str | None:
    """The run id of the state staged in a row's metadata, if any."""
    raw = metadata.get(STAGE_KEY)
    return raw.split(b"\n", 1)[0].decode("ascii", "replace") if raw else None


LinkDatum = tuple[str, str, float, int]
"""What a source row gives one of its outlink targets: (source URL, anchor, OPIC cash, distance). A plain tuple:
the shuffle carries one per outlink, pickled and merged; a map task sends a target's datums as one list."""
COMBINE_DATUMS = 8192  # link datums a map task gathers per target before it emits them (one pair a target)
REVERSED_KEEP = 4096  # outlink URLs whose row keys a map task remembers (a site's links repeat on its pages)


@dataclass(slots=True)
class BatchRow:
    """A row of the batch as the reducer needs it: after the map took its cash, and its metadata as read."""

    page: WebPage
    base_metadata: dict[str, bytes]

    def __reduce__(self):  # type: ignore[no-untyped-def]
        return BatchRow, (self.page, self.base_metadata)


class DbUpdaterJob(Job):
    name = "updatedb"
    fields = UPDATE_FIELDS
    has_reduce = True

    def __init__(self, conf: Configuration, batch_id: str | None, run: str, defer_in_flight: bool = False) -> None:
        super().__init__(conf)
        self.batch_id = batch_id
        self.run = run
        self.defer_in_flight = defer_in_flight  # leave link targets in another batch (being fetched) for later
        self.schedule = fetch_schedule(conf)
        self.scoring = ScoringFilters.from_conf(conf)
        self.retry_max = conf.get_int("db.fetch.retry.max")
        self.additions = conf.get_bool("db.update.additions.allowed")
        self.max_inlinks = conf.get_int("db.update.max.inlinks")
        self.max_interval = conf.get_int("db.fetch.interval.max")

    def mark_filter(self) -> MarkFilter | None:
        return (Mark.GENERATE.value, self.batch_id)

    def partition(self, key: Any, value: Any, n: int) -> int:
        return zlib.crc32(key.encode("utf-8")) % n

    # ---------------------------------------------------------------- map
    def map_setup(self, ctx: TaskContext) -> None:
        self._links: dict[str, list[LinkDatum]] = {}  # per target row key, the datums not emitted yet
        self._held = 0  # datums in self._links
        self._keys: dict[str, str] = {}  # outlink URL -> its row key (reverse_url)

    def map(self, page: WebPage, ctx: TaskContext) -> Iterator[tuple[Any, Any]]:
        """The row itself, at once; its outlinks' datums gathered per target (a combiner: the rows come in key
        order, a site's pages together, so a target's links from one site travel as one pair), emitted
        every COMBINE_DATUMS datums and at the end of the task (map_close). The row's own pair leaves only
        after distribute() has taken its cash."""
        base = dict(page.metadata)
        if Mark.FETCH.check(page) is None or not page.outlinks:
            yield page.key, BatchRow(page, base)
            return
        url = unreverse_url(page.key)
        keys = self._keys
        targets: list[tuple[str, str, str]] = []
        for target, anchor in page.outlinks.items():
            key = keys.get(target)
            if key is None:
                try:
                    key = reverse_url(target)
                except ValueError:
                    ctx.incr("bad_outlinks")
                    continue
                if len(keys) >= REVERSED_KEEP:
                    keys.clear()
                keys[target] = key
            targets.append((key, target, anchor))
        dist = (get_distance(page) or 0) + 1
        datums = [ScoreDatum(target, anchor, 0.0, dist) for _, target, anchor in targets]
        self.scoring.distribute_score_to_outlinks(url, page, datums)
        page.unload("outlinks")  # the datums below carry them: not shuffled twice, not held by the reducer
        yield page.key, BatchRow(page, base)
        links = self._links
        for (key, _target, anchor), datum in zip(targets, datums, strict=True):
            if key != page.key:
                group = links.get(key)
                if group is None:
                    links[key] = [(url, anchor, datum.score, dist)]
                else:
                    group.append((url, anchor, datum.score, dist))
        self._held += len(targets)
        if self._held >= COMBINE_DATUMS:
            yield from self.map_close(ctx)

    def map_close(self, ctx: TaskContext) -> Iterator[tuple[Any, Any]]:
        links, self._links, self._held = self._links, {}, 0
        return iter(links.items())

    # ---------------------------------------------------------------- reduce
    def run_reducer(self, items: Iterator[tuple[Any, Any]], ctx: TaskContext) -> None:
        """reduce per URL, the rows of link targets outside the batch read TARGET_READ URLs at a time (one
        batched get instead of a round trip per new link)."""
        groups = ((key, [v for _, v in group]) for key, group in groupby(items, key=itemgetter(0)))
        while chunk := list(islice(groups, TARGET_READ)):
            targets = [key for key, values in chunk if not any(isinstance(v, BatchRow) for v in values)]
            rows = ctx.store.get_many(targets, TARGET_FIELDS) if targets else {}
            for key, values in chunk:
                self.reduce(key, values, ctx, rows)

    def reduce(self, key: str, values: list[Any], ctx: TaskContext,
               rows: dict[str, WebPage] | None = None) -> None:
        """One URL: a batch row is scheduled and staged; a link target is created or given its new inlinks.
        rows: the targets' rows read ahead (absent: not in the table); None: read it here."""
        row = next((v for v in values if isinstance(v, BatchRow)), None)
        links = [d for v in values if not isinstance(v, BatchRow) for d in v]
        if row is not None:
            if staged_run(row.base_metadata) == self.run:
                ctx.incr("already_staged")
                return
            page = row.page
            self._update_batch_row(page, ctx)
            if links:
                self._apply_links(page, links)
            self._stage(page, row.base_metadata, ctx)
            return
        page = ctx.store.get(key, TARGET_FIELDS) if rows is None else rows.get(key)
        if page is None:
            if not self.additions:
                return
            page = self._new_row(key, ctx)
        elif page.metadata.get(UPDATE_RUN) == self.run.encode():
            ctx.incr("already_linked")
            return
        elif self.defer_in_flight and Mark.GENERATE.check(page) is not None:
            ctx.incr("deferred_in_flight")  # in a batch being fetched: written by this run once that fetch ends
            return
        self._apply_links(page, links)
        page.metadata = {**page.metadata, UPDATE_RUN: self.run.encode()}
        if OLD_UPDATE_RUN in page.markers:  # an older nutch2's (the row is written anyway)
            del page.markers[OLD_UPDATE_RUN]
        ctx.write(page)

    def _stage(self, page: WebPage, base_metadata: dict[str, bytes], ctx: TaskContext) -> None:
        """Keep the row's new values in its metadata until the commit step; change nothing else yet."""
        page.metadata.pop(STAGE_KEY, None)
        page.metadata[UPDATE_RUN] = self.run.encode()
        page.mark_dirty("metadata")  # the commit rewrites metadata, dropping the staged copy
        staged = WebPage(page.key)
        staged.metadata = {**base_metadata,
                           STAGE_KEY: f"{self.run}\n{values_to_json(page.dirty_values())}".encode()}
        ctx.write(staged)

    def _new_row(self, key: str, ctx: TaskContext) -> WebPage:
        page = WebPage.new(key)
        page.status = int(CrawlStatus.UNFETCHED)
        self.schedule.initialize(page, int(time.time() * 1000))
        self.scoring.initial_score(unreverse_url(key), page)
        ctx.incr("new_rows")
        return page

    def _apply_links(self, page: WebPage, links: list[LinkDatum]) -> None:
        self.scoring.update_score(unreverse_url(page.key), page, [ScoreDatum(*d) for d in links])
        merged = dict(page.inlinks)
        for source, anchor, _cash, _dist in links:
            merged.pop(source, None)
            merged[source] = anchor
        if self.max_inlinks >= 0 and len(merged) > self.max_inlinks:
            # keep the newest (this batch's links were moved to the end); [-0:] would keep them all
            merged = dict(list(merged.items())[len(merged) - self.max_inlinks:])
        if merged != page.inlinks:
            page.inlinks = merged
        best = min(d[3] for d in links)
        dist = get_distance(page)
        if dist is None or best < dist:
            set_distance(page, best)

    def _update_batch_row(self, page: WebPage, ctx: TaskContext) -> None:
        fetched = Mark.FETCH.check(page) is not None
        parse_mark = Mark.PARSE.check(page)
        for mark in (Mark.GENERATE, Mark.FETCH, Mark.PARSE):
            mark.remove(page)
        if OLD_UPDATE_RUN in page.markers:  # an older nutch2's (the markers are written anyway)
            del page.markers[OLD_UPDATE_RUN]
        if CLAIM in page.metadata:  # the fetch's claim has done its work with the batch
            del page.metadata[CLAIM]
        deferred = page.metadata.pop(DEFER_KEY, None) if DEFER_KEY in page.metadata else None
        if not fetched:  # dropped by a time limit, or not reached: due again next round
            ctx.incr("not_fetched")
            if deferred is not None:  # its robots.txt gave no rules: due once http.robots.503.defer.visits.delay is up
                ctx.incr("deferred")
                page.fetch_time = max(page.fetch_time or 0, _ms(deferred))
            return
        self._schedule(page, ctx)
        Mark.UPDATEDB.put(page, parse_mark or page.batch_id or self.batch_id)
        ctx.incr("updated")

    def _schedule(self, page: WebPage, ctx: TaskContext) -> None:
        status = page.status
        fetch_ms = page.fetch_time
        if status in (CrawlStatus.FETCHED, CrawlStatus.NOTMODIFIED):
            if status == CrawlStatus.NOTMODIFIED:
                state = STATUS_NOTMODIFIED
            elif page.signature is None or page.prev_signature is None:
                # first fetch (nothing to compare with) or not parsed: Nutch's STATUS_UNKNOWN, so the adaptive
                # schedule does not shrink the interval of every newly fetched page
                state = STATUS_UNKNOWN
            else:
                state = STATUS_MODIFIED if page.signature != page.prev_signature else STATUS_NOTMODIFIED
            modified = page.protocol_status.last_modified or (
                fetch_ms if state in (STATUS_MODIFIED, STATUS_UNKNOWN) else page.modified_time)
            self.schedule.set_fetch_schedule(page, page.prev_fetch_time, page.modified_time, fetch_ms,
                                             modified, state)
            if page.fetch_interval > self.max_interval:  # Nutch's forceRefetch: the interval fits the max, and
                # the next fetch is at most the max away (not pulled back by the difference: a schedule that synced
                # it with the page's changes had put it nearer, and pulling it back put it in the past)
                page.fetch_interval = self.max_interval
                page.fetch_time = min(page.fetch_time, fetch_ms + self.max_interval * 1000)
            ctx.incr({STATUS_MODIFIED: "modified", STATUS_NOTMODIFIED: "unchanged"}.get(state, "change_unknown"))
        elif status == CrawlStatus.RETRY:
            self.schedule.set_page_retry_schedule(page, fetch_ms)
            if page.retries_since_fetch >= self.retry_max:  # Nutch: GONE once retries reach the max
                page.status = int(CrawlStatus.GONE)
                ctx.incr("gone_after_retries")
        elif status == CrawlStatus.GONE:
            self.schedule.set_page_gone_schedule(page, fetch_ms)
        else:  # redirects
            self.schedule.set_fetch_schedule(page, page.prev_fetch_time, page.modified_time, fetch_ms,
                                             page.modified_time, STATUS_UNKNOWN)




class UpdateCommitJob(Job):
    """Step 2 of updatedb: every batch row takes the state staged for it (see the module docstring)."""

    name = "updatedb"
    fields = ("metadata", "markers")  # the markers as read: the store learns which marks the commit removes
    map_phase = "commit"

    def __init__(self, conf: Configuration, batch_id: str | None, run: str) -> None:
        super().__init__(conf)
        self.batch_id = batch_id
        self.run = run

    def mark_filter(self) -> MarkFilter | None:
        return (Mark.GENERATE.value, self.batch_id)

    def map(self, page: WebPage, ctx: TaskContext) -> Iterator[tuple[Any, Any]]:
        if staged_run(page.metadata) != self.run:
            raise NutchError(f"updatedb: row {page.key} of batch {self.batch_id} has no state staged by run "
                             f"{self.run}; run `nutch2 updatedb {self.batch_id}` again")
        values = values_from_json(page.metadata[STAGE_KEY].split(b"\n", 1)[1])
        markers = values.pop("markers", None)
        row = WebPage(page.key, **values)
        if markers is not None:  # edited in place, not assigned: a store with an entry index then drops the
            row = page  # entries of the marks removed (the batch's), and rewrites none of the marks kept
            for name in [n for n in page.markers if n not in markers]:
                del page.markers[name]
            for name, value in markers.items():
                if page.markers.get(name) != value:
                    page.markers[name] = value
            for name, value in values.items():
                setattr(page, name, value)
        ctx.write(row)
        ctx.incr("committed")
        failpoints.reach("updatedb.commit")
        return iter(())


def update(conf: Configuration, store: DataStore, batch: str | None, num_tasks: int | None,
           counters: Counters | None = None, defer_in_flight: bool = False) -> Counters:
    """updatedb's two steps under one run id (jobs/updatedb.py says why), recorded in the journal; batch None:
    every batch. defer_in_flight: step 1 only, leaving link targets of other batches; the batch stays
    "updating" until update() runs again (the module docstring says when)."""
    counters = counters or Counters("updatedb")
    lifecycle.begin_update(store, batch)
    if not has_rows(store, Mark.GENERATE, batch, "updatedb", "generate", counters):
        lifecycle.update_found_nothing(store, batch)
        return counters
    batches = store.mark_values(Mark.GENERATE.value) if batch is None else {batch}
    run = lifecycle.start_update(store, batch)
    runner = make_runner(conf, num_tasks)
    runner.run(DbUpdaterJob(conf, batch, run, defer_in_flight), store, counters)
    if defer_in_flight:
        return counters
    runner.run(UpdateCommitJob(conf, batch, run), store, counters)
    lifecycle.end_update(store, batch, batches)
    return counters


def _ms(raw: bytes) -> int:
    """A time in ms kept as metadata (0 when it is not a number)."""
    try:
        return int(bytes(raw))
    except ValueError:
        return 0
