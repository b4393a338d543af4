"""robots.txt kept in the crawl's store across tasks and rounds (nutch2/fetch/robotsstore.py, RFC 9309 section 2.4):
a later task uses a host's kept answer without asking the host while it is fresh (24 h at most, less by its caching
headers), a 5xx or no answer falls back on the last good copy, 4xx is kept as allow all, and a record that is
missing, unreadable or half written never blocks a crawl. On every store of the contract suite."""

from __future__ import annotations

import dataclasses
import email.utils
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from nutch2.fetch.robots import ROBOTS_MAX_BYTES, RobotsCache
from nutch2.fetch.robotsstore import RobotsRecord, RobotsStore, record_name
from nutch2.plugins.protocol_http.http import HttpProtocol, HttpSettings
from tests.helpers import QuietServer

AGENT = "MyBot"
ROBOTS = b"User-agent: *\nDisallow: /private\n\nUser-agent: MyBot\nDisallow: /nobot\nCrawl-delay: 2.5\n\n" \
         b"Sitemap: http://example.com/sitemap.xml\n"
DAY = 86400.0


class Clock:
    """time.time() for a RobotsStore, moved by the test."""

    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def site() -> Iterator[QuietServer]:
    server = QuietServer({"/robots.txt": (200, {}, ROBOTS)})
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    yield server
    server.shutdown()
    server.server_close()


def url_of(server: QuietServer, path: str = "/page") -> str:
    return f"http://127.0.0.1:{server.server_address[1]}{path}"


def task(store, clock: Clock, counters: Counter[str] | None = None, hours: float = 24.0,
         days: float = 30.0) -> RobotsCache:
    """The robots cache of one fetch task on `store`, with protocol-http's robots.txt sessions."""
    settings = dataclasses.replace(HttpSettings(agent="MyBot/1.0", timeout_ms=2000), redirect_max=0,
                                   content_limit=ROBOTS_MAX_BYTES)

    class Counters:
        def incr(self, name: str, n: int = 1) -> None:
            if counters is not None:
                counters[name] += n

    return RobotsCache(lambda: HttpProtocol(settings), AGENT, RobotsStore(store, hours, days, clock), Counters())


def fetched(server: QuietServer) -> int:
    return server.hits.get("/robots.txt", 0)


def one_task(store, clock: Clock, url: str, **kw: object):
    """The rules one task gets for `url` (its kept answers written at its end)."""
    robots = task(store, clock, **kw)
    try:
        return robots.rules_for(url)
    finally:
        robots.close()


def good_rules(rules, url: str) -> None:
    """The rules of ROBOTS."""
    assert rules.state == "parsed"
    assert rules.allowed(url, AGENT) and not rules.allowed(url.replace("/page", "/nobot/x"), AGENT)
    assert rules.allowed(url.replace("/page", "/private/x"), AGENT)  # MyBot's own group decides
    assert not rules.allowed(url.replace("/page", "/private/x"), "OtherBot")
    assert rules.crawl_delay(AGENT) == 2.5 and rules.sitemaps == ["http://example.com/sitemap.xml"]


def test_a_later_task_uses_the_kept_rules_without_a_request(store, site: QuietServer) -> None:
    clock, url = Clock(), url_of(site)
    first = task(store, clock)
    good_rules(first.rules_for(url), url)
    assert first.rules_for(url_of(site, "/other")) is first.rules_for(url)  # one request per task, as ever
    first.close()
    assert fetched(site) == 1
    counters: Counter[str] = Counter()
    kept = one_task(store, clock, url, counters=counters)
    good_rules(kept, url)
    assert kept.from_store and fetched(site) == 1 and counters["robots_from_store"] == 1
    record = RobotsRecord.from_json(store.get_state(record_name(("http", "127.0.0.1", site.server_address[1]))))
    assert record is not None and (record.state, record.status) == ("parsed", "2xx")
    clock.now += 23.9 * 3600
    assert one_task(store, clock, url).from_store and fetched(site) == 1
    clock.now += 0.2 * 3600  # 24 h after the fetch: asked again, and kept from then on
    again = one_task(store, clock, url)
    good_rules(again, url)
    assert not again.from_store and fetched(site) == 2
    assert one_task(store, clock, url).from_store and fetched(site) == 2


def test_http_robots_cache_hours_bounds_the_lifetime(store, site: QuietServer) -> None:
    clock, url = Clock(), url_of(site)
    site.routes["/robots.txt"] = (200, {"Cache-Control": "max-age=864000"}, ROBOTS)  # 10 days: bounded
    one_task(store, clock, url, hours=2.0)
    clock.now += 1.9 * 3600
    assert one_task(store, clock, url, hours=2.0).from_store
    clock.now += 0.2 * 3600
    assert not one_task(store, clock, url, hours=2.0).from_store and fetched(site) == 2


def expires_in(seconds: float) -> str:
    """An Expires value `seconds` from now (the server's Date is now)."""
    return email.utils.formatdate(time.time() + seconds, usegmt=True)


@pytest.mark.parametrize(("headers", "fresh_for"), [
    (lambda: {"Cache-Control": "public, max-age=60"}, 60),
    (lambda: {"Cache-Control": 'max-age="600"', "Age": "500"}, 100),  # what upstream caches kept it for counts
    (lambda: {"Expires": expires_in(120)}, 120),
    (lambda: {"Expires": expires_in(-60)}, 0),
    (lambda: {"Expires": "0"}, 0),  # invalid: already expired
    (lambda: {"Cache-Control": "max-age=60", "Expires": expires_in(3600)}, 60),  # max-age wins
    (lambda: {"Cache-Control": "no-cache"}, 0),
    (lambda: {"Cache-Control": "max-age=0"}, 0),
])
def test_caching_headers_shorter_than_the_default_are_honoured(store, site: QuietServer,
                                                               headers: Callable[[], dict[str, str]],
                                                               fresh_for: int) -> None:
    clock, url = Clock(), url_of(site)
    site.routes["/robots.txt"] = (200, headers(), ROBOTS)
    one_task(store, clock, url)
    if fresh_for:
        clock.now += fresh_for - 5
        assert one_task(store, clock, url).from_store and fetched(site) == 1
    clock.now += 10
    good_rules(one_task(store, clock, url), url)
    assert fetched(site) == 2  # stale: asked again


def test_no_store_is_used_by_its_task_only(store, site: QuietServer) -> None:
    clock, url = Clock(), url_of(site)
    name = record_name(("http", "127.0.0.1", site.server_address[1]))
    one_task(store, clock, url)
    assert store.get_state(name) is not None
    clock.now += 2 * DAY
    site.routes["/robots.txt"] = (200, {"Cache-Control": "private, no-store"}, ROBOTS)
    good_rules(one_task(store, clock, url), url)
    assert store.get_state(name) is None  # the older copy went too
    good_rules(one_task(store, clock, url), url)
    assert fetched(site) == 3


@pytest.mark.parametrize("status", [404, 403, 410])
def test_a_4xx_is_allow_all_kept_as_long(store, site: QuietServer, status: int) -> None:
    clock, url = Clock(), url_of(site)
    site.routes["/robots.txt"] = (status, {}, b"no robots here")
    assert one_task(store, clock, url).state == "allow_all"
    kept = one_task(store, clock, url)
    assert kept.state == "allow_all" and kept.from_store and fetched(site) == 1
    record = RobotsRecord.from_json(store.get_state(record_name(("http", "127.0.0.1", site.server_address[1]))))
    assert record is not None and record.status == "4xx"


def test_a_5xx_or_no_answer_keeps_the_last_good_copy(store, site: QuietServer) -> None:
    """After the copy's lifetime a 503, a 429 or a host that does not answer: the kept rules stand in (not kept
    again: the next task asks again), for 30 days after the copy was fetched; then the host is deferred or
    unreachable as without a copy."""
    clock, url = Clock(), url_of(site)
    one_task(store, clock, url)
    clock.now += 2 * DAY
    counters: Counter[str] = Counter()
    for n, status in enumerate((503, 500, 429), start=2):
        site.routes["/robots.txt"] = (status, {}, b"busy")
        rules = one_task(store, clock, url, counters=counters)
        good_rules(rules, url)
        assert not rules.from_store and fetched(site) == n  # asked each task: a 5xx is not kept
    assert counters["robots_stood_in"] == 3
    port = site.server_address[1]
    site.shutdown()
    site.server_close()  # connection refused
    good_rules(one_task(store, clock, url), url)
    clock.now += 29 * DAY  # 31 days after the good copy
    assert one_task(store, clock, url).state == "unreachable"
    assert RobotsRecord.from_json(store.get_state(record_name(("http", "127.0.0.1", port)))) is not None
    assert one_task(store, clock, url, days=0).state == "unreachable"


def test_a_503_without_a_copy_defers_as_before(store, site: QuietServer) -> None:
    clock, url = Clock(), url_of(site)
    site.routes["/robots.txt"] = (503, {}, b"busy")
    assert one_task(store, clock, url).state == "defer"
    assert one_task(store, clock, url).state == "defer" and fetched(site) == 2
    assert store.get_state(record_name(("http", "127.0.0.1", site.server_address[1]))) is None


@pytest.mark.parametrize("raw", [
    '{"v":1,"state":"parsed","status":"2xx","fetched":1',  # cut off
    "",
    "not json",
    '{"v":1,"state":"parsed","status":"2xx","fetched":1,"headers":{},"z":"!!!"}',  # not base64
    '{"v":1,"state":"parsed","status":"2xx","fetched":1,"headers":{},"z":"aGVsbG8="}',  # not zlib
    '{"v":1,"state":"parsed","status":"2xx","fetched":1,"headers":{}}',  # parsed without rules
    '{"v":1,"state":"allow_all","status":"4xx","fetched":"yesterday","headers":{}}',
    '{"v":1,"state":"allow_all","status":"4xx","fetched":1,"headers":[]}',
    '{"v":2,"state":"allow_all","status":"4xx","fetched":1,"headers":{}}',  # a later format
    '["robots"]',
])
def test_an_unreadable_record_is_fetched_again_and_rewritten(store, site: QuietServer, raw: str) -> None:
    clock, url = Clock(), url_of(site)
    name = record_name(("http", "127.0.0.1", site.server_address[1]))
    store.put_state(name, raw)
    good_rules(one_task(store, clock, url), url)
    assert fetched(site) == 1
    assert RobotsRecord.from_json(store.get_state(name)) is not None  # rewritten whole
    assert one_task(store, clock, url).from_store


def test_a_store_that_fails_costs_the_cache_not_the_fetch(site: QuietServer, tmp_path: Path) -> None:
    class Broken:
        def get_state(self, name: str) -> str | None:
            raise OSError("the store is gone")

        def put_state(self, name: str, value: str | None) -> None:
            raise OSError("the store is gone")

    robots = RobotsCache(task(None, Clock())._factory, AGENT, RobotsStore(Broken()))  # type: ignore[arg-type]
    good_rules(robots.rules_for(url_of(site)), url_of(site))
    robots.close()  # the write fails, logged: nothing raised
