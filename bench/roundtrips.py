"""Round trips per job (issue 41): the statements each batch job sends to Cassandra for one batch, with seconds
next to sqlite's for the same batch, measured back to back in one process.

    python -m bench.roundtrips [--backends sqlite,cassandra] [--size 10000] [--batch 1000] [--seeds 5000]
                               [--solr http://127.0.0.1:8983/solr/nutch]

The table is written straight into the store (bench/stores.py's rows: 1 000 hosts, `batch` due), then inject of
`seeds` new URLs, generate, fetch's read, parse, updatedb and index (when --solr) run in this process with the
local runner and two tasks, so that every statement is counted: requests the driver sends (a batch statement
is one request; its statements are counted apart). Counts do not depend on the machine's load; seconds do. Where
the time goes: client CPU (this process's CPU seconds), server CPU (Cassandra's JVM here, when it runs on this
machine: other clients' work counts too) and the rest of the wall seconds, waiting.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
import time
import uuid
from collections import Counter
from pathlib import Path

from bench.stores import REPO, _fetched, _fill
from nutch2.config import Configuration
from nutch2.marks import Mark
from nutch2.stores import open_store
from nutch2.stores.query import Query

COUNTS: Counter[str] = Counter()


def _count_cassandra() -> None:
    """Count every request the cassandra driver sends (Session.execute, execute_async and execute_concurrent
    all create one response future per request)."""
    from cassandra.cluster import Session
    from cassandra.query import BatchStatement

    make = Session._create_response_future

    def counted(self, query, *args, **kw):  # noqa: ANN001, ANN002, ANN003, ANN202 - the driver's signature
        COUNTS["requests"] += 1
        if os.environ.get("ROUNDTRIPS_DETAIL"):
            text = getattr(query, "query_string", None) or getattr(getattr(query, "prepared_statement", None),
                                                                   "query_string", type(query).__name__)
            COUNTS["q " + re.sub(r'"[^"]*"\."[a-z0-9]+', "T", str(text))[:90]] += 1
        if isinstance(query, BatchStatement):
            COUNTS["batched statements"] += len(query._statements_and_parameters)
        return make(self, query, *args, **kw)

    Session._create_response_future = counted  # type: ignore[method-assign]


def run(backend: str, size: int, batch: int, seeds: int, solr: str | None, data: Path) -> dict[str, tuple]:
    from nutch2.cli import main as cli

    cid = f"rt{uuid.uuid4().hex[:8]}"
    props = {"storage.data.store.class": backend, "storage.data.dir": str(data), "http.agent.name": "bench",
             "mapreduce.framework.name": "local", "mapreduce.job.tasks": "2", "log.level": "WARNING"}
    conf = Configuration(REPO / "conf", props)
    defs = [x for k, v in props.items() for x in ("-D", f"{k}={v}")]
    out: dict[str, tuple] = {}

    server = _server() if backend == "cassandra" else None

    def step(name: str, fn) -> None:  # noqa: ANN001 - a callable
        COUNTS.clear()
        t, cpu, srv = time.perf_counter(), time.process_time(), _cpu(server)
        fn()
        out[name] = (time.perf_counter() - t, COUNTS["requests"], COUNTS["batched statements"],
                     time.process_time() - cpu, _cpu(server) - srv)
        for k, v in COUNTS.most_common():
            if k.startswith("q "):
                print(f"  {name}: {v} x {k[2:]}", file=sys.stderr)

    step("setup", lambda: _fill(conf, cid, size, batch))
    seed_file = data / f"{cid}-seeds.txt"
    seed_file.write_text("".join(f"http://127.0.2.{i % 250 + 1}/p/{i}.html\n" for i in range(seeds)))
    try:
        step("inject", lambda: _ok(cli(["inject", str(seed_file), "-crawlId", cid, *defs])))
        batch_id = ""

        def generate() -> None:
            nonlocal batch_id
            _ok(cli(["generate", "-topN", str(batch), "-crawlId", cid, *defs]))
            with open_store(conf, cid, create=False) as store:
                batch_id = sorted(store.mark_values(Mark.GENERATE.value))[-1]

        step("generate", generate)

        def fetch_read() -> None:
            from nutch2.jobs.fetch import FETCH_FIELDS

            with open_store(conf, cid, create=False) as store:
                query = Query(FETCH_FIELDS, (Mark.GENERATE.value, batch_id))
                n = sum(1 for part in store.partitions(query, 2) for _ in store.read(query, part))
            assert n >= batch, n

        step("fetch read", fetch_read)
        _fetched(conf, cid, batch_id)
        step("parse", lambda: _ok(cli(["parse", batch_id, "-crawlId", cid, *defs])))
        step("updatedb", lambda: _ok(cli(["updatedb", batch_id, "-crawlId", cid, *defs])))
        if solr:
            step("index", lambda: _ok(cli(["index", batch_id, "-solr", solr, "-crawlId", cid, *defs])))
    finally:
        with open_store(conf, cid, create=False) as store:
            store.drop_schema()
        if solr:
            import requests

            requests.post(f"{solr}/update?commit=true", json={"delete": {"query": f"id:{cid}*"}}, timeout=60)
    return out


def _server():  # noqa: ANN202 - a psutil.Process or None
    """Cassandra's JVM on this machine (its CPU seconds are the server's share), if it runs here."""
    import psutil

    for proc in psutil.process_iter(["name", "cmdline"]):
        if proc.info["name"] == "java" and any("CassandraDaemon" in a for a in proc.info["cmdline"] or ()):
            return proc
    return None


def _cpu(proc) -> float:  # noqa: ANN001 - a psutil.Process or None
    if proc is None:
        return 0.0
    t = proc.cpu_times()
    return t.user + t.system


def _ok(code: int) -> None:
    if code != 0:
        raise RuntimeError(f"a step failed with exit code {code}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.roundtrips")
    ap.add_argument("--backends", default="sqlite,cassandra")
    ap.add_argument("--size", type=int, default=10_000)
    ap.add_argument("--batch", type=int, default=1000)
    ap.add_argument("--seeds", type=int, default=5000)
    ap.add_argument("--solr", default=None)
    args = ap.parse_args(argv)
    _count_cassandra()
    data = Path(tempfile.mkdtemp(prefix="nutch2-bench-"))
    results = {b: run(b, args.size, args.batch, args.seeds, args.solr, data) for b in args.backends.split(",")}
    base = results.get("sqlite")
    print(f"machine: {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}; {args.size:,}-row table, "
          f"{args.batch:,}-row batch, {args.seeds:,} seeds; local runner, 2 tasks\n")
    print("| store | step | seconds | x sqlite | client CPU s | server CPU s | requests | statements in batches |\n"
          "|---|---|---|---|---|---|---|---|")
    for b, steps in results.items():
        for name, (sec, req, batched, cpu, srv) in steps.items():
            ratio = f"{sec / base[name][0]:.1f}" if base and b != "sqlite" else "—"
            cass = b == "cassandra"
            print(f"| {b} | {name} | {sec:.2f} | {ratio} | {cpu:.2f} | {f'{srv:.2f}' if cass else '—'} | "
                  f"{req if cass else '—'} | {batched if cass else '—'} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
