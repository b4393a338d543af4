"""Store benchmarks (issues 6, 7 and 24): put and scan rows/s through nutch2's store vs the raw client doing the
same work, the cost of selecting one 1 000-row batch from tables of 10 000 and 100 000 rows, and (--scale) each
batch job of a 10 000-row batch in tables of 100 000 and 1 000 000 rows.

    python -m bench.stores [--backends sqlite,hbase,cassandra] [--rows 20000] [--runs 3] [--quick]
    python -m bench.stores --scale [--backends sqlite,postgres,hbase,cassandra] [--sizes 100000,1000000]
                                   [--batch 10000] [--solr URL] [--hbase-encoding ROW_INDEX_V1]
    python -m bench.stores --crawl [--backends sqlite,cassandra] [--hosts 20 --pages 50 --threads 16]
                                   [--seeds 50000] [--runs 3]

--scale writes each table straight into the store (rows of 1 000 hosts; `batch` of them due, the rest due in
10 days), then runs the jobs as commands (`nutch2 generate -topN batch`, parse, updatedb, index, readdb -stats)
and, for fetch's read, the rows its map reads; before parse the batch's rows get a fetched page each (written
straight into the store, not timed). Each step is one process: its wall seconds and its peak RSS (polled). The
table holds --runs batches' worth of due rows: generate runs --runs times (each picks a new batch of the same
size), every other step once per batch; a cell is the median seconds and the highest RSS. Between the writes
and the steps the bench waits for the machine to go quiet (the service's compactions; "setup s" shows both).
With --hbase-encoding, the hbase tables get that data block encoding on every family before they are filled, as
an operator sets it in the HBase shell (README, Stores): bench/java/HBaseFamilies.java over the Java admin API,
which Thrift v1 does not carry; "hbase" is then measured twice, with HBase's default encoding and with that one.

--crawl (issue 41) runs, per store, `nutch2 crawl` of the nginx web (bench/web.py; delay 0, -threads T, rounds
until done, nutch2's default runner and tasks) and `nutch2 inject` of --seeds URLs of that web into an empty table,
the stores alternating run by run; cells are median seconds with the ratio to the first store, and the FETCHED
count the crawl ends with.

Needs the servers of docker/services.sh for hbase and cassandra. Prints markdown for bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import functools
import os
import statistics
import subprocess
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


# ------------------------------------------------------------------ --scale: batch jobs vs table size
PAGE = ("<html><head><title>Page {i}</title></head><body><p>" + "words of a page " * 40 +
        "</p>{links}</body></html>")
FETCH_READ = """
import sys, time
from nutch2.config import Configuration
from nutch2.jobs.fetch import FETCH_FIELDS
from nutch2.marks import Mark
from nutch2.stores import open_store
from nutch2.stores.query import Query
conf = Configuration(sys.argv[1], dict(a.split("=", 1) for a in sys.argv[4:]))
store = open_store(conf, sys.argv[2], create=False)
query = Query(FETCH_FIELDS, (Mark.GENERATE.value, sys.argv[3]))
n = sum(1 for part in store.partitions(query, 2) for _ in store.read(query, part))
assert n > 0, n
print(n)
"""


def _step(args: list[str]) -> tuple[float, int, str]:
    """Run one command: (wall seconds, the command's own peak RSS in MB, stdout); a failure stops the benchmark.

    The RSS is polled (every 20 ms) rather than taken from wait4's ru_maxrss: a child's ru_maxrss starts at its
    parent's high-water mark (the exec'd child inherits it from the forked copy), so it showed this bench's own
    size — grown by the table it wrote — instead of the command's."""
    import subprocess
    import threading

    import psutil

    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        t = time.perf_counter()
        proc = subprocess.Popen(args, cwd=REPO, stdout=out, stderr=err, text=True)
        peak = 0
        done = threading.Event()

        def poll() -> None:
            nonlocal peak
            ps = psutil.Process(proc.pid)
            while not done.is_set():
                try:
                    peak = max(peak, ps.memory_info().rss)
                except psutil.Error:
                    return
                done.wait(0.02)

        poller = threading.Thread(target=poll, daemon=True)
        poller.start()
        status = proc.wait()
        done.set()
        poller.join()
        seconds = time.perf_counter() - t
        out.seek(0)
        err.seek(0)
        if status != 0:
            raise RuntimeError(f"{' '.join(args[2:5])} failed: {err.read().strip()[-500:]}")
        return seconds, peak >> 20, out.read()


def _timed_step(cells: dict[str, list[tuple[float, int]]], name: str, args: list[str]) -> str:
    """_step, its (seconds, RSS) recorded under `name`; returns its stdout."""
    sec, rss, out = _step(args)
    cells.setdefault(name, []).append((sec, rss))
    return out


SERVICES = {"cassandra": "CassandraDaemon", "hbase": "org.apache.hadoop.hbase", "postgres": "postgres"}


def _settle(backend: str, busy: float = 20.0, most: float = 900.0) -> float:
    """Wait until the store's server is quiet after the bulk write (its flushes and compactions, its statistics):
    its processes' CPU under `busy` % (of one core) over 5 s, for at most `most` seconds. The steps then measure a
    table that has settled, as a month-old crawl's has. Only the server is watched, not the whole machine, so
    other work on a shared machine does not hold the benchmark up. Returns the seconds waited."""
    import psutil

    name = SERVICES.get(backend)
    if name is None:  # an embedded store: nothing runs after the write
        return 0.0
    t = time.perf_counter()
    while time.perf_counter() - t < most:
        procs = [p for p in psutil.process_iter(["name", "cmdline"])
                 if p.info["name"] == name or p.info["name"] == "java" and name in " ".join(p.info["cmdline"] or [])]
        for p in procs:
            try:
                p.cpu_percent()
            except psutil.Error:
                pass
        time.sleep(5)
        used = 0.0
        for p in procs:
            try:
                used += p.cpu_percent()
            except psutil.Error:
                pass
        if used < busy:
            break
    return time.perf_counter() - t


def set_hbase_encoding(cid: str, encoding: str) -> None:
    """Give the crawl's HBase tables `encoding` on every family (the services' HBase, bench/java/HBaseFamilies.java)."""
    services = Path(os.environ.get("NUTCH2_SERVICES_DIR", REPO / ".services"))
    tables = [f"{cid}_webpage{suffix}" for suffix in ("", "_idx", "_state")]
    tool = REPO / "bench" / "java" / "HBaseFamilies.java"
    done = subprocess.run(["java", "-cp", str(services / "hbase" / "lib" / "*"), str(tool),
                           os.environ.get("HBASE_ZK_PORT", "2181"), encoding, *tables], capture_output=True, text=True)
    if done.returncode != 0:  # the cause in one line: the tool's exception (a bad encoding name, no HBase there...)
        lines = done.stderr.splitlines()
        cause = next((ln for ln in lines if "Exception" in ln or "error:" in ln), "see java's output")
        raise SystemExit(f"bench.stores: could not set {encoding} on {cid}'s HBase tables ({cause.strip()}); "
                         f"--hbase-encoding takes a DataBlockEncoding name (ROW_INDEX_V1) and needs "
                         f"`docker/services.sh start hbase`")


def _fill(conf: Configuration, cid: str, size: int, batch: int) -> None:
    """`size` rows of 1 000 hosts, `batch` of them due now and the rest in 10 days, written straight into the store."""
    now = int(time.time() * 1000)
    step = max(1, size // batch)
    with open_store(conf, cid) as store:
        for i in range(size):
            key = f"com.host{i % 1000:04d}:http/page/{i:08d}.html"
            store.put(key, WebPage(key, status=1, fetch_time=now - 60_000 if i % step == 0 else now + 10 * 86_400_000,
                                   fetch_interval=2_592_000, score=1.0 / (1 + i % 97), markers={"dist": "1"}))


def _fetched(conf: Configuration, cid: str, batch: str) -> None:
    """What fetch would have written for the batch: a page with links, status FETCHED, the fetch mark."""
    from nutch2.urls.tableutil import unreverse_url
    from nutch2.webpage import ProtocolStatus

    with open_store(conf, cid, create=False) as store:
        for page in store.read(Query(("markers",), (Mark.GENERATE.value, batch))):
            url = unreverse_url(page.key)
            i = int(url.rsplit("/", 1)[1].split(".")[0])
            links = "".join(f'<a href="http://host{(i + j) % 1000:04d}.com/page/{(i * 7 + j) % 10**8:08d}.html">'
                            f"l{j}</a>" for j in range(5))
            page.status = 2
            page.content = PAGE.format(i=i, links=links).encode()
            page.content_type = "text/html"
            page.base_url = url
            page.protocol_status = ProtocolStatus(1, [], 0)
            page.fetch_time = int(time.time() * 1000)
            Mark.FETCH.put(page, batch)
            store.put(page.key, page)


STEPS = ("generate", "fetch read", "parse", "updatedb", "index", "readdb -stats")


def scale(backend: str, sizes: tuple[int, ...], batch: int, solr: str | None, data: Path, runs: int = 3,
          encoding: str | None = None) -> list[str]:
    """Markdown rows: per table size, each step's median seconds over `runs` equal batches and its peak RSS; with
    `encoding` (hbase), the tables get that data block encoding before the fill."""
    rows = []
    for size in sizes:
        cid = f"sc{size // 1000}k{uuid.uuid4().hex[:6]}"
        props = {"storage.data.store.class": backend, "storage.data.dir": str(data), "http.agent.name": "bench",
                 "mapreduce.job.tasks": "2"}
        conf = Configuration(REPO / "conf", props)
        defs = [x for k, v in props.items() for x in ("-D", f"{k}={v}")]
        cli = [sys.executable, "-m", "nutch2.cli"]
        t = time.perf_counter()
        if encoding:
            with open_store(conf, cid) as store:
                store.create_schema()
            set_hbase_encoding(cid, encoding)
        _fill(conf, cid, size, batch * runs)
        setup = time.perf_counter() - t
        quiet = _settle(backend)
        cells: dict[str, list[tuple[float, int]]] = {}
        step = functools.partial(_timed_step, cells)
        try:
            batch_ids = [step("generate", [*cli, "generate", "-topN", str(batch), "-crawlId", cid, *defs])
                         .strip().splitlines()[-1] for _ in range(runs)]
            for batch_id in batch_ids:
                out = step("fetch read", [sys.executable, "-c", FETCH_READ, str(REPO / "conf"), cid, batch_id,
                                          *(f"{k}={v}" for k, v in props.items())])
                assert int(out) == batch, out
            for batch_id in batch_ids:
                _fetched(conf, cid, batch_id)
                step("parse", [*cli, "parse", batch_id, "-crawlId", cid, *defs])
                step("updatedb", [*cli, "updatedb", batch_id, "-crawlId", cid, *defs])
                if solr:
                    step("index", [*cli, "index", batch_id, "-solr", solr, "-crawlId", cid, *defs])
            for _ in range(runs):
                step("readdb -stats", [*cli, "readdb", "-stats", "-crawlId", cid, *defs])
        finally:
            with open_store(conf, cid, create=False) as store:
                store.drop_schema()
            if solr:
                import requests

                requests.post(f"{solr}/update?commit=true", json={"delete": {"query": f"id:{cid}*"}}, timeout=60)
        steps = " | ".join(f"{statistics.median(s for s, _ in cells[n]):.1f} s, {max(r for _, r in cells[n])} MB"
                           if n in cells else "—" for n in STEPS)
        name = f"{backend}, {encoding}" if encoding else backend
        rows.append(f"| {name} | {size:,} | {setup:.0f} + {quiet:.0f} | {steps} |")
        print(rows[-1], flush=True)
    return rows


# ------------------------------------------------------------------ --crawl: a whole crawl and a big inject per store
def crawl(backends: list[str], hosts: int, pages: int, threads: int, seeds: int, runs: int) -> list[str]:
    """Markdown rows: per store, `nutch2 crawl` of the nginx web (hosts x pages, -threads T, delay 0, rounds
    until done) and `nutch2 inject` of `seeds` URLs of that web into an empty table: median seconds, FETCHED."""
    import re
    import shutil

    from bench.benchmarks import _defines
    from bench.measure import run
    from bench.web import Nginx, generate_web

    web = generate_web(hosts, pages)
    cells: dict[str, dict[str, list[float]]] = {b: {"crawl": [], "inject": []} for b in backends}
    fetched: dict[str, set[int]] = {b: set() for b in backends}
    with Nginx(web) as nginx:
        tmp = Path(tempfile.mkdtemp(prefix="nutch2-bench-crawl-"))
        (tmp / "seeds.txt").write_text("\n".join(nginx.seeds()) + "\n")
        (tmp / "many.txt").write_text("".join(f"{nginx.url(i % hosts)}m/{i}.html\n" for i in range(seeds)))
        try:
            for _ in range(runs):
                for b in backends:  # the stores alternate run by run
                    for what, args in (("crawl", ["crawl", str(tmp / "seeds.txt"), "-rounds", "6", "-topN",
                                                  str(web.total + 10), "-threads", str(threads)]),
                                       ("inject", ["inject", str(tmp / "many.txt")])):
                        cid = f"cr{uuid.uuid4().hex[:8]}"
                        data = tmp / cid
                        props = {"storage.data.store.class": b, "mapreduce.job.tasks": None}
                        try:
                            r = run([sys.executable, "-m", "nutch2", *args, "-crawlId", cid,
                                     *_defines(data, **props)], cwd=REPO)
                            cells[b][what].append(r.seconds)
                            if what == "crawl":
                                m = re.search(r"crawl: \S+: \d+ URLs: .*FETCHED=(\d+)", r.stdout)
                                fetched[b].add(int(m.group(1)) if m else -1)
                        finally:
                            conf = Configuration(REPO / "conf", {"storage.data.store.class": b,
                                                                 "storage.data.dir": str(data)})
                            with open_store(conf, cid) as store:
                                store.drop_schema()
                            shutil.rmtree(data, ignore_errors=True)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    base = {w: statistics.median(cells[backends[0]][w]) for w in ("crawl", "inject")}
    rows = []
    for b in backends:
        c, i = statistics.median(cells[b]["crawl"]), statistics.median(cells[b]["inject"])
        rows.append(f"| {b} | {c:.1f} s ({c / base['crawl']:.1f}x) | {','.join(map(str, sorted(fetched[b])))} | "
                    f"{i:.1f} s ({i / base['inject']:.1f}x) |")
        print(rows[-1], flush=True)
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.stores")
    ap.add_argument("--backends", default="sqlite,hbase,cassandra")
    ap.add_argument("--rows", type=int, default=20000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="tiny sizes, one run: a smoke test")
    ap.add_argument("--scale", action="store_true", help="batch jobs in tables of --sizes rows")
    ap.add_argument("--sizes", default="100000,1000000")
    ap.add_argument("--batch", type=int, default=10_000)
    ap.add_argument("--solr", default=None, help="index into this Solr core (else index is left out)")
    ap.add_argument("--hbase-encoding", default=None,
                    help="--scale: also measure hbase with this data block encoding on its families (ROW_INDEX_V1)")
    ap.add_argument("--crawl", action="store_true", help="a crawl of --hosts x --pages and an inject of --seeds")
    ap.add_argument("--hosts", type=int, default=20)
    ap.add_argument("--pages", type=int, default=50)
    ap.add_argument("--threads", type=int, default=16)
    ap.add_argument("--seeds", type=int, default=50_000)
    args = ap.parse_args(argv)
    if args.hbase_encoding and "hbase" not in args.backends.split(","):
        ap.error("--hbase-encoding measures hbase: add hbase to --backends")
    from bench.deps import compile_sources

    compile_sources()
    if args.crawl:
        backends = args.backends.split(",")
        print(f"machine: {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}; crawl of {args.hosts} x {args.pages} "
              f"pages on nginx, -threads {args.threads}, delay 0; inject of {args.seeds:,} URLs; median of "
              f"{args.runs}, ratio to {backends[0]}\n")
        print("| store | crawl | FETCHED | inject |\n|---|---|---|---|")
        crawl(backends, args.hosts, args.pages, args.threads, args.seeds, args.runs)
        return 0
    if args.scale:
        data = Path(tempfile.mkdtemp(prefix="nutch2-bench-"))
        print(f"machine: {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}; a {args.batch:,}-row batch\n")
        print("| store | table rows | setup s | generate | fetch read | parse | updatedb | index | readdb -stats |\n"
              "|---|---|---|---|---|---|---|---|---|")
        sizes = tuple(int(x) for x in args.sizes.split(","))
        for b in args.backends.split(","):
            scale(b, sizes, args.batch, args.solr, data, args.runs)
            if b == "hbase" and args.hbase_encoding:
                scale(b, sizes, args.batch, args.solr, data, args.runs, args.hbase_encoding)
        return 0
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
