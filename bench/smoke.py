"""smoke(): run every benchmark once on a tiny web (--quick). Checks they run; asserts no time."""

from __future__ import annotations


def smoke() -> dict[str, str]:
    from bench import deps

    deps.ensure(need_scrapy=True, need_wrk=True)
    from bench.registry import BENCHMARKS

    return {name: fn(quick=True, runs=1) for name, fn in BENCHMARKS.items()}


if __name__ == "__main__":
    smoke()
