"""protocol-http's content codings (br, zstd, several in a row) and HTTP/2 (issue 38), against loopback servers.

The codings: decoders in bounded steps (decoding.py), pages served br- and zstd-encoded parsed through the CLI to
the text of the plain page, Brotli and zstd bombs cut at the content limit (stored truncated, counted by parse as
skipped_truncated, as a gzip bomb is), streams that do not decode failed as bad gzip is. HTTP/2: a hypercorn server
over TLS with a certificate made here (tests/tlsweb.py) crawls to the same rows as over HTTP/1.1, a guarded address
is refused, a stalled request is cut at the total deadline, auth, cookies and the content limit hold, a server that
chooses HTTP/1.1 and a proxy get HTTP/1.1."""

from __future__ import annotations

import functools
import gzip
import importlib.util
import os
import time
import tracemalloc
from collections.abc import Callable, Iterator
from contextlib import closing
from pathlib import Path

import pytest

from nutch2.fetch.addresses import AddressPolicy
from nutch2.marks import Mark
from nutch2.plugins.protocol_http import decoding
from nutch2.plugins.protocol_http.decoding import DecodingError, Identity, accept_encoding, decoder_for
from nutch2.plugins.protocol_http.http import HttpProtocol, HttpSettings
from nutch2.plugins.protocol_http.netconf import AuthScope, Credentials, ProxySettings
from nutch2.status import CrawlStatus, ParseMajor, ParseMinor
from nutch2.status import ProtocolStatusCode as P
from nutch2.urls.tableutil import reverse_url
from tests import tlsweb
from tests.crawlutil import conf_for, defines, rows
from tests.helpers import nutch2
from tests.hostile_server import Exchange, HostileServer

brotli = pytest.importorskip("brotlicffi")
zstd = decoding.zstd
if zstd is None or decoding.brotli is None:
    pytest.skip("brotlicffi 1.2 and backports.zstd (core dependencies) are not installed", allow_module_level=True)

MB = 1 << 20
HTML = (b"<html><head><title>Encoded</title></head><body><h1>Words</h1>"
        + b"<p>the same words, whatever the coding</p>" * 200 + b"<a href='/next'>next</a></body></html>")
ROBOTS = b"User-agent: *\nDisallow:\n"


def br(data: bytes) -> bytes:
    return brotli.compress(data)


def zst(data: bytes) -> bytes:
    return zstd.compress(data)


@functools.cache
def br_bomb(inflated: int = 64 * MB) -> bytes:
    """A Brotli stream of `inflated` zero bytes (a few hundred bytes on the wire), compressed a MB at a time."""
    c = brotli.Compressor(quality=5)
    return b"".join(c.process(b"\0" * MB) for _ in range(inflated // MB)) + c.finish()


@functools.cache
def zstd_bomb(inflated: int = 64 * MB) -> bytes:
    """A zstd stream of `inflated` zero bytes (about 1/30 000 of that on the wire)."""
    c = zstd.ZstdCompressor(level=3)
    return b"".join(c.compress(b"\0" * MB) for _ in range(inflated // MB)) + c.flush()


def decode_all(decoder: Identity, data: bytes, chunk: int, max_len: int) -> bytes:
    """Feed `data` `chunk` bytes at a time, reading `max_len` at most per read (checked), to the end."""
    out = bytearray()
    for i in range(0, len(data), chunk):
        decoder.feed(data[i:i + chunk])
        while part := decoder.read(max_len):
            assert len(part) <= max_len
            out += part
    return bytes(out)


# ---------------------------------------------------------------- decoders


@pytest.mark.parametrize("coding", ["gzip", "deflate", "br", "zstd", "gzip, br", "br, zstd", "zstd, gzip, br"])
@pytest.mark.parametrize(("chunk", "max_len"), [(1, 1), (7, 100), (64 * 1024, MB)])
def test_codings_decode_in_bounded_steps(coding: str, chunk: int, max_len: int) -> None:
    import zlib

    encode = {"gzip": gzip.compress, "deflate": zlib.compress, "br": br, "zstd": zst}
    data = HTML
    for name in coding.split(", "):  # applied in the order the header lists them
        data = encode[name](data)
    decoder = decoder_for(coding.upper())
    assert decoder.compressed
    assert decode_all(decoder, data, chunk, max_len) == HTML
    assert decoder.complete()


@pytest.mark.parametrize(("coding", "bomb"), [("br", br_bomb), ("zstd", zstd_bomb)])
def test_a_bomb_never_gives_more_than_asked(coding: str, bomb: object) -> None:
    decoder = decoder_for(coding)
    decoder.feed(bomb())  # type: ignore[operator]
    got = 0
    for _ in range(10):
        part = decoder.read(4096)
        assert 0 < len(part) <= 4096
        got += len(part)
    assert got == 40960 and not decoder.complete()


@pytest.mark.parametrize("coding", ["br", "zstd", "gzip, br"])
def test_a_stream_that_does_not_decode_names_its_coding(coding: str) -> None:
    decoder = decoder_for(coding)
    decoder.feed(b"this is no compressed stream at all, just words" * 20)
    with pytest.raises(DecodingError, match=rf"content decoding error( \({coding.split(', ')[-1]}\))?:"):
        decoder.read(MB)


@pytest.mark.parametrize(("coding", "encode"), [("br", br), ("zstd", zst)])
def test_half_a_stream_is_not_complete(coding: str, encode: object) -> None:
    data = encode(os.urandom(4000))  # type: ignore[operator]
    decoder = decoder_for(coding)
    decode_all(decoder, data[: len(data) // 2], 100, MB)
    assert not decoder.complete()


def test_zstd_frames_follow_each_other_and_large_windows_are_refused() -> None:
    decoder = decoder_for("zstd")
    assert decode_all(decoder, zst(b"one ") + zst(b"two"), 3, 10) == b"one two" and decoder.complete()
    wide = zstd.ZstdCompressor(options={zstd.CompressionParameter.window_log: 25})  # 32 MB: RFC 9659 says 8 at most
    decoder = decoder_for("zstd")
    decoder.feed(wide.compress(HTML) + wide.flush())
    with pytest.raises(DecodingError, match="zstd"):
        decoder.read(MB)


def test_unknown_codings_keep_the_body_as_sent_and_accept_encoding_names_what_decodes() -> None:
    assert not decoder_for("gzip, compress").compressed and not decoder_for("identity").compressed
    assert not decoder_for(None).compressed and decoder_for("identity, br").compressed
    assert accept_encoding() == "gzip, deflate, br, zstd"


# ---------------------------------------------------------------- fetched, in process


def _encoded(body: bytes, coding: str) -> Callable[[Exchange], object]:
    return lambda ex: ex.respond(200, body, {"Content-Encoding": coding})


ROUTES = {
    "/robots.txt": lambda ex: ex.respond(200, ROBOTS, {"Content-Type": "text/plain"}),
    "/plain": lambda ex: ex.respond(200, HTML),
    "/br": _encoded(br(HTML), "br"),
    "/zstd": _encoded(zst(HTML), "zstd"),
    "/gzip-br": _encoded(br(gzip.compress(HTML)), "gzip, br"),
    "/br-bomb": lambda ex: ex.respond(200, br_bomb(), {"Content-Encoding": "br"}),
    "/zstd-bomb": lambda ex: ex.respond(200, zstd_bomb(), {"Content-Encoding": "zstd"}),
    "/bad-br": _encoded(b"no brotli here, only words " * 40, "br"),
    "/bad-zstd": _encoded(b"no zstd here, only words " * 40, "zstd"),
}


@pytest.fixture(scope="module")
def server() -> Iterator[HostileServer]:
    br_bomb(), zstd_bomb()  # built before any request waits for them
    with HostileServer(ROUTES) as s:
        yield s


def test_br_zstd_and_a_chain_are_fetched_decoded(server: HostileServer) -> None:
    protocol = HttpProtocol(HttpSettings(agent="t"))
    for path in ("/br", "/zstd", "/gzip-br"):
        out = protocol.fetch(server.url(path))
        assert (out.code, out.content, out.truncated) == (P.SUCCESS, HTML, False), path
    assert server.requests("/br")[0].headers["Accept-Encoding"] == "gzip, deflate, br, zstd"


@pytest.mark.parametrize("path", ["/br-bomb", "/zstd-bomb"])
@pytest.mark.parametrize(("content_limit", "cut_at"), [(MB, MB), (-1, 2 * MB)])
def test_bombs_are_cut_at_the_limit_in_flat_memory(server: HostileServer, path: str, content_limit: int,
                                                   cut_at: int) -> None:
    """64 MiB of zeros: cut at http.content.limit, or at http.content.inflate.limit when the content limit is off."""
    protocol = HttpProtocol(HttpSettings(agent="t", content_limit=content_limit, inflate_limit=2 * MB))
    tracemalloc.start()
    try:
        out = protocol.fetch(server.url(path))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert out.code == P.SUCCESS and out.truncated
    assert len(out.content) == cut_at and out.content.count(0) == cut_at
    assert peak < 6 * cut_at + 4 * MB, f"peak memory {peak}"


@pytest.mark.parametrize(("path", "coding"), [("/bad-br", "br"), ("/bad-zstd", "zstd")])
def test_a_body_that_does_not_decode_is_a_failed_fetch(server: HostileServer, path: str, coding: str) -> None:
    out = HttpProtocol(HttpSettings(agent="t")).fetch(server.url(path))
    assert out.code == P.EXCEPTION and out.args[0].startswith(f"content decoding error ({coding}): ")


# ---------------------------------------------------------------- through the CLI

CRAWL = "encodings"


def _nutch(tmp: Path, *args: object, **props: object):
    return nutch2(*args, "-crawlId", CRAWL, *defines(tmp, "sqlite", **props), timeout=120)


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_encoded_pages_parse_to_the_plain_text_and_bombs_are_counted(tmp_path: Path, server: HostileServer) -> None:
    """inject, generate, fetch, parse: br, zstd and gzip-then-br pages have the plain page's title, text and
    outlinks; the two bombs are stored cut at http.content.limit (1 MiB) and skipped by parse as truncated
    (skipped_truncated=2); streams that do not decode are failed fetches naming the coding."""
    props = {"fetcher.server.delay": 0.05}
    paths = ["/plain", "/br", "/zstd", "/gzip-br", "/br-bomb", "/zstd-bomb", "/bad-br", "/bad-zstd"]
    (tmp_path / "seeds.txt").write_text("".join(server.url(p) + "\n" for p in paths))
    assert _nutch(tmp_path, "inject", tmp_path / "seeds.txt", **props).returncode == 0
    batch = _nutch(tmp_path, "generate", **props).stdout.strip()
    fetched = _nutch(tmp_path, "fetch", batch, "-threads", 2, **props)
    assert fetched.returncode == 0, fetched.stderr
    parsed = _nutch(tmp_path, "parse", batch, **props)
    assert parsed.returncode == 0, parsed.stderr
    assert "skipped_truncated=2" in parsed.stderr, parsed.stderr
    got = rows(conf_for(tmp_path, "sqlite", **props), CRAWL)
    plain = got[reverse_url(server.url("/plain"))]
    assert plain.parse_status.major_code == ParseMajor.SUCCESS and plain.title == "Encoded"
    for path in ("/br", "/zstd", "/gzip-br"):
        page = got[reverse_url(server.url(path))]
        assert (page.status, page.content, page.title, page.text) == (CrawlStatus.FETCHED, HTML, plain.title,
                                                                        plain.text), path
        assert set(page.outlinks) == {server.url("/next")}
    for path in ("/br-bomb", "/zstd-bomb"):
        page = got[reverse_url(server.url(path))]
        assert page.status == CrawlStatus.FETCHED and len(page.content) == MB, path
        assert (page.parse_status.major_code, page.parse_status.minor_code) == (ParseMajor.NOTPARSED,
                                                                                ParseMinor.FAILED_TRUNCATED)
    for path, coding in (("/bad-br", "br"), ("/bad-zstd", "zstd")):
        page = got[reverse_url(server.url(path))]
        assert page.protocol_status.code == P.EXCEPTION and Mark.FETCH.check(page) == batch, path
        assert page.protocol_status.args[0].startswith(f"content decoding error ({coding})")


# ---------------------------------------------------------------- HTTP/2

needs_h2 = pytest.mark.skipif(not all(importlib.util.find_spec(m) for m in ("httpcore", "h2", "hypercorn")),
                              reason="httpcore, h2 and hypercorn (test dependencies: nutch2[test]) are not installed")


def _site(other: str) -> dict[str, object]:
    """A small site: links, a redirect, a 404, a br page, a link to `other` (a host the guard refuses)."""
    page = tlsweb.page
    index = (b"<html><head><title>h2 home</title></head><body><a href='/a'>a</a> <a href='/b'>b</a> "
             b"<a href='/moved'>moved</a> <a href='/gone'>gone</a> <a href='" + other.encode() + b"'>other</a>"
             b"</body></html>")
    return {
        "/robots.txt": page(200, ROBOTS, {"content-type": "text/plain"}),
        "/": page(200, index),
        "/a": page(200, b"<html><head><title>A</title></head><body>page a <a href='/b'>b</a></body></html>"),
        "/b": page(200, br(b"<html><head><title>B</title></head><body>page b, brotli</body></html>"),
                   {"content-encoding": "br"}),
        "/moved": page(301, b"", {"location": "/a"}),
    }


@pytest.fixture
def tls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[tuple[Path, Path], list[str]]:
    """A certificate for three loopback hosts of their own, trusted by this process and the CLI it starts."""
    hosts = [tlsweb.new_host() for _ in range(3)]
    cert = tlsweb.make_cert(tmp_path / "tls", tuple(hosts))
    monkeypatch.setenv("SSL_CERT_FILE", str(cert[0]))
    return cert, hosts


def _h2(addresses: AddressPolicy | None = None, **kw: object) -> HttpProtocol:
    """A protocol with HTTP/2 on; closed before its server (a TLS server waits for its clients' goodbyes)."""
    return HttpProtocol(HttpSettings(agent="t", http2=True, **kw), addresses=addresses)  # type: ignore[arg-type]


def _comparable(page) -> tuple:
    return (page.status, page.protocol_status.code, list(page.protocol_status.args), page.content,
            sorted(page.outlinks or {}), page.title, page.text, page.parse_status.major_code)


@needs_h2
@pytest.mark.slow
@pytest.mark.timeout(180)
def test_a_crawl_over_http2_has_the_rows_of_one_over_http11(tmp_path: Path, tls) -> None:
    """`nutch2 crawl -rounds 3` twice, http.useHttp2 true then false, against one server offering h2 and
    http/1.1: the same rows (statuses, protocol statuses, content, outlinks, title, text), every request over the
    protocol asked for, and the link to a loopback host that is no seed refused in both (denied_address)."""
    cert, hosts = tls
    with tlsweb.TlsServer({}, cert, host=hosts[1]) as other:
        with tlsweb.TlsServer(_site(other.url("/")), cert, host=hosts[0]) as site:
            (tmp_path / "seeds.txt").write_text(site.url("/") + "\n")
            tables, versions = [], []
            for http2 in (True, False):
                data = tmp_path / ("h2" if http2 else "h1")
                props = {"http.useHttp2": http2, "fetcher.server.delay": 0.05}
                done = nutch2("crawl", tmp_path / "seeds.txt", "-crawlId", CRAWL, "-rounds", 3,
                              *defines(data, "sqlite", **props), timeout=150)
                assert done.returncode == 0, done.stderr
                assert "denied_address=1" in done.stderr, done.stderr
                tables.append({k: _comparable(p) for k, p in rows(conf_for(data, "sqlite", **props), CRAWL).items()})
                versions.append({r.http_version for r in site.requests()})
                site.log.clear()
            assert other.requests() == []
    assert versions == [{"2"}, {"1.1"}]
    assert tables[0] == tables[1]
    home = tables[0][reverse_url(site.url("/"))]
    assert home[0] == CrawlStatus.FETCHED and home[5] == "h2 home"
    assert tables[0][reverse_url(site.url("/b"))][5] == "B"
    assert tables[0][reverse_url(other.url("/"))][1] == P.ACCESS_DENIED


@needs_h2
def test_a_guarded_address_is_refused_over_http2(tls) -> None:
    """The guard checks the address connected to: no connection to a loopback host the policy does not allow,
    over HTTP/2 as over HTTP/1.1; allowed, the same URL is fetched over HTTP/2."""
    cert, hosts = tls
    with tlsweb.TlsServer({"/": tlsweb.page(200, HTML)}, cert, host=hosts[0]) as site:
        with closing(_h2(addresses=AddressPolicy())) as protocol:
            out = protocol.fetch(site.url("/"))
        assert out.code == P.ACCESS_DENIED and out.args[0].startswith(f"denied address {site.host} ")
        assert site.requests() == []
        with closing(_h2(addresses=AddressPolicy(origins=frozenset({f"{site.host}:{site.port}"})))) as protocol:
            out = protocol.fetch(site.url("/"))
        assert (out.code, out.content) == (P.SUCCESS, HTML)
        assert [r.http_version for r in site.requests()] == ["2"]


@needs_h2
def test_certificates_are_verified_over_both_protocols(tls, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Trusting another certificate than the server's (SSL_CERT_FILE), neither HTTP/2 nor HTTP/1.1 fetches it: the
    one TLS context per process and trust store (tls.py) verifies as urllib3's own did."""
    cert, hosts = tls
    with tlsweb.TlsServer({"/": tlsweb.page(200, HTML)}, cert, host=hosts[0]) as site:
        monkeypatch.setenv("SSL_CERT_FILE", str(tlsweb.make_cert(tmp_path / "other", tuple(hosts))[0]))
        for http2 in (True, False):
            with closing(HttpProtocol(HttpSettings(agent="t", http2=http2))) as protocol:
                out = protocol.fetch(site.url("/"))
            assert out.code == P.EXCEPTION and "CERTIFICATE_VERIFY_FAILED" in out.args[0], (http2, out.args)
        assert site.requests() == []


@needs_h2
def test_a_stalled_http2_request_is_cut_at_the_total_deadline(tls) -> None:
    """http.timeout 2 s per read, 0.5 s in all: a server that sends no headers, on a connection kept from the
    request before, fails as "total fetch time exceeded" (a read timeout would say "timeout (read)" after 2 s),
    and a body trickled a byte at a time is cut and kept as truncated; the next request is not affected."""
    cert, hosts = tls
    routes = {"/ok": tlsweb.page(200, b"fine"), "/stall": tlsweb.trickle(head_first=False),
              "/trickle": tlsweb.trickle(head_first=True)}
    with tlsweb.TlsServer(routes, cert, host=hosts[0]) as site:
        with closing(_h2(timeout_ms=2000, max_fetch_ms=500)) as protocol:
            assert protocol.fetch(site.url("/ok")).content == b"fine"
            start = time.monotonic()
            out = protocol.fetch(site.url("/stall"))
            elapsed = time.monotonic() - start
            assert out.code == P.EXCEPTION and out.args == ["timeout (total fetch time exceeded)"]
            assert elapsed < 2.0  # cut at the deadline, before the read timeout
            out = protocol.fetch(site.url("/trickle"))
            assert out.code == P.SUCCESS and out.truncated and 0 < len(out.content) < 100_000
            assert protocol.fetch(site.url("/ok")).content == b"fine"
        assert {r.http_version for r in site.requests()} == {"2"}


@needs_h2
def test_http2_keeps_the_content_limit_auth_and_cookies(tls) -> None:
    """A body over http.content.limit is cut and its connection closed (the next request reads no leftover frames),
    while one read to its end, or a 304, leaves it for the next request; a 401 with a Basic challenge is answered
    from the credentials; a cookie set is sent back."""
    cert, hosts = tls

    async def auth(send, server) -> None:
        answered = server.requests()[-1].headers.get("authorization") == "Basic dTpw"  # u:p
        await tlsweb.page(200 if answered else 401, b"in" if answered else b"who?",
                          {} if answered else {"www-authenticate": 'Basic realm="r"'})(send, server)

    async def echo(send, server) -> None:
        await tlsweb.page(200, server.requests()[-1].headers.get("cookie", "").encode())(send, server)

    routes = {"/big": tlsweb.page(200, b"a" * (3 * MB)), "/ok": tlsweb.page(200, b"fine"), "/auth": auth,
              "/set": tlsweb.page(200, b"set", {"set-cookie": "session=s1; Path=/"}), "/echo": echo,
              "/same": tlsweb.page(304, b"", {"etag": '"e"'})}
    with tlsweb.TlsServer(routes, cert, host=hosts[0]) as site:
        creds = Credentials("u", "p", (AuthScope(host=site.host),))
        with closing(_h2(content_limit=MB, auth=(creds,), cookies=True)) as protocol:
            out = protocol.fetch(site.url("/big"))
            assert out.code == P.SUCCESS and out.truncated and out.content == b"a" * MB
            assert protocol.fetch(site.url("/ok")).content == b"fine"
            assert protocol.fetch(site.url("/same"), etag='"e"').code == P.NOTMODIFIED
            assert protocol.fetch(site.url("/ok")).content == b"fine"
            ports = [r.client_port for r in site.requests()]
            assert ports[0] != ports[1] == ports[2] == ports[3]  # a new connection after the cut one only
            out = protocol.fetch(site.url("/auth"))
            assert (out.http_code, out.content) == (200, b"in")
            assert protocol.fetch(site.url("/set")).content == b"set"
            assert protocol.fetch(site.url("/echo")).content == b"session=s1"
        assert {r.http_version for r in site.requests()} == {"2"}


@needs_h2
def test_a_server_that_chooses_http11_and_a_proxy_get_http11(tls) -> None:
    """ALPN: a server offering only http/1.1 is fetched over HTTP/1.1 (and remembered); through an HTTP proxy
    (CONNECT) an https URL goes over HTTP/1.1 as well."""
    from nutch2.plugins.protocol_http import http2
    from tests.proxy import ForwardProxy

    cert, hosts = tls
    with tlsweb.TlsServer({"/": tlsweb.page(200, HTML)}, cert, host=hosts[0], alpn=("http/1.1",)) as old, \
            tlsweb.TlsServer({"/": tlsweb.page(200, HTML)}, cert, host=hosts[1]) as site:
        with closing(_h2()) as protocol:
            assert [protocol.fetch(old.url("/")).content for _ in range(2)] == [HTML, HTML]
        assert [r.http_version for r in old.requests()] == ["1.1", "1.1"]
        assert (old.host, old.port) in http2._HTTP11_ORIGINS
        proxy = ForwardProxy()
        try:
            with closing(_h2(proxy=ProxySettings("127.0.0.1", proxy.port))) as protocol:
                out = protocol.fetch(site.url("/"))
            assert (out.code, out.content) == (P.SUCCESS, HTML)
            assert proxy.urls == [f"CONNECT {site.host}:{site.port}"]
            assert [r.http_version for r in site.requests()] == ["1.1"]
        finally:
            proxy.close()


def test_more_than_five_codings_in_a_row_are_refused_before_any_decoder_is_made() -> None:
    """Content-Encoding naming gzip 1,300,000 times (100 headers of 64 KB, which http.client accepts) built a decoder
    for each, GBs of memory, then recursed through them; more than five (curl's bound) are a failed fetch now, and
    five still decode."""
    body = HTML
    for _ in range(5):
        body = gzip.compress(body)
    assert decode_all(decoder_for("gzip, " * 4 + "gzip"), body, 4096, 65536) == HTML
    header = ", ".join(["gzip"] * 1_300_000)
    tracemalloc.start()
    try:
        with pytest.raises(DecodingError, match="more than 5 codings in a row"):
            decoder_for(header)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < MB

    def many(ex: Exchange) -> None:
        ex.respond(200, gzip.compress(body), {"Content-Encoding": "gzip, " * 2000 + "gzip"})

    with HostileServer({"/many": many}) as server:
        out = HttpProtocol(HttpSettings(agent="TestBot/1.0", timeout_ms=2000)).fetch(server.url("/many"))
    assert out.code == P.EXCEPTION and out.http_code == 200
    assert out.args == ["content decoding error: more than 5 codings in a row"]
