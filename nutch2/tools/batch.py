"""The batch steps: generate, fetch, parse, updatedb (index is in tools/index.py)."""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import ClassVar, TypeVar

from nutch2.config import Configuration
from nutch2.crawldb import lifecycle
from nutch2.crawldb.journal import FETCHED, PARSED, has_rows
from nutch2.crawldb.lifecycle import BatchStep
from nutch2.errors import NutchError
from nutch2.logs import counted
from nutch2.mapred.frameworks import make_runner
from nutch2.mapred.job import Counters
from nutch2.stores.base import DataStore
from nutch2.stores.lease import held_leases, holder_text
from nutch2.tools.args import BatchArgs, ToolArgs, metrics_file_opt, metrics_port_opt, opt, tasks_opt, threads_opt
from nutch2.tools.base import Run, Tool, tool

log = logging.getLogger(__name__)

B = TypeVar("B", bound=BatchArgs)


class BatchTool(Tool[B]):
    """A step of a batch's life (crawldb/lifecycle.py): checked, run on the batch's rows, recorded."""

    step: ClassVar[BatchStep]
    batch_lock = True

    def run(self, run: Run) -> int:
        batch = self.args.batch_id
        counters = run.job_counters(self.name)
        with self.store() as store:
            if self.has_work(store, batch, counters):
                lifecycle.check(self.step, store, batch, resume=getattr(self.args, "resume", False),
                                force=getattr(self.args, "force", False))
                self.work(store, batch, counters)
                self.done(store, batch, counters)
            elif batch is not None:
                lifecycle.record_empty(self.step, store, batch, counters)
        run.summary(counters)
        return 0

    def has_work(self, store: DataStore, batch: str | None, counters: Counters) -> bool:
        return has_rows(store, self.step.mark, batch, self.name, self.step.producer, counters)

    def work(self, store: DataStore, batch: str | None, counters: Counters) -> None:
        raise NotImplementedError

    def done(self, store: DataStore, batch: str | None, counters: Counters) -> None:
        lifecycle.record(self.step, store, batch, counters)


# ---------------------------------------------------------------- generate
@dataclass
class GenerateArgs(ToolArgs):
    topN: int | None = opt("-topN", "at most N URLs in the batch", metavar="N", min=1)
    batchId: str | None = opt("-batchId", "use this batch id instead of a new one", metavar="ID", batch_id=True)
    noFilter: bool = opt("-noFilter", "do not apply URL filters", default=False)
    noNorm: bool = opt("-noNorm", "do not normalize URLs", default=False)
    adddays: int = opt("-adddays", "generate as if D days later", default=0, metavar="D", min=0, max=36500)
    num_tasks: int | None = tasks_opt()


@tool
class Generate(Tool[GenerateArgs]):
    name = "generate"
    plugin_points = ("url-filter", "url-normalizer", "scoring-filter", "fetch-schedule")
    help = "select due URLs into a new batch and print its id"
    Args = GenerateArgs
    crawl_lock = True

    def run(self, run: Run) -> int:
        a = self.args
        batch = generate(self.conf, self.crawl_id, run, a.topN, a.batchId, not a.noFilter, not a.noNorm,
                         a.adddays, a.num_tasks)
        if batch is None:
            return 1
        run.values["batchId"] = batch
        run.out(batch)
        return 0


def generate(conf: Configuration, crawl_id: str | None, run: Run, top_n: int | None, batch_id: str | None = None,
             filter: bool = True, normalize: bool = True, add_days: int = 0,
             num_tasks: int | None = None) -> str | None:
    """Run the generator (the caller holds the crawl lock); the batch id, or None when nothing was due (the log
    says why)."""
    from nutch2.jobs.generate import GeneratorJob, run_generate
    from nutch2.stores import open_store

    job = GeneratorJob(conf, batch_id, top_n, filter if filter is False else None,
                       normalize if normalize is False else None, add_days)
    counters = run.job_counters("generate")
    with open_store(conf, crawl_id, create=False) as store:
        run_generate(job, store, make_runner(conf, num_tasks), counters)
        pending = [r.batch_id for r in lifecycle.unfinished(store)]
        crawl = next((holder_text(rec) for _, rec in held_leases(store, "crawler")  # another command's crawl
                      if rec.get("pid") != os.getpid()), None)
        due = store.next_fetch_time(int(time.time() * 1000)) if counters.get("generated") == 0 else None
    run.summary(counters)
    if counters.get("generated") == 0:
        log.info(f"generate: 0 URLs selected for fetching: {why_nothing(counters, pending, crawl, due)}")
        return None
    log.info(f"generate: batch id {job.batch_id}: {counted(counters.get('generated'), 'URL')}")
    return job.batch_id


def why_nothing(c: Counters, pending: list[str], crawl: str | None = None, due: int | None = None) -> str:
    """Why generate selected nothing, from its counters and the batches still under way (`crawl`: the crawl
    command running on this crawl id, which goes on with them; `due`: when the next row comes due, ms)."""
    reasons = []
    if n := c.get("already_generated"):
        where = f" (batch {', '.join(pending[:3])}{' ...' if len(pending) > 3 else ''})" if pending else ""
        todo = f"the crawl running, {crawl}, works on it" if crawl else "fetch, parse and updatedb it first"
        reasons.append(f"{n} {'is' if n == 1 else 'are'} in a batch not yet updated{where}: {todo}")
    for name, one, many, text in (
            ("not_due", "is", "are", "not due yet (db.fetch.interval.default; -adddays D looks ahead)"),
            ("filtered", "is", "are", "filtered out (conf/regex-urlfilter.txt; -noFilter)"),
            ("too_distant", "is", "are", "beyond generate.max.distance"),
            ("low_score", "scores", "score", "below generate.min.score")):
        if n := c.get(name):
            reasons.append(f"{n} {one if n == 1 else many} {text}")
    if reasons:
        return "; ".join(reasons)
    if due is not None and due > time.time() * 1000:  # the due index knows (generate counted no row not due)
        at = datetime.fromtimestamp(due / 1000).strftime("%Y-%m-%d %H:%M:%S")
        return f"no row is due before {at} (db.fetch.interval.default; -adddays D looks ahead)"
    return ("no row is due (db.fetch.interval.default; -adddays D looks ahead), or the table has no rows (inject "
            "seeds first)")


# ---------------------------------------------------------------- fetch
@dataclass
class FetchArgs(BatchArgs):
    threads: int | None = threads_opt()
    resume: bool = opt("-resume", "skip URLs already fetched in this batch (after a stop or a kill)", default=False)
    force: bool = opt("-force", "fetch every URL again, even in a batch already fetched", default=False)
    num_tasks: int | None = tasks_opt()
    metricsPort: int | None = metrics_port_opt()
    metricsFile: Path | None = metrics_file_opt()
    groups = (("resume", "force"),)


@tool
class Fetch(BatchTool[FetchArgs]):
    name = "fetch"
    plugin_points = ("protocol", "url-filter", "url-normalizer", "parser", "parse-filter")
    help = "fetch the URLs of a batch"
    Args = FetchArgs
    step = lifecycle.FETCH

    def work(self, store: DataStore, batch: str | None, counters: Counters) -> None:
        from nutch2.jobs.fetch import FetcherJob

        a = self.args
        make_runner(self.conf, a.num_tasks).run(FetcherJob(self.conf, batch, a.threads, a.resume), store, counters)
        if n := counters.get("denied_address"):  # a counter alone did not say why a crawl of one's own hosts failed
            log.warning(f"fetch: warning: {n} URL{'s' if n > 1 else ''} refused by the address guard (hosts of this "
                        "machine or its network, which are not seeds); if they are yours, list them in "
                        "fetcher.address.allow (e.g. -D fetcher.address.allow=127.0.1.0/24); a seed injected "
                        "again (or the same crawl run again) is then fetched at once")

    def done(self, store: DataStore, batch: str | None, counters: Counters) -> None:
        parsed = (self.conf.get_bool("fetcher.parse") and not counters.get("not_modified_unparsed")
                  and not counters.get("retry_later"))
        lifecycle.record(self.step, store, batch, counters, state=PARSED if parsed else FETCHED)
        if parsed:
            lifecycle.record(lifecycle.PARSE, store, batch, counters)

    def resume_flags(self) -> list[str]:
        return [] if self.args.resume else ["-resume"]


# ---------------------------------------------------------------- parse
@dataclass
class ParseArgs(BatchArgs):
    reparse: bool = opt("-reparse", "parse every fetched row of the table again", default=False)
    resume: bool = opt("-resume", "skip pages already parsed", default=False)
    force: bool = opt("-force", "with -resume: parse again pages already parsed", default=False)
    num_tasks: int | None = tasks_opt()
    selectors = ("reparse",)

    @property
    def batch_id(self) -> str | None:
        return None if self.reparse else self.batch


@tool
class Parse(BatchTool[ParseArgs]):
    name = "parse"
    plugin_points = ("parser", "parse-filter", "url-filter", "url-normalizer")
    help = "parse the fetched pages of a batch"
    Args = ParseArgs
    step = lifecycle.PARSE

    def has_work(self, store: DataStore, batch: str | None, counters: Counters) -> bool:
        return self.args.reparse or super().has_work(store, batch, counters)

    def work(self, store: DataStore, batch: str | None, counters: Counters) -> None:
        from nutch2.jobs.parse import ParserJob

        a = self.args
        make_runner(self.conf, a.num_tasks).run(ParserJob(self.conf, batch, a.resume, a.force, a.reparse), store,
                                                counters)
        failed = counters.get("failed_parse_filter") + counters.get("failed_parse_filter_timeout")
        if failed and not counters.get("parsed"):  # a plugin's bug failed every page: the parse did nothing
            raise NutchError(f"no page was parsed: a parse filter failed on all {failed} pages (the lines above "
                             "name it); fix the plugin, or take it out of plugin.includes (plugin.classes), and "
                             "run this again")

    def done(self, store: DataStore, batch: str | None, counters: Counters) -> None:
        if self.args.reparse:
            return
        if counters.get("retry_later"):  # a parser server was down: those pages must be parsed before updatedb
            n = counters.get("retry_later")
            log.info(f"parse: {counted(n, 'page')} could not be parsed now ({'its' if n == 1 else 'their'} parser "
                     f"did not answer); {'it stays' if n == 1 else 'they stay'} in the batch: run `nutch2 parse "
                     f"{batch or '-all'} -resume` once it is back")
            return
        super().done(store, batch, counters)

    def resume_flags(self) -> list[str]:
        return [] if self.args.resume or self.args.reparse else ["-resume"]


# ---------------------------------------------------------------- updatedb
@dataclass
class UpdateArgs(BatchArgs):
    force: bool = opt("-force", "update a batch whose fetched pages were not parsed (they stay parseable with "
                      "parse -reparse)", default=False)
    num_tasks: int | None = tasks_opt()


@tool
class UpdateDb(BatchTool[UpdateArgs]):
    name = "updatedb"
    plugin_points = ("scoring-filter", "fetch-schedule")
    help = "update the table with a batch's fetch and parse results"
    Args = UpdateArgs
    step = lifecycle.UPDATE
    crawl_lock = True
    defer_in_flight = False  # a pipelined crawl's first run: link targets in a batch being fetched wait (update())

    def has_work(self, store: DataStore, batch: str | None, counters: Counters) -> bool:
        return True  # update() makes that check itself (it also finishes an update killed after its last row)

    def work(self, store: DataStore, batch: str | None, counters: Counters) -> None:
        from nutch2.jobs.updatedb import update

        update(self.conf, store, batch, self.tasks(), counters, self.defer_in_flight)

    def done(self, store: DataStore, batch: str | None, counters: Counters) -> None:
        """update() recorded the batches it updated."""

