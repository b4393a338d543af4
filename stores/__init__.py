"""The store layer: open_store(conf, crawl_id) builds the store class named by storage.data.store.class.

A store is one module of this package holding one DataStore subclass, found by its short name (`sqlite` is the
class in nutch2.stores.sqlite whose `name` is "sqlite"), by a Gora class name it lists in `aliases`, or by a
dotted path to any DataStore subclass (`mypackage.mymodule.MyStore`). Each class builds itself from the
configuration (from_conf) and declares its capabilities; crawl_ids(conf) names the crawls whose tables it holds
(each class lists its tables). Locks are leases kept in the store (stores/lease.py).
"""

from __future__ import annotations

import glob
import importlib
import json
import logging
import os
import pkgutil
import re
import uuid
from collections.abc import Callable
from pathlib import Path

from nutch2.config import Configuration
from nutch2.errors import ConfigError, StoreError, StoreLockedError, StoreUnavailable
from nutch2.stores import base, pool
from nutch2.stores.base import DataStore
from nutch2.stores.lease import StoreLease, held_leases, holder_text, process_gone, process_record
from nutch2.stores.query import Capability, Query

log = logging.getLogger(__name__)

_CRAWL_ID = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}")  # used with fullmatch: no path, no newline
_NOT_STORES = {"base", "query", "index", "lease", "codec", "pool"}  # modules of this package that hold no store


def known_stores() -> list[type[DataStore]]:
    """Every store class of this package, by module name."""
    found = []
    for info in sorted(pkgutil.iter_modules([str(Path(__file__).parent)]), key=lambda m: m.name):
        if info.name not in _NOT_STORES and not info.name.startswith("_"):
            cls = _module_store(f"{__name__}.{info.name}", info.name)
            if cls is not None:
                found.append(cls)
    return found


def _module_store(module: str, name: str | None = None) -> type[DataStore] | None:
    try:
        mod = importlib.import_module(module)
    except ModuleNotFoundError as e:
        if e.name == module:
            return None
        raise
    for value in vars(mod).values():
        if isinstance(value, type) and issubclass(value, DataStore) and value.__module__ == module and \
                (name is None or value.name == name):
            return value
    return None


def find_store_class(value: str) -> type[DataStore]:
    """The store class for a short name, a Gora class name or a dotted path to a DataStore subclass."""
    value = value.strip()
    if re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", value) and value.lower() not in _NOT_STORES:
        cls = _module_store(f"{__name__}.{value.lower()}", value.lower())
        if cls is not None:
            return cls
    stores = known_stores()
    for cls in stores:
        if value in cls.aliases:
            return cls
    if "." in value:
        module, _, attr = value.rpartition(".")
        try:
            found = getattr(importlib.import_module(module), attr, None)
        except ImportError:
            found = None
        if isinstance(found, type) and issubclass(found, DataStore):
            return found
    raise ConfigError(f"storage.data.store.class={value!r} is not a known store; use one of "
                      f"{', '.join(c.name for c in stores)} (or a Gora class name, or a dotted path to a "
                      "DataStore class)")


def store_class(conf: Configuration) -> type[DataStore]:
    return find_store_class(conf.get_str("storage.data.store.class"))


def backend_name(conf: Configuration) -> str:
    return store_class(conf).name


def crawl_id_of(conf: Configuration, crawl_id: str | None) -> str:
    cid = crawl_id if crawl_id is not None else conf.get_str("storage.crawl.id")
    if cid and not _CRAWL_ID.fullmatch(cid):
        raise ConfigError(f"crawl id {cid!r} is not valid; use letters, digits, '_', '-' or '.' (max 64)")
    return cid


def table_name(conf: Configuration, crawl_id: str | None) -> str:
    """`<crawlId>_webpage`, or `webpage` without a crawl id (Nutch's naming)."""
    cid = crawl_id_of(conf, crawl_id)
    base_name = conf.get_str("storage.schema.webpage") or "webpage"
    if not _CRAWL_ID.fullmatch(base_name):
        raise ConfigError(f"storage.schema.webpage={base_name!r} is not a valid table name; use letters, digits, "
                          "'_', '-' or '.' (max 64)")
    return f"{cid}_{base_name}" if cid else base_name


def crawl_ids(conf: Configuration) -> list[str] | None:
    """The crawl ids whose webpage table the configured store holds, sorted ("" for the table of no crawl id);
    None when the store cannot list its tables. A StoreError when it cannot be reached."""
    tables = store_class(conf).tables(conf)
    if tables is None:
        return None
    base_name = conf.get_str("storage.schema.webpage") or "webpage"
    ids = {"" if t == base_name else t.removesuffix(f"_{base_name}") for t in tables
           if t == base_name or t.endswith(f"_{base_name}")}
    return sorted(i for i in ids if i == "" or _CRAWL_ID.fullmatch(i))


def open_store(conf: Configuration, crawl_id: str | None = None, create: bool = True) -> DataStore:
    """Open the crawl's webpage table on the configured store (creating the schema unless create=False)."""
    cls = store_class(conf)
    if cls.has(Capability.SHARED_MACHINES):  # a network store: its answers must not wait out the GIL's interval
        pool.switch_interval(conf.get_float("storage.switch.interval.ms"))
    store = cls.from_conf(conf, table_name(conf, crawl_id), create)
    store.crawl_id = crawl_id_of(conf, crawl_id)
    if isinstance(store, base.BufferedStore):
        store.batch_bytes = int(conf.get_float("storage.write.batch.mb") * 2**20)
    if create:
        store.create_schema()
    opened = (cls.name, store.table, str(getattr(store, "path", "")))
    if opened not in _OPENED:  # every task and lease opens its own: said once a process
        _OPENED.add(opened)
        log.debug(f"store: opened {cls.name} table {store.table}" + (f" ({opened[2]})" if opened[2] else ""))
    return store


_OPENED: set[tuple[str, str, str]] = set()


def data_dir(conf: Configuration) -> Path:
    """storage.data.dir, created if missing (a bad store name is reported before any file is created)."""
    store_class(conf)
    return base.data_dir(conf)


# ---------------------------------------------------------------- leases (the crawl's and the batches')
class Held:
    """Leases a command holds, and the stores they were taken in; release() lets them go."""

    def __init__(self, store: DataStore) -> None:
        self.store = store
        self.leases: list[StoreLease] = []

    def take(self, scope: str, job: str, ttl: float, say: Callable[[str], None] | None, busy: str) -> None:
        lease = StoreLease(self.store, scope, job, ttl, say)
        holder = lease.try_acquire()
        if holder is not None:
            self.release()
            raise StoreLockedError(busy.format(holder=holder_text(holder)))
        self.leases.append(lease)
        log.debug(f"{job}: took {_lease_name(scope)} ({self.store.table})")

    def release(self, record: bool = True, wait: bool = True) -> None:
        """Let the leases go (record=False: stop renewing them, writing nothing; wait=False: not even waiting for a
        renewal in flight; see StoreLease.release)."""
        for lease in reversed(self.leases):
            lease.release(record, wait)
            log.debug(f"{lease.job}: {'released' if record else 'left to expire'} {_lease_name(lease.scope)} "
                      f"({self.store.table})")
        self.leases.clear()
        self.store.close()

    def __enter__(self) -> Held:
        return self

    def __exit__(self, kind: object, error: object, tb: object) -> None:
        answering = not isinstance(error, StoreUnavailable)
        self.release(record=answering, wait=answering)


def _lease_name(scope: str) -> str:
    if scope == "crawl":
        return "the crawl's lease"
    if scope == "crawler":
        return "the crawl command's lease"
    if scope == "batch/-all":
        return "the lease of every batch"
    return f"the lease of batch {scope.removeprefix('batch/')}"


def _lease_store(conf: Configuration, crawl_id: str | None, create: bool) -> DataStore:
    table_name(conf, crawl_id)  # a bad crawl id is reported before anything is created
    return open_store(conf, crawl_id, create=create)


def crawl_lock(conf: Configuration, crawl_id: str | None, job: str, create: bool = False,
               log: Callable[[str], None] | None = None) -> Held:
    """Take the crawl's lease for a job that rewrites the table (inject, generate, updatedb...); fail at once
    while another command holds it. create: the job may create the crawl."""
    held = Held(_lease_store(conf, crawl_id, create))
    held.take("crawl", job, conf.get_float("storage.lease.ttl"), log,
              f"{job}: another job (inject, generate or updatedb), {{holder}}, is rewriting this crawl and holds "
              "its lease; wait for it to finish")
    remove_old_lock_files(conf, held.store.table)
    return held


_OLD_LOCKS_CHECKED: set[tuple[str, str]] = set()


def remove_old_lock_files(conf: Configuration, table: str) -> int:
    """Remove the lock files nutch2 kept in storage.data.dir before its locks became leases in the store
    (`<table>.lock`, `<table>.batches.lock` and one `<table>.batch-<id>.lock` per batch ever run: never removed,
    they piled up), each only once no process holds it (an older nutch2 still running keeps its own). Checked once
    a process per table; the files removed."""
    folder = Path(conf.get_str("storage.data.dir"))
    if (str(folder), table) in _OLD_LOCKS_CHECKED:
        return 0
    _OLD_LOCKS_CHECKED.add((str(folder), table))
    try:
        import fcntl
    except ImportError:  # no POSIX locks (Windows): whether a file is held cannot be told
        return 0
    try:
        paths = [folder / f"{table}.lock", folder / f"{table}.batches.lock",
                 *folder.glob(f"{glob.escape(table)}.batch-*.lock")]
    except OSError:
        return 0
    removed = 0
    for path in paths:
        try:
            fd = os.open(path, os.O_WRONLY | os.O_NOFOLLOW)  # never created here
        except OSError:  # absent, or not ours to open
            continue
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # as the older nutch2 took it (fasteners)
            path.unlink()  # while held: a process that opens it now makes a new file
            removed += 1
        except OSError:  # held by a live process, or not ours to remove
            pass
        finally:
            os.close(fd)
    if removed:
        log.info(f"store: removed {removed} lock file(s) an older nutch2 left in {folder} for {table}")
    return removed


def crawl_exists(conf: Configuration, crawl_id: str | None) -> bool | None:
    """Whether the store holds the crawl's table; None when it cannot tell (it cannot list its tables, or cannot be
    reached)."""
    try:
        tables = store_class(conf).tables(conf)
    except StoreError:
        return None
    return None if tables is None else table_name(conf, crawl_id) in tables


def discard_empty_crawl(conf: Configuration, crawl_id: str | None, job: str) -> bool:
    """Drop the crawl's table if it holds no row and no other command holds a lease in it: what is left of a
    command that created the crawl and then wrote nothing (an inject whose every seed line was rejected), so the
    crawl is not there for a later command (a mistyped -crawlId is still said). True when it was dropped."""
    try:
        held = crawl_lock(conf, crawl_id, job)
    except StoreError:  # another command took it meanwhile: the crawl is theirs now
        return False
    store = held.store
    try:
        if store.count() or [scope for scope, _ in held_leases(store, "") if scope != "crawl"]:
            return False
        held.release(record=False)  # no more writes to the state table: the lease's record goes with the table
        store.drop_schema()
    finally:
        held.release()
    type(store).forget(conf, store.table)
    log.debug(f"{job}: dropped the empty table {store.table} it had created")
    return True


CREATING = "creating"  # state record: the command that created the crawl, until it ends (a kill -9 leaves it)
_CREATING: set[str] = set()  # the holders of the CREATING records of the commands running in this process


def creation_begins(conf: Configuration, crawl_id: str | None, job: str, new: bool) -> str | None:
    """Called by a command that may create the crawl, once it holds its lease. `new`: the command found no crawl
    and made it; it records itself as the crawl's creator (CREATING) until creation_ends. Else, a crawl whose
    creator was killed or stopped before it wrote a row (its record left, the command gone: its process ended, or
    it no longer runs in this one, the job server) and that still holds none is taken on as this command's own,
    so that, writing nothing either, it drops the table as an uninterrupted run would have. A crawl with rows, or
    made by a command that ended or still runs, is never taken on. The record's holder when the command is now the
    crawl's creator, else None."""
    try:
        store = open_store(conf, crawl_id, create=False)
    except StoreError:  # no crawl (a crawl without seeds): the command says so itself
        return None
    try:
        if not new:
            rec = _creator(store)
            if rec is None or not (process_gone(rec) or _ours(rec) and rec.get("holder") not in _CREATING):
                return None
            if store.has_rows(Query(("status",))):  # its creator wrote rows before it stopped: a crawl as any
                # (one row read: a count reads every row on Cassandra and HBase, a month-long crawl's on a rerun)
                store.put_state(CREATING, None)
                return None
            log.info(f"{job}: crawl {store.crawl_id or '(no id)'} holds no row: the {rec.get('job', '?')} that "
                     f"created it (pid {rec.get('pid', '?')}) was stopped before it wrote one; it is this "
                     f"{job}'s to fill or drop")
        holder = uuid.uuid4().hex[:12]
        _CREATING.add(holder)
        store.put_state(CREATING, json.dumps({**process_record(job), "holder": holder}))
        return holder
    finally:
        store.close()


def creation_ends(conf: Configuration, crawl_id: str | None, holder: str, keep: bool = False) -> None:
    """The command that recorded itself as the crawl's creator (`holder`) ended: its record goes (the table kept),
    or with `keep` (stopped, failed: the crawl may hold nothing) stays for a later command to take the crawl on."""
    _CREATING.discard(holder)
    if keep:
        return
    try:
        store = open_store(conf, crawl_id, create=False)
    except StoreError:  # dropped with its record
        return
    try:
        rec = _creator(store)
        if rec is not None and rec.get("holder") == holder:
            store.put_state(CREATING, None)
    finally:
        store.close()


def _creator(store: DataStore) -> dict | None:
    raw = store.get_state(CREATING)
    try:
        rec = json.loads(raw) if raw else None
    except ValueError:
        return None
    return rec if isinstance(rec, dict) else None


def _ours(rec: dict) -> bool:
    """Was the record written by this process?"""
    me = process_record("")
    return rec.get("host") == me["host"] and rec.get("pid") == me["pid"] and rec.get("started") == me["started"]


def crawler_lease(conf: Configuration, crawl_id: str | None, create: bool = False,
                  log: Callable[[str], None] | None = None) -> Held:
    """One crawl command per crawl at a time, on any machine: the lease `crawler`, held for the whole crawl (its
    steps take the crawl's and the batches' leases as they run). A second crawl fails at once, before it injects."""
    held = Held(_lease_store(conf, crawl_id, create))
    held.take("crawler", "crawl", conf.get_float("storage.lease.ttl"), log,
              "crawl: another crawl of this crawl id, {holder}, is running; wait for it to end, or stop it "
              "(Ctrl-C or SIGTERM) and run this command again")
    return held


def BatchLock(conf: Configuration, crawl_id: str | None, batch: str | None, job: str,  # noqa: N802 - was a class
              log: Callable[[str], None] | None = None, create: bool = False) -> Held:
    """One job at a time per batch: the lease `batch/<id>`, or for every batch (batch None, `-all`) the lease
    `batch/-all`, which excludes every batch lease. Each side takes its own lease first and then looks for the
    other's, so two commands that race may both step back, never both go on."""
    held = Held(_lease_store(conf, crawl_id, create))
    ttl = conf.get_float("storage.lease.ttl")
    busy = f"{job}: another fetch, parse, updatedb or index of {{what}}, {{holder}}, is running and holds its lease; " \
           "wait for it"
    if batch is None:
        held.take("batch/-all", job, ttl, log, busy.replace("{what}", "every batch (-all)"))
        others = [(s, r) for s, r in held_leases(held.store, "batch/") if s != "batch/-all"]
    else:
        held.take(f"batch/{batch}", job, ttl, log, busy.replace("{what}", f"batch {batch}"))
        others = held_leases(held.store, "batch/-all")
    if others:
        held.release()
        scope, rec = others[0]
        what = "every batch (-all)" if scope == "batch/-all" else f"batch {scope.removeprefix('batch/')}"
        raise StoreLockedError(busy.format(what=what, holder=holder_text(rec)))
    return held


__all__ = ["DataStore", "Query", "Capability", "StoreError", "open_store", "crawl_lock", "crawl_exists",
           "discard_empty_crawl", "creation_begins", "creation_ends", "crawler_lease", "BatchLock",
           "table_name", "backend_name", "store_class", "find_store_class", "known_stores", "crawl_ids"]
