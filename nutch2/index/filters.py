"""The indexing filter chain (Nutch's IndexingFilters and IndexUtil): a row becomes a document with the fields the
index job itself sets (id, crawlId, digest, batchId, boost), then each active indexing-filter plugin adds to it in
indexingfilter.order; a filter that returns None keeps the page out of the index."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, ClassVar

from nutch2.config import Configuration
from nutch2.crawldb.scoring import ScoringFilters
from nutch2.index.solr import document_id, solr_crawl_id
from nutch2.mapred import timebox
from nutch2.plugin.extension import Extension
from nutch2.rowkeys import NOINDEX_KEY
from nutch2.status import CrawlStatus, ParseMajor, ParseMinor
from nutch2.urls.tableutil import unreverse_url
from nutch2.webpage import WebPage


def indexable(page: WebPage) -> bool:
    """Parsed successfully, not a redirect, fetched (or unchanged since), and not marked noindex: a row the index
    job sends (and the only rows dedup compares: a copy the index never holds must not push out one it does)."""
    ps = page.parse_status
    return (page.status in (CrawlStatus.FETCHED, CrawlStatus.NOTMODIFIED)
            and ps.major_code == ParseMajor.SUCCESS and ps.minor_code != ParseMinor.REDIRECT
            and NOINDEX_KEY not in page.metadata)


class IndexingFilter(Extension):
    """index-*: add, change or remove fields of the document; return None to keep the page out of the index."""

    point: ClassVar[str] = "indexing-filter"

    def filter(self, doc: dict[str, Any], url: str, page: WebPage) -> dict[str, Any] | None:
        raise NotImplementedError


class FilterOverrun(Exception):
    """An indexing filter did not finish a document within indexingfilter.timeout (it was abandoned)."""


class FilterFailed(Exception):
    """An indexing filter raised on a document, or returned something that is not one."""

    def __init__(self, message: str, plugin: str = "") -> None:
        super().__init__(message)
        self.plugin = plugin


class IndexingFilters:
    """The chain; ``fields`` is every row field the filters read. `timeout`: seconds the chain may take for one
    document (indexingfilter.timeout; None: unbounded)."""

    def __init__(self, filters: Iterable[Any], scoring: ScoringFilters, timeout: float | None = None) -> None:
        self.filters = list(filters)
        self.scoring = scoring
        self.timeout = timeout
        self.dropped_by = ""  # the filter that kept the last page out (indexchecker names it)

    @classmethod
    def from_conf(cls, conf: Configuration) -> IndexingFilters:
        from nutch2.plugin import Plugins

        timeout = conf.get_float("indexingfilter.timeout")
        return cls(Plugins(conf).build("indexing-filter"), ScoringFilters.from_conf(conf),
                   timeout if timeout > 0 else None)

    @property
    def fields(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(f for flt in self.filters for f in flt.fields))

    def document(self, page: WebPage, crawl_id: str | None) -> dict[str, Any] | None:
        """The page's document, or None when a filter keeps it out; fields without a value are left out.
        FilterOverrun when the chain takes longer than its timeout, FilterFailed when a filter raises or returns
        no document."""
        running: list[str] = [""]
        try:
            return timebox.run(lambda: self._document(page, crawl_id, running), self.timeout if self.filters else None,
                               "nutch2-indexing-filter")
        except timebox.Overrun as e:
            why = "stopped before it answered" if e.stopped else \
                f"no answer within indexingfilter.timeout={self.timeout:g} s"
            raise FilterOverrun(f"indexing filter {running[0]}: {why}") from None

    def _document(self, page: WebPage, crawl_id: str | None, running: list[str]) -> dict[str, Any] | None:
        url = unreverse_url(page.key)
        doc: dict[str, Any] = {
            "id": document_id(crawl_id, page.key),
            "crawlId": solr_crawl_id(crawl_id),
            "digest": page.signature.hex() if page.signature else None,
            "batchId": page.batch_id,
        }
        for flt in self.filters:
            running[0] = getattr(flt, "plugin_id", type(flt).__name__)
            try:
                with timebox.owner(running[0]):
                    result = flt.filter(doc, url, page)
            except Exception as e:  # noqa: BLE001 - one plugin's failure on one page fails that page only
                why = f"indexing filter {running[0]} raised {type(e).__name__}: {e}"[:500]
                raise FilterFailed(why, running[0]) from e
            if result is None:
                self.dropped_by = running[0]
                return None
            if not isinstance(result, dict):
                raise FilterFailed(f"indexing filter {running[0]} returned {type(result).__name__}, not the "
                                   "document: return the dict it was given (None keeps the page out, running[0])")
            doc = result
        doc["boost"] = self.scoring.indexer_score(url, doc, page, 1.0)
        return {k: v for k, v in doc.items() if v is not None and v != []}

    def close(self) -> None:
        for flt in self.filters:
            flt.close()
        self.scoring.close()
