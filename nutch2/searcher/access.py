"""The Searcher's door: one ASGI middleware in front of every route (pages, API, job API, static files).

In order, for each request:
1. **Host** must name this server (`AccessPolicy.allowed_hosts`): a page on an attacker's name that resolves to
   127.0.0.1 (DNS rebinding) sends its own name and gets 421, never an answer of ours.
2. **Origin**, when a browser sends one, must be an allowed host on this server's port: other sites' scripts and
   forms get 403. `null` (what a sandboxed page such as a cached copy sends) passes only for GET and HEAD: the
   snapshot's images and styles come from here. A request that changes something (anything but GET/HEAD) with
   `Sec-Fetch-Site: cross-site` gets 403 as well.
3. **Authentication**, when a token or users are configured: 401 with a challenge otherwise. A password's scrypt
   runs in a worker thread, never on the event loop; a client whose logins keep failing gets 429 with Retry-After
   until its back-off has passed (nutch2/searcher/auth.py).
4. **Body**: anything but GET/HEAD must be `Content-Type: application/json` (415; an HTML form cannot send it
   without a CORS preflight, which we never answer), at most `body_max` bytes (413), sent within `body_timeout`
   seconds (408), and JSON nested at most `json_depth` deep (400) — so no body can make a route fail with 500.
   The dashboard's form routes (the `forms` pattern, crawlforms.FORM_PATHS) take only HTML forms instead
   (urlencoded or multipart, at most `form_max` bytes, the same deadline); their handlers check the form's CSRF
   token, which binds it to the login the guard puts in `scope["state"]["login"]`.

Slow request headers are cut by `GuardedH11Protocol` (uvicorn's HTTP/1.1 protocol with a header deadline), since
they never reach the app, and so is a client that stops reading its answer (the same deadline, while the answer it
is sent waits on it); it also caps the connections one client address holds at once, so that no client can take
the server's whole connection cap (searcher.max.connections) with requests it never finishes. Refusals are
short JSON or text lines that echo nothing from the request.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from nutch2.searcher.auth import NEEDS_SCRYPT, Backoff, Credentials

LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")
HOLD_MAX = 2.0  # seconds of a client's login back-off the server waits out before answering, rather than 429
SAFE_METHODS = ("GET", "HEAD")
FORM_TYPES = ("application/x-www-form-urlencoded", "multipart/form-data")


@dataclass
class AccessPolicy:
    """What AccessGuard enforces (built once by the server from its options and configuration)."""

    allowed_hosts: frozenset[str] = frozenset(LOOPBACK_NAMES)
    any_host: bool = False  # searcher.allowed.hosts=*
    credentials: Credentials = field(default_factory=Credentials)
    body_max: int = 65536
    body_timeout: float = 10.0
    json_depth: int = 32
    form_max: int = 1048576  # bytes of a dashboard form (a seed file upload)

    @classmethod
    def build(cls, hosts: Iterable[str], credentials: Credentials | None = None, **limits: Any) -> AccessPolicy:
        names = {normalize_host(h) for h in (*LOOPBACK_NAMES, *hosts) if h and h.strip()}
        any_host = "*" in names
        names.discard("*")
        names.discard("0.0.0.0")  # a wildcard bind is no name a client sends
        names.discard("::")
        return cls(frozenset(names), any_host, credentials or Credentials(), **limits)

    def host_allowed(self, host: str | None) -> bool:
        return self.any_host or (host is not None and host in self.allowed_hosts)


def normalize_host(host: str) -> str:
    """A host name as compared: lower case, no trailing dot, IPv6 without brackets."""
    host = host.strip().lower().rstrip(".")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    try:
        return str(ipaddress.ip_address(host))
    except ValueError:
        return host


def client_of(address: str) -> str:
    """The client a per-client limit (login back-off, connections held) counts: an IPv4 address, or an IPv6
    address's /64, since whoever has one IPv6 address has the 2^64 of its network to take turns with."""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return address
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.IPv6Network((int(ip) >> 64 << 64, 64)))
    return str(ip)


def split_host_header(value: str) -> tuple[str, int | None] | None:
    """`name[:port]` or `[v6][:port]` -> (name, port); None when it is not a Host value."""
    value = value.strip()
    if not value or any(c in value for c in "/\\@?# \t"):
        return None
    try:
        parts = urlsplit("//" + value)
        port = parts.port
    except ValueError:
        return None
    if not parts.hostname:
        return None
    return normalize_host(parts.hostname), port


def json_too_deep(body: bytes, limit: int) -> bool:
    """True when the JSON text nests arrays/objects deeper than `limit` (strings are skipped)."""
    depth = 0
    in_string = escaped = False
    for b in body:
        if in_string:
            if escaped:
                escaped = False
            elif b == 0x5C:  # backslash
                escaped = True
            elif b == 0x22:
                in_string = False
        elif b == 0x22:
            in_string = True
        elif b in (0x5B, 0x7B):  # [ {
            depth += 1
            if depth > limit:
                return True
        elif b in (0x5D, 0x7D):
            depth -= 1
    return False


class Refused(Exception):
    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.headers = headers or {}


class AccessGuard:
    """ASGI middleware enforcing an AccessPolicy (see the module docstring)."""

    def __init__(self, app: Any, policy: AccessPolicy, forms: re.Pattern[str] | None = None) -> None:
        self.app = app
        self.policy = policy
        self.forms = forms  # the paths whose POSTs are HTML forms

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = _headers(scope)
        try:
            self._check_host_and_origin(scope, headers)
            scope.setdefault("state", {})["login"] = await self._check_auth(scope, headers)
            if scope["method"] not in SAFE_METHODS:
                body = await self._read_body(scope, headers, receive)
                receive = _replay(body, receive)
        except Refused as r:
            await _refuse(scope, send, r)
            return
        await self.app(scope, receive, send)

    def _check_host_and_origin(self, scope: dict[str, Any], headers: dict[str, str]) -> None:
        host = split_host_header(headers.get("host", ""))
        if host is None or not self.policy.host_allowed(host[0]):
            raise Refused(421, "this server does not answer to that host name; use the address it was started "
                               "with, or add the name to searcher.allowed.hosts")
        origin = headers.get("origin")
        safe = scope["method"] in SAFE_METHODS
        if origin is not None and not (safe and origin.strip() == "null") \
                and not self._origin_allowed(origin, scope, host[1]):
            raise Refused(403, "requests from other sites are not accepted")
        if scope["method"] not in SAFE_METHODS and headers.get("sec-fetch-site") == "cross-site":
            raise Refused(403, "requests from other sites are not accepted")

    def _origin_allowed(self, origin: str, scope: dict[str, Any], port: int | None) -> bool:
        try:
            parts = urlsplit(origin.strip())
            o_port = parts.port
        except ValueError:
            return False
        if parts.scheme not in ("http", "https") or not parts.hostname:
            return False  # "null" (sandboxed pages, file:), or not an origin
        if parts.scheme != scope.get("scheme", "http"):
            return False
        default = 443 if parts.scheme == "https" else 80
        if (o_port or default) != (port or default):
            return False
        return self.policy.host_allowed(normalize_host(parts.hostname))

    async def _check_auth(self, scope: dict[str, Any], headers: dict[str, str]) -> str:
        """Who the request logged in as ("" when the server has no login)."""
        creds = self.policy.credentials
        if not creds.required:
            return ""
        client = client_of(str((scope.get("client") or ("",))[0]))
        authorization = headers.get("authorization")
        for waited in (False, True):
            try:
                user = creds.check(authorization, client)
                if user == NEEDS_SCRYPT:  # tens of milliseconds of CPU: not on the loop every request waits on
                    user = await asyncio.to_thread(creds.verify, authorization, client)
                break
            except Backoff as b:
                # the client waits (a held connection costs an idle coroutine): a short back-off is waited out and
                # the login tried, a long one answered 429 after HOLD_MAX, so that a flood of tries is slowed to
                # one per HOLD_MAX per connection (and searcher.max.connections.per.client connections)
                await asyncio.sleep(min(b.retry_after, HOLD_MAX))
                if waited or b.retry_after > HOLD_MAX:
                    raise Refused(429, str(b), {"Retry-After": str(max(1, math.ceil(b.retry_after - HOLD_MAX)))}
                                  ) from None
        if user is None:
            raise Refused(401, "authentication required", {"WWW-Authenticate": creds.challenge()})
        return user

    async def _read_body(self, scope: dict[str, Any], headers: dict[str, str], receive: Any) -> bytes:
        ctype = headers.get("content-type", "").split(";")[0].strip().lower()
        form = self.forms is not None and self.forms.fullmatch(scope.get("path", "")) is not None
        if form and ctype not in FORM_TYPES:
            raise Refused(415, "send this form from the dashboard's page (application/x-www-form-urlencoded or "
                               "multipart/form-data)")
        if not form and ctype != "application/json":
            raise Refused(415, "send the request as JSON with Content-Type: application/json")
        limit = self.policy.form_max if form else self.policy.body_max
        length = headers.get("content-length")
        too_large = (f"the form is larger than {limit} bytes (searcher.form.max): send fewer seeds, or inject a "
                     "large seed file from the command line (nutch2 inject FILE)" if form
                     else f"the request body is larger than {limit} bytes")
        if length is not None and (not length.strip().isdigit() or int(length) > limit):
            raise Refused(413, too_large)
        try:
            body = await asyncio.wait_for(_read_all(receive, limit, too_large), self.policy.body_timeout)
        except TimeoutError:
            raise Refused(408, f"the request body did not arrive within {self.policy.body_timeout:g} s") from None
        if not form and json_too_deep(body, self.policy.json_depth):
            raise Refused(400, f"the JSON body nests deeper than {self.policy.json_depth} levels")
        return body


async def _read_all(receive: Any, limit: int, too_large: str) -> bytes:
    body = bytearray()
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise Refused(400, "the client went away")
        body += message.get("body", b"")
        if len(body) > limit:
            raise Refused(413, too_large)
        if not message.get("more_body", False):
            return bytes(body)


def _replay(body: bytes, receive: Any) -> Any:
    sent = False

    async def replay() -> dict[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


def _headers(scope: dict[str, Any]) -> dict[str, str]:
    out: dict[str, str] = {}
    for k, v in scope.get("headers", []):
        name = k.decode("latin-1").lower()
        if name not in out:  # the first of repeated headers (a second Host is not a way around the check)
            out[name] = v.decode("latin-1")
        elif name == "host":
            out[name] = ""  # two Host headers: refused as no host
    return out


async def _refuse(scope: dict[str, Any], send: Any, r: Refused) -> None:
    api = scope.get("path", "").startswith("/api")
    if api:
        body = json.dumps({"error": str(r)}).encode()
        ctype = b"application/json"
    else:
        body = (str(r) + "\n").encode()
        ctype = b"text/plain; charset=utf-8"
    headers = [(b"content-type", ctype), (b"content-length", str(len(body)).encode()),
               (b"x-content-type-options", b"nosniff"), (b"cache-control", b"no-store")]
    headers += [(k.lower().encode(), v.encode()) for k, v in r.headers.items()]
    if r.status in (408, 413):
        headers.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": r.status, "headers": headers})
    await send({"type": "http.response.body", "body": b"" if scope["method"] == "HEAD" else body})


def guarded_protocol(header_timeout: float, per_client: int = 0) -> type:
    """uvicorn's h11 protocol with a deadline for each request's line and headers: a client that has not sent
    them within `header_timeout` seconds of the connection (or of the previous response) is answered 408 and
    cut off (idle keep-alive connections are closed quietly). A client that leaves its answer unread for
    `header_timeout` seconds (the answer waiting on it does not move) is cut off too: it would hold its connection, the
    route's task and the unsent answer for as long as it likes. `per_client` > 0: a client address holding that many
    connections has a further one answered 503 and closed at once."""
    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    held: dict[str, int] = {}  # client address -> its open connections (the event loop's thread only)

    class GuardedH11Protocol(H11Protocol):
        _header_timer: asyncio.TimerHandle | None = None
        _write_timer: asyncio.TimerHandle | None = None
        _partial = False
        _peer: str | None = None

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            peer = transport.get_extra_info("peername")
            address = client_of(str(peer[0])) if isinstance(peer, tuple) and peer else ""
            if per_client > 0 and held.get(address, 0) >= per_client:
                body = b"too many connections from this address\n"
                transport.write(b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain; charset=utf-8\r\n"
                                b"connection: close\r\ncontent-length: %d\r\n\r\n%s" % (len(body), body))
                transport.close()
                return
            self._peer = address
            held[address] = held.get(address, 0) + 1
            self._arm()

        def data_received(self, data: bytes) -> None:
            if self.conn.their_state is h11.IDLE:
                self._partial = True
            super().data_received(data)
            self._arm()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            self._arm()

        def pause_writing(self) -> None:
            super().pause_writing()
            if self._write_timer is None:
                self._watch_writes(None)

        def resume_writing(self) -> None:
            super().resume_writing()
            if self._write_timer is not None:
                self._write_timer.cancel()
                self._write_timer = None

        def _watch_writes(self, before: int | None) -> None:
            """While writing is paused: cut the client off when its answer did not move for header_timeout."""
            left = self.transport.get_write_buffer_size()
            if before is not None and left >= before:
                self._write_timer = None
                self.transport.abort()  # close() would wait for the unread answer to leave
                return
            self._write_timer = self.loop.call_later(header_timeout, self._watch_writes, left)

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            if self._write_timer is not None:
                self._write_timer.cancel()
                self._write_timer = None
            if self._peer is not None:
                left = held.get(self._peer, 1) - 1
                if left > 0:
                    held[self._peer] = left
                else:
                    held.pop(self._peer, None)
                self._peer = None
            super().connection_lost(exc)

        def _arm(self) -> None:
            """A deadline while the client owes us a request's headers; none once they are in."""
            waiting = self.conn.their_state is h11.IDLE and not self.transport.is_closing()
            if waiting and self._header_timer is None:
                self._header_timer = self.loop.call_later(header_timeout, self._headers_late)
            elif not waiting:
                self._disarm()
                self._partial = False

        def _disarm(self) -> None:
            if self._header_timer is not None:
                self._header_timer.cancel()
                self._header_timer = None

        def _headers_late(self) -> None:
            self._header_timer = None
            if self.transport.is_closing() or self.conn.their_state is not h11.IDLE:
                return
            if self._partial:
                body = b"the request headers did not arrive in time\n"
                self.transport.write(b"HTTP/1.1 408 Request Timeout\r\ncontent-type: text/plain; charset=utf-8\r\n"
                                     b"connection: close\r\ncontent-length: %d\r\n\r\n%s" % (len(body), body))
            self.transport.close()

    return GuardedH11Protocol
