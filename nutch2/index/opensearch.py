"""OpenSearch access for the index writer, the search command and the Searcher: the cluster and index an URL names
(http(s)://[user:password@]host[:port][/prefix]/<index>), a client built from it (opensearch-py), failures as one
line with the same two errors Solr's client has (the cluster does not answer / the query was refused), and the
query typed words become: match queries over nutch2's fields, never a query parser (no query_string, no
wildcard, regexp, prefix, fuzzy or script query is ever built from what a user typed)."""

from __future__ import annotations

import logging
import ssl
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit

from nutch2.config import Configuration
from nutch2.errors import ConfigError, NutchError, raised_in
from nutch2.index.query import PHRASE_FIELDS, QUERY_FIELDS, Clause, clauses, weighted

log = logging.getLogger(__name__)

DEFAULT_PORT = 9200
DEFAULT_INDEX = "nutch"
NOT_IN_INDEX_NAMES = set('\\/*?"<>| ,#:')
WHERE = "-opensearch / opensearch.url"  # where a user names the cluster
TOO_LARGE = ("too_many_nested_clauses", "too_many_clauses")  # a query too large to run (HTTP 500): refused too


class OpenSearchUnavailable(NutchError):
    """The cluster is down, unreachable, or refused a request (one line: where, the cause, what to do)."""


class OpenSearchQueryError(OpenSearchUnavailable):
    """The cluster is up but refused the query as malformed (HTTP 400)."""

    def __init__(self, message: str, reason: str) -> None:
        super().__init__(message)
        self.reason = reason  # OpenSearch's own words, e.g. "too_many_nested_clauses: ..."


@dataclass(frozen=True)
class Target:
    """The cluster and the index a client talks to."""

    scheme: str
    hosts: tuple[str, ...]
    port: int
    prefix: str  # a path the cluster is served under ("" for none)
    index: str
    username: str = ""
    password: str = ""

    @property
    def url(self) -> str:
        """The cluster's URL, without credentials."""
        hosts = ",".join(f"[{h}]" if ":" in h else h for h in self.hosts)
        return f"{self.scheme}://{hosts}:{self.port}" + (f"/{self.prefix}" if self.prefix else "")


def index_name(name: str, where: str) -> str:
    """An index name OpenSearch takes, else ConfigError."""
    if (not name or name != name.lower() or name in (".", "..") or name[0] in "-_+"
            or NOT_IN_INDEX_NAMES & set(name) or len(name.encode()) > 255):
        raise ConfigError(f"{where}: {name!r} is not an OpenSearch index name (lower case, at most 255 bytes, none of "
                          '\\/*?"<>|,#: or spaces, not starting with -, _ or +); e.g. nutch')
    return name


def redacted(url: str) -> str:
    """A URL without the password it may carry."""
    u = urlsplit(url)
    if u.password is None:
        return url
    return u._replace(netloc=f"{u.username}:***@{u.netloc.rpartition('@')[2]}").geturl()


def target_of_url(url: str) -> Target:
    """http(s)://[user:password@]host[:port][/prefix]/<index> (opensearch.url, -opensearch): port 9200 and index
    nutch when the URL gives none."""
    u = urlsplit(url.strip())
    shown = redacted(url.strip())
    try:
        port = u.port or DEFAULT_PORT
    except ValueError:
        port = 0
    if u.scheme not in ("http", "https") or not u.hostname or not port or u.query or u.fragment:
        raise ConfigError(f"OpenSearch URL {shown!r} is not http(s)://host:port/<index> (e.g. "
                          "http://127.0.0.1:9200/nutch); fix -opensearch or opensearch.url")
    parts = [p for p in u.path.split("/") if p]
    index = index_name(unquote(parts[-1]) if parts else DEFAULT_INDEX, f"OpenSearch URL {shown}")
    return Target(u.scheme, (u.hostname,), port, "/".join(parts[:-1]), index, unquote(u.username or ""),
                  unquote(u.password or ""))


def opensearch_url(conf: Configuration, cli_url: str | None) -> str:
    """-opensearch URL, else opensearch.url; ConfigError when neither names one."""
    url = (cli_url or conf.get_str("opensearch.url")).strip()
    if not url:
        raise ConfigError("no OpenSearch URL: pass -opensearch http://host:9200/<index> or set opensearch.url")
    target_of_url(url)
    return url


def connect(target: Target, timeout: float, context: ssl.SSLContext | None = None) -> Any:
    """An opensearch-py client of the target: no retries (a dead cluster fails at once), its login, and for https
    `context` (the system's CA certificates when None)."""
    try:
        from opensearchpy import OpenSearch
    except ImportError:
        raise ConfigError("OpenSearch needs opensearch-py, which is not installed: "
                          "pip install 'nutch2[opensearch]'") from None
    kw: dict[str, Any] = {}
    if target.username:
        kw["http_auth"] = (target.username, target.password)
    if target.scheme == "https":
        kw.update(use_ssl=True, ssl_context=context or ssl.create_default_context())
    hosts = [{"host": h, "port": target.port, "url_prefix": target.prefix} for h in target.hosts]
    return OpenSearch(hosts, timeout=timeout, max_retries=0, retry_on_timeout=False, **kw)


def one_line(text: Any, limit: int = 300) -> str:
    return " ".join(str(text).split())[:limit]


def error_reason(info: Any) -> str:
    """`type: reason` of an OpenSearch error body (a request's or a bulk item's); a search's root cause."""
    err = info.get("error", info) if isinstance(info, dict) else info
    if isinstance(err, dict):
        causes = err.get("root_cause") or []
        if causes and isinstance(causes[0], dict) and causes[0].get("type") != err.get("type"):
            err = causes[0]  # "search_phase_execution_exception: all shards failed" says nothing
        return one_line(f"{err.get('type', 'error')}: {err.get('reason', '')}".rstrip(": "))
    return one_line(err)


def connection_cause(e: Exception, timeout: float, where: str = WHERE) -> tuple[str, str] | None:
    """What went wrong before any answer came (TLS, a timeout, a refused or lost connection) and what to do; None
    for an HTTP answer, which the caller reads."""
    from opensearchpy import exceptions as ex

    if isinstance(e, ex.SSLError):
        return f"TLS failed ({one_line(e.info or e, 160)})", "check the scheme (http/https) and the certificates"
    if isinstance(e, ex.ConnectionTimeout):
        return (f"no answer within opensearch.timeout={timeout:g} s",
                "check that the cluster is up and not overloaded (opensearch.timeout)")
    if isinstance(e, ex.ConnectionError):
        if "refused" in str(e).lower():
            return "connection refused", f"start it (docker/services.sh start opensearch) or fix {where}"
        return f"the connection failed ({one_line(e.info or e, 160)})", f"check that it is up, and {where}"
    return None


def not_opensearch(e: Exception) -> str:
    """Why an error says the server is not OpenSearch (an answer opensearch-py could not read: HTML, a JSON body of
    another shape), or ""."""
    from opensearchpy.exceptions import SerializationError

    if isinstance(e, SerializationError) or raised_in(e, "opensearchpy"):
        return f"the answer is not OpenSearch's ({type(e).__name__}: {one_line(e, 120)})"
    return ""


class OpenSearchClient:
    """One index of a cluster, for searches. Every failure becomes OpenSearchUnavailable (OpenSearchQueryError for
    a refused query) naming the cluster, the cause and what to do; the password never appears."""

    def __init__(self, url: str, timeout: float = 60.0) -> None:
        self.target = target_of_url(url)
        self.url = self.target.url
        self.index = self.target.index
        self.timeout = timeout
        self._client = connect(self.target, timeout)

    def _fail(self, action: str, e: Exception) -> OpenSearchUnavailable:
        known = connection_cause(e, self.timeout)
        if known:
            cause, hint = known
        else:
            status = getattr(e, "status_code", None)
            reason = error_reason(getattr(e, "info", None) or getattr(e, "error", e))
            if status == 400 or reason.startswith(TOO_LARGE):
                return OpenSearchQueryError(f"OpenSearch at {self.url} refused to {action}: {reason}", reason)
            if status == 404:
                cause, hint = (f"HTTP 404, no index {self.index}", "index a crawl into it (nutch2 index -all "
                               f"-opensearch URL) or fix the index name in {WHERE}")
            elif status == 401:
                cause, hint = "HTTP 401, the login was refused", f"check the user and password in {WHERE}"
            elif status == 403:
                cause, hint = f"HTTP 403 ({reason})", f"give the user the right to read index {self.index}"
            else:
                cause, hint = f"HTTP {status} ({reason})", f"check the cluster's log and {WHERE}"
        return OpenSearchUnavailable(f"OpenSearch at {self.url} failed to {action}: {cause}; {hint}")

    def _call(self, action: str, fn: Any, *args: Any, **kw: Any) -> Any:
        from opensearchpy.exceptions import TransportError

        try:
            return fn(*args, **kw)
        except TransportError as e:
            raise self._fail(action, e) from None
        except Exception as e:
            if not_opensearch(e):
                raise OpenSearchUnavailable(f"OpenSearch at {self.url} failed to {action}: {not_opensearch(e)}; "
                                            f"check that {WHERE} names an OpenSearch cluster") from None
            raise

    def ping(self) -> None:
        """The cluster answers and holds the index."""
        self._call("answer a ping", self._client.info)
        if not self._call(f"look up index {self.index}", self._client.indices.exists, index=self.index):
            raise OpenSearchUnavailable(f"OpenSearch at {self.url} has no index {self.index}: index a crawl into it "
                                        f"(nutch2 index -all -opensearch URL) or fix the index name in {WHERE}")

    def search(self, body: dict[str, Any]) -> dict[str, Any]:
        return self._call(f"search index {self.index}", self._client.search, index=self.index, body=body)

    def crawl_counts(self, limit: int) -> dict[str, int]:
        """The crawls the index holds (the crawlId field) with their documents, most first, at most `limit`."""
        res = self.search({"size": 0, "aggs": {"crawls": {"terms": {"field": "crawlId", "size": limit}}}})
        return {b["key"]: int(b["doc_count"]) for b in res["aggregations"]["crawls"]["buckets"]}

    def close(self) -> None:
        self._client.close()


def text_query(text: str, highlight: bool = False) -> dict[str, Any]:
    """The query typed text becomes (query.clauses): every word must match, in any of the query fields with their
    weights, term by term as edismax does (cross_fields); the phrase of the plain words boosts (the phrase
    fields, no slop); phrases are phrase queries, field:word a match on that field, -x a must_not. No text:
    every document (Solr's q.alt).

    `highlight`: the same words for the highlighter's highlight_query, each on its own (best_fields). OpenSearch's
    highlighters find no term in a cross_fields query of two words or more, so a hit of "host page" had no
    snippet at all."""
    matching = "best_fields" if highlight else "cross_fields"
    words: list[str] = []
    must: list[dict[str, Any]] = []
    must_not: list[dict[str, Any]] = []
    for group in clauses(text):
        if len(group) == 1 and group[0].plain:
            words.append(group[0].text)
        elif len(group) == 1:
            (must_not if group[0].negated else must).append(_match(group[0], matching))
        else:
            either = [{"bool": {"must_not": [_match(c, matching)]}} if c.negated else _match(c, matching)
                      for c in group]
            must.append({"bool": {"should": either, "minimum_should_match": 1}})
    should: list[dict[str, Any]] = []
    if words:
        joined = " ".join(words)
        must.insert(0, {"multi_match": {"query": joined, "fields": weighted(QUERY_FIELDS), "type": matching,
                                        "operator": "or" if highlight else "and"}})
        if len(words) > 1:
            should.append({"multi_match": {"query": joined, "fields": weighted(PHRASE_FIELDS), "type": "phrase",
                                           "slop": 0}})
    if not (must or must_not):
        return {"match_all": {}}
    query: dict[str, Any] = {}
    for name, part in (("must", must), ("must_not", must_not), ("should", should)):
        if part:
            query[name] = part
    return {"bool": query}


def _match(c: Clause, matching: str = "cross_fields") -> dict[str, Any]:
    """One clause as a match (or phrase) query: on its field, else over the query fields."""
    if c.field:
        if c.phrase:
            return {"match_phrase": {c.field: {"query": c.text}}}
        return {"match": {c.field: {"query": c.text, "operator": "and"}}}
    if c.phrase:
        return {"multi_match": {"query": c.text, "fields": weighted(QUERY_FIELDS), "type": "phrase"}}
    return {"multi_match": {"query": c.text, "fields": weighted(QUERY_FIELDS), "type": matching,
                            "operator": "and"}}
