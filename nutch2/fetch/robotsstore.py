"""robots.txt kept in the crawl's store between tasks and rounds, as RFC 9309 (section 2.4) allows.

Each host's last answer is a state record beside the table (``robots/<scheme>://<host>:<port>``, the store
contract's get_state/put_state, so it works on every store): the rules' text (zlib, base64), the verdict (parsed or
allow_all), the HTTP status class, the fetch time and the caching headers. A fetch task reads a host's record once,
when the host first comes up (the task's RobotsCache keeps the rules after that), and writes what it fetched in
batches: every minute and when it ends.

* A record is fresh for ``http.robots.cache.hours`` (24: the RFC's "SHOULD NOT use the cached version for more than
  24 hours") or less where the answer's caching headers say so (RFC 9111: ``Cache-Control: max-age`` less ``Age``,
  else ``Expires`` - ``Date``; ``no-cache`` and ``max-age=0`` keep it for no task after this one). ``no-store``: the
  answer is used by this task only, and an older record is deleted.
* 2xx (parsed or empty) and 3xx/4xx (allow all) answers are kept; 429, 5xx, a cut-off body and no answer at all
  are not. For 429, 5xx and a cut-off body (the server answers, robots.txt does not) the last kept copy stands in,
  stale or not, for ``http.robots.cache.unreachable.days`` (30, the RFC's example of "a reasonably long period",
  section 2.3.1.4) after its fetch, and the host is crawled by it; after that, or without a copy, the host is
  deferred as before. No answer at all (refused, timed out, a name that does not resolve) means the host is down:
  its URLs are failed fetches of this round as before (their pages would get no answer either), and the copy stays
  for the rounds after.
* A record is only an optimisation: one that is missing, unreadable or half written is ignored (robots.txt is
  fetched again and the record rewritten), and one lost to a kill -9 before it was written costs one request.
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
import threading
import time
import zlib
from dataclasses import dataclass, field
from typing import Any

from nutch2 import failpoints
from nutch2.config import Configuration
from nutch2.errors import ConfigError
from nutch2.fetch.headers import http_date_ms
from nutch2.fetch.output import ProtocolOutput
from nutch2.fetch.robots import ALLOW_ALL, PARSED, RobotRules
from nutch2.stores.base import DataStore

__all__ = ["CACHING_HEADERS", "ROBOTS_STATE", "RobotsRecord", "RobotsStore", "robots_store"]

log = logging.getLogger(__name__)

ROBOTS_STATE = "robots/"  # state records: robots/<scheme>://<host>:<port>
CACHING_HEADERS = ("cache-control", "expires", "date", "age")  # what a record keeps of the answer's headers
_FORMAT = 1
_SAVE_EVERY = 60.0  # seconds between two writes of the records a task fetched (and once at its end)
HostKey = tuple[str, str, int]


def record_name(key: HostKey) -> str:
    """The state record of a host: robots/<scheme>://<host>:<port>."""
    scheme, host, port = key
    return f"{ROBOTS_STATE}{scheme}://{host}:{port}"


@dataclass
class RobotsRecord:
    """One host's kept robots.txt answer: ``state`` parsed (``text`` the rules) or allow_all, ``status`` the HTTP
    status class ("2xx", "3xx", "4xx"), ``fetched`` (ms since the epoch) and the caching headers (lower-case)."""

    state: str
    status: str
    fetched: int
    headers: dict[str, str] = field(default_factory=dict)
    text: str = ""

    @classmethod
    def of(cls, out: ProtocolOutput, rules: RobotRules, now_ms: int) -> RobotsRecord | None:
        """The record of a fetched answer, or None when it may not be stored (no-store) or is no answer to keep."""
        if rules.state not in (PARSED, ALLOW_ALL) or out.http_code is None:
            return None
        headers = {k.lower(): str(v) for k, v in out.headers.items() if k.lower() in CACHING_HEADERS}
        if "no-store" in _directives(headers.get("cache-control", "")):
            return None
        return cls(rules.state, f"{out.http_code // 100}xx", now_ms, headers, rules.text)

    def rules(self) -> RobotRules:
        """The rules this record keeps."""
        return RobotRules.parse(self.text.encode("utf-8")) if self.state == PARSED else RobotRules(ALLOW_ALL)

    def lifetime(self) -> float | None:
        """Seconds the answer's caching headers keep it fresh after its fetch (RFC 9111), or None when they do not
        say."""
        cc = _directives(self.headers.get("cache-control", ""))
        age = _seconds(self.headers.get("age")) or 0.0
        if "no-cache" in cc:
            return 0.0
        if "max-age" in cc:
            max_age = _seconds(cc["max-age"])
            return 0.0 if max_age is None else max(0.0, max_age - age)
        if "expires" in self.headers:
            expires = _http_date(self.headers["expires"])
            if expires is None:  # an invalid Expires (e.g. "0") means already expired
                return 0.0
            date = _http_date(self.headers.get("date", "")) or self.fetched / 1000.0
            return max(0.0, expires - date - age)
        return None

    def to_json(self) -> str:
        value: dict[str, Any] = {"v": _FORMAT, "state": self.state, "status": self.status, "fetched": self.fetched,
                                 "headers": self.headers}
        if self.text:
            value["z"] = base64.b64encode(zlib.compress(self.text.encode("utf-8"), 6)).decode("ascii")
        return json.dumps(value, separators=(",", ":"), sort_keys=True)

    @classmethod
    def from_json(cls, raw: str) -> RobotsRecord | None:
        """The record, or None for anything but a whole record of this format."""
        try:
            value = json.loads(raw)
            if not isinstance(value, dict) or value.get("v") != _FORMAT or value.get("state") not in (PARSED,
                                                                                                       ALLOW_ALL):
                return None
            headers = value.get("headers", {})
            if not isinstance(headers, dict) or not all(isinstance(v, str) for v in headers.values()):
                return None
            fetched, status = value["fetched"], value["status"]
            if not isinstance(fetched, int) or not isinstance(status, str):
                return None
            text = zlib.decompress(base64.b64decode(value["z"], validate=True)).decode("utf-8") if "z" in value \
                else ""
            if value["state"] == PARSED and not text.strip():
                return None
        except (ValueError, TypeError, KeyError, zlib.error, binascii.Error):
            return None
        return cls(value["state"], status, fetched, headers, text)


class RobotsStore:
    """The robots.txt records of one crawl's store, for one task: reads (each host's once: the RobotsCache keeps
    what it got), and writes batched (save()). Never raises: a store that fails costs the cache, not the crawl."""

    def __init__(self, store: DataStore, hours: float = 24.0, unreachable_days: float = 30.0,
                 clock: Any = time.time) -> None:
        self.store = store
        self.max_seconds = hours * 3600.0
        self.unreachable_seconds = unreachable_days * 86400.0
        self._clock = clock
        self._lock = threading.Lock()
        self._pending: dict[str, str | None] = {}
        self._saved = time.monotonic()

    def now_ms(self) -> int:
        return int(self._clock() * 1000)

    def get(self, key: HostKey) -> RobotsRecord | None:
        """The host's record, None when there is none or it cannot be read."""
        try:
            raw = self.store.get_state(record_name(key))
        except Exception as e:  # noqa: BLE001 - a record is an optimisation: fetch robots.txt instead
            log.warning("robots.txt %s: its kept copy could not be read (%s); fetching it", key, e)
            return None
        if raw is None:
            return None
        record = RobotsRecord.from_json(raw)
        if record is None:
            log.info("robots.txt %s: its kept copy is unreadable; fetching it again", key)
        return record

    def fresh(self, record: RobotsRecord) -> bool:
        """May the record be used instead of fetching robots.txt? (younger than its lifetime, at most
        http.robots.cache.hours)."""
        lifetime = record.lifetime()
        keep = self.max_seconds if lifetime is None else min(lifetime, self.max_seconds)
        return 0 <= self.now_ms() - record.fetched < keep * 1000

    def stands_in(self, record: RobotsRecord) -> bool:
        """May the record stand in for a robots.txt answered 429, 5xx or cut off? (fetched within
        http.robots.cache.unreachable.days)."""
        return 0 <= self.now_ms() - record.fetched < self.unreachable_seconds * 1000

    def keep(self, key: HostKey, out: ProtocolOutput, rules: RobotRules, replaces: bool) -> None:
        """Keep a fetched answer for the host (``replaces``: it has a record, which no-store deletes)."""
        record = RobotsRecord.of(out, rules, self.now_ms())
        if record is not None or replaces:
            self.put(key, record)

    def put(self, key: HostKey, record: RobotsRecord | None) -> None:
        """Keep the host's record (None: delete it), written with the next save."""
        with self._lock:
            self._pending[record_name(key)] = None if record is None else record.to_json()
            due = time.monotonic() - self._saved >= _SAVE_EVERY
        if due:
            self.save()

    def save(self) -> None:
        """Write the records put since the last save; a store that fails them loses them (logged)."""
        with self._lock:
            pending, self._pending = self._pending, {}
            self._saved = time.monotonic()
        for name, value in pending.items():
            try:
                self.store.put_state(name, value)
            except Exception as e:  # noqa: BLE001 - a record is an optimisation: the next task fetches again
                log.warning("robots.txt: %d kept copies not written (%s)", len(pending), e)
                return
            failpoints.reach("robots.saved")


def robots_store(conf: Configuration, store: DataStore | None) -> RobotsStore | None:
    """The task's RobotsStore from http.robots.cache.hours and http.robots.cache.unreachable.days (None without a
    store, or with hours 0: robots.txt is then fetched once per task)."""
    hours = conf.get_float("http.robots.cache.hours")
    days = conf.get_float("http.robots.cache.unreachable.days")
    for key, value, example in (("http.robots.cache.hours", hours, 24), ("http.robots.cache.unreachable.days",
                                                                         days, 30)):
        if not value >= 0:
            raise ConfigError(f"{key}={value:g} cannot be negative: give how long a fetched robots.txt is kept "
                              f"(0 = not kept between tasks), e.g. -D {key}={example}")
    if store is None or hours == 0:
        return None
    return RobotsStore(store, hours, days)


def _directives(value: str) -> dict[str, str]:
    """Cache-Control directives: lower-case names -> values ("" when none), quotes removed."""
    out: dict[str, str] = {}
    for part in value.split(","):
        name, _, arg = part.partition("=")
        name = name.strip().lower()
        if name:
            out.setdefault(name, arg.strip().strip('"'))
    return out


def _seconds(value: str | None) -> float | None:
    """A delta-seconds value (RFC 9111), or None when it is not one."""
    if value is None or not value.strip().isdigit():
        return None
    return float(value.strip())


def _http_date(value: str) -> float | None:
    """An HTTP date as seconds since the epoch, or None."""
    ms = http_date_ms(value)
    return None if ms is None else ms / 1000.0
