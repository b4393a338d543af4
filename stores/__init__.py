"""The store layer: open_store(conf, crawl_id) picks a backend from storage.data.store.class."""

from __future__ import annotations

import re
from pathlib import Path

import fasteners

from nutch2.config import Configuration
from nutch2.errors import ConfigError, StoreLockedError
from nutch2.logs import debug
from nutch2.stores.base import DataStore

BACKENDS = ("memory", "sqlite", "hbase", "cassandra")
# Gora class names a Nutch user may already have in nutch-site.xml
_ALIASES = {
    "org.apache.gora.memory.store.MemStore": "memory",
    "org.apache.gora.sql.store.SqlStore": "sqlite",
    "org.apache.gora.hbase.store.HBaseStore": "hbase",
    "org.apache.gora.cassandra.store.CassandraStore": "cassandra",
}
_CRAWL_ID = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}")  # used with fullmatch: no path, no newline


def backend_name(conf: Configuration) -> str:
    value = conf.get_str("storage.data.store.class").strip()
    name = _ALIASES.get(value, value.lower())
    if name not in BACKENDS:
        raise ConfigError(
            f"storage.data.store.class={value!r} is not a known store; use one of {', '.join(BACKENDS)}"
        )
    return name


def crawl_id_of(conf: Configuration, crawl_id: str | None) -> str:
    cid = crawl_id if crawl_id is not None else conf.get_str("storage.crawl.id")
    if cid and not _CRAWL_ID.fullmatch(cid):
        raise ConfigError(f"crawl id {cid!r} is not valid; use letters, digits, '_', '-' or '.' (max 64)")
    return cid


def table_name(conf: Configuration, crawl_id: str | None) -> str:
    """`<crawlId>_webpage`, or `webpage` without a crawl id (Nutch's naming)."""
    cid = crawl_id_of(conf, crawl_id)
    base = conf.get_str("storage.schema.webpage") or "webpage"
    if not _CRAWL_ID.fullmatch(base):
        raise ConfigError(f"storage.schema.webpage={base!r} is not a valid table name; use letters, digits, "
                          "'_', '-' or '.' (max 64)")
    return f"{cid}_{base}" if cid else base


def open_store(conf: Configuration, crawl_id: str | None = None, create: bool = True) -> DataStore:
    """Open the crawl's webpage table on the configured backend (creating the schema unless create=False)."""
    name = backend_name(conf)
    table = table_name(conf, crawl_id)
    store: DataStore
    if name == "memory":
        from nutch2.stores.memory import MemoryStore

        store = MemoryStore(table)
    elif name == "sqlite":
        from nutch2.stores.sqlite import SqliteStore

        path = (data_dir(conf) if create else Path(conf.get_str("storage.data.dir"))) / f"{table}.sqlite"
        if not create and not path.exists():
            from nutch2.errors import StoreError

            raise StoreError(f"no crawl db at {path}; run `nutch2 inject` first or check -crawlId/storage.data.dir")
        store = SqliteStore(path, table, conf.get_int("storage.write.batch.size"),
                            conf.get_float("storage.sqlite.busy.timeout"))
    elif name == "cassandra":
        store = _cassandra(conf, table)
    else:
        store = _hbase(conf, table)
    store.crawl_id = crawl_id_of(conf, crawl_id)
    if create:
        store.create_schema()
    debug(f"store: opened {name} table {table}" + (f" ({path})" if name == "sqlite" else ""))
    return store


def _cassandra(conf: Configuration, table: str) -> DataStore:
    try:
        from nutch2.stores.cassandra import CassandraStore
    except ImportError:
        raise ConfigError("the cassandra store needs cassandra-driver: pip install 'nutch2[cassandra]'") from None
    return CassandraStore(
        table,
        [h.strip() for h in conf.get_str("storage.cassandra.contact.points").split(",") if h.strip()],
        conf.get_int("storage.cassandra.port"),
        conf.get_str("storage.cassandra.keyspace"),
        conf.get_str("storage.cassandra.replication"),
        conf.get_str("storage.cassandra.consistency.read"),
        conf.get_str("storage.cassandra.consistency.write"),
        conf.get_str("storage.cassandra.local.datacenter"),
        conf.get_int("storage.cassandra.concurrency"),
        conf.get_float("storage.cassandra.timeout"),
        conf.get_int("storage.write.batch.size"),
        conf.get_int("storage.cassandra.retries"),
    )


def _hbase(conf: Configuration, table: str) -> DataStore:
    try:
        from nutch2.stores.hbase import HBaseStore
    except ImportError:
        raise ConfigError("the hbase store needs happybase: pip install 'nutch2[hbase]'") from None
    return HBaseStore(
        table,
        conf.get_str("hbase.thrift.host"),
        conf.get_int("hbase.thrift.port"),
        conf.get_str("hbase.thrift.transport"),
        conf.get_str("hbase.thrift.protocol"),
        conf.get_int("storage.hbase.pool.size"),
        conf.get_int("storage.hbase.timeout"),
        conf.get_int("storage.hbase.batch.size"),
        conf.get_int("storage.hbase.retries"),
    )


def data_dir(conf: Configuration) -> Path:
    """storage.data.dir, created if missing; a one-line error when it cannot be a folder."""
    backend_name(conf)  # a bad store name is reported before any file is created
    path = Path(conf.get_str("storage.data.dir"))
    if path.exists() and not path.is_dir():
        raise ConfigError(f"storage.data.dir={str(path)!r} is a file, not a folder; point it at a folder")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise ConfigError(f"storage.data.dir={str(path)!r} cannot be created ({e.strerror}); point it at a "
                          "writable folder") from None
    return path


class CrawlLock:
    """The crawl's inter-process lock, held by one job that rewrites the table; release() frees it."""

    def __init__(self, conf: Configuration, crawl_id: str | None, job: str) -> None:
        table = table_name(conf, crawl_id)  # a bad crawl id is reported before any file is created
        self.path = data_dir(conf) / f"{table}.lock"
        self.job = job
        self._lock = fasteners.InterProcessLock(str(self.path))
        if not self._lock.acquire(blocking=False):
            raise StoreLockedError(
                f"{job}: another job (inject, generate or updatedb) is rewriting this crawl and holds {self.path}; "
                "wait for it to finish"
            )
        debug(f"{job}: took the crawl's lock {self.path}")

    def release(self) -> None:
        self._lock.release()
        debug(f"{self.job}: released the crawl's lock {self.path}")

    def __enter__(self) -> CrawlLock:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def crawl_lock(conf: Configuration, crawl_id: str | None, job: str) -> CrawlLock:
    """Take the crawl's inter-process lock for a job that rewrites the table; fail at once if it is held."""
    return CrawlLock(conf, crawl_id, job)


class BatchLock:
    """One job at a time per batch: every batch (batch None, `-all`) holds the crawl's batches lock for writing
    (excluding every batch), a batch id holds it for reading plus the batch's own lock. Released by release()
    or on exit."""

    def __init__(self, conf: Configuration, crawl_id: str | None, batch: str | None, job: str) -> None:
        table = table_name(conf, crawl_id)
        base = data_dir(conf) / table
        self._all = fasteners.InterProcessReaderWriterLock(f"{base}.batches.lock")
        self._one: fasteners.InterProcessLock | None = None
        busy = f"{job}: another fetch, parse, updatedb or index of {{}} is running and holds {{}}; wait for it"
        self._job = job
        self._what = f"the lock of {'every batch' if batch is None else f'batch {batch}'} ({base}.batch*)"
        if batch is None:
            if not self._all.acquire_write_lock(blocking=False):
                raise StoreLockedError(busy.format("a batch of this crawl", f"{base}.batches.lock"))
            self._release = self._all.release_write_lock
            debug(f"{job}: took {self._what}")
            return
        if not self._all.acquire_read_lock(blocking=False):
            raise StoreLockedError(busy.format("every batch (-all)", f"{base}.batches.lock"))
        path = f"{base}.batch-{batch}.lock"
        self._one = fasteners.InterProcessLock(path)
        if not self._one.acquire(blocking=False):
            self._all.release_read_lock()
            raise StoreLockedError(busy.format(f"batch {batch}", path))
        self._release = self._release_one
        debug(f"{job}: took {self._what}")

    def _release_one(self) -> None:
        assert self._one is not None
        self._one.release()
        self._all.release_read_lock()

    def release(self) -> None:
        self._release()
        debug(f"{self._job}: released {self._what}")

    def __enter__(self) -> BatchLock:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


__all__ = ["DataStore", "open_store", "crawl_lock", "CrawlLock", "BatchLock", "table_name", "backend_name", "BACKENDS"]
