"""Focused tests of the FetcherJob against the local test web (sqlite store), and of FetchItemQueues."""

from __future__ import annotations

import shutil
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from nutch2.config import Configuration
from nutch2.fetch.queues import FetchItem, FetchItemQueues
from nutch2.mapred import runner
from nutch2.marks import Mark
from nutch2.rowkeys import DEFER_KEY
from nutch2.status import CrawlStatus, ProtocolStatusCode
from nutch2.urls.tableutil import reverse_url, unreverse_url
from nutch2.webpage import WebPage
from tests.conftest import CONF_DIR
from tests.crawlutil import cli, conf_for, defines, row, rows
from tests.pagesite import PageSite
from tests.testweb import TestWeb

pytestmark = pytest.mark.timeout(60)


@pytest.fixture(scope="module")
def web():
    with TestWeb(hosts=4, pages_per_host=12, slow_seconds=0.5) as w:
        yield w


BACKEND = "sqlite"


@pytest.fixture(autouse=True, params=["sqlite:local", "sqlite"])
def framework(request: pytest.FixtureRequest) -> Iterator[str]:
    """Every test with the local runner and with the processes runner."""
    global BACKEND
    BACKEND = request.param
    yield request.param
    BACKEND = "sqlite"


class Crawl:
    """One crawl id on the sqlite store under tmp_path, driven through the CLI (with the test's runner)."""

    def __init__(self, tmp: Path, capsys: pytest.CaptureFixture[str], crawl_id: str, **props: object) -> None:
        self.tmp, self.capsys, self.id, self.props = tmp, capsys, crawl_id, props
        self.backend = BACKEND
        self.d = defines(tmp, self.backend, **props)
        self.conf = conf_for(tmp, self.backend, **props)

    def run(self, *args: object, **extra: object) -> int:
        d = defines(self.tmp, self.backend, **{**self.props, **extra}) if extra else self.d
        return cli(*map(str, args), "-crawlId", self.id, *d)

    def inject(self, *urls: str) -> None:
        seeds = self.tmp / f"seeds-{self.id}.txt"
        seeds.write_text("".join(u + "\n" for u in urls))
        assert self.run("inject", seeds) == 0

    def generate(self, *args: object) -> str:
        self.capsys.readouterr()
        assert self.run("generate", *args) == 0
        return self.capsys.readouterr().out.strip()

    def rows(self) -> dict[str, WebPage]:
        return rows(self.conf, self.id)

    def row(self, url: str) -> WebPage:
        page = row(self.conf, self.id, url)
        assert page is not None, url
        return page


def page_requests(web: TestWeb, host: int | None = None) -> list[str]:
    return [r.path for r in web.requests(host) if r.path != "/robots.txt"]


# ---------------------------------------------------------------------------- configuration


def test_empty_agent_name_fails_fast(web: TestWeb, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    c = Crawl(tmp_path, capsys, "agent")
    c.inject(web.page_url(3, 1))
    batch = c.generate()
    web.reset_log()
    assert c.run("fetch", batch, **{"http.agent.name": ""}) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "http.agent.name" in err[0]
    assert web.requests() == []
    assert Mark.FETCH.check(c.row(web.page_url(3, 1))) is None


@pytest.mark.parametrize("name", ["Bot\nX-Evil: 1", "Робот"])
def test_agent_name_a_header_cannot_carry_fails_fast(web: TestWeb, tmp_path: Path, name: str,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """A name with a control character or a letter outside ASCII would fail every request of the crawl, each
    counted as an exception: the fetch refuses it in one line before any request, as an empty name."""
    c = Crawl(tmp_path, capsys, "badagent")
    c.inject(web.page_url(3, 1))
    batch = c.generate()
    web.reset_log()
    assert c.run("fetch", batch, **{"http.agent.name": name}) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "http.agent.name has the character" in err[0] and "printable ASCII" in err[0], err
    assert web.requests() == []
    assert Mark.FETCH.check(c.row(web.page_url(3, 1))) is None


# ---------------------------------------------------------------------------- politeness


def test_threads_per_queue_caps_requests_in_flight(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with TestWeb(hosts=2, pages_per_host=16, traps=False) as w:
        c = Crawl(tmp_path, capsys, "tpq", **{"fetcher.threads.per.queue": 2, "fetcher.server.min.delay": 0.01})
        c.inject(*(w.page_url(h, i) for h in range(2) for i in range(16)))
        batch = c.generate()
        w.reset_log()
        assert c.run("fetch", batch, "-threads", 8) == 0
        for h in range(2):
            assert w.in_flight_max(h) <= 2
            assert len(page_requests(w, h)) == 16
        assert all(p.status == CrawlStatus.FETCHED for p in c.rows().values())


def test_timelimit_ends_the_job_early_and_leaves_the_rest(web: TestWeb, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    c = Crawl(tmp_path, capsys, "tl", **{"fetcher.server.delay": 0.5, "fetcher.timelimit.mins": 0.02})
    urls = [web.page_url(3, i) for i in range(12)]
    c.inject(*urls)
    batch = c.generate()
    web.reset_log()
    assert c.run("fetch", batch, "-threads", 4) == 0
    assert "hit_by_timelimit=" in capsys.readouterr().err
    requested = page_requests(web, 3)
    assert 0 < len(requested) < len(urls)
    table = c.rows()
    fetched = {k for k, p in table.items() if Mark.FETCH.check(p) == batch}
    # one host: one request at a time; the one in flight at the limit is cut and left for a later fetch (the
    # server saw it, the row is untouched)
    assert len(requested) - 1 <= len(fetched) <= len(requested), (requested, fetched)
    for k, p in table.items():
        if k not in fetched:
            assert p.status == CrawlStatus.INJECTED, k  # untouched
    assert c.run("parse", batch) == 0
    assert c.run("updatedb", batch) == 0
    again = c.generate()
    regenerated = {k for k, p in c.rows().items() if Mark.GENERATE.check(p) == again}
    assert regenerated >= set(table) - fetched and not regenerated & fetched  # (and the parsed pages' new links)


def test_throughput_threshold_aborts(web: TestWeb, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    c = Crawl(tmp_path, capsys, "tp", **{
        "fetcher.server.delay": 0.3, "fetcher.throughput.threshold.pages": 1000,
        "fetcher.throughput.threshold.check.after": 0.5, "fetcher.throughput.threshold.retries": 2,
        "fetcher.progress.interval": 0.2,
    })
    urls = [web.page_url(2, i) for i in range(12)]
    c.inject(*urls)
    batch = c.generate()
    web.reset_log()
    assert c.run("fetch", batch, "-threads", 2) == 0
    assert "hit_by_throughput_threshold=" in capsys.readouterr().err
    assert 0 < len(page_requests(web, 2)) < len(urls)
    unfetched = [p for p in c.rows().values() if Mark.FETCH.check(p) is None]
    assert unfetched and all(p.status == CrawlStatus.INJECTED for p in unfetched)


# ---------------------------------------------------------------------------- what is stored


def test_fetcher_parse_parses_inline(web: TestWeb, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    c = Crawl(tmp_path, capsys, "fp", **{"fetcher.parse": "true"})
    urls = [web.page_url(3, i) for i in range(3)]
    c.inject(*urls)
    batch = c.generate()
    assert c.run("fetch", batch) == 0
    for u in urls:
        p = c.row(u)
        assert p.status == CrawlStatus.FETCHED
        assert Mark.PARSE.check(p) == batch
        assert p.title == web.pages[u].title
        assert p.outlinks


def test_store_content_false(web: TestWeb, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    c = Crawl(tmp_path, capsys, "sc", **{"fetcher.store.content": "false"})
    c.inject(web.page_url(3, 4))
    batch = c.generate()
    assert c.run("fetch", batch) == 0
    p = c.row(web.page_url(3, 4))
    assert p.status == CrawlStatus.FETCHED and Mark.FETCH.check(p) == batch
    assert not p.content


def test_store_content_false_with_inline_parse(web: TestWeb, tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    c = Crawl(tmp_path, capsys, "scp", **{"fetcher.store.content": "false", "fetcher.parse": "true"})
    url = web.page_url(3, 5)
    c.inject(url)
    batch = c.generate()
    assert c.run("fetch", batch) == 0
    p = c.row(url)
    assert not p.content
    assert Mark.PARSE.check(p) == batch and p.title == web.pages[url].title


# ---------------------------------------------------------------------------- redirects


def test_redirects_followed_inline(web: TestWeb, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    c = Crawl(tmp_path, capsys, "rd", **{"http.redirect.max": 3})
    src, loop = web.trap_url("/traps/redirect-301"), web.hostile_urls()["redirect_loop"]
    target = web.trap_url("/traps/moved-target.html")
    c.inject(src, loop)
    batch = c.generate()
    assert c.run("fetch", batch) == 0
    p = c.row(src)
    assert p.status == CrawlStatus.FETCHED
    assert p.base_url == target and p.repr_url == target
    assert web.pages[target].unique_word.encode() in p.content
    assert c.run("parse", batch) == 0
    assert c.row(src).title == web.pages[target].title
    lp = c.row(loop)
    assert lp.protocol_status.code == ProtocolStatusCode.REDIR_EXCEEDED
    assert lp.status == CrawlStatus.GONE  # as Nutch 2's FetcherReducer: not asked again db.fetch.retry.max times


def test_redirect_recorded_as_nutch2(web: TestWeb, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    c = Crawl(tmp_path, capsys, "rd0")
    src = web.trap_url("/traps/redirect-302")
    target = web.trap_url("/traps/temp-target.html")
    c.inject(src)
    batch = c.generate()
    web.reset_log()
    assert c.run("fetch", batch) == 0
    p = c.row(src)
    assert p.status == CrawlStatus.REDIR_TEMP
    assert set(p.outlinks) == {target}
    assert web.count(target) == 0  # not followed: fetched in a later round


@pytest.mark.parametrize("ignore_external", [False, True])
def test_a_redirect_off_the_host_is_not_followed_with_db_ignore_external_links(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], ignore_external: bool) -> None:
    """db.ignore.external.links keeps a crawl on its hosts through redirects too (Nutch 2's handleRedirect, Nutch
    1's db.ignore.also.redirects): the row stays a redirect, its target on another host gets no row."""
    with PageSite({"/x.html": "<p>x</p>"}, host="127.0.0.2") as other:
        target = other.url("/x.html")
        with PageSite({"/away": ("moved", {"Location": target}, 301),
                       "/here": ("moved", {"Location": "/in.html"}, 301)}) as site:
            c = Crawl(tmp_path, capsys, f"ie{int(ignore_external)}", **{"db.ignore.external.links": ignore_external})
            away, here = site.url("/away"), site.url("/here")
            c.inject(away, here)
            batch = c.generate()
            for step in ("fetch", "parse", "updatedb"):
                assert c.run(step, batch) == 0, step
    assert c.row(away).status == CrawlStatus.REDIR_PERM
    assert (reverse_url(target) in c.rows()) is not ignore_external
    assert set(c.row(away).outlinks) == (set() if ignore_external else {target})
    assert set(c.row(here).outlinks) == {site.url("/in.html")}  # on its own host: followed either way
    assert reverse_url(site.url("/in.html")) in c.rows()


# ---------------------------------------------------------------------------- conditional GET


def _round(c: Crawl, *gen_args: object) -> str:
    """generate -> fetch -> parse -> updatedb; the batch id."""
    batch = c.generate(*gen_args)
    for step in ("fetch", "parse", "updatedb"):
        assert c.run(step, batch) == 0, step
    return batch


def test_conditional_get(web: TestWeb, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    c = Crawl(tmp_path, capsys, "cg", **{"db.update.additions.allowed": "false"})
    url = web.page_url(2, 7)
    path = "/p/7.html"
    c.inject(url)
    _round(c)
    first = c.row(url)
    assert first.status == CrawlStatus.FETCHED
    old_content = first.content

    web.reset_log()
    _round(c, "-adddays", 31)
    reqs = web.requests(2, path)
    assert len(reqs) == 1
    headers = {k.lower(): v for k, v in reqs[0].headers.items()}
    assert "if-none-match" in headers or "if-modified-since" in headers
    assert reqs[0].status == 304
    p = c.row(url)
    assert p.status == CrawlStatus.NOTMODIFIED
    assert p.protocol_status.code == ProtocolStatusCode.NOTMODIFIED
    assert p.content == old_content  # the previous fetch's content is kept

    web.modify(url)
    web.reset_log()
    _round(c, "-adddays", 62)
    reqs = web.requests(2, path)
    assert len(reqs) == 1 and reqs[0].status == 200
    p = c.row(url)
    assert p.status == CrawlStatus.FETCHED
    assert p.content != old_content and f"Revision {web._versions[url]}".encode() in p.content


# ---------------------------------------------------------------------------- robots.txt


def test_crawl_delay_above_max_is_robots_denied(web: TestWeb, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    assert "Crawl-delay: 1" in web.robots_txt(1)[1]
    c = Crawl(tmp_path, capsys, "cd", **{"fetcher.max.crawl.delay": 0.5})
    urls = [web.page_url(1, i) for i in range(4)]
    c.inject(*urls, web.page_url(3, 0))
    batch = c.generate()
    web.reset_log()
    assert c.run("fetch", batch) == 0
    assert page_requests(web, 1) == []
    assert [r.path for r in web.requests(1)] == ["/robots.txt"]
    for u in urls:
        p = c.row(u)
        assert p.status == CrawlStatus.GONE, u
        assert p.protocol_status.code == ProtocolStatusCode.ROBOTS_DENIED
        assert Mark.FETCH.check(p) == batch
    assert c.row(web.page_url(3, 0)).status == CrawlStatus.FETCHED


def test_robots_disallow_is_gone_without_request(web: TestWeb, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    c = Crawl(tmp_path, capsys, "dis")
    denied = web.trap_url("/private/secret.html")
    c.inject(denied, web.page_url(0, 1))
    batch = c.generate()
    web.reset_log()
    assert c.run("fetch", batch) == 0
    assert web.count(denied) == 0
    p = c.row(denied)
    assert p.status == CrawlStatus.GONE and p.protocol_status.code == ProtocolStatusCode.ROBOTS_DENIED
    assert c.row(web.page_url(0, 1)).status == CrawlStatus.FETCHED


def test_robots_503_defers_the_host(web: TestWeb, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    h = web.robots_503_host
    assert h is not None
    c = Crawl(tmp_path, capsys, "r503")
    deferred = [web.url(h, "/"), web.url(h, "/a.html"), web.url(h, "/b.html")]
    c.inject(*deferred, web.page_url(3, 2))
    batch = c.generate()
    before = c.rows()
    web.reset_log()
    assert c.run("fetch", batch, "-threads", 4) == 0
    assert [r.path for r in web.requests(h)] == ["/robots.txt"]
    after = c.rows()
    for u in deferred:  # untouched but for the mark that defers them (updatedb applies it)
        k = reverse_url(u)
        assert after[k].status == CrawlStatus.INJECTED
        assert Mark.FETCH.check(after[k]) is None
        until = int(after[k].metadata.pop(DEFER_KEY))
        assert until >= int(time.time() * 1000) + 240_000  # http.robots.503.defer.visits.delay, 5 minutes
        for name in before[k].loaded():
            assert getattr(after[k], name) == getattr(before[k], name), (u, name)
    assert c.row(web.page_url(3, 2)).status == CrawlStatus.FETCHED
    assert c.run("parse", batch) == 0 and c.run("updatedb", batch) == 0
    for u in deferred:  # due again once the delay is up, not in the next round
        row = c.row(u)
        assert DEFER_KEY not in row.metadata and row.fetch_time >= int(time.time() * 1000) + 240_000
    c.generate()  # the next round: the fetched page's links, not the deferred URLs
    assert all(Mark.GENERATE.check(c.row(u)) is None for u in deferred)


# ---------------------------------------------------------------------------- tasks


def test_num_tasks_partitions_hosts(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with TestWeb(hosts=6, pages_per_host=5, traps=False) as w:
        c = Crawl(tmp_path, capsys, "nt", **{"fetcher.server.delay": 0.05})
        urls = [w.page_url(h, i) for h in range(6) for i in range(5)]
        c.inject(*urls)
        batch = c.generate()
        w.reset_log()
        assert c.run("fetch", batch, "-numTasks", 3, "-threads", 2) == 0
        for u in urls:
            assert w.count(u) == 1, u
        for h in range(6):
            assert len(w.requests(h, "/robots.txt")) == 1
            assert w.in_flight_max(h) <= 1
        table = c.rows()
        assert len(table) == len(urls)
        assert all(p.status == CrawlStatus.FETCHED and Mark.FETCH.check(p) == batch for p in table.values())


# ---------------------------------------------------------------------------- FetchItemQueues


def _queues(**props: object) -> FetchItemQueues:
    conf = Configuration(CONF_DIR, {"http.agent.name": "t", **{k: str(v) for k, v in props.items()}})
    return FetchItemQueues(conf)


def _item(url: str) -> FetchItem:
    return FetchItem(reverse_url(url), url, {}, 0, None, None)


def test_queues_get_waits_for_the_delay() -> None:
    delay = 0.2
    q = _queues(**{"fetcher.server.delay": delay, "fetcher.threads.per.queue": 1})
    for i in range(3):
        q.add(_item(f"http://a.example/{i}"))
    q.add(_item("http://b.example/0"))
    q.done_feeding()
    got = []
    first, qa = q.get()
    got.append(first.url)
    second, qb = q.get()  # a.example is busy (one thread per queue): b.example comes next, at once
    got.append(second.url)
    assert {first.url, second.url} == {"http://a.example/0", "http://b.example/0"}
    a_item, a_queue = (first, qa) if first.url.startswith("http://a.") else (second, qb)
    b_item, b_queue = (second, qb) if a_item is first else (first, qa)
    q.finish(b_item, b_queue)
    t0 = time.monotonic()
    q.finish(a_item, a_queue)
    nxt, qn = q.get()  # blocks until a.example's delay has passed
    assert time.monotonic() - t0 >= delay * 0.95
    assert nxt.url == "http://a.example/1"
    q.finish(nxt, qn, requested=False)  # no request made: no delay
    t1 = time.monotonic()
    last, ql = q.get()
    assert last.url == "http://a.example/2"
    assert time.monotonic() - t1 < delay  # lower-bound style: not delayed by a full delay
    q.finish(last, ql)
    assert q.get() is None  # everything done, feeder finished


def test_queues_get_blocks_until_an_item_arrives() -> None:
    q = _queues(**{"fetcher.server.delay": 0.0})
    out: list[str] = []

    def consume() -> None:
        while (got := q.get()) is not None:
            out.append(got[0].url)
            q.finish(*got)

    t = threading.Thread(target=consume)
    t.start()
    time.sleep(0.05)
    assert t.is_alive() and out == []  # blocked: nothing queued, the feeder still running
    q.add(_item("http://a.example/x"))
    q.add(_item("http://b.example/y"))
    q.done_feeding()
    t.join(5)
    assert not t.is_alive()
    assert sorted(out) == ["http://a.example/x", "http://b.example/y"]


def test_queues_threads_per_queue_and_min_delay() -> None:
    q = _queues(**{"fetcher.server.delay": 5.0, "fetcher.server.min.delay": 0.0, "fetcher.threads.per.queue": 2})
    for i in range(3):
        q.add(_item(f"http://a.example/{i}"))
    q.done_feeding()
    a, qa = q.get()
    b, qb = q.get()  # two in progress on one queue
    assert qa is qb and qa.in_progress == 2
    assert not qa.ready(time.monotonic())  # the third waits for a slot
    q.finish(a, qa)
    c, qc = q.get()  # min.delay 0 (not the 5 s server delay) applies with several threads per queue
    assert c.url == "http://a.example/2"
    q.finish(b, qb)
    q.finish(c, qc)
    assert q.get() is None


def test_queues_abort_releases_waiters() -> None:
    q = _queues(**{"fetcher.server.delay": 30.0})
    q.add(_item("http://a.example/0"))
    q.add(_item("http://a.example/1"))
    first = q.get()
    assert first is not None
    q.finish(*first)
    result: list[object] = []
    t = threading.Thread(target=lambda: result.append(q.get()))
    t.start()
    time.sleep(0.05)
    assert t.is_alive()  # waiting for the 30 s delay
    assert q.abort() == 1
    t.join(5)
    assert result == [None]


# ---------------------------------------------------------------------------- row fields the fetcher must keep


def test_fetch_keeps_row_metadata_and_clears_stale_truncation(web: TestWeb, tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    from nutch2.rowkeys import TRUNCATED_KEY
    from nutch2.stores import open_store

    c = Crawl(tmp_path, capsys, "md", **{"http.content.limit": 100})
    url = web.page_url(3, 6)
    c.inject(url)
    with open_store(c.conf, c.id, create=False) as store:
        page = store.get(reverse_url(url))
        assert page is not None
        page.metadata["keep"] = b"me"  # e.g. OPIC cash lives in metadata
        store.put(page.key, page)
    batch = c.generate()
    assert c.run("fetch", batch) == 0
    p = c.row(url)
    assert len(p.content) == 100
    assert p.metadata.get(TRUNCATED_KEY) and p.metadata.get("keep") == b"me"
    assert c.run("parse", batch) == 0 and c.run("updatedb", batch) == 0
    web.modify(url)  # else the conditional GET answers 304 and the (truncated) content is kept
    batch = c.generate("-adddays", 31)
    assert c.run("fetch", batch, **{"http.content.limit": 1048576}) == 0
    p = c.row(url)
    assert p.status == CrawlStatus.FETCHED and len(p.content) > 100
    assert TRUNCATED_KEY not in p.metadata  # the new fetch is complete: parse must not skip it
    assert p.metadata.get("keep") == b"me"
    assert c.run("parse", batch) == 0
    assert Mark.PARSE.check(c.row(url)) == batch


def test_inline_parse_keeps_prev_signature(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with TestWeb(hosts=1, pages_per_host=2, traps=False) as w:
        c = Crawl(tmp_path, capsys, "ips", **{"fetcher.parse": "true", "db.update.additions.allowed": "false"})
        url = w.page_url(0, 1)
        c.inject(url)
        batch = c.generate()
        assert c.run("fetch", batch) == 0 and c.run("updatedb", batch) == 0
        old = c.row(url).signature
        assert old
        w.modify(url)
        batch = c.generate("-adddays", 31)
        assert c.run("fetch", batch) == 0
        p = c.row(url)
        assert Mark.PARSE.check(p) == batch
        assert p.prev_signature == old and p.signature != old


def test_a_failing_page_does_not_hang_the_job(web: TestWeb, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    from nutch2.jobs import fetch

    def broken(*args: object, **kw: object) -> None:
        raise ValueError("boom")

    monkeypatch.setattr(fetch.FetcherJob, "_output", broken)
    c = Crawl(tmp_path, capsys, "brk", **{"fetcher.queue.depth.multiplier": 1, "fetcher.server.delay": 0})
    c.inject(*(web.page_url(3, i) for i in range(6)))
    batch = c.generate()
    c.run("fetch", batch, "-threads", 1)  # must return (exit code aside), not hang
    monkeypatch.undo()
    assert c.run("fetch", batch, "-resume") == 0
    assert all(Mark.FETCH.check(p) == batch for p in c.rows().values())


def test_inline_redirects_respect_robots_and_queues(web: TestWeb, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    from tests.testweb import _Resource

    denied = web.trap_url("/private/secret.html")
    other_host = web.page_url(3, 9)
    web._resources[(0, "/x/to-private")] = _Resource(301, location=denied)  # extra redirects for this test
    web._resources[(0, "/x/to-other-host")] = _Resource(302, location=other_host)
    to_private, to_other = web.trap_url("/x/to-private"), web.trap_url("/x/to-other-host")
    c = Crawl(tmp_path, capsys, "rdr", **{"http.redirect.max": 3})
    c.inject(to_private, to_other)
    batch = c.generate()
    web.reset_log()
    assert c.run("fetch", batch) == 0
    assert web.count(denied) == 0  # robots.txt disallows it: not followed inline
    assert web.count(other_host) == 0  # another host's queue (politeness): left for a later round
    p = c.row(to_private)
    assert p.status == CrawlStatus.REDIR_PERM and set(p.outlinks) == {denied}
    p = c.row(to_other)
    assert p.status == CrawlStatus.REDIR_TEMP and set(p.outlinks) == {other_host}


def test_spill_files_removed_mid_job_fail_the_fetch(web: TestWeb, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """The fetch list spilled to disk and the spill directory cleaned away before the reduce (a tmp cleaner):
    exit 1 with one line, no row marked fetched; the next fetch of the batch gets every URL."""
    c = Crawl(tmp_path, capsys, "spill", **{"mapreduce.task.io.sort.mb": 0.0001,
                                            "mapreduce.cluster.local.dir": tmp_path / "local"})
    urls = [web.page_url(1, i) for i in range(6)]
    c.inject(*urls)
    batch = c.generate()
    original = runner.Runner._collect

    def cleaned(*args):  # type: ignore[no-untyped-def]  # after the map phase, before the reducers read
        shutil.rmtree(tmp_path / "local", ignore_errors=True)
        return original(*args)

    monkeypatch.setattr(runner.Runner, "_collect", staticmethod(cleaned))
    capsys.readouterr()
    assert c.run("fetch", batch) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "cannot read map output spill" in err[-1], err
    assert not any(Mark.FETCH.check(p) for p in c.rows().values())
    monkeypatch.setattr(runner.Runner, "_collect", staticmethod(original))
    assert c.run("fetch", batch) == 0
    assert sum(Mark.FETCH.check(p) == batch for p in c.rows().values()) == len(urls)


def test_queues_acquire_for_a_resource_keeps_the_hosts_politeness() -> None:
    """A resource of a rendered page takes a slot in its host's queue as a page does: it waits the delay after the
    host's last request, a page of that host waits the delay after it, and one that cannot start before its time
    is refused without leaving anything behind."""
    delay = 0.3
    q = _queues(**{"fetcher.server.delay": delay, "fetcher.threads.per.queue": 1})
    far = time.monotonic() + 60
    slot = q.acquire("http://b.example/lib.js", far)  # a host new to the task: at once
    assert slot is not None and slot.in_progress == 1
    assert q.acquire("http://b.example/other.js", time.monotonic() + 0.05) is None  # its one slot is busy
    q.release(slot, held=False)
    assert slot.in_progress == 0 and "b.example" not in q.queues  # retired, with its next-fetch time
    assert q.acquire("http://b.example/x.js", time.monotonic() + delay / 3) is None  # its delay is longer
    t0 = time.monotonic()
    again = q.acquire("http://b.example/x.js", far)
    assert again is not None and time.monotonic() - t0 >= delay * 0.8  # waited the delay after the last request
    q.release(again, held=False)
    q.add(_item("http://b.example/page.html"))  # a page of that host waits the delay after the resource
    q.done_feeding()
    t1 = time.monotonic()
    item, page_q = q.get()
    assert item.url == "http://b.example/page.html" and time.monotonic() - t1 >= delay * 0.8
    # the page's own resources use its slot (no second one), after the page's request
    q.requested(page_q)
    own = q.acquire("http://b.example/own.js", far, held=page_q)
    assert own is page_q and page_q.in_progress == 1
    q.release(own, held=True)
    q.finish(item, page_q)
    assert q.get() is None


def test_queues_acquire_ends_on_abort() -> None:
    q = _queues(**{"fetcher.server.delay": 30.0})
    slot = q.acquire("http://a.example/x.js", time.monotonic() + 60)
    assert slot is not None
    q.release(slot, held=False)
    result: list[object] = []
    t = threading.Thread(target=lambda: result.append(q.acquire("http://a.example/y.js", time.monotonic() + 60)))
    t.start()
    time.sleep(0.05)
    assert t.is_alive()  # waiting for the 30 s delay
    q.abort()
    t.join(5)
    assert result == [None]


def test_a_crawl_by_domain_ships_its_jobs_to_the_worker_processes(tmp_path: Path) -> None:
    """db.ignore.external.links.mode=byDomain on the default runner: the jobs that hold the mode's function still
    pickle to the worker processes (a lambda there failed the fetch with a traceback), and links off the seed's
    domain (here each 127.0.1.x address is a domain of its own) make no rows."""
    from tests.helpers import nutch2

    props = {"db.ignore.external.links": "true", "db.ignore.external.links.mode": "byDomain"}
    with TestWeb(hosts=3, pages_per_host=3, traps=False) as web:
        d = defines(tmp_path, "sqlite", **props)
        seeds = tmp_path / "seeds.txt"
        seeds.write_text(web.seed_url + "\n")
        crawl = nutch2("crawl", seeds, "-crawlId", "bd", "-rounds", 2, *d)
        assert crawl.returncode == 0, crawl.stderr[-3000:]
        seed_host = web.seed_url.split("/")[2]
        table = rows(conf_for(tmp_path, "sqlite", **props), "bd")
    assert len(table) > 1 and {unreverse_url(k).split("/")[2] for k in table} == {seed_host}
