"""parse-tika: documents of any format Apache Tika reads, parsed by a Tika server over its REST API.

One ``PUT {tika.server.url}/rmeta`` per document gives the metadata of the document and of each embedded one, with
its XHTML (``X-TIKA:content``): the text and the outlinks (``<a href>``) come from that XHTML, as Nutch's parse-tika
takes them from Tika's SAX events; title, author, dates, language and the detected content type from the metadata.
Without ``dc:language``, the language is asked for with ``PUT /language/string`` (``tika.language.detect``).

Limits are the fetcher's: at most ``http.content.limit`` bytes are sent; ``parser.text.limit`` characters of text are
kept (Tika's ``writeLimit``); the server is asked to give up after ``tika.server.timeout`` seconds per document
(``X-Tika-Timeout-Millis``) and the request itself ends a little later (a third of that, 3 to 10 s) whatever the
server does (the socket is cut by nutch2/fetch/watchdog.py, so a server that trickles cannot hold a task); at most
``tika.server.answer.limit`` bytes of the answer are read (an archive of many embedded documents answers each one's
text): past it the document's parse fails, counted as ``tika_answer_cut``, and memory stays bounded.

A server that is down, refuses, or does not answer in time is not the document's fault: the result is a retryable
failure counted as ``tika_unavailable`` (the row keeps no parse mark, so the parse job's next run parses it), and for
``tika.server.retry.interval`` seconds the other documents fail the same way at once instead of each waiting for a
connect timeout. What the server says about the document itself is final: 415 unsupported (NOTPARSED), 422 cannot be
parsed (a corrupt file, a bomb that ended a parser process), a 503 that says the parse timed out (FAILED).

The official server (forked mode) answers nothing when a document ends its parser (out of memory, over its time
limit): it closes the connection and restarts the parser process. So a connection closed after the document was sent
is followed by a health check, ``GET /version``, tried for up to ``tika.server.restart.wait`` seconds: no answer, the
server is down (retryable, as above); an answer, and the document is sent once more (a parser process that dies
takes every document it was parsing with it, and a kept-alive connection may have been closed by the restart);
closed again, it is this document that ends the parser: a FAILED parse, counted as ``tika_parser_died``, never
retried.
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any
from urllib.parse import quote, unquote, urlsplit

import urllib3

from nutch2.config import Configuration
from nutch2.errors import ConfigError
from nutch2.fetch.watchdog import WATCHDOG, guard, timed_out
from nutch2.mapred import clock, stop
from nutch2.parse.parsers import Document, Parser, ParseSettings
from nutch2.parse.result import Canceller, ParseResult, failure
from nutch2.parse.xhtml import XhtmlPart, join_parts, meta_result
from nutch2.status import ParseMajor, ParseMinor

__all__ = ["ParserDied", "TikaParser", "TikaUnavailable"]

_GRACE = 10.0  # at most this many seconds the client waits past the server's own time limit (to hear its 503)
_LANGUAGE_SAMPLE = 20_000  # characters of text sent to /language/string
UNAVAILABLE = "tika_unavailable"
PARSER_DIED = "tika_parser_died"
ANSWER_CUT = "tika_answer_cut"
_HEALTH_POLL = 0.5  # seconds between two GET /version while the server restarts its parser process
_TITLE_KEYS = ("dc:title", "title")
_META_KEYS: dict[str, tuple[str, ...]] = {
    "author": ("dc:creator", "meta:author", "Author"),
    "created": ("dcterms:created", "meta:creation-date"),
    "modified": ("dcterms:modified", "Last-Modified"),
    "language": ("dc:language", "language"),
    "description": ("dc:description", "dc:subject", "subject"),
    "keywords": ("meta:keyword", "pdf:docinfo:keywords", "Keywords"),
}


class AnswerCut(Exception):
    """The server's answer was longer than tika.server.answer.limit."""


class TikaUnavailable(Exception):
    """The Tika server did not answer (down, refusing, or slower than the time limit)."""


class _Dropped(Exception):
    """The server closed the connection after the document was sent, without an answer."""


class ParserDied(Exception):
    """The document ended Tika's parser twice while the server itself kept answering."""


class _Down:
    """When the server was last found unavailable (shared by a task's threads)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.until = 0.0
        self.reason = ""


class TikaParser(Parser):
    """parse-tika over a Tika server's REST API; thread-safe (one connection pool per calling thread)."""

    nutch_class = "org.apache.nutch.parse.tika.TikaParser"

    def __init__(self, conf: Configuration) -> None:
        super().__init__(conf)
        self.url = conf.get_str("tika.server.url").strip().rstrip("/")
        if self.url and urlsplit(self.url).scheme not in ("http", "https"):
            raise ConfigError(f"tika.server.url={self.url!r} is not an http(s) URL; e.g. "
                              "-D tika.server.url=http://127.0.0.1:9998")
        self.timeout = conf.get_float("tika.server.timeout")
        if self.timeout <= 0:
            raise ConfigError(f"tika.server.timeout={self.timeout:g} must be > 0 (seconds per document)")
        self.connect_timeout = min(self.timeout, conf.get_int("http.timeout") / 1000.0)
        self.text_limit = conf.get_int("parser.text.limit")
        self.max_embedded = conf.get_int("tika.server.max.embedded")
        self.answer_limit = conf.get_int("tika.server.answer.limit")
        self.content_limit = conf.get_int("http.content.limit")
        self.retry_interval = max(0.0, conf.get_float("tika.server.retry.interval"))
        self.restart_wait = max(0.0, conf.get_float("tika.server.restart.wait"))
        self.detect_language = conf.get_bool("tika.language.detect")
        self.settings = ParseSettings.from_conf(conf)
        self._init_local()

    def _init_local(self) -> None:
        self._local = threading.local()
        self._sessions: list[urllib3.PoolManager] = []
        self._lock = threading.Lock()
        self._down = _Down()

    def __getstate__(self) -> dict[str, Any]:
        """Shipped to tasks without sessions, locks or down-state: each process makes its own."""
        state = dict(self.__dict__)
        for k in ("_local", "_sessions", "_lock", "_down"):
            state.pop(k, None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._init_local()

    def available(self) -> bool:
        return bool(self.url)

    def close(self) -> None:
        with self._lock:
            sessions, self._sessions = self._sessions, []
        for s in sessions:
            s.clear()
        self._local = threading.local()

    def _session(self) -> urllib3.PoolManager:
        s = getattr(self._local, "session", None)
        if s is None:  # no proxy from the environment (the server is ours), no retries
            s = guard(urllib3.PoolManager(num_pools=2, maxsize=2, retries=False))
            self._local.session = s
            with self._lock:
                self._sessions.append(s)
        return s

    # ------------------------------------------------------------------ parse

    def parse(self, doc: Document) -> ParseResult:
        try:
            return self._parse(doc)
        except TikaUnavailable as e:
            result = failure(doc.url, ParseMajor.NOTPARSED, ParseMinor.OK,
                              f"Tika server unavailable ({e}): parse the batch again once it answers")
            result.retryable = True
            result.counter = UNAVAILABLE
            return result
        except ParserDied as e:
            result = failure(doc.url, ParseMajor.FAILED, ParseMinor.EXCEPTION, f"parse-tika: {e}")
            result.counter = PARSER_DIED
            return result
        except AnswerCut:
            result = failure(doc.url, ParseMajor.FAILED, ParseMinor.EXCEPTION,
                              f"parse-tika: Tika's answer is longer than tika.server.answer.limit="
                              f"{self.answer_limit} bytes; it was cut and not used")
            result.counter = ANSWER_CUT
            return result
        except Exception as e:  # noqa: BLE001 - one bad answer must not end the task
            return failure(doc.url, ParseMajor.FAILED, ParseMinor.EXCEPTION, f"parse-tika: {type(e).__name__}: {e}")

    def _parse(self, doc: Document) -> ParseResult:
        body = doc.content if self.content_limit < 0 else doc.content[: self.content_limit]
        if not body:
            return failure(doc.url, ParseMajor.FAILED, ParseMinor.FAILED_MISSING_CONTENT, "empty content")
        headers = {
            "Accept": "application/json",
            "Content-Type": doc.mime or "application/octet-stream",
            "X-Tika-Timeout-Millis": str(int(self.timeout * 1000)),
            "maxEmbeddedResources": str(self.max_embedded),
        }
        if self.text_limit >= 0:
            headers["writeLimit"] = str(self.text_limit)
        name = unquote(urlsplit(doc.url).path.rsplit("/", 1)[-1])
        if name:
            headers["Content-Disposition"] = f"attachment; filename*=UTF-8''{quote(name)}"
        status, text = self._put("/rmeta", body, headers, self.timeout + min(_GRACE, max(3.0, self.timeout / 3)))
        if status == 200:
            return self._result(doc, json.loads(text))
        reason = " ".join(text.split())[:300]
        if status == 415:
            return failure(doc.url, ParseMajor.NOTPARSED, ParseMinor.OK,
                            f"unsupported content type: {doc.mime or 'unknown'} (Tika: {reason})")
        if status == 422:
            return failure(doc.url, ParseMajor.FAILED, ParseMinor.FAILED_INVALID_FORMAT, f"Tika: {reason}")
        if status == 503 and "timed out" in reason:
            return failure(doc.url, ParseMajor.FAILED, ParseMinor.EXCEPTION, f"parser timeout (Tika: {reason})")
        if status == 503 or status == 429:
            raise TikaUnavailable(f"HTTP {status} {reason}")
        return failure(doc.url, ParseMajor.FAILED, ParseMinor.EXCEPTION, f"Tika: HTTP {status} {reason}")

    def _put(self, path: str, body: bytes, headers: dict[str, str], budget: float) -> tuple[int, str]:
        """One PUT, cut at ``budget`` seconds; TikaUnavailable when the server gives no answer, ParserDied when it
        closed the connection on this document twice while answering its health check."""
        down = self._down
        with down.lock:
            if time.monotonic() < down.until:
                raise TikaUnavailable(down.reason + " (not asked again yet)")
        for attempt in (1, 2):
            try:
                return self._send(path, body, headers, budget)
            except _Dropped as e:
                if not self._answers():
                    raise self._unavailable(f"{e}, and GET /version got no answer for {self.restart_wait:g} s"
                                            ) from None
                with down.lock:  # it answers again: documents that failed meanwhile need not wait any longer
                    down.until = 0.0
                if attempt == 2:
                    raise ParserDied(f"Tika closed the connection during the parse twice ({e}; the server answers "
                                     "GET /version): the document ends its parser") from None
        raise AssertionError("unreachable")

    def _send(self, path: str, body: bytes, headers: dict[str, str], budget: float) -> tuple[int, str]:
        """One PUT, cut at ``budget`` seconds; _Dropped when the server closed the connection without an answer."""
        deadline = clock.now() + budget  # the watchdog's clock (time the process was stopped is not counted)
        guard = WATCHDOG.arm(deadline)
        try:
            resp = self._session().request("PUT", self.url + path, body=body, headers=headers, retries=False,
                                           timeout=urllib3.Timeout(connect=self.connect_timeout, read=budget),
                                           preload_content=False)
            try:
                text = self._read(resp).decode("utf-8", "replace")
            finally:
                resp.release_conn()
            if guard.expired:
                raise self._unavailable(f"no answer within {budget:g} s")
            return resp.status, text
        except (urllib3.exceptions.HTTPError, OSError) as e:
            if guard.expired or timed_out(e):
                raise self._unavailable(f"no answer within {budget:g} s") from None
            if _dropped(e):
                raise _Dropped(_short(e)) from None
            raise self._unavailable(_short(e)) from None
        finally:
            WATCHDOG.disarm(guard)

    def _read(self, resp: urllib3.BaseHTTPResponse) -> bytes:
        """The answer's body, at most tika.server.answer.limit bytes (AnswerCut past it: the rest is not read)."""
        limit, data = self.answer_limit, bytearray()
        for chunk in resp.stream(1 << 16):
            data += chunk
            if 0 <= limit < len(data):
                resp.close()  # the connection is not reused: the rest is not read
                raise AnswerCut()
        return bytes(data)

    def _unavailable(self, reason: str) -> TikaUnavailable:
        """The server gives no answer: documents fail at once for tika.server.retry.interval seconds."""
        with self._down.lock:
            self._down.until = time.monotonic() + self.retry_interval
            self._down.reason = f"{self.url}: {reason}"
        return TikaUnavailable(f"{self.url}: {reason}")

    def _answers(self) -> bool:
        """Whether GET /version answers within tika.server.restart.wait seconds (the official server restarts its
        parser process after a document ended it; meanwhile nothing listens)."""
        end = time.monotonic() + self.restart_wait
        while True:
            try:
                r = self._session().request("GET", self.url + "/version", retries=False,
                                            timeout=urllib3.Timeout(connect=self.connect_timeout, read=5.0))
                if r.status == 200:
                    return True
            except (urllib3.exceptions.HTTPError, OSError):
                pass
            if time.monotonic() + _HEALTH_POLL > end or stop.requested():
                return False
            time.sleep(_HEALTH_POLL)

    def _result(self, doc: Document, docs: list[dict[str, Any]]) -> ParseResult:
        if not isinstance(docs, list) or not docs or not isinstance(docs[0], dict):
            return failure(doc.url, ParseMajor.FAILED, ParseMinor.EXCEPTION, "Tika: /rmeta gave no documents")
        s = self.settings
        cancel = Canceller()
        parts = [XhtmlPart(str(_first(d.get("X-TIKA:content")) or ""), doc.url, s.max_outlinks,
                           s.max_outlink_length, s.outlink_tags, cancel) for d in docs if isinstance(d, dict)]
        text, outlinks = join_parts(parts, s.max_outlinks, self.text_limit)
        container = docs[0]
        if not text.strip():  # nothing read: say why when Tika said so (a failure inside, the text limit)
            if _first(container.get("X-TIKA:EXCEPTION:write_limit_reached")) or _first(
                    container.get("X-TIKA:WARN:write_limit_reached")):
                return failure(doc.url, ParseMajor.FAILED, ParseMinor.FAILED_TRUNCATED,
                                "Tika: the text is longer than parser.text.limit and none of it was kept")
            error = next((_first(v) for k, v in container.items() if k.startswith("X-TIKA:EXCEPTION:")), None)
            if error:
                return failure(doc.url, ParseMajor.FAILED, ParseMinor.FAILED_INVALID_FORMAT,
                                "Tika: " + " ".join(str(error).split())[:300])
        title = next((str(_first(container[k])) for k in _TITLE_KEYS if _first(container.get(k))), parts[0].title)
        meta = {name: _joined(container, keys) for name, keys in _META_KEYS.items()}
        if not meta["language"] and self.detect_language and text.strip():
            meta["language"] = self._language(text)
        ctype = str(_first(container.get("Content-Type")) or "").split(";", 1)[0].strip().lower() or None
        return meta_result(title, text, outlinks, meta, doc.url, ctype)

    def _language(self, text: str) -> str | None:
        """Tika's language of the text (PUT /language/string), None when it cannot tell or does not answer."""
        try:
            status, lang = self._put("/language/string", text[:_LANGUAGE_SAMPLE].encode("utf-8"),
                                     {"Content-Type": "text/plain; charset=UTF-8"}, min(self.timeout, 10.0))
        except (TikaUnavailable, ParserDied):
            return None
        lang = lang.strip()
        return lang if status == 200 and lang and len(lang) <= 16 else None


def _first(value: Any) -> Any:
    """The first of a multi-valued metadata field (a JSON list), or the value."""
    if isinstance(value, list):
        return value[0] if value else None
    return value


def _joined(meta: dict[str, Any], keys: tuple[str, ...]) -> str | None:
    """The values of the first key present, tab-separated (Nutch's parse-metatags joins repeated values so)."""
    for k in keys:
        v = meta.get(k)
        if v:
            values = v if isinstance(v, list) else [v]
            return "\t".join(dict.fromkeys(str(x) for x in values if str(x).strip()))
    return None


def _dropped(exc: BaseException) -> bool:
    """The connection was made and the request sent (or being sent) when the server closed it."""
    return isinstance(exc, urllib3.exceptions.ProtocolError)


def _short(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}".lower()
    for needle, reason in (("refused", "connection refused"), ("reset", "connection reset"),
                           ("aborted", "connection closed during the parse"),
                           ("remotedisconnected", "connection closed during the parse"),
                           ("name or service", "unknown host")):
        if needle in text:
            return reason
    return f"{type(exc).__name__}: {exc}"[:200]
