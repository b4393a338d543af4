"""The benchmarks `python -m bench` runs, by name (bench/benchmarks.py, bench/beyond.py for documents and rendered
pages, which imports the test web's document writers only when it runs, bench/index.py for Solr vs OpenSearch and
bench/warcrevisits.py for revisit exports)."""

from __future__ import annotations

from collections.abc import Callable

from bench.benchmarks import (
    bench_crawl,
    bench_memory,
    bench_parse,
    bench_politeness,
    bench_spark,
    bench_sparkcrawl,
    bench_tablesize,
    bench_warc,
    bench_web,
)


def _index(quick: bool = False, runs: int = 1) -> str:
    from bench.index import bench_index  # issue 36

    return bench_index(quick, runs)


def _warcrevisits(quick: bool = False, runs: int = 1) -> str:
    from bench.warcrevisits import bench_warc_revisits  # issue 40

    return bench_warc_revisits(quick, runs)


def _signature(quick: bool = False, runs: int = 3) -> str:
    from bench.signature import bench_signature  # issue 40

    return bench_signature(quick, runs)


def _boilerplate(quick: bool = False, runs: int = 3) -> str:
    from bench.boilerplate import bench_boilerplate  # issue 40

    return bench_boilerplate(quick, runs)


def _beyond(quick: bool = False, runs: int = 3) -> str:
    from bench.beyond import bench_beyond  # issue 25

    return bench_beyond(quick, runs)


def _render(quick: bool = False, runs: int = 3) -> str:
    from bench.render import bench_render  # issue 40

    return bench_render(quick, runs)


def _timeline(quick: bool = False, runs: int = 1, **kw: object) -> str:
    from bench.pipeline import bench_timeline  # issue 37

    return bench_timeline(quick, runs, **kw)


def _scrapypeer(quick: bool = False, runs: int = 3, **kw: object) -> str:
    from bench.pipeline import bench_scrapypeer  # issue 37

    return bench_scrapypeer(quick, runs, **kw)


BENCHMARKS: dict[str, Callable[..., str]] = {
    "web": bench_web,
    "crawl": bench_crawl,
    "politeness": bench_politeness,
    "memory": bench_memory,
    "tablesize": bench_tablesize,
    "parse": bench_parse,
    "spark": bench_spark,
    "sparkcrawl": bench_sparkcrawl,
    "warc": bench_warc,
    "warcrevisits": _warcrevisits,
    "beyond": _beyond,
    "index": _index,
    "signature": _signature,
    "render": _render,
    "boilerplate": _boilerplate,
    "timeline": _timeline,
    "scrapypeer": _scrapypeer,
}
