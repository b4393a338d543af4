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
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import dns.exception
import dns.message
import dns.name
import dns.nameserver
import dns.rdatatype
import dns.resolver

from nutch2.config import Configuration
from nutch2.errors import ConfigError

__all__ = ["AddrInfo", "DNS_FAILURE", "DnsCache", "DnsServers", "hosts_names", "is_dns_failure", "parse_servers"]

log = logging.getLogger(__name__)

# one answer of socket.getaddrinfo: (family, type, proto, canonname, sockaddr)
AddrInfo = tuple[Any, Any, int, str, Any]
# the protocol status message of a fetch whose host name did not resolve (protocol-http's reason for it): the
# fetcher counts these URLs as dns_failures, apart from connection failures
DNS_FAILURE = "unknown host"
HOSTS_FILE = Path("/etc/hosts")
_SWEEP_EVERY = 4096  # answers added between two sweeps of the expired ones
_DOWN_SECONDS = 30.0  # after a timeout or an unreachable server: the seconds every name goes to socket.getaddrinfo
_SYSTEM_SUFFIXES = (".localhost", ".local")  # RFC 6761's loopback names and mDNS: the system resolves them
_NO_ADDRESS = getattr(socket, "EAI_NODATA", socket.EAI_NONAME)


def is_dns_failure(reason: str) -> bool:
    """Is a protocol status message (or robots.txt's unreachable reason) a DNS failure?"""
    return reason.startswith(DNS_FAILURE)


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


class _Missing(Exception):
    """The servers answered: the name has no address (NXDOMAIN, or no A nor AAAA record)."""

    def __init__(self, errno: int, message: str, ttl: float | None) -> None:
        super().__init__(message)
        self.failure = (errno, message)
        self.ttl = ttl  # the negative TTL of the answer's SOA record; None without one


class _Unanswered(Exception):
    """The servers gave no answer; `down`: none could be reached in time (timeout, refused)."""

    def __init__(self, message: str, down: bool) -> None:
        super().__init__(message)
        self.down = down


class DnsServers:
    """The DNS servers a cache asks (dnspython's stub resolver, without a cache of its own): a name's A and AAAA
    records with their TTL, both within `timeout` seconds. Thread-safe."""

    def __init__(self, servers: Sequence[tuple[str, int]] = (), timeout: float = 3.0) -> None:
        """`servers`: (ip, port) pairs; none: those of /etc/resolv.conf (dns.resolver.NoResolverConfiguration when
        it lists none or cannot be read)."""
        if servers:
            resolver = dns.resolver.Resolver(configure=False)
            resolver.nameservers = [dns.nameserver.Do53Nameserver(ip, port) for ip, port in servers]
        else:
            resolver = dns.resolver.Resolver()
        resolver.cache = None
        resolver.lifetime = timeout
        resolver.timeout = min(resolver.timeout, timeout)  # one server's share; the lifetime bounds the lookup
        self._resolver = resolver
        self.timeout = timeout

    def __repr__(self) -> str:
        return f"DnsServers({[str(s) for s in self._resolver.nameservers]}, timeout={self.timeout:g})"

    def ask(self, name: dns.name.Name) -> tuple[list[tuple[socket.AddressFamily, str]], float]:
        """(family, address) of each A then AAAA record of an absolute name, and the answer's TTL (the lowest of
        its records and CNAMEs). Raises _Missing (NXDOMAIN, no address) and _Unanswered (no answer in time)."""
        deadline = time.monotonic() + self.timeout
        found: list[tuple[socket.AddressFamily, str]] = []
        ttls: list[float] = []
        negative: list[float | None] = []
        for rdtype, family in ((dns.rdatatype.A, socket.AF_INET), (dns.rdatatype.AAAA, socket.AF_INET6)):
            left = deadline - time.monotonic()
            try:
                if left <= 0:
                    raise dns.resolver.LifetimeTimeout(timeout=self.timeout, errors=[])
                answer = self._resolver.resolve(name, rdtype, raise_on_no_answer=False, lifetime=left, search=False)
            except dns.resolver.NXDOMAIN as e:
                if found:  # A records, yet NXDOMAIN for AAAA: a server's error; the addresses stand
                    break
                responses = list(e.responses().values())
                raise _Missing(socket.EAI_NONAME, "Name or service not known",
                               _negative_ttl(responses[0] if responses else None)) from None
            except dns.exception.Timeout as e:
                if found:
                    break
                raise _Unanswered(str(e), down=True) from None
            except dns.resolver.NoNameservers as e:
                if found:
                    break
                errors = e.kwargs.get("errors") or []
                down = all(len(error) > 3 and isinstance(error[3], OSError) for error in errors)  # refused: down
                raise _Unanswered(str(e), down=down) from None
            except (dns.exception.DNSException, OSError) as e:
                if found:
                    break
                raise _Unanswered(f"{type(e).__name__}: {e}", down=isinstance(e, OSError)) from None
            if answer.rrset:
                found += [(family, rdata.address) for rdata in answer.rrset]
                ttls.append(answer.chaining_result.minimum_ttl)
            else:
                negative.append(_negative_ttl(answer.response))
        if not found:
            known = [ttl for ttl in negative if ttl is not None]
            raise _Missing(_NO_ADDRESS, "No address associated with hostname", min(known) if known else None)
        return list(dict.fromkeys(found)), float(min(ttls))


def _negative_ttl(response: dns.message.Message | None) -> float | None:
    """RFC 2308's negative TTL of an answer: its SOA record's minimum, at most the record's TTL; None without one."""
    for rrset in response.authority if response is not None else ():
        if rrset.rdtype == dns.rdatatype.SOA and len(rrset):
            return float(min(rrset.ttl, rrset[0].minimum))
    return None


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
                 servers: DnsServers | None = None, hosts: Iterable[str] = ()) -> None:
        self.seconds = seconds
        self.negative_seconds = negative_seconds
        self.min_seconds = min_seconds
        self.servers = servers
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
        try:
            servers: DnsServers | None = DnsServers(addresses, timeout)
        except dns.exception.DNSException as e:  # NoResolverConfiguration: no nameserver in /etc/resolv.conf
            log.info("dns: no DNS server to ask (%s): names are resolved by socket.getaddrinfo", e)
            servers = None
        return cls(values[0], values[1], min_seconds=values[2], servers=servers,
                   hosts=hosts_names(hosts_file) if servers is not None else ())

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
        name = None if down else self._dns_name(host)
        if name is not None and self.servers is not None:
            try:
                found, ttl = self.servers.ask(name)
            except _Missing as e:
                return self._failed(host, e.failure, _clamp(e.ttl, self.min_seconds, self.negative_seconds))
            except _Unanswered as e:
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

    def _dns_name(self, host: str) -> dns.name.Name | None:
        """The name to ask the servers for, None for a name the system resolves (see the module's docstring)."""
        if self.servers is None:
            return None
        bare = host.rstrip(".")
        if "." not in bare or ":" in bare or bare.endswith(_SYSTEM_SUFFIXES) or bare in self._hosts:
            return None
        try:
            socket.inet_aton(bare)
            return None  # an IPv4 literal, in any spelling getaddrinfo reads
        except (OSError, ValueError):
            pass
        try:
            return dns.name.from_text(bare, origin=dns.name.root)
        except (dns.exception.DNSException, UnicodeError, ValueError):
            return None  # a name DNS cannot carry: getaddrinfo says what it makes of it

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
