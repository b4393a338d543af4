"""Micro-benchmark of the URL normalizer: `python -m bench.normalizer [N]` (default 100 000 URLs).

A deterministic mix like a crawl's outlinks: 80% already in normal form (the fast path), 20% needing work
(upper-case hosts, default ports, dot segments, repeated slashes, %-escapes, spaces, IDN hosts, user info).
Reports the best of 3 runs with a cold cache (every URL new) and one run where every URL hits the cache.
"""

from __future__ import annotations

import random
import sys
import time


def urls(n: int, seed: int = 15) -> list[str]:
    rng = random.Random(seed)
    hosts = [f"www.site{i}.example.com" for i in range(200)] + [f"news{i}.example.co.uk" for i in range(50)]
    odd = ["HTTP://WWW.Site{i}.Example.COM/A/../b.html", "http://www.site{i}.example.com:80/x/./y.html",
           "http://www.site{i}.example.com//a//b.html", "http://www.site{i}.example.com/%7euser/%41%62",
           "http://www.site{i}.example.com/you too.html", "http://b\u00fccher{i}.de/seite",
           "https://user@www.site{i}.example.com/login?next=/a b", "http://www.site{i}.example.com/a#frag"]
    out = []
    for i in range(n):
        if i % 5 == 4:
            out.append(rng.choice(odd).format(i=i) + f"?p={i}")
        else:
            host = rng.choice(hosts)
            out.append(f"https://{host}/section{rng.randrange(50)}/page{i}.html" + (f"?id={i}" if i % 3 else ""))
    return out


def main() -> int:
    from nutch2.plugins.urlnormalizer_basic import normalizer as urlnormalizer

    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    data = urls(n)
    cold = []
    for _ in range(3):
        urlnormalizer._basic_normalize.cache_clear()
        start = time.perf_counter()
        for url in data:
            urlnormalizer.normalize(url)
        cold.append(time.perf_counter() - start)
    urlnormalizer._basic_normalize.cache_clear()
    subset = data[:50_000]
    for url in subset:
        urlnormalizer.normalize(url)
    start = time.perf_counter()
    for url in subset:
        urlnormalizer.normalize(url)
    warm = time.perf_counter() - start
    best = min(cold)
    print(f"{n} URLs, cold cache: best {best:.3f} s ({n / best:,.0f} URLs/s, {best / n * 1e6:.2f} us/URL); "
          f"cache hits: {warm / len(subset) * 1e6:.2f} us/URL")
    return 0


if __name__ == "__main__":
    sys.exit(main())
