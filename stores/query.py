"""What a job asks a store for (Gora's Query) and the typed, picklable pieces a store splits it into (Gora's
PartitionQuery): each partition is read by one task without reading the others' rows."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

MarkFilter = tuple[str, str | None]
FETCH_TIME_MIN, FETCH_TIME_MAX = -(2**62), 2**62


def is_mark(name: str) -> bool:
    """Marker names that start with '_' are marks (Nutch's _gnmrk_, _ftcmrk_, __prsmrk__, _updmrk_, _idxmrk_,
    _injmrk_): every backend indexes them. Other markers (dist) are row data, not indexed."""
    return name.startswith("_")


def check_mark(mark: MarkFilter | None) -> None:
    """A query can select by marks only (what every backend indexes)."""
    if mark is not None and not is_mark(mark[0]):
        raise ValueError(f"{mark[0]!r} is not a mark (marks start with '_'): it cannot select rows")


@dataclass(frozen=True)
class Due:
    """Rows due for fetching at `now` (ms): fetch_time <= now, or (a fetch time absurdly far ahead, which Nutch's
    schedule treats as due) fetch_time > horizon. With `after`, only fetch times after it: the rows that come due
    in (after, now]. Answered from the due index: its cost follows the due rows."""

    now: int
    horizon: int = FETCH_TIME_MAX
    after: int | None = None

    def ranges(self) -> tuple[tuple[int, int], ...]:
        """Inclusive fetch-time ranges of due rows."""
        low = FETCH_TIME_MIN if self.after is None else self.after + 1
        return ((low, self.now), (self.horizon + 1, FETCH_TIME_MAX)) if self.horizon < FETCH_TIME_MAX \
            else ((low, self.now),)

    def holds(self, fetch_time: int) -> bool:
        if self.after is not None and fetch_time <= self.after:
            return False
        return fetch_time <= self.now or fetch_time > self.horizon


@dataclass(frozen=True)
class Query:
    """Rows to read: `fields` (None: all), only rows carrying a mark (name, value or None for any value) or only
    due rows, keys in [start, end), at most `limit` rows. Mark and due select through an index; both at once
    is not offered."""

    fields: tuple[str, ...] | None = None
    mark: MarkFilter | None = None
    due: Due | None = None
    start: str | None = None
    end: str | None = None
    limit: int | None = None

    def __post_init__(self) -> None:
        check_mark(self.mark)
        if self.mark is not None and self.due is not None:
            raise ValueError("a query selects by a mark or by due time, not both")
        if self.fields is not None and not isinstance(self.fields, tuple):
            object.__setattr__(self, "fields", tuple(self.fields))

    @property
    def indexed(self) -> bool:
        """Answered from an index (mark or due) rather than by reading the table."""
        return self.mark is not None or self.due is not None

    def with_fields(self, *extra: str) -> Query:
        """The same query reading `extra` fields too (what an index check needs)."""
        if self.fields is None:
            return self
        return replace(self, fields=tuple(dict.fromkeys((*self.fields, *extra))))


class Partition:
    """Base of the typed pieces of a query (frozen dataclasses: they pickle and compare)."""


@dataclass(frozen=True)
class KeyRange(Partition):
    """Keys in [start, end) (None: open): sorted stores."""

    start: str | None = None
    end: str | None = None

    def holds(self, key: str) -> bool:
        return (self.start is None or key >= self.start) and (self.end is None or key < self.end)


@dataclass(frozen=True)
class TokenRange(Partition):
    """Partition-key tokens in (lo, hi] of a hash ring (Cassandra)."""

    lo: int
    hi: int


@dataclass(frozen=True)
class Shards(Partition):
    """Index shards (stable hash of the row key modulo the store's shard count): a partition of a query answered
    from a store's entry index (stores/index.py)."""

    shards: tuple[int, ...]


class Capability(enum.Enum):
    """What a store class offers; runners and the searcher ask for these instead of store names."""

    SHARED_PROCESSES = "rows seen by other processes of this machine"
    SHARED_MACHINES = "rows seen by other machines"
    DURABLE = "rows survive the process"
    ORDERED_SCANS = "scans return rows in key order"
    TRANSACTIONS = "a row and its index entries are written in one transaction"
    AGGREGATES = "table statistics from an aggregate query, without reading every row"


@dataclass
class Aggregate:
    """Table statistics a store computes itself (readdb -stats): rows per status and per retry count, scores,
    rows per reversed host, the row key up to its first ':' (when asked)."""

    total: int = 0
    status: dict[int, int] = field(default_factory=dict)
    retries: dict[int, int] = field(default_factory=dict)
    score_sum: float = 0.0
    score_min: float | None = None
    score_max: float | None = None
    hosts: dict[str, int] | None = None

    @classmethod
    def of(cls, pairs: Mapping[tuple[int, int], int], score_sum: float, low: float, high: float,
           hosts: Mapping[str, int] | None) -> Aggregate:
        """From rows counted per (status, retries) pair, their scores' sum, min and max, and (when asked) rows
        per reversed host: what a store that reads every row counts."""
        agg = cls(score_sum=score_sum, hosts=None if hosts is None else dict(hosts))
        for (status, retries), n in pairs.items():
            agg.total += n
            agg.status[status] = agg.status.get(status, 0) + n
            agg.retries[retries] = agg.retries.get(retries, 0) + n
        if agg.total:
            agg.score_min, agg.score_max = low, high
        return agg
