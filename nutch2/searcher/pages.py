"""Rows for the Searcher: one store handle, a row as JSON (the info page), and the cached copy of a page."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from nutch2.config import Configuration
from nutch2.crawldb.rowjson import iso_time, row_to_json
from nutch2.errors import StoreError
from nutch2.marks import Mark
from nutch2.parse.encoding import decode_content
from nutch2.parse.parseutil import caching_forbidden
from nutch2.status import CrawlStatus
from nutch2.stores import DataStore, open_store
from nutch2.webpage import WebPage

T = TypeVar("T")
HTML_TYPES = ("text/html", "application/xhtml+xml")


class StoreAccess:
    """The app's one handle on the crawl's table: opened on first use, dropped after a store error so the
    next request opens it again (the store may have been down, or the crawl not injected yet)."""

    def __init__(self, conf: Configuration, crawl_id: str | None) -> None:
        self.conf = conf
        self.crawl_id = crawl_id
        self._store: DataStore | None = None
        self._lock = threading.Lock()

    def _get(self) -> DataStore:
        with self._lock:
            if self._store is None:
                self._store = open_store(self.conf, self.crawl_id, create=False)
            return self._store

    def run(self, fn: Callable[[DataStore], T]) -> T:
        """fn(store); a StoreError closes the handle and propagates."""
        store = self._get()
        try:
            return fn(store)
        except StoreError:
            self.close()
            raise

    def close(self) -> None:
        with self._lock:
            store, self._store = self._store, None
        if store is not None:
            try:
                store.close()
            except StoreError:
                pass


def page_json(url: str, page: WebPage) -> dict[str, Any]:
    """readdb's row (nutch2/crawldb/rowjson.py) for the API: plus the status code, the real fetch time and sizes;
    metadata keys only; links as lists of {url, anchor}."""
    doc = row_to_json(page)
    doc.update({
        "url": url,
        "statusCode": int(page.status),
        "fetchedAt": iso_time(fetched_at(page)),
        "contentLength": len(page.content) if page.content else 0,
        "textLength": len(page.text) if page.text else 0,
        "markers": dict(sorted(page.markers.items())),
        "metadata": sorted(page.metadata),
        "inlinks": [{"url": u, "anchor": a} for u, a in sorted(page.inlinks.items())],
        "outlinks": [{"url": u, "anchor": a} for u, a in page.outlinks.items()],
        "headers": {k[:MAX_SHOWN]: _shown(v) for k, v in list(page.headers.items())[:MAX_HEADERS_SHOWN]},
    })
    return doc


MAX_SHOWN = 4096  # characters of one header value a page view shows (rows stored before the caps may hold more)
MAX_HEADERS_SHOWN = 200


def _shown(value: str) -> str:
    return value if len(value) <= MAX_SHOWN else f"{value[:MAX_SHOWN]}… ({len(value):,} characters)"


FETCHED_STATES = (CrawlStatus.FETCHED, CrawlStatus.NOTMODIFIED)
DATE_FIELDS = ("status", "fetch_time", "fetch_interval", "markers")


def fetched_at(page: WebPage) -> int | None:
    """When the page was last fetched (epoch ms), or None if it never was.

    The fetcher sets fetchTime to the time of the fetch; updatedb then moves it one fetch interval ahead to
    when the page is due again (Nutch 2 keeps no other copy). So a fetched row that went through updatedb
    (updatedb mark, no fetch mark) was fetched one interval before its fetchTime; with the adaptive
    schedule's sync_delta the next fetch is pulled in a little and this is that much early.
    """
    if page.status not in FETCHED_STATES or not page.fetch_time:
        return None
    if Mark.FETCH.check(page) is None and Mark.UPDATEDB.check(page) is not None:
        return page.fetch_time - page.fetch_interval * 1000
    return page.fetch_time


def mime_type(content_type: str | None) -> str:
    return (content_type or "").split(";")[0].strip().lower()


@dataclass
class CachedCopy:
    """The stored content, decoded as the parser decodes it, ready to serve as UTF-8."""

    body: str
    media_type: str  # text/html or text/plain
    charset: str  # the codec the content was decoded with


def cached_copy(page: WebPage) -> CachedCopy | None:
    """The page as fetched, decoded as the parser decodes it, or None when there is no content, it is not text,
    or the page forbids cached copies (robots noarchive/nocache, see caching_forbidden). HTML is made a snapshot
    by nutch2.searcher.snapshot before it is served."""
    if not page.content or caching_forbidden(page.metadata) != "none":
        return None
    mime = mime_type(page.content_type)
    headers = dict(page.headers)
    if mime in HTML_TYPES or (not mime and page.content.lstrip()[:1] == b"<"):
        text, charset = decode_content(page.content, page.content_type, headers, html=True)
        return CachedCopy(text, "text/html", charset)
    if mime.startswith("text/"):
        text, charset = decode_content(page.content, page.content_type, headers, html=False)
        return CachedCopy(text, "text/plain", charset)
    return None
