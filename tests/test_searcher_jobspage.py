"""The job server's jobs list (`nutch2 server -jobs`, /crawl/jobs) as an operator of a long-lived server meets it:
more jobs than a page lists are paged (newest first, "‹ Newer", page numbers, "Older ›", as the search pages are),
every job the API keeps is reached from the page, and a long message wraps inside the page.

The server runs as a user starts it (a child process, the job API on, the processes runner) with no Solr: the
jobs used (inject, readdb, updatehostdb, readhostdb) do not ask the index. Headless Debian Chromium reads the
pages; screenshots go into the pytest tmp dir."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
import requests

from tests.crawlutil import defines
from tests.searchapp import SearchServer, submit

pytestmark = [pytest.mark.integration, pytest.mark.slow]
CRAWL = "jobspage"
NO_SOLR = "http://127.0.0.1:9/solr/none"  # nothing listens: the jobs here never ask it
JOBS = 45  # three pages of 20
# a filter as long as an operator's: the job's message names it, longer than the page is wide
LONG_EXPR = " or ".join(f"host == 'www.example-{i}.com'" for i in range(8)) + " or numRecords >= 0"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    tmp = tmp_path_factory.mktemp("jobspage")
    with SearchServer(["-crawlId", CRAWL, "-solr", NO_SOLR, "-jobs", *defines(tmp, "sqlite")],
                      tmp / "server.log") as s:
        yield s


def run_job(server: SearchServer, job: str, args: dict[str, Any] | None = None) -> dict[str, Any]:
    r = requests.post(f"{server.url}/api/jobs", json={"type": job, "args": args or {}}, timeout=30)
    assert r.status_code == 201, r.text
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        info = requests.get(f"{server.url}/api/jobs/{r.json()['id']}", timeout=30).json()
        if info["state"] != "RUNNING":
            return info
        time.sleep(0.1)
    raise AssertionError(f"job {job} still running after 120 s")


def listed_ids(browser) -> list[str]:
    from selenium.webdriver.common.by import By

    return [a.text for a in browser.find_elements(By.CSS_SELECTOR, "#jobs td:first-child a")]


def test_every_job_the_server_keeps_is_reached_page_by_page(browser, server: SearchServer, shots: Path) -> None:
    from selenium.webdriver.common.by import By

    # jobs from the page's form and from the API, as an operator's day brings them
    browser.get(f"{server.url}/crawl/jobs")
    assert browser.find_element(By.ID, "jobs-count").text == "No job yet."
    assert not browser.find_elements(By.ID, "job-pages")
    browser.find_element(By.ID, "seeds").send_keys("http://www.example.com/\nhttp://www.example.org/")
    submit(browser, "inject")
    first = browser.current_url.rsplit("/", 1)[1]
    done = requests.get(f"{server.url}/api/jobs/{first}", timeout=30).json()
    while done["state"] == "RUNNING":
        time.sleep(0.1)
        done = requests.get(f"{server.url}/api/jobs/{first}", timeout=30).json()
    assert done["state"] == "FINISHED", done
    started = [first]
    started.append(run_job(server, "updatehostdb")["id"])
    host_list = run_job(server, "readhostdb", {"expr": LONG_EXPR})
    assert len(host_list["msg"]) > 150, host_list
    started.append(host_list["id"])
    for i in range(JOBS - len(started)):
        job = run_job(server, "readdb", {"stats": True}) if i % 2 else \
            run_job(server, "inject", {"seedUrls": [f"http://www.example.com/{i}"]})
        assert job["state"] == "FINISHED", job
        started.append(job["id"])
    newest_first = started[::-1]
    assert [j["id"] for j in requests.get(f"{server.url}/api/jobs", timeout=30).json()["jobs"]] == newest_first

    # the first page: the 20 newest, the count, and the way to the older ones
    browser.get(f"{server.url}/crawl/jobs")
    assert listed_ids(browser) == newest_first[:20]
    assert browser.find_element(By.ID, "jobs-count").text.startswith(f"Jobs 1–20 of {JOBS}, newest first")
    nav = browser.find_element(By.ID, "job-pages")
    assert nav.text.split() == ["1", "2", "3", "Older", "›"], nav.text
    assert not nav.find_elements(By.CSS_SELECTOR, "a[rel=prev]")
    browser.save_screenshot(str(shots / "jobspage-newest.png"))
    # "Older ›" page after page, to the oldest job: each job once, in order
    seen = listed_ids(browser)
    for page in (2, 3):
        browser.find_element(By.CSS_SELECTOR, "#job-pages a[rel=next]").click()
        assert browser.find_element(By.CSS_SELECTOR, "#job-pages .current").text == str(page)
        seen += listed_ids(browser)
    assert seen == newest_first
    assert browser.find_element(By.ID, "jobs-count").text.startswith(f"Jobs 41–{JOBS} of {JOBS}")
    assert not browser.find_elements(By.CSS_SELECTOR, "#job-pages a[rel=next]")
    # the oldest page shows the long message wrapped: the page is no wider than the window
    assert host_list["id"] in listed_ids(browser)
    assert browser.execute_script("return document.documentElement.scrollWidth <= window.innerWidth")
    browser.save_screenshot(str(shots / "jobspage-oldest.png"))
    # "‹ Newer" and the page numbers lead back
    browser.find_element(By.CSS_SELECTOR, "#job-pages a[rel=prev]").click()
    assert listed_ids(browser) == newest_first[20:40]
    browser.find_element(By.LINK_TEXT, "1").click()
    assert listed_ids(browser) == newest_first[:20]
    assert browser.execute_script("return document.documentElement.scrollWidth <= window.innerWidth")

    # a page past the jobs kept (a link kept from before a restart) says so; a bad start is one line
    browser.get(f"{server.url}/crawl/jobs?start=80")
    assert f"No job on this page: this server keeps {JOBS} jobs" in browser.find_element(By.ID, "jobs-count").text
    browser.find_element(By.LINK_TEXT, "The newest jobs").click()
    assert listed_ids(browser) == newest_first[:20]
    bad = requests.get(f"{server.url}/crawl/jobs?start=x", timeout=30)
    assert bad.status_code == 400 and "start=&#39;x&#39; is not a whole number" in bad.text


def test_an_injects_page_names_its_rejected_lines_and_refused_hosts(browser, server: SearchServer,
                                                                    shots: Path) -> None:
    """Seeds typed into the form: the job's page says which lines were not injected and why, and which seed hosts
    no crawl of this server fetches (as a terminal logs them; before, only the JSON said so)."""
    from selenium.webdriver.common.by import By

    from tests.searchapp import wait_frame

    browser.get(f"{server.url}/crawl/jobs")
    browser.find_element(By.ID, "seeds").send_keys(
        "http://www.example.com/ok\nhttp://www.example.com/a b\nhttp://127.0.0.1:9/\n")
    submit(browser, "inject")
    done = wait_frame(browser, lambda v: v["state"] != "RUNNING", "the inject's end")
    assert done["state"] == "FINISHED" and done["inject.rejected"] == "1", done
    browser.switch_to.frame(browser.find_element(By.ID, "progress"))
    try:
        rejected = browser.find_element(By.ID, "rejected").text
        assert "seedUrls[1]: URL contains whitespace: 'http://www.example.com/a b'" in rejected, rejected
        refused = browser.find_element(By.ID, "refused").text
        assert "127.0.0.1:9" in refused and "fetcher.address.allow" in refused, refused
    finally:
        browser.switch_to.default_content()
    browser.save_screenshot(str(shots / "jobspage-inject-rejected.png"))
    # a job with nothing to say has neither
    job = run_job(server, "inject", {"seedUrls": ["http://www.example.com/fine"]})
    browser.get(f"{server.url}/crawl/jobs/{job['id']}/progress")
    assert not browser.find_elements(By.ID, "rejected") and not browser.find_elements(By.ID, "refused")


def test_the_crawl_pages_newest_jobs_wrap_and_lead_to_every_job(browser, server: SearchServer, shots: Path) -> None:
    """/crawl lists the 10 newest jobs: with their type, a long message wrapped inside the page, and a link to the
    jobs page that reaches every job the server keeps."""
    from selenium.webdriver.common.by import By

    run_job(server, "inject", {"seedUrls": ["http://www.example.com/crawl-page"]})
    run_job(server, "updatehostdb")
    for _ in range(9):
        run_job(server, "readdb", {"stats": True})
    long = run_job(server, "readhostdb", {"expr": LONG_EXPR})
    browser.get(f"{server.url}/crawl")
    rows = browser.find_elements(By.CSS_SELECTOR, "#jobs tr")
    assert len(rows) == 11, len(rows)  # the heading and the 10 newest
    assert rows[1].text.startswith(f"{long['id']} readhostdb FINISHED "), rows[1].text
    assert browser.execute_script("return document.documentElement.scrollWidth <= window.innerWidth")
    browser.execute_script("document.getElementById('jobs').scrollIntoView()")
    browser.save_screenshot(str(shots / "jobspage-crawl.png"))
    browser.find_element(By.CSS_SELECTOR, "#all-jobs a").click()
    assert listed_ids(browser)[0] == long["id"]
