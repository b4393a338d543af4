"""robots.txt kept in the crawl's store across tasks and rounds (nutch2/fetch/robotsstore.py, RFC 9309 section 2.4):
a later task uses a host's kept answer without asking the host while it is fresh (24 h at most, less by its caching
headers), a 5xx or no answer falls back on the last good copy, 4xx is kept as allow all, and a record that is
missing, unreadable or half written never blocks a crawl. On every store of the contract suite, then in crawls of
the test web: five rounds ask each host once, on the memory store and on sqlite with two fetch tasks in processes."""

from __future__ import annotations

import dataclasses
import email.utils
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from nutch2.errors import ConfigError
from nutch2.fetch.robots import ROBOTS_MAX_BYTES, RobotsCache
from nutch2.fetch.robotsstore import RobotsRecord, RobotsStore, record_name, robots_store
from nutch2.marks import Mark
from nutch2.plugins.protocol_http.http import HttpProtocol, HttpSettings
from nutch2.status import CrawlStatus
from nutch2.stores import open_store
from nutch2.urls.tableutil import reverse_url, unreverse_url
from tests.conftest import make_conf
from tests.crawlutil import cli, conf_for, defines, passes_filters, rows, seed_file
from tests.helpers import KILLED, QuietServer, nutch2
from tests.testweb import TestWeb

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


def test_a_5xx_keeps_the_last_good_copy(store, site: QuietServer) -> None:
    """After the copy's lifetime a 503, a 500 or a 429: the kept rules stand in (not kept again: the next task
    asks again), for 30 days after the copy was fetched; then the host is deferred as without a copy. A host that
    does not answer at all is down (unreachable: its URLs fail this round), and its copy stays."""
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
    assert one_task(store, clock, url, days=1).state == "defer"  # the copy is older than the days allowed
    clock.now += 29 * DAY  # 31 days after the good copy
    assert one_task(store, clock, url).state == "defer"
    name = record_name(("http", "127.0.0.1", site.server_address[1]))
    clock.now -= 30 * DAY
    site.shutdown()
    site.server_close()  # connection refused
    assert one_task(store, clock, url).state == "unreachable"
    assert RobotsRecord.from_json(store.get_state(name)) is not None  # kept for later rounds


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


def test_the_properties_are_checked(tmp_path: Path) -> None:
    conf = make_conf(tmp_path, **{"http.robots.cache.hours": 0})
    assert robots_store(conf, object()) is None  # type: ignore[arg-type]  # 0: nothing kept, as before
    with pytest.raises(ConfigError, match=r"^http\.robots\.cache\.unreachable\.days=-2 cannot be negative"):
        robots_store(make_conf(tmp_path, **{"http.robots.cache.unreachable.days": -2}), None)


# ---------------------------------------------------------------- crawls of the test web
@pytest.fixture(scope="module")
def web() -> Iterator[TestWeb]:
    with TestWeb(hosts=4, pages_per_host=6, slow_seconds=0.5) as w:
        yield w


def robots_requests(web: TestWeb) -> dict[str, int]:
    """robots.txt requests per host IP."""
    return dict(Counter(r.host for r in web.requests(path="/robots.txt")))


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["memory", "sqlite"])
def test_five_rounds_ask_each_host_for_robots_txt_once(web: TestWeb, tmp_path: Path, backend: str,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    """memory: the local runner in this process; sqlite: the machine's default runner (processes on two cores)
    with two fetch tasks. Each host's robots.txt is asked once in five rounds (the host whose robots.txt answers
    503 too: a 5xx is not kept, test_a_503_without_a_copy_defers_as_before, but its URLs are deferred past these
    rounds); the crawl is the model's, robots.txt's Disallow obeyed by the rounds that used the kept copy."""
    web.reset_log()
    crawl_id = f"rc{backend}{uuid.uuid4().hex[:8]}"
    d = defines(tmp_path, backend)
    assert cli("crawl", seed_file(tmp_path, web.seed_url), "-crawlId", crawl_id, "-rounds", "5", "-threads", "4",
               "-numTasks", "2", *d) == 0
    conf = conf_for(tmp_path, backend)
    model = web.crawl_model(rounds=5)
    requested = {f"http://{r.host}:{web.port}{r.path}" for r in web.requests() if r.path != "/robots.txt"}
    assert requested == {u for u in model.all_requested() if passes_filters(conf, u)}
    assert not [r for r in web.requests() if r.path.startswith("/private/")]
    table = rows(conf, crawl_id)
    assert all(table[reverse_url(u)].status == CrawlStatus.GONE for u in model.denied if passes_filters(conf, u))
    asked = robots_requests(web)
    h503 = web.hosts[web.robots_503_host]
    assert {ip: n for ip, n in asked.items() if ip != h503} == {ip: 1 for ip in web.hosts if ip != h503}
    assert asked[h503] == 1  # deferred: its URLs wait http.robots.503.defer.visits.delay (5 min), past these rounds
    assert "robots_from_store=" in capsys.readouterr().err


@pytest.mark.slow
def test_robots_txt_is_asked_again_after_http_robots_cache_hours(web: TestWeb, tmp_path: Path) -> None:
    web.reset_log()
    d = defines(tmp_path, "sqlite", **{"http.robots.cache.hours": 0.001})  # 3.6 s
    seeds = seed_file(tmp_path, *(web.page_url(h, 1) for h in range(3)))
    assert cli("crawl", seeds, "-crawlId", "again", "-rounds", "1", *d) == 0
    assert cli("crawl", seeds, "-crawlId", "again", "-rounds", "1", *d) == 0  # within the 3.6 s: kept
    first = robots_requests(web)
    time.sleep(3.7)
    assert cli("crawl", seeds, "-crawlId", "again", "-rounds", "1", *d) == 0
    seeded = web.hosts[:3]
    assert {ip: n for ip, n in first.items() if ip in seeded} == dict.fromkeys(seeded, 1)
    assert {ip: n for ip, n in robots_requests(web).items() if ip in seeded} == dict.fromkeys(seeded, 2)


@pytest.mark.slow
def test_a_killed_fetch_and_a_broken_record_do_not_block_the_crawl(web: TestWeb, tmp_path: Path) -> None:
    """kill -9 right after the first kept answer of a fetch is written (the others are not): the fetch goes on with
    -resume, and the next round asks only the hosts whose answers were lost; a record cut in half is fetched
    again and rewritten. The round after that asks none."""
    d = defines(tmp_path, "sqlite")
    conf = conf_for(tmp_path, "sqlite")
    crawl_id = "killed"
    hosts = [web.hosts[h] for h in range(3)]
    seeds = seed_file(tmp_path, *(web.page_url(h, i) for h in range(3) for i in range(1, 4)))
    assert nutch2("inject", seeds, "-crawlId", crawl_id, *d).returncode == 0
    with open_store(conf, crawl_id) as store:
        whole = RobotsRecord("allow_all", "4xx", int(time.time() * 1000)).to_json()
        store.put_state(record_name(("http", hosts[2], web.port)), whole[: len(whole) // 2])
    batch = nutch2("generate", "-crawlId", crawl_id, *d).stdout.strip()
    web.reset_log()
    killed = nutch2("fetch", batch, "-crawlId", crawl_id, "-numTasks", 1, *d, failpoints="robots.saved=1")
    assert killed.returncode == KILLED, killed.stderr
    assert robots_requests(web) == dict.fromkeys(hosts, 1)  # the broken record was not used
    done = nutch2("fetch", batch, "-resume", "-crawlId", crawl_id, *d)
    assert done.returncode == 0, done.stderr
    table = rows(conf, crawl_id)
    assert {table[reverse_url(u)].status for u in seeds.read_text().split()} == {CrawlStatus.FETCHED}
    for step in ("parse", "updatedb"):
        assert nutch2(step, batch, "-crawlId", crawl_id, *d).returncode == 0
    for lost in (2, 0):  # the next round asks the two hosts whose answers were not written, the one after none
        web.reset_log()
        crawl = nutch2("crawl", seeds, "-rounds", 1, "-crawlId", crawl_id, *d)
        assert crawl.returncode == 0, crawl.stderr
        assert [r for r in web.requests() if r.host in hosts and r.path != "/robots.txt"]  # pages were fetched
        assert sum(n for ip, n in robots_requests(web).items() if ip in hosts) == lost
    with open_store(conf, crawl_id, create=False) as store:
        assert all(RobotsRecord.from_json(store.get_state(record_name(("http", ip, web.port)))) for ip in hosts)


@pytest.mark.slow
def test_a_host_that_no_longer_answers_is_settled_after_one_request(web: TestWeb, tmp_path: Path) -> None:
    """A host whose robots.txt is kept but whose first request of a fetch gets no answer: its other URLs are
    failed fetches without a request, as when its robots.txt gets none (not one request, and its wait, each)."""
    d = defines(tmp_path, "sqlite", **{"fetcher.server.delay": 0.5})
    conf = conf_for(tmp_path, "sqlite")
    first = nutch2("crawl", seed_file(tmp_path, web.page_url(3, 1)), "-rounds", 1, "-crawlId", "down", *d)
    assert first.returncode == 0, first.stderr
    later = [web.page_url(3, i) for i in range(2, 6)]
    assert nutch2("inject", seed_file(tmp_path, *later), "-crawlId", "down", *d).returncode == 0
    batch = nutch2("generate", "-crawlId", "down", *d).stdout.strip()
    host = f"http://{web.hosts[3]}:{web.port}/"
    dropped = [url for url in (unreverse_url(p.key) for p in rows(conf, "down").values()
                               if Mark.GENERATE.check(p) == batch) if url.startswith(host)]
    assert len(dropped) >= 4
    web.reset_log()
    web.drop(dropped)  # answered by closing the connection: no response at all
    try:
        fetch = nutch2("fetch", batch, "-crawlId", "down", *d)
    finally:
        web.drop([])
    assert fetch.returncode == 0, fetch.stderr
    assert len(web.requests(host=3)) == 1  # the kept robots.txt, then one page: no answer
    assert f"host_unreachable={len(dropped) - 1}" in fetch.stderr and "robots_from_store=" in fetch.stderr
    table = rows(conf, "down")
    outcomes = [table[reverse_url(u)].protocol_status.args[0] for u in dropped]
    assert all(o.startswith("connection closed") for o in outcomes), outcomes
    assert sum(o.endswith(" (an earlier request)") for o in outcomes) == len(dropped) - 1
