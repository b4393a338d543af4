"""robots.txt rules (parsed by protego) and a per-job, thread-safe robots cache.

Outcome of fetching ``/robots.txt`` (modelled on Google's documented behaviour,
which is what site owners expect today):

* 2xx with content -> ``parsed`` (at most 500 KB are read);
* 2xx cut off (by the 500 KB limit, the total fetch time, or a connection closed
  early) -> only the complete groups of the part read (those before the last
  ``User-agent`` group), when one of them applies to us; else ``defer``. A cut-off
  file is not a complete answer: its last group may be missing its Disallow lines;
* 2xx empty, 3xx beyond 5 hops or without a target, and every 4xx **including
  401/403** -> ``allow_all``. Nutch 1/2 treated 401/403 as "disallow all"; Google
  treats them like 404 (robots.txt is not access control), and so do we;
* 429, 5xx -> ``defer``: the host is not crawled this round (nothing is allowed)
  and its URLs are left as they are, for a later job;
* no response at all (connection refused, DNS, connect or header timeout, reset)
  -> ``unreachable``: the host is down; its URLs are recorded as failed fetches
  (EXCEPTION with the reason, RETRY) so that updatedb counts the retries;
* a fetch cut by the job's own time limit -> ``defer``.
"""

from __future__ import annotations

import dataclasses
import logging
import re
import threading
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from protego import Protego

from nutch2.protocol import HttpProtocol, HttpSettings, ProtocolOutput
from nutch2.status import ProtocolStatusCode

__all__ = ["ROBOTS_MAX_BYTES", "ROBOTS_MAX_REDIRECTS", "RobotRules", "RobotsCache", "complete_groups",
           "robot_agent_name", "rules_from_output"]

LOG = logging.getLogger(__name__)

ROBOTS_MAX_BYTES = 500 * 1024
ROBOTS_MAX_REDIRECTS = 5
PARSED, ALLOW_ALL, DEFER, UNREACHABLE = "parsed", "allow_all", "defer", "unreachable"
_REDIRECTS = (ProtocolStatusCode.MOVED, ProtocolStatusCode.TEMP_MOVED)
_DEFAULT_PORTS = {"http": 80, "https": 443}


@dataclass
class RobotRules:
    """Rules for one (scheme, host, port); ``state`` is "parsed", "allow_all", "defer" or "unreachable"
    (``reason`` then says why, e.g. "connection refused")."""

    state: str
    sitemaps: list[str] = field(default_factory=list)
    parser: Protego | None = field(default=None, repr=False, compare=False)
    reason: str = ""

    @classmethod
    def parse(cls, content: bytes) -> RobotRules:
        """Parse robots.txt bytes (UTF-8, BOM stripped, bad bytes replaced); empty -> allow_all."""
        text = content.decode("utf-8-sig", errors="replace")
        if not text.strip():
            return cls(ALLOW_ALL)
        parser = Protego.parse(text)
        return cls(PARSED, list(parser.sitemaps), parser)

    def allowed(self, url: str, agent: str) -> bool:
        """May ``agent`` fetch ``url``? Always False when the host is deferred or unreachable."""
        if self.state in (DEFER, UNREACHABLE):
            return False
        if self.parser is None:
            return True
        return bool(self.parser.can_fetch(url, agent))

    def crawl_delay(self, agent: str) -> float | None:
        """Crawl-delay in seconds for ``agent`` (None when not set)."""
        if self.parser is None:
            return None
        delay = self.parser.crawl_delay(agent)
        return float(delay) if delay is not None else None


def robot_agent_name(agents: str) -> str:
    """First token of ``http.robots.agents`` / ``http.agent.name`` (e.g. "MyBot/1.0 (...)" -> "MyBot")."""
    first = agents.split(",")[0].strip()
    return first.split()[0].split("/")[0] if first else ""


def _host_key(url: str) -> tuple[str, str, int] | None:
    """(scheme, host, port) for a URL, or None when it has no usable host."""
    try:
        parts = urlsplit(url)
        scheme = parts.scheme.lower()
        host = (parts.hostname or "").lower()
        port = parts.port or _DEFAULT_PORTS.get(scheme)
    except ValueError:
        return None
    if not host or port is None:
        return None
    return scheme, host, port


def _robots_url(key: tuple[str, str, int]) -> str:
    """The /robots.txt URL for a host key (default port omitted, IPv6 bracketed)."""
    scheme, host, port = key
    netloc = f"[{host}]" if ":" in host else host
    if port != _DEFAULT_PORTS.get(scheme):
        netloc = f"{netloc}:{port}"
    return f"{scheme}://{netloc}/robots.txt"


_FIELD = re.compile(r"^\s*([A-Za-z][A-Za-z -]*?)\s*:\s*([^#]*)")
_USER_AGENT_FIELDS = frozenset({"user-agent", "useragent", "user agent"})
_SITE_WIDE_FIELDS = frozenset({"sitemap", "host"})


def _applies(token: str, agent: str) -> bool:
    """Does a ``User-agent`` value name ``agent`` (or everyone)? Protego's rule: a product token at a word start."""
    token = token.strip().lower().replace("*", "") if token.strip() != "*" else "*"
    if token == "*":
        return True
    if not token:
        return False
    name = agent.strip().lower()
    index = name.find(token)
    while index != -1:
        if index == 0 or not (name[index - 1].isalnum() or name[index - 1] in "-_"):
            return True
        index = name.find(token, index + 1)
    return False


def complete_groups(content: bytes, agent: str) -> bytes | None:
    """The groups of a cut-off robots.txt that are known to be whole, or None when none of them applies to us.

    A group is whole when another group starts after it; the line the cut fell in is dropped. If no whole group
    names ``agent`` or ``*``, the rules meant for us may be in the part never read: nothing is known.
    """
    lines = content.splitlines(keepends=True)
    if lines and not lines[-1].endswith((b"\n", b"\r")):
        lines.pop()
    starts: list[int] = []
    agents: list[tuple[int, str]] = []
    previous: str | None = None
    for i, raw in enumerate(lines):
        m = _FIELD.match(raw.decode("utf-8", errors="replace"))
        if m is None:
            continue
        name, value = m.group(1).lower(), m.group(2)
        if name in _USER_AGENT_FIELDS:
            if previous is None or previous not in _USER_AGENT_FIELDS:
                starts.append(i)
            agents.append((i, value))
        if name not in _SITE_WIDE_FIELDS:
            previous = name
    if len(starts) < 2:
        return None
    end = starts[-1]
    if not any(i < end and _applies(value, agent) for i, value in agents):
        return None
    return b"".join(lines[:end])


def rules_from_output(out: ProtocolOutput, agent: str = "") -> RobotRules:
    """Turn the (final, non-redirect) fetch of a robots.txt into rules for ``agent``."""
    if out.stopped:
        return RobotRules(DEFER)  # the job's time limit cut it: nothing is known about the host
    http_code = out.http_code
    if http_code is None:
        if out.code == ProtocolStatusCode.PROTO_NOT_FOUND:
            return RobotRules(ALLOW_ALL)
        return RobotRules(UNREACHABLE, reason=out.args[0] if out.args else "no response")  # refused, DNS, timeout
    if 200 <= http_code < 300:
        if out.truncated:
            whole = complete_groups(out.content[:ROBOTS_MAX_BYTES], agent)
            return RobotRules(DEFER) if whole is None else RobotRules.parse(whole)
        return RobotRules.parse(out.content[:ROBOTS_MAX_BYTES])
    if http_code == 429 or http_code >= 500:
        return RobotRules(DEFER)
    return RobotRules(ALLOW_ALL)  # 3xx without usable target, 4xx incl. 401/403 (Google's rule)


class RobotsCache:
    """Fetches robots.txt once per (scheme, host, port) per job and caches it; thread-safe;
    concurrent callers for the same host wait for the single fetch."""

    def __init__(self, protocol_factory: Callable[[], HttpProtocol] | None, agent: str,
                 settings: HttpSettings) -> None:
        self.agent = agent
        self._settings = dataclasses.replace(settings, redirect_max=0, content_limit=ROBOTS_MAX_BYTES)
        self._factory = protocol_factory or (lambda: HttpProtocol(self._settings))
        self._local = threading.local()
        self._lock = threading.Lock()
        self._rules: dict[tuple[str, str, int], RobotRules] = {}
        self._pending: dict[tuple[str, str, int], Future[RobotRules]] = {}
        self._protocols: list[HttpProtocol] = []

    def rules_for(self, url: str) -> RobotRules:
        """Rules for the host of ``url`` (fetched on first use; never raises)."""
        key = _host_key(url)
        if key is None:
            return RobotRules(ALLOW_ALL)
        with self._lock:
            cached = self._rules.get(key)
            if cached is not None:
                return cached
            future = self._pending.get(key)
            owner = future is None
            if future is None:
                future = self._pending[key] = Future()
        if not owner:
            return future.result()
        rules = RobotRules(DEFER)
        try:
            rules = self._load(key)
        finally:  # waiters must never hang, even on KeyboardInterrupt
            with self._lock:
                self._rules[key] = rules
                del self._pending[key]
            future.set_result(rules)
        return rules

    def cached(self, url: str) -> RobotRules | None:
        """Rules already loaded for the host of ``url``, or None when robots.txt was not fetched yet."""
        key = _host_key(url)
        if key is None:
            return RobotRules(ALLOW_ALL)
        with self._lock:
            return self._rules.get(key)

    def close(self) -> None:
        """Close the HTTP protocols this cache created."""
        with self._lock:
            protocols, self._protocols = self._protocols, []
        for protocol in protocols:
            protocol.close()

    def _load(self, key: tuple[str, str, int]) -> RobotRules:
        """Fetch and interpret robots.txt for a host; any failure defers the host."""
        try:
            rules = rules_from_output(self._fetch(_robots_url(key)), self.agent)
        except Exception:  # noqa: BLE001 - a robots problem must not kill a fetcher thread
            LOG.exception("robots.txt for %s failed", key)
            rules = RobotRules(DEFER)
        LOG.debug("robots.txt %s -> %s", key, rules.state)
        return rules

    def _fetch(self, url: str) -> ProtocolOutput:
        """Fetch ``url`` following up to ROBOTS_MAX_REDIRECTS redirects."""
        protocol = self._protocol()
        out = protocol.fetch(url)
        for _ in range(ROBOTS_MAX_REDIRECTS):
            if out.code not in _REDIRECTS or not out.args:
                return out
            out = protocol.fetch(out.args[0])
        return out

    def _protocol(self) -> HttpProtocol:
        """This thread's protocol instance (created on first use)."""
        protocol: HttpProtocol | None = getattr(self._local, "protocol", None)
        if protocol is None:
            protocol = self._local.protocol = self._factory()
            with self._lock:
                self._protocols.append(protocol)
        return protocol
