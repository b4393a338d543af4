"""SQLite store: the embedded, durable default. One file per crawl id, WAL mode, batched writes.

Layout: table `<table>` has one column per WebPage field (maps and status records as JSON text), except the
large ones (content, text): each has a table of its own, `<table>_content` and `<table>_text` (key, value),
because SQLite rewrites a whole row, large values included, whenever one column of it changes (every mark a job
sets). Table `<table>_marks` (name, value, key) indexes the marks so one batch or mark is selected through an
index, not by reading every row; index `<table>_due` on (fetch_time, key) does the same for the rows due for
fetching. Both are written in the row's transaction (stores/index.py says what each indexes). Partitions of a
query are key ranges cut at every n-th key of the query's own rows. Table `<table>_rows` holds the number of rows,
kept by two triggers in the transaction of every insert and delete, so the table's size is read without counting
it (cheap_count). Other processes can read while a job writes (WAL). A table made before the large fields moved out
keeps them in its own columns; one made before the row count gets it (counted once) when a job next opens it.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nutch2.errors import ConfigError, StoreError
from nutch2.stores.base import Fence, data_dir
from nutch2.stores.codec import decode_field
from nutch2.stores.query import Capability, Partition, Query, is_mark
from nutch2.stores.sqlbase import Fenced, SqlStore
from nutch2.webpage import ALL_FIELDS, FIELDS, WebPage, check_fields

if TYPE_CHECKING:
    from nutch2.config import Configuration

_SQL_TYPES = {"int": "INTEGER", "float": "REAL", "str": "TEXT", "bytes": "BLOB"}
LARGE_FIELDS = ("content", "text")  # each in a table of its own
_READ_AHEAD = 32  # rows a scan fetches at a time: 32 fetched pages with their content are ~1 MB


class SqliteStore(SqlStore):
    """A WebPage table in one SQLite file."""

    name = "sqlite"
    capabilities = frozenset({Capability.SHARED_PROCESSES, Capability.DURABLE, Capability.ORDERED_SCANS,
                              Capability.TRANSACTIONS, Capability.AGGREGATES})

    @classmethod
    def from_conf(cls, conf: Configuration, table: str, create: bool) -> SqliteStore:
        path = (data_dir(conf) if create else Path(conf.get_str("storage.data.dir"))) / f"{table}.sqlite"
        if not create and not path.exists():
            raise StoreError(f"no crawl db at {path}; run `nutch2 inject` first or check -crawlId/storage.data.dir")
        if not create and not _holds_table(path, table):  # an empty file (touched, or cut to 0 bytes), another's
            raise StoreError(f"no crawl db in {path}: the file holds no table {table}; run `nutch2 inject` to make "
                             "it, or check -crawlId/storage.data.dir")
        checkpoint = conf.get_int("storage.sqlite.wal.autocheckpoint")
        if checkpoint < 1:
            raise ConfigError(f"storage.sqlite.wal.autocheckpoint={checkpoint} must be at least 1 (pages of 4 KB of "
                              "write-ahead log between checkpoints), e.g. -D storage.sqlite.wal.autocheckpoint=1000")
        return cls(path, table, conf.get_int("storage.write.batch.size"),
                   conf.get_float("storage.sqlite.busy.timeout"), checkpoint,
                   int(conf.get_float("storage.sqlite.cache.mb") * 1024))

    @classmethod
    def tables(cls, conf: Configuration) -> list[str]:
        """One file per table, `<table>.sqlite` in storage.data.dir, that holds it (a dropped table leaves its file;
        a file that cannot be read now is listed)."""
        folder = Path(conf.get_str("storage.data.dir"))
        try:
            files = sorted(p for p in folder.glob("*.sqlite") if p.is_file())
        except OSError as e:
            raise StoreError(f"cannot list the crawl dbs in {folder}: {e.strerror}; check storage.data.dir") from None
        return [p.name.removesuffix(".sqlite") for p in files if _holds_table(p, p.name.removesuffix(".sqlite"))]

    @classmethod
    def forget(cls, conf: Configuration, table: str) -> None:
        """Remove the table's file (and its write-ahead log) once it holds no table at all."""
        path = Path(conf.get_str("storage.data.dir")) / f"{table}.sqlite"
        try:
            conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=1.0)
            try:
                if conn.execute("SELECT 1 FROM sqlite_master").fetchone() is not None:
                    return
            finally:
                conn.close()
            for suffix in ("", "-wal", "-shm"):
                Path(f"{path}{suffix}").unlink(missing_ok=True)
        except (sqlite3.Error, OSError):
            pass  # an empty file left behind lists no crawl (tables) and says so when opened

    def __init__(self, path: Path, table: str, batch_size: int = 500, busy_timeout: float = 60.0,
                 checkpoint_pages: int = 1000, cache_kb: int = 512) -> None:
        super().__init__(table, batch_size)
        self.path = Path(path)
        self.busy_timeout = busy_timeout
        self.checkpoint_pages = checkpoint_pages
        self.cache_kb = cache_kb
        self._local = threading.local()
        self._conns: list[sqlite3.Connection] = []
        self._conns_lock = threading.Lock()
        self._writer: sqlite3.Connection | None = None  # used only under _flush_lock
        self._q = f'"{table}"'
        self._qm = f'"{table}_marks"'
        self._qs = f'"{table}_state"'
        self._qn = f'"{table}_rows"'
        self._side_tables: dict[str, str] | None = None  # large field -> its table ({} for an older layout)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._conn()
        except (OSError, sqlite3.Error) as e:
            raise StoreError(f"cannot open sqlite store {self.path}: {e}; check storage.data.dir"
                             if not isinstance(e, sqlite3.DatabaseError) else _describe(self.path, e)) from None

    # -------------------------------------------------------------- connections
    def _conn(self) -> sqlite3.Connection:
        """This thread's connection for reads and schema changes."""
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._open()
            self._local.conn = conn
        return conn

    def _writer_conn(self) -> sqlite3.Connection:
        """The one connection batches are written through: batches are written one at a time anyway, and
        a connection per writing thread would hold a page cache (~2 MB) per fetcher thread."""
        if self._writer is None:
            self._writer = self._open()
        return self._writer

    def _begin(self, conn: sqlite3.Connection) -> None:
        """BEGIN IMMEDIATE, waiting for another process's write transaction in steps of 0.1-2 ms (SQLite's own busy
        handler sleeps 1, 2, 5, 10... ms, while the other writer's commit takes about one: two processes writing
        small batches, e.g. a fetcher's claims, spent most of their time asleep)."""
        conn.execute("PRAGMA busy_timeout = 0")
        try:
            end = time.monotonic() + self.busy_timeout
            delay = 0.0001
            while True:
                try:
                    conn.execute("BEGIN IMMEDIATE")
                    return
                except sqlite3.OperationalError as e:
                    if "locked" not in str(e):
                        raise
                    if time.monotonic() > end:
                        raise sqlite3.OperationalError(
                            f"database is locked: another process held its write lock longer than "
                            f"storage.sqlite.busy.timeout={self.busy_timeout:g} s; run the command again when that "
                            "one has ended (is a second command writing this crawl?), or raise the timeout") from None
                time.sleep(delay)
                delay = min(delay * 2, 0.002)
        finally:
            conn.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout * 1000)}")

    def _open(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, timeout=self.busy_timeout, check_same_thread=False, isolation_level=None)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute(f"PRAGMA wal_autocheckpoint={int(self.checkpoint_pages)}")
        conn.execute(f"PRAGMA cache_size=-{self.cache_kb}")
        with self._conns_lock:
            self._conns.append(conn)
        return conn

    def _exec(self, sql: str, params: tuple | list = ()) -> sqlite3.Cursor:
        try:
            return self._conn().execute(sql, params)
        except sqlite3.DatabaseError as e:
            raise StoreError(_describe(self.path, e)) from None

    # -------------------------------------------------------------- schema
    def create_schema(self) -> None:
        side = self._sides()
        cols = ", ".join(
            f"{n} {_SQL_TYPES.get(kind, 'TEXT')}" for n, (kind, _) in FIELDS.items() if n not in side
        )
        self._exec(f"CREATE TABLE IF NOT EXISTS {self._q} (key TEXT PRIMARY KEY, {cols})")
        for name, q in side.items():
            kind = _SQL_TYPES.get(FIELDS[name][0], "TEXT")
            self._exec(f"CREATE TABLE IF NOT EXISTS {q} (key TEXT PRIMARY KEY, value {kind})")
        self._exec(
            f"CREATE TABLE IF NOT EXISTS {self._qm} (name TEXT NOT NULL, value TEXT NOT NULL, key TEXT NOT NULL,"
            " PRIMARY KEY (name, value, key)) WITHOUT ROWID"
        )
        self._exec(f'CREATE INDEX IF NOT EXISTS "{self.table}_marks_key" ON {self._qm} (key)')
        self._exec(f'CREATE INDEX IF NOT EXISTS "{self.table}_due" ON {self._q} (fetch_time, key)')
        self._create_state()
        self._create_row_count()

    def _create_row_count(self) -> None:
        """The row count and its triggers, made in one write transaction: no row can be written between the
        count of an existing table and the triggers that keep it from then on."""
        if self._exec("SELECT 1 FROM sqlite_master WHERE type = 'trigger' AND name = ?",
                      (f"{self.table}_rows_del",)).fetchone():
            return
        with self._flush_lock:
            conn = self._writer_conn()
            try:
                self._begin(conn)
                conn.execute(f"CREATE TABLE IF NOT EXISTS {self._qn} (one INTEGER PRIMARY KEY CHECK (one = 1), "
                             "n INTEGER NOT NULL)")
                conn.execute(f"INSERT OR REPLACE INTO {self._qn} (one, n) SELECT 1, count(*) FROM {self._q}")
                conn.execute(f'CREATE TRIGGER IF NOT EXISTS "{self.table}_rows_ins" AFTER INSERT ON {self._q} '
                             f"BEGIN UPDATE {self._qn} SET n = n + 1; END")
                conn.execute(f'CREATE TRIGGER IF NOT EXISTS "{self.table}_rows_del" AFTER DELETE ON {self._q} '
                             f"BEGIN UPDATE {self._qn} SET n = n - 1; END")
                conn.execute("COMMIT")
            except sqlite3.Error as e:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise StoreError(f"sqlite store {self.path}: cannot create the row count: {e}") from None

    def _create_state(self) -> None:
        self._exec(f"CREATE TABLE IF NOT EXISTS {self._qs} (name TEXT PRIMARY KEY, value TEXT NOT NULL)")

    def drop_schema(self) -> None:
        self.discard_pending()
        for q in (self._q, self._qm, self._qs, self._qn, *(f'"{self.table}_{n}"' for n in LARGE_FIELDS)):
            self._exec(f"DROP TABLE IF EXISTS {q}")
        self._side_tables = None

    def _sides(self) -> dict[str, str]:
        """Where the large fields live: their own tables, or (a table made by an older nutch2) the row."""
        if self._side_tables is None:
            cols = {r[1] for r in self._exec(f"PRAGMA table_info({self._q})").fetchall()}
            self._side_tables = {} if cols & set(LARGE_FIELDS) else {
                n: f'"{self.table}_{n}"' for n in LARGE_FIELDS}
        return self._side_tables

    def _select(self, names: tuple[str, ...]) -> tuple[str, str]:
        """(columns, joins) selecting ``names`` from the row ``w`` and the large fields' tables."""
        side = self._sides()
        cols, joins = [], []
        for n in names:
            if n in side:
                joins.append(f"LEFT JOIN {side[n]} s_{n} ON s_{n}.key = w.key")
                cols.append(f"s_{n}.value")
            else:
                cols.append(f"w.{n}")
        return ", ".join(cols), " ".join(joins)

    def schema_exists(self) -> bool:
        row = self._exec("SELECT 1 FROM sqlite_master WHERE type='table' AND name=?", (self.table,)).fetchone()
        return row is not None

    # -------------------------------------------------------------- reads
    def _page(self, key: str, names: tuple[str, ...], row: tuple) -> WebPage:
        return WebPage.from_store(key, {n: decode_field(n, v) for n, v in zip(names, row, strict=True)})

    def get(self, key: str, fields: list[str] | tuple[str, ...] | None = None) -> WebPage | None:
        names = check_fields(fields)
        self.flush_key(key)
        cols, joins = self._select(names)
        row = self._exec(f"SELECT {cols} FROM {self._q} w {joins} WHERE w.key = ?", (key,)).fetchone()
        return None if row is None else self._page(key, names, row)

    def get_many(self, keys: list[str], fields: list[str] | tuple[str, ...] | None = None) -> dict[str, WebPage]:
        names = check_fields(fields)
        self.flush_keys(keys)
        cols, joins = self._select(names)
        out: dict[str, WebPage] = {}
        for i in range(0, len(keys), 500):
            part = keys[i:i + 500]
            marks = ", ".join("?" for _ in part)
            for row in self._exec(f"SELECT w.key, {cols} FROM {self._q} w {joins} WHERE w.key IN ({marks})", part):
                out[row[0]] = self._page(row[0], names, row[1:])
        return out

    def _range_col(self, col: str, query: Query) -> str:
        # a due query's key range filters the rows the due index gives ("+": not a term SQLite may answer from the
        # key index, which would read the range's every row: half of a 1M-row table for one of two partitions)
        return f"+{col}" if query.due is not None else col

    def read_sql(self, query: Query, partition: Partition | None = None) -> tuple[str, list[Any]]:
        """The SELECT (and its parameters) that read() runs: w.key, then the query's fields."""
        source, where, params, col = self._from(query, partition)
        cols, joins = self._select(check_fields(query.fields))
        order = "" if query.due is not None else f" ORDER BY {col}"  # due rows come in fetch-time order
        limit = "" if query.limit is None else f" LIMIT {int(query.limit)}"
        return f"SELECT w.key, {cols} FROM {source} {joins} {where}{order}{limit}", params

    def read(self, query: Query, partition: Partition | None = None) -> Iterator[WebPage]:
        names = check_fields(query.fields)
        self.flush()
        sql, params = self.read_sql(query, partition)
        # a private connection: the scan's cursor stays open while the caller writes through this store
        conn = sqlite3.connect(self.path, timeout=self.busy_timeout, isolation_level=None)
        try:
            conn.execute(f"PRAGMA cache_size=-{self.cache_kb}")
            cur = conn.execute(sql, params)
            while True:
                rows = cur.fetchmany(_READ_AHEAD)
                if not rows:
                    break
                for row in rows:
                    self.rows_read += 1
                    yield self._page(row[0], names, row[1:])
        except sqlite3.DatabaseError as e:
            raise StoreError(_describe(self.path, e)) from None
        finally:
            conn.close()

    def cheap_count(self) -> int | None:
        """The row count the triggers keep (None for a table no job has opened since it came)."""
        self.flush()
        try:
            row = self._conn().execute(f"SELECT n FROM {self._qn}").fetchone()
        except sqlite3.DatabaseError as e:
            if "no such table" in str(e):
                return None
            raise StoreError(_describe(self.path, e)) from None
        return None if row is None else row[0]

    # -------------------------------------------------------------- crawl state
    def get_state(self, name: str) -> str | None:
        try:
            row = self._conn().execute(f"SELECT value FROM {self._qs} WHERE name = ?", (name,)).fetchone()
        except sqlite3.DatabaseError as e:
            if "no such table" in str(e):  # a table made before the state table existed
                return None
            raise StoreError(_describe(self.path, e)) from None
        return None if row is None else row[0]

    def put_state(self, name: str, value: str | None) -> None:
        self.flush()  # what the state records must not be younger than the rows written before it
        with self._flush_lock:
            self._create_state()
            conn = self._writer_conn()
            try:
                if value is None:
                    conn.execute(f"DELETE FROM {self._qs} WHERE name = ?", (name,))
                else:
                    conn.execute(f"INSERT INTO {self._qs} (name, value) VALUES (?, ?) ON CONFLICT(name) DO UPDATE "
                                 "SET value = excluded.value", (name, value))
            except sqlite3.Error as e:
                raise StoreError(_write_failed(self.path, e)) from None

    def states(self, prefix: str = "") -> dict[str, str]:
        try:
            if prefix:  # a range of the primary key (BINARY: UTF-8 byte order, where prefix + U+10FFFF is last)
                return dict(self._conn().execute(f"SELECT name, value FROM {self._qs} WHERE name >= ? AND name < ?",
                                                 (prefix, prefix + "\U0010ffff")).fetchall())
            return dict(self._conn().execute(f"SELECT name, value FROM {self._qs}").fetchall())
        except sqlite3.DatabaseError as e:
            if "no such table" in str(e):
                return {}
            raise StoreError(_describe(self.path, e)) from None

    def swap_state(self, name: str, expected: str | None, value: str) -> bool:
        return self._state_txn(lambda conn: self._swap(conn, name, expected, value))

    def put_state_fenced(self, name: str, value: str | None, fences: Sequence[Fence] = ()) -> None:
        """The fences are checked and the state written in one transaction."""
        self.flush()

        def write(conn: sqlite3.Connection) -> None:
            for fence in fences:
                row = conn.execute(f"SELECT value FROM {self._qs} WHERE name = ?", (fence.name,)).fetchone()
                if not fence.holds(row[0] if row else None):
                    raise Fenced(fence)
            self._write_state(conn, name, value)

        try:
            self._state_txn(write)
        except Fenced as e:
            raise e.fence.lost() from None

    def _swap(self, conn: sqlite3.Connection, name: str, expected: str | None, value: str) -> bool:
        row = conn.execute(f"SELECT value FROM {self._qs} WHERE name = ?", (name,)).fetchone()
        if (row[0] if row else None) != expected:
            return False
        self._write_state(conn, name, value)
        return True

    def _write_state(self, conn: sqlite3.Connection, name: str, value: str | None) -> None:
        if value is None:
            conn.execute(f"DELETE FROM {self._qs} WHERE name = ?", (name,))
        else:
            conn.execute(f"INSERT INTO {self._qs} (name, value) VALUES (?, ?) ON CONFLICT(name) DO UPDATE "
                         "SET value = excluded.value", (name, value))

    def _state_txn(self, fn: Any) -> Any:
        """fn(conn) in one write transaction on the state table."""
        with self._flush_lock:
            self._create_state()
            conn = self._writer_conn()
            try:
                self._begin(conn)
                result = fn(conn)
                conn.execute("COMMIT")
                return result
            except Fenced:
                conn.execute("ROLLBACK")
                raise
            except sqlite3.Error as e:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise StoreError(_write_failed(self.path, e)) from None

    # -------------------------------------------------------------- writes
    def write_batch(self, pending: dict[str, dict[str, Any]]) -> None:
        conn = self._writer_conn()
        try:
            self._begin(conn)
            for key, values in pending.items():
                self._write_row(conn, key, dict(values))
            conn.execute("COMMIT")
        except Exception as e:  # any failure (a value sqlite cannot hold, a full disk) leaves no open transaction
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise StoreError(_write_failed(self.path, e)) from None

    def _write_row(self, conn: sqlite3.Connection, key: str, values: dict[str, Any]) -> None:
        side = self._sides()
        if values.get("__delete__"):
            for q in (self._q, self._qm, *side.values()):
                conn.execute(f"DELETE FROM {q} WHERE key = ?", (key,))
            if len(values) == 1:
                return
        markers = values.pop("__markers__", None)
        names = [n for n in values if n in FIELDS and n not in side]
        large = [n for n in values if n in side]
        if large and not names:
            conn.execute(f"INSERT INTO {self._q} (key) VALUES (?) ON CONFLICT(key) DO NOTHING", (key,))
        for n in large:
            if values[n] is None:
                conn.execute(f"DELETE FROM {side[n]} WHERE key = ?", (key,))
            else:
                conn.execute(f"INSERT INTO {side[n]} (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET "
                             "value = excluded.value", (key, values[n]))
        if names:
            cols = ", ".join(names)
            marks = ", ".join("?" for _ in names)
            updates = ", ".join(f"{n} = excluded.{n}" for n in names)
            conn.execute(
                f"INSERT INTO {self._q} (key, {cols}) VALUES (?, {marks}) ON CONFLICT(key) DO UPDATE SET {updates}",
                [key, *(values[n] for n in names)],
            )
        if markers is not None:
            conn.execute(f"DELETE FROM {self._qm} WHERE key = ?", (key,))
            conn.executemany(
                f"INSERT INTO {self._qm} (name, value, key) VALUES (?, ?, ?)",
                [(n, str(v), key) for n, v in markers.items() if is_mark(n)],
            )

    def close(self) -> None:
        self.flush()
        with self._conns_lock:
            for conn in self._conns:
                conn.close()
            self._conns.clear()
        self._local = threading.local()
        self._writer = None


def _holds_table(path: Path, table: str) -> bool:
    """The file holds the table (True when it cannot be read now: it may, and listing it is the safe side)."""
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=1.0)
        try:
            return conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?",
                                (table,)).fetchone() is not None
        finally:
            conn.close()
    except (sqlite3.Error, OSError):
        return True


def _write_failed(path: Path, e: Exception) -> str:
    """A failed write's line; a full disk says what to do (the same command goes on from where it stopped)."""
    if "disk is full" in str(e) or "disk I/O error" in str(e):
        return (f"sqlite store {path}: write failed: {e}; free space on its disk (or move storage.data.dir), then "
                "run the same command again")
    return f"sqlite store {path}: write failed: {e}"


def _describe(path: Path, e: sqlite3.DatabaseError) -> str:
    if "not a database" in str(e) or "malformed" in str(e):
        return (f"sqlite store {path} is damaged ({e}); restore it from a backup or move it away and inject "
                "again")
    folder = path.parent
    if ("unable to open" in str(e) or "readonly" in str(e)) and folder.is_dir() and not os.access(folder, os.W_OK):
        return (f"sqlite store {path}: {e}: its folder is not writable (a read-only file system, or permissions), "
                "and SQLite writes its -wal and -shm files beside the db, for reads too; copy the crawl to a "
                "writable folder, or fix the folder's permissions")
    if "disk is full" in str(e) or "disk I/O error" in str(e):
        return f"sqlite store {path}: {e}; free space on its disk (or move storage.data.dir), then run the same command"
    return f"sqlite store {path}: {e}"


__all__ = ["SqliteStore", "ALL_FIELDS"]
