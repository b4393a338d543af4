"""HBase store over happybase (Thrift v1), in Nutch 2's table layout (gora-hbase-mapping.xml).

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
Selecting one mark is a SingleColumnValueFilter run by the region servers.
Splits follow the table's regions (sub-divided by sampling row keys when there are fewer regions than tasks).
Connections come from a happybase pool; a Thrift timeout or broken pipe reconnects and retries, and because
every write carries an explicit timestamp, re-sending a batch after a failure cannot duplicate anything.
"""

from __future__ import annotations

import struct
import time
from collections.abc import Callable, Iterator
from typing import Any

from nutch2.errors import StoreError
from nutch2.stores.base import BufferedStore, MarkFilter, Split, with_retries
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
        import happybase

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
        self._last_ts = 0

    # -------------------------------------------------------------- plumbing
    def _with_retry(self, action: str, fn: Callable[[Any], Any]) -> Any:
        """Run fn(table) on a pooled connection; reconnect and retry on Thrift/socket failures."""
        def run() -> Any:
            with self.pool.connection() as conn:
                conn.open()
                return fn(conn.table(self.tname))

        return with_retries(run, self.retries, _transient,
                            lambda e: StoreError(f"HBase at {self.where}: {action} failed: {_short(e)}"), 0.2)

    def _ts(self) -> int:
        """A write timestamp (ms), strictly increasing in this process, with room for the t-1 deletes."""
        with self._lock:
            self._last_ts = max(int(time.time() * 1000), self._last_ts + 2)
            return self._last_ts

    # -------------------------------------------------------------- schema
    def create_schema(self) -> None:
        def create(_t: Any) -> None:
            with self.pool.connection() as conn:
                if self.tname not in conn.tables():
                    families = {f: {"max_versions": 1} for f in FAMILIES}
                    conn.create_table(self.tname, families)
                if self.sname not in conn.tables():
                    conn.create_table(self.sname, {"s": {"max_versions": 1}})

        self._with_retry("create table", create)

    def drop_schema(self) -> None:
        self.discard_pending()

        def drop(_t: Any) -> None:
            with self.pool.connection() as conn:
                tables = conn.tables()
                for name in (self.tname, self.sname):
                    if name in tables:
                        conn.delete_table(name, disable=True)

        self._with_retry("drop table", drop)

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
        self.flush()
        read = names if mark is None or "markers" in names else (*names, "markers")
        flt = None if mark is None else _mark_filter(mark)
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
                    for key, data in table.scan(row_start=begin, row_stop=row_stop, columns=self._columns(read),
                                                filter=flt, batch_size=500):
                        if mark is not None and mark[1] is None and f"mk:{mark[0]}".encode() not in data:
                            continue
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
        if mark is not None:
            return sum(1 for _ in self.scan(fields=("markers",), mark=mark))
        self.flush()
        return self._with_retry("count", lambda t: sum(
            1 for _ in t.scan(filter="FirstKeyOnlyFilter() AND KeyOnlyFilter()", batch_size=5000)))

    def mark_values(self, name: str) -> set[str]:
        """A scan of the one column mk:<name>: region servers return only the rows that have it."""
        self.flush()
        col = f"mk:{name}".encode()

        def values(t: Any) -> set[str]:
            return {data[col].decode("utf-8") for _, data in t.scan(columns=[col], batch_size=1000) if col in data}

        return self._with_retry("scan", values)

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
        return {n: dict(v) if n in MAP_FIELDS else v for n, v in page.dirty_values().items()}

    def write_batch(self, pending: dict[str, dict[str, Any]]) -> None:
        ts = self._ts()
        self._with_retry("write", lambda t: self._write(t, pending, ts))

    def _write(self, table: Any, pending: dict[str, dict[str, Any]], ts: int) -> None:
        """Puts at ts, then deletes (old rows, map families, null columns) at ts-1, which remove only older cells.

        Puts go first so that a crash between the two leaves the new cells plus some old ones, never a row
        that lost its map (e.g. its marks); re-sending the whole batch is idempotent."""
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
        puts.send()
        deletes.send()

    def close(self) -> None:
        self.flush()


def _mark_filter(mark: MarkFilter) -> str:
    """A server-side filter selecting rows whose mk:<name> equals the value (or exists, for None)."""
    name, value = mark
    if value is None:
        return f"SingleColumnValueFilter('mk', '{_quote(name)}', !=, 'binary:', true, true)"
    return f"SingleColumnValueFilter('mk', '{_quote(name)}', =, 'binary:{_quote(value)}', true, true)"


def _quote(text: str) -> str:
    return text.replace("'", "''")


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
