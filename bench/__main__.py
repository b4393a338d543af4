"""python -m bench <name|all> [--quick] [--runs N] [--out FILE]"""

from __future__ import annotations

import argparse
import sys

from bench import deps


def main(argv: list[str] | None = None) -> int:
    from bench.registry import BENCHMARKS  # after deps: imports nothing optional at module level

    ap = argparse.ArgumentParser(prog="python -m bench", description="nutch2 benchmarks (issue 5)")
    ap.add_argument("name", choices=[*BENCHMARKS, "all"])
    ap.add_argument("--quick", action="store_true", help="a tiny web, one run: a smoke test, not a figure")
    ap.add_argument("--runs", type=int, help="runs per figure (default 3; 1 with --quick)")
    ap.add_argument("--threads", type=int, nargs="+", help="crawl: thread counts (default 16 64)")
    ap.add_argument("--hosts", type=int, help="crawl: hosts of the web (default 200)")
    ap.add_argument("--pages", type=int, help="crawl: pages per host (default 100)")
    ap.add_argument("--frameworks", nargs="+", default=["default", "local", "processes"],
                    help="crawl: nutch2's runners (default: no -D, what nutch2 picks itself)")
    ap.add_argument("--shape", choices=("uniform", "real"), default="uniform",
                    help="crawl: uniform 20 KB pages, or a real-site-like web (5-100 KB, 10-200 links)")
    ap.add_argument("--baseline", metavar="PYTHON:CHECKOUT",
                    help="crawl, sparkcrawl: also crawl with another nutch2 (its python and checkout), e.g. an "
                         "older commit")
    ap.add_argument("--no-scrapy", action="store_true", help="crawl: nutch2 only (compared with the last crawler)")
    ap.add_argument("--out", help="append the markdown section(s) to this file")
    ap.add_argument("-D", dest="defines", action="append", default=[], metavar="KEY=VALUE",
                    help="a nutch2 property for every nutch2 command the benchmark runs (over the bench's own), e.g. "
                         "-D fetcher.server.delay.adaptive=true")
    args = ap.parse_args(argv)
    from bench import benchmarks

    for define in args.defines:
        key, sep, value = define.partition("=")
        if not sep or not key:
            ap.error(f"-D {define}: give KEY=VALUE")
        benchmarks.DEFINES[key.strip()] = value
    runs = args.runs or (1 if args.quick else 3)
    names = list(BENCHMARKS) if args.name == "all" else [args.name]
    deps.ensure(need_scrapy=("crawl" in names or "scrapypeer" in names) and not args.no_scrapy, need_wrk="web" in names)
    sections = []
    for name in names:
        kw = {}
        if name == "crawl":
            kw = {"threads": tuple(args.threads) if args.threads else None, "hosts": args.hosts, "pages": args.pages,
                  "frameworks": tuple(args.frameworks), "baseline": args.baseline, "scrapy": not args.no_scrapy,
                  "shape": args.shape}
        elif name in ("timeline", "scrapypeer"):
            kw = {"threads": args.threads[0] if args.threads else 16, "hosts": args.hosts, "pages": args.pages}
        elif name == "sparkcrawl":
            kw = {"baseline": args.baseline}
        sections.append(BENCHMARKS[name](quick=args.quick, runs=runs, **kw))
    if args.out:
        with open(args.out, "a") as f:
            f.write("\n".join(sections) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
