"""protocol-http: HTTP and HTTPS over urllib3, one connection pool manager per fetcher thread.

``HttpProtocol.fetch`` never raises: every outcome (HTTP status, redirect, timeout,
connection error) is reported as a :class:`ProtocolOutput` with a Nutch protocol
status code. Bodies are streamed and capped at ``http.content.limit`` *decoded*
bytes and, when compressed (gzip, deflate, br, zstd, or several in a row:
decoding.py), at ``http.content.inflate.limit`` even when the content limit is
off (decoded in bounded steps, so a compression bomb never inflates past the
cap). A compressed body that ends before its stream does is marked truncated, as
a cut body is; one that does not decode is an EXCEPTION naming its coding.

With ``http.useHttp2`` an https URL fetched directly (no proxy) goes over HTTP/2
when its server chooses it in the TLS handshake (http2.py), with the same
headers, auth, cookies, limits, address guard and deadline; HTTP/1.1 otherwise.

Every request has a total deadline (Nutch's ``http.time.limit``, by default three
times ``http.timeout``; never later than ``HttpSettings.stop_at``; on nutch2/mapred/clock.py's clock, which
does not count the time the process was stopped) covering connect,
status line, headers and body: :mod:`nutch2.fetch.watchdog` shuts its socket down when it
passes. A body cut by the deadline is kept and marked truncated; a request cut
before its headers arrived is an EXCEPTION "timeout (total fetch time exceeded)".
"""

from __future__ import annotations

import http.client
import importlib.util
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING
from urllib.parse import urljoin, urlsplit

import urllib3

from nutch2.errors import ConfigError
from nutch2.fetch.addresses import AddressDenied, AddressPolicy
from nutch2.fetch.headers import http_date, http_date_ms
from nutch2.fetch.output import ProtocolOutput
from nutch2.fetch.protocols import ProtocolSession
from nutch2.fetch.watchdog import WATCHDOG, Guard, guard, timed_out
from nutch2.mapred import clock, stop
from nutch2.plugins.protocol_http.decoding import DecodingError, Identity, accept_encoding, decoder_for
from nutch2.plugins.protocol_http.httpauth import BasicAuth, DigestAuth
from nutch2.plugins.protocol_http.netconf import (
    Credentials,
    ProxySettings,
    find_credentials,
    parse_challenges,
    redact,
)
from nutch2.plugins.protocol_http.tls import client_context
from nutch2.status import ProtocolStatusCode, http_to_protocol_status
from nutch2.urls.checker import strip_credentials

if TYPE_CHECKING:
    import http.cookiejar

    from nutch2.plugins.protocol_http.http2 import Http2Client, Http2Response

__all__ = [
    "HttpProtocol",
    "HttpSettings",
    "ProtocolConfigError",
    "ProtocolOutput",
]

_CHUNK = 64 * 1024
_SCHEMES = ("http", "https")
_EMPTY_AGENT = "http.agent.name is empty: set it in conf/nutch-site.toml or with -D http.agent.name=MyBot"


_TOTAL_TIMEOUT = "timeout (total fetch time exceeded)"
_MAX_TIMEOUT_MS = 3_600_000  # an hour per read is already no timeout at all


class ProtocolConfigError(ConfigError, ValueError):
    """The protocol cannot be used with this configuration (e.g. no agent name, a timeout <= 0)."""


@dataclass
class HttpSettings:
    """HTTP settings (Nutch's ``http.*`` properties)."""

    agent: str  # full User-Agent string; must be non-empty
    timeout_ms: int = 10000  # http.timeout: connect and per-read timeout
    content_limit: int = 1048576  # http.content.limit (decoded bytes); -1 = no limit
    inflate_limit: int = 33554432  # http.content.inflate.limit: most bytes a compressed body is decoded to
    redirect_max: int = 0  # http.redirect.max: 0 = report redirects, N = follow up to N inline
    accept: str = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
    accept_language: str = "en-us,en-gb,en;q=0.7,*;q=0.3"
    store_headers: bool = True
    max_fetch_ms: int | None = None  # http.time.limit: total wall-clock cap; None = 3 × timeout_ms
    stop_at: float | None = None  # clock.now() at which every request is cut (fetcher.timelimit.mins)
    proxy: ProxySettings | None = None  # http.proxy.*: every request through it, but for http.proxy.exception.list
    auth: tuple[Credentials, ...] = field(default=(), repr=False)  # http.auth.file: answered 401 challenges
    cookies: bool = False  # http.enable.cookie.header: keep the cookies hosts set, send them back (a jar per task)
    http2: bool = False  # http.useHttp2: https over HTTP/2 where the server chooses it (ALPN), not through a proxy

    def __post_init__(self) -> None:
        if not 0 < self.timeout_ms <= _MAX_TIMEOUT_MS:
            raise ProtocolConfigError(f"http.timeout={self.timeout_ms} is not a usable timeout: give milliseconds "
                                      f"between 1 and {_MAX_TIMEOUT_MS}, e.g. -D http.timeout=10000")
        if self.inflate_limit <= 0:
            raise ProtocolConfigError(f"http.content.inflate.limit={self.inflate_limit} must be > 0 (bytes), "
                                      "e.g. -D http.content.inflate.limit=33554432")
        if self.max_fetch_ms is not None and self.max_fetch_ms <= 0:
            raise ProtocolConfigError(f"the total fetch time limit {self.max_fetch_ms} ms must be > 0")
        if self.http2 and not all(importlib.util.find_spec(m) for m in ("httpcore", "h2")):
            raise ProtocolConfigError("http.useHttp2=true needs httpcore and h2: pip install 'nutch2[http2]', or "
                                      "-D http.useHttp2=false")

    def secrets(self) -> tuple[str, ...]:
        """Passwords that must never reach a stored message."""
        found = [c.password for c in self.auth] + list(self.proxy.secrets() if self.proxy else ())
        return tuple(sorted({s for s in found if s}, key=len, reverse=True))

    @property
    def fetch_cap_ms(self) -> int:
        """Total wall-clock budget for one fetch, redirects and body included."""
        return self.max_fetch_ms if self.max_fetch_ms is not None else 3 * self.timeout_ms


class _FetchError(Exception):
    """Internal: a fetch failure already reduced to a short reason."""


_REASONS: tuple[tuple[str, str], ...] = (
    ("connection refused", "connection refused"),
    ("nameresolutionerror", "unknown host"),
    ("name or service not known", "unknown host"),
    ("nodename nor servname", "unknown host"),
    ("temporary failure in name resolution", "unknown host"),
    ("getaddrinfo failed", "unknown host"),
    ("no address associated", "unknown host"),
    # answers http.client cannot read (urllib3 wraps them in "Connection aborted."): the server did answer
    ("linetoolong", "bad response: a header line over 64 KB"),
    ("got more than 100 headers", "bad response: more than 100 headers"),
    ("badstatusline", "bad response: no HTTP status line"),
    ("connection closed mid-headers", "bad response: connection closed mid-headers"),
    ("content-length contained multiple unmatching values", "bad response: conflicting Content-Length headers"),
    ("connection reset", "connection reset"),
    ("remotedisconnected", "connection closed by server"),
    ("connection aborted", "connection aborted"),
    ("invalidchunklength", "invalid chunked encoding"),
    ("incompleteread", "incomplete body"),
    ("network is unreachable", "network unreachable"),
    ("no route to host", "no route to host"),
    ("timed out", "timeout"),
)


def _describe(exc: BaseException) -> str:
    """Reduce an exception to a short, stable reason (``timeout ...``, ``connection refused``...)."""
    if isinstance(exc, _FetchError | DecodingError):
        return str(exc)
    if timed_out(exc):
        return "timeout (connect)" if isinstance(exc, urllib3.exceptions.ConnectTimeoutError) else "timeout (read)"
    text = f"{type(exc).__name__}: {exc}"
    low = text.lower()
    if isinstance(exc, urllib3.exceptions.SSLError) or "sslerror" in low:
        return f"ssl error: {text[:160]}"
    for needle, reason in _REASONS:
        if needle in low:
            return reason if reason != "timeout" else "timeout (read)"
    return text[:200]


_COOKIE_HEADERS = frozenset({"set-cookie", "set-cookie2"})


class _CookieResponse:
    """The response view http.cookiejar reads Set-Cookie from (urllib3's headers have the get_all it asks)."""

    def __init__(self, headers: urllib3.HTTPHeaderDict) -> None:
        self._headers = headers

    def info(self) -> urllib3.HTTPHeaderDict:
        return self._headers


class HttpProtocol(ProtocolSession):
    """Fetches URLs over HTTP(S); one instance per fetcher thread (not thread-safe).

    ``cookies``: the task's cookie jar (http.enable.cookie.header), shared by its threads (a CookieJar locks itself);
    None with cookies on gives this protocol a jar of its own. ``addresses``: the address guard every connection
    passes (a refused URL is ACCESS_DENIED; a redirect to a refused address is returned as the redirect).
    """

    def __init__(self, settings: HttpSettings, cookies: http.cookiejar.CookieJar | None = None,
                 addresses: AddressPolicy | None = None) -> None:
        if not settings.agent or not settings.agent.strip():
            raise ProtocolConfigError(_EMPTY_AGENT)
        self.settings = settings
        if settings.cookies and cookies is None:
            import http.cookiejar

            cookies = http.cookiejar.CookieJar()
        self._jar = cookies if settings.cookies else None
        self._secrets = settings.secrets()
        self._auth: dict[str, BasicAuth | DigestAuth] = {}  # host:port -> the answer to its challenge
        self._headers = {
            "User-Agent": settings.agent,
            "Accept": settings.accept,
            "Accept-Language": settings.accept_language,
            "Accept-Encoding": accept_encoding(),
        }
        self._addresses = addresses
        # no retries, no environment proxies or netrc, no redirects: every hop is this class's to judge; one TLS
        # context for every connection (urllib3 would load the CA bundle into a new one for each)
        self._direct = guard(urllib3.PoolManager(num_pools=32, maxsize=4, retries=False,
                                                 ssl_context=client_context("http/1.1")), addresses=addresses)
        self._proxied: urllib3.PoolManager | None = None
        self._h2: Http2Client | None = None
        if settings.http2:
            from nutch2.plugins.protocol_http.http2 import Http2Client

            self._h2 = Http2Client(addresses)

    def _manager(self, url: str) -> urllib3.PoolManager:
        """The pool manager for `url`: through the proxy (unless its host is an exception), or direct."""
        proxy = self.settings.proxy
        if proxy is None or not proxy.applies(url):
            return self._direct
        if self._proxied is None:
            self._proxied = _proxy_manager(proxy)
        return self._proxied

    def close(self) -> None:
        """Close pooled connections."""
        self._direct.clear()
        if self._proxied is not None:
            self._proxied.clear()
        if self._h2 is not None:
            self._h2.close()

    def fetch(self, url: str, *, modified_since_ms: int | None = None, etag: str | None = None,
              may_follow: Callable[[str], bool] | None = None, deadline: float | None = None) -> ProtocolOutput:
        """Fetch ``url``; never raises (failures become EXCEPTION / other status codes).

        With ``http.redirect.max`` > 0, ``may_follow(target)`` (when given) is asked before each redirect hop
        (robots.txt, politeness); when it says no, the redirect itself is returned (MOVED / TEMP_MOVED).
        ``deadline`` (clock.now()) cuts the fetch earlier than its own time limit (a rendered page's resource).
        """
        start = clock.now()
        cap = start + self.settings.fetch_cap_ms / 1000.0
        deadline = cap if deadline is None else min(cap, deadline)
        stop_at = self.settings.stop_at
        if stop_at is not None and stop_at <= deadline:
            deadline = stop_at
        try:
            out = self._fetch(url, self._conditional_headers(modified_since_ms, etag), deadline, may_follow)
        except AddressDenied as exc:
            out = ProtocolOutput(ProtocolStatusCode.ACCESS_DENIED, [str(exc)], final_url=url)
        except Exception as exc:  # noqa: BLE001 - fetch() must never raise
            out = ProtocolOutput(ProtocolStatusCode.EXCEPTION, [redact(_describe(exc), self._secrets)], final_url=url)
        end = clock.now()
        out.fetch_ms = int((end - start) * 1000)
        failed = out.truncated or out.code == ProtocolStatusCode.EXCEPTION
        if failed and (stop_at is not None and end >= stop_at or stop.requested()):
            out.stopped = True  # cut (or failed) at the job's time limit or by a stop: left for a later fetch
        return out

    @staticmethod
    def _conditional_headers(modified_since_ms: int | None, etag: str | None) -> dict[str, str]:
        """If-Modified-Since / If-None-Match headers for a conditional GET."""
        headers: dict[str, str] = {}
        if modified_since_ms is not None and modified_since_ms > 0:
            headers["If-Modified-Since"] = http_date(modified_since_ms)
        if etag:
            headers["If-None-Match"] = etag
        return headers

    def _fetch(self, url: str, cond: dict[str, str], deadline: float,
               may_follow: Callable[[str], bool] | None = None) -> ProtocolOutput:
        """Fetch with manual redirect handling."""
        seen = {url}
        current = url
        hops = 0
        followed: list[tuple[str, bool]] = []
        redirect: ProtocolOutput | None = None  # the answer that sent us to `current`
        while True:
            scheme = urlsplit(current).scheme.lower()
            if scheme not in _SCHEMES:
                return ProtocolOutput(ProtocolStatusCode.PROTO_NOT_FOUND, [scheme], final_url=current)
            if clock.now() >= deadline:
                raise _FetchError(_TOTAL_TIMEOUT)
            try:
                out = self._fetch_once(current, cond, deadline)
            except AddressDenied:
                if redirect is None:
                    raise
                redirect.redirects = followed[:-1]  # a redirect to a refused address: recorded as the redirect
                return redirect
            out.redirects = followed
            if out.code not in (ProtocolStatusCode.MOVED, ProtocolStatusCode.TEMP_MOVED):
                return out
            if self.settings.redirect_max <= 0:
                return out
            target = out.args[0]
            hops += 1
            # with cookies, coming back to a URL is no loop (a cookie wall sets one and sends the client back)
            if hops > self.settings.redirect_max or (target in seen and not self.settings.cookies):
                return ProtocolOutput(ProtocolStatusCode.REDIR_EXCEEDED, [target], out.http_code,
                                      headers=out.headers, final_url=current)
            if may_follow is not None and not may_follow(target):
                return out  # recorded as a redirect: the target is fetched (or refused) in a later round
            seen.add(target)
            followed.append((target, out.code == ProtocolStatusCode.TEMP_MOVED))
            current, redirect = target, out

    def _fetch_once(self, url: str, cond: dict[str, str], deadline: float) -> ProtocolOutput:
        """One GET without following redirects, cut by the watchdog at ``deadline``."""
        timeout = self.settings.timeout_ms / 1000.0
        connect_timeout = min(timeout, max(deadline - clock.now(), 0.001))
        guard = WATCHDOG.arm(deadline)
        try:
            limits = urllib3.Timeout(connect=connect_timeout, read=timeout)
            resp = self._get(url, cond, guard, limits)
            if resp.status == 401 and self.settings.auth and self._answer(url, resp):
                resp.close()  # a challenge we hold credentials for: ask again with them
                resp = self._get(url, cond, guard, limits)
            try:
                content, cut, error = self._read_body(resp, deadline, guard)
            finally:
                resp.close()  # a body read to its end gave its connection back to the pool already
        finally:
            WATCHDOG.disarm(guard)
        code = http_to_protocol_status(resp.status)
        args: list[str] = []
        if error is not None:  # the body broke off: a failed fetch, with what was read (robots.txt salvages it)
            code, args = ProtocolStatusCode.EXCEPTION, [error]
        elif code in (ProtocolStatusCode.MOVED, ProtocolStatusCode.TEMP_MOVED):
            location = resp.headers.get("Location")
            target = _redirect_target(url, location)
            if not location:
                code, args = ProtocolStatusCode.EXCEPTION, [f"{resp.status} redirect without Location"]
            elif target is None:  # its text is not repeated: credentials in a URL that does not parse stay in it
                code, args = ProtocolStatusCode.EXCEPTION, [f"{resp.status} redirect to an invalid URL"]
            else:
                args = [target]
        elif code != ProtocolStatusCode.SUCCESS:
            args = [str(resp.status)]
        headers = dict(resp.headers) if self.settings.store_headers else {}
        if self.settings.cookies:  # the jar keeps the host's cookies; a row never does
            headers = {k: v for k, v in headers.items() if k.lower() not in _COOKIE_HEADERS}
        return ProtocolOutput(
            code=code, args=args, http_code=resp.status, content=content,
            content_type=resp.headers.get("Content-Type"), headers=headers, final_url=url,
            truncated=bool(cut), cut=cut, last_modified=_last_modified(resp.headers.get("Last-Modified")),
        )

    def _get(self, url: str, cond: dict[str, str], guard: Guard,
             timeout: urllib3.Timeout) -> urllib3.BaseHTTPResponse | Http2Response:
        """One GET (through the proxy unless the host is an exception; over HTTP/2 where it may and the server
        chooses it), with the host's auth and cookies."""
        headers = {**self._headers, **cond}
        auth = self._auth.get(self._hostport(url))
        answer = auth.header(url) if auth is not None else None
        if answer:
            headers["Authorization"] = answer
        jar = self._jar
        if jar is not None:  # the jar reads and writes cookies through urllib's view of the request
            import urllib.request

            request = urllib.request.Request(url)
            jar.add_cookie_header(request)
            headers.update(request.unredirected_hdrs)
        manager = self._manager(url)
        if manager is not self._direct and self._addresses is not None:  # the proxy connects: check the name here
            refused = self._addresses.check(url)
            if refused:
                raise AddressDenied(refused)
        try:
            resp: urllib3.BaseHTTPResponse | Http2Response | None = None
            if self._h2 is not None and manager is self._direct and self._h2.wants(url):
                resp = self._h2.get(url, headers, timeout.connect_timeout, timeout.read_timeout)
            if resp is None:
                resp = manager.request("GET", url, headers=headers, redirect=False, retries=False,
                                       preload_content=False, decode_content=False, timeout=timeout)
        except Exception as exc:
            if guard.expired:
                raise _FetchError(_TOTAL_TIMEOUT) from exc
            raise
        if guard.expired:  # cut while the headers arrived: http.client took the EOF for their end
            resp.close()
            raise _FetchError(_TOTAL_TIMEOUT)
        if jar is not None:
            jar.extract_cookies(_CookieResponse(resp.headers), request)  # type: ignore[arg-type]
        return resp

    @staticmethod
    def _hostport(url: str) -> str:
        parts = urlsplit(url)
        return f"{(parts.hostname or '').lower()}:{parts.port or (443 if parts.scheme == 'https' else 80)}"

    def _answer(self, url: str, resp: urllib3.BaseHTTPResponse | Http2Response) -> bool:
        """Whether to ask again: a 401's challenge (Basic or Digest) that http.auth.file holds credentials for
        (host, port, realm), unless the answer sent was Basic and already these (a wrong password is asked once);
        the answer is kept for the host, so later requests send it (Basic) or answer its nonce (Digest) at once."""
        key = self._hostport(url)
        for challenge in parse_challenges(resp.headers.get("WWW-Authenticate")):
            if challenge.scheme not in ("BASIC", "DIGEST"):
                continue
            creds = find_credentials(self.settings.auth, url, challenge)
            if creds is None:
                continue
            if challenge.scheme == "BASIC":
                if isinstance(self._auth.get(key), BasicAuth):
                    return False
                self._auth[key] = BasicAuth(creds)
            else:
                if isinstance(self._auth.get(key), DigestAuth) and "stale=true" not in challenge.params.lower():
                    return False  # answered this host's nonce already: the credentials are wrong
                self._auth[key] = DigestAuth(creds, url, challenge)
            return True
        return False

    def _read_body(self, resp: urllib3.BaseHTTPResponse | Http2Response, deadline: float,
                   guard: Guard) -> tuple[bytes, str, str | None]:
        """Stream the body, decoding it, capped at the content (or inflate) limit and at the deadline.

        Returns (content, cut, error): cut says why the body is truncated, "" when it is whole: "length" (a
        limit), "time" (the deadline), "disconnect" (a compressed body ended before its stream did, e.g. half a
        gzip stream with a matching Content-Length, or the connection or the decoding failed midway: error says
        how, and content is the part read).
        """
        if resp.status == 304:
            return b"", "", None
        limit = self.settings.content_limit
        try:
            decoder = decoder_for(resp.headers.get("Content-Encoding"))
        except DecodingError as exc:  # codings no one applies (too many in a row): a failed fetch, nothing read
            return b"", "", str(exc)
        if decoder.compressed and not 0 <= limit <= self.settings.inflate_limit:
            limit = self.settings.inflate_limit
        buf = bytearray()
        # read1 returns after one socket read, so the wall-clock cap is checked between small reads
        read = resp.read1
        try:
            while clock.now() < deadline:
                chunk = read(_CHUNK, decode_content=False)
                if not chunk:  # the end of the body, or the watchdog cut the socket
                    cut = "time" if guard.expired else "" if decoder.complete() else "disconnect"
                    return bytes(buf), cut, None
                if self._append(buf, decoder, chunk, limit):
                    return bytes(buf), "length", None
        except (http.client.HTTPException, urllib3.exceptions.HTTPError, OSError, _FetchError, DecodingError) as exc:
            if guard.expired:
                return bytes(buf), "time", None
            return bytes(buf), "disconnect", _describe(exc)
        return bytes(buf), "time", None  # wall-clock cap reached (Nutch's http.time.limit): truncated

    @staticmethod
    def _append(buf: bytearray, decoder: Identity, chunk: bytes, limit: int) -> bool:
        """Decode ``chunk`` into ``buf``; return True when the content limit was exceeded."""
        decoder.feed(chunk)
        while out := decoder.read(limit - len(buf) + 1 if limit >= 0 else 16 * _CHUNK):
            buf += out
            if 0 <= limit < len(buf):
                del buf[limit:]
                return True
        return False


def _last_modified(value: str | None) -> int | None:
    """The Last-Modified time in ms, no later than now (RFC 9110 8.8.2.1: a server whose clock or file dates are in
    the future must send the time of its answer instead). A page dated in the future would keep that date: every
    later fetch would ask If-Modified-Since a time no change comes after, and no sitemap lastmod would be newer."""
    when = http_date_ms(value)
    return None if when is None else min(when, int(time.time() * 1000))


def _redirect_target(url: str, location: str | None) -> str | None:
    """The absolute URL a Location names (without credentials), None when there is none or it does not parse
    (``http://[::1/``: urljoin raises)."""
    if not location:
        return None
    try:
        target = urljoin(url, location.strip())
        urlsplit(target).port  # noqa: B018 - raises on a port that is no number or out of range
    except ValueError:
        return None
    return strip_credentials(target)


def _proxy_manager(proxy: ProxySettings) -> urllib3.PoolManager:
    """A pool manager through the proxy (HTTP, CONNECT for https; or SOCKS, names resolved by the proxy)."""
    if proxy.type == "SOCKS":
        from urllib3.contrib.socks import SOCKSProxyManager

        return guard(SOCKSProxyManager(f"socks5h://{proxy.host}:{proxy.port}", proxy.username or None,
                                       proxy.password or None, num_pools=32, maxsize=4, retries=False,
                                       ssl_context=client_context("http/1.1")), socks=True)
    headers = (urllib3.make_headers(proxy_basic_auth=f"{proxy.username}:{proxy.password}")
               if proxy.username else None)
    return guard(urllib3.ProxyManager(f"http://{proxy.host}:{proxy.port}", proxy_headers=headers, num_pools=32,
                                      maxsize=4, retries=False, ssl_context=client_context("http/1.1")))
