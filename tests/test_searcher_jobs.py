"""Nutch 2's job API (`nutch2 server -jobs`): a full round over HTTP, every tool of the CLI as a job type, and the
ways a job is refused, fails or is stopped."""

from __future__ import annotations

import signal
import time
from pathlib import Path
from typing import Any

import pytest
import requests

from nutch2.marks import Mark
from nutch2.stores import crawl_lock
from nutch2.urls.tableutil import reverse_url
from tests.conftest import runner_of
from tests.crawlutil import conf_for, defines, passes_filters, rows, seed_file
from tests.searchapp import SOLR, SearchServer, require_solr, wipe_solr
from tests.testweb import TestWeb

pytestmark = [pytest.mark.integration, pytest.mark.slow]
CRAWL = "jobs"
HTTP_TIMEOUT = 5  # seconds: what tests.crawlutil.defines sets


@pytest.fixture(scope="module")
def web():
    with TestWeb(hosts=3, pages_per_host=4, slow_seconds=5.0) as w:
        yield w


@pytest.fixture(scope="module")
def tmp(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("jobs")


@pytest.fixture(scope="module")
def server(tmp: Path):
    require_solr()
    wipe_solr(CRAWL)
    d = defines(tmp, "sqlite")
    with SearchServer(["-crawlId", CRAWL, "-solr", SOLR, "-jobs", *d], tmp / "server.log") as s:
        yield s


def post(server: SearchServer, body: Any, **kw: Any) -> requests.Response:
    return requests.post(f"{server.url}/api/jobs", json=body, timeout=30, **kw)


def wait(server: SearchServer, job_id: str, timeout: float = 120.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        info = requests.get(f"{server.url}/api/jobs/{job_id}", timeout=30).json()
        if info["state"] != "RUNNING":
            return info
        time.sleep(0.2)
    raise AssertionError(f"job {job_id} still running after {timeout:.0f} s")


def run(server: SearchServer, type_: str, **args: Any) -> dict[str, Any]:
    r = post(server, {"type": type_, "args": args})
    assert r.status_code == 201, r.text
    assert r.headers["location"] == f"/api/jobs/{r.json()['id']}"
    # a quick job (readdb) may be done before the reply is written: the reply tells its state as it is then
    assert r.json()["state"] in ("RUNNING", "FINISHED") and r.json()["type"] == type_
    info = wait(server, r.json()["id"])
    assert info["state"] == "FINISHED", info
    return info


def test_a_full_round_over_the_job_api(server: SearchServer, web: TestWeb, tmp: Path) -> None:
    info = run(server, "inject", seedUrls=[web.seed_url])
    assert info["counters"]["inject"]["injected"] == 1 and " injected=1 " in info["msg"]
    info = run(server, "generate", topN=100)
    batch = info["result"]["batchId"]
    assert batch and info["counters"]["generate"]["generated"] == 1
    fetched = run(server, "fetch", batch=batch, threads=2)
    assert fetched["counters"]["fetch"]["fetched"] == 1 and fetched["progress"]["elapsedSeconds"] >= 0
    assert run(server, "parse", batch=batch)["counters"]["parse"]["parsed"] == 1
    updated = run(server, "updatedb", batch=batch)["counters"]["updatedb"]
    conf = conf_for(tmp, "sqlite")
    assert updated["updated"] == 1
    assert updated["new_rows"] == sum(passes_filters(conf, u) for u in web.pages[web.seed_url].links)
    indexed = run(server, "index", batch=batch)
    assert indexed["counters"]["index"]["indexed"] == 1 and indexed["msg"].startswith("index: finished in ")
    # the table and the index say the same as the API
    home = rows(conf, CRAWL)[reverse_url(web.seed_url)]
    assert Mark.INDEX.check(home) == batch == home.batch_id
    hits = requests.get(f"{server.url}/api/search", params={"q": web.pages[web.seed_url].unique_word},
                        timeout=30).json()
    assert [h["url"] for h in hits["hits"]] == [web.seed_url]
    batches = requests.get(f"{server.url}/api/batches", timeout=30).json()["batches"]
    steps = ("generated", "fetched", "parsed", "updated", "indexed")
    assert [(b["batchId"], *(b[s] for s in steps), b["stage"]) for b in batches] == [(batch, 1, 1, 1, 1, 1, "indexed")]
    listed = requests.get(f"{server.url}/api/jobs", timeout=30).json()["jobs"]
    assert [j["type"] for j in listed] == ["index", "updatedb", "parse", "fetch", "generate", "inject"]
    assert all(len(j["id"]) >= 16 for j in listed)  # random ids, not a counter
    # the tools beyond the batch steps are jobs too: readdb, crawl, sitemap, warc...
    stats = run(server, "readdb", stats=True)
    assert stats["result"]["total"] >= 1 and stats["result"]["status"]["FETCHED"] == 1
    assert stats["msg"].startswith(f"readdb: {stats['result']['total']} URLs: ") and "FETCHED 1" in stats["msg"]
    crawled = run(server, "crawl", seedUrls=[web.seed_url], rounds=1, topN=3)
    assert crawled["counters"]["fetch"]["fetched"] >= 1 and "crawl: jobs: " in crawled["msg"]
    types = requests.get(f"{server.url}/api/jobs/types", timeout=30).json()["types"]
    assert {"inject", "sitemap", "generate", "fetch", "crawl", "warc", "warcimport", "readdb"} <= set(types)
    assert types["fetch"]["args"]["properties"]["threads"] == {
        "type": "integer", "description": "fetcher threads per task (fetcher.threads.fetch)", "minimum": 1,
        "maximum": 1000}


def test_bad_jobs_are_refused_with_a_reason(server: SearchServer) -> None:
    for body, status, words in (
        ({"type": "nope"}, 400, "unknown job type 'nope'; use one of inject, sitemap, generate"),
        ({"type": "server"}, 400, "unknown job type 'server'"),
        ({"type": "fetch", "args": {}}, 400, "fetch: give exactly one of args.batch or args.all"),
        ({"type": "fetch", "args": {"batch": "b", "all": True}}, 400, "exactly one of"),
        ({"type": "fetch", "args": {"batch": "--conf"}}, 400, "'--conf' is not a batch id"),
        ({"type": "fetch", "args": {"batch": "b", "numTasks": 157000}}, 400, "args.numTasks 157000 is out of range"),
        ({"type": "generate", "args": {"topN": "ten"}}, 400, "args.topN must be a whole number"),
        ({"type": "generate", "args": {"depth": 3}}, 400, "unknown args depth"),
        ({"type": "inject", "args": {}}, 400, "give the seeds"),
        ({"type": "inject", "args": {"seedDir": "/etc"}}, 400, "this server has no files folder"),
        ({"type": "index", "args": {"all": True, "solr": "http://evil.example/solr/x"}}, 400,
         "args.solr cannot be set through the job API"),
        ({"type": "index", "args": {"batch": "x"}, "crawlId": "other"}, 400, "runs jobs for crawl 'jobs'"),
        ({"args": {}}, 400, '{"type": "inject|generate'),
        ([1, 2], 400, '{"type": "inject|generate'),
    ):
        r = post(server, body)
        assert r.status_code == status and words in r.json()["error"], (body, r.json())
    r = requests.post(f"{server.url}/api/jobs", data="{nope", headers={"Content-Type": "application/json"},
                      timeout=30)
    assert r.status_code == 400 and "not valid JSON" in r.json()["error"]
    # what a form on another site could send: refused before it is read
    r = requests.post(f"{server.url}/api/jobs", data='{"type": "inject"}', headers={"Content-Type": "text/plain"},
                      timeout=30)
    assert r.status_code == 415
    r = post(server, {"type": "generate"}, headers={"Origin": "http://evil.example"})
    assert r.status_code == 403
    assert requests.get(f"{server.url}/api/jobs/nope", timeout=30).status_code == 404


def test_an_unknown_batch_fails_with_the_commands_message(server: SearchServer, web: TestWeb) -> None:
    run(server, "inject", seedUrls=[web.seed_url])  # the crawl exists whatever ran before (else: "no crawl db")
    r = post(server, {"type": "fetch", "args": {"batch": "123-456"}})
    assert r.status_code == 201
    info = wait(server, r.json()["id"])
    assert info["state"] == "FAILED" and info["exitCode"] == 1
    assert info["error"] == ("nutch2 fetch: error: no rows carry batch id '123-456' from generate; check the "
                             'id printed by a generate job (or give "all": true in the args)')  # as a job
    # a stop of the ended job: nothing is accepted for later (202 said so); the job as it ended, unchanged
    stopped = requests.post(f"{server.url}/api/jobs/{info['id']}/stop", json={}, timeout=30)
    assert stopped.status_code == 200 and stopped.json()["state"] == "FAILED", stopped.text


def test_one_job_at_a_time_per_crawl(server: SearchServer, web: TestWeb, tmp: Path) -> None:
    # a batch with the slow page (5 s): the fetch job is still running when the next one is posted
    run(server, "inject", seedUrls=[web.trap_url("/traps/slow.html")])
    batch = run(server, "generate", topN=100)["result"]["batchId"]
    assert batch
    first = post(server, {"type": "fetch", "args": {"batch": batch}})
    assert first.status_code == 201
    second = post(server, {"type": "parse", "args": {"batch": batch}})
    assert second.status_code == 409
    assert second.json()["error"].startswith(f"job {first.json()['id']} (fetch) is still running on this crawl")
    stopped = requests.post(f"{server.url}/api/jobs/{first.json()['id']}/stop", json={}, timeout=30)  # JSON only
    assert stopped.status_code == 202
    assert wait(server, first.json()["id"])["state"] == "KILLED"
    # a CLI job holding the crawl's lock (inject, generate, updatedb) keeps API jobs out too
    lock = crawl_lock(conf_for(tmp, "sqlite"), CRAWL, "updatedb")
    try:
        r = post(server, {"type": "generate", "args": {}})
        assert r.status_code == 409 and "holds this crawl's lock" in r.json()["error"]
        assert "/" not in r.json()["error"]  # no path of the server
    finally:
        lock.release()
    # and after it, the crawl goes on where it stopped: fetch -resume finishes the batch
    assert run(server, "fetch", batch=batch, resume=True)["counters"]["fetch"]["fetched"] >= 1


@pytest.fixture(scope="module")
def big_web():
    with TestWeb(hosts=3, pages_per_host=30, traps=False) as w:
        yield w


@pytest.mark.timeout(300)
@pytest.mark.parametrize(("backend", "sig"), [("sqlite", signal.SIGTERM), ("sqlite:local", signal.SIGINT)])
def test_a_running_job_stops_with_the_server_and_its_rerun_is_exact(big_web: TestWeb, tmp_path: Path, backend: str,
                                                                     sig: int) -> None:
    import psutil

    from tests.helpers import nutch2, page_requests, same_rows, table

    props = {"fetcher.server.delay": 0.5, "fetcher.write.batch.size": 5}
    d = defines(tmp_path, backend, **props)
    conf = conf_for(tmp_path, backend, **props)
    ref, mine = "stopref", "stopjob"
    seeds = seed_file(tmp_path, *[big_web.page_url(h, i) for h in range(3) for i in range(30)])
    for cid in (ref, mine):
        assert nutch2("inject", seeds, "-crawlId", cid, *d).returncode == 0
        assert nutch2("generate", "-batchId", "B", "-crawlId", cid, *d).stdout.strip() == "B"
    assert nutch2("fetch", "B", "-crawlId", ref, *d).returncode == 0  # the uninterrupted run
    big_web.reset_log()
    server = SearchServer(["-crawlId", mine, "-solr", SOLR, "-jobs", *d], tmp_path / "server.log")
    try:
        r = post(server, {"type": "fetch", "args": {"batch": "B"}})
        assert r.status_code == 201, r.text
        deadline = time.monotonic() + 120
        while sum(page_requests(big_web).values()) < 6:
            assert time.monotonic() < deadline, server.output()
            time.sleep(0.05)
        assert requests.get(f"{server.url}/api/jobs/{r.json()['id']}", timeout=30).json()["state"] == "RUNNING"
        children = psutil.Process(server.proc.pid).children(recursive=True)
        assert children or runner_of(backend) == "local", "the processes runner's workers: children of the server"
        server.proc.send_signal(sig)
        server.proc.wait(HTTP_TIMEOUT + 35)  # in-flight requests end, then uvicorn's graceful shutdown
    finally:
        server.stop()
    out = server.output()
    job = r.json()["id"]
    assert server.proc.returncode == 0 and out.rstrip().endswith("server: stopped"), out
    assert f"server: stopping job {job} (fetch) with the server" in out
    assert f"server: job {job} (fetch) KILLED: stopped with the server: what it did is kept" in out \
        and "Traceback" not in out
    alive = psutil.wait_procs(children, timeout=10)[1]
    assert not alive, f"left running: {alive}"  # no worker outlives the server
    done = sum(1 for p in table(conf, mine).values() if Mark.FETCH.check(p))
    assert 6 <= done < 90, done  # what was fetched was written; the rest was left
    again = nutch2("fetch", "B", "-resume", "-crawlId", mine, *d)
    assert again.returncode == 0, again.stderr
    assert max(page_requests(big_web).values()) == 1  # no page requested twice
    same_rows(table(conf, mine), table(conf, ref))


def test_a_running_jobs_counters_are_live(server: SearchServer) -> None:
    """GET /api/jobs/ID while a fetch runs shows the pages fetched so far (the tool's own counters, read live),
    and they only grow; the job's end keeps them."""
    with TestWeb(hosts=1, pages_per_host=4, traps=False, page_delay=0.7) as slow:  # URLs the crawl never saw
        urls = [slow.page_url(0, i) for i in range(4)]  # one host: one request at a time, each 0.7 s late
        run(server, "inject", seedUrls=urls)
        batch = run(server, "generate", topN=1000)["result"]["batchId"]
        job = post(server, {"type": "fetch", "args": {"batch": batch}}).json()["id"]
        seen: list[int] = []
        lines: set[str] = set()
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            info = requests.get(f"{server.url}/api/jobs/{job}", timeout=30).json()
            if info["state"] != "RUNNING":
                break
            seen.append(info["counters"].get("fetch", {}).get("fetched", 0))
            lines.add(info["progress"]["lastLine"])
            time.sleep(0.1)
    assert info["state"] == "FINISHED", info
    fetched = info["counters"]["fetch"]["fetched"]
    assert fetched >= len(urls) and seen == sorted(seen)
    assert any(0 < n < fetched for n in seen), seen  # counted while the job ran, not only at its end
    assert any(line.startswith("fetch: ") for line in lines), lines  # its tasks run in workers: the runner's line


@pytest.mark.timeout(300)
def test_a_job_that_holds_its_interpreter_leaves_the_server_answering(web: TestWeb, tmp_path: Path) -> None:
    """readdb -regex with a pattern that backtracks for ever on a URL of the table (a site chooses its URLs, an
    API client the pattern): every task of the server's jobs runs in a worker process, so the server answers
    while it runs; a stop that the task cannot see ends the job by killing its workers (http.timeout + 5 s
    later), and the next job runs on fresh ones. The dump it left is written again by the same job."""
    files = tmp_path / "files"
    files.mkdir()
    d = defines(tmp_path, "sqlite", **{"server.files.dir": files})
    server = SearchServer(["-crawlId", "redos", "-solr", SOLR, "-jobs", *d], tmp_path / "server.log")
    try:
        run(server, "inject", seedUrls=[web.seed_url.rstrip("/") + "/" + "a" * 40 + "!"])
        r = post(server, {"type": "readdb", "args": {"dump": "redos", "regex": r"^http://[^/]+/(a+)+$"}})
        assert r.status_code == 201, r.text
        job = r.json()["id"]
        for _ in range(5):  # the server answers its API and its pages meanwhile
            assert requests.get(f"{server.url}/api/jobs/{job}", timeout=30).json()["state"] == "RUNNING"
            assert requests.get(f"{server.url}/api/stats", timeout=30).status_code == 200
            time.sleep(0.3)
        assert requests.post(f"{server.url}/api/jobs/{job}/stop", json={}, timeout=30).status_code == 202
        info = wait(server, job, timeout=HTTP_TIMEOUT + 60)
        assert info["state"] == "KILLED", info
        assert f"server: job {job} (readdb) did not stop within {HTTP_TIMEOUT + 5} s: killed its" in server.output()
        assert run(server, "readdb", stats=True)["result"]["total"] == 1  # fresh workers
        again = run(server, "readdb", dump="redos", regex=r"^http://[^/]+/a+!$")
        assert again["counters"]["readdb"]["dumped"] == 1 and (files / "redos" / "_SUCCESS").is_file()
    finally:
        server.stop()
    assert "Traceback" not in server.output()


@pytest.mark.timeout(300)
def test_a_job_whose_worker_died_says_how_the_api_goes_on(big_web: TestWeb, tmp_path: Path) -> None:
    """kill -9 of a worker mid-fetch: the job fails with one line saying how to go on in the API's terms
    ("resume": true), and that job finishes the batch."""
    import psutil

    from tests.helpers import page_requests

    d = defines(tmp_path, "sqlite", **{"fetcher.server.delay": 0.3})
    seeds = [big_web.page_url(h, i) for h in range(3) for i in range(30)]
    server = SearchServer(["-crawlId", "died", "-solr", SOLR, "-jobs", *d], tmp_path / "server.log")
    try:
        run(server, "inject", seedUrls=seeds)
        batch = run(server, "generate", topN=1000)["result"]["batchId"]
        big_web.reset_log()
        job = post(server, {"type": "fetch", "args": {"batch": batch}}).json()["id"]
        deadline = time.monotonic() + 120
        while sum(page_requests(big_web).values()) < 6:  # some pages fetched, most not
            assert time.monotonic() < deadline, server.output()
            time.sleep(0.05)
        for worker in psutil.Process(server.proc.pid).children():
            worker.kill()
        info = wait(server, job)
        assert info["state"] == "FAILED", info
        assert info["error"] == ('nutch2 fetch: error: a worker process died (killed, or out of memory); what '
                                 'it wrote is kept and the job is safe to run again: submit the same job with '
                                 '"resume": true in its args to go on'), info
        assert info["counters"]["fetch"].get("fetched", 0) >= 1  # what the dead workers counted is kept
        resumed = run(server, "fetch", batch=batch, resume=True)["counters"]["fetch"]
        assert resumed.get("skipped_already_fetched", 0) >= 1
    finally:
        server.stop()
