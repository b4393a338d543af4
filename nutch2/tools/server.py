"""The server tool: the Searcher web app (and the job API) over one crawl."""

from __future__ import annotations

from dataclasses import dataclass

from nutch2.tools.args import ToolArgs, opt
from nutch2.tools.base import Run, Tool, tool
from nutch2.tools.solr import solr_opt


@dataclass
class ServerArgs(ToolArgs):
    solr: str | None = solr_opt()
    host: str = opt("-host", "address to listen on (127.0.0.1)", default="127.0.0.1", metavar="ADDR")
    port: int = opt("-port", "port to listen on (8081; 0: any free port)", default=8081, metavar="N", min=0,
                    max=65535)
    jobs: bool = opt("-jobs", "also serve Nutch 2's job API (POST /api/jobs)", default=False)


@tool
class Server(Tool):
    name = "server"
    help = "serve search, cached pages, page info, a crawl dashboard and a JSON API over HTTP"
    Args = ServerArgs
    job = False

    def run(self, run: Run) -> int:
        from nutch2.searcher.server import serve

        a: ServerArgs = self.args  # type: ignore[assignment]
        return serve(self.conf, self.crawl_id, a.solr, a.host, a.port, a.jobs)
