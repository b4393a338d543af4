"""Two crawls of one web indexed into one Solr core: each keeps its own documents (ids <crawlId>!<key>), dedup and
clean stay within a crawl, each server shows only its own crawl, and `index -reindex` moves documents indexed
before crawl ids (bare row keys) over. Real Solr, real servers."""

from __future__ import annotations

import pytest
import requests

from nutch2.index.solr import document_id
from nutch2.jobs.index import indexable
from nutch2.status import CrawlStatus
from nutch2.stores import open_store
from nutch2.urls.tableutil import reverse_url
from tests.crawlutil import cli, conf_for, defines, rows
from tests.searchapp import SOLR, SearchServer, require_solr
from tests.testweb import TestWeb

pytestmark = [pytest.mark.integration, pytest.mark.slow]
ROUNDS = {"alpha": 2, "beta": 3}  # beta goes one round further: pages alpha never saw


def count(q: str = "*:*", **params: object) -> int:
    r = requests.get(f"{SOLR}/select", params={"q": q, "rows": 0, **params}, timeout=30)
    r.raise_for_status()
    return r.json()["response"]["numFound"]


def in_crawl(crawl: str, q: str = "*:*") -> int:
    return count(q, fq=f"crawlId:{crawl}")


@pytest.fixture(scope="module")
def crawls(tmp_path_factory: pytest.TempPathFactory):
    solr = require_solr()
    requests.post(f"{SOLR}/update?commit=true", json={"delete": {"query": "crawlId:(alpha OR beta)"}},
                  timeout=30).raise_for_status()
    tmp = tmp_path_factory.mktemp("crawls")
    d = defines(tmp, "sqlite")
    with TestWeb(hosts=3, pages_per_host=3, slow_seconds=0.2) as web:
        (tmp / "seeds.txt").write_text(web.seed_url + "\n")
        for crawl, rounds in ROUNDS.items():
            assert cli("crawl", tmp / "seeds.txt", "-crawlId", crawl, "-rounds", rounds, "-threads", "6",
                       "-solr", solr, *d) == 0
        yield tmp, d, conf_for(tmp, "sqlite"), web
    requests.post(f"{SOLR}/update?commit=true", json={"delete": {"query": "crawlId:(alpha OR beta)"}}, timeout=30)


def test_each_crawl_keeps_its_documents_and_dedups_only_its_own(crawls) -> None:
    _, _, conf, web = crawls
    for crawl in ROUNDS:
        table = rows(conf, crawl)
        docs = {k for k, p in table.items() if indexable(p)}
        dups = [u for u, s in web.pages.items() if s.duplicate_of and reverse_url(u) in table]
        assert dups, "the crawl reached the duplicate pages"
        # each crawl's dedup marked one row of each pair in its own table, and neither deleted the other's:
        # one of each duplicate pair is left in each crawl
        assert sum(p.status == CrawlStatus.DUPLICATE for p in table.values()) == len(dups)
        assert in_crawl(crawl) == len(docs)
        pair = " OR ".join(f'"{document_id(crawl, reverse_url(u))}"'
                           for u in (dups[0], web.pages[dups[0]].duplicate_of))
        assert count(f"id:({pair})") == 1
    both = set(rows(conf, "alpha")) & set(rows(conf, "beta"))
    key = reverse_url(web.seed_url)
    assert key in both and count(f'id:("{document_id("alpha", key)}" OR "{document_id("beta", key)}")') == 2


def test_each_server_shows_only_its_crawl(crawls) -> None:
    tmp, d, conf, web = crawls
    alpha, beta = rows(conf, "alpha"), rows(conf, "beta")
    only_beta = [u for u, s in web.pages.items() if s.unique_word and s.indexable and not s.duplicate_of
                 and reverse_url(u) in beta and indexable(beta[reverse_url(u)])
                 and not (reverse_url(u) in alpha and indexable(alpha[reverse_url(u)]))]
    assert only_beta
    word = web.pages[only_beta[0]].unique_word
    for crawl in ROUNDS:
        with SearchServer(["-crawlId", crawl, "-solr", SOLR, *d], tmp / f"server-{crawl}.log") as server:
            res = requests.get(f"{server.url}/api/search", params={"q": "http", "rows": 100, "collapse": 0},
                               timeout=30).json()
            assert res["numFound"] == in_crawl(crawl) and {h["id"].split("!")[0] for h in res["hits"]} == {crawl}
            for hit in res["hits"][:5]:  # every hit is a row of this crawl: its cached copy is there
                r = requests.get(f"{server.url}/cached", params={"url": hit["url"]}, timeout=30)
                assert r.status_code in (200, 403), (hit["url"], r.status_code)
            found = requests.get(f"{server.url}/api/search", params={"q": word}, timeout=30).json()["hits"]
            assert [h["url"] for h in found] == ([only_beta[0]] if crawl == "beta" else [])
            home = requests.get(server.url + "/", timeout=30).text
            assert f"<b>{in_crawl(crawl):,}</b> pages in the index" in home


def test_clean_stays_within_its_crawl(crawls) -> None:
    tmp, d, conf, web = crawls
    url = next(u for u, s in web.pages.items() if s.kind == "html" and "/p/" in u
               and reverse_url(u) in rows(conf, "alpha") and indexable(rows(conf, "alpha")[reverse_url(u)]))
    key = reverse_url(url)
    with open_store(conf, "beta") as store:
        page = store.get(key, ["status"])
        page.status = int(CrawlStatus.GONE)
        store.put(key, page)
    assert cli("clean", "-crawlId", "beta", "-solr", SOLR, *d) == 0
    assert count(f'id:"{document_id("beta", key)}"') == 0
    assert count(f'id:"{document_id("alpha", key)}"') == 1  # the same URL in the other crawl stays


def test_reindex_moves_documents_of_an_older_core_over(crawls) -> None:
    _, d, conf, _ = crawls
    table = rows(conf, "alpha")
    keys = sorted(k for k, p in table.items() if indexable(p))[:3]
    # documents as nutch2 indexed them before crawl ids: id = the bare row key, no crawlId field
    legacy = [{"id": k, "url": "http://legacy.test/", "host": "legacy.test", "title": "legacy"} for k in keys]
    requests.post(f"{SOLR}/update?commit=true", json=legacy, timeout=30).raise_for_status()
    assert count("-crawlId:[* TO *]") >= len(keys)
    before_beta = in_crawl("beta")
    assert cli("index", "-reindex", "-crawlId", "alpha", "-solr", SOLR, *d) == 0
    assert count(" OR ".join(f'id:"{k}"' for k in keys)) == 0  # the old documents are gone
    assert count(" OR ".join(f'id:"{document_id("alpha", k)}"' for k in keys)) == len(keys)
    assert in_crawl("beta") == before_beta


def test_dedup_command_names_no_other_crawl(crawls, capsys: pytest.CaptureFixture[str]) -> None:
    _, d, _, _ = crawls
    before = {c: in_crawl(c) for c in ROUNDS}
    capsys.readouterr()
    assert cli("dedup", "-crawlId", "beta", "-solr", SOLR, *d) == 0
    assert "dedup: finished in " in (err := capsys.readouterr().err) and " deleted=0" in err
    assert {c: in_crawl(c) for c in ROUNDS} == before
