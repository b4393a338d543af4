"""kill -9 at several points of updatedb, generate and crawl (ten points, fetches in flight among them), then the
same command again: the rows equal those of an uninterrupted run. Driven through the real CLI in subprocesses;
kill points are exact (nutch2/failpoints.py: SIGKILL after the N-th durable store batch, after the N-th job, in
the middle of updatedb's commit, after the N-th answer of a fetch) or timed. Runs on sqlite and on every service
store in NUTCH2_TEST_STORES."""

from __future__ import annotations

import collections
import os
import re
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from nutch2.crawldb.journal import GENERATING, UPDATING, Journal
from nutch2.marks import Mark
from nutch2.stores import open_store
from tests.conftest import DURABLE_STORES, runner_of
from tests.crawlutil import conf_for, defines, kill_after_requests, round_names
from tests.helpers import KILLED, SOURCES, build_batch, nutch2, same_rows, table
from tests.testweb import TestWeb

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parent.parent
DURABLE = DURABLE_STORES


# ---------------------------------------------------------------------------------------------------- updatedb
def _killed_in_a_task(p: subprocess.CompletedProcess[str], point: str) -> int:
    """Under the processes runner a task's point is reached in the driver (which runs task 0: the command is
    killed) or in a worker (the job fails with one line, the command lives); either way KILLED for what follows."""
    died = p.returncode == 1 and "a worker process died" in p.stderr
    assert p.returncode == KILLED or died, (point, p.returncode, p.stderr)
    return KILLED


# before the first link target is durable, among them, between the two steps, in the commit step, and at a time
UPDATEDB_POINTS = ("store.flush=2", "runner.job=1", "updatedb.commit=100", "store.flush=30", "time")


@pytest.mark.timeout(600)
@pytest.mark.parametrize("backend", [*DURABLE, "sqlite:local"])
def test_updatedb_kill_9_anywhere_then_rerun_is_exact(tmp_path: Path, backend: str) -> None:
    props = {"storage.write.batch.size": 40, "storage.hbase.batch.size": 40}
    d = defines(tmp_path, backend, **props)
    conf = conf_for(tmp_path, backend, **props)
    sources = SOURCES if backend.startswith("sqlite") else SOURCES // 2  # services: slower writes, CI's time
    ref = f"ur{uuid.uuid4().hex[:8]}"
    build_batch(conf, ref, sources)
    assert nutch2("updatedb", "B", "-crawlId", ref, *d).returncode == 0
    expected = table(conf, ref)
    assert not [k for k, p in expected.items() if Mark.GENERATE.check(p)]
    assert len(expected) > 60 + sources + 500

    for point in UPDATEDB_POINTS if backend.startswith("sqlite") else UPDATEDB_POINTS[:3]:  # services: slower
        crawl_id = f"uk{uuid.uuid4().hex[:8]}"
        build_batch(conf, crawl_id, sources)
        if runner_of(backend) == "processes":  # a task's point counts in its process, each with half the rows
            point = {"updatedb.commit=100": "updatedb.commit=40", "store.flush=30": "store.flush=12"}.get(point, point)
        if point == "time":
            killed = _kill_when_rows(conf, crawl_id, 60 + sources + 200, "updatedb", "B", "-crawlId", crawl_id, *d)
        else:
            p = nutch2("updatedb", "B", "-crawlId", crawl_id, *d, failpoints=point)
            killed = p.returncode
            if runner_of(backend) == "processes" and not point.startswith("runner."):
                killed = _killed_in_a_task(p, point)
        assert killed == KILLED, point
        with open_store(conf, crawl_id, create=False) as store:
            assert Journal(store).batch("B").state == UPDATING, point
        # an interrupted updatedb is finished before anything else may change its rows
        gen = nutch2("generate", "-crawlId", crawl_id, *d)
        assert gen.returncode == 1 and "updatedb of batch B was interrupted" in gen.stderr, (point, gen.stderr)
        rerun = nutch2("updatedb", "B", "-crawlId", crawl_id, *d)
        assert rerun.returncode == 0, (point, rerun.stderr)
        same_rows(table(conf, crawl_id), expected)
        assert nutch2("updatedb", "B", "-crawlId", crawl_id, *d).returncode == 0  # done: a no-op now


def _kill_when_rows(conf, crawl_id: str, rows: int, *args: str) -> int:
    """Start the command and kill -9 it once the table holds `rows` rows (a timed, not an exact, point)."""
    proc = subprocess.Popen([sys.executable, "-m", "nutch2.cli", *args], cwd=REPO, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    with open_store(conf, crawl_id, create=False) as store:
        while proc.poll() is None and store.count() < rows:
            time.sleep(0.05)
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGKILL)
    return proc.wait()


# ---------------------------------------------------------------------------------------------------- generate
@pytest.mark.timeout(300)
@pytest.mark.parametrize("backend", DURABLE)
def test_generate_kill_9_then_rerun_picks_the_rows_up_again(tmp_path: Path, backend: str) -> None:
    props = {"storage.write.batch.size": 50, "storage.hbase.batch.size": 50}
    d = defines(tmp_path, backend, **props)
    conf = conf_for(tmp_path, backend, **props)
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("".join(f"http://h{i % 7}.test/p{i}\n" for i in range(900)))
    ref, crawl_id = f"gr{uuid.uuid4().hex[:8]}", f"gk{uuid.uuid4().hex[:8]}"
    for cid in (ref, crawl_id):
        assert nutch2("inject", seeds, "-crawlId", cid, *d).returncode == 0
    done = nutch2("generate", "-topN", 600, "-crawlId", ref, *d)
    assert done.returncode == 0
    expected = {k for k, p in table(conf, ref).items() if Mark.GENERATE.check(p) == done.stdout.strip()}
    assert len(expected) == 600

    killed = nutch2("generate", "-topN", 600, "-crawlId", crawl_id, *d, failpoints="store.flush=4")
    assert killed.returncode == KILLED and killed.stdout == ""  # its batch id was never printed
    partial = {p.markers[Mark.GENERATE.value] for p in table(conf, crawl_id).values() if Mark.GENERATE.check(p)}
    assert len(partial) == 1
    with open_store(conf, crawl_id, create=False) as store:
        assert Journal(store).batch(partial.pop()).state == GENERATING

    rerun = nutch2("generate", "-topN", 600, "-crawlId", crawl_id, *d)
    assert rerun.returncode == 0, rerun.stderr
    assert "was interrupted before it was complete" in rerun.stderr
    batch = rerun.stdout.strip()
    rows = table(conf, crawl_id)
    assert {k for k, p in rows.items() if Mark.GENERATE.check(p) == batch} == expected
    assert {Mark.GENERATE.check(p) for p in rows.values()} == {batch, None}  # nothing left in the dead batch


# ---------------------------------------------------------------------------------------------------- crawl
# ten points of a 3-round crawl (inject; round 1: 1 page, round 2: 7, round 3: 20): after inject, after round 1's
# generate, round 1's only request answered but not written (in flight), round 1 fetched, between updatedb's two
# steps, requests in flight in round 2, in round 2's parse (a store batch), in round 2's commit step, requests in
# flight in round 3, and kill -9 of the whole command at a moment of round 3 (after 12 page requests)
CRAWL_POINTS = ("runner.job=1", "runner.job=2", "fetch.answered=1", "runner.job=3", "runner.job=5", "fetch.answered=4",
                "store.flush=16", "updatedb.commit=4", "fetch.answered=15", "time")
# under the processes runner a task's point counts in the process that runs the task (the driver runs task 0, a
# worker task 1), each seeing about half of a round's requests and store batches: halved, so that one of them
# reaches it (a store batch: 20 is in round 3 in every run)
WORKER_POINTS = {"fetch.answered=4": "fetch.answered=2", "fetch.answered=15": "fetch.answered=8",
                 "store.flush=16": "store.flush=20", "updatedb.commit=4": "updatedb.commit=2"}
KILL_BACKENDS = [b for b in ("sqlite:local", "sqlite:processes", "postgres:local", "postgres:processes")
                 if b.split(":")[0] in DURABLE_STORES] + [b for b in DURABLE_STORES if b not in ("sqlite", "postgres")]


@pytest.mark.timeout(1200)
@pytest.mark.parametrize("backend", KILL_BACKENDS)
def test_crawl_kill_9_anywhere_then_rerun_is_exact(tmp_path: Path, backend: str) -> None:
    """Killed at any of ten points and run again with the same command, a crawl ends with the rows and statuses
    of an uninterrupted one: every URL that was in flight is requested once more (and only those), none left
    behind. HBase and Cassandra (slower writes, CI's time) take the first five points."""
    props = {"storage.write.batch.size": 10, "storage.hbase.batch.size": 10, "fetcher.write.batch.size": 10,
             "fetcher.server.delay": 0.02}
    d = defines(tmp_path, backend, **props)
    conf = conf_for(tmp_path, backend, **props)
    with TestWeb(hosts=3, pages_per_host=25, traps=False) as web:
        seeds = tmp_path / "seeds.txt"
        seeds.write_text(web.seed_url + "\n")
        ref = f"cr{uuid.uuid4().hex[:8]}"
        args = ("crawl", seeds, "-rounds", 3, "-topN", 30)
        done = nutch2(*args, "-crawlId", ref, *d)
        assert done.returncode == 0, done.stderr
        expected = table(conf, ref)
        assert len({Mark.UPDATEDB.check(p) for p in expected.values()} - {None}) == 3  # three rounds did work
        ref_names = round_names(conf, ref)
        points = CRAWL_POINTS if backend.split(":")[0] in ("sqlite", "postgres") else CRAWL_POINTS[:5]
        for point in points:
            if runner_of(backend) == "processes":
                point = WORKER_POINTS.get(point, point)
            crawl_id = f"ck{uuid.uuid4().hex[:8]}"
            web.reset_log()
            if point == "time":
                killed = kill_after_requests(web, 12, *args, "-crawlId", crawl_id, *d)
                assert killed == KILLED, point
            else:
                p = nutch2(*args, "-crawlId", crawl_id, *d, failpoints=point)
                if runner_of(backend) == "processes" and not point.startswith("runner."):
                    _killed_in_a_task(p, point)
                else:
                    assert p.returncode == KILLED, (point, p.stderr)
            rerun = nutch2(*args, "-crawlId", crawl_id, *d)
            assert rerun.returncode == 0, (point, rerun.stderr)
            assert "interrupted" in rerun.stderr or point == "runner.job=1", (point, rerun.stderr)
            requests = collections.Counter((r.host, r.path) for r in web.requests() if r.path != "/robots.txt")
            twice = sorted(u for u, n in requests.items() if n > 1)
            refetched = sum(int(n) for n in re.findall(r"refetched_in_flight=(\d+)", rerun.stderr))
            print(f"{backend} {point}: {len(twice)} requested twice, {refetched} taken over")
            assert max(requests.values()) <= 2 and len(twice) <= refetched, (point, twice, refetched)
            if point.startswith("fetch.answered="):
                assert twice, point  # the answered request whose outcome the kill lost, once more
            same_rows(table(conf, crawl_id), expected, round_names(conf, crawl_id), ref_names)
            with open_store(conf, crawl_id, create=False) as store:
                assert Journal(store).crawl() is None



