"""Integration tests of the Cassandra store against the real Cassandra (docker/services.sh start cassandra)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from nutch2.errors import StoreError
from nutch2.marks import Mark
from nutch2.stores import open_store
from nutch2.webpage import WebPage
from tests.conftest import make_conf
from tests.crawlutil import cli

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def session():
    cassandra = pytest.importorskip("cassandra.cluster")
    try:
        cluster = cassandra.Cluster(["127.0.0.1"], port=9042, connect_timeout=5)
        s = cluster.connect()
    except Exception:
        if os.environ.get("CI"):
            pytest.fail("Cassandra not answering at 127.0.0.1:9042 in CI")
        pytest.skip("Cassandra not answering at 127.0.0.1:9042; run: docker/services.sh start cassandra")
    yield s
    cluster.shutdown()


def test_rows_as_documented(session, tmp_path: Path) -> None:
    conf = make_conf(tmp_path, "cassandra")
    cid = "c" + uuid.uuid4().hex[:10]
    store = open_store(conf, cid)
    try:
        page = WebPage("com.example.www:http/a", status=2, title="A", outlinks={"http://x/": "x"},
                       metadata={"k": b"\x00v"})
        Mark.GENERATE.put(page, "b1")
        store.put(page.key, page)
        store.flush()
        ks = conf.get_str("storage.cassandra.keyspace")
        cols = "prefix, key, status, title, outlinks, markers, metadata"
        row = session.execute(f'SELECT {cols} FROM "{ks}"."{cid}_webpage" WHERE prefix = %s',
                              ["com.example.www:"]).one()
        assert (row.prefix, row.key, row.status, row.title) == ("com.example.www:", page.key, 2, "A")
        assert dict(row.outlinks) == {"http://x/": "x"} and dict(row.metadata) == {"k": b"\x00v"}
        assert dict(row.markers) == {"_gnmrk_": "b1"}
        from nutch2.stores.index import mark_bucket, shard_of

        where = "WHERE idx = 'm' AND bucket = %s AND shard = %s"
        args = [mark_bucket("_gnmrk_", "b1"), shard_of(page.key)]
        index = session.execute(f'SELECT key FROM "{ks}"."{cid}_webpage_idx" {where}', args).all()
        assert [r.key for r in index] == [page.key]
        prefixes = session.execute(f'SELECT prefix FROM "{ks}"."{cid}_webpage_prefixes" WHERE bucket = 0').all()
        assert [r.prefix for r in prefixes] == ["com.example.www:"]
        # a removed mark leaves a stale index entry that the next mark scan drops
        Mark.GENERATE.remove(page)
        store.put(page.key, page)
        assert list(store.scan(mark=("_gnmrk_", "b1"))) == []
        assert session.execute(f'SELECT key FROM "{ks}"."{cid}_webpage_idx" {where}', args).all() == []
    finally:
        store.drop_schema()
        store.close()


def test_maps_are_one_cell_and_older_tables_still_work(session, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """New tables hold maps frozen (a whole map is one cell); a table made with plain maps, as before, is read
    and written by the same statements, a map replaced whole on both."""
    import nutch2.stores.cassandra as cs

    conf = make_conf(tmp_path, "cassandra")
    ks = conf.get_str("storage.cassandra.keyspace")
    new, old = "c" + uuid.uuid4().hex[:10], "c" + uuid.uuid4().hex[:10]
    with monkeypatch.context() as m:  # the schema of the version before frozen maps
        m.setattr(cs, "_cql_type", lambda n: {"markers": "map<text, text>", "metadata": "map<text, blob>"}.get(
            n, "map<text, text>" if cs.FIELDS[n][0] == "map" else cs._CQL_TYPES[cs.FIELDS[n][0]]))
        open_store(conf, old).close()
    open_store(conf, new).close()
    kinds = {}
    for cid in (new, old):
        kinds[cid] = session.execute("SELECT type FROM system_schema.columns WHERE keyspace_name = %s AND "
                                     "table_name = %s AND column_name = 'markers'", [ks, f"{cid}_webpage"]).one()[0]
        store = open_store(conf, cid, create=False)
        try:
            page = WebPage("com.example.www:http/a", status=1, metadata={"a": b"1", "b": b"2"})
            Mark.GENERATE.put(page, "b1")
            store.put(page.key, page)
            store.flush()
            got = store.get(page.key, ["markers", "metadata"])
            assert dict(got.markers) == {"_gnmrk_": "b1"} and dict(got.metadata) == {"a": b"1", "b": b"2"}
            got.metadata = {"b": b"3"}  # replaced whole: "a" is gone
            Mark.GENERATE.remove(got)
            Mark.FETCH.put(got, "b1")
            store.put(got.key, got)
            store.flush()
            again = store.get(page.key, ["markers", "metadata"])
            assert dict(again.markers) == {"_ftcmrk_": "b1"} and dict(again.metadata) == {"b": b"3"}
            assert [p.key for p in store.scan(mark=("_ftcmrk_", "b1"))] == [page.key]
        finally:
            store.drop_schema()
            store.close()
    assert kinds == {new: "frozen<map<text, text>>", old: "map<text, text>"}


def _index_table(session, ks: str, cid: str):
    return session.execute("SELECT gc_grace_seconds, memtable_flush_period_in_ms, compaction FROM "
                           "system_schema.tables WHERE keyspace_name = %s AND table_name = %s",
                           [ks, f"{cid}_webpage_idx"]).one()


def test_index_tombstones_live_briefly_on_new_and_older_tables(session, tmp_path: Path) -> None:
    """Every fetch deletes a due entry: the index table's tombstones live storage.cassandra.index.gc.grace.seconds
    (Cassandra's 10 days let a month-long crawl's selections reach tombstone_failure_threshold), and its SSTables
    are compacted alone for them. An older table gets the same from the next generate, its own compaction class
    and options kept."""
    conf = make_conf(tmp_path, "cassandra")
    ks = conf.get_str("storage.cassandra.keyspace")
    cid = "c" + uuid.uuid4().hex[:10]
    store = open_store(conf, cid)
    try:
        new = _index_table(session, ks, cid)
        assert (new.gc_grace_seconds, new.memtable_flush_period_in_ms) == (3600, 3_600_000)
        assert {k: new.compaction[k] for k in ("unchecked_tombstone_compaction", "tombstone_compaction_interval",
                                               "tombstone_threshold")} == {
            "unchecked_tombstone_compaction": "true", "tombstone_compaction_interval": "3600",
            "tombstone_threshold": "0.1"}
        # as a table made before: Cassandra's defaults, and an operator's own compaction
        session.execute(f'ALTER TABLE "{ks}"."{cid}_webpage_idx" WITH gc_grace_seconds = 864000 AND '
                        "memtable_flush_period_in_ms = 0 AND compaction = {'class': 'LeveledCompactionStrategy', "
                        "'sstable_size_in_mb': '80'}")
        store.put("com.example.www:http/a", WebPage("com.example.www:http/a", status=1, fetch_time=1000))
        store.flush()
        done = subprocess.run([sys.executable, "-m", "nutch2.cli", "generate", "-crawlId", cid,
                               *(x for k, v in {"storage.data.store.class": "cassandra", "http.agent.name": "t",
                                                "storage.data.dir": str(tmp_path / "crawl"),
                                                "storage.cassandra.index.gc.grace.seconds": 600}.items()
                                 for x in ("-D", f"{k}={v}"))], capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        old = _index_table(session, ks, cid)
        assert (old.gc_grace_seconds, old.memtable_flush_period_in_ms) == (600, 600_000)
        assert old.compaction["class"].endswith("LeveledCompactionStrategy")
        assert old.compaction["sstable_size_in_mb"] == "80"
        assert old.compaction["unchecked_tombstone_compaction"] == "true"
        assert old.compaction["tombstone_compaction_interval"] == "600"
    finally:
        store.drop_schema()
        store.close()


def test_a_write_indexes_only_the_marks_it_adds(session, tmp_path: Path) -> None:
    """A row read and written back with one mark more (parse, fetch, generate) writes that mark's entry only:
    the entries of the marks it already carried keep their stamp."""
    import pickle

    from nutch2.stores.index import SHARDS, mark_bucket

    conf = make_conf(tmp_path, "cassandra")
    ks = conf.get_str("storage.cassandra.keyspace")
    cid = "c" + uuid.uuid4().hex[:10]
    store = open_store(conf, cid)

    def stamps(name: str) -> dict[str, int]:
        rows = session.execute(f'SELECT key, s FROM "{ks}"."{cid}_webpage_idx" WHERE idx = %s AND bucket = %s '
                               f"AND shard IN ({', '.join(map(str, range(SHARDS)))})", ["m", mark_bucket(name, "b1")])
        return {r.key: r.s for r in rows}

    try:
        for i in range(20):
            page = WebPage(f"com.h{i % 4}:http/p{i}", status=1)
            Mark.INJECT.put(page, "b1")
            Mark.GENERATE.put(page, "b1")
            store.put(page.key, page)
        store.flush()
        before = {m: stamps(m) for m in (Mark.INJECT.value, Mark.GENERATE.value)}
        for i, page in enumerate(store.scan(mark=(Mark.GENERATE.value, "b1"), fields=["markers"])):
            page = pickle.loads(pickle.dumps(page)) if i % 2 else page  # as after a shuffle
            Mark.PARSE.put(page, "b1")
            store.put(page.key, page)
        store.flush()
        assert {m: stamps(m) for m in before} == before and len(before[Mark.GENERATE.value]) == 20
        added = stamps(Mark.PARSE.value)
        assert len(added) == 20 and min(added.values()) > max(before[Mark.GENERATE.value].values())
    finally:
        store.drop_schema()
        store.close()


def test_driver_import_leaves_what_it_hides_importable() -> None:
    """The store imports the driver without Twisted's reactor and numpy (it uses neither), and a later import of
    either still works."""
    pytest.importorskip("cassandra.cluster")
    import subprocess
    import sys

    code = ("import sys; from nutch2.stores.cassandra import _import_driver; _import_driver(); "
            "import cassandra.cluster as c; hidden = [m for m in ('numpy', 'twisted') if m in sys.modules]; "
            "assert not hidden, hidden; assert c.TwistedConnection is None; "
            "assert 'cassandra.io.twistedreactor' not in sys.modules; "
            "import importlib.util as u; assert all(u.find_spec(m) is None or __import__(m) for m in "
            "('numpy', 'twisted')); print('ok')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


def test_unreachable_cassandra_fails_fast(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("cassandra.cluster")
    conf = make_conf(tmp_path, "cassandra", **{"storage.cassandra.port": 9})
    with pytest.raises(StoreError, match="127.0.0.1:9.*storage.cassandra.port"):
        open_store(conf, "x")
    seeds = tmp_path / "s.txt"
    seeds.write_text("http://127.0.0.1:1/\n")
    rc = cli("inject", seeds, "-crawlId", "x", "-D", "storage.data.store.class=cassandra",
             "-D", "storage.cassandra.port=9", "-D", f"storage.data.dir={tmp_path}")
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 1 and len(err) == 1 and "docker/services.sh start cassandra" in err[0]


def test_key_groups_cover_each_key_once_within_bounds() -> None:
    from nutch2.stores.cassandra import IN_PRODUCT, key_groups, prefix_of

    keys = [f"com.h{h:03d}:http/p{i}" for h in range(300) for i in range(h % 7)] + ["com.big:http/x"] * 3 + \
        [f"com.big:http/{i:04d}" for i in range(500)]
    groups = key_groups(keys, 128)
    seen = [k for _, ks in groups for k in ks]
    assert sorted(seen) == sorted(set(keys))
    for prefixes, ks in groups:
        assert len(ks) <= 128 and len(prefixes) * len(ks) <= IN_PRODUCT
        assert {prefix_of(k) for k in ks} == set(prefixes)
    assert len(groups) < len(set(keys)) / 20  # hosts packed together, a big host in a few


def test_requests_per_batch_not_per_row(session, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Writes, reads by key and a batch's selection cost requests per batch of rows, not per row (issue 41);
    a row bigger than a batch may hold goes alone and is written whole."""
    conf = make_conf(tmp_path, "cassandra")
    cid = "c" + uuid.uuid4().hex[:10]
    store = open_store(conf, cid)
    requests = []
    make = store.session._create_response_future
    monkeypatch.setattr(store.session, "_create_response_future",
                        lambda query, *a, **kw: requests.append(query) or make(query, *a, **kw))
    try:
        keys = [f"com.host{i % 30:02d}:http/page/{i:04d}" for i in range(300)]
        for key in keys:
            page = WebPage(key, status=1, title=f"t {key}", fetch_time=1_700_000_000_000, markers={"dist": "1"})
            Mark.GENERATE.put(page, "b1")
            store.put(key, page)
        big = WebPage("com.big:http/", status=2, content=os.urandom(80_000))
        store.put(big.key, big)
        store.flush()
        assert 0 < len(requests) < 100, len(requests)
        requests.clear()
        rows = store.get_many([*keys, "com.none:http/x"], ["title"])
        assert sorted(rows) == sorted(keys) and rows[keys[7]].title == f"t {keys[7]}"
        assert len(requests) < 10, len(requests)
        requests.clear()
        assert sorted(p.key for p in store.scan(fields=["status"], mark=(Mark.GENERATE.value, "b1"))) == sorted(keys)
        assert len(requests) < 60, len(requests)
        assert store.get(big.key, ["content"]).content == big.content
    finally:
        store.drop_schema()
        store.close()


def test_connections_send_at_once(session, tmp_path: Path) -> None:
    """TCP_NODELAY on every connection: with Nagle's algorithm a request longer than a segment (a fetched page's
    row) waited for the server's delayed ACK, ~40 ms a write (issue 41)."""
    store = open_store(make_conf(tmp_path, "cassandra"), "n" + uuid.uuid4().hex[:10], create=False)
    try:
        conns = [p._connection for p in store.session._pools.values()]  # the driver's pools (no public accessor)
        conns.append(store.cluster.control_connection._connection)
        assert conns and all(c._socket.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) for c in conns)
    finally:
        store.close()


def test_a_finished_batch_is_forgotten_and_a_new_write_records_it_again(session, tmp_path: Path) -> None:
    """mark_values (a crawl's start, fetch -all, updatedb -all) read every batch's mark bucket ever made, 16 reads
    each, however long ago the batch ended: a bucket found with no entry left is forgotten; entries written to it
    later record it again."""
    conf = make_conf(tmp_path, "cassandra")
    ks = conf.get_str("storage.cassandra.keyspace")
    cid = "c" + uuid.uuid4().hex[:10]
    store = open_store(conf, cid)
    buckets = f'SELECT bucket FROM "{ks}"."{cid}_webpage_idxbuckets" WHERE idx = \'m\''
    try:
        pages = [WebPage(f"com.example.www:http/{i}", status=1) for i in range(40)]
        for page in pages:
            Mark.GENERATE.put(page, "b1")
            store.put(page.key, page)
        store.flush()
        assert store.mark_values(Mark.GENERATE.value) == {"b1"}
        for page in pages:  # updatedb ends the batch
            Mark.GENERATE.remove(page)
            store.put(page.key, page)
        store.flush()
        assert [r.bucket for r in session.execute(buckets)] == ["_gnmrk_\x00b1"]
        store.index.in_flight_ms = 0  # as if the batch ended longer ago than a write can take (3.5 min here)
        assert store.mark_values(Mark.GENERATE.value) == set()
        assert session.execute(buckets).all() == []
        Mark.GENERATE.put(pages[7], "b1")  # the same batch's mark written again, from another process
        other = open_store(conf, cid, create=False)
        try:
            other.put(pages[7].key, pages[7])
            other.flush()
        finally:
            other.close()
        assert store.mark_values(Mark.GENERATE.value) == {"b1"}
        assert [p.key for p in store.scan(mark=("_gnmrk_", "b1"))] == [pages[7].key]
    finally:
        store.drop_schema()
        store.close()


def test_a_write_that_removes_marks_drops_their_entries(session, tmp_path: Path) -> None:
    """A row read with its markers and written without a mark (updatedb ends the batch) drops that mark's entry
    once the row is written, at the write's stamp: a finished batch leaves no entries behind for mark_values to
    read. Written again later, the entry survives."""
    conf = make_conf(tmp_path, "cassandra")
    ks = conf.get_str("storage.cassandra.keyspace")
    cid = "c" + uuid.uuid4().hex[:10]
    store = open_store(conf, cid)
    entries = f'SELECT key FROM "{ks}"."{cid}_webpage_idx" WHERE idx = \'m\' AND bucket = %s AND shard = %s'
    from nutch2.stores.index import mark_bucket, shard_of

    try:
        keys = [f"com.example.www:http/{i}" for i in range(20)]
        for key in keys:
            page = WebPage(key, status=1)
            Mark.GENERATE.put(page, "b1")
            store.put(key, page)
        store.flush()
        for page in store.scan(fields=["markers"], mark=("_gnmrk_", "b1")):
            Mark.GENERATE.remove(page)
            store.put(page.key, page)
        store.flush()
        bucket = mark_bucket("_gnmrk_", "b1")
        assert [r for k in keys for r in session.execute(entries, [bucket, shard_of(k)])] == []
        again = WebPage(keys[0], status=1)
        Mark.GENERATE.put(again, "b1")
        store.put(keys[0], again)
        store.flush()
        assert [p.key for p in store.scan(mark=("_gnmrk_", "b1"))] == [keys[0]]
    finally:
        store.drop_schema()
        store.close()
