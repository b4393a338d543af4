"""Helpers for the Searcher's tests: the Solr they use, `nutch2 server` in a child process, headless Chromium."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import requests

# the core the tests wipe and fill; NUTCH2_SOLR_URL points them at another Solr (e.g. SOLR_PORT=8984)
from tests.conftest import SOLR_URL as SOLR
from tests.conftest import require_solr  # noqa: F401 - the searcher tests take it from here

CHROMIUM = os.environ.get("NUTCH2_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("NUTCH2_CHROMEDRIVER", "/usr/bin/chromedriver")
_LISTENING = re.compile(r"^server: crawl \S+ at (https?://\S+/) ", re.M)


@contextmanager
def serving(app) -> Iterator[str]:
    """An ASGI app served by uvicorn in a thread on a free loopback port: yields its base URL, stops it after."""
    import threading

    import uvicorn

    from nutch2.searcher.server import bind

    sock = bind("127.0.0.1", 0)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 30
        while not server.started:
            assert time.monotonic() < deadline and thread.is_alive(), "the app did not start"
            time.sleep(0.05)
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(30)


def wipe_solr(crawl_id: str) -> None:
    """Delete one crawl's documents (the core is shared: other crawls, other test runs)."""
    requests.post(f"{SOLR}/update?commit=true", json={"delete": {"query": f'crawlId:"{crawl_id}"'}},
                  timeout=30).raise_for_status()


class SearchServer:
    """`nutch2 server -port 0 ...` in a child process; `url` is where it listens once it answers."""

    def __init__(self, args: list[str], log: Path) -> None:
        self.log = log
        self._out = open(log, "w")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen([sys.executable, "-m", "nutch2.cli", "server", "-port", "0", *args],
                                     stdin=subprocess.DEVNULL, stdout=self._out, stderr=subprocess.STDOUT)
        self.url = self._wait_listening()

    def _wait_listening(self, timeout: float = 60.0) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            text = self.log.read_text(errors="replace")
            m = _LISTENING.search(text)
            if m:
                url = m.group(1).rstrip("/")
                try:  # any answer will do (a server with a login answers 401; TLS is checked by the tests)
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        requests.get(f"{url}/static/style.css", timeout=5, verify=False)
                    return url
                except requests.RequestException:
                    pass
            if self.proc.poll() is not None:
                raise AssertionError(f"nutch2 server exited with {self.proc.returncode}:\n{text}")
            time.sleep(0.1)
        self.stop()
        raise AssertionError(f"nutch2 server did not start in {timeout:.0f} s:\n{self.log.read_text()}")

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def stop(self) -> int:
        """Ctrl-C, as a user stops it; the exit code."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._out.close()
        return self.proc.returncode

    def __enter__(self) -> SearchServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def chrome(download_dir: Path):
    """Headless Debian Chromium driven by its chromedriver (never a downloaded browser, no network)."""
    missing = [p for p in (CHROMIUM, CHROMEDRIVER) if not (Path(p).exists() or shutil.which(p))]
    if missing:
        msg = (f"{' and '.join(missing)} not found: the browser tests need Debian's chromium and "
               "chromium-driver (apt-get install -y chromium chromium-driver; tests/run.sh does it)")
        if os.environ.get("CI"):
            pytest.fail(msg)
        pytest.skip(msg)
    os.environ.setdefault("SE_OFFLINE", "true")  # selenium never looks for drivers or browsers online
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        pytest.fail("selenium is not installed: pip install -e '.[test]'")
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                "--disable-dev-shm-usage", "--window-size=1280,900", f"--user-data-dir={download_dir}",
                "--lang=en-US"):
        opts.add_argument(arg)
    return webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)


# ---------------------------------------------------------------- the crawl forms in a browser
def stale(e: Exception) -> bool:
    """Whether a WebDriver error says the element went with its page (a frame that reloaded itself): selenium's
    StaleElementReferenceException, or chromium's own word for it met mid-navigation (CI, 2026-12-07)."""
    from selenium.common.exceptions import StaleElementReferenceException

    return isinstance(e, StaleElementReferenceException) or "does not belong to the document" in str(e)


def frame_values(browser) -> dict[str, str]:
    """The progress frame's state, counters, round, Stop button and message, read inside the frame (it reloads
    itself: read again on a miss)."""
    from selenium.common.exceptions import NoSuchElementException, NoSuchFrameException, WebDriverException
    from selenium.webdriver.common.by import By

    try:
        browser.switch_to.default_content()
        browser.switch_to.frame(browser.find_element(By.ID, "progress"))
        out = {"state": browser.find_element(By.ID, "state").text}
        for td in browser.find_elements(By.CSS_SELECTOR, "td[data-counter]"):
            out[td.get_attribute("data-counter")] = td.text
        rounds = browser.find_elements(By.ID, "round")
        if rounds:
            out["round"] = rounds[0].text
        for name in ("stop", "stopping", "msg"):  # the Stop button, the word that the job is stopping, its message
            if found := browser.find_elements(By.ID, name):
                out[name] = found[0].text
        return out
    except (NoSuchElementException, NoSuchFrameException):
        return {}
    except WebDriverException as e:
        if stale(e):
            return {}
        raise
    finally:
        browser.switch_to.default_content()


def wait_frame(browser, until, what: str, timeout: float = 120.0) -> dict[str, str]:
    deadline = time.monotonic() + timeout
    seen: dict[str, str] = {}
    while time.monotonic() < deadline:
        seen = frame_values(browser)
        if seen and until(seen):
            return seen
        time.sleep(0.3)
    raise AssertionError(f"the progress frame never showed {what}; last: {seen}")


def submit(browser, button_id: str) -> None:
    """Click a form's button and wait for the page its POST answers with."""
    from selenium.common.exceptions import WebDriverException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    button = browser.find_element(By.ID, button_id)
    button.click()

    def gone(_browser) -> bool:  # the old page's button is gone: the answer is loaded
        try:
            button.is_enabled()
            return False
        except WebDriverException as e:
            if stale(e):
                return True
            raise

    WebDriverWait(browser, 30).until(gone)


def stop_from_frame(browser, timeout: float = 30.0) -> None:
    """Click the Stop button of a job page's progress frame (the frame reloads itself: find it again on a miss) and
    wait for the job's page its POST answers with, in the top window."""
    from selenium.common.exceptions import (
        NoSuchElementException,
        NoSuchFrameException,
        WebDriverException,
    )
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    deadline = time.monotonic() + timeout
    while True:
        browser.switch_to.default_content()
        top = browser.find_element(By.ID, "progress")
        try:
            browser.switch_to.frame(top)
            browser.find_element(By.ID, "stop").click()
            break
        except WebDriverException as e:
            if not (isinstance(e, (NoSuchElementException, NoSuchFrameException)) or stale(e)):
                raise
            assert time.monotonic() < deadline, "the progress frame never showed its Stop button"
            time.sleep(0.2)
        finally:
            browser.switch_to.default_content()

    def reloaded(_browser) -> bool:  # the old page's frame is gone: the answer is loaded
        try:
            top.is_enabled()
            return False
        except WebDriverException as e:
            if stale(e):
                return True
            raise

    WebDriverWait(browser, 30).until(reloaded)
