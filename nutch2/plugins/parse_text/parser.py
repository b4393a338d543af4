"""parse-text: text/plain."""

from __future__ import annotations

from nutch2.config import Configuration
from nutch2.parse.html import parse_text
from nutch2.parse.parsers import Document, Parser, ParseSettings
from nutch2.parse.result import ParseResult, run_with_timeout


class TextParser(Parser):
    nutch_class = "org.apache.nutch.parse.text.TextParser"

    def __init__(self, conf: Configuration) -> None:
        super().__init__(conf)
        self.settings = ParseSettings.from_conf(conf)

    def parse(self, doc: Document) -> ParseResult:
        return run_with_timeout(lambda _c: parse_text(doc.content, doc.url, doc.content_type, dict(doc.headers)),
                                 doc.url, self.settings.timeout)
