"""index against a real Solr that fails (docker/services.sh start solr): whatever part of a run Solr did not take,
a later index sends, and a rerun of the same command ends with every document in the index and every row marked."""

from __future__ import annotations

import uuid
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import requests

from nutch2.crawldb.journal import Journal
from nutch2.index.solr import crawl_filter, document_id
from nutch2.jobs.index import indexable
from nutch2.marks import Mark
from nutch2.stores import open_store
from tests.conftest import SOLR_URL as SOLR
from tests.crawlutil import cli, conf_for, defines, rows
from tests.helpers import KILLED, QuietServer, nutch2, page_html
from tests.proxy import Proxy
from tests.testweb import TestWeb

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def delete_crawl(crawl_id: str) -> None:
    requests.post(f"{SOLR}/update?commit=true", json={"delete": {"query": crawl_filter(crawl_id)}},
                  timeout=30).raise_for_status()


def solr_ids(crawl_id: str) -> set[str]:
    r = requests.get(f"{SOLR}/select", params={"q": "*:*", "fq": crawl_filter(crawl_id), "fl": "id", "rows": 10000,
                                               "wt": "json"}, timeout=30)
    r.raise_for_status()
    return {doc["id"] for doc in r.json()["response"]["docs"]}


@pytest.fixture(scope="module")
def web():
    with TestWeb(hosts=4, pages_per_host=6, slow_seconds=0.5) as w:
        yield w


@pytest.fixture
def crawl(web: TestWeb, solr_up: str, tmp_path: Path):
    """A crawled table (2 rounds, not indexed), its crawl id, -D options and the ids Solr must hold in the end."""
    crawl_id = "sf" + uuid.uuid4().hex[:8]
    d = defines(tmp_path, "sqlite", **{"solr.commit.size": 2})
    (tmp_path / "seeds.txt").write_text(web.seed_url + "\n")
    assert cli("crawl", tmp_path / "seeds.txt", "-crawlId", crawl_id, "-rounds", "2", "-threads", "6", *d) == 0
    conf = conf_for(tmp_path, "sqlite")
    expected = {document_id(crawl_id, k) for k, p in rows(conf, crawl_id).items() if indexable(p)}
    assert len(expected) > 6
    yield crawl_id, d, expected
    delete_crawl(crawl_id)


def test_a_failed_reindex_leaves_what_it_did_not_send_to_index_all(crawl) -> None:
    crawl_id, d, expected = crawl
    addr = urlsplit(SOLR)
    proxy = Proxy((addr.hostname, addr.port))
    url = f"http://127.0.0.1:{proxy.port}{addr.path}"
    try:
        assert cli("index", "-all", "-crawlId", crawl_id, "-solr", url, *d) == 0
        assert solr_ids(crawl_id) == expected
        delete_crawl(crawl_id)  # the core was emptied (or restored from an old backup): the operator reindexes
        proxy.allow = proxy.requests + 3  # the ping and two requests, then Solr is gone
        proc = nutch2("index", "-reindex", "-crawlId", crawl_id, "-solr", url, "-numTasks", "1", *d,
                      "-D", "solr.retries=0")  # Solr stays gone: no waiting for it
        assert proc.returncode == 1, proc.stderr
        assert "Solr at" in proc.stderr and "Traceback" not in proc.stderr
        proxy.allow = None
        proxy.restore()
        # Solr is back: the crawl's next index (of what changed) sends what the reindex did not
        assert cli("index", "-all", "-crawlId", crawl_id, "-solr", url, *d) == 0
        assert solr_ids(crawl_id) == expected
    finally:
        proxy.close()


def test_reindex_killed_while_unmarking_then_index_all(crawl) -> None:
    """A kill in the middle of -reindex's first pass (some rows unmarked, others not): the next index of the
    table finishes the unmarking (the journal keeps the reindex until its rows are marked), so -all sends every
    row, as the same -reindex would."""
    crawl_id, d, expected = crawl
    assert cli("index", "-all", "-crawlId", crawl_id, "-solr", SOLR, *d) == 0
    delete_crawl(crawl_id)
    proc = nutch2("index", "-reindex", "-crawlId", crawl_id, "-solr", SOLR, "-numTasks", "1", *d,
                  "-D", "storage.write.batch.size=3", failpoints="store.flush=2")
    assert proc.returncode == KILLED, proc.stderr
    assert nutch2("index", "-all", "-crawlId", crawl_id, "-solr", SOLR, *d).returncode == 0
    assert solr_ids(crawl_id) == expected
    proc = nutch2("index", "-all", "-crawlId", crawl_id, "-solr", SOLR, *d)
    assert proc.returncode == 0 and " indexed=" not in proc.stderr, proc.stderr  # done: the journal forgot it


def test_reindex_killed_after_unmarking_then_the_same_command(crawl) -> None:
    crawl_id, d, expected = crawl
    assert cli("index", "-all", "-crawlId", crawl_id, "-solr", SOLR, *d) == 0
    delete_crawl(crawl_id)
    proc = nutch2("index", "-reindex", "-crawlId", crawl_id, "-solr", SOLR, *d, failpoints="runner.job=1")
    assert proc.returncode == KILLED, proc.stderr
    assert nutch2("index", "-reindex", "-crawlId", crawl_id, "-solr", SOLR, *d).returncode == 0
    assert solr_ids(crawl_id) == expected
    proc = nutch2("index", "-all", "-crawlId", crawl_id, "-solr", SOLR, *d)
    assert proc.returncode == 0 and " indexed=" not in proc.stderr, proc.stderr  # every row is marked again


def test_a_document_solr_refuses_in_a_worker_task_is_one_line_naming_the_fix(crawl, tmp_path: Path) -> None:
    crawl_id, d, expected = crawl
    includes = "protocol-http|urlfilter-regex|urlnormalizer-basic|parse-html|index-(basic|anchor|static)|" \
               "indexer-solr|scoring-opic"
    in_workers = ["-D", f"plugin.includes={includes}", "-D", "mapreduce.framework.name=processes",
                  "-D", "mapreduce.processes.driver.task=false", "-numTasks", "2"]
    proc = nutch2("index", "-all", "-crawlId", crawl_id, "-solr", SOLR, *d, *in_workers,
                  "-D", "index.static=nosuchfield:x")  # a field the core's schema lacks: Solr answers 400
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert len(lines) == 1 and "unknown field 'nosuchfield'" in lines[0] and "schema" in lines[0], lines
    assert not any(m.startswith("_idxmrk_") for p in rows(conf_for(tmp_path, "sqlite"), crawl_id).values()
                   for m in p.markers)
    assert nutch2("index", "-all", "-crawlId", crawl_id, "-solr", SOLR, *d, *in_workers).returncode == 0
    assert solr_ids(crawl_id) == expected


def test_a_page_with_a_meta_description_longer_than_a_term_is_indexed(solr_up: str, tmp_path: Path) -> None:
    """The default plugins index the meta description as a string (meta_*): one page's 40 KB description made Solr
    answer 400 to its whole request, so every index of the crawl failed, for good."""
    import threading

    crawl_id = "sm" + uuid.uuid4().hex[:8]
    description = "lorem ipsum é " * 3000  # 42,000 bytes of UTF-8
    server = QuietServer({"/": (200, {"Content-Type": "text/html"}, page_html(
        "long description", "a page", head=f'<meta name="description" content="{description}">'))})
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/"
        (tmp_path / "seeds.txt").write_text(url + "\n")
        d = defines(tmp_path, "sqlite")
        proc = nutch2("crawl", tmp_path / "seeds.txt", "-crawlId", crawl_id, "-rounds", "1", "-solr", SOLR, *d)
        assert proc.returncode == 0, proc.stderr
        params = {"q": "*:*", "fq": crawl_filter(crawl_id), "fl": "url,meta_description", "wt": "json"}
        r = requests.get(f"{SOLR}/select", params=params, timeout=30).json()["response"]["docs"]
        assert [doc["url"] for doc in r] == [url]
        kept = r[0]["meta_description"][0]
        assert description.strip().startswith(kept) and 32000 < len(kept.encode()) <= 32766
    finally:
        server.shutdown()
        server.server_close()
        delete_crawl(crawl_id)


@pytest.mark.parametrize(("status", "says"), [(401, "give its user and password in the URL"),
                                              (403, "the login is not allowed")])
def test_a_solr_that_asks_for_a_login_is_one_line_naming_it(tmp_path: Path, status: int, says: str) -> None:
    import threading

    class Every(dict):  # the same answer to every path
        def get(self, path: str, default: object = None) -> object:
            return status, {"Content-Type": "text/html"}, b"<html><body>HTTP ERROR</body></html>"

    server = QuietServer(Every())
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        d = defines(tmp_path, "sqlite")
        (tmp_path / "s.txt").write_text("http://127.0.0.1:9/\n")
        assert nutch2("inject", tmp_path / "s.txt", "-crawlId", "login", *d).returncode == 0
        url = f"http://127.0.0.1:{server.server_address[1]}/solr/nutch"
        proc = nutch2("index", "-all", "-crawlId", "login", "-solr", url, *d)
        lines = proc.stderr.strip().splitlines()
        assert proc.returncode == 1 and len(lines) == 1 and f"HTTP {status}" in lines[0], proc.stderr
        assert says in lines[0] and "configset" not in lines[0], lines[0]
    finally:
        server.shutdown()
        server.server_close()


def test_a_solr_restarting_in_the_middle_of_an_index_ends_no_job(crawl) -> None:
    """Solr gone for a moment after the job's first requests (a restart, a proxy's hiccup): the writes are sent
    again after a back-off, and the index ends with every document; before, the job failed at the first one."""
    import threading

    crawl_id, d, expected = crawl
    addr = urlsplit(SOLR)
    proxy = Proxy((addr.hostname, addr.port))
    url = f"http://127.0.0.1:{proxy.port}{addr.path}"
    proxy.allow = proxy.requests + 3  # the ping and two requests go through, then the connections are refused

    def back() -> None:
        proxy.allow = None
        proxy.restore()

    timer = threading.Timer(1.5, back)
    timer.start()
    try:
        proc = nutch2("index", "-all", "-crawlId", crawl_id, "-solr", url, *d)
        assert proc.returncode == 0, proc.stderr
        assert "trying again" in proc.stderr and "Traceback" not in proc.stderr
        assert solr_ids(crawl_id) == expected
    finally:
        timer.cancel()
        proxy.close()


def test_a_solr_that_stays_busy_fails_the_index_naming_the_retries(tmp_path: Path) -> None:
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Busy(BaseHTTPRequestHandler):  # pings answer; every update is 503
        def answer(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            ok = "ping" in self.path
            body = b'{"responseHeader":{"status":0},"status":"OK"}' if ok else b"<html>Service Unavailable</html>"
            self.send_response(200 if ok else 503)
            self.send_header("Content-Type", "application/json" if ok else "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = answer

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Busy)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    web = QuietServer({"/": (200, {"Content-Type": "text/html"}, page_html("A page", "words"))})
    threading.Thread(target=web.serve_forever, daemon=True).start()
    try:
        d = defines(tmp_path, "sqlite", **{"solr.retries": 2, "solr.backoff.seconds": 0.1})
        (tmp_path / "s.txt").write_text(f"http://127.0.0.1:{web.server_address[1]}/\n")
        assert nutch2("crawl", tmp_path / "s.txt", "-crawlId", "busy", "-rounds", "1", *d).returncode == 0
        url = f"http://127.0.0.1:{server.server_address[1]}/solr/nutch"
        proc = nutch2("index", "-all", "-crawlId", "busy", "-solr", url, *d)
        assert proc.returncode == 1, proc.stderr
        last = proc.stderr.strip().splitlines()[-1]
        assert "HTTP 503, Solr is overloaded or not ready" in last and "after 2 retries" in last, proc.stderr
        assert "solr.retries" in last and proc.stderr.count("trying again") == 2, proc.stderr
    finally:
        for s in (server, web):
            s.shutdown()
            s.server_close()


def test_a_crawl_finishes_a_failed_reindex(crawl, tmp_path: Path) -> None:
    """A -reindex that failed leaves its rows unmarked for an index of the table; a crawl's rounds index their
    batches only, so a continuous crawl never sent them. A crawl's start now sends them (index -all)."""
    crawl_id, d, expected = crawl
    addr = urlsplit(SOLR)
    proxy = Proxy((addr.hostname, addr.port))
    url = f"http://127.0.0.1:{proxy.port}{addr.path}"
    try:
        assert cli("index", "-all", "-crawlId", crawl_id, "-solr", url, *d) == 0
        delete_crawl(crawl_id)
        proxy.allow = proxy.requests + 3
        proc = nutch2("index", "-reindex", "-crawlId", crawl_id, "-solr", url, "-numTasks", "1", *d,
                      "-D", "solr.retries=0")
        assert proc.returncode == 1, proc.stderr
        proxy.allow = None
        proxy.restore()
        assert len(solr_ids(crawl_id)) < len(expected)
        proc = nutch2("crawl", "-crawlId", crawl_id, "-rounds", "1", "-solr", url, *d)
        assert proc.returncode == 0, proc.stderr
        assert "an `index -reindex` did not finish" in proc.stderr
        conf = conf_for(tmp_path, "sqlite")  # the crawl's round added pages, and its dedup took duplicates out
        assert solr_ids(crawl_id) == {document_id(crawl_id, k) for k, p in rows(conf, crawl_id).items()
                                      if indexable(p)}
    finally:
        proxy.close()


def test_a_batch_reindex_sends_its_batch_and_a_crawl_finishes_a_failed_one(crawl, tmp_path: Path) -> None:
    """`index <batch> -reindex` sends that batch's rows (those its updatedb updated last), not the table's. One
    that failed part-way left its rows unmarked, which no round of a crawl sends again: the journal keeps it, and
    a crawl's start runs it again."""
    crawl_id, d, expected = crawl
    conf = conf_for(tmp_path, "sqlite")
    with open_store(conf, crawl_id, create=False) as store:
        batch = Journal(store).batches()[-1].batch_id
    in_batch = {document_id(crawl_id, k) for k, p in rows(conf, crawl_id).items()
                if indexable(p) and Mark.UPDATEDB.check(p) == batch}
    assert 2 < len(in_batch) < len(expected)
    addr = urlsplit(SOLR)
    proxy = Proxy((addr.hostname, addr.port))
    url = f"http://127.0.0.1:{proxy.port}{addr.path}"
    try:
        assert cli("index", "-all", "-crawlId", crawl_id, "-solr", url, *d) == 0
        delete_crawl(crawl_id)
        assert cli("index", batch, "-reindex", "-crawlId", crawl_id, "-solr", url, *d) == 0
        assert solr_ids(crawl_id) == in_batch  # the batch, not the table
        delete_crawl(crawl_id)
        proxy.allow = proxy.requests + 3
        proc = nutch2("index", batch, "-reindex", "-crawlId", crawl_id, "-solr", url, "-numTasks", "1", *d,
                      "-D", "solr.retries=0")
        assert proc.returncode == 1, proc.stderr
        proxy.allow = None
        proxy.restore()
        assert len(solr_ids(crawl_id)) < len(in_batch)
        proc = nutch2("crawl", "-crawlId", crawl_id, "-rounds", "1", "-solr", url, *d)
        assert proc.returncode == 0, proc.stderr
        assert f"an `index {batch} -reindex` did not finish; finishing it" in proc.stderr, proc.stderr
        still = {document_id(crawl_id, k) for k, p in rows(conf, crawl_id).items()  # the crawl's dedup took
                 if indexable(p) and Mark.UPDATEDB.check(p) == batch}                # duplicates out
        assert len(still) >= len(in_batch) - 2 and still <= solr_ids(crawl_id)
        proc = nutch2("crawl", "-crawlId", crawl_id, "-rounds", "1", "-solr", url, *d)
        assert proc.returncode == 0 and "-reindex` did not finish" not in proc.stderr, proc.stderr  # once
    finally:
        proxy.close()


@pytest.mark.parametrize("failpoint", ["store.flush=2", "runner.job=1"])  # while unmarking; after it
def test_a_batch_reindex_killed_is_finished_by_the_next_crawl(crawl, tmp_path: Path, failpoint: str) -> None:
    crawl_id, d, expected = crawl
    conf = conf_for(tmp_path, "sqlite")
    with open_store(conf, crawl_id, create=False) as store:
        batch = Journal(store).batches()[-1].batch_id
    assert cli("index", "-all", "-crawlId", crawl_id, "-solr", SOLR, *d) == 0
    delete_crawl(crawl_id)
    proc = nutch2("index", batch, "-reindex", "-crawlId", crawl_id, "-solr", SOLR, "-numTasks", "1", *d,
                  "-D", "storage.write.batch.size=3", failpoints=failpoint)
    assert proc.returncode == KILLED, proc.stderr
    proc = nutch2("crawl", "-crawlId", crawl_id, "-rounds", "1", "-solr", SOLR, *d)
    assert proc.returncode == 0, proc.stderr
    assert f"an `index {batch} -reindex` did not finish; finishing it" in proc.stderr, proc.stderr
    in_batch = {document_id(crawl_id, k) for k, p in rows(conf, crawl_id).items()
                if indexable(p) and Mark.UPDATEDB.check(p) == batch}
    assert len(in_batch) > 2 and in_batch <= solr_ids(crawl_id)


def test_a_document_solr_refuses_among_good_ones_is_left_out_not_the_job(solr_up: str, tmp_path: Path) -> None:
    """An operator maps a meta tag to an int field (index-writers.xml); one page's tag is not a number, so Solr
    refuses the request holding its document (HTTP 400). That document is left out, said in one line and
    counted, its row unmarked; the other pages are indexed and the job ends 0. Before, the job failed at that
    request, and every later index (a continuous crawl's every round) failed on the same page."""
    import threading

    pages = {f"/p{i}.html": (200, {"Content-Type": "text/html"}, page_html(
        f"Page {i}", "words", head=f'<meta name="rating" content="{"five" if i == 3 else i}">')) for i in range(8)}
    pages["/"] = (200, {"Content-Type": "text/html"}, page_html("Home", "home", [(p, p) for p in pages]))
    web = QuietServer(pages)
    threading.Thread(target=web.serve_forever, daemon=True).start()
    writers = tmp_path / "index-writers.xml"
    writers.write_text('''<?xml version="1.0" encoding="UTF-8"?>
<writers>
  <writer id="solr" class="org.apache.nutch.indexwriter.solr.SolrIndexWriter">
    <parameters><param name="url" value=""/><param name="commitSize" value="4"/></parameters>
    <mapping><rename><field source="meta_rating" dest="rating_i"/></rename></mapping>
  </writer>
</writers>
''')
    crawl_id = "rf" + uuid.uuid4().hex[:8]
    d = defines(tmp_path, "sqlite", **{"indexer.indexwriters.file": writers, "index.metadata": "rating",
                                      "metatags.names": "rating"})
    base = f"http://127.0.0.1:{web.server_address[1]}"
    try:
        (tmp_path / "s.txt").write_text(base + "/\n")
        assert nutch2("crawl", tmp_path / "s.txt", "-crawlId", crawl_id, "-rounds", "2", *d).returncode == 0
        proc = nutch2("index", "-all", "-crawlId", crawl_id, "-solr", SOLR, *d)
        assert proc.returncode == 0, proc.stderr
        refused = [line for line in proc.stderr.splitlines() if "refused the document" in line]
        assert len(refused) == 1 and f"{base}/p3.html" in refused[0], proc.stderr
        assert "solr_refused=1" in proc.stderr
        r = requests.get(f"{SOLR}/select", params={"q": "*:*", "fq": crawl_filter(crawl_id), "fl": "url",
                                                   "rows": 100}, timeout=30).json()["response"]["docs"]
        assert sorted(doc["url"] for doc in r) == sorted(f"{base}{p}" for p in pages if p != "/p3.html")
        again = nutch2("index", "-all", "-crawlId", crawl_id, "-solr", SOLR, *d)  # the unmarked row is tried again
        assert again.returncode == 0 and again.stderr.count("refused the document") == 1, again.stderr
    finally:
        web.shutdown()
        web.server_close()
        delete_crawl(crawl_id)
