"""The search tool: the crawl's documents in Solr, a hit a few lines (title, URL, highlighted snippet)."""

from __future__ import annotations

import html
import logging
import re
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING

from nutch2.tools.args import ToolArgs, opt
from nutch2.tools.base import Run, Tool, tool
from nutch2.tools.index import solr_client, solr_opt

if TYPE_CHECKING:
    from nutch2.index.solr import SolrClient

log = logging.getLogger(__name__)


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
