"""Tests for nutch2.fetch.robots against real HTTP servers on 127.0.0.1 (one server per robots variant)."""

from __future__ import annotations

import dataclasses
import socket
import threading
import time
from collections.abc import Callable, Iterator

import pytest

from nutch2.fetch.robots import ROBOTS_MAX_BYTES, RobotRules, RobotsCache, robot_agent_name, robot_agents
from nutch2.plugins.protocol_http.http import HttpProtocol, HttpSettings
from tests.helpers import QuietServer, Route

AGENT = "MyBot"
ROBOTS = b"""User-agent: *
Disallow: /private

User-agent: MyBot
Disallow: /nobot
Crawl-delay: 2.5

Sitemap: http://example.com/sitemap.xml
"""

@pytest.fixture
def serve() -> Iterator[Callable[[dict[str, Route]], QuietServer]]:
    """Start servers on demand; shut them all down after the test."""
    servers: list[QuietServer] = []

    def start(routes: dict[str, Route]) -> QuietServer:
        server = QuietServer(routes)
        threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def base(server: QuietServer) -> str:
    """Base URL of a server."""
    return f"http://127.0.0.1:{server.server_address[1]}"


def settings(timeout_ms: int = 2000) -> HttpSettings:
    """Settings with a short timeout."""
    return HttpSettings(agent="MyBot/1.0 (+http://example.com/bot)", timeout_ms=timeout_ms)


def cache(timeout_ms: int = 2000) -> RobotsCache:
    """A cache whose robots.txt sessions are protocol-http's, as the fetch engine's are."""
    robots_settings = dataclasses.replace(settings(timeout_ms), redirect_max=0, content_limit=ROBOTS_MAX_BYTES)
    return RobotsCache(lambda: HttpProtocol(robots_settings), AGENT)


def robots_only(status: int, body: bytes = b"", **headers: str) -> dict[str, Route]:
    """Routes with just /robots.txt."""
    return {"/robots.txt": (status, headers, body)}


def test_disallow_rules_crawl_delay_sitemaps(serve: Callable[[dict[str, Route]], QuietServer]) -> None:
    url = base(serve(robots_only(200, ROBOTS)))
    rules = cache().rules_for(f"{url}/page")
    assert rules.state == "parsed"
    assert rules.allowed(f"{url}/page", AGENT)
    assert not rules.allowed(f"{url}/nobot/x", AGENT)
    assert rules.allowed(f"{url}/private/x", AGENT), "the MyBot group replaces the * group"
    assert not rules.allowed(f"{url}/private/x", "OtherBot")
    assert rules.allowed(f"{url}/nobot/x", "OtherBot")
    assert rules.crawl_delay(AGENT) == 2.5
    assert rules.crawl_delay("OtherBot") is None
    assert rules.sitemaps == ["http://example.com/sitemap.xml"]


def test_full_user_agent_string_matches_group() -> None:
    rules = RobotRules.parse(ROBOTS)
    # rules match product tokens (RFC 9309); the fetcher cuts its configured names down to them
    assert not rules.allowed("http://h/nobot", robot_agents("MyBot/1.0 (+http://example.com/bot)"))
    assert robot_agent_name("MyBot/1.0 (+http://x), other") == "MyBot"
    assert robot_agent_name("mybot,other") == "mybot"


@pytest.mark.parametrize("status", [404, 410, 401, 403])
def test_4xx_allows_all(serve: Callable[[dict[str, Route]], QuietServer], status: int) -> None:
    url = base(serve(robots_only(status, b"User-agent: *\nDisallow: /\n")))
    rules = cache().rules_for(f"{url}/x")
    assert rules.state == "allow_all" and rules.allowed(f"{url}/x", AGENT)
    assert rules.crawl_delay(AGENT) is None and rules.sitemaps == []


@pytest.mark.parametrize("status", [500, 503, 429])
def test_5xx_and_429_defer(serve: Callable[[dict[str, Route]], QuietServer], status: int) -> None:
    url = base(serve(robots_only(status, b"User-agent: *\nAllow: /\n")))
    rules = cache().rules_for(f"{url}/x")
    assert rules.state == "defer" and not rules.allowed(f"{url}/x", AGENT)


def test_empty_robots_allows_all(serve: Callable[[dict[str, Route]], QuietServer]) -> None:
    url = base(serve(robots_only(200, b"\n  \n")))
    assert cache().rules_for(url).state == "allow_all"


def test_non_utf8_and_bom(serve: Callable[[dict[str, Route]], QuietServer]) -> None:
    body = b"\xef\xbb\xbfUser-agent: *\n# caf\xe9 \xff\xfe\nDisallow: /private\n"
    url = base(serve(robots_only(200, body)))
    rules = cache().rules_for(url)
    assert rules.state == "parsed" and not rules.allowed(f"{url}/private", AGENT)


def test_redirecting_robots(serve: Callable[[dict[str, Route]], QuietServer]) -> None:
    other = serve(robots_only(200, ROBOTS))
    url = base(serve({
        "/robots.txt": (301, {"Location": "/step"}, b""),
        "/step": (302, {"Location": f"{base(other)}/robots.txt"}, b""),
    }))
    rules = cache().rules_for(f"{url}/a")
    assert rules.state == "parsed" and not rules.allowed(f"{url}/nobot", AGENT)


def test_too_many_robots_redirects_allows_all(serve: Callable[[dict[str, Route]], QuietServer]) -> None:
    routes: dict[str, Route] = {"/robots.txt": (301, {"Location": "/r1"}, b"")}
    for i in range(1, 7):
        routes[f"/r{i}"] = (301, {"Location": f"/r{i + 1}"}, b"")
    routes["/r7"] = (200, {}, b"User-agent: *\nDisallow: /\n")
    server = serve(routes)
    rules = cache().rules_for(base(server))
    assert rules.state == "allow_all"
    assert server.hits.get("/r5") == 1 and "/r6" not in server.hits  # 1 fetch + 5 redirects


def test_refused_connection_is_unreachable() -> None:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    rules = cache().rules_for(f"http://127.0.0.1:{port}/x")
    assert rules.state == "unreachable" and not rules.allowed(f"http://127.0.0.1:{port}/x", AGENT)
    assert rules.reason == "connection refused"


def test_no_answer_in_time_is_unreachable(serve: Callable[[dict[str, Route]], QuietServer]) -> None:
    url = base(serve(robots_only(200, ROBOTS, delay="1.5")))
    t0 = time.monotonic()
    rules = cache(timeout_ms=300).rules_for(url)
    assert rules.state == "unreachable" and rules.reason.startswith("timeout")
    assert time.monotonic() - t0 < 1.2


def test_robots_capped_at_500kb(serve: Callable[[dict[str, Route]], QuietServer]) -> None:
    body = b"User-agent: *\nDisallow: /early\n\nUser-agent: other\n" + b"#" * (600 * 1024) + b"\nDisallow: /late\n"
    url = base(serve(robots_only(200, body)))
    rules = cache().rules_for(url)
    assert not rules.allowed(f"{url}/early", AGENT)
    assert rules.allowed(f"{url}/late", AGENT), "only the whole groups of the first 500 KB are used"


def test_robots_cut_at_500kb_inside_its_only_group_is_read_to_the_limit(
        serve: Callable[[dict[str, Route]], QuietServer]) -> None:
    """Google's rule: what follows the first 500 KiB is ignored, the host is crawled by the rules before it (each
    round would cut the file at the same place: deferring it would never crawl the host)."""
    body = b"User-agent: *\nDisallow: /early\n" + b"#" * (600 * 1024) + b"\nDisallow: /late\n"
    url = base(serve(robots_only(200, body)))
    rules = cache().rules_for(url)
    assert rules.state == "parsed"
    assert not rules.allowed(f"{url}/early", AGENT) and rules.allowed(f"{url}/late", AGENT)


def test_cached_per_host_and_single_fetch_under_concurrency(
        serve: Callable[[dict[str, Route]], QuietServer]) -> None:
    server = serve(robots_only(200, ROBOTS, delay="0.3"))
    url = base(server)
    robots = cache()
    results: list[RobotRules] = []
    threads = [threading.Thread(target=lambda i=i: results.append(robots.rules_for(f"{url}/p{i}")))
               for i in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(5)
    assert len(results) == 12 and all(r is results[0] for r in results)
    assert robots.rules_for(f"{url}/again") is results[0]
    assert server.hits["/robots.txt"] == 1
    robots.close()


def test_hosts_keyed_by_scheme_host_port(serve: Callable[[dict[str, Route]], QuietServer]) -> None:
    a = serve(robots_only(200, ROBOTS))
    b = serve(robots_only(404))
    robots = cache()
    assert robots.rules_for(f"{base(a)}/x").state == "parsed"
    assert robots.rules_for(f"{base(b)}/x").state == "allow_all"
    assert robots.rules_for(f"HTTP://127.0.0.1:{a.server_address[1]}/y").state == "parsed"
    assert a.hits["/robots.txt"] == 1


def test_uses_protocol_factory(serve: Callable[[dict[str, Route]], QuietServer]) -> None:
    url = base(serve(robots_only(200, ROBOTS)))
    made: list[HttpProtocol] = []

    def factory() -> HttpProtocol:
        made.append(HttpProtocol(settings()))
        return made[-1]

    robots = RobotsCache(factory, AGENT)
    assert robots.rules_for(url).state == "parsed"
    assert len(made) == 1


@pytest.mark.parametrize("url", ["not a url", "http://", "mailto:x@y.z"])
def test_unusable_urls_allow_all(url: str) -> None:
    assert cache().rules_for(url).state == "allow_all"
