"""The fetch task's DNS cache (nutch2/fetch/dns.py): a host is resolved once per its record TTL, clamped between
fetcher.dns.cache.min.seconds and fetcher.dns.cache.seconds (getaddrinfo's answers, which have no TTL, once per
fetcher.dns.cache.seconds), a name that does not resolve once per its negative TTL (at most
fetcher.dns.cache.negative.seconds), threads asking at once share one lookup, and the address guard checks and
connects to the cached answer. The DNS servers asked are real ones of the tests' own, on loopback (DnsServer); a dead
one leaves names to getaddrinfo, and the names of /etc/hosts never reach them. A crawl resolves each host once per
task although it opens several connections to it, again when its TTL ran out, and counts the URLs of a host whose
name does not resolve as dns_failures."""

from __future__ import annotations

import contextlib
import http.server
import re
import socket
import socketserver
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import dns.message
import dns.rcode
import dns.rdatatype
import dns.rrset
import pytest

from nutch2.errors import ConfigError
from nutch2.fetch.addresses import AddressDenied, AddressPolicy, guarded_seeds
from nutch2.fetch.dns import DnsCache, hosts_names, is_dns_failure, parse_servers
from nutch2.fetch.dnsservers import DnsServers
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


class DnsServer:
    """A real DNS server on 127.0.53.1 and a free UDP port, served by a thread: `records` maps a name to its
    addresses (IPv4: A records, IPv6: AAAA records) and their TTL; a name it lacks is NXDOMAIN, a type it lacks an
    empty NOERROR answer, both with an SOA record of minimum `negative_ttl` in the authority section (None: no SOA).
    `silent`: it reads the queries but never answers. `queries` counts the questions per (name, type)."""

    def __init__(self, records: dict[str, tuple[list[str], int]], negative_ttl: int | None = None,
                 silent: bool = False) -> None:
        self.records = records
        self.negative_ttl = negative_ttl
        self.silent = silent
        self.queries: Counter[tuple[str, str]] = Counter()
        self.lock = threading.Lock()
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.53.1", 0))
        self.sock.settimeout(0.1)
        self.address = self.sock.getsockname()
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._serve, name="test-dns", daemon=True)

    @property
    def conf(self) -> str:
        """Its fetcher.dns.servers entry."""
        return f"{self.address[0]}:{self.address[1]}"

    def servers(self, timeout: float = 2.0) -> DnsServers:
        return DnsServers([self.address], timeout)

    def asked(self, name: str) -> int:
        """Questions for a name's A records so far."""
        with self.lock:
            return self.queries[(name, "A")]

    def total(self) -> int:
        with self.lock:
            return sum(self.queries.values())

    def __enter__(self) -> DnsServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stopping.set()
        self.thread.join(5)
        self.sock.close()

    def _serve(self) -> None:
        while not self.stopping.is_set():
            try:
                data, peer = self.sock.recvfrom(65535)
            except TimeoutError:
                continue
            except OSError:
                return
            query = dns.message.from_wire(data)
            question = query.question[0]
            name = question.name.to_text(omit_final_dot=True).lower()
            with self.lock:
                self.queries[(name, dns.rdatatype.to_text(question.rdtype))] += 1
            if not self.silent:
                self.sock.sendto(self._response(query, name, question.rdtype).to_wire(), peer)

    def _response(self, query: dns.message.Message, name: str, rdtype: int) -> dns.message.Message:
        response = dns.message.make_response(query)
        qname = query.question[0].name
        found = self.records.get(name)
        want = [a for a in (found[0] if found else []) if (":" in a) == (rdtype == dns.rdatatype.AAAA)]
        if found is None:
            response.set_rcode(dns.rcode.NXDOMAIN)
        if want:
            response.answer.append(dns.rrset.from_text_list(qname, found[1], "IN", rdtype, want))
        elif self.negative_ttl is not None:
            zone = qname.parent()
            response.authority.append(dns.rrset.from_text(
                zone, 3600, "IN", "SOA", f"ns.{zone} admin.{zone} 1 3600 600 86400 {self.negative_ttl}"))
        return response


class NoResolver:
    """A getaddrinfo the DNS servers' names must never reach."""

    def __call__(self, host: str, port: int, **kw: Any) -> list[tuple]:
        raise AssertionError(f"{host} was given to getaddrinfo")


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


def test_a_ttl_is_honoured_and_threads_asking_at_once_share_one_question() -> None:
    """(a) TTL 2: asked once while fresh, by 16 threads at once too, and again after 2 s, A then AAAA; an answer
    of both kinds is IPv4 first, in getaddrinfo's shape."""
    clock = Clock()
    with DnsServer({"ttl2.example": (["127.0.9.1", "127.0.9.2"], 2),
                    "both.example": (["::1", "127.0.9.3"], 30)}) as server:
        dns = DnsCache(300, 60, NoResolver(), clock, min_seconds=0, servers=server.servers())
        got: list[list[str]] = []
        threads = [threading.Thread(target=lambda: got.append(dns.addresses("ttl2.example", 80))) for _ in range(16)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(got) == 16 and all(g == got[0] for g in got) and sorted(got[0]) == ["127.0.9.1", "127.0.9.2"]
        assert server.queries == {("ttl2.example", "A"): 1, ("ttl2.example", "AAAA"): 1}
        clock.now += 1.9
        assert [i[4][0] for i in dns.resolve("TTL2.Example", 80)] == got[0]  # the same answer, from the cache
        assert server.asked("ttl2.example") == 1
        clock.now += 0.2  # past the TTL
        dns.resolve("ttl2.example", 80)
        assert server.asked("ttl2.example") == 2 and dns.lookups == 2 and dns.failures == dns.fallbacks == 0
        assert dns.resolve("both.example", 8080) == [
            (socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", ("127.0.9.3", 8080)),
            (socket.AF_INET6, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", ("::1", 8080, 0, 0))]


def test_a_long_ttl_is_cut_to_the_maximum_and_a_zero_ttl_raised_to_the_minimum() -> None:
    """(b) a TTL of 3600 is kept fetcher.dns.cache.seconds (3 here); (c) a TTL of 0 fetcher.dns.cache.min.seconds
    (the maximum wins when lower: 0 keeps nothing)."""
    clock = Clock()
    with DnsServer({"long.example": (["127.0.9.1"], 3600), "zero.example": (["127.0.9.2"], 0)}) as server:
        dns = DnsCache(3, 60, NoResolver(), clock, min_seconds=1.5, servers=server.servers())
        for name in ("long.example", "zero.example"):
            dns.resolve(name, 80)
        clock.now += 1.4
        for name in ("long.example", "zero.example"):
            dns.resolve(name, 80)
        assert (server.asked("long.example"), server.asked("zero.example")) == (1, 1)
        clock.now += 0.2  # past the minimum
        for name in ("long.example", "zero.example"):
            dns.resolve(name, 80)
        assert (server.asked("long.example"), server.asked("zero.example")) == (1, 2)
        clock.now += 1.5  # 3.1 s after the first answer: past the maximum
        dns.resolve("long.example", 80)
        assert server.asked("long.example") == 2
        off = DnsCache(0, 0, NoResolver(), clock, min_seconds=5, servers=server.servers())
        for _ in range(2):
            off.resolve("long.example", 80)
        assert server.asked("long.example") == 4


def test_nxdomain_is_a_dns_failure_kept_its_negative_ttl() -> None:
    """(d) NXDOMAIN is a failure (socket.gaierror, counted apart from the fallbacks), not asked again within the
    SOA's minimum (2 s), nor the AAAA records at all; without an SOA, or with a longer minimum, it is kept
    fetcher.dns.cache.negative.seconds. A name with neither A nor AAAA records fails the same way."""
    clock = Clock()
    with DnsServer({"v4less.example": (["::1"], 60), "empty.example": ([], 60)}, negative_ttl=2) as server:
        dns = DnsCache(300, 60, NoResolver(), clock, min_seconds=0, servers=server.servers())
        for _ in range(3):
            with pytest.raises(socket.gaierror, match="Name or service not known"):
                dns.resolve("nosuch.example", 80)
        assert server.queries == {("nosuch.example", "A"): 1} and dns.failures == 1 and dns.fallbacks == 0
        clock.now += 1.9
        with pytest.raises(socket.gaierror):
            dns.resolve("nosuch.example", 80)
        assert server.asked("nosuch.example") == 1
        clock.now += 0.2
        with pytest.raises(socket.gaierror):
            dns.resolve("nosuch.example", 80)
        assert server.asked("nosuch.example") == 2 and dns.failures == 2
        with pytest.raises(socket.gaierror, match="No address associated with hostname"):
            dns.resolve("empty.example", 80)
        assert dns.addresses("v4less.example", 80) == ["::1"]  # no A record, an AAAA one
        short = DnsCache(300, 1, NoResolver(), clock, min_seconds=0, servers=server.servers())
        with pytest.raises(socket.gaierror):
            short.resolve("nosuch.example", 80)
        clock.now += 1.1  # the SOA said 2 s, fetcher.dns.cache.negative.seconds 1
        with pytest.raises(socket.gaierror):
            short.resolve("nosuch.example", 80)
        assert server.asked("nosuch.example") == 4
    with DnsServer({}, negative_ttl=None) as server:
        dns = DnsCache(300, 60, NoResolver(), clock, min_seconds=0, servers=server.servers())
        with pytest.raises(socket.gaierror):
            dns.resolve("nosuch.example", 80)
        clock.now += 59
        with pytest.raises(socket.gaierror):
            dns.resolve("nosuch.example", 80)
        assert server.asked("nosuch.example") == 1
        clock.now += 2
        with pytest.raises(socket.gaierror):
            dns.resolve("nosuch.example", 80)
        assert server.asked("nosuch.example") == 2


@pytest.mark.parametrize("dead", ["silent", "closed"])
def test_a_dead_server_leaves_names_to_getaddrinfo(dead: str) -> None:
    """(e) a server that never answers (or a port nobody listens on): the name goes to getaddrinfo after
    fetcher.dns.timeout, kept fetcher.dns.cache.seconds; for 30 s after, names go to getaddrinfo at once; then the
    servers are asked again."""
    clock = Clock()
    resolver = Resolver({"svc.example": ["127.0.9.5"], "other.example": ["127.0.9.6"]})
    with DnsServer({}, silent=True) as server:
        address = server.address
        if dead == "closed":
            server.__exit__()
        dns = DnsCache(300, 60, resolver, clock, min_seconds=0, servers=DnsServers([address], 0.5))
        started = time.monotonic()
        assert dns.addresses("svc.example", 80) == ["127.0.9.5"]
        assert time.monotonic() - started < 2.5
        assert dns.fallbacks == 1 and dns.failures == 0 and resolver.calls["svc.example"] == 1
        asked = server.total()
        started = time.monotonic()
        assert dns.addresses("other.example", 80) == ["127.0.9.6"]
        assert time.monotonic() - started < 0.4 and server.total() == asked  # not asked: left alone 30 s
        with pytest.raises(socket.gaierror):
            dns.resolve("nosuch.example", 80)  # getaddrinfo's failure, kept too
        clock.now += 299
        dns.resolve("svc.example", 80)
        assert resolver.calls["svc.example"] == 1 and dns.fallbacks == 1
        clock.now += 2  # past fetcher.dns.cache.seconds and the 30 s
        dns.resolve("svc.example", 80)
        assert resolver.calls["svc.example"] == 2 and dns.fallbacks == 2
        if dead == "silent":
            assert server.asked("svc.example") >= 2


def test_names_the_system_resolves_never_reach_the_dns_servers(tmp_path: Path) -> None:
    """(f) the names of a hosts file, IP literals, names without a dot, .localhost and .local go to getaddrinfo;
    with the real /etc/hosts and getaddrinfo, through the configuration, the server is asked nothing either."""
    hosts = tmp_path / "hosts"
    hosts.write_text("127.0.9.7 hosted.example Alias.Example.  # a comment\n# 127.0.9.8 commented.example\n")
    assert hosts_names(hosts) == {"hosted.example", "alias.example"} and hosts_names(tmp_path / "none") == set()
    system = ["hosted.example", "alias.example.", "127.0.9.9", "2130706433", "127.1", "::1", "intranet",
              "printer.local", "app.localhost"]
    resolver = Resolver({name.strip("[]").lower(): ["127.0.9.7"] for name in system})
    with DnsServer({"commented.example": (["127.0.9.8"], 60)}) as server:
        dns = DnsCache(300, 60, resolver, Clock(), servers=server.servers(), hosts=hosts_names(hosts))
        for name in system:
            assert dns.addresses(name, 80) == ["127.0.9.7"], name
        assert server.total() == 0 and sum(resolver.calls.values()) == len(system)
        assert dns.addresses("commented.example", 80) == ["127.0.9.8"] and server.asked("commented.example") == 1
        asked = server.total()
        real = DnsCache.from_conf(make_conf(tmp_path, **{"fetcher.dns.servers": server.conf}))
        assert real.servers is not None
        for name in sorted(hosts_names()) + ["localhost", "127.0.0.1", "[::1]"]:
            with contextlib.suppress(socket.gaierror):
                real.resolve(name, 80)
        assert real.addresses("localhost", 80) and server.total() == asked and real.fallbacks == 0


def test_inject_resolves_the_seeds_as_the_fetcher_does() -> None:
    """guarded_seeds with the fetcher's DNS cache: a seed name only the DNS servers know, resolving to this
    machine's network, is one the guard lets through; a public one and an NXDOMAIN one are not."""
    with DnsServer({"intra.example": (["127.0.9.3"], 60), "public.example": (["8.8.8.8"], 60)}) as server:
        dns = DnsCache(300, 60, NoResolver(), servers=server.servers())
        origins = {("intra.example", 80), ("public.example", 443), ("nosuch.example", 80), ("127.0.1.1", 8080)}
        assert guarded_seeds(origins, 10, dns) == (["127.0.1.1:8080", "intra.example:80"], 0)
        assert server.asked("intra.example") == server.asked("nosuch.example") == 1


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
    policy = AddressPolicy.from_conf(make_conf(tmp_path, **{
        "fetcher.dns.cache.seconds": 30, "fetcher.dns.cache.negative.seconds": 5, "fetcher.dns.cache.min.seconds": 2,
        "fetcher.dns.servers": "127.0.53.1, 127.0.53.2:5353,[::1]:54,::1", "fetcher.dns.timeout": 1.5}))
    assert (policy.dns.seconds, policy.dns.negative_seconds, policy.dns.min_seconds) == (30, 5, 2)
    assert policy.dns.servers is not None and policy.dns.servers.timeout == 1.5
    assert parse_servers("127.0.53.1, 127.0.53.2:5353,[::1]:54,::1,[::2]") == [
        ("127.0.53.1", 53), ("127.0.53.2", 5353), ("::1", 54), ("::1", 53), ("::2", 53)]
    for key, value, message in (
            ("fetcher.dns.cache.negative.seconds", -1, r"fetcher\.dns\.cache\.negative\.seconds=-1: give the seconds"),
            ("fetcher.dns.cache.min.seconds", -1, r"fetcher\.dns\.cache\.min\.seconds=-1: give the seconds"),
            ("fetcher.dns.timeout", 0, r"fetcher\.dns\.timeout=0: give the seconds a DNS lookup may take"),
            ("fetcher.dns.servers", "dns.example", r"fetcher\.dns\.servers: 'dns\.example' is not a DNS server's"),
            ("fetcher.dns.servers", "127.0.0.1:0", r"fetcher\.dns\.servers: '127\.0\.0\.1:0' is not"),
            ("fetcher.dns.servers", "[::1]5", r"fetcher\.dns\.servers: '\[::1\]5' is not")):
        with pytest.raises(ConfigError, match=f"^{message}") as e:
            AddressPolicy.from_conf(make_conf(tmp_path, **{key: value}))
        assert "\n" not in str(e.value)


def counter(stderr: str, name: str) -> int:
    """A counter of a job's summary line (0 when absent)."""
    found = re.findall(rf"\b{name}=(\d+)", stderr)
    return int(found[-1]) if found else 0


@pytest.mark.slow
def test_a_fetch_resolves_each_host_once_and_counts_dns_failures(tmp_path: Path) -> None:
    """Two fetch tasks (the processes runner on sqlite): every host is looked up once in the task that fetches it,
    although robots.txt and its pages take several connections (robots.txt's session and each fetcher thread keep
    connections of their own); the two URLs of a name that does not resolve (NXDOMAIN from the test's DNS server)
    are dns_failures (not host_unreachable), recorded as such, and the name is looked up once (the guard's check
    and the connection)."""
    with TestWeb(hosts=3, pages_per_host=4, traps=False) as web, DnsServer({}, negative_ttl=60) as server:
        d = defines(tmp_path, "sqlite", **{"fetcher.threads.per.queue": 2, "fetcher.server.min.delay": 0,
                                           "fetcher.dns.servers": server.conf})
        bad = [f"http://nosuch.invalid:{web.port}/a", f"http://nosuch.invalid:{web.port}/b"]
        good = [web.page_url(h, i) for h in range(3) for i in range(4)]
        assert nutch2("inject", seed_file(tmp_path, *good, *bad), *d).returncode == 0
        batch = nutch2("generate", *d).stdout.strip()
        fetch = nutch2("fetch", batch, "-numTasks", 2, "-threads", 4, *d)
        assert fetch.returncode == 0, fetch.stderr
        assert len(web.requests()) == 3 + len(good)  # robots.txt and every page of the three hosts
    assert counter(fetch.stderr, "dns_lookups") == 4, fetch.stderr  # three hosts and the bad name, once each
    assert counter(fetch.stderr, "dns_failures") == 2 and counter(fetch.stderr, "host_unreachable") == 0
    assert server.asked("nosuch.invalid") == 2  # NXDOMAIN for inject's check of the seeds, then once in the fetch
    conf = conf_for(tmp_path, "sqlite")
    for url in bad:
        page = row(conf, "", url)
        assert page is not None and page.status == CrawlStatus.RETRY, url
        assert is_dns_failure(page.protocol_status.args[0]), page.protocol_status


class OnePage(http.server.BaseHTTPRequestHandler):
    """A small page at every path and a robots.txt allowing all, over HTTP/1.0: one connection per request, so
    each request resolves its host through the fetch task's DNS cache."""

    protocol_version = "HTTP/1.0"

    def do_GET(self) -> None:
        robots = self.path == "/robots.txt"
        body = b"User-agent: *\nAllow: /\n" if robots else b"<html><head><title>p</title></head><body>p</body></html>"
        self.send_response(200)
        self.send_header("Content-Type", "text/plain" if robots else "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


class PageServer(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def server_bind(self) -> None:
        """Bind without HTTPServer's reverse DNS lookup (getfqdn): no DNS server but the test's is asked."""
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = str(self.server_address[0]), int(self.server_address[1])


@pytest.mark.slow
def test_a_fetch_resolves_a_name_again_when_its_ttl_ran_out(tmp_path: Path) -> None:
    """One fetch task, its names answered by the test's DNS server: ttl.example (TTL 1 s, fetched over 4 s, a
    connection per request) is asked again within the task as its answer expires, long.example (TTL 3600) once;
    every page is fetched and dns_lookups counts the questions."""
    pages = PageServer(("127.0.9.1", 0), OnePage)
    threading.Thread(target=pages.serve_forever, daemon=True).start()
    port = pages.server_address[1]
    try:
        with DnsServer({"ttl.example": (["127.0.9.1"], 1), "long.example": (["127.0.9.1"], 3600)}) as server:
            d = defines(tmp_path, "sqlite", **{"fetcher.server.delay": 1.0, "fetcher.threads.per.queue": 1,
                                               "fetcher.dns.servers": server.conf, "fetcher.dns.cache.min.seconds": 0})
            urls = [f"http://{host}.example:{port}/{i}" for host in ("ttl", "long") for i in range(4)]
            assert nutch2("inject", seed_file(tmp_path, *urls), *d).returncode == 0  # the seeds' 127.0.9.1: let in
            batch = nutch2("generate", *d).stdout.strip()
            before = (server.asked("ttl.example"), server.asked("long.example"))
            fetch = nutch2("fetch", batch, "-numTasks", 1, "-threads", 4, *d)
            assert fetch.returncode == 0, fetch.stderr
            ttl, long = server.asked("ttl.example") - before[0], server.asked("long.example") - before[1]
    finally:
        pages.shutdown()
        pages.server_close()
    assert ttl >= 3 and long == 1, (ttl, long)  # robots.txt and 4 pages, 1 s apart: the 1 s TTL ran out 3 times
    assert counter(fetch.stderr, "dns_lookups") == ttl + long and counter(fetch.stderr, "dns_failures") == 0
    conf = conf_for(tmp_path, "sqlite")
    for url in urls:
        page = row(conf, "", url)
        assert page is not None and page.status == CrawlStatus.FETCHED, url


def test_names_the_system_resolves_do_not_import_dnspython() -> None:
    """dnspython weighs ~11 MB per process: a task whose hosts are IP literals or local names never imports it."""
    code = ("import sys; from nutch2.config import Configuration; from nutch2.fetch.dns import DnsCache; "
            "c = DnsCache.from_conf(Configuration()); c.resolve('127.0.0.1', 80); c.resolve('localhost', 80); "
            "print(sorted(m for m in sys.modules if m == 'dns' or m.startswith('dns.')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.strip() == "[]", out.stdout + out.stderr
