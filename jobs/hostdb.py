"""UpdateHostDb (`nutch2 updatehostdb`): the host table computed again from the rows, one HostDatum per host.

Map: each task reads its split of the table and adds its rows up per host (in the task: what goes through the
shuffle is one partial datum per host and task, not a pair per row). Reduce: per host, the partials merged into
the host's datum, written as its state record. Finish: the records of hosts that have no row any more are
deleted. Every record is a function of the rows, so a run killed at any point and run again gives the same host
table (lastCheck aside: the time of the run that wrote it).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from typing import Any

from nutch2 import failpoints
from nutch2.config import Configuration
from nutch2.crawldb.hostdb import PREFIX, ROW_FIELDS, HostDatum, host_of_row, state_name
from nutch2.mapred import stop
from nutch2.mapred.job import Job, ReduceStep, TaskContext
from nutch2.stores.base import DataStore

COMBINE_HOSTS = 10_000  # partial datums a map task holds before it hands them on


class UpdateHostDbJob(Job):
    """Rows -> per-host partial datums -> one datum per host, kept as state records `hostdb/<host>`."""

    name = "updatehostdb"
    fields = ROW_FIELDS

    def __init__(self, conf: Configuration, now_ms: int | None = None) -> None:
        super().__init__(conf)
        self.now_ms = now_ms if now_ms is not None else int(time.time() * 1000)
        self.written: list[str] = []

    def read(self, split: Any, store: DataStore) -> Iterable[Any]:
        """The split's rows added up per host: (host, partial datum) records, at most COMBINE_HOSTS held."""
        partial: dict[str, HostDatum] = {}
        for page in store.read(self.query(), split):
            stop.check()
            host = host_of_row(page)
            datum = partial.get(host)
            if datum is None:
                if len(partial) >= COMBINE_HOSTS:
                    yield from partial.items()
                    partial.clear()
                datum = partial[host] = HostDatum()
            datum.add(page)
        yield from partial.items()

    def map(self, record: tuple[str, HostDatum], ctx: TaskContext) -> Iterator[tuple[str, HostDatum]]:
        ctx.incr("rows", record[1].numRecords)
        yield record

    def steps(self) -> list[ReduceStep]:
        return [ReduceStep()]

    def reduce_setup(self, ctx: TaskContext) -> None:
        self.written = []

    def reduce(self, host: str, values: list[HostDatum], ctx: TaskContext) -> None:
        datum = HostDatum()
        for part in values:
            datum.merge(part)
        datum.lastCheck = self.now_ms
        ctx.store.put_state(state_name(host), datum.to_json())
        failpoints.reach("hostdb.write")  # crash tests: killed with part of the host table written
        self.written.append(host)
        ctx.incr("hosts")

    def result(self, ctx: TaskContext) -> Any:
        return None if ctx.is_map else self.written

    def finish(self, results: list[Any], ctx: TaskContext) -> None:
        """Delete the records of hosts no row belongs to any more."""
        live = {state_name(h) for part in results for h in part}
        for name in [n for n in ctx.store.states(PREFIX) if n not in live]:
            ctx.store.put_state(name, None)
            ctx.incr("hosts_removed")
