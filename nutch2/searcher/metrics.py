"""`nutch2 server`'s /metrics (Prometheus's text format): the job API's jobs (runs by type and state, seconds), the
counters and measures of the jobs they ran (nutch2/tools/metrics.py: fetch, parse, index, store, worker
processes), and the Searcher's own requests (count by route, method and status; latency by route).

/metrics sits behind the AccessGuard like every route: off loopback the server has a login (or was started with
-insecure), and /metrics asks for it as the job API does. Labels are bounded: routes are the app's route
patterns ("unrouted" for requests refused before routing, "other" for unknown paths), methods the usual ones.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from nutch2.config import Configuration
from nutch2.mapred import measures
from nutch2.mapred.job import Counters
from nutch2.searcher.jobapi import JobInfo, JobManager
from nutch2.tools.metrics import PREFIX, JobCollector, JobTotals, registry

METHODS = ("GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "PATCH")
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


class SearcherMetrics:
    """The server's metrics: a registry of the jobs' collector and this one (requests, the job API's jobs)."""

    def __init__(self, conf: Configuration, jobs: JobManager | None) -> None:
        self.jobs = jobs
        self.lock = threading.Lock()  # the jobs' collector reads under it; a job ending moves under it
        self.ended = JobTotals()
        self._accounted: set[str] = set()  # ids of the API jobs whose counters are in `ended`
        self._api: dict[tuple[str, str], int] = {}  # (type, state) -> jobs that ended
        self._api_seconds: dict[str, float] = {}
        self._requests: dict[tuple[str, str, str], int] = {}
        self._latency: dict[str, list[int]] = {}  # route -> counts per bucket, then the sum in microseconds
        self._req_lock = threading.Lock()
        self.registry = registry([JobCollector(conf, self._live, self.ended, self.lock), self])
        if jobs is not None:
            jobs.listeners.append(self.job_ended)

    # ---------------------------------------------------------------- jobs
    def _running(self) -> list[JobInfo]:
        return [j for j in (self.jobs.all() if self.jobs else []) if j.id not in self._accounted]

    def _live(self) -> list[Counters]:
        """The counters of the API jobs that have not ended (called under `lock`)."""
        return [c for j in self._running() for c in j.run.jobs()]

    def job_ended(self, info: JobInfo, state: str) -> None:
        """An API job ended (before it shows its state): its counters move to the totals, once."""
        with self.lock:
            if info.id in self._accounted:
                return
            self.ended.add(info.run.jobs())
            known = {j.id for j in self.jobs.all()} if self.jobs else set()
            self._accounted &= known  # the ids of jobs the manager has forgotten: a server's life of them no more
            self._accounted.add(info.id)
            self._api[(info.type, state)] = self._api.get((info.type, state), 0) + 1
            self._api_seconds[info.type] = self._api_seconds.get(info.type, 0.0) + time.time() - info.started

    # ---------------------------------------------------------------- requests
    def request(self, route: str, method: str, status: int, seconds: float) -> None:
        method = method if method in METHODS else "other"
        with self._req_lock:
            key = (route, method, str(status))
            self._requests[key] = self._requests.get(key, 0) + 1
            counts = self._latency.setdefault(route, [0] * (len(measures.BUCKETS) + 2))
            counts[measures.bucket(seconds)] += 1
            counts[-1] += round(seconds * 1e6)

    # ---------------------------------------------------------------- the collector
    def describe(self) -> list[Any]:
        return []

    def collect(self) -> Iterator[Any]:
        from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily

        with self.lock:
            api, api_seconds = dict(self._api), dict(self._api_seconds)
            running = [j for j in self._running() if j.state == "RUNNING"]
        now = time.time()
        for j in running:
            api_seconds[j.type] = api_seconds.get(j.type, 0.0) + now - j.started
        fam = CounterMetricFamily(PREFIX + "api_jobs", "jobs of the job API that ended, by type and state "
                                  "(FINISHED, FAILED, KILLED)", labels=["type", "state"])
        for (kind, state), n in sorted(api.items()):
            fam.add_metric([kind, state], n)
        yield fam
        fam = CounterMetricFamily(PREFIX + "api_job_seconds", "seconds the job API's jobs ran (running ones so far)",
                                  labels=["type"])
        for kind, s in sorted(api_seconds.items()):
            fam.add_metric([kind], s)
        yield fam
        fam = GaugeMetricFamily(PREFIX + "api_jobs_running", "jobs of the job API running now", labels=["type"])
        for kind in sorted({j.type for j in running}):
            fam.add_metric([kind], sum(j.type == kind for j in running))
        yield fam
        with self._req_lock:
            requests, latency = dict(self._requests), {k: list(v) for k, v in self._latency.items()}
        fam = CounterMetricFamily(PREFIX + "searcher_requests", "requests the Searcher answered, by route, method "
                                  "and status", labels=["route", "method", "status"])
        for (route, method, status), n in sorted(requests.items()):
            fam.add_metric([route, method, status], n)
        yield fam
        fam = HistogramMetricFamily(PREFIX + "searcher_request_seconds", "time to answer a request, by route",
                                    labels=["route"])
        for route, counts in sorted(latency.items()):
            fam.add_metric([route], measures.cumulative(counts[:-1]), counts[-1] / 1e6)
        yield fam

    def endpoint(self, _request: Request) -> Response:
        from prometheus_client import generate_latest

        return Response(generate_latest(self.registry), media_type=CONTENT_TYPE, headers={"Cache-Control": "no-store"})


class RequestMetrics:
    """ASGI middleware counting every request (refused ones too) into SearcherMetrics."""

    def __init__(self, app: ASGIApp, metrics: SearcherMetrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = [500]

        async def send_status(message: Message) -> None:
            if message["type"] == "http.response.start":
                status[0] = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_status)
        finally:
            route = scope.get("route")
            name = getattr(route, "path", None) or ("other" if "endpoint" in scope or status[0] == 404 else "unrouted")
            self.metrics.request(name, scope.get("method", ""), status[0], time.perf_counter() - started)
