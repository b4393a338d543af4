"""The address guard: no request of the crawler reaches a service on its own machine or network unless the user
chose the host.

A page can link anywhere, `http://127.0.0.1:8983/solr/admin/cores?action=UNLOAD&...` included; fetched, that
link is a request from the crawler's machine to its own services. So every connection the crawler opens (pages,
robots.txt, redirects, sitemaps, the resources of a rendered page) is checked on the address it connects to,
after resolution, at connect time — no DNS rebinding between the check and the connect: the addresses checked
are the ones connected to. Refused are loopback, private, link-local, multicast, unspecified, reserved and other
not globally routable addresses, and cloud metadata addresses, in IPv4 (any spelling: the resolver reads
`2130706433` as 127.0.0.1) and IPv6 (v4-mapped, 6to4, Teredo and NAT64 addresses are judged by the IPv4 address
they carry).

Allowed anyway: the origins (host and port) of the injected seeds — the user chose them; inject records those
that resolve to guarded addresses in the crawl (SEED_ORIGINS) — and what `fetcher.address.allow` lists: host
names (any port), `host:port`, and networks (`10.1.0.0/16`, `::1/128`). `fetcher.address.guard=false` turns the
guard off. A refused URL is an ACCESS_DENIED fetch (crawl status GONE), counted `denied_address`; a redirect
from an allowed host to a refused address is not followed: the page is recorded as the redirect and its target,
an outlink like any other, is refused when its turn comes. Through an HTTP proxy the crawler does not connect to
the target itself: the target's name is checked as it resolves here, before the request is sent.
"""

from __future__ import annotations

import ipaddress
import json
import socket
import threading
import time
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from nutch2.config import Configuration
from nutch2.errors import ConfigError
from nutch2.fetch.dns import DnsCache
from nutch2.stores.base import DataStore

IP = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network
SEED_ORIGINS = "address/seeds"  # crawl state: JSON list of the seed origins ("host:port") the guard lets through
DENIED = "denied address"  # the first words of a refusal (ProtocolStatus args)
METADATA = {ipaddress.ip_address(a) for a in ("169.254.169.254", "169.254.170.2", "100.100.100.200",
                                              "fd00:ec2::254")}
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_DEFAULT_PORTS = {"http": 80, "https": 443}


class AddressDenied(Exception):
    """Every address of a host is one the guard refuses; the message says which and how to allow it. Not an
    OSError: urllib3 passes it through as it is."""


def _embedded_v4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address carries (v4-mapped, 6to4, Teredo client, NAT64), if any."""
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip.sixtofour is not None:
        return ip.sixtofour
    if ip.teredo is not None:
        return ip.teredo[1]
    if ip in _NAT64:
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return None


def why_denied(ip: IP) -> str | None:
    """What kind of address the guard refuses `ip` as (loopback, private, ...), or None for a public one."""
    if isinstance(ip, ipaddress.IPv6Address) and (v4 := _embedded_v4(ip)) is not None:
        reason = why_denied(v4)
        return f"{reason}, {v4} inside" if reason else None
    if ip in METADATA:
        return "a cloud metadata address"
    for kind, test in (("loopback", ip.is_loopback), ("unspecified", ip.is_unspecified),
                       ("link-local", ip.is_link_local), ("multicast", ip.is_multicast),
                       ("private", ip.is_private), ("reserved", ip.is_reserved)):
        if test:
            return kind
    return None if ip.is_global else "not globally routable"


def origin_of(url: str) -> tuple[str, int] | None:
    """(host, port) of an http(s) URL, the host lower-cased without brackets; None when it names none."""
    try:
        parts = urlsplit(url)
        host, port = parts.hostname, parts.port or _DEFAULT_PORTS.get(parts.scheme.lower())
    except ValueError:
        return None
    return (host.rstrip(".").lower(), port) if host and port else None


@dataclass
class AddressPolicy:
    """What the guard lets through: everything when not `enabled`; else public addresses, and these names (any
    port), origins ("host:port") and networks. Built per task from the configuration and the crawl's seeds; its
    DNS cache (nutch2/fetch/dns.py) is the task's: what it checks and connects to are the same answers."""

    enabled: bool = True
    names: frozenset[str] = frozenset()
    origins: frozenset[str] = frozenset()
    networks: tuple[Network, ...] = ()
    dns: DnsCache = field(default_factory=DnsCache, repr=False, compare=False)
    _verdicts: dict[tuple[str, int], str | None] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_conf(cls, conf: Configuration, seeds: Iterable[str] = ()) -> AddressPolicy:
        """fetcher.address.guard and fetcher.address.allow, with the seed origins (SEED_ORIGINS) let through."""
        names, origins, networks = set(), set(seeds), []
        for entry in (e.strip().lower() for e in conf.get_str("fetcher.address.allow").split(",")):
            if not entry:
                continue
            if "/" in entry:
                try:
                    networks.append(ipaddress.ip_network(entry, strict=False))
                except ValueError:
                    raise ConfigError(f"fetcher.address.allow: {entry!r} is not a network; give hosts, host:port "
                                      "or networks such as 10.1.0.0/16, separated by commas") from None
            elif entry.count(":") == 1 and entry.rsplit(":", 1)[1].isdigit():
                origins.add(entry)
            elif entry.startswith("[") and "]:" in entry:  # [::1]:8080
                host, _, port = entry[1:].partition("]:")
                origins.add(f"{host}:{port}")
            else:
                names.add(entry.strip("[]"))
        return cls(conf.get_bool("fetcher.address.guard"), frozenset(names), frozenset(origins), tuple(networks),
                   DnsCache.from_conf(conf))

    # ---------------------------------------------------------------- one address
    def refusal(self, host: str, port: int, ip: IP) -> str | None:
        """Why a connection to `ip` for host:port is refused (one line naming the fix), or None."""
        if not self.enabled:
            return None
        host = host.rstrip(".").lower()
        if host in self.names or f"{host}:{port}" in self.origins or any(ip in n for n in self.networks):
            return None
        kind = why_denied(ip)
        if kind is None:
            return None
        return (f"{DENIED} {ip} of {host}:{port} ({kind}): this machine's network is not crawled unless the host "
                "is a seed or listed in fetcher.address.allow")

    # ---------------------------------------------------------------- a host
    def check(self, url: str) -> str | None:
        """The refusal of a URL's host when every address it resolves to is refused (None: it may be fetched,
        or it does not resolve: the fetch says so); remembered per host and port for this policy's life."""
        if not self.enabled:
            return None
        found = origin_of(url)
        if found is None:
            return None
        if found in self._verdicts:
            return self._verdicts[found]
        host, port = found
        try:
            infos = self.dns.resolve(host, port)
        except OSError:
            return None  # no address: nothing to connect to; the fetch reports it
        refusals = [self.refusal(host, port, ipaddress.ip_address(info[4][0].split("%", 1)[0])) for info in infos]
        verdict = refusals[0] if refusals and all(refusals) else None
        self._verdicts[found] = verdict
        return verdict

    def connect(self, host: str, port: int, timeout: object = None, source_address: tuple[str, int] | None = None,
                socket_options: Iterable[tuple[int, int, int | bytes]] | None = None) -> socket.socket:
        """socket.create_connection, to the first address the policy allows (the one checked is the one
        connected to) of the host's answer in the DNS cache; AddressDenied when it allows none, socket.gaierror when
        the name does not resolve. `timeout`: seconds, or anything else for the socket's default."""
        infos = self.dns.resolve(host, port)
        refused, error = None, None
        for family, kind, proto, _, addr in infos:
            why = self.refusal(host, port, ipaddress.ip_address(addr[0].split("%", 1)[0]))
            if why is not None:
                refused = refused or why
                continue
            sock = socket.socket(family, kind, proto)
            try:
                for option in socket_options or ():
                    sock.setsockopt(*option)
                if isinstance(timeout, (int, float)):
                    sock.settimeout(timeout)
                if source_address:
                    sock.bind(source_address)
                sock.connect(addr)
                return sock
            except OSError as e:
                error = e
                sock.close()
        if error is not None:
            raise error
        raise AddressDenied(refused or f"{DENIED}: {host} has no address")


def seed_origins(store: DataStore) -> list[str]:
    """The seed origins recorded in a crawl (SEED_ORIGINS)."""
    return _parse_origins(store.get_state(SEED_ORIGINS))


def _parse_origins(raw: str | None) -> list[str]:
    try:
        value = json.loads(raw) if raw else []
    except ValueError:
        return []
    return [str(v) for v in value] if isinstance(value, list) else []


def guarded_seeds(origins: Iterable[tuple[str, int]], seconds: float, dns: DnsCache | None = None,
                  policy: AddressPolicy | None = None) -> tuple[list[str], int]:
    """Of the seed origins, those whose host resolves to an address the guard refuses ("host:port"), with how
    many could not be resolved within `seconds` (looked up side by side) by `dns`, the fetcher's way (the DNS
    servers it asks), or socket.getaddrinfo. With `policy`, only those it refuses (what fetcher.address.allow
    lists, or every host with the guard off, is let through)."""
    todo = sorted(set(origins))
    found: list[str] = []
    lock = threading.Lock()

    def look(origin: tuple[str, int]) -> None:
        host, port = origin
        try:
            literal = ipaddress.ip_address(host)
            ips = [literal]
        except ValueError:
            try:
                infos = dns.resolve(host, port) if dns else socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
                ips = [ipaddress.ip_address(i[4][0].split("%", 1)[0]) for i in infos]
            except (OSError, UnicodeError):
                return
        if any(policy.refusal(host, port, ip) if policy else why_denied(ip) for ip in ips):
            with lock:
                found.append(f"{host}:{port}")

    deadline = time.monotonic() + max(0.0, seconds)
    pool = ThreadPoolExecutor(max_workers=16, thread_name_prefix="seed-dns")
    futures = [pool.submit(look, o) for o in todo]
    _, late = wait(futures, timeout=max(0.0, deadline - time.monotonic()))
    for f in late:
        f.cancel()
    pool.shutdown(wait=False)
    with lock:
        return sorted(found), len(late)


def record_seeds(store: DataStore, origins: list[str]) -> None:
    """Add origins to the crawl's SEED_ORIGINS (compare-and-set: commands that inject at once lose none)."""
    if not origins:
        return
    for _ in range(50):
        raw = store.get_state(SEED_ORIGINS)
        merged = json.dumps(sorted(set(_parse_origins(raw)) | set(origins)))
        if raw == merged or store.swap_state(SEED_ORIGINS, raw, merged):
            return
    raise ConfigError("inject: the crawl's seed addresses keep changing under this command; run it again")


__all__ = ["AddressDenied", "AddressPolicy", "DENIED", "SEED_ORIGINS", "guarded_seeds", "origin_of",
           "record_seeds", "seed_origins", "why_denied"]
