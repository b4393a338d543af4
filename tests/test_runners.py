"""The two runners give the same crawl: a 3-round crawl of the test web (traps included) under `local` and under
`processes` (its workers kept, or replaced by fresh ones after every task) ends with identical rows and identical
counters of every job; a worker process killed mid-job fails the job with one line and a rerun gives the rows of
an uninterrupted run."""

from __future__ import annotations

import os
import random
import re
import signal
import subprocess
import sys
import time
from functools import partial
from pathlib import Path

import pytest

from nutch2.marks import Mark
from nutch2.status import CrawlStatus
from nutch2.stores import open_store
from nutch2.urls.tableutil import reverse_url
from nutch2.webpage import WebPage
from tests import helpers
from tests.crawlutil import conf_for, defines
from tests.helpers import same_rows, table
from tests.testweb import TestWeb

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parent.parent
SUMMARY = re.compile(r"^(\w+): finished in [\d.]+ s: (.*)$")
nutch2 = partial(helpers.nutch2, timeout=300)  # tests/helpers.py, with a longer time limit


def counters(stderr: str) -> list[tuple[str, str]]:
    """Each job's summary line, in order, without its time."""
    return [(m.group(1), m.group(2)) for line in stderr.splitlines() if (m := SUMMARY.match(line))]


def _names(conf, crawl_id: str) -> dict[str, str]:
    from nutch2.crawldb.journal import Journal

    with open_store(conf, crawl_id, create=False) as store:
        return {rec.batch_id: f"round{i}" for i, rec in enumerate(Journal(store).batches(), 1)}


@pytest.mark.timeout(600)
def test_local_and_processes_give_the_same_crawl(tmp_path: Path) -> None:
    with TestWeb(hosts=4, pages_per_host=15, slow_seconds=0.5) as web:
        seeds = tmp_path / "seeds.txt"
        seeds.write_text(web.seed_url + "\n")
        results = {}
        # "recycled": every worker retires after its task (its RSS is over 1 MB) and a fresh one takes its place
        for framework, max_mb in (("local", 0), ("processes", 0), ("recycled", 1)):
            backend = "sqlite:local" if framework == "local" else "sqlite:processes"
            d = defines(tmp_path, backend, **{"fetcher.server.delay": 0.05, "log.level": "DEBUG",
                                              "mapreduce.processes.worker.max.mb": max_mb})
            p = nutch2("crawl", seeds, "-rounds", 3, "-crawlId", framework, *d)
            assert p.returncode == 0, p.stderr
            retired = p.stderr.count("a fresh process takes its place")
            assert (retired >= 12) if framework == "recycled" else (retired == 0), p.stderr
            conf = conf_for(tmp_path, backend)
            results[framework] = (table(conf, framework), counters(p.stderr), _names(conf, framework))
    rows_l, counters_l, names_l = results["local"]
    assert len(counters_l) >= 13
    for framework in ("processes", "recycled"):
        rows_p, counters_p, names_p = results[framework]
        assert counters_l == counters_p, framework
        same_rows(rows_l, rows_p, names_l, names_p)
    assert sum(p.status == CrawlStatus.FETCHED for p in rows_l.values()) > 20


def _workers(pid: int) -> list[int]:
    """The worker processes of a command (nutch2/mapred/workers.py)."""
    kids = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            cmdline = (stat.parent / "cmdline").read_bytes()
        except OSError:
            continue
        if int(fields[1]) == pid and b"nutch2.mapred.workers" in cmdline:
            kids.append(int(stat.parent.name))
    return kids


def _build(conf, crawl_id: str, n: int) -> None:
    rng = random.Random(5)
    with open_store(conf, crawl_id) as store:
        for i in range(n):
            url = f"http://h{i % 9}.test/p{i}"
            words = " ".join(rng.choice(("crawl", "page", "nutch", "row", "batch", "store")) for _ in range(400))
            links = "".join(f'<a href="/p{rng.randrange(n)}">link {j}</a> ' for j in range(30))
            html = f"<html><head><title>Page {i}</title></head><body><p>{words}</p>{links}</body></html>"
            key = reverse_url(url)
            store.put(key, WebPage(key, status=int(CrawlStatus.FETCHED), content=html.encode(), base_url=url,
                                   content_type="text/html", markers={Mark.GENERATE.value: "B",
                                                                      Mark.FETCH.value: "B"}))


@pytest.mark.timeout(300)
def test_a_worker_killed_mid_job_fails_it_in_one_line_and_a_rerun_is_exact(tmp_path: Path) -> None:
    props = {"storage.write.batch.size": 50}
    d = defines(tmp_path, "sqlite:processes", **props)
    conf = conf_for(tmp_path, "sqlite:processes", **props)
    n = 3000
    for cid in ("ref", "kill"):
        _build(conf, cid, n)
    assert nutch2("parse", "B", "-crawlId", "ref", *d).returncode == 0
    proc = subprocess.Popen([sys.executable, "-m", "nutch2.cli", "parse", "B", "-crawlId", "kill", *d], cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    victim = None
    with open_store(conf, "kill", create=False) as store:
        deadline = time.monotonic() + 120
        while proc.poll() is None and time.monotonic() < deadline:
            if store.count(mark=(Mark.PARSE.value, "B")) >= 100 and (kids := _workers(proc.pid)):
                victim = kids[0]
                os.kill(victim, signal.SIGKILL)
                break
            time.sleep(0.05)
    out, err = proc.communicate(timeout=120)
    assert victim is not None, "the parse ended before a worker could be killed"
    assert proc.returncode == 1, err
    lines = [x for x in err.splitlines() if "error" in x]
    assert len(lines) == 1 and "a worker process died" in lines[0] and "Traceback" not in err, err
    assert "run `nutch2 parse B -crawlId kill " in lines[0] and lines[0].endswith(" -resume` to go on"), lines[0]
    time.sleep(0.5)
    assert not [k for k in _workers(proc.pid)]  # nothing left running
    with open_store(conf, "kill", create=False) as store:
        assert 0 < store.count(mark=(Mark.PARSE.value, "B")) < n  # killed mid-job
    rerun = nutch2("parse", "B", "-crawlId", "kill", *d)
    assert rerun.returncode == 0, rerun.stderr
    same_rows(table(conf, "kill"), table(conf, "ref"))


def test_a_steps_sort_is_the_method_it_names_and_a_map_only_job_sorts_by_key() -> None:
    """ReduceStep.sort names the job method that orders its input; without one (or without a step at all: the
    Spark runner asks a map-only job too) the pairs are ordered by key."""
    from nutch2.config import Configuration
    from nutch2.jobs.generate import GeneratorJob
    from nutch2.mapred.job import Job

    conf = Configuration()
    plain = Job(conf)
    assert plain.steps() == [] and plain.sort_key(0)(("k", "v")) == "k"
    generate = GeneratorJob.__new__(GeneratorJob)
    generate.top_n = 10
    assert generate.sort_key(0) == GeneratorJob.by_sort_value
    assert generate.sort_key(1)(("host", (1, "u"))) == "host"
