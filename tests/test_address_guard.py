"""The crawler cannot be turned against its own machine (nutch2/fetch/addresses.py): a site on the test web links,
redirects, refreshes, posts forms and lists sitemaps pointing at a canary service on this machine's loopback (as
Solr's admin API is), in every spelling of its address; a rendered page loads scripts, styles, an iframe and a
fetch() from it. With the defaults the canary gets no request at all, robots.txt included; the same host seeded,
or listed in fetcher.address.allow, is crawled. A rendered page's loads of paths the URL filters deny never reach
the site either."""

from __future__ import annotations

import re
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import requests

from nutch2.status import CrawlStatus, ProtocolStatusCode
from nutch2.urls.tableutil import reverse_url
from tests.conftest import require_chromium
from tests.crawlutil import cli, conf_for, defines, rows, seed_file
from tests.searchapp import SOLR, SearchServer

pytestmark = pytest.mark.slow
SITE_HOST = "127.0.1.60"  # the attacker's site: on the test webs' network, which the tests list (crawlutil.defines)


class Recorder(ThreadingHTTPServer):
    """Answers every GET from `pages` (200 text/html, 404 else) and records each request's path."""

    daemon_threads = True

    def __init__(self, host: str, pages: dict[str, tuple[int, dict[str, str], bytes]],
                 family: socket.AddressFamily = socket.AF_INET) -> None:
        self.address_family = family
        super().__init__((host, 0), _Handler)
        self.pages = pages
        self.seen: list[str] = []

    @property
    def port(self) -> int:
        return self.server_address[1]

    def __enter__(self) -> Recorder:
        threading.Thread(target=self.serve_forever, args=(0.05,), daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()
        self.server_close()


class _Handler(BaseHTTPRequestHandler):
    server: Recorder

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - stdlib signature
        pass

    def do_GET(self) -> None:  # noqa: N802 - stdlib name
        self.server.seen.append(self.path)
        status, headers, body = self.server.pages.get(self.path.split("?", 1)[0], (404, {}, b"no"))
        self.send_response(status)
        for k, v in {"Content-Type": "text/html; charset=utf-8", **headers}.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def _ipv6() -> bool:
    try:
        with socket.socket(socket.AF_INET6) as s:
            s.bind(("::1", 0))
        return True
    except OSError:
        return False


@pytest.fixture
def canary() -> Iterator[tuple[Recorder, Recorder | None]]:
    """This machine's service (on loopback, v4 and v6): any request it gets is a failure of the guard."""
    page = (200, {}, b"<html><head><title>canary</title></head><body>a local service</body></html>")
    with Recorder("127.0.0.1", {"/": page, "/solr/admin/cores": page}) as v4:
        if _ipv6():
            with Recorder("::1", {"/": page}, socket.AF_INET6) as v6:
                yield v4, v6
        else:
            yield v4, None


def _attacker(canary4: Recorder, canary6: Recorder | None) -> dict[str, tuple[int, dict[str, str], bytes]]:
    p = canary4.port
    targets = [f"http://127.0.0.1:{p}/solr/admin/cores?action=UNLOAD&core=victim&deleteIndex=true",
               f"http://2130706433:{p}/decimal", f"http://0x7f000001:{p}/hex", f"http://0177.0.0.1:{p}/octal",
               f"http://127.1:{p}/short", f"http://localhost:{p}/name", f"http://[::ffff:127.0.0.1]:{p}/mapped"]
    if canary6 is not None:
        targets.append(f"http://[::1]:{canary6.port}/v6")
    links = "".join(f'<a href="{t}">t{i}</a> ' for i, t in enumerate(targets))
    body = (f"<html><head><title>attacker</title></head><body>{links}"
            f'<a href="/r301">r</a> <a href="/r302">r</a> <a href="/refresh">m</a>'
            f'<form action="http://127.0.0.1:{p}/form" method="get"><input name="q"></form></body></html>')
    return {
        "/": (200, {}, body.encode()),
        "/robots.txt": (200, {"Content-Type": "text/plain"},
                        f"User-agent: *\nDisallow:\nSitemap: http://127.0.0.1:{p}/sitemap.xml\n"
                        f"Sitemap: http://{SITE_HOST}:{{PORT}}/sitemap.xml\n".encode()),
        "/r301": (301, {"Location": f"http://127.0.0.1:{p}/moved"}, b""),
        "/r302": (302, {"Location": f"http://localhost:{p}/found"}, b""),
        "/refresh": (200, {}, f'<html><head><meta http-equiv="refresh" content="0; url=http://127.0.0.1:{p}/'
                              f'refreshed"></head><body>x</body></html>'.encode()),
        "/sitemap.xml": (200, {"Content-Type": "application/xml"},
                         ('<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
                          f"<url><loc>http://127.0.0.1:{p}/from-sitemap</loc></url></urlset>").encode()),
    }


@pytest.fixture
def site(canary: tuple[Recorder, Recorder | None]) -> Iterator[Recorder]:
    pages = _attacker(*canary)
    with Recorder(SITE_HOST, pages) as server:
        status, headers, robots = pages["/robots.txt"]
        pages["/robots.txt"] = (status, headers, robots.replace(b"{PORT}", str(server.port).encode()))
        yield server


@pytest.mark.timeout(300)
@pytest.mark.parametrize("redirects", [0, 3])
def test_nothing_reaches_this_machines_services(site: Recorder, canary: tuple[Recorder, Recorder | None],
                                                tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                redirects: int) -> None:
    """http.redirect.max 0 (redirects recorded, their targets fetched later) and 3 (followed inline)."""
    canary4, canary6 = canary
    d = defines(tmp_path, "sqlite", **{"http.redirect.max": redirects, "fetcher.server.delay": 0.05})
    crawl_id = f"ag{uuid.uuid4().hex[:8]}"
    home = f"http://{SITE_HOST}:{site.port}/"
    assert cli("crawl", seed_file(tmp_path, home), "-crawlId", crawl_id, "-rounds", "4", *d) == 0
    assert cli("sitemap", "-fromRobots", "-crawlId", crawl_id, *d) == 0  # robots.txt's and the site's sitemaps
    assert cli("crawl", seed_file(tmp_path, home), "-crawlId", crawl_id, "-rounds", "1", *d) == 0  # what they list
    err = capsys.readouterr().err
    assert canary4.seen == [] and (canary6 is None or canary6.seen == []), (canary4.seen, canary6 and canary6.seen)
    assert "/robots.txt" in site.seen and "/sitemap.xml" in site.seen  # the site itself was crawled
    denied = sum(int(n) for n in re.findall(r"denied_address=(\d+)", err))
    table = rows(conf_for(tmp_path, "sqlite"), crawl_id)
    refused = {k: p for k, p in table.items() if p.protocol_status.code == ProtocolStatusCode.ACCESS_DENIED}
    assert denied >= len(refused) >= 8, (denied, sorted(table))  # the sitemap job counts robots.txt refusals too
    assert "refused by the address guard (hosts of this machine or its network, which are not seeds); if they are " \
           "yours, list them in fetcher.address.allow" in err  # the fetch says why, not only a counter
    assert all(p.status == CrawlStatus.GONE and p.protocol_status.args[0].startswith("denied address ")
               and "(loopback" in p.protocol_status.args[0] for p in refused.values()), refused
    assert not any("/form" in k for k in table)  # form actions are no outlinks by default (Nutch's default)


@pytest.mark.timeout(300)
@pytest.mark.parametrize("how", ["seeded", "listed"])
def test_a_seeded_or_listed_local_host_is_crawled(canary: tuple[Recorder, Recorder | None], tmp_path: Path,
                                                  how: str) -> None:
    canary4, _ = canary
    local = f"http://127.0.0.1:{canary4.port}/"
    props = {"fetcher.server.delay": 0.05}
    if how == "listed":
        props["fetcher.address.allow"] = f"127.0.1.0/24,127.0.0.1:{canary4.port}"
    d = defines(tmp_path, "sqlite", **props)
    seeds = seed_file(tmp_path, local) if how == "seeded" else seed_file(tmp_path, f"http://{SITE_HOST}:1/x")
    crawl_id = f"al{uuid.uuid4().hex[:8]}"
    assert cli("inject", seeds, "-crawlId", crawl_id, *d) == 0
    if how == "listed":
        assert cli("inject", seed_file(tmp_path, local), "-crawlId", crawl_id, "-D", "inject.address.check.seconds=0",
                   *d) == 0  # not recorded as a seed (no time to resolve): let through by the list alone
    assert cli("crawl", seeds, "-crawlId", crawl_id, "-rounds", "1", *d) == 0
    assert "/" in canary4.seen and "/robots.txt" in canary4.seen
    page = rows(conf_for(tmp_path, "sqlite", **props), crawl_id)[reverse_url(local)]
    assert page.status == CrawlStatus.FETCHED


@pytest.mark.integration
@pytest.mark.timeout(300)
def test_a_rendered_pages_loads_obey_the_guard_and_the_url_filters(canary: tuple[Recorder, Recorder | None],
                                                                   tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    require_chromium()
    canary4, _ = canary
    c = f"http://127.0.0.1:{canary4.port}"
    page = (f'<html><head><title>app</title><script src="{c}/evil.js"></script>'
            f'<link rel="stylesheet" href="{c}/evil.css">'
            f'<script src="/private/secret.js"></script></head><body><div id="app">app</div>'
            f'<iframe src="{c}/frame"></iframe><img src="/private/pic.png">'
            f"<script>fetch('{c}/fetched').catch(() => 0); fetch('/private/data').catch(() => 0);</script>"
            '<script src="/ok.js"></script></body></html>').encode()
    pages = {"/": (200, {}, page), "/ok.js": (200, {"Content-Type": "text/javascript"},
                                             b"document.getElementById('app').textContent = 'rendered';")}
    conf_dir = tmp_path / "conf"
    conf_dir.mkdir()
    (conf_dir / "regex-urlfilter.txt").write_text("-/private/\n+.\n")  # a path the site's owner keeps out
    with Recorder(SITE_HOST, pages) as app:
        d = defines(tmp_path, "sqlite", **{"chromium.hosts": SITE_HOST, "page.load.delay": 0.3,
                                           "chromium.resources.types": "script,stylesheet,image,xhr,fetch,document",
                                           "fetcher.server.delay": 0.05})
        crawl_id = f"ac{uuid.uuid4().hex[:8]}"
        assert cli("--conf", conf_dir, "crawl", seed_file(tmp_path, f"http://{SITE_HOST}:{app.port}/"), "-crawlId",
                   crawl_id, "-rounds", "1", *d) == 0
        seen = list(app.seen)
    assert canary4.seen == [], canary4.seen
    assert "/ok.js" in seen and not [s for s in seen if s.startswith("/private/")], seen
    err = capsys.readouterr().err  # each refused load is counted, by its reason
    counted = {name: sum(int(n) for n in re.findall(rf"chromium_resources_{name}=(\d+)", err))
               for name in ("denied_address", "filtered")}
    assert counted["denied_address"] >= 2 and counted["filtered"] >= 2, (counted, err[-2000:])
    row = rows(conf_for(tmp_path, "sqlite"), crawl_id)[reverse_url(f"http://{SITE_HOST}:{app.port}/")]
    assert b"rendered" in row.content  # the page ran its allowed script


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_seeds_sent_to_the_job_api_get_no_pass(canary: tuple[Recorder, Recorder | None], tmp_path: Path) -> None:
    """A job API client is not the server's operator: a seed it sends on this machine gets no pass through the
    guard (the CLI's inject gives its user's seeds one); the server's fetcher.address.allow still lets hosts in."""
    canary4, _ = canary
    url = f"http://127.0.0.1:{canary4.port}/solr/admin/cores?action=UNLOAD&core=victim&deleteIndex=true"
    crawl_id = f"aj{uuid.uuid4().hex[:8]}"
    d = defines(tmp_path, "sqlite", **{"inject.address.check.seconds": 5})
    # the server needs an index to search; a crawl job without -solr never sends it anything
    with SearchServer(["-crawlId", crawl_id, "-solr", SOLR, "-jobs", *d], tmp_path / "server.log") as server:
        r = requests.post(f"{server.url}/api/jobs", timeout=30,
                          json={"type": "crawl", "args": {"seedUrls": [url], "rounds": 1}})
        assert r.status_code == 201, r.text
        deadline = time.monotonic() + 120
        while (info := requests.get(f"{server.url}/api/jobs/{r.json()['id']}", timeout=30).json())["state"] == \
                "RUNNING" and time.monotonic() < deadline:
            time.sleep(0.2)
    assert info["state"] == "FINISHED", info
    assert canary4.seen == [], canary4.seen
    assert info["counters"]["fetch"]["denied_address"] == 1, info["counters"]
    page = rows(conf_for(tmp_path, "sqlite"), crawl_id)[reverse_url(url)]
    assert page.protocol_status.code == ProtocolStatusCode.ACCESS_DENIED
    assert "inject.seeds.allow.local is false" in server.output()


@pytest.mark.timeout(300)
def test_a_refused_seed_is_fetched_once_the_guard_lets_it_through(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """The fetch's warning says to list a refused host in fetcher.address.allow: the same crawl run again with
    it listed fetches the seed at once (inject reopens a row the guard made GONE), not 45 days later."""
    page = (200, {}, b"<html><head><title>intranet</title></head><body>ours</body></html>")
    with Recorder("127.0.2.61", {"/": page}) as web:
        url = f"http://127.0.2.61:{web.port}/"
        seeds = seed_file(tmp_path, url)
        crawl_id = f"ar{uuid.uuid4().hex[:8]}"
        closed = defines(tmp_path, "sqlite", **{"inject.seeds.allow.local": "false", "fetcher.server.delay": 0.05})
        assert cli("crawl", seeds, "-crawlId", crawl_id, "-rounds", "1", *closed) == 0
        assert "list them in fetcher.address.allow" in capsys.readouterr().err
        assert web.seen == []
        assert rows(conf_for(tmp_path, "sqlite"), crawl_id)[reverse_url(url)].status == CrawlStatus.GONE
        opened = defines(tmp_path, "sqlite", **{"inject.seeds.allow.local": "false", "fetcher.server.delay": 0.05,
                                                "fetcher.address.allow": "127.0.1.0/24,127.0.2.61"})
        assert cli("crawl", seeds, "-crawlId", crawl_id, "-rounds", "1", *opened) == 0
        assert "reopened=1" in capsys.readouterr().err
        assert "/" in web.seen
        assert rows(conf_for(tmp_path, "sqlite"), crawl_id)[reverse_url(url)].status == CrawlStatus.FETCHED
        # a row the guard did not refuse stays as it was when its seed is injected again
        assert cli("inject", seeds, "-crawlId", crawl_id, *opened) == 0
        assert "known=1" in capsys.readouterr().err
