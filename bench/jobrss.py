"""Peak RSS per job of one `nutch2 crawl` of the synthetic web: which job holds the crawl's memory peak.

    python -m bench.jobrss [--hosts 50] [--pages 100] [--threads 16] [-D key=value ...]

Runs the crawl in this process (nutch2's CLI entry point, the local runner) with a thread sampling RSS every
10 ms, attributed to the job running at that moment (fetch3 = the third fetch job) or to the gap after it
(after-fetch3).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

from bench.web import Nginx, generate_web


def main(argv: list[str] | None = None) -> int:
    import psutil

    from nutch2.cli import main as nutch2_main
    from nutch2.mapred import runner

    ap = argparse.ArgumentParser(prog="python -m bench.jobrss", description=__doc__.splitlines()[0])
    ap.add_argument("--hosts", type=int, default=50)
    ap.add_argument("--pages", type=int, default=100)
    ap.add_argument("--threads", type=int, default=16)
    ap.add_argument("-D", dest="defines", action="append", default=[], help="extra nutch2 property")
    args = ap.parse_args(argv)

    current = ["start"]
    peaks: dict[str, float] = {}
    stop = threading.Event()
    proc = psutil.Process()

    def note() -> None:
        rss = proc.memory_info().rss / 2**20
        name = current[0]
        peaks[name] = max(peaks.get(name, 0.0), rss)

    def sample() -> None:
        while not stop.is_set():
            note()
            stop.wait(0.01)

    seen: dict[str, int] = {}
    original = runner.LocalRunner.run

    def run(self, job, store, counters=None):  # type: ignore[no-untyped-def]
        seen[job.name] = seen.get(job.name, 0) + 1
        current[0] = f"{job.name}{seen[job.name]}"
        note()  # a job shorter than the sampling interval is in the table too
        try:
            return original(self, job, store, counters)
        finally:
            note()
            current[0] = f"after-{job.name}{seen[job.name]}"

    runner.LocalRunner.run = run  # type: ignore[method-assign]
    web = generate_web(args.hosts, args.pages)
    data = Path(tempfile.mkdtemp(prefix="nutch2-bench-jobrss-"))
    try:
        with Nginx(web) as nginx:
            seeds = data / "seeds.txt"
            seeds.write_text("\n".join(nginx.seeds()) + "\n")
            props = {"storage.data.dir": data / "crawl", "http.agent.name": "bench", "fetcher.server.delay": 0,
                     "fetcher.server.min.delay": 0, "fetcher.threads.per.queue": 1, "mapreduce.job.tasks": 1,
                     "fetcher.progress.interval": 3600, "mapreduce.framework.name": "local",  # jobs in this process
                     "fetcher.address.allow": "127.77.0.0/16"}  # the bench web's hosts, for the address guard
            defines = [x for k, v in props.items() for x in ("-D", f"{k}={v}")]
            for d in args.defines:
                defines += ["-D", d]
            threading.Thread(target=sample, daemon=True).start()
            t0 = time.monotonic()
            rc = nutch2_main(["crawl", str(seeds), "-crawlId", "bench", "-rounds", "6", "-topN",
                              str(web.total + 10), "-threads", str(args.threads), *defines])
            seconds = time.monotonic() - t0
            time.sleep(0.05)
            stop.set()
    finally:
        runner.LocalRunner.run = original  # type: ignore[method-assign]
        stop.set()
        shutil.rmtree(data, ignore_errors=True)
    top = max(peaks, key=peaks.__getitem__)
    print(f"\ncrawl of {web.total} pages, T={args.threads}: exit {rc}, {seconds:.1f} s, peak RSS "
          f"{peaks[top]:.1f} MB in {top}")
    print("| job | peak RSS MB |\n|---|---|")
    for name, mb in peaks.items():
        print(f"| {name} | {mb:.1f} |")
    return rc


if __name__ == "__main__":
    sys.exit(main())
