"""The benchmarks of issue 5. Each takes (quick, runs) and returns a markdown section (also printed)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

from bench.measure import loadavg, machine, median, run
from bench.web import Nginx, generate_web, host_addr

REPO = Path(__file__).resolve().parent.parent
NUTCH2 = [sys.executable, "-m", "nutch2"]
DEFINES: dict[str, str] = {}  # `python -m bench ... -D key=value`: given to every nutch2 command, over the bench's own


def _defines(data_dir: Path, **extra: object) -> list[str]:
    props = {
        "storage.data.dir": data_dir,
        "http.agent.name": "bench",
        "fetcher.server.delay": 0,
        "fetcher.server.min.delay": 0,
        "fetcher.threads.per.queue": 1,
        "mapreduce.job.tasks": 1,  # one fetch reducer: -threads T is the whole crawl's concurrency
        "fetcher.progress.interval": 3600,
        "fetcher.address.allow": "127.77.0.0/16",  # the bench webs' hosts (bench/web.py host_addr), for the guard
    }
    props.update({k.replace("_", "."): v for k, v in extra.items()})
    props.update(DEFINES)
    out: list[str] = []
    for k, v in props.items():
        if v is not None:  # None: leave the property at nutch2's default
            out += ["-D", f"{k}={v}"]
    return out


def _job_seconds(logged: str) -> float:
    """A job's own seconds from its summary line ("finished in 0.0 s" for a tiny run: it logs tenths, so at
    least half of one)."""
    return max(float(logged), 0.05)


def _tmp(prefix: str) -> Path:
    return Path(tempfile.mkdtemp(prefix=f"nutch2-bench-{prefix}-"))


def _header(title: str, cmd: str) -> list[str]:
    m = machine()
    cmd += "".join(f" -D {k}={v}" for k, v in DEFINES.items())
    return [f"## {title}", "", f"`{cmd}`  ", f"machine: {m['nproc']} cores, {m['mem_gb']} GB, Python {m['python']}, "
            f"load average at start {m['load']}", ""]


# ---------------------------------------------------------------------------------------------- web ceiling
def bench_web(quick: bool = False, runs: int = 3) -> str:
    """Requests/s of wrk against nginx alone (random pages of one host, keep-alive)."""
    hosts, pages = (4, 20) if quick else (200, 100)
    web = generate_web(hosts, pages)
    duration = 1 if quick else 10
    lines = _header(f"web: nginx ceiling ({hosts} x {pages} pages, wrk)",
                    "python -m bench web" + (" --quick" if quick else ""))
    wrk = shutil.which("wrk")
    if wrk is None:
        return "\n".join(lines + ["wrk is not installed (apt-get install -y wrk): skipped", ""])
    script = _tmp("wrk") / "random.lua"
    script.write_text(f'math.randomseed(1)\nrequest = function()\n  return wrk.format(nil, "/p/" .. '
                      f'math.random(1, {pages - 1}) .. ".html")\nend\n')
    rows = []
    with Nginx(web) as nginx:
        for conns in (16, 64):
            rps, mbs = [], []
            for _ in range(runs):
                out = subprocess.run([wrk, "-t1", f"-c{conns}", f"-d{duration}s", "-s", str(script),
                                      f"http://{host_addr(0)}:{nginx.port}/"], capture_output=True, text=True,
                                     check=True).stdout
                rps.append(float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1)))
                m = re.search(r"Transfer/sec:\s+([\d.]+)(\w+)", out)
                mbs.append(float(m.group(1)) * {"KB": 1 / 1024, "MB": 1, "GB": 1024}.get(m.group(2), 1))
            rows.append((conns, median(rps), median(mbs), rps))
    shutil.rmtree(script.parent, ignore_errors=True)
    lines += ["nginx: 1 worker process, sendfile, keep-alive; wrk: 1 thread, random page of one host per request.", "",
              "| connections | requests/s (median) | MB/s | runs |", "|---|---|---|---|"]
    for conns, r, mb, all_ in rows:
        lines.append(f"| {conns} | {r:,.0f} | {mb:,.0f} | {', '.join(f'{x:,.0f}' for x in all_)} |")
    lines += ["", f"load average at end {loadavg():.2f}", ""]
    return _emit(lines)


# ---------------------------------------------------------------------------------------------- crawl vs Scrapy
FRAMEWORKS = {  # nutch2's runners at equal concurrency T: one fetch reducer of T threads, or one per core of T/2
    "local": {"mapreduce_framework_name": "local"},
    "processes": {"mapreduce_framework_name": "processes", "mapreduce_job_tasks": 2},
    # what `nutch2 crawl` does with no -D (the runner and tasks it picks itself): -threads T / the tasks it runs
    "default": {"mapreduce_job_tasks": None},
}


def default_tasks() -> int:
    """How many fetch tasks nutch2's defaults run on this machine (as `nutch2 crawl` picks them)."""
    from nutch2.config import Configuration
    from nutch2.mapred.runner import default_tasks as tasks

    return tasks(Configuration())


def _nutch2_crawl(nginx: Nginx, seeds: Path, threads: int, total: int, framework: str = "local",
                  baseline: tuple[str, Path] | None = None) -> dict:
    """A whole crawl; `baseline` = (python, checkout) runs another nutch2 (e.g. an older commit) in its folder."""
    data = _tmp("crawl")
    extra = FRAMEWORKS[framework]
    tasks = extra.get("mapreduce_job_tasks", 1) or default_tasks()
    per_task = max(1, threads // int(tasks))
    python, cwd = baseline if baseline else (sys.executable, REPO)
    try:
        cmd = [python, "-m", "nutch2", "crawl", str(seeds), "-crawlId", "bench", "-rounds", "6", "-topN",
               str(total + 10), "-threads", str(per_task)] + _defines(data, **extra)
        r = run(cmd, cwd=cwd)
        m = re.search(r"crawl: bench: (\d+) URLs: (.*)", r.stdout)
        counts = dict(kv.split("=") for kv in m.group(2).split()) if m else {}
        fetched = int(counts.get("FETCHED", counts.get("status_fetched", 0)) or 0)
        stages = defaultdict(float)
        for job, secs in re.findall(r"^(\w+): finished in ([\d.]+) s", r.stderr, re.M):
            stages[job] += float(secs)
        return {"seconds": r.seconds, "pages": fetched, "rss": r.peak_rss_mb, "pss": r.peak_pss_mb, "counts": counts,
                "stages": dict(stages)}
    finally:
        shutil.rmtree(data, ignore_errors=True)


def _scrapy_crawl(nginx: Nginx, seeds: Path, threads: int, sets: Sequence[str] = ()) -> dict:
    """The Scrapy peer over the web; `sets` ("NAME=JSON") override its settings (bench scrapypeer's variants)."""
    out = _tmp("scrapy") / "stats.json"
    try:
        cmd = [sys.executable, "-m", "bench.scrapy_spider", "--seeds", str(seeds), "--port", str(nginx.port),
               "--threads", str(threads), "--out", str(out)]
        for s in sets:
            cmd += ["--set", s]
        r = run(cmd, cwd=REPO)
        stats = json.loads(out.read_text())
        return {"seconds": r.seconds, "pages": int(stats.get("item_scraped_count", 0)), "rss": r.peak_rss_mb,
                "pss": r.peak_pss_mb, "cpu": r.cpu_seconds,
                "counts": {k: v for k, v in stats.items() if k.startswith("downloader/response_status_count")}}
    finally:
        shutil.rmtree(out.parent, ignore_errors=True)


def bench_crawl(quick: bool = False, runs: int = 3, threads: tuple[int, ...] | None = None,
                hosts: int | None = None, pages: int | None = None,
                frameworks: tuple[str, ...] = ("default", "local", "processes"), baseline: str | None = None,
                scrapy: bool = True, shape: str = "uniform") -> str:
    """baseline "PYTHON:CHECKOUT[:FRAMEWORK]": also crawl with another nutch2 (e.g. the commit before a change), with
    its local runner or the one named (default, local or processes)."""
    hosts, pages = hosts or (4 if quick else 200), pages or (20 if quick else 100)
    threads = threads or ((4,) if quick else (16, 64))
    web = generate_web(hosts, pages, shape=shape)
    lines = _header(f"crawl: nutch2 vs Scrapy, whole {shape} web ({hosts} hosts x {pages} pages = {web.total})",
                    f"python -m bench crawl --runs {runs} --threads {' '.join(map(str, threads))} --hosts {hosts} "
                    f"--pages {pages} --shape {shape} --frameworks {' '.join(frameworks)}"
                    + (f" --baseline {baseline}" if baseline else "") + (" --no-scrapy" if not scrapy else "")
                    + (" --quick" if quick else ""))
    results: dict[tuple[str, int], list[dict]] = defaultdict(list)
    with Nginx(web) as nginx:
        seeds = _tmp("seeds") / "seeds.txt"
        seeds.write_text("\n".join(nginx.seeds()) + "\n")
        crawlers = [f"nutch2 {f}" for f in frameworks] + (["nutch2 baseline"] if baseline else []) + (
            ["scrapy"] if scrapy else [])
        parts = baseline.split(":") if baseline else []
        base = (parts[0], Path(parts[1])) if baseline else None
        base_framework = parts[2] if len(parts) > 2 else "local"
        for t in threads:
            for i in range(runs):  # interleaved, so contention from other work hits every crawler alike
                for who in crawlers:
                    load = loadavg()
                    if who == "scrapy":
                        r = _scrapy_crawl(nginx, seeds, t)
                    elif who == "nutch2 baseline":
                        r = _nutch2_crawl(nginx, seeds, t, web.total, base_framework, base)
                    else:
                        r = _nutch2_crawl(nginx, seeds, t, web.total, who.split()[1])
                    r["load"] = load
                    results[(who, t)].append(r)
                    print(f"crawl T={t} run {i + 1}: {who} {r['pages']} pages {r['seconds']:.1f} s {r['rss']:.0f} MB "
                          f"RSS {r['pss']:.0f} MB PSS {r.get('stages', '')}", file=sys.stderr, flush=True)
        shutil.rmtree(seeds.parent, ignore_errors=True)
    peer = "scrapy" if scrapy else crawlers[-1]
    lines += ["pages/s = HTML pages fetched and parsed / wall time of the whole crawl process (nutch2: inject + all "
              "rounds of generate, fetch, parse, updatedb on sqlite; Scrapy: CrawlSpider, robots obeyed, the text "
              "and title of every page extracted as nutch2 does). Peak memory of the process tree (psutil, 50 ms "
              "polling): RSS summed over its processes (a page two processes share counts twice) and PSS (a shared "
              "page split between them: what the tree takes from the machine). Equal concurrency T: nutch2 local "
              "runs one fetch task of T threads, nutch2 processes two worker processes (mapreduce.job.tasks=2) of "
              "T/2 threads each, nutch2 default picks its runner and tasks itself (-threads T / its tasks), Scrapy "
              "CONCURRENT_REQUESTS=T; fetcher.threads.per.queue=1, delay 0. Runs interleaved.", "",
              "| T | crawler | pages | pages/s (median) | runs pages/s | peak RSS MB | peak PSS MB | load at start |"
              f" pages/s vs {peer} | RSS vs {peer} | PSS vs {peer} |",
              "|---|---|---|---|---|---|---|---|---|---|---|"]
    for t in threads:
        rate, rss, pss = {}, {}, {}
        for who in crawlers:
            rs = results[(who, t)]
            rate[who] = median([r["pages"] / r["seconds"] for r in rs])
            rss[who] = median([r["rss"] for r in rs])
            pss[who] = median([r["pss"] for r in rs])
        for who in crawlers:
            rs = results[(who, t)]
            rates = [r["pages"] / r["seconds"] for r in rs]
            pages = "/".join(str(r["pages"]) for r in rs)
            loads = " ".join(f"{r['load']:.1f}" for r in rs)
            vs = [f"{d[who] / d[peer]:.2f}x" if who != peer else "" for d in (rate, rss, pss)]
            lines.append(f"| {t} | {who} | {pages} | {rate[who]:.0f} | {', '.join(f'{x:.0f}' for x in rates)} | "
                         f"{rss[who]:.0f} | {pss[who]:.0f} | {loads} | {' | '.join(vs)} |")
        for who in [c for c in crawlers if c != "scrapy"]:
            st = defaultdict(list)
            for r in results[(who, t)]:
                for k, v in r["stages"].items():
                    st[k].append(v)
            lines.append(f"| {t} | {who}: job seconds (median) | " + ", ".join(
                f"{k} {median(v):.1f}" for k, v in st.items()) + " | | | | | | | | |")
    lines += ["", f"load average at end {loadavg():.2f}", ""]
    return _emit(lines)


# ---------------------------------------------------------------------------------------------- politeness
def _inject_generate(data: Path, urls: list[str], extra: dict | None = None) -> str:
    seeds = data / "seeds.txt"
    seeds.write_text("\n".join(urls) + "\n")
    run(NUTCH2 + ["inject", str(seeds), "-crawlId", "bench"] + _defines(data, **(extra or {})), cwd=REPO)
    g = run(NUTCH2 + ["generate", "-crawlId", "bench", "-topN", str(len(urls) + 10)]
            + _defines(data, **(extra or {})), cwd=REPO)
    return g.stdout.strip().split()[-1]


def _access_log(path: Path) -> list[tuple[float, str, int, str]]:
    out = []
    for line in path.read_text().splitlines():
        t, addr, status, uri = line.split(" ", 3)
        out.append((float(t), addr, int(status), uri))
    return out


def bench_politeness(quick: bool = False, runs: int = 3, delay: float | None = None, threads: int = 64) -> str:
    hosts, pages = (4, 5) if quick else (100, 50)
    d = delay if delay is not None else (0.2 if quick else 0.5)
    web = generate_web(hosts, pages)
    lines = _header(f"politeness: {hosts} hosts x {pages} pages, fetcher.server.delay={d}, {threads} threads",
                    "python -m bench politeness" + (" --quick" if quick else ""))
    ideal = hosts / d
    rows = []
    for i in range(runs):
        data = _tmp("polite")
        nginx = Nginx(web, access_log=True)
        try:
            nginx.start()
            urls = [nginx.url(h, n) for h in range(hosts) for n in range(pages)]
            batch = _inject_generate(data, urls)
            load = loadavg()
            r = run(NUTCH2 + ["fetch", batch, "-crawlId", "bench", "-threads", str(threads)]
                    + _defines(data, fetcher_server_delay=d), cwd=REPO)
            nginx.stop()
            log = _access_log(nginx.log_path)
        finally:
            nginx.cleanup()
            shutil.rmtree(data, ignore_errors=True)
        page_hits = [e for e in log if e[3] != "/robots.txt"]
        first, last = min(e[0] for e in log), max(e[0] for e in log)
        per_host = defaultdict(list)
        for e in log:
            per_host[e[1]].append(e[0])
        gaps = [b - a for ts in per_host.values() for a, b in zip(sorted(ts)[:-1], sorted(ts)[1:], strict=True)]
        job = re.search(r"^fetch: finished in ([\d.]+) s", r.stderr, re.M)
        rate_log = len(page_hits) / (last - first)
        rate_job = len(page_hits) / float(job.group(1)) if job else float("nan")
        rows.append({"pages": len(page_hits), "rate_log": rate_log, "rate_job": rate_job,
                     "rate_wall": len(page_hits) / r.seconds, "min_gap": min(gaps), "med_gap": median(gaps),
                     "load": load})
        print(f"politeness run {i + 1}: {rows[-1]}", file=sys.stderr, flush=True)
    lines += [f"ideal H/d = {ideal:.0f} pages/s. 'server' = pages / (last - first request in nginx's access log, "
              "robots.txt requests included in the span); 'job' = pages / the fetch job's own elapsed time; "
              "'process' = pages / wall time of `nutch2 fetch` (interpreter start, map, sqlite writes). "
              "Per-host gap = time between consecutive requests to one host (must be >= d).", "",
              "| run | pages | pages/s server | % of H/d | pages/s job | pages/s process | min gap s | median gap s |"
              " load |", "|---|---|---|---|---|---|---|---|---|"]
    for i, x in enumerate(rows, 1):
        lines.append(f"| {i} | {x['pages']} | {x['rate_log']:.1f} | {100 * x['rate_log'] / ideal:.1f}% | "
                     f"{x['rate_job']:.1f} | {x['rate_wall']:.1f} | {x['min_gap']:.3f} | {x['med_gap']:.3f} | "
                     f"{x['load']:.1f} |")
    ml, mj = median([x["rate_log"] for x in rows]), median([x["rate_job"] for x in rows])
    lines += [f"| median | | {ml:.1f} | {100 * ml / ideal:.1f}% | {mj:.1f} ({100 * mj / ideal:.1f}% of H/d) | "
              f"{median([x['rate_wall'] for x in rows]):.1f} | | | |", "", f"load average at end {loadavg():.2f}", ""]
    return _emit(lines)


# ---------------------------------------------------------------------------------------------- memory vs batch
def _put_rows(data: Path, rows, batch_size: int = 5000, crawl_id: str = "bench") -> None:
    """Write WebPage rows straight into the sqlite store of a crawl (no inject job)."""
    sys.path.insert(0, str(REPO))
    from nutch2.config import Configuration
    from nutch2.stores import open_store

    conf = Configuration(REPO / "conf", {"storage.data.dir": str(data), "storage.write.batch.size": str(batch_size)})
    store = open_store(conf, crawl_id)
    try:
        for page in rows:
            store.put(page.key, page)
        store.flush()
    finally:
        store.close()


def _url_rows(port: int, n: int, hosts: int, batch: str, fetched_batch: int = 0, content: bytes = b""):
    from nutch2.status import CrawlStatus
    from nutch2.urls.tableutil import reverse_url
    from nutch2.webpage import WebPage

    now = int(time.time() * 1000)
    for i in range(n):
        url = f"http://{host_addr(i % hosts)}:{port}/m/{i}.html"
        key = reverse_url(url)
        if i < fetched_batch:  # a fetched row of the batch, ready to parse
            yield WebPage(key, status=int(CrawlStatus.FETCHED), fetch_time=now, score=1.0,
                          fetch_interval=2592000, content=content, content_type="text/html", base_url=url,
                          markers={"_gnmrk_": batch, "_ftcmrk_": batch, "dist": "1"})
        elif batch and not fetched_batch:  # a generated row (fetch target)
            yield WebPage(key, status=int(CrawlStatus.UNFETCHED), fetch_time=now, score=1.0,
                          fetch_interval=2592000, markers={"_gnmrk_": batch, "dist": "1"})
        else:  # the rest of the table: rows outside the batch
            yield WebPage(key, status=int(CrawlStatus.UNFETCHED), fetch_time=now + 86400000, score=0.5,
                          fetch_interval=2592000, markers={"dist": "2"})


def bench_memory(quick: bool = False, runs: int = 1, sizes: tuple[int, ...] | None = None,
                 threads: int = 64) -> str:
    sizes = sizes or ((200, 2000) if quick else (10_000, 100_000))
    hosts = 4 if quick else 200
    web = generate_web(hosts, 20 if quick else 100)
    lines = _header(f"memory: fetcher peak RSS vs batch size ({hosts} hosts, {threads} threads, delay 0)",
                    "python -m bench memory" + (" --quick" if quick else ""))
    lines += ["Rows written straight into sqlite with a generate mark; `nutch2 fetch` of that batch against nginx "
              "(every /m/ URL serves a 20 KB page, content stored). Peak RSS of the fetch process.", "",
              "| batch URLs | fetched | seconds | pages/s | peak RSS MB | load |", "|---|---|---|---|---|---|"]
    res = {}
    with Nginx(web) as nginx:
        for size in sizes:
            rss = []
            for _ in range(runs):
                data = _tmp("mem")
                try:
                    _put_rows(data, _url_rows(nginx.port, size, hosts, "b1"))
                    load = loadavg()
                    r = run(NUTCH2 + ["fetch", "b1", "-crawlId", "bench", "-threads", str(threads)] + _defines(data),
                            cwd=REPO)
                    fetched = re.search(r"fetched=(\d+)", r.stderr)
                    n = int(fetched.group(1)) if fetched else 0
                    rss.append(r.peak_rss_mb)
                    lines.append(f"| {size:,} | {n:,} | {r.seconds:.1f} | {n / r.seconds:.0f} | {r.peak_rss_mb:.0f} "
                                 f"| {load:.1f} |")
                    print(lines[-1], file=sys.stderr, flush=True)
                finally:
                    shutil.rmtree(data, ignore_errors=True)
            res[size] = median(rss)
    if len(sizes) >= 2:
        lines += ["", f"RSS ratio {sizes[-1]:,} / {sizes[0]:,} URLs: {res[sizes[-1]] / res[sizes[0]]:.2f}x "
                  "(goal <= 1.5x)"]
    lines += ["", f"load average at end {loadavg():.2f}", ""]
    return _emit(lines)


# ---------------------------------------------------------------------------------------------- cost vs table size
def _solr_up() -> bool:
    import urllib.request

    try:
        urllib.request.urlopen("http://127.0.0.1:8983/solr/nutch/admin/ping", timeout=1)
        return True
    except Exception:  # noqa: BLE001
        return False


def _solr_delete_batch(batch_rows: int) -> None:
    """Remove the documents the index step added to the shared Solr core (ids = row keys of the batch)."""
    import urllib.request

    from nutch2.urls.tableutil import reverse_url

    ids = [reverse_url(f"http://{host_addr(i % 200)}:18777/m/{i}.html") for i in range(batch_rows)]
    req = urllib.request.Request("http://127.0.0.1:8983/solr/nutch/update?commit=true",
                                 data=json.dumps({"delete": ids}).encode(),
                                 headers={"Content-Type": "application/json"})
    urllib.request.urlopen(req, timeout=30).read()


def bench_tablesize(quick: bool = False, runs: int = 3, sizes: tuple[int, ...] | None = None) -> str:
    sizes = sizes or ((1000, 5000) if quick else (10_000, 100_000))
    batch_rows = 100 if quick else 1000
    web = generate_web(4 if quick else 200, 20 if quick else 100)
    content = (web.root / host_addr(0) / "p" / "1.html").read_bytes()
    solr = _solr_up()
    lines = _header(f"table size: parse / updatedb{' / index' if solr else ''} of a {batch_rows}-row batch "
                    "in tables of " + " and ".join(f"{s:,}" for s in sizes) + " rows (sqlite)",
                    "python -m bench tablesize" + (" --quick" if quick else ""))
    jobs = ["parse", "updatedb"] + (["index"] if solr else [])
    if not solr:
        lines += ["index: skipped (no Solr at http://127.0.0.1:8983/solr/nutch).", ""]
    else:
        lines += ["index: into the Solr core at http://127.0.0.1:8983/solr/nutch; the batch's documents are deleted "
                  "again after each run.", ""]
    lines += [f"{batch_rows} rows fetched in batch b1 (20 KB HTML each) among rows outside the batch, written straight "
              "into sqlite. Each job's own elapsed time ('<job>: finished in X s'); the process wall time in "
              "brackets.", "",
              "| table rows | " + " | ".join(f"{j} s (median)" for j in jobs) + " | load |",
              "|---|" + "---|" * len(jobs) + "---|"]
    med: dict[tuple[int, str], float] = {}
    for size in sizes:
        times: dict[str, list[float]] = defaultdict(list)
        walls: dict[str, list[float]] = defaultdict(list)
        load = loadavg()
        for _ in range(runs):
            data = _tmp("table")
            try:
                _put_rows(data, _url_rows(18777, size, 200, "b1", fetched_batch=batch_rows, content=content))
                for job in jobs:
                    extra = ["-solr", "http://127.0.0.1:8983/solr/nutch"] if job == "index" else []
                    r = run(NUTCH2 + [job, "b1", "-crawlId", "bench"] + extra + _defines(data), cwd=REPO)
                    m = re.search(rf"^{job}\w*: finished in ([\d.]+) s", r.stderr, re.M)
                    times[job].append(float(m.group(1)) if m else r.seconds)
                    walls[job].append(r.seconds)
            finally:
                if solr:
                    _solr_delete_batch(batch_rows)
                shutil.rmtree(data, ignore_errors=True)
        for job in jobs:
            med[(size, job)] = median(times[job])
        lines.append(f"| {size:,} | " + " | ".join(
            f"{median(times[j]):.2f} [{median(walls[j]):.2f}]" for j in jobs) + f" | {load:.1f} |")
        print(lines[-1], file=sys.stderr, flush=True)
    if len(sizes) >= 2:
        lines += ["", "ratio largest/smallest table: " + ", ".join(
            f"{j} {med[(sizes[-1], j)] / med[(sizes[0], j)]:.2f}x" for j in jobs) + " (goal <= 1.3x)"]
    lines += ["", f"load average at end {loadavg():.2f}", ""]
    return _emit(lines)


# ---------------------------------------------------------------------------------------------- parse on the cores
def bench_parse(quick: bool = False, runs: int = 3, rows: int | None = None) -> str:
    """The parse job over one batch of fetched 20 KB pages: local (1 task) vs processes with 1 and 2 workers."""
    n = rows or (300 if quick else 5000)
    web = generate_web(4 if quick else 200, 20 if quick else 100)
    content = (web.root / host_addr(0) / "p" / "1.html").read_bytes()
    variants = {
        "local, 1 task": {"mapreduce_job_tasks": 1},
        "processes, 1 worker": {"mapreduce_framework_name": "processes", "mapreduce_job_tasks": 1},
        "processes, 2 workers": {"mapreduce_framework_name": "processes", "mapreduce_job_tasks": 2},
    }
    lines = _header(f"parse: one batch of {n:,} fetched pages ({len(content) // 1024} KB HTML), sqlite",
                    "python -m bench parse" + (" --quick" if quick else ""))
    lines += ["pages/s = pages / the parse job's own elapsed time ('parse: finished in X s'; the process wall time, "
              "with interpreter and worker start, in brackets). Peak RSS of the process tree. Runs interleaved.", "",
              "| runner | pages/s (median) | runs | wall s (median) | peak RSS MB (median) | load at start |",
              "|---|---|---|---|---|---|"]
    results: dict[str, list[tuple[float, float, float, float]]] = defaultdict(list)
    for _ in range(runs):
        for name, extra in variants.items():
            data = _tmp("parse")
            try:
                _put_rows(data, _url_rows(18777, n, 200, "b1", fetched_batch=n, content=content))
                load = loadavg()
                r = run(NUTCH2 + ["parse", "b1", "-crawlId", "bench"] + _defines(data, **extra), cwd=REPO)
                m = re.search(r"^parse: finished in ([\d.]+) s", r.stderr, re.M)
                results[name].append((n / _job_seconds(m.group(1)), r.seconds, r.peak_rss_mb, load))
                print(f"parse {name}: {results[name][-1]}", file=sys.stderr, flush=True)
            finally:
                shutil.rmtree(data, ignore_errors=True)
    for name in variants:
        rs = results[name]
        lines.append(f"| {name} | {median([r[0] for r in rs]):.0f} | {', '.join(f'{r[0]:.0f}' for r in rs)} | "
                     f"{median([r[1] for r in rs]):.1f} | {median([r[2] for r in rs]):.0f} | "
                     f"{' '.join(f'{r[3]:.1f}' for r in rs)} |")
    one = median([r[0] for r in results["processes, 1 worker"]])
    two = median([r[0] for r in results["processes, 2 workers"]])
    lines += ["", f"2 workers / 1 worker: {two / one:.2f}x (aim >= 1.8x); 2 workers / local: "
              f"{two / median([r[0] for r in results['local, 1 task']]):.2f}x", "",
              f"load average at end {loadavg():.2f}", ""]
    return _emit(lines)


# ---------------------------------------------------------------------------------------------- spark overhead
def _batch_rows(n: int, batch: str, content: bytes, links: int):
    """n fetched and parsed rows of one batch, each with `links` outlinks (half to other batch rows, half new)."""
    from nutch2.status import CrawlStatus
    from nutch2.urls.tableutil import reverse_url
    from nutch2.webpage import WebPage

    now = int(time.time() * 1000)
    for i in range(n):
        url = f"http://{host_addr(i % 200)}:18777/m/{i}.html"
        outlinks = {f"http://{host_addr((i + j) % 200)}:18777/m/{(i * 31 + j) % (n * (1 + j % 2))}.html": f"l{j}"
                    for j in range(links)}
        yield WebPage(reverse_url(url), status=int(CrawlStatus.FETCHED), fetch_time=now, score=1.0,
                      prev_fetch_time=now - 86400000, fetch_interval=2592000, content=content,
                      content_type="text/html", base_url=url, outlinks=outlinks, signature=bytes(16),
                      markers={"_gnmrk_": batch, "_ftcmrk_": batch, "__prsmrk__": batch, "dist": "1"})


def bench_spark(quick: bool = False, runs: int = 3, sizes: tuple[int, ...] | None = None,
                big: int | None = None) -> str:
    """parse and updatedb of one batch with the local runner and with Spark (local[2]), at two batch sizes:
    the fixed cost of a Spark job (JVM and context start, stage scheduling) apart from its cost per row; then
    updatedb of a big batch on both."""
    sizes = sizes or ((100,) if quick else (1000, 10_000))  # quick: one Spark start fewer (CI's time)
    big = big if big is not None else (200 if quick else 100_000)
    web = generate_web(4 if quick else 200, 20 if quick else 100)
    content = (web.root / host_addr(0) / "p" / "1.html").read_bytes()
    spark = {"mapreduce_framework_name": "spark", "spark.master": "local[2]", "spark.ui.enabled": "false"}
    runners = {"local": {"mapreduce_job_tasks": 2}, "spark local[2]": {**spark, "mapreduce_job_tasks": 2}}
    lines = _header(f"spark: the spark runner's cost per job vs the local runner (batches of "
                    f"{' and '.join(f'{n:,}' for n in sizes)} rows, then updatedb of {big:,})",
                    "python -m bench spark" + (" --quick" if quick else ""))
    lines += ["Rows written straight into sqlite: a fetched batch of 20 KB pages with 10 outlinks each. 'job s' = "
              "the job's own elapsed time (for Spark it includes starting the JVM and the SparkContext: each "
              "command is a new process); 'wall s' = the whole command. fixed = the intercept and per 1k rows = "
              "the slope of job s over the two batch sizes. Medians; runs interleaved.", "",
              "| job | runner | " + " | ".join(f"{n:,} rows: job s [wall s]" for n in sizes)
              + " | fixed s | s per 1k rows | load |", "|---|---|" + "---|" * len(sizes) + "---|---|---|"]

    def measure(job: str, n: int, extra: dict, links: int = 10) -> tuple[float, float]:
        data = _tmp("spark")
        try:
            _put_rows(data, _batch_rows(n, "b1", content, links))
            if job == "updatedb":  # parse first (not measured), as a crawl would
                run(NUTCH2 + ["parse", "b1", "-crawlId", "bench"] + _defines(data, **runners["local"]), cwd=REPO)
            r = run(NUTCH2 + [job, "b1", "-crawlId", "bench"] + _defines(data, **extra), cwd=REPO)
            m = re.search(rf"^{job}: finished in ([\d.]+) s", r.stderr, re.M)
            return float(m.group(1)), r.seconds
        finally:
            shutil.rmtree(data, ignore_errors=True)

    for job in ("parse",) if quick else ("parse", "updatedb"):  # quick: a smoke test of the code, not a figure
        res: dict[tuple[str, int], list[tuple[float, float]]] = defaultdict(list)
        load = loadavg()
        for _ in range(runs):
            for n in sizes:
                for name, extra in runners.items():
                    res[(name, n)].append(measure(job, n, extra))
                    print(f"spark bench {job} {name} {n}: {res[(name, n)][-1]}", file=sys.stderr, flush=True)
        for name in runners:
            med = {n: (median([x[0] for x in res[(name, n)]]), median([x[1] for x in res[(name, n)]]))
                   for n in sizes}
            slope = (med[sizes[-1]][0] - med[sizes[0]][0]) / (sizes[-1] - sizes[0]) * 1000 if len(sizes) > 1 else 0.0
            fixed = med[sizes[0]][0] - slope * sizes[0] / 1000
            lines.append(f"| {job} | {name} | " + " | ".join(f"{med[n][0]:.1f} [{med[n][1]:.1f}]" for n in sizes)
                         + f" | {fixed:.1f} | {slope:.2f} | {load:.1f} |")
    lines += ["", f"updatedb of a {big:,}-row batch (10 outlinks per row: {big * 10:,} link datums), one run each:", "",
              "| runner | job s | wall s | peak RSS MB | load |", "|---|---|---|---|---|"]
    for name, extra in runners.items():
        data = _tmp("spark")
        try:
            _put_rows(data, _batch_rows(big, "b1", content, 10))
            load = loadavg()
            r = run(NUTCH2 + ["updatedb", "b1", "-crawlId", "bench"] + _defines(data, **extra), cwd=REPO)
            m = re.search(r"^updatedb: finished in ([\d.]+) s", r.stderr, re.M)
            lines.append(f"| {name} | {m.group(1) if m else '?'} | {r.seconds:.1f} | {r.peak_rss_mb:.0f} "
                         f"| {load:.1f} |")
            print(lines[-1], file=sys.stderr, flush=True)
        finally:
            shutil.rmtree(data, ignore_errors=True)
    lines += ["", f"load average at end {loadavg():.2f}", ""]
    return _emit(lines)


# ---------------------------------------------------------------------------------------------- a crawl on Spark
SPARK_CRAWL_STEPS = ("generate", "fetch", "parse", "updatedb")


def bench_sparkcrawl(quick: bool = False, runs: int = 3, baseline: str | None = None) -> str:
    """The fixed cost of a 3-round crawl on Spark local[2]: one `crawl` command (one SparkContext for every job)
    against the same jobs run as separate commands (a SparkContext each) and against the local runner's crawl;
    baseline "PYTHON:CHECKOUT": the same `crawl` command of another nutch2 (its executors run the python3 first on
    PATH, so its folder's python leads PATH)."""
    hosts, pages = (4, 8) if quick else (10, 20)
    web = generate_web(hosts, pages)
    spark = {"mapreduce_framework_name": "spark", "spark.master": "local[2]", "spark.ui.enabled": "false",
             "mapreduce_job_tasks": 2}
    base = (baseline.split(":", 1)[0], Path(baseline.split(":", 1)[1])) if baseline else None
    variants = ["local: crawl", "spark: crawl"] + ([] if quick else ["spark: separate commands"]) + (
        ["spark: crawl (baseline)"] if base else [])  # quick (CI's smoke test): one Spark start, not 14
    lines = _header(f"sparkcrawl: the fixed cost of a 3-round crawl on Spark local[2] ({hosts} hosts x {pages} "
                    f"pages = {web.total})", "python -m bench sparkcrawl" + (" --quick" if quick else ""))
    results: dict[str, list[tuple[float, int, int, float]]] = defaultdict(list)
    with Nginx(web) as nginx:
        seeds = _tmp("seeds") / "seeds.txt"
        seeds.write_text("\n".join(nginx.seeds()) + "\n")
        for _ in range(runs):
            for who in variants:
                data = _tmp("sparkcrawl")
                load = loadavg()
                try:
                    d = _defines(data, **(spark if who.startswith("spark") else {"mapreduce_job_tasks": 2}))
                    if who == "spark: separate commands":
                        seconds, starts, out = _separate_commands(seeds, d)
                    else:
                        python, cwd, env = sys.executable, REPO, None
                        if who.endswith("(baseline)") and base is not None:
                            python, cwd = base
                            env = {"PATH": f"{Path(python).parent}:{os.environ.get('PATH', '')}"}
                        r = run([python, "-m", "nutch2", "crawl", str(seeds), "-crawlId", "bench", "-rounds", "3"]
                                + d, cwd=cwd, env=env)
                        seconds, out = r.seconds, r.stdout
                        starts = len(re.findall(r"^spark: SparkContext started", r.stderr, re.M)) or (
                            1 if who.startswith("spark") else 0)  # the baseline does not log its one start
                    m = re.search(r"FETCHED=(\d+)", out)
                    results[who].append((seconds, int(m.group(1)) if m else 0, starts, load))
                    print(f"sparkcrawl {who}: {results[who][-1]}", file=sys.stderr, flush=True)
                finally:
                    shutil.rmtree(data, ignore_errors=True)
        shutil.rmtree(seeds.parent, ignore_errors=True)
    local = median([r[0] for r in results["local: crawl"]])
    lines += ["wall s = the whole crawl (inject, then 3 rounds of generate, fetch, parse, updatedb, then the crawl's "
              "readdb count; separate commands: the 13 commands' walls added, no readdb), sqlite, delay 0, "
              "mapreduce.job.tasks=2; fixed s = wall s - the local runner's; SparkContexts = starts counted in the "
              "log. Medians; runs interleaved.", "",
              "| variant | pages fetched | SparkContexts | wall s (median) | runs | fixed s vs local | load |",
              "|---|---|---|---|---|---|---|"]
    for who in variants:
        rs = results[who]
        wall = median([r[0] for r in rs])
        lines.append(f"| {who} | {rs[0][1]} | {rs[0][2]} | {wall:.1f} | {', '.join(f'{r[0]:.1f}' for r in rs)} | "
                     f"{wall - local:.1f} | {' '.join(f'{r[3]:.1f}' for r in rs)} |")
    lines += ["", f"load average at end {loadavg():.2f}", ""]
    return _emit(lines)


def _separate_commands(seeds: Path, d: list[str]) -> tuple[float, int, str]:
    """inject, then 3 rounds of generate, fetch, parse and updatedb, each a command of its own."""
    seconds, starts = 0.0, 0
    r = run(NUTCH2 + ["inject", str(seeds), "-crawlId", "bench"] + d, cwd=REPO)
    seconds += r.seconds
    starts += r.stderr.count("spark: SparkContext started")
    fetched = 0
    for _ in range(3):
        g = run(NUTCH2 + ["generate", "-crawlId", "bench"] + d, cwd=REPO, check=False)
        seconds += g.seconds
        starts += g.stderr.count("spark: SparkContext started")
        if g.returncode != 0:
            break
        batch = g.stdout.strip().splitlines()[-1]
        for step in SPARK_CRAWL_STEPS[1:]:
            r = run(NUTCH2 + [step, batch, "-crawlId", "bench"] + d, cwd=REPO)
            seconds += r.seconds
            starts += r.stderr.count("spark: SparkContext started")
            m = re.search(r"^fetch: finished in .* fetched=(\d+)", r.stderr, re.M)
            fetched += int(m.group(1)) if m else 0
    return seconds, starts, f"FETCHED={fetched}"


# ---------------------------------------------------------------------------------------------- WARC out and in
def bench_warc(quick: bool = False, runs: int = 3, rows: int | None = None) -> str:
    """`nutch2 warc` of one batch of fetched pages, then `nutch2 warcimport` of its files: records/s, both runners."""
    n = rows or (300 if quick else 5000)
    web = generate_web(4 if quick else 200, 20 if quick else 100)
    content = (web.root / host_addr(0) / "p" / "1.html").read_bytes()
    variants = {
        "local, 1 task": {"mapreduce_job_tasks": 1},
        "processes, 2 workers": {"mapreduce_framework_name": "processes", "mapreduce_job_tasks": 2},
    }
    lines = _header(f"warc: export and import of one batch of {n:,} fetched pages ({len(content) // 1024} KB HTML), "
                    "sqlite", "python -m bench warc" + (" --quick" if quick else ""))
    lines += ["records/s = pages (response records, each with its request and metadata record) / the command's own "
              "elapsed time ('warc: finished in X s', 'warcimport: finished in X s'; the import's includes reading the "
              "files on the driver, not the digest of its inputs); process wall time in brackets. Runs interleaved.",
              "", "| runner | export records/s (median) | runs | import records/s (median) | runs | WARC MB | "
              "peak RSS MB export / import | load at start |", "|---|---|---|---|---|---|---|---|"]
    results: dict[str, list[tuple[float, float, float, float, float, float, float, float, float]]] = defaultdict(list)
    for _ in range(runs):
        for name, extra in variants.items():
            data = _tmp("warc")
            try:
                _put_rows(data, _url_rows(18777, n, 200, "b1", fetched_batch=n, content=content))
                load = loadavg()
                out = data / "out"
                r = run(NUTCH2 + ["warc", str(out), "b1", "-crawlId", "bench"] + _defines(data, **extra), cwd=REPO)
                export_s = float(re.search(r"^warc: finished in ([\d.]+) s", r.stderr, re.M).group(1))
                files = sorted(str(p) for p in out.glob("*.warc.gz"))
                size = sum(Path(p).stat().st_size for p in files) / 1e6
                r2 = run(NUTCH2 + ["warcimport", *files, "-crawlId", "bench2"] + _defines(data, **extra), cwd=REPO)
                import_s = float(re.search(r"^warcimport: finished in ([\d.]+) s", r2.stderr, re.M).group(1))
                results[name].append((n / export_s, r.seconds, n / import_s, r2.seconds, size, r.peak_rss_mb,
                                      r2.peak_rss_mb, load, 0.0))
                print(f"warc {name}: {results[name][-1]}", file=sys.stderr, flush=True)
            finally:
                shutil.rmtree(data, ignore_errors=True)
    for name in variants:
        rs = results[name]
        lines.append(f"| {name} | {median([r[0] for r in rs]):.0f} ({median([r[1] for r in rs]):.1f} s wall) | "
                     f"{', '.join(f'{r[0]:.0f}' for r in rs)} | {median([r[2] for r in rs]):.0f} "
                     f"({median([r[3] for r in rs]):.1f} s wall) | {', '.join(f'{r[2]:.0f}' for r in rs)} | "
                     f"{median([r[4] for r in rs]):.1f} | {median([r[5] for r in rs]):.0f} / "
                     f"{median([r[6] for r in rs]):.0f} | {' '.join(f'{r[7]:.1f}' for r in rs)} |")
    lines += ["", f"load average at end {loadavg():.2f}", ""]
    return _emit(lines)


def _emit(lines: list[str]) -> str:
    text = "\n".join(lines)
    print(text, flush=True)
    return text
