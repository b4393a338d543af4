"""index-more: the indexing filter."""

from __future__ import annotations

import mimetypes
import re
from typing import Any
from urllib.parse import urlsplit

from nutch2.config import Configuration
from nutch2.fetch.headers import http_date_ms
from nutch2.index.filters import IndexingFilter
from nutch2.index.solr import solr_date
from nutch2.webpage import WebPage

# Content-Disposition: inline; filename="foo.ppt" (Nutch's two patterns, in its order)
_FILENAME = (re.compile(r"\bfilename=['\"](.+)['\"]"), re.compile(r"\bfilename=(\S+)\b"))


def mime_type(content_type: str | None, url: str) -> str | None:
    """The MIME type without parameters, lower case; guessed from the URL's path when there is none."""
    mime = (content_type or "").split(";")[0].strip().lower()
    return mime or mimetypes.guess_type(urlsplit(url).path)[0]


def types(mime: str | None, parts: bool = True) -> list[str]:
    """The MIME type and, with `parts`, its two parts (text/html -> text/html, text, html)."""
    if not mime:
        return []
    if not parts or "/" not in mime:
        return [mime]
    return [mime, *mime.split("/", 1)]


def disposition_filename(value: str | None) -> str | None:
    for pattern in _FILENAME:
        m = pattern.search(value or "")
        if m:
            return m.group(1)
    return None


class MoreIndexingFilter(IndexingFilter):
    nutch_class = "org.apache.nutch.indexer.more.MoreIndexingFilter"
    fields = ("content", "content_type", "modified_time", "headers")

    def __init__(self, conf: Configuration) -> None:
        super().__init__(conf)
        self.parts = conf.get_bool("moreIndexingFilter.indexMimeTypeParts")

    def filter(self, doc: dict[str, Any], url: str, page: WebPage) -> dict[str, Any] | None:
        headers = {k.lower(): v for k, v in page.headers.items()}
        doc["contentLength"] = len(page.content) if page.content else 0
        doc["type"] = types(mime_type(page.content_type or headers.get("content-type"), url), self.parts)
        doc["lastModified"] = solr_date(http_date_ms(headers.get("last-modified"), iso=True) or page.modified_time)
        filename = disposition_filename(headers.get("content-disposition"))
        if filename and not doc.get("title"):  # never a second title (NUTCH-1140)
            doc["title"] = filename
        return doc
