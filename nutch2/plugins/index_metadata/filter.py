"""index-metadata: the indexing filter."""

from __future__ import annotations

import re
from typing import Any

from nutch2.config import Configuration
from nutch2.index.filters import IndexingFilter
from nutch2.webpage import WebPage

META_PREFIX = "meta_"  # parse-metatags' row metadata keys, and the fields they are indexed as
NUTCH_META_PREFIX = "metatag."  # Nutch's parse-metatags prefix of the same names
HEADER_PREFIX = "header_"  # fields of index.content.md
MAX_TERM_BYTES = 32766  # Lucene's longest term (UTF-8): Solr and OpenSearch refuse a document with a longer string


def term(value: str) -> str:
    """The value as a string field can index it: cut to MAX_TERM_BYTES of UTF-8 (a page's 40 KB meta description
    would make Solr answer 400 to the whole request, and every later index again)."""
    raw = value.encode("utf-8", "surrogatepass")
    return value if len(raw) <= MAX_TERM_BYTES else raw[:MAX_TERM_BYTES].decode("utf-8", "ignore")


def names(value: str) -> list[str]:
    return [n.strip() for n in value.split(",") if n.strip()]


def parse_md_source(key: str) -> tuple[str, str]:
    """(row metadata key, field) of an index.parse.md key: metatag.<name> and meta_<name> read the meta tag
    parse-metatags kept (key meta_<name in lower case>) into field meta_<name>; another key reads itself."""
    for prefix in (NUTCH_META_PREFIX, META_PREFIX):
        if key.startswith(prefix) and len(key) > len(prefix):
            name = key[len(prefix):]
            return META_PREFIX + name.lower(), META_PREFIX + name
    return key, key


def header_field(name: str) -> str:
    """The field of a response header: header_<name>, lower case, runs of other characters than letters and
    digits as one _ (Content-Language -> header_content_language)."""
    return HEADER_PREFIX + re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")


class MetadataIndexer(IndexingFilter):
    nutch_class = "org.apache.nutch.indexer.metadata.MetadataIndexer"
    fields = ("metadata", "headers")

    def __init__(self, conf: Configuration) -> None:
        super().__init__(conf)
        sources = {META_PREFIX + n: META_PREFIX + n.lower() for n in names(conf.get_str("index.metadata"))}
        for key in names(conf.get_str("index.parse.md")):
            row_key, field = parse_md_source(key)
            sources.setdefault(field, row_key)
        self.metadata = sources  # field -> row metadata key
        self.headers = {name.lower(): header_field(name) for name in names(conf.get_str("index.content.md"))}

    def filter(self, doc: dict[str, Any], url: str, page: WebPage) -> dict[str, Any] | None:
        for field, key in self.metadata.items():
            value = page.metadata.get(key)
            if value:
                text = value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
                values = [term(v.strip()) for v in text.split("\t") if v.strip()]  # tabs separate values (Nutch 2)
                if values:
                    doc[field] = values
        if self.headers:
            for name, value in page.headers.items():
                field = self.headers.get(name.lower())
                if field and value and value.strip():
                    doc.setdefault(field, []).append(term(value.strip()))
        return doc
