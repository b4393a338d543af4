"""Fetch tasks run twice, as Spark may run them (a retry, a stage re-run, a speculative copy), without Spark: the
fetch job's map and reduce task bodies driven by hand on a sqlite crawl of the test web, with attempt ids set as
the spark runner sets them. Each URL is requested once (one the dead attempt had in flight at most twice), no host
sees two requests closer than its delay, and nothing is lost (nutch2/fetch/fetchclaim.py,
nutch2/mapred/tasklease.py)."""

from __future__ import annotations

import collections
import json
import pickle
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from nutch2.jobs.fetch import FetcherJob
from nutch2.mapred.job import Counters
from nutch2.mapred.task import map_pairs, reduce_pairs, task_context, task_copy
from nutch2.mapred.tasklease import TaskLease, TaskLeaseLost, lease_prefix
from nutch2.marks import Mark
from nutch2.status import CrawlStatus
from nutch2.stores import open_store
from tests.crawlutil import cli, conf_for, defines, rows
from tests.testweb import TestWeb

pytestmark = pytest.mark.timeout(120)
REPO = Path(__file__).resolve().parent.parent
DELAY = 0.3
HOSTS, PAGES = 3, 6


@pytest.fixture
def crawl(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    """A generated batch of every page of a small web; yields (web, conf, crawl id, batch)."""
    props = {"fetcher.server.delay": DELAY, "fetcher.lease.timeout": 2.0}
    d = defines(tmp_path, "sqlite", **props)
    with TestWeb(hosts=HOSTS, pages_per_host=PAGES, traps=False) as web:
        seeds = tmp_path / "seeds.txt"
        seeds.write_text("".join(web.page_url(h, i) + "\n" for h in range(HOSTS) for i in range(PAGES)))
        assert cli("inject", seeds, "-crawlId", "att", *d) == 0
        assert cli("generate", "-crawlId", "att", *d) == 0
        batch = capsys.readouterr().out.strip().splitlines()[-1]
        web.reset_log()
        yield web, conf_for(tmp_path, "sqlite", **props), "att", batch


def _items(job: FetcherJob, conf, crawl_id: str) -> list:
    """The map side of the job (one task over the whole table): the fetch items, in the shuffle's order."""
    with open_store(conf, crawl_id, create=False) as store:
        task = task_copy(job)
        ctx = task_context(task, store, 0)
        (whole,) = task.inputs(store, 1)  # one map task over the batch
        pairs = list(map_pairs(task, whole, ctx))
    return sorted(pairs, key=lambda kv: kv[0])


def _attempt(job: FetcherJob, conf, crawl_id: str, items: list, attempt: str) -> Counters:
    """One attempt of reduce task 0 (every host): what Spark runs in an executor."""
    with open_store(conf, crawl_id, create=False) as store:
        task = task_copy(job)
        ctx = task_context(task, store, 0, 0)
        ctx.attempt = attempt
        for _ in reduce_pairs(task, iter(items), ctx):
            pass
        return ctx.counters


def _killed_attempt(job: FetcherJob, crawl_id: str, items: list, attempt: str, web: TestWeb, tmp: Path,
                    requests: int) -> float:
    """An attempt in a process of its own, killed (-9) once the web saw `requests` page requests (its lease and
    claims stay behind, as after a lost executor); returns when it died."""
    data = tmp / "attempt.pickle"
    data.write_bytes(pickle.dumps((job, crawl_id, items, attempt)))
    main = f"from tests.test_fetch_attempts import _main; _main({str(data)!r})"
    proc = subprocess.Popen([sys.executable, "-c", main], cwd=REPO)
    try:
        deadline = time.monotonic() + 60
        while len(_requests(web)) < requests:
            assert proc.poll() is None and time.monotonic() < deadline, "the attempt ended before it was killed"
            time.sleep(0.01)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    return time.monotonic()


def _main(path: str) -> None:
    job, crawl_id, items, attempt = pickle.loads(Path(path).read_bytes())
    _attempt(job, job.conf, crawl_id, items, attempt)


def _requests(web: TestWeb) -> collections.Counter:
    return collections.Counter(f"{r.host}{r.path}" for r in web.requests() if r.path != "/robots.txt")


def _polite(web: TestWeb) -> None:
    closest = web.closest_requests()
    assert len(closest) == HOSTS
    assert min(closest.values()) >= DELAY * 0.9, closest


def test_a_second_attempt_requests_nothing_the_first_finished(crawl) -> None:
    web, conf, crawl_id, batch = crawl
    job = FetcherJob(conf, batch, threads=4, progress=False)
    items = _items(job, conf, crawl_id)
    first = _attempt(job, conf, crawl_id, items, "a1")
    assert first.get("fetched") == HOSTS * PAGES
    second = _attempt(job, conf, crawl_id, items, "a2")  # a retry of the same run, on the same map output
    counts = _requests(web)
    assert len(counts) == HOSTS * PAGES and set(counts.values()) == {1}
    assert second.get("done_by_earlier_attempt") == HOSTS * PAGES and second.get("fetched") == HOSTS * PAGES
    assert not second.get("bytes")
    _polite(web)


def test_an_attempt_that_died_is_taken_over_after_its_lease_times_out(crawl, tmp_path: Path) -> None:
    """The dead attempt's claims without an outcome are taken over (requested once more, never a third time);
    the new attempt waits for the dead one's lease to time out, then its delay, before its first request."""
    web, conf, crawl_id, batch = crawl
    job = FetcherJob(conf, batch, threads=3, progress=False)
    items = _items(job, conf, crawl_id)
    died = _killed_attempt(job, crawl_id, items, "a1", web, tmp_path, 7)
    killed_requests = set(_requests(web))
    with open_store(conf, crawl_id, create=False) as store:
        record = json.loads(store.get_state(f"{lease_prefix(batch)}0"))
    assert record["attempt"] == "a1" and record["state"] == "held" and record["delay"] == DELAY
    second = _attempt(job, conf, crawl_id, items, "a2")
    after = [r for r in web.requests() if r.arrived > died]
    assert after and min(r.arrived for r in after) - died >= 2.0  # fetcher.lease.timeout
    counts = _requests(web)
    table = rows(conf, crawl_id)
    assert all(Mark.FETCH.check(p) == batch for p in table.values())  # nothing left out
    assert all(p.status == CrawlStatus.FETCHED for p in table.values())  # the in-flight ones too
    twice = {u for u, n in counts.items() if n > 1}
    # taken over: claimed by the dead attempt: in flight, answered but not yet written, or just about to be sent
    refetched = second.get("refetched_in_flight")
    assert len(counts) == HOSTS * PAGES and set(counts.values()) <= {1, 2}, counts
    assert twice <= killed_requests and len(twice) <= refetched <= 2 * 3, (twice, refetched)
    assert not second.get("result_lost") and second.get("done_by_earlier_attempt") >= 1
    assert second.get("fetched") == HOSTS * PAGES  # its own and its predecessor's, counted once
    print(f"killed after {len(killed_requests)} requests: {refetched} taken over, {len(twice)} requested twice")
    _polite(web)


def test_two_attempts_at_once_fetch_each_url_once_and_one_host_at_a_time(crawl) -> None:
    """A speculative copy (or a stage re-run's attempt beside the old one) waits for the holder to finish."""
    web, conf, crawl_id, batch = crawl
    job = FetcherJob(conf, batch, threads=4, progress=False)
    items = _items(job, conf, crawl_id)
    results: dict[str, Counters] = {}
    threads = [threading.Thread(target=lambda a=a: results.__setitem__(a, _attempt(job, conf, crawl_id, items, a)))
               for a in ("s1", "s2")]
    for t in threads:
        t.start()
        time.sleep(0.05)
    for t in threads:
        t.join()
    counts = _requests(web)
    assert len(counts) == HOSTS * PAGES and set(counts.values()) == {1}, counts
    assert sorted(r.get("done_by_earlier_attempt") for r in results.values()) == [0, HOSTS * PAGES]
    assert all(r.get("fetched") == HOSTS * PAGES for r in results.values())
    _polite(web)


def test_a_lease_taken_over_stops_its_holder(tmp_path: Path) -> None:
    conf = conf_for(tmp_path, "sqlite")
    with open_store(conf, "lease") as store:
        lease = TaskLease(store, "B", 0, "run1", "a1", timeout=1.0, log=lambda _m: None, settle=0.05).acquire()
        lease.check()
        store.put_state(f"{lease_prefix('B')}0", json.dumps({"run": "run1", "attempt": "a2", "beat": 1,
                                                              "state": "held", "delay": 0}))
        deadline = time.monotonic() + 5
        while not lease.lost and time.monotonic() < deadline:
            time.sleep(0.05)
        with pytest.raises(TaskLeaseLost, match="another attempt took its hosts over"):
            lease.check()
        lease.release()  # leaves the new holder's record alone
        assert json.loads(store.get_state(f"{lease_prefix('B')}0"))["attempt"] == "a2"
