"""Tests for the synthetic test web (tests/testweb.py) itself."""

from __future__ import annotations

import socket
import time
import zlib
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import urljoin, urlsplit

import lxml.html
import pytest
import requests

from tests.testweb import TRAP_LAYOUT, PageSpec, TestWeb


@pytest.fixture(scope="module")
def web() -> Iterator[TestWeb]:
    with TestWeb(hosts=4, pages_per_host=10, seed=7, slow_seconds=0.4, endless_interval=0.1) as w:
        yield w


def get(url: str, **kw: object) -> requests.Response:
    kw.setdefault("timeout", 5)
    kw.setdefault("allow_redirects", False)
    return requests.get(url, **kw)  # type: ignore[arg-type]


def extract_links(spec: PageSpec, body: bytes) -> list[str]:
    """Outlinks as a Nutch-style parser sees them: <base>, meta refresh and meta robots nofollow honoured."""
    doc = lxml.html.fromstring(body)
    robots = " ".join(doc.xpath("//meta[@name='robots']/@content")).lower()
    refresh = doc.xpath("//meta[@http-equiv='refresh']/@content")
    if refresh:
        return [urljoin(spec.url, refresh[0].split("url=", 1)[1])]
    if "nofollow" in robots:
        return []
    base = doc.xpath("//base/@href")
    base_url = urljoin(spec.url, base[0]) if base else spec.url
    out: list[str] = []
    for href in doc.xpath("//a/@href"):
        u = urljoin(base_url, href)
        if u not in out and u != spec.url:
            out.append(u)
    return out


def test_hosts_share_one_port(web: TestWeb) -> None:
    assert web.hosts[:5] == ["127.0.1.1", "127.0.1.2", "127.0.1.3", "127.0.1.4", "127.0.1.5"]
    assert len(web.hosts) == 5 and web.robots_503_host == 4
    assert web.seed_url == f"http://127.0.1.1:{web.port}/"
    assert web.base_url(2) == f"http://127.0.1.3:{web.port}"
    assert web.url(3, "p/2.html") == f"http://127.0.1.4:{web.port}/p/2.html"
    for h in range(4):
        r = get(web.url(h, "/"))
        assert r.status_code == 200 and f"Host {h} page 0" in r.text


def test_graph_is_deterministic() -> None:
    a = TestWeb(seed=3, traps=False)
    b = TestWeb(seed=3, traps=False)
    c = TestWeb(seed=4, traps=False)
    for w in (a, b, c):
        w.port = 8000
        w._build()
    assert {u: s.links for u, s in a.pages.items()} == {u: s.links for u, s in b.pages.items()}
    assert {u: s.links for u, s in a.pages.items()} != {u: s.links for u, s in c.pages.items()}
    assert len(a.pages) == 40


def test_served_html_matches_graph(web: TestWeb) -> None:
    words = {}
    for url, spec in web.pages.items():
        if spec.kind.startswith("hostile") or spec.kind == "robots_deferred" or spec.status != 200:
            continue
        r = get(url)
        assert r.status_code == 200, url
        assert r.headers["Content-Type"] == spec.content_type
        if spec.kind in ("png", "pdf"):
            assert spec.links == []
            continue
        if spec.kind != "charset":
            assert extract_links(spec, r.content) == spec.links, url
            assert f"<title>{spec.title}</title>" in r.content.decode("utf-8")
        if spec.unique_word:
            words[url] = spec.unique_word
            assert spec.unique_word.encode() in r.content or spec.charset == "utf-16"
    for url, word in words.items():  # unique words are unique (the duplicate pair shares one)
        sharing = {u for u, w in words.items() if w == word}
        assert sharing == {url} or web.pages[url].kind == "duplicate"
    page = get(web.page_url(3, 5)).content
    assert len(page) >= 2048


def test_robots(web: TestWeb) -> None:
    r0 = get(web.url(0, "/robots.txt"))
    assert r0.status_code == 200 and "Disallow: /private/" in r0.text
    assert "Crawl-delay: 1" in get(web.url(1, "/robots.txt")).text
    assert get(web.url(2, "/robots.txt")).status_code == 404
    assert get(web.url(3, "/robots.txt")).text == "User-agent: *\nDisallow:\n"
    assert get(web.url(4, "/robots.txt")).status_code == 503
    assert web.robots_allows(web.url(0, "/private/secret.html")) is False
    assert web.robots_allows(web.url(4, "/")) is None
    assert web.pages[web.url(0, "/private/secret.html")].expected == "GONE"


def test_redirects_errors_and_types(web: TestWeb) -> None:
    r = get(web.trap_url("/traps/redirect-301"))
    assert r.status_code == 301 and r.headers["Location"] == web.trap_url("/traps/moved-target.html")
    r = get(web.trap_url("/traps/redirect-302"))
    assert r.status_code == 302 and r.headers["Location"] == web.trap_url("/traps/temp-target.html")
    assert get(web.trap_url("/traps/missing.html")).status_code == 404
    assert get(web.trap_url("/traps/gone.html")).status_code == 410
    assert get(web.trap_url("/traps/error.html")).status_code == 500
    assert get(web.url(0, "/no/such/page")).status_code == 404
    png = get(web.trap_url("/traps/image.png"))
    assert png.headers["Content-Type"] == "image/png" and png.content.startswith(b"\x89PNG")
    assert get(web.trap_url("/traps/doc.pdf")).content.startswith(b"%PDF")
    a, b = get(web.trap_url("/traps/dup-a.html")), get(web.trap_url("/traps/dup-b.html"))
    assert a.content == b.content
    assert web.pages[web.trap_url("/traps/dup-b.html")].duplicate_of == web.trap_url("/traps/dup-a.html")
    for path, (kind, status, expected) in TRAP_LAYOUT.items():
        spec = web.pages[web.trap_url(path)]
        assert (spec.kind, spec.status, spec.expected) == (kind, status, expected)


def test_slow_page(web: TestWeb) -> None:
    t = time.monotonic()
    assert get(web.trap_url("/traps/slow.html")).status_code == 200
    assert time.monotonic() - t >= 0.4


def test_conditional_get(web: TestWeb) -> None:
    url = web.page_url(2, 4)
    r = get(url)
    etag, lm = r.headers["ETag"], r.headers["Last-Modified"]
    assert get(url, headers={"If-None-Match": etag}).status_code == 304
    assert get(url, headers={"If-Modified-Since": lm}).status_code == 304
    assert get(url, headers={"If-None-Match": '"other"'}).status_code == 200
    assert get(url, headers={"If-Modified-Since": "Mon, 01 Jan 2001 00:00:00 GMT"}).status_code == 200
    web.modify(url)
    r2 = get(url, headers={"If-None-Match": etag, "If-Modified-Since": lm})
    assert r2.status_code == 200 and r2.headers["ETag"] != etag and b"Revision 1" in r2.content
    assert get(url, headers={"If-Modified-Since": r2.headers["Last-Modified"]}).status_code == 304


@pytest.mark.parametrize(
    "path,encoding",
    [
        ("/traps/charset-utf8-header.html", "utf-8"),
        ("/traps/charset-cp1251-meta.html", "windows-1251"),
        ("/traps/charset-utf8-bom.html", "utf-8-sig"),
        ("/traps/charset-utf16-bom.html", "utf-16"),
        ("/traps/charset-sjis-http-equiv.html", "shift_jis"),
    ],
)
def test_charsets(web: TestWeb, path: str, encoding: str) -> None:
    spec = web.pages[web.trap_url(path)]
    r = get(spec.url)
    assert not spec.title.isascii()
    text = r.content.decode(encoding)
    assert f"<title>{spec.title}</title>" in text and spec.unique_word in text
    declared_in_header = "charset=" in r.headers["Content-Type"]
    assert declared_in_header == (path == "/traps/charset-utf8-header.html")
    if "bom" in path:
        assert "charset" not in text.lower()
    else:
        assert r.content.decode("ascii", "replace").lower().count(spec.charset.lower()) == (
            0 if declared_in_header else 1
        )


def test_meta_tags(web: TestWeb) -> None:
    assert b'content="noindex"' in get(web.trap_url("/traps/noindex.html")).content
    nofollow = get(web.trap_url("/traps/nofollow.html")).content
    assert b'content="nofollow"' in nofollow and b"nofollow-child.html" in nofollow
    assert web.pages[web.trap_url("/traps/nofollow.html")].links == []
    assert b'<base href="' in get(web.trap_url("/traps/base.html")).content


def test_crawl_model(web: TestWeb) -> None:
    rounds = web.reachable(rounds=3)
    assert rounds[1] == {web.seed_url}
    t = web.trap_url
    assert {t("/traps/redirect-301"), t("/traps/refresh.html"), t("/traps/slow.html")} <= rounds[2]
    assert {web.url(1, "/"), web.url(2, "/")} <= rounds[2]
    for target in (
        "moved-target.html",
        "temp-target.html",
        "refresh-target.html",
        "based/a.html",
        "noindex-child.html",
    ):
        assert t(f"/traps/{target}") in rounds[3]
    everything = web.reachable_within(10)
    assert t("/traps/nofollow-child.html") not in everything
    assert not {u for u in everything if "/private/" in u or web.hosts[4] in u}
    model = web.crawl_model(rounds=3)
    assert model.denied == {t("/private/secret.html"), t("/private/other.html")}
    assert model.deferred == {web.url(4, "/")} and model.outcomes[web.url(4, "/")] == "RETRY"
    assert model.outcomes[t("/traps/error.html")] == "RETRY"
    normal = {web.page_url(h, i) for h in range(4) for i in range(10)}
    assert normal <= web.reachable_within(40)
    limited = web.reachable(rounds=3, max_per_round=5)
    assert all(len(v) <= 5 for v in limited.values())


def test_request_log_and_concurrency(web: TestWeb) -> None:
    web.reset_log()
    url = web.trap_url("/traps/slow.html")
    with ThreadPoolExecutor(3) as pool:
        list(pool.map(lambda _: get(url).status_code, range(3)))
    get(web.page_url(1, 1))
    deadline = time.monotonic() + 5  # a request is logged once its response is written: the client may be first
    while len(web.requests()) < 4 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert web.count(url) == 3
    assert web.in_flight_max(0) >= 2 and web.in_flight_max(1) == 1 and web.in_flight_max(2) == 0
    recs = web.requests(host=0, path="/traps/slow.html")
    assert len(recs) == 3
    for rec in recs:
        assert rec.host == "127.0.1.1" and rec.method == "GET" and rec.status == 200
        assert rec.answered - rec.arrived >= 0.4
        assert "User-Agent" in rec.headers
    # this test's requests (a request an earlier test left in flight may be logged after reset_log)
    mine = [r for r in web.requests() if (r.host, r.path) in (("127.0.1.1", "/traps/slow.html"),
                                                               (web.hosts[1], urlsplit(web.page_url(1, 1)).path))]
    assert len(mine) == 4 and len([r for r in mine if r.host == "127.0.1.2"]) == 1
    web.reset_log()
    assert web.requests() == [] and web.in_flight_max(0) == 0


def test_hostile_pages_not_linked_by_default(web: TestWeb) -> None:
    hostile = set(web.hostile_urls().values())
    assert not hostile & set(web.pages)
    assert not hostile & web.reachable_within(10)


def test_hostile_pages(web: TestWeb) -> None:
    h = web.hostile_urls()
    with get(h["big"], stream=True) as r:
        assert int(r.headers["Content-Length"]) == 10 * 1024 * 1024
        assert r.raw.read(1000).startswith(b"<html>")
    with get(h["gzip_bomb"], stream=True) as r:
        assert r.headers["Content-Encoding"] == "gzip"
        assert 500_000 < int(r.headers["Content-Length"]) < 2_000_000
        raw = r.raw.read(20_000, decode_content=False)
    inflated = zlib.decompressobj(31).decompress(raw, 50 << 20)
    assert len(inflated) > 10 << 20 and not inflated.strip(b"\0")
    with get(h["endless"], stream=True) as r:
        t = time.monotonic()
        got = r.raw.read(60)
        assert len(got) == 60 and time.monotonic() - t < 3
    r = get(h["redirect_loop"])
    assert r.status_code == 301
    assert get(r.headers["Location"]).headers["Location"] == h["redirect_loop"]
    assert get(h["many_links"]).text.count("<a href=") == 10_000
    assert get(h["deep_nesting"]).text.count("<div>") == 100_000
    b = get(h["binary_html"])
    assert b.headers["Content-Type"] == "text/html" and len(b.content) == 65536
    assert get(web.seed_url).status_code == 200  # still serving after the abuse


def test_hostile_flag_links_them() -> None:
    w = TestWeb(hostile=True)
    w.port = 8000
    w._build()
    hostile = set(w.hostile_urls().values())
    assert hostile <= set(w.pages[w.seed_url].links)
    assert hostile <= w.reachable(rounds=2)[2]


def test_stop_frees_ports_quickly() -> None:
    w = TestWeb(hosts=3, pages_per_host=2, endless_interval=0.1).start()
    port = w.port
    r = requests.get(w.hostile_urls()["endless"], stream=True, timeout=5)
    r.raw.read(5)
    t = time.monotonic()
    w.stop()
    assert time.monotonic() - t < 2
    r.close()
    for ip in w.hosts:
        with socket.socket() as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind((ip, port))
    with pytest.raises(requests.ConnectionError):
        requests.get(w.seed_url, timeout=1)


def test_traps_need_three_hosts() -> None:
    with pytest.raises(ValueError):
        TestWeb(hosts=2)
    with TestWeb(hosts=1, pages_per_host=3, traps=False) as w:
        assert w.hosts == ["127.0.1.1"]
        assert w.reachable_within(5) == {w.page_url(0, i) for i in range(3)}


def test_the_test_web_serves_again_on_the_port_it_is_given() -> None:
    """`python -m tests.testweb --port P`: restarted on the port of an earlier start, the URLs a crawl knows work
    again; a port in use is said in one line."""
    import urllib.request

    from tests.testweb import TestWeb

    with TestWeb(hosts=3, pages_per_host=2) as first:
        port, seed = first.port, first.seed_url
    with TestWeb(hosts=3, pages_per_host=2, port=port) as again:
        assert again.port == port and again.seed_url == seed
        with urllib.request.urlopen(seed, timeout=10) as answer:  # noqa: S310 - the test web on loopback
            assert answer.status == 200
        with pytest.raises(RuntimeError, match="could not bind"):
            TestWeb(hosts=3, pages_per_host=2, port=port).start()
