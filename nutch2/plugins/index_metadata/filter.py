"""index-metadata: the indexing filter."""

from __future__ import annotations

from typing import Any

from nutch2.config import Configuration
from nutch2.plugins.points import IndexingFilter
from nutch2.webpage import WebPage

META_PREFIX = "meta_"


class MetadataIndexer(IndexingFilter):
    nutch_class = "org.apache.nutch.indexer.metadata.MetadataIndexer"
    fields = ("metadata",)

    def __init__(self, conf: Configuration) -> None:
        super().__init__(conf)
        self.names = [n.strip() for n in conf.get_str("index.metadata").split(",") if n.strip()]

    def filter(self, doc: dict[str, Any], url: str, page: WebPage) -> dict[str, Any] | None:
        for name in self.names:
            value = page.metadata.get(META_PREFIX + name.lower())
            if value:
                doc[META_PREFIX + name] = [v for v in value.decode("utf-8", "replace").split("\t") if v]
        return doc
