"""The batch journal: what each batch went through, kept in the store beside the table (DataStore state).

Marks say where each row is; the journal says whether a job that writes many rows finished writing them:

    batch/<id>  {"state": "generating"}              generate is writing the batch's marks
                {"state": "importing"}               warcimport is writing the batch's rows (id: the input's digest)
                {"state": "generated", "rows": n}    every mark is durable; the id was printed
                {"state": "fetching", ...}           a fetch task of the batch is about to send its first request
                {"state": "fetched" | "parsed", ...} the fetch (parse) job of the batch ran to its end
                {"state": "updating", "run": r, ...} updatedb started (r: its run id, reused by a rerun)
                {"state": "updated", "rows": n}      updatedb finished
                {"state": "indexed", "rows": n}      index sent the batch to Solr and committed it
    Each entry also keeps "counts": {"generated": n, "fetched": n, "parsed": n, "updated": n, "indexed": n}, the
    rows each step left with its mark (the dashboard's figures for batches whose marks updatedb removed).
    update/all  {"state": "updating", "run": r}      an updatedb of every batch in progress (deleted when it ends)
    index/reindex  ["_idxmrk_@...", ...]             the index writers (their marks) an `index -reindex` of the
                                                     table started on: until an index of the whole table (-reindex
                                                     or -all) marked every row again, their marks are not trusted
    crawl       {"round": k, "rounds": n}            a `crawl` command in progress (deleted when it ends); n is -1
                                                     until nothing is due, CONTINUOUS (-2) for a continuous crawl
The newest KEEP_FINISHED updated batches are remembered; updatedb forgets older ones (a crawl makes a batch a round
for as long as it runs, and every step reads the journal).

ORDER is the batch life cycle, the one place its order is written: a batch only moves forward in it.

A step is recorded as done only after the rows it wrote are durable (put_state flushes the store first).
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from dataclasses import asdict, dataclass, field
from typing import Any

from nutch2.errors import NutchError
from nutch2.mapred.job import Counters
from nutch2.marks import Mark
from nutch2.stores.base import DataStore
from nutch2.stores.lease import active_fences, forget_lease
from nutch2.stores.query import Query

log = logging.getLogger(__name__)

_PAST = {"generate": "generated", "fetch": "fetched", "updatedb": "updated"}
GENERATING, IMPORTING, GENERATED, FETCHING, FETCHED, PARSED, UPDATING, UPDATED, INDEXED = (
    "generating", "importing", "generated", "fetching", "fetched", "parsed", "updating", "updated", "indexed")
ORDER = (GENERATING, IMPORTING, GENERATED, FETCHING, FETCHED, PARSED, UPDATING, UPDATED, INDEXED)
_UPDATE_ALL = "update/all"  # the entry of an updatedb of every batch: not a batch, so batches() never lists it
_OLD_UPDATE_ALL = "batch/-all"  # where tables written before kept it
_REINDEX = "index/reindex"  # the writer marks of an unfinished `index -reindex` of the table
_BATCH_REINDEX = "index/reindex-batches"  # {batch id: writer marks} of unfinished `index <batch> -reindex` runs
COUNTS = ("generated", "fetched", "parsed", "updated", "indexed")  # the figures a batch keeps, in step order
CONTINUOUS = -2  # the `rounds` of a continuous crawl in the journal's crawl entry
KEEP_FINISHED = 1000  # updated batches the journal remembers (the dashboard's history); older ones are forgotten


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
        return reached(self.state, state)


def reached(state: str, target: str) -> bool:
    """A batch in `state` went through `target` (or further) in the life cycle (ORDER)."""
    return ORDER.index(state) >= ORDER.index(target)


class Journal:
    """Read and write the journal of one crawl's table."""

    def __init__(self, store: DataStore) -> None:
        self.store = store

    def batch(self, batch_id: str) -> BatchRecord | None:
        raw = self.store.get_state(f"batch/{batch_id}")
        return None if raw is None else _record(batch_id, raw)

    def batches(self) -> list[BatchRecord]:
        """Every batch recorded, oldest first."""
        records = [_record(name[6:], raw) for name, raw in self.store.states("batch/").items()
                   if name.startswith("batch/") and name != _OLD_UPDATE_ALL]
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
        self._put(f"batch/{batch_id}", json.dumps(value))
        return rec

    def advance(self, batch_id: str, state: str, counts: dict[str, int] | None = None) -> None:
        """Record that a job of the batch ran to its end, unless the batch is already further on (its counts
        are kept either way)."""
        rec = self.batch(batch_id)
        if rec is None:
            return
        self.record(batch_id, rec.state if reached(rec.state, state) else state, rec.rows, rec.run, counts)

    def fetching(self, batch_id: str) -> None:
        """A fetch of the batch sends its first request (from then on, fetching it again needs -resume)."""
        self.advance(batch_id, FETCHING)

    def forget(self, batch_id: str) -> None:
        self._put(f"batch/{batch_id}", None)

    def prune(self, keep: int | None = None) -> int:
        """Forget the updated (or indexed) batches older than the newest `keep` of them, with their leases once
        released: a crawl that runs for months makes a batch a round, and every step reads the journal. Their rows
        keep their marks (`index -all` still finds rows updated and not indexed). The batches forgotten."""
        keep = KEEP_FINISHED if keep is None else keep
        finished = [r for r in self.batches() if r.reached(UPDATED)]
        old = finished[:-keep] if keep > 0 else finished
        for rec in old:
            self._put(f"batch/{rec.batch_id}", None)
            forget_lease(self.store, f"batch/{rec.batch_id}")
        if old:
            log.debug(f"journal: forgot {len(old)} finished batches (the newest {keep} are kept)")
        return len(old)

    def start_update(self, batch_id: str | None) -> str:
        """Record that updatedb of the batch (None: of every batch) starts; its run id (the interrupted run's,
        when there was one)."""
        rec = self.batch(batch_id) if batch_id is not None else self._update_all()
        run = rec.run if rec is not None and rec.state == UPDATING and rec.run else uuid.uuid4().hex[:12]
        if batch_id is not None:
            self.record(batch_id, UPDATING, rec.rows if rec else 0, run)
        else:
            self.store.put_state(_UPDATE_ALL, json.dumps({"state": UPDATING, "run": run}))
        return run

    def reindexing(self) -> list[str]:
        """The writer marks of an `index -reindex` of the table that did not finish (none: [])."""
        raw = self.store.get_state(_REINDEX)
        return list(json.loads(raw)) if raw else []

    def start_reindex(self, marks: list[str]) -> None:
        """An `index -reindex` of the table starts on the writers of these marks (written before any mark goes)."""
        self._put(_REINDEX, json.dumps(sorted(set(self.reindexing()) | set(marks))))

    def end_reindex(self, marks: list[str]) -> None:
        """An index of the whole table sent every row to the writers of these marks and marked them."""
        left = sorted(set(self.reindexing()) - set(marks))
        self._put(_REINDEX, json.dumps(left) if left else None)

    def batch_reindexing(self) -> dict[str, list[str]]:
        """The batches whose `index <batch> -reindex` did not finish, with its writer marks."""
        raw = self.store.get_state(_BATCH_REINDEX)
        return dict(json.loads(raw)) if raw else {}

    def start_batch_reindex(self, batch_id: str, marks: list[str]) -> None:
        """An `index <batch> -reindex` starts on the writers of these marks (written before any mark goes)."""
        pending = self.batch_reindexing()
        pending[batch_id] = sorted(set(pending.get(batch_id, [])) | set(marks))
        self._put(_BATCH_REINDEX, json.dumps(pending, sort_keys=True))

    def end_batch_reindex(self, marks: list[str], batch_id: str | None = None) -> None:
        """The batch's rows (None: every row) were sent to the writers of these marks and marked."""
        pending = self.batch_reindexing()
        for batch in [batch_id] if batch_id is not None else list(pending):
            left = sorted(set(pending.get(batch, [])) - set(marks))
            if left:
                pending[batch] = left
            else:
                pending.pop(batch, None)
        if pending != self.batch_reindexing():
            self._put(_BATCH_REINDEX, json.dumps(pending, sort_keys=True) if pending else None)

    def forget_all_update(self) -> None:
        """The updatedb of every batch ended."""
        self.store.put_state(_UPDATE_ALL, None)
        if self.store.get_state(_OLD_UPDATE_ALL) is not None:
            self.store.put_state(_OLD_UPDATE_ALL, None)

    def _update_all(self) -> BatchRecord | None:
        """The entry of an updatedb of every batch, if one started and did not end."""
        raw = self.store.get_state(_UPDATE_ALL) or self.store.get_state(_OLD_UPDATE_ALL)
        return None if raw is None else _record("-all", raw)

    def check_no_interrupted_update(self, batch_id: str | None = None, updating: bool = True) -> None:
        """An interrupted updatedb must be finished before anything else changes the rows it was writing.
        `updating`: the caller is updatedb of `batch_id` (None: of every batch), which may finish it."""
        for b in self.updating():
            if not updating or b != batch_id:
                what = "-all" if b is None else b
                raise NutchError(f"updatedb of batch {what} was interrupted; finish it first: "
                                 f"nutch2 updatedb {what} (or run the same `nutch2 crawl` again)")

    def updating(self) -> list[str | None]:
        """Batches whose updatedb was interrupted (None: an updatedb -all)."""
        every = self._update_all()
        return ([r.batch_id for r in self.batches() if r.state == UPDATING]
                + ([None] if every is not None and every.state == UPDATING else []))

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
        self._put("crawl", None if value is None else json.dumps(value))

    def _put(self, name: str, value: str | None) -> None:
        """A journal write, fenced by the leases this command holds on the crawl (a command that lost its lease
        cannot record a step)."""
        self.store.put_state_fenced(name, value, active_fences(self.store.table))


def rounds_phrase(rounds: int) -> str:
    """How a crawl entry's `rounds` reads after "round k": " of 3", " (until nothing is due)", " (continuous)"."""
    return {-1: " (until nothing is due)", CONTINUOUS: " (continuous crawl)"}.get(rounds, f" of {rounds}")


_MADE = {"fetch": FETCHED, "parse": PARSED, "updatedb": UPDATED}  # the state a producer's step leaves a batch in


def has_rows(store: DataStore, mark: Mark, batch: str | None, job: str, producer: str,
             counters: Counters) -> bool:
    """Does the batch have rows for this job? A known batch with none (nothing was fetched in it, or it was
    updated already) is a normal no-op, said in a counter; an unknown batch id is a user error."""
    Journal(store).check_no_import(batch, job)
    if batch is None or store.has_rows(Query(("status",), (mark.value, batch))):
        return True
    rec = Journal(store).batch(batch)
    if rec is None and not any(store.has_rows(Query(("status",), (m.value, batch)))
                               for m in (Mark.GENERATE, Mark.UPDATEDB)):
        raise NutchError(f"{job}: no rows carry batch id {batch!r} from {producer}; check the id printed by "
                         f"`nutch2 generate` (or use -all)")
    if rec is not None and producer in _MADE and not rec.reached(_MADE[producer]) \
            and rec.reached(GENERATED):  # asked too early: the command did not do its job
        raise NutchError(f"{job}: batch {batch} is {rec.state}, not {_MADE[producer]}: run `nutch2 {producer} "
                         f"{batch}` first")
    counters.incr(f"{_PAST[producer]}_rows", 0)
    state = f" (the batch is {rec.state})" if rec is not None else ""
    article = "an" if producer[0] in "aeiou" else "a"
    log.info(f"{job}: no row of batch {batch} carries {article} {producer} mark{state}: nothing to do")
    return False


def _record(batch_id: str, raw: str) -> BatchRecord:
    try:
        d = json.loads(raw)
        counts = {k: int(v) for k, v in (d.get("counts") or {}).items()}
        return BatchRecord(batch_id, d["state"], d.get("rows", 0), d.get("run"), d.get("time", 0.0), counts)
    except (ValueError, KeyError, TypeError):
        raise NutchError(f"the journal entry of batch {batch_id} is unreadable ({raw[:80]!r}); was the table "
                         "written by another program?") from None
