"""parse-boilerplate: the parse filter."""

from __future__ import annotations

import codecs
from typing import Any

from nutch2.config import Configuration
from nutch2.parse.parsers import ParseFilter
from nutch2.plugins.parse_boilerplate.extractors import extractor
from nutch2.plugins.parse_boilerplate.keys import KEYS, MAIN_AUTHOR, MAIN_CONTENT, MAIN_DATE, MAIN_TITLE
from nutch2.urls.tableutil import unreverse_url
from nutch2.webpage import WebPage


def page_html(content: bytes, encoding: str | None) -> str:
    """The page's bytes as text, in the encoding the HTML parser found (UTF-8 when it found none it knows)."""
    try:
        codecs.lookup(encoding or "utf-8")
    except LookupError:
        encoding = "utf-8"
    return content.decode(encoding or "utf-8", "replace")


class BoilerplateFilter(ParseFilter):
    """The main content of an HTML page into page.metadata (main_content, main_title, main_author, main_date);
    what an earlier parse found and this one does not goes. The full text (page.text) is left as it is."""

    def __init__(self, conf: Configuration) -> None:
        super().__init__(conf)
        self.name = conf.get_str("boilerplate.extractor").strip().lower()
        self.fast = conf.get_bool("boilerplate.fast")
        self.max_length = conf.get_int("boilerplate.max.length")
        self.extract = extractor(self.name, self.fast)  # fails here, before any row, without its library

    def __getstate__(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k != "extract"}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.extract = extractor(self.name, self.fast)

    def filter(self, doc: Any, parse: Any, page: WebPage, dom: Any | None) -> None:
        for key in KEYS:
            page.metadata.pop(key, None)
        if dom is None or doc is None or not doc.content:
            return
        found = self.extract(page_html(doc.content, parse.encoding), unreverse_url(page.key))
        text = found.text.strip()
        if 0 <= self.max_length < len(text):
            text = text[: self.max_length]
        for key, value in ((MAIN_CONTENT, text), (MAIN_TITLE, found.title), (MAIN_AUTHOR, found.author),
                           (MAIN_DATE, found.date)):
            value = value.strip()
            if value:
                page.metadata[key] = value.encode("utf-8")
