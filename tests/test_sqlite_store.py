"""The sqlite store's query plans (a batch job's read follows the batch, not the table) and its write lock."""

from __future__ import annotations

import sqlite3
import threading
import time

import pytest

from nutch2.errors import ConfigError, StoreError
from nutch2.stores import open_store
from nutch2.stores.query import Due, Query
from nutch2.webpage import WebPage

from .conftest import make_conf


def test_each_partition_of_a_due_query_reads_the_due_index(tmp_path) -> None:
    """Key-range partitions of a due query (generate's input) are read through the due index: SQLite must not
    answer the key range from the key index, which would visit every row of the range (a 1M-row table read half
    per partition, 0.73 s against 0.06 s; bench/RESULTS.md issue 24)."""
    now = 1_700_000_000_000
    with open_store(make_conf(tmp_path, "sqlite"), "plans") as store:
        for i in range(2000):
            key = f"com.h{i % 20:02d}:http/p{i:05d}"
            store.put(key, WebPage(key, status=1, fetch_time=now - i if i % 50 == 0 else now + i * 60_000))
        store.flush()
        query = Query(("status", "fetch_time"), due=Due(now))
        parts = store.partitions(query, 3)
        assert len(parts) == 3
        conn = sqlite3.connect(store.path)
        conn.execute("ANALYZE")  # with statistics too, the plan stays on the due index
        for part in parts:
            sql, params = store.read_sql(query, part)
            plan = " ".join(r[-1] for r in conn.execute(f"EXPLAIN QUERY PLAN {sql}", params))
            assert "plans_webpage_due" in plan and "autoindex" not in plan, plan
        assert sum(len(list(store.read(query, p))) for p in parts) == 40


def _hold_write_lock(path, seconds: float, started: threading.Event) -> None:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("BEGIN IMMEDIATE")
    started.set()
    time.sleep(seconds)
    conn.execute("COMMIT")
    conn.close()


def test_a_write_waits_for_another_writer_then_gives_up_at_the_busy_timeout(tmp_path) -> None:
    """A batch written while another connection (another process's fetcher, in a crawl) holds the write lock is
    written once the lock is released; one held past storage.sqlite.busy.timeout fails with a StoreError naming
    the lock, and the batch is kept for the next flush."""
    conf = make_conf(tmp_path, "sqlite", **{"storage.sqlite.busy.timeout": 0.5})
    with open_store(conf, "locks") as store:
        store.put("com.a:http/", WebPage("com.a:http/", status=1))
        store.flush()
        for hold, ok in ((0.2, True), (1.5, False)):
            started = threading.Event()
            holder = threading.Thread(target=_hold_write_lock, args=(store.path, hold, started))
            holder.start()
            started.wait(5)
            key = f"com.b{hold}:http/"
            store.put(key, WebPage(key, status=2))
            t0 = time.monotonic()
            if ok:
                store.flush()
                assert time.monotonic() - t0 >= 0.1  # it waited for the other writer
            else:
                with pytest.raises(StoreError, match="database is locked"):
                    store.flush()
                assert 0.4 <= time.monotonic() - t0 < 1.4  # gave up at the busy timeout, not when the lock went
            holder.join()
        store.flush()  # the batch that failed was kept
        assert store.get("com.b1.5:http/").status == 2 and store.get("com.b0.2:http/").status == 2


def test_wal_autocheckpoint_is_set_and_checked(tmp_path) -> None:
    with open_store(make_conf(tmp_path, "sqlite", **{"storage.sqlite.wal.autocheckpoint": 2000}), "ck") as store:
        store.put("com.a:http/", WebPage("com.a:http/", status=1))
        store.flush()
        assert store._writer_conn().execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 2000
    with pytest.raises(ConfigError, match="storage.sqlite.wal.autocheckpoint=0 must be at least 1"):
        open_store(make_conf(tmp_path, "sqlite", **{"storage.sqlite.wal.autocheckpoint": 0}), "ck")


def test_page_cache_per_connection_is_the_setting(tmp_path) -> None:
    with open_store(make_conf(tmp_path, "sqlite", **{"storage.sqlite.cache.mb": 0.25}), "cache") as store:
        store.put("com.a:http/", WebPage("com.a:http/", status=1))
        store.flush()
        assert store._writer_conn().execute("PRAGMA cache_size").fetchone()[0] == -256
        assert store._conn().execute("PRAGMA cache_size").fetchone()[0] == -256


def test_a_write_batch_is_written_once_its_values_reach_the_size_bound(tmp_path) -> None:
    """storage.write.batch.mb bounds a batch as well as storage.write.batch.size: 500 parsed pages' text are
    not all held before the first write."""
    conf = make_conf(tmp_path, "sqlite", **{"storage.write.batch.size": 500, "storage.write.batch.mb": 0.25})
    with open_store(conf, "bytes") as store:
        text = "x" * 100_000
        for i in range(5):
            key = f"com.a:http/{i}"
            store.put(key, WebPage(key, status=2, text=text))
        written = sqlite3.connect(store.path).execute('SELECT count(*) FROM "bytes_webpage"').fetchone()[0]
        assert written == 3  # the third page took the batch past 0.25 MB; two wait for the next write
        store.flush()
        assert store.count() == 5
        for i in range(3):  # small rows: the row count bounds the batch as before
            store.put(f"com.b:http/{i}", WebPage(f"com.b:http/{i}", status=1))
        assert sqlite3.connect(store.path).execute('SELECT count(*) FROM "bytes_webpage"').fetchone()[0] == 5
