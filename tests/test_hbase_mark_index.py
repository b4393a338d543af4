"""The HBase store's mark index (issue 12), against the real HBase: selections answered from `<table>_marks`,
stale entries dropped only when they are stale for sure, and tables written before the index existed."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from nutch2.marks import Mark
from nutch2.stores import open_store
from nutch2.webpage import WebPage
from tests.conftest import STORE_BACKENDS, make_conf

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parent.parent
GEN = Mark.GENERATE.value

if "hbase" not in STORE_BACKENDS:
    pytest.skip("hbase store not enabled (NUTCH2_TEST_STORES); run docker/services.sh start hbase",
                allow_module_level=True)


@pytest.fixture
def hb(tmp_path: Path) -> Iterator[Any]:
    """A plain happybase connection, to look at and tamper with the tables behind the store's back."""
    import happybase

    conf = make_conf(tmp_path, "hbase")
    conn = happybase.Connection(conf.get_str("hbase.thrift.host"), conf.get_int("hbase.thrift.port"))
    yield conn
    conn.close()


@pytest.fixture
def cid(tmp_path: Path) -> Iterator[str]:
    crawl_id = "m" + uuid.uuid4().hex[:10]
    yield crawl_id
    store = open_store(make_conf(tmp_path, "hbase"), crawl_id, create=False)
    store.drop_schema()
    store.close()


def open_hbase(tmp_path: Path, crawl_id: str, create: bool = True):
    return open_store(make_conf(tmp_path, "hbase"), crawl_id, create=create)


def put(store, key: str, **markers: str) -> None:
    store.put(key, WebPage(key, status=1, markers=dict(markers)))


def entries(hb: Any, crawl_id: str) -> dict[bytes, int]:
    """Index row -> timestamp of its cell."""
    table = hb.table(f"{crawl_id}_webpage_idx")
    return {k: d[b"m:_"][1] for k, d in table.scan(include_timestamp=True)}


def entry(key: str, value: str, name: str = GEN) -> bytes:
    from nutch2.stores.hbase import _entry_row
    from nutch2.stores.index import Entry, mark_bucket

    return _entry_row(Entry("m", mark_bucket(name, value), "", key))


COMPLETE = b"\x00complete\x00m"


def test_index_rows_as_documented(tmp_path: Path, cid: str, hb: Any) -> None:
    store = open_hbase(tmp_path, cid)
    put(store, "com.a:http/", _gnmrk_="b1", _injmrk_="y", dist="0")
    put(store, "com.b:http/", dist="1")
    store.close()
    table = hb.table(f"{cid}_webpage_idx")
    assert set(table.families()) == {b"m"} and table.families()[b"m"]["max_versions"] == 1
    assert set(entries(hb, cid)) == {COMPLETE, b"\x00complete\x00d", entry("com.a:http/", "b1"),
                                     entry("com.a:http/", "y", "_injmrk_")}  # `dist` is not a mark


def test_selection_is_answered_from_the_index(tmp_path: Path, cid: str, hb: Any) -> None:
    """A row that carries the mark but has no index entry is not selected: the scan never reads other rows."""
    store = open_hbase(tmp_path, cid)
    for k in ("com.a:http/", "com.c:http/"):
        put(store, k, _gnmrk_="b1")
    put(store, "com.b:http/")
    store.flush()
    hb.table(f"{cid}_webpage").put(b"com.b:http/", {b"mk:_gnmrk_": b"b1"})  # behind the index's back
    assert [p.key for p in store.scan(mark=(GEN, "b1"))] == ["com.a:http/", "com.c:http/"]
    assert [p.key for p in store.scan("com.b", "com.d", mark=(GEN, None), fields=["status"])] == ["com.c:http/"]
    assert store.count(mark=(GEN, "b1")) == 2
    store.close()


def test_has_rows_of_a_batch_stops_at_the_first_shard(tmp_path: Path, cid: str) -> None:
    """The journal's question (does batch b1 still have rows?) reads one index entry, not one per shard: a read
    with limit 1 merges the shards in key order and so reads the first entry of every shard."""
    from nutch2.stores.index import SHARDS, shard_of
    from nutch2.stores.query import Query

    store = open_hbase(tmp_path, cid)
    keys = [f"com.h{i:03d}:http/" for i in range(200)]
    assert {shard_of(k) for k in keys} == set(range(SHARDS))
    for k in keys:
        put(store, k, _gnmrk_="b1")
    store.flush()
    store.index.entries_read = 0
    assert store.has_rows(Query(("status",), (GEN, "b1")))
    assert store.index.entries_read == 1
    assert not store.has_rows(Query(("status",), (GEN, "b2")))
    hb_rows = [p.key for p in store.scan(mark=(GEN, "b1"), fields=["status"])]
    assert hb_rows == sorted(keys)
    store.close()


def test_stale_entries_dropped_only_when_stale_for_sure(tmp_path: Path, cid: str, hb: Any) -> None:
    store = open_hbase(tmp_path, cid)
    for k in ("com.a:http/", "com.b:http/", "com.d:http/"):
        put(store, k, _gnmrk_="b1")
    store.flush()
    marks = hb.table(f"{cid}_webpage_idx")
    old = int(time.time() * 1000) - store.index.in_flight_ms - 60_000
    put(store, "com.a:http/")  # mark removed after its entry was written: stale for sure
    marks.put(entry("com.b:http/", "b2"), {b"m:_": b""})  # younger than the row: a write may be in flight
    marks.put(entry("com.c:http/", "b2"), {b"m:_": b""}, timestamp=old)  # no row, and too old to be in flight
    marks.put(entry("com.d:http/", "b2"), {b"m:_": b""}, timestamp=old)  # row lacks b2, entry too old
    store.flush()
    assert [p.key for p in store.scan(mark=(GEN, None))] == ["com.b:http/", "com.d:http/"]
    assert store.mark_values(GEN) == {"b1"}
    left = set(entries(hb, cid))
    assert entry("com.a:http/", "b1") not in left
    assert entry("com.b:http/", "b2") in left  # kept: skipped until its row is written again or it ages
    assert entry("com.c:http/", "b2") not in left and entry("com.d:http/", "b2") not in left
    put(store, "com.b:http/", _gnmrk_="b1")  # the row written again, without b2
    store.flush()
    assert [p.key for p in store.scan(mark=(GEN, "b2"))] == []
    assert entry("com.b:http/", "b2") not in entries(hb, cid)
    store.close()


def test_entry_written_again_survives_the_drop(tmp_path: Path, cid: str, hb: Any,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """A scan found an entry stale; before its delete lands, a writer marks the row again (index first): the
    delete carries the stale entry's timestamp, so the new entry survives and the row stays selectable."""
    from nutch2.stores import hbase

    store = open_hbase(tmp_path, cid)
    put(store, "com.a:http/", _gnmrk_="b1")
    store.flush()
    put(store, "com.a:http/")
    store.flush()
    drop = hbase._drop_entries
    marks = hb.table(f"{cid}_webpage_idx")

    def writer_meanwhile(table: Any, stale: list[tuple[bytes, int]]) -> None:
        assert [k for k, _ in stale] == [entry("com.a:http/", "b1")]
        marks.put(stale[0][0], {b"m:_": b""})  # the writer's index put (at its own, newer time) ...
        hb.table(f"{cid}_webpage").put(b"com.a:http/", {b"mk:_gnmrk_": b"b1", b"f:_": b""})
        drop(table, stale)  # ... lands before the scan's delete

    monkeypatch.setattr(hbase, "_drop_entries", writer_meanwhile)
    assert list(store.scan(mark=(GEN, "b1"))) == []  # the row lacked the mark when the scan read it
    monkeypatch.setattr(hbase, "_drop_entries", drop)
    assert [p.key for p in store.scan(mark=(GEN, "b1"))] == ["com.a:http/"]
    store.close()


def test_kill_between_index_and_rows(tmp_path: Path, cid: str, hb: Any) -> None:
    """kill -9 after a batch's index entries, before its rows: no row carries a mark the index misses, and
    the same writes run again select every row."""
    open_hbase(tmp_path, cid).close()
    code = (f"import sys; from pathlib import Path; from tests.conftest import make_conf\n"
            f"from nutch2.stores import open_store\nfrom nutch2.webpage import WebPage\n"
            f"store = open_store(make_conf(Path({str(tmp_path)!r}), 'hbase'), {cid!r}, create=False)\n"
            f"for i in range(50):\n"
            f"    k = f'com.k{{i:02d}}:http/'\n"
            f"    store.put(k, WebPage(k, status=1, markers={{'_gnmrk_': 'b1', 'dist': '0'}}))\n"
            f"store.close()\n")
    env = {k: v for k, v in os.environ.items() if k != "NUTCH2_FAILPOINTS"}
    killed = subprocess.run([sys.executable, "-c", code], cwd=REPO, timeout=120,
                            env={**env, "NUTCH2_FAILPOINTS": "store.marks.indexed=1"})
    assert killed.returncode == -9
    marked = {k for k, d in hb.table(f"{cid}_webpage").scan(columns=[b"mk:_gnmrk_"]) if d}
    indexed = {k.split(b"\x00")[-1] for k in entries(hb, cid) if k.startswith(b"m\x00" + GEN.encode())}
    assert len(indexed) == 50 and marked <= indexed
    store = open_hbase(tmp_path, cid, create=False)
    assert [p.key for p in store.scan(mark=(GEN, "b1"))] == sorted(k.decode() for k in marked)
    assert subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, timeout=120).returncode == 0
    assert store.count(mark=(GEN, "b1")) == 50
    store.close()


def test_rows_written_before_the_index_existed(tmp_path: Path, cid: str, hb: Any) -> None:
    """Tables of older versions have no index table: the first mark selection indexes their rows."""
    store = open_hbase(tmp_path, cid)
    for i in range(30):
        put(store, f"com.old{i:02d}:http/", **({GEN: f"b{i % 2}"} if i % 3 else {}), dist="1")
    store.close()
    hb.delete_table(f"{cid}_webpage_idx", disable=True)  # a table made before the index existed
    old_b1 = [f"com.old{i:02d}:http/" for i in range(30) if i % 3 and i % 2]

    writer = open_hbase(tmp_path, cid, create=False)
    put(writer, "com.new:http/", _gnmrk_="b1")  # the first write creates the index table, not the old entries
    writer.close()
    assert set(entries(hb, cid)) == {entry("com.new:http/", "b1")}

    reader = open_hbase(tmp_path, cid, create=False)
    assert [p.key for p in reader.scan(mark=(GEN, "b1"))] == ["com.new:http/", *old_b1]
    assert reader.mark_values(GEN) == {"b0", "b1"}
    reader.close()
    assert COMPLETE in entries(hb, cid) and len(entries(hb, cid)) == 1 + 20 + 1

    # a crash part-way through indexing (entries lost, no complete row): the next selection redoes it
    marks = hb.table(f"{cid}_webpage_idx")
    for key in [COMPLETE, *(entry(k, "b1") for k in old_b1[:5])]:
        marks.delete(key)
    again = open_hbase(tmp_path, cid)  # create_schema leaves an existing index table alone
    assert [p.key for p in again.scan(mark=(GEN, "b1"))] == ["com.new:http/", *old_b1]
    again.close()


def test_nul_in_a_mark_is_refused(tmp_path: Path, cid: str) -> None:
    store = open_hbase(tmp_path, cid)
    with pytest.raises(ValueError, match="NUL"):
        put(store, "com.a:http/", _gnmrk_="b\x001")
    store.close()


def test_a_write_indexes_only_the_marks_it_adds(tmp_path: Path, cid: str, hb: Any) -> None:
    """A row read and written back with one mark more (parse, fetch, generate) writes that mark's entry only:
    the entries of the marks it already carried keep their timestamp."""
    import pickle

    store = open_hbase(tmp_path, cid)
    keys = [f"com.h{i % 4}:http/p{i}" for i in range(20)]
    for key in keys:
        page = WebPage(key, status=1)
        Mark.INJECT.put(page, "b1")
        Mark.GENERATE.put(page, "b1")
        store.put(key, page)
    store.flush()
    before = {k: t for k, t in entries(hb, cid).items() if k.startswith(b"m\x00")}
    for i, page in enumerate(store.scan(mark=(GEN, "b1"), fields=["markers"])):
        page = pickle.loads(pickle.dumps(page)) if i % 2 else page  # as after a shuffle
        Mark.PARSE.put(page, "b1")
        store.put(page.key, page)
    store.flush()
    after = {k: t for k, t in entries(hb, cid).items() if k.startswith(b"m\x00")}
    store.close()
    assert {k: after[k] for k in before} == before and len(before) == 40
    added = {entry(k, "b1", Mark.PARSE.value) for k in keys}
    assert set(after) - set(before) == added and min(after[k] for k in added) > max(before.values())


def test_a_new_row_is_written_without_family_deletes(tmp_path: Path, cid: str, hb: Any) -> None:
    """A map field is replaced whole by deleting its family under the new cells; a row the job found absent
    (WebPage.new) is written without that delete, which would leave a tombstone in every new row. Seen from
    outside: a cell older than the write survives a new row's write, and not an ordinary write's."""
    store = open_hbase(tmp_path, cid)
    table = hb.table(f"{cid}_webpage")
    for key, page in (("com.new:http/", WebPage.new("com.new:http/")), ("com.old:http/", WebPage("com.old:http/"))):
        table.put(key.encode(), {b"il:http://older.com/": b"older"}, timestamp=1000)  # before the store's stamps
        page.status, page.inlinks = 1, {"http://a.com/": "a"}
        store.put(key, page)
    store.close()
    store = open_hbase(tmp_path, cid, create=False)
    assert dict(store.get("com.new:http/", ["inlinks"]).inlinks) == {"http://older.com/": "older",
                                                                     "http://a.com/": "a"}
    assert dict(store.get("com.old:http/", ["inlinks"]).inlinks) == {"http://a.com/": "a"}
    store.close()


def test_marks_a_write_removes_leave_no_entries(tmp_path: Path, cid: str, hb: Any) -> None:
    """updatedb removes a batch's generate, fetch and parse marks (and replaces its own older mark): their entries
    go with the write, not left for a selection of a finished batch that never comes, so the index of a long
    crawl holds the marks its rows carry, not one entry per row and batch ever made."""
    store = open_hbase(tmp_path, cid)
    keys = [f"com.h{i % 4}:http/p{i}" for i in range(20)]
    for key in keys:
        page = WebPage(key, status=1)
        for mark in (Mark.GENERATE, Mark.FETCH, Mark.PARSE, Mark.UPDATEDB):
            mark.put(page, "b0" if mark == Mark.UPDATEDB else "b1")
        store.put(key, page)
    store.flush()
    for page in store.scan(mark=(GEN, "b1"), fields=["markers"]):  # as updatedb's commit
        for mark in (Mark.GENERATE, Mark.FETCH, Mark.PARSE):
            mark.remove(page)
        Mark.UPDATEDB.put(page, "b1")
        store.put(page.key, page)
    store.flush()
    left = {k for k in entries(hb, cid) if k.startswith(b"m\x00")}
    assert left == {entry(k, "b1", Mark.UPDATEDB.value) for k in keys}
    assert [p.key for p in store.scan(mark=(Mark.UPDATEDB.value, "b1"))] == sorted(keys)
    Mark.GENERATE.put(page := WebPage(keys[0], status=1), "b2")  # a mark written again later is indexed again
    store.put(keys[0], page)
    store.flush()
    assert [p.key for p in store.scan(mark=(GEN, "b2"))] == [keys[0]]
    store.close()


def test_updatedb_leaves_no_entry_of_the_batch_marks(tmp_path: Path, cid: str, hb: Any) -> None:
    """updatedb's commit removes the batch's generate, fetch and parse marks from its rows in place (not by
    writing a new markers map), so the store drops their entries: a finished batch leaves nothing in the index."""
    from nutch2.jobs.updatedb import update
    from nutch2.status import CrawlStatus

    store = open_hbase(tmp_path, cid)
    keys = [f"com.h{i % 4}:http/p{i}" for i in range(12)]
    for key in keys:
        page = WebPage(key, status=int(CrawlStatus.FETCHED), fetch_time=int(time.time() * 1000) - 5000,
                       fetch_interval=2, batch_id="B", score=1.0)
        for mark in (Mark.INJECT, Mark.GENERATE, Mark.FETCH, Mark.PARSE):
            mark.put(page, "y" if mark == Mark.INJECT else "B")
        store.put(key, page)
    store.flush()
    update(make_conf(tmp_path, "hbase"), store, "B", 1)
    store.flush()
    marks = {k.split(b"\x00")[1] for k in entries(hb, cid) if k.startswith(b"m\x00")}
    assert marks == {Mark.INJECT.value.encode(), Mark.UPDATEDB.value.encode()}
    assert [p.key for p in store.scan(mark=(Mark.UPDATEDB.value, "B"))] == sorted(keys)
    store.close()
