"""index-more: the indexing filter."""

from __future__ import annotations

from typing import Any

from nutch2.index.solr import solr_date
from nutch2.plugins.points import IndexingFilter
from nutch2.webpage import WebPage


def types(content_type: str | None) -> list[str]:
    """The MIME type and its two parts (text/html -> text/html, text, html)."""
    if not content_type:
        return []
    mime = content_type.split(";")[0].strip().lower()
    if "/" not in mime:
        return [mime]
    major, minor = mime.split("/", 1)
    return [mime, major, minor]


class MoreIndexingFilter(IndexingFilter):
    nutch_class = "org.apache.nutch.indexer.more.MoreIndexingFilter"
    fields = ("content", "content_type", "modified_time")

    def filter(self, doc: dict[str, Any], url: str, page: WebPage) -> dict[str, Any] | None:
        doc["contentLength"] = len(page.content) if page.content else 0
        doc["type"] = types(page.content_type)
        doc["lastModified"] = solr_date(page.modified_time)
        return doc
