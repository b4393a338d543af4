"""The DNS servers a DnsCache asks (nutch2/fetch/dns.py), through dnspython: a name's A and AAAA records with their
TTL. Its own module so that dnspython is imported only by a task that has a name to ask a server for."""

from __future__ import annotations

import socket
import time
from collections.abc import Sequence

import dns.exception
import dns.message
import dns.name
import dns.nameserver
import dns.rdatatype
import dns.resolver

__all__ = ["DnsServers", "Missing", "Unanswered"]

_NO_ADDRESS = getattr(socket, "EAI_NODATA", socket.EAI_NONAME)


class Missing(Exception):
    """The servers answered: the name has no address (NXDOMAIN, or no A nor AAAA record)."""

    def __init__(self, errno: int, message: str, ttl: float | None) -> None:
        super().__init__(message)
        self.failure = (errno, message)
        self.ttl = ttl  # the negative TTL of the answer's SOA record; None without one


class Unanswered(Exception):
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
        its records and CNAMEs). Raises Missing (NXDOMAIN, no address) and Unanswered (no answer in time)."""
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
                raise Missing(socket.EAI_NONAME, "Name or service not known",
                               _negative_ttl(responses[0] if responses else None)) from None
            except dns.exception.Timeout as e:
                if found:
                    break
                raise Unanswered(str(e), down=True) from None
            except dns.resolver.NoNameservers as e:
                if found:
                    break
                errors = e.kwargs.get("errors") or []
                down = all(len(error) > 3 and isinstance(error[3], OSError) for error in errors)  # refused: down
                raise Unanswered(str(e), down=down) from None
            except (dns.exception.DNSException, OSError) as e:
                if found:
                    break
                raise Unanswered(f"{type(e).__name__}: {e}", down=isinstance(e, OSError)) from None
            if answer.rrset:
                found += [(family, rdata.address) for rdata in answer.rrset]
                ttls.append(answer.chaining_result.minimum_ttl)
            else:
                negative.append(_negative_ttl(answer.response))
        if not found:
            known = [ttl for ttl in negative if ttl is not None]
            raise Missing(_NO_ADDRESS, "No address associated with hostname", min(known) if known else None)
        return list(dict.fromkeys(found)), float(min(ttls))

    @staticmethod
    def name(host: str) -> dns.name.Name | None:
        """The absolute name to ask for, None for one DNS cannot carry (getaddrinfo says what it makes of it)."""
        try:
            return dns.name.from_text(host, origin=dns.name.root)
        except (dns.exception.DNSException, UnicodeError, ValueError):
            return None


def _negative_ttl(response: dns.message.Message | None) -> float | None:
    """RFC 2308's negative TTL of an answer: its SOA record's minimum, at most the record's TTL; None without one."""
    for rrset in response.authority if response is not None else ():
        if rrset.rdtype == dns.rdatatype.SOA and len(rrset):
            return float(min(rrset.ttl, rrset[0].minimum))
    return None
