"""Tests for protocol-http (nutch2/plugins/protocol_http) against a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import functools
import gzip
import json
import socket
import threading
import time
import tracemalloc
import zlib
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from nutch2.plugins.protocol_http.decoding import accept_encoding
from nutch2.plugins.protocol_http.http import HttpProtocol, HttpSettings, ProtocolConfigError
from nutch2.status import ProtocolStatusCode as P

ETAG = '"v1"'
LAST_MODIFIED = "Wed, 01 Jan 2020 00:00:00 GMT"
LAST_MODIFIED_MS = 1577836800000
HTML = b"<html><head><title>t</title></head><body>hello</body></html>"
MB = 1 << 20


@functools.cache
def gzip_bomb() -> bytes:
    """~1 MB single-member gzip stream inflating to 1 GiB of zeros (built in ~0.4 s)."""
    zeros = b"\0" * MB
    c = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    head = c.compress(zeros) + c.flush(zlib.Z_FULL_FLUSH)
    unit = c.compress(zeros) + c.flush(zlib.Z_FULL_FLUSH)  # identical for every further MB
    final = c.flush(zlib.Z_FINISH)[:-8]  # drop the trailer for 2 MB, write the 1 GiB one
    crc = 0
    for _ in range(1024):
        crc = zlib.crc32(zeros, crc)
    trailer = crc.to_bytes(4, "little") + (1024 * MB % (1 << 32)).to_bytes(4, "little")
    return head + unit * 1023 + final + trailer


class Handler(BaseHTTPRequestHandler):
    """Routes for the protocol tests."""

    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - stdlib signature
        """Keep test output quiet."""

    def send(self, code: int, body: bytes = b"", headers: dict[str, str] | None = None) -> None:
        """Send a complete response with Content-Length."""
        self.send_response(code)
        hdrs = {"Content-Type": "text/html; charset=utf-8", **(headers or {})}
        for name, value in hdrs.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:  # noqa: N802 - stdlib name
        """Dispatch on the path."""
        path = self.path.split("?")[0]
        route = ROUTES.get(path)
        if route is None and path.startswith("/chain/"):
            n = int(path.rsplit("/", 1)[1])
            route = (lambda h: h.send(200, HTML)) if n == 0 else (
                lambda h: h.send(302, headers={"Location": f"/chain/{n - 1}"}))
        if route is None:
            self.send(404, b"not found")
            return
        try:
            route(self)
        except (BrokenPipeError, ConnectionResetError):
            pass


def _cond(h: Handler) -> None:
    if h.headers.get("If-None-Match") == ETAG or h.headers.get("If-Modified-Since") == LAST_MODIFIED:
        h.send_response(304)
        h.send_header("ETag", ETAG)
        h.end_headers()
        return
    h.send(200, HTML, {"ETag": ETAG, "Last-Modified": LAST_MODIFIED})


def _echo(h: Handler) -> None:
    body = json.dumps({"headers": dict(h.headers.items()), "port": h.client_address[1]}).encode()
    h.send(200, body, {"Content-Type": "application/json"})


def _slow(h: Handler) -> None:
    time.sleep(2)
    h.send(200, HTML)


def _stall_body(h: Handler) -> None:
    h.send_response(200)
    h.send_header("Content-Length", "1000")
    h.end_headers()
    h.wfile.write(b"x" * 10)
    h.wfile.flush()
    time.sleep(2)


def _trickle(h: Handler) -> None:
    h.send_response(200)
    h.send_header("Content-Length", str(10**9))
    h.end_headers()
    end = time.monotonic() + 20
    while time.monotonic() < end:
        h.wfile.write(b"x")
        h.wfile.flush()
        time.sleep(0.02)


def _chunked(h: Handler) -> None:
    h.send_response(200)
    h.send_header("Transfer-Encoding", "chunked")
    h.end_headers()
    for part in (b"<html>", b"chunked", b"</html>"):
        h.wfile.write(b"%x\r\n%s\r\n" % (len(part), part))
    h.wfile.write(b"0\r\n\r\n")


def _bad_chunked(h: Handler) -> None:
    h.send_response(200)
    h.send_header("Transfer-Encoding", "chunked")
    h.end_headers()
    h.wfile.write(b"zz\r\nbroken\r\n")
    h.close_connection = True


def _multi_header(h: Handler) -> None:
    h.send_response(200)
    h.send_header("X-Multi", "a")
    h.send_header("X-Multi", "b")
    h.send_header("Content-Length", "2")
    h.end_headers()
    h.wfile.write(b"ok")


def _deflate_raw(h: Handler) -> None:
    c = zlib.compressobj(6, zlib.DEFLATED, -zlib.MAX_WBITS)
    h.send(200, c.compress(HTML) + c.flush(), {"Content-Encoding": "deflate"})


ROUTES = {
    "/html": lambda h: h.send(200, HTML, {"Last-Modified": LAST_MODIFIED}),
    "/r301": lambda h: h.send(301, headers={"Location": "/html"}),
    "/r302": lambda h: h.send(302, headers={"Location": "html?from=302"}),
    "/r307": lambda h: h.send(307, headers={"Location": "http://example.com/x"}),
    "/r301-nolocation": lambda h: h.send(301),
    "/loop1": lambda h: h.send(301, headers={"Location": "/loop2"}),
    "/loop2": lambda h: h.send(301, headers={"Location": "/loop1"}),
    "/e401": lambda h: h.send(401, b"auth"),
    "/e410": lambda h: h.send(410, b"gone"),
    "/e500": lambda h: h.send(500, b"oops"),
    "/cond": _cond,
    "/echo": _echo,
    "/slow": _slow,
    "/stall": _stall_body,
    "/trickle": _trickle,
    "/big": lambda h: h.send(200, b"a" * (3 * MB)),
    "/exact": lambda h: h.send(200, b"e" * 1000),
    "/gzip": lambda h: h.send(200, gzip.compress(HTML), {"Content-Encoding": "gzip"}),
    "/deflate": lambda h: h.send(200, zlib.compress(HTML), {"Content-Encoding": "deflate"}),
    "/deflate-raw": _deflate_raw,
    "/bomb": lambda h: h.send(200, gzip_bomb(), {"Content-Encoding": "gzip"}),
    "/chunked": _chunked,
    "/bad-chunked": _bad_chunked,
    "/multi": _multi_header,
}


class QuietServer(ThreadingHTTPServer):
    """Threaded server that ignores clients hanging up (the protocol closes truncated reads)."""

    daemon_threads = True
    block_on_close = False

    def handle_error(self, request: object, client_address: object) -> None:
        """Do not print tracebacks for reset connections."""


@pytest.fixture(scope="module")
def base() -> Iterator[str]:
    """Start the test server in a daemon thread; yield its base URL."""
    server = QuietServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def proto(**kw: object) -> HttpProtocol:
    """A protocol with short timeouts."""
    settings = HttpSettings(agent="TestBot/1.0", timeout_ms=2000, **kw)  # type: ignore[arg-type]
    return HttpProtocol(settings)


def test_empty_agent_fails_fast() -> None:
    with pytest.raises(ProtocolConfigError, match="http.agent.name is empty"):
        HttpProtocol(HttpSettings(agent=" "))


def test_200_html(base: str) -> None:
    out = proto().fetch(f"{base}/html")
    assert out.code == P.SUCCESS and out.http_code == 200 and out.args == []
    assert out.content == HTML and not out.truncated
    assert out.content_type == "text/html; charset=utf-8"
    assert out.last_modified == LAST_MODIFIED_MS
    assert out.final_url == f"{base}/html"
    assert out.headers["Content-Length"] == str(len(HTML))
    assert out.fetch_ms >= 0


def test_request_headers_and_pooling(base: str) -> None:
    p = proto()
    first = json.loads(p.fetch(f"{base}/echo").content)
    second = json.loads(p.fetch(f"{base}/echo").content)
    hdrs = first["headers"]
    assert hdrs["User-Agent"] == "TestBot/1.0"
    assert hdrs["Accept"].startswith("text/html")
    assert hdrs["Accept-Language"].startswith("en-us")
    assert hdrs["Accept-Encoding"] == accept_encoding() and accept_encoding().startswith("gzip, deflate")
    assert "If-None-Match" not in hdrs and "If-Modified-Since" not in hdrs
    assert first["port"] == second["port"], "connection should be reused from the pool"
    p.close()


def test_store_headers_off(base: str) -> None:
    assert proto(store_headers=False).fetch(f"{base}/html").headers == {}


def test_repeated_header_joined(base: str) -> None:
    assert proto().fetch(f"{base}/multi").headers["X-Multi"] == "a, b"


@pytest.mark.parametrize(("path", "code"), [
    ("/r301", P.MOVED), ("/r302", P.TEMP_MOVED), ("/r307", P.TEMP_MOVED),
])
def test_redirect_not_followed(base: str, path: str, code: P) -> None:
    out = proto().fetch(f"{base}{path}")
    expected = {"/r301": f"{base}/html", "/r302": f"{base}/html?from=302", "/r307": "http://example.com/x"}
    assert out.code == code and out.args == [expected[path]]
    assert out.final_url == f"{base}{path}"


def test_redirect_without_location(base: str) -> None:
    out = proto().fetch(f"{base}/r301-nolocation")
    assert out.code == P.EXCEPTION and out.http_code == 301


def test_redirect_followed_inline(base: str) -> None:
    out = proto(redirect_max=3).fetch(f"{base}/r302")
    assert out.code == P.SUCCESS and out.content == HTML
    assert out.final_url == f"{base}/html?from=302"


def test_redirect_loop(base: str) -> None:
    out = proto(redirect_max=10).fetch(f"{base}/loop1")
    assert out.code == P.REDIR_EXCEEDED and out.args == [f"{base}/loop1"]


def test_redirect_exceeded(base: str) -> None:
    assert proto(redirect_max=3).fetch(f"{base}/chain/3").code == P.SUCCESS
    out = proto(redirect_max=3).fetch(f"{base}/chain/5")
    assert out.code == P.REDIR_EXCEEDED and out.args == [f"{base}/chain/1"]


@pytest.mark.parametrize(("path", "code", "http_code"), [
    ("/missing", P.NOTFOUND, 404), ("/e410", P.GONE, 410), ("/e401", P.ACCESS_DENIED, 401),
    ("/e500", P.EXCEPTION, 500),
])
def test_error_statuses(base: str, path: str, code: P, http_code: int) -> None:
    out = proto().fetch(f"{base}{path}")
    assert (out.code, out.http_code, out.args) == (code, http_code, [str(http_code)])


def test_conditional_get_etag(base: str) -> None:
    p = proto()
    first = p.fetch(f"{base}/cond")
    assert first.code == P.SUCCESS and first.headers["ETag"] == ETAG
    out = p.fetch(f"{base}/cond", etag=first.headers["ETag"])
    assert out.code == P.NOTMODIFIED and out.http_code == 304 and out.content == b""


def test_conditional_get_modified_since(base: str) -> None:
    out = proto().fetch(f"{base}/cond", modified_since_ms=LAST_MODIFIED_MS)
    assert out.code == P.NOTMODIFIED
    assert proto().fetch(f"{base}/cond", modified_since_ms=LAST_MODIFIED_MS - 1000).code == P.SUCCESS


def test_slow_headers_timeout(base: str) -> None:
    t0 = time.monotonic()
    out = HttpProtocol(HttpSettings(agent="T", timeout_ms=300)).fetch(f"{base}/slow")
    assert out.code == P.EXCEPTION and out.args[0].startswith("timeout")
    assert time.monotonic() - t0 < 1.5


def test_stalled_body_timeout(base: str) -> None:
    out = HttpProtocol(HttpSettings(agent="T", timeout_ms=300)).fetch(f"{base}/stall")
    assert out.code == P.EXCEPTION and out.args[0].startswith("timeout")


def test_trickle_body_wall_clock_cap(base: str) -> None:
    t0 = time.monotonic()
    out = HttpProtocol(HttpSettings(agent="T", timeout_ms=500, max_fetch_ms=800)).fetch(f"{base}/trickle")
    elapsed = time.monotonic() - t0
    assert out.code == P.SUCCESS and out.truncated and 0 < len(out.content) < 200
    assert out.cut == "time"  # the parse says the time limit cut it, not http.content.limit
    assert elapsed < 2.0


def test_big_body_truncated(base: str) -> None:
    out = proto().fetch(f"{base}/big")
    assert out.code == P.SUCCESS and out.truncated and out.content == b"a" * 1048576 and out.cut == "length"


def test_body_at_exact_limit_not_truncated(base: str) -> None:
    out = proto(content_limit=1000).fetch(f"{base}/exact")
    assert len(out.content) == 1000 and not out.truncated and out.cut == ""
    out = proto(content_limit=999).fetch(f"{base}/exact")
    assert len(out.content) == 999 and out.truncated and out.cut == "length"


def test_no_content_limit(base: str) -> None:
    out = proto(content_limit=-1).fetch(f"{base}/big")
    assert len(out.content) == 3 * MB and not out.truncated


@pytest.mark.parametrize("path", ["/gzip", "/deflate", "/deflate-raw", "/chunked"])
def test_encodings(base: str, path: str) -> None:
    out = proto().fetch(f"{base}{path}")
    assert out.code == P.SUCCESS and not out.truncated
    assert out.content == (b"<html>chunked</html>" if path == "/chunked" else HTML)


def test_gzip_bomb_capped(base: str) -> None:
    gzip_bomb()  # build outside the timed/measured section
    p = proto(content_limit=MB)
    tracemalloc.start()
    t0 = time.monotonic()
    try:
        out = p.fetch(f"{base}/bomb")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert out.code == P.SUCCESS and out.truncated
    assert len(out.content) == MB and out.content.count(0) == MB
    assert peak < 12 * MB, f"peak memory {peak}"
    assert time.monotonic() - t0 < 3


def test_bad_chunked_is_exception(base: str) -> None:
    out = proto().fetch(f"{base}/bad-chunked")
    assert out.code == P.EXCEPTION and out.args


def test_connection_refused() -> None:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    out = proto().fetch(f"http://127.0.0.1:{port}/")
    assert out.code == P.EXCEPTION and out.args == ["connection refused"]


@pytest.mark.parametrize("url", ["ftp://example.com/x", "mailto:a@b.c"])
def test_unsupported_scheme(url: str) -> None:
    assert proto().fetch(url).code == P.PROTO_NOT_FOUND


@pytest.mark.parametrize("url", ["http://", "http://exa mple.com:99999/", "not a url"])
def test_garbage_url_never_raises(url: str) -> None:
    out = proto().fetch(url)
    assert out.code in (P.EXCEPTION, P.PROTO_NOT_FOUND) and out.args


@pytest.mark.parametrize(("answer", "reason"), [
    (b"HTTP/1.1 200 OK\r\nContent-Type: text/ht", "bad response: connection closed mid-headers"),
    (b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n", "bad response: connection closed mid-headers"),
    (b"HTTP/1.1 200 OK\r\n", "bad response: connection closed mid-headers"),
    (b"HTTP/1.1 200 OK", "bad response: connection closed mid-headers"),
    (b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nX-A: b\r\n", "bad response: connection closed mid-headers"),
])
def test_headers_cut_by_the_server_closing_are_a_failed_fetch(answer: bytes, reason: str) -> None:
    """http.client takes the end of the stream for the end of the headers: a server that closes the connection before
    the blank line ending them gave no whole answer, not an empty page (which would replace a good one's content)."""
    from tests.hostile_server import HostileServer

    with HostileServer({"/": lambda ex: ex.send(answer)}) as server:
        out = proto().fetch(server.url("/"))
    assert out.code == P.EXCEPTION and out.args == [reason]
    assert out.content == b""


def test_headers_ended_then_closed_is_an_empty_page() -> None:
    """The blank line came: a server that then closes without a length sent an empty body, a whole answer."""
    from tests.hostile_server import HostileServer

    with HostileServer({"/": lambda ex: ex.send(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n")}) as server:
        out = proto().fetch(server.url("/"))
    assert out.code == P.SUCCESS and out.content == b"" and out.content_type == "text/html"


@pytest.mark.parametrize("location", ["http://[::1/", "http://u:secret@[::1/x", "http://host:99999/", "//h:x/"])
def test_redirect_to_an_invalid_url_is_named(location: str) -> None:
    """A Location that is no URL (urljoin raises, or its port is none) is a failed fetch saying so, never a Python
    exception's name, and its text (which may hold credentials) is not repeated."""
    from tests.hostile_server import HostileServer

    with HostileServer({"/": lambda ex: ex.respond(301, headers={"Location": location})}) as server:
        for redirect_max in (0, 2):
            out = proto(redirect_max=redirect_max).fetch(server.url("/"))
            assert out.code == P.EXCEPTION and out.args == ["301 redirect to an invalid URL"], redirect_max
            assert out.http_code == 301


def test_a_last_modified_in_the_future_is_now() -> None:
    """A Last-Modified in the year 9999 is taken as the time of the answer (RFC 9110 8.8.2.1), not kept: the row's
    modified time would send If-Modified-Since 9999 for ever after, and no sitemap lastmod would be newer."""
    from tests.hostile_server import HostileServer

    def answer(date: str):  # noqa: ANN202 - a route
        return lambda ex: ex.respond(200, HTML, {"Last-Modified": date})

    routes = {"/future": answer("Fri, 31 Dec 9999 23:59:59 GMT"), "/past": answer(LAST_MODIFIED)}
    with HostileServer(routes) as server:
        before = int(time.time() * 1000)
        future = proto().fetch(server.url("/future"))
        after = int(time.time() * 1000)
        past = proto().fetch(server.url("/past"))
    assert future.code == P.SUCCESS and before <= future.last_modified <= after
    assert past.last_modified == LAST_MODIFIED_MS


def test_conflicting_content_lengths_are_a_bad_response() -> None:
    """Two Content-Length headers that disagree (a request smuggling shape) are named as a bad response, which the
    host table counts as an answer, not as urllib3's exception."""
    from tests.hostile_server import HostileServer

    answer = b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\nContent-Length: 200\r\n\r\n" + HTML
    with HostileServer({"/": lambda ex: ex.send(answer)}) as server:
        out = proto().fetch(server.url("/"))
    assert out.code == P.EXCEPTION and out.args == ["bad response: conflicting Content-Length headers"]
