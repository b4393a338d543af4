"""The batch journal: what each batch went through, kept in the store beside the table (DataStore state).

Marks say where each row is; the journal says whether a job that writes many rows finished writing them:

    batch/<id>  {"state": "generating"}              generate is writing the batch's marks
                {"state": "importing"}               warcimport is writing the batch's rows (id: the input's digest)
                {"state": "generated", "rows": n}    every mark is durable; the id was printed
                {"state": "fetched" | "parsed", ...} the fetch (parse) job of the batch ran to its end
                {"state": "updating", "run": r, ...} updatedb started (r: its run id, reused by a rerun)
                {"state": "updated", "rows": n}      updatedb finished
                {"state": "indexed", "rows": n}      index sent the batch to Solr and committed it
    Each entry also keeps "counts": {"generated": n, "fetched": n, "parsed": n, "updated": n, "indexed": n}, the
    rows each step left with its mark (the dashboard's figures for batches whose marks updatedb removed).
    crawl       {"round": k, "rounds": n}            a `crawl` command in progress (deleted when it ends)

A step is recorded as done only after the rows it wrote are durable (put_state flushes the store first).
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import asdict, dataclass, field
from typing import Any

from nutch2.errors import NutchError
from nutch2.mapred.runner import Counters, log
from nutch2.marks import Mark
from nutch2.stores.base import DataStore

_PAST = {"generate": "generated", "fetch": "fetched", "updatedb": "updated"}
GENERATING, IMPORTING, GENERATED, FETCHED, PARSED, UPDATING, UPDATED, INDEXED = (
    "generating", "importing", "generated", "fetched", "parsed", "updating", "updated", "indexed")
ORDER = (GENERATING, IMPORTING, GENERATED, FETCHED, PARSED, UPDATING, UPDATED, INDEXED)
_ALL = "-all"  # the journal entry of an updatedb of every batch (the name older tables have)
COUNTS = ("generated", "fetched", "parsed", "updated", "indexed")  # the figures a batch keeps, in step order


@dataclass
class BatchRecord:
    """The journal entry of one batch."""

    batch_id: str
    state: str
    rows: int = 0
    run: str | None = None  # updatedb's run id: marks the rows one updatedb run wrote, so a rerun skips them
    time: float = field(default_factory=time.time)
    counts: dict[str, int] = field(default_factory=dict)  # step -> rows it left with its mark

    def reached(self, state: str) -> bool:
        """The batch went through `state` (or further)."""
        return ORDER.index(self.state) >= ORDER.index(state)


class Journal:
    """Read and write the journal of one crawl's table."""

    def __init__(self, store: DataStore) -> None:
        self.store = store

    def batch(self, batch_id: str) -> BatchRecord | None:
        raw = self.store.get_state(f"batch/{batch_id}")
        return None if raw is None else _record(batch_id, raw)

    def batches(self) -> list[BatchRecord]:
        """Every batch recorded, oldest first."""
        records = [_record(name[6:], raw) for name, raw in self.store.states().items() if name.startswith("batch/")]
        return sorted(records, key=lambda r: (r.time, r.batch_id))

    def record(self, batch_id: str, state: str, rows: int = 0, run: str | None = None,
               counts: dict[str, int] | None = None) -> BatchRecord:
        old = self.batch(batch_id)
        rec = BatchRecord(batch_id, state, rows, run)
        if old is not None:
            rec.time = old.time  # batches keep the time they were generated: the journal's order
            rec.counts = dict(old.counts)
        rec.counts.update(counts or {})
        value = {k: v for k, v in asdict(rec).items() if k != "batch_id" and v not in (None, {})}
        self.store.put_state(f"batch/{batch_id}", json.dumps(value))
        return rec

    def advance(self, batch_id: str, state: str, counts: dict[str, int] | None = None) -> None:
        """Record that a job of the batch ran to its end, unless the batch is already further on (its counts
        are kept either way)."""
        rec = self.batch(batch_id)
        if rec is None:
            return
        further = ORDER.index(rec.state) >= ORDER.index(state)
        self.record(batch_id, rec.state if further else state, rec.rows, rec.run, counts)

    def forget(self, batch_id: str) -> None:
        self.store.put_state(f"batch/{batch_id}", None)

    def start_update(self, batch_id: str | None) -> str:
        """Record that updatedb of the batch (None: of every batch) starts; its run id (the interrupted run's,
        when there was one)."""
        name = _ALL if batch_id is None else batch_id
        rec = self.batch(name)
        run = rec.run if rec is not None and rec.state == UPDATING and rec.run else uuid.uuid4().hex[:12]
        self.record(name, UPDATING, rec.rows if rec else 0, run)
        return run

    def forget_all_update(self) -> None:
        self.forget(_ALL)

    def check_no_interrupted_update(self, batch_id: str | None = None, updating: bool = True) -> None:
        """An interrupted updatedb must be finished before anything else changes the rows it was writing.
        `updating`: the caller is updatedb of `batch_id` (None: of every batch), which may finish it."""
        mine = (_ALL if batch_id is None else batch_id) if updating else None
        for rec in self.batches():
            if rec.state == UPDATING and rec.batch_id != mine:
                what = "-all" if rec.batch_id == _ALL else rec.batch_id
                raise NutchError(f"updatedb of batch {what} was interrupted; finish it first: "
                                 f"nutch2 updatedb {what} (or run the same `nutch2 crawl` again)")

    def updating(self) -> list[str | None]:
        """Batches whose updatedb was interrupted (None: an updatedb -all)."""
        return [None if r.batch_id == _ALL else r.batch_id for r in self.batches() if r.state == UPDATING]

    def importing(self) -> list[str]:
        """Batches warcimport is writing, or was killed writing."""
        return [rec.batch_id for rec in self.batches() if rec.state == IMPORTING]

    def check_no_import(self, batch_id: str | None, job: str) -> None:
        """A batch warcimport is still writing (or was killed writing) is not ready for any other job."""
        for rec in self.batches():
            if rec.state == IMPORTING and batch_id in (rec.batch_id, None):
                raise NutchError(f"{job}: batch {rec.batch_id} is being imported, or its `nutch2 warcimport` was "
                                 "interrupted; run that same warcimport command again to finish it first")

    # ---------------------------------------------------------------- the crawl command
    def crawl(self) -> dict[str, Any] | None:
        raw = self.store.get_state("crawl")
        return None if raw is None else json.loads(raw)

    def record_crawl(self, value: dict[str, Any] | None) -> None:
        self.store.put_state("crawl", None if value is None else json.dumps(value))


def has_rows(store: DataStore, mark: Mark, batch: str | None, job: str, producer: str,
             counters: Counters) -> bool:
    """Does the batch have rows for this job? A known batch with none (nothing was fetched in it, or it was
    updated already) is a normal no-op, said in a counter; an unknown batch id is a user error."""
    Journal(store).check_no_import(batch, job)
    if batch is None or store.count(mark=(mark.value, batch)) > 0:
        return True
    rec = Journal(store).batch(batch)
    if rec is None and not any(store.count(mark=(m.value, batch)) for m in (Mark.GENERATE, Mark.UPDATEDB)):
        raise NutchError(f"{job}: no rows carry batch id {batch!r} from {producer}; check the id printed by "
                         f"`nutch2 generate` (or use -all)")
    counters.incr(f"{_PAST[producer]}_rows", 0)
    state = f" (the batch is {rec.state})" if rec is not None else ""
    log(f"{job}: no row of batch {batch} carries a {producer} mark{state}: nothing to do")
    return False


def _record(batch_id: str, raw: str) -> BatchRecord:
    try:
        d = json.loads(raw)
        counts = {k: int(v) for k, v in (d.get("counts") or {}).items()}
        return BatchRecord(batch_id, d["state"], d.get("rows", 0), d.get("run"), d.get("time", 0.0), counts)
    except (ValueError, KeyError, TypeError):
        raise NutchError(f"the journal entry of batch {batch_id} is unreadable ({raw[:80]!r}); was the table "
                         "written by another program?") from None
