"""PostgreSQL store (psycopg 3): the team store for crawls that outgrow one sqlite file but not a cluster. Every
process and machine of a crawl (the processes and Spark runners, the searcher) reads and writes the same tables.

Tables (in the database of `storage.postgres.url`, a libpq URL; `docker/services.sh start postgres` runs one):

    "<t>"         key text COLLATE "C" PRIMARY KEY, one column per WebPage field (maps and status records JSON
                  text, stores/codec.py; content and signatures bytea), index "<t>_due" on (fetch_time, key)
    "<t>_marks"   (name, value, key) PRIMARY KEY: the rows carrying each mark (stores/index.py says what is indexed)
    "<t>_state"   (name PRIMARY KEY, value): the crawl state (journal, leases)

Keys use the "C" collation, so they sort as UTF-8 bytes as the store contract promises. A batch of rows, its
marks and their removal are one transaction, so the indexes never go stale. Partitions of a query are key ranges
cut at every n-th key of the query's own rows (stepped through an index). readdb -stats is a GROUP BY. Leases
swap their record with a conditional UPDATE, and a fenced journal write checks the lease in its transaction.
Text values cannot hold NUL characters (PostgreSQL's text type refuses them).

A server that is up but frozen (stopped, swapped out, a paused VM) answers nothing while its machine's kernel still
acknowledges every packet, so neither keepalives nor tcp_user_timeout notice it, and libpq has no read timeout. A
watchdog thread of the process looks at every call that has waited storage.postgres.timeout seconds: it opens a
new connection to the same server, and when that gets no answer either it shuts the waiting call's socket, which
fails as "no answer" (a long statement of a server that still answers is left alone).
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from nutch2.errors import ConfigError, StoreError, StoreUnavailable
from nutch2.stores.base import Fence
from nutch2.stores.codec import decode_field
from nutch2.stores.query import Capability, Partition, Query, is_mark
from nutch2.stores.sqlbase import Fenced, SqlStore
from nutch2.webpage import FIELDS, WebPage, check_fields

if TYPE_CHECKING:
    from nutch2.config import Configuration

log = logging.getLogger(__name__)

_SQL_TYPES = {"int": "bigint", "float": "double precision", "str": "text", "bytes": "bytea"}


class PostgresStore(SqlStore):
    """A WebPage table in PostgreSQL."""

    name = "postgres"
    aliases = ("org.apache.gora.sql.store.SqlStore",)  # Gora's SqlStore: a JDBC client of a SQL server
    capabilities = frozenset({Capability.SHARED_PROCESSES, Capability.SHARED_MACHINES, Capability.DURABLE,
                              Capability.ORDERED_SCANS, Capability.TRANSACTIONS, Capability.AGGREGATES})
    PARAM = "%s"

    @classmethod
    def from_conf(cls, conf: Configuration, table: str, create: bool) -> PostgresStore:
        return cls(table, conf.get_str("storage.postgres.url"), conf.get_int("storage.write.batch.size"),
                   conf.get_float("storage.postgres.timeout"))

    @classmethod
    def tables(cls, conf: Configuration) -> list[str]:
        """The tables of the connection's schema that have their marks and state tables beside them."""
        store = cls.from_conf(conf, "webpage", create=False)
        try:
            names = {row[0] for row in store._exec("SELECT tablename FROM pg_tables WHERE schemaname = "
                                                   "current_schema()").fetchall()}
        finally:
            store.close()
        return sorted(t for t in names if f"{t}_marks" in names and f"{t}_state" in names)

    def __init__(self, table: str, url: str, batch_size: int = 500, timeout: float = 30.0) -> None:
        super().__init__(table, batch_size)
        self.timeout = timeout
        try:
            import psycopg
        except ImportError:
            raise ConfigError("the postgres store needs psycopg, which is not installed: "
                              "pip install 'nutch2[postgres]'") from None
        self._psycopg = psycopg
        self.url = url
        self.where = _redact(url)
        self._local = threading.local()
        self._conns: list[Any] = []
        self._conns_lock = threading.Lock()
        self._writer: Any = None  # used only under _flush_lock
        self._q = f'"{table}"'
        self._qm = f'"{table}_marks"'
        self._qs = f'"{table}_state"'
        self._conn()  # an unreachable server fails here, in one line

    # -------------------------------------------------------------- connections
    def _open(self) -> Any:
        silent = _still_silent(self.url)
        if silent:  # a call of this process waited for it in vain: not another connect timeout
            raise StoreUnavailable(silent)
        try:
            # a server machine that went away (no answer, not even a reset) is noticed within the timeout: TCP
            # keepalives on an idle connection, tcp_user_timeout on one with data unacknowledged
            t = max(1, int(self.timeout))
            conn = self._psycopg.connect(self.url, autocommit=True, connect_timeout=min(10, t), keepalives=1,
                                         keepalives_idle=max(1, t // 3), keepalives_interval=max(1, t // 6),
                                         keepalives_count=3, tcp_user_timeout=t * 1000)
        except self._psycopg.Error as e:
            if "timeout expired" in str(e):  # it took the connection and said nothing: up, but stopped or swamped
                raise StoreUnavailable(f"cannot reach PostgreSQL at {self.where} (no answer within {min(10, t)} s); "
                                       "is the server up, and not stopped or overloaded? (docker/services.sh status "
                                       "postgres)") from None
            raise StoreUnavailable(f"cannot reach PostgreSQL at {self.where} ({_short(e)}); check "
                                   "storage.postgres.url, or start it: docker/services.sh start postgres") from None
        with self._conns_lock:
            self._conns.append(conn)
        return conn

    def _error(self, e: Exception, message: str) -> StoreError:
        """A failed statement: the server gone (a connection's failure: it may come back) or the statement's."""
        if type(e).__name__ == "UndefinedTable":  # a mistyped -crawlId, a crawl never injected, a dropped table
            return StoreError(f"no crawl db {self.table} in PostgreSQL at {self.where}; run `nutch2 inject` first or "
                              "check -crawlId/storage.postgres.url (or was the crawl's table dropped?)")
        return StoreUnavailable(message) if isinstance(e, self._psycopg.OperationalError) else StoreError(message)

    def _conn(self) -> Any:
        """This thread's connection (autocommit) for reads and small writes."""
        conn = getattr(self._local, "conn", None)
        if conn is None or conn.closed or conn.broken:
            conn = self._local.conn = self._open()
        return conn

    def _writer_conn(self) -> Any:
        if self._writer is None or self._writer.closed or self._writer.broken:
            self._writer = self._open()
        return self._writer

    def _exec(self, sql: str, params: Sequence[Any] = ()) -> Any:
        try:
            conn = self._conn()
            with self._watched(conn):
                return conn.execute(sql, params)
        except self._psycopg.Error as e:
            raise self._error(e, f"PostgreSQL at {self.where}: {_short(e)}") from None

    # -------------------------------------------------------------- schema
    def create_schema(self) -> None:
        cols = ", ".join(f"{n} {_SQL_TYPES.get(kind, 'text')}" for n, (kind, _) in FIELDS.items())
        self._exec(f'CREATE TABLE IF NOT EXISTS {self._q} (key text COLLATE "C" PRIMARY KEY, {cols})')
        self._exec(f'CREATE INDEX IF NOT EXISTS "{self.table}_due" ON {self._q} (fetch_time, key)')
        self._exec(f'CREATE TABLE IF NOT EXISTS {self._qm} (name text NOT NULL, value text NOT NULL, '
                   f'key text COLLATE "C" NOT NULL, PRIMARY KEY (name, value, key))')
        self._exec(f'CREATE INDEX IF NOT EXISTS "{self.table}_marks_key" ON {self._qm} (key)')
        self._exec(f"CREATE TABLE IF NOT EXISTS {self._qs} (name text PRIMARY KEY, value text NOT NULL)")

    def drop_schema(self) -> None:
        self.discard_pending()
        for q in (self._q, self._qm, self._qs):
            self._exec(f"DROP TABLE IF EXISTS {q}")

    # -------------------------------------------------------------- reads
    @staticmethod
    def _page(key: str, names: tuple[str, ...], row: Sequence[Any]) -> WebPage:
        return WebPage.from_store(key, {n: decode_field(n, v) for n, v in zip(names, row, strict=True)})

    @staticmethod
    def _cols(names: tuple[str, ...]) -> str:
        return ", ".join(("w.key", *(f"w.{n}" for n in names)))

    def get(self, key: str, fields: list[str] | tuple[str, ...] | None = None) -> WebPage | None:
        names = check_fields(fields)
        self.flush_key(key)
        row = self._exec(f"SELECT {self._cols(names)} FROM {self._q} w WHERE w.key = %s", (key,)).fetchone()
        return None if row is None else self._page(key, names, row[1:])

    def get_many(self, keys: list[str], fields: list[str] | tuple[str, ...] | None = None) -> dict[str, WebPage]:
        names = check_fields(fields)
        self.flush_keys(keys)
        rows = self._exec(f"SELECT {self._cols(names)} FROM {self._q} w WHERE w.key = ANY(%s)", (list(keys),))
        return {r[0]: self._page(r[0], names, r[1:]) for r in rows}

    def read(self, query: Query, partition: Partition | None = None) -> Iterator[WebPage]:
        names = check_fields(query.fields)
        self.flush()
        source, where, params, col = self._from(query, partition)
        order = "" if query.due is not None else f" ORDER BY {col}"
        limit = "" if query.limit is None else f" LIMIT {int(query.limit)}"
        sql = f"SELECT {self._cols(names)} FROM {source} {where}{order}{limit}"
        # a private connection and a server-side cursor: rows stream while the caller writes through this store
        conn = self._open()
        try:
            with self._watched(conn) as call, conn.transaction(), conn.cursor(name="scan") as cur:
                cur.execute(sql, params)
                while rows := cur.fetchmany(512):
                    with call.idle():  # the caller's time with the rows is not the server's
                        for row in rows:
                            self.rows_read += 1
                            yield self._page(row[0], names, row[1:])
        except self._psycopg.Error as e:
            raise self._error(e, f"PostgreSQL at {self.where}: {_short(e)}") from None
        finally:
            self._close(conn)

    # -------------------------------------------------------------- crawl state
    def get_state(self, name: str) -> str | None:
        row = self._exec(f"SELECT value FROM {self._qs} WHERE name = %s", (name,)).fetchone()
        return None if row is None else row[0]

    def states(self, prefix: str = "") -> dict[str, str]:
        if prefix:
            return dict(self._exec(f"SELECT name, value FROM {self._qs} WHERE left(name, %s) = %s",
                                   (len(prefix), prefix)).fetchall())
        return dict(self._exec(f"SELECT name, value FROM {self._qs}").fetchall())

    def put_state(self, name: str, value: str | None) -> None:
        self.put_state_fenced(name, value)

    def put_state_fenced(self, name: str, value: str | None, fences: Sequence[Fence] = ()) -> None:
        """Write buffered rows first; the fences are checked (their rows locked) and the state written in one
        transaction."""
        self.flush()
        with self._flush_lock:
            conn = self._writer_conn()
            try:
                with self._watched(conn), conn.transaction():
                    for fence in fences:
                        row = conn.execute(f"SELECT value FROM {self._qs} WHERE name = %s FOR SHARE",
                                           (fence.name,)).fetchone()
                        if not fence.holds(row[0] if row else None):
                            raise Fenced(fence)
                    if value is None:
                        conn.execute(f"DELETE FROM {self._qs} WHERE name = %s", (name,))
                    else:
                        conn.execute(f"INSERT INTO {self._qs} (name, value) VALUES (%s, %s) ON CONFLICT (name) DO "
                                     "UPDATE SET value = EXCLUDED.value", (name, value))
            except Fenced as e:
                raise e.fence.lost() from None
            except self._psycopg.Error as e:
                raise self._error(e, f"PostgreSQL at {self.where}: write failed: {_short(e)}") from None

    def swap_state(self, name: str, expected: str | None, value: str) -> bool:
        if expected is None:
            cur = self._exec(f"INSERT INTO {self._qs} (name, value) VALUES (%s, %s) ON CONFLICT (name) DO NOTHING",
                             (name, value))
        else:
            cur = self._exec(f"UPDATE {self._qs} SET value = %s WHERE name = %s AND value = %s",
                             (value, name, expected))
        return cur.rowcount == 1

    # -------------------------------------------------------------- writes
    def write_batch(self, pending: dict[str, dict[str, Any]]) -> None:
        """Deletes, rows (one upsert per set of columns), then their marks, in one transaction sent as one
        pipeline. Each statement takes the batch's values as arrays (`unnest`): one statement and one plan per
        batch instead of one per row (10 000 rows: 3.5 s of executemany against 0.6 s)."""
        deletes = [k for k, v in pending.items() if v.get("__delete__")]
        by_cols: dict[tuple[str, ...], list[list[Any]]] = {}
        marked = []
        for key, values in pending.items():
            names = tuple(n for n in values if n in FIELDS)
            if names:
                by_cols.setdefault(names, []).append([key, *(values[n] for n in names)])
            if values.get("__markers__") is not None:
                marked.append(key)
        marks = [(n, str(v), k) for k in marked for n, v in pending[k]["__markers__"].items() if is_mark(n)]
        conn = self._writer_conn()
        try:
            with self._watched(conn), conn.pipeline(), conn.transaction(), conn.cursor() as cur:
                if deletes:
                    cur.execute(f"DELETE FROM {self._qm} WHERE key = ANY(%s)", (deletes,))
                    cur.execute(f"DELETE FROM {self._q} WHERE key = ANY(%s)", (deletes,))
                for names, rows in by_cols.items():
                    cur.execute(_upsert(self._q, names), _columns(names, rows))
                if marked:
                    cur.execute(f"DELETE FROM {self._qm} WHERE key = ANY(%s)", (marked,))
                if marks:
                    cur.execute(f"INSERT INTO {self._qm} (name, value, key) SELECT * FROM "
                                "unnest(%b::text[], %b::text[], %b::text[])",
                                [list(col) for col in zip(*marks, strict=True)])
        except self._psycopg.Error as e:
            raise self._error(e, f"PostgreSQL at {self.where}: write failed: {_short(e)}") from None

    def close(self) -> None:
        try:
            self.flush()
        finally:
            with self._conns_lock:
                conns, self._conns = self._conns, []
            for conn in conns:
                conn.close()
            self._local = threading.local()
            self._writer = None

    @contextmanager
    def _watched(self, conn: Any) -> Iterator[_Call]:
        """Calls on `conn` in the block are watched (module docstring); one the watchdog cut raises
        StoreUnavailable naming the silence."""
        call = _Call(conn, self.url, self.timeout)
        _watch(call)
        try:
            yield call
        except self._psycopg.Error:
            if call.cut:
                raise StoreUnavailable(_silence(self.where, self.timeout)) from None
            raise
        finally:
            _unwatch(call)

    def _close(self, conn: Any) -> None:
        with self._conns_lock:
            if conn in self._conns:
                self._conns.remove(conn)
        conn.close()


class _Call:
    """A connection with a call in progress (since: when it began waiting for the server; None while the caller
    holds the rows it got)."""

    def __init__(self, conn: Any, url: str, timeout: float) -> None:
        self.conn, self.url, self.timeout = conn, url, timeout
        self.since: float | None = time.monotonic()
        self.cut = False

    @contextmanager
    def idle(self) -> Iterator[None]:
        self.since = None
        try:
            yield
        finally:
            self.since = time.monotonic()


_calls: dict[int, _Call] = {}
_silent: dict[str, tuple[str, float]] = {}  # url -> (why, timeout) of a server that answered nothing, until it does
_calls_lock = threading.Lock()
_watchdog_pid = 0  # the process whose watchdog thread runs (a forked child starts its own)
WATCHDOG_BEAT = 1.0


def _watch(call: _Call) -> None:
    """Watch the call from now on; a server this process found silent fails it at once."""
    global _watchdog_pid
    with _calls_lock:
        if _watchdog_pid != os.getpid():
            _calls.clear()  # a forked child's copy of its parent's calls
            _silent.clear()
            _watchdog_pid = os.getpid()
            threading.Thread(target=_watchdog, name="postgres-watchdog", daemon=True).start()
        if call.url in _silent:
            raise StoreUnavailable(_silent[call.url][0])
        _calls[id(call)] = call


def _unwatch(call: _Call) -> None:
    with _calls_lock:
        _calls.pop(id(call), None)


def _still_silent(url: str) -> str | None:
    with _calls_lock:
        return _silent[url][0] if url in _silent and _watchdog_pid == os.getpid() else None


def _watchdog() -> None:
    while True:
        time.sleep(WATCHDOG_BEAT)
        _check_calls()


def _check_calls() -> None:
    """Cut the calls that have waited their timeout on a server that answers no new connection either; forget a
    silence once the server answers again."""
    now = time.monotonic()
    with _calls_lock:
        overdue = [c for c in _calls.values() if c.since is not None and now - c.since >= c.timeout and not c.cut]
        silent = dict(_silent)
    answers = {url: _answers(url, timeout) for url, (_, timeout) in silent.items()}
    with _calls_lock:
        for url, answered in answers.items():
            if answered:
                _silent.pop(url, None)
    for call in overdue:
        if call.url not in answers:
            answers[call.url] = _answers(call.url, call.timeout)
        with _calls_lock:
            if _calls.get(id(call)) is not call:  # it ended meanwhile
                continue
            if answers[call.url]:  # a long statement: ask again after another timeout
                call.since = time.monotonic()
                continue
            call.cut = True
            _silent[call.url] = (_silence(_redact(call.url), call.timeout), call.timeout)
            log.debug(f"postgres: a call waited {call.timeout:g} s and a new connection got no answer: cutting it")
            _shutdown(call.conn)


def _silence(where: str, timeout: float) -> str:
    return (f"PostgreSQL at {where}: no answer within storage.postgres.timeout ({timeout:g} s), nor to a new "
            "connection; is the server up, and not stopped or overloaded? (docker/services.sh status postgres)")


def _answers(url: str, timeout: float) -> bool:
    """Does the server take a new connection (an error it sends, too many clients say, is an answer)?"""
    import psycopg

    try:
        psycopg.connect(url, connect_timeout=max(2, min(10, int(timeout)))).close()
    except psycopg.Error as e:
        text = str(e).lower()
        return not ("timeout" in text or "refused" in text or "closed the connection" in text)
    return True


def _shutdown(conn: Any) -> None:
    """Shut the connection's socket: the call waiting on it fails at once (libpq reads the end of the stream)."""
    try:
        dup = socket.socket(fileno=os.dup(conn.pgconn.socket))
    except Exception:  # closed meanwhile
        return
    try:
        dup.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    finally:
        dup.close()


def _upsert(table: str, names: tuple[str, ...]) -> str:
    """An upsert of rows given as one array per column (key first)."""
    arrays = ", ".join(["%b::text[]", *(f"%b::{_SQL_TYPES.get(FIELDS[n][0], 'text')}[]" for n in names)])
    update = ", ".join(f"{n} = EXCLUDED.{n}" for n in names)
    return (f"INSERT INTO {table} ({', '.join(('key', *names))}) SELECT * FROM unnest({arrays}) "
            f"ON CONFLICT (key) DO UPDATE SET {update}")


def _columns(names: tuple[str, ...], rows: list[list[Any]]) -> list[list[Any]]:
    """Rows [key, *values] as one list per column, numbers of one type per column (sent as binary arrays)."""
    cols = [list(col) for col in zip(*rows, strict=True)]
    for i, name in enumerate(names, 1):
        kind = FIELDS[name][0]
        if kind in ("int", "float"):
            cast = int if kind == "int" else float
            cols[i] = [None if v is None else cast(v) for v in cols[i]]
    return cols


def _redact(url: str) -> str:
    """The URL without its password."""
    from urllib.parse import urlsplit, urlunsplit

    try:
        parts = urlsplit(url)
    except ValueError:
        return "the configured URL"
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@")
    return urlunsplit(parts._replace(netloc=netloc))


def _short(e: Exception) -> str:
    text = " ".join(str(e).split()) or type(e).__name__
    if "Connection refused" in text:
        return "connection refused"
    if "server closed the connection" in text or "consuming input failed" in text:
        return f"{text[:200]}; the server went away: is it up? (docker/services.sh start postgres)"
    return text[:300]
