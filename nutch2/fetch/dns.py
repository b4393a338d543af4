"""A DNS cache for one fetch task, shared by its threads: each host and port is resolved once per the answer's TTL
(within bounds), and a name that does not resolve is asked again only after its negative TTL (within bounds).

Who answers a name:
- An IP literal (any spelling the system reads: ``2130706433`` and ``127.1`` too), a name without a dot
  (``localhost``, a name of the resolver's search list), a name under ``.localhost`` or ``.local`` (mDNS), and a name
  /etc/hosts lists: ``socket.getaddrinfo``, as for every other program on the machine (/etc/hosts, nsswitch). It
  gives no TTL: the answer is kept fetcher.dns.cache.seconds, the way Java's InetAddress cache
  (networkaddress.cache.ttl, which Nutch relies on) keeps it, and a failure fetcher.dns.cache.negative.seconds.
- Any other name: the DNS servers of fetcher.dns.servers, else those of /etc/resolv.conf, asked with dnspython for
  its A and then its AAAA records (the name as given, absolute: no search list). The answer (IPv4 addresses first)
  is kept its TTL, the lowest of its CNAME chain, clamped between fetcher.dns.cache.min.seconds and
  fetcher.dns.cache.seconds. NXDOMAIN, or neither A nor AAAA records, is a DNS failure kept the negative TTL of the
  answer's SOA record (RFC 2308: its minimum, at most its own TTL) clamped between the same minimum and
  fetcher.dns.cache.negative.seconds, which is also the time kept without an SOA record.
- When no server is listed at all, ``socket.getaddrinfo`` answers every name as for those above; when the servers
  give no answer within fetcher.dns.timeout (unreachable, timed out, SERVFAIL, REFUSED), it answers that name
  (counted ``fallbacks``), and after a timeout or an unreachable server every name for the next 30 s: what resolves
  today still does.

The answers are ``socket.getaddrinfo``'s tuples whoever gave them. The address guard (nutch2/fetch/addresses.py)
checks and connects to the answers of this cache: the address checked is the one connected to, whether it came from
a resolver now or from the cache. Another module that needs a host's addresses in the same task (the per-IP fetch
queues) asks the same cache: ``resolve(host, port)``.
"""

from __future__ import annotations

import ipaddress
import logging
import math
import socket
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import Future
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nutch2.config import Configuration
from nutch2.errors import ConfigError
from nutch2.status import DNS_FAILURE, is_dns_failure

if TYPE_CHECKING:  # dnspython (~11 MB) is imported only by a task that asks a DNS server
    from nutch2.fetch.dnsservers import DnsServers

__all__ = ["AddrInfo", "DNS_FAILURE", "DnsCache", "hosts_names", "is_dns_failure", "parse_servers"]

log = logging.getLogger(__name__)

# one answer of socket.getaddrinfo: (family, type, proto, canonname, sockaddr)
AddrInfo = tuple[Any, Any, int, str, Any]
HOSTS_FILE = Path("/etc/hosts")
_SWEEP_EVERY = 4096  # answers added between two sweeps of the expired ones
_DOWN_SECONDS = 30.0  # after a timeout or an unreachable server: the seconds every name goes to socket.getaddrinfo
_SYSTEM_SUFFIXES = (".localhost", ".local")  # RFC 6761's loopback names and mDNS: the system resolves them


def parse_servers(value: str, key: str = "fetcher.dns.servers") -> list[tuple[str, int]]:
    """The (ip, port) pairs of "ip[:port]" entries separated by commas (IPv6: "[ip]:port" or a bare ip; port 53
    when none is given); a one-line ConfigError names an entry that is not one."""
    servers = []
    for entry in (e.strip() for e in value.split(",")):
        if not entry:
            continue
        host, port = entry, "53"
        if entry.startswith("["):
            host, _, rest = entry[1:].partition("]")
            if rest:
                port = rest.removeprefix(":") if rest.startswith(":") else "x"
        elif entry.count(":") == 1:
            host, port = entry.split(":")
        try:
            ip = ipaddress.ip_address(host)
            number = int(port)
            if not 0 < number < 65536:
                raise ValueError(port)
        except ValueError:
            raise ConfigError(f"{key}: {entry!r} is not a DNS server's ip[:port]; give addresses separated by "
                              f"commas, e.g. -D {key}=127.0.0.53,[::1]:5353 (empty: /etc/resolv.conf's)") from None
        servers.append((str(ip), number))
    return servers


def hosts_names(path: Path | str = HOSTS_FILE) -> frozenset[str]:
    """The host names a hosts file lists (lower-case, without a final dot); none when it cannot be read."""
    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return frozenset()
    names: set[str] = set()
    for line in text.splitlines():
        fields = line.split("#", 1)[0].split()
        names.update(name.lower().rstrip(".") for name in fields[1:])
    return frozenset(names)


def _clamp(ttl: float | None, low: float, high: float) -> float:
    """A TTL within [low, high] (None: high); high wins when low is above it (0: not kept)."""
    return high if ttl is None else min(max(ttl, low), high)


class DnsCache:
    """Resolved (host, port) -> getaddrinfo answers (SOCK_STREAM). Without `servers`, every name is asked of
    `resolver` (socket.getaddrinfo by default), its answers kept `seconds` and its failures `negative_seconds` (0
    turns either off). With `servers`, the names the system resolves best (IP literals, names without a dot,
    .localhost, .local, the names in `hosts`) still are; the others are asked of the servers, kept their TTLs
    within `min_seconds` and `seconds` (failures: `negative_seconds`), and given to `resolver` when the servers do
    not answer. Thread-safe; threads asking for the same name at once wait for one lookup. ``lookups`` counts the
    lookups, ``failures`` those that failed, ``fallbacks`` those the servers did not answer."""

    def __init__(self, seconds: float = 300.0, negative_seconds: float = 60.0,
                 resolver: Callable[..., list[AddrInfo]] | None = None,
                 clock: Callable[[], float] = time.monotonic, *, min_seconds: float = 0.0,
                 servers: DnsServers | Callable[[], DnsServers | None] | None = None,
                 hosts: Iterable[str] = ()) -> None:
        """`servers`: the servers, or what makes them when a name first needs them (None: no servers after all)."""
        self.seconds = seconds
        self.negative_seconds = negative_seconds
        self.min_seconds = min_seconds
        self._servers = servers
        self._hosts = frozenset(h.lower().rstrip(".") for h in hosts)
        self._resolver = resolver  # None: socket.getaddrinfo, looked up at each call
        self._clock = clock
        self._lock = threading.Lock()
        self._answers: dict[tuple[str, int], tuple[float, list[AddrInfo] | tuple[int, str]]] = {}
        self._pending: dict[tuple[str, int], Future[None]] = {}
        self._added = 0
        self._down_until = -math.inf  # servers left alone until then (a timeout, an unreachable server)
        self.lookups = 0
        self.failures = 0
        self.fallbacks = 0

    @classmethod
    def from_conf(cls, conf: Configuration, hosts_file: Path | str = HOSTS_FILE) -> DnsCache:
        """fetcher.dns.cache.seconds, .negative.seconds and .min.seconds (each >= 0), fetcher.dns.timeout (> 0) and
        fetcher.dns.servers (empty: /etc/resolv.conf's; when it lists none, socket.getaddrinfo only)."""
        values = []
        for key, what, example in (
                ("fetcher.dns.cache.seconds", "the seconds a DNS answer is kept at most (0 = not kept)", 300),
                ("fetcher.dns.cache.negative.seconds", "the seconds a DNS failure is kept at most (0 = not kept)", 60),
                ("fetcher.dns.cache.min.seconds", "the seconds a DNS answer is kept at least, whatever its TTL", 5)):
            value = conf.get_float(key)
            if not value >= 0:
                raise ConfigError(f"{key}={value:g}: give {what}, e.g. -D {key}={example}")
            values.append(value)
        timeout = conf.get_float("fetcher.dns.timeout")
        if not 0 < timeout < math.inf:
            raise ConfigError(f"fetcher.dns.timeout={timeout:g}: give the seconds a DNS lookup may take (> 0), "
                              "e.g. -D fetcher.dns.timeout=3")
        addresses = parse_servers(conf.get_str("fetcher.dns.servers"))
        return cls(values[0], values[1], min_seconds=values[2], servers=lambda: _make_servers(addresses, timeout),
                   hosts=hosts_names(hosts_file))

    @property
    def servers(self) -> DnsServers | None:
        """The DNS servers asked, made (and dnspython imported) when a name first needs them."""
        with self._lock:
            if callable(self._servers):
                self._servers = self._servers()
            return self._servers  # type: ignore[return-value]

    def resolve(self, host: str, port: int) -> list[AddrInfo]:
        """The addresses of host:port as socket.getaddrinfo gives them (cached); raises socket.gaierror when the
        name does not resolve (cached too)."""
        key = (host.strip("[]").lower(), port)
        while True:
            with self._lock:
                now = self._clock()
                found = self._answers.get(key)
                if found is not None and found[0] > now:
                    return _answer(found[1])
                future = self._pending.get(key)
                if future is None:
                    future = self._pending[key] = Future()
                    break
            future.result()  # another thread is asking: take its answer
        try:
            answer, keep = self._lookup(key)
            with self._lock:
                if keep > 0:
                    self._answers[key] = (self._clock() + keep, answer)
                    self._added += 1
                    if self._added % _SWEEP_EVERY == 0:
                        self._sweep()
                else:
                    self._answers.pop(key, None)
        finally:
            with self._lock:
                del self._pending[key]
            future.set_result(None)
        return _answer(answer)

    def addresses(self, host: str, port: int) -> list[str]:
        """The IP addresses of host:port, in the resolver's order, without repeats (raises socket.gaierror)."""
        return list(dict.fromkeys(info[4][0].split("%", 1)[0] for info in self.resolve(host, port)))

    def _lookup(self, key: tuple[str, int]) -> tuple[list[AddrInfo] | tuple[int, str], float]:
        """Ask the servers or the resolver: (the answer or the failure as (errno, message), seconds to keep it)."""
        host, port = key
        with self._lock:
            self.lookups += 1
            down = self._clock() < self._down_until
        servers = None if down else self._servers_for(host)
        name = servers.name(host.rstrip(".")) if servers is not None else None
        if servers is not None and name is not None:
            from nutch2.fetch.dnsservers import Missing, Unanswered

            try:
                found, ttl = servers.ask(name)
            except Missing as e:
                return self._failed(host, e.failure, _clamp(e.ttl, self.min_seconds, self.negative_seconds))
            except Unanswered as e:
                with self._lock:
                    self.fallbacks += 1
                    if e.down:
                        self._down_until = self._clock() + _DOWN_SECONDS
                log.log(logging.INFO if e.down else logging.DEBUG,
                        "dns: no answer from the DNS servers for %s (%s): asking socket.getaddrinfo%s", host, e,
                        f"; the servers are left alone {_DOWN_SECONDS:g} s" if e.down else "")
            else:
                infos: list[AddrInfo] = [
                    (family, socket.SOCK_STREAM, socket.IPPROTO_TCP, "",
                     (ip, port) if family == socket.AF_INET else (ip, port, 0, 0)) for family, ip in found]
                return infos, _clamp(ttl, self.min_seconds, self.seconds)
        resolver = self._resolver or socket.getaddrinfo
        try:
            return list(resolver(host, port, type=socket.SOCK_STREAM)), self.seconds
        except socket.gaierror as e:
            return self._failed(host, (e.errno or socket.EAI_NONAME, e.strerror or str(e)), self.negative_seconds)
        except (UnicodeError, ValueError) as e:  # a name IDNA cannot encode
            return self._failed(host, (socket.EAI_NONAME, f"invalid host name: {e}"), self.negative_seconds)

    def _failed(self, host: str, failure: tuple[int, str], keep: float) -> tuple[tuple[int, str], float]:
        """Count a failed lookup: (the failure, seconds to keep it)."""
        with self._lock:
            self.failures += 1
        log.debug("dns: %s does not resolve: %s", host, failure[1])
        return failure, keep

    def _servers_for(self, host: str) -> DnsServers | None:
        """The servers to ask for `host`, None for a name the system resolves (see the module's docstring)."""
        bare = host.rstrip(".")
        if "." not in bare or ":" in bare or bare.endswith(_SYSTEM_SUFFIXES) or bare in self._hosts:
            return None
        try:
            socket.inet_aton(bare)
            return None  # an IPv4 literal, in any spelling getaddrinfo reads
        except (OSError, ValueError):
            pass
        return self.servers

    def _sweep(self) -> None:
        """Drop expired answers (under the lock)."""
        now = self._clock()
        for key in [k for k, (until, _) in self._answers.items() if until <= now]:
            del self._answers[key]


def _answer(value: list[AddrInfo] | tuple[int, str]) -> list[AddrInfo]:
    """A cached answer: a copy of the list, or the cached failure raised as a new socket.gaierror."""
    if isinstance(value, tuple):
        raise socket.gaierror(*value)
    return list(value)


def _make_servers(addresses: list[tuple[str, int]], timeout: float) -> DnsServers | None:
    """The servers of fetcher.dns.servers, else /etc/resolv.conf's; None when there are none to ask."""
    import dns.exception

    from nutch2.fetch.dnsservers import DnsServers

    try:
        return DnsServers(addresses, timeout)
    except dns.exception.DNSException as e:  # NoResolverConfiguration: no nameserver in /etc/resolv.conf
        log.info("dns: no DNS server to ask (%s): names are resolved by socket.getaddrinfo", e)
        return None
