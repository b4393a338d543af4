"""language-identifier: the indexing filter (Nutch's LanguageIndexingFilter)."""

from __future__ import annotations

from typing import Any

from nutch2.config import Configuration
from nutch2.index.filters import IndexingFilter
from nutch2.plugins.language_identifier.codes import parse_language
from nutch2.plugins.language_identifier.parser import LANG_KEY, header
from nutch2.webpage import WebPage

UNKNOWN = "unknown"


class LanguageIndexingFilter(IndexingFilter):
    """The field ``lang``: the row's language (the parse filter's), else the HTTP Content-Language header's, else
    "unknown"; a page whose language lang.index.languages does not list is kept out of the index."""

    nutch_class = "org.apache.nutch.analysis.lang.LanguageIndexingFilter"
    fields = ("metadata", "headers")

    def __init__(self, conf: Configuration) -> None:
        super().__init__(conf)
        self.languages = {v.strip().lower() for v in conf.get("lang.index.languages") if v.strip()}

    def filter(self, doc: dict[str, Any], url: str, page: WebPage) -> dict[str, Any] | None:
        value = page.metadata.get(LANG_KEY)
        lang = (value.decode("ascii", "replace") if value else
                parse_language(header(page.headers or {}, "content-language"))) or UNKNOWN
        if self.languages and lang not in self.languages:
            return None
        doc["lang"] = lang
        return doc
