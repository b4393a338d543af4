"""Crawls from the browser (`nutch2 server -jobs`): the dashboard's forms inject seeds, start a crawl, show its
progress without a script and stop it; every form is refused from another site or without its CSRF token.

The server runs as a user starts it (a child process, with a users file and a token file, the job API on, the
test web's addresses allowed) and headless Debian Chromium drives it; screenshots go into the pytest tmp dir."""

from __future__ import annotations

import re
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import requests

from tests.crawlutil import defines
from tests.searchapp import SOLR, SearchServer, require_solr, stop_from_frame, submit, wait_frame, wipe_solr
from tests.testweb import TestWeb

pytestmark = [pytest.mark.integration, pytest.mark.slow]
CRAWL = "webforms"
USER, PASSWORD = "ann", "correct horse"
TOKEN = "f0rms-" + "t" * 30
PAGES = 40  # per host: a round of 80 pages, each answered 0.5 s late, runs long enough to be watched and stopped


@pytest.fixture(scope="module")
def web():
    with TestWeb(hosts=2, pages_per_host=PAGES, traps=False, page_delay=0.5) as w:
        yield w


@pytest.fixture(scope="module")
def tmp(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("crawlforms")


@pytest.fixture(scope="module")
def server(tmp: Path):
    require_solr()
    wipe_solr(CRAWL)
    users = tmp / "users"
    add = subprocess.run([sys.executable, "-m", "nutch2.cli", "server", "-users", str(users), "-addUser", USER],
                         input=PASSWORD + "\n", capture_output=True, text=True, timeout=60)
    assert add.returncode == 0, add.stderr
    (tmp / "token").write_text(TOKEN + "\n")
    args = ["-crawlId", CRAWL, "-solr", SOLR, "-jobs", "-users", str(users), "-tokenFile", str(tmp / "token"),
            *defines(tmp, "sqlite"), "-D", "searcher.form.max=200000"]
    with SearchServer(args, tmp / "server.log") as s:
        yield s


AUTH = (USER, PASSWORD)


def jobs(server: SearchServer) -> list[dict[str, Any]]:
    return requests.get(f"{server.url}/api/jobs", auth=AUTH, timeout=30).json()["jobs"]


def csrf_of(server: SearchServer, **login: Any) -> str:
    page = requests.get(f"{server.url}/crawl/jobs", timeout=30, **login)
    assert page.status_code == 200, page.text
    m = re.search(r'name="csrf" value="([^"]+)"', page.text)
    assert m, page.text
    return m.group(1)


def wait_job(server: SearchServer, job_id: str, timeout: float = 120.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        info = requests.get(f"{server.url}/api/jobs/{job_id}", auth=AUTH, timeout=30).json()
        if info["state"] != "RUNNING":
            return info
        time.sleep(0.2)
    raise AssertionError(f"job {job_id} still running after {timeout:.0f} s")


def test_forms_need_this_sites_token_and_take_only_forms(server: SearchServer, web: TestWeb) -> None:
    before = jobs(server)
    fresh = requests.get(f"{server.url}/crawl", auth=AUTH, timeout=30)  # no table yet: the way to the forms
    assert fresh.status_code == 503 and "Or inject seeds from the browser: /crawl/jobs." in fresh.text
    mine = csrf_of(server, auth=AUTH)
    other_login = csrf_of(server, headers={"Authorization": f"Bearer {TOKEN}"})
    assert mine != other_login  # one token per login
    assert csrf_of(server, auth=AUTH) == mine  # stable for the login (the server's secret)
    job_stop = f"/crawl/jobs/{'x' * 16}/stop"
    forms = {"/crawl/inject": {"seeds": web.seed_url}, "/crawl/start": {"rounds": "1"}, job_stop: {"stop": "1"}}
    for path, fields in forms.items():
        # no token, another login's token, a made-up token: 403 before anything is read or started
        for token in (None, other_login, "x" * 43):
            data = {**fields, **({"csrf": token} if token else {})}
            r = requests.post(server.url + path, data=data, auth=AUTH, timeout=30)
            assert r.status_code == 403, (path, token, r.status_code)
            assert "open the page again and send the form from it" in r.text
        # this login's token from another site's page: the guard refuses it first (Origin, Sec-Fetch-Site)
        for headers in ({"Origin": "http://evil.example"}, {"Origin": "null"}, {"Sec-Fetch-Site": "cross-site"}):
            r = requests.post(server.url + path, data={**fields, "csrf": mine}, auth=AUTH, headers=headers,
                              timeout=30)
            assert r.status_code == 403 and "other sites" in r.text, (path, headers)
        # the login is still needed; JSON and text bodies are not forms; a form past searcher.form.max is 413
        assert requests.post(server.url + path, data={**fields, "csrf": mine}, timeout=30).status_code == 401
        r = requests.post(server.url + path, json={**fields, "csrf": mine}, auth=AUTH, timeout=30)
        assert r.status_code == 415 and "form" in r.text
        r = requests.post(server.url + path, data="csrf=" + mine, auth=AUTH,
                          headers={"Content-Type": "text/plain"}, timeout=30)
        assert r.status_code == 415
        r = requests.post(server.url + path, data={"csrf": mine, "seeds": "x" * 300_000}, auth=AUTH, timeout=30)
        assert r.status_code == 413
    # the job API stays JSON only
    r = requests.post(f"{server.url}/api/jobs", data={"type": "inject", "csrf": mine}, auth=AUTH, timeout=30)
    assert r.status_code == 415
    assert jobs(server) == before  # nothing started
    # a bad field is one line naming it; the token checked first
    r = requests.post(f"{server.url}/crawl/start", data={"csrf": mine, "rounds": "two"}, auth=AUTH, timeout=30)
    assert r.status_code == 400 and "is not a whole number; give e.g. rounds=2" in r.text
    r = requests.post(f"{server.url}/crawl/inject", data={"csrf": mine, "seeds": "\n# none\n"}, auth=AUTH,
                      timeout=30)
    assert r.status_code == 400 and "no seed URL given" in r.text
    assert jobs(server) == before


def test_a_seed_file_upload_is_injected(server: SearchServer, web: TestWeb) -> None:
    mine = csrf_of(server, auth=AUTH)
    more = [web.page_url(0, 100 + i) for i in range(10)]
    seeds = f"# two hosts\n{web.page_url(0, 1)}\n\n{web.page_url(1, 1)}\n" + "".join(f"{u}\n" for u in more)
    r = requests.post(f"{server.url}/crawl/inject", data={"csrf": mine}, auth=AUTH, timeout=30,
                      files={"seedFile": ("seeds.txt", seeds.encode(), "text/plain")}, allow_redirects=False)
    assert r.status_code == 303, r.text
    job_id = r.headers["location"].rsplit("/", 1)[1]
    assert r.headers["location"] == f"/crawl/jobs/{job_id}"
    info = wait_job(server, job_id)
    assert info["state"] == "FINISHED" and info["counters"]["inject"]["injected"] == 12, info
    assert info["args"]["seedUrls"] == [web.page_url(0, 1), web.page_url(1, 1), *more]
    # its page shows the first 5 seeds and a count of the rest (120 pushed the progress frame out of sight)
    page = requests.get(f"{server.url}{r.headers['location']}", auth=AUTH, timeout=30).text
    assert web.page_url(0, 102) in page and web.page_url(0, 103) not in page and "7 more (see the JSON)" in page


class Attacker:
    """Another site (127.0.0.2) whose page holds forms aimed at the server's, with the victim's own token in
    them (the worst case: a leaked token); the browser, logged in to the server, submits them."""

    def __init__(self, target: str, token: str, job_id: str) -> None:
        forms = {"inject": ("/crawl/inject", '<input name="seeds" value="http://evil.example/">'),
                 "start": ("/crawl/start", '<input name="rounds" value="1">'),
                 "stop": (f"/crawl/jobs/{job_id}/stop", "")}
        body = "".join(f'<form action="{target}{path}" method="post" enctype="{enc}">{fields}'
                       f'<input type="hidden" name="csrf" value="{token}"><button id="{name}">{name}</button></form>'
                       for (name, (path, fields)), enc in zip(forms.items(), ("multipart/form-data",
                                                                               "application/x-www-form-urlencoded",
                                                                               "application/x-www-form-urlencoded"),
                                                              strict=True))
        page = f"<!DOCTYPE html><html><body>{body}</body></html>".encode()

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(len(page)))
                self.end_headers()
                self.wfile.write(page)

            def log_message(self, *_args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.2", 0), Handler)
        self.url = f"http://127.0.0.2:{self.httpd.server_address[1]}/"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def test_browser_login_inject_crawl_watch_stop(browser, server: SearchServer, web: TestWeb, shots: Path) -> None:
    from selenium.webdriver.common.by import By

    # log in (Basic): the browser keeps the login for the site's other pages and forms
    assert requests.get(f"{server.url}/crawl/jobs", timeout=30).status_code == 401
    host = server.url.removeprefix("http://")
    browser.get(f"http://{USER}:{PASSWORD.replace(' ', '%20')}@{host}/crawl/jobs")
    assert browser.find_element(By.ID, "inject-form").is_displayed()
    assert not browser.find_elements(By.TAG_NAME, "script")
    # inject: the home page and every page of both hosts, typed into the textarea
    seeds = [web.page_url(h, i) for h in range(2) for i in range(PAGES)]
    browser.find_element(By.ID, "seeds").send_keys("\n".join(seeds))
    browser.save_screenshot(str(shots / "crawlforms-inject.png"))
    submit(browser, "inject")
    assert re.search(r"/crawl/jobs/[\w-]{16}$", browser.current_url), browser.find_element(By.TAG_NAME, "body").text
    done = wait_frame(browser, lambda v: v["state"] != "RUNNING", "the inject job's end")
    assert done["state"] == "FINISHED", done  # (the upload test injected two of them before)
    assert int(done["inject.injected"]) + int(done.get("inject.known", 0)) == len(seeds), done
    # start a 2-round crawl, 100 URLs a round, indexed into the server's Solr
    browser.get(f"{server.url}/crawl/jobs")
    rounds = browser.find_element(By.ID, "rounds")
    rounds.clear()
    rounds.send_keys("2")
    browser.find_element(By.ID, "topN").send_keys("100")
    browser.find_element(By.CSS_SELECTOR, "#index option[value=server]").click()
    submit(browser, "start")
    job_id = browser.current_url.rsplit("/", 1)[1]
    info = requests.get(f"{server.url}/api/jobs/{job_id}", auth=AUTH, timeout=30).json()
    assert info["type"] == "crawl" and info["args"] == {"rounds": 2, "topN": 100, "index": True}, info
    # its progress changes on the page, with no reload of the page (the frame reloads itself, no script)
    first = wait_frame(browser, lambda v: int(v.get("fetch.fetched", 0)) >= 1, "a fetched page")
    assert first["state"] == "RUNNING" and first.get("round") == "1", first
    later = wait_frame(browser, lambda v: int(v.get("fetch.fetched", 0)) > int(first["fetch.fetched"]),
                        "more fetched pages")
    assert later["state"] == "RUNNING", later
    browser.save_screenshot(str(shots / "crawlforms-running.png"))
    assert browser.current_url.endswith(f"/crawl/jobs/{job_id}")  # the same page all along
    # stop it: the page says so, then the job ends KILLED (what was fetched is kept)
    stop_from_frame(browser)  # the form's answer: the job's page again
    assert browser.current_url.endswith(f"/crawl/jobs/{job_id}")
    asked = wait_frame(browser, lambda v: True, "the job")
    assert "stop" not in asked and (asked["state"] != "RUNNING" or "stopping" in asked), asked  # asked once
    stopped = wait_frame(browser, lambda v: v["state"] != "RUNNING", "the crawl's end")
    assert stopped["state"] == "KILLED", stopped
    assert 1 <= int(stopped["fetch.fetched"]) < len(seeds), stopped
    browser.save_screenshot(str(shots / "crawlforms-stopped.png"))
    assert wait_job(server, job_id)["state"] == "KILLED"
    browser.get(f"{server.url}/crawl/jobs")
    listed = browser.find_element(By.ID, "jobs").text
    assert f"{job_id} crawl KILLED" in listed, listed

    # another site's forms, submitted by this logged-in browser, even with the right token: refused, nothing done
    token = browser.find_element(By.CSS_SELECTOR, "#crawl-form input[name=csrf]").get_attribute("value")
    before = jobs(server)
    attacker = Attacker(server.url, token, job_id)
    try:
        for button in ("inject", "start", "stop"):
            browser.get(attacker.url)
            submit(browser, button)
            body = browser.find_element(By.TAG_NAME, "body").text
            assert "requests from other sites are not accepted" in body, (button, body)
            browser.save_screenshot(str(shots / f"crawlforms-cross-site-{button}.png"))
    finally:
        attacker.close()
    assert jobs(server) == before
