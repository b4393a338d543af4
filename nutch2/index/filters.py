"""The indexing filter chain (Nutch's IndexingFilters and IndexUtil): a row becomes a document with the fields the
index job itself sets (id, crawlId, digest, batchId, boost), then each active indexing-filter plugin adds to it in
indexingfilter.order; a filter that returns None keeps the page out of the index."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from nutch2.config import Configuration
from nutch2.crawldb.scoring import ScoringFilters
from nutch2.index.solr import document_id, solr_crawl_id
from nutch2.urls.tableutil import unreverse_url
from nutch2.webpage import WebPage


class IndexingFilters:
    """The chain; ``fields`` is every row field the filters read."""

    def __init__(self, filters: Iterable[Any], scoring: ScoringFilters) -> None:
        self.filters = list(filters)
        self.scoring = scoring

    @classmethod
    def from_conf(cls, conf: Configuration) -> IndexingFilters:
        from nutch2.plugins import Plugins

        return cls(Plugins(conf).build("indexing-filter"), ScoringFilters.from_conf(conf))

    @property
    def fields(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(f for flt in self.filters for f in flt.fields))

    def document(self, page: WebPage, crawl_id: str | None) -> dict[str, Any] | None:
        """The page's document, or None when a filter keeps it out; fields without a value are left out."""
        url = unreverse_url(page.key)
        doc: dict[str, Any] = {
            "id": document_id(crawl_id, page.key),
            "crawlId": solr_crawl_id(crawl_id),
            "digest": page.signature.hex() if page.signature else None,
            "batchId": page.batch_id,
        }
        for flt in self.filters:
            result = flt.filter(doc, url, page)
            if result is None:
                return None
            doc = result
        doc["boost"] = self.scoring.indexer_score(url, doc, page, 1.0)
        return {k: v for k, v in doc.items() if v is not None and v != []}

    def close(self) -> None:
        for flt in self.filters:
            flt.close()
        self.scoring.close()
