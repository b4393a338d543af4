"""Search: the request (validated), the backend the Searcher asks (SearchBackend: Solr here, OpenSearch in
search_opensearch.py), the query Solr gets, and hits with safe snippets."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from markupsafe import Markup, escape

from nutch2.index.opensearch import OpenSearchQueryError, OpenSearchUnavailable
from nutch2.index.query import (
    MAIN_CONTENT,
    OPERATORS,
    PHRASE_FIELDS,
    QUERY_FIELDS,
    SNIPPET_MAX,
    USER_FIELDS,
    snippet_of,
    snippet_runs,
    weighted,
)
from nutch2.index.solr import SolrClient, SolrQueryError, SolrUnavailable, crawl_counts, crawl_filter, row_key_of
from nutch2.searcher.params import ParamError, int_param
from nutch2.urls.tableutil import unreverse_url

DEFAULT_ROWS = 10
MAX_ROWS = 100  # rows per page; more is clamped
MAX_START = 10_000  # deeper paging costs Solr more than it gives a reader
MAX_QUERY = 1000
MAX_FILTERS = 10  # host: and site: terms in one query
FACET_HOSTS = 20
HIT_FIELDS = "id,url,title,host,tstamp,fetched,boost,contentLength,type,cache"
# host:NAME and site:NAME in the query box; names are letters, digits, '.', '-', '_' (and ':' for an IPv6 address)
_FILTER = re.compile(r"(?<!\S)(host|site):(\S*)", re.I)
_NAME = re.compile(r"[A-Za-z0-9._:-]{1,255}")
# what a backend raises: the index does not answer (503), or refused the query (400)
class IndexBusy(Exception):
    """As many requests as BoundedIndex lets wait on the index are waiting: it is slow or hung (HTTP 503)."""


UNAVAILABLE: tuple[type[Exception], ...] = (SolrUnavailable, OpenSearchUnavailable, IndexBusy)
QUERY_REFUSED: tuple[type[Exception], ...] = (SolrQueryError, OpenSearchQueryError)

# The query Solr gets: edismax over a field list. Unlike the standard parser, edismax reads `{!...}` local params
# in q as text (Solr only honours them in q when defType is lucene or func), and `uf` leaves out _query_ and _val_,
# so the query box can neither switch parsers, nor run joins on other cores, nor call functions.
# Ranking: words in the title count most, then anchor text, then the body (qf); pages where the words stand as
# the exact phrase rank above those where they are apart (pf, ps=0); all words must match (mm=100%).
EDISMAX = {
    "defType": "edismax",
    "qf": " ".join(weighted(QUERY_FIELDS)),  # title^8 anchor^4 content^1 text^0.5
    "pf": " ".join(weighted(PHRASE_FIELDS)),  # title^20 anchor^8 content^4
    "ps": 0,
    "mm": "100%",
    "uf": " ".join(USER_FIELDS),
    "q.alt": "*:*",  # a query of filters only (site:example.com) lists the site
}


@dataclass(frozen=True)
class SearchRequest:
    """One search: the words, host:/site: filters taken out of them, the page of hits (start, rows), an optional
    host to narrow to (the facet's), the crawl to search, and whether hits are collapsed to one per host. `text`
    is the words as Solr gets them (costly operators escaped), `words` as they were typed."""

    q: str
    start: int = 0
    rows: int = DEFAULT_ROWS
    host: str | None = None
    crawl_id: str | None = None
    collapse: bool = True
    text: str = ""
    hosts: tuple[str, ...] = ()
    sites: tuple[str, ...] = ()
    words: str = ""

    @classmethod
    def from_params(cls, params: Mapping[str, str], crawl_id: str | None = None,
                    collapse: bool = True) -> SearchRequest:
        q = " ".join((params.get("q") or "").split())
        if len(q) > MAX_QUERY:
            raise ParamError(f"the query is {len(q)} characters long; at most {MAX_QUERY} are accepted")
        host = (params.get("host") or "").strip() or None
        if host is not None and not _NAME.fullmatch(host):
            raise ParamError("host must be one host name as the facet lists it, e.g. host=www.example.com")
        words, hosts, sites = split_filters(q)
        flag = (params.get("collapse") or "").strip().lower()
        if flag not in ("", "0", "1", "true", "false"):
            raise ParamError("collapse must be 1 (one hit per host) or 0 (every hit)")
        if flag:
            collapse = flag in ("1", "true")
        return cls(q, int_param(params, "start", 0, 0, MAX_START),
                   int_param(params, "rows", DEFAULT_ROWS, 1, MAX_ROWS, clamp=True), host, crawl_id, collapse,
                   _literal(words), hosts, sites, words)

    @property
    def collapsed(self) -> bool:
        """One hit per host: unless asked otherwise, or the query keeps to one host or site."""
        return self.collapse and not self.host and not self.hosts and not self.sites

    def solr_params(self) -> dict[str, Any]:
        fq = [crawl_filter(self.crawl_id)]
        if self.hosts:
            fq.append("{!terms f=host}" + ",".join(self.hosts))
        if self.sites:
            fq.append("{!terms f=site}" + ",".join(self.sites))
        if self.host:
            fq.append("{!term f=host tag=host}" + self.host)  # the term parser takes the value verbatim
        params: dict[str, Any] = {
            **EDISMAX,
            "start": self.start, "rows": self.rows, "fl": HIT_FIELDS,
            # main_content as a glob: a core from an older configset has no such field, and Solr refuses a
            # highlight field it does not know, but expands a glob to the fields it has (none there)
            "hl": "true", "hl.fl": f"{MAIN_CONTENT}*,content,title", "hl.snippets": 1, "hl.fragsize": 200,
            "hl.encoder": "html", "hl.tag.pre": "<em>", "hl.tag.post": "</em>", "hl.defaultSummary": "true",
            # the host facet ignores the host filter and the collapse (tag/ex), so it still counts every host
            "facet": "true", "facet.field": "{!ex=host,collapse}host", "facet.limit": FACET_HOSTS,
            "facet.mincount": 1,
        }
        if self.collapsed:
            fq.append("{!collapse field=host tag=collapse}")
            params.update({"expand": "true", "expand.rows": 0})  # how many more each host has
        params["fq"] = fq
        return params


def parse_query(q: str) -> tuple[str, tuple[str, ...], tuple[str, ...]]:
    """(words for Solr, host: names, site: names): the filters are the app's syntax, not Solr's."""
    words, hosts, sites = split_filters(q)
    return _literal(words), hosts, sites


def split_filters(q: str) -> tuple[str, tuple[str, ...], tuple[str, ...]]:
    """(the words as typed, host: names, site: names), the names checked."""
    hosts: list[str] = []
    sites: list[str] = []

    def take(m: re.Match[str]) -> str:
        name = m.group(2).strip('"').lower().rstrip(".")
        if not _NAME.fullmatch(name) or "," in name:
            raise ParamError(f"{m.group(1)}: needs a host or domain name, e.g. {m.group(1).lower()}:example.com")
        (hosts if m.group(1).lower() == "host" else sites).append(name)
        return " "
    words = _joined(_FILTER.sub(take, q).split())
    if len(hosts) + len(sites) > MAX_FILTERS:
        raise ParamError(f"at most {MAX_FILTERS} host: and site: filters in one query")
    return words, tuple(dict.fromkeys(hosts)), tuple(dict.fromkeys(sites))


def _joined(words: list[str]) -> str:
    """The words without an operator that joins nothing: `page AND` (typed halfway, or left after a host:
    filter was taken out) is `page`, not `page` and the word `and`. An operator alone stays a word."""
    while len(words) > 1 and words[-1] in OPERATORS:
        words.pop()
    while len(words) > 1 and words[0] in OPERATORS[:-1]:  # a leading NOT negates what follows
        words.pop(0)
    return " ".join(words)


_PHRASE = re.compile(r'"[^"]*"')
_COSTLY = re.compile(r"([*?~/\[\]{}\\])")  # wildcards, fuzzy, regex, ranges (and the escape itself)


def _literal(text: str) -> str:
    """The words with Lucene's costly operators escaped: a typed `*`, `?`, `~`, `/.../`, `[a TO z]` is a
    character to match, not a wildcard, fuzzy, regex or range query over the whole index (a leading wildcard or a
    regex makes Solr walk every term). Phrases, `-word`, `OR` and `field:word` keep their meaning."""
    out, at = [], 0
    for m in _PHRASE.finditer(text):
        out.append(_COSTLY.sub(r"\\\1", text[at:m.start()]))
        out.append(m.group(0))
        at = m.end()
    out.append(_COSTLY.sub(r"\\\1", text[at:]))
    return "".join(out)


@dataclass
class Hit:
    id: str
    url: str
    title: str
    host: str
    tstamp: str | None  # as Solr has it: Nutch 2 indexes the row's fetchTime, the next fetch after updatedb
    boost: float | None
    snippet: Markup
    fetched: str | None = None  # when the page was fetched (the document's, else its row's: pages.fetched_at)
    cache: str = "none"  # the page's caching policy (robots noarchive): "none", "content" or "all"
    more: int = 0  # collapsed: how many more hits its host has

    @property
    def row_url(self) -> str:
        """The URL of the row behind the document (its url field is the repr URL of a redirect pair)."""
        return unreverse_url(row_key_of(self.id))

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "url": self.url, "title": self.title, "host": self.host, "fetched": self.fetched,
                "tstamp": self.tstamp, "boost": self.boost, "snippet": str(self.snippet), "cache": self.cache,
                "moreFromHost": self.more}


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
        return {"q": r.q, "start": r.start, "rows": r.rows, "host": r.host, "collapsed": r.collapsed,
                "numFound": self.total,
                "qtimeMs": self.qtime_ms, "elapsedMs": round(self.elapsed_ms, 1),
                "hits": [h.to_json() for h in self.hits],
                "facets": {"host": [{"value": v, "count": n} for v, n in self.hosts]}}


def snippet_markup(snippet: str, limit: int = SNIPPET_MAX) -> Markup:
    """Solr's snippet (HTML-encoded text with <em> around matches) as markup we trust: every text run is
    decoded (snippet_runs) and escaped again here, so only our own <mark> tags survive whatever Solr returned."""
    runs, before, after = snippet_runs(snippet, limit)
    out = ["…"] if before else []
    out += [f"<mark>{escape(text)}</mark>" if marked else str(escape(text)) for text, marked in runs]
    return Markup("".join(out + (["…"] if after else [])))


def search(solr: SolrClient, req: SearchRequest) -> SearchResult:
    """Run the query; SolrQueryError when Solr rejects it, SolrUnavailable when Solr is down."""
    t0 = time.perf_counter()
    res = solr.search(req.text or "", **req.solr_params())
    elapsed = (time.perf_counter() - t0) * 1000
    expanded = getattr(res, "raw_response", {}).get("expanded", {}) if req.collapsed else {}
    hits = []
    for doc in res.docs:
        snippet = snippet_of(res.highlighting.get(doc["id"], {}))
        boost = doc.get("boost")
        cache = doc.get("cache") or "none"
        host = doc.get("host", "")
        hits.append(Hit(doc["id"], doc.get("url", ""), doc.get("title") or "", host,
                        doc.get("tstamp"), float(boost) if boost is not None else None,
                        snippet_markup("" if cache == "all" else snippet), _iso(doc.get("fetched")), cache=cache,
                        more=int(expanded.get(host, {}).get("numFound", 0))))
    counts = res.facets.get("facet_fields", {}).get("host", []) if res.facets else []
    hosts = [(str(counts[i]), int(counts[i + 1])) for i in range(0, len(counts) - 1, 2)]
    return SearchResult(req, int(res.hits), int(res.qtime or 0), elapsed, hits, hosts)


def _iso(solr_date: str | None) -> str | None:
    """Solr's '2024-05-01T12:34:56.789Z' as the app shows times: to the second."""
    return solr_date[:19] + "Z" if solr_date else None


@dataclass
class IndexSummary:
    """The crawl's part of the index, for the home page: how many documents, the newest fetch among them."""

    documents: int
    newest_fetch: str | None


def index_summary(solr: SolrClient, crawl_id: str | None) -> IndexSummary:
    """One cheap query: no rows, the count and the stats of the fetched field within the crawl's filter."""
    res = solr.search("*:*", **{"rows": 0, "fq": crawl_filter(crawl_id), "stats": "true", "stats.field": "fetched"})
    fetched = getattr(res, "raw_response", {}).get("stats", {}).get("stats_fields", {}).get("fetched") or {}
    return IndexSummary(int(res.hits), _iso(fetched.get("max")))


class SearchBackend(Protocol):
    """What the Searcher asks of the index it serves: Solr's core (SolrBackend) or an OpenSearch index
    (search_opensearch.OpenSearchBackend). Failures raise one of UNAVAILABLE, or of QUERY_REFUSED for a query the
    index refused; the error pages are the same for both."""

    name: str  # as pages and messages name it: "Solr", "OpenSearch"
    url: str  # where it is, for the operator's lines (never a password)

    def search(self, req: SearchRequest) -> SearchResult:
        """One page of hits, with snippets, the host facet and, collapsed, one hit per host."""
        ...

    def index_summary(self, crawl_id: str | None) -> IndexSummary:
        """The crawl's documents: how many, the newest fetch."""
        ...

    def crawls(self, limit: int) -> dict[str, int]:
        """The crawls the index holds, with their documents, most first."""
        ...

    def ping(self) -> None:
        """Return when the index answers."""
        ...


class BoundedIndex:
    """A SearchBackend through which at most `limit` requests wait on the index at once; more are IndexBusy (503)
    at once. Requests run in the server's worker threads (40): a hung index held every one of them for its timeout,
    so that pages which ask no index (/crawl, the job pages) waited too."""

    def __init__(self, index: SearchBackend, limit: int) -> None:
        self.index, self.limit = index, limit
        self.name, self.url = index.name, index.url
        self._slots = threading.BoundedSemaphore(limit)

    def _call(self, call: Any, *args: Any) -> Any:
        if not self._slots.acquire(blocking=False):
            raise IndexBusy(f"{self.name} at {self.url}: {self.limit} requests are already waiting on it (slow or "
                            "hung?); this one was answered 503 at once")
        try:
            return call(*args)
        finally:
            self._slots.release()

    def search(self, req: SearchRequest) -> SearchResult:
        return self._call(self.index.search, req)

    def index_summary(self, crawl_id: str | None) -> IndexSummary:
        return self._call(self.index.index_summary, crawl_id)

    def crawls(self, limit: int) -> dict[str, int]:
        return self._call(self.index.crawls, limit)

    def ping(self) -> None:
        self._call(self.index.ping)


class SolrBackend:
    """The Searcher over a Solr core: the edismax query of SearchRequest.solr_params."""

    name = "Solr"

    def __init__(self, client: SolrClient) -> None:
        self.client = client
        self.url = client.shown

    def search(self, req: SearchRequest) -> SearchResult:
        return search(self.client, req)

    def index_summary(self, crawl_id: str | None) -> IndexSummary:
        return index_summary(self.client, crawl_id)

    def crawls(self, limit: int) -> dict[str, int]:
        return crawl_counts(self.client, limit)

    def ping(self) -> None:
        self.client.ping()
