"""robots.txt rules (RFC 9309, Google's parser) and a per-job, thread-safe robots cache.

Outcome of fetching ``/robots.txt`` (modelled on Google's documented behaviour,
which is what site owners expect today):

* 2xx with content -> ``parsed``;
* 2xx over 500 KiB -> its first 500 KiB ``parsed`` (the line the limit cut dropped) and
  the rest ignored: Google's rule, and RFC 9309's least parsing limit. Every round would
  cut the file at the same place, so waiting for it whole would never crawl the host;
* 2xx cut off by the total fetch time or a connection closed early -> only the complete
  groups of the part read (those before the last ``User-agent`` group), when one of
  them applies to us; else ``defer``. Such a file is not a complete answer (its last
  group may be missing its Disallow lines), and the next round may get it whole;
* 2xx empty, 3xx beyond 5 hops or without a target, and every 4xx **including
  401/403** -> ``allow_all``. Nutch 1/2 treated 401/403 as "disallow all"; Google
  treats them like 404 (robots.txt is not access control), and so do we;
* 429, 5xx -> ``defer``: the host is not crawled this round (nothing is allowed)
  and its URLs are marked deferred: updatedb makes them due again after
  http.robots.503.defer.visits.delay;
* no response at all (connection refused, DNS, connect or header timeout, reset)
  -> ``unreachable``: the host is down; its URLs are recorded as failed fetches
  (EXCEPTION with the reason, RETRY) so that updatedb counts the retries;
* a fetch cut by the job's own time limit -> ``defer``.

Answers are kept in the crawl's store for the tasks and rounds after this one (nutch2/fetch/robotsstore.py: up to
24 hours, less where the answer's caching headers say so); for ``defer`` (429, 5xx, cut off) the last kept copy
stands in.
"""

from __future__ import annotations

import codecs
import logging
import re
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from protego import Protego
from robotstxt import RobotsMatcher

from nutch2.fetch.output import ProtocolOutput
from nutch2.status import ProtocolStatusCode

__all__ = ["ROBOTS_MAX_BYTES", "ROBOTS_MAX_REDIRECTS", "RobotRules", "RobotsCache", "complete_groups", "decode_robots",
           "robot_agent_name", "robot_agents", "rules_from_output", "whole_lines"]

log = logging.getLogger(__name__)

ROBOTS_MAX_BYTES = 500 * 1024
ROBOTS_MAX_REDIRECTS = 5
PARSED, ALLOW_ALL, DEFER, UNREACHABLE = "parsed", "allow_all", "defer", "unreachable"
_REDIRECTS = (ProtocolStatusCode.MOVED, ProtocolStatusCode.TEMP_MOVED)
_DEFAULT_PORTS = {"http": 80, "https": 443}


@dataclass
class RobotRules:
    """Rules for one (scheme, host, port); ``state`` is "parsed", "allow_all", "defer" or "unreachable" (``reason``
    then says why, e.g. "connection refused").

    Matching is Google's robots.txt parser (the reference implementation of RFC 9309, through fast-robotstxt):
    groups as the RFC defines them (consecutive user-agent lines form one group even with other records such as
    Crawl-delay or Sitemap between them; groups for the same agent are merged), agents matched by product token,
    case-insensitive and whole (``User-agent: foo/1.2`` applies to ``foo``, ``User-agent: bot`` not to ``MyBot``),
    longest match wins, ``*`` and ``$`` patterns. Several agents (http.robots.agents) are tried in order: the
    first that has a group of its own decides, else the ``*`` group applies.
    """

    state: str
    sitemaps: list[str] = field(default_factory=list)
    text: str = field(default="", repr=False, compare=False)
    _delays: dict[tuple[str, ...], float | None] = field(default_factory=dict, repr=False, compare=False)
    _deciders: dict[tuple[str, ...], str] = field(default_factory=dict, repr=False, compare=False)
    _index: _RuleIndex | None = field(default=None, repr=False, compare=False)
    reason: str = ""
    # not from a robots.txt request: kept by an earlier task (or, unreachable, a page request got no answer)
    from_store: bool = field(default=False, compare=False)

    @classmethod
    def parse(cls, content: bytes) -> RobotRules:
        """Parse robots.txt bytes (UTF-8, UTF-16 with a BOM; bad bytes replaced); empty -> allow_all."""
        text = decode_robots(content)
        if not text.strip():
            return cls(ALLOW_ALL)
        return cls(PARSED, _sitemaps(text), text)

    def allowed(self, url: str, agents: str | Sequence[str]) -> bool:
        """May a crawler with these product tokens (in order of precedence) fetch ``url``? False when deferred or
        unreachable."""
        if self.state in (DEFER, UNREACHABLE):
            return False
        if not self.text or _is_robots_txt(url):
            return True
        key = _agent_tuple(agents)
        decider = self._deciders.get(key)
        if decider is None:
            decider = self._deciders[key] = self._decider(key)
        text = self.text
        if len(text) > INDEXED_BYTES:  # Google's matcher parses the whole file on every call: give it the
            index = self._index  # lines that can matter for this URL (the same answer; see _RuleIndex)
            if index is None:
                index = self._index = _RuleIndex(text)
            text = index.text_for(url)
        return bool(_matcher().is_allowed(text, decider, url))

    def crawl_delay(self, agents: str | Sequence[str]) -> float | None:
        """Crawl-delay in seconds of the group that applies to these agents (None when not set)."""
        if not self.text:
            return None
        key = _agent_tuple(agents)
        if key not in self._delays:
            self._delays[key] = self._match("http://robots.invalid/", key)[1]
        return self._delays[key]

    def _decider(self, agents: tuple[str, ...]) -> str:
        """The agent whose group decides: the first with a group of its own, else the first (the ``*`` group
        then applies). Which groups exist does not depend on the URL, so this is found once per rules."""
        for agent in agents:
            matcher = _matcher()
            matcher.is_allowed(self.text, agent, "http://robots.invalid/")
            if matcher.ever_seen_specific_agent:
                return agent
        return agents[0] if agents else "*"

    def _match(self, url: str, agents: tuple[str, ...]) -> tuple[bool, float | None]:
        """(allowed, crawl delay) for the first agent with a group of its own, else for the ``*`` group."""
        fallback: tuple[bool, float | None] | None = None
        for agent in agents or ("*",):
            matcher = RobotsMatcher()
            allowed = bool(matcher.is_allowed(self.text, agent, url))
            result = (allowed, matcher.crawl_delay)
            if matcher.ever_seen_specific_agent:
                return result
            fallback = fallback or result
        assert fallback is not None
        return fallback


# robots.txt longer than this (characters) are matched through a _RuleIndex
INDEXED_BYTES = 16 * 1024
# what Google's matcher (through the URL parser of the robotstxt binding) takes as it is: no escaping, no dot
# segments, no case change
_PLAIN = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~!$&()*+,;=:@/?")
_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_RULE_KEY = re.compile(r"[ \t]*(allow|disallow)[ \t]*:[ \t]*", re.IGNORECASE)
_GRAM = 3
_BLANK = "Disallow:\n"  # matches nothing; ends a group's User-agent lines as the rule line it stands for does


def _plain(text: str) -> bool:
    """No character or sequence the matcher would rewrite (escape, decode, resolve as a dot segment)."""
    return _PLAIN.issuperset(text) and "/./" not in text and "/../" not in text and not text.endswith(("/.", "/.."))


class _RuleIndex:
    """A big robots.txt for one URL at a time: Google's matcher parses the whole file on every call and matches every
    rule of the group that applies against the path, a cost of (file size x URL length) per URL; with 500 KiB of
    wildcard rules, tenths of a second of CPU per URL. The index is built once per file: each Allow/Disallow line
    whose pattern is plain ASCII gets the literal parts between its `*`s; for a URL, the lines some literal part of
    which the URL does not contain cannot match it, and are replaced by an empty `Disallow:` (which matches nothing
    and, like the line it replaces, ends the group's User-agent lines), runs of them by one. The matcher then
    gives the same answer on a text of the other lines. Every other line (User-agent, Crawl-delay, a rule the
    matcher may rewrite or Google's index.html rule extends, a cut long line) is kept as it is; blank and comment
    lines are dropped (the matcher ignores them). A URL the matcher may rewrite gets the whole file."""

    def __init__(self, text: str) -> None:
        chunks: list[str] = []  # the text between runs of rule lines (kept lines, "\n"-terminated)
        runs: list[tuple[int, int]] = []  # each run's first rule id and end
        self.lines: list[str] = []  # rule id -> its line
        self.parts: list[tuple[str, ...]] = []  # rule id -> the literal parts of its pattern
        kept: list[str] = []
        for line in _LINE_BREAK.split(text):
            content = line.split("#", 1)[0]
            if not content.strip():
                continue  # blank or a comment: ignored by the matcher
            m = _RULE_KEY.match(content)
            pattern = content[m.end():].strip(" \t\v\f\r\n") if m else ""
            if m is None or len(line) > 1000 or not _plain(pattern) or (
                    m.group(1).lower() == "allow" and "/index.htm" in pattern[pattern.rfind("/"):]):
                kept.append(line + "\n")
                continue
            if kept or not runs or runs[-1][1] != len(self.lines):  # a new run
                chunks.append("".join(kept))
                kept = []
                runs.append((len(self.lines), len(self.lines)))
            self.lines.append(line + "\n")
            self.parts.append(tuple(p for p in pattern.removesuffix("$").split("*") if p))
            runs[-1] = (runs[-1][0], len(self.lines))
        chunks.append("".join(kept))
        self.whole = text
        self.run_of: list[int] = [r for r, (first, last) in enumerate(runs) for _ in range(first, last)]
        self.runs = runs
        # the text for a URL no rule line of which can match: each run one empty Disallow; `at[r]` where run r's is
        base, self.at = [chunks[0]], []
        size = len(chunks[0])
        for chunk in chunks[1:]:
            self.at.append(size)
            base += [_BLANK, chunk]
            size += len(_BLANK) + len(chunk)
        self.base = "".join(base)
        # each rule under the rarest 3-character piece of its parts (a URL without it cannot match the rule)
        grams = [{p[k:k + _GRAM] for p in parts for k in range(len(p) - _GRAM + 1)} for parts in self.parts]
        counts: dict[str, int] = {}
        for pieces in grams:
            for g in pieces:
                counts[g] = counts.get(g, 0) + 1
        self.by_gram: dict[str, list[int]] = {}
        self.always: list[int] = []  # rules without such a piece: checked for every URL
        for i, pieces in enumerate(grams):
            if pieces:
                self.by_gram.setdefault(min(pieces, key=counts.__getitem__), []).append(i)
            else:
                self.always.append(i)

    def text_for(self, url: str) -> str:
        """The robots.txt to match `url` against: the same answer as the whole file."""
        if (not url.startswith(("http://", "https://")) or not _PLAIN.issuperset(url) or "/." in url
                or "*" in url or "$" in url):  # a URL the matcher may read otherwise than it is written (%7E as ~,
            return self.whole  # a dot segment; a `*` of the path matched as a pattern's wildcard: "*A" on "/*")
        by_gram = self.by_gram
        found = set(self.always)
        for k in range(len(url) - _GRAM + 1):
            ids = by_gram.get(url[k:k + _GRAM])
            if ids:
                found.update(ids)
        parts = self.parts
        matching = sorted(i for i in found if all(p in url for p in parts[i]))
        if not matching:
            return self.base
        out = []
        pos = 0
        run = -1
        for i in matching:
            r = self.run_of[i]
            if r != run:  # the run's empty Disallow gives way to its lines that can match
                out.append(self.base[pos:self.at[r]])
                pos = self.at[r] + len(_BLANK)
                run = r
            out.append(self.lines[i])
        out.append(self.base[pos:])
        return "".join(out)


_MATCHERS = threading.local()


def _matcher() -> RobotsMatcher:
    """This thread's matcher: one foreign call per check instead of five (each call lets go of the GIL, which a
    fetcher thread then waits to take back while the others run)."""
    matcher = getattr(_MATCHERS, "matcher", None)
    if matcher is None:
        matcher = _MATCHERS.matcher = RobotsMatcher()
    return matcher


def decode_robots(content: bytes) -> str:
    """robots.txt bytes as text: a UTF-16 BOM decodes UTF-16, anything else UTF-8 (a full or partial UTF-8 BOM is
    skipped as Google does; undecodable bytes become U+FFFD and spoil only their own line)."""
    if content.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return content.decode("utf-16", errors="replace")
    for bom in (codecs.BOM_UTF8, codecs.BOM_UTF8[:2], codecs.BOM_UTF8[:1]):
        if content.startswith(bom):
            content = content[len(bom):]
            break
    return content.decode("utf-8", errors="replace")


def _sitemaps(text: str) -> list[str]:
    """Sitemap URLs of a robots.txt (protego reads them), in order, without duplicates. Only the lines that can be
    a Sitemap record (sitemap, sitemaps, site-map: site-wide, whatever group they are in) are given to protego,
    which would spend a quarter of a second on 500 KiB of rules."""
    lines = [line for line in text.splitlines() if "site" in line.lower()]
    return list(dict.fromkeys(Protego.parse("\n".join(lines)).sitemaps)) if lines else []


def _is_robots_txt(url: str) -> bool:
    """robots.txt itself is always allowed (as crawler-commons and Nutch do)."""
    try:
        return urlsplit(url).path == "/robots.txt"
    except ValueError:
        return False


def _agent_tuple(agents: str | Sequence[str]) -> tuple[str, ...]:
    return (agents,) if isinstance(agents, str) else tuple(agents)


_PRODUCT_TOKEN = re.compile(r"[A-Za-z_-]+")


def robot_agents(agent_name: str, robots_agents: str = "") -> tuple[str, ...]:
    """The product tokens matched in robots.txt, in order of precedence: ``http.agent.name`` first, then the names
    of ``http.robots.agents`` (comma-separated; ``*`` and repeats skipped), each cut to its product token
    ("MyBot/1.0 (+http://x)" -> "MyBot"), as Nutch's RobotRulesParser builds its agent list."""
    names: list[str] = []
    for raw in [agent_name, *robots_agents.split(",")]:
        match = _PRODUCT_TOKEN.match(raw.strip())
        if match and match.group().lower() not in (n.lower() for n in names):
            names.append(match.group())
    return tuple(names)


def robot_agent_name(agents: str) -> str:
    """First product token of a comma-separated agent list (e.g. "MyBot/1.0 (...)" -> "MyBot")."""
    names = robot_agents("", agents)
    return names[0] if names else ""


def origin_key(url: str) -> tuple[str, str, int] | None:
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


_FIELD = re.compile(rb"^[ \t]*([A-Za-z][A-Za-z_ -]*?)[ \t]*:[ \t]*([^#\r\n]*)")
_USER_AGENT_FIELDS = frozenset({b"user-agent", b"useragent", b"user agent"})
_RULE_FIELDS = frozenset({b"allow", b"disallow"})


def _applies(value: bytes, agents: tuple[str, ...]) -> bool:
    """Does a ``User-agent`` value name one of ``agents`` (or everyone)? Google's rule: ``*``, or the value's product
    token equal to an agent's, ignoring case."""
    value = value.strip()
    if value[:1] == b"*" and (len(value) == 1 or value[1:2].isspace()):
        return True
    token = _PRODUCT_TOKEN.match(value.decode("ascii", errors="replace"))
    return token is not None and token.group().lower() in {agent.lower() for agent in agents}


def whole_lines(content: bytes) -> bytes:
    """``content`` without the line a cut fell in (the bytes after its last line break)."""
    end = max(content.rfind(b"\n"), content.rfind(b"\r"))
    return content[:end + 1]


def complete_groups(content: bytes, agents: str | Sequence[str]) -> bytes | None:
    """The groups of a cut-off robots.txt that are known to be whole, or None when none of them applies to us.

    A group ends where a ``User-agent`` line follows an Allow or Disallow line (RFC 9309: other records between
    user-agent lines do not end it); the group the cut fell in, and the line it fell in, are dropped. If no whole
    group names one of ``agents`` or ``*``, the rules meant for us may be in the part never read: nothing is known.
    """
    lines = content.splitlines(keepends=True)
    if lines and not lines[-1].endswith((b"\n", b"\r")):
        lines.pop()
    starts: list[int] = []
    agent_lines: list[tuple[int, bytes]] = []
    after_rule = True
    for i, line in enumerate(lines):
        m = _FIELD.match(line)
        if m is None:
            continue
        name = m.group(1).lower()
        if name in _USER_AGENT_FIELDS:
            if after_rule:
                starts.append(i)
            after_rule = False
            agent_lines.append((i, m.group(2)))
        elif name in _RULE_FIELDS:
            after_rule = True
    if len(starts) < 2:
        return None
    end = starts[-1]
    wanted = _agent_tuple(agents)
    if not any(i < end and _applies(value, wanted) for i, value in agent_lines):
        return None
    return b"".join(lines[:end])


def rules_from_output(out: ProtocolOutput, agents: str | Sequence[str] = ()) -> RobotRules:
    """Turn the (final, non-redirect) fetch of a robots.txt into rules for ``agents``."""
    if out.stopped:
        return RobotRules(DEFER)  # the job's time limit cut it: nothing is known about the host
    http_code = out.http_code
    if http_code is None:
        if out.code == ProtocolStatusCode.PROTO_NOT_FOUND:
            return RobotRules(ALLOW_ALL)
        return RobotRules(UNREACHABLE, reason=out.args[0] if out.args else "no response")  # refused, DNS, timeout
    if 200 <= http_code < 300:
        if out.truncated and len(out.content) >= ROBOTS_MAX_BYTES:  # the size limit: the rest is ignored
            return RobotRules.parse(whole_lines(out.content[:ROBOTS_MAX_BYTES]))
        if out.truncated:  # cut by the time or the connection: only what is known to be whole
            whole = complete_groups(out.content, agents)
            return RobotRules(DEFER) if whole is None else RobotRules.parse(whole)
        return RobotRules.parse(out.content[:ROBOTS_MAX_BYTES])
    if http_code == 429 or http_code >= 500:
        return RobotRules(DEFER)
    return RobotRules(ALLOW_ALL)  # 3xx without usable target, 4xx incl. 401/403 (Google's rule)


class RobotsCache:
    """Fetches robots.txt once per (scheme, host, port) per job and caches it; thread-safe;
    concurrent callers for the same host wait for the single fetch. With a RobotsStore, a host's answer kept by an
    earlier task is used while it is fresh (no request), and what this task fetched is kept for the next."""

    def __init__(self, session_factory: Callable[[], Any], agent: str | Sequence[str],
                 store: Any = None, counters: Any = None) -> None:
        """``session_factory``: a new protocol session for robots.txt requests (a Protocol's robots_session);
        ``store``: the crawl's kept answers (a RobotsStore, nutch2/fetch/robotsstore.py, which imports this module);
        ``counters``: the task's (robots_from_store, robots_stood_in)."""
        self.agent = agent
        self.store = store
        self.counters = counters
        self._factory = session_factory
        self._local = threading.local()
        self._lock = threading.Lock()
        self._rules: dict[tuple[str, str, int], RobotRules] = {}
        self._pending: dict[tuple[str, str, int], Future[RobotRules]] = {}
        self._protocols: list[Any] = []

    def rules_for(self, url: str) -> RobotRules:
        """Rules for the host of ``url`` (fetched on first use; never raises)."""
        key = origin_key(url)
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
        key = origin_key(url)
        if key is None:
            return RobotRules(ALLOW_ALL)
        with self._lock:
            return self._rules.get(key)

    def unreachable(self, url: str, reason: str) -> RobotRules:
        """The host of ``url`` gave no answer to a request (its rules came from the store): from now on this task
        treats it as a host whose robots.txt got none (no more requests; the kept copy stays for later tasks)."""
        rules = RobotRules(UNREACHABLE, reason=reason, from_store=True)
        key = origin_key(url)
        if key is not None:
            with self._lock:
                self._rules[key] = rules
        return rules

    def close(self) -> None:
        """Write the answers this task fetched to the store, close the protocol sessions this cache created."""
        if self.store is not None:
            self.store.save()
        with self._lock:
            protocols, self._protocols = self._protocols, []
        for protocol in protocols:
            protocol.close()

    def _load(self, key: tuple[str, str, int]) -> RobotRules:
        """The host's rules: its kept answer while fresh, else robots.txt fetched (and kept), or the kept answer
        when the server answered but not with rules (429, 5xx, cut off); any other failure defers the host."""
        stored = self.store.get(key) if self.store is not None else None
        if stored is not None and self.store is not None and self.store.fresh(stored):
            rules = stored.rules()
            rules.from_store = True
            self._count("robots_from_store")
            log.debug("robots.txt %s -> %s (kept)", key, rules.state)
            return rules
        try:
            out = self._fetch(_robots_url(key))
            rules = rules_from_output(out, self.agent)
        except Exception:  # noqa: BLE001 - a robots problem must not kill a fetcher thread
            log.exception("robots.txt for %s failed", key)
            return RobotRules(DEFER)
        log.debug("robots.txt %s -> %s", key, rules.state)
        if self.store is None:
            return rules
        if rules.state == UNREACHABLE:  # the host is down: its URLs fail this round; the kept copy stays
            return rules
        if rules.state == DEFER:
            if stored is not None and not out.stopped and self.store.stands_in(stored):
                log.info("robots.txt %s: %s; its copy kept %s stands in", key, out.http_code or "cut off",
                         time.strftime("%Y-%m-%d %H:%M", time.gmtime(stored.fetched / 1000)))
                self._count("robots_stood_in")
                return stored.rules()
            if not out.stopped:  # the deferred counter says how many URLs; this line says which host, and why
                why = f"answered {out.http_code}" if out.http_code and not out.truncated else "was cut off"
                log.info("robots.txt %s %s: the host is left for a later round", _robots_url(key), why)
            return rules
        self.store.keep(key, out, rules, replaces=stored is not None)
        return rules

    def _count(self, name: str) -> None:
        if self.counters is not None:
            self.counters.incr(name)

    def _fetch(self, url: str) -> ProtocolOutput:
        """Fetch ``url`` following up to ROBOTS_MAX_REDIRECTS redirects."""
        protocol = self._protocol()
        out = protocol.fetch(url)
        for _ in range(ROBOTS_MAX_REDIRECTS):
            if out.code not in _REDIRECTS or not out.args:
                return out
            out = protocol.fetch(out.args[0])
        return out

    def _protocol(self) -> Any:
        """This thread's protocol session (created on first use)."""
        protocol = getattr(self._local, "protocol", None)
        if protocol is None:
            protocol = self._local.protocol = self._factory()
            with self._lock:
                self._protocols.append(protocol)
        return protocol
