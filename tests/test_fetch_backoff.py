"""Back-off a site operator would thank us for (issue 38): 429/503 and Retry-After (seconds and HTTP dates) are
waited and the URL fetched later in the same fetch; repeated 503s space a host's requests exponentially and drop it
after fetcher.max.exceptions.per.queue; fetcher.threads.per.ip caps the requests in flight to one machine whatever
its host names; the adaptive delay follows latency / target; kill -9 during a back-off wait, then `fetch -resume`,
ends as an uninterrupted fetch.

The servers are this module's `Site`s: one loopback address each (127.0.78.x), recording when every request arrived
and when its answer was sent (before its last byte, so no client can have read an answer before that time) and
counting the requests being answered at once. "300 hosts on one IP": one address written 300 ways (`spellings`:
`127.00.78.01` is 127.0.78.1 to the system resolver), 300 host names, queues and robots.txt files to the crawler and
one machine to the network, as 300 virtual hosts of one server are; no /etc/hosts entry, no resolver override.
Times are only ever checked as "no request sooner than asked"."""

from __future__ import annotations

import collections
import email.utils
import itertools
import re
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from nutch2.config import Configuration
from nutch2.fetch.output import ProtocolOutput
from nutch2.fetch.politeness import Feedback, Kind, feedback, retry_after
from nutch2.fetch.queues import FetchItem, FetchItemQueues
from nutch2.marks import Mark
from nutch2.rowkeys import CLAIM
from nutch2.status import CrawlStatus, ProtocolStatusCode
from nutch2.urls.tableutil import reverse_url
from tests.conftest import CONF_DIR
from tests.crawlutil import cli, conf_for, defines, rows
from tests.helpers import KILLED, nutch2

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]

ALLOW = "127.0.1.0/24,127.0.78.0/24"  # the address guard lets the sites of this module through
_ADDRESSES = (f"127.0.78.{i}" for i in itertools.cycle(range(2, 255)))  # 127.0.78.1: the 300 spellings' site


# ---------------------------------------------------------------------------------------------- the test sites
@dataclass
class Reply:
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    sleep: float = 0.0  # seconds before the answer (the site's latency)


@dataclass
class Hit:
    """One request: its host name (the Host header, no port), path and status, when it arrived and when its answer
    was sent (before its last byte), on both clocks."""

    host: str
    path: str
    status: int
    arrived: float  # time.monotonic()
    sent: float
    arrived_wall: float  # time.time()
    headers: dict[str, str]


Answer = Callable[[str, str, int], Reply]  # (host, path, n-th request of that URL) -> the reply


class Site(ThreadingHTTPServer):
    """One HTTP/1.1 server on a loopback address of its own; `answer` says what each request gets (robots.txt: 404,
    unless `answer` says otherwise)."""

    daemon_threads = True

    def __init__(self, answer: Answer, address: str | None = None) -> None:
        self.answer = answer
        self.hits: list[Hit] = []
        self.in_flight = self.max_in_flight = 0
        self._counts: collections.Counter[tuple[str, str]] = collections.Counter()
        self._lock = threading.Lock()
        super().__init__((address or next(_ADDRESSES), 0), _Handler)
        self.address, self.port = self.server_address[:2]
        threading.Thread(target=self.serve_forever, args=(0.05,), daemon=True).start()

    def __enter__(self) -> Site:
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()
        self.server_close()

    def url(self, path: str, host: str | None = None) -> str:
        return f"http://{host or self.address}:{self.port}{path}"

    def pages(self, host: str | None = None) -> list[Hit]:
        with self._lock:
            return [h for h in self.hits if h.path != "/robots.txt" and (host is None or h.host == host)]

    def reset(self) -> None:
        with self._lock:
            self.hits.clear()
            self._counts.clear()
            self.max_in_flight = 0

    def handle_get(self, h: BaseHTTPRequestHandler) -> None:
        arrived, arrived_wall = time.monotonic(), time.time()
        host = (h.headers.get("Host") or "").rsplit(":", 1)[0]
        with self._lock:
            self._counts[(host, h.path)] += 1
            n = self._counts[(host, h.path)]
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        reply = Reply(404) if h.path == "/robots.txt" else self.answer(host, h.path, n)
        if reply.sleep:
            time.sleep(reply.sleep)
        body = f"<html><head><title>{h.path}</title></head><body>{reply.status} {h.path}</body></html>".encode()
        h.send_response(reply.status)
        for name, value in {"Content-Type": "text/html", **reply.headers}.items():
            h.send_header(name, value)
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        h.wfile.write(body[:-1])
        hit = Hit(host, h.path, reply.status, arrived, time.monotonic(), arrived_wall, dict(reply.headers))
        with self._lock:  # counted out before the last byte: a client done with it is no longer counted
            self.in_flight -= 1
            self.hits.append(hit)
        h.wfile.write(body[-1:])


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as the crawler's pooled connections expect

    def do_GET(self) -> None:
        self.server.handle_get(self)  # type: ignore[attr-defined]

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass


def spellings(n: int) -> list[str]:
    """`n` host names of the one address 127.0.78.1: its second octet with 1..20 digits of 0, its last as 1 after
    0..14 zeros (octal, to the resolver: still 1)."""
    names = [f"127.{'0' * a}.78.{'0' * b}1" for a in range(1, 21) for b in range(15)]
    assert n <= len(names)
    return names[:n]


# ---------------------------------------------------------------------------------------------- crawl helpers
class Crawl:
    """One crawl id on sqlite under tmp_path, driven through the CLI in this process."""

    def __init__(self, tmp: Path, capsys: pytest.CaptureFixture[str], **props: object) -> None:
        self.tmp, self.capsys, self.id = tmp, capsys, f"bo{uuid.uuid4().hex[:8]}"
        self.props = {"fetcher.address.allow": ALLOW, "fetcher.server.delay": 0.1, **props}
        self.d = defines(tmp, "sqlite", **self.props)
        self.conf = conf_for(tmp, "sqlite", **self.props)

    def batch(self, urls: list[str]) -> str:
        seeds = self.tmp / f"seeds-{self.id}.txt"
        seeds.write_text("".join(u + "\n" for u in urls))
        assert cli("inject", seeds, "-crawlId", self.id, *self.d) == 0
        self.capsys.readouterr()
        assert cli("generate", "-crawlId", self.id, *self.d) == 0
        return self.capsys.readouterr().out.strip()

    def fetch(self, batch: str, *args: object) -> dict[str, int]:
        """Fetch the batch (exit 0); the summary's counters."""
        assert cli("fetch", batch, *map(str, args), "-crawlId", self.id, *self.d) == 0
        return counters(self.capsys.readouterr().err)

    def status(self, url: str) -> CrawlStatus:
        return CrawlStatus(rows(self.conf, self.id)[reverse_url(url)].status)


def counters(summary: str) -> dict[str, int]:
    line = [x for x in summary.splitlines() if x.startswith("fetch: finished")][-1]
    return {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", line)}


def after(hits: list[Hit], hit: Hit) -> Hit:
    """The first request to the same host after `hit` (hits in arrival order)."""
    later = [h for h in hits if h.host == hit.host and h.arrived > hit.arrived]
    assert later, f"no request to {hit.host} after {hit.path}"
    return min(later, key=lambda h: h.arrived)


# ---------------------------------------------------------------------------------------------- 429, 503
def test_retry_after_in_seconds_and_as_a_date_is_waited_then_fetched(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """A 429 with `Retry-After: 3` and a 503 with an HTTP date 4 s ahead: the host's next request comes no sooner,
    and the page is FETCHED later in the same fetch (one claim: no `refetched_in_flight`)."""
    asked: dict[str, float] = {}

    def seconds(host: str, path: str, n: int) -> Reply:
        return Reply(429, {"Retry-After": "3"}) if path == "/a" and n == 1 else Reply()

    def date(host: str, path: str, n: int) -> Reply:
        if path == "/a" and n == 1:
            asked["until"] = int(time.time()) + 4  # whole seconds: what an HTTP date says
            return Reply(503, {"Retry-After": email.utils.formatdate(asked["until"], usegmt=True)})
        return Reply()

    with Site(seconds) as s1, Site(date) as s2:
        c = Crawl(tmp_path, capsys)
        urls = [s.url(p) for s in (s1, s2) for p in ("/a", "/b")]
        got = c.fetch(c.batch(urls))
        assert [c.status(u) for u in urls] == [CrawlStatus.FETCHED] * 4
        assert got.get("retried_429") == 1 and got.get("retried_503") == 1, got
        assert "refetched_in_flight" not in got and got.get("hosts_backed_off") == 2, got

        hits = s1.pages()
        first = next(h for h in hits if h.status == 429)
        assert after(hits, first).arrived >= first.sent + 3  # no request sooner than asked
        assert [h.status for h in hits if h.path == "/a"] == [429, 200]

        hits = s2.pages()
        first = next(h for h in hits if h.status == 503)
        assert after(hits, first).arrived_wall >= asked["until"]
        assert [h.status for h in hits if h.path == "/a"] == [503, 200]


def test_503s_back_off_exponentially_and_drop_the_host(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A host answering only 503 (no Retry-After): its requests are spaced 0.3, 0.6, 1.2 s at least, and after
    fetcher.max.exceptions.per.queue=4 its remaining URLs are not requested but recorded RETRY; a healthy host
    of the same fetch is fetched."""
    with Site(lambda host, path, n: Reply(503)) as down, Site(lambda host, path, n: Reply()) as well:
        c = Crawl(tmp_path, capsys, **{"fetcher.exceptions.per.queue.delay": 0.3,
                                       "fetcher.max.exceptions.per.queue": 4, "fetcher.retry.max": 10})
        failing = [down.url(f"/{i}") for i in range(5)]
        healthy = [well.url(f"/{i}") for i in range(3)]
        got = c.fetch(c.batch(failing + healthy))
        hits = down.pages()
        assert len(hits) == 4, [h.path for h in hits]  # the 4th failure dropped the host
        for i, (a, b) in enumerate(itertools.pairwise(hits)):
            assert b.arrived >= a.sent + 0.3 * 2 ** i, i  # no request sooner than the back-off
        assert [c.status(u) for u in failing] == [CrawlStatus.RETRY] * 5
        assert [c.status(u) for u in healthy] == [CrawlStatus.FETCHED] * 3
        asked = {down.url(h.path) for h in hits}
        assert len(asked) == 1  # put back first in its queue: the same URL, 4 times
        table = rows(c.conf, c.id)
        for u in set(failing) - asked:  # never requested: left for a later round
            ps = table[reverse_url(u)].protocol_status
            assert ps.code == ProtocolStatusCode.RETRY and "fetcher.max.exceptions.per.queue" in ps.args[0], ps
        assert got.get("above_exception_threshold") == 4 and got.get("retried_503") == 3, got
        assert got.get("hosts_dropped") == 1, got


def test_a_host_failing_every_request_is_dropped_after_failures_in_a_row(tmp_path: Path,
                                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """A host answering every request 503 without Retry-After held the fetch fetcher.retry.max + 1 requests a URL,
    the back-off growing to 30 s: 40 URLs on such hosts took 20 minutes of one round. With the defaults it is dropped
    after fetcher.max.failures.in.row.per.queue (8) failures in a row, its other URLs RETRY without a request; a host
    that fails as often but with successes between keeps being fetched."""
    def flaky(host: str, path: str, n: int) -> Reply:
        return Reply(503 if n == 1 else 200)  # each URL's first request fails, its retry succeeds

    with Site(lambda host, path, n: Reply(503)) as down, Site(flaky) as flaky_site:
        c = Crawl(tmp_path, capsys, **{"fetcher.exceptions.per.queue.delay": 0.05})
        failing = [down.url(f"/{i}") for i in range(6)]
        recovering = [flaky_site.url(f"/{i}") for i in range(6)]
        got = c.fetch(c.batch(failing + recovering))
        assert len(down.pages()) == 8, [h.path for h in down.pages()]  # 2 URLs, 4 requests each
        assert [c.status(u) for u in failing] == [CrawlStatus.RETRY] * 6
        assert got.get("failures_in_row") == 4 and got.get("hosts_dropped") == 1, got  # 4 URLs never requested
        assert [c.status(u) for u in recovering] == [CrawlStatus.FETCHED] * 6
        assert len(flaky_site.pages()) == 12


def test_retry_after_beyond_max_crawl_delay_leaves_the_host_for_later(tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """Retry-After: 120 with fetcher.max.crawl.delay 5: as a too long Crawl-delay, the host's URLs are not requested
    in this fetch (RETRY), and no second request reaches it."""
    with Site(lambda host, path, n: Reply(429, {"Retry-After": "120"})) as site:
        c = Crawl(tmp_path, capsys, **{"fetcher.max.crawl.delay": 5})
        urls = [site.url(f"/{i}") for i in range(4)]
        got = c.fetch(c.batch(urls))
        assert len(site.pages()) == 1
        assert [c.status(u) for u in urls] == [CrawlStatus.RETRY] * 4
        assert got.get("retry_after_too_long") == 3 and "retried_429" not in got, got


# ---------------------------------------------------------------------------------------------- per IP
def test_threads_per_ip_caps_300_hosts_on_one_address(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """300 host names of one address, 16 threads, fetcher.threads.per.ip=3: the server never answers more than 3
    requests at once, robots.txt included, and every page is FETCHED. Without the cap the same server sees more."""
    slow = lambda host, path, n: Reply(sleep=0.02)  # noqa: E731
    with Site(slow, "127.0.78.1") as site:
        hosts = spellings(300)
        # partition.url.mode=byIP: the cap is per fetch task, so one address's hosts go to one task
        c = Crawl(tmp_path, capsys, **{"fetcher.server.delay": 0, "fetcher.threads.per.ip": 3,
                                       "partition.url.mode": "byIP"})
        urls = [site.url("/", h) for h in hosts]
        c.fetch(c.batch(urls), "-threads", 16)
        assert site.max_in_flight <= 3
        assert len({h.host for h in site.hits if h.path == "/robots.txt"}) == 300  # 300 hosts to the crawler
        assert all(p.status == CrawlStatus.FETCHED for p in rows(c.conf, c.id).values())
        assert len(rows(c.conf, c.id)) == 300

        site.reset()  # the control: the cap is what held it
        c = Crawl(tmp_path, capsys, **{"fetcher.server.delay": 0, "fetcher.threads.per.ip": 0})
        c.fetch(c.batch([site.url("/", h) for h in hosts[:60]]), "-threads", 16)
        assert site.max_in_flight > 3


# ---------------------------------------------------------------------------------------------- adaptive delay
def _queues(**props: object) -> FetchItemQueues:
    conf = Configuration(CONF_DIR, {"http.agent.name": "t", **{k: str(v) for k, v in props.items()}})
    return FetchItemQueues(conf)


def _answer(q: FetchItemQueues, url: str, fb: Feedback) -> float:
    """One request of `url` answered with `fb`; the host's delay after it."""
    q.add(FetchItem(reverse_url(url), url, {}, 0, None, None))
    got = q.get()
    assert got is not None
    item, queue = got
    q.answered(item, queue, fb)
    delay = queue.delay()
    queue.next_fetch = 0.0  # the delay is the point, not waiting it
    return delay


def test_adaptive_delay_moves_toward_latency_over_target() -> None:
    """From fetcher.server.delay toward latency / target concurrency: a slow host (0.4 s, target 2) settles at
    0.2 s, never below; a fast one at fetcher.server.min.delay; quick error pages never shorten it; a robots.txt
    Crawl-delay and a back-off stay floors. Off by default."""
    props = {"fetcher.server.delay": 2.0, "fetcher.server.min.delay": 0.05, "fetcher.server.delay.adaptive": "true",
             "fetcher.server.delay.adaptive.target.concurrency": 2}
    q = _queues(**props)
    slow = [_answer(q, f"http://slow.example/{i}", Feedback(Kind.OK, 200, 0.4)) for i in range(12)]
    assert slow[0] < 2.0 and all(a > b for a, b in itertools.pairwise(slow))  # moves toward the target
    assert slow[-1] == pytest.approx(0.2, abs=0.01) and min(slow) >= 0.2
    fast = [_answer(q, f"http://fast.example/{i}", Feedback(Kind.OK, 200, 0.001)) for i in range(12)]
    assert fast[-1] == pytest.approx(0.05, abs=0.01) and min(fast) >= 0.05  # fetcher.server.min.delay
    assert _answer(q, "http://fast.example/404", Feedback(Kind.OK, 404, 0.0)) == fast[-1]
    assert _answer(q, "http://fast.example/big", Feedback(Kind.OK, 200, 30.0)) == 2.0  # fetcher.server.delay

    q = _queues(**props)
    _answer(q, "http://polite.example/0", Feedback(Kind.OK, 200, 0.001))
    queue = q.retired["http://polite.example"]
    q.set_crawl_delay(queue, 1.5)  # its robots.txt
    assert _answer(q, "http://polite.example/1", Feedback(Kind.OK, 200, 0.001)) == 1.5
    assert _answer(q, "http://polite.example/2", Feedback(Kind.FAILED, 500, 0.001)) == 1.5  # back-off 1 s < 1.5
    assert _answer(q, "http://polite.example/3", Feedback(Kind.FAILED, 500, 0.001)) == 2.0  # then 2 s

    off = _queues(**{**props, "fetcher.server.delay.adaptive": "false"})
    assert _answer(off, "http://slow.example/0", Feedback(Kind.OK, 200, 0.4)) == 2.0


def test_adaptive_delay_on_a_slow_host_is_never_shorter_than_latency_over_target(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """End to end: a host answering in 0.3 s, target concurrency 1: no request starts sooner than 0.3 s after the
    answer before it (the adaptive delay's floor), and every page is FETCHED."""
    with Site(lambda host, path, n: Reply(sleep=0.3)) as site:
        c = Crawl(tmp_path, capsys, **{"fetcher.server.delay": 1.0, "fetcher.server.delay.adaptive": "true"})
        urls = [site.url(f"/{i}") for i in range(6)]
        c.fetch(c.batch(urls))
        hits = site.pages()
        assert len(hits) == 6
        for a, b in itertools.pairwise(hits):
            assert b.arrived >= a.sent + 0.3
        assert [c.status(u) for u in urls] == [CrawlStatus.FETCHED] * 6


# ---------------------------------------------------------------------------------------------- units
def test_retry_after_values() -> None:
    now = 1_000_000_000.0
    assert retry_after({"Retry-After": "3"}, now) == 3
    assert retry_after({"retry-after": " 120 "}, now) == 120
    assert retry_after({"Retry-After": email.utils.formatdate(now + 7, usegmt=True)}, now) == pytest.approx(7)
    assert retry_after({"Retry-After": email.utils.formatdate(now - 60, usegmt=True)}, now) == 0
    for bad in ("soon", "-1", "inf", "nan", ""):
        assert retry_after({"Retry-After": bad}, now) is None, bad
    assert retry_after({}, now) is None

    def out(code: int | None, status: ProtocolStatusCode = ProtocolStatusCode.EXCEPTION) -> ProtocolOutput:
        return ProtocolOutput(status, http_code=code, headers={"Retry-After": "2"}, fetch_ms=250)

    assert feedback(out(429)) == Feedback(Kind.THROTTLED, 429, 0.25, 2.0)
    assert feedback(out(503)).kind is Kind.THROTTLED
    assert feedback(out(500)).kind is Kind.FAILED and feedback(out(None)).kind is Kind.FAILED  # timeout, refused
    assert feedback(out(404, ProtocolStatusCode.NOTFOUND)).kind is Kind.OK
    assert feedback(out(None, ProtocolStatusCode.ACCESS_DENIED)).kind is Kind.NONE  # the address guard's


def test_back_off_decays_after_successes() -> None:
    """Failures double the host's back-off (bounded by fetcher.max.crawl.delay); successes halve it back to the
    configured delay; a 429's Retry-After is the floor of the next wait."""
    q = _queues(**{"fetcher.server.delay": 0.5, "fetcher.exceptions.per.queue.delay": 1, "fetcher.max.crawl.delay": 6})
    url = "http://h.example/"
    assert [_answer(q, url, Feedback(Kind.FAILED, 500, 0)) for _ in range(5)] == [1, 2, 4, 6, 6]
    assert [_answer(q, url, Feedback(Kind.OK, 200, 0)) for _ in range(5)] == [3, 1.5, 0.75, 0.5, 0.5]
    assert _answer(q, url, Feedback(Kind.THROTTLED, 429, 0, 5.0)) == 5.0


def test_a_retry_after_is_waited_as_said_not_grown() -> None:
    """A host answering 503 with `Retry-After: 1` to everything: each next request waits the 1 s it asks, not
    1, 2, 4, 8... s (a 503 storm of 40 URLs took 20 minutes a round); without a Retry-After the back-off grows."""
    q = _queues(**{"fetcher.server.delay": 0.5, "fetcher.exceptions.per.queue.delay": 1, "fetcher.max.crawl.delay": 30})
    url = "http://h.example/"
    assert [_answer(q, url, Feedback(Kind.THROTTLED, 503, 0, 1.0)) for _ in range(6)] == [1.0] * 6
    q = _queues(**{"fetcher.server.delay": 0.5, "fetcher.exceptions.per.queue.delay": 1, "fetcher.max.crawl.delay": 30})
    assert [_answer(q, url, Feedback(Kind.THROTTLED, 503, 0)) for _ in range(4)] == [1, 2, 4, 8]


def test_a_bad_property_value_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for prop, value in (("fetcher.retry.max", -1), ("fetcher.threads.per.ip", -2),
                        ("fetcher.server.delay.adaptive.target.concurrency", 0), ("fetcher.max.exceptions.per.queue",
                                                                                  -5)):
        capsys.readouterr()
        assert cli("fetch", "-all", "-crawlId", "x", *defines(tmp_path, "sqlite", **{prop: value})) == 1
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and prop in err[0] and "between" in err[0], err


# ---------------------------------------------------------------------------------------------- kill -9
def test_kill_9_during_a_back_off_wait_then_resume_is_exact(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """kill -9 while a URL answered 429 waits its host's Retry-After (failpoint fetch.backoff), then `fetch -resume`:
    every URL ends FETCHED or RETRY as in an uninterrupted fetch of the same batch, none is lost, and no URL was
    claimed more than twice (the retried requests were the claim's work, the kill took one claim over)."""

    def answer(host: str, path: str, n: int) -> Reply:
        if path.startswith("/once"):  # throttled once, then fine
            return Reply(429, {"Retry-After": "1"}) if n == 1 else Reply()
        if path.startswith("/never"):  # always throttled: RETRY after fetcher.retry.max
            return Reply(503, {"Retry-After": "1"})
        return Reply()

    props = {"fetcher.retry.max": 2, "fetcher.exceptions.per.queue.delay": 0.05}
    with Site(answer) as a, Site(answer) as b, Site(answer) as ok:
        urls = [a.url(f"/once/{i}") for i in range(3)] + [b.url(f"/never/{i}") for i in range(2)] + [
            ok.url(f"/{i}") for i in range(3)]

        ref = Crawl(tmp_path, capsys, **props)  # uninterrupted
        ref.fetch(ref.batch(urls))
        expected = {u: ref.status(u) for u in urls}
        assert set(expected.values()) == {CrawlStatus.FETCHED, CrawlStatus.RETRY}

        for site in (a, b, ok):
            site.reset()
        c = Crawl(tmp_path, capsys, **props)
        batch = c.batch(urls)
        p = nutch2("fetch", batch, "-crawlId", c.id, *c.d, failpoints="fetch.backoff=1")
        died = p.returncode == 1 and "a worker process died" in p.stderr  # the point was reached in a worker
        assert p.returncode == KILLED or died, (p.returncode, p.stderr)
        table = rows(c.conf, c.id)
        assert not all(Mark.FETCH.check(page) == batch for page in table.values())  # killed midway
        assert any(CLAIM in page.metadata and Mark.FETCH.check(page) is None for page in table.values())

        got = c.fetch(batch, "-resume")
        assert "result_lost" not in got, got
        table = rows(c.conf, c.id)
        assert {u: CrawlStatus(table[reverse_url(u)].status) for u in urls} == expected
        assert all(Mark.FETCH.check(page) == batch for page in table.values())
        claims = [int(page.metadata[CLAIM].decode().rsplit("/", 1)[1]) for page in table.values()
                  if CLAIM in page.metadata]
        assert max(claims) <= 2, claims
        assert [h.status for h in a.pages() if h.path == "/once/0"][-1] == 200
