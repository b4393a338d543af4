"""A DNS cache for one fetch task, shared by its threads: each host and port is resolved once per
fetcher.dns.cache.seconds, and a name that does not resolve is asked again only after
fetcher.dns.cache.negative.seconds.

The answers come from ``socket.getaddrinfo``, so /etc/hosts, nsswitch and the system's resolver configuration apply
as they do for every other program on the machine (and the test webs' names resolve without a DNS server). The
stdlib gives no record TTLs: an answer is kept a fixed time instead, the way Java's InetAddress cache
(networkaddress.cache.ttl, which Nutch relies on) keeps it. A resolver library that reads TTLs would need a DNS server
to ask and would skip /etc/hosts.

The address guard (nutch2/fetch/addresses.py) checks and connects to the answers of this cache: the address checked
is the one connected to, whether it came from the resolver now or from the cache. Another module that needs a
host's addresses in the same task (the per-IP fetch queues) asks the same cache: ``resolve(host, port)``.
"""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from nutch2.config import Configuration
from nutch2.errors import ConfigError

__all__ = ["AddrInfo", "DNS_FAILURE", "DnsCache", "is_dns_failure"]

log = logging.getLogger(__name__)

# one answer of socket.getaddrinfo: (family, type, proto, canonname, sockaddr)
AddrInfo = tuple[Any, Any, int, str, Any]
# the protocol status message of a fetch whose host name did not resolve (protocol-http's reason for it): the
# fetcher counts these URLs as dns_failures, apart from connection failures
DNS_FAILURE = "unknown host"
_SWEEP_EVERY = 4096  # answers added between two sweeps of the expired ones


def is_dns_failure(reason: str) -> bool:
    """Is a protocol status message (or robots.txt's unreachable reason) a DNS failure?"""
    return reason.startswith(DNS_FAILURE)


class DnsCache:
    """Resolved (host, port) -> getaddrinfo answers (SOCK_STREAM), kept ``seconds``; failures kept
    ``negative_seconds`` (0 turns either off). Thread-safe; threads asking for the same name at once wait for one
    lookup. ``lookups`` counts the resolver's calls, ``failures`` those that failed."""

    def __init__(self, seconds: float = 300.0, negative_seconds: float = 60.0,
                 resolver: Callable[..., list[AddrInfo]] | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.seconds = seconds
        self.negative_seconds = negative_seconds
        self._resolver = resolver  # None: socket.getaddrinfo, looked up at each call
        self._clock = clock
        self._lock = threading.Lock()
        self._answers: dict[tuple[str, int], tuple[float, list[AddrInfo] | tuple[int, str]]] = {}
        self._pending: dict[tuple[str, int], Future[None]] = {}
        self._added = 0
        self.lookups = 0
        self.failures = 0

    @classmethod
    def from_conf(cls, conf: Configuration) -> DnsCache:
        """fetcher.dns.cache.seconds and fetcher.dns.cache.negative.seconds (each >= 0)."""
        values = []
        for key in ("fetcher.dns.cache.seconds", "fetcher.dns.cache.negative.seconds"):
            value = conf.get_float(key)
            if not value >= 0:
                raise ConfigError(f"{key}={value:g}: give the seconds a DNS answer is kept (0 = not kept), "
                                  f"e.g. -D {key}=300")
            values.append(value)
        return cls(values[0], values[1])

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
        """Ask the resolver: (its answer or the failure as (errno, message), seconds to keep it)."""
        host, port = key
        resolver = self._resolver or socket.getaddrinfo
        with self._lock:
            self.lookups += 1
        try:
            return list(resolver(host, port, type=socket.SOCK_STREAM)), self.seconds
        except socket.gaierror as e:
            failure: tuple[int, str] = (e.errno or socket.EAI_NONAME, e.strerror or str(e))
        except (UnicodeError, ValueError) as e:  # a name IDNA cannot encode
            failure = (socket.EAI_NONAME, f"invalid host name: {e}")
        with self._lock:
            self.failures += 1
        log.debug("dns: %s does not resolve: %s", host, failure[1])
        return failure, self.negative_seconds

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
