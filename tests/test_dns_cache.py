"""The fetch task's DNS cache (nutch2/fetch/dns.py): a host is resolved once per fetcher.dns.cache.seconds, a name
that does not resolve once per fetcher.dns.cache.negative.seconds, threads asking at once share one lookup, and the
address guard checks and connects to the cached answer. A crawl resolves each host once per task although it opens
several connections to it, and counts the URLs of a host whose name does not resolve as dns_failures."""

from __future__ import annotations

import contextlib
import re
import socket
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from nutch2.errors import ConfigError
from nutch2.fetch.addresses import AddressDenied, AddressPolicy
from nutch2.fetch.dns import DnsCache, is_dns_failure
from nutch2.status import CrawlStatus
from tests.conftest import make_conf
from tests.crawlutil import conf_for, defines, row, seed_file
from tests.helpers import nutch2
from tests.testweb import TestWeb


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


def test_the_properties_are_checked(tmp_path: Path) -> None:
    policy = AddressPolicy.from_conf(make_conf(tmp_path, **{"fetcher.dns.cache.seconds": 30,
                                                            "fetcher.dns.cache.negative.seconds": 5}))
    assert (policy.dns.seconds, policy.dns.negative_seconds) == (30, 5)
    with pytest.raises(ConfigError, match=r"^fetcher\.dns\.cache\.negative\.seconds=-1: give the seconds"):
        AddressPolicy.from_conf(make_conf(tmp_path, **{"fetcher.dns.cache.negative.seconds": -1}))


def counter(stderr: str, name: str) -> int:
    """A counter of a job's summary line (0 when absent)."""
    found = re.findall(rf"\b{name}=(\d+)", stderr)
    return int(found[-1]) if found else 0


@pytest.mark.slow
def test_a_fetch_resolves_each_host_once_and_counts_dns_failures(tmp_path: Path) -> None:
    """Two fetch tasks (the processes runner on sqlite): every host is looked up once in the task that fetches it,
    although robots.txt and its pages take several connections (robots.txt's session and each fetcher thread keep
    connections of their own); the two URLs of a name that does not resolve are dns_failures (not
    host_unreachable), recorded as such, and the name is looked up once (the guard's check and the connection)."""
    with TestWeb(hosts=3, pages_per_host=4, traps=False) as web:
        d = defines(tmp_path, "sqlite", **{"fetcher.threads.per.queue": 2, "fetcher.server.min.delay": 0})
        bad = [f"http://nosuch.invalid:{web.port}/a", f"http://nosuch.invalid:{web.port}/b"]
        good = [web.page_url(h, i) for h in range(3) for i in range(4)]
        assert nutch2("inject", seed_file(tmp_path, *good, *bad), *d).returncode == 0
        batch = nutch2("generate", *d).stdout.strip()
        fetch = nutch2("fetch", batch, "-numTasks", 2, "-threads", 4, *d)
        assert fetch.returncode == 0, fetch.stderr
        assert len(web.requests()) == 3 + len(good)  # robots.txt and every page of the three hosts
    assert counter(fetch.stderr, "dns_lookups") == 4, fetch.stderr  # three hosts and the bad name, once each
    assert counter(fetch.stderr, "dns_failures") == 2 and counter(fetch.stderr, "host_unreachable") == 0
    conf = conf_for(tmp_path, "sqlite")
    for url in bad:
        page = row(conf, "", url)
        assert page is not None and page.status == CrawlStatus.RETRY, url
        assert is_dns_failure(page.protocol_status.args[0]), page.protocol_status
