"""The crawl tool: inject, then rounds of generate -> fetch -> parse -> updatedb (-> index), as Nutch's crawl script.

Killed or stopped and run again, it first finishes what was under way — every batch the journal shows short of
updated (or, with -solr or -opensearch, of indexed) gets the steps it lacks, with -resume — then does the rounds the
interrupted crawl had left (the journal keeps the round), then ends as an uninterrupted run would.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from nutch2.crawldb import lifecycle
from nutch2.crawldb.journal import FETCHED, GENERATED, GENERATING, INDEXED, PARSED, UPDATED, Journal, reached
from nutch2.errors import NutchError
from nutch2.mapred import stop
from nutch2.mapred.frameworks import make_runner
from nutch2.marks import Mark
from nutch2.plugin import POINTS
from nutch2.stores import open_store
from nutch2.tools.args import ToolArgs, opt, tasks_opt, threads_opt
from nutch2.tools.base import Run, Tool, tool
from nutch2.tools.batch import Fetch, FetchArgs, Generate, GenerateArgs, Parse, ParseArgs, UpdateArgs, UpdateDb
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
from nutch2.tools.seeds import Inject, InjectArgs, SeedsArgs, seed_path

log = logging.getLogger(__name__)


@dataclass
class CrawlArgs(SeedsArgs):
    rounds: int | None = opt("-rounds", "generate/fetch/parse/updatedb rounds", metavar="N", required=True, min=1,
                             max=100_000)
    topN: int | None = opt("-topN", "URLs per round (crawl.topN)", metavar="N", min=1)
    threads: int | None = threads_opt()
    num_tasks: int | None = tasks_opt()
    solr: str | None = solr_opt()
    opensearch: str | None = opensearch_opt()
    index: bool = opt("-index", "index each round into the server's Solr (the job API's -solr)", default=False,
                      cli=False)


@tool
class Crawl(Tool[CrawlArgs]):
    name = "crawl"
    plugin_points = tuple(POINTS)
    help = "inject, then generate → fetch → parse → updatedb (→ index) for N rounds"
    Args = CrawlArgs

    def prepare(self) -> None:
        self.conf = with_opensearch(self.conf, self.args.opensearch, self.args.solr)  # every step's conf
        super().prepare()

    def run(self, run: Run) -> int:
        from nutch2.fetch.fetcher import fetcher_threads
        from nutch2.fetch.protocols import protocol_for

        a = self.args
        fetcher_threads(self.conf, a.threads)  # bad fetch settings fail before anything is injected
        protocol_for(self.conf).close()
        self.indexing = bool(a.solr or a.index or a.opensearch)
        self.solr_url = solr_client(self.conf, a.solr).url if a.solr or a.index else None  # Solr must answer
        if a.opensearch:  # and OpenSearch, before round 1
            index_writers(self.conf, self.solr_url)
        with open_store(self.conf, self.crawl_id):  # and the store (created here, as inject would)
            pass
        self.inject(run)
        stop_file = self.stop_file()
        top_n = a.topN or self.conf.get_int("crawl.topN")
        first = self.finish_interrupted(run)
        for r in range(first, (a.rounds or 1) + 1):
            if stop_file.exists():  # obeyed once: the same command goes on from this round
                stop_file.unlink(missing_ok=True)
                log.info(f"crawl: {stop_file} found (and removed): stopping before round {r}")
                raise stop.Stopped()
            log.info(f"crawl: round {r} of {a.rounds}")
            self.record_crawl({"round": r, "rounds": a.rounds})
            if self.step(run, Generate, GenerateArgs(topN=top_n, num_tasks=a.num_tasks)) != 0:
                log.info("crawl: nothing left to fetch, stopping")
                break
            batch = run.values["batchId"]
            self.record_crawl({"round": r, "rounds": a.rounds, "batch": batch})
            self.run_batch(run, batch, resume=False)
        if self.indexing:  # duplicates marked in the table, then every writer cleaned of them and of GONE pages
            self.step(run, Dedup, DedupArgs(solr=self.solr_url, opensearch=a.opensearch, num_tasks=a.num_tasks))
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
        return 0

    def stop_file(self) -> Path:
        """`<storage.data.dir>/<crawlId>.STOP`: made by the user, it stops this crawl (only) before its next round."""
        return Path(self.conf.get_str("storage.data.dir")) / f"{self.crawl_id or 'webpage'}.STOP"

    def step(self, run: Run, cls: type[Tool], args: ToolArgs) -> int:
        args.check()
        return cls(self.conf, self.crawl_id if cls.crawl else None, args).execute(run.child())

    def inject(self, run: Run) -> None:
        with seed_path(self.args) as seeds:
            self.step(run, Inject, InjectArgs(seeds=seeds))

    def record_crawl(self, value: dict | None) -> None:
        with open_store(self.conf, self.crawl_id, create=False) as store:
            lifecycle.record_crawl(store, value)

    def finish_interrupted(self, run: Run) -> int:
        """Finish the batches an interrupted crawl (or any job) left under way; the round to go on with."""
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
        for batch in sorted(importing):
            log.info(f"crawl: batch {batch} is being imported, or its warcimport was interrupted; left for that "
                     "warcimport")
        if state is not None:
            log.info(f"crawl: an earlier crawl was interrupted in round {state['round']} of {state['rounds']}; "
                     "finishing it")
        for batch in unfinished:
            log.info(f"crawl: finishing batch {batch}")
            self.run_batch(run, batch, resume=True)
        for batch in to_index:
            if batch not in unfinished:
                log.info(f"crawl: batch {batch} was updated but not indexed; indexing it")
                self.step(run, Index, IndexArgs(batch=batch, solr=self.solr_url, opensearch=self.args.opensearch,
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
            self.step(run, Parse, ParseArgs(batch=batch, resume=resume, num_tasks=a.num_tasks))
            if not reached(self._state(batch), PARSED):
                raise NutchError(f"crawl: pages of batch {batch} could not be parsed now (their parser did not "
                                 "answer); run the same command again once it is back")
        if not reached(state, UPDATED):
            self.step(run, UpdateDb, UpdateArgs(batch=batch, num_tasks=a.num_tasks))
        if self.indexing and not reached(state, INDEXED):
            self.step(run, Index, IndexArgs(batch=batch, solr=self.solr_url, opensearch=a.opensearch,
                                            num_tasks=a.num_tasks))

    def _state(self, batch: str) -> str:
        with open_store(self.conf, self.crawl_id, create=False) as store:
            rec = Journal(store).batch(batch)
        return rec.state if rec is not None else GENERATED

    def resume_flags(self) -> list[str]:
        return []
