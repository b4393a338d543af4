"""Prometheus metrics (issue 39): `nutch2 server`'s /metrics after a crawl job of the job API, read with
prometheus_client's own parser; the per-host labels of a 500-host crawl bounded; /metrics behind the login when the
server is reachable from other machines; `crawl -metricsFile` and `fetch -metricsPort` without a server."""

from __future__ import annotations

import socket
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import requests

from nutch2.mapred import measures
from nutch2.mapred.job import Counters
from tests.conftest import runner_of
from tests.crawlutil import cli, defines, seed_file
from tests.helpers import nutch2
from tests.searchapp import SOLR, SearchServer, require_solr, wipe_solr
from tests.testweb import TestWeb

parser = pytest.importorskip("prometheus_client.parser")


def samples(text: str) -> dict[str, list[tuple[dict[str, str], float]]]:
    """Sample name -> [(labels, value)], as prometheus_client parses the text format."""
    out: dict[str, list[tuple[dict[str, str], float]]] = {}
    for family in parser.text_string_to_metric_families(text):
        for s in family.samples:
            out.setdefault(s.name, []).append((s.labels, s.value))
    return out


def value(found: dict[str, list[tuple[dict[str, str], float]]], name: str, **labels: str) -> float:
    """The sum of the samples of `name` whose labels include `labels`."""
    return sum(v for ls, v in found.get(name, []) if all(ls.get(k) == x for k, x in labels.items()))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ---------------------------------------------------------------------------------------------------- units
def test_measures_travel_as_counters_and_stay_out_of_summary_lines() -> None:
    from nutch2.config import Configuration
    from nutch2.tools.metrics import JobCollector, JobTotals

    c = Counters("fetch")
    c.incr("fetched", 3)
    measures.count(c, "fetch_pages", "FETCHED", "SUCCESS", n=3)
    for seconds in (0.001, 0.2, 100.0):
        measures.observe(c, "fetch_latency", seconds)
    for host, n in (("a", 5), ("b", 1), ("c", 2), ("d", 1)):
        measures.count(c, "fetch_host_errors", host, n=n)
    gauge = measures.Gauge(c, "fetch_queues")
    gauge.set(7)
    assert "fetch_pages" not in c.summary() and "fetched=3" in c.summary()
    assert measures.parse("l.fetch_pages|FETCHED|SUCCESS") == ("l", "fetch_pages", ("FETCHED", "SUCCESS"), "")
    assert measures.parse("fetched") is None
    conf = Configuration(Path(__file__).resolve().parent.parent / "conf", {"metrics.hosts.top": "2"})
    from prometheus_client import CollectorRegistry, generate_latest

    reg = CollectorRegistry()
    reg.register(JobCollector(conf, lambda: [c], JobTotals()))
    found = samples(generate_latest(reg).decode())
    assert value(found, "nutch2_job_counter_total", job="fetch", counter="fetched") == 3
    assert value(found, "nutch2_fetch_pages_total", status="FETCHED") == 3
    assert value(found, "nutch2_fetch_latency_seconds_count") == 3
    assert value(found, "nutch2_fetch_latency_seconds_bucket", le="0.25") == 2
    assert value(found, "nutch2_fetch_latency_seconds_bucket", le="+Inf") == 3
    assert 100.2 <= value(found, "nutch2_fetch_latency_seconds_sum") <= 100.21
    hosts = {ls["host"]: v for ls, v in found["nutch2_fetch_host_errors_total"]}
    assert hosts == {"a": 5, "c": 2, "other": 2}  # top 2, the rest added up
    assert value(found, "nutch2_fetch_queues") == 7
    gauge.close()  # a task that ended leaves 0 behind
    assert value(samples(generate_latest(reg).decode()), "nutch2_fetch_queues") == 0


def test_a_long_lived_run_keeps_its_counters_bounded_and_its_totals_exact() -> None:
    """A continuous crawl is one run for weeks: one Counters kept per job it ran grew its memory and each metrics
    scrape's work without end. Past a bound the ended jobs are added up per name, and the totals stay exact."""
    from nutch2.config import Configuration
    from nutch2.tools.base import Run
    from nutch2.tools.metrics import JobCollector, JobTotals

    run = Run(emit=lambda _line: None)
    step = run.child()  # the crawl's steps count through a child run
    for _ in range(2000):
        for job in ("generate", "fetch", "parse", "updatedb"):
            c = step.job_counters(job)
            c.incr("done")
            measures.observe(c, "fetch_latency", 0.2)
            step.summary(c)
    live = step.job_counters("fetch")  # a job under way stays apart, counted live
    live.incr("done", 5)
    assert len(run.jobs()) < 100
    assert run.counters_json()["fetch"] == {"done": 2005}
    assert run.counters_json()["parse"] == {"done": 2000}
    conf = Configuration(Path(__file__).resolve().parent.parent / "conf", {})
    from prometheus_client import CollectorRegistry, generate_latest

    reg = CollectorRegistry()
    reg.register(JobCollector(conf, run.jobs, JobTotals()))
    found = samples(generate_latest(reg).decode())
    assert value(found, "nutch2_job_runs_total", job="fetch") == 2001
    assert value(found, "nutch2_job_runs_total", job="updatedb") == 2000
    assert value(found, "nutch2_job_counter_total", job="fetch", counter="done") == 2005
    assert value(found, "nutch2_fetch_latency_seconds_count") == 8000
    ended = JobTotals()  # the server's totals of a job that ended
    ended.add(run.jobs())
    assert ended.runs["generate"] == 2000 and ended.counts["generate"]["done"] == 2000
    step.stopped()  # the job under way is still the last one


# ---------------------------------------------------------------------------------------------------- the server
def _wait(url: str, job_id: str, auth: Any = None, timeout: float = 240.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        info = requests.get(f"{url}/api/jobs/{job_id}", timeout=30, auth=auth).json()
        if info["state"] != "RUNNING":
            return info
        time.sleep(0.3)
    raise AssertionError(f"job {job_id} still running after {timeout:.0f} s")


@pytest.mark.integration
@pytest.mark.slow
def test_metrics_after_a_crawl_job_agree_with_its_counters(tmp_path: Path) -> None:
    require_solr()
    wipe_solr("metrics")
    with TestWeb(hosts=4, pages_per_host=6) as web, \
            SearchServer(["-crawlId", "metrics", "-solr", SOLR, "-jobs", *defines(tmp_path, "sqlite")],
                         tmp_path / "server.log") as server:
        before = samples(requests.get(f"{server.url}/metrics", timeout=30).text)
        assert value(before, "nutch2_job_counter_total") == 0
        r = requests.post(f"{server.url}/api/jobs", timeout=30,
                          json={"type": "crawl", "args": {"seedUrls": [web.seed_url], "rounds": 2, "index": True}})
        assert r.status_code == 201, r.text
        info = _wait(server.url, r.json()["id"])
        assert info["state"] == "FINISHED", info
        r = requests.get(f"{server.url}/metrics", timeout=30)
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain")
        found = samples(r.text)
    fetched = info["counters"]["fetch"]["fetched"]
    assert fetched > 5  # two rounds: the home page, then what it links to
    assert not any(k.startswith(measures.PREFIXES) for c in info["counters"].values() for k in c)  # API: plain
    assert value(found, "nutch2_job_counter_total", job="fetch", counter="fetched") == fetched
    assert value(found, "nutch2_fetch_pages_total", status="FETCHED") == fetched
    assert value(found, "nutch2_fetch_pages_total") == sum(
        n for k, n in info["counters"]["fetch"].items() if k.startswith("status_"))
    assert value(found, "nutch2_fetch_bytes_total") == info["counters"]["fetch"]["bytes"]
    assert value(found, "nutch2_fetch_http_responses_total", code="200") >= fetched
    # every answered page request is one latency observation
    assert value(found, "nutch2_fetch_latency_seconds_count") == value(found, "nutch2_fetch_http_responses_total")
    assert value(found, "nutch2_fetch_robots_denied_total", reason="disallow") == \
        info["counters"]["fetch"].get("robots_denied", 0) > 0  # host 0's /private/ (tests/testweb.py traps)
    assert value(found, "nutch2_job_runs_total", job="fetch") == 2
    assert value(found, "nutch2_job_counter_total", job="parse", counter="parsed") == \
        info["counters"]["parse"]["parsed"]
    parse = info["counters"]["parse"]
    assert value(found, "nutch2_parse_failures_total") == sum(
        parse.get(k, 0) for k in ("failed", "retry_later", "not_parsed")) > 0  # the test web's broken PDF
    writers = {ls["writer"] for ls, _ in found["nutch2_index_documents_total"]}
    assert len(writers) == 1  # the server's Solr
    assert value(found, "nutch2_index_documents_total") == info["counters"]["index"]["indexed"] > 0
    if runner_of("sqlite") == "processes":  # the default on two cores or more: the workers stay for the next job
        assert value(found, "nutch2_worker_processes") >= 1
        assert value(found, "nutch2_worker_rss_bytes") > 10 * 2**20
    assert value(found, "nutch2_api_jobs_total", type="crawl", state="FINISHED") == 1
    assert value(found, "nutch2_api_jobs_running") == 0
    assert value(found, "nutch2_store_latency_seconds_count", call="put") > 0
    assert value(found, "nutch2_fetch_threads") == 0  # no fetch runs now
    assert value(found, "nutch2_searcher_requests_total", route="/api/jobs/{job_id}", method="GET", status="200") >= 1
    assert value(found, "nutch2_searcher_request_seconds_count", route="/metrics") == 1  # this one: once answered


@pytest.mark.integration
@pytest.mark.slow
def test_metrics_ask_for_the_login_when_the_server_is_exposed(tmp_path: Path) -> None:
    token = "s3cret-token-for-metrics-0123456789"
    (tmp_path / "token").write_text(token + "\n")
    args = ["-crawlId", "metrics", "-solr", SOLR, "-host", "0.0.0.0", "-tokenFile", str(tmp_path / "token"),
            *defines(tmp_path, "sqlite")]
    with SearchServer(args, tmp_path / "server.log") as server:
        url = server.url.replace("0.0.0.0", "127.0.0.1")
        refused = requests.get(f"{url}/metrics", timeout=30)
        assert refused.status_code == 401 and "nutch2_" not in refused.text
        assert requests.get(f"{url}/metrics", headers={"Authorization": "Bearer wrong-token-0123456789"},
                            timeout=30).status_code == 401
        r = requests.get(f"{url}/metrics", headers={"Authorization": f"Bearer {token}"}, timeout=30)
        assert r.status_code == 200
        found = samples(r.text)
    assert value(found, "nutch2_searcher_requests_total", route="unrouted", status="401") == 2  # counted, refused


# ---------------------------------------------------------------------------------------------------- no server
@pytest.mark.slow
def test_label_cardinality_stays_bounded_on_a_500_host_crawl(tmp_path: Path) -> None:
    """300 hosts of the test web and 200 more where nothing listens (each one's robots.txt and page fail): the
    per-host errors name the top hosts and "other", and no metric grows with the number of hosts."""
    top = 10
    with TestWeb(hosts=300, pages_per_host=1, traps=False) as web:
        dead = [f"http://127.0.5.{i}:{web.port}/" for i in range(1, 201)]
        seeds = [web.url(h, "/") for h in range(300)] + dead
        # http.timeout 30 s, not the tests' 5: the 300 hosts are served by this (loaded) process, and a live host
        # whose robots.txt waited past the timeout counted as one more failed host (CI, 2026-12-06: 252 of 200)
        d = defines(tmp_path, "sqlite", **{"fetcher.address.allow": "127.0.1.0/24,127.0.2.0/24,127.0.5.0/24",
                                           "metrics.hosts.top": top, "fetcher.threads.fetch": 20,
                                           "http.timeout": 30000})
        path = tmp_path / "crawl.prom"
        assert cli("crawl", seed_file(tmp_path, *seeds), "-rounds", "1", "-crawlId", "many", "-numTasks", "2",
                   "-metricsFile", path, *d) == 0
    found = samples(path.read_text())
    hosts = {ls["host"]: v for ls, v in found["nutch2_fetch_host_errors_total"]}
    assert len(hosts) <= top + 1 and "other" in hosts
    assert sum(hosts.values()) == 200  # every dead host's one URL, none lost by the bound
    assert value(found, "nutch2_fetch_pages_total", status="FETCHED") == 300
    assert value(found, "nutch2_fetch_pages_total", status="RETRY") == 200
    for name, series in found.items():
        assert len(series) < 100, (name, len(series))  # per host, 500 would show
    assert sum(len(s) for s in found.values()) < 600


@pytest.mark.slow
def test_fetch_serves_its_metrics_on_loopback_while_it_runs(tmp_path: Path) -> None:
    d = defines(tmp_path, "sqlite")
    port = free_port()
    with TestWeb(hosts=3, pages_per_host=4, page_delay=1.0) as web:
        assert cli("inject", seed_file(tmp_path, *(web.url(h, "/") for h in range(3))), "-crawlId", "live", *d) == 0
        assert cli("generate", "-crawlId", "live", *d) == 0
        done: list[Any] = []
        runner = threading.Thread(target=lambda: done.append(
            nutch2("fetch", "-all", "-crawlId", "live", "-metricsPort", port, *d)), daemon=True)
        runner.start()
        seen: dict[str, list[tuple[dict[str, str], float]]] = {}
        deadline = time.monotonic() + 120
        while runner.is_alive() and time.monotonic() < deadline:
            try:
                seen = samples(requests.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text)
            except requests.ConnectionError:
                pass
            if value(seen, "nutch2_fetch_threads", state="total") > 0:
                break  # a fetch task's gauges, live from wherever it runs
            time.sleep(0.1)
        runner.join(180)
    assert value(seen, "nutch2_fetch_threads", state="total") > 0
    assert value(seen, "nutch2_job_runs_total", job="fetch") == 1
    result = done[0]
    assert result.returncode == 0, result.stderr
    with pytest.raises(requests.ConnectionError):  # the command ended: so did its endpoint
        requests.get(f"http://127.0.0.1:{port}/metrics", timeout=5)
    assert nutch2("fetch", "-all", "-crawlId", "live", "-metricsPort", "70000", *d).returncode == 2


def test_a_bad_metrics_file_or_port_is_one_line_and_leaves_nothing_listening(tmp_path: Path) -> None:
    from nutch2.config import Configuration
    from nutch2.errors import NutchError
    from nutch2.tools.metrics import exported

    conf = Configuration()
    with socket.socket() as probe:  # a port nothing listens on, then taken by this test
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(NutchError, match=r"-metricsFile .*: cannot write it \(Is a directory\)"):
        with exported(conf, list, port, tmp_path):  # a folder where the file should be
            pass
    with socket.socket() as again:  # the port was never opened: it binds
        again.bind(("127.0.0.1", port))
        again.listen()
        with pytest.raises(NutchError, match=rf"-metricsPort {port}: cannot listen"):
            with exported(conf, list, port, None):
                pass
