"""Issue 38's figure: a whole crawl's pages/s over HTTPS with HTTP/2 (http.useHttp2=true) and without (HTTP/1.1
over TLS), on the static synthetic web served by nginx over TLS with HTTP/2 on (a self-signed certificate made
here, trusted through SSL_CERT_FILE), and the same web over plain HTTP for reference.

    python -m bench.http2 [--quick] [--runs 1] [--hosts 50] [--pages 100] [--threads 16] [--out FILE]
"""

from __future__ import annotations

import argparse
import re
import resource
import shutil
import sys

from bench.benchmarks import NUTCH2, REPO, _defines, _emit, _header, _tmp
from bench.measure import loadavg, median, run
from bench.web import PORT, Nginx, generate_web


def _crawl(seeds, threads: int, total: int, env: dict[str, str], **props: object) -> dict:
    """One whole crawl: its pages, wall seconds, CPU seconds (its process tree's, from rusage) and peak RSS."""
    data = _tmp("http2-crawl")
    try:
        cmd = NUTCH2 + ["crawl", str(seeds), "-crawlId", "bench", "-rounds", "6", "-topN", str(total + 10),
                        "-threads", str(threads)] + _defines(data, mapreduce_framework_name="local", **props)
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        r = run(cmd, env=env, cwd=REPO)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
        m = re.search(r"crawl: bench: (\d+) URLs: (.*)", r.stdout)
        counts = dict(kv.split("=") for kv in m.group(2).split()) if m else {}
        if r.returncode != 0 or not m:
            raise RuntimeError(f"crawl failed: {r.stderr[-800:]}")
        return {"seconds": r.seconds, "pages": int(counts.get("FETCHED", 0)), "rss": r.peak_rss_mb, "cpu": cpu}
    finally:
        shutil.rmtree(data, ignore_errors=True)


def _speaks_h2(url: str) -> bool:
    """Whether nutch2's HTTP/2 client gets h2 from the server (ALPN), as the crawl with http.useHttp2 does."""
    from nutch2.plugins.protocol_http.http2 import Http2Client

    client = Http2Client(None)
    try:
        resp = client.get(url, {"User-Agent": "bench"}, 5.0, 5.0)
        if resp is not None:
            resp.close()
        return resp is not None
    finally:
        client.close()


def bench_http2(quick: bool = False, runs: int = 1, hosts: int | None = None, pages: int | None = None,
                threads: int = 16) -> str:
    """pages/s and CPU ms per page of `nutch2 crawl` (local runner, one fetch task of `threads` threads): HTTP/2
    and HTTP/1.1 over TLS and HTTP/1.1 without TLS (the same web on the next port), interleaved run by run."""
    import os

    from tests.tlsweb import make_cert  # the test web's certificate maker (cryptography, a test dependency)

    hosts, pages = hosts or (4 if quick else 50), pages or (20 if quick else 100)
    tls_web = generate_web(hosts, pages, scheme="https")
    plain_web = generate_web(hosts, pages, port=PORT + 1)
    folder = _tmp("http2-tls")
    cert, key = make_cert(folder, tuple(tls_web.addrs()))
    env = {"SSL_CERT_FILE": str(cert)}
    lines = _header(f"http2: crawl pages/s with and without HTTP/2 over TLS ({hosts} hosts x {pages} pages = "
                    f"{tls_web.total}, nginx)", f"python -m bench.http2 --runs {runs} --hosts {hosts} --pages "
                    f"{pages} --threads {threads}" + (" --quick" if quick else ""))
    results: dict[str, list[dict]] = {"HTTP/2 over TLS": [], "HTTP/1.1 over TLS": [], "HTTP/1.1, no TLS": []}
    os.environ["SSL_CERT_FILE"] = str(cert)  # for the check below, in this process
    try:
        with Nginx(tls_web, tls=(cert, key)) as tls_nginx, Nginx(plain_web) as plain_nginx:
            seeds, plain_seeds = folder / "seeds.txt", folder / "seeds-plain.txt"
            seeds.write_text("\n".join(tls_nginx.seeds()) + "\n")
            plain_seeds.write_text("\n".join(plain_nginx.seeds()) + "\n")
            if not _speaks_h2(tls_nginx.url(0)):
                raise RuntimeError("nginx did not choose h2: no HTTP/2 to measure")
            modes = (("HTTP/2 over TLS", seeds, True), ("HTTP/1.1 over TLS", seeds, False),
                     ("HTTP/1.1, no TLS", plain_seeds, False))
            for i in range(runs):
                for name, seed_file, http2 in modes:
                    load = loadavg()
                    r = _crawl(seed_file, threads, tls_web.total, env, http_useHttp2=http2)
                    r["load"] = load
                    results[name].append(r)
                    print(f"http2 run {i + 1}: {name} {r['pages']} pages {r['seconds']:.1f} s {r['cpu']:.1f} s CPU",
                          file=sys.stderr, flush=True)
    finally:
        os.environ.pop("SSL_CERT_FILE", None)
        shutil.rmtree(folder, ignore_errors=True)
    lines += [f"`nutch2 crawl seeds -rounds 6 -threads {threads}` on sqlite, local runner (one fetch task), "
              "fetcher.server.delay 0, one thread per host queue; nginx 1 worker with `listen ... ssl http2` "
              "(ECDSA P-256 certificate), so the client's offer decides: http.useHttp2=true offers h2 and gets it, "
              "false offers http/1.1 only. pages/s = HTML pages fetched and parsed / wall time of the crawl process; "
              "CPU ms/page = the crawl's process tree's user + system time / pages (rusage), which other work on the "
              "machine moves much less than wall time. Runs interleaved.", "",
              "| protocol | pages | pages/s (median) | runs pages/s | CPU ms/page (median) | runs CPU ms/page "
              "| peak RSS MB | load at start | pages/s vs HTTP/1.1 over TLS |",
              "|---|---|---|---|---|---|---|---|---|"]
    rate = {k: median([r["pages"] / r["seconds"] for r in v]) for k, v in results.items()}
    for name, rs in results.items():
        vs = rate[name] / rate["HTTP/1.1 over TLS"]
        counts = "/".join(str(r["pages"]) for r in rs)
        rates = ", ".join(f"{r['pages'] / r['seconds']:.0f}" for r in rs)
        cpus = [1000 * r["cpu"] / max(r["pages"], 1) for r in rs]
        loads = " ".join(f"{r['load']:.1f}" for r in rs)
        rss = median([r["rss"] for r in rs])
        lines.append(f"| {name} | {counts} | {rate[name]:.0f} | {rates} | {median(cpus):.1f} | "
                     f"{', '.join(f'{c:.1f}' for c in cpus)} | {rss:.0f} | {loads} | {vs:.2f}x |")
    lines += ["", f"load average at end {loadavg():.2f}", ""]
    return _emit(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.http2", description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="a tiny web: a smoke test, not a figure")
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--hosts", type=int)
    ap.add_argument("--pages", type=int)
    ap.add_argument("--threads", type=int, default=16)
    ap.add_argument("--out", help="append the markdown section to this file")
    args = ap.parse_args(argv)
    text = bench_http2(args.quick, args.runs, args.hosts, args.pages, args.threads)
    if args.out:
        with open(args.out, "a", encoding="utf-8") as f:
            f.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
