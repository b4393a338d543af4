"""The sqlite store's query plans: a batch job's read follows the batch, not the table."""

from __future__ import annotations

import sqlite3

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
