"""protocol-chromium in the fetch engine (issue 25), with Debian's chromium and the test web on loopback: a rendered
page's resources take their turn in their hosts' politeness queues (fetcher.server.delay, robots.txt Crawl-delay), the
page's time bounds everything of the page (a resource that cannot be spaced within it is blocked and counted), the
fetcher's time limit and a stop request end a page in the browser (left for a later fetch), and the pool never runs
more browsers than chromium.pool.size."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

import nutch2.plugins.protocol_chromium.chromium
from nutch2.config import Configuration
from nutch2.fetch.fetcher import Fetcher
from nutch2.fetch.output import ProtocolOutput
from nutch2.fetch.queues import FetchItem
from nutch2.mapred import clock, stop
from nutch2.mapred.job import Counters
from nutch2.urls.tableutil import reverse_url
from tests.conftest import CONF_DIR, require_chromium
from tests.testweb import TestWeb
from tests.testweb_beyond import BROWSER_HOSTILE, BROWSER_RESOURCES, OTHER_HOST_SCRIPTS, RESOURCE_SCRIPTS

pytestmark = [pytest.mark.integration, pytest.mark.slow]

Outputs = dict[str, tuple[int, ProtocolOutput | None]]


@pytest.fixture(scope="module")
def web() -> Iterator[TestWeb]:
    require_chromium()
    with TestWeb(hosts=3, pages_per_host=3, traps=True, beyond_html=True) as w:  # host 1: Crawl-delay 1
        yield w


def run_fetch(urls: list[str], threads: int = 4, **props: object) -> tuple[Outputs, dict[str, int]]:
    """One fetch task of `urls` with protocol-chromium; what it output per URL and its counters."""
    base: dict[str, object] = {"http.agent.name": "nutch2-test", "http.timeout": 5000, "page.load.delay": 0,
                               "fetcher.address.allow": "127.0.1.0/24",  # the test web, for the address guard
                               "fetcher.server.delay": 0.1}
    conf = Configuration(CONF_DIR, {k: str(v) for k, v in {**base, **props}.items()})
    outputs: Outputs = {}
    lock = threading.Lock()

    def output(item: FetchItem, code: int, args: list[str], out: ProtocolOutput | None) -> None:
        with lock:
            outputs[item.url] = (code, out)

    counters = Counters("fetch")
    fetcher = Fetcher(conf, threads, output, counters, progress=False)
    try:
        fetcher.run(FetchItem(reverse_url(u), u, {}, 0, None, None) for u in urls)
    finally:
        fetcher.close()
    return outputs, counters.as_dict()


def test_resources_keep_each_hosts_politeness(web: TestWeb) -> None:
    """Six scripts of a rendered page, three on its host and three on host 1 (Crawl-delay: 1) while host 1's pages
    are fetched by other threads: every request to a host, page, resource or robots.txt, waits that host's delay."""
    docs = web.hosts[web.docs_host]
    page = web.url(web.docs_host, BROWSER_RESOURCES)
    web.reset_log()
    outputs, c = run_fetch([page, *(web.url(1, p) for p in ("/", "/p/1.html", "/p/2.html"))],
                           **{"chromium.hosts": docs, "fetcher.server.delay": 0.5, "chromium.page.timeout": 60})
    code, out = outputs[page]
    assert out is not None and out.headers.get("X-Nutch2-Chromium") == "rendered"
    assert c.get("chromium_resources_fetched") == 6 and "chromium_resources_over_time" not in c, c
    for name in (*RESOURCE_SCRIPTS, *OTHER_HOST_SCRIPTS):  # each script ran: its link is in the DOM
        assert f"/docs/res/loaded-{name}.html".encode() in out.content, name
    for path in RESOURCE_SCRIPTS.values():
        assert web.count(web.url(web.docs_host, path)) == 1
    for path in OTHER_HOST_SCRIPTS.values():
        assert web.count(web.url(1, path)) == 1
    closest = web.closest_requests()
    assert closest[docs] >= 0.5 * 0.9, closest  # fetcher.server.delay between the page and its own scripts
    assert closest[web.hosts[1]] >= 1.0 * 0.9, closest  # host 1's Crawl-delay across pages and resources


@pytest.mark.parametrize("stopped_before", [0, 600])
def test_a_resource_that_cannot_be_spaced_within_the_page_time_is_blocked(web: TestWeb, monkeypatch,
                                                                           stopped_before: int) -> None:
    """fetcher.server.delay (12 s) is longer than the page's time (8 s): the page's own scripts cannot start in
    time, so they are blocked and counted, never requested; the page is still rendered within its time (8 s, not
    less: on a loaded CI machine Chromium's navigation alone once took over 4 s). The same in a process that was
    stopped for 10 minutes before (its fetch clock 600 s behind time.monotonic(): the page's time and its
    resources' must be on one clock)."""
    if stopped_before:
        behind = time.monotonic() - clock.now()
        while time.monotonic() - clock.now() < behind + stopped_before - 1:  # a tick may write the old state back
            last, paused = clock._state
            monkeypatch.setattr(clock, "_state", (last, paused + stopped_before))
            time.sleep(2 * clock._TICK)
    page = web.url(web.docs_host, BROWSER_RESOURCES)
    web.reset_log()
    outputs, c = run_fetch([page], **{"chromium.hosts": web.hosts[web.docs_host], "fetcher.server.delay": 12,
                                      "chromium.page.timeout": 8})
    _, out = outputs[page]
    assert out is not None and out.headers.get("X-Nutch2-Chromium") == "rendered"
    assert c.get("chromium_resources_over_time", 0) >= len(RESOURCE_SCRIPTS), c
    for path in RESOURCE_SCRIPTS.values():
        assert web.count(web.url(web.docs_host, path)) == 0
    fetched = sum(web.count(web.url(1, p)) for p in OTHER_HOST_SCRIPTS.values())
    assert fetched == c.get("chromium_resources_fetched", 0)  # host 1's scripts: those that fitted, and only them
    assert c.get("chromium_resources_over_time", 0) + fetched == 6


def test_the_fetchers_time_limit_ends_a_page_in_the_browser(web: TestWeb) -> None:
    """A script that never ends, a page time (120 s) far beyond fetcher.timelimit.mins (6 s): the page is cut at
    the time limit and left for a later fetch (no output, counted as hit_by_timelimit), not rendered after it."""
    page = web.url(web.docs_host, BROWSER_HOSTILE["endless_script"])
    web.reset_log()
    outputs, c = run_fetch([page], **{"chromium.hosts": web.hosts[web.docs_host], "chromium.page.timeout": 120,
                                      "fetcher.timelimit.mins": 0.1})
    assert web.count(page) == 1  # it was fetched: the browser is what the limit cut
    assert page not in outputs and c.get("hit_by_timelimit") == 1, c
    assert "chromium_rendered" not in c and "chromium_failed" not in c


def test_a_stop_request_ends_a_page_in_the_browser(web: TestWeb) -> None:
    """A stop request (SIGINT/SIGTERM, the job API's stop) while a never-ending script runs: the page is left for
    -resume (no output, counted as stopped_in_flight) and the fetch ends without waiting for the page's time."""
    page = web.url(web.docs_host, BROWSER_HOSTILE["endless_script"])
    web.reset_log()
    result: list[tuple[Outputs, dict[str, int]]] = []
    started = threading.Event()
    original = nutch2.plugins.protocol_chromium.chromium._Page.render

    def render(self: nutch2.plugins.protocol_chromium.chromium._Page) -> tuple[bytes, bool]:
        started.set()
        return original(self)

    nutch2.plugins.protocol_chromium.chromium._Page.render = render  # type: ignore[method-assign]
    runner = threading.Thread(target=lambda: result.append(run_fetch(
        [page], **{"chromium.hosts": web.hosts[web.docs_host], "chromium.page.timeout": 120})))
    try:
        runner.start()
        assert started.wait(60)  # the page is in a browser
        stop.request()
        runner.join()
    finally:
        nutch2.plugins.protocol_chromium.chromium._Page.render = original  # type: ignore[method-assign]
        stop.reset()
    outputs, c = result[0]
    assert page not in outputs and c.get("stopped_in_flight") == 1, c
    assert "chromium_rendered" not in c and "chromium_failed" not in c


@pytest.fixture(scope="module")
def many_hosts() -> Iterator[TestWeb]:
    require_chromium()
    with TestWeb(hosts=6, pages_per_host=1, traps=False) as w:
        yield w


def test_the_pool_never_runs_more_browsers_than_its_size(many_hosts: TestWeb, monkeypatch: pytest.MonkeyPatch
                                                         ) -> None:
    """Six pages of six hosts, six fetcher threads, chromium.pool.size=2: at most two browsers at once, reused."""
    lock = threading.Lock()
    live, seen = [0], {"peak": 0, "started": 0}

    class Counted(nutch2.plugins.protocol_chromium.chromium.Browser):
        def __init__(self, settings: nutch2.plugins.protocol_chromium.chromium.ChromiumSettings) -> None:
            super().__init__(settings)
            self.counted = True
            with lock:
                live[0] += 1
                seen["started"] += 1
                seen["peak"] = max(seen["peak"], live[0])

        def close(self) -> None:
            with lock:
                if getattr(self, "counted", False):
                    self.counted = False
                    live[0] -= 1
            super().close()

    monkeypatch.setattr(nutch2.plugins.protocol_chromium.chromium, "Browser", Counted)
    urls = [many_hosts.url(h, "/") for h in range(6)]
    outputs, c = run_fetch(urls, threads=6, **{"chromium.url.pattern": ".", "chromium.pool.size": 2,
                                               "page.load.delay": 1.0})
    assert c.get("chromium_rendered") == 6, c
    assert all(outputs[u][1].headers.get("X-Nutch2-Chromium") == "rendered" for u in urls)
    assert 1 <= seen["peak"] <= 2 and seen["started"] <= 2, seen
    assert live[0] == 0  # closed with the fetcher
