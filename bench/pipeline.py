"""Where a crawl's time goes (issue 37): the timeline of one crawl, and the Scrapy peer's settings.

    python -m bench timeline [--runs N] [--hosts H] [--pages P] [--threads T] [-D key=value ...]
    python -m bench scrapypeer [--runs N] [--hosts H] [--pages P] [--threads T]

`timeline` runs `nutch2 crawl` with the defaults while it samples the machine's CPU (/proc/stat, every 0.25 s) and
notes when each job of each round ends (its "JOB: finished in X s" line); it prints which job ran when, how busy the
two cores were meanwhile, and the CPU the crawl took per page: the ceiling its parts allow if both cores were busy
all the time. `scrapypeer` crawls the same web with Scrapy's settings that could make the peer faster at one request
per host (interleaved runs), so the peer of `python -m bench crawl` is the fastest one found, not a slow one.
"""

from __future__ import annotations

import re
import resource
import shutil
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

from bench.benchmarks import REPO, _defines, _emit, _header, _scrapy_crawl, _tmp, default_tasks
from bench.measure import loadavg
from bench.web import Nginx, generate_web

FINISHED = re.compile(r"^(\w+): finished in ([\d.]+) s")
ROUND = re.compile(r"^crawl: round (\d+)")


def _cpu() -> tuple[int, int]:
    """(all jiffies, idle jiffies) of the machine."""
    v = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return sum(v), v[3] + v[4]


class CpuSampler:
    """The machine's busy fraction (0..1 of all cores) every `interval` seconds, from /proc/stat."""

    def __init__(self, interval: float = 0.25) -> None:
        self.interval = interval
        self.samples: list[tuple[float, float]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> CpuSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        all0, idle0 = _cpu()
        while not self._stop.wait(self.interval):
            all1, idle1 = _cpu()
            self.samples.append((time.monotonic(), 1 - (idle1 - idle0) / max(1, all1 - all0)))
            all0, idle0 = all1, idle1

    def busy(self, start: float, end: float) -> float:
        """Mean busy fraction of the samples that ended within (start, end]."""
        inside = [u for t, u in self.samples if start < t <= end + self.interval / 2]
        return statistics.fmean(inside) if inside else 0.0


def crawl_timeline(nginx: Nginx, seeds: Path, threads: int, total: int) -> dict:
    """One `nutch2 crawl` with the defaults; its jobs as (round, job, start, end) seconds from the command's start."""
    data = _tmp("timeline")
    tasks = default_tasks()
    cmd = [sys.executable, "-m", "nutch2", "crawl", str(seeds), "-crawlId", "bench", "-rounds", "-1", "-topN",
           str(total + 10), "-threads", str(max(1, threads // tasks))] + _defines(data, mapreduce_job_tasks=None)
    jobs: list[tuple[int, str, float, float]] = []
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    try:
        with CpuSampler() as cpu:
            t0 = time.monotonic()
            proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            rnd, last = 0, 0.0
            assert proc.stderr is not None
            for line in proc.stderr:  # the jobs run one after another: one starts after the line before it
                now = time.monotonic() - t0
                if m := ROUND.match(line):
                    rnd, last = int(m.group(1)), now
                elif m := FINISHED.match(line):
                    jobs.append((rnd, m.group(1), max(last, now - float(m.group(2)) - 0.05), now))
                    last = now
            out = proc.stdout.read() if proc.stdout else ""
            rc = proc.wait()
            wall = time.monotonic() - t0
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if rc != 0:
            raise RuntimeError(f"crawl exited {rc}")
        m = re.search(r"FETCHED=(\d+)", out)
        spans = [(r, j, s, e, cpu.busy(t0 + s, t0 + e)) for r, j, s, e in jobs]
        return {"wall": wall, "pages": int(m.group(1)) if m else 0, "jobs": spans, "busy": cpu.busy(t0, t0 + wall),
                "cpu": (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime),
                "samples": [(t - t0, u) for t, u in cpu.samples if t0 <= t <= t0 + wall], "tasks": tasks}
    finally:
        shutil.rmtree(data, ignore_errors=True)


def _strip(samples: list[tuple[float, float]], jobs: list[tuple], width: int = 2) -> list[str]:
    """One line per 0.5 s: the job(s) running and a bar of how busy the cores were (# = 5 % of the machine)."""
    lines = []
    end = samples[-1][0] if samples else 0.0
    t = 0.0
    while t < end:
        busy = [u for s, u in samples if t < s <= t + 0.5]
        running = sorted({f"r{r} {j}" for r, j, s, e, _ in jobs if s < t + 0.5 and e > t}) or ["(between jobs)"]
        u = statistics.fmean(busy) if busy else 0.0
        lines.append(f"{t:5.1f} s {'#' * round(u * 20):20s} {u * 100 * width:4.0f} % {', '.join(running)}")
        t += 0.5
    return lines


def bench_timeline(quick: bool = False, runs: int = 1, threads: int = 16, hosts: int | None = None,
                   pages: int | None = None) -> str:
    hosts, pages = hosts or (4 if quick else 50), pages or (20 if quick else 100)
    web = generate_web(hosts, pages)
    lines = _header(f"timeline: one crawl with the defaults, {hosts} hosts x {pages} pages = {web.total}",
                    f"python -m bench timeline --runs {runs} --threads {threads} --hosts {hosts} --pages {pages}")
    results = []
    with Nginx(web) as nginx:
        seeds = _tmp("seeds") / "seeds.txt"
        seeds.write_text("\n".join(nginx.seeds()) + "\n")
        for i in range(runs):
            load = loadavg()
            r = crawl_timeline(nginx, seeds, threads, web.total)
            r["load"] = load
            results.append(r)
            print(f"timeline run {i + 1}: {r['pages']} pages {r['wall']:.1f} s, CPU {r['cpu']:.1f} s, busy "
                  f"{r['busy'] * 200:.0f} %", file=sys.stderr, flush=True)
        shutil.rmtree(seeds.parent, ignore_errors=True)
    r = sorted(results, key=lambda x: x["wall"])[len(results) // 2]  # the median run's timeline
    cores = _cores()
    per_page = r["cpu"] / max(1, r["pages"]) * 1000
    lines += [f"The median of {runs} run(s): {r['pages']} pages in {r['wall']:.1f} s = **{r['pages'] / r['wall']:.0f} "
              f"pages/s** ({r['tasks']} fetch tasks of {max(1, threads // r['tasks'])} threads); the crawl's "
              f"processes took {r['cpu']:.1f} CPU s = **{per_page:.2f} CPU ms a page**; the {cores} cores were "
              f"{r['busy'] * 100:.0f} % busy on average (nginx included), so the parts' ceiling with every core busy "
              f"all the time is {cores * 1000 / per_page:.0f} pages/s; load at start {r['load']:.1f}.", "",
              "| round | job | start s | end s | seconds | cores busy |", "|---|---|---|---|---|---|"]
    for rnd, job, s, e, busy in r["jobs"]:
        lines.append(f"| {rnd or '-'} | {job} | {s:.2f} | {e:.2f} | {e - s:.2f} | {busy * 100 * cores:.0f} % |")
    idle = sum(max(0.0, 1 - u) * 0.25 for _, u in r["samples"]) * cores
    lines += ["", f"Idle core-seconds over the crawl: {idle:.1f} of {r['wall'] * cores:.1f}.", "", "```"]
    lines += _strip(r["samples"], r["jobs"], cores) + ["```", ""]
    return _emit(lines)


def _cores() -> int:
    import os

    return len(os.sched_getaffinity(0))


# ---------------------------------------------------------------------------------------------- the Scrapy peer
PEER_VARIANTS: dict[str, list[str]] = {  # each on top of the peer's settings (bench/scrapy_spider.py)
    "Scrapy's defaults for these (CONCURRENT_ITEMS=100, every spider middleware)": [
        "CONCURRENT_ITEMS=100", "SPIDER_MIDDLEWARES={}"],
    "the peer with Depth, Referer, UrlLength middlewares": ["SPIDER_MIDDLEWARES={}"],
    "the peer (CONCURRENT_ITEMS=4, those three off)": [],
    "CONCURRENT_ITEMS=1": ["CONCURRENT_ITEMS=1"],
    "CONCURRENT_ITEMS=16": ["CONCURRENT_ITEMS=16"],
    "+ DownloaderAwarePriorityQueue": ['SCHEDULER_PRIORITY_QUEUE="scrapy.pqueues.DownloaderAwarePriorityQueue"'],
    "+ breadth-first (DEPTH_PRIORITY=1, FIFO)": ["DEPTH_PRIORITY=1",
                                                 'SCHEDULER_MEMORY_QUEUE="scrapy.squeues.FifoMemoryQueue"'],
    "+ epoll reactor (not asyncio)": ['TWISTED_REACTOR="twisted.internet.epollreactor.EPollReactor"'],
}


def bench_scrapypeer(quick: bool = False, runs: int = 3, threads: int = 16, hosts: int | None = None,
                     pages: int | None = None) -> str:
    import scrapy

    hosts, pages = hosts or (4 if quick else 50), pages or (20 if quick else 100)
    web = generate_web(hosts, pages)
    lines = _header(f"scrapypeer: Scrapy {scrapy.__version__}'s settings at one request per host, {hosts} hosts x "
                    f"{pages} pages = {web.total}, CONCURRENT_REQUESTS={threads}",
                    f"python -m bench scrapypeer --runs {runs} --threads {threads} --hosts {hosts} --pages {pages}")
    variants = dict(list(PEER_VARIANTS.items())[:3:2]) if quick else PEER_VARIANTS  # quick: Scrapy's and the peer
    results: dict[str, list[dict]] = {v: [] for v in variants}
    with Nginx(web) as nginx:
        seeds = _tmp("seeds") / "seeds.txt"
        seeds.write_text("\n".join(nginx.seeds()) + "\n")
        for i in range(runs):
            for name, sets in variants.items():
                load = loadavg()
                res = {**_scrapy_crawl(nginx, seeds, threads, sets), "load": load}
                results[name].append(res)
                print(f"scrapypeer run {i + 1}: {name}: {res['pages']} pages {res['seconds']:.1f} s", file=sys.stderr,
                      flush=True)
        shutil.rmtree(seeds.parent, ignore_errors=True)
    lines += ["Every variant: bench/scrapy_spider.py (CrawlSpider, robots obeyed, title, text and links of every page, "
              "CONCURRENT_REQUESTS_PER_DOMAIN=1, delay 0) with the settings named; runs interleaved.", "",
              "| variant | pages | pages/s (median) | runs pages/s | CPU ms a page | peak RSS MB | load at start |",
              "|---|---|---|---|---|---|---|"]
    for name, rs in results.items():
        rates = [x["pages"] / x["seconds"] for x in rs]
        cpu = statistics.median(x["cpu"] / max(1, x["pages"]) * 1000 for x in rs)
        lines.append(f"| {name} | {rs[0]['pages']} | {statistics.median(rates):.0f} | "
                     f"{', '.join(f'{x:.0f}' for x in rates)} | {cpu:.1f} | "
                     f"{statistics.median(x['rss'] for x in rs):.0f} | {rs[0]['load']:.1f} |")
    return _emit(lines + [""])
