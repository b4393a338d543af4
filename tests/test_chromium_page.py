"""A page in the browser whose scripts never go quiet (unit, no browser): after its load window the requests it
keeps making are failed for at most half the time left, so its DOM is still taken in time."""

from __future__ import annotations

import sys
import time
from typing import Any

from nutch2.config import Configuration
from nutch2.fetch.output import ProtocolOutput
from nutch2.mapred import clock
from nutch2.plugins.protocol_chromium.chromium import ChromiumSettings, _Page
from tests.conftest import CONF_DIR

CALL_SECONDS = 0.01


class EndlessEvents:
    """A browser's event queue that always holds one more paused request of the page."""

    def __init__(self) -> None:
        self.read = 0

    def get(self, timeout: float) -> dict[str, Any]:
        self.read += 1
        return {"method": "Fetch.requestPaused", "sessionId": "s",
                "params": {"requestId": str(self.read), "resourceType": "xhr",
                           "request": {"url": f"http://127.0.1.1/poll?{self.read}", "method": "GET"}}}


class SlowBrowser:
    """Each command takes CALL_SECONDS to answer, as a busy browser's do."""

    def __init__(self) -> None:
        self.events = EndlessEvents()
        self.calls: list[str] = []

    def call(self, method: str, params: dict[str, Any], session: str = "", timeout: float = 0.0) -> dict[str, Any]:
        self.calls.append(method)
        time.sleep(CALL_SECONDS)
        return {}


def test_a_page_that_never_goes_quiet_is_cut_by_time_not_only_by_count() -> None:
    conf = Configuration(CONF_DIR, {"chromium.mode": "always", "chromium.page.timeout": 1,
                                    "chromium.binary": sys.executable})  # any executable: no browser is started
    settings = ChromiumSettings.from_conf(conf)
    assert settings is not None
    browser = SlowBrowser()
    counted: list[str] = []
    out = ProtocolOutput(0, [], 200, b"<html></html>", "text/html", {}, "http://127.0.1.1/")
    page = _Page(browser, settings, "http://127.0.1.1/", out, lambda url, until: (None, "refused"),  # type: ignore[arg-type]
                 counted.append, clock.now() + 1.0, None)  # the fetch clock, as the fetcher's deadlines
    page.load_until = clock.now()  # the load window is over
    page.session = "s"
    start = clock.now()
    page._cut_waiting()
    took = clock.now() - start
    # each late request is failed by a command of CALL_SECONDS, for half of the page's one second left (and the one
    # command under way then); bounded only by their count (1,000) they went on until the page's deadline, leaving
    # no time to take the DOM. Timed on the page's own clock (a count of commands varies with the machine's load)
    assert browser.calls.count("Fetch.failRequest") >= 1
    assert took < 0.5 + 0.3, took  # (until the deadline: 1.0)
    assert counted.count("chromium_resources_over_time") == browser.calls.count("Fetch.failRequest")


def test_the_profiles_of_browsers_killed_with_their_task_are_removed(tmp_path, monkeypatch) -> None:
    """A fetch killed with kill -9 takes its browsers with it (--pdeathsig) but left their profile folders in the
    temporary folder, one per browser, for ever. A browser starting removes those of processes that have ended;
    its own process's, another live process's and an older nutch2's (no pid in the name) stay."""
    import os
    import subprocess
    import sys
    import tempfile

    from nutch2.plugins.protocol_chromium import chromium

    ended = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                           text=True, check=True)
    dead = int(ended.stdout)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    names = {"gone": f"nutch2-chromium-{dead}-ab_12x", "mine": f"nutch2-chromium-{os.getpid()}-cd34y",
             "parent": f"nutch2-chromium-{os.getppid()}-ef56z", "old": "nutch2-chromium-2fjq5607",
             "other": f"nutch2-shuffle-{dead}-gh78"}
    for name in names.values():
        (tmp_path / name / "Default").mkdir(parents=True)
    chromium._remove_stale_profiles()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(v for k, v in names.items() if k != "gone")
