"""Hostile servers (issue 11) against the real CLI in subprocesses: trickled headers and bodies, a robots.txt cut
off mid-file, dead hosts, a gzip bomb with no content limit, half a gzip stream, 100 000 attributes, absurd
settings and credentials in a redirect target. Each server misbehaves on purpose (tests/hostile_server.py).

No wall-clock assertions: the servers trickle for much longer than the limits under test, and the tests check
what the crawler recorded and what the server saw (an answer cut off vs. sent whole)."""

from __future__ import annotations

import subprocess
import zlib
from pathlib import Path

import pytest

from nutch2.marks import Mark
from nutch2.status import CrawlStatus, ParseMajor, ParseMinor, ProtocolStatusCode
from nutch2.urls.tableutil import reverse_url
from nutch2.webpage import WebPage
from tests.crawlutil import conf_for, defines, rows
from tests.helpers import nutch2
from tests.hostile_server import Exchange, HostileServer, gzip_bomb, head, refused_url

pytestmark = pytest.mark.slow

CRAWL = "hostile"
ROBOTS_OK = b"User-agent: *\nDisallow:\n"
PAGE = b"<html><head><title>fine</title></head><body><p>a fine page</p><a href='/next'>next</a></body></html>"


def nutch(tmp: Path, *args: object, timeout: float = 60, **props: object) -> subprocess.CompletedProcess[str]:
    """`nutch2 <args> -crawlId hostile -D ...` (tests/helpers.py) on the sqlite store under `tmp`."""
    return nutch2(*args, "-crawlId", CRAWL, *defines(tmp, "sqlite", **props), timeout=timeout)


def inject_generate(tmp: Path, urls: list[str], **props: object) -> str:
    """Inject `urls` and generate a batch; returns its id."""
    seeds = tmp / "seeds.txt"
    seeds.write_text("".join(u + "\n" for u in urls))
    assert nutch(tmp, "inject", seeds, **props).returncode == 0
    gen = nutch(tmp, "generate", **props)
    assert gen.returncode == 0, gen.stderr
    return gen.stdout.strip()


def fetch(tmp: Path, batch: str, *extra: object, **props: object) -> subprocess.CompletedProcess[str]:
    done = nutch(tmp, "fetch", batch, "-threads", 4, *extra, **props)
    assert done.returncode == 0, done.stderr
    return done


def table(tmp: Path, **props: object) -> dict[str, WebPage]:
    return rows(conf_for(tmp, "sqlite", **props), CRAWL)


def row(pages: dict[str, WebPage], url: str) -> WebPage:
    return pages[reverse_url(url)]


def serve_ok(ex: Exchange) -> None:
    ex.respond(200, PAGE)


def serve_robots_ok(ex: Exchange) -> None:
    ex.respond(200, ROBOTS_OK, {"Content-Type": "text/plain"})


def trickled_head(ex: Exchange) -> None:
    """The status line at once, then one header byte every 0.25 s for ~17 s, then a small body."""
    if ex.send(b"HTTP/1.1 200 OK\r\n") and ex.trickle(b"X-Slow: " + b"a" * 60 + b"\r\n", 0.25):
        ex.send(b"Content-Type: text/plain\r\nContent-Length: 24\r\nConnection: close\r\n\r\n" + ROBOTS_OK)


# ---------------------------------------------------------------- a total deadline per request


@pytest.mark.timeout(60)
def test_trickled_headers_end_at_the_total_deadline(tmp_path: Path) -> None:
    """http.timeout=1000: a page and a robots.txt whose headers trickle for ~17 s are cut after 3 s in total."""
    props = {"http.timeout": 1000, "fetcher.server.delay": 0.1}
    with HostileServer({"/robots.txt": serve_robots_ok, "/slow": trickled_head}) as pages, \
            HostileServer({"/robots.txt": trickled_head, "/page": serve_ok}) as robots:
        slow, behind = pages.url("/slow"), robots.url("/page")
        batch = inject_generate(tmp_path, [slow, behind], **props)
        fetch(tmp_path, batch, **props)
        got = table(tmp_path, **props)
        assert not pages.requests("/slow")[0].completed  # the client hung up in the middle of the headers
        assert not robots.requests("/robots.txt")[0].completed
        assert robots.requests("/page") == []  # never requested without its robots.txt
    page = row(got, slow)
    assert Mark.FETCH.check(page) == batch
    assert page.status == CrawlStatus.RETRY
    assert page.protocol_status.code == ProtocolStatusCode.EXCEPTION
    assert page.protocol_status.args == ["timeout (total fetch time exceeded)"]
    page = row(got, behind)  # no answer to robots.txt: the host's URLs are failed fetches, retried later
    assert Mark.FETCH.check(page) == batch
    assert page.status == CrawlStatus.RETRY
    assert page.protocol_status.args == ["timeout (total fetch time exceeded) (robots.txt)"]


@pytest.mark.timeout(60)
def test_fetch_time_limit_cuts_requests_in_flight(tmp_path: Path) -> None:
    """fetcher.timelimit.mins=0.1 (6 s) with http.timeout=30000: a body trickled for ~24 s is cut at the limit,
    and neither it nor the URL queued behind it is marked fetched; they stay for a later fetch."""
    props = {"http.timeout": 30000, "fetcher.timelimit.mins": 0.1, "fetcher.server.delay": 0.1}

    def endless(ex: Exchange) -> None:
        if ex.send(head(200, length=120)):
            ex.trickle(b"x" * 120, 0.2)

    with HostileServer({"/robots.txt": serve_robots_ok, "/endless": endless, "/behind": serve_ok}) as slow, \
            HostileServer({"/robots.txt": serve_robots_ok, "/fast": serve_ok}) as fast:
        endless_url, behind_url, fast_url = slow.url("/endless"), slow.url("/behind"), fast.url("/fast")
        batch = inject_generate(tmp_path, [endless_url, behind_url, fast_url], **props)
        done = fetch(tmp_path, batch, **props)
        got = table(tmp_path, **props)
        assert not slow.requests("/endless")[0].completed  # cut in flight, not read to its end
    assert "hit_by_timelimit=" in done.stderr
    assert row(got, fast_url).status == CrawlStatus.FETCHED
    page = row(got, endless_url)
    assert Mark.FETCH.check(page) is None and page.status == CrawlStatus.INJECTED
    assert Mark.GENERATE.check(page) == batch  # still in its batch: `fetch -resume` or a later round gets it
    behind = row(got, behind_url)  # fetched before the slow one, or left queued: never marked half-done
    assert (behind.status, Mark.FETCH.check(behind)) in ((CrawlStatus.FETCHED, batch), (CrawlStatus.INJECTED, None))


# ---------------------------------------------------------------- robots.txt cut off


@pytest.mark.timeout(60)
def test_robots_txt_cut_off_is_not_a_complete_answer(tmp_path: Path) -> None:
    """`Disallow: /` trickled one byte per 0.5 s is cut after 3 s ("User-a"): the host is deferred, not crawled.
    A file cut after a whole group is used up to that group."""
    props = {"http.timeout": 1000, "fetcher.server.delay": 0.1}
    deny_all = b"User-agent: *\nDisallow: /\n"
    groups = b"User-agent: *\nDisallow: /private\n\nUser-agent: other\n"

    def trickled_deny_all(ex: Exchange) -> None:
        if ex.send(head(200, length=len(deny_all), headers={"Content-Type": "text/plain"})):
            ex.trickle(deny_all, 0.5)

    def trickled_second_group(ex: Exchange) -> None:
        rest = b"Disallow: /\n"
        if ex.send(head(200, length=len(groups) + len(rest), headers={"Content-Type": "text/plain"}) + groups):
            ex.trickle(rest, 0.5)

    with HostileServer({"/robots.txt": trickled_deny_all, "/a": serve_ok}) as denied, \
            HostileServer({"/robots.txt": trickled_second_group, "/ok": serve_ok, "/private/x": serve_ok}) as part:
        a, ok, private = denied.url("/a"), part.url("/ok"), part.url("/private/x")
        batch = inject_generate(tmp_path, [a, ok, private], **props)
        done = fetch(tmp_path, batch, **props)
        got = table(tmp_path, **props)
        assert not denied.requests("/robots.txt")[0].completed
        assert denied.requests("/a") == []  # the site was not crawled against its robots.txt
        assert part.requests("/private/x") == []
    assert "deferred=1" in done.stderr
    page = row(got, a)  # deferred: untouched, due again in a later round
    assert Mark.FETCH.check(page) is None and page.status == CrawlStatus.INJECTED
    assert row(got, ok).status == CrawlStatus.FETCHED
    assert row(got, private).protocol_status.code == ProtocolStatusCode.ROBOTS_DENIED


# ---------------------------------------------------------------- dead hosts


@pytest.mark.timeout(60)
def test_dead_host_rows_are_retried_then_gone_while_deferred_rows_wait(tmp_path: Path) -> None:
    """A host that refuses connections: its rows are failed fetches (RETRY, reason, FETCH mark) and end GONE after
    db.fetch.retry.max rounds. A host whose robots.txt answers 503 stays deferred: its row is left untouched."""
    props = {"http.timeout": 1000, "fetcher.server.delay": 0.1, "db.fetch.retry.max": 2}
    down = refused_url("/a")
    dead = [down, down.replace("/a", "/b")]
    with HostileServer({"/robots.txt": lambda ex: ex.respond(503, b"busy"), "/c": serve_ok}) as busy:
        later = busy.url("/c")
        batch = inject_generate(tmp_path, [*dead, later], **props)
        done = fetch(tmp_path, batch, **props)
        got = table(tmp_path, **props)
        for url in dead:
            page = row(got, url)
            assert Mark.FETCH.check(page) == batch, url
            assert page.status == CrawlStatus.RETRY
            assert page.protocol_status.code == ProtocolStatusCode.EXCEPTION
            assert page.protocol_status.args == ["connection refused (robots.txt)"]
        page = row(got, later)
        assert Mark.FETCH.check(page) is None and page.status == CrawlStatus.INJECTED
        assert "host_unreachable=2" in done.stderr and "deferred=1" in done.stderr
        assert f"robots.txt {busy.url('/robots.txt')} answered 503: the host is left for a later round" in done.stderr
        assert busy.requests("/c") == []

        for step in ("parse", "updatedb"):
            assert nutch(tmp_path, step, batch, **props).returncode == 0
        assert {row(table(tmp_path, **props), u).retries_since_fetch for u in dead} == {1}
        batch = nutch(tmp_path, "generate", "-adddays", 2, **props).stdout.strip()  # the retry is due a day later
        fetch(tmp_path, batch, **props)
        for step in ("parse", "updatedb"):
            assert nutch(tmp_path, step, batch, **props).returncode == 0
        got = table(tmp_path, **props)
    assert {row(got, u).status for u in dead} == {CrawlStatus.GONE}  # db.fetch.retry.max=2 reached
    assert Mark.FETCH.check(row(got, later)) is None  # still waiting for its robots.txt
    assert busy.requests("/c") == []


@pytest.mark.timeout(120)
def test_a_crawl_until_done_ends_beside_a_host_whose_robots_txt_answers_503(tmp_path: Path) -> None:
    """`crawl -rounds -1`: a host whose robots.txt answers 503 is deferred, its URL due again only after
    http.robots.503.defer.visits.delay, so the crawl ends once the rest is fetched (it asked that robots.txt once
    per round, not over and over) and the deferred URL is due again later, untouched otherwise."""
    import time

    props = {"fetcher.server.delay": 0.05}
    with HostileServer({"/robots.txt": lambda ex: ex.respond(503, b"busy"), "/c": serve_ok}) as busy, \
            HostileServer({"/robots.txt": serve_robots_ok, "/ok": serve_ok}) as fine:
        later, ok = busy.url("/c"), fine.url("/ok")
        seeds = tmp_path / "seeds.txt"
        seeds.write_text(f"{later}\n{ok}\n")
        before = int(time.time() * 1000)
        done = nutch(tmp_path, "crawl", seeds, "-rounds", -1, timeout=100, **props)
        assert done.returncode == 0, done.stderr
        asked = len(busy.requests("/robots.txt"))
        got = table(tmp_path, **props)
    assert busy.requests("/c") == [] and 1 <= asked <= 3, asked
    assert row(got, ok).status == CrawlStatus.FETCHED
    deferred = row(got, later)
    assert deferred.status == CrawlStatus.INJECTED and Mark.FETCH.check(deferred) is None
    assert deferred.fetch_time >= before + 300_000  # http.robots.503.defer.visits.delay, 5 minutes
    assert "_defer_" not in deferred.metadata and "_ftclaim_" not in deferred.metadata
    assert "deferred=1" in done.stderr


# ---------------------------------------------------------------- bodies: a gzip bomb and half a gzip stream


@pytest.mark.timeout(60)
def test_gzip_bomb_is_cut_by_the_inflate_limit_when_the_content_limit_is_off(tmp_path: Path) -> None:
    """http.content.limit=-1: a 64 MiB gzip bomb inflates to http.content.inflate.limit (1 MiB) and no more,
    is stored truncated (not parsed), and the page next to it is fetched and parsed as usual."""
    limit = 1 << 20
    props = {"http.content.limit": -1, "http.content.inflate.limit": limit, "fetcher.server.delay": 0.1}
    bomb = gzip_bomb(64 << 20)
    with HostileServer({"/robots.txt": serve_robots_ok, "/ok": serve_ok,
                        "/bomb": lambda ex: ex.respond(200, bomb, {"Content-Encoding": "gzip"})}) as server:
        urls = [server.url("/bomb"), server.url("/ok")]
        batch = inject_generate(tmp_path, urls, **props)
        fetch(tmp_path, batch, **props)
        assert nutch(tmp_path, "parse", batch, **props).returncode == 0
        got = table(tmp_path, **props)
    page = row(got, urls[0])
    assert page.status == CrawlStatus.FETCHED
    assert len(page.content) == limit
    assert (page.parse_status.major_code, page.parse_status.minor_code) == (ParseMajor.NOTPARSED,
                                                                            ParseMinor.FAILED_TRUNCATED)
    assert "http.content.inflate.limit" in page.parse_status.args[0]
    ok = row(got, urls[1])
    assert ok.status == CrawlStatus.FETCHED and ok.parse_status.major_code == ParseMajor.SUCCESS


@pytest.mark.timeout(60)
def test_half_a_gzip_stream_is_truncated_not_complete(tmp_path: Path) -> None:
    """The first half of a valid gzip stream with a matching Content-Length is marked truncated (parse skips it)."""
    props = {"fetcher.server.delay": 0.1}
    html = b"<html><head><title>half</title></head><body>" + b"<p>some words here</p>" * 2000 + b"</body></html>"
    squeezer = zlib.compressobj(6, zlib.DEFLATED, 31)
    stream = squeezer.compress(html) + squeezer.flush()
    half = stream[: len(stream) // 2]
    with HostileServer({"/robots.txt": serve_robots_ok,
                        "/half": lambda ex: ex.respond(200, half, {"Content-Encoding": "gzip"})}) as server:
        url = server.url("/half")
        batch = inject_generate(tmp_path, [url], **props)
        fetch(tmp_path, batch, **props)
        assert server.requests("/half")[0].completed  # the server sent all it announced
        assert nutch(tmp_path, "parse", batch, **props).returncode == 0
        got = table(tmp_path, **props)
    page = row(got, url)
    assert page.status == CrawlStatus.FETCHED
    assert 0 < len(page.content) < len(html)
    assert (page.parse_status.major_code, page.parse_status.minor_code) == (ParseMajor.NOTPARSED,
                                                                            ParseMinor.FAILED_TRUNCATED)
    assert page.parse_status.args == ["content cut: the connection, or the body's decoding, ended before the body "
                                      "did"]  # not blamed on http.content.limit


# ---------------------------------------------------------------- parsing: 100 000 attributes


@pytest.mark.timeout(60)
def test_page_with_100000_attributes_parses(tmp_path: Path) -> None:
    """libxml2 needs minutes of CPU for one tag with 100 000 attributes; with parser.timeout=10 the parse must
    finish, with the page's title, text and links (the tag is cut to its first attributes)."""
    props = {"fetcher.server.delay": 0.1, "parser.timeout": 10, "http.content.limit": 4 << 20}
    attrs = " ".join(f'a{i}="v"' for i in range(100_000)).encode()
    body = b"<html><head><title>many</title></head><body><div " + attrs + b">text</div><a href='/next'>n</a></body>"
    with HostileServer({"/robots.txt": serve_robots_ok, "/attrs": lambda ex: ex.respond(200, body)}) as server:
        url = server.url("/attrs")
        batch = inject_generate(tmp_path, [url], **props)
        fetch(tmp_path, batch, **props)
        assert nutch(tmp_path, "parse", batch, **props).returncode == 0
        got = table(tmp_path, **props)
    page = row(got, url)
    assert page.parse_status.major_code == ParseMajor.SUCCESS, page.parse_status.args
    assert page.title == "many"
    assert set(page.outlinks) == {server.url("/next")}


# ---------------------------------------------------------------- absurd settings


@pytest.mark.timeout(120)
@pytest.mark.parametrize("setting", [
    "http.timeout=-1",
    "http.timeout=0",
    "http.timeout=99999999999",
    "http.content.inflate.limit=0",
    "fetcher.threads.fetch=1000000000",
    "-threads 1000000000",
    "-threads 0",
])
def test_absurd_fetch_settings_fail_in_one_line(tmp_path: Path, setting: str) -> None:
    """Each is one clear line naming the setting, exit 1 (2 for a bad option), and nothing is requested or marked
    fetched."""
    props: dict[str, object] = {"fetcher.server.delay": 0.1}
    with HostileServer({"/robots.txt": serve_robots_ok, "/a": serve_ok}) as server:
        batch = inject_generate(tmp_path, [server.url("/a")], **props)
        if setting.startswith("-threads"):
            done = nutch(tmp_path, "fetch", batch, *setting.split(), timeout=30, **props)
        else:
            key, value = setting.split("=")
            done = nutch(tmp_path, "fetch", batch, timeout=30, **props, **{key: value})
        got = table(tmp_path, **props)
        assert server.requests() == []
    assert done.returncode == (2 if setting.startswith("-") else 1)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "error" in lines[0], done.stderr
    assert setting.split("=")[0] in lines[0]
    assert Mark.FETCH.check(row(got, server.url("/a"))) is None


@pytest.mark.timeout(60)
def test_crawl_with_absurd_threads_fails_before_injecting(tmp_path: Path) -> None:
    with HostileServer({"/robots.txt": serve_robots_ok, "/a": serve_ok}) as server:
        seeds = tmp_path / "seeds.txt"
        seeds.write_text(server.url("/a") + "\n")
        done = nutch(tmp_path, "crawl", seeds, "-rounds", 1, "-threads", 1000000000, timeout=30)
        assert server.requests() == []
    assert done.returncode == 2  # a bad option: a usage error
    assert len(done.stderr.strip().splitlines()) == 1 and "-threads 1000000000" in done.stderr
    assert not (tmp_path / "crawl").exists() or table(tmp_path) == {}


# ---------------------------------------------------------------- credentials in a redirect target


@pytest.mark.timeout(60)
@pytest.mark.parametrize("redirect_max", [0, 1])
def test_credentials_in_a_redirect_target_are_never_stored(tmp_path: Path, redirect_max: int) -> None:
    """A redirect to http://user:secret@host/target: neither the outlink, the repr URL nor the protocol status
    arguments keep `user:secret@`, and a redirect followed inline sends no credentials."""
    props = {"fetcher.server.delay": 0.1, "http.redirect.max": redirect_max}
    server = HostileServer({"/robots.txt": serve_robots_ok, "/target": serve_ok})
    with server:
        secret_target = f"http://user:secret@{server.host}:{server.port}/target"
        server.routes["/moved"] = lambda ex: ex.respond(301, b"", {"Location": secret_target})
        server.routes["/loop"] = lambda ex: ex.respond(302, b"", {"Location": secret_target.replace("target",
                                                                                                     "loop")})
        urls = [server.url("/moved"), server.url("/loop")]
        batch = inject_generate(tmp_path, urls, **props)
        fetch(tmp_path, batch, **props)
        for step in ("parse", "updatedb"):
            assert nutch(tmp_path, step, batch, **props).returncode == 0
        got = table(tmp_path, **props)
        assert all("Authorization" not in r.headers for r in server.requests())
    for key, page in got.items():
        stored = [key, page.repr_url or "", *page.protocol_status.args, *(page.outlinks or {})]
        assert not [s for s in stored if "secret" in s], (key, stored)
    moved = row(got, urls[0])
    if redirect_max == 0:
        assert moved.status == CrawlStatus.REDIR_PERM
        assert set(moved.outlinks) == {server.url("/target")} and moved.repr_url == server.url("/target")
        assert moved.protocol_status.args == [server.url("/target")]
    else:
        assert moved.status == CrawlStatus.FETCHED and moved.repr_url == server.url("/target")


# ---------------------------------------------------------------- what the checkers print


@pytest.mark.timeout(60)
def test_checkers_print_a_pages_control_characters_as_escapes(tmp_path: Path) -> None:
    """A title, a header and a redirect target with terminal escapes (colour, window title, BEL, clear screen)
    reach the terminal as text, not as control sequences; a robots.txt that defers the host is said to, not called
    a denial."""
    evil = "\x1b[31mRED\x1b]0;pwned\x07"
    page = f"<html><head><title>T{evil}</title></head><body>b\x1b[2Jody</body></html>".encode()

    def evil_page(ex: Exchange) -> None:
        ex.respond(200, page, headers={"X-Evil": "a\x1b[31mb"})

    with HostileServer({"/robots.txt": lambda ex: ex.respond(200, ROBOTS_OK), "/p": evil_page}) as server, \
            HostileServer({"/robots.txt": lambda ex: ex.respond(503, b"busy"), "/a": serve_ok}) as busy:
        d = defines(tmp_path, "sqlite")
        shown = [nutch2(checker, server.url("/p"), "-dumpText", *d) for checker in ("parsechecker", "indexchecker")]
        deferred = nutch2("parsechecker", busy.url("/a"), "-checkRobotsTxt", *d)
    for p in shown:
        assert p.returncode == 0, p.stderr
        assert "\x1b" not in p.stdout and "\x07" not in p.stdout
        assert "T\\x1b[31mRED\\x1b]0;pwned\\x07" in p.stdout
    assert "a\\x1b[31mb" in shown[0].stdout and "b\\x1b[2Jody" in shown[0].stdout
    assert deferred.returncode != 0 and "denied" not in deferred.stderr
    assert "gave no rules now" in deferred.stderr and "Traceback" not in deferred.stderr


@pytest.mark.timeout(60)
def test_a_servers_control_characters_in_an_error_line_are_escapes(tmp_path: Path) -> None:
    """A redirect target with terminal escapes, which parsechecker's error line quotes, reaches stderr as text (the
    log lines escape control characters as result lines do)."""
    evil = "/x\x1b]0;pwned\x07\x1b[2J"
    with HostileServer({"/robots.txt": serve_robots_ok,
                        "/r": lambda ex: ex.respond(301, headers={"Location": evil})}) as server:
        p = nutch2("parsechecker", server.url("/r"), *defines(tmp_path, "sqlite"))
    assert p.returncode == 1 and "Traceback" not in p.stderr
    assert "\x1b" not in p.stderr and "\x07" not in p.stderr, p.stderr
    assert "failed: MOVED " + server.url("/x\\x1b]0;pwned\\x07\\x1b[2J") in p.stderr, p.stderr


@pytest.mark.timeout(60)
def test_responses_http_client_cannot_read_are_named_as_bad_responses(tmp_path: Path) -> None:
    """A 100 KB header line, 10,000 headers and an HTTP/0.9-style answer are failed fetches named for what was wrong
    with the answer, not "connection aborted"; the host table does not count them as connection failures."""
    props = {"fetcher.server.delay": 0.05}
    answers = {
        "/long": b"HTTP/1.1 200 OK\r\nX-Long: " + b"a" * 100_000 + b"\r\n\r\nhi",
        "/many": b"HTTP/1.1 200 OK\r\n" + b"".join(b"X-H%d: v\r\n" % i for i in range(10_000)) + b"\r\nhi",
        "/nine": b"<html>an answer without a status line</html>",
    }
    reasons = {"/long": "bad response: a header line over 64 KB", "/many": "bad response: more than 100 headers",
               "/nine": "bad response: no HTTP status line"}

    def raw(body: bytes):  # noqa: ANN202 - a route
        return lambda ex: ex.send(body)

    with HostileServer({"/robots.txt": serve_robots_ok, **{p: raw(b) for p, b in answers.items()}}) as server:
        urls = {p: server.url(p) for p in answers}
        batch = inject_generate(tmp_path, list(urls.values()), **props)
        fetch(tmp_path, batch, **props)
        got = table(tmp_path, **props)
        host = server.host
    for path, url in urls.items():
        page = row(got, url)
        assert page.status == CrawlStatus.RETRY and page.protocol_status.code == ProtocolStatusCode.EXCEPTION, path
        assert page.protocol_status.args == [reasons[path]], path
    for step in ("parse", "updatedb", "updatehostdb"):
        assert nutch(tmp_path, step, *([batch] if step != "updatehostdb" else []), **props).returncode == 0, step
    hosts = nutch(tmp_path, "readhostdb", **props)
    line = next(x for x in hosts.stdout.splitlines() if x.startswith(host))
    assert "\tconnectionFailures=0" in line and "\tnumFailures=0" in line, line
