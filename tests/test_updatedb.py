"""DbUpdaterJob at job level on every store backend, for batches built by hand (no web server)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from nutch2.jobs.generate import GeneratorJob
from nutch2.jobs.updatedb import update
from nutch2.mapred.frameworks import make_runner
from nutch2.marks import Mark, get_distance
from nutch2.plugins.scoring_opic.opic import get_cash, set_cash
from nutch2.status import CrawlStatus
from nutch2.stores import open_store
from nutch2.urls.tableutil import reverse_url
from nutch2.webpage import WebPage
from tests.conftest import make_conf
from tests.crawlutil import cli, defines

DAY = 86400
DAY_MS = DAY * 1000
INTERVAL = 30 * DAY
BATCH_MARKS = {Mark.GENERATE.value: "B", Mark.FETCH.value: "B", Mark.PARSE.value: "B"}


@pytest.fixture(params=["memory", "sqlite:local", "sqlite"])
def backend(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def env(backend: str, tmp_path: Path) -> Iterator[tuple]:
    crawl_id = "upd" + uuid.uuid4().hex[:10]
    store = open_store(make_conf(tmp_path, backend), crawl_id)
    yield tmp_path, backend, crawl_id, store
    store.drop_schema()
    store.close()


def now_ms() -> int:
    return int(time.time() * 1000)


def put(store, url: str, *, cash: float | None = None, markers: dict[str, str] | None = None,
        **fields) -> str:
    key = reverse_url(url)
    fields.setdefault("fetch_interval", INTERVAL)
    page = WebPage(key, markers=dict(markers or {}), **fields)
    if cash is not None:
        set_cash(page, cash)
    store.put(key, page)
    return key


def fetched(store, url: str, *, fetch_time: int, batch: str = "B", dist: int = 0, **fields) -> str:
    markers = {Mark.GENERATE.value: batch, Mark.FETCH.value: batch, Mark.PARSE.value: batch,
               "dist": str(dist), "_injmrk_": "y"}
    fields.setdefault("status", int(CrawlStatus.FETCHED))
    fields.setdefault("score", 1.0)
    fields.setdefault("batch_id", batch)
    fields.setdefault("prev_fetch_time", fetch_time - INTERVAL * 1000)
    return put(store, url, markers=markers, fetch_time=fetch_time, **fields)


def updatedb(env, batch: str = "B", num_tasks: int = 1, **props):
    tmp, backend, _, store = env
    store.flush()
    conf = make_conf(tmp, backend, **props)
    return update(conf, store, batch, num_tasks).as_dict()


def get(store, url: str) -> WebPage:
    page = store.get(reverse_url(url))
    assert page is not None, url
    return page


def no_batch_marks(page: WebPage) -> bool:
    return not any(m.value in page.markers for m in (Mark.GENERATE, Mark.FETCH, Mark.PARSE))


# ------------------------------------------------------------------ links, scores, inlinks


@pytest.mark.parametrize("num_tasks,sort_mb", [(1, 16), (3, 16), (3, 0.0001)])
def test_outlinks_new_rows_opic_and_merged_inlinks(env, num_tasks, sort_mb):
    tmp, _, _, store = env
    t = now_ms() - 5000
    src = "http://a.example.com/"
    fetched(store, src, fetch_time=t, dist=1, cash=1.2, score=1.0, signature=b"s1", outlinks={
        "http://a.example.com/in1": "one",
        "http://a.example.com/existing": "ex",
        "http://b.example.com/ext": "ext",
    })
    put(store, "http://a.example.com/existing", status=int(CrawlStatus.FETCHED), score=0.5, cash=0.2,
        fetch_time=t + 10 * DAY_MS, inlinks={"http://old.example.com/": "old"},
        markers={Mark.GENERATE.value: "C", "dist": "0"}, batch_id="C", title="kept")
    before = now_ms()
    spill_dir = tmp / "spill"
    c = updatedb(env, num_tasks=num_tasks, **{"db.score.link.external": 0.5, "db.score.link.new": 0.25,
                                              "mapreduce.task.io.sort.mb": sort_mb,
                                              "mapreduce.cluster.local.dir": spill_dir})
    # a ~100-byte sort buffer spills every record to disk: same result, and no spill file left
    assert (c.get("spilled_records", 0) > 0) == (sort_mb < 1)
    assert not spill_dir.exists() or not any(spill_dir.iterdir())
    after = now_ms()
    share = 1.2 / 3

    new = get(store, "http://a.example.com/in1")
    assert new.status == CrawlStatus.UNFETCHED
    assert before <= new.fetch_time <= after
    assert new.fetch_interval == INTERVAL
    assert new.score == pytest.approx(0.25 + share)
    assert get_cash(new) == pytest.approx(share)
    assert get_distance(new) == 2
    assert new.inlinks == {src: "one"}
    assert no_batch_marks(new) and Mark.UPDATEDB.value not in new.markers

    ext = get(store, "http://b.example.com/ext")
    assert ext.score == pytest.approx(0.25 + share * 0.5)
    assert get_cash(ext) == pytest.approx(share * 0.5)
    assert ext.inlinks == {src: "ext"}

    old = get(store, "http://a.example.com/existing")
    assert old.score == pytest.approx(0.5 + share)
    assert get_cash(old) == pytest.approx(0.2 + share)
    assert old.inlinks == {"http://old.example.com/": "old", src: "ex"}  # merged, not replaced
    assert old.markers[Mark.GENERATE.value] == "C" and old.batch_id == "C"  # another batch: untouched mark
    assert get_distance(old) == 0  # already closer
    assert old.title == "kept" and old.fetch_time == t + 10 * DAY_MS

    s = get(store, src)
    assert get_cash(s) == 0.0
    assert s.score == 1.0
    assert no_batch_marks(s) and s.markers[Mark.UPDATEDB.value] == "B"
    assert s.markers["_injmrk_"] == "y" and get_distance(s) == 1
    assert s.fetch_time == t + INTERVAL * 1000
    assert c["new_rows"] == 2 and c["updated"] == 1


def test_a_targets_links_from_many_pages_and_tasks_all_arrive(env):
    """The map gathers a target's link datums and emits them in lists (every COMBINE_DATUMS datums and at the end
    of its task): every source's inlink, cash share and distance still reaches every target, across the map's
    flushes, its tasks and a spilling sort buffer."""
    from nutch2.jobs.updatedb import COMBINE_DATUMS

    _, _, _, store = env
    t = now_ms() - 5000
    targets = [f"http://t{i % 7}.example.com/p{i}" for i in range(40)]
    sources = [f"http://s{j % 9}.example.com/page{j}" for j in range(COMBINE_DATUMS // 20 + 150)]
    for j, src in enumerate(sources):
        links = {targets[(j + k) % len(targets)]: f"from {j}" for k in range(20)}
        fetched(store, src, fetch_time=t, dist=j % 3, cash=2.0, outlinks=links)
    c = updatedb(env, num_tasks=3, **{"mapreduce.task.io.sort.mb": 0.05})
    assert c["new_rows"] == len(targets) and c["updated"] == len(sources)
    assert c.get("spilled_records", 0) > 0
    for i, target in enumerate(targets):
        linked = [j for j in range(len(sources)) if (i - j) % len(targets) < 20]
        page = get(store, target)
        assert page.inlinks == {sources[j]: f"from {j}" for j in linked}, target
        assert get_cash(page) == pytest.approx(len(linked) * 2.0 / 20)
        assert get_distance(page) == 1


def test_dist_takes_the_minimum_over_sources(env):
    _, _, _, store = env
    t = now_ms()
    fetched(store, "http://a.example.com/near", fetch_time=t, dist=0, cash=1.0,
            outlinks={"http://c.example.com/": ""})
    fetched(store, "http://a.example.com/far", fetch_time=t, dist=4, cash=1.0,
            outlinks={"http://c.example.com/": "", "http://d.example.com/": ""})
    put(store, "http://d.example.com/", status=1, fetch_time=t, markers={"dist": "7"})
    updatedb(env)
    assert get_distance(get(store, "http://c.example.com/")) == 1
    assert get_distance(get(store, "http://d.example.com/")) == 5
    assert get(store, "http://c.example.com/").score == pytest.approx(1.0 + 0.5)


def test_an_older_nutch2s_updrun_markers_go_from_the_rows_updatedb_writes(env):
    """Rows an older nutch2 linked carry its `updrun` marker (the run id is in their metadata now): updatedb drops
    it from the batch rows and link targets it writes, and leaves every other marker."""
    _, _, _, store = env
    t = now_ms()
    key = fetched(store, "http://a.example.com/", fetch_time=t, cash=1.0, outlinks={"http://c.example.com/": ""})
    page = store.get(key)
    page.markers = {**page.markers, "updrun": "0a1b2c3d4e5f"}
    store.put(key, page)
    put(store, "http://c.example.com/", status=1, fetch_time=t, markers={"dist": "7", "updrun": "0a1b2c3d4e5f"})
    put(store, "http://z.example.com/", status=1, fetch_time=t, markers={"dist": "3", "updrun": "0a1b2c3d4e5f"})
    updatedb(env)
    assert get(store, "http://a.example.com/").markers == {"dist": "0", "_injmrk_": "y", "_updmrk_": "B"}
    assert get(store, "http://c.example.com/").markers == {"dist": "1"}
    assert get(store, "http://z.example.com/").markers == {"dist": "3", "updrun": "0a1b2c3d4e5f"}  # not written


def test_inlinks_capped_keeping_the_newest(env):
    _, _, _, store = env
    t = now_ms()
    fetched(store, "http://a.example.com/", fetch_time=t, cash=1.0, outlinks={"http://x.example.com/": "new"})
    put(store, "http://x.example.com/", status=1, fetch_time=t,
        inlinks={"http://o1.example.com/": "1", "http://o2.example.com/": "2", "http://o3.example.com/": "3"})
    updatedb(env, **{"db.update.max.inlinks": 2})
    inl = get(store, "http://x.example.com/").inlinks
    assert len(inl) == 2 and inl["http://a.example.com/"] == "new"


def test_max_inlinks_zero_keeps_none(env):
    _, _, _, store = env
    t = now_ms()
    fetched(store, "http://a.example.com/", fetch_time=t, cash=1.0, outlinks={"http://x.example.com/": "new"})
    put(store, "http://x.example.com/", status=1, fetch_time=t, inlinks={"http://o1.example.com/": "1"})
    updatedb(env, **{"db.update.max.inlinks": 0})
    assert get(store, "http://x.example.com/").inlinks == {}


def test_additions_not_allowed(env):
    _, _, _, store = env
    t = now_ms()
    fetched(store, "http://a.example.com/", fetch_time=t, cash=1.0,
            outlinks={"http://new.example.com/": "n", "http://x.example.com/": "x"})
    put(store, "http://x.example.com/", status=1, fetch_time=t, score=0.0)
    c = updatedb(env, **{"db.update.additions.allowed": "false"})
    assert store.get(reverse_url("http://new.example.com/")) is None
    assert c.get("new_rows", 0) == 0
    x = get(store, "http://x.example.com/")
    assert x.score == pytest.approx(0.5) and x.inlinks == {"http://a.example.com/": "x"}
    assert len(list(store.scan())) == 2


# ------------------------------------------------------------------ batch scoping and marks


def test_other_batch_and_unfetched_rows(env):
    tmp, backend, _, store = env
    t = now_ms() - 1000
    fetched(store, "http://a.example.com/done", fetch_time=t)
    # generated in B but never fetched (deferred host, time limit): only loses the generate mark
    put(store, "http://a.example.com/deferred", status=1, fetch_time=t, score=1.0, batch_id="B",
        markers={Mark.GENERATE.value: "B", "dist": "0"})
    # another pending batch, generated and fetched: must keep every mark and field
    fetched(store, "http://a.example.com/other", fetch_time=t, batch="C")
    c = updatedb(env)
    assert c["not_fetched"] == 1 and c["updated"] == 1

    deferred = get(store, "http://a.example.com/deferred")
    assert no_batch_marks(deferred) and Mark.UPDATEDB.value not in deferred.markers
    assert deferred.fetch_time == t and deferred.status == 1 and deferred.markers["dist"] == "0"

    other = get(store, "http://a.example.com/other")
    for m in (Mark.GENERATE, Mark.FETCH, Mark.PARSE):
        assert other.markers[m.value] == "C"
    assert other.fetch_time == t and Mark.UPDATEDB.value not in other.markers

    done = get(store, "http://a.example.com/done")
    assert no_batch_marks(done) and done.markers[Mark.UPDATEDB.value] == "B"

    # the deferred row is due again: the next generate takes it (and not the row of batch C)
    conf = make_conf(tmp, backend)
    make_runner(conf, 1).run(GeneratorJob(conf, batch_id="B2"), store)
    assert [p.key for p in store.scan(mark=(Mark.GENERATE.value, "B2"))] == [
        reverse_url("http://a.example.com/deferred")]


def test_all_batches(env):
    _, _, _, store = env
    t = now_ms()
    fetched(store, "http://a.example.com/b", fetch_time=t, batch="B")
    fetched(store, "http://a.example.com/c", fetch_time=t, batch="C")
    put(store, "http://a.example.com/free", status=1, fetch_time=t, markers={"dist": "0"})
    c = updatedb(env, batch=None)
    assert c["updated"] == 2
    for name, batch in (("b", "B"), ("c", "C")):
        page = get(store, f"http://a.example.com/{name}")
        assert no_batch_marks(page) and page.markers[Mark.UPDATEDB.value] == batch
        assert page.fetch_time == t + INTERVAL * 1000
    assert Mark.UPDATEDB.value not in get(store, "http://a.example.com/free").markers


def test_updatedb_mark_without_parse_mark_uses_batch(env):
    _, _, _, store = env
    t = now_ms()
    key = put(store, "http://a.example.com/404", status=int(CrawlStatus.GONE), fetch_time=t, batch_id="B",
              markers={Mark.GENERATE.value: "B", Mark.FETCH.value: "B"})
    updatedb(env)
    assert store.get(key).markers[Mark.UPDATEDB.value] == "B"


# ------------------------------------------------------------------ schedules


def test_retry_then_gone_after_retry_max(env):
    _, _, _, store = env
    t = now_ms()
    key = fetched(store, "http://a.example.com/5xx", fetch_time=t, status=int(CrawlStatus.RETRY),
                  retries_since_fetch=0)
    c = updatedb(env, **{"db.fetch.retry.max": 3})
    page = store.get(key)
    assert page.status == CrawlStatus.RETRY
    assert page.retries_since_fetch == 1
    assert page.fetch_time == t + DAY_MS
    assert page.fetch_interval == INTERVAL
    assert c.get("gone_after_retries", 0) == 0
    # the third failed fetch in a row reaches db.fetch.retry.max: GONE
    fetched(store, "http://a.example.com/5xx", fetch_time=t, status=int(CrawlStatus.RETRY),
            retries_since_fetch=2)
    c = updatedb(env, **{"db.fetch.retry.max": 3})
    page = store.get(key)
    assert page.status == CrawlStatus.GONE and page.retries_since_fetch == 3
    assert c["gone_after_retries"] == 1


def test_gone_schedule(env):
    _, _, _, store = env
    t = now_ms()
    k1 = fetched(store, "http://a.example.com/410", fetch_time=t, status=int(CrawlStatus.GONE),
                 fetch_interval=1000)
    k2 = fetched(store, "http://a.example.com/404", fetch_time=t, status=int(CrawlStatus.GONE),
                 fetch_interval=80 * DAY)
    updatedb(env)
    g1, g2 = store.get(k1), store.get(k2)
    assert g1.fetch_interval == 1500 and g1.fetch_time == t + 1500 * 1000
    cap = int(90 * DAY * 0.9)
    assert g2.fetch_interval == cap and g2.fetch_time == t + cap * 1000
    assert g1.status == g2.status == CrawlStatus.GONE


ADAPTIVE = {"db.fetch.schedule.class": "adaptive", "db.fetch.schedule.adaptive.sync_delta": "false"}


def test_default_schedule_same_signature(env):
    _, _, _, store = env
    t = now_ms()
    key = fetched(store, "http://a.example.com/", fetch_time=t, signature=b"same", prev_signature=b"same",
                  retries_since_fetch=2)
    c = updatedb(env)
    page = store.get(key)
    assert page.fetch_time == t + INTERVAL * 1000 and page.fetch_interval == INTERVAL
    assert page.retries_since_fetch == 0
    assert c["unchanged"] == 1


def test_adaptive_unchanged_grows_changed_shrinks(env):
    _, _, _, store = env
    t = now_ms()
    same = fetched(store, "http://a.example.com/same", fetch_time=t, signature=b"x", prev_signature=b"x")
    changed = fetched(store, "http://a.example.com/changed", fetch_time=t, signature=b"y", prev_signature=b"x")
    first = fetched(store, "http://a.example.com/first", fetch_time=t, signature=b"y")
    c = updatedb(env, **ADAPTIVE)
    s, ch, f = store.get(same), store.get(changed), store.get(first)
    assert s.fetch_interval == int(INTERVAL * 1.4)
    assert s.fetch_time == t + int(INTERVAL * 1.4) * 1000
    assert ch.fetch_interval == int(INTERVAL * 0.8)
    assert ch.fetch_time == t + int(INTERVAL * 0.8) * 1000
    assert f.fetch_interval == INTERVAL  # first fetch: nothing to compare, STATUS_UNKNOWN
    assert (c["unchanged"], c["modified"], c["change_unknown"]) == (1, 1, 1)
    assert ch.modified_time == t


def test_notmodified_status(env):
    _, _, _, store = env
    t = now_ms()
    # a 304: the fetcher kept the old content; signatures may even differ from the previous parse
    d = fetched(store, "http://a.example.com/304", fetch_time=t, status=int(CrawlStatus.NOTMODIFIED),
                signature=b"y", prev_signature=b"x")
    a = fetched(store, "http://b.example.com/304", fetch_time=t, status=int(CrawlStatus.NOTMODIFIED))
    updatedb(env)
    assert store.get(d).fetch_time == t + INTERVAL * 1000
    assert store.get(d).status == CrawlStatus.NOTMODIFIED
    assert store.get(a).fetch_interval == INTERVAL
    fetched(store, "http://b.example.com/304", fetch_time=t, status=int(CrawlStatus.NOTMODIFIED))
    updatedb(env, **ADAPTIVE)
    assert store.get(a).fetch_interval == int(INTERVAL * 1.4)


def test_adaptive_interval_capped_at_db_fetch_interval_max(env):
    _, _, _, store = env
    t = now_ms()
    key = fetched(store, "http://a.example.com/", fetch_time=t, signature=b"x", prev_signature=b"x",
                  fetch_interval=80 * DAY)
    updatedb(env, **ADAPTIVE)
    page = store.get(key)
    assert page.fetch_interval == 90 * DAY
    assert page.fetch_time == t + 90 * DAY_MS  # the next fetch agrees with the capped interval


def test_an_old_page_on_the_adaptive_schedule_is_not_due_again_at_once(env):
    """Sync delta with a page last modified 3 years ago: the adaptive schedule puts the next fetch ~36 days ahead
    with a 365-day interval; capped at db.fetch.interval.max (90 days) it stays there (Nutch's forceRefetch keeps
    the fetch time). Pulled back by the 275 days cut off the interval, it was in the past: refetched every round."""
    _, _, _, store = env
    t = now_ms()
    key = fetched(store, "http://a.example.com/old", fetch_time=t, modified_time=t - 3 * 365 * DAY_MS,
                  signature=b"x", prev_signature=b"x", status=int(CrawlStatus.NOTMODIFIED))
    updatedb(env, **{"db.fetch.schedule.class": "adaptive"})
    page = store.get(key)
    assert page.fetch_interval == 90 * DAY
    assert t + 30 * DAY_MS < page.fetch_time <= t + 90 * DAY_MS


def test_redirect_rows_rescheduled(env):
    _, _, _, store = env
    t = now_ms()
    key = fetched(store, "http://a.example.com/moved", fetch_time=t, status=int(CrawlStatus.REDIR_PERM),
                  cash=1.0, outlinks={"http://a.example.com/target": ""})
    updatedb(env)
    assert store.get(key).fetch_time == t + INTERVAL * 1000
    target = get(store, "http://a.example.com/target")
    assert target.status == CrawlStatus.UNFETCHED and target.inlinks == {"http://a.example.com/moved": ""}


def test_cli_updatedb(env):
    tmp, backend, crawl_id, store = env
    t = now_ms()
    fetched(store, "http://a.example.com/", fetch_time=t, cash=1.0, outlinks={"http://a.example.com/n": ""})
    store.flush()
    d = defines(tmp, backend)
    assert cli("updatedb", *d, "-crawlId", crawl_id, "B") == 0
    assert get(store, "http://a.example.com/").markers[Mark.UPDATEDB.value] == "B"
    assert get(store, "http://a.example.com/n").status == CrawlStatus.UNFETCHED
    assert cli("updatedb", *d, "-crawlId", crawl_id, "no-such-batch") != 0


def test_cli_updatedb_spill_dir_unusable(env, capsys):
    """A spill that cannot be written: exit 1, one line naming the directory and the property, nothing written."""
    tmp, backend, crawl_id, store = env
    fetched(store, "http://a.example.com/", fetch_time=now_ms(), cash=1.0,
            outlinks={f"http://a.example.com/{i}": "" for i in range(50)})
    store.flush()
    blocker = tmp / "not-a-dir"
    blocker.write_text("a file where the spill directory should be")
    d = defines(tmp, backend, **{"mapreduce.task.io.sort.mb": 0.0001, "mapreduce.cluster.local.dir": blocker})
    capsys.readouterr()
    assert cli("updatedb", *d, "-crawlId", crawl_id, "B") == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "mapreduce.cluster.local.dir" in err[0] and str(blocker) in err[0]
    assert get(store, "http://a.example.com/").markers[Mark.GENERATE.value] == "B"  # batch untouched
    assert store.get(reverse_url("http://a.example.com/7")) is None
