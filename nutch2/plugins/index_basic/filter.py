"""index-basic: the indexing filter."""

from __future__ import annotations

from typing import Any

from nutch2.archive.warc import fetched_at
from nutch2.config import Configuration
from nutch2.index.filters import IndexingFilter
from nutch2.index.solr import solr_date
from nutch2.parse.parseutil import caching_forbidden
from nutch2.urls.domains import domain_of_host
from nutch2.urls.tableutil import host_of_key
from nutch2.webpage import WebPage


def site_values(host: str) -> list[str]:
    """`a.b.example.co.uk` -> [a.b.example.co.uk, b.example.co.uk, example.co.uk]: what site: matches."""
    domain = domain_of_host(host)
    labels = host.split(".")
    out = [host]
    for i in range(1, len(labels)):
        parent = ".".join(labels[i:])
        if len(parent) < len(domain):
            break
        out.append(parent)
    return list(dict.fromkeys(out))


class BasicIndexingFilter(IndexingFilter):
    nutch_class = "org.apache.nutch.indexer.basic.BasicIndexingFilter"
    fields = ("title", "text", "fetch_time", "fetch_interval", "metadata", "repr_url", "status", "modified_time")

    def __init__(self, conf: Configuration) -> None:
        super().__init__(conf)
        self.max_title = conf.get_int("indexer.max.title.length")
        self.max_content = conf.get_int("indexer.max.content.length")

    def filter(self, doc: dict[str, Any], url: str, page: WebPage) -> dict[str, Any] | None:
        title, text = page.title or "", page.text or ""
        if self.max_title >= 0:
            title = title[: self.max_title]
        if self.max_content >= 0:
            text = text[: self.max_content]
        host = host_of_key(page.key)
        doc.update({"url": page.repr_url or url, "host": host, "site": site_values(host),
                    "fetched": solr_date(max(0, fetched_at(page))), "title": title, "content": text,
                    "tstamp": solr_date(page.fetch_time)})
        policy = caching_forbidden(page.metadata)
        if policy != "none":
            doc["cache"] = policy
        return doc
