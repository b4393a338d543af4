"""DeduplicationJob on the table, on the embedded stores and both runners: one row per signature keeps its status,
the others become DUPLICATE by Nutch's compare order; a rerun changes nothing; `nutch2 dedup` killed at several
points and run again gives the rows of an uninterrupted run."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from nutch2.config import Configuration
from nutch2.jobs.dedup import DeduplicationJob
from nutch2.mapred.frameworks import make_runner
from nutch2.status import CrawlStatus
from nutch2.stores import open_store
from nutch2.stores.base import DataStore
from nutch2.urls.tableutil import reverse_url
from nutch2.webpage import WebPage
from tests.conftest import make_conf
from tests.crawlutil import conf_for, defines, rows
from tests.helpers import KILLED, nutch2


@pytest.fixture(params=["memory", "sqlite:local", "sqlite"])
def backend(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def store(backend: str, tmp_path: Path) -> Iterator[DataStore]:
    s = open_store(make_conf(tmp_path, backend), "dd" + uuid.uuid4().hex[:10])
    yield s
    s.drop_schema()
    s.close()


def add(store: DataStore, url: str, signature: bytes | None, *, score: float = 1.0, fetched: int = 1000,
        status: CrawlStatus = CrawlStatus.FETCHED) -> str:
    key = reverse_url(url)
    page = WebPage(key, status=int(status), score=score, fetch_time=fetched)
    if signature is not None:
        page.signature = signature
    store.put(key, page)
    return key


def statuses(store: DataStore) -> dict[str, int]:
    store.flush()
    return {p.key: p.status for p in store.scan(fields=["status"])}


def dedup(tmp_path: Path, backend: str, store: DataStore, tasks: int = 2) -> dict[str, int]:
    conf = make_conf(tmp_path, backend)
    return make_runner(conf, tasks).run(DeduplicationJob(conf), store).as_dict()


def test_all_but_the_best_of_a_signature_become_duplicates(tmp_path: Path, backend: str, store: DataStore) -> None:
    a = b"\x01" * 16
    low = add(store, "http://a.example/low", a, score=0.5)
    high = add(store, "http://b.example/high", a, score=2.0)  # the highest score wins
    newest = add(store, "http://c.example/x", b"\x02" * 16, fetched=3000)  # same score: the newest fetch wins
    older = add(store, "http://d.example/x", b"\x02" * 16, fetched=2000)
    short = add(store, "http://e.example/ab", b"\x03" * 16)  # same score and time: the shortest URL wins
    longer = add(store, "http://e.example/abc", b"\x03" * 16)
    alone = add(store, "http://f.example/", b"\x04" * 16)
    unparsed = add(store, "http://g.example/", None)
    gone = add(store, "http://h.example/", a, status=CrawlStatus.GONE, score=9.0)  # not a page any more
    unchanged = add(store, "http://i.example/", b"\x05" * 16, status=CrawlStatus.NOTMODIFIED, score=3.0)
    twin = add(store, "http://j.example/", b"\x05" * 16)

    counters = dedup(tmp_path, backend, store)
    assert counters["duplicates"] == 4 and counters["signatures"] == 5
    got = statuses(store)
    assert {k for k, s in got.items() if s == CrawlStatus.DUPLICATE} == {low, older, longer, twin}
    assert got[high] == got[newest] == got[short] == got[alone] == got[unparsed] == CrawlStatus.FETCHED
    assert got[gone] == CrawlStatus.GONE and got[unchanged] == CrawlStatus.NOTMODIFIED


def test_a_rerun_changes_nothing(tmp_path: Path, backend: str, store: DataStore) -> None:
    for i in range(30):
        add(store, f"http://h{i % 7}.example/p{i}", bytes([i % 4]) * 16, score=float(i % 5), fetched=1000 + i)
    first = dedup(tmp_path, backend, store)
    after_first = statuses(store)
    second = dedup(tmp_path, backend, store, tasks=1)
    assert statuses(store) == after_first
    assert first["duplicates"] == 26 and second.get("duplicates", 0) == 0


def fill(conf: Configuration, crawl_id: str, n: int = 400) -> None:
    """n fetched rows over n / 4 signatures (scores and fetch times varied) in a table of its own."""
    with open_store(conf, crawl_id) as store:
        for i in range(n):
            add(store, f"http://h{i % 13}.example/p{i}", (i % (n // 4)).to_bytes(4, "big") * 4,
                score=float(i % 7), fetched=1000 + i % 11)


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["sqlite", "sqlite:local"])
@pytest.mark.parametrize("kill_at", [1, 3, 6])
def test_dedup_killed_then_run_again_gives_an_uninterrupted_runs_rows(tmp_path: Path, backend: str,
                                                                        kill_at: int) -> None:
    props = {"storage.write.batch.size": 25}
    d = defines(tmp_path, backend, **props)
    conf = conf_for(tmp_path, backend, **props)
    fill(conf, "whole")
    fill(conf, "killed")
    assert nutch2("dedup", "-crawlId", "whole", *d).returncode == 0
    killed = nutch2("dedup", "-crawlId", "killed", *d, failpoints=f"store.flush={kill_at}")
    # the point is reached in the command (killed) or, on the processes runner, in a worker: the job then fails in
    # one line naming the dead worker
    assert killed.returncode == KILLED or (killed.returncode == 1 and "Traceback" not in killed.stderr), \
        killed.stderr[-2000:]
    partly = sum(p.status == CrawlStatus.DUPLICATE for p in rows(conf, "killed").values())
    assert partly < 300  # killed before it was done
    again = nutch2("dedup", "-crawlId", "killed", *d)
    assert again.returncode == 0, again.stderr[-2000:]
    whole = {k: p.status for k, p in rows(conf, "whole").items()}
    assert {k: p.status for k, p in rows(conf, "killed").items()} == whole
    assert sum(s == CrawlStatus.DUPLICATE for s in whole.values()) == 300
