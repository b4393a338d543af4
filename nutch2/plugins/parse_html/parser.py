"""parse-html: the Parser over nutch2/parse/html.py (the HTML machinery the parse filters, the Tika XHTML reader
and the searcher share)."""

from __future__ import annotations

from nutch2.config import Configuration
from nutch2.parse.html import parse_html
from nutch2.parse.parsers import Document, Parser, ParseSettings
from nutch2.parse.result import ParseResult


class HtmlParser(Parser):
    nutch_class = "org.apache.nutch.parse.html.HtmlParser"

    def __init__(self, conf: Configuration) -> None:
        super().__init__(conf)
        self.settings = ParseSettings.from_conf(conf)

    def parse(self, doc: Document) -> ParseResult:
        s = self.settings
        return parse_html(doc.content, doc.url, doc.content_type, dict(doc.headers), max_outlinks=s.max_outlinks,
                          max_outlink_length=s.max_outlink_length, timeout=s.timeout, outlink_tags=s.outlink_tags,
                          keep_dom=True)
