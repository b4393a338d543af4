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
from nutch2.tableutil import reverse_url
from tests.crawlutil import cli, conf_for, defines, rows
from tests.proxy import Proxy
from tests.searchapp import SOLR, SearchServer, chrome, require_solr, wipe_solr
from tests.testweb import (
    SCRIPT_RAN,
    SCRIPT_STATUS,
    SEARCHER_ANCHOR,
    SEARCHER_CHINESE_TEXT,
    SEARCHER_PAGES,
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
    wipe_solr()
    tmp = tmp_path_factory.mktemp("searcher")
    d = defines(tmp, "sqlite")
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


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("screenshots")
    print(f"\nscreenshots: {path}")
    return path


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory):
    driver = chrome(tmp_path_factory.mktemp("chromium-profile"))
    driver.set_page_load_timeout(60)
    yield driver
    driver.quit()


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
    everything = api(server, "/api/search", q="http", rows=100).json()
    total = everything["numFound"]
    assert total > 20 and len(everything["hits"]) == total
    pages = [api(server, "/api/search", q="http", start=s, rows=10).json() for s in range(0, total, 10)]
    urls = [h["url"] for p in pages for h in p["hits"]]
    assert len(urls) == total and set(urls) == {h["url"] for h in everything["hits"]}
    # the host facet counts per host; narrowing to one keeps the facet of all hosts
    facet = {f["value"]: f["count"] for f in everything["facets"]["host"]}
    assert sum(facet.values()) == total and len(facet) >= 3
    host = web.hosts[1]
    narrowed = api(server, "/api/search", q="http", host=host, rows=100).json()
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
    bad = api(server, "/api/search", q="title:(")
    assert bad.status_code == 400 and "Cannot parse" in bad.json()["error"]
    page = api(server, "/search", q="title:(")  # the page says it in words, with the query kept in the box
    assert page.status_code == 400 and "Solr could not run this query" in page.text
    assert 'value="title:("' in page.text and "Traceback" not in page.text


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
    assert stats["total"] == len(table)
    want: dict[str, int] = {}
    for p in table.values():
        want[CrawlStatus(p.status).name] = want.get(CrawlStatus(p.status).name, 0) + 1
    assert stats["status"] == want
    assert len(stats["hosts"]) == 2 and stats["hostCount"] >= 4
    assert stats["score"]["min"] == pytest.approx(min(p.score for p in table.values()))
    batches = api(server, "/api/batches").json()["batches"]
    ids = sorted({p.batch_id for p in table.values() if p.batch_id})
    assert sorted(b["batchId"] for b in batches) == ids and len(ids) == 3
    for b in batches:  # finished batches keep what each step did (the journal), their marks gone
        mine = [p for p in table.values() if p.batch_id == b["batchId"]]
        assert b["rows"] == b["generated"] >= len(mine) >= b["updated"]  # (rows generated again since left it)
        assert b["updated"] == sum(1 for p in table.values() if Mark.UPDATEDB.check(p) == b["batchId"])
        assert 0 < b["parsed"] <= b["fetched"] <= b["generated"]
        assert b["indexed"] == sum(1 for p in table.values() if Mark.INDEX.check(p) == b["batchId"]) > 0
        assert b["stage"] == "indexed" and b["generatedAt"].endswith("Z")


def test_cached_copy_is_sandboxed_decoded_and_based_on_the_original(server: SearchServer, web: TestWeb) -> None:
    for path, title in (("/traps/charset-cp1251-meta.html", "Привет, мир"), ("/traps/charset-utf16-bom.html",
                                                                              "Ελληνικά"),
                        ("/searcher/chinese.html", "网络爬虫")):
        r = api(server, "/cached/raw", url=web.trap_url(path))
        assert r.status_code == 200 and r.headers["content-type"] == "text/html; charset=utf-8"
        csp = r.headers["content-security-policy"]
        assert csp.startswith("sandbox;") and "script-src 'none'" in csp and "form-action 'none'" in csp
        assert title in r.content.decode("utf-8")
        assert f'<base href="{web.trap_url(path)}">' in r.text
    banner = api(server, "/cached", url=web.trap_url("/searcher/chinese.html"))
    assert "Decoded as <b>gbk</b>" in banner.text and '<iframe class="cached-frame"' in banner.text
    assert " sandbox " in banner.text and "script-src" not in banner.headers["content-security-policy"]
    assert "default-src 'none'" in banner.headers["content-security-policy"]
    # a page's own <base href> is resolved against where it was fetched from
    based = api(server, "/cached/raw", url=web.trap_url("/traps/base.html")).text
    assert f'<base href="{web.trap_url("/traps/based/")}">' in based
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
    _search(driver, server, "http")
    assert driver.current_url.startswith(server.url + "/search?q=http")
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
    assert frame.get_attribute("sandbox") == ""  # present, nothing allowed
    _shot(driver, shots, "04-cached")
    driver.switch_to.frame(frame)
    try:
        assert driver.find_element(By.ID, "status").text == SCRIPT_STATUS  # the script did not run
        # relative links lead to the original site
        assert driver.find_element(By.ID, "rel").get_attribute("href") == web.trap_url("/searcher/chinese.html")
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
    bars = driver.find_elements(By.CSS_SELECTOR, "#status-chart g.bar")
    assert [b.find_element(By.TAG_NAME, "text").text for b in bars] == list(stats["status"])
    assert [int(b.find_element(By.CSS_SELECTOR, "text.n").text) for b in bars] == list(stats["status"].values())
    widths = {b.find_element(By.TAG_NAME, "text").text: float(b.find_element(By.TAG_NAME, "rect").get_attribute(
        "width")) for b in bars}
    assert max(widths, key=widths.get) == max(stats["status"], key=stats["status"].get)
    assert f"TOTAL urls {stats['total']}" in driver.find_element(By.ID, "stats").text
    batch_rows = driver.find_elements(By.CSS_SELECTOR, "#batches tr")[1:]
    assert len(batch_rows) == 3 and all(r.text.endswith("indexed") for r in batch_rows)
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
            assert r.status_code == 503 and r.json()["error"].startswith(f"Solr at http://127.0.0.1:{proxy.port}")
            browser.get(f"{server.url}/search?q={word}")
            notices = browser.find_elements(By.CSS_SELECTOR, ".notice")
            assert len(notices) == 1
            assert notices[0].text.startswith(f"Search is unavailable\nSolr at http://127.0.0.1:{proxy.port}")
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
            assert re.match(r"no crawl db at .*never_injected_webpage\.sqlite; run `nutch2 inject` first",
                            r.json()["error"]), r.json()
        browser.get(server.url + "/crawl")
        notices = browser.find_elements(By.CSS_SELECTOR, ".notice")
        assert len(notices) == 1 and notices[0].text.startswith("The crawl db is unavailable\nno crawl db at")
        _shot(browser, shots, "11-store-down")
        assert requests.get(server.url + "/crawl", timeout=30).status_code == 503
    # a store server that is down: the same, in its own words
    args = ["-crawlId", CRAWL, "-solr", SOLR, *crawl.defines, "-D", "storage.data.store.class=hbase",
            "-D", "hbase.thrift.port=9"]
    with SearchServer(args, crawl.tmp / "server-hbase-down.log") as server:
        r = requests.get(server.url + "/api/page", params={"url": "http://example.com/"}, timeout=30)
        assert r.status_code == 503 and r.json()["error"].startswith("cannot reach the HBase Thrift server at")
        page = requests.get(server.url + "/info", params={"url": "http://example.com/"}, timeout=30)
        assert page.status_code == 503 and "docker/services.sh start hbase" in page.text
