"""SitemapJob (`nutch2 sitemap`): URLs listed in sitemaps into the webpage table, as Nutch 1.x's SitemapProcessor.

Map: the lines of -sitemapUrls (sitemap URLs, or host names whose robots.txt names the sitemaps), read on the
driver and shipped, and with -fromRobots the host of every row → (fetch queue, source).
Reduce step 1, per fetch queue: the sitemap fetcher (nutch2/sitemap/fetcher.py: the fetch engine's politeness,
robots.txt and limits) → (row key, URL found with its lastmod, changefreq and priority).
Reduce step 2, per row key: one read and at most one write of the row. A new row is injected: priority → score
(Nutch's semantics, sitemap.priority.as.score), changefreq → fetch interval (within the adaptive schedule's
bounds), lastmod → modified time, the priority kept as stm_priority and the sitemaps as `sitemaps`. A known row keeps
its score and interval (unless sitemap.url.overwrite.existing) and becomes due when its lastmod is newer than
what the row knows of the page.

Crash safety: every value written is computed from the sitemaps and the row as read — nothing is added to what is
there — so a rerun of a killed job writes the same rows again.
"""

from __future__ import annotations

import codecs
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from itertools import groupby
from operator import itemgetter
from pathlib import Path
from typing import Any

from nutch2.config import Configuration
from nutch2.crawldb.scoring import ScoringFilters
from nutch2.errors import NutchError
from nutch2.fetch.addresses import AddressPolicy, seed_origins
from nutch2.fetch.fetcher import fetcher_threads
from nutch2.fetch.protocols import protocol_for
from nutch2.mapred.job import Job, ReduceStep, TaskContext
from nutch2.marks import Mark, set_distance
from nutch2.rowkeys import LASTMOD_KEY
from nutch2.sitemap.fetcher import FoundUrl, SitemapFetcher, SitemapSource, root_of, sitemap_conf
from nutch2.sitemap.sitemaps import CHANGEFREQ_SECONDS, DEFAULT_PRIORITY
from nutch2.status import CrawlStatus
from nutch2.stores.base import DataStore
from nutch2.urls.checker import queue_id
from nutch2.urls.tableutil import reverse_url, unreverse_url
from nutch2.webpage import WebPage

ROW_FIELDS = ("status", "markers", "metadata", "fetch_time", "fetch_interval", "modified_time", "score",
              "stm_priority", "sitemaps")


@dataclass(frozen=True, slots=True)
class ListLine:
    """One line of a -sitemapUrls file."""

    source: str
    lineno: int
    text: str


def list_files(path: Path) -> list[Path]:
    """The -sitemapUrls file, or the files of the folder (hidden ones skipped), in name order."""
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.is_file() and not p.name.startswith("."))
        if not files:
            raise NutchError(f"-sitemapUrls {path}: the folder has no files; put a file with one sitemap URL (or "
                             "host name) per line in it")
        return files
    if path.is_file():
        return [path]
    raise NutchError(f"-sitemapUrls {path} does not exist; give a file with one sitemap URL (or host name) per "
                     "line, or a folder of them")


def read_list(path: Path) -> Iterator[ListLine]:
    for file in list_files(path):
        try:
            with open(file, "rb") as f:
                for n, raw in enumerate(f, 1):
                    if n == 1 and raw.startswith(codecs.BOM_UTF8):
                        raw = raw[len(codecs.BOM_UTF8):]
                    yield ListLine(str(file), n, raw.decode("utf-8", errors="replace").strip())
        except OSError as e:
            raise NutchError(f"cannot read {file}: {e.strerror}; check its permissions") from None


class SitemapJob(Job):
    """Sources → sitemaps fetched per host → one row write per URL found."""

    name = "sitemap"
    fields = ("status",)  # rows are read for their host only

    def __init__(self, conf: Configuration, sitemap_urls: Path | None, from_robots: bool,
                 threads: int | None = None) -> None:
        super().__init__(conf)
        self.sitemap_urls = sitemap_urls
        self.from_robots = from_robots
        self.threads = fetcher_threads(conf, threads)  # bad settings fail here, before any task starts
        protocol_for(conf).close()
        sitemap_conf(conf)
        if sitemap_urls is not None:
            list_files(sitemap_urls)
        self.now = int(time.time() * 1000)
        self.overwrite = conf.get_bool("sitemap.url.overwrite.existing")
        self.priority_score = conf.get_bool("sitemap.priority.as.score")
        self.default_score = conf.get_float("db.score.injected")
        self.default_interval = conf.get_int("db.fetch.interval.default")
        self.min_interval = conf.get_float("db.fetch.schedule.adaptive.min_interval")
        self.max_interval = conf.get_float("db.fetch.schedule.adaptive.max_interval")
        self.scoring = ScoringFilters.from_conf(conf)

    # ---------------------------------------------------------------- input and map
    def inputs(self, store: DataStore, n: int) -> list[Any]:
        """The -sitemapUrls lines (read here, on the driver, and shipped) and, with -fromRobots, the store's splits."""
        inputs: list[Any] = []
        if self.sitemap_urls is not None:
            lines = list(read_list(self.sitemap_urls))
            size = max(1, -(-len(lines) // n))
            inputs += [tuple(lines[i:i + size]) for i in range(0, len(lines), size)]
        if self.from_robots:
            inputs += store.partitions(self.query(), n)
        return inputs or [()]

    def read(self, split: Any, store: DataStore) -> Iterable[Any]:
        """A chunk of -sitemapUrls lines (a tuple), or a partition of the table (rows read for their hosts)."""
        return split if isinstance(split, tuple) else store.read(self.query(), split)

    def map_setup(self, ctx: TaskContext) -> None:
        self._hosts: set[str] = set()

    def map(self, record: ListLine | WebPage, ctx: TaskContext) -> Iterator[tuple[Any, Any]]:
        source = self._row_source(record) if isinstance(record, WebPage) else self._line_source(record, ctx)
        if source is not None:
            yield queue_id(source.url, "byHost"), source

    def _row_source(self, page: WebPage) -> SitemapSource | None:
        try:
            root = root_of(unreverse_url(page.key))
        except ValueError:
            return None
        if not root.startswith(("http://", "https://")) or root in self._hosts:
            return None
        self._hosts.add(root)
        return SitemapSource(root, robots=True)

    def _line_source(self, line: ListLine, ctx: TaskContext) -> SitemapSource | None:
        """A sitemap URL, or a host name (host[:port]) whose robots.txt names the sitemaps."""
        text = line.text
        if not text or text.startswith("#"):
            return None
        if "://" in text:
            if not text.lower().startswith(("http://", "https://")) or any(c.isspace() for c in text):
                return self._bad(line, "not an http(s) URL", ctx)
            return SitemapSource(text)
        if any(c in text for c in "/ \t?#@"):
            return self._bad(line, "neither a sitemap URL nor a host name", ctx)
        return SitemapSource(f"http://{text.lower()}/", robots=True)

    @staticmethod
    def _bad(line: ListLine, why: str, ctx: TaskContext) -> None:
        ctx.log(f"{line.source}:{line.lineno}: {why}: {line.text[:200]!r}; line skipped")
        ctx.incr("bad_lines")
        return None

    # ---------------------------------------------------------------- reduce: fetch, then one write per row
    def steps(self) -> list[ReduceStep]:
        return [ReduceStep(reducer="fetch_sources"), ReduceStep(reducer="write_rows")]

    def write_rows(self, items: Iterator[tuple[Any, Any]], ctx: TaskContext) -> None:
        """Step 2: the URLs found for one row, from every sitemap that listed it, written once."""
        for key, group in groupby(items, key=itemgetter(0)):
            self._row(key, [found for _, found in group], ctx)

    def fetch_sources(self, items: Iterator[tuple[Any, Any]], ctx: TaskContext) -> Iterator[tuple[Any, Any]]:
        """Step 1: the sitemaps of this reducer's hosts fetched; each URL found goes on to its row's reducer."""
        sources = list(dict.fromkeys(source for _, source in items))
        if not sources:
            return
        ctx.incr("hosts", len({queue_id(s.url, "byHost") for s in sources}))
        addresses = AddressPolicy.from_conf(ctx.conf, seed_origins(ctx.store))
        for found in SitemapFetcher(self.conf, ctx, self.threads, addresses, ctx.store).found(sources):
            try:
                key = reverse_url(found.url)
            except ValueError:
                ctx.incr("rejected")
                ctx.incr("rejected_invalid")
                continue
            yield key, found

    def _row(self, key: str, found: list[FoundUrl], ctx: TaskContext) -> None:
        """Everything the sitemaps say about one URL, merged whatever their order, into its row."""
        lastmod = max((f.lastmod for f in found if f.lastmod is not None), default=None)
        if lastmod is not None and lastmod > self.now:
            lastmod = None  # a lastmod in the future is not believed (Nutch)
        priority = max((f.priority for f in found if f.priority is not None), default=None)
        intervals = [self._interval(f.changefreq) for f in found if f.changefreq is not None]
        interval = min(intervals) if intervals else None
        sitemaps = {f.sitemap: "" for f in sorted(found, key=lambda f: f.sitemap)}
        page = ctx.store.get(key, list(ROW_FIELDS))
        if page is None:
            self._inject(key, found[0].url, lastmod, priority, interval, sitemaps, ctx)
            return
        self._update(page, lastmod, priority, interval, sitemaps, ctx)

    def _interval(self, changefreq: str) -> int:
        """changefreq as a fetch interval in seconds, within the adaptive schedule's bounds (Nutch)."""
        seconds = CHANGEFREQ_SECONDS[changefreq]
        return int(min(max(seconds, self.min_interval), self.max_interval))

    def _score(self, priority: float | None) -> float:
        if not self.priority_score:
            return self.default_score
        return priority if priority else DEFAULT_PRIORITY  # 0 would never be fetched: the default (Nutch)

    def _inject(self, key: str, url: str, lastmod: int | None, priority: float | None, interval: int | None,
                sitemaps: dict[str, str], ctx: TaskContext) -> None:
        page = WebPage.new(key)  # the table held no row for it
        page.base_url = url
        page.status = int(CrawlStatus.INJECTED)
        page.fetch_time = self.now
        page.fetch_interval = interval if interval is not None else self.default_interval
        if lastmod is not None:
            page.modified_time = lastmod
        page.score = self._score(priority)
        self.scoring.injected_score(url, page)
        page.stm_priority = priority if priority is not None else DEFAULT_PRIORITY
        page.sitemaps = sitemaps
        Mark.INJECT.put(page, "y")
        set_distance(page, 0)
        ctx.write(page)
        ctx.incr("injected")

    def _update(self, page: WebPage, lastmod: int | None, priority: float | None, interval: int | None,
                sitemaps: dict[str, str], ctx: TaskContext) -> None:
        if self.overwrite:
            score = self._score(priority)
            if page.score != score:
                page.score = score
            if interval is not None and page.fetch_interval != interval:
                page.fetch_interval = interval
            if lastmod is not None and page.modified_time != lastmod:
                page.modified_time = lastmod
        stm_priority = priority if priority is not None else DEFAULT_PRIORITY
        if page.stm_priority != stm_priority:
            page.stm_priority = stm_priority
        merged = {**page.sitemaps, **sitemaps}
        if merged != page.sitemaps:
            page.sitemaps = merged
        if lastmod is not None and self._changed(page, lastmod):
            if page.fetch_time > self.now:
                page.fetch_time = self.now
            page.metadata[LASTMOD_KEY] = str(lastmod).encode("ascii")
            ctx.incr("due_by_lastmod")
        ctx.incr("updated" if page.is_dirty() else "known")
        ctx.write(page)

    @staticmethod
    def _changed(page: WebPage, lastmod: int) -> bool:
        """Does the sitemap say the page changed since the row last saw it change? Only for a row that was
        fetched and is not in a batch now, and once per lastmod (a refetch that finds the page unchanged keeps
        the old modified time: the same lastmod must not make it due again and again)."""
        if page.status in (CrawlStatus.INJECTED, CrawlStatus.UNFETCHED) or Mark.GENERATE.check(page):
            return False
        seen = page.metadata.get(LASTMOD_KEY)
        return lastmod > page.modified_time and (seen is None or lastmod > int(seen))
