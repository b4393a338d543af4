"""The Searcher (`nutch2 server`) against a real crawl of the test web, real Solr and headless Chromium.

One crawl (3 rounds, indexed each round) feeds every test here; the server runs as a child process exactly as
a user starts it. Browser tests save screenshots into the pytest tmp dir (path printed with -s).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlencode, urlsplit

import pytest
import requests

from nutch2.config import Configuration
from nutch2.marks import Mark
from nutch2.status import CrawlStatus
from nutch2.urls.tableutil import reverse_url
from tests.crawlutil import cli, conf_for, defines, rows
from tests.proxy import Proxy
from tests.searchapp import SOLR, SearchServer, require_solr, wipe_solr
from tests.testweb import (
    SCRIPT_RAN,
    SCRIPT_STATUS,
    SEARCHER_ANCHOR,
    SEARCHER_CHINESE_TEXT,
    SEARCHER_CSS,
    SEARCHER_IMAGE,
    SEARCHER_PAGES,
    SEARCHER_PHRASE,
    SEARCHER_PHRASE_PAGES,
    SEARCHER_RANK,
    SEARCHER_RANK_WORD,
    SEARCHER_STYLED,
    SEARCHER_STYLED_COLOR,
    SEARCHER_TARGET,
    TestWeb,
)

pytestmark = [pytest.mark.integration, pytest.mark.slow]
CRAWL = "web"


@dataclass
class Crawl:
    tmp: Path
    defines: list[str]
    conf: Configuration
    started: str  # ISO 8601 UTC, to the second
    ended: str


@pytest.fixture(scope="module")
def web():
    with TestWeb(hosts=3, pages_per_host=8, slow_seconds=0.5, searcher=True) as w:
        yield w


@pytest.fixture(scope="module")
def crawl(web: TestWeb, tmp_path_factory: pytest.TempPathFactory) -> Crawl:
    solr = require_solr()
    wipe_solr(CRAWL)
    tmp = tmp_path_factory.mktemp("searcher")
    # stylesheets and images fetched into the crawl, for snapshots: urlfilter-suffix drops .css/.gif and the
    # parser leaves img links out by default
    d = defines(tmp, "sqlite", **{"plugin.excludes": "urlfilter-suffix",
                                  "parser.html.outlinks.ignore_tags": "script,source"})
    seeds = tmp / "seeds.txt"
    seeds.write_text(web.seed_url + "\n")
    started = _now()
    assert cli("crawl", seeds, "-crawlId", CRAWL, "-rounds", "3", "-threads", "6", "-solr", solr, *d) == 0
    return Crawl(tmp, d, conf_for(tmp, "sqlite"), started, _now())


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


@pytest.fixture(scope="module")
def server(crawl: Crawl):
    with SearchServer(["-crawlId", CRAWL, "-solr", SOLR, *crawl.defines], crawl.tmp / "server.log") as s:
        yield s


def api(server: SearchServer, path: str, **params: object) -> requests.Response:
    return requests.get(f"{server.url}{path}", params=params, timeout=60)


def unique(web: TestWeb, path: str) -> str:
    word = web.pages[web.trap_url(path)].unique_word
    assert word
    return word


# ------------------------------------------------------------------------------------------- JSON API


def test_api_search_hits_snippets_paging_and_host_facet(server: SearchServer, web: TestWeb, crawl: Crawl) -> None:
    table = rows(crawl.conf, CRAWL)
    page = next(s for u, s in web.pages.items() if s.kind == "html" and "/p/" in u and reverse_url(u) in table)
    res = api(server, "/api/search", q=page.unique_word).json()
    assert res["numFound"] == 1 and res["qtimeMs"] >= 0
    hit = res["hits"][0]
    assert hit["url"] == page.url and hit["title"] == page.title
    # the fetch time comes from the row: Solr's tstamp is Nutch 2's fetchTime, the next fetch after updatedb
    assert crawl.started <= hit["fetched"] <= crawl.ended < hit["tstamp"]
    assert f"<mark>{page.unique_word}</mark>" in hit["snippet"]
    # every URL is words in the catch-all field too, "http" among them: every document, three pages of 10 and more
    everything = api(server, "/api/search", q="http", rows=100, collapse=0).json()
    total = everything["numFound"]
    assert total > 20 and len(everything["hits"]) == total
    pages = [api(server, "/api/search", q="http", start=s, rows=10, collapse=0).json() for s in range(0, total, 10)]
    urls = [h["url"] for p in pages for h in p["hits"]]
    assert len(urls) == total and set(urls) == {h["url"] for h in everything["hits"]}
    # the host facet counts per host; narrowing to one keeps the facet of all hosts
    facet = {f["value"]: f["count"] for f in everything["facets"]["host"]}
    assert sum(facet.values()) == total and len(facet) >= 3
    host = web.hosts[1]
    narrowed = api(server, "/api/search", q="http", host=host, rows=100).json()  # one host: never collapsed
    assert narrowed["numFound"] == facet[host]
    assert {urlsplit(h["url"]).hostname for h in narrowed["hits"]} == {host}
    assert {f["value"]: f["count"] for f in narrowed["facets"]["host"]} == facet
    assert api(server, "/api/search", q="http", host="no.such.host").json()["numFound"] == 0


def test_api_search_rejects_bad_parameters(server: SearchServer) -> None:
    for params, word in (({}, "q is missing"), ({"q": "x", "start": "-1"}, "start=-1"),
                         ({"q": "x", "rows": "ten"}, "rows='ten'"), ({"q": "x", "start": "99999999"}, "start"),
                         ({"q": "x", "rows": "0"}, "rows=0"), ({"q": "x", "host": "a b"}, "host"),
                         ({"q": "x" * 1001}, "1001 characters")):
        r = api(server, "/api/search", **params)
        assert r.status_code == 400, params
        assert word in r.json()["error"], (params, r.json())
    assert api(server, "/api/search", q="host", rows=1000).json()["rows"] == 100  # capped
    # edismax reads what the standard parser would reject as words: no error, the query kept in the box
    odd = api(server, "/search", q="title:( AND")
    assert odd.status_code == 200 and 'value="title:( AND"' in odd.text and "Traceback" not in odd.text


def test_api_page_is_the_row(server: SearchServer, web: TestWeb, crawl: Crawl) -> None:
    target = web.trap_url(SEARCHER_TARGET)
    xss = web.trap_url("/searcher/xss.html")
    row = api(server, "/api/page", url=target).json()
    stored = rows(crawl.conf, CRAWL)[reverse_url(target)]
    assert row["url"] == target and row["key"] == reverse_url(target)
    assert row["status"] == "FETCHED" and row["title"] == SEARCHER_PAGES[SEARCHER_TARGET]
    assert row["inlinks"] == [{"url": xss, "anchor": SEARCHER_ANCHOR}]
    assert row["signature"] == stored.signature.hex() and row["score"] == pytest.approx(stored.score)
    assert row["markers"][Mark.UPDATEDB.value] == stored.batch_id == row["batchId"]
    assert row["markers"][Mark.INDEX.value] == stored.batch_id
    assert row["headers"]["ETag"] and row["contentLength"] == len(stored.content)
    xss_row = api(server, "/api/page", url=xss).json()
    assert xss_row["outlinks"] == [{"url": target, "anchor": SEARCHER_ANCHOR}]
    missing = api(server, "/api/page", url=web.url(0, "/not/crawled.html"))
    assert missing.status_code == 404 and "is not in crawl web" in missing.json()["error"]
    assert api(server, "/api/page", url="no-scheme").status_code == 400
    assert "url is missing" in api(server, "/api/page").json()["error"]


def test_api_stats_and_batches_match_the_table(server: SearchServer, crawl: Crawl) -> None:
    table = rows(crawl.conf, CRAWL)
    stats = api(server, "/api/stats", top=2).json()
    assert stats["total"] == len(table)  # the store's kept count, now
    # statuses, hosts and scores: what the crawl command counted at its end (no view reads every row)
    readdb = stats["readdb"]
    want: dict[str, int] = {}
    for p in table.values():
        want[CrawlStatus(p.status).name] = want.get(CrawlStatus(p.status).name, 0) + 1
    assert readdb["status"] == want and readdb["total"] == len(table)
    assert len(readdb["hosts"]) == 2 and readdb["hostCount"] >= 4
    assert readdb["score"]["min"] == pytest.approx(min(p.score for p in table.values()))
    assert crawl.started <= readdb["computedAt"] <= crawl.ended
    assert stats["batches"] == 3 and stats["crawl"] is None
    batches = api(server, "/api/batches").json()["batches"]
    ids = sorted({p.batch_id for p in table.values() if p.batch_id})
    assert sorted(b["batchId"] for b in batches) == ids and len(ids) == 3
    for b in batches:  # finished batches keep what each step did (the journal), their marks gone
        mine = [p for p in table.values() if p.batch_id == b["batchId"]]
        assert b["rows"] == b["generated"] >= len(mine) >= b["updated"]  # (rows generated again since left it)
        assert b["updated"] == sum(1 for p in table.values() if Mark.UPDATEDB.check(p) == b["batchId"])
        assert 0 < b["parsed"] <= b["fetched"] <= b["generated"]
        # what the index step sent; the duplicates the crawl's dedup and clean took out of the index since have
        # lost their mark
        cleaned = sum(1 for p in table.values() if p.batch_id == b["batchId"] and p.status == CrawlStatus.DUPLICATE)
        assert b["indexed"] == sum(1 for p in table.values() if Mark.INDEX.check(p) == b["batchId"]) + cleaned > 0
        assert b["stage"] == "indexed" and b["generatedAt"].endswith("Z")


def test_cached_copy_is_sandboxed_decoded_and_based_on_the_original(server: SearchServer, web: TestWeb) -> None:
    for path, title in (("/traps/charset-cp1251-meta.html", "Привет, мир"), ("/traps/charset-utf16-bom.html",
                                                                              "Ελληνικά"),
                        ("/searcher/chinese.html", "网络爬虫")):
        r = api(server, "/cached/raw", url=web.trap_url(path))
        assert r.status_code == 200 and r.headers["content-type"] == "text/html; charset=utf-8"
        csp = r.headers["content-security-policy"]
        assert csp.startswith("sandbox allow-top-navigation-by-user-activation;")
        assert "script-src 'none'" in csp and "form-action 'none'" in csp
        assert title in r.content.decode("utf-8")
        assert "<base" not in r.text  # links are rewritten instead
    banner = api(server, "/cached", url=web.trap_url("/searcher/chinese.html"))
    assert "Decoded as <b>gbk</b>" in banner.text and '<iframe class="cached-frame"' in banner.text
    assert ' sandbox="allow-top-navigation-by-user-activation" ' in banner.text
    assert "script-src" not in banner.headers["content-security-policy"]
    assert "default-src 'none'" in banner.headers["content-security-policy"]
    # a page's own <base href> is resolved against where it was fetched from: its links lead to the cached copies
    based = api(server, "/cached/raw", url=web.trap_url("/traps/base.html")).text
    assert f'href="/cached?{urlencode({"url": web.trap_url("/traps/based/a.html")})}"' in based
    pdf = api(server, "/cached", url=web.trap_url("/traps/doc.pdf"))
    assert pdf.status_code == 404 and "application/pdf" in pdf.text
    assert api(server, "/cached/raw", url=web.trap_url("/traps/doc.pdf")).status_code == 404


def test_crawled_markup_is_escaped_in_html(server: SearchServer, web: TestWeb) -> None:
    res = api(server, "/search", q=unique(web, "/searcher/xss.html"))
    assert "&lt;script&gt;alert(&#34;xss-title&#34;)&lt;/script&gt; &amp; &lt;b&gt;bold&lt;/b&gt;" in res.text
    assert "<script" not in res.text and "<b>bold" not in res.text
    info = api(server, "/info", url=web.trap_url(SEARCHER_TARGET)).text
    assert "&lt;img src=x onerror=alert(&#39;xss-anchor&#39;)&gt;" in info and "<img" not in info
    assert "x&#39;onmouseover=&#39;alert(1)&#39;.html" in info and "x'onmouseover" not in info


def test_job_api_is_off_without_jobs(server: SearchServer) -> None:
    r = requests.post(f"{server.url}/api/jobs", json={"type": "inject", "args": {}}, timeout=30)
    assert r.status_code == 404 and "-jobs" in r.json()["error"]
    assert api(server, "/api/jobs").status_code == 404
    assert api(server, "/api/jobs/web-inject-1").status_code == 404
    assert api(server, "/api/nothing").json() == {"error": "There is no page at /api/nothing."}


def test_chinese_query_finds_the_chinese_page(server: SearchServer, web: TestWeb) -> None:
    url = web.trap_url("/searcher/chinese.html")
    for q in ("爬虫", "中文", "搜索引擎", "网络爬虫"):
        res = api(server, "/api/search", q=q).json()
        assert [h["url"] for h in res["hits"]] == [url], q
        assert f"<mark>{q}</mark>" in res["hits"][0]["snippet"] or "<mark>" in res["hits"][0]["snippet"], q
    # two characters the page has, but never side by side: bigrams do not match (single characters would)
    assert "爬" in SEARCHER_CHINESE_TEXT and "索" in SEARCHER_CHINESE_TEXT and "爬索" not in SEARCHER_CHINESE_TEXT
    assert api(server, "/api/search", q="爬索").json()["numFound"] == 0
    # Latin words still match whole words only, no stemming
    assert api(server, "/api/search", q="hosts").json()["numFound"] == 0


# ------------------------------------------------------------------------------------------- browser


def _shot(driver, shots: Path, name: str) -> None:
    path = shots / f"{name}.png"
    assert driver.save_screenshot(str(path)), path
    assert path.stat().st_size > 5000  # a rendered page, not an empty canvas


def _search(driver, server: SearchServer, q: str) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    driver.get(server.url + "/")
    box = driver.find_element(By.NAME, "q")
    box.clear()
    box.send_keys(q)
    driver.find_element(By.CSS_SELECTOR, "form.box button").click()
    # the click starts the navigation; the results page may not be there yet when it returns
    WebDriverWait(driver, 30).until(lambda d: "/search?" in d.current_url and d.find_elements(By.ID, "summary"),
                                    message=f"no results page for {q!r}")


def test_browser_search_paging_and_host_facet(browser, server: SearchServer, web: TestWeb, shots: Path) -> None:
    from selenium.webdriver.common.by import By

    driver = browser
    driver.get(server.url + "/")
    _shot(driver, shots, "01-home")
    driver.get(server.url + "/search?q=http&collapse=0")
    total = int(driver.find_element(By.ID, "total").text.replace(",", ""))
    hits = driver.find_elements(By.CSS_SELECTOR, "li.hit")
    assert total > 20 and len(hits) == 10
    assert "Results 1–10 of" in driver.find_element(By.ID, "summary").text
    assert driver.find_elements(By.CSS_SELECTOR, "li.hit .snippet mark")
    first_page = [h.find_element(By.CSS_SELECTOR, ".url").text for h in hits]
    _shot(driver, shots, "02-results")
    driver.find_element(By.CSS_SELECTOR, "a[rel=next]").click()
    assert "Results 11–20 of" in driver.find_element(By.ID, "summary").text
    second_page = [h.text for h in driver.find_elements(By.CSS_SELECTOR, "li.hit .url")]
    assert len(second_page) == 10 and not set(first_page) & set(second_page)
    assert driver.find_element(By.CSS_SELECTOR, ".paging .current").text == "2"
    driver.find_element(By.LINK_TEXT, "3").click()
    assert driver.find_element(By.CSS_SELECTOR, ".paging .current").text == "3"
    driver.find_element(By.CSS_SELECTOR, "a[rel=prev]").click()
    assert driver.find_element(By.CSS_SELECTOR, ".paging .current").text == "2"
    # narrow to host 2 with the facet, then back to all hosts
    host = web.hosts[2]
    counts = {li.find_element(By.CSS_SELECTOR, "a, b").text: int(li.find_element(By.CSS_SELECTOR, ".count").text)
              for li in driver.find_elements(By.CSS_SELECTOR, "aside.facets li")}
    driver.find_element(By.LINK_TEXT, host).click()
    assert int(driver.find_element(By.ID, "total").text) == counts[host]
    urls = [h.text for h in driver.find_elements(By.CSS_SELECTOR, "li.hit .url")]
    assert urls and all(urlsplit(u).hostname == host for u in urls)
    assert driver.find_element(By.CSS_SELECTOR, "aside.facets li.selected").text.startswith(host)
    assert len(driver.find_elements(By.CSS_SELECTOR, "aside.facets li")) == len(counts)
    _shot(driver, shots, "03-host-facet")
    driver.find_element(By.LINK_TEXT, "all hosts").click()
    assert int(driver.find_element(By.ID, "total").text.replace(",", "")) == total


def test_browser_cached_page_runs_no_script(browser, server: SearchServer, web: TestWeb, shots: Path) -> None:
    from selenium.webdriver.common.by import By

    driver = browser
    live = web.trap_url("/searcher/script.html")
    # the control: served by its own site, the page's script runs and renames it
    driver.get(live)
    assert driver.title == SCRIPT_RAN
    assert driver.find_element(By.ID, "status").text == SCRIPT_RAN
    log_before = len(server.output())
    _search(driver, server, unique(web, "/searcher/script.html"))
    hit = driver.find_element(By.CSS_SELECTOR, "li.hit")
    assert hit.find_element(By.CSS_SELECTOR, ".url").text == live
    assert hit.find_element(By.CSS_SELECTOR, ".snippet mark").text == unique(web, "/searcher/script.html")
    hit.find_element(By.LINK_TEXT, "cached").click()
    banner = driver.find_element(By.ID, "banner").text
    assert live in banner and "as fetched on" in banner and "utf-8" in banner
    frame = driver.find_element(By.ID, "cached-frame")
    assert frame.get_attribute("sandbox") == "allow-top-navigation-by-user-activation"  # links, on a click
    _shot(driver, shots, "04-cached")
    driver.switch_to.frame(frame)
    try:
        assert driver.find_element(By.ID, "status").text == SCRIPT_STATUS  # the script did not run
        # relative links to pages the crawl holds lead to their cached copies, in the top window
        rel = driver.find_element(By.ID, "rel")
        cached = f"{server.url}/cached?{urlencode({'url': web.trap_url('/searcher/chinese.html')})}"
        assert rel.get_attribute("href") == cached
        assert rel.get_attribute("target") == "_top"
    finally:
        driver.switch_to.default_content()
    assert driver.title == "Cached: A page with a script · web"  # not renamed through parent.document
    # the raw route opened on its own is sandboxed as well
    driver.get(f"{server.url}/cached/raw?{urlencode({'url': live})}")
    assert driver.title == "A page with a script"
    assert driver.find_element(By.ID, "status").text == SCRIPT_STATUS
    seen = server.output()[log_before:]  # the access log of the requests above
    assert '"GET /cached/raw?url=' in seen and "/api/jobs" not in seen  # its fetch('/api/jobs') never ran


def test_browser_info_page(browser, server: SearchServer, web: TestWeb, shots: Path) -> None:
    from selenium.webdriver.common.by import By

    driver = browser
    _search(driver, server, unique(web, "/searcher/xss.html"))
    driver.find_element(By.CSS_SELECTOR, "li.hit a.info").click()
    assert driver.find_element(By.CSS_SELECTOR, ".status").text == "FETCHED"
    row = driver.find_element(By.ID, "row").text
    assert "Signature" in row and "Fetch time" in row and "Retries since fetch 0" in row
    marks = driver.find_element(By.ID, "marks").text
    assert "updated _updmrk_" in marks and "indexed _idxmrk_" in marks
    assert "ETag" in driver.find_element(By.ID, "headers").text
    out = driver.find_element(By.ID, "outlinks")
    assert SEARCHER_ANCHOR in out.text and not out.find_elements(By.TAG_NAME, "img")
    # follow the outlink to the target's info: its inlink carries the same anchor, shown as text
    out.find_element(By.PARTIAL_LINK_TEXT, "onmouseover").click()
    inlinks = driver.find_element(By.ID, "inlinks")
    assert SEARCHER_ANCHOR in inlinks.text and not inlinks.find_elements(By.TAG_NAME, "img")
    assert driver.find_element(By.CSS_SELECTOR, "p.url a").get_attribute("href") == web.trap_url(SEARCHER_TARGET)
    assert driver.find_element(By.CSS_SELECTOR, "p.url a").get_attribute("onmouseover") is None
    _shot(driver, shots, "05-info")


def test_browser_dashboard(browser, server: SearchServer, crawl: Crawl, shots: Path) -> None:
    from selenium.webdriver.common.by import By

    driver = browser
    driver.get(server.url + "/")
    driver.find_element(By.LINK_TEXT, "Crawl").click()
    stats = api(server, "/api/stats").json()
    readdb = stats["readdb"]
    assert driver.find_element(By.ID, "size").text.startswith(f"{stats['total']:,} URLs in the table now · 3 batches")
    assert "Counted by readdb -stats at " in driver.find_element(By.ID, "counted").text
    bars = driver.find_elements(By.CSS_SELECTOR, "#status-chart g.bar")
    assert [b.find_element(By.TAG_NAME, "text").text for b in bars] == list(readdb["status"])
    assert [int(b.find_element(By.CSS_SELECTOR, "text.n").text) for b in bars] == list(readdb["status"].values())
    widths = {b.find_element(By.TAG_NAME, "text").text: float(b.find_element(By.TAG_NAME, "rect").get_attribute(
        "width")) for b in bars}
    assert max(widths, key=widths.get) == max(readdb["status"], key=readdb["status"].get)
    assert f"TOTAL urls {readdb['total']}" in driver.find_element(By.ID, "stats").text
    assert len(driver.find_elements(By.CSS_SELECTOR, "#hosts tr")) == min(20, readdb["hostCount"])
    batch_rows = driver.find_elements(By.CSS_SELECTOR, "#batches tr")[1:]
    assert len(batch_rows) == 3 and all(r.text.endswith("indexed") for r in batch_rows)
    # finished batches show what each step did (the journal's counts), not the zeros of marks updatedb removed
    heads = [th.text for th in driver.find_elements(By.CSS_SELECTOR, "#batches tr th")]
    api_rows = {b["batchId"]: b for b in api(server, "/api/batches").json()["batches"]}
    for tr in batch_rows:
        cells = [td.text for td in tr.find_elements(By.TAG_NAME, "td")]
        row = dict(zip(heads, cells, strict=True))
        want = api_rows[row["Batch"]]
        assert [int(row[s]) for s in ("generated", "fetched", "parsed", "updated", "indexed")] == [
            want[s] for s in ("generated", "fetched", "parsed", "updated", "indexed")]
        assert int(row["fetched"]) > 0 and int(row["parsed"]) > 0 and int(row["indexed"]) > 0
        assert row["Generated at"] == want["generatedAt"][:16].replace("T", " ") + " UTC"  # read as the page's times
    _shot(driver, shots, "06-dashboard")


def test_browser_shows_hostile_titles_and_anchors_as_text(browser, server: SearchServer, web: TestWeb,
                                                          shots: Path) -> None:
    from selenium.common.exceptions import NoAlertPresentException
    from selenium.webdriver.common.by import By

    driver = browser
    _search(driver, server, unique(web, "/searcher/xss.html"))
    title = driver.find_element(By.CSS_SELECTOR, "li.hit h2.title a")
    assert title.text == SEARCHER_PAGES["/searcher/xss.html"]
    assert not title.find_elements(By.XPATH, ".//*")  # text only: no <b>, no <script>
    assert not driver.find_elements(By.TAG_NAME, "script")
    with pytest.raises(NoAlertPresentException):
        driver.switch_to.alert.text  # noqa: B018
    assert driver.title.startswith("quix")  # the query, not anything from the page
    _shot(driver, shots, "07-xss-escaped")


def test_browser_chinese_query(browser, server: SearchServer, web: TestWeb, shots: Path) -> None:
    from selenium.webdriver.common.by import By

    driver = browser
    _search(driver, server, "爬虫")
    hits = driver.find_elements(By.CSS_SELECTOR, "li.hit")
    assert len(hits) == 1
    assert hits[0].find_element(By.CSS_SELECTOR, "h2.title").text == SEARCHER_PAGES["/searcher/chinese.html"]
    assert "爬虫" in [m.text for m in hits[0].find_elements(By.CSS_SELECTOR, ".snippet mark")]
    _shot(driver, shots, "08-chinese-results")
    hits[0].find_element(By.LINK_TEXT, "cached").click()
    assert "Decoded as gbk" in driver.find_element(By.ID, "banner").text
    driver.switch_to.frame(driver.find_element(By.ID, "cached-frame"))
    try:
        assert SEARCHER_CHINESE_TEXT in driver.find_element(By.TAG_NAME, "body").text
    finally:
        driver.switch_to.default_content()
    _shot(driver, shots, "09-chinese-cached")


def test_solr_down_is_one_message_and_503(browser, crawl: Crawl, web: TestWeb, shots: Path) -> None:
    from selenium.webdriver.common.by import By

    solr = urlsplit(SOLR)
    proxy = Proxy((solr.hostname, solr.port))
    try:
        args = ["-crawlId", CRAWL, "-solr", f"http://127.0.0.1:{proxy.port}{solr.path}", *crawl.defines]
        with SearchServer(args, crawl.tmp / "server-solr-down.log") as server:
            word = unique(web, "/searcher/xss.html")
            assert api(server, "/api/search", q=word).json()["numFound"] == 1
            proxy.cut()
            r = api(server, "/api/search", q=word)
            assert r.status_code == 503 and r.json()["error"].startswith("Search is unavailable: Solr does not answer")
            assert str(proxy.port) not in r.text  # the Solr URL is in the server's log, not in the answer
            assert f"Solr at http://127.0.0.1:{proxy.port}" in server.output()
            browser.get(f"{server.url}/search?q={word}")
            notices = browser.find_elements(By.CSS_SELECTOR, ".notice")
            assert len(notices) == 1
            assert notices[0].text.startswith("Search is unavailable\nSearch is unavailable: Solr does not answer")
            assert not browser.find_elements(By.CSS_SELECTOR, "li.hit")
            assert requests.get(f"{server.url}/search", params={"q": word}, timeout=30).status_code == 503
            _shot(browser, shots, "10-solr-down")
            # the rest of the app does not need Solr
            assert api(server, "/api/stats").status_code == 200
            assert api(server, "/info", url=web.seed_url).status_code == 200
            proxy.restore()
            assert api(server, "/api/search", q=word).json()["numFound"] == 1
    finally:
        proxy.close()


def test_store_down_is_one_message_and_503(browser, crawl: Crawl, shots: Path) -> None:
    from selenium.webdriver.common.by import By

    args = ["-crawlId", "never_injected", "-solr", SOLR, *crawl.defines]
    with SearchServer(args, crawl.tmp / "server-store-down.log") as server:
        for path in ("/api/stats", "/api/batches", "/api/page?url=http://example.com/"):
            r = requests.get(server.url + path, timeout=30)
            assert r.status_code == 503, path
            assert r.json()["error"] == ("crawl never_injected has no crawl db yet: run `nutch2 inject` (or crawl) "
                                         "with -crawlId never_injected first."), r.json()
            assert str(crawl.tmp) not in r.text  # no path of the server
        assert re.search(r"no crawl db at .*never_injected_webpage\.sqlite", server.output())
        browser.get(server.url + "/crawl")
        notices = browser.find_elements(By.CSS_SELECTOR, ".notice")
        assert len(notices) == 1 and notices[0].text.startswith("The crawl db is unavailable\ncrawl never_injected has")
        _shot(browser, shots, "11-store-down")
        assert requests.get(server.url + "/crawl", timeout=30).status_code == 503
    # a store server that is down: the same, in its own words
    args = ["-crawlId", CRAWL, "-solr", SOLR, *crawl.defines, "-D", "storage.data.store.class=hbase",
            "-D", "hbase.thrift.port=9"]
    with SearchServer(args, crawl.tmp / "server-hbase-down.log") as server:
        r = requests.get(server.url + "/api/page", params={"url": "http://example.com/"}, timeout=30)
        assert r.status_code == 503 and r.json()["error"] == ("The crawl db of crawl web does not answer. The "
                                                              "server's log says why; try again later.")
        page = requests.get(server.url + "/info", params={"url": "http://example.com/"}, timeout=30)
        assert page.status_code == 503 and ":9" not in page.text
        assert "cannot reach the HBase Thrift server at" in server.output()


# ------------------------------------------------------------------------------------------- ranking, feeds, snapshots


def test_title_match_first_and_the_exact_phrase_first(server: SearchServer, web: TestWeb) -> None:
    # the word is in one page's title (and the home page's anchor to it), ten times in another page's body
    res = api(server, "/api/search", q=SEARCHER_RANK_WORD).json()
    titles = [h["title"] for h in api(server, "/api/search", q=SEARCHER_RANK_WORD, collapse=0).json()["hits"]]
    assert titles[0] == SEARCHER_RANK["/searcher/rank-title.html"] and len(titles) == 3
    assert SEARCHER_RANK["/searcher/rank-body.html"] in titles[1:]
    assert res["numFound"] == 1 and res["hits"][0]["moreFromHost"] == 2  # one host: the others are folded
    urls = [h["url"] for h in api(server, "/api/search", q=SEARCHER_PHRASE, collapse=0).json()["hits"]]
    assert urls == [web.trap_url(SEARCHER_PHRASE_PAGES[1]), web.trap_url(SEARCHER_PHRASE_PAGES[0])]
    # words apart still match: all of them must be there, in any order
    assert len(api(server, "/api/search", q="kestrel saffron", collapse=0).json()["hits"]) == 2


def test_more_from_this_site_folds_each_host_into_one_hit(server: SearchServer, web: TestWeb) -> None:
    every = api(server, "/api/search", q="http", rows=100, collapse=0).json()
    per_host: dict[str, int] = {}
    for h in every["hits"]:
        per_host[h["host"]] = per_host.get(h["host"], 0) + 1
    folded = api(server, "/api/search", q="http", rows=100).json()
    assert folded["collapsed"] and folded["numFound"] == len(per_host) == len(folded["hits"])
    assert {h["host"]: h["moreFromHost"] + 1 for h in folded["hits"]} == per_host
    assert {f["value"]: f["count"] for f in folded["facets"]["host"]} == per_host  # the facet counts every hit
    page = api(server, "/search", q="http").text
    host = web.hosts[0]
    link = f'href="/search?q=http&amp;host={host}">{per_host[host] - 1} more from {host}</a>'
    assert link in page and "show every page" in page
    # host: and site: in the query box narrow to a host, the app's syntax (never Solr's)
    assert {h["host"] for h in api(server, "/api/search", q=f"http host:{host}", rows=100).json()["hits"]} == {host}
    assert api(server, "/api/search", q=f"site:{host}", rows=100).json()["numFound"] == per_host[host]
    assert api(server, "/api/search", q="http site:no.such.site").json()["numFound"] == 0


def test_opensearch_description_and_rss_feed(server: SearchServer, web: TestWeb) -> None:
    import xml.etree.ElementTree as ET

    ns = {"os": "http://a9.com/-/spec/opensearch/1.1/"}
    desc = api(server, "/opensearch.xml")
    assert desc.headers["content-type"].startswith("application/opensearchdescription+xml")
    root = ET.fromstring(desc.content)
    templates = {u.get("type"): u.get("template") for u in root.findall("os:Url", ns)}
    assert templates["text/html"].startswith(f"{server.url}/search?q={{searchTerms}}")
    assert templates["application/rss+xml"].startswith(f"{server.url}/rss?q={{searchTerms}}")
    home = api(server, "/").text
    assert '<link rel="search" type="application/opensearchdescription+xml" href="/opensearch.xml"' in home
    word = unique(web, "/searcher/xss.html")
    feed = api(server, "/rss", q=word)
    assert feed.headers["content-type"].startswith("application/rss+xml")
    channel = ET.fromstring(feed.content).find("channel")
    assert channel.find("os:totalResults", ns).text == "1"
    item = channel.find("item")
    assert item.find("title").text == SEARCHER_PAGES["/searcher/xss.html"]  # text, escaped by the XML writer
    assert item.find("link").text == web.trap_url("/searcher/xss.html") and word in item.find("description").text
    assert item.find("pubDate").text.endswith(" GMT")
    assert b"<script>" not in feed.content
    assert api(server, "/rss").status_code == 400
    results = api(server, "/search", q=word).text
    assert f'<link rel="alternate" type="application/rss+xml" href="/rss?{urlencode({"q": word})}"' in results


def test_home_page_shows_the_index_size_and_freshness(server: SearchServer, crawl: Crawl) -> None:
    count = requests.get(f"{SOLR}/select", params={"q": "*:*", "fq": f"crawlId:{CRAWL}", "rows": 0},
                         timeout=30).json()["response"]["numFound"]
    home = api(server, "/").text
    m = re.search(r'id="index-summary"><b>([\d,]+)</b> pages in the index, the newest fetched <b>([^<]+)</b>', home)
    assert m, home
    assert int(m.group(1).replace(",", "")) == count > 20
    assert crawl.started[:16].replace("T", " ") <= m.group(2).removesuffix(" UTC") <= crawl.ended[:16].replace("T", " ")


def test_cached_resources_are_only_what_a_snapshot_needs(server: SearchServer, web: TestWeb) -> None:
    css = api(server, "/cached/resource", url=web.trap_url(SEARCHER_CSS))
    assert css.status_code == 200 and css.headers["content-type"].startswith("text/css")
    assert SEARCHER_STYLED_COLOR in css.text and 'url("data:,")' in css.text  # its unfetched image: nowhere
    gif = api(server, "/cached/resource", url=web.trap_url(SEARCHER_IMAGE))
    assert gif.status_code == 200 and gif.headers["content-type"] == "image/gif" and gif.content[:6] == b"GIF89a"
    for path in (SEARCHER_STYLED, "/searcher/script.html", "/not/crawled.png"):  # pages are no resources
        r = api(server, "/cached/resource", url=web.trap_url(path))
        assert r.status_code == 404, path
    raw = api(server, "/cached/raw", url=web.trap_url(SEARCHER_STYLED))
    csp = raw.headers["content-security-policy"]
    assert "img-src 'self' data:;" in csp and "style-src 'self' 'unsafe-inline';" in csp and "*" not in csp
    assert f'href="/cached/resource?{urlencode({"url": web.trap_url(SEARCHER_CSS)})}"' in raw.text
    assert f'href="{web.trap_url("/private/secret.html")}"' in raw.text  # never fetched: the live page


def test_browser_snapshot_shows_stored_css_and_images_and_asks_nothing_of_the_live_site(
        browser, server: SearchServer, web: TestWeb, shots: Path) -> None:
    from selenium.webdriver.common.by import By

    driver = browser
    styled = web.trap_url(SEARCHER_STYLED)
    driver.get(f"{server.url}/cached?{urlencode({'url': styled})}")  # warm the browser up first
    web.reset_log()
    driver.get(f"{server.url}/cached?{urlencode({'url': styled})}")
    banner = driver.find_element(By.ID, "banner").text
    assert styled in banner and "as fetched on" in banner and "nothing is loaded from the live site" in banner
    frame = driver.find_element(By.ID, "cached-frame")
    driver.switch_to.frame(frame)
    try:
        from selenium.webdriver.support.ui import WebDriverWait

        text = driver.find_element(By.ID, "styled-text")
        color = "return getComputedStyle(arguments[0]).color"
        WebDriverWait(driver, 10).until(lambda d: d.execute_script(color, text) == SEARCHER_STYLED_COLOR,
                                        message="the stored stylesheet was not applied")
        logo = driver.find_element(By.ID, "logo")
        WebDriverWait(driver, 10).until(lambda d: d.execute_script("return arguments[0].complete", logo))
        assert driver.execute_script("return arguments[0].naturalWidth", logo) == 1  # the stored 1x1 GIF
        assert driver.execute_script("return getComputedStyle(arguments[0]).width", logo) == "48px"  # its CSS
        held = driver.find_element(By.ID, "held").get_attribute("href")
        assert held == f"{server.url}/cached?{urlencode({'url': web.trap_url('/searcher/chinese.html')})}"
        assert driver.find_element(By.ID, "unheld").get_attribute("href") == web.trap_url("/private/secret.html")
    finally:
        driver.switch_to.default_content()
    _shot(driver, shots, "12-snapshot")
    assert web.requests() == [], [r.path for r in web.requests()]  # the live site saw nothing of the reader
    # the held link opens the cached copy of the other page in the top window
    driver.switch_to.frame(driver.find_element(By.ID, "cached-frame"))
    try:
        driver.find_element(By.ID, "held").click()
    finally:
        driver.switch_to.default_content()
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(driver, 30).until(lambda d: "chinese.html" in d.current_url and d.find_elements(By.ID, "banner"))
    assert driver.current_url.startswith(f"{server.url}/cached?") and web.requests() == []


def test_browser_title_match_first_and_more_from_this_site(browser, server: SearchServer, web: TestWeb,
                                                           shots: Path) -> None:
    from selenium.webdriver.common.by import By

    driver = browser
    driver.get(f"{server.url}/search?{urlencode({'q': SEARCHER_RANK_WORD})}")
    hits = driver.find_elements(By.CSS_SELECTOR, "li.hit")
    assert [h.find_element(By.CSS_SELECTOR, "h2.title").text for h in hits] == [
        SEARCHER_RANK["/searcher/rank-title.html"]]
    more = hits[0].find_element(By.CSS_SELECTOR, "a.more-from-site")
    assert more.text == f"2 more from {web.hosts[0]}"
    _shot(driver, shots, "13-more-from-this-site")
    more.click()
    titles = [h.text for h in driver.find_elements(By.CSS_SELECTOR, "li.hit h2.title")]
    assert len(titles) == 3 and titles[0] == SEARCHER_RANK["/searcher/rank-title.html"]
    assert SEARCHER_RANK["/searcher/rank-body.html"] in titles
    assert not driver.find_elements(By.CSS_SELECTOR, "a.more-from-site")
    driver.get(f"{server.url}/search?{urlencode({'q': 'http'})}")
    hosts = [h.find_element(By.CSS_SELECTOR, ".url").text for h in driver.find_elements(By.CSS_SELECTOR, "li.hit")]
    assert len({urlsplit(u).hostname for u in hosts}) == len(hosts) >= 3  # one hit per site
    assert len(driver.find_elements(By.CSS_SELECTOR, "a.more-from-site")) >= 3
    _shot(driver, shots, "14-one-per-site")
