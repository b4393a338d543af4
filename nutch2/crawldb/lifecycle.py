"""The batch life cycle: what each batch step works on, what it refuses to do, what it records in the journal.
Every journal write is made here (the jobs and tools call the transitions below; nutch2/crawldb/journal.py keeps
the records).

    generate -> generated -> fetch (fetching) -> fetched -> parse -> parsed -> updatedb -> updated -> index -> indexed

(the states are the journal's ORDER, nutch2/crawldb/journal.py; each step below names the state it requires and the one
it records). A step runs on the rows of its batch that carry the mark of the step before it. It refuses (one line;
`-force` to do it anyway) what would throw work away: fetching a batch that was already fetched, without `-resume`
(its pages would be fetched again before they were parsed; one fetched to its end is told the step that goes on),
updating a batch whose fetch was stopped and not resumed (the URLs it did not fetch would wait for a later batch),
and updating a batch whose fetched pages were not parsed (Nutch 1 skips unparsed segments). A batch whose generate
was interrupted is refused by every step: run generate again. Once a step ran to its end the journal records its
state and the rows it left with its mark; a parse of a batch whose fetch was stopped records its rows only, so the
batch stays `fetching` until its fetch is resumed.
"""

from __future__ import annotations

import logging
import shlex
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from nutch2.crawldb.journal import (
    FETCHED,
    FETCHING,
    GENERATED,
    GENERATING,
    IMPORTING,
    INDEXED,
    PARSED,
    UPDATED,
    UPDATING,
    BatchRecord,
    Journal,
)
from nutch2.errors import NutchError
from nutch2.logs import counted
from nutch2.mapred.job import Counters
from nutch2.marks import Mark
from nutch2.stores.base import DataStore
from nutch2.stores.query import Query

log = logging.getLogger(__name__)


class Refused(NutchError):
    """A step that would throw work away (exit 1; the message names -force)."""


@dataclass(frozen=True)
class BatchStep:
    """One step of a batch's life."""

    job: str
    mark: Mark  # the rows it works on carry this mark (with the batch id)
    producer: str  # the step that gave them that mark
    requires: str  # the journal state a batch reaches before this step (updatedb: with -force, any)
    records: str  # the journal state once it ran to its end
    count: str  # the figure it keeps in the journal
    count_mark: Mark | None  # rows carrying this mark are that figure (None: from the counters)


FETCH = BatchStep("fetch", Mark.GENERATE, "generate", GENERATED, FETCHED, "fetched", Mark.FETCH)
PARSE = BatchStep("parse", Mark.FETCH, "fetch", FETCHED, PARSED, "parsed", Mark.PARSE)
UPDATE = BatchStep("updatedb", Mark.GENERATE, "generate", PARSED, UPDATED, "updated", None)
INDEX = BatchStep("index", Mark.UPDATEDB, "updatedb", UPDATED, INDEXED, "indexed", Mark.INDEX)


def _any(store: DataStore, mark: Mark, batch: str) -> bool:
    return store.has_rows(Query(("status",), (mark.value, batch)))


def check(step: BatchStep, store: DataStore, batch: str | None, *, resume: bool = False, force: bool = False) -> None:
    """Raise Refused (or NutchError) when `step` must not run on `batch` now (None: every batch)."""
    journal = Journal(store)
    journal.check_no_import(batch, step.job)
    records = [journal.batch(batch)] if batch is not None else journal.batches()
    for rec in records:
        if rec is not None and rec.state == GENERATING:
            raise NutchError(f"{step.job}: batch {rec.batch_id} is incomplete: its generate was interrupted; run "
                             "that generate again (it releases the partial batch first)")
    if force:
        return
    if step is FETCH and not resume:
        _check_refetch(store, batch, records[0] if batch is not None else None)
    if step is PARSE:
        for r in records:
            if r is not None and r.state == FETCHING:  # allowed (Nutch's), but not silently
                b = r.batch_id
                log.warning(f"parse: the fetch of batch {b} did not finish; parsing what it fetched. Finish it with "
                            f"`{_cmd(store.crawl_id, 'fetch', b, '-resume')}`, then "
                            f"`{_cmd(store.crawl_id, 'parse', b, '-resume')}` parses only the rest")
    if step is UPDATE:
        for r in records:
            if r is not None and r.state == GENERATED and batch is not None:
                b = r.batch_id
                raise Refused(f"updatedb: batch {b} was generated but not fetched; updating it now would release its "
                              f"URLs unfetched: run `{_cmd(store.crawl_id, 'fetch', b)}` and "
                              f"`{_cmd(store.crawl_id, 'parse', b)}` first, or give -force to release it")
            if r is not None and r.state == FETCHING:
                raise Refused(_unfetched(r, store.crawl_id))
            if r is not None and not r.reached(PARSED) and _any(store, Mark.FETCH, r.batch_id):
                raise Refused(_unparsed(r, store.crawl_id))


def _check_refetch(store: DataStore, batch: str | None, rec: BatchRecord | None) -> None:
    """Fetching again, without -resume, a batch (None: any batch) that was fetched, even in part."""
    if batch is None:
        started = {r.batch_id for r in Journal(store).batches() if r.state == FETCHING}
        fetched = sorted(store.mark_values(Mark.FETCH.value) | started)
        if fetched:
            names = ", ".join(fetched[:3]) + (f" and {len(fetched) - 3} more" if len(fetched) > 3 else "")
            raise Refused(f"fetch: batch {names} {'was' if len(fetched) == 1 else 'were'} fetched, at least in part; "
                          "fetching every batch again now would replace pages before they are parsed: finish "
                          f"them with `{_cmd(store.crawl_id, 'fetch', '-all', '-resume')}`, or give -force to "
                          "fetch every page again")
        return
    if rec is not None and rec.reached(FETCHED):
        since = {PARSED: " and parsed", UPDATING: " and its updatedb did not finish", UPDATED: " and updated",
                 INDEXED: " and indexed"}.get(rec.state, "")
        raise Refused(f"fetch: batch {batch} is already fetched{since}: nothing is left to fetch in it; go on with "
                      f"`{_next_step(rec, store.crawl_id)}`, or give -force to fetch every page again")
    if rec is not None and rec.state == FETCHING or _any(store, Mark.FETCH, batch):
        raise Refused(f"fetch: batch {batch} was partly fetched (the fetch was interrupted); fetching it again now "
                      "would replace pages before they are parsed: finish it with "
                      f"`{_cmd(store.crawl_id, 'fetch', batch, '-resume')}`, "
                      "or give -force to fetch every page again")


def _cmd(crawl_id: str | None, *args: str) -> str:
    """A command to copy: `nutch2 <args>` on the crawl the refusal is about."""
    return shlex.join(["nutch2", *args, *(["-crawlId", crawl_id] if crawl_id else [])])


def _next_step(rec: BatchRecord, crawl_id: str | None) -> str:
    """The command that goes on with a batch fetched to its end."""
    b = rec.batch_id
    if not rec.reached(PARSED):
        return _cmd(crawl_id, "parse", b)
    if not rec.reached(UPDATED):
        return _cmd(crawl_id, "updatedb", b)
    return _cmd(crawl_id, "generate")  # updated: the next round is a new batch


def _unfetched(rec: BatchRecord, crawl_id: str | None) -> str:
    b = rec.batch_id
    return (f"updatedb: the fetch of batch {b} did not finish (it was stopped or killed); updating it now would "
            f"leave the URLs it did not fetch for a later batch: run `{_cmd(crawl_id, 'fetch', b, '-resume')}` "
            f"(then `{_cmd(crawl_id, 'parse', b)}`) first, or give -force to update what was fetched")


def _unparsed(rec: BatchRecord, crawl_id: str | None) -> str:
    b = rec.batch_id
    if not rec.reached(FETCHED):
        todo = (f"finish its fetch (`{_cmd(crawl_id, 'fetch', b, '-resume')}`), then "
                f"`{_cmd(crawl_id, 'parse', b)}`")
    else:
        todo = f"run `{_cmd(crawl_id, 'parse', b)}` first"
    return (f"updatedb: batch {b} was fetched but not parsed; updating it now would keep its pages without their "
            f"text and links: {todo}, or give -force to update it as it is")


def record(step: BatchStep, store: DataStore, batch: str | None, counters: Counters, state: str | None = None) -> None:
    """The step ran to its end: record its state and its figure (`state` overrides step.records)."""
    journal = Journal(store)
    targets = [batch] if batch is not None else [r.batch_id for r in journal.batches() if _ready_for(step, r)]
    for b in targets:
        if step.count_mark is not None:
            n = store.count(mark=(step.count_mark.value, b))
        else:
            n = counters.get(step.count)
        rec = journal.batch(b)
        if step is PARSE and rec is not None and rec.state == FETCHING:  # a parse of a batch whose fetch was
            journal.advance(b, rec.state, {step.count: n})  # stopped: the batch is not parsed until it is fetched
        else:
            journal.advance(b, state or step.records, {step.count: n})


def record_empty(step: BatchStep, store: DataStore, batch: str, counters: Counters) -> None:
    """A known batch the step before finished with no row for this step (nothing was fetched in it): this step
    is done too, with 0 rows, so `crawl` and the dashboard see the batch go on."""
    rec = Journal(store).batch(batch)
    if rec is not None and _ready_for(step, rec):
        record(step, store, batch, counters)


def _ready_for(step: BatchStep, rec: BatchRecord) -> bool:
    """The batch went through the step before this one and not yet through this one."""
    return rec.reached(step.requires) and not rec.reached(step.records)


def pending_index(store: DataStore) -> list[str]:
    """Batches updated but not indexed, oldest first (crawl -solr indexes them)."""
    return [r.batch_id for r in Journal(store).batches() if r.state == UPDATED]


def unfinished(store: DataStore) -> list[BatchRecord]:
    """Batches with a step still to run before they are updated, oldest first."""
    return [r for r in Journal(store).batches() if r.reached(GENERATED) and not r.reached(UPDATING)]



# ---------------------------------------------------------------- the transitions the jobs make
def begin_generate(store: DataStore, batch_id: str, release: Callable[[str], int]) -> None:
    """generate: first release the batches of a generate killed before it ended (`release(batch)` removes their
    marks and says how many rows), then record `batch_id` "generating" before its first mark is written."""
    journal = Journal(store)
    journal.check_no_interrupted_update(updating=False)
    for rec in journal.batches():  # first: a killed `generate -batchId G` run again makes G again
        if rec.state == GENERATING:
            released = release(rec.batch_id)
            journal.forget(rec.batch_id)
            log.info(f"generate: batch {rec.batch_id} was interrupted before it was complete; its "
                     f"{counted(released, 'row')} can be generated again")
    if journal.batch(batch_id) is not None:
        raise NutchError(f"generate: batch id {batch_id} is already used in this crawl; give a new one")
    journal.record(batch_id, GENERATING)


def end_generate(store: DataStore, batch_id: str, generated: int) -> None:
    """generate ran to its end: the batch is "generated" once every mark is durable; an empty batch is forgotten."""
    journal = Journal(store)
    if generated:
        journal.record(batch_id, GENERATED, generated, counts={"generated": generated})
    else:
        journal.forget(batch_id)


def fetching(store: DataStore, batch_id: str) -> None:
    """A fetch task is about to send the first request of the batch: fetching it again needs -resume."""
    Journal(store).fetching(batch_id)


def begin_update(store: DataStore, batch: str | None) -> None:
    """updatedb may start: no other updatedb was interrupted (its run must be finished first)."""
    Journal(store).check_no_interrupted_update(batch)


def update_found_nothing(store: DataStore, batch: str | None) -> None:
    """updatedb found no row of the batch to update: a run killed after its last commit is recorded as done."""
    journal = Journal(store)
    rec = journal.batch(batch) if batch is not None else None
    if batch is not None and rec is not None and rec.state == UPDATING:
        journal.record(batch, UPDATED, rec.rows)


def start_update(store: DataStore, batch: str | None) -> str:
    """The batch (None: every batch) is "updating" under a run id; a rerun after a kill gets the same id."""
    return Journal(store).start_update(batch)


def end_update(store: DataStore, batch: str | None, batches: set[str]) -> None:
    """updatedb ran to its end over `batches`: each is "updated", with the rows it left with its mark."""
    journal = Journal(store)
    for b in batches:
        rec = journal.batch(b)
        updated = store.count(mark=(Mark.UPDATEDB.value, b))  # the rows it left with its mark, as every step counts
        journal.record(b, UPDATED, rec.rows if rec else 0, counts={"updated": updated})
    if batch is None:
        journal.forget_all_update()
    journal.prune()


def begin_import(store: DataStore, batch: str) -> bool:
    """warcimport: record the import's batch "importing"; False when these files were imported already."""
    journal = Journal(store)
    rec = journal.batch(batch)
    if rec is not None and rec.state != IMPORTING:
        log.info(f"warcimport: these files were imported already as batch {batch} (it is {rec.state}); nothing to do")
        return False
    journal.check_no_interrupted_update(updating=False)
    if rec is None:
        journal.record(batch, IMPORTING)
    else:
        log.info(f"warcimport: continuing the interrupted import of batch {batch}")
    return True


def end_import(store: DataStore, batch: str, rows: int) -> None:
    """warcimport ran to its end: the batch is "fetched" with its rows; an import of nothing is forgotten."""
    journal = Journal(store)
    if rows:
        journal.record(batch, FETCHED, rows)
    else:
        journal.forget(batch)


def record_crawl(store: DataStore, value: dict[str, Any] | None) -> None:
    """A `crawl` command's progress (round k of n), None once it ended."""
    Journal(store).record_crawl(value)


__all__ = ["BatchStep", "FETCH", "PARSE", "UPDATE", "INDEX", "Refused", "check", "record", "record_empty",
           "pending_index", "unfinished", "PARSED", "UPDATED", "begin_generate", "end_generate", "fetching",
           "begin_update", "update_found_nothing", "start_update", "end_update", "begin_import", "end_import",
           "record_crawl"]
