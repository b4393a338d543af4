"""Helpers several test modules share: `nutch2(...)`, the one way to run the CLI in a subprocess; the rows the crash
and stop tests build and compare; and a quiet loopback HTTP server. What runs in this process (the CLI in-process,
-D options, configurations, reading rows) is in tests/crawlutil.py. A test module imports from here, never from
another test module (tests/test_layers.py checks it)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nutch2.mapred.job import Job
from nutch2.mapred.task import TaskContext
from nutch2.marks import Mark
from nutch2.plugins.scoring_opic.opic import set_cash
from nutch2.status import CrawlStatus
from nutch2.stores import open_store
from nutch2.urls.tableutil import reverse_url
from nutch2.webpage import WebPage
from tests.crawlutil import rows

if TYPE_CHECKING:
    from tests.testweb import TestWeb

REPO = Path(__file__).resolve().parent.parent
KILLED = -signal.SIGKILL  # the return code of a command killed by a failpoint (nutch2/failpoints.py)


# ---------------------------------------------------------------------------------------------------- the CLI
def nutch2(*args: object, failpoints: str = "", timeout: float = 180, cwd: Path | str = REPO,
           env: dict[str, str | None] | None = None, **kw: Any) -> subprocess.CompletedProcess[str]:
    """`python -m nutch2.cli <args>` (each argument str()'d) in `cwd`, its output captured as text; no check of its
    return code. The child has this process's environment without NUTCH2_FAILPOINTS, then `failpoints` as
    NUTCH2_FAILPOINTS, then `env` (a None value unsets that variable). Other keywords go to subprocess.run
    (input, preexec_fn...)."""
    full = {k: v for k, v in os.environ.items() if k != "NUTCH2_FAILPOINTS"}
    if failpoints:
        full["NUTCH2_FAILPOINTS"] = failpoints
    for name, value in (env or {}).items():
        if value is None:
            full.pop(name, None)
        else:
            full[name] = value
    return subprocess.run([sys.executable, "-m", "nutch2.cli", *map(str, args)], cwd=cwd, env=full,
                          capture_output=True, text=True, timeout=timeout, **kw)


# ---------------------------------------------------------------------------------------------------- rows
def table(conf, crawl_id: str) -> dict[str, WebPage]:
    """Every row of a crawl by key (tests.crawlutil.rows, by the name the crash tests use)."""
    return rows(conf, crawl_id)


def comparable(page: WebPage, batch_names: dict[str, str]) -> dict:
    """A row as an uninterrupted run must reproduce it: batch ids and run ids renamed, new rows' creation time
    and float rounding left out."""
    values = {}
    for name in sorted(page.loaded()):
        value = getattr(page, name)
        if name == "markers":
            value = {k: batch_names.get(v, v) for k, v in value.items()}
        elif name == "batch_id":
            value = batch_names.get(value, value)
        elif name == "score":
            value = round(value, 9)
        elif name == "metadata":
            value = {k: (round(float(v), 9) if k == "_csh_" else v) for k, v in value.items()
                     if k not in ("_updrun_", "_ftclaim_")}  # run ids
        elif name in ("fetch_time", "prev_fetch_time") and page.status == CrawlStatus.UNFETCHED:
            continue
        elif name in ("fetch_time", "prev_fetch_time", "modified_time", "prev_modified_time", "headers",
                      "protocol_status", "content"):
            continue  # a fetch at another moment (crawl tests)
        values[name] = value
    return values


def same_rows(a: dict[str, WebPage], b: dict[str, WebPage], names_a: dict[str, str] | None = None,
              names_b: dict[str, str] | None = None) -> None:
    """The two tables have the same keys and comparable rows (batch ids renamed by `names_a` and `names_b`)."""
    assert set(a) == set(b), (len(a), len(b), sorted(set(a) ^ set(b))[:5])
    for key in a:
        assert comparable(a[key], names_a or {}) == comparable(b[key], names_b or {}), key


SOURCES, OUTLINKS = 240, 20


def build_batch(conf, crawl_id: str, sources: int = SOURCES) -> None:
    """A fetched and parsed batch of `sources` pages with OUTLINKS outlinks each: to other batch rows, to rows of
    the table outside the batch, and (mostly) to URLs not yet in the table."""
    now = int(time.time() * 1000)
    with open_store(conf, crawl_id) as store:
        for i in range(60):
            url = f"http://old{i % 6}.test/o{i}"
            page = WebPage(reverse_url(url), status=int(CrawlStatus.UNFETCHED), score=0.5, fetch_time=now,
                           fetch_interval=2592000, markers={"dist": "2"}, inlinks={"http://x.test/": "x"})
            set_cash(page, 0.25)
            store.put(page.key, page)
        for i in range(sources):
            # batch rows and new link targets share hosts, and sort before and after each other ("/a" < "/n" < "/z")
            url = f"http://site{i % 12}.test/{'a' if i % 2 else 'z'}{i}"
            links = {f"http://site{(i + j) % 12}.test/{'a' if (i * 7 + j) % 2 else 'z'}{(i * 7 + j) % sources}":
                     f"to {j}" for j in range(4)}
            links |= {f"http://old{j % 6}.test/o{(i + j) % 60}": "" for j in range(4)}
            links |= {f"http://site{(i + j) % 12}.test/n{(i * 3 + j) % 900}": f"n{j}" for j in range(OUTLINKS - 8)}
            marks = {Mark.GENERATE.value: "B", Mark.FETCH.value: "B", Mark.PARSE.value: "B", "dist": "1"}
            status = CrawlStatus.RETRY if i % 17 == 0 else CrawlStatus.FETCHED
            page = WebPage(reverse_url(url), status=int(status), score=1.0 + i / 100, fetch_time=now - 1000,
                           prev_fetch_time=now - 86400000, fetch_interval=2592000, markers=marks, outlinks=links,
                           signature=bytes([i % 256]) * 16, batch_id="B", retries_since_fetch=i % 3)
            if i % 29 == 0:  # generated but never fetched (deferred)
                page.markers = {Mark.GENERATE.value: "B", "dist": "1"}
            set_cash(page, 1.0)
            store.put(page.key, page)


def page_html(title: str, body: str = "", links: list[tuple[str, str]] = (), head: str = "") -> bytes:
    """A small HTML page: its title, a paragraph and links (href, anchor text)."""
    a = "".join(f'<a href="{href}">{text}</a> ' for href, text in links)
    return (f"<html><head><title>{title}</title>{head}</head><body><p>{body}</p>{a}</body></html>").encode()


ARTICLES = REPO / "tests" / "data" / "articles"  # two news articles of about 360 words each


def news_page(article: str, updated: str, views: int) -> list[str]:
    """The blocks of text of a news site's page around tests/data/articles/<article>.txt: navigation, a "Last updated"
    line, the article's paragraphs, a view counter and a footer (the near-duplicate tests vary the date and the
    counter). Join them for the page's text, or wrap each in <p> for its HTML."""
    paragraphs = (ARTICLES / f"{article}.txt").read_text(encoding="utf-8").split("\n\n")
    return ["Home News Sport Culture Weather Contact", f"Last updated {updated}",
            *(" ".join(p.split()) for p in paragraphs), f"This page has been viewed {views:,} times.",
            "Copyright 2024 The Coast Gazette. Privacy Terms Advertise"]


def fetched_batch(conf, crawl_id: str, n: int) -> None:
    """A fetched, unparsed batch B of n pages (about 20 KB each)."""
    with open_store(conf, crawl_id) as store:
        for i in range(n):
            url = f"http://p{i % 9}.test/{i}.html"
            links = [(f"http://p{(i + j) % 9}.test/{(i * 7 + j) % n}.html", f"to {j}") for j in range(8)]
            body = page_html(f"Page {i}", " ".join(f"word{(i * j) % 997}" for j in range(2500)), links)
            page = WebPage(reverse_url(url), status=2, content=body, content_type="text/html",
                           base_url=url, fetch_time=1, markers={Mark.GENERATE.value: "B", Mark.FETCH.value: "B"},
                           batch_id="B")
            store.put(page.key, page)


def page_requests(web: TestWeb) -> Counter[tuple[str, str]]:
    """How often the test web served each (host, path), robots.txt left out."""
    return Counter((r.host, r.path) for r in web.requests() if r.path != "/robots.txt")


# ---------------------------------------------------------------------------------------------------- a server
# A route answers (status, headers, body); "delay" in headers sleeps before answering.
Route = tuple[int, dict[str, str], bytes]


class QuietServer(ThreadingHTTPServer):
    """Threaded test server that counts requests per path and ignores client hang-ups."""

    daemon_threads = True
    block_on_close = False

    def __init__(self, routes: dict[str, Route]) -> None:
        super().__init__(("127.0.0.1", 0), QuietHandler)
        self.routes = routes
        self.hits: dict[str, int] = {}
        self.hits_lock = threading.Lock()

    def handle_error(self, request: object, client_address: object) -> None:
        """Do not print tracebacks for reset connections."""


class QuietHandler(BaseHTTPRequestHandler):
    """Serves the routes of its server; 404 for anything else."""

    protocol_version = "HTTP/1.1"
    server: QuietServer

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - stdlib signature
        """Keep test output quiet."""

    def do_GET(self) -> None:  # noqa: N802 - stdlib name
        """Answer from the route table."""
        with self.server.hits_lock:
            self.server.hits[self.path] = self.server.hits.get(self.path, 0) + 1
        status, headers, body = self.server.routes.get(self.path, (404, {}, b"missing"))
        headers = dict(headers)
        time.sleep(float(headers.pop("delay", "0")))
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class TaskPlace(Job):
    """A job of empty tasks whose results say where each ran: (its process id, the processors its thread may use)."""

    name = "taskplace"

    def inputs(self, store, n: int) -> list[Any]:
        return [[i] for i in range(n)]

    def read(self, split: list[int], store) -> list[int]:
        return split

    def map(self, record: int, ctx: TaskContext) -> Iterator[tuple[Any, Any]]:
        return iter(())

    def result(self, ctx: TaskContext) -> Any:
        return os.getpid(), sorted(os.sched_getaffinity(0))

    def finish(self, results: list[Any], ctx: TaskContext) -> None:
        self.places = [tuple(r) for r in results]
