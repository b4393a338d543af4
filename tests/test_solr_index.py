"""Integration tests of index, clean, dedup and search against the real Solr (docker/services.sh start solr)."""

from __future__ import annotations

import re
import uuid
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import requests

from nutch2.index.solr import crawl_filter, document_id
from nutch2.jobs.index import indexable
from nutch2.marks import Mark
from nutch2.status import CrawlStatus
from nutch2.stores import open_store
from nutch2.urls.tableutil import reverse_url

# the shared core (NUTCH2_SOLR_URL points the tests at another Solr): each test reads and deletes only the
# documents of its own crawl ids, made unique per run, so other engineers' tests on the same core are left alone
from tests.conftest import SOLR_URL as SOLR
from tests.crawlutil import cli, conf_for, defines, rows
from tests.proxy import Proxy
from tests.testweb import TestWeb

pytestmark = [pytest.mark.integration, pytest.mark.slow]

RUN = uuid.uuid4().hex[:8]
SX, SD = f"sx{RUN}", f"sd{RUN}"  # the crawl ids of this run


def delete_crawl(solr: str, crawl_id: str) -> None:
    requests.post(f"{solr}/update?commit=true", json={"delete": {"query": crawl_filter(crawl_id)}},
                  timeout=30).raise_for_status()


@pytest.fixture
def solr(solr_up: str):
    for crawl_id in (SX, SD):
        delete_crawl(solr_up, crawl_id)
    yield solr_up
    for crawl_id in (SX, SD):
        delete_crawl(solr_up, crawl_id)


def select(q: str, crawl_id: str, **params: object) -> dict:
    r = requests.get(f"{SOLR}/select", params={"q": q, "fq": crawl_filter(crawl_id), "wt": "json", **params},
                     timeout=30)
    r.raise_for_status()
    return r.json()


def num_found(q: str = "*:*", crawl_id: str = SX) -> int:
    return select(q, crawl_id, rows=0)["response"]["numFound"]


@pytest.fixture(scope="module")
def web():
    with TestWeb(hosts=4, pages_per_host=6, slow_seconds=0.5) as w:
        yield w


def seeds(tmp: Path, url: str) -> Path:
    p = tmp / "seeds.txt"
    p.write_text(url + "\n")
    return p


def test_crawl_index_search_clean_dedup(web: TestWeb, solr: str, tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    d = defines(tmp_path, "sqlite")
    assert cli("crawl", seeds(tmp_path, web.seed_url), "-crawlId", SX, "-rounds", "3", "-threads", "6",
               "-solr", solr, *d) == 0
    conf = conf_for(tmp_path, "sqlite")
    table = rows(conf, SX)
    docs = [p for p in table.values() if indexable(p)]
    dups = [u for u, s in web.pages.items() if s.duplicate_of and reverse_url(u) in table]
    assert dups, "the crawl reached the duplicate pages"
    # dedup marked one row of each duplicate group DUPLICATE in the table, and clean took it out of Solr
    assert sum(p.status == CrawlStatus.DUPLICATE for p in table.values()) == len(dups)
    assert num_found() == len(docs)
    dup_ids = {document_id(SX, reverse_url(u)) for u in dups} | {
        document_id(SX, reverse_url(web.pages[u].duplicate_of)) for u in dups}
    assert num_found(" OR ".join(f'id:"{i}"' for i in dup_ids)) == len(dup_ids) - len(dups)
    # noindex pages and non-HTML are not in the index
    for url, spec in web.pages.items():
        if not spec.indexable and reverse_url(url) in table:
            assert num_found(f'id:"{document_id(SX, reverse_url(url))}"') == 0, url
    # a word only one page has finds that page first
    spec = next(s for u, s in web.pages.items() if reverse_url(u) in table and s.indexable and not s.duplicate_of
                and table[reverse_url(u)].status == CrawlStatus.FETCHED and s.url != web.seed_url)
    hit = select(spec.unique_word, SX, fl="id,url,title,host,digest,batchId,boost,tstamp,contentLength,type")
    first = hit["response"]["docs"][0]
    assert first["url"] == spec.url
    assert {"id", "url", "title", "host", "digest", "batchId", "boost", "tstamp", "contentLength", "type"} <= set(first)
    assert first["id"] == document_id(SX, reverse_url(spec.url))
    # search prints the page with a highlighted snippet
    capsys.readouterr()
    assert cli("search", spec.unique_word, "-solr", solr, "-rows", "3", "-crawlId", SX, *d) == 0
    out = capsys.readouterr().out
    assert spec.url in out and f"*{spec.unique_word}*" in out
    # a search of another crawl (no -crawlId: crawl "webpage") finds nothing and says which crawls the core holds
    assert cli("search", spec.unique_word, "-solr", solr, *d) == 0
    found = capsys.readouterr()
    assert found.out.startswith(f"0 hits for '{spec.unique_word}'"), found.out
    assert "the core holds no document of crawl webpage; it holds " in found.err, found.err
    assert re.search(r"it holds \S+ \(\d+ documents?\)", found.err) and "give -crawlId" in found.err
    # index -all again sends nothing new
    assert cli("index", "-all", "-crawlId", SX, "-solr", solr, *d) == 0
    assert " indexed=" not in capsys.readouterr().err  # nothing sent
    # a page that became GONE is removed by clean
    key = reverse_url(spec.url)
    with open_store(conf, SX) as store:
        page = store.get(key, ["status"])
        page.status = int(CrawlStatus.GONE)
        store.put(key, page)
    assert cli("clean", "-crawlId", SX, "-solr", solr, *d) == 0
    assert num_found(f'id:"{document_id(SX, key)}"') == 0
    assert Mark.INDEX.check(rows(conf, SX)[key]) is None


def test_solr_down_mid_job_then_rerun(web: TestWeb, solr: str, tmp_path: Path,
                                      capfd: pytest.CaptureFixture[str]) -> None:
    import subprocess
    import sys

    d = defines(tmp_path, "sqlite", **{"solr.commit.size": 2})
    assert cli("crawl", seeds(tmp_path, web.seed_url), "-crawlId", SD, "-rounds", "2", "-threads", "6", *d) == 0
    conf = conf_for(tmp_path, "sqlite")
    expected = {k for k, p in rows(conf, SD).items() if indexable(p)}
    assert len(expected) > 6
    solr_addr = urlsplit(SOLR)
    proxy = Proxy((solr_addr.hostname, solr_addr.port), allow=3)  # ping + two batches, then Solr is "gone"
    try:
        proc = subprocess.run([sys.executable, "-m", "nutch2.cli", "index", "-all", "-crawlId", SD,
                               "-solr", f"http://127.0.0.1:{proxy.port}{solr_addr.path}", "-numTasks", "1", *d],
                              capture_output=True, text=True, timeout=120)
    finally:
        proxy.close()
    assert proc.returncode == 1
    err = [line for line in proc.stderr.splitlines() if "error" in line]
    assert len(err) == 1 and "Solr at" in err[0] and "Traceback" not in proc.stderr
    assert not any(Mark.INDEX.check(p) for p in rows(conf, SD).values())
    # Solr rejecting documents: a core that does not exist
    assert cli("index", "-all", "-crawlId", SD, "-solr", SOLR.rsplit("/", 1)[0] + "/nosuchcore", *d) == 1
    assert not any(Mark.INDEX.check(p) for p in rows(conf, SD).values())
    # back: a rerun indexes every document exactly once
    assert cli("index", "-all", "-crawlId", SD, "-solr", solr, *d) == 0
    ids = {doc["id"] for doc in select("*:*", SD, fl="id", rows=1000)["response"]["docs"]}
    assert ids == {document_id(SD, k) for k in expected} and num_found(crawl_id=SD) == len(expected)
    assert all(Mark.INDEX.check(p) for k, p in rows(conf, SD).items() if k in expected)
    capfd.readouterr()
    assert cli("index", "-all", "-crawlId", SD, "-solr", solr, *d) == 0
    assert " indexed=" not in capfd.readouterr().err  # nothing sent


def test_dead_solr_fails_fast(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = defines(tmp_path, "sqlite")
    (tmp_path / "s.txt").write_text("http://127.0.0.1:9/\n")
    assert cli("inject", tmp_path / "s.txt", "-crawlId", "dd", *d) == 0
    capsys.readouterr()
    assert cli("index", "-all", "-crawlId", "dd", "-solr", "http://127.0.0.1:9/solr/nutch", *d) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "127.0.0.1:9" in err[0] and "docker/services.sh start solr" in err[0]
