"""Integration tests of the Cassandra store against the real Cassandra (docker/services.sh start cassandra)."""

from __future__ import annotations

import os
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
