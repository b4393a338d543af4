"""Cassandra store (cassandra-driver, CQL), designed for this workload rather than copied from Nutch 2's
Thrift-era super columns.

Tables, in keyspace `storage.cassandra.keyspace` (created if missing, `storage.cassandra.replication`):

    "<t>"             PRIMARY KEY ((prefix), key)   one row per WebPage, one CQL column per field, plus w: the
                                                    stamp (ms) of the row's last write
    "<t>_idx"         PRIMARY KEY ((idx, bucket, shard), term, key), s = the entry's stamp: index entries
    "<t>_idxbuckets"  PRIMARY KEY ((idx), bucket)   the buckets an index has used (and `+complete` records)
    "<t>_prefixes"    PRIMARY KEY ((bucket), prefix)   the host prefixes, sorted (for key-range scans)

Why: `prefix` is the key up to its first ':' — the reversed host plus ':' — so a host's pages share one
partition, clustered in key order, while hosts spread over the ring by token. The mark and due indexes
(stores/index.py, kept by its EntryIndex) put one bucket's shard in one partition: a task of a batch reads
the partitions of its shards and then those rows, never the whole table nor the other tasks' entries.
Entries are written (USING TIMESTAMP of their stamp) before the rows; a stale one is deleted at its own
timestamp, so an entry written again later survives. Partitions of the table are token ranges of the
partition key; of an indexed query, shard sets. (Tables of older versions also have `<t>_marks` and
`<t>_markvalues`, no longer read; drop_schema drops them.)

Encoding: ints are bigint, floats double, content and signatures blob, maps frozen<map<text,text>> (metadata
frozen<map<text,blob>>), protocol_status and parse_status JSON text (stores/codec.py). Writes set only dirty
columns: one prepared INSERT per column set (CQL's INSERT writes only the columns it names, and its row marker
keeps a row whose columns are all null alive). A map column is replaced as a whole, which is why maps are frozen:
one cell, not a tombstone and a cell per entry on every write (30 % of the server's work on a write, 45 % on a
read); tables made before that keep their non-frozen maps, which the same statements read and write.

Round trips are per batch of rows, not per row (issue 41): rows, entries and deletes go sorted by partition in
unlogged batches (BATCH_BYTES, BATCH_PARTITIONS), reads by key as one SELECT per group of keys (key_groups), all
with bounded concurrency (execute_concurrent).
"""

from __future__ import annotations

import math
import re
import socket
import threading
import time
from collections import Counter, deque
from collections.abc import Callable, Iterable, Iterator
from itertools import islice
from typing import TYPE_CHECKING, Any

from nutch2.errors import ConfigError, StoreError, StoreUnavailable
from nutch2.stores import pool
from nutch2.stores.base import BufferedStore, Gone, value_size, with_retries
from nutch2.stores.codec import decode_field, encode_field
from nutch2.stores.index import (
    GONE_MARKS,
    LARGE_FIELDS,
    NEW_MARKS,
    Entry,
    EntryIndex,
    EntryStorage,
    gone_marks,
    new_marks,
    shard_groups,
)
from nutch2.stores.query import Aggregate, Capability, MarkFilter, Partition, Query, Shards, TokenRange, check_mark
from nutch2.webpage import FIELDS, WebPage, check_fields

if TYPE_CHECKING:
    from nutch2.config import Configuration

_CQL_TYPES = {"int": "bigint", "float": "double", "str": "text", "bytes": "blob", "protocol": "text",
              "parse": "text"}
MIN_TOKEN, MAX_TOKEN = -(2**63), 2**63 - 1


def _cql_type(name: str) -> str:
    kind = FIELDS[name][0]
    if kind == "map":
        return "frozen<map<text, blob>>" if name == "metadata" else "frozen<map<text, text>>"
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


READ_KEYS = 128  # keys one SELECT asks for (small fields) ...
READ_KEYS_LARGE = 32  # ... or with a page's content or text among them (about 1 MB a response)
IN_PRODUCT = 1024  # prefixes x keys one SELECT may name: the server looks up each key in each partition named
# Writes go as unlogged batches of at most this many bytes (Cassandra's batch_size_warn_threshold, 5 KiB by
# default; its fail threshold is 50 KiB) and partitions (unlogged_batch_across_partitions_warn_threshold):
# one request instead of one per row, without the warnings a bigger batch logs on every node
BATCH_BYTES = 5 * 1024
BATCH_PARTITIONS = 10
AGGREGATE_RANGES = 256  # token ranges readdb -stats reads the table in, AGGREGATE_CONCURRENCY at once, ...
AGGREGATE_CONCURRENCY = 4
AGGREGATE_PAGE = 2000  # ... AGGREGATE_PAGE rows a response (the driver holds a response's rows as objects)


def key_groups(keys: Iterable[str], most: int) -> list[tuple[list[str], list[str]]]:
    """(prefixes, keys) of the SELECTs that read `keys`: sorted, a host's keys together, up to `most` keys and
    IN_PRODUCT prefix-key pairs a statement."""
    by_prefix: dict[str, list[str]] = {}
    for key in sorted(set(keys)):
        by_prefix.setdefault(prefix_of(key), []).append(key)
    groups: list[tuple[list[str], list[str]]] = []
    prefixes: list[str] = []
    chosen: list[str] = []
    for prefix, ks in by_prefix.items():
        for i in range(0, len(ks), most):
            part = ks[i:i + most]
            n = len(chosen) + len(part)
            if chosen and (n > most or (len(prefixes) + 1) * n > IN_PRODUCT):
                groups.append((prefixes, chosen))
                prefixes, chosen = [], []
            prefixes.append(prefix)
            chosen += part
    if chosen:
        groups.append((prefixes, chosen))
    return groups


def prefix_of(key: str) -> str:
    """The partition key: the reversed host and its ':' (a bracketed IPv6 host is kept whole)."""
    start = key.index("]") + 1 if key.startswith("[") and "]" in key else 0
    i = key.find(":", start)
    return key if i < 0 else key[: i + 1]


_TABLE_PROPS = "SELECT table_name, gc_grace_seconds, compaction FROM system_schema.tables WHERE keyspace_name = ?"
_TUNED: set[tuple[str, str]] = set()  # (keyspace, table): index tables this process checked (_tune_index)


class CassandraStore(BufferedStore, EntryStorage):
    """A WebPage table in Cassandra."""

    name = "cassandra"
    aliases = ("org.apache.gora.cassandra.store.CassandraStore",)
    capabilities = frozenset({Capability.SHARED_PROCESSES, Capability.SHARED_MACHINES, Capability.DURABLE})

    @classmethod
    def from_conf(cls, conf: Configuration, table: str, create: bool) -> CassandraStore:
        return cls(table,
                   [h.strip() for h in conf.get_str("storage.cassandra.contact.points").split(",") if h.strip()],
                   conf.get_int("storage.cassandra.port"), conf.get_str("storage.cassandra.keyspace"),
                   conf.get_str("storage.cassandra.replication"), conf.get_str("storage.cassandra.consistency.read"),
                   conf.get_str("storage.cassandra.consistency.write"),
                   conf.get_str("storage.cassandra.local.datacenter"), conf.get_int("storage.cassandra.concurrency"),
                   conf.get_float("storage.cassandra.timeout"), conf.get_int("storage.write.batch.size"),
                   conf.get_int("storage.cassandra.retries"),
                   conf.get_int("storage.cassandra.index.gc.grace.seconds"))

    @classmethod
    def tables(cls, conf: Configuration) -> list[str]:
        """The keyspace's tables with a state or index table beside them (an older one: its marks table)."""
        store = cls.from_conf(conf, "webpage", create=False)
        try:
            rows = store._run("SELECT table_name FROM system_schema.tables WHERE keyspace_name = ?", (store.keyspace,))
            names = {row[0] for row in rows}
        finally:
            store.close()
        return sorted(t for t in names if any(f"{t}{side}" in names for side in ("_state", "_idx", "_marks")))

    def __init__(self, table: str, contact_points: list[str], port: int, keyspace: str, replication: str,
                 read_cl: str, write_cl: str, local_dc: str, concurrency: int, timeout: float,
                 batch_size: int = 500, retries: int = 5, index_gc_grace: int = 3600) -> None:
        super().__init__(table, batch_size)
        try:
            _import_driver()
            from cassandra import ConsistencyLevel
            from cassandra.cluster import EXEC_PROFILE_DEFAULT, Cluster, ExecutionProfile
            from cassandra.policies import ConstantReconnectionPolicy, DCAwareRoundRobinPolicy
            from cassandra.query import tuple_factory
        except ImportError:
            raise ConfigError("the cassandra store needs cassandra-driver, which is not installed: "
                              "pip install 'nutch2[cassandra]'") from None

        self.where = f"{','.join(contact_points)}:{port}"
        self.keyspace = keyspace
        self.replication = replication
        self.concurrency = max(1, concurrency)
        self.retries = max(0, retries)
        self.index_gc_grace = max(0, index_gc_grace)
        self.gone = Gone()  # the server went away or fell silent: later requests fail at once
        try:
            self.read_cl = ConsistencyLevel.name_to_value[read_cl.upper()]
            self.write_cl = ConsistencyLevel.name_to_value[write_cl.upper()]
        except KeyError as e:
            raise StoreError(f"unknown Cassandra consistency level {e}; use e.g. ONE, LOCAL_ONE, QUORUM") from None
        settings = (tuple(contact_points), port, local_dc, timeout, self.read_cl, self.write_cl)

        def connect() -> _Driver:
            profile = ExecutionProfile(load_balancing_policy=DCAwareRoundRobinPolicy(local_dc=local_dc),
                                       request_timeout=timeout, consistency_level=self.read_cl,
                                       row_factory=tuple_factory)  # rows by index: no namedtuple class a result
            # no schema or token metadata: the store names its tables itself, and a client holding the metadata
            # re-reads the whole schema on every table another client creates (with many crawls, a load that
            # made connects time out)
            # TCP_NODELAY: the driver leaves Nagle's algorithm on, and a request of more than a segment (a fetched
            # page's row) then waited for the server's delayed ACK, ~40 ms a write (issue 41)
            cluster = Cluster(contact_points, port=port, connect_timeout=timeout,
                              sockopts=[(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)],
                              schema_metadata_enabled=False, token_metadata_enabled=False,
                              execution_profiles={EXEC_PROFILE_DEFAULT: profile},
                              reconnection_policy=ConstantReconnectionPolicy(1.0, max_attempts=None))
            try:
                return _Driver(cluster, cluster.connect())
            except Exception as e:  # NoHostAvailable, timeouts, DNS
                cluster.shutdown()
                # a server down or silent may come back (a task that opens the store after it went away mid-job:
                # the command goes on once it answers); a name that does not resolve will not
                gone = _transient(e) and not isinstance(e, socket.gaierror)
                short = _short(e)
                check = ("is it up and not overloaded? (docker/services.sh status cassandra)" if short.startswith(
                    "no answer") else "check storage.cassandra.contact.points and storage.cassandra.port, or start "
                         "it: docker/services.sh start cassandra")
                raise (StoreUnavailable if gone else StoreError)(
                    f"cannot reach Cassandra at {self.where} ({short}); {check}") from None

        # the process's driver for this cluster (stores/pool.py): later opens reuse its connections and statements
        driver = pool.shared("cassandra", settings, connect, lambda d: d.cluster.shutdown())
        self.cluster, self.session = driver.cluster, driver.session
        self._prepared: dict[Any, Any] = driver.prepared
        self.q = f'"{keyspace}"."{table}"'
        self.qi = f'"{keyspace}"."{table}_idx"'
        self.qb = f'"{keyspace}"."{table}_idxbuckets"'
        self._prefixes: set[str] = set()  # prefixes this process already recorded
        self._state_ready = False
        self._last_ts = 0
        self.index = EntryIndex(self, int((self.retries + 1) * (3 * timeout * 1000 + 5000)))

    # -------------------------------------------------------------- plumbing
    def _run(self, cql: str, params: Iterable[Any] = (), write: bool = False) -> Any:
        stmt = self._prepare(cql)
        if write:
            stmt.consistency_level = self.write_cl
        return with_retries(lambda: self.session.execute(stmt, list(params)), self.retries, _transient,
                            lambda e: StoreError(self._message("", e)), gone=self.gone)

    def _message(self, what: str, e: Exception) -> str:
        """A failed request's line; a missing table (a mistyped -crawlId, a crawl never injected) as sqlite says
        it."""
        if re.search(r"\b(unconfigured table \w+|(table|keyspace) \w+ does not exist)", str(e)):
            return (f"no crawl db {self.table} in Cassandra at {self.where} (keyspace {self.keyspace}); run `nutch2 "
                    "inject` first or check -crawlId/storage.cassandra.keyspace")
        return f"Cassandra at {self.where}: {what + ' failed: ' if what else ''}{_failed(e)}"

    def _rows(self, cql: str, params: Iterable[Any] = ()) -> Iterator[Any]:
        """The rows of a SELECT, page by page (the driver's fetch size), each page a request retried as _run's is.
        (Iterating the driver's result set fetches its later pages itself, outside the retries: a server gone
        mid-scan ended the task with the driver's own exception, a traceback.)"""
        stmt = self._prepare(cql)
        values = list(params)
        state = None
        while True:
            page = with_retries(lambda s=state: self.session.execute(stmt, values, paging_state=s), self.retries,
                                _transient, lambda e: StoreError(self._message("read", e)), gone=self.gone)
            yield from page.current_rows
            state = page.paging_state
            if state is None:
                return

    def _prepare(self, cql: str) -> Any:
        """The statement prepared on the server (once a process): retried and remembered as gone as a request is,
        since a process's first request of each statement is its prepare (a task that starts while the server
        is down or frozen)."""
        stmt = self._prepared.get(cql)
        if stmt is None:
            stmt = self._prepared[cql] = with_retries(
                lambda: self.session.prepare(cql), self.retries, _transient,
                lambda e: StoreError(self._message("", e)), gone=self.gone)
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
                            lambda e: StoreError(self._message(what, e)),
                            gone=self.gone)

    # -------------------------------------------------------------- schema
    def create_schema(self) -> None:
        sides = {f"{self.table}{side}" for side in ("_idx", "_idxbuckets", "_prefixes", "_state")}
        try:  # every table there already (each command's tasks open the store): two reads, no DDL (~0.3 s)
            tables = {r[0]: r for r in self._run(_TABLE_PROPS, (self.keyspace,))}
            if {self.table, *sides} <= tables.keys() and self._run(
                    "SELECT column_name FROM system_schema.columns WHERE keyspace_name = ? AND table_name = ? AND "
                    "column_name = 'w'", (self.keyspace, self.table)).one() is not None:
                self._tune_index(tables[f"{self.table}_idx"])
                self._state_ready = True
                return
        except StoreError:
            pass  # the DDL below says what is wrong
        self._run(f'CREATE KEYSPACE IF NOT EXISTS "{self.keyspace}" WITH replication = {self.replication}')
        existed = self._run("SELECT table_name FROM system_schema.tables WHERE keyspace_name = ? AND table_name = ?",
                            (self.keyspace, self.table)).one() is not None
        cols = ", ".join(f"{n} {_cql_type(n)}" for n in FIELDS)
        self._run(f"CREATE TABLE IF NOT EXISTS {self.q} (prefix text, key text, {cols}, w bigint, "
                  "PRIMARY KEY ((prefix), key))")
        if existed and self._run("SELECT column_name FROM system_schema.columns WHERE keyspace_name = ? AND "
                                 "table_name = ? AND column_name = 'w'", (self.keyspace, self.table)).one() is None:
            try:  # a table of an older version: rows get their write stamp from now on
                self._run(f"ALTER TABLE {self.q} ADD w bigint")
            except StoreError as e:
                if "conflicts with an existing column" not in str(e) and "already exist" not in str(e):
                    raise
        self._run(f"CREATE TABLE IF NOT EXISTS {self.qi} (idx text, bucket text, shard int, term text, key text, "
                  "s bigint, PRIMARY KEY ((idx, bucket, shard), term, key))")
        self._tune_index(self._run(f"{_TABLE_PROPS} AND table_name = ?", (self.keyspace, f"{self.table}_idx")).one())
        self._run(f"CREATE TABLE IF NOT EXISTS {self.qb} (idx text, bucket text, PRIMARY KEY ((idx), bucket))")
        self._run(f'CREATE TABLE IF NOT EXISTS "{self.keyspace}"."{self.table}_prefixes" '
                  "(bucket int, prefix text, PRIMARY KEY ((bucket), prefix))")
        if not existed:  # rows are written only once the index tables exist: nothing older to index
            for index in ("m", "d"):
                self.set_complete(index)
        self._create_state()

    def _tune_index(self, table: Any) -> None:
        """Give the index table short-lived tombstones and the compactions that drop them (once per table).

        Every fetch makes the row's due entry stale (its fetch time moves), and the next selection deletes it: a
        tombstone in the partition every later selection reads from its start. With Cassandra's 10 days of
        gc_grace_seconds, a crawl fetching 20 pages a second leaves ~100,000 a day in each of the 16 index shards,
        past which Cassandra refuses the read (tombstone_failure_threshold) and generate fails. A stale entry that a
        repair brings back is harmless (a selection checks each entry against its row), so the index table's
        tombstones need live only storage.cassandra.index.gc.grace.seconds; its memtable is flushed and its
        SSTables compacted alone on the same period, keeping the operator's compaction class."""
        grace = self.index_gc_grace
        period = max(grace, 60)
        options = dict(table[2] or {}) if table is not None else {}
        wanted = {"unchecked_tombstone_compaction": "true", "tombstone_compaction_interval": str(period),
                  "tombstone_threshold": "0.1"}
        if table is not None and (table[1] != grace or any(options.get(k) != v for k, v in wanted.items())):
            compaction = {"class": "SizeTieredCompactionStrategy", **options, **wanted}
            cql = ", ".join(f"'{k}': '{v}'" for k, v in compaction.items())
            self._run(f"ALTER TABLE {self.qi} WITH gc_grace_seconds = {grace} AND memtable_flush_period_in_ms = "
                      f"{period * 1000} AND compaction = {{{cql}}}")
        _TUNED.add((self.keyspace, self.table))

    def _create_state(self) -> None:
        self._run(f'CREATE TABLE IF NOT EXISTS "{self.keyspace}"."{self.table}_state" '
                  "(name text PRIMARY KEY, value text)")
        self._state_ready = True

    def drop_schema(self) -> None:
        self.discard_pending()
        self._state_ready = False
        _TUNED.discard((self.keyspace, self.table))
        for suffix in ("", "_idx", "_idxbuckets", "_marks", "_markvalues", "_prefixes", "_state"):
            self._run(f'DROP TABLE IF EXISTS "{self.keyspace}"."{self.table}{suffix}"')
        self._prefixes.clear()
        self.index = EntryIndex(self, self.index.in_flight_ms)

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

    def _get_many(self, keys: list[str], names: tuple[str, ...]) -> dict[str, Any]:
        """Rows by key (CQL rows: key, the names' columns...): one SELECT per group of keys (key_groups: a host's
        keys together, small hosts packed), the groups read with bounded concurrency."""
        cql = f"SELECT {self._cols(names)} FROM {self.q} WHERE prefix IN ? AND key IN ?"
        most = READ_KEYS_LARGE if LARGE_FIELDS.intersection(names) else READ_KEYS
        results = self._many([(cql, group) for group in key_groups(keys, most)], write=False)
        rows = {}
        for res in results:
            for row in res or ():
                rows[row[0]] = row
        return rows

    def get_many(self, keys: list[str], fields: list[str] | tuple[str, ...] | None = None) -> dict[str, WebPage]:
        names = check_fields(fields)
        self.flush_keys(keys)
        return {k: self._page(names, row) for k, row in self._get_many(list(keys), names).items()}

    def read(self, query: Query, partition: Partition | None = None) -> Iterator[WebPage]:
        names = check_fields(query.fields)
        self.flush()
        if query.indexed:
            if partition is not None and not isinstance(partition, Shards):
                raise ValueError(f"the cassandra store reads an indexed query by shards, not {partition!r}")
            if query.due is not None and (self.keyspace, self.table) not in _TUNED:  # a table no inject opened since
                self._tune_index(self._run(f"{_TABLE_PROPS} AND table_name = ?", (self.keyspace, f"{self.table}_idx"))
                                 .one())
            return self.index.select(query, partition)
        if isinstance(partition, TokenRange):
            if query.start is not None or query.end is not None:
                raise ValueError("the cassandra store cannot read a key range of a token range")
            return self._scan_tokens(partition.lo, partition.hi, names, query.limit)
        if partition is not None:
            raise ValueError(f"the cassandra store cannot read {partition!r}")
        return self._scan(query.start, query.end, names, query.limit)

    def _scan(self, start: str | None, end: str | None, names: tuple[str, ...],
              limit: int | None) -> Iterator[WebPage]:
        n = 0
        for prefix in self._prefixes_between(start, end):
            cql, params = f"SELECT {self._cols(names)} FROM {self.q} WHERE prefix = ?", [prefix]
            if start is not None and prefix_of(start) == prefix:
                cql, params = cql + " AND key >= ?", [*params, start]
            if end is not None and end.startswith(prefix):
                cql, params = cql + " AND key < ?", [*params, end]
            for row in self._rows(cql, params):
                if limit is not None and n >= limit:
                    return
                n += 1
                self.rows_read += 1
                yield self._page(names, row)

    def _prefixes_between(self, start: str | None, end: str | None) -> list[str]:
        cql, params = f'SELECT prefix FROM "{self.keyspace}"."{self.table}_prefixes" WHERE bucket = 0', []
        if start is not None:
            cql, params = cql + " AND prefix >= ?", [*params, prefix_of(start)]
        if end is not None:
            cql, params = cql + " AND prefix < ?", [*params, end]
        return [r[0] for r in self._rows(cql, params)]

    def partitions(self, query: Query, n: int) -> list[Partition]:
        """Of an indexed query, shard sets; of the table, n equal token ranges (lo, hi] over the Murmur3 ring."""
        n = max(1, n)
        if query.indexed:
            return list(shard_groups(n))
        width = (MAX_TOKEN - MIN_TOKEN) // n
        bounds = [MIN_TOKEN + i * width for i in range(n)] + [MAX_TOKEN]
        return [TokenRange(bounds[i], bounds[i + 1]) for i in range(n)]

    def _scan_tokens(self, lo: int, hi: int, names: tuple[str, ...], limit: int | None) -> Iterator[WebPage]:
        cql = f"SELECT {self._cols(names)} FROM {self.q} WHERE token(prefix) > ? AND token(prefix) <= ?"
        if limit is not None:
            cql += f" LIMIT {int(limit)}"
        for row in self._rows(cql, (lo, hi)):
            self.rows_read += 1
            yield self._page(names, row)

    def count(self, mark: MarkFilter | None = None) -> int:
        # no cheap_count: CQL's count(*) reads every partition on the server, and a kept count would need a read
        # before every write (puts are blind upserts) or counter columns, which a retried write counts twice
        if mark is None:
            self.flush()
            return self._run(f"SELECT count(*) FROM {self.q}").one()[0]
        return sum(1 for _ in self.read(Query(("status",), mark)))

    def aggregate(self, per_host: bool = False) -> Aggregate:
        """readdb -stats from the three columns of every row (and its partition key, the reversed host), read in
        AGGREGATE_RANGES token ranges with bounded concurrency and counted as tuples, not WebPage rows. CQL has
        no GROUP BY on a regular column, so the server still reads every row; the client only counts."""
        self.flush()
        stmt = self._prepare(f"SELECT prefix, status, retries_since_fetch, score FROM {self.q} "
                             "WHERE token(prefix) > ? AND token(prefix) <= ?")
        stmt.fetch_size = AGGREGATE_PAGE
        ranges = [(r.lo, r.hi) for r in self.partitions(Query(()), AGGREGATE_RANGES)
                  if isinstance(r, TokenRange)]

        def count() -> Aggregate:  # a retry counts again from the start
            pairs: Counter[tuple[int, int]] = Counter()
            prefixes: Counter[str] = Counter()
            total, low, high = 0.0, math.inf, -math.inf
            for rows in self._range_rows(stmt, ranges):
                if not rows:
                    continue
                pairs.update((r[1] or 0, r[2] or 0) for r in rows)
                scores = [r[3] or 0.0 for r in rows]
                total += sum(scores)
                low, high = min(low, min(scores)), max(high, max(scores))
                if per_host:
                    prefixes.update(r[0] for r in rows)
            hosts = {prefix.rstrip(":"): n for prefix, n in prefixes.items()} if per_host else None
            return Aggregate.of(pairs, total, low, high, hosts)

        return with_retries(count, self.retries, _transient,
                            lambda e: StoreError(self._message("read", e)),
                            gone=self.gone)

    def _range_rows(self, stmt: Any, ranges: list[tuple[int, int]]) -> Iterator[list[Any]]:
        """The rows of each token range, AGGREGATE_CONCURRENCY ranges read at once; a range's later pages are
        read when it is taken. (The driver's execute_concurrent starts the next statement as each one ends,
        whether or not its rows were taken: a slower reader would hold the whole table.)"""
        waiting = iter(ranges)
        ahead: deque[Any] = deque(self.session.execute_async(stmt, r) for r in islice(waiting, AGGREGATE_CONCURRENCY))
        while ahead:
            result = ahead.popleft().result()
            following = next(waiting, None)
            if following is not None:
                ahead.append(self.session.execute_async(stmt, following))
            yield list(result)

    def mark_values(self, name: str) -> set[str]:
        """Values recorded for the mark that at least one row still carries (stale entries are dropped)."""
        check_mark((name, None))
        self.flush()
        return self.index.mark_values(name)

    # -------------------------------------------------------------- index entries (EntryStorage)
    def put_entries(self, entries: list[Entry], stamp: int) -> None:
        """The bulk path: unlogged batches of one index partition (a bucket's shard) each."""
        cql = f"INSERT INTO {self.qi} (idx, bucket, shard, term, key, s) VALUES (?, ?, ?, ?, ?, ?) USING TIMESTAMP ?"
        # buckets and entries in one go: both land before the rows that make them needed are written; a bucket is
        # recorded again at every write of its entries, so that it outlives a forget_bucket begun before the write
        buckets = sorted({(e.index, e.bucket) for e in entries})
        self._run_all(self._batches([((b[0],), f"INSERT INTO {self.qb} (idx, bucket) VALUES (?, ?) USING TIMESTAMP ?",
                                      (*b, stamp * 1000), 64) for b in buckets]) + self._batches(sorted(
            (((e.index, e.bucket, e.shard), cql, (e.index, e.bucket, e.shard, e.term, e.key, stamp, stamp * 1000),
              64 + len(e.key)) for e in entries), key=lambda item: item[0])))

    def _batches(self, items: list[tuple[Any, str, tuple, int]]) -> list[Any]:
        """Statements (partition, cql, params, bytes), sorted by partition, as few requests: unlogged batches of
        at most BATCH_PARTITIONS partitions and BATCH_BYTES (a statement bigger than that goes alone). A group of
        one statement goes as that prepared statement, not as a batch of one (a fetch claim alone: the coordinator's
        batch path costs it more)."""
        from cassandra.query import BatchStatement, BatchType

        groups: list[list[tuple[Any, tuple]]] = []
        group: list[tuple[Any, tuple]] | None = None
        parts, size, last = 0, 0, None
        for part, cql, params, n in items:
            stmt = self._prepare(cql)
            if group is not None and (size + n > BATCH_BYTES or (part != last and parts >= BATCH_PARTITIONS)):
                group = None
            if group is None:
                groups.append(group := [])
                parts, size, last = 0, 0, None
                if n > BATCH_BYTES:
                    group.append((stmt, params))
                    group = None
                    continue
            group.append((stmt, params))
            size += n
            if part != last:
                parts, last = parts + 1, part
        out: list[Any] = []
        for g in groups:
            if len(g) == 1:
                out.append(bound := g[0][0].bind(g[0][1]))
                bound.consistency_level = self.write_cl
            else:
                out.append(batch := BatchStatement(BatchType.UNLOGGED, consistency_level=self.write_cl))
                for stmt, params in g:
                    batch.add(stmt, params)
        return out

    def _run_all(self, stmts: list[Any]) -> None:
        """Bound statements with at most storage.cassandra.concurrency in flight, retried as _many is."""
        from cassandra.concurrent import execute_concurrent

        def run() -> None:
            execute_concurrent(self.session, [(st, ()) for st in stmts], concurrency=self.concurrency,
                               raise_on_first_error=True)

        if stmts:
            with_retries(run, self.retries, _transient,
                         lambda e: StoreError(self._message("write", e)),
                         gone=self.gone)

    def scan_entries(self, index: str, bucket: str, shard: int, lo: str, hi: str, start: str | None,
                     end: str | None) -> Iterator[tuple[Entry, int]]:
        cql = f"SELECT term, key, s FROM {self.qi} WHERE idx = ? AND bucket = ? AND shard = ?"
        params: list[Any] = [index, bucket, shard]
        if lo == hi:
            cql, params = cql + " AND term = ?", [*params, lo]
            if start is not None:
                cql, params = cql + " AND key >= ?", [*params, start]
            if end is not None:
                cql, params = cql + " AND key < ?", [*params, end]
        else:
            cql, params = cql + " AND term >= ? AND term <= ?", [*params, lo, hi]
        for term, key, stamp in self._rows(cql, params):
            if (start is None or key >= start) and (end is None or key < end):
                yield Entry(index, bucket, term, key), stamp or 0

    def drop_entries(self, stale: list[tuple[Entry, int]]) -> None:
        cql = f"DELETE FROM {self.qi} USING TIMESTAMP ? WHERE idx = ? AND bucket = ? AND shard = ? AND term = ? " \
              "AND key = ?"
        self._run_all(self._batches(sorted(
            (((e.index, e.bucket, e.shard), cql, (s * 1000, e.index, e.bucket, e.shard, e.term, e.key), 64 + len(e.key))
             for e, s in stale), key=lambda item: item[0])))

    def buckets(self, index: str) -> list[str]:
        return [r[0] for r in self._rows(f"SELECT bucket FROM {self.qb} WHERE idx = ?", (index,))]

    def forget_bucket(self, index: str, bucket: str, before: int) -> None:
        # at `before`: a write of the bucket's entries since records it again, later than this delete
        self._run(f"DELETE FROM {self.qb} USING TIMESTAMP ? WHERE idx = ? AND bucket = ?",
                  (before * 1000, index, bucket), write=True)

    def fetch_rows(self, keys: list[str], fields: tuple[str, ...]) -> dict[str, tuple[WebPage, int]]:
        rows = self._get_many(keys, (*fields, "w"))
        return {k: (self._page(fields, row[:-1]), row[-1] or 0) for k, row in rows.items()}

    def is_complete(self, index: str) -> bool:
        return self._run(f"SELECT bucket FROM {self.qb} WHERE idx = '+complete' AND bucket = ?",
                         (index,)).one() is not None

    def set_complete(self, index: str) -> None:
        self._run(f"INSERT INTO {self.qb} (idx, bucket) VALUES ('+complete', ?)", (index,), write=True)

    def scan_all(self, fields: tuple[str, ...]) -> Iterator[WebPage]:
        return self._scan(None, None, fields, None)

    def _ts(self) -> int:
        """A write stamp (ms), strictly increasing in this process."""
        with self._lock:
            self._last_ts = max(int(time.time() * 1000), self._last_ts + 1)
            return self._last_ts

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

    def states(self, prefix: str = "") -> dict[str, str]:
        """(name is the partition key: no range of names to select, the prefix is applied here)"""
        try:
            return {r[0]: r[1] for r in self._rows(f'SELECT name, value FROM "{self.keyspace}"."{self.table}_state"')
                    if r[0].startswith(prefix)}
        except StoreError as e:
            if "unconfigured table" in str(e).lower():
                return {}
            raise

    def swap_state(self, name: str, expected: str | None, value: str) -> bool:
        """A lightweight transaction (Paxos) on the state row."""
        self.flush()
        if not self._state_ready:
            self._create_state()
        q = f'"{self.keyspace}"."{self.table}_state"'
        if expected is None:
            res = self._run(f"INSERT INTO {q} (name, value) VALUES (?, ?) IF NOT EXISTS", (name, value), write=True)
        else:
            res = self._run(f"UPDATE {q} SET value = ? WHERE name = ? IF value = ?", (value, name, expected),
                            write=True)
        return bool(res.one()[0])

    # -------------------------------------------------------------- writes
    def encode(self, page: WebPage) -> dict[str, Any]:
        values = {n: _encode(n, v) for n, v in page.dirty_values().items()}
        if "markers" in values:
            values["__markers__"] = dict(page.markers)
            values[NEW_MARKS] = new_marks(page)
            values[GONE_MARKS] = gone_marks(page)
        return values

    def write_batch(self, pending: dict[str, dict[str, Any]]) -> None:
        """Deletes, then index entries, then rows: a crash part-way leaves at worst an index entry whose row
        does not carry it (dropped by a later selection), never a row that the index misses."""
        deletes = [(prefix_of(k), f"DELETE FROM {self.q} WHERE prefix = ? AND key = ?", (prefix_of(k), k), 64 + len(k))
                   for k, v in sorted(pending.items()) if v.get("__delete__")]
        new_prefixes = {p for k, v in pending.items() if any(n in FIELDS for n in v)
                        and (p := prefix_of(k)) not in self._prefixes}
        # deletes before the writes, so a delete then put of one key ends with the put; the new prefixes (for
        # key-range scans) with them, before their rows
        self._run_all(self._batches(deletes) + self._batches(
            [(0, f'INSERT INTO "{self.keyspace}"."{self.table}_prefixes" (bucket, prefix) VALUES (0, ?)', (p,),
              16 + len(p)) for p in sorted(new_prefixes)]))
        self._prefixes |= new_prefixes
        stamp = self._ts()
        self.index.write({k: {"markers": v.get(NEW_MARKS), "fetch_time": v.get("fetch_time")}
                          for k, v in pending.items()}, stamp)
        rows: list[tuple[Any, str, tuple, int]] = []
        for key in sorted(pending):
            values = pending[key]
            names = sorted(n for n in values if n in FIELDS)
            prefix = prefix_of(key)
            if names:  # INSERT writes only these columns (and w), plus the row marker that keeps a row alive
                marks = ", ".join("?" for _ in names)
                rows.append((prefix, f"INSERT INTO {self.q} (prefix, key, {', '.join(names)}, w) "
                             f"VALUES (?, ?, {marks}, ?)", (prefix, key, *(values[n] for n in names), stamp),
                             64 + len(key) + value_size([values[n] for n in names])))
        self._run_all(self._batches(rows))
        self.index.drop_gone(pending, stamp)  # the rows are written: the entries of the marks they lost are stale

    def close(self) -> None:
        """Flush; the driver stays with the process for the next open (stores/pool.py)."""
        self.flush()


class _Driver:
    """A process's Cluster and Session, and the statements prepared on it (shared by the stores it opens)."""

    def __init__(self, cluster: Any, session: Any) -> None:
        self.cluster = cluster
        self.session = session
        self.prepared: dict[str, Any] = {}


def _import_driver() -> None:
    """Import cassandra.cluster without what it imports only to offer: its Twisted connection class (whenever
    Twisted is installed, as beside Scrapy: Twisted, pyOpenSSL and cryptography, 0.2 s) and numpy (for a row
    parser the store does not use, 0.13 s). Every job process that opens the store paid both. They are hidden
    only while the driver is imported, so a later import of either works as usual."""
    import sys

    with _import_lock:  # the tasks of the local runner open their stores at once, in threads
        if "cassandra.cluster" in sys.modules:
            return
        threading.excepthook = _quiet_exit(threading.excepthook)
        hidden = [m for m in ("cassandra.io.twistedreactor", "numpy") if m not in sys.modules]
        for m in hidden:
            sys.modules[m] = None  # type: ignore[assignment]  # an import of it raises ImportError
        try:
            import cassandra.cluster  # noqa: F401
        finally:
            for m in hidden:
                if sys.modules.get(m, 0) is None:
                    del sys.modules[m]


_import_lock = threading.Lock()


def _quiet_exit(previous: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """threading.excepthook without the driver's last gasp at exit: its "Task Scheduler" thread, reconnecting to a
    server that went away, submits to an executor the interpreter's exit already shut down (a traceback after the
    command's one error line). Every other thread's exception is shown as before."""

    def hook(args: Any) -> Any:
        if (args.thread is not None and args.thread.name == "Task Scheduler" and args.exc_type is RuntimeError
                and "after shutdown" in str(args.exc_value)):
            return None
        return previous(args)

    return hook



def _transient(e: Exception) -> bool:
    """Node down or restarting, timeouts, dropped connections: worth a retry. Bad queries are not."""
    name = type(e).__name__
    return name in ("NoHostAvailable", "OperationTimedOut", "ConnectionException", "ConnectionShutdown",
                    "Unavailable", "WriteTimeout", "ReadTimeout", "OverloadedErrorMessage") or isinstance(e, OSError)


def _short(e: Exception) -> str:
    text = " ".join(str(e).split()) or type(e).__name__
    if "Connection refused" in text:
        return "connection refused"
    # before "no host available": a frozen server accepts connections and never answers them, and the driver
    # says so inside its NoHostAvailable ("Timed out creating connection"); it is up, and starting it is no fix
    if "timeout" in text.lower() or "timed out" in text.lower() or \
            type(e).__name__ in ("OperationTimedOut", "ReadTimeout", "WriteTimeout"):
        return "no answer within storage.cassandra.timeout, retries included"
    if "Unable to connect" in text or "NoHostAvailable" in type(e).__name__:
        return "no host available"
    if "TOO_MANY_TOMBSTONES" in text:  # a read past tombstone_failure_threshold: the index table's deletions
        return ("the server refused a read past its tombstone_failure_threshold (deleted index entries); lower "
                "storage.cassandra.index.gc.grace.seconds (README: Cassandra's tombstones in a long crawl)")
    return text[:300]


def _failed(e: Exception) -> str:
    """_short, and for a server gone or silent what to check (a job's request, after its retries)."""
    short = _short(e)
    if short in ("connection refused", "no host available"):
        return f"{short}; is the server up? (docker/services.sh start cassandra)"
    if short.startswith("no answer"):
        return f"{short}; is the server up and not overloaded? (docker/services.sh status cassandra)"
    return short
