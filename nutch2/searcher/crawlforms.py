"""The dashboard's crawl forms (`nutch2 server -jobs`): inject seeds, start a crawl, watch its progress, stop it.

Every page is plain HTML with no script: a job's page frames its progress (/crawl/jobs/ID/progress), a small page
that reloads itself (`<meta http-equiv="refresh">`) while the job runs and stops reloading when it ends. The forms
run the job API's tools through the same JobManager (one job at a time, seeds with no pass for local addresses).

Every form is a POST that AccessGuard lets through as an HTML form only on these paths (FORM_PATHS) and only from
this site (Origin, Sec-Fetch-Site); it carries a CSRF token, an HMAC of a secret made when the server starts and of
the login the request proved (FormTokens), so that a browser that resends a Basic login to another site's form
posts gets 403: the other site cannot know the token.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import logging
import secrets
from collections.abc import Callable, Mapping
from typing import Any

from starlette.datastructures import FormData, UploadFile
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from nutch2.crawldb.journal import Journal
from nutch2.errors import StoreError
from nutch2.searcher.jobapi import JobInfo, JobManager
from nutch2.searcher.params import ParamError, int_param

log = logging.getLogger(__name__)

# the form routes: the only POSTs AccessGuard takes as HTML forms (job ids are secrets.token_urlsafe(12))
FORM_PATHS = r"/crawl/(?:inject|start|jobs/[A-Za-z0-9_-]{1,64}/stop)"
REFRESH_SECONDS = 2  # how often a running job's progress frame reloads itself
MAX_SEED_LINES = 100_000


class FormTokens:
    """CSRF tokens: HMAC-SHA256 of a per-server secret and the login ("" without one, the user, or "token")."""

    def __init__(self, secret: bytes | None = None) -> None:
        self._secret = secret or secrets.token_bytes(32)

    def token(self, login: str) -> str:
        digest = hmac.new(self._secret, b"nutch2 form\0" + login.encode("utf-8"), hashlib.sha256).digest()
        return base64.urlsafe_b64encode(digest).decode().rstrip("=")

    def valid(self, login: str, token: Any) -> bool:
        return isinstance(token, str) and hmac.compare_digest(token.encode(), self.token(login).encode())


def _login(request: Request) -> str:
    """The login AccessGuard saw for this request."""
    return str(request.scope.get("state", {}).get("login") or "")


def seed_lines(text: str) -> list[str]:
    """The seed lines of a textarea or file: blank lines and `#` comments left out."""
    lines = [ln.strip() for ln in text.splitlines()]
    lines = [ln for ln in lines if ln and not ln.startswith("#")]
    if len(lines) > MAX_SEED_LINES:
        raise ParamError(f"{len(lines)} seed lines are more than {MAX_SEED_LINES}; inject a seed file from the "
                         "command line (nutch2 inject) or send fewer")
    return lines


class CrawlForms:
    """The routes of the forms and job pages; `ctx` builds a page's template context (app._ctx)."""

    def __init__(self, ctx: Callable[..., dict[str, Any]], tokens: FormTokens | None = None) -> None:
        self.ctx = ctx
        self.tokens = tokens or FormTokens()

    def routes(self) -> list[Route]:
        return [
            Route("/crawl/jobs", self.jobs_page, methods=["GET"]),
            Route("/crawl/inject", self.inject, methods=["POST"]),
            Route("/crawl/start", self.start, methods=["POST"]),
            Route("/crawl/jobs/{job_id}", self.job_page, methods=["GET"]),
            Route("/crawl/jobs/{job_id}/progress", self.progress, methods=["GET"]),
            Route("/crawl/jobs/{job_id}/stop", self.stop, methods=["POST"]),
        ]

    # ------------------------------------------------------------------------------------------ pages

    def _page(self, request: Request, name: str, **values: Any) -> Response:
        templates = request.app.state.searcher.templates
        values.setdefault("csrf", self.tokens.token(_login(request)))
        # same-origin: the browser names this origin in the forms' POSTs (under the app's no-referrer it sends
        # `Origin: null`, which AccessGuard refuses); links to other sites still carry no referrer
        return templates.TemplateResponse(request, name, self.ctx(request, **values),
                                          headers={"Cache-Control": "no-store", "Referrer-Policy": "same-origin"})

    def jobs_page(self, request: Request) -> Response:
        """The forms (inject, start a crawl) and the last jobs."""
        jobs = _manager(request)
        return self._page(request, "crawljobs.html", jobs=[j.to_json() for j in jobs.all()[:20]],
                          index_target=_index_target(jobs))

    def job_page(self, request: Request) -> Response:
        info = _job(request)
        return self._page(request, "job.html", job=info.to_json(), stopping=info.stop_requested,
                          refresh=REFRESH_SECONDS)

    def progress(self, request: Request) -> Response:
        """The job's state, counters and progress line; reloads itself while the job runs."""
        info = _job(request)
        job = info.to_json()
        return self._page(request, "jobprogress.html", job=job, stopping=info.stop_requested,
                          refresh=REFRESH_SECONDS if job["state"] == "RUNNING" else None,
                          round=_crawl_round(request, info))

    # ------------------------------------------------------------------------------------------ forms

    async def _form(self, request: Request) -> FormData:
        """The posted form, its CSRF token checked (403 when missing or not this login's)."""
        form = await request.form(max_files=1, max_fields=20)
        if not self.tokens.valid(_login(request), form.get("csrf")):
            raise ParamError("this form did not come from this server's page, or the page is older than the "
                             "server: open the page again and send the form from it", 403)
        return form

    async def inject(self, request: Request) -> Response:
        jobs = _manager(request)
        form = await self._form(request)
        try:
            typed = form.get("seeds")
            text = typed if isinstance(typed, str) else ""
            upload = form.get("seedFile")
            if isinstance(upload, UploadFile) and upload.filename:
                text += "\n" + (await upload.read()).decode("utf-8-sig", errors="replace")
        finally:
            await form.close()
        lines = seed_lines(text)
        if not lines:
            raise ParamError("no seed URL given: type the URLs, one a line, or choose a seed file")
        args: dict[str, Any] = {"seedUrls": lines}
        if form.get("overwrite"):
            args["overwrite"] = True
        info = jobs.submit("inject", args)
        return RedirectResponse(f"/crawl/jobs/{info.id}", 303)

    async def start(self, request: Request) -> Response:
        jobs = _manager(request)
        form = await self._form(request)
        fields: Mapping[str, str] = {k: v for k, v in form.items() if isinstance(v, str)}
        args: dict[str, Any] = {"rounds": int_param(fields, "rounds", 2, -1, 100_000)}
        top_n = int_param(fields, "topN", 0, 0)
        if top_n:
            args["topN"] = top_n
        target = fields.get("index", "none")
        if target not in ("none", "server"):
            raise ParamError(f"index={target[:20]!r}: choose none or server (the server's index)")
        if target == "server":
            args["index"] = True
        seeds = seed_lines(fields.get("seeds", ""))
        if seeds:
            args["seedUrls"] = seeds
        info = jobs.submit("crawl", args)
        return RedirectResponse(f"/crawl/jobs/{info.id}", 303)

    async def stop(self, request: Request) -> Response:
        await self._form(request)
        info = _job(request)
        _manager(request).stop(info.id)
        return RedirectResponse(f"/crawl/jobs/{info.id}", 303)


def _manager(request: Request) -> JobManager:
    jobs = request.app.state.searcher.jobs
    if jobs is None:
        raise ParamError("jobs are off on this server; start it with -jobs to inject and crawl from the browser",
                         404)
    return jobs


def _job(request: Request) -> JobInfo:
    job_id = request.path_params["job_id"]
    info = _manager(request).get(job_id)
    if info is None:
        raise ParamError(f"no job {job_id[:64]!r}; the crawl's jobs page lists them (/crawl/jobs)", 404)
    return info


def _index_target(jobs: JobManager) -> str:
    """What "index each round" writes to, as the form names it."""
    return "the server's OpenSearch index" if jobs.opensearch else "the server's Solr core"


def _crawl_round(request: Request, info: JobInfo) -> dict[str, Any] | None:
    """A running crawl's round, as its journal says (None for other jobs or when the store does not answer)."""
    if info.type != "crawl" or info.state != "RUNNING":
        return None
    try:
        return request.app.state.searcher.store.run(lambda store: Journal(store).crawl())
    except StoreError as e:
        log.debug("no round shown: %s", e)
        return None
