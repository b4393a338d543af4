"""parse-text: text/plain."""

from __future__ import annotations

from nutch2.config import Configuration
from nutch2.parse.html import ParseResult, _run_with_timeout, parse_text
from nutch2.parse.parsers import Document, Parser, ParseSettings


class TextParser(Parser):
    nutch_class = "org.apache.nutch.parse.text.TextParser"

    def __init__(self, conf: Configuration) -> None:
        super().__init__(conf)
        self.settings = ParseSettings.from_conf(conf)

    def parse(self, doc: Document) -> ParseResult:
        return _run_with_timeout(lambda _c: parse_text(doc.content, doc.url, doc.content_type, dict(doc.headers)),
                                 doc.url, self.settings.timeout)
