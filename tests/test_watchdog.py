"""The total deadline of one request (nutch2.fetch.watchdog via HttpProtocol) against a server that trickles."""

from __future__ import annotations

import pytest

from nutch2.fetch.watchdog import Watchdog
from nutch2.mapred import clock
from nutch2.plugins.protocol_http.http import HttpProtocol, HttpSettings
from nutch2.status import ProtocolStatusCode
from tests.hostile_server import Exchange, HostileServer, head


def _trickled_head(ex: Exchange) -> None:
    if ex.send(b"HTTP/1.1 200 OK\r\n"):
        ex.trickle(b"X-Slow: " + b"a" * 200 + b"\r\n", 0.05)


def _trickled_body(ex: Exchange) -> None:
    if ex.send(head(200, length=400)):
        ex.trickle(b"x" * 400, 0.05)


@pytest.fixture
def server() -> HostileServer:
    with HostileServer({"/head": _trickled_head, "/body": _trickled_body,
                        "/ok": lambda ex: ex.respond(200, b"fine")}) as s:
        yield s


def _protocol(**kw: object) -> HttpProtocol:
    return HttpProtocol(HttpSettings(agent="test", timeout_ms=2000, max_fetch_ms=500, **kw))  # type: ignore[arg-type]


def test_trickled_headers_fail_at_the_total_deadline(server: HostileServer) -> None:
    protocol = _protocol()
    out = protocol.fetch(server.url("/head"))  # 10 s of headers, 2 s per read, 0.5 s in total
    assert out.code == ProtocolStatusCode.EXCEPTION and out.args == ["timeout (total fetch time exceeded)"]
    assert not server.requests("/head")[0].completed
    assert protocol.fetch(server.url("/ok")).content == b"fine"  # the next request is not affected


def test_trickled_body_is_cut_and_truncated(server: HostileServer) -> None:
    out = _protocol().fetch(server.url("/body"))
    assert out.code == ProtocolStatusCode.SUCCESS and out.truncated
    assert 0 < len(out.content) < 400


def test_stop_at_cuts_the_request_and_says_so(server: HostileServer) -> None:
    """stop_at is the fetch clock's (nutch2/mapred/clock.py), as the fetcher gives it."""
    out = HttpProtocol(HttpSettings(agent="test", timeout_ms=2000, stop_at=clock.now() + 0.3)).fetch(
        server.url("/body"))
    assert out.stopped and out.truncated


def test_finished_requests_do_not_pile_up() -> None:
    watchdog = Watchdog()
    for _ in range(20_000):
        watchdog.disarm(watchdog.arm(1e12))
    assert not watchdog._active
