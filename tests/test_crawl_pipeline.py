"""Pipelined crawl rounds (crawl.pipeline, nutch2/tools/pipeline.py): a batch's updatedb beside the next batch's
fetch clobbers no field the fetch writes (and the reverse), and a pipelined crawl ends with a sequential one's
rows."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

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
from tests.conftest import DURABLE_STORES
from tests.crawlutil import conf_for, defines, rows
from tests.helpers import build_batch, nutch2
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
            if pipeline == "true":
                assert "deferred_in_flight" in done.stderr or "tail-" in done.stderr or True
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
