"""The spark runner (mapreduce.framework.name=spark): the same rows and counters as the local runner on the test
web; Spark's retries of fetch tasks finish every URL of a 400-URL batch, request none twice but those the lost
attempt had in flight (once more), and never break a host's delay — an executor JVM killed mid-fetch of a crawl
on local-cluster (spark.task.maxFailures=4; one SparkContext for the whole crawl; executors found without the
venv on PATH), a Worker of the standalone cluster of `docker/services.sh start spark` lost mid-fetch (Spark's
defaults); and a failed fetch (a Python worker killed, local master: no retry) is one line, after which -resume
finishes the batch."""

from __future__ import annotations

import collections
import contextlib
import os
import re
import signal
import socket
import subprocess
import sys
import time
import uuid
from functools import partial
from pathlib import Path

import pytest
import requests

from nutch2.mapred.job import stable_hash
from nutch2.marks import Mark
from nutch2.status import CrawlStatus
from nutch2.stores import open_store
from nutch2.urls.checker import queue_id
from nutch2.urls.tableutil import unreverse_url
from tests import helpers
from tests.conftest import SERVICE_STORES, SHARED_STORES
from tests.crawlutil import cli, conf_for, defines
from tests.helpers import same_rows, table
from tests.testweb import TestWeb

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parent.parent
SPARK = {"mapreduce.framework.name": "spark", "spark.master": "local[2]", "spark.ui.enabled": "false"}
SOLR = os.environ.get("NUTCH2_SOLR_URL", "http://127.0.0.1:8983/solr/nutch")
STANDALONE = "spark://127.0.0.1:7077"
MASTER_UI = "http://127.0.0.1:8090"
SUMMARY = re.compile(r"^(\w+): finished in [\d.]+ s: (.*)$", re.M)
nutch2 = partial(helpers.nutch2, timeout=600)  # tests/helpers.py, with a longer time limit


@pytest.fixture(scope="module", autouse=True)
def pyspark_installed() -> None:
    try:
        import pyspark  # noqa: F401
    except ImportError:
        if os.environ.get("CI"):
            pytest.fail("pyspark is not installed: pip install -e '.[all]' (tests/run.sh does)")
        pytest.skip("pyspark is not installed (pip install -e '.[spark]')")


@pytest.fixture(scope="module")
def web():
    with TestWeb(hosts=3, pages_per_host=12, slow_seconds=0.5) as w:
        yield w


def _solr() -> str | None:
    try:
        requests.get(f"{SOLR}/admin/ping", timeout=3).raise_for_status()
        return SOLR
    except requests.RequestException:
        return None


@pytest.mark.timeout(900)
@pytest.mark.parametrize("backend", SHARED_STORES)
def test_spark_gives_the_rows_and_counters_of_the_local_runner(web: TestWeb, tmp_path: Path, backend: str,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    solr = _solr()
    if solr is None and os.environ.get("CI"):
        pytest.fail(f"Solr is not answering at {SOLR}")
    seeds = tmp_path / "seeds.txt"
    seeds.write_text(web.seed_url + "\n" + "".join(web.page_url(h, i) + "\n" for h in range(3) for i in (3, 7)))
    results = {}
    for runner in ("local", "spark"):
        props = {"fetcher.server.delay": 0.05, **(SPARK if runner == "spark" else {})}
        d = defines(tmp_path, backend, **props)
        crawl_id = f"sp{runner}{uuid.uuid4().hex[:8]}"
        capsys.readouterr()
        err, stdout = [], []
        assert cli("inject", seeds, "-crawlId", crawl_id, *d) == 0
        for _ in range(2):  # two rounds, every job once per round
            assert cli("generate", "-crawlId", crawl_id, *d) == 0
            out = capsys.readouterr()
            err.append(out.err)
            batch = out.out.strip().splitlines()[-1]
            for step in ("fetch", "parse", "updatedb"):
                assert cli(step, batch, "-crawlId", crawl_id, *d) == 0, (runner, step)
            if solr:
                assert cli("index", batch, "-solr", solr, "-crawlId", crawl_id, *d) == 0
        assert cli("readdb", "-stats", "-crawlId", crawl_id, *d) == 0
        out = capsys.readouterr()
        err.append(out.err)
        stdout.append(out.out)
        conf = conf_for(tmp_path, backend, **props)
        results[runner] = (table(conf, crawl_id), SUMMARY.findall("".join(err)), "".join(stdout),
                           _names(conf, crawl_id))
    (rows_l, sum_l, out_l, names_l), (rows_s, sum_s, out_s, names_s) = results["local"], results["spark"]
    assert sum_l == sum_s and len(sum_l) >= 8
    assert out_l == out_s  # readdb -stats, and the last index line
    same_rows(rows_l, rows_s, names_l, names_s)
    assert sum(p.status == CrawlStatus.FETCHED for p in rows_s.values()) >= 10
    if solr:
        assert sum(Mark.INDEX.check(p) is not None for p in rows_s.values()) >= 5


def _names(conf, crawl_id: str) -> dict[str, str]:
    from nutch2.crawldb.journal import Journal

    with open_store(conf, crawl_id, create=False) as store:
        return {rec.batch_id: f"round{i}" for i, rec in enumerate(Journal(store).batches(), 1)}


# ---------------------------------------------------------------------------------------------- processes
def _procs() -> dict[int, tuple[int, bytes]]:
    """pid -> (parent pid, command line) of every process."""
    procs = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            ppid = int(stat.read_text().rsplit(")", 1)[1].split()[1])
            cmd = (stat.parent / "cmdline").read_bytes()
        except (OSError, ValueError, IndexError):
            continue
        procs[int(stat.parent.name)] = (ppid, cmd)
    return procs


def _below(pid: int, root: int, procs: dict[int, tuple[int, bytes]]) -> bool:
    while pid > 1 and pid in procs:
        if pid == root:
            return True
        pid = procs[pid][0]
    return False


def _python_workers(root: int) -> list[int]:
    """Spark's Python workers below a process: forked by pyspark.daemon (the daemon's children)."""
    procs = _procs()
    daemons = {p for p, (_, cmd) in procs.items() if b"pyspark.daemon" in cmd and _below(p, root, procs)}
    return [p for p, (pp, _) in procs.items() if pp in daemons]


def _fetching(root: int, port: int) -> bool:
    """Does a Python worker below `root` hold a connection to the test web (port): is a fetch task running there?"""
    inodes = set()
    for pid in _python_workers(root):
        for fd in Path(f"/proc/{pid}/fd").glob("*"):
            with contextlib.suppress(OSError):
                target = os.readlink(fd)
                if target.startswith("socket:["):
                    inodes.add(target[8:-1])
    for table_file in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError):
            for line in Path(table_file).read_text().splitlines()[1:]:
                fields = line.split()
                if int(fields[2].rsplit(":", 1)[1], 16) == port and fields[9] in inodes:
                    return True
    return False


def fetch_partition(url: str, tasks: int) -> int:
    """The fetch task (of `tasks`) whose queues hold the host of `url` (FetcherJob.partition, byHost)."""
    return stable_hash(queue_id(url, "byHost")) % tasks


def _executors(root: int) -> list[int]:
    """The executor JVMs below a process."""
    procs = _procs()
    return [p for p, (_, cmd) in procs.items() if b"CoarseGrainedExecutorBackend" in cmd and _below(p, root, procs)]


# ---------------------------------------------------------------------------------------------- a crawl with a kill
DELAY = 0.3  # fetcher.server.delay of the kill tests


def _crawl_with_a_kill(web: TestWeb, tmp_path: Path, backend: str, props: dict, kill, rounds: int = 2,
                       env: dict[str, str] | None = None, seeds_per_host: int = 10,
                       ) -> tuple[subprocess.CompletedProcess[str], str]:
    """`crawl` of the first pages of every host (their links lead to the rest), and kill() once the web has seen 15
    page requests (it returns what it killed, or None to be asked again); the crawl must finish."""
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("".join(web.page_url(h, i) + "\n" for h in range(web.n_hosts) for i in range(seeds_per_host)))
    d = defines(tmp_path, backend, **{**SPARK, "fetcher.server.delay": DELAY, "fetcher.threads.fetch": 4,
                                      "fetcher.lease.timeout": 6, **props})
    crawl_id = f"sk{uuid.uuid4().hex[:8]}"
    web.reset_log()
    proc = subprocess.Popen([sys.executable, "-m", "nutch2.cli", "crawl", seeds, "-rounds", str(rounds), "-crawlId",
                             crawl_id, *d], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env)
    killed = None
    deadline = time.monotonic() + 300
    while proc.poll() is None and time.monotonic() < deadline and killed is None:
        if len([r for r in web.requests() if r.path != "/robots.txt"]) >= 15:
            killed = kill(proc.pid)
        time.sleep(0.05)
    out, err = proc.communicate(timeout=600)
    print("".join(f"{line}\n" for line in err.splitlines() if line.startswith(("fetch", "spark", "crawl"))))
    assert killed is not None, f"nothing was killed mid-fetch: {err}"
    assert proc.returncode == 0, err
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err), crawl_id


def _each_url_once_and_politely(web: TestWeb, conf, crawl_id: str, stderr: str, total: int) -> None:
    """Every one of the `total` page URLs FETCHED and requested once, plus at most once more for those the lost
    attempt had in flight (counted: refetched_in_flight); no host's requests closer than its delay; every
    fetched row counted once."""
    counts = collections.Counter(f"{r.host}{r.path}" for r in web.requests() if r.path != "/robots.txt")
    summaries = [dict(x.split("=", 1) for x in line.split()) for job, line in SUMMARY.findall(stderr)
                 if job == "fetch"]
    refetched = sum(int(c.get("refetched_in_flight", 0)) for c in summaries)
    twice = sorted(u for u, n in counts.items() if n > 1)
    assert max(counts.values()) <= 2 and len(twice) <= refetched <= 8, (twice, refetched)  # 4 threads, in flight
    closest = web.closest_requests()
    assert min(closest.values()) >= DELAY * 0.9, closest
    rows = {_short(web, k): p for k, p in table(conf, crawl_id).items()}
    fetched = {u for u, p in rows.items() if p.status == CrawlStatus.FETCHED}
    assert len(rows) == len(fetched) == len(counts) == total, (len(rows), len(fetched), len(counts))
    assert sum(int(c.get("fetched", 0)) for c in summaries) == total  # counted once, not per attempt
    assert not any("result_lost" in c for c in summaries), summaries
    print(f"{total} of {total} FETCHED; {refetched} taken over, {len(twice)} requested twice")


def _short(web: TestWeb, key: str) -> str:
    """A row key as the test web logs its URL (host and path)."""
    return unreverse_url(key).split("//", 1)[1].replace(f":{web.port}", "")


@pytest.mark.timeout(900)
def test_an_executor_killed_mid_fetch_on_local_cluster(tmp_path: Path) -> None:
    """local-cluster: separate executor JVMs, each with its own Python workers; one is killed (kill -9 of the JVM)
    while its fetch task runs, with spark.task.maxFailures=4: Spark re-runs what it lost (the task, and the map
    output that lived in that executor). PATH leads to a python3 without nutch2: executors must not use it."""
    bad = tmp_path / "bin"
    bad.mkdir()
    (bad / "python3").write_text("#!/bin/sh\necho 'not the Python of nutch2' >&2\nexit 3\n")
    (bad / "python3").chmod(0o755)
    venv_bin = str(Path(sys.executable).parent)
    path = os.pathsep.join([str(bad), *(p for p in os.environ.get("PATH", "").split(os.pathsep) if p != venv_bin)])
    env = {k: v for k, v in os.environ.items() if k != "PYSPARK_PYTHON"} | {"PATH": path}

    def kill_an_executor(driver: int) -> int | None:
        for pid in _executors(driver):
            if _fetching(pid, web.port):
                os.kill(pid, signal.SIGKILL)
                return pid
        return None

    props = {"spark.master": "local-cluster[2,1,1024]", "spark.task.maxFailures": 4, "mapreduce.job.tasks": 2}
    with TestWeb(hosts=4, pages_per_host=100, traps=False) as web:
        p, crawl_id = _crawl_with_a_kill(web, tmp_path, "sqlite", props, kill_an_executor, env=env,
                                         seeds_per_host=100)
        assert len(re.findall(r"^spark: SparkContext started", p.stderr, re.M)) == 1, p.stderr  # both rounds
        assert f"executors run {sys.executable}" in p.stderr
        assert re.search(rf"crawl: {crawl_id}: 400 URLs: FETCHED=400$", p.stdout, re.M), p.stdout
        _each_url_once_and_politely(web, conf_for(tmp_path, "sqlite"), crawl_id, p.stderr, 400)
        assert len(re.findall(r"^crawl: round \d of 2", p.stderr, re.M)) == 2


def _standalone() -> tuple[str, list[str]]:
    """The standalone master's Spark home and a service store, or skip (fail in CI)."""
    try:
        requests.get(f"{MASTER_UI}/json/", timeout=3).raise_for_status()
    except requests.RequestException:
        if os.environ.get("CI"):
            pytest.fail("the Spark standalone master is not running: docker/services.sh start spark")
        pytest.skip("no Spark standalone master (docker/services.sh start spark)")
    service = SERVICE_STORES
    if not service:
        if os.environ.get("CI"):
            pytest.fail("a cluster needs a store every executor reaches: NUTCH2_TEST_STORES=hbase,cassandra")
        pytest.skip("no service store (NUTCH2_TEST_STORES)")
    import pyspark

    return str(Path(pyspark.__file__).parent), service


def _alive_workers() -> list[dict]:
    state = requests.get(f"{MASTER_UI}/json/", timeout=3).json()
    return [w for w in state.get("workers", []) if w.get("state") == "ALIVE"]


@pytest.mark.timeout(900)
def test_a_worker_lost_mid_fetch_on_the_standalone_cluster(tmp_path: Path) -> None:
    """A second Worker (1 core) joins the master of `docker/services.sh start spark`, so that one of the three
    fetch tasks runs in its executor; the Worker is killed (kill -9) mid-fetch. Spark's defaults: a lost Worker is
    not a task failure, Spark runs the task again (and the map output it lost). sqlite is refused in one line."""
    home, service = _standalone()
    before = len(_alive_workers())
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        ui = s.getsockname()[1]
    env = {**os.environ, "SPARK_HOME": home, "SPARK_LOCAL_IP": "127.0.0.1"}
    if os.environ.get("JAVA17_HOME"):  # the Java docker/services/spark.sh runs the master with
        env["JAVA_HOME"] = os.environ["JAVA17_HOME"]
    worker = subprocess.Popen([f"{home}/bin/spark-class", "org.apache.spark.deploy.worker.Worker", STANDALONE,
                               "--host", "127.0.0.1", "--cores", "1", "--memory", "1g", "--webui-port", str(ui),
                               "--work-dir", str(tmp_path / "work")], env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    executors: set[int] = set()
    try:
        deadline = time.monotonic() + 120
        while len(_alive_workers()) <= before:
            assert worker.poll() is None and time.monotonic() < deadline, "the second Worker did not register"
            time.sleep(0.5)

        def lose_the_worker(_driver: int) -> int | None:
            if not _fetching(worker.pid, web.port):
                return None  # its executor runs no fetch task (yet)
            executors.update(_executors(worker.pid))
            worker.send_signal(signal.SIGKILL)
            return worker.pid

        props = {"spark.master": STANDALONE, "mapreduce.job.tasks": 3}
        # 10 hosts: crc32 puts some in each of the 3 fetch partitions (with 6, partition 1 had none, and the
        # Worker's task, when it got that one, had nothing to fetch and nothing to lose)
        with TestWeb(hosts=10, pages_per_host=40, traps=False) as web:
            assert {fetch_partition(web.base_url(h), 3) for h in range(web.n_hosts)} == {0, 1, 2}
            p, crawl_id = _crawl_with_a_kill(web, tmp_path, service[0], props, lose_the_worker, seeds_per_host=40)
            _each_url_once_and_politely(web, conf_for(tmp_path, service[0]), crawl_id, p.stderr, 400)
            assert "done_by_earlier_attempt=" in p.stderr or "waiting for attempt" in p.stderr, p.stderr
    finally:
        worker.kill()
        worker.wait()
        for pid in executors:  # the lost Worker's executor ends by itself once it sees its Worker gone
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    seeds = tmp_path / "seeds.txt"
    p = nutch2("inject", seeds, "-crawlId", "x", *defines(tmp_path, "sqlite", **{**SPARK, "spark.master": STANDALONE}))
    assert p.returncode == 1 and "sqlite store is on this machine only" in p.stderr  # refused in one line


@pytest.mark.timeout(600)
def test_python_worker_killed_mid_fetch(tmp_path: Path) -> None:
    """A local master does not retry tasks: the fetch fails with one line naming the cause and -resume; fetch
    -resume finishes the batch: every URL FETCHED, none requested again but those the failed run had in flight."""
    props = {**SPARK, "fetcher.server.delay": 0.2, "fetcher.write.batch.size": 5, "fetcher.threads.fetch": 4}
    d = defines(tmp_path, "sqlite", **props)
    local = defines(tmp_path, "sqlite", **{**props, "mapreduce.framework.name": "local"})  # inject, generate
    conf = conf_for(tmp_path, "sqlite", **props)
    with TestWeb(hosts=4, pages_per_host=25, traps=False) as web:
        seeds = tmp_path / "seeds.txt"
        urls = [web.page_url(h, i) for h in range(4) for i in range(25)]
        seeds.write_text("".join(u + "\n" for u in urls))
        assert nutch2("inject", seeds, "-crawlId", "kf", *local).returncode == 0
        batch = nutch2("generate", "-crawlId", "kf", *local).stdout.strip()
        proc = subprocess.Popen([sys.executable, "-m", "nutch2.cli", "fetch", batch, "-crawlId", "kf", *d],
                                cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        killed = []
        deadline = time.monotonic() + 240
        while proc.poll() is None and time.monotonic() < deadline and not killed:
            pages = [r for r in web.requests() if r.path != "/robots.txt"]
            if len(pages) >= 20:
                for pid in _python_workers(proc.pid):
                    os.kill(pid, signal.SIGKILL)
                    killed.append(pid)
            time.sleep(0.1)
        out, err = proc.communicate(timeout=240)
        assert killed, "no Python worker was found to kill"
        assert proc.returncode == 1, err
        lines = [x for x in err.splitlines() if x.startswith("nutch2 ")]
        assert len(lines) == 1 and "Python worker died" in lines[0] and "with -resume" in lines[0], err
        assert "collectAndServe" not in err and "Traceback" not in err, err
        marked = sum(Mark.FETCH.check(p) == batch for p in table(conf, "kf").values())
        assert marked < len(urls)
        first = {f"{r.host}{r.path}" for r in web.requests() if r.path != "/robots.txt"}
        # in this process: the module's SparkContext (one JVM start fewer)
        assert cli("fetch", batch, "-resume", "-crawlId", "kf", *d) == 0
        rows = table(conf, "kf")
        assert len(rows) == len(urls)
        assert all(Mark.FETCH.check(p) == batch for p in rows.values())
        assert all(p.status == CrawlStatus.FETCHED for p in rows.values())  # nothing lost
        counts = collections.Counter(f"{r.host}{r.path}" for r in web.requests() if r.path != "/robots.txt")
        twice = {u for u, n in counts.items() if n > 1}
        assert set(counts) == {_short(web, k) for k in rows} and set(counts.values()) <= {1, 2}
        assert twice <= first and len(twice) <= 8  # only what the failed run had in flight, once more
