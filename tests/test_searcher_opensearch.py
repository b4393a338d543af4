"""The Searcher over OpenSearch against the real services: one crawl of the test web indexed into Solr and into
OpenSearch, then a server over each answers the same requests with the same hits (JSON API, pages, feeds,
paging, the host facet, one hit per site, host: and site:, Chinese), hostile queries are words over OpenSearch as
over Solr, a cluster that goes away is the same 503 as a dead Solr, jobs of a server on OpenSearch index there,
and `nutch2 search -opensearch` prints what it prints over Solr. This run's crawl ids and index only."""

from __future__ import annotations

import itertools
import re
import socket
import string
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import requests

from nutch2.config import Configuration
from nutch2.jobs.index import indexable
from tests.conftest import OPENSEARCH_URL as OS
from tests.conftest import require_opensearch
from tests.crawlutil import cli, conf_for, defines, rows, seed_file
from tests.proxy import Proxy
from tests.searchapp import SOLR, SearchServer, chrome, require_solr, wipe_solr
from tests.testweb import (
    SEARCHER_PAGES,
    SEARCHER_PHRASE,
    SEARCHER_PHRASE_PAGES,
    SEARCHER_RANK,
    SEARCHER_RANK_WORD,
    TestWeb,
)

pytest.importorskip("opensearchpy")

pytestmark = [pytest.mark.integration, pytest.mark.slow]
RUN = uuid.uuid4().hex[:8]
CRAWL = f"sos{RUN}"  # the crawl both indexes hold
OTHER = f"sox{RUN}"  # one document of another crawl in both
JOBS = f"soj{RUN}"  # what the job API of a server on OpenSearch indexes
INDEX = f"nutch2-test-searcher-{RUN}"
INDEX_URL = f"{OS}/{INDEX}"
SECRET = "quixossecretzor"  # only the other crawl's document has it
SOLR_DOWN = "Search is unavailable: Solr does not answer. The server's log says why; try again later."


@dataclass
class Crawl:
    tmp: Path
    defines: list[str]
    conf: Configuration


@pytest.fixture(scope="module")
def web():
    with TestWeb(hosts=3, pages_per_host=8, slow_seconds=0.5, searcher=True) as w:
        yield w


def _drop() -> None:
    requests.delete(f"{OS}/{INDEX}", timeout=60)
    for crawl in (CRAWL, OTHER, JOBS):
        wipe_solr(crawl)


@pytest.fixture(scope="module")
def crawl(web: TestWeb, tmp_path_factory: pytest.TempPathFactory):
    """One crawl (3 rounds, not indexed), then one index run into Solr and OpenSearch at once: the same
    documents with the same ids in both; and a document of another crawl in each."""
    require_solr()
    require_opensearch()
    tmp = tmp_path_factory.mktemp("searcher-opensearch")
    d = defines(tmp, "sqlite")
    assert cli("crawl", seed_file(tmp, web.seed_url), "-crawlId", CRAWL, "-rounds", "3", "-threads", "6", *d) == 0
    try:
        assert cli("index", "-all", "-crawlId", CRAWL, "-solr", SOLR, "-opensearch", INDEX_URL, *d) == 0
        other = {"id": f"{OTHER}!test.other:http/", "crawlId": OTHER, "url": "http://other.test/",
                 "host": "other.test", "site": "other.test", "title": "other", "content": SECRET}
        requests.post(f"{SOLR}/update?commit=true", json=[other], timeout=30).raise_for_status()
        requests.put(f"{INDEX_URL}/_doc/{other['id']}", params={"refresh": "true"}, json=other,
                     timeout=30).raise_for_status()
        yield Crawl(tmp, d, conf_for(tmp, "sqlite"))
    finally:
        _drop()


@pytest.fixture(scope="module")
def solr_server(crawl: Crawl):
    with SearchServer(["-crawlId", CRAWL, "-solr", SOLR, *crawl.defines], crawl.tmp / "server-solr.log") as s:
        yield s


@pytest.fixture(scope="module")
def os_server(crawl: Crawl):
    with SearchServer(["-crawlId", CRAWL, "-opensearch", INDEX_URL, *crawl.defines],
                      crawl.tmp / "server-opensearch.log") as s:
        yield s


def api(server: SearchServer, path: str = "/api/search", **params: object) -> requests.Response:
    return requests.get(f"{server.url}{path}", params=params, timeout=60)


def unique(web: TestWeb, path: str) -> str:
    word = web.pages[web.trap_url(path)].unique_word
    assert word
    return word


def in_opensearch(crawl_id: str) -> int:
    r = requests.post(f"{INDEX_URL}/_count", json={"query": {"term": {"crawlId": crawl_id}}}, timeout=30)
    r.raise_for_status()
    return r.json()["count"]


# ------------------------------------------------------------------------------------------- the same hits


def test_both_indexes_hold_the_crawl(crawl: Crawl) -> None:
    docs = sum(1 for p in rows(crawl.conf, CRAWL).values() if indexable(p))
    solr = requests.get(f"{SOLR}/select", params={"q": "*:*", "fq": f"crawlId:{CRAWL}", "rows": 0},
                        timeout=30).json()["response"]["numFound"]
    assert in_opensearch(CRAWL) == solr == docs > 20


def _queries(web: TestWeb) -> list[dict[str, object]]:
    host = web.hosts[1]
    return [{"q": "http", "collapse": 0, "rows": 100}, {"q": "http", "rows": 100},
            {"q": unique(web, "/searcher/xss.html")}, {"q": "爬虫"}, {"q": "网络爬虫"}, {"q": "中文"}, {"q": "爬索"},
            {"q": SEARCHER_RANK_WORD, "collapse": 0}, {"q": SEARCHER_RANK_WORD}, {"q": SEARCHER_PHRASE, "collapse": 0},
            {"q": f'"{SEARCHER_PHRASE}"', "collapse": 0}, {"q": f"title:{SEARCHER_RANK_WORD}", "collapse": 0},
            {"q": f"http -{SEARCHER_RANK_WORD}", "collapse": 0, "rows": 100}, {"q": "hosts"},
            {"q": f"http host:{host}", "rows": 100}, {"q": f"site:{host}", "rows": 100},
            {"q": "http", "host": host, "rows": 100}, {"q": "http site:no.such.site"}]


def test_the_json_api_gives_the_same_hits_over_both(solr_server: SearchServer, os_server: SearchServer,
                                                     web: TestWeb) -> None:
    found = 0
    for params in _queries(web):
        a, b = api(solr_server, **params).json(), api(os_server, **params).json()
        assert b["numFound"] == a["numFound"], (params, a["numFound"], b["numFound"])
        assert b["facets"] == a["facets"] and b["collapsed"] == a["collapsed"], params  # the host facet's counts
        assert {h["host"]: h["moreFromHost"] for h in b["hits"]} == {h["host"]: h["moreFromHost"] for h in a["hits"]}
        found += bool(b["hits"])
        if params.get("collapse", 1) != 0:
            # one hit per site is the site's best-scoring page, and pages that score about the same may come out in
            # another order in each engine (Solr's core holds other crawls too, which moves its term statistics):
            # the same sites, each with a page that is one of its hits over the other engine
            every = {h["url"] for h in api(solr_server, **{**params, "collapse": 0, "rows": 100}).json()["hits"]}
            assert {h["url"] for h in b["hits"]} <= every, params
            continue
        assert {h["url"] for h in b["hits"]} == {h["url"] for h in a["hits"]}, params
        assert {h["url"]: (h["id"], h["title"], h["fetched"], h["cache"]) for h in b["hits"]} == {
            h["url"]: (h["id"], h["title"], h["fetched"], h["cache"]) for h in a["hits"]}, params
    assert found >= 14  # most queries find something: the comparison compares hits
    # one hit per site: every host once, the rest counted as over Solr
    folded = api(os_server, q="http", rows=100).json()
    every = api(os_server, q="http", rows=100, collapse=0).json()
    per_host: dict[str, int] = {}
    for h in every["hits"]:
        per_host[h["host"]] = per_host.get(h["host"], 0) + 1
    assert folded["numFound"] == len(folded["hits"]) == len(per_host) >= 3
    assert {h["host"]: h["moreFromHost"] + 1 for h in folded["hits"]} == per_host
    assert {f["value"]: f["count"] for f in folded["facets"]["host"]} == per_host


def test_chinese_and_ranking_over_opensearch(os_server: SearchServer, web: TestWeb) -> None:
    url = web.trap_url("/searcher/chinese.html")
    for q in ("爬虫", "中文", "搜索引擎", "网络爬虫"):
        res = api(os_server, q=q).json()
        assert [h["url"] for h in res["hits"]] == [url], q
        assert "<mark>" in res["hits"][0]["snippet"], q
    assert "<mark>爬虫</mark>" in api(os_server, q="爬虫").json()["hits"][0]["snippet"]
    assert api(os_server, q="爬索").json()["numFound"] == 0  # two characters the page has, never side by side
    titles = [h["title"] for h in api(os_server, q=SEARCHER_RANK_WORD, collapse=0).json()["hits"]]
    assert titles[0] == SEARCHER_RANK["/searcher/rank-title.html"] and len(titles) == 3  # the title counts most
    urls = [h["url"] for h in api(os_server, q=SEARCHER_PHRASE, collapse=0).json()["hits"]]
    assert urls == [web.trap_url(SEARCHER_PHRASE_PAGES[1]), web.trap_url(SEARCHER_PHRASE_PAGES[0])]  # the phrase


def test_words_over_title_and_text_are_marked_in_the_snippet(os_server: SearchServer, crawl: Crawl,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    """"bird saffron": one word in the pages' titles, one in their text. OpenSearch's highlighters find no term
    in the cross_fields query that matches such words, so these hits had no marked word (the search command: no
    snippet at all); the highlight has its own query."""
    first = SEARCHER_PHRASE.split()[0]
    res = api(os_server, q=f"bird {first}", collapse=0).json()
    assert res["numFound"] == 2, res
    assert all(f"<mark>{first}</mark>" in h["snippet"] for h in res["hits"]), res["hits"]
    capsys.readouterr()
    assert cli("search", f"bird {first}", "-crawlId", CRAWL, "-opensearch", INDEX_URL, *crawl.defines) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 7 and f"*{first}*" in out[3] and f"*{first}*" in out[6], out


def test_paging_over_opensearch(solr_server: SearchServer, os_server: SearchServer) -> None:
    total = api(os_server, q="http", collapse=0, rows=1).json()["numFound"]
    assert total == api(solr_server, q="http", collapse=0, rows=1).json()["numFound"] > 20
    pages = [api(os_server, q="http", start=s, rows=10, collapse=0).json() for s in range(0, total, 10)]
    urls = [h["url"] for p in pages for h in p["hits"]]
    assert len(urls) == len(set(urls)) == total  # every hit once
    assert [len(p["hits"]) for p in pages] == [min(10, total - s) for s in range(0, total, 10)]
    everything = {h["url"] for h in api(solr_server, q="http", collapse=0, rows=100).json()["hits"]}
    assert set(urls) == everything
    past = api(os_server, q="http", start=10_000, rows=100, collapse=0).json()
    assert past["numFound"] == total and past["hits"] == []  # MAX_START, within OpenSearch's result window


def test_the_pages_over_opensearch(os_server: SearchServer, web: TestWeb) -> None:
    import xml.etree.ElementTree as ET

    page = api(os_server, "/search", q="http").text
    assert " ms in OpenSearch, " in page and 'id="collapse-note"' in page
    host = web.hosts[0]
    more = re.search(rf'href="/search\?q=http&amp;host={re.escape(host)}">(\d+) more from {re.escape(host)}</a>', page)
    assert more and int(more.group(1)) > 0, page
    word = unique(web, "/searcher/xss.html")
    results = api(os_server, "/search", q=word).text
    assert "&lt;script&gt;alert(&#34;xss-title&#34;)&lt;/script&gt;" in results and "<script" not in results
    assert f"<mark>{word}</mark>" in results
    # the cached copy and the page info of a hit: the row key from the hit's id
    links = re.findall(r'href="(/(?:cached|info)\?url=[^"]+)"', api(os_server, "/search", q="爬虫").text)
    assert len(links) == 2, links
    for link in links:
        r = requests.get(os_server.url + link.replace("&amp;", "&"), timeout=30)
        assert r.status_code == 200 and SEARCHER_PAGES["/searcher/chinese.html"] in r.text, link
    ns = {"os": "http://a9.com/-/spec/opensearch/1.1/"}
    channel = ET.fromstring(api(os_server, "/rss", q=word).content).find("channel")
    assert channel.find("os:totalResults", ns).text == "1"
    item = channel.find("item")
    assert item.find("link").text == web.trap_url("/searcher/xss.html") and word in item.find("description").text
    desc = ET.fromstring(api(os_server, "/opensearch.xml").content)
    assert desc.find("os:Url", ns).get("template").startswith(f"{os_server.url}/search?q={{searchTerms}}")
    home = api(os_server, "/").text
    m = re.search(r'id="index-summary"><b>([\d,]+)</b> pages in the index, the newest fetched <b>', home)
    assert m and int(m.group(1).replace(",", "")) == in_opensearch(CRAWL), home


# ------------------------------------------------------------------------------------------- hostile input


HOSTILE = [f"{{!join from=id to=id fromIndex=nutch}}{SECRET}", "{!join from=crawlId to=crawlId}*:*",
           f"{{!rerank reRankQuery=$q reRankDocs=1000}}{SECRET}", f'_query_:"{{!lucene}}{SECRET}"',
           f"{{!lucene}}{SECRET}", f"{{!edismax qf=content}}{SECRET}", SECRET, f"crawlId:{OTHER}", f"id:{OTHER}*",
           '_val_:"sum(1,1)"', f"{{!frange l=0}}{SECRET}", "{!parent which=*:*}", f"content:{SECRET}",
           f"text:{SECRET}", "url:http://other.test/", "*", "?", "*:*", "/.*/", "url:/.*/",
           "/[a-z]+/", "a*", "*ache", "qu?x*", "nutch~2", "http~", "[a TO z]", "{a TO z}", "title:[* TO *]", "\\",
           '"', '"""', "(" * 500, ")" * 500, "-", "OR", "NOT", "OR OR OR", "-http", "a " * 499, "title:" * 150,
           "x" * 1000, "爬" * 999, '"' + "a " * 400 + '"', "+" * 999, "&&||!" * 100, "\x00\x01", "<script>"]


# ids by position: the queries hold this run's random crawl id, and xdist workers must collect the same names
@pytest.mark.parametrize("q", HOSTILE, ids=[f"hostile{i}" for i in range(len(HOSTILE))])
def test_hostile_queries_are_words_over_opensearch_as_over_solr(solr_server: SearchServer, os_server: SearchServer,
                                                               q: str) -> None:
    b = api(os_server, q=q, collapse=0, rows=100)
    assert b.status_code == 200, b.text[:300]
    found = b.json()
    assert not any("other.test" in h["url"] or SECRET in h["snippet"] for h in found["hits"])  # no other crawl's
    a = api(solr_server, q=q, collapse=0, rows=100).json()
    assert found["numFound"] == a["numFound"] and {h["url"] for h in found["hits"]} == {h["url"] for h in a["hits"]}
    assert api(os_server, "/search", q=q).status_code == 200


def test_a_query_too_large_to_run_is_one_message_and_a_400(solr_server: SearchServer,
                                                           os_server: SearchServer) -> None:
    words = " ".join("".join(p) for p in itertools.islice(itertools.product(string.ascii_lowercase, repeat=2), 333))
    assert len(words) <= 1000
    for server, name in ((solr_server, "Solr"), (os_server, "OpenSearch")):
        r = api(server, q=words)
        assert r.status_code == 400 and list(r.json()) == ["error"], r.text[:300]
        assert r.json()["error"].startswith(f"{name} could not run this query: ") and "maxClauseCount" in r.text
        page = api(server, "/search", q=words)
        assert page.status_code == 400 and page.text.count('role="alert"') == 1
        assert "9200" not in r.text + page.text and "8983" not in r.text + page.text
    assert api(os_server, q="http").status_code == 200  # and the next query is answered


# ------------------------------------------------------------------------------------------- the cluster gone


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_the_cluster_gone_is_the_same_503_as_a_dead_solr(crawl: Crawl, web: TestWeb) -> None:
    target = urlsplit(OS)
    proxy = Proxy((target.hostname, target.port))
    try:
        args = ["-crawlId", CRAWL, "-opensearch", f"http://127.0.0.1:{proxy.port}/{INDEX}", *crawl.defines]
        with SearchServer(args, crawl.tmp / "server-opensearch-down.log") as server:
            word = unique(web, "/searcher/xss.html")
            assert api(server, q=word).json()["numFound"] == 1
            proxy.cut()
            r = api(server, q=word)
            assert r.status_code == 503 and r.json() == {"error": SOLR_DOWN.replace("Solr", "OpenSearch")}
            page = api(server, "/search", q=word)
            assert page.status_code == 503 and page.text.count('role="alert"') == 1
            assert "Search is unavailable" in page.text and 'class="hit"' not in page.text
            for text in (r.text, page.text):
                assert str(proxy.port) not in text and INDEX not in text  # the URL is in the server's log only
            assert f"OpenSearch at http://127.0.0.1:{proxy.port} failed to search index {INDEX}" in server.output()
            assert api(server, "/api/stats").status_code == 200  # the rest of the app needs no index
            assert api(server, "/info", url=web.seed_url).status_code == 200
            proxy.restore()
            deadline = time.monotonic() + 30
            while (r := api(server, q=word)).status_code != 200:
                assert time.monotonic() < deadline, r.text
                time.sleep(0.5)
            assert r.json()["numFound"] == 1
    finally:
        proxy.close()


def test_the_server_says_at_start_that_the_cluster_does_not_answer(crawl: Crawl) -> None:
    closed = _closed_port()
    args = ["-crawlId", CRAWL, "-opensearch", f"http://ann:s3cret@127.0.0.1:{closed}/{INDEX}", *crawl.defines]
    with SearchServer(args, crawl.tmp / "server-opensearch-dead.log") as server:
        r = api(server, q="http")
        assert r.status_code == 503 and r.json()["error"] == SOLR_DOWN.replace("Solr", "OpenSearch")
    out = server.output()
    assert f"(OpenSearch http://127.0.0.1:{closed}/{INDEX}, login: none)" in out and "s3cret" not in out
    assert [x for x in out.splitlines() if "warning" in x] == [
        f"server: warning: OpenSearch at http://127.0.0.1:{closed} failed to answer a ping: connection refused; "
        "start it (docker/services.sh start opensearch) or fix -opensearch / opensearch.url; searches fail until "
        "it answers"]
    missing = f"nutch2-test-none-{RUN}"
    with SearchServer(["-crawlId", CRAWL, "-opensearch", f"{OS}/{missing}", *crawl.defines],
                      crawl.tmp / "server-opensearch-noindex.log") as server:
        assert api(server, q="http").status_code == 503
    assert [x for x in server.output().splitlines() if "warning" in x] == [
        f"server: warning: OpenSearch at {OS} has no index {missing}: index a crawl into it (nutch2 index -all "
        "-opensearch URL) or fix the index name in -opensearch / opensearch.url; searches fail until it answers"]


# ------------------------------------------------------------------------------------------- jobs, the command


def _finished(server: SearchServer, job_id: str) -> dict[str, Any]:
    deadline = time.monotonic() + 180
    while (info := requests.get(f"{server.url}/api/jobs/{job_id}", timeout=30).json())["state"] == "RUNNING":
        assert time.monotonic() < deadline, info
        time.sleep(0.2)
    return info


def test_jobs_of_a_server_on_opensearch_index_there(crawl: Crawl, web: TestWeb) -> None:
    args = ["-crawlId", JOBS, "-opensearch", INDEX_URL, "-jobs", *crawl.defines]
    with SearchServer(args, crawl.tmp / "server-opensearch-jobs.log") as server:
        r = requests.post(f"{server.url}/api/jobs", json={"type": "crawl", "args": {
            "seedUrls": [web.seed_url], "rounds": 1, "index": True}}, timeout=30)
        assert r.status_code == 201, r.text
        info = _finished(server, r.json()["id"])
        assert info["state"] == "FINISHED" and info["counters"]["index"]["indexed"] == 1, info
        word = web.pages[web.seed_url].unique_word
        assert [h["url"] for h in api(server, q=word).json()["hits"]] == [web.seed_url]
        index = _finished(server, requests.post(f"{server.url}/api/jobs", json={"type": "index", "args": {
            "reindex": True}}, timeout=30).json()["id"])
        assert index["state"] == "FINISHED" and index["counters"]["index"]["indexed"] == 1, index
        r = requests.post(f"{server.url}/api/jobs", json={"type": "index", "args": {"all": True, "opensearch": OS}},
                          timeout=30)
        assert r.status_code == 400 and "cannot be set through the job API" in r.json()["error"]
        shown = requests.get(f"{server.url}/api/jobs", timeout=30).text
        assert str(urlsplit(OS).port) not in shown and INDEX not in shown  # the server's index is its own
    assert in_opensearch(JOBS) == 1
    solr = requests.get(f"{SOLR}/select", params={"q": "*:*", "fq": f"crawlId:{JOBS}", "rows": 0}, timeout=30)
    assert solr.json()["response"]["numFound"] == 0  # nothing went to Solr


def test_the_search_command_over_opensearch(crawl: Crawl, web: TestWeb, capsys: pytest.CaptureFixture[str]) -> None:
    d = crawl.defines
    word = unique(web, "/searcher/xss.html")
    for q in (word, "爬虫"):
        capsys.readouterr()
        assert cli("search", q, "-crawlId", CRAWL, "-solr", SOLR, *d) == 0
        over_solr = capsys.readouterr().out.splitlines()
        assert cli("search", q, "-crawlId", CRAWL, "-opensearch", INDEX_URL, *d) == 0
        over_os = capsys.readouterr().out.splitlines()
        assert over_os[:3] == over_solr[:3] and over_os[0] == f"1 hit for {q!r}", (over_os, over_solr)
        assert len(over_os) == 4 and f"*{q}*" in over_os[3], over_os  # the snippet, the match marked
    assert cli("search", word, "-crawlId", "nosuch", "-opensearch", INDEX_URL, *d) == 0
    found = capsys.readouterr()
    assert found.out == f"0 hits for {word!r}\n"
    (line,) = found.err.strip().splitlines()
    assert line.startswith("search: the index holds no document of crawl nosuch; it holds ") and "give -crawlId" in line
    assert re.search(rf"\b{CRAWL} \(\d+ documents\)", line), line
    assert cli("search", word, "-opensearch", f"http://127.0.0.1:{_closed_port()}/{INDEX}", *d) == 1
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert "failed to answer a ping: connection refused" in line and "Traceback" not in line


# ------------------------------------------------------------------------------------------- a browser


def test_browser_search_over_opensearch(os_server: SearchServer, web: TestWeb, shots: Path,
                                        tmp_path_factory: pytest.TempPathFactory) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    driver = chrome(tmp_path_factory.mktemp("chromium-profile"))
    try:
        driver.set_page_load_timeout(60)
        driver.get(os_server.url + "/")
        box = driver.find_element(By.NAME, "q")
        box.send_keys("爬虫")
        driver.find_element(By.CSS_SELECTOR, "form.box button").click()
        WebDriverWait(driver, 30).until(lambda d: "/search?" in d.current_url and d.find_elements(By.ID, "summary"))
        hits = driver.find_elements(By.CSS_SELECTOR, "li.hit")
        assert len(hits) == 1
        assert hits[0].find_element(By.CSS_SELECTOR, "h2.title").text == SEARCHER_PAGES["/searcher/chinese.html"]
        assert "爬虫" in [m.text for m in hits[0].find_elements(By.CSS_SELECTOR, ".snippet mark")]
        assert " ms in OpenSearch" in driver.find_element(By.ID, "summary").text
        path = shots / "opensearch-chinese.png"
        assert driver.save_screenshot(str(path)) and path.stat().st_size > 5000
        driver.get(os_server.url + "/search?q=http")  # one hit per site, the rest one click away
        urls = [h.text for h in driver.find_elements(By.CSS_SELECTOR, "li.hit .url")]
        assert len({urlsplit(u).hostname for u in urls}) == len(urls) >= 3
        assert len(driver.find_elements(By.CSS_SELECTOR, "a.more-from-site")) >= 3
        path = shots / "opensearch-results.png"
        assert driver.save_screenshot(str(path)) and path.stat().st_size > 5000
        host = web.hosts[2]
        counts = {li.find_element(By.CSS_SELECTOR, "a, b").text: int(li.find_element(By.CSS_SELECTOR, ".count").text)
                  for li in driver.find_elements(By.CSS_SELECTOR, "aside.facets li")}
        driver.find_element(By.LINK_TEXT, host).click()
        assert int(driver.find_element(By.ID, "total").text) == counts[host]
        assert all(urlsplit(h.text).hostname == host for h in driver.find_elements(By.CSS_SELECTOR, "li.hit .url"))
    finally:
        driver.quit()
