"""GeneratorJob at job level, on every store backend: due rows, marks, score order, topN, caps, filters."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from nutch2.jobs.generate import GeneratorJob
from nutch2.mapred.frameworks import make_runner
from nutch2.marks import Mark
from nutch2.stores import open_store
from nutch2.urls.tableutil import reverse_url, unreverse_url
from nutch2.webpage import WebPage
from tests.conftest import make_conf
from tests.crawlutil import cli, defines

DAY_MS = 24 * 3600 * 1000


@pytest.fixture(params=["memory", "sqlite:local", "sqlite"])
def backend(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def env(backend: str, tmp_path: Path) -> Iterator[tuple]:
    crawl_id = "gen" + uuid.uuid4().hex[:10]
    conf = make_conf(tmp_path, backend)
    store = open_store(conf, crawl_id)
    yield tmp_path, backend, crawl_id, store
    store.drop_schema()
    store.close()


def now_ms() -> int:
    return int(time.time() * 1000)


def add(store, url: str, *, score: float = 1.0, fetch_time: int | None = None, dist: int | None = 0,
        markers: dict[str, str] | None = None, status: int = 1) -> str:
    key = reverse_url(url)
    m = {"_injmrk_": "y"}
    if dist is not None:
        m["dist"] = str(dist)
    m.update(markers or {})
    store.put(key, WebPage(key, status=status, score=score, fetch_interval=2592000,
                           fetch_time=now_ms() - 1000 if fetch_time is None else fetch_time, markers=m))
    return key


def generate(tmp_path: Path, backend: str, store, num_tasks: int = 1, **kw) -> tuple[GeneratorJob, dict]:
    props = kw.pop("props", {})
    conf = make_conf(tmp_path, backend, **props)
    job = GeneratorJob(conf, **kw)
    counters = make_runner(conf, num_tasks).run(job, store)
    return job, counters.as_dict()


def generated(store, batch: str) -> list[str]:
    return sorted(unreverse_url(p.key) for p in store.scan(mark=(Mark.GENERATE.value, batch)))


def test_only_due_rows_and_adddays(env):
    tmp, backend, _, store = env
    add(store, "http://a.example.com/due")
    add(store, "http://a.example.com/later", fetch_time=now_ms() + 3 * DAY_MS)
    add(store, "http://a.example.com/much-later", fetch_time=now_ms() + 20 * DAY_MS)
    store.flush()
    job, c = generate(tmp, backend, store, batch_id="b1")
    assert generated(store, "b1") == ["http://a.example.com/due"]
    assert c["generated"] == 1 and c.get("not_due", 0) == 0  # rows not due are not even read (the due index)
    job, c = generate(tmp, backend, store, batch_id="b2", add_days=5)
    assert generated(store, "b2") == ["http://a.example.com/later"]
    assert c.get("already_generated") == 1


def test_far_future_fetch_time_is_due(env):
    """A fetch time beyond db.fetch.interval.max from now is absurd: Nutch's shouldFetch treats it as due."""
    tmp, backend, _, store = env
    add(store, "http://a.example.com/absurd", fetch_time=now_ms() + 200 * DAY_MS)
    store.flush()
    generate(tmp, backend, store, batch_id="b")
    assert generated(store, "b") == ["http://a.example.com/absurd"]


def test_mark_and_batch_id_written_other_markers_kept(env):
    tmp, backend, _, store = env
    key = add(store, "http://a.example.com/", dist=2, markers={"_updmrk_": "old"})
    store.flush()
    job, _ = generate(tmp, backend, store, batch_id="batch-1")
    page = store.get(key)
    assert page.markers[Mark.GENERATE.value] == "batch-1"
    assert page.batch_id == "batch-1"
    assert page.markers["dist"] == "2"
    assert page.markers["_injmrk_"] == "y"
    assert page.markers["_updmrk_"] == "old"
    # untouched fields survive the partial write
    assert page.score == 1.0 and page.fetch_interval == 2592000 and page.status == 1


def test_rows_of_another_batch_are_skipped_and_untouched(env):
    tmp, backend, _, store = env
    other = add(store, "http://a.example.com/other", markers={Mark.GENERATE.value: "C"})
    store.put(other, WebPage(other, batch_id="C"))
    free = add(store, "http://a.example.com/free")
    store.flush()
    _, c = generate(tmp, backend, store, batch_id="B")
    assert generated(store, "B") == ["http://a.example.com/free"]
    assert c["already_generated"] == 1
    page = store.get(other)
    assert page.markers[Mark.GENERATE.value] == "C" and page.batch_id == "C"
    assert store.get(free).batch_id == "B"


def test_new_batch_id_format(env):
    tmp, backend, _, store = env
    add(store, "http://a.example.com/")
    store.flush()
    job, _ = generate(tmp, backend, store)
    secs, rnd = job.batch_id.split("-")
    assert abs(int(secs) - time.time()) < 60 and rnd.isdigit()
    assert generated(store, job.batch_id) == ["http://a.example.com/"]


@pytest.mark.parametrize("num_tasks", [1, 3])
def test_score_order_and_exact_topn(env, num_tasks):
    tmp, backend, _, store = env
    scores = {}
    for h in range(6):
        for p in range(5):
            url = f"http://h{h}.example.org/p{p}"
            scores[url] = round(0.1 + 0.03 * (h * 5 + p), 3)
            add(store, url, score=scores[url])
    store.flush()
    _, c = generate(tmp, backend, store, num_tasks=num_tasks, batch_id="b", top_n=7)
    best = sorted(scores, key=lambda u: (-scores[u], u))[:7]
    assert generated(store, "b") == sorted(best)
    assert c["generated"] == 7
    assert c["over_topN"] == 30 - 7


@pytest.mark.parametrize("num_tasks", [1, 3])
def test_ties_broken_by_url(env, num_tasks):
    tmp, backend, _, store = env
    for name in "edcba":
        add(store, f"http://{name}.example.org/", score=1.0)
    store.flush()
    generate(tmp, backend, store, num_tasks=num_tasks, batch_id="b", top_n=2)
    assert generated(store, "b") == ["http://a.example.org/", "http://b.example.org/"]


@pytest.mark.parametrize("num_tasks", [1, 3])
def test_max_count_per_host_keeps_best(env, num_tasks):
    tmp, backend, _, store = env
    for p in range(5):
        add(store, f"http://a.example.com/p{p}", score=1.0 + p)
        add(store, f"http://b.example.com/p{p}", score=1.0 + p)
        add(store, f"http://c.other.org/p{p}", score=1.0 + p)
    store.flush()
    _, c = generate(tmp, backend, store, num_tasks=num_tasks, batch_id="b",
                    props={"generate.max.count": 2})
    got = generated(store, "b")
    assert got == sorted(f"http://{h}/p{p}" for h in ("a.example.com", "b.example.com", "c.other.org")
                         for p in (3, 4))
    assert c["over_max_count"] == 9


@pytest.mark.parametrize("num_tasks", [1, 3])
def test_max_count_per_domain(env, num_tasks):
    tmp, backend, _, store = env
    for p in range(3):
        add(store, f"http://a.example.com/p{p}", score=1.0 + p)
        add(store, f"http://b.example.com/p{p}", score=1.5 + p)
        add(store, f"http://c.other.org/p{p}", score=1.0 + p)
    store.flush()
    generate(tmp, backend, store, num_tasks=num_tasks, batch_id="b",
             props={"generate.max.count": 2, "generate.count.mode": "domain"})
    got = generated(store, "b")
    # example.com: the two best of a.* and b.* together; other.org: its own two best
    assert got == sorted(["http://b.example.com/p2", "http://a.example.com/p2",
                          "http://c.other.org/p2", "http://c.other.org/p1"])


def test_bad_count_mode_is_a_config_error(tmp_path):
    from nutch2.errors import ConfigError

    with pytest.raises(ConfigError, match="generate.count.mode"):
        GeneratorJob(make_conf(tmp_path, "memory", **{"generate.count.mode": "ip"}))


def test_max_distance(env):
    tmp, backend, _, store = env
    add(store, "http://a.example.com/d0", dist=0)
    add(store, "http://a.example.com/d1", dist=1)
    add(store, "http://a.example.com/d2", dist=2)
    add(store, "http://a.example.com/nodist", dist=None)
    store.flush()
    _, c = generate(tmp, backend, store, batch_id="b", props={"generate.max.distance": 1})
    assert generated(store, "b") == ["http://a.example.com/d0", "http://a.example.com/d1",
                                     "http://a.example.com/nodist"]
    assert c["too_distant"] == 1


def test_min_score(env):
    tmp, backend, _, store = env
    add(store, "http://a.example.com/low", score=0.2)
    add(store, "http://a.example.com/edge", score=0.5)
    add(store, "http://a.example.com/high", score=2.0)
    store.flush()
    _, c = generate(tmp, backend, store, batch_id="b", props={"generate.min.score": 0.5})
    assert generated(store, "b") == ["http://a.example.com/edge", "http://a.example.com/high"]
    assert c["low_score"] == 1


def test_filter_and_no_filter(env):
    tmp, backend, _, store = env
    add(store, "http://a.example.com/page.html")
    add(store, "http://a.example.com/image.png")  # rejected by the shipped regex-urlfilter.txt
    store.flush()
    _, c = generate(tmp, backend, store, batch_id="b1")
    assert generated(store, "b1") == ["http://a.example.com/page.html"]
    assert c["filtered"] == 1
    _, c = generate(tmp, backend, store, batch_id="b2", filter=False)
    assert generated(store, "b2") == ["http://a.example.com/image.png"]


def test_nothing_due_generates_nothing(env):
    tmp, backend, _, store = env
    add(store, "http://a.example.com/", fetch_time=now_ms() + DAY_MS)
    store.flush()
    _, c = generate(tmp, backend, store, batch_id="b")
    assert c.get("generated", 0) == 0
    assert generated(store, "b") == []


def test_cli_exit_codes_and_batch_id(env, capsys):
    tmp, backend, crawl_id, store = env
    add(store, "http://a.example.com/")
    add(store, "http://a.example.com/x.png")
    store.flush()
    d = defines(tmp, backend)
    assert cli("generate", *d, "-crawlId", crawl_id, "-batchId", "cli-1", "-numTasks", "2") == 0
    assert capsys.readouterr().out.strip() == "cli-1"
    check = open_store(make_conf(tmp, backend), crawl_id, create=False)
    try:
        assert generated(check, "cli-1") == ["http://a.example.com/"]
    finally:
        check.close()
    # the png is filtered, the other row is marked: nothing left
    assert cli("generate", *d, "-crawlId", crawl_id) == 1
    assert capsys.readouterr().out.strip() == ""
    # -noFilter takes the png
    assert cli("generate", *d, "-crawlId", crawl_id, "-noFilter", "-batchId", "cli-2") == 0
    check = open_store(make_conf(tmp, backend), crawl_id, create=False)
    try:
        assert generated(check, "cli-2") == ["http://a.example.com/x.png"]
    finally:
        check.close()
