"""What a user gets with the defaults of the machine: `nutch2 server -jobs` as a long-lived process runs every job
type one after another, and again, on the runner the machine takes by default (on two or more cores the processes
runner, whose worker processes outlive the thread of the job that started them), and on the local and spark
runners. The crawler is named per job through the job's "conf", as a user of the API names it."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest
import requests

from tests.conftest import runner_of
from tests.crawlutil import defines
from tests.searchapp import SOLR, SearchServer, require_solr, wipe_solr
from tests.testweb import TestWeb

pytestmark = [pytest.mark.integration, pytest.mark.slow]
JOBS = ("inject", "generate", "fetch", "parse", "updatedb", "index", "readdb", "crawl")
# the server names no crawler: each job that fetches names it in its "conf" (server.jobs.conf.allow)
CONF = {"http.agent.name": "MyBot", "fetcher.server.delay": 0.05}
RUNNERS = {"default": "sqlite", "local": "sqlite:local", "spark": "sqlite:spark"}


@pytest.fixture(scope="module")
def web():
    with TestWeb(hosts=3, pages_per_host=30, traps=False) as w:
        yield w


def _job(server: SearchServer, type_: str, args: dict[str, Any], conf: dict[str, Any] | None = None,
         timeout: float = 300) -> dict[str, Any]:
    body: dict[str, Any] = {"type": type_, "args": args}
    if conf:
        body["conf"] = conf
    r = requests.post(f"{server.url}/api/jobs", json=body, timeout=30)
    assert r.status_code == 201, r.text
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        info = requests.get(f"{server.url}/api/jobs/{r.json()['id']}", timeout=30).json()
        if info["state"] != "RUNNING":
            return info
        time.sleep(0.1)
    raise AssertionError(f"{type_} still running after {timeout:.0f} s")


@pytest.mark.timeout(900)
@pytest.mark.parametrize("runner", list(RUNNERS))
def test_the_job_api_runs_every_job_twice_in_a_row(web: TestWeb, tmp_path: Path, runner: str) -> None:
    if runner == "spark":
        pytest.importorskip("pyspark")
    require_solr()
    backend = RUNNERS[runner]
    crawl_id = f"defaults{runner}"
    wipe_solr(crawl_id)
    props = {"log.level": "DEBUG", "spark.master": "local[2]", "spark.ui.enabled": "false"}
    d = defines(tmp_path, backend, **props)
    at = d.index("http.agent.name=nutch2-test")
    d = d[:at - 1] + d[at + 1:]
    with SearchServer(["-crawlId", crawl_id, "-solr", SOLR, "-jobs", *d], tmp_path / "server.log") as server:
        refused = _job(server, "fetch", {"all": True})
        assert refused["state"] == "FAILED" and '"conf": {"http.agent.name": "MyBot"}' in refused["error"], refused
        states = []
        for _ in range(2):
            info = _job(server, "inject", {"seedUrls": [web.seed_url, web.page_url(1, 0)]})
            states.append(("inject", info["state"], info["msg"]))
            info = _job(server, "generate", {"topN": 10})
            batch = info["result"]["batchId"]
            states.append(("generate", info["state"], info["msg"]))
            for type_ in ("fetch", "parse", "updatedb", "index"):
                info = _job(server, type_, {"batch": batch}, CONF)
                states.append((type_, info["state"], info["msg"]))
            assert info["counters"]["index"]["indexed"] >= 1, info
            info = _job(server, "readdb", {"stats": True})
            states.append(("readdb", info["state"], info["msg"]))
            info = _job(server, "crawl", {"seedUrls": [web.seed_url], "rounds": 1, "topN": 5, "index": True}, CONF)
            states.append(("crawl", info["state"], info["msg"]))
            assert info["counters"]["fetch"]["fetched"] >= 1, info
        failed = [s for s in states if s[1] != "FINISHED"]
        assert not failed and [s[0] for s in states] == [*JOBS, *JOBS], failed or states
        log = (tmp_path / "server.log").read_text()
    expected = runner_of(backend)
    if runner == "default" and (os.cpu_count() or 1) > 1:
        assert expected == "processes"
    if expected == "spark":  # one SparkContext serves every job of the server
        assert log.count("spark: SparkContext started") == 1, log[-2000:]
    else:
        assert f"fetch: {expected} runner: " in log, log[-2000:]
    assert "BrokenPool" not in log and "Traceback" not in log, log[-3000:]


def test_a_job_sets_only_the_properties_it_may(tmp_path: Path) -> None:
    require_solr()
    d = defines(tmp_path, "sqlite")
    with SearchServer(["-crawlId", "defaultsconf", "-solr", SOLR, "-jobs", *d], tmp_path / "server.log") as server:
        for conf, words in (({"storage.data.dir": "/etc"}, "conf.storage.data.dir: a job cannot set this property"),
                            ({"plugin.includes": ".*"}, "a job cannot set this property"),
                            ({"fetcher.server.delay": "soon"}, "conf.fetcher.server.delay: "),
                            ({"http.agent.name": ["a"]}, "give a string, number or boolean"),
                            ([1], "conf must be an object")):
            r = requests.post(f"{server.url}/api/jobs", json={"type": "readdb", "args": {"stats": True},
                                                              "conf": conf}, timeout=30)
            assert r.status_code == 400 and words in r.json()["error"], (conf, r.json())
        r = requests.post(f"{server.url}/api/jobs", json={"type": "readdb", "args": {"D": "x=y", "solr": "u"}},
                          timeout=30)
        error = r.json()["error"]
        assert r.status_code == 400 and "properties go in the job's \"conf\"" in error, error
        assert "solr" not in error.split("this job takes", 1)[1], error  # not offered: the server's own
