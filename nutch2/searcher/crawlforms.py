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
from nutch2.errors import ConfigError, StoreError
from nutch2.fetch.agent import user_agent
from nutch2.searcher.jobapi import KEEP_JOBS, JobConflict, JobInfo, JobManager
from nutch2.searcher.params import ParamError, int_param
from nutch2.stores.lease import held_leases
from nutch2.tools.args import MAX_LIST

log = logging.getLogger(__name__)

# the form routes: the only POSTs AccessGuard takes as HTML forms (job ids are secrets.token_urlsafe(12))
FORM_PATHS = r"/crawl/(?:inject|start|jobs/[A-Za-z0-9_-]{1,64}/stop)"
REFRESH_SECONDS = 2  # how often a running job's progress frame reloads itself
JOBS_SHOWN = 20  # jobs a page of /crawl/jobs lists
LISTED_MSG = 300  # characters of a job's message the list shows (its page shows it all)
SHOWN_ITEMS = 5  # items of a long list argument a job's page shows (the JSON has them all)
MAX_SEED_LINES = MAX_LIST  # as many as a job of the API takes
AGENT = "http.agent.name"
MAX_AGENT = 200  # characters of a crawler name typed into the form
_FORM_ARGS = {"rounds", "topN", "index", "seedUrls"}  # what the crawl form sets


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
        """The forms (inject, start a crawl) and the jobs the server remembers, newest first, JOBS_SHOWN a page
        (?start=N: from the Nth newest, as the search pages page)."""
        jobs = _manager(request)
        listed = jobs.all()
        start = int_param(request.query_params, "start", 0, 0, KEEP_JOBS)
        interrupted = None if any(j.state == "RUNNING" for j in listed) else _stopped_crawl(request)
        server_agent = jobs.conf.get_str(AGENT).strip()
        last_agent = next((j.conf[AGENT] for j in listed if isinstance(j.conf.get(AGENT), str)), "")  # typed last
        shown = [listed_job(j.to_json()) for j in listed[start:start + JOBS_SHOWN]]
        return self._page(request, "crawljobs.html", jobs=shown,
                          total=len(listed), start=start, pages=job_pages(len(listed), start),
                          newer=_jobs_href(max(0, start - JOBS_SHOWN)) if start > 0 else None,
                          older=_jobs_href(start + JOBS_SHOWN) if start + JOBS_SHOWN < len(listed) else None,
                          keep=KEEP_JOBS, index_target=_index_target(jobs), server_agent=server_agent,
                          agent=server_agent or last_agent, interrupted=interrupted)

    def job_page(self, request: Request) -> Response:
        info = _job(request)
        job = info.to_json()
        return self._page(request, "job.html", job=job, args=shown_args(job["args"]), stopping=info.stop_requested,
                          refresh=REFRESH_SECONDS, conf=info.conf)

    def progress(self, request: Request) -> Response:
        """The job's state, counters and progress line; reloads itself while the job runs. An inject's or crawl's
        rejected seed lines and refused seed hosts (its result) are said, as a terminal logs them. A job this
        server does not know (it started again since the page was opened) is said in the frame, with the way to
        the jobs."""
        job_id = request.path_params["job_id"]
        info = _manager(request).get(job_id)
        if info is None:
            response = self._page(request, "jobgone.html", job_id=job_id[:64])
            response.status_code = 404
            return response
        job = info.to_json()
        return self._page(request, "jobprogress.html", job=job, stopping=info.stop_requested,
                          refresh=REFRESH_SECONDS if job["state"] == "RUNNING" else None,
                          round=_crawl_round(request, info), again=_again_fields(info),
                          rejected=job["result"].get("rejectedLines"), refused=job["result"].get("refusedHosts"))

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
                data = await upload.read()
                if b"\0" in data:  # a PDF, an image, an archive: no line of it is a seed
                    raise ParamError(f"{upload.filename[:80]!r} is not a text file: choose a seed file of URLs, "
                                     "one a line")
                text += "\n" + data.decode("utf-8-sig", errors="replace")
        finally:
            await form.close()
        lines = seed_lines(text)
        if not lines:
            raise ParamError("no seed URL given: type the URLs, one a line, or choose a seed file")
        args: dict[str, Any] = {"seedUrls": lines}
        if form.get("overwrite"):
            args["overwrite"] = True
        info = _submit(jobs, "inject", args)
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
        conf = _agent_conf(jobs, fields.get("agent"))
        if not seeds:
            _check_crawl_db(request)
        info = _submit(jobs, "crawl", args, conf)
        return RedirectResponse(f"/crawl/jobs/{info.id}", 303)

    async def stop(self, request: Request) -> Response:
        await self._form(request)
        info = _job(request)
        _manager(request).stop(info.id)
        return RedirectResponse(f"/crawl/jobs/{info.id}", 303)


def job_pages(total: int, start: int) -> list[dict[str, Any]]:
    """The page links of the jobs list (every page: the server keeps KEEP_JOBS jobs, JOBS_SHOWN a page)."""
    return [{"n": n + 1, "href": _jobs_href(n * JOBS_SHOWN), "current": n * JOBS_SHOWN <= start < (n + 1) * JOBS_SHOWN}
            for n in range(-(-total // JOBS_SHOWN))]


def listed_job(job: dict[str, Any]) -> dict[str, Any]:
    """A job as the list shows it: its message cut to LISTED_MSG characters (an error's advice, a long -expr)."""
    msg = job["msg"]
    return {**job, "msg": msg[:LISTED_MSG] + " …" if len(msg) > LISTED_MSG + 2 else msg}


def _jobs_href(start: int) -> str:
    """The jobs list from its `start`th newest job, scrolled to the list."""
    return f"/crawl/jobs{f'?start={start}' if start else ''}#jobs-title"


def _submit(jobs: JobManager, job: str, args: dict[str, Any], conf: dict[str, Any] | None = None) -> JobInfo:
    """Start a job; while another runs, the error links to that job's page (where it is watched and stopped)."""
    try:
        return jobs.submit(job, args, conf)
    except JobConflict:
        running = next((j for j in jobs.all() if j.state == "RUNNING"), None)
        if running is None:  # it ended meanwhile, or a command holds the crawl's lock: the message says which
            raise
        raise ParamError(f"job {running.id} ({running.type}) is still running; one job runs at a time: wait for it "
                         "to end, or stop it on its page", 409,
                         link=(f"/crawl/jobs/{running.id}", f"the running {running.type} job")) from None


def _agent_conf(jobs: JobManager, typed: str | None) -> dict[str, Any] | None:
    """The crawl's http.agent.name: the form's "Crawler name" when given, else the server's; refused (400, saying
    what to type) when neither names the crawler or the name cannot be sent as a User-Agent."""
    name = (typed or "").strip()
    if len(name) > MAX_AGENT:
        raise ParamError(f"the crawler name is {len(name)} characters long; give at most {MAX_AGENT}")
    conf = {AGENT: name} if name and name != jobs.conf.get_str(AGENT).strip() else None
    try:
        user_agent(jobs.job_conf(conf))
    except ConfigError as e:
        if name:
            raise ParamError(f"crawler name {name[:40]!r}: {e}") from None
        raise ParamError("name your crawler: type its name in Crawler name (sites see it in the User-Agent header "
                         "and robots.txt rules are matched against it, e.g. MyBot), or start the server with "
                         "-D http.agent.name=MyBot to crawl under that name") from None
    return conf


def _check_crawl_db(request: Request) -> None:
    """A crawl without seeds needs a crawl db with rows: said on the form's answer rather than by a failed job."""
    try:
        request.app.state.searcher.store.run(lambda store: Journal(store).crawl())
    except StoreError as e:
        if str(e).startswith("no crawl db"):
            raise ParamError("this crawl holds no URLs yet: give seeds to inject first in the crawl form, or inject "
                             "them with the Inject seeds form") from None
        log.debug("crawl db not checked: %s", e)  # the job says what the store says


def shown_args(args: dict[str, Any]) -> dict[str, Any]:
    """A job's arguments as its page shows them: a long list (120 seed URLs) cut to its first SHOWN_ITEMS and a
    count of the rest, so that the progress frame below stays in sight; the JSON has them all."""
    return {k: v[:SHOWN_ITEMS] + [f"... {len(v) - SHOWN_ITEMS} more (see the JSON)"]
            if isinstance(v, list) and len(v) > SHOWN_ITEMS + 1 else v for k, v in args.items()}


def _stopped_crawl(request: Request) -> dict[str, Any] | None:
    """The journal's crawl entry when a crawl stopped before its end (with the server, or on a stop request)."""
    def stopped(store: Any) -> dict[str, Any] | None:
        crawl = Journal(store).crawl()
        return None if crawl is None or held_leases(store, "crawler") else crawl  # not a crawl command running now

    try:
        return request.app.state.searcher.store.run(stopped)
    except StoreError as e:
        log.debug("no stopped crawl shown: %s", e)
        return None


def _again_fields(info: JobInfo) -> dict[str, str] | None:
    """The crawl form's fields that start an ended crawl job again (the same job goes on from where it stopped)."""
    args = info.args
    if info.with_server:  # the form's token ends with this server: the message says to start it once it is back
        return None
    if info.type != "crawl" or info.state not in ("KILLED", "FAILED") or not set(args) <= _FORM_ARGS \
            or not set(info.conf) <= {AGENT}:  # a job of the API the form cannot say again
        return None
    fields = {"rounds": str(args.get("rounds", 2)), "index": "server" if args.get("index") else "none"}
    if args.get("topN"):
        fields["topN"] = str(args["topN"])
    if args.get("seedUrls"):
        fields["seeds"] = "\n".join(args["seedUrls"])
    if isinstance(info.conf.get(AGENT), str):
        fields["agent"] = info.conf[AGENT]
    return fields


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
        raise ParamError(f"no job {job_id[:64]!r} on this server: it knows the jobs started since it last started "
                         "(a crawl stopped with the server goes on when you start it again)", 404,
                         link=("/crawl/jobs", "the crawl's jobs"))
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
