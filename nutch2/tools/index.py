"""Tools of the index writers: index (a batch step), clean and dedup; -solr and -opensearch name the destinations."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from nutch2.config import Configuration
from nutch2.crawldb import lifecycle
from nutch2.crawldb.journal import has_rows
from nutch2.errors import NutchError
from nutch2.mapred.frameworks import make_runner
from nutch2.mapred.job import Counters
from nutch2.plugin import Plugins
from nutch2.stores.base import DataStore
from nutch2.tools.args import BatchArgs, ToolArgs, opt, tasks_opt
from nutch2.tools.base import Run, Tool, tool
from nutch2.tools.batch import BatchTool

if TYPE_CHECKING:
    pass

log = logging.getLogger(__name__)


def solr_opt() -> Any:
    return opt("-solr", "Solr core URL (solr.server.url)", metavar="URL", api="no")


def opensearch_opt() -> Any:
    return opt("-opensearch", "OpenSearch index URL, e.g. http://127.0.0.1:9200/nutch (opensearch.url): index there "
               "(indexer-opensearch-1x), and into Solr only with -solr too", metavar="URL", api="no")


def with_opensearch(conf: Configuration, url: str | None, solr: str | None) -> Configuration:
    """The configuration of a command given -opensearch URL: opensearch.url set, indexer-opensearch-1x active, and
    indexer-solr active only with -solr too (a copy: the given one is left alone)."""
    if not url:
        return conf
    from nutch2.plugin import Plugins

    out = conf.copy()
    out.set("opensearch.url", url)
    active = Plugins(out).ids
    if "indexer-opensearch-1x" not in active:
        includes = out.get_str("plugin.includes").strip()
        out.set("plugin.includes", f"{includes}|indexer-opensearch-1x" if includes else "indexer-opensearch-1x")
    if not solr and "indexer-solr" in active:
        excludes = out.get_str("plugin.excludes").strip()
        out.set("plugin.excludes", f"{excludes}|indexer-solr" if excludes else "indexer-solr")
    return out


def index_writers(conf: Configuration, solr: str | None):
    """The active index writers (index-writers.xml), -solr setting indexer-solr's url; each is opened and checked
    once here (a dead Solr fails here, before any work)."""
    from nutch2.index.writers import IndexWriters

    writers = IndexWriters.from_conf(conf, {"indexer-solr": {"url": solr}} if solr else None)
    writers.check(conf)
    return writers


def solr_client(conf: Configuration, url: str | None):
    """A client of the configured core that answered a ping (a dead Solr fails here, before any work)."""
    from nutch2.index.solr import SolrClient, solr_url

    client = SolrClient(solr_url(conf, url), conf.get_float("solr.timeout"), conf.get_int("solr.retries"),
                        conf.get_float("solr.backoff.seconds"))
    client.ping()
    return client


# ---------------------------------------------------------------- index
@dataclass
class IndexArgs(BatchArgs):
    batch: str | None = opt(None, "the batch id (rows updated by updatedb)", metavar="<batchId>", batch_id=True)
    all: bool = opt("-all", "every row updated since it was last indexed", default=False)
    reindex: bool = opt("-reindex", "every indexable row (of the batch, or of the table), indexed before or not",
                        default=False)
    solr: str | None = solr_opt()
    opensearch: str | None = opensearch_opt()
    num_tasks: int | None = tasks_opt()

    def check(self) -> None:
        if not (self.reindex and self.batch is None and not self.all):  # -reindex alone: the whole table
            super().check()


@tool
class Index(BatchTool[IndexArgs]):
    name = "index"
    plugin_points = ("indexing-filter", "index-writer", "scoring-filter")
    help = "send parsed, updated pages of a batch to the index (Solr, OpenSearch; index-writers.xml)"
    Args = IndexArgs
    step = lifecycle.INDEX

    def prepare(self) -> None:
        self.conf = with_opensearch(self.conf, self.args.opensearch, self.args.solr)
        super().prepare()

    def run(self, run: Run) -> int:
        self.writers = index_writers(self.conf, self.args.solr)
        return super().run(run)

    def has_work(self, store: DataStore, batch: str | None, counters: Counters) -> bool:
        return self.args.reindex or has_rows(store, self.step.mark, batch, self.name, self.step.producer,
                                             counters)

    def work(self, store: DataStore, batch: str | None, counters: Counters) -> None:
        from nutch2.jobs.index import run_index

        run_index(self.conf, store, batch, self.writers, self.args.reindex,
                  make_runner(self.conf, self.tasks()), counters, self.crawl_id)
        failed = counters.get("failed_indexing_filter")
        if failed and not counters.get("indexed"):  # a plugin's bug kept every page out: the index did nothing
            raise NutchError(f"no document was sent: an indexing filter failed on all {failed} pages (the lines "
                             "above name it); fix the plugin, or take it out of plugin.includes (plugin.classes), and "
                             "run this again")


# ---------------------------------------------------------------- clean, dedup
@dataclass
class WriterArgs(ToolArgs):
    solr: str | None = solr_opt()
    opensearch: str | None = opensearch_opt()


def clean(tool: Tool[Any], run: Run, writers: Any) -> None:
    """Delete the rows that left the index (GONE, redirects, noindex, duplicates) through `writers`."""
    from nutch2.jobs.index import CleaningJob

    counters = run.job_counters("clean")
    counters.incr("deleted", 0)
    with tool.store() as store:
        make_runner(tool.conf, tool.tasks()).run(CleaningJob(tool.conf, writers, tool.crawl_id), store, counters)
    run.summary(counters)


@tool
class Clean(Tool[WriterArgs]):
    name = "clean"
    plugin_points = ("index-writer",)
    help = "delete GONE pages, redirects, noindex pages and duplicates from every index writer"
    Args = WriterArgs

    def prepare(self) -> None:
        self.conf = with_opensearch(self.conf, self.args.opensearch, self.args.solr)
        super().prepare()

    def run(self, run: Run) -> int:
        clean(self, run, index_writers(self.conf, self.args.solr))
        return 0


@dataclass
class DedupArgs(WriterArgs):
    num_tasks: int | None = tasks_opt()


@tool
class Dedup(Tool[DedupArgs]):
    name = "dedup"
    help = ("mark all but the best row of each signature DUPLICATE (Nutch's DeduplicationJob), and of each group "
            "of near-duplicates with db.signature.class=simhash; with -solr or -opensearch, then delete the "
            "duplicates from every index writer, as clean does")
    Args = DedupArgs
    crawl_lock = True  # rewrites rows' statuses: not while generate or updatedb run

    def prepare(self) -> None:
        from nutch2.jobs.dedup import DeduplicationJob

        self.conf = with_opensearch(self.conf, self.args.opensearch, self.args.solr)
        super().prepare()
        self.dedup_job = DeduplicationJob(self.conf)  # a bad dedup.* or db.signature.class value fails here
        if self.args.solr or self.args.opensearch:
            Plugins(self.conf).check(("index-writer",))

    def run(self, run: Run) -> int:
        writers = index_writers(self.conf, self.args.solr) if self.args.solr or self.args.opensearch else None
        counters = run.job_counters("dedup")
        counters.incr("duplicates", 0)
        with self.store() as store:
            make_runner(self.conf, self.tasks()).run(self.dedup_job, store, counters)
        run.summary(counters)
        if writers is not None:
            clean(self, run, writers)
        elif counters.get("duplicates"):
            log.info("dedup: nutch2 clean deletes the duplicates from the index writers")
        return 0
