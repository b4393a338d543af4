"""indexer-opensearch-1x: the index writer (Nutch's OpenSearch1xIndexWriter), through opensearch-py's bulk helper.

Each task buffers its index and delete actions and sends them as one bulk request every max.bulk.docs actions or
max.bulk.size bytes; an answer of 429 or 503 (for the request or for some of its documents) and a lost connection
are retried after exponential.backoff.millis, doubled each time, at most exponential.backoff.retries times and for
at most bulk.close.timeout seconds (counted opensearch_retried). A document larger than max.bulk.size is not sent:
one warning line, counted opensearch_too_large, and its row stays unmarked for this writer (a later index sends it
again). Any other refusal — the cluster down or refusing, a document the index's mapping rejects — ends the task
with one line, and since the job then commits nothing, no row is marked: the same command indexes them later.
"""

from __future__ import annotations

import hashlib
import logging
import ssl
import time
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import orjson

from nutch2.config import Configuration
from nutch2.errors import ConfigError
from nutch2.index.opensearch import (
    DEFAULT_INDEX,
    DEFAULT_PORT,
    OpenSearchUnavailable,
    Target,
    connect,
    connection_cause,
    error_reason,
    index_name,
    not_opensearch,
    one_line,
    target_of_url,
)
from nutch2.index.writers import IndexWriter, WriterSpec
from nutch2.mapred import stop
from nutch2.plugins.indexer_opensearch_1x.mapping import SCHEMA, index_body

log = logging.getLogger(__name__)

# Nutch's defaults (its index-writers.xml.template)
DEFAULTS = {"port": DEFAULT_PORT, "max.bulk.docs": 250, "max.bulk.size": 2_500_500, "exponential.backoff.millis": 100,
            "exponential.backoff.retries": 10, "bulk.close.timeout": 600}
RETRIED = (429, 503)  # answers after which a request (or a document of it) is sent again, as lost connections are
MAX_ID_BYTES = 512  # OpenSearch's longest _id
MAPPING_ERRORS = ("mapper_parsing_exception", "document_parsing_exception", "illegal_argument_exception",
                  "strict_dynamic_mapping_exception")
WHERE = "-opensearch / opensearch.url (or index-writers.xml)"


@dataclass(frozen=True)
class Params:
    """A writer's parameters, checked."""

    target: Target
    max_docs: int
    max_bytes: int
    backoff_ms: int
    retries: int
    close_timeout: float
    timeout: float
    ca_file: str = ""
    cert_file: str = ""
    cert_password: str = ""


def writer_params(spec: WriterSpec, conf: Configuration) -> Params:
    """The parameters of one <writer> (Nutch's names), opensearch.url naming the cluster and index when set."""
    p = spec.params

    def text(name: str) -> str:
        return (p.get(name) or "").strip()

    def bad(name: str, want: str) -> ConfigError:
        return ConfigError(f"index writer {spec.id}: parameter {name}={p.get(name)!r} is not {want}; fix it in "
                           "index-writers.xml (indexer.indexwriters.file)")

    def number(name: str, least: int, most: int | None = None) -> int:
        value = text(name)
        if not value:
            return DEFAULTS[name]
        try:
            n = int(value)
        except ValueError:
            raise bad(name, "a whole number") from None
        if n < least or (most is not None and n > most):
            raise bad(name, f"a whole number from {least}" + (f" to {most}" if most is not None else ""))
        return n

    url = conf.get_str("opensearch.url").strip()
    if url:
        target = target_of_url(url)
        if not target.username and text("username"):
            target = replace(target, username=text("username"), password=p.get("password") or "")
    else:
        hosts = tuple(h.strip() for h in text("host").split(",") if h.strip())
        if not hosts:
            raise ConfigError(f"index writer {spec.id}: no OpenSearch cluster: pass -opensearch "
                              "http://127.0.0.1:9200/nutch, set opensearch.url, or give its host (and port, scheme, "
                              "index) in index-writers.xml")
        scheme = text("scheme").lower() or "http"
        if scheme not in ("http", "https"):
            raise bad("scheme", "http or https")
        target = Target(scheme, hosts, number("port", 1, 65535), "",
                        index_name(text("index") or DEFAULT_INDEX, f"index writer {spec.id}: parameter index"),
                        text("username"), p.get("password") or "")
    timeout = conf.get_float("opensearch.timeout")
    if timeout <= 0:
        raise ConfigError(f"opensearch.timeout={timeout:g} is not a number of seconds above 0; e.g. 60")
    stores = {}
    for kind in ("trust", "key"):
        path = text(f"{kind}.store.path")
        if path and target.scheme == "https":
            if (text(f"{kind}.store.type").upper() or "PEM") != "PEM":
                raise bad(f"{kind}.store.type", "PEM: Python's ssl reads PEM files (export a JKS or PKCS12 store's "
                          "certificates with keytool -exportcert -rfc, or openssl pkcs12 -nodes)")
            if not Path(path).expanduser().is_file():
                raise bad(f"{kind}.store.path", "a PEM file that exists")
            stores[kind] = str(Path(path).expanduser())
    return Params(target, number("max.bulk.docs", 1), number("max.bulk.size", 1),
                  number("exponential.backoff.millis", 0), number("exponential.backoff.retries", 0),
                  number("bulk.close.timeout", 1), timeout,
                  stores.get("trust", ""), stores.get("key", ""), p.get("key.store.password") or "")


def opensearch_id(doc_id: str) -> str:
    """A document's _id: its id, or for an id longer than OpenSearch takes `sha1:<hex of the id>` (the id field
    keeps the id itself)."""
    if len(doc_id.encode()) <= MAX_ID_BYTES:
        return doc_id
    return "sha1:" + hashlib.sha1(doc_id.encode()).hexdigest()


def _sleep(seconds: float) -> None:
    """Wait, unless the command is asked to stop (then Stopped)."""
    end = time.monotonic() + seconds
    while (left := end - time.monotonic()) > 0:
        stop.check()
        time.sleep(min(left, 0.2))


class OpenSearchIndexWriter(IndexWriter):
    nutch_class = "org.apache.nutch.indexwriter.opensearch1x.OpenSearch1xIndexWriter"

    def __init__(self, conf: Configuration) -> None:
        super().__init__(conf)
        try:
            import opensearchpy  # noqa: F401 - only to say at once that it is missing
        except ImportError:
            raise ConfigError("indexer-opensearch-1x needs opensearch-py, which is not installed: "
                              "pip install 'nutch2[opensearch]'") from None
        self.client: Any = None

    def open(self, spec: WriterSpec, task: int | None, run: str) -> None:
        super().open(spec, task, run)
        self.params = p = writer_params(spec, self.conf)
        self.target = t = p.target
        context = None
        if t.scheme == "https":
            try:
                context = ssl.create_default_context(cafile=p.ca_file or None)
                if p.cert_file:
                    context.load_cert_chain(p.cert_file, password=p.cert_password or None)
            except (OSError, ssl.SSLError) as e:
                raise ConfigError(f"index writer {spec.id}: cannot read trust.store.path / key.store.path as PEM "
                                  f"({one_line(e)}); fix them in index-writers.xml") from None
        self.client = connect(t, p.timeout, context)
        self.actions: list[dict[str, Any]] = []
        self.size = 0
        self._counts: Counter[str] = Counter()
        self._refused: list[str] = []

    # ---------------------------------------------------------------- IndexWriter
    def check(self) -> None:
        """The cluster answers (no retry: a dead cluster fails at once) and the index exists, created with nutch2's
        mapping when it does not (an existing index is used as it is)."""
        from opensearchpy.exceptions import RequestError, TransportError

        index = self.target.index
        try:
            self.client.info()
        except TransportError as e:
            raise self._fail("answer", e) from None
        except Exception as e:
            raise self._foreign("answer", e) from None
        try:
            if self.client.indices.exists(index=index):
                return
            self.client.indices.create(index=index, body=index_body(self.conf.resource(SCHEMA)))
            log.info(f"{self.spec.id}: created index {index} at {self.target.url} with nutch2's mapping")
        except RequestError as e:
            if e.error != "resource_already_exists_exception":  # made by another command meanwhile: fine
                raise self._fail(f"create index {index}", e) from None
        except TransportError as e:
            raise self._fail(f"create index {index}", e) from None
        except Exception as e:
            raise self._foreign(f"create index {index}", e) from None

    def write(self, doc: dict[str, Any]) -> None:
        doc_id = doc.get("id")
        if not doc_id:
            raise ConfigError(f"index writer {self.spec.id}: a document has no id field; keep id in the writer's "
                              "mapping (index-writers.xml)")
        source = orjson.dumps(doc, default=str)
        size = len(source) + len(doc_id) + len(self.target.index) + 48  # the action line, the newlines
        if size > self.params.max_bytes:
            self._refuse(doc, size)
            return
        self._add({"_op_type": "index", "_index": self.target.index, "_id": opensearch_id(str(doc_id)),
                   "_source": source.decode()}, size)

    def delete(self, doc_id: str) -> None:
        self._add({"_op_type": "delete", "_index": self.target.index, "_id": opensearch_id(doc_id)},
                  len(doc_id) + len(self.target.index) + 48)

    def flush(self) -> None:
        if self.actions:
            actions, self.actions, self.size = self.actions, [], 0
            self._bulk(actions)

    def commit(self) -> None:
        """Send what is left and refresh the index: what the run wrote becomes searchable."""
        from opensearchpy.exceptions import TransportError

        self.flush()
        what, started = f"refresh index {self.target.index}", time.monotonic()
        for attempt in range(self.params.retries + 1):
            try:
                self.client.indices.refresh(index=self.target.index)
                return
            except TransportError as e:
                if not self._retried(e):
                    raise self._fail(what, e) from None
                self._back_off(what, attempt, started, e)

    def counts(self) -> dict[str, int]:
        return dict(self._counts)

    def refused(self) -> list[str]:
        return list(self._refused)

    def describe(self) -> str:
        return f"{self.spec.id} (OpenSearch at {self.target.url}, index {self.target.index})"

    def destination(self) -> str:
        return f"{self.target.url}/{self.target.index}"

    def close(self) -> None:
        if self.client is not None:
            self.client.close()
            self.client = None

    # ---------------------------------------------------------------- bulk requests
    def _add(self, action: dict[str, Any], size: int) -> None:
        if self.actions and self.size + size > self.params.max_bytes:
            self.flush()
        self.actions.append(action)
        self.size += size
        if len(self.actions) >= self.params.max_docs:
            self.flush()

    def _refuse(self, doc: dict[str, Any], size: int) -> None:
        """A document larger than a bulk request may be: not sent, said and counted; its row stays unmarked."""
        self._counts["opensearch_too_large"] += 1
        self._refused.append(str(doc["id"]))
        log.warning(f"{self.spec.id}: {doc.get('url') or doc['id']}: the document is {size:,} bytes, more than "
                    f"max.bulk.size={self.params.max_bytes:,}: not sent to OpenSearch at {self.destination()}; it "
                    "stays unindexed there until max.bulk.size (index-writers.xml) is raised and it is indexed again")

    def _bulk(self, actions: list[dict[str, Any]]) -> None:
        """One bulk request, and again for what was answered 429 or 503 (or lost), after a back-off."""
        from opensearchpy import helpers
        from opensearchpy.exceptions import TransportError

        deletes = sum(1 for a in actions if a["_op_type"] == "delete")
        what = " and ".join(f"{verb} {n} document{'' if n == 1 else 's'}"
                            for verb, n in (("index", len(actions) - deletes), ("delete", deletes)) if n)
        started, pending = time.monotonic(), actions
        for attempt in range(self.params.retries + 1):
            try:
                results = list(helpers.streaming_bulk(
                    self.client, pending, chunk_size=len(pending), max_chunk_bytes=2**62, raise_on_error=False,
                    raise_on_exception=True, max_retries=0, yield_ok=True, request_timeout=self.params.timeout))
            except TransportError as e:
                if not self._retried(e):
                    raise self._fail(what, e) from None
                cause: Any = e
            except Exception as e:
                raise self._foreign(what, e) from None
            else:
                again, failed = [], []
                for action, (ok, item) in zip(pending, results, strict=True):
                    op, info = next(iter(item.items()))
                    status = info.get("status", 500)
                    if not ok and not (op == "delete" and status == 404):  # deleting what is not there is fine
                        (again if status in RETRIED else failed).append((action, info))
                if failed:
                    raise self._refused_items(failed, len(pending))
                if not again:
                    return
                pending, cause = [a for a, _ in again], again[0][1]
            self._back_off(what, attempt, started, cause)

    def _retried(self, e: Exception) -> bool:
        from opensearchpy.exceptions import ConnectionError, SSLError

        if isinstance(e, ConnectionError):
            return not isinstance(e, SSLError)
        return getattr(e, "status_code", None) in RETRIED

    def _back_off(self, what: str, attempt: int, started: float, cause: Any) -> None:
        """Wait before attempt+1, or give up (one line) when the retries or bulk.close.timeout are spent."""
        wait = self.params.backoff_ms / 1000 * 2**attempt
        if attempt >= self.params.retries or time.monotonic() - started + wait > self.params.close_timeout:
            tried = (f"after {attempt} {'retry' if attempt == 1 else 'retries'} over {time.monotonic() - started:.1f} s"
                     if attempt else "not retried: exponential.backoff.retries=0")
            if isinstance(cause, dict):
                cause_text, hint = f"HTTP {cause.get('status')} ({error_reason(cause)}) {tried}", self._busy_hint()
            else:
                cause_text, hint = self._cause(cause)
                cause_text = f"{cause_text} {tried}"
            raise OpenSearchUnavailable(f"OpenSearch at {self.target.url} failed to {what}: {cause_text}; {hint}")
        self._counts["opensearch_retried"] += 1
        shown = f"HTTP {cause.get('status')}" if isinstance(cause, dict) else self._cause(cause)[0]
        log.debug(f"{self.spec.id}: {what}: {shown}; again in {wait:.2f} s")
        _sleep(wait)

    # ---------------------------------------------------------------- errors
    def _busy_hint(self) -> str:
        return ("the cluster is overloaded or not ready: raise exponential.backoff.retries or "
                "exponential.backoff.millis (index-writers.xml) or index with fewer tasks (-numTasks), then run the "
                "same command again")

    def _cause(self, e: Exception) -> tuple[str, str]:
        """What went wrong, in a few words, and what to do."""
        from opensearchpy.exceptions import SSLError

        known = connection_cause(e, self.params.timeout, WHERE)
        if known and isinstance(e, SSLError):
            return known[0], "check the scheme (http/https) and trust.store.path"
        if known:
            return known
        status = getattr(e, "status_code", None)
        reason = error_reason(getattr(e, "info", None) or getattr(e, "error", e))
        if status == 401:
            return "HTTP 401, the login was refused", "check username and password (index-writers.xml, or the URL)"
        if status == 403:
            return (f"HTTP 403 ({reason})", f"give the user the right to write index {self.target.index}, or lift "
                    "its block (a full disk makes indices read-only)")
        if status == 413:
            return ("HTTP 413, the request is larger than the cluster takes",
                    "lower max.bulk.size (index-writers.xml) below the cluster's http.max_content_length")
        if status in RETRIED:
            return f"HTTP {status} ({reason})", self._busy_hint()
        return f"HTTP {status} ({reason})", f"check the cluster's log and {WHERE}"

    def _fail(self, what: str, e: Exception) -> OpenSearchUnavailable:
        cause, hint = self._cause(e)
        return OpenSearchUnavailable(f"OpenSearch at {self.target.url} failed to {what}: {cause}; {hint}")

    def _foreign(self, what: str, e: Exception) -> Exception:
        """An error that is not a TransportError: the server's answer was not OpenSearch's (one line), or a bug."""
        cause = not_opensearch(e)
        if not cause:
            return e
        return OpenSearchUnavailable(f"OpenSearch at {self.target.url} failed to {what}: {cause}; check that {WHERE} "
                                     "names an OpenSearch cluster")

    def _refused_items(self, failed: list[tuple[dict[str, Any], dict[str, Any]]], total: int) -> OpenSearchUnavailable:
        """Documents the index refused (its mapping, a block): one line naming the first refusal."""
        info = failed[0][1]
        err = info.get("error") if isinstance(info.get("error"), dict) else {}
        kind = err.get("type", "")
        if kind in MAPPING_ERRORS:
            hint = (f"the mapping of index {self.target.index} does not fit nutch2's documents: fix it, or delete the "
                    "index (nutch2 creates it with its own mapping when it is missing), then run the same command "
                    "again")
        elif kind == "cluster_block_exception":
            hint = "the index is blocked (a full disk makes it read-only): free space, lift the block, run again"
        else:
            hint = "see the cluster's log, then run the same command again"
        n = len(failed)
        return OpenSearchUnavailable(
            f"OpenSearch at {self.target.url} refused {n} of {total} documents sent to index {self.target.index} "
            f"(HTTP {info.get('status')}, {error_reason(info)}); {hint}")
