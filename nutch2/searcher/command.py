"""The `server` command: the Searcher web app (and the job API) over one crawl. A tool as the others are, kept with
the searcher it starts, so that the tools (which the job API runs) import nothing of the searcher; the CLI adds it
to its commands."""

from __future__ import annotations

from dataclasses import dataclass

from nutch2.searcher import server_extra_missing
from nutch2.tools.args import ArgError, ToolArgs, opt
from nutch2.tools.base import Run, Tool, tool
from nutch2.tools.index import solr_opt


@dataclass
class ServerArgs(ToolArgs):
    solr: str | None = solr_opt()
    opensearch: str | None = opt("-opensearch", "search this OpenSearch index instead of Solr, e.g. "
                                 "http://127.0.0.1:9200/nutch", metavar="URL", api="no")
    host: str = opt("-host", "address to listen on (127.0.0.1); another than loopback needs a login or -insecure",
                    default="127.0.0.1", metavar="ADDR")
    port: int = opt("-port", "port to listen on (8081; 0: any free port)", default=8081, metavar="N", min=0,
                    max=65535)
    jobs: bool = opt("-jobs", "also serve Nutch 2's job API (POST /api/jobs)", default=False)
    tokenFile: str | None = opt("-tokenFile", "require 'Authorization: Bearer <the token in FILE>' "
                                "(searcher.auth.token.file)", metavar="FILE")
    users: str | None = opt("-users", "require HTTP basic login as a user of FILE, passwords hashed "
                            "(searcher.auth.users.file)", metavar="FILE")
    addUser: str | None = opt("-addUser", "with -users FILE: add or replace user NAME (password from the terminal "
                              "or stdin), exit", metavar="NAME")
    insecure: bool = opt("-insecure", "serve a non-loopback -host without a login", default=False)
    sslCert: str | None = opt("-sslCert", "serve HTTPS with this certificate chain", metavar="PEM")
    sslKey: str | None = opt("-sslKey", "the private key of -sslCert", metavar="PEM")

    def check(self) -> None:
        super().check()
        if self.addUser and not self.users:
            raise ArgError("-addUser NAME needs -users FILE (the file to write)")
        if self.solr and self.opensearch:
            raise ArgError("give -solr URL or -opensearch URL, not both: the server searches one index")


@tool
class Server(Tool[ServerArgs]):
    name = "server"
    help = "serve search, cached pages, page info, a crawl dashboard and a JSON API over HTTP"
    Args = ServerArgs
    job = False

    def run(self, run: Run) -> int:
        try:
            from nutch2.searcher.server import ServerOptions, add_user_interactively, serve
        except ImportError as e:  # the server's extra is not installed (markupsafe comes with jinja2)
            raise server_extra_missing(e) from None

        a = self.args
        if a.addUser:
            return add_user_interactively(a.users or "", a.addUser)
        opts = ServerOptions(a.host, a.port, a.jobs, a.tokenFile, a.users, a.insecure, a.sslCert, a.sslKey)
        return serve(self.conf, self.crawl_id, a.solr, opts, a.opensearch)
