"""Search latency of `nutch2 server` on a 100k-document core, at 1 and 20 concurrent clients (issue 22).

    python -m bench.search [--docs 100000] [--core nutch_bench] [--requests 400] [--out FILE]

Creates a Solr core of its own from conf/solr/nutch (in the local Solr's home, NUTCH2_SERVICES_DIR/solr/home),
fills it with synthetic documents of one crawl (titles, ~150-word bodies drawn from a Zipf-like vocabulary, 500
hosts), starts `nutch2 server` on it, and times /api/search and /search (HTML) for a fixed mix of queries (one
common word, one rare word, two words, a phrase, a site: filter) with N clients in parallel, each on its own
keep-alive connection. Solr's own QTime is reported beside the app's wall time. The core is deleted at the end.
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
import threading
import time
from pathlib import Path

import requests

REPO = Path(__file__).resolve().parent.parent
SOLR_BASE = "http://127.0.0.1:8983/solr"
CRAWL = "bench"
_LISTENING = re.compile(r"^server: crawl \S+ at (http://\S+/) ", re.M)


def vocabulary(n: int, rng: random.Random) -> list[str]:
    letters = "abcdefghijklmnopqrstuvwxyz"
    words: set[str] = set()
    while len(words) < n:
        words.add("".join(rng.choice(letters) for _ in range(rng.randint(3, 10))))
    return sorted(words)


def documents(n: int, seed: int = 7):
    """(batch of) synthetic documents of crawl `bench`; word i is drawn with weight 1/(i+1)."""
    rng = random.Random(seed)
    vocab = vocabulary(5000, rng)
    weights = [1 / (i + 1) for i in range(len(vocab))]
    hosts = [f"www.site{i}.example" for i in range(500)]
    for start in range(0, n, 5000):
        batch = []
        for i in range(start, min(n, start + 5000)):
            host = hosts[rng.randrange(len(hosts))]
            title = " ".join(rng.choices(vocab, weights, k=rng.randint(3, 7)))
            body = " ".join(rng.choices(vocab, weights, k=rng.randint(100, 200)))
            key = ".".join(reversed(host.split("."))) + f":http/p/{i}.html"
            batch.append({"id": f"{CRAWL}!{key}", "crawlId": CRAWL, "url": f"http://{host}/p/{i}.html",
                          "host": host, "site": [host, host.split(".", 1)[1]], "title": title, "content": body,
                          "digest": f"{i:032x}", "batchId": "1700000000-1", "boost": rng.random(),
                          "tstamp": "2026-12-01T00:00:00Z", "fetched": "2026-11-01T00:00:00Z",
                          "contentLength": len(body), "type": ["text/html", "text", "html"]})
        yield batch


def make_core(core: str, home: Path) -> str:
    folder = home / core
    if folder.exists():
        raise SystemExit(f"{folder} exists; pick another --core or remove it")
    shutil.copytree(REPO / "conf" / "solr" / "nutch" / "conf", folder / "conf")
    r = requests.get(f"{SOLR_BASE}/admin/cores", params={"action": "CREATE", "name": core, "instanceDir": str(folder),
                                                         "config": "solrconfig.xml", "schema": "schema.xml",
                                                         "dataDir": "data"}, timeout=120)
    r.raise_for_status()
    return f"{SOLR_BASE}/{core}"


def drop_core(core: str, home: Path) -> None:
    requests.get(f"{SOLR_BASE}/admin/cores", params={"action": "UNLOAD", "core": core, "deleteInstanceDir": "true"},
                 timeout=120)
    shutil.rmtree(home / core, ignore_errors=True)


def fill(solr: str, n: int) -> float:
    t0 = time.perf_counter()
    for batch in documents(n):
        requests.post(f"{solr}/update", json=batch, timeout=300).raise_for_status()
    requests.post(f"{solr}/update?commit=true", json={}, timeout=600).raise_for_status()
    return time.perf_counter() - t0


def queries(count: int) -> list[str]:
    rng = random.Random(11)
    vocab = vocabulary(5000, random.Random(7))
    out = []
    for i in range(count):
        kind = i % 5
        if kind == 0:
            out.append(vocab[rng.randrange(0, 20)])  # common: tens of thousands of hits
        elif kind == 1:
            out.append(vocab[rng.randrange(1000, 5000)])  # rare
        elif kind == 2:
            out.append(f"{vocab[rng.randrange(0, 200)]} {vocab[rng.randrange(0, 200)]}")
        elif kind == 3:
            out.append(f'"{vocab[rng.randrange(0, 50)]} {vocab[rng.randrange(0, 50)]}"')
        else:
            out.append(f"{vocab[rng.randrange(0, 100)]} site:site{rng.randrange(500)}.example")
    return out


def start_server(solr: str, data: Path) -> tuple[subprocess.Popen, str, Path]:
    log = data / "server.log"
    out = open(log, "w")  # noqa: SIM115 - the server's log, closed with the process
    proc = subprocess.Popen([sys.executable, "-m", "nutch2.cli", "server", "-port", "0", "-crawlId", CRAWL,
                             "-solr", solr, "-D", f"storage.data.dir={data}", "-D", "http.agent.name=bench"],
                            stdout=out, stderr=subprocess.STDOUT, cwd=REPO)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        m = _LISTENING.search(log.read_text())
        if m:
            url = m.group(1).rstrip("/")
            try:
                requests.get(url + "/static/style.css", timeout=5).raise_for_status()
                return proc, url, log
            except requests.RequestException:
                pass
        time.sleep(0.2)
    proc.kill()
    raise SystemExit(f"the server did not start:\n{log.read_text()}")


def run(url: str, path: str, qs: list[str], clients: int, total: int, extra: dict | None = None) -> dict:
    """`total` requests spread over `clients` threads; latencies in ms."""
    lat: list[float] = []
    qtimes: list[float] = []
    errors = 0
    lock = threading.Lock()
    per = total // clients

    def client(c: int) -> None:
        nonlocal errors
        s = requests.Session()
        for i in range(per):
            q = qs[(c * per + i) % len(qs)]
            t0 = time.perf_counter()
            r = s.get(url + path, params={"q": q, **(extra or {})}, timeout=60)
            dt = (time.perf_counter() - t0) * 1000
            with lock:
                if r.status_code != 200:
                    errors += 1
                lat.append(dt)
                if path == "/api/search" and r.status_code == 200:
                    qtimes.append(r.json()["qtimeMs"])

    threads = [threading.Thread(target=client, args=(c,)) for c in range(clients)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    lat.sort()
    return {"n": len(lat), "p50": statistics.median(lat), "p95": lat[int(len(lat) * 0.95) - 1],
            "qtime_p50": statistics.median(qtimes) if qtimes else None, "rps": len(lat) / wall, "errors": errors}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.search", description=__doc__.split("\n")[0])
    ap.add_argument("--docs", type=int, default=100_000)
    ap.add_argument("--core", default="nutch_bench")
    ap.add_argument("--requests", type=int, default=400, help="requests per measurement")
    ap.add_argument("--solr-home", default=os.path.join(os.environ.get("NUTCH2_SERVICES_DIR", str(REPO / ".services")),
                                                         "solr", "home"))
    ap.add_argument("--out", help="append the markdown section to this file")
    args = ap.parse_args(argv)
    home = Path(args.solr_home)
    solr = make_core(args.core, home)
    data = Path(tempfile.mkdtemp(prefix="bench-search-"))
    proc = None
    try:
        fill_s = fill(solr, args.docs)
        n = requests.get(f"{solr}/select", params={"q": "*:*", "rows": 0}, timeout=60).json()["response"]["numFound"]
        proc, url, _ = start_server(solr, data)
        qs = queries(200)
        run(url, "/api/search", qs, 4, 200)  # warm Solr's caches and the server up
        rows = []
        for path, extra, label in (("/api/search", None, "/api/search (one hit per site)"),
                                   ("/api/search", {"collapse": "0"}, "/api/search collapse=0"),
                                   ("/search", None, "/search (HTML page)")):
            for clients in (1, 20):
                r = run(url, path, qs, clients, args.requests, extra)
                rows.append((label, clients, r))
                print(label, clients, r, file=sys.stderr)
        load = os.getloadavg()
        lines = [f"## search latency (issue 22): `nutch2 server` on a {n:,}-document core",
                 "", f"`python -m bench.search --docs {args.docs} --requests {args.requests}` · "
                 f"{os.cpu_count()} cores · load {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} · core filled in "
                 f"{fill_s:.0f} s · queries: 200, a fifth each of a common word, a rare word, two words, a phrase, "
                 "a word with site: · each client one keep-alive connection", "",
                 "| route | clients | requests | p50 ms | p95 ms | Solr QTime p50 ms | requests/s | errors |",
                 "|---|---|---|---|---|---|---|---|"]
        for label, clients, r in rows:
            qt = f"{r['qtime_p50']:.0f}" if r["qtime_p50"] is not None else "—"
            lines.append(f"| {label} | {clients} | {r['n']} | {r['p50']:.1f} | {r['p95']:.1f} | {qt} | "
                         f"{r['rps']:.1f} | {r['errors']} |")
        section = "\n".join(lines) + "\n"
        print(section)
        if args.out:
            with open(args.out, "a") as f:
                f.write(section)
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait(60)
        drop_core(args.core, home)
        shutil.rmtree(data, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
