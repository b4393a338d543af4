"""In-memory store: a sorted key list plus a mark index. For tests and one-process runs (not durable)."""

from __future__ import annotations

import bisect
import copy
import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from nutch2.stores.base import DataStore, split_keys
from nutch2.stores.query import Capability, KeyRange, MarkFilter, Partition, Query, check_mark, is_mark
from nutch2.webpage import WebPage, check_fields

if TYPE_CHECKING:
    from nutch2.config import Configuration

# tables live per process so that several opens of one crawl id share rows (as a server-backed store would)
_TABLES: dict[str, _Table] = {}
_TABLES_LOCK = threading.Lock()


class _Table:
    def __init__(self) -> None:
        self.rows: dict[str, dict[str, Any]] = {}
        self.keys: list[str] = []
        self.marks: dict[str, dict[str, set[str]]] = {}  # mark name -> value -> keys
        self.state: dict[str, str] = {}
        self.lock = threading.RLock()


class MemoryStore(DataStore):
    """Rows as dicts of field values in a per-process table; scans are bisect ranges over sorted keys."""

    name = "memory"
    aliases = ("org.apache.gora.memory.store.MemStore",)
    capabilities = frozenset({Capability.ORDERED_SCANS, Capability.TRANSACTIONS})

    def __init__(self, table: str) -> None:
        super().__init__(table)
        with _TABLES_LOCK:
            self._t = _TABLES.get(table)

    @classmethod
    def from_conf(cls, conf: Configuration, table: str, create: bool) -> MemoryStore:
        return cls(table)

    @classmethod
    def tables(cls, conf: Configuration) -> list[str]:
        """The tables of this process."""
        with _TABLES_LOCK:
            return sorted(_TABLES)

    def create_schema(self) -> None:
        with _TABLES_LOCK:
            self._t = _TABLES.setdefault(self.table, _Table())

    def drop_schema(self) -> None:
        with _TABLES_LOCK:
            _TABLES.pop(self.table, None)
            self._t = None

    def _table(self) -> _Table:
        if self._t is None:
            self.create_schema()
        return self._t

    def get(self, key: str, fields: list[str] | tuple[str, ...] | None = None) -> WebPage | None:
        names = check_fields(fields)
        t = self._table()
        with t.lock:
            row = t.rows.get(key)
            if row is None:
                return None
            return WebPage.from_store(key, {n: copy.deepcopy(row[n]) for n in names if n in row})

    def put(self, key: str, page: WebPage) -> None:
        values = {n: copy.deepcopy(v) for n, v in page.dirty_values().items()}
        page.clear_dirty()
        t = self._table()
        with t.lock:
            row = t.rows.get(key)
            if row is None:
                row = t.rows[key] = {}
                bisect.insort(t.keys, key)
            if "markers" in values:
                self._unindex(t, key, row.get("markers") or {})
                self._index(t, key, values["markers"] or {})
            for n, v in values.items():
                row[n] = dict(v) if isinstance(v, dict) else v

    @staticmethod
    def _index(t: _Table, key: str, markers: dict[str, str]) -> None:
        for name, value in markers.items():
            if is_mark(name):
                t.marks.setdefault(name, {}).setdefault(value, set()).add(key)

    @staticmethod
    def _unindex(t: _Table, key: str, markers: dict[str, str]) -> None:
        for name, value in markers.items():
            t.marks.get(name, {}).get(value, set()).discard(key)

    def delete(self, key: str) -> None:
        t = self._table()
        with t.lock:
            row = t.rows.pop(key, None)
            if row is not None:
                self._unindex(t, key, row.get("markers") or {})
                del t.keys[bisect.bisect_left(t.keys, key)]

    def _keys(self, query: Query) -> list[str]:
        t = self._table()
        with t.lock:
            if query.mark is not None:
                name, value = query.mark
                by_value = t.marks.get(name, {})
                keys = set().union(*by_value.values()) if value is None else by_value.get(value, set())
                return sorted(k for k in keys if KeyRange(query.start, query.end).holds(k))
            lo = 0 if query.start is None else bisect.bisect_left(t.keys, query.start)
            hi = len(t.keys) if query.end is None else bisect.bisect_left(t.keys, query.end)
            keys = t.keys[lo:hi]
            if query.due is not None:
                due = query.due
                keys = [k for k in keys if due.holds(t.rows[k].get("fetch_time") or 0)]
            return keys

    def read(self, query: Query, partition: Partition | None = None) -> Iterator[WebPage]:
        check_fields(query.fields)
        keys = self._keys(query)
        if isinstance(partition, KeyRange):
            keys = [k for k in keys if partition.holds(k)]
        elif partition is not None:
            raise ValueError(f"the memory store reads key ranges, not {partition!r}")
        n = 0
        for key in keys:
            if query.limit is not None and n >= query.limit:
                return
            page = self.get(key, query.fields)
            if page is not None:
                n += 1
                self.rows_read += 1
                yield page

    def partitions(self, query: Query, n: int) -> list[Partition]:
        return list(split_keys(self._keys(query), n))

    def count(self, mark: MarkFilter | None = None) -> int:
        check_mark(mark)
        return len(self._keys(Query(None, mark)))

    def swap_state(self, name: str, expected: str | None, value: str) -> bool:
        t = self._table()
        with t.lock:
            if t.state.get(name) != expected:
                return False
            t.state[name] = value
            return True

    def cheap_count(self) -> int | None:
        t = self._table()
        with t.lock:
            return len(t.rows)

    def mark_values(self, name: str) -> set[str]:
        check_mark((name, None))
        t = self._table()
        with t.lock:
            return {v for v, keys in t.marks.get(name, {}).items() if keys}

    def get_state(self, name: str) -> str | None:
        return self._table().state.get(name)

    def put_state(self, name: str, value: str | None) -> None:
        t = self._table()
        with t.lock:
            if value is None:
                t.state.pop(name, None)
            else:
                t.state[name] = value

    def states(self, prefix: str = "") -> dict[str, str]:
        t = self._table()
        with t.lock:
            return {k: v for k, v in t.state.items() if k.startswith(prefix)}

    def flush(self) -> None:
        pass

