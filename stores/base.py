"""The store contract (Gora's DataStore): rows keyed by reversed URL, partial reads and dirty-only writes."""

from __future__ import annotations

import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from typing import Any

from nutch2 import failpoints
from nutch2.errors import StoreError
from nutch2.webpage import WebPage

KeyRange = tuple[str | None, str | None]
MarkFilter = tuple[str, str | None]
Split = Any  # what splits() returns and scan_split() takes: a KeyRange for sorted stores, a token range for Cassandra


def is_mark(name: str) -> bool:
    """Marker names that start with '_' are marks (Nutch's _gnmrk_, _ftcmrk_, __prsmrk__, _updmrk_, _idxmrk_,
    _injmrk_): every backend indexes them. Other markers (dist) are row data, not indexed."""
    return name.startswith("_")


def check_mark(mark: MarkFilter | None) -> None:
    """A scan can select by marks only (what every backend indexes)."""
    if mark is not None and not is_mark(mark[0]):
        raise ValueError(f"{mark[0]!r} is not a mark (marks start with '_'): it cannot select rows")


class DataStore(ABC):
    """A table of WebPage rows. Keys sort as UTF-8 bytes; ranges are [start, end) with None for open ends.

    `mark=(name, value)` restricts a scan to rows whose markers[name] == value (value None: any value). Only
    marks (is_mark) can select rows; every backend answers from an index of them, never by reading every row.
    """

    name = "abstract"
    crawl_id: str | None = None  # set by open_store: what a task in another process opens the same table with

    def __init__(self, table: str) -> None:
        self.table = table

    @abstractmethod
    def create_schema(self) -> None:
        """Create the table if it does not exist."""

    @abstractmethod
    def drop_schema(self) -> None:
        """Drop the table and everything in it."""

    @abstractmethod
    def get(self, key: str, fields: list[str] | tuple[str, ...] | None = None) -> WebPage | None:
        """The row with only `fields` loaded (all when None), or None if absent."""

    @abstractmethod
    def put(self, key: str, page: WebPage) -> None:
        """Write the page's dirty fields (buffered until flush or a full batch), then clear its dirty set."""

    @abstractmethod
    def delete(self, key: str) -> None:
        """Delete the row."""

    @abstractmethod
    def scan(
        self,
        start: str | None = None,
        end: str | None = None,
        fields: list[str] | tuple[str, ...] | None = None,
        mark: MarkFilter | None = None,
    ) -> Iterator[WebPage]:
        """Rows with start <= key < end in key order, optionally only those carrying a mark."""

    @abstractmethod
    def splits(self, n: int) -> list[Split]:
        """At most n splits that together cover the table without overlapping, for parallel map tasks."""

    def scan_split(
        self, split: Split, fields: list[str] | tuple[str, ...] | None = None, mark: MarkFilter | None = None
    ) -> Iterator[WebPage]:
        """Rows of one split (key order within a split is not promised across backends)."""
        start, end = split
        return self.scan(start, end, fields, mark)

    @abstractmethod
    def flush(self) -> None:
        """Write buffered puts and deletes."""

    def count(self, mark: MarkFilter | None = None) -> int:
        """Rows in the table (or carrying a mark). Backends may override with something cheaper."""
        return sum(1 for _ in self.scan(fields=("status",), mark=mark))

    def cheap_count(self) -> int | None:
        """The table's rows when the store keeps that number, without reading every row (what a page view may
        ask: the searcher's dashboard); None when only count() can tell, by reading them all."""
        return None

    def mark_values(self, name: str) -> set[str]:
        """The values mark `name` has in the table now (e.g. the batch ids still carrying a generate mark)."""
        check_mark((name, None))
        return {v for p in self.scan(fields=("markers",), mark=(name, None)) if (v := p.markers.get(name))}

    # ---------------------------------------------------------------- crawl state
    # A few small named values kept beside the table (the batch journal, nutch2/crawldb/journal.py). Written at once,
    # not buffered, so that a job can record a step as done only after the rows it wrote are durable.

    @abstractmethod
    def get_state(self, name: str) -> str | None:
        """The value stored under `name`, or None."""

    @abstractmethod
    def put_state(self, name: str, value: str | None) -> None:
        """Write buffered rows, then store `value` under `name` durably (None deletes it)."""

    @abstractmethod
    def states(self) -> dict[str, str]:
        """Every stored name and value."""

    def close(self) -> None:
        """Flush and release connections."""
        self.flush()

    def __enter__(self) -> DataStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class BufferedStore(DataStore):
    """A store that buffers puts and deletes per key and writes them in batches of `batch_size` rows.

    Pending values per key merge (later puts win); a pending delete stays, so write_batch deletes the old row
    and then writes what was put after it. A failed write_batch keeps the rows for the next flush.
    """

    def __init__(self, table: str, batch_size: int) -> None:
        super().__init__(table)
        self.batch_size = max(1, batch_size)
        self._lock = threading.RLock()  # guards _pending: held only for a moment by put/delete/flush
        self._flush_lock = threading.RLock()  # one batch written at a time, in order; puts go on meanwhile
        self._pending: dict[str, dict[str, Any]] = {}

    def encode(self, page: WebPage) -> dict[str, Any]:
        """The page's dirty values as this backend buffers them."""
        return page.dirty_values()

    @abstractmethod
    def write_batch(self, pending: dict[str, dict[str, Any]]) -> None:
        """Write buffered rows: {key: {field: value, "__delete__": True?, ...}}; raise StoreError on failure."""

    def put(self, key: str, page: WebPage) -> None:
        values = self.encode(page)
        page.clear_dirty()
        with self._lock:
            self._pending.setdefault(key, {}).update(values)
            full = len(self._pending) >= self.batch_size
        if full:
            self.flush()

    def delete(self, key: str) -> None:
        with self._lock:
            self._pending[key] = {"__delete__": True}
            full = len(self._pending) >= self.batch_size
        if full:
            self.flush()

    def flush(self) -> None:
        with self._flush_lock:
            with self._lock:
                if not self._pending:
                    return
                pending, self._pending = self._pending, {}
            try:
                self.write_batch(pending)
                failpoints.reach("store.flush")
            except Exception:
                with self._lock:  # keep the batch for the next flush, under what was put since
                    for key, values in pending.items():
                        newer = self._pending.get(key)
                        if newer is None:
                            self._pending[key] = values
                        elif "__delete__" not in newer:
                            self._pending[key] = {**values, **newer}
                raise

    def flush_key(self, key: str) -> None:
        """Before a get of `key`: write the buffered rows if `key` is among them, or wait for a batch being
        written. A get of a row that is not buffered does not flush (updatedb reads one row per new link)."""
        with self._lock:
            buffered = key in self._pending
        if buffered:
            self.flush()
        else:
            with self._flush_lock:
                pass

    def discard_pending(self) -> None:
        with self._lock:
            self._pending.clear()


def with_retries(fn: Callable[[], Any], retries: int, transient: Callable[[Exception], bool],
                 fail: Callable[[Exception], Exception], first_delay: float = 0.5) -> Any:
    """fn(), retried after transient failures with a doubling backoff (at most 5 s); the last failure, or a
    permanent one, is raised as fail(e). Service stores use it for reconnects after timeouts and restarts."""
    delay = first_delay
    for attempt in range(retries + 1):
        try:
            return fn()
        except StoreError:
            raise
        except Exception as e:
            if attempt == retries or not transient(e):
                raise fail(e) from None
            time.sleep(delay)
            delay = min(delay * 2, 5.0)
    raise AssertionError("unreachable")


def in_range(key: str, start: str | None, end: str | None) -> bool:
    return (start is None or key >= start) and (end is None or key < end)
