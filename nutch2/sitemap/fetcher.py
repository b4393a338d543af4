"""Sitemap discovery for one task, on the fetch engine (nutch2/fetch/fetcher.py): the same per-host queues, delays,
robots.txt rules, timeouts and content limits as the fetch job, with a feed that grows as sitemaps are read.

A source is a sitemap URL, or a host whose robots.txt `Sitemap:` lines name its sitemaps (read from the fetch
engine's robots cache: no request of its own; with sitemap.url.default.sitemap.xml, /sitemap.xml when it names
none). A fetched sitemap is parsed (nutch2/sitemap/sitemaps.py) as it is read: its URLs are yielded to the caller, the
sitemaps of an index go back into the feed, down to sitemap.index.max.depth, at most
sitemap.max.sitemaps.per.host per host, each sitemap once; redirects are new items of the feed (each one polite
and robots-checked), at most sitemap.redir.max in a row. Strict (the default), a sitemap may only list URLs under
its own folder, or — for a sitemap a robots.txt names — of that host (sitemaps.org's cross-submission rule);
an index only sitemaps there, each then judged by its own location. Every problem is a counter and a line (a
missing guessed /sitemap.xml only a counter); none ends the task.
"""

from __future__ import annotations

import queue
import threading
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Protocol
from urllib.parse import urlsplit

from nutch2.config import Configuration
from nutch2.errors import ConfigError
from nutch2.fetch.addresses import AddressPolicy
from nutch2.fetch.fetcher import Fetcher, fetcher_threads
from nutch2.fetch.output import ProtocolOutput
from nutch2.fetch.queues import FetchItem
from nutch2.logs import counted
from nutch2.sitemap.sitemaps import SitemapParser, SitemapUrl, SubSitemap, speaks_for
from nutch2.status import ProtocolStatusCode
from nutch2.stores.base import DataStore
from nutch2.urls.checker import UrlChecker
from nutch2.urls.domains import host_of

__all__ = ["FoundUrl", "SitemapFetcher", "SitemapSource", "sitemap_conf"]

_END = object()
_REDIRECTS = (ProtocolStatusCode.MOVED, ProtocolStatusCode.TEMP_MOVED)


class TaskLike(Protocol):
    def incr(self, name: str, n: int = 1) -> None: ...

    def log(self, msg: str) -> None: ...


@dataclass(frozen=True, slots=True)
class SitemapSource:
    """Where to look: a sitemap URL, or (robots=True) a host's root URL whose robots.txt names the sitemaps."""

    url: str
    robots: bool = False


@dataclass(frozen=True, slots=True)
class FoundUrl:
    """A URL a sitemap lists (normalized and filtered), with the sitemap's lastmod, changefreq and priority."""

    url: str
    sitemap: str
    lastmod: int | None = None
    changefreq: str | None = None
    priority: float | None = None


@dataclass(frozen=True, slots=True)
class _Sitemap:
    """What the feed knows of one sitemap item: its depth below its source, the robots host that named it (its
    root URL, the cross-submission origin), the redirects followed to reach it, whether it is only a guess."""

    depth: int
    origin: str | None
    hops: int = 0
    guessed: bool = False


def sitemap_conf(conf: Configuration) -> Configuration:
    """The fetch settings for sitemaps: bodies up to sitemap.size.max, redirects handed back (each hop is an item
    of its own, so it is polite and robots-checked too); bad values fail here, before any task starts."""
    size = conf.get_int("sitemap.size.max")
    if size <= 0:
        raise ConfigError(f"sitemap.size.max={size} must be > 0 (bytes), e.g. -D sitemap.size.max=52428800")
    for key in ("sitemap.index.max.depth", "sitemap.redir.max"):
        if conf.get_int(key) < 0:
            raise ConfigError(f"{key}={conf.get_int(key)} must be >= 0")
    out = conf.copy()
    out.set("http.content.limit", size)
    out.set("http.redirect.max", 0)
    return out


def root_of(url: str) -> str:
    """scheme://host[:port]/ of a URL."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}/"


class SitemapFetcher:
    """Fetches the sitemaps of some sources and yields the URLs they list (one run)."""

    def __init__(self, conf: Configuration, task: TaskLike, threads: int | None = None,
                 addresses: AddressPolicy | None = None, store: DataStore | None = None) -> None:
        self.conf = sitemap_conf(conf)
        self.task = task
        self.addresses = addresses  # the address guard (with the crawl's seeds); None: the configuration's
        self.store = store  # the crawl's: robots.txt answers kept there are used (and kept) by this fetch
        self.strict = conf.get_bool("sitemap.strict.parsing")
        self.threads = fetcher_threads(conf, threads)
        self.size_max = conf.get_int("sitemap.size.max")
        self.max_depth = conf.get_int("sitemap.index.max.depth")
        self.max_per_host = conf.get_int("sitemap.max.sitemaps.per.host")
        self.redir_max = conf.get_int("sitemap.redir.max")
        self.default_xml = conf.get_bool("sitemap.url.default.sitemap.xml")
        self.checker = UrlChecker(conf, "default", conf.get_bool("sitemap.url.normalize"),
                                  conf.get_bool("sitemap.url.filter"))
        self._lock = threading.Lock()
        self._log_lock = threading.Lock()
        self._seen: set[str] = set()
        self._per_host: Counter[str] = Counter()
        self._items: dict[str, _Sitemap] = {}
        self._inbox: queue.Queue[FetchItem] = queue.Queue()
        self._out: queue.Queue[object] = queue.Queue(maxsize=10_000)
        self._stopping = False
        self._error: BaseException | None = None
        self._fetcher: Fetcher | None = None

    # ---------------------------------------------------------------- the run
    def found(self, sources: list[SitemapSource]) -> Iterator[FoundUrl]:
        """Fetch the sources' sitemaps; the URLs they list, as they are read."""
        first: list[FetchItem] = []
        for source in sources:
            if source.robots:
                first.append(FetchItem("robots:" + source.url, source.url, {}, 0, None, None, robots_only=True))
            else:
                item = self._enqueue(source.url, _Sitemap(0, None), put=False)
                if item is not None:
                    first.append(item)
        self._fetcher = Fetcher(self.conf, self.threads, self._output, self.task, progress=False,
                                addresses=self.addresses, store=self.store)
        runner = threading.Thread(target=self._run, args=(first,), name="SitemapFetcher", daemon=True)
        runner.start()
        try:
            while True:
                got = self._out.get()
                if got is _END:
                    break
                yield got  # type: ignore[misc]
        finally:
            if runner.is_alive():  # the consumer stopped early: stop fetching and let the producers go
                self._stopping = True
                self._fetcher.stop()
                while runner.is_alive():
                    try:
                        self._out.get(timeout=0.1)
                    except queue.Empty:
                        pass
            runner.join()
            self._fetcher.close()
        if self._error is not None:
            raise self._error

    def _run(self, first: list[FetchItem]) -> None:
        assert self._fetcher is not None
        try:
            self._fetcher.run(self._feed(first))
        except BaseException as e:  # noqa: BLE001 - handed to the consumer's thread
            self._error = e
        finally:
            self._put(_END)

    def _feed(self, first: list[FetchItem]) -> Iterator[FetchItem]:
        """The initial items, then what the outputs add, until nothing is queued, fetched or being read."""
        assert self._fetcher is not None
        yield from first
        while not self._stopping:
            try:
                yield self._inbox.get(timeout=0.05)
            except queue.Empty:
                if self._fetcher.idle() and self._inbox.empty():
                    return

    def _put(self, value: object) -> None:
        while True:
            try:
                self._out.put(value, timeout=0.2)
                return
            except queue.Full:
                if self._stopping:
                    return

    # ---------------------------------------------------------------- the feed
    def _enqueue(self, url: str, info: _Sitemap, put: bool = True, parent: str | None = None,
                 parent_origin: str | None = None) -> FetchItem | None:
        """A sitemap URL for the feed, unless invalid, seen before, too deep, over its host's share or (strict)
        outside what its index may speak for. Sitemap URLs are normalized, not filtered: they are fetched, not
        crawled (and the usual filters drop .gz, the suffix of most big sitemaps)."""
        norm = self._normalize(url)
        if norm is None:
            self.task.incr("sitemaps_invalid")
            return None
        if parent is not None and self.strict and not speaks_for(parent, norm, parent_origin):
            self.task.incr("sitemaps_rejected")
            return None
        if info.depth > self.max_depth:
            self.task.incr("sitemaps_too_deep")
            if parent is not None:
                self._log(f"sitemap: {norm} (listed in {parent}) is deeper than sitemap.index.max.depth="
                              f"{self.max_depth}; not fetched")
            return None
        host = host_of(norm)
        with self._lock:
            if norm in self._seen:
                return None
            if 0 <= self.max_per_host <= self._per_host[host]:
                if self._per_host[host] == self.max_per_host:
                    self._log(f"sitemap: {host} has more than sitemap.max.sitemaps.per.host={self.max_per_host}"
                                  " sitemaps; the rest are not fetched")
                self._per_host[host] += 1
                self.task.incr("sitemaps_over_host_limit")
                return None
            self._seen.add(norm)
            self._per_host[host] += 1
            self._items[norm] = info
        item = FetchItem(norm, norm, {}, 0, None, None)
        if put:
            self._inbox.put(item)
        return item

    def _log(self, msg: str) -> None:
        with self._log_lock:  # fetcher threads: one whole line at a time
            self.task.log(msg)

    def _normalize(self, url: str) -> str | None:
        try:
            return self.checker.normalize(url)
        except ValueError:
            return None

    # ---------------------------------------------------------------- outputs (fetcher threads)
    def _output(self, item: FetchItem, code: int, args: list[str], out: ProtocolOutput | None) -> None:
        if code == ProtocolStatusCode.NOTFETCHING:  # a host deferred for its robots.txt: counted by the fetcher,
            return  # neither a failed sitemap nor a failed robots.txt (the next sitemap run asks again)
        try:
            if item.robots_only:
                self._robots(item, code, args)
            else:
                self._sitemap(item, code, args, out)
        except Exception as e:  # noqa: BLE001 - one sitemap must not stop the others
            self.task.incr("sitemaps_errors")
            self._log(f"sitemap: {item.url}: {type(e).__name__}: {e}")

    def _robots(self, item: FetchItem, code: int, args: list[str]) -> None:
        """A host's robots.txt was read: its Sitemap: lines (or the guess /sitemap.xml) join the feed."""
        if code != ProtocolStatusCode.SUCCESS:  # the host is down: a failed fetch
            self.task.incr("robots_failed")
            return
        assert self._fetcher is not None
        rules = self._fetcher.robots.cached(item.url)
        named = list(rules.sitemaps) if rules is not None else []
        self.task.incr("robots_hosts")
        self.task.incr("robots_sitemaps", len(named))
        root = self._normalize(root_of(item.url)) or root_of(item.url)
        guessed = not named and self.default_xml
        for url in named or ([root + "sitemap.xml"] if guessed else []):
            self._enqueue(url, _Sitemap(0, root, guessed=guessed))

    def _sitemap(self, item: FetchItem, code: int, args: list[str], out: ProtocolOutput | None) -> None:
        info = self._items.get(item.url, _Sitemap(0, None))
        if code in _REDIRECTS and args:
            if info.hops >= self.redir_max:
                self._failed(item.url, info, f"more than sitemap.redir.max={self.redir_max} redirects")
            else:
                self._enqueue(args[0], _Sitemap(info.depth, info.origin, info.hops + 1, info.guessed))
            return
        if code == ProtocolStatusCode.ROBOTS_DENIED:
            self.task.incr("sitemaps_robots_denied")
            return
        if code != ProtocolStatusCode.SUCCESS or out is None:
            self._failed(item.url, info, args[0] if args else ProtocolStatusCode(code).name)
            return
        self._read(item.url, info, out)

    def _failed(self, url: str, info: _Sitemap, reason: str) -> None:
        if info.guessed:  # /sitemap.xml tried on a host that names none: its absence is no failure
            self.task.incr("sitemaps_not_found")
            return
        self.task.incr("sitemaps_failed")
        self._log(f"sitemap: {url}: not fetched ({reason})")

    def _read(self, url: str, info: _Sitemap, out: ProtocolOutput) -> None:
        parser = SitemapParser(url, self.size_max)
        read = kept = 0
        for entry in parser.entries(out.content, out.truncated):
            if isinstance(entry, SubSitemap):  # judged by its own location: the robots.txt origin is not inherited
                self._enqueue(entry.loc, _Sitemap(info.depth + 1, None), parent=url, parent_origin=info.origin)
            else:
                read += 1
                kept += self._listed(entry, url, info)
            if self._stopping:
                return
        self.task.incr("sitemaps_fetched")
        self.task.incr(f"sitemaps_{parser.kind}")
        if parser.invalid:
            self.task.incr("found", parser.invalid)
            self.task.incr("rejected", parser.invalid)
            self.task.incr("rejected_invalid", parser.invalid)
        what = f"{counted(read, 'URL')} read before that ({kept} accepted)" if parser.kind != "index" else \
            "sitemaps before that"
        if parser.truncated:
            self.task.incr("sitemaps_truncated")
            self._log(f"sitemap: {url}: cut at sitemap.size.max={self.size_max} bytes (or by the fetch time limit); "
                      f"{what} kept")
        if parser.error is not None:
            if info.guessed and parser.kind == "unknown":  # a guessed /sitemap.xml that is no sitemap at all
                self.task.incr("sitemaps_not_found")
                return
            self.task.incr("sitemaps_malformed")
            self._log(f"sitemap: {url}: {parser.error}; {what} kept")

    def _listed(self, entry: SitemapUrl, sitemap: str, info: _Sitemap) -> bool:
        """Hand one listed URL to the caller unless it is invalid, outside the sitemap's scope (strict) or filtered."""
        self.task.incr("found")
        norm = self._normalize(entry.loc)
        reason = None
        if norm is None:
            reason = "rejected_invalid"
        elif self.strict and not speaks_for(sitemap, norm, info.origin):
            reason = "rejected_strict"
        elif self.checker.filter(norm) is None:
            reason = "rejected_filtered"
        if reason is not None:
            self.task.incr("rejected")
            self.task.incr(reason)
            return False
        assert norm is not None
        self._put(FoundUrl(norm, sitemap, entry.lastmod, entry.changefreq, entry.priority))
        return True
