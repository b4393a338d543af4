"""index-xpath: the indexing filter."""

from __future__ import annotations

from typing import Any

from nutch2.index.filters import IndexingFilter
from nutch2.webpage import WebPage

PREFIX = "x_"  # parse-xpath's row metadata keys, and the index fields (Solr's dynamic field x_*)


class XPathIndexer(IndexingFilter):
    """Every ``x_<field>`` of the row's metadata as the field ``x_<field>`` (its tab-separated values)."""

    fields = ("metadata",)

    def filter(self, doc: dict[str, Any], url: str, page: WebPage) -> dict[str, Any] | None:
        for key, value in sorted(page.metadata.items()):
            if key.startswith(PREFIX) and value:
                doc[key] = [v for v in value.decode("utf-8", "replace").split("\t") if v]
        return doc
