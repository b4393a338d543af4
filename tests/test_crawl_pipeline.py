"""Pipelined crawl rounds (crawl.pipeline, nutch2/tools/pipeline.py): a batch's updatedb beside the next batch's
fetch clobbers no field the fetch writes (and the reverse), and a pipelined crawl ends with a sequential one's
rows."""

from __future__ import annotations

import collections
import uuid
from pathlib import Path

import pytest

from nutch2.crawldb.journal import UPDATED, Journal
from nutch2.fetch.output import ProtocolOutput
from nutch2.jobs.fetch import FETCH_FIELDS, FetcherJob
from nutch2.jobs.updatedb import update
from nutch2.mapred.job import Counters, TaskContext
from nutch2.marks import Mark, get_distance
from nutch2.plugins.scoring_opic.opic import get_cash
from nutch2.rowkeys import CLAIM, UPDATE_RUN
from nutch2.status import CrawlStatus, ProtocolStatusCode
from nutch2.stores import open_store
from nutch2.stores.query import Query
from nutch2.urls.tableutil import reverse_url, unreverse_url
from tests.conftest import DURABLE_STORES, runner_of
from tests.crawlutil import conf_for, defines, kill_after_requests, round_names, rows
from tests.helpers import KILLED, build_batch, nutch2, same_rows
from tests.testweb import TestWeb


@pytest.mark.parametrize("backend", DURABLE_STORES)
def test_updatedb_beside_a_fetch_of_its_link_targets_loses_nothing(tmp_path: Path, backend: str) -> None:
    """The fetch of batch C reads its rows, updatedb of batch B (whose pages link to C's rows) runs, then the fetch
    writes its claims and outcomes from what it read, as the fetch engine does: every field both wrote is there
    (updatedb's inlinks, score, cash, distance and run id; the fetch's claim, status and mark). Without the
    deferral of in-flight targets, the fetch's writes drop updatedb's cash, distance and run id."""
    conf = conf_for(tmp_path, f"{backend}:local", **{"fetcher.parse": "false"})
    crawl_id = f"pr{uuid.uuid4().hex[:8]}"
    build_batch(conf, crawl_id, 120)  # batch B: fetched and parsed, linking to the 60 "old" rows among others
    with open_store(conf, crawl_id, create=False) as store:
        old = [p for p in store.scan(fields=("markers",)) if p.key.startswith("test.old")]
        assert len(old) == 60
        for page in old:  # batch C: the old rows, generated (far from the seeds, so B's links shorten it)
            page.markers = {**page.markers, Mark.GENERATE.value: "C", "dist": "9"}
            store.put(page.key, page)
        store.flush()
        linked = {reverse_url(u) for p in store.read(Query(("outlinks",), (Mark.FETCH.value, "B")))
                  for u in p.outlinks}
        before = {p.key: p for p in store.scan(fields=("score", "metadata", "inlinks"))
                  if p.key in linked and any(p.key == o.key for o in old)}
        assert len(before) > 30

        fetch = FetcherJob(conf, "C")
        ctx = TaskContext(conf, store, Counters("fetch"), 0, step=0)
        fetch.map_setup(ctx)
        items = [item for page in store.read(Query(FETCH_FIELDS, (Mark.GENERATE.value, "C")))
                 for _, item in fetch.map(page, ctx)]  # what the fetch read: its map
        assert len(items) == 60
        for item in items[:30]:  # half claimed before updatedb, half after
            fetch._claim(ctx, None, item)
        update(conf, store, "B", 1, defer_in_flight=True)  # beside the fetch
        for item in items[30:]:
            fetch._claim(ctx, None, item)
        for item in items:
            out = ProtocolOutput(ProtocolStatusCode.SUCCESS, content=b"<html>x</html>", content_type="text/html",
                                 final_url=unreverse_url(item.key))
            fetch._output(ctx, item, ProtocolStatusCode.SUCCESS, [], out)
        store.flush()
        update(conf, store, "B", 1)  # the fetch has ended: the same updatedb again, then its commit
        run = None
        for key, page in rows(conf, crawl_id).items():
            if key.startswith("test.old") and Mark.GENERATE.check(page):
                assert page.status == CrawlStatus.FETCHED and Mark.FETCH.check(page) == "C", key
            if key not in before:
                continue
            assert page.status == CrawlStatus.FETCHED and Mark.FETCH.check(page) == "C", key  # the fetch's
            assert page.metadata.get(CLAIM, b"").startswith(b"C/"), key
            assert Mark.GENERATE.check(page) == "C", key
            got = set(page.inlinks) - set(before[key].inlinks)
            assert got and all(".test/" in u for u in got), key  # updatedb's
            assert page.score > before[key].score, key
            assert get_cash(page) > get_cash(before[key]), key
            assert get_distance(page) == 2, key
            run = run or page.metadata.get(UPDATE_RUN)
            assert run and page.metadata.get(UPDATE_RUN) == run, key


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.parametrize("backend", ["sqlite", "sqlite:local"])
def test_pipelined_crawl_ends_with_the_rows_of_a_sequential_one(tmp_path: Path, backend: str) -> None:
    """-rounds -1 with a small topN (so batches overlap): the same FETCHED set, statuses, inlinks and outlinks."""
    with TestWeb(hosts=3, pages_per_host=20, traps=False) as web:
        seeds = tmp_path / "seeds.txt"
        seeds.write_text(web.seed_url + "\n")
        tables = {}
        for pipeline in ("false", "true"):
            props = {"crawl.pipeline": pipeline, "fetcher.server.delay": 0.02}
            d = defines(tmp_path, backend, **props)
            crawl_id = f"pp{pipeline}{uuid.uuid4().hex[:6]}"
            done = nutch2("crawl", seeds, "-rounds", -1, "-topN", 12, "-crawlId", crawl_id, *d, timeout=600)
            assert done.returncode == 0, done.stderr
            if pipeline == "true":  # batches did overlap: some link targets were in the batch being fetched
                assert "deferred_in_flight=" in done.stderr
            tables[pipeline] = rows(conf_for(tmp_path, backend, **props), crawl_id)
    seq, pipe = tables["false"], tables["true"]
    assert set(seq) == set(pipe)
    fetched = {k for k, p in seq.items() if p.status == CrawlStatus.FETCHED}
    assert len(fetched) > 40
    for key, page in seq.items():
        other = pipe[key]
        assert (page.status, dict(page.inlinks), dict(page.outlinks)) == \
            (other.status, dict(other.inlinks), dict(other.outlinks)), key
        assert Mark.GENERATE.check(other) is None, key


# kill points of a pipelined crawl (-rounds -1, topN 12 over 3 x 20 pages: about ten rounds, a batch's tail beside
# the next fetch in most): after inject; after round 1's generate; a request of round 1 answered, its outcome not
# written; at the 5th, 8th, 11th and 14th job's end (a fetch, parse, updatedb or generate, whichever thread ended
# it: jobs beside each other end in either order); in the 3rd and 9th commit of updatedb (beside a fetch); in the
# 40th store batch; a request in flight in a later fetch (beside a tail); and kill -9 of the whole command after
# 30 page requests
# ten points once the rounds overlap (the first jobs, inject and the first generate, run alone and are the
# sequential crawl's kill points in tests/test_crash_safety.py)
PIPELINE_POINTS = ("fetch.answered=1", "runner.job=5", "runner.job=8", "runner.job=11", "runner.job=14",
                   "updatedb.commit=3", "updatedb.commit=9", "store.flush=40", "fetch.answered=25", "time")
WORKER_POINTS = {"fetch.answered=25": "fetch.answered=12", "store.flush=40": "store.flush=20",
                 "updatedb.commit=9": "updatedb.commit=4", "updatedb.commit=3": "updatedb.commit=2"}
KILL_BACKENDS = [b for b in ("sqlite:local", "sqlite:processes", "postgres:local", "postgres:processes")
                 if b.split(":")[0] in DURABLE_STORES]


def _outcome(page) -> tuple:
    """What a crawl must end with whatever the order of its batches: status, links, parse."""
    return (page.status, dict(page.inlinks), dict(page.outlinks), page.title, page.signature,
            Mark.GENERATE.check(page), Mark.FETCH.check(page) is None)


@pytest.mark.slow
@pytest.mark.timeout(2400)
@pytest.mark.parametrize("backend", KILL_BACKENDS)
def test_pipelined_crawl_kill_9_anywhere_then_rerun_finishes(tmp_path: Path, backend: str) -> None:
    """Killed at any of ten points (two batches under way at several) and run again with the same command, a
    pipelined crawl ends with the rows of an uninterrupted one — the same batches, rows, statuses, links, scores
    and parses, nothing left in a batch, the crawl's journal entry gone — and no URL was requested more than
    twice (once more only for a request in flight at the kill)."""
    props = {"crawl.pipeline": "true", "storage.write.batch.size": 10, "fetcher.write.batch.size": 10,
             "fetcher.server.delay": 0.02}
    d = defines(tmp_path, backend, **props)
    conf = conf_for(tmp_path, backend, **props)
    with TestWeb(hosts=3, pages_per_host=20, traps=False) as web:
        seeds = tmp_path / "seeds.txt"
        seeds.write_text(web.seed_url + "\n")
        args = ("crawl", seeds, "-rounds", -1, "-topN", 12)
        ref = f"pr{uuid.uuid4().hex[:8]}"
        done = nutch2(*args, "-crawlId", ref, *d, timeout=600)
        assert done.returncode == 0, done.stderr
        reference = rows(conf, ref)
        expected = {k: _outcome(p) for k, p in reference.items()}
        ref_names = round_names(conf, ref)
        assert sum(1 for o in expected.values() if o[0] == CrawlStatus.FETCHED) > 40
        two_under_way = 0
        for point in PIPELINE_POINTS:
            if runner_of(backend) == "processes":
                point = WORKER_POINTS.get(point, point)
            crawl_id = f"pk{uuid.uuid4().hex[:8]}"
            web.reset_log()
            if point == "time":
                killed = kill_after_requests(web, 30, *args, "-crawlId", crawl_id, *d)
                assert killed == KILLED, point
            else:
                p = nutch2(*args, "-crawlId", crawl_id, *d, failpoints=point, timeout=600)
                died = runner_of(backend) == "processes" and p.returncode == 1 and "worker process died" in p.stderr
                assert p.returncode == KILLED or died, (point, p.returncode, p.stderr[-2000:])
            with open_store(conf, crawl_id, create=False) as store:
                journal = Journal(store)
                under_way = [r.batch_id for r in journal.batches() if not r.reached(UPDATED)]
            two_under_way += len(under_way) >= 2
            rerun = nutch2(*args, "-crawlId", crawl_id, *d, timeout=600)
            assert rerun.returncode == 0, (point, rerun.stderr[-3000:])
            requests = collections.Counter((r.host, r.path) for r in web.requests() if r.path != "/robots.txt")
            print(f"{backend} {point}: {len(under_way)} batches under way at the kill, "
                  f"{sum(1 for n in requests.values() if n > 1)} URLs requested twice")
            assert max(requests.values()) <= 2, point
            got = {k: _outcome(p) for k, p in rows(conf, crawl_id).items()}
            assert set(got) == set(expected), (point, sorted(set(got) ^ set(expected))[:5])
            for key, outcome in expected.items():
                assert got[key] == outcome, (point, key)
            # and the same batches: the rerun ran the newest batch's tail beside the next generate, as the killed
            # crawl would have, so every later round selected what the uninterrupted crawl's did
            same_rows(rows(conf, crawl_id), reference, round_names(conf, crawl_id), ref_names)
            with open_store(conf, crawl_id, create=False) as store:
                journal = Journal(store)
                assert journal.crawl() is None, point
                assert all(r.reached(UPDATED) for r in journal.batches()), point
        assert two_under_way >= 1  # a kill did land with a batch's tail beside the next round (where: not exact)

