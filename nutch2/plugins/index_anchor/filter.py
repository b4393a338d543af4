"""index-anchor: the indexing filter."""

from __future__ import annotations

from typing import Any

from nutch2.index.filters import IndexingFilter
from nutch2.webpage import WebPage


class AnchorIndexingFilter(IndexingFilter):
    nutch_class = "org.apache.nutch.indexer.anchor.AnchorIndexingFilter"
    fields = ("inlinks",)

    def filter(self, doc: dict[str, Any], url: str, page: WebPage) -> dict[str, Any] | None:
        anchors = list(dict.fromkeys(a.strip() for a in page.inlinks.values() if a and a.strip()))
        if anchors:
            doc["anchor"] = anchors
        return doc
