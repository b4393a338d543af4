"""What the SQL stores (sqlite, PostgreSQL) share: a query as FROM/WHERE over the row table and its marks table,
partitions as key ranges cut at every n-th key of the query's rows, counts, mark values and readdb -stats as
GROUP BYs. Each store says how it runs a statement (`_exec`) and how it writes a parameter (`PARAM`)."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from typing import Any, ClassVar

from nutch2.stores.base import NEXT_DUE_WITHIN_MS, BufferedStore, Fence
from nutch2.stores.codec import encode_field
from nutch2.stores.query import Aggregate, KeyRange, MarkFilter, Partition, Query, check_mark
from nutch2.webpage import WebPage


class SqlStore(BufferedStore):
    """A BufferedStore over SQL tables `_q` (rows, column "key"), `_qm` (marks: name, value, key)."""

    PARAM: ClassVar[str] = "?"
    _q: str
    _qm: str

    @abstractmethod
    def _exec(self, sql: str, params: Sequence[Any] = ()) -> Any:
        """Run one statement on this thread's connection; a cursor."""

    def encode(self, page: WebPage) -> dict[str, Any]:
        """The page's dirty fields as column values; its marks apart (`__markers__`), for the marks table."""
        values = {n: encode_field(n, v) for n, v in page.dirty_values().items()}
        if "markers" in values:
            values["__markers__"] = dict(page.markers)
        return values

    def _range_col(self, col: str, query: Query) -> str:
        """The key column as the key-range conditions of `query` name it."""
        return col

    def _from(self, query: Query, partition: Partition | None) -> tuple[str, str, list[Any], str]:
        """(FROM ..., WHERE ..., params, key column) of the query's rows in a partition."""
        if partition is not None and not isinstance(partition, KeyRange):
            raise ValueError(f"the {self.name} store reads key ranges, not {partition!r}")
        p = self.PARAM
        conds: list[str] = []
        params: list[Any] = []
        if query.mark is not None:
            name, value = query.mark
            source, col = f"{self._qm} m JOIN {self._q} w ON w.key = m.key", "m.key"
            conds.append(f"m.name = {p}")
            params.append(name)
            if value is not None:
                conds.append(f"m.value = {p}")
                params.append(value)
        else:
            source, col = f"{self._q} w", "w.key"
            if query.due is not None:
                far = len(query.due.ranges()) > 1
                conds.append(f"(w.fetch_time <= {p} OR w.fetch_time IS NULL"
                             + (f" OR w.fetch_time > {p})" if far else ")"))
                params += [query.due.now] + ([query.due.horizon] if far else [])
                if query.due.after is not None:
                    conds.append(f"w.fetch_time > {p}")
                    params.append(query.due.after)
        rng = self._range_col(col, query)
        for start, end in ((query.start, query.end), (partition.start, partition.end) if partition else (None, None)):
            if start is not None:
                conds.append(f"{rng} >= {p}")
                params.append(start)
            if end is not None:
                conds.append(f"{rng} < {p}")
                params.append(end)
        return source, ("WHERE " + " AND ".join(conds)) if conds else "", params, col

    def partitions(self, query: Query, n: int) -> list[Partition]:
        """Key ranges cut at every n-th key of the query's rows (counted and stepped through an index)."""
        self.flush()
        source, where, params, col = self._from(query, None)
        total = self._exec(f"SELECT count(*) FROM {source} {where}", params).fetchone()[0]
        if n <= 1 or total < 2:
            return [KeyRange()]
        bounds: set[str] = set()
        for i in range(n):
            row = self._exec(f"SELECT {col} FROM {source} {where} ORDER BY {col} LIMIT 1 OFFSET {self.PARAM}",
                             [*params, total * i // n]).fetchone()
            if row:
                bounds.add(row[0])
        first = min(bounds)
        edges: list[str | None] = [None, *sorted(bounds - {first}), None]
        return [KeyRange(edges[i], edges[i + 1]) for i in range(len(edges) - 1)]

    def next_fetch_time(self, after: int, within: int = NEXT_DUE_WITHIN_MS) -> int | None:
        """The earliest fetch time after `after`, from the (fetch_time, key) index."""
        self.flush()
        p = self.PARAM
        found = self._exec(f"SELECT min(fetch_time) FROM {self._q} WHERE fetch_time > {p} AND fetch_time <= {p}",
                           (after, after + within)).fetchone()[0]
        return None if found is None else int(found)

    def count(self, mark: MarkFilter | None = None) -> int:
        check_mark(mark)
        self.flush()
        p = self.PARAM
        if mark is None:
            return self._exec(f"SELECT count(*) FROM {self._q}").fetchone()[0]
        name, value = mark
        if value is None:
            return self._exec(f"SELECT count(*) FROM {self._qm} WHERE name = {p}", (name,)).fetchone()[0]
        return self._exec(f"SELECT count(*) FROM {self._qm} WHERE name = {p} AND value = {p}",
                          (name, value)).fetchone()[0]

    def mark_values(self, name: str) -> set[str]:
        check_mark((name, None))
        self.flush()
        return {r[0] for r in self._exec(f"SELECT DISTINCT value FROM {self._qm} WHERE name = {self.PARAM}",
                                         (name,))}

    def aggregate(self, per_host: bool = False) -> Aggregate | None:
        if per_host:  # a host is not a column: the per-host counts come from a scan
            return None
        self.flush()
        agg = Aggregate()
        for status, retries, n, total, lo, hi in self._exec(
                f"SELECT coalesce(status, 0), coalesce(retries_since_fetch, 0), count(*), "
                f"sum(coalesce(score, 0.0)), min(coalesce(score, 0.0)), max(coalesce(score, 0.0)) FROM {self._q} "
                "GROUP BY 1, 2"):
            agg.total += n
            agg.status[int(status)] = agg.status.get(int(status), 0) + n
            agg.retries[int(retries)] = agg.retries.get(int(retries), 0) + n
            agg.score_sum += float(total or 0.0)
            agg.score_min = float(lo) if agg.score_min is None else min(agg.score_min, float(lo))
            agg.score_max = float(hi) if agg.score_max is None else max(agg.score_max, float(hi))
        return agg


class Fenced(Exception):
    """A fenced state write found the lease taken over."""

    def __init__(self, fence: Fence) -> None:
        super().__init__(fence.name)
        self.fence = fence
