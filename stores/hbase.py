r"""HBase store over happybase (Thrift v1), in Nutch 2's table layout (gora-hbase-mapping.xml), plus a mark index.

Table `<crawlId>_webpage`, families f p s il ol h mtdt mk stm, VERSIONS 1. Row key = the reversed URL (UTF-8).
Columns and their byte encoding:

    f:bas  base_url           UTF-8            f:st   status             4-byte big-endian int
    f:ts   fetch_time (ms)    8-byte BE long   f:pts  prev_fetch_time    8-byte BE long
    f:fi   fetch_interval (s) 4-byte BE int    f:rsf  retries_since_fetch 4-byte BE int
    f:mod  modified_time      8-byte BE long   f:pmod prev_modified_time 8-byte BE long
    f:prot protocol_status    JSON {code,args,lastModified}            f:cnt  content   raw bytes
    f:typ  content_type       UTF-8            f:rpr  repr_url           UTF-8
    f:bid  batch_id           UTF-8            p:psig prev_signature     raw bytes
    p:sig  signature          raw bytes        p:t    title              UTF-8
    p:c    text               UTF-8            p:st   parse_status       JSON {majorCode,minorCode,args}
    s:s    score              8-byte IEEE double (Nutch: 4-byte float)   s:sp stm_priority 8-byte double
    h:<name>   headers     UTF-8 values        ol:<url>  outlinks  anchor UTF-8
    il:<url>   inlinks     anchor UTF-8        mk:<name> markers   UTF-8 (marks, `dist`)
    mtdt:<key> metadata    raw bytes           stm:<url> sitemaps  UTF-8
    f:_        (empty)     in every row: HBase has no empty rows, and a scan restricted to some columns
                           skips rows that lack them; reading f:_ too returns every row (not in Nutch)

A map field is written as a whole: the new cells are put at timestamp t, then the family is deleted at t-1,
which removes only the older cells (the delete cannot mask the put, and a crash in between loses nothing). A
row the job found absent (WebPage.new: a new link target, a new seed) is written without those deletes: each
would be a tombstone that every later read of the row steps over until a major compaction.

Index entries (stores/index.py: the mark index and the due index, kept by its EntryIndex) live in table
`<crawlId>_webpage_idx` (family m, VERSIONS 1): one row `<index> NUL <bucket> NUL <shard, 2 digits> NUL <term>
NUL <row key>` with one empty cell m:_ whose timestamp is the entry's stamp, so a bucket's shard is one
contiguous range, in (term, key) order. A row's stamp is the timestamp of its f:_ cell. Mark names and values
cannot contain NUL. The index table records `\x00complete\x00<index>` once the rows of an older table are
indexed. (Tables of older versions also have `<crawlId>_webpage_marks`, no longer read; drop_schema drops it.)
Partitions: of an indexed query, shard sets; of the table, the regions, cut further by interpolating between a
region's first and last row keys when there are fewer regions than tasks (a few single-row reads, never a
scan of the keys).
Connections come from a happybase pool; a Thrift timeout or broken pipe reconnects and retries, and because
every write carries an explicit timestamp, re-sending a batch after a failure cannot duplicate anything.
"""

from __future__ import annotations

import logging
import math
import os
import re
import struct
import time
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from nutch2.errors import ConfigError, StoreError, StoreUnavailable
from nutch2.stores import pool
from nutch2.stores.base import NEW_ROW, BufferedStore, Gone, timed_out, with_retries
from nutch2.stores.codec import decode_parse, decode_protocol, encode_parse, encode_protocol
from nutch2.stores.index import (
    GONE_MARKS,
    MARK,
    NEW_MARKS,
    SHARDS,
    Entry,
    EntryIndex,
    EntryStorage,
    gone_marks,
    new_marks,
    shard_groups,
)
from nutch2.stores.query import (
    Aggregate,
    Capability,
    KeyRange,
    MarkFilter,
    Partition,
    Query,
    Shards,
    check_mark,
    is_mark,
)
from nutch2.webpage import FIELDS, MAP_FIELDS, WebPage, check_fields

if TYPE_CHECKING:
    from nutch2.config import Configuration

log = logging.getLogger(__name__)

FAMILIES = ("f", "p", "s", "il", "ol", "h", "mtdt", "mk", "stm")
# Every column family is made with a row bloom filter and the block cache on, as HBase's own shell makes them: the
# Thrift gateway's defaults are neither, and then a get seeks every HFile of the family on disk — a batch's reads
# by key cost more as the table grows (a 10k-row fetch read: 1.0 s in 100k rows, 4.3 s in 1M).
FAMILY = {"max_versions": 1, "bloom_filter_type": "ROW", "block_cache_enabled": True}
COLUMNS: dict[str, str] = {
    "base_url": "f:bas", "status": "f:st", "fetch_time": "f:ts", "prev_fetch_time": "f:pts",
    "fetch_interval": "f:fi", "retries_since_fetch": "f:rsf", "modified_time": "f:mod",
    "prev_modified_time": "f:pmod", "protocol_status": "f:prot", "content": "f:cnt", "content_type": "f:typ",
    "prev_signature": "p:psig", "signature": "p:sig", "title": "p:t", "text": "p:c", "parse_status": "p:st",
    "score": "s:s", "repr_url": "f:rpr", "batch_id": "f:bid", "stm_priority": "s:sp",
    "headers": "h", "outlinks": "ol", "inlinks": "il", "markers": "mk", "metadata": "mtdt", "sitemaps": "stm",
}
INT32 = {"status", "fetch_interval", "retries_since_fetch"}
ROW_MARKER = b"f:_"  # an empty cell written with every put, read with every get and scan
INDEX_FAMILIES = {"m": FAMILY}
INDEX_CELL = b"m:_"  # the one empty cell of an index entry
INDEX_COMPLETE = b"\x00complete\x00"  # + index name: the rows of an older table are indexed
INDEX_PAGE = 1000  # index rows read per scanner
AGGREGATE_RANGES = 8  # key ranges readdb -stats scans the table in, AGGREGATE_THREADS at once ...
AGGREGATE_THREADS = 2
AGGREGATE_PAGE = 1000  # ... a scanner per AGGREGATE_PAGE rows
BUCKET_PARTS = {MARK: 2}  # NUL-separated parts of a bucket (a mark's is name NUL value); others have one
_BY_COLUMN = {v.encode(): k for k, v in COLUMNS.items() if k not in MAP_FIELDS}
_BY_FAMILY = {v.encode(): k for k, v in COLUMNS.items() if k in MAP_FIELDS}


def encode_value(name: str, value: Any) -> bytes:
    kind = FIELDS[name][0]
    if kind == "int":
        return struct.pack(">i" if name in INT32 else ">q", int(value))
    if kind == "float":
        return struct.pack(">d", float(value))
    if kind == "str":
        return value.encode("utf-8")
    if kind == "protocol":
        return encode_protocol(value).encode("utf-8")
    if kind == "parse":
        return encode_parse(value).encode("utf-8")
    return bytes(value)


def decode_value(name: str, raw: bytes) -> Any:
    kind = FIELDS[name][0]
    if kind == "int":
        return struct.unpack(">i" if len(raw) == 4 else ">q", raw)[0]
    if kind == "float":
        return struct.unpack(">d" if len(raw) == 8 else ">f", raw)[0]
    if kind == "str":
        return raw.decode("utf-8")
    if kind == "protocol":
        return decode_protocol(raw)
    if kind == "parse":
        return decode_parse(raw)
    return raw


def _map_value(name: str, value: Any) -> bytes:
    return bytes(value) if name == "metadata" else str(value).encode("utf-8")


class HBaseStore(BufferedStore, EntryStorage):
    """A WebPage table in HBase, through the Thrift v1 gateway."""

    name = "hbase"
    aliases = ("org.apache.gora.hbase.store.HBaseStore",)
    capabilities = frozenset({Capability.SHARED_PROCESSES, Capability.SHARED_MACHINES, Capability.DURABLE,
                              Capability.ORDERED_SCANS})

    @classmethod
    def from_conf(cls, conf: Configuration, table: str, create: bool) -> HBaseStore:
        return cls(table, conf.get_str("hbase.thrift.host"), conf.get_int("hbase.thrift.port"),
                   conf.get_str("hbase.thrift.transport"), conf.get_str("hbase.thrift.protocol"),
                   conf.get_int("storage.hbase.pool.size"), conf.get_int("storage.hbase.timeout"),
                   conf.get_int("storage.hbase.batch.size"), conf.get_int("storage.hbase.retries"))

    @classmethod
    def tables(cls, conf: Configuration) -> list[str]:
        """The tables with a state or index table beside them (an older one: its marks table)."""
        store = cls.from_conf(conf, "webpage", create=False)
        try:
            raw = store._with_retry("list tables", lambda t: t.connection.tables())
        finally:
            store.close()
        names = {n.decode("utf-8", "replace") for n in raw}
        return sorted(t for t in names if any(f"{t}{side}" in names for side in ("_state", "_idx", "_marks")))

    def __init__(self, table: str, host: str, port: int, transport: str = "buffered", protocol: str = "binary",
                 pool_size: int = 8, timeout_ms: int = 30000, batch_size: int = 1000, retries: int = 5) -> None:
        super().__init__(table, batch_size)
        try:
            import happybase
        except ImportError:
            raise ConfigError("the hbase store needs happybase, which is not installed: "
                              "pip install 'nutch2[hbase]'") from None

        self.where = f"{host}:{port}"
        self.retries = max(0, retries)
        self._server = (host, port, transport, protocol)
        self._timeout_s = timeout_ms / 1000
        self.gone = Gone()  # the server went away or fell silent: later calls fail at once
        self._happybase = happybase

        def connect() -> Any:
            known = _silent_lately(self.where, self._timeout_s)
            if known is not None:  # a call or open of this process found the server silent just now
                raise StoreUnavailable(str(known))
            try:
                made = happybase.ConnectionPool(pool_size, host=host, port=port, timeout=timeout_ms,
                                                transport=transport, protocol=protocol, autoconnect=False)
                with made.connection() as conn:
                    conn.open()
                    conn.tables()
            except Exception as e:
                if _hbase_down(e):  # the settings are right: HBase is not up behind the gateway
                    raise StoreUnavailable(f"HBase at {self.where}: {_short(e)}") from None
                if timed_out(e):  # it took the connection (the address is right) and said nothing: frozen or stuck
                    silent = StoreUnavailable(f"HBase at {self.where}: {_failed(e)}")
                    _SILENT[(os.getpid(), self.where)] = (silent, time.monotonic())  # the process's other opens
                    raise silent from None
                raise StoreError(
                    f"cannot reach the HBase Thrift server at {self.where} ({_short(e)}); check hbase.thrift.host, "
                    "hbase.thrift.port and hbase.thrift.transport/protocol, or start it: docker/services.sh start "
                    "hbase") from None
            return made

        # the process's connections to this server (stores/pool.py): later opens reuse them
        self.pool = pool.shared("hbase", (host, port, transport, protocol, pool_size, timeout_ms), connect,
                                _close_pool)
        self.tname = table.encode()
        self.sname = f"{table}_state".encode()  # the crawl state: row = name, column s:v = value
        self.old_mname = f"{table}_marks".encode()  # the mark index of older versions (dropped with the table)
        self.iname = f"{table}_idx".encode()  # index entries (stores/index.py)
        self.index = EntryIndex(self, (self.retries + 1) * (3 * timeout_ms + 5000))  # the longest a write takes
        self._index_table = False  # the index table is known to exist
        self._state_known = False  # the state table is known to exist
        self._last_ts = 0

    # -------------------------------------------------------------- plumbing
    def _with_retry(self, action: str, fn: Callable[[Any], Any], table: bytes | None = None) -> Any:
        """Run fn(table) (the webpage table by default) on a pooled connection; reconnect and retry on
        Thrift/socket failures."""
        started = time.monotonic()
        known = _silent_lately(self.where, self._timeout_s)
        if known is not None:  # another call of this process found the server silent just now
            raise StoreUnavailable(str(known))

        def run() -> Any:
            with self.pool.connection() as conn:
                conn.open()
                return fn(conn.table(table or self.tname))

        def fail(e: Exception) -> StoreError:
            if _hbase_down(e):  # the gateway spent its own retries on HBase: not ours too
                self.gone.error = StoreUnavailable(_message(self.where, action, e))
                return self.gone.error
            return StoreError(_message(self.where, action, e))

        return with_retries(run, self.retries, _transient, fail, 0.2, self.gone,
                            lambda e: self._silence(action, e, started))

    def _silence(self, action: str, e: Exception, started: float) -> StoreUnavailable | None:
        """A call that waited storage.hbase.timeout in vain: None (try it once more) when the Thrift server answers
        a new connection within PROBE_S, else the error to fail with. A frozen gateway or HBase (kill -STOP, a
        paused VM) takes connections and never answers: a second wait of the whole timeout, and the lease's and
        the other threads' calls each waiting theirs, held a job for twice the timeout and more."""
        found = _SILENT.get((os.getpid(), self.where))
        if found is not None and found[1] >= started:  # found silent while this call waited
            return found[0]
        if _answers(*self._server, min(PROBE_S, self._timeout_s)):
            return None
        err = StoreUnavailable(_message(self.where, action, e).replace(
            "storage.hbase.timeout", "storage.hbase.timeout, nor to a new connection", 1))
        _SILENT[(os.getpid(), self.where)] = (err, time.monotonic())
        return err

    def _ts(self) -> int:
        """A write timestamp (ms), strictly increasing in this process, with room for the t-1 deletes."""
        with self._lock:
            self._last_ts = max(int(time.time() * 1000), self._last_ts + 2)
            return self._last_ts

    # -------------------------------------------------------------- schema
    def create_schema(self) -> None:
        tables = self._with_retry("list tables", lambda t: t.connection.tables())
        wanted = {self.tname: dict.fromkeys(FAMILIES, FAMILY), self.sname: {"s": FAMILY}, self.iname: INDEX_FAMILIES}
        missing = [name for name in wanted if name not in tables]

        def create(name: bytes) -> bool:  # False when another process created it first
            return self._with_retry("create table", lambda t: _create_table(t.connection, name, wanted[name]))

        # the missing tables at once, each on its own pooled connection: HBase takes ~0.6 s a table (a new
        # crawl's three took 1.8 s, now 0.6)
        with ThreadPoolExecutor(max(1, len(missing))) as ex:
            made = dict(zip(missing, ex.map(create, missing), strict=True))
        if made.get(self.tname) and self.iname in made:  # rows are written only once create_schema has returned:
            self._with_retry("create table", lambda t: [  # nothing older to index
                t.connection.table(self.iname).put(INDEX_COMPLETE + index.encode(), {INDEX_CELL: b""})
                for index in ("m", "d")])
        self._index_table = self._state_known = True

    def drop_schema(self) -> None:
        self.discard_pending()

        def drop(_t: Any) -> None:
            with self.pool.connection() as conn:
                tables = conn.tables()
                for name in (self.tname, self.sname, self.iname, self.old_mname):
                    if name in tables:
                        conn.delete_table(name, disable=True)

        self._with_retry("drop table", drop)
        self._index_table = self._state_known = False
        self.index = EntryIndex(self, self.index.in_flight_ms)

    # -------------------------------------------------------------- reads
    @staticmethod
    def _columns(names: tuple[str, ...]) -> list[bytes]:
        return [ROW_MARKER, *(COLUMNS[n].encode() for n in names)]

    @staticmethod
    def _page(key: bytes, data: dict[bytes, bytes], names: tuple[str, ...]) -> WebPage:
        values: dict[str, Any] = {}
        for col, raw in data.items():
            name = _BY_COLUMN.get(col)
            if name is not None:
                if name in names:
                    values[name] = decode_value(name, raw)
                continue
            family, _, qualifier = col.partition(b":")
            name = _BY_FAMILY.get(family)
            if name is not None and name in names:
                q = qualifier.decode("utf-8")
                values.setdefault(name, {})[q] = raw if name == "metadata" else raw.decode("utf-8")
        return WebPage.from_store(key.decode("utf-8"), values)

    def get(self, key: str, fields: list[str] | tuple[str, ...] | None = None) -> WebPage | None:
        names = check_fields(fields)
        self.flush_key(key)
        data = self._with_retry("get", lambda t: t.row(key.encode(), columns=self._columns(names)))
        return self._page(key.encode(), data, names) if data else None

    def get_many(self, keys: list[str], fields: list[str] | tuple[str, ...] | None = None) -> dict[str, WebPage]:
        names = check_fields(fields)
        self.flush_keys(keys)
        columns = self._columns(names)
        out = {}
        for i in range(0, len(keys), INDEX_PAGE):
            rows = self._with_retry("get", lambda t, ks=keys[i:i + INDEX_PAGE]: t.rows([k.encode() for k in ks],
                                                                                        columns=columns))
            out.update({k.decode("utf-8"): self._page(k, data, names) for k, data in rows if data})
        return out

    def read(self, query: Query, partition: Partition | None = None) -> Iterator[WebPage]:
        names = check_fields(query.fields)
        if isinstance(partition, KeyRange):
            query = narrow(query, partition)
        elif partition is not None and not (isinstance(partition, Shards) and query.indexed):
            raise ValueError(f"the hbase store cannot read {partition!r} of {query!r}")
        self.flush()
        if query.indexed:
            return self.index.select(query, partition if isinstance(partition, Shards) else None)
        return self._scan(query.start, query.end, names, query.limit)

    def has_rows(self, query: Query) -> bool:
        """Of one mark value (the journal's question: does a batch still have rows with this mark?): the shards
        one at a time until one has a row that carries it, usually one scanner. A read with limit 1 merges the
        shards in key order and so opens every shard's scanner first (16 x 3 Thrift calls)."""
        if query.mark is None or query.mark[1] is None:
            return super().has_rows(query)
        one = replace(query, limit=1)
        return any(next(iter(self.read(one, Shards((shard,)))), None) is not None for shard in range(SHARDS))

    def _scan(self, start: str | None, end: str | None, names: tuple[str, ...],
              limit: int | None = None) -> Iterator[WebPage]:
        """A scan of the webpage table itself, restarted after the last row it returned when the scanner breaks."""
        last: bytes | None = None
        row_start = start.encode() if start is not None else None
        row_stop = end.encode() if end is not None else None
        attempts = slow = 0
        n = 0
        started = time.monotonic()
        known = _silent_lately(self.where, self._timeout_s)
        if known is not None:  # another call of this process found the server silent just now
            raise StoreUnavailable(str(known))
        while True:  # a broken scanner restarts after the last row it returned
            try:
                with self.pool.connection() as conn:
                    conn.open()
                    table = conn.table(self.tname)
                    begin = last + b"\x00" if last is not None else row_start
                    for key, data in table.scan(row_start=begin, row_stop=row_stop, columns=self._columns(names),
                                                batch_size=500 if limit is None else min(500, max(1, limit)),
                                                limit=None if limit is None else limit - n):
                        last = key
                        n += 1
                        self.rows_read += 1
                        yield self._page(key, data, names)
                self.gone.warned = False  # the outage is over: the next one is said again
                return
            except GeneratorExit:
                raise
            except Exception as e:
                attempts += 1
                slow += timed_out(e)  # a silent server: tried once more, as with_retries does
                quiet = self._silence("scan", e, started) if timed_out(e) and slow == 1 else None
                if quiet is not None:
                    self.gone.error = quiet
                    raise quiet from None
                if attempts > self.retries or slow > 1 or not _transient(e):
                    message = _message(self.where, "scan", e)
                    if not _transient(e) and not _hbase_down(e):
                        raise StoreError(message) from None
                    self.gone.error = StoreUnavailable(message)
                    raise self.gone.error from None
                if self.gone.first_warning():  # one line per store and outage
                    log.warning(f"warning: HBase at {self.where}: scan failed: {_short(e)}; trying again")
                time.sleep(min(0.2 * 2**attempts, 5.0))

    # -------------------------------------------------------------- index entries (EntryStorage)
    def _ensure_index_table(self, conn: Any) -> None:
        if not self._index_table:
            tables = conn.tables()
            if self.iname not in tables:  # a table made before the index existed
                if self.tname not in tables:  # no crawl at all (a mistyped -crawlId): nothing is made for it
                    raise _TableMissing(f"TableNotFoundException: {self.tname.decode()}")
                _create_table(conn, self.iname, INDEX_FAMILIES)
            self._index_table = True

    def _idx(self, action: str, fn: Callable[[Any], Any]) -> Any:
        def run(t: Any) -> Any:
            self._ensure_index_table(t.connection)
            return fn(t.connection.table(self.iname))

        return self._with_retry(action, run)

    def put_entries(self, entries: list[Entry], stamp: int) -> None:
        self._idx("write index entries", lambda t: _put_entries(t, [_entry_row(e) for e in entries], stamp))

    def scan_entries(self, index: str, bucket: str, shard: int, lo: str, hi: str, start: str | None,
                     end: str | None) -> Iterator[tuple[Entry, int]]:
        prefix = b"%s\x00%s\x00%02d\x00" % (index.encode(), bucket.encode("utf-8"), shard)
        if lo == hi:  # one term: the key range is a row range
            head = prefix + lo.encode() + b"\x00"
            begin = head + (start.encode() if start is not None else b"")
            stop = head + end.encode() if end is not None else head[:-1] + b"\x01"
        else:
            begin, stop = prefix + lo.encode() + b"\x00", prefix + hi.encode() + b"\x01"
        while True:  # a page per scanner: a retry restarts after the last entry read
            page = self._idx("scan index", lambda t, b=begin: _scan_page(t, b, stop, [INDEX_CELL], INDEX_PAGE))
            for row, data in page:
                term, _, key = row[len(prefix):].partition(b"\x00")
                k = key.decode("utf-8")
                if (start is None or k >= start) and (end is None or k < end):
                    yield Entry(index, bucket, term.decode(), k), data[INDEX_CELL][1]
            if len(page) < INDEX_PAGE:
                return
            begin = page[-1][0] + b"\x00"

    def drop_entries(self, stale: list[tuple[Entry, int]]) -> None:
        self._idx("drop stale index entries", lambda t: _drop_entries(t, [(_entry_row(e), s) for e, s in stale]))

    def buckets(self, index: str) -> list[str]:
        """One short scan per bucket (skipping past each)."""
        head = index.encode() + b"\x00"
        parts = BUCKET_PARTS.get(index, 1)
        out: list[str] = []
        begin = head
        while True:
            hit = self._idx("scan index", lambda t, b=begin: list(t.scan(
                row_start=b, row_stop=head[:-1] + b"\x01", columns=[INDEX_CELL], limit=1)))
            if not hit:
                return out
            bucket = b"\x00".join(hit[0][0][len(head):].split(b"\x00")[:parts])
            out.append(bucket.decode("utf-8"))
            begin = head + bucket + b"\x01"  # past every entry of this bucket

    def forget_bucket(self, index: str, bucket: str, before: int) -> None:
        pass  # buckets are listed from the entries themselves: one with none left is gone already

    def fetch_rows(self, keys: list[str], fields: tuple[str, ...]) -> dict[str, tuple[WebPage, int]]:
        columns = self._columns(fields)
        found = self._with_retry("get", lambda t: t.rows([k.encode() for k in keys], columns=columns,
                                                         include_timestamp=True))
        out = {}
        for key, data in found:
            if data:
                stamp = data[ROW_MARKER][1] if ROW_MARKER in data else 0
                out[key.decode("utf-8")] = (self._page(key, {c: v for c, (v, _) in data.items()}, fields), stamp)
        return out

    def is_complete(self, index: str) -> bool:
        return bool(self._idx("read index", lambda t: t.row(INDEX_COMPLETE + index.encode())))

    def set_complete(self, index: str) -> None:
        self._idx("write index", lambda t: t.put(INDEX_COMPLETE + index.encode(), {INDEX_CELL: b""}))

    def scan_all(self, fields: tuple[str, ...]) -> Iterator[WebPage]:
        return self._scan(None, None, fields)

    # -------------------------------------------------------------- partitions and counts
    def partitions(self, query: Query, n: int) -> list[Partition]:
        n = max(1, n)
        if query.indexed:
            return shard_groups(n)
        regions = self._with_retry("list regions", lambda t: t.regions())
        bounds = sorted({r["start_key"] for r in regions if r.get("start_key")})
        if len(bounds) + 1 < n:
            bounds = sorted(set(bounds) | set(self._cut_points(bounds, n)))
        edges: list[str | None] = [None, *(b.decode("utf-8", "replace") for b in bounds), None]
        ranges = [KeyRange(edges[i], edges[i + 1]) for i in range(len(edges) - 1)]
        if len(ranges) > n:  # group adjacent regions into n partitions
            size = -(-len(ranges) // n)
            ranges = [KeyRange(ranges[i].start, ranges[min(i + size, len(ranges)) - 1].end)
                      for i in range(0, len(ranges), size)]
        return ranges

    def _cut_points(self, bounds: list[bytes], n: int) -> list[bytes]:
        """Keys cutting each region's span (its first to its last row, two one-row reads) into about
        n / regions parts, by interpolating between them: bounded work whatever the table holds."""
        edges: list[bytes | None] = [None, *bounds, None]
        per = -(-n // (len(edges) - 1))
        out: list[bytes] = []
        for lo, hi in zip(edges, edges[1:], strict=False):
            first = self._with_retry("read first row", lambda t, a=lo, b=hi: [k for k, _ in t.scan(
                row_start=a, row_stop=b, filter="FirstKeyOnlyFilter() AND KeyOnlyFilter()", limit=1)])
            last = self._with_retry("read last row", lambda t, a=lo, b=hi: [k for k, _ in t.scan(
                row_start=b, row_stop=a, filter="FirstKeyOnlyFilter() AND KeyOnlyFilter()", limit=1,
                reverse=True)] if b is not None else [k for k, _ in t.scan(
                row_start=None, row_stop=a, filter="FirstKeyOnlyFilter() AND KeyOnlyFilter()", limit=1,
                reverse=True)])
            if first and last and first[0] < last[0]:
                out += interpolate(first[0], last[0], per)
        return out

    def count(self, mark: MarkFilter | None = None) -> int:
        # no cheap_count: HBase keeps no row count (a keys-only scan ships every key through Thrift), and a kept
        # one would need a read before every write (puts are blind upserts)
        if mark is not None:
            return sum(1 for _ in self.read(Query((), mark)))
        self.flush()
        return self._with_retry("count", lambda t: sum(
            1 for _ in t.scan(filter="FirstKeyOnlyFilter() AND KeyOnlyFilter()", batch_size=5000)))

    def aggregate(self, per_host: bool = False) -> Aggregate:
        """readdb -stats from three cells of every row (and its key's reversed host), the table scanned in key
        ranges, a few at once, and counted as tuples, not WebPage rows. HBase offers no aggregate through Thrift:
        the region servers still read every row; the client only counts."""
        self.flush()
        ranges = [p for p in self.partitions(Query(()), AGGREGATE_RANGES) if isinstance(p, KeyRange)]
        with ThreadPoolExecutor(max(1, min(AGGREGATE_THREADS, len(ranges)))) as workers:
            parts = list(workers.map(lambda r: self._with_retry(  # a retry counts its range again
                "scan", lambda t: _count_range(t, r, per_host)), ranges))
        pairs: Counter[tuple[int, int]] = Counter()
        heads: Counter[str] = Counter()
        total, low, high = 0.0, math.inf, -math.inf
        for part_pairs, part_heads, part_total, lo, hi in parts:
            pairs.update(part_pairs)
            heads.update(part_heads)
            total += part_total
            low, high = min(low, lo), max(high, hi)
        return Aggregate.of(pairs, total, low, high, heads if per_host else None)

    def mark_values(self, name: str) -> set[str]:
        """Values in the index that at least one row still carries (stale entries met on the way are dropped)."""
        check_mark((name, None))
        self.flush()
        return self.index.mark_values(name)

    # -------------------------------------------------------------- crawl state
    def _state_table(self, action: str, fn: Callable[[Any], Any], create: bool = False) -> Any:
        def run(t: Any) -> Any:
            conn = t.connection
            if not self._state_known:
                tables = conn.tables()
                if self.sname not in tables:  # a table made before the state table existed
                    if not create:
                        return None
                    if self.tname not in tables:  # no crawl at all (a mistyped -crawlId): nothing is made for it
                        raise _TableMissing(f"TableNotFoundException: {self.tname.decode()}")
                    _create_table(conn, self.sname, {"s": FAMILY})
                self._state_known = True  # asked once per store: a journal or lease step is one round trip
            return fn(conn.table(self.sname))

        return self._with_retry(action, run)

    def get_state(self, name: str) -> str | None:
        data = self._state_table("get state", lambda t: t.row(name.encode(), columns=[b"s:v"]))
        return data[b"s:v"].decode("utf-8") if data else None

    def put_state(self, name: str, value: str | None) -> None:
        self.flush()
        if value is None:
            self._state_table("delete state", lambda t: t.delete(name.encode()), create=True)
        else:
            self._state_table("put state", lambda t: t.put(name.encode(), {b"s:v": value.encode("utf-8")}),
                              create=True)

    def states(self, prefix: str = "") -> dict[str, str]:
        rows = self._state_table("scan state", lambda t: list(t.scan(row_prefix=prefix.encode() or None,
                                                                         columns=[b"s:v"])))
        return {k.decode("utf-8"): v[b"s:v"].decode("utf-8") for k, v in rows or []}

    def swap_state(self, name: str, expected: str | None, value: str) -> bool:
        """HBase's checkAndPut on the state row (Thrift v1)."""
        from Hbase_thrift import Mutation

        def swap(t: Any) -> bool:
            return bool(t.connection.client.checkAndPut(
                self.sname, name.encode(), b"s:v", None if expected is None else expected.encode("utf-8"),
                Mutation(column=b"s:v", value=value.encode("utf-8")), {}))

        self.flush()
        return bool(self._state_table("swap state", swap, create=True))

    # -------------------------------------------------------------- writes
    def encode(self, page: WebPage) -> dict[str, Any]:
        values = {n: dict(v) if n in MAP_FIELDS else v for n, v in page.dirty_values().items()}
        for name, value in (values.get("markers") or {}).items():
            if is_mark(name) and "\x00" in name + str(value):
                raise ValueError(f"mark {name!r} = {value!r} of {page.key}: mark names and values cannot contain NUL")
        if "markers" in values:
            values[NEW_MARKS] = new_marks(page)
            values[GONE_MARKS] = gone_marks(page)
        return values

    def write_batch(self, pending: dict[str, dict[str, Any]]) -> None:
        ts = self._ts()
        self._with_retry("write", lambda t: self._write(t, pending, ts))

    def _write(self, table: Any, pending: dict[str, dict[str, Any]], ts: int) -> None:
        """Index entries, then puts at ts, then deletes (old rows, map families, null columns) at ts-1, which
        remove only older cells.

        Index entries go first so that a crash part-way leaves at worst an entry whose row does not carry the
        mark (skipped, then dropped by a later scan), never a marked row that the index misses. Puts go before
        deletes so that a crash between the two leaves the new cells plus some old ones, never a row that lost
        its map (e.g. its marks); re-sending the whole batch is idempotent."""
        self._ensure_index_table(table.connection)
        self.index.write(pending, ts)  # entries first (crash tests stop after them: entries written, rows not)
        deletes = table.batch(timestamp=ts - 1)
        puts = table.batch(timestamp=ts)
        for key, values in pending.items():
            row = key.encode("utf-8")
            if values.get("__delete__"):
                deletes.delete(row)
                values = {k: v for k, v in values.items() if k != "__delete__"}
                if not values:
                    continue
            cells: dict[bytes, bytes] = {}
            drop: list[bytes] = []
            for name, value in values.items():
                if name in (NEW_MARKS, GONE_MARKS, NEW_ROW):  # for the index entries; for the drops below
                    continue
                col = COLUMNS[name]
                if name in MAP_FIELDS:
                    drop.append(col.encode())
                    for q, v in (value or {}).items():
                        cells[f"{col}:{q}".encode()] = _map_value(name, v)
                elif value is None:
                    drop.append(col.encode())
                else:
                    cells[col.encode()] = encode_value(name, value)
            if drop and not values.get(NEW_ROW):  # a new row has no older cells to clear
                deletes.delete(row, columns=drop)
            cells[ROW_MARKER] = b""  # every row has it: scans by column find rows lacking the asked columns
            puts.put(row, cells)
        puts.send()
        deletes.send()
        self.index.drop_gone(pending, ts)  # the rows are written: the entries of the marks they lost are stale

    def close(self) -> None:
        """Flush; the connections stay with the process for the next open (stores/pool.py)."""
        self.flush()


PROBE_S = 5.0  # after a call's timeout, how long a new connection's getTableNames may take to say the server is up
# (pid, host:port) -> (the error, when): a Thrift server that a call of this process found silent (its timeout,
# then no answer to a new connection); the process's other calls fail at once for one timeout from then
_SILENT: dict[tuple[int, str], tuple[StoreUnavailable, float]] = {}


def _silent_lately(where: str, within_s: float) -> StoreUnavailable | None:
    found = _SILENT.get((os.getpid(), where))
    return found[0] if found is not None and time.monotonic() - found[1] < within_s else None


def _answers(host: str, port: int, transport: str, protocol: str, timeout_s: float) -> bool:
    """Does the Thrift server answer a new connection within timeout_s (an error it sends is an answer)?"""
    import happybase

    conn = happybase.Connection(host, port, timeout=int(timeout_s * 1000), transport=transport, protocol=protocol,
                                autoconnect=False)
    try:
        conn.open()
        conn.tables()
    except Exception as e:  # noqa: BLE001 - only silence counts as no answer
        return not timed_out(e)
    finally:
        conn.close()
    return True


def _close_pool(made: Any) -> None:
    """Close a happybase pool's connections (happybase has no call for it)."""
    while True:
        try:
            conn = made._queue.get_nowait()
        except Exception:  # queue.Empty: every connection closed
            return
        conn.close()


def _scan_page(table: Any, start: bytes, stop: bytes, columns: list[bytes], limit: int) -> list[tuple[bytes, Any]]:
    """At most `limit` rows (cells with timestamps) from `start`: one scanner, one scannerGetList, closed.
    happybase's scan asks once more after a short page to learn it has ended (4 round trips, not 3); a page
    shorter than asked for is the end here (HBase fills a scannerGetList up to its count unless the scan ends)."""
    from happybase.table import make_row
    from Hbase_thrift import TScan

    client = table.connection.client
    scanner = client.scannerOpenWithScan(table.name, TScan(startRow=start, stopRow=stop, columns=columns,
                                                           caching=limit), {})
    try:
        return [(item.row, make_row(item.columns, True)) for item in client.scannerGetList(scanner, limit)]
    finally:
        client.scannerClose(scanner)


def _count_range(table: Any, part: KeyRange, per_host: bool) -> tuple[Counter[tuple[int, int]], Counter[str],
                                                                       float, float, float]:
    """(status, retries) pairs, rows per reversed host, score sum, min and max of the rows of one key range."""
    from Hbase_thrift import TScan

    client = table.connection.client
    start = part.start.encode() if part.start is not None else b""
    stop = part.end.encode() if part.end is not None else None
    status_col, retries_col, score_col = (COLUMNS[n].encode() for n in ("status", "retries_since_fetch", "score"))
    pairs: Counter[tuple[int, int]] = Counter()
    heads: Counter[str] = Counter()
    total, low, high = 0.0, math.inf, -math.inf
    while True:
        scanner = client.scannerOpenWithScan(table.name, TScan(
            startRow=start, stopRow=stop, columns=[ROW_MARKER, status_col, retries_col, score_col],
            caching=AGGREGATE_PAGE), {})
        try:
            items = client.scannerGetList(scanner, AGGREGATE_PAGE)
        finally:
            client.scannerClose(scanner)
        for item in items:
            cells = item.columns
            cell = cells.get(status_col)
            status = decode_value("status", cell.value) if cell is not None else 0
            cell = cells.get(retries_col)
            pairs[(status, decode_value("retries_since_fetch", cell.value) if cell is not None else 0)] += 1
            cell = cells.get(score_col)
            score = decode_value("score", cell.value) if cell is not None else 0.0
            total += score
            if score < low:
                low = score
            if score > high:
                high = score
        if per_host:
            heads.update(_reversed_host(item.row) for item in items)
        if len(items) < AGGREGATE_PAGE:
            return pairs, heads, total, low, high
        start = items[-1].row + b"\x00"


def _reversed_host(key: bytes) -> str:
    """The row key up to its first ':' (a bracketed IPv6 host up to its ']')."""
    text = key.decode("utf-8")
    return text[:text.find("]") + 1] if text.startswith("[") else text.partition(":")[0]


def _entry_row(e: Entry) -> bytes:
    """index NUL bucket NUL shard NUL term NUL key: a bucket's shard is one range, in (term, key) order."""
    return b"%s\x00%s\x00%02d\x00%s\x00%s" % (e.index.encode(), e.bucket.encode("utf-8"), e.shard,
                                                  e.term.encode(), e.key.encode("utf-8"))


def narrow(query: Query, part: KeyRange) -> Query:
    """The query restricted to a key range."""
    start = part.start if query.start is None or (part.start is not None and part.start > query.start) \
        else query.start
    end = part.end if query.end is None or (part.end is not None and part.end < query.end) else query.end
    return replace(query, start=start, end=end)


def interpolate(lo: bytes, hi: bytes, parts: int) -> list[bytes]:
    """parts - 1 keys evenly spaced between lo and hi, reading the bytes after their common prefix as numbers."""
    if parts <= 1:
        return []
    common = 0
    while common < min(len(lo), len(hi)) and lo[common] == hi[common]:
        common += 1
    width = 6
    a = int.from_bytes(lo[common:common + width].ljust(width, b"\x00"), "big")
    b = int.from_bytes(hi[common:common + width].ljust(width, b"\x00"), "big")
    points = {lo[:common] + (a + (b - a) * i // parts).to_bytes(width, "big").rstrip(b"\x00")
              for i in range(1, parts)}
    return sorted(p for p in points if lo < p < hi)


def _put_entries(table: Any, entries: list[bytes], ts: int) -> None:
    batch = table.batch(timestamp=ts)
    for entry in entries:
        batch.put(entry, {INDEX_CELL: b""})
    batch.send()


def _drop_entries(table: Any, stale: list[tuple[bytes, int]]) -> None:
    """Delete each entry at its own timestamp: a newer write of the same entry is kept."""
    by_ts: dict[int, list[bytes]] = {}
    for entry, ts in stale:
        by_ts.setdefault(ts, []).append(entry)
    for ts, entries in by_ts.items():
        batch = table.batch(timestamp=ts)
        for entry in entries:
            batch.delete(entry, columns=[b"m"])
        batch.send()


class _TableMissing(Exception):
    """The crawl's webpage table is not there (said as HBase says it, so that _message names it)."""


def _create_table(conn: Any, name: bytes, families: dict[str, dict[str, Any]]) -> bool:
    """Create a table; False when another process created it first (the gateway says so with AlreadyExists, or
    with an IOError naming the master's TableExistsException when both asked at once)."""
    try:
        conn.create_table(name, families)
    except Exception as e:
        if type(e).__name__ != "AlreadyExists" and "TableExistsException" not in str(e):
            raise
        return False
    return True


def _transient(e: Exception) -> bool:
    """Thrift timeouts, broken pipes and resets are retried; server-side errors (IOError, IllegalArgument) not."""
    name = type(e).__name__
    if name in ("IOError", "IllegalArgument", "AlreadyExists"):
        return False
    return isinstance(e, (OSError, EOFError)) or "Transport" in name or "timed out" in str(e).lower()


# what the Thrift server's HBase client says once its own retries and timeouts are spent on a master or region
# server that is down, frozen or still starting (IOError's message: the Java exception, its cause's too)
_DOWN = re.compile(r"(RetriesExhausted\w*|SocketTimeoutException|CallTimeoutException|ConnectionLossException|"
                   r"ConnectException|FailedServerException|NoServerForRegionException|MasterNotRunningException|"
                   r"PleaseHoldException|ServerNotRunningYetException|OperationTimeoutExceededException|"
                   r"ConnectionClosedException|Zookeeper \w+ could not be completed)")


def _hbase_down(e: Exception) -> bool:
    """The gateway answered, but HBase behind it did not (see _DOWN)."""
    return type(e).__name__ == "IOError" and _DOWN.search(str(e)) is not None


def _short(e: Exception) -> str:
    text = " ".join(str(e).split()) or type(e).__name__
    if _hbase_down(e):
        return (f"the Thrift server answers, but HBase behind it does not ({_DOWN.search(text).group(1)}); "  # type: ignore[union-attr]
                "is HBase up? (docker/services.sh status hbase)")
    if "refused" in text.lower() or "could not connect" in text.lower():
        return "connection refused"
    if "timed out" in text.lower():
        return "no answer within storage.hbase.timeout"
    return text[:300]


def _message(where: str, action: str, e: Exception) -> str:
    """A failed call's one line; a missing table (a mistyped -crawlId, a crawl never injected) as sqlite says it."""
    missing = re.search(r"TableNotFoundException: ([\w.:-]+)", str(e))
    if missing:
        return (f"no crawl db {missing.group(1)} in HBase at {where}; run `nutch2 inject` first or check "
                "-crawlId/hbase.thrift.host")
    return f"HBase at {where}: {action} failed: {_failed(e)}"


def _failed(e: Exception) -> str:
    """_short, and for a gateway gone or silent what to check (a job's call, after its retries)."""
    short = _short(e)
    if short == "connection refused":
        return f"{short}; is the Thrift server up? (docker/services.sh start hbase)"
    if short.startswith("no answer"):
        return (f"{short}; is HBase up behind its Thrift server, and not overloaded? (docker/services.sh status "
                "hbase)")
    return short
