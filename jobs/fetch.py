"""FetcherJob: fetch one batch politely. Map: random keys (a batch's hosts spread over the reducers by a stable hash
of their queue id); reduce: the fetch engine of nutch2/fetch/fetcher.py (a QueueFeeder thread plus fetcher threads over
FetchItemQueues, as Nutch 2's FetcherReducer); each outcome becomes the row's fetch state, with the FETCH mark
(and, with fetcher.parse, the parse).

Every URL of a batch, once: each request is claimed in the store first (nutch2/fetch/fetchclaim.py), so -resume and
a retried, re-run or speculative task never request a finished URL again, and request once more a URL whose attempt
died with it in flight; where the runner may run a task twice (Spark), one attempt at a time holds the task's hosts
(nutch2/mapred/tasklease.py)."""

from __future__ import annotations

import random
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

from nutch2 import failpoints
from nutch2.config import Configuration
from nutch2.crawldb import lifecycle
from nutch2.fetch.addresses import AddressPolicy, seed_origins
from nutch2.fetch.fetchclaim import LOST_REASON, Verdict, claim_of, next_claim, this_run, verdict
from nutch2.fetch.fetcher import Fetcher, fetcher_threads
from nutch2.fetch.headers import stored_headers
from nutch2.fetch.output import ProtocolOutput
from nutch2.fetch.protocols import protocol_for
from nutch2.fetch.queues import FetchItem
from nutch2.mapred import measures
from nutch2.mapred.job import Job, TaskContext, stable_hash
from nutch2.mapred.tasklease import TaskLease, clear_leases
from nutch2.marks import Mark
from nutch2.parse.parseutil import PARSE_FIELDS, PageParser
from nutch2.rowkeys import CLAIM, DEFER_KEY, TRUNCATED_KEY
from nutch2.status import CrawlStatus, ParseMajor, ProtocolStatusCode, protocol_to_crawl_status
from nutch2.stores.base import MarkFilter
from nutch2.urls.checker import UrlChecker, choose_repr, queue_id, repr_through
from nutch2.urls.domains import site_of
from nutch2.urls.tableutil import reverse_url, unreverse_url
from nutch2.webpage import ProtocolStatus, WebPage

FETCH_FIELDS = tuple(sorted({"markers", "fetch_time", "modified_time", "protocol_status", "headers", "status",
                             "repr_url", "parse_status", *PARSE_FIELDS} - {"content"}))


# rows whose content is the page as last fetched: only these send If-Modified-Since / If-None-Match
VALIDATED = (CrawlStatus.FETCHED, CrawlStatus.NOTMODIFIED, CrawlStatus.DUPLICATE)


class FetcherJob(Job):
    """Fetch the rows generated in one batch (or every generated row with -all)."""

    name = "fetch"
    fields = FETCH_FIELDS
    has_reduce = True
    progress_line = False  # the fetcher shows pages, errors and kB/s

    def __init__(self, conf: Configuration, batch_id: str | None, threads: int | None = None, resume: bool = False,
                 progress: bool | None = None) -> None:
        super().__init__(conf)
        self.batch_id = batch_id
        self.resume = resume
        self.threads = fetcher_threads(conf, threads)
        protocol_for(conf).close()  # its settings are checked here, before any task starts (a bad value, a
        # missing browser or a bad chromium.url.pattern with protocol-chromium)
        self.store_content = conf.get_bool("fetcher.store.content")
        self.defer_ms = conf.get_int("http.robots.503.defer.visits.delay")  # a deferred host's URLs wait this long
        self.inline_parse = conf.get_bool("fetcher.parse")
        if self.inline_parse:
            PageParser(conf).close()  # checks its settings and parse filters now; each task builds its own
        self.parser: PageParser | None = None
        self.write_batch = max(1, conf.get_int("fetcher.write.batch.size"))
        self.partition_mode = conf.get_str("partition.url.mode")
        queue_id("http://x/", self.partition_mode)
        queue_id("http://x/", conf.get_str("fetcher.queue.mode"))
        self.redirect_checker = UrlChecker(conf, "fetcher")
        # Nutch: db.ignore.external.links covers redirects too (2.x's handleRedirect, 1.x's db.ignore.also.redirects)
        self.ignore_external = conf.get_bool("db.ignore.external.links")
        self.site_of = site_of(conf.get_str("db.ignore.external.links.mode"))
        self.progress = progress  # None: the fetcher decides (a live line on a terminal, log lines elsewhere)
        self.lease_timeout = conf.get_float("fetcher.lease.timeout")
        self.run = uuid.uuid4().hex[:12]  # this run's claims; every task and attempt of the run shares it

    def map_setup(self, ctx: TaskContext) -> None:
        self._written = 0
        self._write_lock = threading.Lock()
        self._fetching: set[str] = set()  # batches this task recorded as `fetching` in the journal
        self._journal_lock = threading.Lock()

    def reduce_setup(self, ctx: TaskContext) -> None:
        self.map_setup(ctx)
        self.parser = PageParser(ctx.conf) if self.inline_parse else None  # the inline parse's, built in the task

    def reduce_cleanup(self, ctx: TaskContext) -> None:
        if self.parser is not None:
            self.parser.close()  # the inline parse's clients of this task (a Tika server's sessions)

    def mark_filter(self) -> MarkFilter | None:
        return (Mark.GENERATE.value, self.batch_id)

    # ---------------------------------------------------------------- map: random keys
    def map(self, page: WebPage, ctx: TaskContext) -> Iterator[tuple[Any, Any]]:
        v = verdict(page.markers, page.metadata, self.run, self.resume)
        item = self._item(page)
        if not this_run(page.metadata, self.run):  # this run's own rows are settled by its reducer
            # -resume: an earlier run's work (its tasks are gone); a claim it left without an outcome is taken over
            if v is Verdict.DONE:
                ctx.incr("skipped_already_fetched")
                return
            if v is Verdict.LOST:
                self._lost(ctx, item)
                return
        yield random.randint(0, 65535), item

    @staticmethod
    def _item(page: WebPage) -> FetchItem:
        url = unreverse_url(page.key)
        ps = page.protocol_status
        # a conditional GET only when the row keeps the page's content: a 304 confirms what the row holds, and after
        # a 404, a 5xx or a redirect that is the error's body, which the parse of the 304 would make the page's text
        conditional = page.status in VALIDATED
        modified = (ps.last_modified or page.modified_time or None) if conditional else None
        etag = next((v for k, v in page.headers.items() if k.lower() == "etag"), None) if conditional else None
        return FetchItem(page.key, url, dict(page.markers), page.fetch_time, modified, etag,
                         metadata=dict(page.metadata), signature=page.signature, repr_url=page.repr_url,
                         parsed=page.parse_status.major_code == ParseMajor.SUCCESS)

    def partition(self, key: Any, value: FetchItem, n: int) -> int:
        return stable_hash(queue_id(value.url, self.partition_mode)) % n

    # ---------------------------------------------------------------- reduce: feeder + fetcher threads
    def run_reducer(self, items: Iterator[tuple[Any, Any]], ctx: TaskContext) -> None:
        """A feeder and fetcher threads over this reducer's items (nutch2/fetch/fetcher.py); rows written as they come.
        Where the runner may run this task twice, the attempt first takes the task's lease (its hosts), and
        checks each item against the store when an earlier attempt of this run had the task."""
        lease = None
        if ctx.attempt is not None:
            lease = TaskLease(ctx.store, self.batch_id, ctx.task, self.run, ctx.attempt, self.lease_timeout,
                              ctx.log).acquire()
        addresses = AddressPolicy.from_conf(ctx.conf, seed_origins(ctx.store))  # the seeds' hosts pass the guard
        fetcher = Fetcher(self.conf, self.threads, lambda *outcome: self._output(ctx, *outcome), ctx, self.progress,
                          claim=lambda item: self._claim(ctx, lease, item), addresses=addresses, store=ctx.store)
        feed = (item for _, item in items)
        try:
            if lease is not None:
                lease.delay_of = fetcher.max_delay
            fetcher.run(self._settle(feed, ctx) if lease is not None and lease.rerun else feed)
        finally:
            fetcher.close()
            try:
                ctx.store.flush()
            finally:
                if lease is not None:
                    lease.release()

    def _settle(self, items: Iterator[FetchItem], ctx: TaskContext) -> Iterator[FetchItem]:
        """The items of a task an earlier attempt of this run had: what it finished is counted, not fetched;
        what it claimed without an outcome is requested once more (taken over), or recorded as a lost fetch when
        it was claimed MAX_CLAIMS times."""
        for item in items:
            row = ctx.store.get(item.key, ("markers", "metadata", "status"))
            if row is None:
                continue
            v = verdict(row.markers, row.metadata, self.run, self.resume)
            if v is Verdict.FETCH:
                yield item
            elif v is Verdict.REFETCH:
                item.metadata = dict(row.metadata)  # the claim it takes over
                yield item
            elif v is Verdict.LOST:
                item.metadata = dict(row.metadata)
                self._lost(ctx, item)
            elif this_run(row.metadata, self.run):
                ctx.incr("done_by_earlier_attempt")
                ctx.incr(f"status_{CrawlStatus(row.status).name}")
                measures.count(ctx, "fetch_pages", CrawlStatus(row.status).name, "EARLIER_ATTEMPT")
                if row.status == CrawlStatus.FETCHED:
                    ctx.incr("fetched")
            else:
                ctx.incr("skipped_already_fetched")

    def _claim(self, ctx: TaskContext, lease: TaskLease | None, item: FetchItem) -> None:
        """Make durable that this run may request the item (with the outcomes written before it)."""
        if lease is not None:
            lease.check()
        batch = item.markers.get(Mark.GENERATE.value) or self.batch_id
        if batch is not None and batch not in self._fetching:
            with self._journal_lock:  # before the task's first claim of the batch: a fetch again needs -resume
                if batch not in self._fetching:
                    lifecycle.fetching(ctx.store, batch)
                    self._fetching.add(batch)
        item.metadata[CLAIM] = next_claim(item.metadata, item.markers, batch or "", self.run, self.resume)
        if (claim := claim_of(item.metadata)) is not None and claim.count > 1:
            ctx.incr("refetched_in_flight")  # its earlier request may have reached the site: at most one more
        page = WebPage.from_store(item.key, {})
        page.metadata = dict(item.metadata)
        ctx.store.put(item.key, page)
        ctx.store.flush()

    def finish(self, results: list[Any], ctx: TaskContext) -> None:
        clear_leases(ctx.store, self.batch_id)  # every attempt has ended

    def _lost(self, ctx: TaskContext, item: FetchItem) -> None:
        """A URL claimed MAX_CLAIMS times without an outcome: every attempt that requested it died. Recorded once,
        as a request that got no answer (a failed fetch: RETRY), not requested again in this batch."""
        ctx.incr("result_lost")
        code = ProtocolStatusCode.EXCEPTION
        self._output(ctx, item, code, [LOST_REASON], ProtocolOutput(code, [LOST_REASON], final_url=item.url))

    # ---------------------------------------------------------------- output
    def _output(self, ctx: TaskContext, item: FetchItem, code: int, args: list[str],
                out: ProtocolOutput | None) -> None:
        failpoints.reach("fetch.answered")  # crash tests: a request answered, its outcome not written
        if code == ProtocolStatusCode.NOTFETCHING:  # deferred (robots.txt gave no rules): no outcome, a later round
            self._defer(ctx, item)
            return
        status = protocol_to_crawl_status(code)
        if status is None:
            return
        now = int(time.time() * 1000)
        # metadata and signature as read (clean): the fetch edits metadata in place instead of replacing the
        # row's whole map (OPIC cash, noindex flag), and an inline parse sees the old signature
        page = WebPage.from_store(item.key, {"metadata": dict(item.metadata), "signature": item.signature})
        page.markers = item.markers
        page.status = int(status)
        page.prev_fetch_time = item.fetch_time
        page.fetch_time = now
        page.protocol_status = ProtocolStatus(int(code), [str(a) for a in args],
                                              (out.last_modified or 0) if out else 0)
        if out is not None:
            self._content(page, item, status, out)
        Mark.FETCH.put(page, Mark.GENERATE.check(page) or self.batch_id)
        ctx.incr(f"status_{CrawlStatus(status).name}")
        measures.count(ctx, "fetch_pages", CrawlStatus(status).name, _code_name(code))
        if status == CrawlStatus.FETCHED:
            ctx.incr("fetched")
        if self.parser is not None and status == CrawlStatus.FETCHED:
            if self.parser.parse(page, ctx, signature_loaded=True):
                Mark.PARSE.put(page, Mark.FETCH.check(page) or self.batch_id)
        elif self.parser is not None and status == CrawlStatus.NOTMODIFIED:
            if item.parsed:  # the content it confirms was parsed: that parse stands
                Mark.PARSE.put(page, Mark.FETCH.check(page) or self.batch_id)
            else:  # left for the parse job (it parses a 304's kept content)
                ctx.incr("not_modified_unparsed")
        if not self.store_content and page.is_dirty("content"):
            page.content = None
        self._write(ctx, page)

    def _defer(self, ctx: TaskContext, item: FetchItem) -> None:
        """Mark the row deferred until now + http.robots.503.defer.visits.delay (updatedb makes it due then); no
        fetch mark: a `fetch -resume` of the batch tries it again."""
        until = int(time.time() * 1000) + max(0, self.defer_ms)
        page = WebPage.from_store(item.key, {})
        page.metadata = {**item.metadata, DEFER_KEY: str(until).encode()}
        self._write(ctx, page)

    def _content(self, page: WebPage, item: FetchItem, status: CrawlStatus, out: ProtocolOutput) -> None:
        if status == CrawlStatus.NOTMODIFIED:
            return  # keep the content of the previous fetch
        page.content = out.content
        page.content_type = out.content_type
        page.headers = stored_headers(out.headers)
        page.base_url = out.final_url or item.url
        if out.truncated:  # why, in WARC-Truncated's words (the parse and the WARC export say it)
            page.metadata[TRUNCATED_KEY] = (out.cut or "unspecified").encode()
        elif TRUNCATED_KEY in page.metadata:  # an earlier fetch was cut; this one is whole
            del page.metadata[TRUNCATED_KEY]
        if status in (CrawlStatus.REDIR_PERM, CrawlStatus.REDIR_TEMP) and out.args:
            target = self.redirect_checker.check(out.args[0])
            if target and self.ignore_external and self.site_of(target) != self.site_of(item.url):
                target = None  # the row stays a redirect; its target off this host (domain) is not followed
            page.outlinks = {target: ""} if target else {}
            if target:
                # issue 15: the representative URL of the redirect pair (Nutch's URLUtil.chooseRepr)
                page.repr_url = choose_repr(item.url, target, status == CrawlStatus.REDIR_TEMP)
                reverse_url(target)  # validate
        elif out.redirects or (item.repr_url and status == CrawlStatus.FETCHED):
            page.repr_url = repr_through(item.url, out.redirects)

    def _write(self, ctx: TaskContext, page: WebPage) -> None:
        ctx.write(page)
        with self._write_lock:
            self._written += 1
            flush = self._written % self.write_batch == 0
        if flush:
            ctx.store.flush()

def _code_name(code: int) -> str:
    """The protocol status code's name (Nutch's ProtocolStatusCodes), its number when it has none."""
    try:
        return ProtocolStatusCode(code).name
    except ValueError:
        return str(code)
