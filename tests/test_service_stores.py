"""Integration tests of the HBase and Cassandra stores against the real servers: inspection by hand,
fail-fast when down, and a connection cut in the middle of a fetch followed by `fetch -resume`."""

from __future__ import annotations

import collections
import os
import re
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from nutch2.errors import StoreError
from nutch2.marks import Mark
from nutch2.status import CrawlStatus
from nutch2.stores import open_store
from nutch2.webpage import WebPage
from tests.conftest import PORT_KEY, SERVICE_STORES, make_conf, port_props
from tests.crawlutil import cli, conf_for, defines, rows
from tests.proxy import Proxy
from tests.testweb import TestWeb

pytestmark = pytest.mark.integration
PORT = {"hbase": 9090, "cassandra": 9042, "postgres": 5433}
REPO = Path(__file__).resolve().parent.parent


def test_hbase_rows_under_nutch_families(tmp_path: Path) -> None:
    if "hbase" not in SERVICE_STORES:
        pytest.skip("hbase store not enabled (NUTCH2_TEST_STORES); run docker/services.sh start hbase")
    import happybase

    conf = make_conf(tmp_path, "hbase")
    cid = "h" + uuid.uuid4().hex[:10]
    store = open_store(conf, cid)
    try:
        page = WebPage("com.example.www:http/a", status=2, fetch_time=1_700_000_000_000, score=0.5, title="A",
                       outlinks={"http://x/": "x"}, headers={"Server": "s"}, metadata={"k": b"\x00v"})
        Mark.GENERATE.put(page, "b1")
        store.put(page.key, page)
        store.flush()
        conn = happybase.Connection("127.0.0.1", 9090)
        try:
            table = conn.table(f"{cid}_webpage")
            assert set(table.families()) == {b"f", b"p", b"s", b"il", b"ol", b"h", b"mtdt", b"mk", b"stm"}
            assert all(d["max_versions"] == 1 for d in table.families().values())
            # a get reads only the HFiles that may hold the row, through the block cache
            assert all(d["bloom_filter_type"] == b"ROW" and d["block_cache_enabled"]
                       for d in table.families().values())
            row = table.row(page.key.encode())
            assert row[b"f:st"] == (2).to_bytes(4, "big")
            assert row[b"f:ts"] == (1_700_000_000_000).to_bytes(8, "big")
            assert row[b"p:t"] == b"A" and row[b"ol:http://x/"] == b"x" and row[b"h:Server"] == b"s"
            assert row[b"mk:_gnmrk_"] == b"b1" and row[b"mtdt:k"] == b"\x00v"
            import struct

            assert struct.unpack(">d", row[b"s:s"])[0] == 0.5
        finally:
            conn.close()
    finally:
        store.drop_schema()
        store.close()


@pytest.mark.parametrize("backend", ["hbase", "cassandra", "postgres"])
def test_store_down_fails_fast(tmp_path: Path, backend: str, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip({"hbase": "happybase", "cassandra": "cassandra.cluster", "postgres": "psycopg"}[backend])
    seeds = tmp_path / "s.txt"
    seeds.write_text("http://127.0.0.1:1/\n")
    for command in (["inject", seeds], ["generate"], ["readdb", "-stats"]):
        rc = cli(*command, "-crawlId", "down", *defines(tmp_path, backend, **port_props(backend, 9)))
        err = capsys.readouterr().err.strip().splitlines()
        assert rc == 1 and len(err) == 1, (command, err)
        assert "127.0.0.1:9" in err[0] and PORT_KEY[backend] in err[0] and "Traceback" not in err[0]


@pytest.mark.slow
@pytest.mark.timeout(300)
@pytest.mark.parametrize("backend", SERVICE_STORES or ["none"])
def test_store_restart_mid_fetch_then_resume(tmp_path: Path, backend: str,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    if backend == "none":
        if os.environ.get("CI"):
            pytest.fail("CI runs without HBase/Cassandra stores enabled")
        pytest.skip("no service store enabled (NUTCH2_TEST_STORES)")
    hosts, pages = 6, 40
    props = {"fetcher.server.delay": 0.05, "fetcher.write.batch.size": 10}
    d = defines(tmp_path, backend, **props)
    cid = f"rs{uuid.uuid4().hex[:8]}"
    with TestWeb(hosts=hosts, pages_per_host=pages, traps=False) as web:
        urls = [web.page_url(h, i) for h in range(hosts) for i in range(pages)]
        (tmp_path / "seeds.txt").write_text("".join(u + "\n" for u in urls))
        assert cli("inject", tmp_path / "seeds.txt", "-crawlId", cid, *d) == 0
        capsys.readouterr()
        assert cli("generate", "-crawlId", cid, *d) == 0
        batch = capsys.readouterr().out.strip()
        proxy = Proxy(("127.0.0.1", PORT[backend]))
        try:
            dp = defines(tmp_path, backend, **props, **port_props(backend, proxy.port))
            proc = subprocess.Popen([sys.executable, "-m", "nutch2.cli", "fetch", batch, "-threads", "6",
                                     "-crawlId", cid, *dp], cwd=REPO, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.PIPE, text=True)
            deadline = time.monotonic() + 150  # a loaded machine (a CI run) may take long to do a third
            while len([r for r in web.requests() if r.path != "/robots.txt"]) < len(urls) // 3:
                assert proc.poll() is None and time.monotonic() < deadline
                time.sleep(0.02)
            proxy.bounce(3.0)  # the server "restarts": connections drop, nothing answers for 3 s
            _, err = proc.communicate(timeout=180)
        finally:
            proxy.close()
        print(f"{backend}: fetch through a 3 s outage exited {proc.returncode}: {err.strip().splitlines()[-1:]}")
        if proc.returncode != 0:  # it may also finish through reconnects
            lines = [x for x in err.splitlines() if ": error: " in x]  # (and a warning line per retry)
            assert proc.returncode == 1 and len(lines) == 1 and "Traceback" not in err, err
            assert f"run `nutch2 fetch {batch} " in lines[0] and lines[0].endswith(" -resume` to go on"), lines[0]
        assert cli("fetch", batch, "-resume", "-crawlId", cid, *d) == 0
        conf = conf_for(tmp_path, backend, **props)
        table = rows(conf, cid)
        assert len(table) == len(urls) and all(Mark.FETCH.check(p) == batch for p in table.values())
        # every URL was fetched; one claimed before the outage whose answer was lost with the connection was
        # requested once more, nothing else twice
        assert all(p.status == CrawlStatus.FETCHED for p in table.values())
        requested = collections.Counter((r.host, r.path) for r in web.requests() if r.path != "/robots.txt")
        assert set(requested.values()) <= {1, 2}
        assert len([n for n in requested.values() if n == 2]) <= 6 * 2  # in flight (6 threads), one write batch
        with open_store(conf, cid) as store:
            store.drop_schema()


def test_open_store_error_is_store_error(tmp_path: Path) -> None:
    pytest.importorskip("happybase")
    with pytest.raises(StoreError, match="hbase.thrift.port"):
        open_store(make_conf(tmp_path, "hbase", **{"hbase.thrift.port": 9}), "x")


@pytest.mark.integration
def test_postgres_connections_notice_a_server_machine_that_went_away(tmp_path: Path) -> None:
    """storage.postgres.timeout: TCP keepalives and tcp_user_timeout on every connection (a network or machine
    gone notices nothing else; a server that is up but frozen: the watchdog's test below)."""
    if "postgres" not in SERVICE_STORES:
        if os.environ.get("CI"):
            pytest.fail("CI runs without the PostgreSQL store enabled")
        pytest.skip("the PostgreSQL store is not enabled (NUTCH2_TEST_STORES)")
    conf = make_conf(tmp_path, "postgres", **{"storage.postgres.timeout": 12})
    store = open_store(conf, f"ka{uuid.uuid4().hex[:8]}")
    try:
        params = store._conn().info.get_parameters()
        assert (params["keepalives"], params["keepalives_idle"], params["keepalives_interval"],
                params["keepalives_count"], params["tcp_user_timeout"]) == ("1", "4", "2", "3", "12000")
    finally:
        store.drop_schema()
        store.close()


@pytest.mark.integration
def test_a_postgres_table_dropped_by_hand_is_named_in_one_line(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    if "postgres" not in SERVICE_STORES:
        if os.environ.get("CI"):
            pytest.fail("CI runs without the PostgreSQL store enabled")
        pytest.skip("the PostgreSQL store is not enabled (NUTCH2_TEST_STORES)")
    crawl_id = f"dr{uuid.uuid4().hex[:8]}"
    store = open_store(make_conf(tmp_path, "postgres"), crawl_id)
    try:
        store._exec(f'DROP TABLE "{crawl_id}_webpage"')
        capsys.readouterr()
        assert cli("readdb", "-stats", "-crawlId", crawl_id, *defines(tmp_path, "postgres")) == 1
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].endswith(f"no crawl db {crawl_id}_webpage in PostgreSQL at "
                                                 f"{store.where}; run `nutch2 inject` first or check -crawlId/"
                                                 "storage.postgres.url (or was the crawl's table dropped?)"), err
        # a crawl id never injected (a typo) reads the same as for sqlite: no driver error
        capsys.readouterr()
        assert cli("readdb", "-stats", "-crawlId", f"{crawl_id}x", *defines(tmp_path, "postgres")) == 1
        assert f"nutch2 readdb: error: no crawl db {crawl_id}x_webpage in PostgreSQL" in capsys.readouterr().err
    finally:
        store.drop_schema()
        store.close()


@pytest.mark.integration
@pytest.mark.parametrize("store,where,check", [
    ("hbase", "HBase at ", "hbase.thrift.host"),
    ("cassandra", "Cassandra at ", "storage.cassandra.keyspace"),
])
def test_a_crawl_id_with_no_table_says_no_crawl_db(tmp_path: Path, capsys: pytest.CaptureFixture[str], store: str,
                                                   where: str, check: str) -> None:
    """A mistyped -crawlId on HBase or Cassandra: the sqlite store's 'no crawl db' line, not the server's
    exception (IOError(...TableNotFoundException...), Error from server: code=2200 [Invalid query] ...)."""
    if store not in SERVICE_STORES:
        if os.environ.get("CI"):
            pytest.fail(f"CI runs without the {store} store enabled")
        pytest.skip(f"the {store} store is not enabled (NUTCH2_TEST_STORES)")
    crawl_id = f"nt{uuid.uuid4().hex[:8]}"
    for command in (["readdb", "-stats"], ["generate"], ["parse", "-all"]):
        capsys.readouterr()
        assert cli(*command, "-crawlId", crawl_id, *defines(tmp_path, store)) == 1
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and f"error: no crawl db {crawl_id}_webpage in {where}" in err[0] and \
            err[0].endswith(f"; run `nutch2 inject` first or check -crawlId/{check}"), err
    if store == "hbase":  # nothing made for the crawl that is not there (generate's tasks made its index table)
        import happybase

        conf = make_conf(tmp_path, "hbase")
        conn = happybase.Connection(conf.get_str("hbase.thrift.host"), conf.get_int("hbase.thrift.port"))
        try:
            assert not [t for t in conn.tables() if t.startswith(crawl_id.encode())], conn.tables()
        finally:
            conn.close()


@pytest.mark.integration
@pytest.mark.timeout(120)
def test_a_frozen_postgres_fails_the_call_and_the_command_in_one_line(tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """PostgreSQL stopped (kill -STOP): its kernel still takes connections and acknowledges packets, so keepalives
    and tcp_user_timeout see nothing and a call waited until Ctrl-C (a fetch sat frozen 5 minutes). A call that
    waited storage.postgres.timeout now checks with a new connection; that one unanswered too, the call fails as
    StoreUnavailable naming the silence, later calls of the process fail at once, and once the server answers
    again the store works."""
    if "postgres" not in SERVICE_STORES:
        if os.environ.get("CI"):
            pytest.fail("CI runs without the PostgreSQL store enabled")
        pytest.skip("the PostgreSQL store is not enabled (NUTCH2_TEST_STORES)")
    from nutch2.errors import StoreUnavailable

    crawl_id = f"fz{uuid.uuid4().hex[:8]}"
    proxy = Proxy(("127.0.0.1", PORT["postgres"]))
    props = {"storage.postgres.timeout": 2, **port_props("postgres", proxy.port)}
    store = open_store(make_conf(tmp_path, "postgres", **props), crawl_id)
    try:
        store.put("com.example:http/a", WebPage("com.example:http/a", status=1))
        store.flush()
        proxy.freeze()
        silence = "no answer within storage.postgres.timeout (2 s), nor to a new connection; is the server up"
        with pytest.raises(StoreUnavailable, match=re.escape(silence)):
            store.get("com.example:http/a")
        with pytest.raises(StoreUnavailable, match=re.escape(silence)):  # known silent: no second wait
            store.count()
        capsys.readouterr()
        assert cli("readdb", "-stats", "-crawlId", crawl_id, *defines(tmp_path, "postgres", **props)) == 1
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "nutch2 readdb: error: " in err[0] and "Traceback" not in err[0], err
        assert "no answer within" in err[0] and "is the server up" in err[0], err
        proxy.thaw()
        deadline = time.monotonic() + 60
        while True:  # the watchdog hears from it again within a beat or two
            try:
                assert store.get("com.example:http/a").status == 1
                break
            except StoreUnavailable:
                assert time.monotonic() < deadline
                time.sleep(0.5)
    finally:
        proxy.thaw()
        store.drop_schema()
        store.close()
        proxy.close()


@pytest.mark.integration
@pytest.mark.timeout(120)
def test_a_frozen_hbase_thrift_server_fails_the_process_calls_after_one_timeout(tmp_path: Path) -> None:
    """The Thrift server (or HBase behind it) stopped (kill -STOP): a call waited storage.hbase.timeout, was tried
    once more, and every other store of the process (a lease's) waited its own two timeouts: a job ended after
    66-82 s with a 30 s timeout. Now a call that waited its timeout asks a new connection; unanswered too, it fails,
    the process's other calls on that server fail at once without sending anything, and after one timeout they
    try again (the server answers again: they go through)."""
    if "hbase" not in SERVICE_STORES:
        if os.environ.get("CI"):
            pytest.fail("CI runs without the HBase store enabled")
        pytest.skip("the HBase store is not enabled (NUTCH2_TEST_STORES)")
    from nutch2.errors import StoreUnavailable

    crawl_id = f"fz{uuid.uuid4().hex[:8]}"
    proxy = Proxy(("127.0.0.1", PORT["hbase"]))
    conf = make_conf(tmp_path, "hbase", **{"storage.hbase.timeout": 2000, **port_props("hbase", proxy.port)})
    store = open_store(conf, crawl_id)
    lease_store = open_store(conf, crawl_id)  # the lease's own store, on the same server
    try:
        store.put("com.example:http/a", WebPage("com.example:http/a", status=1))
        store.flush()
        assert lease_store.get_state("lease/crawl") is None
        proxy.freeze()
        with pytest.raises(StoreUnavailable, match="no answer within storage.hbase.timeout, nor to a new connection"):
            store.get("com.example:http/a")
        sent = proxy.bytes
        with pytest.raises(StoreUnavailable, match="nor to a new connection"):
            lease_store.get_state("lease/crawl")
        assert proxy.bytes == sent  # failed at once: not sent, not waited for
        proxy.thaw()
        time.sleep(2.5)  # one timeout later the process asks the server again
        assert lease_store.get_state("lease/crawl") is None
        assert lease_store.get("com.example:http/a").status == 1
    finally:
        proxy.thaw()
        lease_store.drop_schema()
        proxy.close()
