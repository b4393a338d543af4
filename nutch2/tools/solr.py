"""Tools that talk to Solr: index (a batch step), clean, dedup and search; index also to OpenSearch (-opensearch)."""

from __future__ import annotations

import html
import logging
import re
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from nutch2.config import Configuration
from nutch2.crawldb import lifecycle
from nutch2.crawldb.journal import has_rows
from nutch2.mapred.frameworks import make_runner
from nutch2.mapred.job import Counters
from nutch2.stores.base import DataStore
from nutch2.tools.args import BatchArgs, ToolArgs, opt, tasks_opt
from nutch2.tools.base import Run, Tool, tool
from nutch2.tools.batch import BatchTool

if TYPE_CHECKING:
    from nutch2.index.solr import SolrClient

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

    client = SolrClient(solr_url(conf, url), conf.get_float("solr.timeout"))
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


# ---------------------------------------------------------------- clean, dedup
@dataclass
class SolrArgs(ToolArgs):
    solr: str | None = solr_opt()


@tool
class Clean(Tool[SolrArgs]):
    name = "clean"
    plugin_points = ("index-writer",)
    help = "delete GONE pages, redirects and noindex pages from the index"
    Args = SolrArgs

    def run(self, run: Run) -> int:
        from nutch2.jobs.index import CleaningJob

        writers = index_writers(self.conf, self.args.solr)
        counters = run.job_counters("clean")
        counters.incr("deleted", 0)
        with self.store() as store:
            make_runner(self.conf).run(CleaningJob(self.conf, writers, self.crawl_id), store, counters)
        run.summary(counters)
        return 0


@tool
class Dedup(Tool[SolrArgs]):
    name = "dedup"
    help = "remove the crawl's duplicate documents (same digest) from Solr, keeping the best"
    Args = SolrArgs

    def run(self, run: Run) -> int:
        from nutch2.jobs.index import dedup

        counters = run.job_counters("dedup")
        solr = solr_client(self.conf, self.args.solr)
        counters.incr("deleted", dedup(solr, self.crawl_id))
        run.summary(counters)
        return 0


# ---------------------------------------------------------------- search
@dataclass
class SearchArgs(ToolArgs):
    query: str = opt(None, "a query, e.g. 'nutch crawler' or title:nutch", required=True)
    rows: int = opt("-rows", "results to show (10)", default=10, metavar="N", min=1, max=1000)
    solr: str | None = solr_opt()


@tool
class Search(Tool[SearchArgs]):
    name = "search"
    help = "search the crawl's documents in Solr: title, URL and a highlighted snippet per hit"
    Args = SearchArgs
    job = False

    def run(self, run: Run) -> int:
        from nutch2.index.solr import crawl_filter

        a = self.args
        solr = solr_client(self.conf, a.solr)
        res = solr.search(a.query, **{"rows": a.rows, "fq": crawl_filter(self.crawl_id), "fl": "id,url,title,boost",
                                      "hl": "true",
                                      "hl.fl": "content,title", "hl.snippets": 1, "hl.fragsize": 160})
        bold = ("\033[1m", "\033[0m") if sys.stdout.isatty() else ("*", "*")
        run.out(f"{res.hits} {'hit' if res.hits == 1 else 'hits'} for {a.query!r}")
        if res.hits == 0:
            self.say_where(solr)
        for i, doc in enumerate(res.docs, 1):
            hl = res.highlighting.get(doc["id"], {})
            snippet = (hl.get("content") or hl.get("title") or [""])[0]
            snippet = html.unescape(re.sub(r"</?em>", lambda m: bold[1] if m.group(0) == "</em>" else bold[0],
                                           " ".join(snippet.split())))
            run.out(f"{i:>3}. {doc.get('title') or '(no title)'}\n     {doc['url']}")
            if snippet:
                run.out(f"     {snippet}")
        return 0

    def say_where(self, solr: SolrClient) -> None:
        """No hit: which crawls the core holds, so that a search of the wrong crawl says so."""
        facets = solr.search("*:*", **{"rows": 0, "facet": "true", "facet.field": "crawlId", "facet.mincount": 1,
                                       "facet.limit": 6})
        counts = facets.facets.get("facet_fields", {}).get("crawlId", [])
        held = {counts[i]: counts[i + 1] for i in range(0, len(counts) - 1, 2)}
        crawl = self.crawl_id or "webpage"
        if not held:
            log.warning("search: the core holds no document of any crawl yet (index a batch: nutch2 index B -solr URL)")
        elif crawl not in held:
            listed = ", ".join(f"{c} ({n} document{'' if n == 1 else 's'})" for c, n in list(held.items())[:5])
            if len(held) > 5:
                listed += ", ..."
            log.warning(f"search: the core holds no document of crawl {crawl}; it holds {listed}: give -crawlId")
