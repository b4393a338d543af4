"""The crawl dashboard (/crawl) of a long-lived crawl: the batch journal keeps up to a thousand finished batches
(a continuous crawl makes one a round), and the page lists them 20 a page, newest first ("‹ Newer", page numbers
around the current one, "Older ›"), as /crawl/jobs lists jobs; /api/batches pages them too (`start`, `rows`).

The journal is written directly (a batch a round, as `crawl` leaves it) so that the test needs no long crawl; the
server runs as a user starts it, with no Solr (/crawl asks no index). Headless Debian Chromium reads the page;
screenshots go into the pytest tmp dir."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import requests

from nutch2.stores import open_store
from tests.crawlutil import cli, conf_for, defines, seed_file
from tests.searchapp import SearchServer

pytestmark = [pytest.mark.integration, pytest.mark.slow]
CRAWL = "crawlpage"
NO_SOLR = "http://127.0.0.1:9/solr/none"  # nothing listens: /crawl never asks it
BATCHES = 245  # 13 pages of 20: more page numbers than the page shows
T0 = 1_800_000_000.0


def batch_id(i: int) -> str:
    return f"{int(T0) + 60 * i}-{1000 + i}"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    tmp = tmp_path_factory.mktemp("crawlpage")
    d = defines(tmp, "sqlite")
    assert cli("inject", seed_file(tmp, "http://www.example.com/"), "-crawlId", CRAWL, *d) == 0
    with open_store(conf_for(tmp, "sqlite"), CRAWL) as store:
        for i in range(BATCHES):  # a round a minute; the newest is being fetched
            state = "fetching" if i == BATCHES - 1 else "updated"
            counts = {"generated": 10 + i, "fetched": 9 + i} | ({} if state == "fetching" else {"parsed": 9 + i,
                                                                                                  "updated": 10 + i})
            store.put_state(f"batch/{batch_id(i)}", json.dumps({"state": state, "rows": 10 + i,
                                                               "time": T0 + 60 * i, "counts": counts}))
        store.flush()
    with SearchServer(["-crawlId", CRAWL, "-solr", NO_SOLR, *d], tmp / "server.log") as s:
        yield s


def listed(browser) -> list[str]:
    from selenium.webdriver.common.by import By

    return [td.text for td in browser.find_elements(By.CSS_SELECTOR, "#batches td:first-child code")]


def test_the_crawl_page_lists_its_batches_a_page_at_a_time(browser, server: SearchServer, shots: Path) -> None:
    from selenium.webdriver.common.by import By

    newest_first = [batch_id(i) for i in reversed(range(BATCHES))]
    browser.get(f"{server.url}/crawl")
    assert f"· {BATCHES} batches" in browser.find_element(By.ID, "size").text
    assert listed(browser) == newest_first[:20]
    assert browser.find_element(By.ID, "batches-count").text.startswith(f"Batches 1–20 of {BATCHES}, newest first")
    nav = browser.find_element(By.ID, "batch-pages")
    assert nav.text.split() == [*map(str, range(1, 11)), "Older", "›"], nav.text
    assert browser.execute_script("return document.documentElement.scrollWidth <= window.innerWidth")
    browser.execute_script("document.getElementById('batches-title').scrollIntoView()")
    browser.save_screenshot(str(shots / "crawlpage-newest.png"))

    # "Older ›" to the second page, then a page number further on: the numbers follow the current page
    browser.find_element(By.CSS_SELECTOR, "#batch-pages a[rel=next]").click()
    assert browser.find_element(By.CSS_SELECTOR, "#batch-pages .current").text == "2"
    assert listed(browser) == newest_first[20:40]
    assert browser.find_element(By.ID, "batches-count").text.startswith(f"Batches 21–40 of {BATCHES}")
    browser.find_element(By.LINK_TEXT, "10").click()
    nav = browser.find_element(By.ID, "batch-pages")
    assert nav.text.split() == ["‹", "Newer", *map(str, range(4, 14)), "Older", "›"], nav.text
    # to the oldest page: each batch once, in order
    seen = listed(browser)
    assert seen == newest_first[180:200]
    while older := browser.find_elements(By.CSS_SELECTOR, "#batch-pages a[rel=next]"):
        older[0].click()
        seen += listed(browser)
    assert seen == newest_first[180:]
    assert browser.find_element(By.ID, "batches-count").text.startswith(f"Batches 241–{BATCHES} of {BATCHES}")
    assert listed(browser)[-1] == batch_id(0)
    browser.save_screenshot(str(shots / "crawlpage-oldest.png"))
    browser.find_element(By.CSS_SELECTOR, "#batch-pages a[rel=prev]").click()
    assert listed(browser) == newest_first[220:240]
    browser.find_element(By.LINK_TEXT, "4").click()
    assert listed(browser) == newest_first[60:80]

    # a page past the batches kept (a link from before updatedb forgot old ones) says so; a bad start is one line
    browser.get(f"{server.url}/crawl?start=5000")
    assert f"No batch on this page: the journal keeps {BATCHES} batches" in \
        browser.find_element(By.ID, "batches-count").text
    browser.find_element(By.LINK_TEXT, "The newest batches").click()
    assert listed(browser) == newest_first[:20]
    bad = requests.get(f"{server.url}/crawl?start=x", timeout=30)
    assert bad.status_code == 400 and "start=&#39;x&#39; is not a whole number" in bad.text


def test_api_batches_pages_the_journal(server: SearchServer) -> None:
    newest_first = [batch_id(i) for i in reversed(range(BATCHES))]
    first = requests.get(f"{server.url}/api/batches", timeout=30).json()
    assert first["total"] == BATCHES and first["start"] == 0
    assert [b["batchId"] for b in first["batches"]] == newest_first[:100]
    assert first["batches"][0]["stage"] == "fetching" and first["batches"][1]["updated"] == 10 + BATCHES - 2
    page = requests.get(f"{server.url}/api/batches?start=200&rows=30", timeout=30).json()
    assert [b["batchId"] for b in page["batches"]] == newest_first[200:230]
    assert requests.get(f"{server.url}/api/stats", timeout=30).json()["batches"] == BATCHES
