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
which removes only the older cells (the delete cannot mask the put, and a crash in between loses nothing).

Marks — markers whose names start with '_' (_injmrk_, _gnmrk_, _ftcmrk_, __prsmrk__, _updmrk_, _idxmrk_) — are
indexed in table `<crawlId>_webpage_marks` (family m, VERSIONS 1): one row `<name>\x00<value>\x00<row key>` with
one empty cell m:_ per mark a row carries. Selecting a batch is a prefix scan of that table restricted to the
split's key range, then batched gets of those rows (the asked columns and the mark), so it costs what the batch
holds, not what the table holds. A scan by a marker that is not a mark (`dist`) raises ValueError; mark names and
values cannot contain NUL. Entries are written before the rows and a put never reads a row to learn which marks
it drops, so entries go stale: a mark scan skips every entry whose row does not carry the mark, and deletes it
when it is stale for sure — the row was written at or after the entry (its f:_ cell is not older), or the entry
is older than any write could still be in flight ((retries + 1) * (3 * timeout + 5 s): a crash between index and
rows, a deleted row). The delete carries the entry's timestamp, so an entry written again meanwhile survives it.

Rows written before the index existed (tables of older versions) need nothing from the user: the first mark
selection indexes them by reading the mk family of every row once (one full read, as every selection cost
before), then writes the row `\x00complete` into the index table; a crash part-way redoes it. Meanwhile puts
already create the index table and add entries for what they write.
Splits follow the table's regions (sub-divided by sampling row keys when there are fewer regions than tasks).
Connections come from a happybase pool; a Thrift timeout or broken pipe reconnects and retries, and because
every write carries an explicit timestamp, re-sending a batch after a failure cannot duplicate anything.
"""

from __future__ import annotations

import heapq
import struct
import time
from collections.abc import Callable, Iterator
from typing import Any

from nutch2 import failpoints
from nutch2.errors import ConfigError, StoreError
from nutch2.stores.base import BufferedStore, MarkFilter, Split, check_mark, is_mark, with_retries
from nutch2.stores.codec import decode_parse, decode_protocol, encode_parse, encode_protocol
from nutch2.webpage import FIELDS, MAP_FIELDS, WebPage, check_fields

FAMILIES = ("f", "p", "s", "il", "ol", "h", "mtdt", "mk", "stm")
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
INDEX_FAMILIES = {"m": {"max_versions": 1}}
INDEX_CELL = b"m:_"  # the one empty cell of an index entry
INDEX_COMPLETE = b"\x00complete"  # marks of older rows indexed; sorts before every entry (names start with '_')
INDEX_PAGE = 1000  # index rows read per scanner
CHECK_CHUNK = 256  # rows fetched per batched get of a mark scan
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


class HBaseStore(BufferedStore):
    """A WebPage table in HBase, through the Thrift v1 gateway."""

    name = "hbase"

    def __init__(self, table: str, host: str, port: int, transport: str = "buffered", protocol: str = "binary",
                 pool_size: int = 8, timeout_ms: int = 60000, batch_size: int = 1000, retries: int = 5) -> None:
        super().__init__(table, batch_size)
        try:
            import happybase
        except ImportError:
            raise ConfigError("the hbase store needs happybase, which is not installed: "
                              "pip install 'nutch2[hbase]'") from None

        self.where = f"{host}:{port}"
        self.retries = max(0, retries)
        self._happybase = happybase
        try:
            self.pool = happybase.ConnectionPool(pool_size, host=host, port=port, timeout=timeout_ms,
                                                 transport=transport, protocol=protocol, autoconnect=False)
            with self.pool.connection() as conn:
                conn.open()
                conn.tables()
        except Exception as e:
            raise StoreError(
                f"cannot reach the HBase Thrift server at {self.where} ({_short(e)}); check hbase.thrift.host, "
                "hbase.thrift.port and hbase.thrift.transport/protocol, or start it: docker/services.sh start hbase"
            ) from None
        self.tname = table.encode()
        self.sname = f"{table}_state".encode()  # the crawl state: row = name, column s:v = value
        self.mname = f"{table}_marks".encode()  # the mark index: row = name NUL value NUL key
        self.in_flight_ms = (self.retries + 1) * (3 * timeout_ms + 5000)  # the longest a write_batch can take
        self._index_table = False  # the mark index table is known to exist
        self._index_complete = False  # ... and to hold the marks of rows written before it existed
        self._last_ts = 0

    # -------------------------------------------------------------- plumbing
    def _with_retry(self, action: str, fn: Callable[[Any], Any], table: bytes | None = None) -> Any:
        """Run fn(table) (the webpage table by default) on a pooled connection; reconnect and retry on
        Thrift/socket failures."""
        def run() -> Any:
            with self.pool.connection() as conn:
                conn.open()
                return fn(conn.table(table or self.tname))

        return with_retries(run, self.retries, _transient,
                            lambda e: StoreError(f"HBase at {self.where}: {action} failed: {_short(e)}"), 0.2)

    def _ts(self) -> int:
        """A write timestamp (ms), strictly increasing in this process, with room for the t-1 deletes."""
        with self._lock:
            self._last_ts = max(int(time.time() * 1000), self._last_ts + 2)
            return self._last_ts

    # -------------------------------------------------------------- schema
    def create_schema(self) -> None:
        def create(t: Any) -> None:
            conn = t.connection
            tables = conn.tables()
            new = self.tname not in tables and _create_table(conn, self.tname, {f: {"max_versions": 1}
                                                                               for f in FAMILIES})
            if self.sname not in tables:
                _create_table(conn, self.sname, {"s": {"max_versions": 1}})
            if self.mname not in tables:
                _create_table(conn, self.mname, INDEX_FAMILIES)
                if new:  # rows are written only once the index table exists: nothing older to index
                    conn.table(self.mname).put(INDEX_COMPLETE, {INDEX_CELL: b""})

        self._with_retry("create table", create)
        self._index_table = True

    def drop_schema(self) -> None:
        self.discard_pending()

        def drop(_t: Any) -> None:
            with self.pool.connection() as conn:
                tables = conn.tables()
                for name in (self.tname, self.sname, self.mname):
                    if name in tables:
                        conn.delete_table(name, disable=True)

        self._with_retry("drop table", drop)
        self._index_table = self._index_complete = False

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

    def scan(self, start: str | None = None, end: str | None = None,
             fields: list[str] | tuple[str, ...] | None = None, mark: MarkFilter | None = None) -> Iterator[WebPage]:
        names = check_fields(fields)
        if mark is None:
            return self._scan(start, end, names)
        check_mark(mark)
        return self._mark_scan(names, mark, start, end)

    def _scan(self, start: str | None, end: str | None, names: tuple[str, ...]) -> Iterator[WebPage]:
        """A scan of the webpage table itself, restarted after the last row it returned when the scanner breaks."""
        self.flush()
        last: bytes | None = None
        row_start = start.encode() if start is not None else None
        row_stop = end.encode() if end is not None else None
        attempts = 0
        while True:  # a broken scanner restarts after the last row it returned
            try:
                with self.pool.connection() as conn:
                    conn.open()
                    table = conn.table(self.tname)
                    begin = last + b"\x00" if last is not None else row_start
                    for key, data in table.scan(row_start=begin, row_stop=row_stop, columns=self._columns(names),
                                                batch_size=500):
                        last = key
                        yield self._page(key, data, names)
                return
            except GeneratorExit:
                raise
            except Exception as e:
                attempts += 1
                if attempts > self.retries or not _transient(e):
                    raise StoreError(f"HBase at {self.where}: scan failed: {_short(e)}") from None
                time.sleep(min(0.2 * 2**attempts, 5.0))

    # -------------------------------------------------------------- the mark index
    def _mark_scan(self, names: tuple[str, ...], mark: MarkFilter, start: str | None,
                   end: str | None) -> Iterator[WebPage]:
        """Rows carrying the mark with start <= key < end, in key order: index entries, then batched gets."""
        self.flush()
        self._ensure_index()
        name, value = mark
        values = [value] if value is not None else self._index_values(name)
        entries = heapq.merge(*(self._entries(name, v, start, end) for v in values))
        col = f"mk:{name}".encode()
        columns = self._columns(names) if "markers" in names else [*self._columns(names), col]
        chunk: list[tuple[bytes, str, int]] = []
        for entry in entries:
            chunk.append(entry)
            if len(chunk) >= CHECK_CHUNK:
                yield from self._checked(chunk, col, columns, names)
                chunk = []
        if chunk:
            yield from self._checked(chunk, col, columns, names)

    def _entries(self, name: str, value: str, start: str | None,
                 end: str | None) -> Iterator[tuple[bytes, str, int]]:
        """(row key, value, entry timestamp) of the index entries of name = value in [start, end), in key order."""
        prefix = _entry_key(name, value, b"")
        begin = prefix + (start.encode() if start is not None else b"")
        stop = prefix + end.encode() if end is not None else prefix[:-1] + b"\x01"
        while True:  # a page per scanner: a retry restarts after the last entry read
            page = self._with_retry("scan mark index", lambda t, b=begin: list(t.scan(
                row_start=b, row_stop=stop, columns=[INDEX_CELL], include_timestamp=True, limit=INDEX_PAGE,
                batch_size=INDEX_PAGE)), self.mname)
            for key, data in page:
                yield key[len(prefix):], value, data[INDEX_CELL][1]
            if len(page) < INDEX_PAGE:
                return
            begin = page[-1][0] + b"\x00"

    def _index_values(self, name: str) -> list[str]:
        """The values mark `name` has in the index (stale entries included): one short scan per value."""
        head = name.encode() + b"\x00"
        values: list[str] = []
        begin = head
        while True:
            hit = self._with_retry("scan mark index", lambda t, b=begin: list(t.scan(
                row_start=b, row_stop=head[:-1] + b"\x01", columns=[INDEX_CELL], limit=1)), self.mname)
            if not hit:
                return values
            value = hit[0][0][len(head):].split(b"\x00", 1)[0]
            values.append(value.decode("utf-8"))
            begin = head + value + b"\x01"  # past every entry of this value

    def _checked(self, chunk: list[tuple[bytes, str, int]], col: bytes, columns: list[bytes],
                 names: tuple[str, ...]) -> list[WebPage]:
        """The pages of the chunk's rows that carry their entry's mark; entries stale for sure are deleted."""
        keys = [key for key, _, _ in chunk]
        found = dict(self._with_retry("get", lambda t: t.rows(keys, columns=columns, include_timestamp=True)))
        pages: list[WebPage] = []
        stale: list[tuple[bytes, int]] = []
        oldest_in_flight = time.time() * 1000 - self.in_flight_ms
        for key, value, ts in chunk:
            data = found.get(key, {})
            cell = data.get(col)
            if cell is not None and cell[0] == value.encode():
                pages.append(self._page(key, {c: v for c, (v, _) in data.items()}, names))
            elif (ROW_MARKER in data and data[ROW_MARKER][1] >= ts) or ts < oldest_in_flight:
                stale.append((_entry_key(col[3:].decode(), value, key), ts))
            # else: the entry's write may still be in flight (index first, then the row): leave it
        if stale:
            self._with_retry("drop stale mark index entries", lambda t: _drop_entries(t, stale), self.mname)
        return pages

    def _ensure_index(self) -> None:
        """Make sure the index holds the marks of rows written before it existed (once per table)."""
        if self._index_complete:
            return

        def complete(t: Any) -> bool:
            self._ensure_index_table(t.connection)
            return bool(t.connection.table(self.mname).row(INDEX_COMPLETE))

        if not self._with_retry("read mark index", complete):
            self._backfill()
        self._index_complete = True

    def _ensure_index_table(self, conn: Any) -> None:
        if not self._index_table:
            if self.mname not in conn.tables():  # a table made before the index existed
                _create_table(conn, self.mname, INDEX_FAMILIES)
            self._index_table = True

    def _backfill(self) -> None:
        """Index the marks of every row (idempotent; rows put meanwhile index themselves), then record it."""
        begin: bytes | None = None
        while True:
            page = self._with_retry("index marks", lambda t, b=begin: list(t.scan(
                row_start=b, columns=[b"mk"], limit=INDEX_PAGE, batch_size=INDEX_PAGE)))
            entries = [_entry_key(col[3:].decode("utf-8"), raw.decode("utf-8"), key)
                       for key, data in page for col, raw in data.items() if col.startswith(b"mk:_")]
            if entries:
                ts = self._ts()
                self._with_retry("index marks", lambda t, e=entries, ts=ts: _put_entries(t, e, ts), self.mname)
            if len(page) < INDEX_PAGE:
                break
            begin = page[-1][0] + b"\x00"
        self._with_retry("index marks", lambda t: t.put(INDEX_COMPLETE, {INDEX_CELL: b""}), self.mname)

    # -------------------------------------------------------------- splits and counts
    def splits(self, n: int) -> list[Split]:
        regions = self._with_retry("list regions", lambda t: t.regions())
        bounds = sorted({r["start_key"] for r in regions if r.get("start_key")})
        if len(bounds) + 1 < n:
            bounds = sorted(set(bounds) | set(self._sample_keys(n)))
        edges: list[str | None] = [None, *(b.decode("utf-8") for b in bounds), None]
        ranges = [(edges[i], edges[i + 1]) for i in range(len(edges) - 1)]
        if len(ranges) > n:  # group adjacent regions into n splits
            size = -(-len(ranges) // n)
            ranges = [(ranges[i][0], ranges[min(i + size, len(ranges)) - 1][1]) for i in range(0, len(ranges), size)]
        return ranges

    def _sample_keys(self, n: int) -> list[bytes]:
        """Row keys cutting the table into about n equal parts (a keys-only scan run by the region servers)."""
        def keys(t: Any) -> list[bytes]:
            return [k for k, _ in t.scan(filter="FirstKeyOnlyFilter() AND KeyOnlyFilter()", batch_size=5000)]

        all_keys = self._with_retry("sample keys", keys)
        if n <= 1 or len(all_keys) < 2:
            return []
        return sorted({all_keys[len(all_keys) * i // n] for i in range(1, n)} - {all_keys[0]})

    def count(self, mark: MarkFilter | None = None) -> int:
        # no cheap_count: HBase keeps no row count (a keys-only scan ships every key through Thrift), and a kept
        # one would need a read before every write (puts are blind upserts)
        if mark is not None:
            return sum(1 for _ in self.scan(fields=(), mark=mark))
        self.flush()
        return self._with_retry("count", lambda t: sum(
            1 for _ in t.scan(filter="FirstKeyOnlyFilter() AND KeyOnlyFilter()", batch_size=5000)))

    def mark_values(self, name: str) -> set[str]:
        """Values in the index that at least one row still carries (stale entries met on the way are dropped)."""
        check_mark((name, None))
        self.flush()
        self._ensure_index()
        return {v for v in self._index_values(name)
                if next(self._mark_scan((), (name, v), None, None), None) is not None}

    # -------------------------------------------------------------- crawl state
    def _state_table(self, action: str, fn: Callable[[Any], Any], create: bool = False) -> Any:
        def run(_t: Any) -> Any:
            with self.pool.connection() as conn:
                if self.sname not in conn.tables():  # a table made before the state table existed
                    if not create:
                        return None
                    conn.create_table(self.sname, {"s": {"max_versions": 1}})
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

    def states(self) -> dict[str, str]:
        rows = self._state_table("scan state", lambda t: list(t.scan(columns=[b"s:v"])))
        return {k.decode("utf-8"): v[b"s:v"].decode("utf-8") for k, v in rows or []}

    # -------------------------------------------------------------- writes
    def encode(self, page: WebPage) -> dict[str, Any]:
        values = {n: dict(v) if n in MAP_FIELDS else v for n, v in page.dirty_values().items()}
        for name, value in (values.get("markers") or {}).items():
            if is_mark(name) and "\x00" in name + str(value):
                raise ValueError(f"mark {name!r} = {value!r} of {page.key}: mark names and values cannot contain NUL")
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
        index = table.connection.table(self.mname).batch(timestamp=ts)
        deletes = table.batch(timestamp=ts - 1)
        puts = table.batch(timestamp=ts)
        for key, values in pending.items():
            row = key.encode("utf-8")
            for name, value in (values.get("markers") or {}).items():
                if is_mark(name):
                    index.put(_entry_key(name, str(value), row), {INDEX_CELL: b""})
            if values.get("__delete__"):
                deletes.delete(row)
                values = {k: v for k, v in values.items() if k != "__delete__"}
                if not values:
                    continue
            cells: dict[bytes, bytes] = {}
            drop: list[bytes] = []
            for name, value in values.items():
                col = COLUMNS[name]
                if name in MAP_FIELDS:
                    drop.append(col.encode())
                    for q, v in (value or {}).items():
                        cells[f"{col}:{q}".encode()] = _map_value(name, v)
                elif value is None:
                    drop.append(col.encode())
                else:
                    cells[col.encode()] = encode_value(name, value)
            if drop:
                deletes.delete(row, columns=drop)
            cells[ROW_MARKER] = b""  # every row has it: scans by column find rows lacking the asked columns
            puts.put(row, cells)
        index.send()
        failpoints.reach("store.marks.indexed")  # crash tests stop here: entries written, rows not
        puts.send()
        deletes.send()

    def close(self) -> None:
        self.flush()


def _entry_key(name: str, value: str, key: bytes) -> bytes:
    """The index row of a mark: name NUL value NUL row key (UTF-8), so entries sort by mark, value, key."""
    return b"%s\x00%s\x00%s" % (name.encode("utf-8"), value.encode("utf-8"), key)


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


def _create_table(conn: Any, name: bytes, families: dict[str, dict[str, int]]) -> bool:
    """Create a table; False when another process created it first."""
    try:
        conn.create_table(name, families)
    except Exception as e:
        if type(e).__name__ != "AlreadyExists":
            raise
        return False
    return True


def _transient(e: Exception) -> bool:
    """Thrift timeouts, broken pipes and resets are retried; server-side errors (IOError, IllegalArgument) not."""
    name = type(e).__name__
    if name in ("IOError", "IllegalArgument", "AlreadyExists"):
        return False
    return isinstance(e, (OSError, EOFError)) or "Transport" in name or "timed out" in str(e).lower()


def _short(e: Exception) -> str:
    text = " ".join(str(e).split()) or type(e).__name__
    if "refused" in text.lower():
        return "connection refused"
    return text[:300]
