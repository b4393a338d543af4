"""The store contract (Gora's DataStore): rows keyed by reversed URL, partial reads and dirty-only writes."""

from __future__ import annotations

import logging
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from nutch2 import failpoints
from nutch2.errors import ConfigError, StoreError, StoreUnavailable
from nutch2.stores.query import Aggregate, Capability, Due, KeyRange, MarkFilter, Partition, Query, check_mark, is_mark
from nutch2.webpage import WebPage

if TYPE_CHECKING:
    from nutch2.config import Configuration

log = logging.getLogger(__name__)

__all__ = ["DataStore", "BufferedStore", "Fence", "KeyRange", "MarkFilter", "Query", "Partition", "Capability",
           "check_mark", "is_mark", "with_retries", "Gone", "data_dir"]

Fields = list[str] | tuple[str, ...] | None
NEXT_DUE_WITHIN_MS = 400 * 86_400_000  # next_fetch_time looks this far ahead (Nutch's max interval is 90 days)


class Fence:
    """A fencing token: a state write carrying it lands only while the lease `name` still has this token."""

    def __init__(self, name: str, token: int) -> None:
        self.name = name
        self.token = token

    def lost(self) -> Exception:
        from nutch2.errors import LeaseLost

        return LeaseLost(f"this command lost its lease {self.name.removeprefix('lease/')} (another command took it "
                         "over after this one stopped renewing it): it records nothing more; run it again")

    def holds(self, raw: str | None) -> bool:
        import json

        try:
            return raw is not None and json.loads(raw).get("token") == self.token and \
                json.loads(raw).get("state") == "held"
        except ValueError:
            return False


class DataStore(ABC):
    """A table of WebPage rows (Gora's DataStore). Keys sort as UTF-8 bytes; ranges are [start, end).

    A job reads through a Query (fields, mark or due, key range, limit) that the store splits into typed
    partitions (partitions(query, n)); read(query, partition) reads one without reading the others' rows.
    Mark and due queries are answered from indexes kept with the rows (stores/index.py), never by reading
    every row. A store class declares its name, the Gora class names it answers to and its capabilities, and
    builds itself from the configuration (from_conf)."""

    name: ClassVar[str] = "abstract"
    aliases: ClassVar[tuple[str, ...]] = ()  # Gora class names a Nutch user may have in nutch-site.xml
    capabilities: ClassVar[frozenset[Capability]] = frozenset()
    crawl_id: str | None = None  # set by open_store: what a task in another process opens the same table with

    def __init__(self, table: str) -> None:
        self.table = table
        self.rows_read = 0  # rows read by read() (and the index's row checks): what a test of partitions counts

    @classmethod
    @abstractmethod
    def from_conf(cls, conf: Configuration, table: str, create: bool) -> DataStore:
        """The store of `table` as the configuration describes it (create=False: the table must exist where
        the store cannot create it lazily)."""

    @classmethod
    def has(cls, capability: Capability) -> bool:
        return capability in cls.capabilities

    @classmethod
    def tables(cls, conf: Configuration) -> list[str] | None:
        """The webpage tables the configured store holds, every crawl's, sorted (stores/__init__.py crawl_ids
        names their crawls); None: this store cannot list them."""
        return None

    @classmethod
    def forget(cls, conf: Configuration, table: str) -> None:
        """After drop_schema of a table no one else uses: remove what the store keeps for it beyond its tables (the
        sqlite store: its file, when it holds no table any more). Nothing by default."""
        return

    @abstractmethod
    def create_schema(self) -> None:
        """Create the table if it does not exist."""

    @abstractmethod
    def drop_schema(self) -> None:
        """Drop the table and everything in it."""

    @abstractmethod
    def get(self, key: str, fields: Fields = None) -> WebPage | None:
        """The row with only `fields` loaded (all when None), or None if absent."""

    def get_many(self, keys: list[str], fields: Fields = None) -> dict[str, WebPage]:
        """The rows that exist among `keys` (a store with a batched read overrides this)."""
        return {k: p for k in keys if (p := self.get(k, fields)) is not None}

    @abstractmethod
    def put(self, key: str, page: WebPage) -> None:
        """Write the page's dirty fields (buffered until flush or a full batch), then clear its dirty set."""

    @abstractmethod
    def delete(self, key: str) -> None:
        """Delete the row."""

    @abstractmethod
    def partitions(self, query: Query, n: int) -> list[Partition]:
        """At most n partitions of the query's rows that together cover them without overlapping; computed
        without reading the rows (index shards, regions, token or key ranges)."""

    @abstractmethod
    def read(self, query: Query, partition: Partition | None = None) -> Iterator[WebPage]:
        """The query's rows in one partition (all when None). Key order is promised only for mark queries
        and for stores with ORDERED_SCANS."""

    def scan(self, start: str | None = None, end: str | None = None, fields: Fields = None,
             mark: MarkFilter | None = None) -> Iterator[WebPage]:
        """Rows with start <= key < end, optionally only those carrying a mark (a Query in short)."""
        return self.read(Query(tuple(fields) if fields is not None else None, mark, start=start, end=end))

    def has_rows(self, query: Query) -> bool:
        """Does the query select any row? (a read with limit 1)"""
        return next(iter(self.read(replace(query, limit=1))), None) is not None

    def next_fetch_time(self, after: int, within: int = NEXT_DUE_WITHIN_MS) -> int | None:
        """The earliest fetch time after `after` (ms) of any row, if one falls within `within` ms of it: when the
        next row comes due. From the due index: probes of `has_rows` over growing, then halving, windows (each a
        read of one row), exact to a second. Stores that can ask for a minimum override it."""
        if not self.has_rows(Query(("fetch_time",), due=Due(after + within, after=after))):
            return None
        lo, hi = after, after + 1000
        while not self.has_rows(Query(("fetch_time",), due=Due(hi, after=after))):
            lo, hi = hi, after + (hi - after) * 2
        hi = min(hi, after + within)
        while hi - lo > 1000:  # a row falls in (after, hi], none in (after, lo]
            mid = (lo + hi) // 2
            if self.has_rows(Query(("fetch_time",), due=Due(mid, after=after))):
                hi = mid
            else:
                lo = mid
        return hi

    @abstractmethod
    def flush(self) -> None:
        """Write buffered puts and deletes."""

    def count(self, mark: MarkFilter | None = None) -> int:
        """Rows in the table (or carrying a mark). Backends may override with something cheaper."""
        return sum(1 for _ in self.read(Query(("status",), mark)))

    def cheap_count(self) -> int | None:
        """The table's rows when the store keeps that number, without reading every row (what a page view may
        ask: the searcher's dashboard); None when only count() can tell, by reading them all."""
        return None

    def mark_values(self, name: str) -> set[str]:
        """The values mark `name` has in the table now (e.g. the batch ids still carrying a generate mark)."""
        check_mark((name, None))
        return {v for p in self.read(Query(("markers",), (name, None))) if (v := p.markers.get(name))}

    def aggregate(self, per_host: bool = False) -> Aggregate | None:
        """Table statistics from the store's own aggregate query, or None where it has none (AGGREGATES)."""
        return None

    # ---------------------------------------------------------------- crawl state
    # A few small named values kept beside the table (the batch journal, nutch2/crawldb/journal.py; leases,
    # stores/lease.py). Written at once, not buffered, so that a job can record a step as done only after the
    # rows it wrote are durable.

    @abstractmethod
    def get_state(self, name: str) -> str | None:
        """The value stored under `name`, or None."""

    @abstractmethod
    def put_state(self, name: str, value: str | None) -> None:
        """Write buffered rows, then store `value` under `name` durably (None deletes it)."""

    @abstractmethod
    def states(self, prefix: str = "") -> dict[str, str]:
        """Every stored name and value, or only those whose name starts with `prefix` (the journal's `batch/`,
        the leases' `lease/`, the host table's `hostdb/`): a store that can select them does, so one kind of
        record is read without the others."""

    @abstractmethod
    def swap_state(self, name: str, expected: str | None, value: str) -> bool:
        """Compare-and-set: store `value` under `name` only if it holds `expected` now (None: absent), as one
        atomic step against every other client of the store. True when it did."""

    def put_state_fenced(self, name: str, value: str | None, fences: Sequence[Fence] = ()) -> None:
        """put_state, refused (LeaseLost) unless each fence's lease still carries its token. Stores with
        TRANSACTIONS check and write in one transaction; the others read the leases just before the write."""
        for fence in fences:
            self.check_fence(fence)
        self.put_state(name, value)

    def check_fence(self, fence: Fence) -> None:
        if not fence.holds(self.get_state(fence.name)):
            raise fence.lost()

    def close(self) -> None:
        """Flush and release connections."""
        self.flush()

    def __enter__(self) -> DataStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def data_dir(conf: Configuration) -> Path:
    """storage.data.dir, created if missing; a one-line error when it cannot be a folder."""
    path = Path(conf.get_str("storage.data.dir"))
    if path.exists() and not path.is_dir():
        raise ConfigError(f"storage.data.dir={str(path)!r} is a file, not a folder; point it at a folder")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise ConfigError(f"storage.data.dir={str(path)!r} cannot be created ({e.strerror}); point it at a "
                          "writable folder") from None
    return path


def split_keys(keys: list[str], n: int) -> list[KeyRange]:
    """Cut a sorted key list into at most n contiguous ranges covering all keys (open at both ends)."""
    if n <= 1 or len(keys) < 2:
        return [KeyRange()]
    bounds = sorted({keys[len(keys) * i // n] for i in range(1, n)} - {keys[0]})
    edges: list[str | None] = [None, *bounds, None]
    return [KeyRange(edges[i], edges[i + 1]) for i in range(len(edges) - 1)]


NEW_ROW = "__new_row__"  # in a buffered row's values: the job found no row for the key (WebPage.new)


class BufferedStore(DataStore):
    """A store that buffers puts and deletes per key and writes them in batches of `batch_size` rows, or fewer
    once their values reach `batch_bytes` (strings and bytes by their length).

    Pending values per key merge (later puts win); a pending delete stays, so write_batch deletes the old row
    and then writes what was put after it. A failed write_batch keeps the rows for the next flush.
    """

    def __init__(self, table: str, batch_size: int) -> None:
        super().__init__(table)
        self.batch_size = max(1, batch_size)
        self.batch_bytes = 2 << 20  # storage.write.batch.mb's default; open_store sets the configured value
        self._pending_bytes = 0
        self._lock = threading.RLock()  # guards _pending: held only for a moment by put/delete/flush
        self._flush_lock = threading.RLock()  # one batch written at a time, in order; puts go on meanwhile
        self._pending: dict[str, dict[str, Any]] = {}
        # group commit: batches are numbered as they are taken; a flush waits for the batch that holds its rows,
        # not for a turn at the flush lock (which wrote what others put meanwhile, one thread after the other)
        self._written_cond = threading.Condition(self._lock)
        self._taken = 0  # batches taken from _pending to be written
        self._written = 0  # ... of which written (in order: one writer at a time)
        self._writing: int | None = None  # the thread writing a batch

    def encode(self, page: WebPage) -> dict[str, Any]:
        """The page's dirty values as this backend buffers them."""
        return page.dirty_values()

    @abstractmethod
    def write_batch(self, pending: dict[str, dict[str, Any]]) -> None:
        """Write buffered rows: {key: {field: value, "__delete__": True?, ...}}; raise StoreError on failure."""

    def put(self, key: str, page: WebPage) -> None:
        values = self.encode(page)
        if page.new_row:
            values[NEW_ROW] = True
        page.clear_dirty()
        size = value_size(values)
        with self._lock:
            held = self._pending.get(key)
            if held is None:
                self._pending[key] = values
            else:  # the row is new only if its first buffered write was (a delete or a write came before)
                values.pop(NEW_ROW, None)
                held.update(values)
            self._pending_bytes += size
            full = len(self._pending) >= self.batch_size or self._pending_bytes >= self.batch_bytes
        if full:
            self.flush()

    def delete(self, key: str) -> None:
        with self._lock:
            self._pending[key] = {"__delete__": True}
            full = len(self._pending) >= self.batch_size
        if full:
            self.flush()

    def flush(self) -> None:
        """Make every row put before this call durable. Threads that flush at once share the writes: a flush
        returns once the batch holding its rows is written, whoever wrote it."""
        me = threading.get_ident()
        if self._writing == me:  # called from within write_batch: write what was put since, as before
            self._write_pending()
            return
        with self._lock:
            target = self._taken + 1 if self._pending else self._taken
            while self._written < target:
                if self._writing is not None:
                    self._written_cond.wait()
                    continue
                if not self._pending:  # nothing left to write (discarded), or written by a writer that failed
                    return  # and whose rows a later flush took
                self._writing = me
                break
            else:
                return
        try:
            with self._flush_lock:  # taken before the rows: a flush_keys sees them pending or waits for them
                with self._lock:
                    number = self._taken + 1 if self._pending else self._taken
                    self._taken = number
                self._write_pending()
            with self._lock:
                self._written = max(self._written, number)
        except BaseException:
            with self._lock:
                self._taken = self._written  # the failed batch's rows are pending again: taken by the next flush
            raise
        finally:
            with self._lock:
                self._writing = None
                self._written_cond.notify_all()

    def _write_pending(self) -> None:
        """Write the pending rows (under _flush_lock); on failure keep them for the next flush."""
        with self._lock:
            if not self._pending:
                return
            pending, self._pending = self._pending, {}
            self._pending_bytes = 0
        try:
            self.write_batch(pending)
            failpoints.reach("store.flush")
        except Exception:
            with self._lock:  # keep the batch for the next flush, under what was put since
                for key, values in pending.items():
                    values.pop(NEW_ROW, None)  # the failed write may have written part of the row
                    newer = self._pending.get(key)
                    if newer is not None:
                        newer.pop(NEW_ROW, None)
                    if newer is None:
                        self._pending[key] = values
                    elif "__delete__" not in newer:
                        self._pending[key] = {**values, **newer}
                self._pending_bytes += value_size(pending)
            raise

    def flush_key(self, key: str) -> None:
        """Before a get of `key`: flush_keys([key])."""
        self.flush_keys((key,))

    def flush_keys(self, keys: Iterable[str]) -> None:
        """Before a get of `keys`: write the buffered rows if one of `keys` is among them, or wait for a batch
        being written. A get of rows that are not buffered does not flush (updatedb reads the rows of new links
        while it writes)."""
        with self._lock:
            buffered = any(k in self._pending for k in keys)
        if buffered:
            self.flush()
        else:
            with self._flush_lock:
                pass

    def discard_pending(self) -> None:
        with self._lock:
            self._pending.clear()
            self._pending_bytes = 0


def value_size(value: Any) -> int:
    """About the bytes a buffered value holds: strings and bytes by their length, containers by their items."""
    kind = type(value)
    if kind is str or kind is bytes or kind is bytearray:
        return len(value)
    if kind is int or kind is float or value is None or kind is bool:
        return 8
    if isinstance(value, dict):
        size = 0
        for k, v in value.items():  # a row's columns, or a map's entries: mostly strings and bytes
            size += len(k) if type(k) is str else value_size(k)
            size += len(v) if type(v) is str or type(v) is bytes else value_size(v)
        return size
    if isinstance(value, str | bytes | bytearray):
        return len(value)
    if isinstance(value, list | tuple):
        return sum(value_size(v) for v in value)
    return 8


class Gone:
    """A store client's memory that its server went away or fell silent (retries spent): its later calls fail at
    once with the same error instead of waiting out their own timeouts in turn (the fetcher threads of a task,
    each with a write in hand, would otherwise hold the task for threads x retries x timeout). It also says one
    "trying again" line for an outage, whatever the threads and retries."""

    def __init__(self) -> None:
        self.error: StoreUnavailable | None = None
        self.warned = False  # a "trying again" line was said for the failing calls: not one per thread and retry
        self._lock = threading.Lock()

    def first_warning(self) -> bool:
        """True once per outage (until a call succeeds): whether to say this retry."""
        with self._lock:
            first, self.warned = not self.warned, True
            return first


def with_retries(fn: Callable[[], Any], retries: int, transient: Callable[[Exception], bool],
                 fail: Callable[[Exception], Exception], first_delay: float = 0.5, gone: Gone | None = None,
                 silent: Callable[[Exception], Exception | None] | None = None) -> Any:
    """fn(), retried after transient failures with a doubling backoff (at most 5 s); the last failure, or a
    permanent one, is raised as fail(e). Service stores use it for reconnects after timeouts and restarts.

    A call that timed out waited its whole timeout already: it is tried once more, not `retries` times (a server
    that accepts connections and never answers would otherwise hold a job for retries x timeout per call, in
    silence). `silent`, given a call that timed out, may answer the error to fail with at once instead (the store
    found the server silent: not a second wait of the whole timeout). Each retry is a warning line naming the
    failure."""
    if gone is not None and gone.error is not None:
        raise StoreUnavailable(str(gone.error))
    delay = first_delay
    slow = 0
    for attempt in range(retries + 1):
        try:
            result = fn()
            if gone is not None and gone.warned:  # the outage is over: the next one is said again
                gone.warned = False
            return result
        except StoreError:
            raise
        except Exception as e:
            slow += timed_out(e)
            quiet = silent(e) if silent is not None and timed_out(e) and slow == 1 else None
            if quiet is not None:
                if gone is not None and isinstance(quiet, StoreUnavailable):
                    gone.error = quiet
                raise quiet from None
            if attempt == retries or slow > 1 or not transient(e):
                err = fail(e)
                if transient(e) and type(err) is StoreError:  # it went away or fell silent: it may come back
                    err = StoreUnavailable(str(err))
                    if gone is not None:
                        gone.error = err
                raise err from None
            if gone is None or gone.first_warning():  # one line per store and outage, not per thread and retry
                log.warning(f"warning: {fail(e)}; trying again ({attempt + 1} of {1 if slow else retries} retries)")
            time.sleep(delay)
            delay = min(delay * 2, 5.0)
    raise AssertionError("unreachable")


def timed_out(e: Exception) -> bool:
    """Did the client wait out its timeout (rather than fail at once: refused, reset; a server's own quick
    timeout answer, Cassandra's ReadTimeout, is not one)?"""
    return "timed out" in str(e).lower() or type(e).__name__ == "OperationTimedOut"


def in_range(key: str, start: str | None, end: str | None) -> bool:
    return (start is None or key >= start) and (end is None or key < end)
