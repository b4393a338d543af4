"""A crawl that revisits a changing web keeps the real OpenSearch index true (docker/services.sh start opensearch):
changed text replaced, gone and moved pages deleted, the moved page under its new URL, one copy of duplicates, and
a copy the index never holds (noindex) never pushing the page itself out."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from nutch2.index.solr import document_id
from nutch2.jobs.index import indexable
from nutch2.status import CrawlStatus
from nutch2.urls.tableutil import reverse_url
from tests.conftest import OPENSEARCH_URL as OS
from tests.crawlutil import cli, conf_for, defines, rows, seed_file
from tests.helpers import REPO

opensearchpy = pytest.importorskip("opensearchpy")

pytestmark = [pytest.mark.integration, pytest.mark.slow]

RUN = uuid.uuid4().hex[:8]
HOST = "127.0.1.231"


def html(title: str, words: str, *links: str) -> bytes:
    anchors = "".join(f'<a href="{link}">{link}</a> ' for link in links)
    return f"<html><head><title>{title}</title></head><body><p>{words}</p>{anchors}</body></html>".encode()


class ChangingWeb:
    """One host whose pages the test rewrites between rounds: path -> (status, body, extra headers)."""

    def __init__(self) -> None:
        self.pages: dict[str, tuple[int, bytes, dict[str, str]]] = {}
        web = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:  # noqa: N802
                if self.path == "/robots.txt":
                    status, body, headers = 200, b"User-agent: *\nDisallow:\n", {}
                else:
                    status, body, headers = web.pages.get(self.path, (404, b"not found", {}))
                    since = self.headers.get("If-Modified-Since")
                    if status == 200 and since and headers.get("Last-Modified") == since:  # unchanged since
                        status, body = 304, b""
                self.send_response(status)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if status != 304:
                    self.wfile.write(body)

        self.server = ThreadingHTTPServer((HOST, 0), Handler)
        self.base = f"http://{HOST}:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def url(self, path: str) -> str:
        return self.base + path

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def web() -> Iterator[ChangingWeb]:
    w = ChangingWeb()
    yield w
    w.close()


@pytest.fixture
def index(opensearch_up: str) -> Iterator[str]:
    name = f"nutch2-test-{RUN}-{uuid.uuid4().hex[:6]}"
    yield name
    opensearchpy.OpenSearch([OS], timeout=60).indices.delete(index=name, ignore_unavailable=True)


def documents(index: str) -> dict[str, dict[str, Any]]:
    c = opensearchpy.OpenSearch([OS], timeout=60)
    c.indices.refresh(index=index)
    hits = c.search(index=index, body={"query": {"match_all": {}}, "size": 1000})["hits"]["hits"]
    return {h["_source"]["url"]: h["_source"] for h in hits}


def found(index: str, word: str) -> set[str]:
    c = opensearchpy.OpenSearch([OS], timeout=60)
    c.indices.refresh(index=index)
    hits = c.search(index=index, body={"query": {"match": {"content": word}}})["hits"]["hits"]
    return {h["_source"]["url"] for h in hits}


def test_a_noindex_copy_does_not_push_the_page_out_of_the_index(web: ChangingWeb, index: str,
                                                                tmp_path: Path) -> None:
    """/p.html serves the article's bytes with X-Robots-Tag: noindex and outranks it (a seed): dedup kept it as the
    original, the article became DUPLICATE and clean deleted it, so its words were found nowhere."""
    article = html("article", "canonword the real article")
    web.pages = {"/": (200, html("home", "home", "/article.html", "/p.html"), {}),
                 "/article.html": (200, article, {}),
                 "/p.html": (200, article, {"X-Robots-Tag": "noindex"})}
    crawl_id = f"rn{RUN}"
    assert cli("crawl", seed_file(tmp_path, web.url("/"), web.url("/p.html")), "-crawlId", crawl_id,
               "-rounds", "2", "-opensearch", f"{OS}/{index}", *defines(tmp_path, "sqlite")) == 0
    table = rows(conf_for(tmp_path, "sqlite"), crawl_id)
    assert table[reverse_url(web.url("/article.html"))].status == CrawlStatus.FETCHED
    assert found(index, "canonword") == {web.url("/article.html")}


def test_a_page_back_after_a_410_is_indexed_with_its_text(web: ChangingWeb, index: str, tmp_path: Path) -> None:
    """A page answers 410, then is back unchanged (the same Last-Modified). The row kept the 410's body as content
    and the fetch asked If-Modified-Since its old date: the 304 made the parse index the error's body ("gone")."""
    dated = {"Last-Modified": "Tue, 14 Nov 2023 22:13:20 GMT"}
    page = (200, html("article", "restoredword the article"), dated)
    web.pages = {"/": (200, html("home", "home", "/page.html"), {}), "/page.html": page}
    crawl_id = f"rg{RUN}"
    d = defines(tmp_path, "sqlite", **{"db.fetch.interval.default": 1, "fetcher.server.delay": 0})
    seeds = seed_file(tmp_path, web.url("/"))
    url = web.url("/page.html")
    assert cli("crawl", seeds, "-crawlId", crawl_id, "-rounds", "2", "-opensearch", f"{OS}/{index}", *d) == 0
    assert found(index, "restoredword") == {url}
    web.pages["/page.html"] = (410, b"gone", {})
    time.sleep(1.1)
    assert cli("crawl", seeds, "-crawlId", crawl_id, "-rounds", "1", "-opensearch", f"{OS}/{index}", *d) == 0
    assert rows(conf_for(tmp_path, "sqlite"), crawl_id)[reverse_url(url)].status == CrawlStatus.GONE
    assert url not in documents(index)
    web.pages["/page.html"] = page
    time.sleep(1.1)
    assert cli("crawl", seeds, "-crawlId", crawl_id, "-rounds", "1", "-opensearch", f"{OS}/{index}", *d) == 0
    assert found(index, "restoredword") == {url}
    assert documents(index)[url]["title"] == "article"


def test_revisits_keep_the_index_to_the_live_pages(web: ChangingWeb, index: str, tmp_path: Path) -> None:
    """Round after round with the web changing in between: the index holds exactly the indexable rows, with the
    text the page has now."""
    links = ("/news.html", "/gone.html", "/old.html", "/a.html", "/b.html")
    web.pages = {"/": (200, html("home", "home", *links), {}),
                 "/news.html": (200, html("news", "newsword firstedition"), {}),
                 "/gone.html": (200, html("gone", "vanishword"), {}),
                 "/old.html": (200, html("old", "placeword oldplace"), {}),
                 "/a.html": (200, html("a", "sharedword one copy"), {}),
                 "/b.html": (200, html("b", "beeword own text"), {})}
    crawl_id = f"rv{RUN}"
    d = defines(tmp_path, "sqlite", **{"db.fetch.interval.default": 1, "db.fetch.interval.max": 60,
                                       "db.fetch.schedule.class": "adaptive",
                                       "db.fetch.schedule.adaptive.min_interval": 1,
                                       "db.fetch.schedule.adaptive.sync_delta": "false",
                                       "fetcher.server.delay": 0})
    seeds = seed_file(tmp_path, web.url("/"))

    def crawl(rounds: int) -> dict[str, Any]:
        time.sleep(1.1)  # every row due again (interval 1 s): the rounds are revisits
        assert cli("crawl", seeds, "-crawlId", crawl_id, "-rounds", str(rounds), "-opensearch", f"{OS}/{index}",
                   *d) == 0
        table = rows(conf_for(tmp_path, "sqlite"), crawl_id)
        docs = documents(index)
        assert {document_id(crawl_id, reverse_url(u)) for u in docs} == \
            {document_id(crawl_id, k) for k, p in table.items() if indexable(p)}
        return docs

    docs = crawl(2)
    assert set(docs) == {web.url(p) for p in ("/", *links)}
    web.pages.update({"/news.html": (200, html("news", "newsword secondedition"), {}),
                      "/gone.html": (404, b"gone", {}),
                      "/old.html": (301, b"moved", {"Location": web.url("/new.html")}),
                      "/new.html": (200, html("new", "placeword newplace"), {}),
                      "/b.html": (200, html("a", "sharedword one copy"), {})})
    docs = crawl(2)
    copies = {web.url("/a.html"), web.url("/b.html")}
    assert set(docs) - copies == {web.url(p) for p in ("/", "/news.html", "/new.html")}
    assert len(set(docs) & copies) == 1  # one copy of the duplicates
    assert "secondedition" in docs[web.url("/news.html")]["content"]
    assert found(index, "firstedition") == set() and found(index, "vanishword") == set()
    assert found(index, "placeword") == {web.url("/new.html")}


@pytest.mark.parametrize("pipeline", [False, True])
def test_a_continuous_crawl_deletes_gone_pages_while_it_runs(web: ChangingWeb, index: str, tmp_path: Path,
                                                             pipeline: bool) -> None:
    """dedup and clean ran only when the crawl command ended: a `crawl -continuous` (the compose file's crawler)
    never ends, so a page gone 404 stayed in the index for good."""
    web.pages = {"/": (200, html("home", "home", "/gone.html"), {}),
                 "/gone.html": (200, html("gone", "vanishword"), {})}
    crawl_id = f"rc{RUN}"
    d = defines(tmp_path, "sqlite", **{"db.fetch.interval.default": 1, "fetcher.server.delay": 0,
                                       "crawl.continuous.dedup.minutes": 0, "crawl.continuous.gather.seconds": 0,
                                       "crawl.pipeline": pipeline})
    seeds = seed_file(tmp_path, web.url("/"))
    proc = subprocess.Popen([sys.executable, "-m", "nutch2.cli", "crawl", str(seeds), "-crawlId", crawl_id,
                             "-continuous", "-opensearch", f"{OS}/{index}", *d], cwd=REPO,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)

    def until(what: Any, timeout: float = 60) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                if what():
                    return True
            except opensearchpy.NotFoundError:  # the index is made by the crawl's first index step
                pass
            time.sleep(0.5)
        return False

    try:
        assert until(lambda: found(index, "vanishword") == {web.url("/gone.html")})
        web.pages["/gone.html"] = (404, b"gone", {})
        assert until(lambda: found(index, "vanishword") == set())  # deleted with the crawl still running
        assert proc.poll() is None
    finally:
        proc.kill()
        proc.wait()


@pytest.mark.parametrize("pipeline", [False, True])
def test_a_continuous_crawl_dedups_at_most_every_dedup_minutes(web: ChangingWeb, index: str, tmp_path: Path,
                                                               pipeline: bool) -> None:
    """dedup and clean each read the whole table: a continuous crawl's rounds of a few rows each would scan it every
    round. With the defaults they follow the first round's index, then not again within 30 minutes (pipelined:
    once a round took every due row, its tail ended)."""
    web.pages = {"/": (200, html("home", "home", "/a.html"), {}), "/a.html": (200, html("a", "aword"), {})}
    d = defines(tmp_path, "sqlite", **{"db.fetch.interval.default": 1, "fetcher.server.delay": 0,
                                       "crawl.continuous.gather.seconds": 0, "crawl.pipeline": pipeline})
    proc = subprocess.Popen([sys.executable, "-m", "nutch2.cli", "crawl", str(seed_file(tmp_path, web.url("/"))),
                             "-crawlId", f"rd{RUN}", "-continuous", "-opensearch", f"{OS}/{index}", *d], cwd=REPO,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    log = tmp_path / "crawl" / "logs" / "hadoop.log"
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None and \
                (not log.exists() or log.read_text(errors="replace").count("index: finished") < 4):
            time.sleep(0.5)
    finally:
        proc.terminate()
        err = proc.communicate(timeout=60)[1]
    assert err.count("index: finished") >= 4, err[-3000:]
    assert err.count("dedup: finished") == 1, err[-3000:]
