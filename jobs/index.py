"""IndexingJob: send parsed, updated rows to Solr as documents; clean (GONE/redirects) and dedup (by digest)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

from nutch2.archive.warc import fetched_at
from nutch2.config import Configuration
from nutch2.crawldb.scoring import OpicScoring
from nutch2.index.solr import SolrClient, crawl_filter, document_id, solr_crawl_id
from nutch2.mapred.runner import Counters, Job, Runner, TaskContext
from nutch2.marks import Mark
from nutch2.parse.html import caching_forbidden
from nutch2.parse.parseutil import META_PREFIX, NOINDEX_KEY
from nutch2.status import CrawlStatus, ParseMajor, ParseMinor
from nutch2.stores.base import DataStore, MarkFilter
from nutch2.urls.domains import domain_of_host
from nutch2.urls.tableutil import host_of_key, unreverse_url
from nutch2.webpage import WebPage

INDEX_FIELDS = ("status", "title", "text", "inlinks", "signature", "batch_id", "score", "fetch_time", "fetch_interval",
                "content_type", "modified_time", "parse_status", "markers", "metadata", "content", "repr_url")
GONE_STATUSES = (CrawlStatus.GONE, CrawlStatus.REDIR_PERM, CrawlStatus.REDIR_TEMP)


def solr_date(ms: int) -> str | None:
    if not ms:
        return None
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def indexable(page: WebPage) -> bool:
    """Parsed successfully, not a redirect, fetched (or unchanged since), and not marked noindex."""
    ps = page.parse_status
    return (page.status in (CrawlStatus.FETCHED, CrawlStatus.NOTMODIFIED)
            and ps.major_code == ParseMajor.SUCCESS and ps.minor_code != ParseMinor.REDIRECT
            and NOINDEX_KEY not in page.metadata)


class IndexingJob(Job):
    """Map over rows carrying the UPDATEDB mark; each task sends documents to Solr in batches of
    solr.commit.size through its own client; the final step commits.

    Rows get the INDEX mark (= their UPDATEDB mark) only after Solr committed them, by MarkIndexedJob, which
    selects the same rows again — so a failed run marks nothing and a rerun sends what is missing. `-all`
    sends rows whose INDEX mark differs from their UPDATEDB mark (updated since last indexed); `-reindex`
    sends every indexable row.

    Documents carry their crawl: the crawlId field, and ids `<crawlId>!<row key>` (solr.document_id), so crawls
    share a core without overwriting each other. `-reindex` also deletes the document a row had under its bare
    row key, the id of cores indexed before crawl ids: reindexing each crawl moves an older core over.
    """

    name = "index"
    fields = INDEX_FIELDS

    def __init__(self, conf: Configuration, batch_id: str | None, solr_url: str, reindex: bool = False,
                 crawl_id: str | None = None) -> None:
        super().__init__(conf)
        self.batch_id = batch_id
        self.crawl_id = crawl_id
        self.solr_url = solr_url
        self.timeout = conf.get_float("solr.timeout")
        self.reindex = reindex
        self.commit_size = max(1, conf.get_int("solr.commit.size"))
        self.commit = conf.get_bool("solr.commit.index")
        self.max_title = conf.get_int("indexer.max.title.length")
        self.max_content = conf.get_int("indexer.max.content.length")
        self.scoring = OpicScoring(conf)
        self.index_metadata = [n.strip() for n in conf.get_str("index.metadata").split(",") if n.strip()]

    def mark_filter(self) -> MarkFilter | None:
        all_batches = self.reindex or self.batch_id is None
        return (Mark.UPDATEDB.value, None if all_batches else self.batch_id)

    def skip(self, page: WebPage) -> str | None:
        """Why the row is not sent (and then not marked), or None: the same answer in both passes."""
        if not indexable(page):
            return "skipped_not_indexable"
        if self.batch_id is None and not self.reindex and Mark.INDEX.check(page) == Mark.UPDATEDB.check(page):
            return "skipped_already_indexed"
        return None

    def map_setup(self, ctx: TaskContext) -> None:
        self.solr = SolrClient(self.solr_url, self.timeout)
        self.buffer: list[dict[str, Any]] = []
        self.legacy: list[str] = []  # -reindex: ids of the documents indexed before crawl ids

    def map(self, page: WebPage, ctx: TaskContext) -> Iterator[tuple[Any, Any]]:
        reason = self.skip(page)
        if reason:
            ctx.incr(reason)
        else:
            self.buffer.append(self.document(page))
            if self.reindex:
                self.legacy.append(page.key)
            if len(self.buffer) >= self.commit_size:
                self._send(ctx)
        return iter(())

    def map_cleanup(self, ctx: TaskContext) -> None:
        if sys.exc_info()[0] is None:  # a failed task sends no more
            self._send(ctx)

    def _send(self, ctx: TaskContext) -> None:
        if self.legacy:
            self.solr.delete_ids(self.legacy)
            self.legacy.clear()
        if self.buffer:
            self.solr.add(self.buffer)
            ctx.incr("indexed", len(self.buffer))
            self.buffer.clear()

    def finish(self, results: list[Any], ctx: TaskContext) -> None:
        if self.commit:
            SolrClient(self.solr_url, self.timeout).commit()


    def document(self, page: WebPage) -> dict[str, Any]:
        """Nutch's fields: id (crawl and reversed key), url, host, title, content, anchor, digest, batchId, boost,
        tstamp...; and crawlId, site (the host and its parent domains down to the registered one, for site:) and
        fetched (when the content was fetched; tstamp is Nutch 2's fetchTime, the next fetch after updatedb)."""
        title = page.title or ""
        text = page.text or ""
        if self.max_title >= 0:
            title = title[: self.max_title]
        if self.max_content >= 0:
            text = text[: self.max_content]
        anchors = list(dict.fromkeys(a.strip() for a in page.inlinks.values() if a and a.strip()))
        host = host_of_key(page.key)
        doc: dict[str, Any] = {
            "id": document_id(self.crawl_id, page.key),
            "crawlId": solr_crawl_id(self.crawl_id),
            "url": unreverse_url(page.key),
            "host": host,
            "site": site_values(host),
            "fetched": solr_date(max(0, fetched_at(page))),
            "title": title,
            "content": text,
            "digest": page.signature.hex() if page.signature else None,
            "batchId": page.batch_id,
            "boost": self.scoring.index_boost(page),
            "tstamp": solr_date(page.fetch_time),
            "contentLength": len(page.content) if page.content else 0,
            "type": _types(page.content_type),
            "lastModified": solr_date(page.modified_time),
        }
        if anchors:
            doc["anchor"] = anchors
        doc.update(self._nutch_fields(page))
        return {k: v for k, v in doc.items() if v is not None and v != []}

    # ---- issue 15: Nutch's index-basic url (the repr URL of a redirect), index-metadata and cache fields
    def _nutch_fields(self, page: WebPage) -> dict[str, Any]:
        """url = the row's repr URL when it has one (URLUtil.chooseRepr's pick for a redirect), meta_<name> fields
        of index.metadata (values split at tabs), cache = the caching policy of a noarchive/nocache page."""
        fields: dict[str, Any] = {}
        if page.repr_url:
            fields["url"] = page.repr_url
        for name in self.index_metadata:
            value = page.metadata.get(META_PREFIX + name.lower())
            if value:
                fields[META_PREFIX + name] = [v for v in value.decode("utf-8", "replace").split("\t") if v]
        policy = caching_forbidden(page.metadata)
        if policy != "none":
            fields["cache"] = policy
        return fields


class MarkIndexedJob(IndexingJob):
    """Second pass of index, after Solr committed: the INDEX mark on every row the first pass sent."""

    fields = ("status", "parse_status", "metadata", "markers")

    def map_setup(self, ctx: TaskContext) -> None:
        pass

    def map(self, page: WebPage, ctx: TaskContext) -> Iterator[tuple[Any, Any]]:
        if self.skip(page) is None:
            marked = WebPage(page.key, markers=dict(page.markers))
            Mark.INDEX.put(marked, page.markers.get(Mark.UPDATEDB.value, self.batch_id))
            ctx.write(marked)
        return iter(())

    def map_cleanup(self, ctx: TaskContext) -> None:
        pass

    def finish(self, results: list[Any], ctx: TaskContext) -> None:
        pass


def run_index(conf: Configuration, store: DataStore, batch_id: str | None, solr_url: str, reindex: bool,
              runner: Runner, counters: Counters, crawl_id: str | None = None) -> None:
    """Send the documents (and commit), then mark what Solr holds now."""
    runner.run(IndexingJob(conf, batch_id, solr_url, reindex, crawl_id), store, counters)
    runner.run(MarkIndexedJob(conf, batch_id, solr_url, reindex, crawl_id), store)


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

def _types(content_type: str | None) -> list[str]:
    """Nutch's index-more type field: the MIME type and its two parts."""
    if not content_type:
        return []
    mime = content_type.split(";")[0].strip().lower()
    if "/" not in mime:
        return [mime]
    major, minor = mime.split("/", 1)
    return [mime, major, minor]


class CleaningJob(Job):
    """Delete from Solr the rows that were indexed and are now GONE, redirects, or noindex: the tasks find them,
    the final step deletes them from Solr, commits, and only then takes their INDEX mark off."""

    name = "clean"
    fields = ("status", "markers", "metadata", "parse_status")

    def __init__(self, conf: Configuration, solr_url: str, crawl_id: str | None = None) -> None:
        super().__init__(conf)
        self.solr_url = solr_url
        self.crawl_id = crawl_id
        self.timeout = conf.get_float("solr.timeout")

    def mark_filter(self) -> MarkFilter | None:
        return (Mark.INDEX.value, None)

    def map_setup(self, ctx: TaskContext) -> None:
        self.deleted: list[tuple[str, dict[str, str]]] = []

    def map(self, page: WebPage, ctx: TaskContext) -> Iterator[tuple[Any, Any]]:
        if page.status in GONE_STATUSES or NOINDEX_KEY in page.metadata or (
                page.parse_status.minor_code == ParseMinor.REDIRECT):
            self.deleted.append((page.key, dict(page.markers)))
        return iter(())

    def result(self, ctx: TaskContext) -> Any:
        return self.deleted if ctx.step == -1 else None

    def finish(self, results: list[Any], ctx: TaskContext) -> None:
        deleted = [row for part in results for row in part]
        solr = SolrClient(self.solr_url, self.timeout)
        for i in range(0, len(deleted), 500):
            solr.delete_ids(document_id(self.crawl_id, k) for k, _ in deleted[i:i + 500])
        if deleted:
            solr.commit()
        for key, markers in deleted:
            page = WebPage(key, markers=markers)
            Mark.INDEX.remove(page)
            ctx.write(page)
        ctx.incr("deleted", len(deleted))


def dedup(solr: SolrClient, crawl_id: str | None = None, page_size: int = 1000) -> int:
    """Delete the crawl's Solr documents that share a digest, keeping the highest boost, then newest tstamp, then
    shortest URL (Nutch's solrdedup order); other crawls' documents are neither read nor deleted. Returns how many
    documents were deleted."""
    deleted = 0
    crawl = crawl_filter(crawl_id)
    facets = solr.search("*:*", **{"rows": 0, "fq": crawl, "facet": "true", "facet.field": "digest",
                                   "facet.mincount": 2, "facet.limit": -1})
    counts = facets.facets.get("facet_fields", {}).get("digest", [])
    digests = [counts[i] for i in range(0, len(counts), 2)]
    for digest in digests:
        res = solr.search(f'digest:"{digest}"', **{"fq": crawl, "fl": "id,url,boost,tstamp", "rows": page_size})
        docs = sorted(res.docs, key=lambda d: (-float(d.get("boost", 0.0)), _neg_time(d.get("tstamp")),
                                               len(d.get("url", "")), d["id"]))
        losers = [d["id"] for d in docs[1:]]
        solr.delete_ids(losers)
        deleted += len(losers)
    if deleted:
        solr.commit()
    return deleted


def _neg_time(tstamp: str | None) -> float:
    if not tstamp:
        return 0.0
    return -datetime.fromisoformat(tstamp.replace("Z", "+00:00")).timestamp()
