"""Search through Solr: the request (validated), the query Solr gets, and hits with safe snippets."""

from __future__ import annotations

import html
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from markupsafe import Markup, escape

from nutch2.searcher.params import ParamError, int_param
from nutch2.solr import SolrClient
from nutch2.tableutil import unreverse_url

DEFAULT_ROWS = 10
MAX_ROWS = 100  # rows per page; more is clamped
MAX_START = 10_000  # deeper paging costs Solr more than it gives a reader
MAX_QUERY = 1000
FACET_HOSTS = 20
HIT_FIELDS = "id,url,title,host,tstamp,boost,contentLength,type,cache"
_EM = re.compile(r"(</?em>)")


@dataclass(frozen=True)
class SearchRequest:
    """One search: the query, the page of hits (start, rows) and an optional host to narrow to."""

    q: str
    start: int = 0
    rows: int = DEFAULT_ROWS
    host: str | None = None

    @classmethod
    def from_params(cls, params: Mapping[str, str]) -> SearchRequest:
        q = " ".join((params.get("q") or "").split())
        if len(q) > MAX_QUERY:
            raise ParamError(f"the query is {len(q)} characters long; at most {MAX_QUERY} are accepted")
        host = (params.get("host") or "").strip() or None
        if host is not None and (len(host) > 255 or any(c.isspace() for c in host)):
            raise ParamError("host must be one host name as the facet lists it, e.g. host=www.example.com")
        return cls(q, int_param(params, "start", 0, 0, MAX_START),
                   int_param(params, "rows", DEFAULT_ROWS, 1, MAX_ROWS, clamp=True), host)

    def solr_params(self) -> dict[str, Any]:
        params: dict[str, Any] = {
            "start": self.start, "rows": self.rows, "fl": HIT_FIELDS,
            "hl": "true", "hl.fl": "content,title", "hl.snippets": 1, "hl.fragsize": 200,
            "hl.encoder": "html", "hl.tag.pre": "<em>", "hl.tag.post": "</em>", "hl.defaultSummary": "true",
            # the host facet ignores the host filter (tag/ex), so it still lists the other hosts
            "facet": "true", "facet.field": "{!ex=host}host", "facet.limit": FACET_HOSTS, "facet.mincount": 1,
        }
        if self.host:
            params["fq"] = "{!term f=host tag=host}" + self.host  # the term parser takes the value verbatim
        return params


@dataclass
class Hit:
    id: str
    url: str
    title: str
    host: str
    tstamp: str | None  # as Solr has it: Nutch 2 indexes the row's fetchTime, the next fetch after updatedb
    boost: float | None
    snippet: Markup
    fetched: str | None = None  # when the page was fetched, from its row (see pages.fetched_at)
    cache: str = "none"  # the page's caching policy (robots noarchive): "none", "content" or "all"

    @property
    def row_url(self) -> str:
        """The URL of the row behind the document (its url field is the repr URL of a redirect pair)."""
        return unreverse_url(self.id)

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "url": self.url, "title": self.title, "host": self.host, "fetched": self.fetched,
                "tstamp": self.tstamp, "boost": self.boost, "snippet": str(self.snippet), "cache": self.cache}


@dataclass
class SearchResult:
    request: SearchRequest
    total: int
    qtime_ms: int
    elapsed_ms: float
    hits: list[Hit] = field(default_factory=list)
    hosts: list[tuple[str, int]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        r = self.request
        return {"q": r.q, "start": r.start, "rows": r.rows, "host": r.host, "numFound": self.total,
                "qtimeMs": self.qtime_ms, "elapsedMs": round(self.elapsed_ms, 1),
                "hits": [h.to_json() for h in self.hits],
                "facets": {"host": [{"value": v, "count": n} for v, n in self.hosts]}}


def snippet_markup(snippet: str) -> Markup:
    """Solr's snippet (HTML-encoded text with <em> around matches) as markup we trust: every text run is
    decoded and escaped again here, so only our own <mark> tags survive whatever Solr returned."""
    out: list[str] = []
    open_ = False
    for part in _EM.split(" ".join(snippet.split())):
        if part == "<em>":
            if not open_:
                out.append("<mark>")
                open_ = True
        elif part == "</em>":
            if open_:
                out.append("</mark>")
                open_ = False
        elif part:
            out.append(str(escape(html.unescape(part))))
    if open_:
        out.append("</mark>")
    return Markup("".join(out))


def search(solr: SolrClient, req: SearchRequest) -> SearchResult:
    """Run the query; SolrQueryError when Solr rejects it, SolrUnavailable when Solr is down."""
    t0 = time.perf_counter()
    res = solr.search(req.q, **req.solr_params())
    elapsed = (time.perf_counter() - t0) * 1000
    hits = []
    for doc in res.docs:
        hl = res.highlighting.get(doc["id"], {})
        snippet = (hl.get("content") or [""])[0]
        boost = doc.get("boost")
        cache = doc.get("cache") or "none"
        hits.append(Hit(doc["id"], doc.get("url", ""), doc.get("title") or "", doc.get("host", ""),
                        doc.get("tstamp"), float(boost) if boost is not None else None,
                        snippet_markup("" if cache == "all" else snippet), cache=cache))
    counts = res.facets.get("facet_fields", {}).get("host", []) if res.facets else []
    hosts = [(str(counts[i]), int(counts[i + 1])) for i in range(0, len(counts) - 1, 2)]
    return SearchResult(req, int(res.hits), int(res.qtime or 0), elapsed, hits, hosts)
