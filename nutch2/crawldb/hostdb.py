"""The host database (Nutch's HostDb): one HostDatum per host of the table, kept beside it.

A host's datum is a function of its rows (`nutch2 updatehostdb`, jobs/hostdb.py, computes it again each time, so a
rerun after a kill gives the same table): its rows per status (Nutch's unfetched, fetched, gone, redirTemp,
redirPerm, notModified; duplicate and numRecords added so that the counts add up to `readdb -stats -sort`'s),
its failures (dnsFailures: rows whose last fetch found no address; connectionFailures: rows whose last fetch got
no HTTP answer, refused, reset or timed out; numFailures: both), its score (the sum of its rows' scores, with
min/max/avg), its home page (its fetched root URL, an https one first) and lastCheck (when updatehostdb computed it).

The datums are state records `hostdb/<host>` of the table's store: every store keeps them, with no code of its
own, and reading the host table costs one record per host (O(hosts), never a read of the rows).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import asdict, dataclass, fields
from typing import Any
from urllib.parse import urlsplit

from nutch2.status import CrawlStatus, ProtocolStatusCode, is_dns_failure
from nutch2.stores.base import DataStore
from nutch2.urls.tableutil import host_of_key, unreverse_url
from nutch2.webpage import WebPage

_FETCHER_ERROR = "fetcher error:"  # the fetcher's own failure on a URL (nutch2/fetch/fetcher.py), not the host's
# failures after the server answered, not of the connection: a response http.client could not read (protocol-http's
# "bad response: ..."), a body that did not decode
_ANSWERED = (_FETCHER_ERROR, "bad response", "content decoding error")

PREFIX = "hostdb/"  # the state records' names: hostdb/<host>
ROW_FIELDS = ("status", "score", "protocol_status")  # what updatehostdb reads of a row

_STATUS_FIELD = {
    CrawlStatus.INJECTED: "unfetched", CrawlStatus.UNFETCHED: "unfetched",
    CrawlStatus.RETRY: "unfetched",  # Nutch 1.x's db_unfetched with a retry count
    CrawlStatus.FETCHED: "fetched", CrawlStatus.GONE: "gone", CrawlStatus.REDIR_TEMP: "redirTemp",
    CrawlStatus.REDIR_PERM: "redirPerm", CrawlStatus.NOTMODIFIED: "notModified", CrawlStatus.DUPLICATE: "duplicate",
}


@dataclass
class HostDatum:
    """Nutch's HostDatum, with its field names (what -expr and the generate expressions name)."""

    unfetched: int = 0
    fetched: int = 0
    gone: int = 0
    redirTemp: int = 0
    redirPerm: int = 0
    notModified: int = 0
    duplicate: int = 0
    numRecords: int = 0
    numFailures: int = 0
    dnsFailures: int = 0
    connectionFailures: int = 0
    score: float = 0.0
    scoreMin: float = 0.0
    scoreMax: float = 0.0
    homepageUrl: str = ""
    lastCheck: int = 0  # ms since the epoch
    _home_rank: int = -1  # how good homepageUrl is (a partial's; not stored)

    def add(self, page: WebPage) -> None:
        """Count one row of the host."""
        name = _STATUS_FIELD.get(page.status)  # type: ignore[call-overload]
        if name is not None:
            setattr(self, name, getattr(self, name) + 1)
        ps = page.protocol_status
        if ps is not None and ps.code == ProtocolStatusCode.EXCEPTION:
            reason = ps.args[0] if ps.args else ""
            if is_dns_failure(reason):
                self.dnsFailures += 1
            elif not reason[:3].isdigit() and not reason.startswith(_ANSWERED):  # the server did not answer
                self.connectionFailures += 1  # (a 5xx, "301 redirect without Location", a bad response: answers)
        self.numFailures = self.dnsFailures + self.connectionFailures
        s = float(page.score)
        self.scoreMin = s if not self.numRecords else min(self.scoreMin, s)
        self.scoreMax = s if not self.numRecords else max(self.scoreMax, s)
        self.score += s
        self.numRecords += 1
        if page.status in (CrawlStatus.FETCHED, CrawlStatus.NOTMODIFIED):
            self._home(unreverse_url(page.key))

    def _home(self, url: str) -> None:
        """A fetched root URL is the host's home page (an https one first)."""
        parts = urlsplit(url)
        if parts.path == "/" and not parts.query:
            rank = int(parts.scheme == "https")
            if (rank, url) > (self._home_rank, self.homepageUrl):
                self._home_rank, self.homepageUrl = rank, url

    def merge(self, other: HostDatum) -> None:
        """Add another partial datum of the same host (the reduce of updatehostdb)."""
        if other.numRecords:
            self.scoreMin = other.scoreMin if not self.numRecords else min(self.scoreMin, other.scoreMin)
            self.scoreMax = other.scoreMax if not self.numRecords else max(self.scoreMax, other.scoreMax)
        for f in COUNTS:
            setattr(self, f, getattr(self, f) + getattr(other, f))
        self.score += other.score
        if (other._home_rank, other.homepageUrl) > (self._home_rank, self.homepageUrl):
            self._home_rank, self.homepageUrl = other._home_rank, other.homepageUrl

    @property
    def scoreAvg(self) -> float:
        return self.score / self.numRecords if self.numRecords else 0.0

    def values(self, host: str) -> dict[str, Any]:
        """The fields an expression sees: the stored ones, scoreAvg and host."""
        out = self.to_dict()
        out["scoreAvg"] = self.scoreAvg
        out["host"] = host
        return out

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out.pop("_home_rank")
        return out

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    @classmethod
    def from_json(cls, raw: str) -> HostDatum | None:
        """The datum a record holds (None: not one: a record of an older or newer layout is skipped)."""
        try:
            data = json.loads(raw)
            return cls(**{k: v for k, v in data.items() if k in STORED})
        except (ValueError, TypeError):
            return None


STORED = tuple(f.name for f in fields(HostDatum) if not f.name.startswith("_"))
COUNTS = ("unfetched", "fetched", "gone", "redirTemp", "redirPerm", "notModified", "duplicate", "numRecords",
          "numFailures", "dnsFailures", "connectionFailures")
EXPR_NAMES = (*STORED, "scoreAvg", "host")  # what an expression may name


def host_of_row(page: WebPage) -> str:
    """The host a row counts for (readdb -stats -sort's)."""
    return host_of_key(page.key)


def state_name(host: str) -> str:
    return PREFIX + host


def hosts(store: DataStore) -> Iterator[tuple[str, HostDatum]]:
    """Every host of the host table with its datum, sorted by host name."""
    for name, raw in sorted(store.states(PREFIX).items()):
        if name.startswith(PREFIX) and (datum := HostDatum.from_json(raw)) is not None:
            yield name[len(PREFIX):], datum


def host_table(store: DataStore) -> dict[str, HostDatum]:
    """The host table as a dict (what generate loads once per task)."""
    return dict(hosts(store))


def get_host(store: DataStore, host: str) -> HostDatum | None:
    raw = store.get_state(state_name(host))
    return None if raw is None else HostDatum.from_json(raw)
