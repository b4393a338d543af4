"""Crawls beyond HTML (issue 25) on the test web's beyond_html hosts, against the real Tika server, Debian's
chromium and the real Solr core of NUTCH2_SOLR_URL: documents found by a Solr search, links written by script
crawled only with protocol-chromium, hosts behind Basic and Digest authentication, a page behind a cookie, every
request through a counting proxy, credentials nowhere they are kept, hostile pages for a browser."""

from __future__ import annotations

import collections
import gzip
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import requests

from nutch2.status import CrawlStatus, ParseMajor, ProtocolStatusCode
from nutch2.urls.tableutil import reverse_url
from tests.conftest import require_chromium, require_solr, require_tika
from tests.crawlutil import cli, conf_for, defines, rows, seed_file
from tests.documents import DOCUMENT_TYPES, LINKING_KINDS
from tests.proxy import ForwardProxy
from tests.testweb import TestWeb
from tests.testweb_beyond import BROWSER_HOSTILE, DOC_AUTHOR

pytestmark = [pytest.mark.integration, pytest.mark.slow]


@pytest.fixture(scope="module")
def web():
    with TestWeb(hosts=2, pages_per_host=2, traps=False, beyond_html=True) as w:
        yield w


def host_of(web: TestWeb, index: int | None) -> str:
    assert index is not None
    return web.hosts[index]


def select(solr: str, q: str, **params: object) -> dict:
    r = requests.get(f"{solr}/select", params={"q": q, "wt": "json", **params}, timeout=30)
    r.raise_for_status()
    return r.json()["response"]


def test_one_crawl_with_everything_on(web: TestWeb, tmp_path: Path) -> None:
    """parse-tika, protocol-chromium (the documents host and the Basic host rendered), the Basic and Digest hosts
    with their credentials, cookies and a proxy, in one crawl: each document's text is found by a Solr search, the
    scripted link is crawled, the protected pages are fetched, and every request the test web saw, robots.txt and
    the resources the browser asked for included, came through the proxy, which saw nothing else."""
    require_chromium()
    tika, solr = require_tika(), require_solr()
    # the core is shared (other tests, run side by side): this crawl's documents only
    requests.post(f"{solr}/update?commit=true", json={"delete": {"query": "crawlId:bh"}},
                  timeout=30).raise_for_status()
    proxy = ForwardProxy(("proxyuser", "proxy-S3cret-pw"))
    web.reset_log()
    resources_page = web.url(web.docs_host, BROWSER_HOSTILE["resources"])
    props = {"tika.server.url": tika, "chromium.hosts": f"{host_of(web, web.docs_host)},{host_of(web, web.basic_host)}",
             "http.redirect.max": 3, "http.enable.cookie.header": "true", "page.load.delay": 0.2,
             "http.auth.file": _auth_file(tmp_path, web), "http.proxy.host": "127.0.0.1", "http.proxy.port": proxy.port,
             "http.proxy.username": "proxyuser", "http.proxy.password": "proxy-S3cret-pw"}
    seeds = seed_file(tmp_path, web.url(web.docs_host, "/"), web.url(web.basic_host, "/"),
                      web.url(web.digest_host, "/"), resources_page)
    try:
        assert cli("crawl", seeds, "-crawlId", "bh", "-rounds", "3", "-solr", solr,
                   *defines(tmp_path, "sqlite", **props)) == 0
    finally:
        proxy.close()
    table = rows(conf_for(tmp_path, "sqlite"), "bh")
    for kind, spec in web.documents.items():
        page = table[reverse_url(spec.url)]
        assert page.status == CrawlStatus.FETCHED and page.parse_status.major_code == ParseMajor.SUCCESS, kind
        hits = select(solr, spec.unique_word, fl="url,title,type,meta_author,meta_language,meta_created",
                      fq="crawlId:bh")
        assert hits["numFound"] == 1, kind  # the document's own word finds the document
        doc = hits["docs"][0]
        assert doc["url"] == spec.url and doc["title"] == spec.title
        assert DOCUMENT_TYPES[kind][1] in doc["type"] and doc["meta_author"] == [DOC_AUTHOR]
        assert doc["meta_language"][0].startswith("en") and doc["meta_created"][0].startswith("2024-03-01")
        if kind in LINKING_KINDS:  # the document's link was followed
            assert table[reverse_url(spec.links[0])].status == CrawlStatus.FETCHED, kind
    for page_url, targets in web.scripted_links.items():
        assert table[reverse_url(page_url)].headers.get("X-Nutch2-Chromium") == "rendered"
        for target in targets:
            assert table[reverse_url(target)].status == CrawlStatus.FETCHED  # found only in the rendered DOM
            assert web.count(target) == 1
    inside = table[reverse_url(web.url(web.docs_host, "/docs/cookie/inside.html"))]
    assert inside.status == CrawlStatus.FETCHED and "Inside the cookie wall" in inside.title
    assert not any(k.lower() == "set-cookie" for k in inside.headers)  # the jar keeps cookies, rows do not
    for host in (web.basic_host, web.digest_host):  # fetched with their credentials (the Basic host rendered too)
        for path in ("/", "/p/1.html", "/p/2.html"):
            spec = web.pages[web.url(host, path)]
            page = table[reverse_url(spec.url)]
            assert page.status == CrawlStatus.FETCHED and spec.unique_word in page.text, spec.url
            assert (page.headers.get("X-Nutch2-Chromium") == "rendered") == (host == web.basic_host)
    # the browser's resources: what lib.js wrote was crawled; the other host's script was asked for
    assert table[reverse_url(resources_page)].headers.get("X-Nutch2-Chromium") == "rendered"
    assert table[reverse_url(web.url(web.docs_host, "/docs/from-lib.html"))].status == CrawlStatus.FETCHED
    browser_asked = [web.url(web.docs_host, "/docs/lib.js"), web.url(0, "/nothing.js")]
    assert all(web.count(u) == 1 for u in browser_asked)
    # every request the test web saw came through the proxy, and the proxy carried nothing else
    seen = collections.Counter(f"{r.host}:{web.port}{r.path}" for r in web.requests())
    assert collections.Counter(proxy.urls) == seen and proxy.refused == 0
    assert all(u.split("//", 1)[1] in proxy.urls for u in browser_asked)
    # the browser asked for nothing itself: every page was requested once, by the fetcher
    docs_ip = host_of(web, web.docs_host)
    paths = [r.path for r in web.requests(docs_ip) if r.path != "/robots.txt"]
    assert "/docs/scripted.html" in paths and paths.count("/docs/scripted.html") == 1


def test_without_tika_and_chromium(web: TestWeb, tmp_path: Path) -> None:
    home = web.url(web.docs_host, "/")
    assert cli("crawl", seed_file(tmp_path, home), "-crawlId", "bn", "-rounds", "3",
               *defines(tmp_path, "sqlite", **{"http.redirect.max": 3})) == 0
    table = rows(conf_for(tmp_path, "sqlite"), "bn")
    for target in (t for ts in web.scripted_links.values() for t in ts):
        assert reverse_url(target) not in table  # no browser: the script's link is never seen
    pdf = table[reverse_url(web.documents["pdf"].url)]
    assert pdf.parse_status.major_code == ParseMajor.SUCCESS and web.documents["pdf"].unique_word in pdf.text
    docx = table[reverse_url(web.documents["docx"].url)]
    assert docx.parse_status.major_code == ParseMajor.NOTPARSED  # only Tika reads it
    inside = table[reverse_url(web.url(web.docs_host, "/docs/cookie/inside.html"))]
    assert inside.status != CrawlStatus.FETCHED  # no cookie jar: the gate sends it round in circles


def _auth_file(tmp_path: Path, web: TestWeb) -> Path:
    (bu, bp), (du, dp) = web.basic_credentials, web.digest_credentials
    path = tmp_path / "httpclient-auth.xml"
    path.write_text(
        "<auth-configuration>"
        f'<credentials username="{bu}" password="{bp}"><authscope host="{host_of(web, web.basic_host)}" '
        f'port="{web.port}" realm="nutch2 basic" scheme="BASIC"/></credentials>'
        f'<credentials username="{du}" password="{dp}"><authscope host="{host_of(web, web.digest_host)}"/>'
        "</credentials></auth-configuration>")
    return path


def test_protected_hosts_through_a_proxy(web: TestWeb, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """With credentials every protected page is fetched; every request (robots.txt included) goes through the
    proxy but for the excepted host; no password is kept in the rows, the WARC export, the logs or Solr."""
    solr = require_solr()
    proxy_password = "proxy-S3cret-pw"
    proxy = ForwardProxy(("proxyuser", proxy_password))
    web.reset_log()
    seeds = seed_file(tmp_path, web.url(web.basic_host, "/"), web.url(web.digest_host, "/"),
                      web.url(0, "/"))
    props = {"http.auth.file": _auth_file(tmp_path, web), "http.proxy.host": "127.0.0.1",
             "http.proxy.port": proxy.port, "http.proxy.username": "proxyuser",
             "http.proxy.password": proxy_password, "http.proxy.exception.list": host_of(web, 0)}
    try:
        assert cli("crawl", seeds, "-crawlId", "ba", "-rounds", "2", "-solr", solr,
                   *defines(tmp_path, "sqlite", **props)) == 0
        table = rows(conf_for(tmp_path, "sqlite"), "ba")
        for host in (web.basic_host, web.digest_host):
            for path in ("/", "/p/1.html", "/p/2.html"):
                spec = web.pages[web.url(host, path)]
                page = table[reverse_url(spec.url)]
                assert page.status == CrawlStatus.FETCHED and spec.unique_word in page.text, spec.url
        served = {}
        for r in web.requests():
            key = f"{r.host}:{web.port}"
            served[key] = served.get(key, 0) + 1
        excepted = f"{host_of(web, 0)}:{web.port}"
        assert served.pop(excepted, 0) > 0 and excepted not in proxy.requests  # fetched directly
        assert proxy.requests == served and proxy.refused == 0  # everything else through the proxy
        # no password anywhere it could be kept
        out = tmp_path / "warc"
        assert cli("warc", out, "-all", "-crawlId", "ba", *defines(tmp_path, "sqlite")) == 0
        kept = b"".join(p.read_bytes() for p in (tmp_path / "crawl").rglob("*") if p.is_file())
        kept += b"".join(gzip.decompress(p.read_bytes()) for p in out.rglob("*.warc.gz"))
        logs = capsys.readouterr()
        kept += (logs.out + logs.err).encode()
        kept += requests.get(f"{solr}/select", params={"q": "*:*", "rows": 1000, "wt": "json"}, timeout=30).content
        for secret in (web.basic_credentials[1], web.digest_credentials[1], proxy_password):
            assert secret.encode() not in kept
    finally:
        proxy.close()


def test_protected_hosts_refuse_without_credentials(web: TestWeb, tmp_path: Path) -> None:
    seeds = seed_file(tmp_path, web.url(web.basic_host, "/"), web.url(web.digest_host, "/"))
    assert cli("crawl", seeds, "-crawlId", "bd", "-rounds", "1", *defines(tmp_path, "sqlite")) == 0
    table = rows(conf_for(tmp_path, "sqlite"), "bd")
    for host in (web.basic_host, web.digest_host):
        page = table[reverse_url(web.url(host, "/"))]
        assert page.status == CrawlStatus.GONE
        assert page.protocol_status.code == ProtocolStatusCode.ACCESS_DENIED and page.protocol_status.args == ["401"]


def test_hostile_pages_in_the_browser(web: TestWeb, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A script that never ends is cut at the page time limit and the DOM kept; windows, a navigation away and a
    download are blocked; a robots-disallowed script is never requested, an image is blocked by type, the allowed
    script is fetched once (politely) and what it writes is in the DOM. All reported as counters."""
    require_chromium()
    urls = {name: web.url(web.docs_host, path) for name, path in BROWSER_HOSTILE.items()}
    web.reset_log()
    # a page time of 8 s: the endless script is cut there, and a loaded machine (CI) still renders the other two
    props = {"chromium.hosts": host_of(web, web.docs_host), "chromium.page.timeout": 8, "page.load.delay": 0.5,
             "chromium.pool.size": 1, "chromium.js.heap.mb": 64}
    assert cli("inject", seed_file(tmp_path, *urls.values()), "-crawlId", "bx", *defines(tmp_path, "sqlite")) == 0
    d = defines(tmp_path, "sqlite", **props)
    assert cli("generate", "-topN", "10", "-crawlId", "bx", "-batchId", "B1", *d) == 0
    capsys.readouterr()
    assert cli("fetch", "B1", "-crawlId", "bx", *d) == 0
    summary = capsys.readouterr()
    text = summary.out + summary.err
    counters = dict(kv.split("=", 1) for kv in text.split() if "=" in kv and kv.split("=", 1)[1].isdigit())
    assert counters.get("chromium_rendered") == "3", text
    assert counters.get("chromium_scripts_terminated") == "1"
    assert int(counters.get("chromium_windows_blocked", "0")) >= 1
    assert int(counters.get("chromium_navigations_blocked", "0")) + int(
        counters.get("chromium_downloads_blocked", "0")) >= 1
    assert counters.get("chromium_resources_robots_denied") == "1"
    table = rows(conf_for(tmp_path, "sqlite"), "bx")
    endless = table[reverse_url(urls["endless_script"])]
    assert endless.status == CrawlStatus.FETCHED and b"before the endless script" in endless.content
    resources = table[reverse_url(urls["resources"])]
    assert b"/docs/from-lib.html" in resources.content  # what the allowed script wrote
    for path, times in (("/docs/private/secret.js", 0), ("/docs/pic.png", 0), ("/docs/lib.js", 1),
                        ("/docs/hostile/file.bin", 0)):
        assert web.count(web.url(web.docs_host, path)) == times, path
    assert web.count(web.url(0, "/nothing.js")) == 1  # another host's script: robots.txt allows it
    assert all(urlsplit(r.path).path != "/docs/after-pdf.html" for r in web.requests())  # no window opened
