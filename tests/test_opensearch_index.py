"""Integration tests of indexer-opensearch-1x against the real OpenSearch (docker/services.sh start opensearch): a
crawl indexed into it, Chinese found, Solr and OpenSearch filled at once, and the hostile cases — the cluster
stopped mid-index, a storm of 429s, a 10 MB document, a mapping conflict, a dead cluster — each ending in one line
with nothing lost."""

from __future__ import annotations

import http.client
import os
import re
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import requests

from nutch2.index.filters import IndexingFilter
from nutch2.index.solr import crawl_filter, document_id
from nutch2.index.writers import writer_mark
from nutch2.jobs.index import indexable
from nutch2.urls.tableutil import reverse_url
from tests.conftest import OPENSEARCH_URL as OS
from tests.conftest import REPO, SOLR_URL
from tests.crawlutil import cli, conf_for, defines, rows, seed_file
from tests.testweb import SEARCHER_PAGES, TestWeb

opensearchpy = pytest.importorskip("opensearchpy")

pytestmark = [pytest.mark.integration, pytest.mark.slow]

RUN = uuid.uuid4().hex[:8]
PLUGIN = "indexer-opensearch-1x"
CRAWLED = f"oc{RUN}"  # the crawl the hostile tests index, each into an index of its own


def index_of(test: str) -> str:
    """The index of one test of this run: tests never see each other's documents."""
    return f"nutch2-test-{RUN}-{test}"


def client(url: str = OS) -> Any:
    return opensearchpy.OpenSearch([url], timeout=60)


def ids_in(index: str, url: str = OS) -> set[str]:
    c = client(url)
    c.indices.refresh(index=index)
    hits = c.search(index=index, body={"query": {"match_all": {}}, "size": 10_000, "_source": ["id"]})["hits"]["hits"]
    return {h["_source"]["id"] for h in hits}


def marked(conf: Any, crawl_id: str, destination: str) -> set[str]:
    """Rows carrying the mark of indexer-opensearch-1x for this destination."""
    mark = writer_mark(PLUGIN, destination)
    return {k for k, p in rows(conf, crawl_id).items() if p.markers.get(mark)}


def error_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if "error" in line.lower()]


def writers_file(tmp: Path, **params: object) -> Path:
    """An index-writers.xml with one OpenSearch writer and these parameters (opensearch.url names the cluster)."""
    path = tmp / f"writers-{uuid.uuid4().hex[:6]}.xml"
    lines = "".join(f'<param name="{k.replace("_", ".")}" value="{v}"/>' for k, v in params.items())
    path.write_text(f'<writers><writer id="os_test" class="{PLUGIN}"><parameters>{lines}</parameters>'
                    "</writer></writers>")
    return path


class SlowIndexingFilter(IndexingFilter):
    """Takes its time over each document, so that a cluster can be stopped while the job is under way."""

    def filter(self, doc: dict[str, Any], url: str, page: Any) -> dict[str, Any] | None:
        time.sleep(0.4)
        return doc


@pytest.fixture(scope="module")
def cleanup(opensearch_up: str) -> Iterator[list[str]]:
    """Index names to delete at the end (this run's only)."""
    names: list[str] = []
    yield names
    c = client()
    for name in names:
        c.indices.delete(index=name, ignore_unavailable=True)


@pytest.fixture(scope="module")
def web() -> Iterator[TestWeb]:
    with TestWeb(hosts=4, pages_per_host=6, searcher=True, slow_seconds=0.5) as w:
        yield w


@pytest.fixture(scope="module")
def crawled(web: TestWeb, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, set[str]]:
    """A crawl of the test web, not indexed: its folder and the keys of its indexable rows."""
    tmp = tmp_path_factory.mktemp("crawled")
    assert cli("crawl", seed_file(tmp, web.seed_url), "-crawlId", CRAWLED, "-rounds", "2", "-threads", "6",
               *defines(tmp, "sqlite")) == 0
    expected = {k for k, p in rows(conf_for(tmp, "sqlite"), CRAWLED).items() if indexable(p)}
    assert len(expected) > 10
    return tmp, expected


# ---------------------------------------------------------------------------------------------------- a crawl
def test_a_crawl_is_indexed_and_chinese_is_found(web: TestWeb, cleanup: list[str], tmp_path: Path,
                                                  capfd: pytest.CaptureFixture[str]) -> None:
    crawl_id, index = f"os{RUN}", index_of("crawl")
    cleanup.append(index)
    d = defines(tmp_path, "sqlite")
    assert cli("crawl", seed_file(tmp_path, web.seed_url), "-crawlId", crawl_id, "-rounds", "3", "-threads", "6",
               "-opensearch", f"{OS}/{index}", *d) == 0
    conf = conf_for(tmp_path, "sqlite")
    table = rows(conf, crawl_id)
    expected = {k for k, p in table.items() if indexable(p)}
    assert ids_in(index) == {document_id(crawl_id, k) for k in expected}
    assert marked(conf, crawl_id, f"{OS}/{index}") == expected
    c = client()
    docs = [h["_source"] for h in c.search(index=index, body={"size": 1000})["hits"]["hits"]]
    for doc in docs:
        assert {"id", "url", "title", "content", "crawlId", "digest", "tstamp"} <= set(doc), doc["url"]
        assert doc["crawlId"] == crawl_id and doc["id"] == document_id(crawl_id, reverse_url(doc["url"]))
    assert any(doc.get("anchor") for doc in docs)  # index-anchor: the inlinks' texts
    # the mapping made from the Solr schema, and a Chinese word found on the Chinese page only
    mapping = c.indices.get_mapping(index=index)[index]["mappings"]["properties"]
    assert mapping["title"]["analyzer"] == "nutch_text" and mapping["tstamp"]["type"] == "date"
    chinese = web.trap_url("/searcher/chinese.html")
    for query in ({"match": {"content": "爬虫"}}, {"query_string": {"query": "搜索"}}, {"match": {"title": "引擎"}}):
        hits = c.search(index=index, body={"query": query})["hits"]["hits"]
        assert [h["_source"]["url"] for h in hits] == [chinese], query
    assert hits[0]["_source"]["title"] == SEARCHER_PAGES["/searcher/chinese.html"]
    # index -all again sends nothing
    capfd.readouterr()
    assert cli("index", "-all", "-crawlId", crawl_id, "-opensearch", f"{OS}/{index}", *d) == 0
    assert " indexed=" not in capfd.readouterr().err


def test_a_crawl_fills_solr_and_opensearch_with_the_same_ids(solr_up: str, cleanup: list[str],
                                                             tmp_path: Path) -> None:
    crawl_id, index = f"ob{RUN}", index_of("both")
    cleanup.append(index)

    def solr_ids() -> set[str]:
        r = requests.get(f"{SOLR_URL}/select", params={"q": "*:*", "fq": crawl_filter(crawl_id), "fl": "id",
                                                       "rows": 10_000, "wt": "json"}, timeout=30)
        r.raise_for_status()
        return {d["id"] for d in r.json()["response"]["docs"]}

    def delete_solr() -> None:
        requests.post(f"{SOLR_URL}/update?commit=true", json={"delete": {"query": crawl_filter(crawl_id)}},
                      timeout=30).raise_for_status()

    d = defines(tmp_path, "sqlite")
    try:
        with TestWeb(hosts=3, pages_per_host=5, traps=False) as web:  # no duplicate pages: Solr's dedup keeps all
            assert cli("crawl", seed_file(tmp_path, web.seed_url), "-crawlId", crawl_id, "-rounds", "3", "-threads",
                       "6", "-solr", SOLR_URL, "-opensearch", f"{OS}/{index}", *d) == 0
        conf = conf_for(tmp_path, "sqlite")
        expected = {k for k, p in rows(conf, crawl_id).items() if indexable(p)}
        assert len(expected) >= 10
        assert solr_ids() == ids_in(index) == {document_id(crawl_id, k) for k in expected}
        both = {k for k, p in rows(conf, crawl_id).items() if p.markers.get(writer_mark("indexer-solr", SOLR_URL))}
        assert both == marked(conf, crawl_id, f"{OS}/{index}") == expected
    finally:
        delete_solr()


# ---------------------------------------------------------------------------------------------------- hostile
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def second_node(tmp: Path) -> Iterator[tuple[str, Any]]:
    """Another OpenSearch node, on its own ports and data folder (the jars of the shared one when it has them): its
    URL and a function running docker/services.sh start|stop|status for it."""
    home = tmp / "services"
    (home / "opensearch").mkdir(parents=True)
    lib = Path(os.environ.get("NUTCH2_SERVICES_DIR", REPO / ".services")) / "opensearch" / "lib"
    if (lib / ".complete").is_file():
        (home / "opensearch" / "lib").symlink_to(lib)
    port = _free_port()
    env = {**os.environ, "NUTCH2_SERVICES_DIR": str(home), "OPENSEARCH_PORT": str(port),
           "OPENSEARCH_TRANSPORT_PORT": str(_free_port()), "OPENSEARCH_HEAP": "256m"}

    def service(action: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["bash", "docker/services.sh", action, "opensearch"], cwd=REPO, env=env,
                              capture_output=True, text=True, timeout=400)

    started = service("start")
    assert started.returncode == 0, started.stderr[-2000:]
    try:
        yield f"http://127.0.0.1:{port}", service
    finally:
        service("stop")


def test_the_cluster_stopped_mid_index_then_a_rerun(crawled: tuple[Path, set[str]], tmp_path: Path) -> None:
    tmp, expected = crawled
    index = index_of("stopped")
    with second_node(tmp_path) as (url, service):
        dest = f"{url}/{index}"
        writers = writers_file(tmp_path, max_bulk_docs=2, exponential_backoff_millis=50,
                               exponential_backoff_retries=2)
        d = defines(tmp, "sqlite", **{"indexer.indexwriters.file": writers})
        slow = ["-D", f"plugin.classes={__name__}:SlowIndexingFilter"]
        proc = subprocess.Popen([sys.executable, "-m", "nutch2.cli", "index", "-all", "-crawlId", CRAWLED,
                                 "-opensearch", dest, "-numTasks", "1", *d, *slow], cwd=REPO,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:  # the first bulk requests are in: stop the cluster
                r = requests.get(f"{url}/_stats/indexing", timeout=10).json()
                if r["_all"]["primaries"].get("indexing", {}).get("index_total", 0) >= 2:
                    break
                time.sleep(0.1)
            else:
                pytest.fail("no bulk request reached the node")
            assert service("stop").returncode == 0
            _, err = proc.communicate(timeout=120)
        finally:
            proc.kill()
        assert proc.returncode == 1, err
        (line,) = error_lines(err)
        assert re.search(rf"OpenSearch at {url} failed to index [12] documents?: .* after 2 retries", line), line
        assert "connection" in line or "HTTP 503" in line  # refused, or cut while the node was closing
        assert "Traceback" not in err
        conf = conf_for(tmp, "sqlite")
        assert marked(conf, CRAWLED, dest) == set()  # nothing committed: nothing marked
        # back up: the same command indexes every document exactly once
        assert service("start").returncode == 0
        assert cli("index", "-all", "-crawlId", CRAWLED, "-opensearch", dest, *d) == 0
        assert ids_in(index, url) == {document_id(CRAWLED, k) for k in expected}
        assert marked(conf, CRAWLED, dest) == expected


class StormProxy(ThreadingHTTPServer):
    """A loopback HTTP proxy in front of OpenSearch that answers 429 to the first `storm` bulk requests, then
    forwards them (every other request is forwarded as it is)."""

    daemon_threads = True

    def __init__(self, upstream: str, storm: int) -> None:
        super().__init__(("127.0.0.1", 0), _StormHandler)
        self.upstream = urlsplit(upstream)
        self.storm = storm
        self.refused = self.bulks = 0
        self.lock = threading.Lock()
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def close(self) -> None:
        self.shutdown()
        self.server_close()


class _StormHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: StormProxy

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - stdlib signature
        """Quiet."""

    def forward(self) -> None:
        srv = self.server
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else None
        if self.command == "POST" and self.path.split("?")[0].endswith("/_bulk"):
            with srv.lock:
                srv.bulks += 1
                refuse = srv.refused < srv.storm
                srv.refused += refuse
            if refuse:
                return self.answer(429, b'{"error":{"type":"rejected_execution_exception","reason":"a storm"},'
                                        b'"status":429}', [("Content-Type", "application/json")])
        conn = http.client.HTTPConnection(srv.upstream.hostname, srv.upstream.port, timeout=120)
        try:
            conn.request(self.command, self.path, body=body, headers={
                k: v for k, v in self.headers.items() if k.lower() not in ("host", "connection", "content-length")})
            resp = conn.getresponse()
            data = resp.read()
        finally:
            conn.close()
        self.answer(resp.status, data, [(k, v) for k, v in resp.getheaders()
                                         if k.lower() not in ("content-length", "connection", "transfer-encoding")])

    def answer(self, status: int, data: bytes, headers: list[tuple[str, str]]) -> None:
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    do_GET = do_POST = do_PUT = do_HEAD = do_DELETE = forward


def test_a_storm_of_429s_is_backed_off_and_counted(crawled: tuple[Path, set[str]], cleanup: list[str],
                                                   capfd: pytest.CaptureFixture[str]) -> None:
    tmp, expected = crawled
    index = index_of("storm")
    cleanup.append(index)
    writers = writers_file(tmp, exponential_backoff_millis=50, exponential_backoff_retries=6)
    d = defines(tmp, "sqlite", **{"indexer.indexwriters.file": writers})
    proxy = StormProxy(OS, storm=4)
    try:
        dest = f"{proxy.url}/{index}"
        capfd.readouterr()
        assert cli("index", "-all", "-crawlId", CRAWLED, "-opensearch", dest, "-numTasks", "1", *d) == 0
        err = capfd.readouterr().err
        assert proxy.refused == 4 and proxy.bulks > 4
        assert re.search(r"^index: finished in .* opensearch_retried=4\b", err, re.M), err
        assert ids_in(index) == {document_id(CRAWLED, k) for k in expected}
        conf = conf_for(tmp, "sqlite")
        assert marked(conf, CRAWLED, dest) == expected
        # a storm longer than the retries: one line, nothing marked
        proxy.storm, proxy.refused = 100, 0
        few = writers_file(tmp, exponential_backoff_millis=20, exponential_backoff_retries=2)
        storm_dest = f"{proxy.url}/{index_of('storm2')}"
        cleanup.append(index_of("storm2"))
        d = defines(tmp, "sqlite", **{"indexer.indexwriters.file": few})
        assert cli("index", "-all", "-crawlId", CRAWLED, "-opensearch", storm_dest, *d) == 1
        (line,) = error_lines(capfd.readouterr().err)
        assert "HTTP 429" in line and "after 2 retries" in line and "exponential.backoff.retries" in line, line
        assert marked(conf, CRAWLED, storm_dest) == set()
    finally:
        proxy.close()


def test_a_10_mb_document_is_refused_or_indexed_per_max_bulk_size(web: TestWeb, cleanup: list[str], tmp_path: Path,
                                                                   capfd: pytest.CaptureFixture[str]) -> None:
    crawl_id, index = f"og{RUN}", index_of("big")
    cleanup.append(index)
    dest = f"{OS}/{index}"
    big, small = web.hostile_urls()["big"], web.page_url(1, 1)
    d = defines(tmp_path, "sqlite", **{"http.content.limit": -1, "http.timeout": 30000})
    assert cli("crawl", seed_file(tmp_path, big, small), "-crawlId", crawl_id, "-rounds", "1", *d) == 0
    conf = conf_for(tmp_path, "sqlite")
    assert {k for k, p in rows(conf, crawl_id).items() if indexable(p)} == {reverse_url(big), reverse_url(small)}
    capfd.readouterr()
    assert cli("index", "-all", "-crawlId", crawl_id, "-opensearch", dest, *d) == 0  # max.bulk.size 2,500,500
    err = capfd.readouterr().err
    (line,) = [x for x in err.splitlines() if "max.bulk.size" in x]
    assert big in line and "not sent to OpenSearch" in line and "stays unindexed" in line, line
    assert re.search(r"^index: finished in .*\bindexed=2\b.*\bopensearch_too_large=1\b", err, re.M), err
    assert ids_in(index) == {document_id(crawl_id, reverse_url(small))}
    assert marked(conf, crawl_id, dest) == {reverse_url(small)}  # the big row waits for this writer
    # a bulk request may be larger: the same command sends it now, and only it
    d += ["-D", f"indexer.indexwriters.file={writers_file(tmp_path, max_bulk_size=33_554_432)}"]
    assert cli("index", "-all", "-crawlId", crawl_id, "-opensearch", dest, *d) == 0
    err = capfd.readouterr().err
    assert re.search(r"^index: finished in .*\bindexed=1\b", err, re.M) and "max.bulk.size" not in err, err
    doc = client().get(index=index, id=document_id(crawl_id, reverse_url(big)))["_source"]
    assert len(doc["content"]) > 9_000_000
    assert marked(conf, crawl_id, dest) == {reverse_url(big), reverse_url(small)}


def test_a_mapping_conflict_is_one_line_and_the_index_is_kept(crawled: tuple[Path, set[str]], cleanup: list[str],
                                                              capfd: pytest.CaptureFixture[str]) -> None:
    tmp, expected = crawled
    index = index_of("conflict")
    cleanup.append(index)
    dest = f"{OS}/{index}"
    c = client()
    c.indices.create(index=index, body={"mappings": {"properties": {"tstamp": {"type": "long"}}}})
    c.index(index=index, id="kept", body={"note": "there before"}, refresh=True)
    d = defines(tmp, "sqlite")
    capfd.readouterr()
    assert cli("index", "-all", "-crawlId", CRAWLED, "-opensearch", dest, *d) == 1
    err = capfd.readouterr().err
    (line,) = error_lines(err)
    assert f"OpenSearch at {OS} refused" in line and "mapper_parsing_exception" in line and "[tstamp]" in line, line
    assert f"the mapping of index {index} does not fit" in line and "Traceback" not in err
    assert marked(conf_for(tmp, "sqlite"), CRAWLED, dest) == set()
    assert c.indices.get_mapping(index=index)[index]["mappings"]["properties"]["tstamp"] == {"type": "long"}
    assert c.get(index=index, id="kept")["_source"] == {"note": "there before"}  # never dropped
    # the user's fix: the index goes; nutch2 makes it with its own mapping and indexes everything
    c.indices.delete(index=index)
    assert cli("index", "-all", "-crawlId", CRAWLED, "-opensearch", dest, *d) == 0
    assert ids_in(index) == {document_id(CRAWLED, k) for k in expected}


def test_a_dead_cluster_fails_at_once(crawled: tuple[Path, set[str]], capfd: pytest.CaptureFixture[str]) -> None:
    tmp, _ = crawled
    d = defines(tmp, "sqlite")
    capfd.readouterr()
    started = time.monotonic()
    assert cli("index", "-all", "-crawlId", CRAWLED, "-opensearch", "http://127.0.0.1:9/nutch", *d) == 1
    assert time.monotonic() - started < 15
    err = capfd.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert "OpenSearch at http://127.0.0.1:9 failed to answer: connection refused" in err[0]
    assert "docker/services.sh start opensearch" in err[0]
    assert marked(conf_for(tmp, "sqlite"), CRAWLED, "http://127.0.0.1:9/nutch") == set()
