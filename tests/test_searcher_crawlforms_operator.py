"""The dashboard's crawl forms as a new operator meets them (`nutch2 server -jobs` on a fresh install): no crawler
name configured, an empty crawl, a second crawl while one runs, a stopped crawl started again, the server restarted
under a running crawl. Every answer says what to do next, on the page, before a job is started to fail.

The server runs as a user starts it (a child process, the job API on, the test web's addresses allowed, no
http.agent.name) and headless Debian Chromium drives it; screenshots go into the pytest tmp dir."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import requests

from tests.crawlutil import defines
from tests.searchapp import SOLR, SearchServer, require_solr, stop_from_frame, submit, wait_frame, wipe_solr
from tests.testweb import TestWeb

pytestmark = [pytest.mark.integration, pytest.mark.slow]
CRAWL = "webformsop"
PAGES = 30  # per host: a round of 60 pages, each answered 0.3 s late, runs long enough to be stopped


@pytest.fixture(scope="module")
def web():
    with TestWeb(hosts=2, pages_per_host=PAGES, traps=False, page_delay=0.3) as w:
        yield w


def start_server(tmp: Path, name: str) -> SearchServer:
    """A fresh install's server: the shipped conf names no crawler (http.agent.name empty)."""
    require_solr()
    args = ["-crawlId", CRAWL, "-solr", SOLR, "-jobs", *defines(tmp, "sqlite", **{"http.agent.name": ""})]
    return SearchServer(args, tmp / f"{name}.log")


@pytest.fixture
def server(tmp_path: Path):
    wipe_solr(CRAWL)
    with start_server(tmp_path, "server") as s:
        yield s


def jobs(server: SearchServer) -> list[dict[str, Any]]:
    return requests.get(f"{server.url}/api/jobs", timeout=30).json()["jobs"]


def body(browser) -> str:
    from selenium.webdriver.common.by import By

    return browser.find_element(By.TAG_NAME, "body").text


def fill_crawl_form(browser, url: str, agent: str | None = None, rounds: str = "1", seeds: str = "") -> None:
    """The crawl form filled as typed; the browser's own checks (required, maxlength) taken off, so that what
    the server answers is seen (a client without them, or an older page, sends the same)."""
    from selenium.webdriver.common.by import By

    browser.get(f"{url}/crawl/jobs")
    field = browser.find_element(By.ID, "agent")
    browser.execute_script("arguments[0].removeAttribute('required'); arguments[0].removeAttribute('maxlength')",
                           field)
    if agent is not None:
        field.clear()
        field.send_keys(agent)
    box = browser.find_element(By.ID, "rounds")
    box.clear()
    box.send_keys(rounds)
    if seeds:
        browser.find_element(By.ID, "crawl-seeds").send_keys(seeds)


def test_the_crawl_form_asks_for_the_crawler_name(browser, server: SearchServer, web: TestWeb, shots: Path) -> None:
    from selenium.webdriver.common.by import By

    browser.get(f"{server.url}/crawl/jobs")
    field = browser.find_element(By.ID, "agent")
    assert field.get_attribute("value") == "" and field.get_attribute("required") is not None
    assert "this server names none" in browser.find_element(By.CSS_SELECTOR, "label[for=agent]").text
    browser.save_screenshot(str(shots / "operator-form.png"))
    # no name: the form's answer says where to type one; no job is started to fail
    fill_crawl_form(browser, server.url, agent="", seeds=web.seed_url)
    submit(browser, "start")
    text = body(browser)
    assert "name your crawler: type its name in Crawler name" in text and "-D http.agent.name=MyBot" in text, text
    # a name no User-Agent header can carry, or too long: said on the page too
    for bad, said in (("Робот", "printable ASCII"), ("x" * 300, "give at most 200")):
        fill_crawl_form(browser, server.url, agent=bad, seeds=web.seed_url)
        submit(browser, "start")
        assert said in body(browser), (bad, body(browser))
    assert jobs(server) == []
    # a crawl without seeds on a crawl that holds no URL yet: inject first, said on the page
    fill_crawl_form(browser, server.url, agent="FormBot")
    submit(browser, "start")
    assert "this crawl holds no URLs yet: give seeds to inject first" in body(browser), body(browser)
    assert jobs(server) == []
    # a name: the crawl runs under it, and its page shows it
    web.reset_log()
    fill_crawl_form(browser, server.url, agent="FormBot", seeds=web.seed_url)
    submit(browser, "start")
    assert browser.find_element(By.ID, "conf").text == '{"http.agent.name": "FormBot"}'
    done = wait_frame(browser, lambda v: v["state"] != "RUNNING", "the crawl's end")
    assert done["state"] == "FINISHED" and int(done["fetch.fetched"]) >= 1, done
    agents = {r.headers.get("User-Agent", r.headers.get("user-agent", "")) for r in web.requests()}
    assert agents and all(a.startswith("FormBot/") for a in agents), agents
    # the form keeps the name typed last for the next crawl
    browser.get(f"{server.url}/crawl/jobs")
    assert browser.find_element(By.ID, "agent").get_attribute("value") == "FormBot"


def test_a_second_crawl_leads_to_the_running_one_and_a_stopped_one_starts_again(
        browser, server: SearchServer, web: TestWeb, shots: Path) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    seeds = "\n".join(web.page_url(h, i) for h in range(2) for i in range(PAGES))
    fill_crawl_form(browser, server.url, agent="FormBot", rounds="-1", seeds=seeds)
    submit(browser, "start")
    first = browser.current_url
    wait_frame(browser, lambda v: int(v.get("fetch.fetched", 0)) >= 1, "a fetched page")
    # another tab starts a crawl meanwhile: refused, with a link to the crawl that runs
    browser.switch_to.new_window("tab")
    try:
        fill_crawl_form(browser, server.url, agent="FormBot")
        submit(browser, "start")
        assert "is still running; one job runs at a time" in body(browser), body(browser)
        browser.save_screenshot(str(shots / "operator-second-crawl.png"))
        browser.find_element(By.ID, "next").click()
        assert browser.current_url == first
    finally:
        browser.close()
        browser.switch_to.window(browser.window_handles[0])
    assert len(jobs(server)) == 1
    # stop it; the ended crawl's frame offers to start it again, with the same arguments and crawler name
    stop_from_frame(browser)
    stopped = wait_frame(browser, lambda v: v["state"] != "RUNNING", "the crawl's end")
    assert stopped["state"] == "KILLED", stopped
    browser.switch_to.frame(browser.find_element(By.ID, "progress"))
    browser.save_screenshot(str(shots / "operator-stopped.png"))
    browser.find_element(By.ID, "again").click()  # the frame's form answers in the top window
    browser.switch_to.default_content()
    WebDriverWait(browser, 30).until(lambda b: b.current_url != first)
    assert "/crawl/jobs/" in browser.current_url, body(browser)
    listed = jobs(server)
    assert [j["state"] for j in listed][1:] == ["KILLED"] and listed[0]["args"] == listed[1]["args"], listed
    assert browser.find_element(By.ID, "conf").text == '{"http.agent.name": "FormBot"}'
    done = wait_frame(browser, lambda v: v["state"] != "RUNNING", "the crawl's end", timeout=240)
    assert done["state"] == "FINISHED", done
    assert int(done.get("fetch.skipped_already_fetched", 0)) >= 1, done  # it went on from where it stopped


def test_a_job_that_ends_shows_no_stop_button(browser, server: SearchServer, web: TestWeb, shots: Path) -> None:
    from selenium.webdriver.common.by import By

    # a crawl of one round over two seeds, watched on its page until it ends by itself
    fill_crawl_form(browser, server.url, agent="FormBot", seeds=f"{web.page_url(0, 1)}\n{web.page_url(1, 1)}")
    submit(browser, "start")
    running = wait_frame(browser, lambda v: v["state"] != "RUNNING" or "stop" in v, "the running crawl")
    browser.save_screenshot(str(shots / "operator-running.png"))
    done = wait_frame(browser, lambda v: v["state"] != "RUNNING", "the crawl's end")
    assert done["state"] == "FINISHED", done
    # nothing on the page offers to stop a job that has ended: not the frame, not the page around it
    assert "stop" not in done and not browser.find_elements(By.ID, "stop"), (running, done)
    browser.save_screenshot(str(shots / "operator-ended.png"))


def test_after_a_restart_under_a_crawl_the_pages_say_how_to_go_on(browser, tmp_path: Path, web: TestWeb,
                                                                  shots: Path) -> None:
    from selenium.webdriver.common.by import By

    wipe_solr(CRAWL)
    seeds = "\n".join(web.page_url(h, i) for h in range(2) for i in range(PAGES))
    with start_server(tmp_path, "first") as first:
        fill_crawl_form(browser, first.url, agent="FormBot", rounds="3", seeds=seeds)
        submit(browser, "start")
        job_page = browser.current_url
        wait_frame(browser, lambda v: int(v.get("fetch.fetched", 0)) >= 1, "a fetched page")
    # the server stopped under the crawl (SIGINT): the page left open says the crawl stopped with it, and offers
    # no Stop (a frame whose reload met a stopped server would show the browser's error page for good)
    ended = wait_frame(browser, lambda v: v["state"] != "RUNNING", "the crawl's end", timeout=10)
    assert ended["state"] == "KILLED" and ended["msg"].startswith("stopped with the server: what it did is kept; "
                                                                  "once the server is back"), ended
    assert "stop" not in ended and not browser.find_elements(By.ID, "stop"), ended
    browser.save_screenshot(str(shots / "operator-stopped-with-the-server.png"))
    # started again on the same port
    port = first.url.rsplit(":", 1)[1]
    args = ["-crawlId", CRAWL, "-solr", SOLR, "-jobs", *defines(tmp_path, "sqlite", **{"http.agent.name": ""})]
    with SearchServer(["-port", port, *args], tmp_path / "second.log") as again:
        assert again.url == first.url
        browser.refresh()
        text = body(browser)
        assert "on this server: it knows the jobs started since it last started" in text, text
        browser.save_screenshot(str(shots / "operator-after-restart.png"))
        # the progress frame alone, as a frame reloading after the restart meets it: it says so, in the frame
        browser.get(f"{job_page}/progress")
        assert browser.find_element(By.ID, "state").text == "ENDED"
        assert "This server does not know job" in browser.find_element(By.ID, "msg").text
        browser.get(job_page)
        browser.find_element(By.ID, "next").click()
        assert browser.current_url.endswith("/crawl/jobs")
        notice = browser.find_element(By.ID, "interrupted").text
        assert notice.startswith("A crawl stopped in round 1 of 3"), notice
        assert browser.find_element(By.ID, "rounds").get_attribute("value") == "3"


def test_too_many_seeds_or_too_large_a_seed_file_say_what_to_do(browser, server: SearchServer, tmp_path: Path,
                                                               shots: Path) -> None:
    from selenium.webdriver.common.by import By

    # more lines than a job takes (10,000): counted and refused with the way out, in either form
    many = "\n".join(f"http://127.0.1.1/p/{i}.html" for i in range(10_001))
    for form, box, button in (("inject", "seeds", "inject"), ("crawl", "crawl-seeds", "start")):
        fill_crawl_form(browser, server.url, agent="FormBot")
        browser.execute_script("document.getElementById(arguments[0]).value = arguments[1]", box, many)
        submit(browser, button)
        text = body(browser)
        assert "10001 seed lines are more than 10000; inject a seed file from the command line" in text, (form, text)
    # a seed file past searcher.form.max: the answer names the limit and the command line
    big = tmp_path / "seeds.txt"
    big.write_text("\n".join(f"http://127.0.1.1/p/{i}.html" for i in range(60_000)) + "\n")
    browser.get(f"{server.url}/crawl/jobs")
    browser.find_element(By.ID, "seedFile").send_keys(str(big))
    submit(browser, "inject")
    text = body(browser)
    assert "the form is larger than 1048576 bytes (searcher.form.max)" in text and "nutch2 inject FILE" in text, text
    browser.save_screenshot(str(shots / "operator-seed-file-too-large.png"))
    assert jobs(server) == []


def test_a_binary_file_chosen_as_seed_file_is_named(browser, server: SearchServer, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    picture = tmp_path / "photo.png"
    picture.write_bytes(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR" + bytes(range(256)) * 8)
    browser.get(f"{server.url}/crawl/jobs")
    browser.find_element(By.ID, "seedFile").send_keys(str(picture))
    submit(browser, "inject")
    text = browser.find_element(By.ID, "message").text
    assert text == "'photo.png' is not a text file: choose a seed file of URLs, one a line", text
    assert jobs(server) == []
