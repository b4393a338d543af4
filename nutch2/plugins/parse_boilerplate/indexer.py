"""parse-boilerplate: the indexing filter."""

from __future__ import annotations

from typing import Any

from nutch2.config import Configuration
from nutch2.index.filters import IndexingFilter
from nutch2.plugins.parse_boilerplate.keys import MAIN_AUTHOR, MAIN_CONTENT, MAIN_DATE
from nutch2.webpage import WebPage


class MainContentIndexer(IndexingFilter):
    """main_content (cut to indexer.max.content.length, as content is), main_author and main_date (a Solr date at
    midnight UTC) of the row, when parse-boilerplate found them."""

    fields = ("metadata",)

    def __init__(self, conf: Configuration) -> None:
        super().__init__(conf)
        self.max_content = conf.get_int("indexer.max.content.length")

    def filter(self, doc: dict[str, Any], url: str, page: WebPage) -> dict[str, Any] | None:
        def value(key: str) -> str:
            raw = page.metadata.get(key)
            return raw.decode("utf-8", "replace").strip() if raw else ""

        text = value(MAIN_CONTENT)
        if text:
            doc[MAIN_CONTENT] = text[: self.max_content] if self.max_content >= 0 else text
        if value(MAIN_AUTHOR):
            doc[MAIN_AUTHOR] = value(MAIN_AUTHOR)
        if value(MAIN_DATE):
            doc[MAIN_DATE] = value(MAIN_DATE) + "T00:00:00Z"
        return doc
