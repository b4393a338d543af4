"""What an event-loop fetcher would cost a page (issue 37): nutch2's fetch of one generated batch beside a
prototype that does the same requests from one asyncio loop (aiohttp), with nutch2's claims and outcomes.

    python -m bench.eventloop [--hosts 50] [--pages 100] [--threads 16] [--runs 3]

Both start from the same copy of a table holding one generated batch of the whole synthetic web (bench/web.py on
nginx, delay 0, one request per host at a time, T requests in flight). `nutch2 fetch` runs with its defaults
(-threads T / its tasks); the prototype runs in one process: T tasks, each request claimed first (the claims made
meanwhile are written in one transaction by a thread: a group commit, as the fetcher's), the outcome put into the
store's buffer after it. The prototype leaves out what the fetcher does besides (robots.txt, URL filters, the
address guard, redirects, limits, counters): it measures the HTTP and store work of a page, not a fetcher. Prints
each run's wall seconds and CPU (user + sys, the process tree) per page; runs interleaved.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import resource
import shutil
import subprocess
import sys
import time
from statistics import median
from typing import Any

from bench.benchmarks import NUTCH2, REPO, _defines, _tmp
from bench.web import Nginx, generate_web


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _prototype(data: str, threads: int) -> None:
    """The event-loop fetch of every generated row of table `b` in `data` (run in a child process)."""
    import aiohttp

    from nutch2.config import Configuration
    from nutch2.fetch.fetchclaim import claim_value
    from nutch2.marks import Mark
    from nutch2.rowkeys import CLAIM
    from nutch2.status import CrawlStatus
    from nutch2.stores import open_store
    from nutch2.stores.query import Query
    from nutch2.urls.tableutil import unreverse_url
    from nutch2.webpage import WebPage

    store = open_store(Configuration(REPO / "conf", {"storage.data.dir": data}), "b", create=False)
    by_host: dict[str, list[tuple[WebPage, str]]] = collections.defaultdict(list)
    for page in store.read(Query(("markers", "metadata"), None)):
        url = unreverse_url(page.key)
        by_host[url.split("/")[2]].append((page, url))

    async def main() -> None:
        loop = asyncio.get_running_loop()
        pending: list[tuple[str, WebPage, asyncio.Future[None]]] = []
        writing = False

        async def drain() -> None:
            nonlocal pending, writing
            while pending:
                batch, pending = pending, []

                def write(batch: list[Any] = batch) -> None:
                    for key, claim, _ in batch:
                        store.put(key, claim)
                    store.flush()

                await loop.run_in_executor(None, write)
                for _, _, done in batch:
                    done.set_result(None)
            writing = False

        async def claim(page: WebPage) -> None:
            nonlocal writing
            row = WebPage.from_store(page.key, {})
            row.metadata = {**page.metadata, CLAIM: claim_value(page.markers.get(Mark.GENERATE.value, ""), "prototype")}
            done: asyncio.Future[None] = loop.create_future()
            pending.append((page.key, row, done))
            if not writing:
                writing = True
                loop.create_task(drain())
            await done

        slots = asyncio.Semaphore(threads)
        connector = aiohttp.TCPConnector(limit=threads, limit_per_host=1)
        async with aiohttp.ClientSession(connector=connector, auto_decompress=False) as session:
            async def host(items: list[tuple[WebPage, str]]) -> None:
                for page, url in items:
                    async with slots:
                        await claim(page)
                        async with session.get(url, allow_redirects=False) as resp:
                            out = WebPage.from_store(page.key, {})
                            out.content = await resp.read()
                            out.status = CrawlStatus.FETCHED
                            out.content_type = resp.headers.get("Content-Type")
                            out.headers = dict(resp.headers)
                            Mark.FETCH.put(out, page.markers.get(Mark.GENERATE.value, ""))
                            store.put(page.key, out)

            await asyncio.gather(*(host(items) for items in by_host.values()))
        await loop.run_in_executor(None, store.flush)

    asyncio.run(main())
    wanted = sum(len(items) for items in by_host.values())
    batches = {page.markers.get(Mark.GENERATE.value, "") for items in by_host.values() for page, _ in items}
    done = sum(1 for b in batches for _ in store.read(Query(("status",), (Mark.FETCH.value, b))))
    store.close()
    if done != wanted:  # the figure would be of less work than nutch2's
        raise SystemExit(f"bench.eventloop: the prototype fetched {done} of {wanted} pages")


def _timed(cmd: list[str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the command's process tree)."""
    cpu, t = _children_cpu(), time.perf_counter()
    subprocess.run(cmd, cwd=REPO, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t, _children_cpu() - cpu


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.eventloop", description=__doc__.splitlines()[0])
    ap.add_argument("--hosts", type=int, default=50)
    ap.add_argument("--pages", type=int, default=100)
    ap.add_argument("--threads", type=int, default=16)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--prototype", metavar="DATA_DIR", help=argparse.SUPPRESS)  # the child process's part
    args = ap.parse_args(argv)
    if args.prototype:
        _prototype(args.prototype, args.threads)
        return 0
    from bench.deps import ensure

    ensure(need_scrapy=False)
    try:
        import aiohttp  # noqa: F401
    except ImportError:
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "aiohttp"], check=True)
    web = generate_web(args.hosts, args.pages)
    base = _tmp("eventloop")
    results: dict[str, list[tuple[float, float]]] = {"nutch2 fetch": [], "event-loop prototype": []}
    try:
        with Nginx(web) as nginx:
            seeds = base / "seeds.txt"
            seeds.write_text("\n".join(nginx.url(h, p) for h in range(args.hosts) for p in range(args.pages)) + "\n")
            table = base / "table"
            for step in (["inject", str(seeds)], ["generate", "-topN", str(web.total + 10)]):
                subprocess.run(NUTCH2 + [*step, "-crawlId", "b"] + _defines(table, mapreduce_job_tasks=None),
                               cwd=REPO, check=True, capture_output=True)
            from bench.benchmarks import default_tasks

            per_task = max(1, args.threads // default_tasks())
            for i in range(args.runs):
                for who in results:
                    run_dir = base / f"run{i}-{len(results[who])}-{who[0]}"
                    shutil.copytree(table, run_dir)
                    if who == "nutch2 fetch":
                        cmd = NUTCH2 + ["fetch", "-all", "-crawlId", "b", "-threads", str(per_task)] + _defines(
                            run_dir, mapreduce_job_tasks=None)
                    else:
                        cmd = [sys.executable, "-m", "bench.eventloop", "--threads", str(args.threads),
                               "--prototype", str(run_dir)]
                    wall, cpu = _timed(cmd)
                    results[who].append((wall, cpu))
                    print(f"run {i + 1}: {who}: {wall:.2f} s, {cpu / web.total * 1000:.2f} ms CPU a page",
                          file=sys.stderr, flush=True)
                    shutil.rmtree(run_dir, ignore_errors=True)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    print(f"| {args.hosts} hosts x {args.pages} pages, T={args.threads} | wall s (median) | CPU ms a page (median) |")
    print("|---|---|---|")
    for who, rs in results.items():
        print(f"| {who} | {median(w for w, _ in rs):.2f} | {median(c for _, c in rs) / web.total * 1000:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
