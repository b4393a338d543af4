"""example-wordcount: the extensions. Each is built from the configuration once per task (read properties in
__init__), and must not keep state between pages that the next page could see."""

from __future__ import annotations

from typing import Any

from nutch2.config import Configuration
from nutch2.index.filters import IndexingFilter
from nutch2.parse.parsers import ParseFilter
from nutch2.webpage import WebPage

KEY = "example.words"  # the row's metadata key


class WordCountParseFilter(ParseFilter):
    """After a successful parse: the number of words of the page's text into page.metadata."""

    def __init__(self, conf: Configuration) -> None:
        super().__init__(conf)
        self.min_length = conf.get_int("example.wordcount.min.length")

    def filter(self, doc: Any, parse: Any, page: WebPage, dom: Any | None) -> None:
        words = [w for w in (parse.text or "").split() if len(w) >= self.min_length]
        page.metadata[KEY] = str(len(words)).encode("ascii")


class WordCountIndexingFilter(IndexingFilter):
    """The row's word count as a number field of the document."""

    fields = ("metadata",)  # the WebPage fields it reads: the index job loads them

    def __init__(self, conf: Configuration) -> None:
        super().__init__(conf)
        self.field = conf.get_str("example.wordcount.field")

    def filter(self, doc: dict[str, Any], url: str, page: WebPage) -> dict[str, Any] | None:
        value = page.metadata.get(KEY)
        if value is not None:
            doc[self.field] = int(value)
        return doc
