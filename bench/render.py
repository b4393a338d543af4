"""Issue 40's figures for chromium.mode: a fetch of a mixed web (mostly server-rendered pages with decorative
scripts, some hosts that are single-page apps) with every page rendered (chromium.mode=always) against rendering
only what needs it (chromium.mode=auto): pages/s and the browsers' peak RSS, runs interleaved
(python -m bench render)."""

from __future__ import annotations

import re
import shutil
import sys
import tempfile
import threading
from collections import defaultdict
from pathlib import Path

from bench.benchmarks import NUTCH2, REPO, _defines, _emit, _header, _inject_generate, _job_seconds, _tmp
from bench.measure import loadavg, median, run
from bench.web import Nginx, Web, host_addr

PORT = 18793  # not bench/web.py's, so that other benchmarks may run beside this one

ARTICLE = ("The harbour town kept its ledgers in the old customs house, where the clerks recorded every ship, cargo "
           "and toll by hand, and the ledgers themselves were bound in leather from the tannery by the river. ")
DECORATIVE = ("<script async src='/static/analytics.js'></script><script>window.dataLayer=window.dataLayer||[];"
              "function gtag(){dataLayer.push(arguments)}gtag('js',new Date());gtag('config','UA-1');</script>")


def _server_page(h: int, n: int, pages: int) -> str:
    links = "".join(f"<a href='/p/{(n + k) % pages or 1}.html'>page {(n + k) % pages}</a> " for k in range(1, 6))
    return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>host {h} page {n}</title></head><body>"
            f"<h1>Page {n}</h1>{''.join(f'<p>{ARTICLE}</p>' for _ in range(25))}{links}{DECORATIVE}</body></html>")


def _app_page(h: int, n: int) -> str:
    return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>app {h}</title></head><body>"
            "<noscript>You need to enable JavaScript to run this app.</noscript><div id='root'></div>"
            f"<script>window.__PAGE__ = {n};</script><script src='/static/bundle.js'></script></body></html>")


BUNDLE = ("var n = window.__PAGE__, html = '<h1>App page ' + n + '</h1>';"
          "for (var i = 0; i < 25; i++) html += '<p>Rendered paragraph ' + i + ' of page ' + n + '.</p>';"
          "for (var k = 1; k < 6; k++) html += '<a href=\"/p/' + (n + k) + '.html\">next</a> ';"
          "document.getElementById('root').innerHTML = html;")


def mixed_web(hosts: int, pages: int, apps: int) -> Web:
    """`hosts` hosts of `pages` pages under a temp dir; the first `apps` hosts are single-page apps."""
    root = Path(tempfile.mkdtemp(prefix="nutch2-bench-render-web-"))
    for h in range(hosts):
        d = root / host_addr(h)
        (d / "p").mkdir(parents=True)
        (d / "static").mkdir()
        (d / "static" / "analytics.js").write_text("window.analyticsLoaded = true;")
        (d / "static" / "bundle.js").write_text(BUNDLE)
        for n in range(pages):
            body = _app_page(h, n) if h < apps else _server_page(h, n, pages)
            (d / ("index.html" if n == 0 else f"p/{n}.html")).write_text(body)
    return Web(hosts, pages, root, PORT)


class _BrowserPeak:
    """Peak summed RSS and PSS of the chromium processes under this process while a block runs (every 100 ms)."""

    def __init__(self) -> None:
        self.rss = self.pss = 0
        self._stop = threading.Event()

    def __enter__(self) -> _BrowserPeak:
        threading.Thread(target=self._run, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()

    def _run(self) -> None:
        import psutil

        me = psutil.Process()
        while not self._stop.wait(0.1):
            rss = pss = 0
            for p in me.children(recursive=True):
                try:
                    if p.name().startswith("chrom"):
                        info = p.memory_full_info()
                        rss += info.rss
                        pss += getattr(info, "pss", info.rss)
                except psutil.Error:
                    pass
            self.rss, self.pss = max(self.rss, rss), max(self.pss, pss)


def bench_render(quick: bool = False, runs: int = 3) -> str:
    hosts, pages, apps = (3, 4, 1) if quick else (8, 10, 2)
    web = mixed_web(hosts, pages, apps)
    total = hosts * pages
    # listed, with no pattern: nothing rendered, the plain fetch the other two are measured against
    variants = {"always": {"chromium_mode": "always"}, "auto": {"chromium_mode": "auto"},
                "listed": {"chromium_mode": "listed"}}
    lines = _header("issue 40: chromium.mode=auto vs always", "python -m bench render" + (" --quick" if quick else ""))
    lines += [f"Fetch job of {total} HTML pages on {hosts} hosts (nginx, no delay, 8 fetcher threads, 1 task, sqlite, "
              f"a fresh crawl each run): {hosts - apps} hosts of server-rendered pages (25 paragraphs, an inline and "
              f"an external decorative script), {apps} hosts of single-page-app skeletons (an empty root filled by an "
              "external bundle, a noscript asking for JavaScript). chromium.pool.size=2, page.load.delay=0. "
              "pages/s = pages / the fetch job's own elapsed time; browser peak RSS = the chromium processes' RSS "
              "summed (a page shared by two processes counted twice), browser peak PSS = the same with shared "
              "pages split between the processes, sampled every 100 ms; tree = nutch2 and its browsers (PSS). "
              "Modes alternate run by run; listed (no pattern: nothing rendered) is the plain fetch.", "",
              "| chromium.mode | pages | rendered | pages/s (median) | runs | browser peak RSS MB | "
              "browser peak PSS MB | tree peak PSS MB | load |", "|---|---|---|---|---|---|---|---|---|"]
    results: dict[str, list[tuple[float, float, float, float, int, float]]] = defaultdict(list)
    nginx = Nginx(web)
    try:
        nginx.start()
        urls = [nginx.url(h, n) for h in range(hosts) for n in range(pages)]
        for _ in range(runs):
            for name, extra in variants.items():
                data = _tmp("render")
                props = {"chromium_pool_size": 2, "page_load_delay": 0,
                         "fetcher_address_allow": "127.77.0.0/16", **extra}
                try:
                    batch = _inject_generate(data, urls)
                    load = loadavg()
                    with _BrowserPeak() as browsers:
                        r = run(NUTCH2 + ["fetch", batch, "-crawlId", "bench", "-threads", "8"]
                                + _defines(data, **props), cwd=REPO)
                    m = re.search(r"^fetch: finished in ([\d.]+) s: (.*)$", r.stderr, re.M)
                    assert m, r.stderr[-800:]
                    rendered = re.search(r"chromium_rendered=(\d+)", m.group(2))
                    failed = re.search(r"chromium_failed=(\d+)", m.group(2))
                    assert not failed, r.stderr[-1500:]
                    results[name].append((total / _job_seconds(m.group(1)), browsers.rss / 2**20,
                                          browsers.pss / 2**20, r.peak_pss_mb,
                                          int(rendered.group(1)) if rendered else 0, load))
                    print(f"render {name}: {results[name][-1]}", file=sys.stderr, flush=True)
                finally:
                    shutil.rmtree(data, ignore_errors=True)
    finally:
        nginx.cleanup()
        shutil.rmtree(web.root, ignore_errors=True)
    for name, rs in results.items():
        lines.append(f"| {name} | {total} | {median([r[4] for r in rs]):.0f} | {median([r[0] for r in rs]):.2f} | "
                     f"{', '.join(f'{r[0]:.2f}' for r in rs)} | {median([r[1] for r in rs]):.0f} | "
                     f"{median([r[2] for r in rs]):.0f} | {median([r[3] for r in rs]):.0f} | "
                     f"{' '.join(f'{r[5]:.1f}' for r in rs)} |")
    always, auto, listed = (median([r[0] for r in results[k]]) for k in variants)
    lines += ["", f"auto / always: {auto / always:.2f}x the pages/s; auto / listed (no rendering): "
              f"{auto / listed:.2f}x", "", f"load average at end {loadavg():.2f}", ""]
    return _emit(lines)
