"""The Searcher's ASGI app (Starlette + Jinja2 templates): HTML pages, feeds, the JSON API and the job API.

Every request passes access.AccessGuard first (Host, Origin, login, body limits). Every crawled string reaches
HTML through Jinja's autoescape; snippets are rebuilt by search.snippet_markup. App pages load no script at all
and say so in their Content-Security-Policy. Cached copies are snapshots (snapshot.py) served from their own
route with `Content-Security-Policy: sandbox` (an opaque origin, no scripts, no forms, no remote source) and
shown in a sandboxed iframe, so nothing in a stored page can act on the app's origin or reach the live site.
Error pages and API errors name no file, store address or index URL (Solr's, OpenSearch's): those go to the
server's log. The index is a SearchBackend (search.py): a Solr core or an OpenSearch index, the same pages over both.
"""

from __future__ import annotations

import json
import logging
import math
import re
import threading
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from importlib import resources
from typing import Any
from urllib.parse import urlencode, urlsplit

import jinja2
from starlette.applications import Starlette
from starlette.datastructures import MutableHeaders
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from nutch2.config import Configuration
from nutch2.crawldb.journal import rounds_phrase
from nutch2.errors import StoreError
from nutch2.index.solr import row_key_of
from nutch2.parse.encoding import decode_content, detect_encoding
from nutch2.parse.parseutil import caching_forbidden
from nutch2.searcher.access import AccessGuard, AccessPolicy
from nutch2.searcher.crawlforms import FORM_PATHS, CrawlForms, listed_job
from nutch2.searcher.crawlstats import STEPS, CrawlView, bar_chart, crawl_view
from nutch2.searcher.feeds import OPENSEARCH_TYPE, RSS_TYPE, opensearch_description, rss_feed
from nutch2.searcher.hostspage import hosts_page
from nutch2.searcher.jobapi import JobManager, types_json
from nutch2.searcher.metrics import RequestMetrics, SearcherMetrics
from nutch2.searcher.pages import (
    DATE_FIELDS,
    StoreAccess,
    cached_copy,
    fetched_at,
    iso_time,
    mime_type,
    page_json,
)
from nutch2.searcher.params import ParamError, int_param, url_param
from nutch2.searcher.search import (
    MAX_START,
    QUERY_REFUSED,
    UNAVAILABLE,
    IndexSummary,
    SearchBackend,
    SearchRequest,
    SearchResult,
)
from nutch2.searcher.snapshot import LOOKUP_FIELDS, RESOURCE_TYPES, Lookup, rewrite_css, snapshot_html
from nutch2.urls.checker import UrlChecker
from nutch2.urls.tableutil import reverse_url

log = logging.getLogger(__name__)

APP_CSP = ("default-src 'none'; style-src 'self'; img-src 'self' data:; frame-src 'self'; form-action 'self'; "
           "base-uri 'none'; frame-ancestors 'self'")
# a cached copy: its own opaque origin (sandbox without allow-same-origin), no scripts, no forms, no plugins, and
# no remote source: its images, styles, fonts and media come from this server (the crawl's copies) or nowhere;
# its links may open in the top window when clicked
CACHED_CSP = ("sandbox allow-top-navigation-by-user-activation; default-src 'none'; img-src 'self' data:; "
              "style-src 'self' 'unsafe-inline'; font-src 'self' data:; media-src 'self'; script-src 'none'; "
              "form-action 'none'; frame-src 'none'; base-uri 'none'; frame-ancestors 'self'")
RESOURCE_CSP = ("sandbox; default-src 'none'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; "
                "font-src 'self' data:")
PAGE_FIELDS = None  # every field: the info page shows them all
RAW_FIELDS = ("status", "content", "content_type", "headers", "base_url", "metadata")
SUMMARY_TTL = 30.0  # seconds the home page's index size and freshness are kept
BATCHES_SHOWN = 20  # batches a page of /crawl lists (the journal keeps up to a thousand finished ones)
API_BATCHES = 100  # batches /api/batches gives unless asked for `rows`
MAX_BATCH_START = 100_000  # a start past every batch the journal can keep


@dataclass
class Searcher:
    """What the routes share: configuration, the crawl's store, the index (Solr or OpenSearch) and the job manager."""

    conf: Configuration
    crawl_id: str | None
    index: SearchBackend
    store: StoreAccess
    jobs: JobManager | None
    templates: Jinja2Templates
    summary: TtlValue
    normalizer: UrlChecker
    collapse: bool = True

    def search_request(self, request: Request) -> SearchRequest:
        return SearchRequest.from_params(request.query_params, self.crawl_id, self.collapse)


class TtlValue:
    """The last value of `compute()` for `ttl` seconds (None while it fails)."""

    def __init__(self, compute: Callable[[], Any], ttl: float) -> None:
        self.compute = compute
        self.ttl = ttl
        self._lock = threading.Lock()
        self._value: Any = None
        self._at = -ttl

    def get(self) -> Any:
        with self._lock:
            if time.monotonic() - self._at > self.ttl:
                try:
                    self._value = self.compute()
                except (*UNAVAILABLE, StoreError) as e:
                    log.warning("%s", e)
                    self._value = None
                self._at = time.monotonic()
            return self._value


def _safe_href(url: str | None) -> str | None:
    """Only http(s) URLs become links; anything else (javascript:, data:) is shown as text."""
    if url and urlsplit(url).scheme.lower() in ("http", "https"):
        return url
    return None


def _when(iso: str | None) -> str:
    """'2024-05-01T12:34:56Z' -> '2024-05-01 12:34 UTC'."""
    if not iso:
        return "—"
    return iso[:16].replace("T", " ") + " UTC"


def _qs(**params: Any) -> str:
    return urlencode({k: v for k, v in params.items() if v not in (None, "")})


def _templates() -> Jinja2Templates:
    folder = resources.files("nutch2.searcher") / "templates"
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(folder)), autoescape=True,
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.globals.update(safe_href=_safe_href, qs=_qs)
    env.filters["when"] = _when
    env.filters["rounds"] = rounds_phrase  # a crawl entry's rounds after "round k"
    return Jinja2Templates(env=env)


class SecurityHeaders:
    """Adds the app's CSP and friends to every response that does not set its own."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                defaults = {"Content-Security-Policy": APP_CSP, "X-Content-Type-Options": "nosniff",
                            "Referrer-Policy": "no-referrer", "X-Frame-Options": "SAMEORIGIN"}
                for k, v in defaults.items():
                    if k not in headers:
                        headers[k] = v
            await send(message)

        await self.app(scope, receive, send_with_headers)


def _is_api(request: Request) -> bool:
    return request.url.path.startswith("/api/") or request.url.path == "/api"


def _error(request: Request, status: int, title: str, message: str,
           link: tuple[str, str] | None = None) -> Response:
    if _is_api(request):
        return JSONResponse({"error": message}, status_code=status)
    s: Searcher = request.app.state.searcher
    return s.templates.TemplateResponse(request, "error.html",
                                        _ctx(request, title=title, message=message, link=link), status_code=status)


def _ctx(request: Request, **values: Any) -> dict[str, Any]:
    s: Searcher = request.app.state.searcher
    base = {"crawl_id": s.crawl_id or "webpage", "q": request.query_params.get("q", ""),
            "jobs_enabled": s.jobs is not None, "engine": s.index.name}
    base.update(values)
    return base


async def _on_param_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, ParamError)
    return _error(request, exc.status, "Cannot do that" if exc.status != 404 else "Not found", str(exc), exc.link)


async def _on_index_error(request: Request, exc: Exception) -> Response:
    log.warning("%s", exc)  # the whole story, the index's URL included, for the operator
    name = request.app.state.searcher.index.name
    if isinstance(exc, QUERY_REFUSED):
        return _error(request, 400, f"{name} could not run this query",
                      f"{name} could not run this query: {getattr(exc, 'reason', '')}. Put the words in quotes to "
                      "search for them as they are.")
    return _error(request, 503, "Search is unavailable",
                  f"Search is unavailable: {name} does not answer. The server's log says why; try again later.")


async def _on_store_error(request: Request, exc: Exception) -> Response:
    log.warning("%s", exc)
    s: Searcher = request.app.state.searcher
    crawl = s.crawl_id or "webpage"
    if str(exc).startswith("no crawl db"):
        message = f"crawl {crawl} has no crawl db yet: run `nutch2 inject` (or crawl) with -crawlId {crawl} first."
        if s.jobs is not None:
            message += " Or inject seeds from the browser: /crawl/jobs."
    else:
        message = f"The crawl db of crawl {crawl} does not answer. The server's log says why; try again later."
    return _error(request, 503, "The crawl db is unavailable", message)


async def _on_http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    if exc.status_code == 404:
        return _error(request, 404, "Not found", f"There is no page at {request.url.path}.")
    if exc.status_code == 405:
        return _error(request, 405, "Method not allowed", f"{request.method} is not allowed on {request.url.path}.")
    return _error(request, exc.status_code, "Error", str(exc.detail))


# ---------------------------------------------------------------------------- HTML pages


def _paging(total: int, req: SearchRequest) -> list[dict[str, Any]]:
    """Up to 10 page links around the current page (never past MAX_START)."""
    last = min(math.ceil(total / req.rows), MAX_START // req.rows + 1)
    current = req.start // req.rows + 1
    first = max(1, min(current - 4, last - 9))
    return [{"n": n, "start": (n - 1) * req.rows, "current": n == current}
            for n in range(first, min(last, first + 9) + 1)]


def _with_fetch_dates(s: Searcher, result: SearchResult) -> SearchResult:
    """The fetch time of hits whose document has none (indexed before the fetched field) from their row (the
    document's tstamp is the next fetch); without the store, none."""
    missing = [hit for hit in result.hits if hit.fetched is None]

    def read(store: Any) -> None:
        for hit in missing:
            page = store.get(row_key_of(hit.id), DATE_FIELDS)
            hit.fetched = iso_time(fetched_at(page)) if page is not None else None

    if missing:
        try:
            s.store.run(read)
        except StoreError as e:
            log.warning("search without fetch dates: %s", e)
    return result


def search_page(request: Request) -> Response:
    s: Searcher = request.app.state.searcher
    req = s.search_request(request)
    if not req.q:
        summary: IndexSummary | None = s.summary.get()
        return s.templates.TemplateResponse(request, "search.html", _ctx(request, result=None, req=req,
                                                                         summary=summary))
    result = _with_fetch_dates(s, s.index.search(req))
    prev_start = max(0, req.start - req.rows) if req.start > 0 else None
    next_start = req.start + req.rows if req.start + req.rows < result.total and \
        req.start + req.rows <= MAX_START else None
    return s.templates.TemplateResponse(request, "search.html", _ctx(
        request, result=result, req=req, pages=_paging(result.total, req), prev_start=prev_start,
        next_start=next_start, rows_param=req.rows if req.rows != 10 else None,
        collapse_param=None if req.collapse == s.collapse else int(req.collapse),
        feed=f"/rss?{_qs(q=req.q, start=req.start or None, rows=req.rows if req.rows != 10 else None)}"))


def _get_page(s: Searcher, key: str, url: str, fields: tuple[str, ...] | None = None):
    page = s.store.run(lambda store: store.get(key, fields))
    if page is None:
        raise ParamError(f"{url} is not in crawl {s.crawl_id or 'webpage'} (row key {key})", 404)
    return page


def cached_page(request: Request) -> Response:
    s: Searcher = request.app.state.searcher
    url, key = url_param(request.query_params)
    page = _get_page(s, key, url)
    copy = cached_copy(page)
    forbidden = caching_forbidden(page.metadata) != "none"  # robots noarchive/nocache
    return s.templates.TemplateResponse(request, "cached.html", _ctx(
        request, url=url, page=page, copy=copy, fetched=iso_time(fetched_at(page)),
        raw=f"/cached/raw?{_qs(url=url)}", mime=mime_type(page.content_type) or "unknown type",
        size=len(page.content or b""), forbidden=forbidden), status_code=200 if copy else 403 if forbidden else 404)


def _lookup(s: Searcher, store: Any) -> Lookup:
    """What the crawl holds, asked of the store the request already uses."""
    def get(url: str) -> Any:
        try:
            return store.get(reverse_url(url), LOOKUP_FIELDS)
        except ValueError:
            return None

    return Lookup(get, lambda u: s.normalizer.normalize(u))


def cached_raw(request: Request) -> Response:
    """The stored page as a snapshot, in a sandbox of its own (see CACHED_CSP and snapshot.py)."""
    s: Searcher = request.app.state.searcher
    url, key = url_param(request.query_params)
    page = _get_page(s, key, url, RAW_FIELDS)
    copy = cached_copy(page)
    headers = {"Content-Security-Policy": CACHED_CSP, "X-Robots-Tag": "noindex, nofollow",
               "Cache-Control": "private, max-age=60"}
    if caching_forbidden(page.metadata) != "none":
        return PlainTextResponse("no cached copy: the page asks not to be cached (robots noarchive)", 403,
                                 headers=headers)
    if copy is None:
        return PlainTextResponse("no cached copy of this page (not fetched, or not text)", 404, headers=headers)
    body = copy.body
    if copy.media_type == "text/html":
        body = s.store.run(lambda store: snapshot_html(copy.body, page.base_url or url, _lookup(s, store)))
    return Response(body, media_type=copy.media_type, headers=headers)


def cached_resource(request: Request) -> Response:
    """An image, stylesheet, font or media file the crawl stored, for snapshots (never HTML or scripts)."""
    s: Searcher = request.app.state.searcher
    url, key = url_param(request.query_params)
    page = _get_page(s, key, url, RAW_FIELDS)
    mime = mime_type(page.content_type)
    headers = {"Content-Security-Policy": RESOURCE_CSP, "X-Robots-Tag": "noindex, nofollow",
               "Cache-Control": "private, max-age=300"}
    if not page.content or mime not in RESOURCE_TYPES or caching_forbidden(page.metadata) != "none":
        return PlainTextResponse("the crawl holds no image, stylesheet or font at this URL", 404, headers=headers)
    if mime == "text/css":
        css, _ = decode_content(page.content, page.content_type, dict(page.headers), html=False)
        body = s.store.run(lambda store: rewrite_css(css, page.base_url or url, _lookup(s, store)))
        return Response(body, media_type="text/css", headers=headers)
    return Response(page.content, media_type=mime, headers=headers)


def info_page(request: Request) -> Response:
    s: Searcher = request.app.state.searcher
    url, key = url_param(request.query_params)
    page = _get_page(s, key, url, PAGE_FIELDS)
    row = page_json(url, page)
    charset = detect_encoding(page.content, page.content_type, dict(page.headers))[0] if page.content else None
    steps = [(step, mark.value, page.markers.get(mark.value)) for step, mark in STEPS]
    return s.templates.TemplateResponse(request, "info.html", _ctx(
        request, url=url, row=row, charset=charset, steps=steps,
        other_markers={k: v for k, v in row["markers"].items() if k not in {m.value for _, m in STEPS}}))


def _view(s: Searcher) -> CrawlView:
    return s.store.run(crawl_view)


def _batch_pages(total: int, start: int, top: int) -> dict[str, Any]:
    """The links of /crawl's batch list: "‹ Newer", up to 10 page numbers around the current page, "Older ›"
    (a continuous crawl's journal keeps a thousand batches: 50 pages)."""
    def href(n: int) -> str:
        return f"/crawl?{_qs(start=n or None, top=top if top != 20 else None)}#batches-title"

    last = math.ceil(total / BATCHES_SHOWN)
    current = start // BATCHES_SHOWN + 1
    first = max(1, min(current - 4, last - 9))
    return {"pages": [{"n": n, "href": href((n - 1) * BATCHES_SHOWN), "current": n == current}
                      for n in range(first, min(last, first + 9) + 1)],
            "newer": href(max(0, start - BATCHES_SHOWN)) if start > 0 else None,
            "older": href(start + BATCHES_SHOWN) if start + BATCHES_SHOWN < total else None}


def crawl_page(request: Request) -> Response:
    """The crawl's figures and its batches, newest first, BATCHES_SHOWN a page (?start=N: from the Nth newest)."""
    s: Searcher = request.app.state.searcher
    top = int_param(request.query_params, "top", 20, 1, 1000, clamp=True)
    start = int_param(request.query_params, "start", 0, 0, MAX_BATCH_START)
    view = _view(s)
    summary = view.to_json(top)
    readdb = summary["readdb"]
    return s.templates.TemplateResponse(request, "crawl.html", _ctx(
        request, view=summary, readdb=readdb, chart=bar_chart(list(readdb["status"].items())) if readdb else None,
        batches=view.batch_rows()[start:start + BATCHES_SHOWN], batch_start=start,
        batch_paging=_batch_pages(summary["batches"], start, top), top=top, steps=[step for step, _ in STEPS],
        jobs=[listed_job(j.to_json()) for j in s.jobs.all()[:10]] if s.jobs else []))


def home(request: Request) -> Response:
    if request.url.path == "/" and request.query_params.get("q"):
        return RedirectResponse(f"/search?{request.url.query}", 303)
    return search_page(request)


def _base(request: Request) -> str:
    """scheme://host[:port] as the client addressed us (the Host header passed the allowlist)."""
    return str(request.base_url).rstrip("/")


def opensearch(request: Request) -> Response:
    s: Searcher = request.app.state.searcher
    return Response(opensearch_description(_base(request), s.crawl_id or "webpage"), media_type=OPENSEARCH_TYPE)


def rss(request: Request) -> Response:
    s: Searcher = request.app.state.searcher
    req = s.search_request(request)
    if not req.q:
        raise ParamError("q is missing; give a query, e.g. /rss?q=crawler")
    result = _with_fetch_dates(s, s.index.search(req))
    return Response(rss_feed(result, _base(request), s.crawl_id or "webpage"), media_type=RSS_TYPE)


# ---------------------------------------------------------------------------- JSON API


def api_search(request: Request) -> Response:
    s: Searcher = request.app.state.searcher
    req = s.search_request(request)
    if not req.q:
        raise ParamError("q is missing; give a query, e.g. /api/search?q=crawler")
    return JSONResponse(_with_fetch_dates(s, s.index.search(req)).to_json())


def api_page(request: Request) -> Response:
    s: Searcher = request.app.state.searcher
    url, key = url_param(request.query_params)
    return JSONResponse(page_json(url, _get_page(s, key, url, PAGE_FIELDS)))


def api_stats(request: Request) -> Response:
    s: Searcher = request.app.state.searcher
    top = int_param(request.query_params, "top", 20, 1, 1000, clamp=True)
    return JSONResponse(_view(s).to_json(top))


def api_batches(request: Request) -> Response:
    """The batches, newest first: `rows` of them (API_BATCHES unless given) from the `start`th newest, and how many
    the journal keeps (`total`)."""
    s: Searcher = request.app.state.searcher
    start = int_param(request.query_params, "start", 0, 0, MAX_BATCH_START)
    rows = int_param(request.query_params, "rows", API_BATCHES, 1, MAX_BATCH_START, clamp=True)
    batches = _view(s).batch_rows()
    return JSONResponse({"total": len(batches), "start": start, "batches": batches[start:start + rows],
                         "steps": [step for step, _ in STEPS]})


def _jobs(request: Request) -> JobManager:
    s: Searcher = request.app.state.searcher
    if s.jobs is None:
        raise ParamError("the job API is off; start the server with -jobs to run jobs over HTTP", 404)
    return s.jobs


async def _json_body(request: Request) -> Any:
    """The JSON body; AccessGuard already checked its type, size and depth."""
    body = await request.body()
    try:
        value = json.loads(body or b"null")
    except (ValueError, RecursionError) as e:
        raise ParamError(f"the body is not valid JSON: {str(e)[:200]}") from None
    try:  # "\ud800" is valid JSON but no text: a job holding it could never be shown as JSON again
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        raise ParamError("the body is not valid JSON: a string holds a lone surrogate (\\ud800-\\udfff), "
                         "which is no character") from None
    return value


async def api_jobs_create(request: Request) -> Response:
    jobs = _jobs(request)
    body = await _json_body(request)
    if not isinstance(body, dict) or "type" not in body:
        raise ParamError('give {"type": "inject|generate|fetch|...", "args": {...}} (GET /api/jobs/types lists them)')
    extra = sorted(set(body) - {"type", "args", "conf", "crawlId", "confId"})
    if extra:
        raise ParamError(f"unknown field(s) {', '.join(extra)[:200]}; a job has type, args and conf")
    s: Searcher = request.app.state.searcher
    if body.get("crawlId") not in (None, s.crawl_id):
        raise ParamError(f"this server runs jobs for crawl {s.crawl_id!r}, not {body['crawlId']!r}")
    info = jobs.submit(body["type"], body.get("args") or {}, body.get("conf"))
    return JSONResponse(info.to_json(), status_code=201, headers={"Location": f"/api/jobs/{info.id}"})


def api_job_types(request: Request) -> Response:
    _jobs(request)
    return JSONResponse({"types": types_json()})


def api_jobs_list(request: Request) -> Response:
    return JSONResponse({"jobs": [j.to_json() for j in _jobs(request).all()]})


def api_job(request: Request) -> Response:
    jobs = _jobs(request)
    info = jobs.get(request.path_params["job_id"])
    if info is None:
        raise ParamError(f"no job {request.path_params['job_id']!r}; GET /api/jobs lists them", 404)
    return JSONResponse(info.to_json())


def api_job_stop(request: Request) -> Response:
    jobs = _jobs(request)
    info = jobs.stop(request.path_params["job_id"])
    if info is None:
        raise ParamError(f"no job {request.path_params['job_id']!r}; GET /api/jobs lists them", 404)
    shown = info.to_json()  # 202 while it stops; 200 for a job that had already ended (nothing was asked of it)
    return JSONResponse(shown, status_code=202 if shown["state"] == "RUNNING" else 200)


# ---------------------------------------------------------------------------- the app


def create_app(conf: Configuration, crawl_id: str | None, index: SearchBackend, jobs: JobManager | None = None,
               policy: AccessPolicy | None = None) -> Starlette:
    store = StoreAccess(conf, crawl_id)
    summary = TtlValue(lambda: index.index_summary(crawl_id), SUMMARY_TTL)
    searcher = Searcher(conf, crawl_id, index, store, jobs, _templates(), summary,
                        UrlChecker(conf, "inject", filter=False), conf.get_bool("searcher.collapse.host"))

    @asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        yield
        if jobs is not None:
            jobs.shutdown()
        store.close()

    static = str(resources.files("nutch2.searcher") / "static")
    metrics = SearcherMetrics(conf, jobs)  # /metrics (Prometheus), behind the guard like every route
    routes = [
        Route("/", home),
        Route("/search", search_page),
        Route("/cached", cached_page),
        Route("/cached/raw", cached_raw),
        Route("/cached/resource", cached_resource),
        Route("/opensearch.xml", opensearch),
        Route("/rss", rss),
        Route("/info", info_page),
        Route("/crawl", crawl_page),
        Route("/hosts", lambda request: hosts_page(request, _ctx)),
        Route("/api/search", api_search),
        Route("/api/page", api_page),
        Route("/api/stats", api_stats),
        Route("/api/batches", api_batches),
        Route("/api/jobs", api_jobs_create, methods=["POST"]),
        Route("/api/jobs", api_jobs_list, methods=["GET"]),
        Route("/api/jobs/types", api_job_types, methods=["GET"]),
        Route("/api/jobs/{job_id}", api_job, methods=["GET"]),
        Route("/api/jobs/{job_id}/stop", api_job_stop, methods=["POST"]),
        Mount("/static", StaticFiles(directory=static), name="static"),
        *CrawlForms(_ctx).routes(),  # the dashboard's crawl forms and job pages
        Route("/metrics", metrics.endpoint, methods=["GET"]),
    ]
    handlers = {ParamError: _on_param_error, StoreError: _on_store_error, HTTPException: _on_http_error,
                **dict.fromkeys(UNAVAILABLE, _on_index_error)}
    app = Starlette(routes=routes, exception_handlers=handlers, lifespan=lifespan)  # type: ignore[arg-type]
    app.router.redirect_slashes = False  # its redirects are built from the Host header
    app.state.searcher = searcher
    app.add_middleware(AccessGuard, policy=policy or AccessPolicy.build([]), forms=re.compile(FORM_PATHS))
    app.add_middleware(RequestMetrics, metrics=metrics)  # outside the guard: refused requests count too
    app.add_middleware(SecurityHeaders)  # outermost: refusals get the headers too
    return app
