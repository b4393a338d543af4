"""The crawl tool: inject, then rounds of generate -> fetch -> parse -> updatedb (-> index), as Nutch's crawl script.

`-rounds N` does N rounds, `-rounds -1` rounds until nothing is due, and `-continuous` crawls for ever: when
nothing is due it waits until the next row comes due (the store's due index says when) or a seed file is added
to its seed folder, and goes on; STOP ends it (exit 0), SIGTERM and Ctrl-C stop it (exit 130). `-timeLimit M`
bounds the whole command: the fetch running at the limit is cut (its URLs left for later), its batch is finished,
and the command ends; the same command goes on from there.

Killed or stopped and run again, it first finishes what was under way — every batch the journal shows short of
updated (or, with -solr or -opensearch, of indexed) gets the steps it lacks, with -resume — then does the rounds
the interrupted crawl had left (the journal keeps the round), then ends as an uninterrupted run would.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from nutch2.crawldb import lifecycle
from nutch2.crawldb.journal import (
    CONTINUOUS,
    FETCHED,
    GENERATED,
    GENERATING,
    INDEXED,
    PARSED,
    UPDATED,
    UPDATING,
    Journal,
    reached,
    rounds_phrase,
)
from nutch2.errors import NutchError, StoreUnavailable
from nutch2.logs import counted
from nutch2.mapred import stop
from nutch2.mapred.frameworks import framework, make_runner
from nutch2.marks import Mark
from nutch2.plugin import POINTS
from nutch2.stores import crawler_lease, open_store
from nutch2.stores.query import Due, Query
from nutch2.tools.args import ArgError, ToolArgs, metrics_file_opt, metrics_port_opt, opt, tasks_opt, threads_opt
from nutch2.tools.base import Run, Tool, tool
from nutch2.tools.batch import Fetch, FetchArgs, Generate, GenerateArgs, Parse, ParseArgs, UpdateArgs, UpdateDb
from nutch2.tools.hostdb import UpdateHostDb, UpdateHostDbArgs
from nutch2.tools.index import (
    Dedup,
    DedupArgs,
    Index,
    IndexArgs,
    index_writers,
    opensearch_opt,
    solr_client,
    solr_opt,
    with_opensearch,
)
from nutch2.tools.seeds import Inject, InjectArgs, SeedsArgs, as_sent, seed_path

log = logging.getLogger(__name__)


@dataclass
class CrawlArgs(SeedsArgs):
    rounds: int | None = opt("-rounds", "generate/fetch/parse/updatedb rounds (-1: until nothing is due)", metavar="N",
                             min=-1, max=100_000)
    continuous: bool = opt("-continuous", "crawl for ever: when nothing is due, wait until a row comes due or a seed "
                           "file is added (STOP ends it)", default=False)
    timeLimit: float | None = opt("-timeLimit", "minutes the whole crawl may take (the fetch at the limit is cut; "
                                  "the same command goes on)", metavar="MINUTES", min=0.01, max=10**7)
    topN: int | None = opt("-topN", "URLs per round (crawl.topN)", metavar="N", min=1)
    threads: int | None = threads_opt()
    num_tasks: int | None = tasks_opt()
    solr: str | None = solr_opt()
    opensearch: str | None = opensearch_opt()
    index: bool = opt("-index", "index each round into the server's Solr (the job API's -solr)", default=False,
                      cli=False)
    seeds_required = False  # no seeds: the rounds crawl what the table holds (seeds injected before)
    metricsPort: int | None = metrics_port_opt()
    metricsFile: Path | None = metrics_file_opt()
    hostdbupdate: bool = opt("-hostdbupdate", "run updatehostdb after each round's updatedb (Nutch's "
                             "--hostdbupdate)", default=False)

    def check(self) -> None:
        super().check()
        if self.rounds == 0:
            raise ArgError("-rounds 0 does nothing: give a number of rounds, or -1 to crawl until nothing is due")
        if self.rounds is None and not self.continuous:
            raise ArgError("give -rounds N (-1: until nothing is due) or -continuous (for ever)")
        if self.continuous and self.rounds not in (None, -1):
            raise ArgError("-continuous crawls for ever: leave out -rounds")

    @property
    def until_done(self) -> bool:
        return self.continuous or self.rounds == -1


@tool
class Crawl(Tool[CrawlArgs]):
    name = "crawl"
    plugin_points = tuple(POINTS)
    help = "inject, then generate → fetch → parse → updatedb (→ index) for N rounds, until done or for ever"
    Args = CrawlArgs
    creates = True  # with seeds (its locks): one whose every seed line is rejected leaves no crawl behind

    def prepare(self) -> None:
        """Every check that needs no store, before the crawl's lease makes it: bad fetch or parse settings and a
        dead Solr or OpenSearch fail before anything is created or injected."""
        from nutch2.fetch.fetcher import fetcher_threads
        from nutch2.fetch.protocols import protocol_for
        from nutch2.jobs.inject import check_seed_files
        from nutch2.parse.parseutil import PageParser

        a = self.args
        if a.seeds is not None and (a.seeds.exists() or not a.continuous):  # before the crawl's table is made
            check_seed_files(a.seeds, empty_ok=a.continuous)  # (a continuous crawl waits for its seed files)
        self.conf = with_opensearch(self.conf, a.opensearch, a.solr)  # every step's conf
        super().prepare()
        fetcher_threads(self.conf, a.threads)
        protocol_for(self.conf).close()
        PageParser(self.conf).close()  # no parser plugin active, a bad parse filter
        self.indexing = bool(a.solr or a.index or a.opensearch)
        self.solr_url = solr_client(self.conf, a.solr).url if a.solr or a.index else None  # Solr must answer
        if a.opensearch:  # and OpenSearch, before round 1
            index_writers(self.conf, self.solr_url)

    def locks(self) -> Iterator[AbstractContextManager[Any]]:
        """The crawl command's lease, for the whole crawl: a second crawl of the same crawl id stops before it
        injects anything (each step takes its own leases as it runs)."""
        seeded = self.args.seeds is not None or bool(self.args.seedUrls)
        yield crawler_lease(self.conf, self.crawl_id, create=seeded, log=log.info)

    def run(self, run: Run) -> int:
        a = self.args
        seeded = a.seeds is not None or bool(a.seedUrls)
        # and the store: created here as inject would, or, without seeds, the crawl db they went into before
        with open_store(self.conf, self.crawl_id, create=seeded):
            pass
        self.limit_reached = threading.Event()
        self.cleaned = False  # the writers are deduplicated and cleaned of what the table says since their last index
        self.deduped_at: float | None = None  # time.monotonic() of the last dedup
        timer = None
        if a.timeLimit:  # at the limit the crawl stops as on Ctrl-C: requests in flight end, every step resumes
            timer = threading.Timer(a.timeLimit * 60, self.reach_time_limit)
            timer.daemon = True
            timer.start()
        try:
            self.seeds_seen = self.seed_files()
            if a.continuous and self.seeds_seen == {}:  # a service waits for its seeds (an operator swaps them)
                log.warning(f"crawl: no seed file in {a.seeds} (yet); crawling the rows there are and waiting for "
                            "seed files")
            else:
                self.inject(run)
            self.rounds(run)
        except stop.Stopped:
            if not self.limit_reached.is_set():
                raise
            run.stopped()  # what the step the limit cut short did, as after a signal
            stop.reset()  # the crawl's own stop: what follows (the writers' clean, the statistics) runs
            with open_store(self.conf, self.crawl_id, create=False) as store:
                state = Journal(store).crawl()
            if state is not None:  # the same command goes on from here
                self.record_crawl({**state, "time_limit": True})
            log.info(f"crawl: the time limit ({a.timeLimit:g} min) is reached; the same command goes on")
            self.finish(run, keep_journal=True)
            return 0
        finally:
            if timer is not None:
                timer.cancel()
        if self.limit_reached.is_set():  # the limit came as the last step ended: nothing was left to stop
            stop.reset()
        self.finish(run, keep_journal=False)
        return 0

    def rounds(self, run: Run) -> None:
        """Finish what an earlier crawl left, then the rounds: N of them, until nothing is due, or for ever
        (with crawl.pipeline, each batch's steps after its fetch beside the next round's: tools/pipeline.py)."""
        if self.conf.get_bool("crawl.pipeline") and framework(self.conf) != "spark":
            from nutch2.tools import pipeline

            pipeline.rounds(self, run)
            return
        a = self.args
        top_n = a.topN or self.conf.get_int("crawl.topN")
        r = self.finish_interrupted(run)
        while a.rounds in (None, -1) or r <= a.rounds:
            if self.stop_file_found(r):
                return
            log.info(f"crawl: round {r}{self.rounds_text()}")
            self.record_crawl({"round": r, "rounds": self.rounds_value()})
            asked = int(time.time() * 1000)  # rows that come due after this, generate may not have seen
            if self.step(run, Generate, GenerateArgs(topN=top_n, num_tasks=a.num_tasks)) != 0:
                if not a.continuous:
                    log.info("crawl: nothing left to fetch, stopping")
                    return
                self.wait_for_work(run, since=asked)
                continue
            batch = run.values["batchId"]
            generated = next(c.get("generated") for c in reversed(run.jobs()) if c.job == "generate")
            self.record_crawl({"round": r, "rounds": self.rounds_value(), "batch": batch})
            self.run_batch(run, batch, resume=False)
            if a.hostdbupdate:  # the host table of this round's rows, for the next round's generate
                self.step(run, UpdateHostDb, UpdateHostDbArgs(num_tasks=a.num_tasks))
            r += 1
            if a.continuous and generated < top_n:
                self.gather(run, asked / 1000, generated)

    def reach_time_limit(self) -> None:
        """-timeLimit's timer: the crawl stops where it is, as on a stop request."""
        log.info(f"crawl: the time limit ({self.args.timeLimit:g} min) is reached: stopping (requests in flight "
                 "end first)")
        self.limit_reached.set()
        stop.request()

    def finish(self, run: Run, keep_journal: bool) -> None:
        """The crawl's end: dedup and clean the writers, forget the crawl in the journal (unless it is to go on),
        record the table's statistics and print its counts."""
        a = self.args
        if self.indexing and not self.cleaned:  # duplicates marked in the table, then every writer cleaned of them
            self.dedup(run)  # and of GONE pages (unless the last round's did it, and nothing was indexed since)
        if not keep_journal:
            self.record_crawl(None)
        from nutch2.crawldb.tablestats import record_stats
        from nutch2.jobs.readdb import StatsJob

        with open_store(self.conf, self.crawl_id, create=False) as store:
            job = StatsJob(self.conf, per_host=True)
            job.compute(store, make_runner(self.conf, a.num_tasks))
            record_stats(store, job.stats, per_host=True)  # the searcher's dashboard shows them
        counts = " ".join(f"{k}={v}" for k, v in sorted(job.status.items()))
        run.values["status"] = dict(job.status)
        run.out(f"crawl: {self.crawl_id or 'webpage'}: {job.total} URLs: {counts}")

    def stop_file(self) -> Path:
        """`<storage.data.dir>/<crawlId>.STOP`: made by the user, it stops this crawl (only) before its next round."""
        return Path(self.conf.get_str("storage.data.dir")) / f"{self.crawl_id or 'webpage'}.STOP"

    def stop_file_found(self, r: int) -> bool:
        """A STOP file stops the crawl before round r, once (the file is removed): a continuous crawl ends there
        (exit 0, the crawl is done); any other exits 130 and the same command goes on from round r."""
        stop_file = self.stop_file()
        if not stop_file.exists():
            return False
        stop_file.unlink(missing_ok=True)
        if self.args.continuous:
            log.info(f"crawl: {stop_file} found (and removed): the continuous crawl ends before round {r}")
            return True
        log.info(f"crawl: {stop_file} found (and removed): stopping before round {r}")
        raise stop.Stopped()

    def rounds_value(self) -> int:
        """The journal's `rounds` of this crawl: N, -1 until nothing is due, CONTINUOUS for ever."""
        return CONTINUOUS if self.args.continuous else -1 if self.args.until_done else int(self.args.rounds or 1)

    def rounds_text(self) -> str:
        a = self.args
        return " (continuous crawl)" if a.continuous else " (until nothing is due)" if a.rounds == -1 else \
            f" of {a.rounds}"

    def step(self, run: Run, cls: type[Tool], args: ToolArgs) -> int:
        args.check()
        return cls(self.conf, self.crawl_id if cls.crawl else None, args).execute(run.child())

    def seed_files(self) -> dict[str, tuple[int, int]] | None:
        """What the seed file or folder holds (name -> size, mtime), to see seed files added while a continuous
        crawl waits; None when the seeds are not a local path (sent by the job API)."""
        path = self.args.seeds
        if path is None:
            return None
        try:
            files = [path] if path.is_file() else sorted(f for f in path.iterdir() if f.is_file())
            return {f.name: (st.st_size, st.st_mtime_ns) for f in files for st in (f.stat(),)}
        except OSError:
            return {}

    def gather(self, run: Run, started: float, generated: int) -> None:
        """A continuous crawl's round took every due row (fewer than topN): the next one starts no sooner than
        crawl.continuous.gather.seconds after this one began (`started`, epoch seconds), so that rows coming due
        one by one are fetched together, not each in a round of its own. Seeds, STOP and signals still count."""
        left = started + self.conf.get_float("crawl.continuous.gather.seconds") - time.time()
        if left >= 0.5:
            log.info(f"crawl: {counted(generated, 'row')} {'was' if generated == 1 else 'were'} due; the next round "
                     f"in {left:.0f} s takes the rows that come due meanwhile (crawl.continuous.gather.seconds)")
            self.wait_for_work(run, until=time.monotonic() + left)

    def wait_for_work(self, run: Run, since: int | None = None, until: float | None = None) -> None:
        """Nothing is due: wait until a row comes due (the due index), a seed file is added or changed (it is
        injected), or STOP; a stop (a signal, the time limit) raises Stopped. `since` (ms): when the generate that
        found nothing began; a row whose fetch time falls after it and is due now (another command's inject or
        updatedb made it) ends the wait too, and is looked for at every poll. `until` (time.monotonic()): a wait
        that ends then, whatever is due (gather)."""
        poll = max(0.2, self.conf.get_float("crawl.continuous.poll.seconds"))
        stop_file = self.stop_file()
        due: int | None = None
        if until is None:
            with open_store(self.conf, self.crawl_id, create=False) as store:
                now = int(time.time() * 1000)
                due = store.next_fetch_time(now)
            if due is None:
                log.info("crawl: nothing is due and no row comes due within 400 days; waiting for seed files "
                         f"(STOP or SIGTERM ends the crawl; {stop_file})")
            else:
                at = datetime.fromtimestamp(due / 1000).strftime("%Y-%m-%d %H:%M:%S")
                log.info(f"crawl: nothing is due; the next row comes due at {at} (in {max(0, due - now) / 1000:.0f} "
                         "s); waiting (STOP or SIGTERM ends the crawl)")
        checked = time.monotonic()
        unanswered = False
        while True:
            if stop.requested():
                raise stop.Stopped()
            if stop_file.exists() or (due is not None and time.time() * 1000 >= due) or \
                    (until is not None and time.monotonic() >= until):
                return  # the rounds' loop says why it goes on or ends
            if time.monotonic() - checked >= poll:
                checked = time.monotonic()
                seen = self.seed_files()
                if seen == {} and seen != self.seeds_seen:  # moved away or emptied, e.g. while they are swapped
                    log.warning(f"crawl: no seed file in {self.args.seeds} now; waiting for seed files")
                    self.seeds_seen = seen
                elif seen is not None and seen != self.seeds_seen:
                    log.info("crawl: the seeds changed; injecting them")
                    self.seeds_seen = seen
                    self.inject(run)
                    return
                if until is not None:  # a gather: the rounds' loop generates what came due
                    continue
                try:
                    with open_store(self.conf, self.crawl_id, create=False) as store:  # rows another command added
                        if unanswered:
                            log.info("crawl: the store answers again; waiting on")
                            unanswered = False
                        now = int(time.time() * 1000)
                        if since is not None and (due is None or now < due) and \
                                store.has_rows(Query(("fetch_time",), due=Due(now, after=since))):
                            log.info("crawl: rows came due meanwhile (another command's inject or updatedb); "
                                     "going on")
                            return
                        due = store.next_fetch_time(now - 1) if due is None else due
                except StoreUnavailable as e:  # nothing is in flight while the crawl waits: look again later
                    if not unanswered:
                        log.warning(f"crawl: {e}; looking again every {poll:g} s while waiting")
                        unanswered = True
            time.sleep(min(0.2, poll))

    def inject(self, run: Run) -> None:
        if self.args.seeds is None and not self.args.seedUrls:
            return  # no seeds given: the table's rows are crawled
        with seed_path(self.args) as seeds:
            try:
                self.step(run, Inject, InjectArgs(seeds=seeds))
            finally:  # lines of the request's seeds named as the client sent them
                lines = run.values.get("rejectedLines", [])
                run.values.update({"rejectedLines": [as_sent(x, seeds, True) for x in lines]} if lines and
                                  self.args.seedUrls else {})

    def record_crawl(self, value: dict | None) -> None:
        with open_store(self.conf, self.crawl_id, create=False) as store:
            lifecycle.record_crawl(store, value)

    def finish_interrupted(self, run: Run, keep_last: bool = False) -> int:
        """Finish the batches an interrupted crawl (or any job) left under way; the round to go on with.
        keep_last: the newest, unless its updatedb started, is left in `self.kept` (a pipelined crawl fetches
        it and runs its tail beside the next generate, as the interrupted crawl would have)."""
        self.kept: str | None = None
        with open_store(self.conf, self.crawl_id, create=False) as store:
            journal = Journal(store)
            state = journal.crawl()
            order = {rec.batch_id: i for i, rec in enumerate(journal.batches())}
            pending = store.mark_values(Mark.GENERATE.value) | {b for b in journal.updating() if b is not None}
            pending |= {rec.batch_id for rec in lifecycle.unfinished(store)}
            importing = set(journal.importing())
            unfinished = sorted((b for b in pending if b not in importing
                                 and ((rec := journal.batch(b)) is None or rec.state != GENERATING)),
                                key=lambda b: (order.get(b, -1), b))
            to_index = lifecycle.pending_index(store) if self.indexing else []
            reindexed = bool(journal.reindexing()) if self.indexing else False
            batch_reindexes = sorted(journal.batch_reindexing(), key=lambda b: (order.get(b, -1), b)) \
                if self.indexing and not reindexed else []  # an index of the table sends their rows too
        for batch in sorted(importing):
            log.info(f"crawl: batch {batch} is being imported, or its warcimport was interrupted; left for that "
                     "warcimport")
        if state is not None and state.get("time_limit"):
            log.info(f"crawl: an earlier crawl ended at its time limit in round {state['round']}; going on")
        elif state is not None and not unfinished:  # stopped between rounds (a STOP file): nothing to finish
            log.info(f"crawl: an earlier crawl stopped after round {state['round']}{rounds_phrase(state['rounds'])}; "
                     "going on")
        elif state is not None:
            log.info(f"crawl: an earlier crawl was interrupted in round {state['round']}"
                     f"{rounds_phrase(state['rounds'])}; finishing it")
        if keep_last and unfinished and (rec := journal.batch(unfinished[-1])) is not None and \
                not rec.reached(UPDATING):
            self.kept = unfinished.pop()
        for batch in unfinished:
            log.info(f"crawl: finishing batch {batch}")
            self.run_batch(run, batch, resume=True)
        for batch in to_index:
            if batch not in unfinished:
                log.info(f"crawl: batch {batch} was updated but not indexed; indexing it")
                self.step(run, Index, IndexArgs(batch=batch, solr=self.solr_url, opensearch=self.args.opensearch,
                                                num_tasks=self.tasks()))
        for batch in batch_reindexes:  # its rows lost their marks; the crawl's rounds index new batches only
            log.info(f"crawl: an `index {batch} -reindex` did not finish; finishing it")
            self.step(run, Index, IndexArgs(batch=batch, reindex=True, solr=self.solr_url,
                                            opensearch=self.args.opensearch, num_tasks=self.tasks()))
        if reindexed:  # its rows lost their marks and wait for an index of the table: rounds index batches only
            log.info("crawl: an `index -reindex` did not finish; sending what its writers lack (index -all)")
            self.step(run, Index, IndexArgs(all=True, solr=self.solr_url, opensearch=self.args.opensearch,
                                            num_tasks=self.tasks()))
        if state is None:
            return 1
        return state["round"] + 1 if "batch" in state else state["round"]

    def run_batch(self, run: Run, batch: str, resume: bool) -> None:
        """The steps of one batch that did not run to their end yet: fetch, parse, updatedb, then index."""
        a = self.args
        with open_store(self.conf, self.crawl_id, create=False) as store:
            rec = Journal(store).batch(batch)
        state = rec.state if rec is not None else GENERATED
        if not reached(state, FETCHED):
            self.step(run, Fetch, FetchArgs(batch=batch, threads=a.threads, resume=resume, num_tasks=a.num_tasks))
            state = self._state(batch)
        if not reached(state, PARSED):
            self.parse(run, batch, resume)
        if not reached(state, UPDATED):
            self.update(run, batch)
        if self.indexing and not reached(state, INDEXED):
            self.index(run, batch)
            self.dedup_due(run)

    def dedup_due(self, run: Run) -> None:
        """After a round's index: dedup and clean each round, as Nutch's bin/crawl (a crawl that never ends deletes
        too); a continuous crawl's rounds of a few rows each would read the table every round: there at most every
        crawl.continuous.dedup.minutes."""
        every = self.conf.get_float("crawl.continuous.dedup.minutes") * 60
        if not self.args.continuous or self.deduped_at is None or time.monotonic() - self.deduped_at >= every:
            self.dedup(run)

    def dedup(self, run: Run) -> None:
        """dedup of the table, then clean of the crawl's writers: duplicates, GONE pages, redirects and noindex
        pages out of the index."""
        a = self.args
        self.step(run, Dedup, DedupArgs(solr=self.solr_url, opensearch=a.opensearch, num_tasks=a.num_tasks))
        self.cleaned, self.deduped_at = True, time.monotonic()

    def parse(self, run: Run, batch: str, resume: bool = False) -> None:
        """parse of the batch; an error if some of its pages are still unparsed (their parser did not answer)."""
        self.step(run, Parse, ParseArgs(batch=batch, resume=resume, num_tasks=self.args.num_tasks))
        if not reached(self._state(batch), PARSED):
            raise NutchError(f"crawl: pages of batch {batch} could not be parsed now (their parser did not "
                             "answer); run the same command again once it is back")

    def index(self, run: Run, batch: str) -> None:
        """index of the batch into the crawl's writers."""
        a = self.args
        self.cleaned = False
        self.step(run, Index, IndexArgs(batch=batch, solr=self.solr_url, opensearch=a.opensearch,
                                        num_tasks=a.num_tasks))

    def update(self, run: Run, batch: str, defer_in_flight: bool = False) -> None:
        """updatedb of the batch (defer_in_flight: its first step only, tools/pipeline.py)."""
        args = UpdateArgs(batch=batch, num_tasks=self.args.num_tasks)
        args.check()
        tool = UpdateDb(self.conf, self.crawl_id, args)
        tool.defer_in_flight = defer_in_flight
        tool.execute(run.child())

    def _state(self, batch: str) -> str:
        with open_store(self.conf, self.crawl_id, create=False) as store:
            rec = Journal(store).batch(batch)
        return rec.state if rec is not None else GENERATED

    def resume_flags(self) -> list[str]:
        return []
