"""The search tool: the crawl's documents in Solr or OpenSearch, a hit a few lines (title, URL, highlighted snippet)."""

from __future__ import annotations

import logging
import sys
from dataclasses import dataclass
from typing import Any

from nutch2.index.query import MAIN_CONTENT, snippet_of, snippet_runs
from nutch2.tools.args import ArgError, ToolArgs, opt
from nutch2.tools.base import Run, Tool, tool
from nutch2.tools.index import solr_client, solr_opt

log = logging.getLogger(__name__)

SHOWN_CRAWLS = 5  # crawls named when the crawl searched has no document


@dataclass
class SearchArgs(ToolArgs):
    query: str = opt(None, "a query, e.g. 'nutch crawler' or title:nutch", required=True)
    rows: int = opt("-rows", "results to show (10)", default=10, metavar="N", min=1, max=1000)
    solr: str | None = solr_opt()
    opensearch: str | None = opt("-opensearch", "search this OpenSearch index instead of Solr, e.g. "
                                 "http://127.0.0.1:9200/nutch", metavar="URL", api="no")

    def check(self) -> None:
        super().check()
        if self.solr and self.opensearch:
            raise ArgError("give -solr URL or -opensearch URL, not both: search asks one index")


@dataclass
class Found:
    """One hit as the tool prints it; the snippet as the index gave it (<em> around the matches)."""

    title: str
    url: str
    snippet: str


@tool
class Search(Tool[SearchArgs]):
    name = "search"
    help = "search the crawl's documents in Solr or OpenSearch: title, URL and a highlighted snippet per hit"
    Args = SearchArgs
    job = False

    def run(self, run: Run) -> int:
        a = self.args
        total, hits, held, where = self.opensearch(a) if a.opensearch else self.solr(a)
        bold = ("\033[1m", "\033[0m") if sys.stdout.isatty() else ("*", "*")
        run.out(f"{total} {'hit' if total == 1 else 'hits'} for {a.query!r}")
        if total == 0:
            self.say_where(held(), where)
        for i, hit in enumerate(hits, 1):
            runs, before, after = snippet_runs(hit.snippet)  # at most SNIPPET_MAX characters, as the search page
            snippet = "".join(f"{bold[0]}{text}{bold[1]}" if marked else text for text, marked in runs)
            snippet = f"{'…' if before else ''}{snippet}{'…' if after else ''}" if snippet else ""
            run.out(f"{i:>3}. {hit.title or '(no title)'}\n     {hit.url}")
            if snippet:
                run.out(f"     {snippet}")
        return 0

    def solr(self, a: SearchArgs) -> tuple[int, list[Found], Any, str]:
        """The query in Solr's standard syntax, within the crawl."""
        from nutch2.index.solr import crawl_counts, crawl_filter

        solr = solr_client(self.conf, a.solr)
        res = solr.search(a.query, **{"rows": a.rows, "fq": crawl_filter(self.crawl_id), "fl": "id,url,title,boost",
                                      "hl": "true",
                                      # main_content as a glob: a core of an older configset lacks it
                                      "hl.fl": f"{MAIN_CONTENT}*,content,title", "hl.snippets": 1, "hl.fragsize": 160})
        hits = []
        for doc in res.docs:
            hl = res.highlighting.get(doc["id"], {})
            hits.append(Found(doc.get("title") or "", doc["url"], snippet_of(hl) or (hl.get("title") or [""])[0]))
        return int(res.hits), hits, lambda: crawl_counts(solr, SHOWN_CRAWLS + 1), "the core"

    def opensearch(self, a: SearchArgs) -> tuple[int, list[Found], Any, str]:
        """The words matched as the Searcher matches them (nutch2.index.opensearch.text_query), within the crawl."""
        from nutch2.index.opensearch import OpenSearchClient, opensearch_url, text_query
        from nutch2.index.solr import solr_crawl_id

        client = OpenSearchClient(opensearch_url(self.conf, a.opensearch), self.conf.get_float("opensearch.timeout"))
        client.ping()  # a dead cluster or a missing index: one line
        res = client.search({
            "query": {"bool": {"must": [text_query(a.query)],
                               "filter": [{"term": {"crawlId": solr_crawl_id(self.crawl_id)}}]}},
            "size": a.rows, "_source": ["id", "url", "title"], "track_total_hits": True,
            "highlight": {"pre_tags": ["<em>"], "post_tags": ["</em>"], "max_analyzer_offset": 51_200,
                          "highlight_query": text_query(a.query, highlight=True),
                          "fields": {MAIN_CONTENT: {"fragment_size": 160, "number_of_fragments": 1},
                                     "content": {"fragment_size": 160, "number_of_fragments": 1},
                                     "title": {"number_of_fragments": 0}}}})
        hits = []
        for h in res["hits"]["hits"]:
            doc, hl = h.get("_source") or {}, h.get("highlight", {})
            hits.append(Found(doc.get("title") or "", doc.get("url", ""),
                              snippet_of(hl) or (hl.get("title") or [""])[0]))
        total = int(res["hits"]["total"]["value"])
        return total, hits, lambda: client.crawl_counts(SHOWN_CRAWLS + 1), "the index"

    def say_where(self, held: dict[str, int], where: str) -> None:
        """No hit: which crawls the core (or index) holds, so that a search of the wrong crawl says so."""
        crawl = self.crawl_id or "webpage"
        flag = "-opensearch" if self.args.opensearch else "-solr"
        if not held:
            log.warning(f"search: {where} holds no document of any crawl yet (index a batch: nutch2 index B "
                        f"{flag} URL)")
        elif crawl not in held:
            listed = ", ".join(f"{c} ({n} document{'' if n == 1 else 's'})" for c, n in
                               list(held.items())[:SHOWN_CRAWLS])
            if len(held) > SHOWN_CRAWLS:
                listed += ", ..."
            log.warning(f"search: {where} holds no document of crawl {crawl}; it holds {listed}: give -crawlId")
