"""Cassandra store (cassandra-driver, CQL), designed for this workload rather than copied from Nutch 2's
Thrift-era super columns.

Tables, in keyspace `storage.cassandra.keyspace` (created if missing, `storage.cassandra.replication`):

    "<t>"             PRIMARY KEY ((prefix), key)   one row per WebPage, one CQL column per field
    "<t>_marks"       PRIMARY KEY ((name, value), key)   index: the rows carrying mark `name` = `value`
    "<t>_markvalues"  PRIMARY KEY ((name), value)   the values a mark has taken (for "any value" scans)
    "<t>_prefixes"    PRIMARY KEY ((bucket), prefix)   the host prefixes, sorted (for key-range scans)

Why: `prefix` is the key up to its first ':' — the reversed host plus ':' — so a host's pages share one
partition, clustered in key order, while hosts spread over the ring by token. Selecting one batch reads one
`_marks` partition (the batch's keys) and then those rows, never the whole table. Index entries are written
with the row and dropped lazily: a scan checks each row's marker and deletes entries that went stale, so a
put never has to read before writing. Splits are token ranges of the partition key, for parallel map tasks.

Encoding: ints are bigint, floats double, content and signatures blob, maps map<text,text> (metadata
map<text,blob>), protocol_status and parse_status JSON text (stores/codec.py). Writes set only dirty columns:
one prepared INSERT per column set (CQL's INSERT writes only the columns it names, and its row marker keeps
a row whose columns are all null alive), run with bounded concurrency (execute_concurrent). A map column is
replaced as a whole.
"""

from __future__ import annotations

import heapq
import logging
from collections.abc import Iterable, Iterator
from typing import Any

from nutch2.errors import ConfigError, StoreError
from nutch2.stores.base import BufferedStore, MarkFilter, Split, check_mark, is_mark, with_retries
from nutch2.stores.codec import decode_field, encode_field
from nutch2.webpage import FIELDS, WebPage, check_fields

_CQL_TYPES = {"int": "bigint", "float": "double", "str": "text", "bytes": "blob", "protocol": "text",
              "parse": "text"}
MIN_TOKEN, MAX_TOKEN = -(2**63), 2**63 - 1
logging.getLogger("cassandra").setLevel(logging.ERROR)


def _cql_type(name: str) -> str:
    kind = FIELDS[name][0]
    if kind == "map":
        return "map<text, blob>" if name == "metadata" else "map<text, text>"
    return _CQL_TYPES[kind]


def _encode(name: str, value: Any) -> Any:
    """CQL value of a field: maps stay maps (metadata values blobs), records JSON text (codec)."""
    if FIELDS[name][0] == "map":
        return dict(value) if value else None
    return encode_field(name, value)


def _decode(name: str, value: Any) -> Any:
    if FIELDS[name][0] == "map":
        return dict(value) if value else {}
    return decode_field(name, value)


def prefix_of(key: str) -> str:
    """The partition key: the reversed host and its ':' (a bracketed IPv6 host is kept whole)."""
    start = key.index("]") + 1 if key.startswith("[") and "]" in key else 0
    i = key.find(":", start)
    return key if i < 0 else key[: i + 1]


class CassandraStore(BufferedStore):
    """A WebPage table in Cassandra."""

    name = "cassandra"

    def __init__(self, table: str, contact_points: list[str], port: int, keyspace: str, replication: str,
                 read_cl: str, write_cl: str, local_dc: str, concurrency: int, timeout: float,
                 batch_size: int = 500, retries: int = 5) -> None:
        super().__init__(table, batch_size)
        try:
            from cassandra import ConsistencyLevel
            from cassandra.cluster import EXEC_PROFILE_DEFAULT, Cluster, ExecutionProfile
            from cassandra.policies import ConstantReconnectionPolicy, DCAwareRoundRobinPolicy
        except ImportError:
            raise ConfigError("the cassandra store needs cassandra-driver, which is not installed: "
                              "pip install 'nutch2[cassandra]'") from None

        self.where = f"{','.join(contact_points)}:{port}"
        self.keyspace = keyspace
        self.replication = replication
        self.concurrency = max(1, concurrency)
        self.retries = max(0, retries)
        try:
            self.read_cl = ConsistencyLevel.name_to_value[read_cl.upper()]
            self.write_cl = ConsistencyLevel.name_to_value[write_cl.upper()]
        except KeyError as e:
            raise StoreError(f"unknown Cassandra consistency level {e}; use e.g. ONE, LOCAL_ONE, QUORUM") from None
        profile = ExecutionProfile(load_balancing_policy=DCAwareRoundRobinPolicy(local_dc=local_dc),
                                   request_timeout=timeout, consistency_level=self.read_cl)
        self.cluster = Cluster(contact_points, port=port, connect_timeout=timeout,
                               execution_profiles={EXEC_PROFILE_DEFAULT: profile},
                               reconnection_policy=ConstantReconnectionPolicy(1.0, max_attempts=None))
        try:
            self.session = self.cluster.connect()
        except Exception as e:  # NoHostAvailable, timeouts, DNS
            self.cluster.shutdown()
            raise StoreError(
                f"cannot reach Cassandra at {self.where} ({_short(e)}); check storage.cassandra.contact.points "
                "and storage.cassandra.port, or start it: docker/services.sh start cassandra") from None
        self.q = f'"{keyspace}"."{table}"'
        self._prepared: dict[Any, Any] = {}
        self._prefixes: set[str] = set()  # prefixes and mark values this process already recorded
        self._markvalues: set[tuple[str, str]] = set()
        self._state_ready = False

    # -------------------------------------------------------------- plumbing
    def _run(self, cql: str, params: Iterable[Any] = (), write: bool = False) -> Any:
        stmt = self._prepare(cql)
        if write:
            stmt.consistency_level = self.write_cl
        return with_retries(lambda: self.session.execute(stmt, list(params)), self.retries, _transient,
                            lambda e: StoreError(f"Cassandra at {self.where}: {_short(e)}"))

    def _prepare(self, cql: str) -> Any:
        stmt = self._prepared.get(cql)
        if stmt is None:
            try:
                stmt = self._prepared[cql] = self.session.prepare(cql)
            except Exception as e:
                raise StoreError(f"Cassandra at {self.where}: {_short(e)}") from None
        return stmt

    def _many(self, items: list[tuple[str, tuple]], write: bool = True) -> list[Any]:
        """Run statements with at most storage.cassandra.concurrency in flight; raise on the first failure."""
        from cassandra.concurrent import execute_concurrent

        if not items:
            return []
        stmts = []
        for cql, params in items:
            stmt = self._prepare(cql)
            if write:
                stmt.consistency_level = self.write_cl
            stmts.append((stmt, params))
        def run() -> list[Any]:  # statements are idempotent: re-running them is safe
            results = execute_concurrent(self.session, stmts, concurrency=self.concurrency,
                                         raise_on_first_error=True)
            return [r.result_or_exc for r in results]

        what = "write" if write else "read"
        return with_retries(run, self.retries, _transient,
                            lambda e: StoreError(f"Cassandra at {self.where}: {what} failed: {_short(e)}"))

    # -------------------------------------------------------------- schema
    def create_schema(self) -> None:
        self._run(f'CREATE KEYSPACE IF NOT EXISTS "{self.keyspace}" WITH replication = {self.replication}')
        cols = ", ".join(f"{n} {_cql_type(n)}" for n in FIELDS)
        self._run(f"CREATE TABLE IF NOT EXISTS {self.q} (prefix text, key text, {cols}, PRIMARY KEY ((prefix), key))")
        self._run(f'CREATE TABLE IF NOT EXISTS "{self.keyspace}"."{self.table}_marks" '
                  "(name text, value text, key text, PRIMARY KEY ((name, value), key))")
        self._run(f'CREATE TABLE IF NOT EXISTS "{self.keyspace}"."{self.table}_markvalues" '
                  "(name text, value text, PRIMARY KEY ((name), value))")
        self._run(f'CREATE TABLE IF NOT EXISTS "{self.keyspace}"."{self.table}_prefixes" '
                  "(bucket int, prefix text, PRIMARY KEY ((bucket), prefix))")
        self._create_state()

    def _create_state(self) -> None:
        self._run(f'CREATE TABLE IF NOT EXISTS "{self.keyspace}"."{self.table}_state" '
                  "(name text PRIMARY KEY, value text)")
        self._state_ready = True

    def drop_schema(self) -> None:
        self.discard_pending()
        self._state_ready = False
        for suffix in ("", "_marks", "_markvalues", "_prefixes", "_state"):
            self._run(f'DROP TABLE IF EXISTS "{self.keyspace}"."{self.table}{suffix}"')
        self._prefixes.clear()
        self._markvalues.clear()

    # -------------------------------------------------------------- reads
    def _cols(self, names: tuple[str, ...]) -> str:
        return ", ".join(("key", *names))

    def _page(self, names: tuple[str, ...], row: Any) -> WebPage:
        return WebPage.from_store(row[0], {n: _decode(n, v) for n, v in zip(names, row[1:], strict=True)})

    def get(self, key: str, fields: list[str] | tuple[str, ...] | None = None) -> WebPage | None:
        names = check_fields(fields)
        self.flush_key(key)
        row = self._run(f"SELECT {self._cols(names)} FROM {self.q} WHERE prefix = ? AND key = ?",
                        (prefix_of(key), key)).one()
        return None if row is None else self._page(names, row)

    def _get_many(self, keys: list[str], names: tuple[str, ...]) -> dict[str, WebPage]:
        cql = f"SELECT {self._cols(names)} FROM {self.q} WHERE prefix = ? AND key = ?"
        results = self._many([(cql, (prefix_of(k), k)) for k in keys], write=False)
        pages = {}
        for res in results:
            row = res.one() if res is not None else None
            if row is not None:
                pages[row[0]] = self._page(names, row)
        return pages

    def scan(self, start: str | None = None, end: str | None = None,
             fields: list[str] | tuple[str, ...] | None = None, mark: MarkFilter | None = None) -> Iterator[WebPage]:
        names = check_fields(fields)
        check_mark(mark)
        self.flush()
        if mark is not None:
            yield from self._mark_scan(names, mark, start, end, None)
            return
        for prefix in self._prefixes_between(start, end):
            cql, params = f"SELECT {self._cols(names)} FROM {self.q} WHERE prefix = ?", [prefix]
            if start is not None and prefix_of(start) == prefix:
                cql, params = cql + " AND key >= ?", [*params, start]
            if end is not None and end.startswith(prefix):
                cql, params = cql + " AND key < ?", [*params, end]
            for row in self._run(cql, params):
                yield self._page(names, row)

    def _prefixes_between(self, start: str | None, end: str | None) -> list[str]:
        cql, params = f'SELECT prefix FROM "{self.keyspace}"."{self.table}_prefixes" WHERE bucket = 0', []
        if start is not None:
            cql, params = cql + " AND prefix >= ?", [*params, prefix_of(start)]
        if end is not None:
            cql, params = cql + " AND prefix < ?", [*params, end]
        return [r[0] for r in self._run(cql, params)]

    def _mark_keys(self, name: str, value: str | None, start: str | None, end: str | None) -> Iterator[tuple]:
        """(key, value) of index entries for the mark, in key order, merged over values when value is None."""
        values = [value] if value is not None else [
            r[0] for r in self._run(f'SELECT value FROM "{self.keyspace}"."{self.table}_markvalues" WHERE name = ?',
                                    (name,))]
        streams = []
        for v in values:
            cql = f'SELECT key FROM "{self.keyspace}"."{self.table}_marks" WHERE name = ? AND value = ?'
            params: list[Any] = [name, v]
            if start is not None:
                cql, params = cql + " AND key >= ?", [*params, start]
            if end is not None:
                cql, params = cql + " AND key < ?", [*params, end]
            streams.append([(r[0], v) for r in self._run(cql, params)])
        return heapq.merge(*streams)

    def _mark_scan(self, names: tuple[str, ...], mark: MarkFilter, start: str | None, end: str | None,
                   tokens: tuple[int, int] | None) -> Iterator[WebPage]:
        from cassandra.murmur3 import murmur3

        name, value = mark
        read = tuple(dict.fromkeys((*names, "markers")))
        chunk: list[tuple[str, str]] = []

        def emit() -> Iterator[WebPage]:
            pages = self._get_many([k for k, _ in chunk], read)
            stale = []
            for key, v in chunk:
                page = pages.get(key)
                if page is None or page.markers.get(name) != v:
                    stale.append((key, v))
                    continue
                if "markers" not in names:
                    page = WebPage.from_store(key, {n: getattr(page, n) for n in names})
                yield page
            if stale:
                cql = f'DELETE FROM "{self.keyspace}"."{self.table}_marks" WHERE name = ? AND value = ? AND key = ?'
                self._many([(cql, (name, v, k)) for k, v in stale])
            chunk.clear()

        for key, v in self._mark_keys(name, value, start, end):
            if tokens is not None and not tokens[0] < _token(murmur3, key) <= tokens[1]:
                continue
            chunk.append((key, v))
            if len(chunk) >= 256:
                yield from emit()
        if chunk:
            yield from emit()

    def splits(self, n: int) -> list[Split]:
        """n equal token ranges (lo, hi] over the Murmur3 ring."""
        n = max(1, n)
        width = (MAX_TOKEN - MIN_TOKEN) // n
        bounds = [MIN_TOKEN + i * width for i in range(n)] + [MAX_TOKEN]
        return [("token", bounds[i], bounds[i + 1]) for i in range(n)]

    def scan_split(self, split: Split, fields: list[str] | tuple[str, ...] | None = None,
                   mark: MarkFilter | None = None) -> Iterator[WebPage]:
        if not (isinstance(split, tuple) and split and split[0] == "token"):
            return super().scan_split(split, fields, mark)
        check_mark(mark)
        return self._scan_tokens(split[1], split[2], check_fields(fields), mark)

    def _scan_tokens(self, lo: int, hi: int, names: tuple[str, ...], mark: MarkFilter | None) -> Iterator[WebPage]:
        self.flush()
        if mark is not None:
            yield from self._mark_scan(names, mark, None, None, (lo, hi))
            return
        cql = f"SELECT {self._cols(names)} FROM {self.q} WHERE token(prefix) > ? AND token(prefix) <= ?"
        for row in self._run(cql, (lo, hi)):
            yield self._page(names, row)

    def count(self, mark: MarkFilter | None = None) -> int:
        # no cheap_count: CQL's count(*) reads every partition on the server, and a kept count would need a read
        # before every write (puts are blind upserts) or counter columns, which a retried write counts twice
        if mark is None:
            self.flush()
            return self._run(f"SELECT count(*) FROM {self.q}").one()[0]
        return sum(1 for _ in self.scan(fields=("status",), mark=mark))

    def mark_values(self, name: str) -> set[str]:
        """Values recorded for the mark that at least one row still carries (stale entries are dropped)."""
        check_mark((name, None))
        self.flush()
        values = [r[0] for r in self._run(
            f'SELECT value FROM "{self.keyspace}"."{self.table}_markvalues" WHERE name = ?', (name,))]
        return {v for v in values if next(self._mark_scan(("markers",), (name, v), None, None, None), None)}

    # -------------------------------------------------------------- crawl state
    def get_state(self, name: str) -> str | None:
        try:
            row = self._run(f'SELECT value FROM "{self.keyspace}"."{self.table}_state" WHERE name = ?', (name,)).one()
        except StoreError as e:
            if "unconfigured table" in str(e).lower():  # a table made before the state table existed
                return None
            raise
        return None if row is None else row[0]

    def put_state(self, name: str, value: str | None) -> None:
        self.flush()
        if not self._state_ready:
            self._create_state()
        q = f'"{self.keyspace}"."{self.table}_state"'
        if value is None:
            self._run(f"DELETE FROM {q} WHERE name = ?", (name,), write=True)
        else:
            self._run(f"INSERT INTO {q} (name, value) VALUES (?, ?)", (name, value), write=True)

    def states(self) -> dict[str, str]:
        try:
            return {r[0]: r[1] for r in self._run(f'SELECT name, value FROM "{self.keyspace}"."{self.table}_state"')}
        except StoreError as e:
            if "unconfigured table" in str(e).lower():
                return {}
            raise

    # -------------------------------------------------------------- writes
    def encode(self, page: WebPage) -> dict[str, Any]:
        values = {n: _encode(n, v) for n, v in page.dirty_values().items()}
        if "markers" in values:
            values["__markers__"] = dict(page.markers)
        return values

    def write_batch(self, pending: dict[str, dict[str, Any]]) -> None:
        """Deletes, then index entries, then rows: a crash part-way leaves at worst an index entry whose row
        does not carry the mark (dropped by the next scan), never a marked row that the index misses."""
        deletes = [(f"DELETE FROM {self.q} WHERE prefix = ? AND key = ?", (prefix_of(k), k))
                   for k, v in pending.items() if v.get("__delete__")]
        self._many(deletes)  # before the writes, so a delete then put of one key ends with the put
        rows: list[tuple[str, tuple]] = []
        index: list[tuple[str, tuple]] = []
        new_prefixes = set()
        new_values: set[tuple[str, str]] = set()
        for key, values in pending.items():
            names = sorted(n for n in values if n in FIELDS)
            prefix = prefix_of(key)
            if names:  # INSERT writes only these columns, plus the row marker that keeps a row of nulls alive
                marks = ", ".join("?" for _ in names)
                rows.append((f"INSERT INTO {self.q} (prefix, key, {', '.join(names)}) VALUES (?, ?, {marks})",
                             (prefix, key, *(values[n] for n in names))))
                if prefix not in self._prefixes:
                    new_prefixes.add(prefix)
            for name, value in (values.get("__markers__") or {}).items():
                if is_mark(name):
                    index.append((f'INSERT INTO "{self.keyspace}"."{self.table}_marks" (name, value, key) '
                                  "VALUES (?, ?, ?)", (name, str(value), key)))
                    if (name, str(value)) not in self._markvalues:
                        new_values.add((name, str(value)))
        index += [(f'INSERT INTO "{self.keyspace}"."{self.table}_prefixes" (bucket, prefix) VALUES (0, ?)', (p,))
                  for p in new_prefixes]
        index += [(f'INSERT INTO "{self.keyspace}"."{self.table}_markvalues" (name, value) VALUES (?, ?)', nv)
                  for nv in new_values]
        self._many(index)
        self._many(rows)
        self._prefixes |= new_prefixes
        self._markvalues |= new_values

    def close(self) -> None:
        try:
            self.flush()
        finally:
            self.cluster.shutdown()


def _token(murmur3: Any, key: str) -> int:
    token = murmur3(prefix_of(key).encode("utf-8"))
    return MAX_TOKEN if token == MIN_TOKEN else token


def _transient(e: Exception) -> bool:
    """Node down or restarting, timeouts, dropped connections: worth a retry. Bad queries are not."""
    name = type(e).__name__
    return name in ("NoHostAvailable", "OperationTimedOut", "ConnectionException", "ConnectionShutdown",
                    "Unavailable", "WriteTimeout", "ReadTimeout", "OverloadedErrorMessage") or isinstance(e, OSError)


def _short(e: Exception) -> str:
    text = " ".join(str(e).split()) or type(e).__name__
    if "Connection refused" in text:
        return "connection refused"
    if "Unable to connect" in text or "NoHostAvailable" in type(e).__name__:
        return "no host available"
    return text[:300]
