"""The crawl dashboard of `nutch2 server` (`/crawl`, `/api/stats`) on tables of 10k and 1M rows (issue 22).

    python -m bench.dashboard [--rows 10000 1000000] [--requests 50] [--keep DIR] [--out FILE]

Rows are written straight into a sqlite crawl (no inject: 2,000 hosts, a mix of statuses, 10 batches recorded in
the batch journal with their per-step counts); `nutch2 server` then serves that crawl and /crawl and /api/stats
are timed on one keep-alive connection (the first request after the start, then p50/p95 of `--requests`). The
page reads no row: the row count the store keeps, the journal, and the last `readdb -stats` result. For
comparison, the full scan the page used to run behind a 10 s cache (statuses, retries, scores and hosts of every
row) is timed as `nutch2 readdb -stats -sort`, the command that now computes it when an operator asks; /crawl is
timed again once that result is there to show. `--keep DIR` keeps (and reuses) the filled tables.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import requests

from bench.measure import machine

REPO = Path(__file__).resolve().parent.parent
CRAWL = "bench"
BATCHES = 10
_LISTENING = re.compile(r"^server: crawl \S+ at (http://\S+/) ", re.M)
_STATUSES = ((2, 0.55), (1, 0.30), (3, 0.05), (4, 0.04), (5, 0.03), (6, 0.03))  # FETCHED, UNFETCHED, GONE, ...


def fill(data: Path, n: int, seed: int = 3) -> float:
    """n rows and the journal of BATCHES batches, written straight into the sqlite crawl; seconds taken."""
    sys.path.insert(0, str(REPO))
    from nutch2.config import Configuration
    from nutch2.crawldb.journal import Journal
    from nutch2.marks import Mark
    from nutch2.stores import open_store
    from nutch2.urls.tableutil import reverse_url
    from nutch2.webpage import WebPage

    rng = random.Random(seed)
    codes, weights = zip(*_STATUSES, strict=True)
    conf = Configuration(REPO / "conf", {"storage.data.dir": str(data), "storage.write.batch.size": "5000"})
    t0 = time.perf_counter()
    store = open_store(conf, CRAWL)
    try:
        now = int(time.time() * 1000)
        batches = [f"{1_700_000_000 + i * 3600}-{i}" for i in range(BATCHES)]
        for i in range(n):
            url = f"http://www.site{rng.randrange(2000)}.example/p/{i}.html"
            status = rng.choices(codes, weights)[0]
            page = WebPage(reverse_url(url), status=status, fetch_time=now + rng.randrange(86_400_000),
                           score=rng.random(), fetch_interval=2_592_000, retries_since_fetch=rng.choice((0, 0, 0, 1)))
            if status != 1:
                batch = batches[i % BATCHES]
                page.batch_id = batch
                Mark.UPDATEDB.put(page, batch)
            store.put(page.key, page)
        store.flush()
        journal = Journal(store)
        per = n // BATCHES
        for b in batches:
            journal.record(b, "generated", per, counts={"generated": per})
            for state, share in (("fetched", 0.95), ("parsed", 0.93), ("updated", 0.95), ("indexed", 0.9)):
                journal.advance(b, state, {state: int(per * share)})
    finally:
        store.close()
    return time.perf_counter() - t0


def start_server(data: Path) -> tuple[subprocess.Popen, str]:
    log = data / "server.log"
    out = open(log, "w")  # noqa: SIM115 - the server's log, closed with the process
    proc = subprocess.Popen([sys.executable, "-m", "nutch2.cli", "server", "-port", "0", "-crawlId", CRAWL,
                             "-solr", "http://127.0.0.1:8983/solr/nutch", "-D", f"storage.data.dir={data}",
                             "-D", "http.agent.name=bench"], stdout=out, stderr=subprocess.STDOUT, cwd=REPO)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        m = _LISTENING.search(log.read_text())
        if m:
            url = m.group(1).rstrip("/")
            try:
                requests.get(url + "/static/style.css", timeout=5).raise_for_status()
                return proc, url
            except requests.RequestException:
                pass
        time.sleep(0.2)
    proc.kill()
    raise SystemExit(f"the server did not start:\n{log.read_text()}")


def timed(session: requests.Session, url: str, n: int) -> dict[str, float]:
    """The first request's time, then p50/p95 of n more (ms)."""
    def one() -> float:
        t0 = time.perf_counter()
        session.get(url, timeout=600).raise_for_status()
        return (time.perf_counter() - t0) * 1000

    first = one()
    lat = sorted(one() for _ in range(n))
    return {"first": first, "p50": statistics.median(lat), "p95": lat[max(0, int(len(lat) * 0.95) - 1)]}


def readdb_seconds(data: Path) -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "nutch2.cli", "readdb", "-stats", "-sort", "-crawlId", CRAWL, "-D",
                    f"storage.data.dir={data}", "-D", "http.agent.name=bench"], cwd=REPO, check=True,
                   capture_output=True)
    return time.perf_counter() - t0


def forget_stats(data: Path) -> None:
    """Drop a readdb result an earlier run kept (--keep), so that the first figures are without one."""
    from nutch2.config import Configuration
    from nutch2.crawldb.tablestats import STATE
    from nutch2.stores import open_store

    with open_store(Configuration(REPO / "conf", {"storage.data.dir": str(data)}), CRAWL, create=False) as store:
        store.put_state(STATE, None)


def measure(data: Path, rows: int, n: int) -> dict[str, object]:
    forget_stats(data)
    out: dict[str, object] = {"rows": rows, "load": os.getloadavg()[0]}
    proc, url = start_server(data)
    try:
        with requests.Session() as s:
            out["crawl"] = timed(s, url + "/crawl", n)
            out["stats"] = timed(s, url + "/api/stats", n)
            assert s.get(url + "/api/stats", timeout=60).json()["total"] == rows
            out["readdb"] = readdb_seconds(data)  # the full scan, as the operator starts it
            out["crawl_with_stats"] = timed(s, url + "/crawl", n)
            shown = s.get(url + "/api/stats", timeout=60).json()["readdb"]
            assert shown and shown["total"] == rows, shown
    finally:
        proc.terminate()
        proc.wait(60)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.dashboard", description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, nargs="+", default=[10_000, 1_000_000])
    ap.add_argument("--requests", type=int, default=50, help="requests per figure (after the first)")
    ap.add_argument("--keep", help="keep the filled tables in this folder (and reuse them)")
    ap.add_argument("--out", help="append the markdown section to this file")
    args = ap.parse_args(argv)
    root = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="bench-dashboard-"))
    m = machine()
    results = []
    try:
        for rows in args.rows:
            data = root / f"rows{rows}"
            fill_s = None
            if not (data / f"{CRAWL}_webpage.sqlite").exists():
                shutil.rmtree(data, ignore_errors=True)
                fill_s = fill(data, rows)
            r = measure(data, rows, args.requests)
            r["fill"] = fill_s
            results.append(r)
            print(r, file=sys.stderr, flush=True)
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    lines = [f"## `/crawl` on {' and '.join(f'{r:,}' for r in args.rows)}-row crawls (issue 22, sqlite)", "",
             f"`python -m bench.dashboard --rows {' '.join(map(str, args.rows))} --requests {args.requests}` · "
             f"{m['nproc']} cores, {m['mem_gb']} GB, Python {m['python']} · load average at start {m['load']} · "
             "one keep-alive connection; the first request after the server started, then p50/p95 of "
             f"{args.requests}", "",
             "| table rows | /crawl first ms | /crawl p50 ms | /crawl p95 ms | /api/stats p50 ms | "
             "/crawl p50 ms with a readdb result | full scan: `readdb -stats -sort` s | load |",
             "|---|---|---|---|---|---|---|---|"]
    for r in results:
        c, st, cw = r["crawl"], r["stats"], r["crawl_with_stats"]
        lines.append(f"| {r['rows']:,} | {c['first']:.1f} | {c['p50']:.1f} | {c['p95']:.1f} | {st['p50']:.1f} | "
                     f"{cw['p50']:.1f} | {r['readdb']:.1f} | {r['load']:.1f} |")
    section = "\n".join(lines) + "\n"
    print(section)
    if args.out:
        with open(args.out, "a") as f:
            f.write(section)
    return 0


if __name__ == "__main__":
    sys.exit(main())
