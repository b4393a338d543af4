"""Politeness beyond the fixed delay (issue 38): what a host's answers do to the wait before its next request, and
how many requests one machine gets at once.

- **429 and 503** (Too Many Requests, Service Unavailable): the host's next request waits what its
  `Retry-After` asked (seconds or an HTTP date, as said: not grown), else the exponential back-off below; the
  URL is put back in its queue and asked again in the same fetch, `fetcher.retry.max` times. A host asking for more than
  `fetcher.max.crawl.delay` is treated as one whose Crawl-delay is too long: its URLs are left for a later round
  (recorded RETRY, no request).
- **Failures** (other 5xx, no answer: timeouts, refused or reset connections) and 429/503 without Retry-After
  space the host's requests exponentially: `fetcher.exceptions.per.queue.delay` after the first, doubled with each
  one in a row, bounded by `fetcher.max.crawl.delay` (MAX_BACKOFF when that is -1). After a success the back-off
  halves, back to the host's own delay. `fetcher.max.exceptions.per.queue` failures drop the host for this fetch,
  and so do `fetcher.max.failures.in.row.per.queue` in a row (a host that keeps answering 503 without Retry-After,
  or never answers, would otherwise hold the fetch ~4 requests a URL, 30 s apart).
- **Adaptive delay** (`fetcher.server.delay.adaptive`, Scrapy's AutoThrottle): the host's delay follows its
  latency toward latency / `fetcher.server.delay.adaptive.target.concurrency`, between fetcher.server.min.delay
  and fetcher.server.delay, never below a robots.txt Crawl-delay or a back-off.
- **Per IP** (`fetcher.threads.per.ip`): requests in flight to one address, whatever the host names of the queues.

The state is the host's FetchItemQueue's (nutch2/fetch/queues.py), changed under the queues' lock; this module says
what an answer means and computes the delays.
"""

from __future__ import annotations

import ipaddress
import logging
import socket
import time
from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum

from nutch2.config import Configuration
from nutch2.fetch.addresses import AddressPolicy, origin_of
from nutch2.fetch.headers import http_date_ms
from nutch2.fetch.output import ProtocolOutput
from nutch2.status import ProtocolStatusCode

log = logging.getLogger(__name__)

THROTTLED = (429, 503)  # answers that ask the client to slow down; the URL is asked again in the same fetch
MAX_BACKOFF = 300.0  # seconds: the exponential back-off's bound when fetcher.max.crawl.delay is -1 (no bound)


class Kind(Enum):
    """What an answered request says about its host."""

    OK = "ok"  # an answer the crawl records (2xx, 3xx, 304, 4xx but 429): the host is well
    THROTTLED = "throttled"  # 429 or 503: slow down, ask again later
    FAILED = "failed"  # another 5xx, or no answer at all (timeout, connection refused or reset)
    NONE = "none"  # nothing about the host (refused by the address guard, an unsupported scheme)


@dataclass(frozen=True, slots=True)
class Feedback:
    """One answered request, as the host's politeness state learns from it."""

    kind: Kind
    http_code: int | None
    latency: float  # seconds the fetch took (ProtocolOutput.fetch_ms)
    asked: float | None = None  # seconds the host asked to wait (Retry-After), None when it did not say


def feedback(out: ProtocolOutput, now: float | None = None) -> Feedback:
    """What `out` says about its host; `now` (time.time()) dates a Retry-After given as an HTTP date."""
    code, latency = out.http_code, out.fetch_ms / 1000.0
    if code is None:
        kind = Kind.FAILED if out.code == ProtocolStatusCode.EXCEPTION else Kind.NONE
        return Feedback(kind, None, latency)
    if code in THROTTLED:
        return Feedback(Kind.THROTTLED, code, latency, retry_after(out.headers, now))
    return Feedback(Kind.FAILED if code >= 500 else Kind.OK, code, latency)


def retry_after(headers: Mapping[str, str], now: float | None = None) -> float | None:
    """Seconds a `Retry-After` header asks to wait (RFC 9110: delay-seconds or an HTTP date; a date in the past
    is 0); None when there is none or it is neither."""
    value = next((v for k, v in headers.items() if k.lower() == "retry-after"), None)
    if value is None:
        return None
    text = value.strip()
    try:
        seconds = float(text)
    except ValueError:
        when = http_date_ms(text)
        if when is None:
            return None
        return max(0.0, when / 1000.0 - (time.time() if now is None else now))
    return seconds if seconds >= 0 and seconds == seconds and seconds != float("inf") else None


@dataclass(frozen=True)
class Politeness:
    """The politeness settings of one fetch task (fetcher.* properties; their ranges are checked by the
    configuration)."""

    server_delay: float = 5.0  # fetcher.server.delay
    min_delay: float = 0.0  # fetcher.server.min.delay
    max_crawl_delay: float = 30.0  # fetcher.max.crawl.delay (-1: no bound)
    retry_max: int = 3  # fetcher.retry.max
    exception_delay: float = 1.0  # fetcher.exceptions.per.queue.delay
    max_exceptions: int = -1  # fetcher.max.exceptions.per.queue (-1: off)
    adaptive: bool = False  # fetcher.server.delay.adaptive
    target_concurrency: float = 1.0  # fetcher.server.delay.adaptive.target.concurrency
    threads_per_ip: int = 0  # fetcher.threads.per.ip (0: off)
    max_failures_in_row: int = 8  # fetcher.max.failures.in.row.per.queue (-1: off)

    @classmethod
    def from_conf(cls, conf: Configuration) -> Politeness:
        return cls(conf.get_float("fetcher.server.delay"), conf.get_float("fetcher.server.min.delay"),
                   conf.get_float("fetcher.max.crawl.delay"), conf.get_int("fetcher.retry.max"),
                   conf.get_float("fetcher.exceptions.per.queue.delay"),
                   conf.get_int("fetcher.max.exceptions.per.queue"), conf.get_bool("fetcher.server.delay.adaptive"),
                   conf.get_float("fetcher.server.delay.adaptive.target.concurrency"),
                   conf.get_int("fetcher.threads.per.ip"), conf.get_int("fetcher.max.failures.in.row.per.queue"))

    def too_long(self, delay: float) -> bool:
        """A wait a host asks for (robots.txt Crawl-delay, Retry-After) beyond fetcher.max.crawl.delay: its URLs are
        not fetched in this round."""
        return self.max_crawl_delay >= 0 and delay > self.max_crawl_delay

    def failure_delay(self, failures: int) -> float:
        """The back-off after `failures` failed requests in a row: fetcher.exceptions.per.queue.delay doubled with
        each after the first, bounded by fetcher.max.crawl.delay (MAX_BACKOFF when unbounded)."""
        if failures <= 0 or self.exception_delay <= 0:
            return 0.0
        bound = self.max_crawl_delay if self.max_crawl_delay >= 0 else MAX_BACKOFF
        return min(bound, self.exception_delay * 2.0 ** min(failures - 1, 30))

    def adapted(self, delay: float, fb: Feedback) -> float:
        """The adaptive delay after an answer that took `fb.latency` (AutoThrottle): halfway from `delay` toward
        latency / target concurrency (at once when that is longer), within [fetcher.server.min.delay,
        fetcher.server.delay]; an answer other than 200 (small error pages, redirects: quick by nature) only ever
        lengthens it."""
        target = fb.latency / self.target_concurrency
        new = min(max(self.min_delay, max(target, (delay + target) / 2.0)), self.server_delay)
        return delay if fb.http_code != 200 and new <= delay else new


class HostAddresses:
    """The address the requests of each host go to, looked up once per fetch task (for fetcher.threads.per.ip): the
    first of the host's addresses the address guard allows, the one AddressPolicy.connect connects to (both ask the
    guard's DNS cache). A host that does not resolve is its own "address" (its requests fail before they reach a
    machine)."""

    def __init__(self, policy: AddressPolicy | None = None) -> None:
        self.policy = policy
        self._found: dict[str, str] = {}  # host -> address; threads may both resolve a new host: the same answer

    def address(self, url: str) -> str:
        origin = origin_of(url)
        if origin is None:
            return url
        host, port = origin
        found = self._found.get(host)
        if found is None:
            found = self._found[host] = self._resolve(host, port)
        return found

    def _resolve(self, host: str, port: int) -> str:
        """Through the address guard's DNS cache (nutch2/fetch/dns.py: the answers its connections use), or the
        system resolver without a guard."""
        try:
            if self.policy is not None:
                addresses = self.policy.dns.addresses(host, port)
            else:
                infos = socket.getaddrinfo(host.strip("[]"), port, type=socket.SOCK_STREAM)
                addresses = [info[4][0].split("%", 1)[0] for info in infos]
        except (OSError, UnicodeError):
            return host
        if self.policy is not None:
            for a in addresses:
                if self.policy.refusal(host, port, ipaddress.ip_address(a)) is None:
                    return a
        return addresses[0] if addresses else host


__all__ = ["Feedback", "HostAddresses", "Kind", "MAX_BACKOFF", "Politeness", "THROTTLED", "feedback", "retry_after"]
