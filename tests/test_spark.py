"""The spark runner (mapreduce.framework.name=spark): the same rows and counters as the local runner on the test
web, a 2-round crawl on local-cluster (separate executor JVMs and Python workers) and on the standalone master
and worker of `docker/services.sh start spark`, and an executor's Python worker killed mid-fetch."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
import requests

from nutch2.marks import Mark
from nutch2.status import CrawlStatus
from nutch2.stores import open_store
from tests.conftest import STORE_BACKENDS
from tests.crawlutil import cli, conf_for, defines
from tests.test_crash_safety import same_rows, table
from tests.testweb import TestWeb

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parent.parent
SPARK = {"mapreduce.framework.name": "spark", "spark.master": "local[2]", "spark.ui.enabled": "false"}
SOLR = os.environ.get("NUTCH2_SOLR_URL", "http://127.0.0.1:8983/solr/nutch")
STANDALONE = "spark://127.0.0.1:7077"
SUMMARY = re.compile(r"^(\w+): finished in [\d.]+ s: (.*)$", re.M)


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
@pytest.mark.parametrize("backend", [b for b in STORE_BACKENDS if b != "memory"])
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
    from nutch2.journal import Journal

    with open_store(conf, crawl_id, create=False) as store:
        return {rec.batch_id: f"round{i}" for i, rec in enumerate(Journal(store).batches(), 1)}


def nutch2(*args: object, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "nutch2.cli", *map(str, args)], cwd=REPO, capture_output=True,
                          text=True, timeout=timeout)


def _crawl_to_the_end(web: TestWeb, tmp_path: Path, backend: str, master: str) -> None:
    seeds = tmp_path / "seeds.txt"
    seeds.write_text(web.seed_url + "\n")
    d = defines(tmp_path, backend, **{**SPARK, "spark.master": master, "fetcher.server.delay": 0.05,
                                      "spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1"})
    crawl_id = f"sc{uuid.uuid4().hex[:8]}"
    p = nutch2("crawl", seeds, "-rounds", 2, "-crawlId", crawl_id, *d)
    assert p.returncode == 0, p.stderr
    assert re.search(rf"crawl: {crawl_id}: \d+ URLs: .*FETCHED=(\d+)", p.stdout), p.stdout
    rows = table(conf_for(tmp_path, backend), crawl_id)
    fetched = [k for k, r in rows.items() if r.status == CrawlStatus.FETCHED]
    assert len(fetched) >= 5 and len(rows) > len(fetched)  # round 2 fetched what round 1 found


@pytest.mark.timeout(600)
def test_two_round_crawl_on_local_cluster(web: TestWeb, tmp_path: Path) -> None:
    """Separate executor JVMs, each with its own Python workers (and its own working folder)."""
    _crawl_to_the_end(web, tmp_path, "sqlite", "local-cluster[2,1,1024]")


@pytest.mark.timeout(600)
def test_two_round_crawl_on_the_standalone_master_and_worker(web: TestWeb, tmp_path: Path) -> None:
    try:
        requests.get("http://127.0.0.1:8090/json/", timeout=3).raise_for_status()
    except requests.RequestException:
        if os.environ.get("CI"):
            pytest.fail("the Spark standalone master is not running: docker/services.sh start spark")
        pytest.skip("no Spark standalone master (docker/services.sh start spark)")
    service = [b for b in STORE_BACKENDS if b in ("hbase", "cassandra")]
    if not service:
        if os.environ.get("CI"):
            pytest.fail("a cluster needs a store every executor reaches: NUTCH2_TEST_STORES=hbase,cassandra")
        pytest.skip("no service store (NUTCH2_TEST_STORES)")
    _crawl_to_the_end(web, tmp_path, service[0], STANDALONE)
    seeds = tmp_path / "seeds.txt"
    p = nutch2("inject", seeds, "-crawlId", "x", *defines(tmp_path, "sqlite", **{**SPARK, "spark.master": STANDALONE}))
    assert p.returncode == 1 and "sqlite store is a file on this machine" in p.stderr  # refused in one line


def _python_workers(root: int) -> list[int]:
    """Spark's Python workers below a process: forked by pyspark.daemon (the daemon's children)."""
    procs = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            ppid = int(stat.read_text().rsplit(")", 1)[1].split()[1])
            cmd = (stat.parent / "cmdline").read_bytes()
        except (OSError, ValueError, IndexError):
            continue
        procs[int(stat.parent.name)] = (ppid, cmd)

    def below(pid: int) -> bool:
        while pid > 1 and pid in procs:
            if pid == root:
                return True
            pid = procs[pid][0]
        return False

    daemons = {p for p, (_, cmd) in procs.items() if b"pyspark.daemon" in cmd and below(p)}
    return [p for p, (pp, _) in procs.items() if pp in daemons]


@pytest.mark.timeout(600)
def test_python_worker_killed_mid_fetch(tmp_path: Path) -> None:
    """The fetch fails with one line (Spark does not retry it behind the user's back); fetch -resume finishes
    the batch with nothing lost."""
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
        assert len(lines) == 1 and "Python worker died" in lines[0] and "-resume" in lines[0], err
        marked = sum(Mark.FETCH.check(p) == batch for p in table(conf, "kf").values())
        assert marked < len(urls)
        resume = nutch2("fetch", batch, "-resume", "-crawlId", "kf", *d)
        assert resume.returncode == 0, resume.stderr
        rows = table(conf, "kf")
        assert len(rows) == len(urls)
        assert all(Mark.FETCH.check(p) == batch and p.status == CrawlStatus.FETCHED for p in rows.values())
