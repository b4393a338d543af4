"""The index entries every store keeps with its rows, and the one mechanism that maintains them for stores that
write a row and its entries without a transaction (HBase, Cassandra).

Two indexes, derived from a row's values when it is written:
- the mark index (MARK): one entry per mark the row carries (markers whose names start with '_'), in bucket
  `<name> NUL <value>` — a batch's rows are one bucket;
- the due index (DUE): one entry per row with a fetch time, in a bucket of ~25 days (DUE_BUCKET_MS), the term
  the fetch time written so that it sorts — selecting the rows due now reads the due entries, not the table.
Every entry also falls in one of SHARDS shards (a stable hash of the row key), so a query answered from an index
splits into shard sets (stores/query.py Shards) that tasks read without reading each other's entries or rows.

Stores with transactions (sqlite, postgres, memory) write entries and row together and need nothing more. The
others plug their storage into EntryIndex (EntryStorage): entries are written before the row, a put never
reads the row to learn which entries it makes obsolete, and so entries go stale (the mark was removed, the fetch
time moved, the row deleted, a crash between entries and row). A selection reads each entry's row, returns the
row only if it still carries the entry's term, and deletes the entry when it is stale for sure: the row was
written at or after the entry, or the entry is older than any write could still be in flight. The delete
carries the entry's own stamp, so an entry written again meanwhile survives it.
Tables made before an index existed are indexed by the first selection through it (one read of every row),
recorded as complete in the entry storage; puts index what they write meanwhile.
"""

from __future__ import annotations

import heapq
import time
import zlib
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from itertools import chain
from typing import Any

from nutch2 import failpoints
from nutch2.stores.base import DataStore
from nutch2.stores.query import FETCH_TIME_MIN, Due, Query, Shards, check_mark, is_mark
from nutch2.webpage import ALL_FIELDS, WebPage

SHARDS = 16
MARK, DUE = "m", "d"
INDEXES = (MARK, DUE)
DUE_BUCKET_MS = 2**31  # ~24.9 days of fetch times per due bucket
CHUNK = 256  # entries whose rows are read in one batched get
READ_AHEAD = 2  # chunks whose rows are read while the caller takes the rows of the chunk before
LARGE_FIELDS = frozenset({"content", "text", "prev_content"})  # a page's bytes: one chunk read ahead, not two
SOURCE_FIELDS = {MARK: "markers", DUE: "fetch_time"}


def shard_of(key: str) -> int:
    return zlib.crc32(key.encode("utf-8")) % SHARDS


def all_shards() -> Shards:
    return Shards(tuple(range(SHARDS)))


def shard_groups(n: int) -> list[Shards]:
    """The index shards in at most n groups: the partitions of an indexed query."""
    n = min(max(1, n), SHARDS)
    return [Shards(tuple(range(i, SHARDS, n))) for i in range(n)]


@dataclass(frozen=True, order=True)
class Entry:
    """One index entry: (index, bucket, term, key); entries of one bucket and shard sort by (term, key)."""

    index: str
    bucket: str
    term: str
    key: str

    @property
    def shard(self) -> int:
        return shard_of(self.key)


def mark_bucket(name: str, value: str) -> str:
    return f"{name}\x00{value}"


def due_bucket(fetch_time: int) -> int:
    return fetch_time // DUE_BUCKET_MS


def due_term(fetch_time: int) -> str:
    return f"{fetch_time - FETCH_TIME_MIN:019d}"


NEW_MARKS = "__marks_new__"  # in a buffered row's values: the marks its write adds (new_marks)


def new_marks(page: WebPage) -> dict[str, str]:
    """The marks a write of the page's markers adds: those the row did not carry with that value when it was read
    (every mark when its markers were not read, or were assigned whole). A mark the row already carried has its
    entry: it was written before the row that carried the mark, and is dropped only once the row does not carry
    it. Parse, fetch and generate so write one entry a row, not one per mark the row carries."""
    markers = page.markers
    stored = page.stored_markers()
    if stored is None:
        return dict(markers)
    return {n: v for n, v in markers.items() if stored.get(n) != v}


GONE_MARKS = "__marks_gone__"  # in a buffered row's values: the marks its write removes (gone_marks)


def gone_marks(page: WebPage) -> dict[str, str]:
    """The marks the row carried when it was read that a write of its markers removes or changes (none known when
    its markers were not read, or were assigned whole): their entries are stale once the row is written, and are
    dropped then (drop_gone), not left for a later selection of their bucket, which a finished batch never gets."""
    stored = page.stored_markers()
    if stored is None:
        return {}
    markers = page.markers
    return {n: v for n, v in stored.items() if is_mark(n) and markers.get(n) != v}


def entries_of(key: str, values: dict[str, Any]) -> list[Entry]:
    """The entries a write of these field values makes (the marks it adds, else markers written whole; a fetch
    time)."""
    out = []
    markers = values[NEW_MARKS] if NEW_MARKS in values else values.get("markers")
    for name, value in (markers or {}).items():
        if is_mark(name):
            out.append(Entry(MARK, mark_bucket(name, str(value)), "", key))
    fetch_time = values.get("fetch_time")
    if fetch_time is not None:
        out.append(Entry(DUE, str(due_bucket(int(fetch_time))), due_term(int(fetch_time)), key))
    return out


def carries(page: WebPage, entry: Entry) -> bool:
    """Does the row (read with the entry's source field) still carry the entry's term?"""
    if entry.index == MARK:
        name, _, value = entry.bucket.partition("\x00")
        return page.markers.get(name) == value
    return due_term(page.fetch_time) == entry.term and "fetch_time" in page.loaded()


@dataclass(frozen=True)
class Selection:
    """What a query reads from one index: buckets (None: every bucket whose name passes `accepts`) and
    inclusive term ranges."""

    index: str
    buckets: tuple[str, ...] | None
    terms: tuple[tuple[str, str], ...]
    prefix: str = ""
    due: Due | None = None

    def accepts(self, bucket: str) -> bool:
        if self.index == MARK:
            return bucket.startswith(self.prefix)
        assert self.due is not None
        b = int(bucket)
        return any(due_bucket(lo) <= b <= due_bucket(hi) for lo, hi in self.due.ranges())


def selection(query: Query) -> Selection:
    if query.mark is not None:
        name, value = query.mark
        check_mark(query.mark)
        if value is not None:
            return Selection(MARK, (mark_bucket(name, value),), (("", ""),))
        return Selection(MARK, None, (("", ""),), prefix=f"{name}\x00")
    assert query.due is not None
    terms = tuple((due_term(lo), due_term(hi)) for lo, hi in query.due.ranges())
    return Selection(DUE, None, terms, due=query.due)


class EntryStorage(ABC):
    """What a store without transactions provides for its index entries (stamps are ms, the same clock as the
    stamps of the rows that fetch_rows returns)."""

    @abstractmethod
    def put_entries(self, entries: list[Entry], stamp: int) -> None:
        """Write entries at `stamp`."""

    @abstractmethod
    def scan_entries(self, index: str, bucket: str, shard: int, lo: str, hi: str, start: str | None,
                     end: str | None) -> Iterator[tuple[Entry, int]]:
        """(entry, stamp) of one bucket and shard with lo <= term <= hi and start <= key < end, in (term, key)
        order."""

    @abstractmethod
    def drop_entries(self, stale: list[tuple[Entry, int]]) -> None:
        """Delete each entry at its own stamp (an entry written again later survives)."""

    @abstractmethod
    def buckets(self, index: str) -> list[str]:
        """Buckets that may hold entries of `index` (some may be empty)."""

    @abstractmethod
    def forget_bucket(self, index: str, bucket: str, before: int) -> None:
        """A bucket found with no entry left: `buckets` need not list it unless an entry was written to it at or
        after `before` (ms)."""

    @abstractmethod
    def fetch_rows(self, keys: list[str], fields: tuple[str, ...]) -> dict[str, tuple[WebPage, int]]:
        """The rows that exist among keys, with `fields` and the stamp of their last write."""

    @abstractmethod
    def is_complete(self, index: str) -> bool:
        """Does the index hold the entries of rows written before it existed?"""

    @abstractmethod
    def set_complete(self, index: str) -> None:
        """Record that it does."""

    @abstractmethod
    def scan_all(self, fields: tuple[str, ...]) -> Iterator[WebPage]:
        """Every row (for a backfill)."""


class EntryIndex:
    """The mark and due indexes of a store without transactions, over its EntryStorage.

    `in_flight_ms`: the longest a write of entries then rows can take (retries included): an entry older than
    that whose row does not carry it is stale whatever the row's stamp says."""

    def __init__(self, storage: EntryStorage, in_flight_ms: int) -> None:
        self.storage = storage
        self.in_flight_ms = in_flight_ms
        self.entries_read = 0
        self.rows_read = 0
        self.entries_kept = 0  # entries left because their rows' writes may still be in flight
        self._complete: set[str] = set()

    def write(self, pending: dict[str, dict[str, Any]], stamp: int) -> None:
        """Entries of a batch of row writes, before the rows are written (the caller writes them next)."""
        entries = [e for key, values in pending.items() for e in entries_of(key, values)]
        if entries:
            self.storage.put_entries(entries, stamp)
        failpoints.reach("store.marks.indexed")  # crash tests stop here: entries written, rows not

    def drop_gone(self, pending: dict[str, dict[str, Any]], stamp: int) -> None:
        """After a batch of row writes at `stamp` is durable: drop the entries of the marks they removed (GONE_MARKS),
        at that stamp, so an entry written again later survives. Without this every batch would leave an entry per
        row and mark (generate, fetch, parse; updatedb's older value) that no selection reads again: the index
        would grow with the crawl's age, and every listing of its buckets with it."""
        stale = [(Entry(MARK, mark_bucket(name, str(value)), "", key), stamp)
                 for key, values in pending.items() for name, value in (values.get(GONE_MARKS) or {}).items()]
        if stale:
            self.storage.drop_entries(stale)

    def ensure_complete(self, index: str) -> None:
        if index in self._complete:
            return
        if not self.storage.is_complete(index):
            self._backfill(index)
        self._complete.add(index)

    def _backfill(self, index: str) -> None:
        """Index every row (idempotent: rows put meanwhile index themselves), then record it."""
        source = SOURCE_FIELDS[index]
        batch: list[Entry] = []
        for page in self.storage.scan_all((source,)):
            values = {source: getattr(page, source)} if source in page.loaded() else {}
            batch += [e for e in entries_of(page.key, values) if e.index == index]
            if len(batch) >= 1000:
                self.storage.put_entries(batch, int(time.time() * 1000))
                batch = []
        if batch:
            self.storage.put_entries(batch, int(time.time() * 1000))
        self.storage.set_complete(index)

    def select(self, query: Query, shards: Shards | None = None) -> Iterator[WebPage]:
        """Rows of an indexed query in the given shards (all when None); mark queries in key order."""
        sel = selection(query)
        self.ensure_complete(sel.index)
        buckets = sel.buckets if sel.buckets is not None else tuple(
            b for b in self.storage.buckets(sel.index) if sel.accepts(b))
        streams = [self._entries(sel.index, b, s, lo, hi, query.start, query.end)
                   for b in buckets for s in (shards or all_shards()).shards for lo, hi in sel.terms]
        entries: Iterable[tuple[Entry, int]] = (
            heapq.merge(*streams, key=lambda es: es[0].key) if sel.index == MARK else _chain(streams))
        source = SOURCE_FIELDS[sel.index]
        read = query.with_fields(source).fields or ALL_FIELDS
        if query.limit is None:  # every row: the next chunks' rows are read while the caller takes these
            yield from self._read_ahead(_chunked(entries, CHUNK), read, query.fields)
            return
        # a few rows (a limit): the first chunk no bigger than the rows wanted, none read ahead; each chunk after
        # one that left rows wanted is twice as big (up to CHUNK), so that the stale entries of a finished batch
        # (a mark every row has lost) cost a get a chunk, not a get an entry
        left, size = query.limit, min(CHUNK, query.limit)
        chunk: list[tuple[Entry, int]] = []
        for item in chain(entries, (None,)):  # None: the end
            if item is not None:
                chunk.append(item)
            if chunk and (item is None or len(chunk) >= size):
                for page in self._checked(chunk, self._rows(chunk, read), query.fields):
                    yield page
                    left -= 1
                    if left <= 0:
                        return
                chunk, size = [], min(CHUNK, size * 2)

    def _rows(self, chunk: list[tuple[Entry, int]], read: tuple[str, ...]) -> tuple[dict[str, Any], float]:
        """The chunk's rows (with their stamps) and the oldest stamp a write still in flight at the read can
        have: taken before the read, so an entry is not judged by a row read before its write could end."""
        oldest_in_flight = time.time() * 1000 - self.in_flight_ms
        return self.storage.fetch_rows(list(dict.fromkeys(e.key for e, _ in chunk)), read), oldest_in_flight

    def _read_ahead(self, chunks: Iterator[list[tuple[Entry, int]]], read: tuple[str, ...],
                    want: tuple[str, ...] | None) -> Iterator[WebPage]:
        """The checked rows of each chunk, READ_AHEAD chunks' rows being read meanwhile on helper threads: the
        server reads the next chunks while the client decodes and the caller uses this one (one batched get at a
        time left both waiting on each other)."""
        depth = 1 if LARGE_FIELDS.intersection(read) else READ_AHEAD  # pages' content: fewer held at once
        with ThreadPoolExecutor(depth, thread_name_prefix="index-read") as pool:
            ahead: deque[tuple[list[tuple[Entry, int]], Future[Any]]] = deque()
            try:
                for chunk in chunks:
                    ahead.append((chunk, pool.submit(self._rows, chunk, read)))
                    if len(ahead) > depth:
                        chunk, rows = ahead.popleft()
                        yield from self._checked(chunk, rows.result(), want)
                while ahead:
                    chunk, rows = ahead.popleft()
                    yield from self._checked(chunk, rows.result(), want)
            finally:
                for _, rows in ahead:  # the caller stopped early: reads not yet begun are not needed
                    rows.cancel()

    def _entries(self, index: str, bucket: str, shard: int, lo: str, hi: str, start: str | None,
                 end: str | None) -> Iterator[tuple[Entry, int]]:
        for item in self.storage.scan_entries(index, bucket, shard, lo, hi, start, end):
            self.entries_read += 1
            yield item

    def _checked(self, chunk: list[tuple[Entry, int]], read: tuple[dict[str, tuple[WebPage, int]], float],
                 want: tuple[str, ...] | None) -> list[WebPage]:
        """The chunk's rows that still carry their entry's term; entries stale for sure are dropped."""
        rows, oldest_in_flight = read
        self.rows_read += len(rows)
        if isinstance(self.storage, DataStore):
            self.storage.rows_read += len(rows)
        pages, stale = [], []
        for entry, stamp in chunk:
            page, row_stamp = rows.get(entry.key, (None, -1))
            if page is not None and carries(page, entry):
                if want is not None and set(page.loaded()) - set(want):
                    page = WebPage.from_store(page.key, {n: getattr(page, n) for n in want if n in page.loaded()})
                pages.append(page)
            elif row_stamp >= stamp or stamp < oldest_in_flight:
                stale.append((entry, stamp))
            else:  # the row's write may still be in flight (entries first, then rows): leave the entry
                self.entries_kept += 1
        if stale:
            self.storage.drop_entries(stale)
        return pages

    def mark_values(self, name: str) -> set[str]:
        """Values of a mark that at least one row carries now. A bucket left with no entry at all (every row lost
        the mark: a finished batch) is forgotten, so that a long crawl's later calls do not read it again."""
        check_mark((name, None))
        self.ensure_complete(MARK)
        values = set()
        prefix = f"{name}\x00"
        for bucket in self.storage.buckets(MARK):
            if bucket.startswith(prefix):
                value = bucket[len(prefix):]
                begun, kept = int(time.time() * 1000), self.entries_kept
                if next(self.select(Query(fields=("markers",), mark=(name, value), limit=1)), None) is not None:
                    values.add(value)
                elif self.entries_kept == kept:  # every entry read was stale, and dropped
                    self.storage.forget_bucket(MARK, bucket, begun - self.in_flight_ms)
        return values


def _chunked(items: Iterable[tuple[Entry, int]], size: int) -> Iterator[list[tuple[Entry, int]]]:
    """Lists of `size` items, the last one shorter."""
    chunk: list[tuple[Entry, int]] = []
    for item in items:
        chunk.append(item)
        if len(chunk) >= size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def _chain(streams: list[Iterator[tuple[Entry, int]]]) -> Iterator[tuple[Entry, int]]:
    for s in streams:
        yield from s
