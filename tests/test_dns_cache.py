"""The fetch task's DNS cache (nutch2/fetch/dns.py): a host is resolved once per fetcher.dns.cache.seconds, a name
that does not resolve once per fetcher.dns.cache.negative.seconds, threads asking at once share one lookup, and the
address guard checks and connects to the cached answer."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from nutch2.fetch.addresses import AddressDenied, AddressPolicy
from nutch2.fetch.dns import DnsCache
from tests.conftest import make_conf


class Resolver:
    """socket.getaddrinfo for the names it knows (a fixed answer per name), counting its calls per name; any other
    name does not resolve."""

    def __init__(self, answers: dict[str, list[str]], delay: float = 0.0) -> None:
        self.answers = answers
        self.delay = delay
        self.calls: Counter[str] = Counter()
        self.lock = threading.Lock()

    def __call__(self, host: str, port: int, **kw: Any) -> list[tuple]:
        with self.lock:
            self.calls[host] += 1
        time.sleep(self.delay)
        if host not in self.answers:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (ip, port)) for ip in self.answers[host]]


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_repeated_lookups_are_answered_from_the_cache_until_it_expires() -> None:
    resolver, clock = Resolver({"a.test": ["192.0.2.1", "192.0.2.2"]}), Clock()
    dns = DnsCache(300, 60, resolver, clock)
    for _ in range(5):
        assert [info[4] for info in dns.resolve("a.test", 80)] == [("192.0.2.1", 80), ("192.0.2.2", 80)]
    assert dns.addresses("A.TEST", 80) == ["192.0.2.1", "192.0.2.2"]  # names are not case-sensitive
    assert resolver.calls["a.test"] == 1 and dns.lookups == 1
    dns.resolve("a.test", 8080)  # another port: its own answer
    clock.now += 299
    dns.resolve("a.test", 80)
    assert resolver.calls["a.test"] == 2
    clock.now += 2  # past the 300 s of the first answer
    dns.resolve("a.test", 80)
    assert resolver.calls["a.test"] == 3 and dns.failures == 0


def test_a_name_that_does_not_resolve_is_asked_again_only_after_the_negative_ttl() -> None:
    resolver, clock = Resolver({}), Clock()
    dns = DnsCache(300, 60, resolver, clock)
    for _ in range(4):
        with pytest.raises(socket.gaierror, match="Name or service not known"):
            dns.resolve("nosuch.test", 80)
    assert resolver.calls["nosuch.test"] == 1 and dns.failures == 1
    clock.now += 61
    with pytest.raises(socket.gaierror):
        dns.resolve("nosuch.test", 80)
    assert resolver.calls["nosuch.test"] == 2 and dns.failures == 2
    off = DnsCache(0, 0, resolver, clock)  # 0: not kept
    for _ in range(2):
        with pytest.raises(socket.gaierror):
            off.resolve("nosuch.test", 80)
    assert off.lookups == 2


def test_a_name_idna_cannot_encode_is_a_dns_failure() -> None:
    def bad(host: str, port: int, **kw: Any) -> list[tuple]:
        raise UnicodeError("label too long")

    dns = DnsCache(300, 60, bad)
    with pytest.raises(socket.gaierror, match="invalid host name"):
        dns.resolve("x" * 70 + ".test", 80)


def test_threads_asking_at_once_share_one_lookup() -> None:
    resolver = Resolver({"slow.test": ["192.0.2.9"]}, delay=0.3)
    dns = DnsCache(300, 60, resolver)
    got: list[list[str]] = []
    threads = [threading.Thread(target=lambda: got.append(dns.addresses("slow.test", 80))) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert got == [["192.0.2.9"]] * 8 and resolver.calls["slow.test"] == 1


@contextlib.contextmanager
def listener() -> Any:
    """A TCP listener on 127.0.0.1 that accepts and closes connections; yields its port."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)

    def accept() -> None:
        with contextlib.suppress(OSError):
            while True:
                sock.accept()[0].close()

    threading.Thread(target=accept, daemon=True).start()
    try:
        yield sock.getsockname()[1]
    finally:
        sock.close()


def test_connections_reuse_the_answer_the_guard_checked(tmp_path: Path) -> None:
    """Repeated connections to a host ask the resolver once; check() and connect() see the same answer, so a name
    that resolves to a refused address first and to an allowed one later (DNS rebinding) stays refused."""
    with listener() as port:
        resolver = Resolver({"site.test": ["127.0.0.1"]})
        policy = AddressPolicy.from_conf(make_conf(tmp_path, **{"fetcher.address.allow": f"site.test:{port}"}))
        policy.dns = DnsCache(300, 60, resolver)
        assert policy.check(f"http://site.test:{port}/") is None
        for _ in range(3):
            policy.connect("site.test", port, 5).close()
        assert resolver.calls["site.test"] == 1

        class Rebinding(Resolver):
            def __call__(self, host: str, port: int, **kw: Any) -> list[tuple]:
                self.answers = {"rebind.test": ["127.0.0.1"] if not self.calls else ["127.0.1.1"]}
                return super().__call__(host, port, **kw)

        rebinding = Rebinding({})
        guarded = AddressPolicy.from_conf(make_conf(tmp_path, **{"fetcher.address.allow": "127.0.1.0/24"}))
        guarded.dns = DnsCache(300, 60, rebinding)
        assert "denied address 127.0.0.1 of rebind.test" in (guarded.check(f"http://rebind.test:{port}/") or "")
        with pytest.raises(AddressDenied, match="denied address 127.0.0.1 of rebind.test"):
            guarded.connect("rebind.test", port, 5)
        assert rebinding.calls["rebind.test"] == 1
