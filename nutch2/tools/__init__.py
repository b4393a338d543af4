"""The tools: one class per `nutch2` command (Nutch's NutchTool), shared by the CLI and the job API.

    batch.py     generate, fetch, parse, updatedb      index.py     index, clean, dedup
    seeds.py     inject, sitemap                       table.py     readdb, warc, warcimport
    crawl.py     crawl (a sequence of the above)       checkers.py  parsechecker, indexchecker, filterchecker,
                                                                    normalizerchecker, plugins
    base.py      Tool, Run, the registry               args.py      typed arguments -> CLI flags, JSON schema
    metrics.py   Prometheus metrics of a run's jobs    search.py    search
    hostdb.py    updatehostdb, readhostdb

What each batch step requires, refuses and records is the core's (nutch2/crawldb/lifecycle.py).

The `server` command is the searcher's (nutch2/searcher/command.py), which the CLI adds.
"""

from __future__ import annotations

from nutch2.tools import batch, checkers, crawl, hostdb, index, search, seeds, table  # noqa: F401 - they register
from nutch2.tools.base import TOOLS, Run, Tool

ORDER = ("inject", "sitemap", "generate", "fetch", "parse", "updatedb", "index", "clean", "dedup", "crawl",
         "readdb", "warc", "warcimport", "search", "server", "parsechecker", "indexchecker", "filterchecker",
         "normalizerchecker", "plugins",
         "updatehostdb", "readhostdb")


def tools() -> list[type[Tool]]:
    """Every tool, in the order `nutch2 --help` lists them."""
    return sorted(TOOLS.values(), key=lambda t: ORDER.index(t.name) if t.name in ORDER else len(ORDER))


def job_types() -> list[str]:
    """The job API's types: every tool that is a job."""
    return [t.name for t in tools() if t.job]


__all__ = ["TOOLS", "Run", "Tool", "tools", "job_types"]
