"""Store benchmarks (issues 6 and 7): put and scan rows/s through nutch2's store vs the raw client doing the
same work, and the cost of selecting one 1 000-row batch from tables of 10 000 and 100 000 rows.

    python -m bench.stores [--backends sqlite,hbase,cassandra] [--rows 20000] [--runs 3] [--quick]

Needs the servers of docker/services.sh for hbase and cassandra. Prints markdown for bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from nutch2.config import Configuration
from nutch2.marks import Mark
from nutch2.stores import open_store
from nutch2.stores.query import Query
from nutch2.webpage import WebPage

REPO = Path(__file__).resolve().parent.parent
TEXT = "lorem ipsum dolor sit amet " * 40  # ~1 KB of text per row


def conf_for(backend: str, data: Path) -> Configuration:
    return Configuration(REPO / "conf", {"storage.data.store.class": backend, "storage.data.dir": str(data)})


def row(i: int, batch: str | None = None) -> WebPage:
    key = f"com.host{i % 200:03d}:http/page/{i:07d}.html"
    page = WebPage(key, status=2, fetch_time=1_700_000_000_000 + i, score=1.0 / (i + 1), title=f"Page {i}",
                   text=TEXT, markers={"dist": "1", "_updmrk_": "old"})
    if batch:
        page.markers["_gnmrk_"] = batch
    return page


def timed(fn: Callable[[], int]) -> float:
    """rows/s of one run of fn (which returns the number of rows it handled)."""
    t = time.perf_counter()
    n = fn()
    return n / (time.perf_counter() - t)


def median(runs: int, fn: Callable[[], float]) -> float:
    return statistics.median(fn() for _ in range(runs))


# ------------------------------------------------------------------ raw clients doing the same work
class RawHBase:
    def __init__(self, conf: Configuration, table: str) -> None:
        import happybase

        self.conn = happybase.Connection(conf.get_str("hbase.thrift.host"), conf.get_int("hbase.thrift.port"))
        self.table = self.conn.table(table)

    def put(self, n: int) -> int:
        with self.table.batch(batch_size=1000) as b:
            for i in range(n):
                p = row(i)
                b.put(p.key.encode(), {b"f:st": (2).to_bytes(4, "big"), b"f:ts": p.fetch_time.to_bytes(8, "big"),
                                       b"s:s": b"\0" * 8, b"p:t": p.title.encode(), b"p:c": TEXT.encode(),
                                       b"mk:dist": b"1", b"mk:_updmrk_": b"old", b"f:_": b""})
        return n

    def scan(self) -> int:
        return sum(1 for _ in self.table.scan(columns=[b"f:_", b"f:st", b"s:s", b"mk"], batch_size=500))

    def close(self) -> None:
        self.conn.close()


class RawCassandra:
    def __init__(self, keyspace: str, table: str) -> None:
        from cassandra.cluster import Cluster

        self.cluster = Cluster(["127.0.0.1"])
        self.session = self.cluster.connect()
        self.q = f'"{keyspace}"."{table}"'
        self.insert = self.session.prepare(
            f"INSERT INTO {self.q} (prefix, key, status, fetch_time, score, title, text, markers) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?)")

    def put(self, n: int) -> int:
        from cassandra.concurrent import execute_concurrent_with_args

        args = []
        for i in range(n):
            p = row(i)
            args.append((p.key.split(":")[0] + ":", p.key, 2, p.fetch_time, p.score, p.title, TEXT,
                         {"dist": "1", "_updmrk_": "old"}))
        execute_concurrent_with_args(self.session, self.insert, args, concurrency=64)
        return n

    def scan(self) -> int:
        return sum(1 for _ in self.session.execute(f"SELECT key, status, score, markers FROM {self.q}"))

    def close(self) -> None:
        self.cluster.shutdown()


# ------------------------------------------------------------------ benchmarks
def overhead(backend: str, rows: int, runs: int, data: Path) -> str:
    """put and scan rows/s: nutch2 store vs raw client, same rows, same columns."""
    conf = conf_for(backend, data)
    fields = ("status", "score", "markers")

    def store_put() -> float:
        store = open_store(conf, "ovh" + uuid.uuid4().hex[:8])
        try:
            def go() -> int:
                for i in range(rows):
                    p = row(i)
                    store.put(p.key, p)
                store.flush()
                return rows
            return timed(go)
        finally:
            store.drop_schema()
            store.close()

    def raw_put() -> float:
        store = open_store(conf, "raw" + uuid.uuid4().hex[:8])  # the same schema, written by the raw client
        try:
            raw = RawHBase(conf, store.table) if backend == "hbase" else RawCassandra(store.keyspace, store.table)
            try:
                return timed(lambda: raw.put(rows))
            finally:
                raw.close()
        finally:
            store.drop_schema()
            store.close()

    store = open_store(conf, "scan" + uuid.uuid4().hex[:8])
    try:
        for i in range(rows):
            p = row(i)
            store.put(p.key, p)
        store.flush()
        raw = RawHBase(conf, store.table) if backend == "hbase" else RawCassandra(store.keyspace, store.table)
        # the way jobs read: the store's splits (token ranges on Cassandra, regions on HBase)
        query = Query(fields)
        s_scan = median(runs, lambda: timed(lambda: sum(1 for s in store.partitions(query, 1)
                                                        for _ in store.read(query, s))))
        r_scan = median(runs, lambda: timed(raw.scan))
        raw.close()
    finally:
        store.drop_schema()
        store.close()
    s_put = median(runs, store_put)
    r_put = median(runs, raw_put)
    return (f"| {backend} | put | {s_put:,.0f} | {r_put:,.0f} | {s_put / r_put:.2f} |\n"
            f"| {backend} | scan | {s_scan:,.0f} | {r_scan:,.0f} | {s_scan / r_scan:.2f} |")


def batch_select(backend: str, sizes: tuple[int, ...], batch_rows: int, runs: int, data: Path) -> str:
    """Seconds to read the rows of one batch (by mark) from tables of different sizes."""
    conf = conf_for(backend, data)
    out = []
    for size in sizes:
        store = open_store(conf, "sel" + uuid.uuid4().hex[:8])
        try:
            step = size // batch_rows
            for i in range(size):
                p = row(i, "B" if i % step == 0 else None)
                store.put(p.key, p)
            store.flush()

            def select(store=store) -> float:
                t = time.perf_counter()
                n = sum(1 for _ in store.scan(fields=("status", "markers"), mark=(Mark.GENERATE.value, "B")))
                assert n == batch_rows, n
                return time.perf_counter() - t

            out.append(median(runs, select))
        finally:
            store.drop_schema()
            store.close()
    cells = " | ".join(f"{s:.3f}" for s in out)
    return f"| {backend} | {cells} | {out[-1] / out[0]:.2f} |"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.stores")
    ap.add_argument("--backends", default="sqlite,hbase,cassandra")
    ap.add_argument("--rows", type=int, default=20000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="tiny sizes, one run: a smoke test")
    args = ap.parse_args(argv)
    backends = [b for b in args.backends.split(",") if b]
    rows, runs = (300, 1) if args.quick else (args.rows, args.runs)
    sizes = (1000, 2000) if args.quick else (10_000, 100_000)
    batch_rows = 100 if args.quick else 1000
    data = Path(tempfile.mkdtemp(prefix="nutch2-bench-"))
    load = os.getloadavg()[0]
    print(f"machine: {os.cpu_count()} cores, load {load:.1f}; {rows} rows, median of {runs}\n")
    print("| store | op | nutch2 rows/s | raw client rows/s | ratio |\n|---|---|---|---|---|")
    for b in backends:
        if b in ("hbase", "cassandra"):
            print(overhead(b, rows, runs, data), flush=True)
    print(f"\nselect a {batch_rows}-row batch by mark (seconds, median of {runs})\n")
    print(f"| store | {' | '.join(f'{s:,} rows' for s in sizes)} | ratio |\n|---|" + "---|" * (len(sizes) + 1))
    for b in backends:
        print(batch_select(b, sizes, batch_rows, runs, data), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
