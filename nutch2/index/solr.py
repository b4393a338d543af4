"""Solr access for the index, clean, dedup and search commands: a thin layer over pysolr with clear errors."""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from nutch2.config import Configuration
from nutch2.errors import ConfigError, NutchError, raised_in
from nutch2.index.opensearch import redacted

log = logging.getLogger(__name__)

DEFAULT_CRAWL = "webpage"  # the crawlId field of documents from the crawl without -crawlId (table `webpage`)


def solr_date(ms: int) -> str | None:
    """A time in ms in Solr's date format (None for 0: no such time)."""
    if not ms:
        return None
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def solr_crawl_id(crawl_id: str | None) -> str:
    """The crawl's value of the crawlId field (and of its document ids)."""
    return crawl_id or DEFAULT_CRAWL


def document_id(crawl_id: str | None, key: str) -> str:
    """`<crawlId>!<row key>`: one document per crawl and URL. The `!` is SolrCloud's compositeId separator, so a
    collection routed by compositeId keeps each crawl's documents together; crawl ids cannot contain it."""
    return f"{solr_crawl_id(crawl_id)}!{key}"


def row_key_of(doc_id: str) -> str:
    """The row key inside a document id (a document indexed before crawl ids, whose id is the key, as it is)."""
    head, sep, key = doc_id.partition("!")
    return key if sep and ":" not in head else doc_id


def crawl_filter(crawl_id: str | None) -> str:
    """A filter query for one crawl's documents (the term parser takes the value verbatim)."""
    return "{!term f=crawlId}" + solr_crawl_id(crawl_id)


class SolrUnavailable(NutchError):
    """Solr is down, unreachable, or rejected a request."""


class SolrBusy(SolrUnavailable):
    """Solr answered 503 or 429, or the connection was lost or refused: a write is worth sending again."""


class SolrQueryError(SolrUnavailable):
    """Solr is up but rejected the request as malformed (HTTP 400), e.g. a query it cannot parse."""

    def __init__(self, message: str, reason: str) -> None:
        super().__init__(message)
        self.reason = reason  # Solr's own words, e.g. "Cannot parse 'title:(': ..."


def solr_url(conf: Configuration, cli_url: str | None) -> str:
    url = (cli_url or conf.get_str("solr.server.url")).strip().rstrip("/")
    if not url:
        raise ConfigError("no Solr URL: pass -solr http://host:8983/solr/<core> or set solr.server.url")
    if not url.startswith(("http://", "https://")):
        raise ConfigError(f"Solr URL {url!r} must start with http:// or https:// (e.g. http://127.0.0.1:8983/solr/nutch)")
    return url


class SolrClient:
    """One Solr core. Every failure becomes SolrUnavailable naming the URL, the cause and what to do."""

    def __init__(self, url: str, timeout: float = 60.0, retries: int = 0, backoff: float = 0.5) -> None:
        """retries: times a write (add, delete, commit) is sent again after a busy answer or a lost connection,
        backoff seconds after the first, doubled each time (a restarting or overloaded Solr ends no index job)."""
        try:
            import pysolr
        except ImportError:
            raise ConfigError("pysolr is not installed: pip install 'nutch2[solr]'") from None
        self.retries, self.backoff = max(0, retries), max(0.0, backoff)
        self.url = url
        self.shown = redacted(url)  # as messages name it: a password in the URL (Solr's basic auth) is not shown
        self._pysolr = pysolr
        self._solr = pysolr.Solr(url, always_commit=False, timeout=timeout)

    def _fail(self, action: str, e: Exception) -> SolrUnavailable:
        raw = " ".join(str(e).split())
        low = raw.lower()
        kind = SolrBusy
        if "refused" in low or "errno 111" in low or "failed to establish" in low:
            cause = "connection refused"
            hint = "start it (docker/services.sh start solr) or fix -solr / solr.server.url"
        elif any(w in low for w in ("failed to connect", "connection aborted", "remote end closed",
                                    "connection reset")):
            cause = "the connection failed"
            hint = "check that Solr is up (docker/services.sh start solr) and -solr / solr.server.url"
        elif "timed out" in low or "timeout" in low:  # not sent again: solr.timeout was waited already
            kind, cause, hint = SolrUnavailable, "timed out", "check that Solr is up and not overloaded (solr.timeout)"
        elif busy := re.search(r"http (503|429)\b", low):
            cause = f"{busy.group(0).upper()}, Solr is overloaded or not ready"
            hint = "raise solr.retries or solr.backoff.seconds, or index with fewer tasks (-numTasks)"
        elif "http 401" in low:
            kind, cause = SolrUnavailable, "HTTP 401, Solr asks for a login"
            hint = "give its user and password in the URL (http://user:password@host:8983/solr/<core>)"
        elif "http 403" in low:
            kind, cause = SolrUnavailable, "HTTP 403, the login is not allowed to do it"
            hint = "give a user of a role that may (Solr's security.json) in the URL"
        elif "http 404" in low:
            kind, cause = SolrUnavailable, "HTTP 404, no such core"
            hint = "check the core name in -solr / solr.server.url"
        elif "http 400" in low or "maxclausecount" in low:  # malformed, or too large to run (HTTP 500)
            reason = re.sub(r"^.*?\[Reason:\s*", "", raw).rstrip("]")
            reason = re.sub(r"^(?:org\.apache\.solr\.[\w.]+|[\w.]+Exception):\s*", "", reason)
            reason = reason.split(" Was expecting")[0]
            reason = reason[:300]
            return SolrQueryError(f"Solr at {self.shown} rejected the request to {action}: {reason}", reason)
        else:
            cause = re.sub(r"<[^>]+>", " ", raw)
            cause = " ".join(cause.split())[:240]
            hint = "check the Solr log and the configset in conf/solr"
            kind = SolrUnavailable
        return kind(f"Solr at {self.shown} failed to {action}: {cause}; {hint}")

    def _call(self, action: str, fn: Any, *args: Any, **kw: Any) -> Any:
        try:
            return fn(*args, **kw)
        except (self._pysolr.SolrError, OSError, ValueError) as e:
            raise self._fail(action, e) from None
        except Exception as e:  # requests' errors and others from the HTTP layer
            if type(e).__module__.startswith(("requests", "urllib3")):
                raise self._fail(action, e) from None
            if raised_in(e, "pysolr"):  # an error answer pysolr could not read (a JSON body of another shape)
                raise self._fail(action, RuntimeError(f"an answer pysolr could not read ({type(e).__name__}: {e})")
                                 ) from None
            raise

    def _solr_answer(self, action: str, fn: Any, *args: Any, **kw: Any) -> None:
        """Call; the answer must be Solr's (its responseHeader, JSON or XML): a server that answers 200 to anything
        (a web server, a proxy's page) has not stored the documents, and no row may be marked indexed for it."""
        answer = self._call(action, fn, *args, **kw)
        if not isinstance(answer, str) or "responseHeader" not in answer:
            seen = " ".join(re.sub(r"<[^>]+>", " ", str(answer)).split())[:80]
            raise SolrUnavailable(f"Solr at {self.shown} failed to {action}: the answer is not Solr's ({seen!r}); "
                                  "check that -solr / solr.server.url names a Solr core")

    def _write(self, action: str, fn: Any, *args: Any, **kw: Any) -> None:
        """_solr_answer, sent again after a busy answer or a lost connection (writes are idempotent: a document
        sent twice replaces itself) up to `retries` times; then the last failure, saying how long it tried."""
        started = time.monotonic()
        for attempt in range(self.retries + 1):
            try:
                return self._solr_answer(action, fn, *args, **kw)
            except SolrBusy as e:
                if attempt >= self.retries:
                    if not attempt:
                        raise
                    raise SolrBusy(f"{e} (after {attempt} {'retry' if attempt == 1 else 'retries'} over "
                                   f"{time.monotonic() - started:.0f} s)") from None
                wait = self.backoff * 2**attempt
                log.warning(f"{e}; trying again in {wait:g} s ({attempt + 1} of {self.retries} retries)")
                time.sleep(wait)

    def ping(self) -> None:
        self._solr_answer("answer a ping", self._solr.ping)

    def add(self, docs: list[dict[str, Any]]) -> None:
        try:
            self._write(f"add {len(docs)} documents", self._solr.add, docs, commit=False)
        except SolrQueryError as e:  # a document the core's schema does not take (a field it lacks, a bad value)
            if "unknown field" in e.reason:
                fix = ("give the core's schema that field (conf/solr/nutch has dynamic fields such as *_s and *_txt) "
                       "or rename or remove it (index-writers.xml, the indexing filters)")
            else:
                fix = ("change that field's type in the core's schema (conf/solr/nutch), or rename or remove the "
                       "field (index-writers.xml, the indexing filters)")
            raise SolrQueryError(f"{e}; {fix}, then run this again", e.reason) from None

    def delete_ids(self, ids: Iterable[str]) -> None:
        ids = list(ids)
        if ids:
            self._write(f"delete {len(ids)} documents", self._solr.delete, id=ids, commit=False)

    def commit(self) -> None:
        self._write("commit", self._solr.commit)

    def search(self, q: str, **params: Any) -> Any:
        return self._call("search", self._solr.search, q, **params)


def crawl_counts(solr: SolrClient, limit: int) -> dict[str, int]:
    """The crawls the core holds (the crawlId field) with their documents, most first, at most `limit`."""
    res = solr.search("*:*", **{"rows": 0, "facet": "true", "facet.field": "crawlId", "facet.mincount": 1,
                                "facet.limit": limit})
    counts = res.facets.get("facet_fields", {}).get("crawlId", []) if res.facets else []
    return {str(counts[i]): int(counts[i + 1]) for i in range(0, len(counts) - 1, 2)}
