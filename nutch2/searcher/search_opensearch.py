"""Search through OpenSearch: the same SearchRequest as over Solr becomes a query body of nutch2's own, and the
answer the same SearchResult, so the pages, the feeds and the JSON API do not know which index they read.

What typed words become is nutch2.index.opensearch.text_query: match queries only (every word must match, the
fields weighted as the edismax qf, the phrase boosted as its pf), never a query parser. The crawl, host: and
site: filters are term filters on keyword fields (their names were checked by SearchRequest). The host facet is a
terms aggregation; the host the reader narrowed to is a post_filter, so the facet still counts every host, as
Solr's tag/ex does. One hit per site is a collapse on host: the hits per host come from its inner hits, and the
number of sites from a cardinality aggregation (Solr's numFound of a collapsed query)."""

from __future__ import annotations

import logging
import time
from typing import Any

from nutch2.index.opensearch import OpenSearchClient, text_query
from nutch2.index.solr import solr_crawl_id
from nutch2.searcher.search import (
    FACET_HOSTS,
    HIT_FIELDS,
    MAIN_CONTENT,
    Hit,
    IndexSummary,
    SearchRequest,
    SearchResult,
    snippet_markup,
    snippet_of,
)

log = logging.getLogger(__name__)

WINDOW = 10_000  # OpenSearch's index.max_result_window: from + size of a search stays within it
ANALYZED = 51_200  # characters of a page the highlighter reads (Solr's hl.maxAnalyzedChars)
SNIPPET = {"fragment_size": 200, "number_of_fragments": 1, "no_match_size": 200}  # as Solr's hl.fragsize
EXACT_COUNT = 40_000  # the cardinality aggregation counts exactly up to this many sites


def crawl_term(crawl_id: str | None) -> dict[str, Any]:
    return {"term": {"crawlId": solr_crawl_id(crawl_id)}}


def opensearch_body(req: SearchRequest) -> dict[str, Any]:
    """The search body of one request."""
    filters = [crawl_term(req.crawl_id)]
    if req.hosts:
        filters.append({"terms": {"host": list(req.hosts)}})
    if req.sites:
        filters.append({"terms": {"site": list(req.sites)}})
    body: dict[str, Any] = {
        "query": {"bool": {"must": [text_query(req.words)], "filter": filters}},
        "from": min(req.start, WINDOW), "size": max(0, min(req.rows, WINDOW - req.start)),
        "_source": HIT_FIELDS.split(","), "track_total_hits": True,
        "highlight": {"encoder": "html", "pre_tags": ["<em>"], "post_tags": ["</em>"],
                      "max_analyzer_offset": ANALYZED, "highlight_query": text_query(req.words, highlight=True),
                      "fields": {MAIN_CONTENT: {**SNIPPET, "require_field_match": False},  # not queried: as Solr's
                                 "content": SNIPPET, "title": {"number_of_fragments": 0}}},
        "aggs": {"host": {"terms": {"field": "host", "size": FACET_HOSTS}}},
    }
    if req.host:  # after the aggregations: the facet keeps counting every host
        body["post_filter"] = {"term": {"host": req.host}}
    if req.collapsed:
        body["collapse"] = {"field": "host", "inner_hits": {"name": "site", "size": 0}}
        body["aggs"]["sites"] = {"cardinality": {"field": "host", "precision_threshold": EXACT_COUNT}}
    return body


def opensearch_result(req: SearchRequest, res: dict[str, Any], elapsed_ms: float) -> SearchResult:
    """The answer as the pages show it: hits with safe snippets, the host facet, the total."""
    hits = []
    for h in res["hits"]["hits"]:
        doc = h.get("_source") or {}
        snippet = snippet_of(h.get("highlight", {}))
        boost = doc.get("boost")
        cache = doc.get("cache") or "none"
        more = 0
        if req.collapsed:
            more = max(0, int(h.get("inner_hits", {}).get("site", {}).get("hits", {}).get("total", {})
                              .get("value", 1)) - 1)
        hits.append(Hit(str(doc.get("id") or h["_id"]), doc.get("url", ""), doc.get("title") or "",
                        doc.get("host", ""), doc.get("tstamp"), float(boost) if boost is not None else None,
                        snippet_markup("" if cache == "all" else snippet), _iso(doc.get("fetched")), cache=cache,
                        more=more))
    aggs = res.get("aggregations", {})
    hosts = [(str(b["key"]), int(b["doc_count"])) for b in aggs.get("host", {}).get("buckets", [])]
    total = int(aggs["sites"]["value"]) if req.collapsed else int(res["hits"]["total"]["value"])
    return SearchResult(req, total, int(res.get("took", 0)), elapsed_ms, hits, hosts)


def _iso(date: str | None) -> str | None:
    """'2024-05-01T12:34:56.789Z' as the app shows times: to the second."""
    return date[:19] + "Z" if date else None


class OpenSearchBackend:
    """The Searcher over an OpenSearch index (nutch2's mapping: conf/solr/nutch's fields)."""

    name = "OpenSearch"

    def __init__(self, client: OpenSearchClient) -> None:
        self.client = client
        self.url = f"{client.url}/{client.index}"

    def search(self, req: SearchRequest) -> SearchResult:
        t0 = time.perf_counter()
        res = self.client.search(opensearch_body(req))
        return opensearch_result(req, res, (time.perf_counter() - t0) * 1000)

    def index_summary(self, crawl_id: str | None) -> IndexSummary:
        """One cheap query: no hits, the count and the newest fetch within the crawl's filter."""
        res = self.client.search({"size": 0, "track_total_hits": True,
                                  "query": {"bool": {"filter": [crawl_term(crawl_id)]}},
                                  "aggs": {"newest": {"max": {"field": "fetched"}}}})
        newest = res.get("aggregations", {}).get("newest", {})
        return IndexSummary(int(res["hits"]["total"]["value"]),
                            _iso(newest.get("value_as_string")) if newest.get("value") is not None else None)

    def crawls(self, limit: int) -> dict[str, int]:
        return self.client.crawl_counts(limit)

    def ping(self) -> None:
        self.client.ping()
