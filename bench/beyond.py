"""Issue 25's figures: documents/s through Tika (and PDFs through pypdf in process) against the HTML parser, and
rendered pages/s through Chromium against plain fetching, with the peak RSS of each (python -m bench beyond)."""

from __future__ import annotations

import re
import shutil
import sys
import threading
import time
from collections import defaultdict

from bench.benchmarks import (
    NUTCH2,
    REPO,
    _defines,
    _emit,
    _header,
    _inject_generate,
    _job_seconds,
    _put_rows,
    _tmp,
)
from bench.measure import loadavg, median, run
from bench.web import Nginx, generate_web, host_addr

TIKA_URL = "http://127.0.0.1:9998"


def _rows(n: int, batch: str, docs: list[tuple[bytes, str, str]]):
    """n fetched rows of the batch, cycling through (content, content type, file suffix)."""
    from nutch2.status import CrawlStatus
    from nutch2.urls.tableutil import reverse_url
    from nutch2.webpage import WebPage

    now = int(time.time() * 1000)
    for i in range(n):
        content, ctype, suffix = docs[i % len(docs)]
        url = f"http://{host_addr(i % 50)}:18777/d/{i}{suffix}"
        yield WebPage(reverse_url(url), status=int(CrawlStatus.FETCHED), fetch_time=now, score=1.0,
                      fetch_interval=2592000, content=content, content_type=ctype, base_url=url,
                      markers={"_gnmrk_": batch, "_ftcmrk_": batch, "dist": "1"})


def _tika_pids() -> list[int]:
    """The Tika server's process tree (docker/services.sh start tika), to sample its RSS too."""
    import psutil

    for conn in psutil.net_connections("tcp"):
        if conn.laddr and conn.laddr.port == 9998 and conn.status == psutil.CONN_LISTEN and conn.pid:
            root = psutil.Process(conn.pid)
            return [root.pid] + [c.pid for c in root.children(recursive=True)]
    return []


class _PeakRSS:
    """Peak summed RSS of some processes while a block runs (every 100 ms)."""

    def __init__(self, pids: list[int]) -> None:
        self.pids = pids
        self.peak = 0
        self._stop = threading.Event()

    def __enter__(self) -> _PeakRSS:
        threading.Thread(target=self._run, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()

    def _run(self) -> None:
        import psutil

        while not self._stop.wait(0.1):
            total = 0
            for pid in list(self.pids):
                try:
                    p = psutil.Process(pid)
                    total += p.memory_info().rss + sum(c.memory_info().rss for c in p.children(recursive=True))
                except psutil.Error:
                    pass
            self.peak = max(self.peak, total)


def bench_beyond(quick: bool = False, runs: int = 3) -> str:
    sys.path.insert(0, str(REPO))
    from tests.documents import DOCUMENT_TYPES, DocSpec, make

    web = generate_web(4 if quick else 50, 10 if quick else 40)
    html = (web.root / host_addr(0) / "p" / "1.html").read_bytes()
    spec = DocSpec("Benchmark report", "Ada Lovelace", "quixbenchzor", "http://127.0.0.1:1/next.html")
    docs = [(make(kind, spec), ctype, suffix) for kind, (suffix, ctype) in DOCUMENT_TYPES.items()]
    pdf = [d for d in docs if d[2] == ".pdf"]
    sizes = {"html": 50 if quick else 3000, "tika": 12 if quick else 120, "pdf": 12 if quick else 300}
    tika = _tika_pids()
    variants = {
        "parse-html, 20 KB pages": ("html", [(html, "text/html", ".html")], {}),
        "parse-tika, 6 formats (PDF DOCX XLSX ODT PPTX EPUB)": ("tika", docs, {"tika_server_url": TIKA_URL}),
        "parse-tika, the same, 2 tasks": ("tika", docs, {"tika_server_url": TIKA_URL, "mapreduce_job_tasks": 2}),
        "parse-pdf (pypdf in process)": ("pdf", pdf, {}),
    }
    lines = _header("issue 25: documents through Tika, pages through Chromium", "python -m bench beyond"
                    + (" --quick" if quick else ""))
    lines += ["Parse job, local runner, 1 task (unless said), sqlite: documents/s = rows / the job's own elapsed "
              "time. Peak RSS of the nutch2 process tree and, for parse-tika, of the Tika server's (front + 2 parser "
              "JVMs, docker/services.sh start tika; the server's JVMs were warm). Document sizes: "
              + ", ".join(f"{s.lstrip('.')} {len(c) // 1024 or 1} KB" for c, _, s in docs) + ".", "",
              "| parser | rows | docs/s (median) | runs | nutch2 peak RSS MB | Tika server peak RSS MB | load |",
              "|---|---|---|---|---|---|---|"]
    results: dict[str, list[tuple[float, float, float, float]]] = defaultdict(list)
    for _ in range(runs):
        for name, (size_key, sample, extra) in variants.items():
            if size_key == "tika" and not tika:
                continue
            n = sizes[size_key]
            data = _tmp("beyond")
            try:
                _put_rows(data, _rows(n, "b1", sample))
                load = loadavg()
                with _PeakRSS(tika if size_key == "tika" else []) as server:
                    r = run(NUTCH2 + ["parse", "b1", "-crawlId", "bench"] + _defines(data, **extra), cwd=REPO)
                m = re.search(r"^parse: finished in ([\d.]+) s: (.*)$", r.stderr, re.M)
                assert m and f"parsed={n}" in m.group(2), r.stderr[-500:]
                results[name].append((n / _job_seconds(m.group(1)), r.peak_rss_mb, server.peak / 2**20, load))
                print(f"beyond {name}: {results[name][-1]}", file=sys.stderr, flush=True)
            finally:
                shutil.rmtree(data, ignore_errors=True)
    for name, (size_key, _, _) in variants.items():
        rs = results.get(name)
        if not rs:
            lines.append(f"| {name} | - | not measured: no Tika server at {TIKA_URL} | | | | |")
            continue
        lines.append(f"| {name} | {sizes[size_key]} | {median([r[0] for r in rs]):.1f} | "
                     f"{', '.join(f'{r[0]:.1f}' for r in rs)} | {median([r[1] for r in rs]):.0f} | "
                     f"{median([r[2] for r in rs]):.0f} | {' '.join(f'{r[3]:.1f}' for r in rs)} |"
                     if size_key == "tika" else
                     f"| {name} | {sizes[size_key]} | {median([r[0] for r in rs]):.1f} | "
                     f"{', '.join(f'{r[0]:.1f}' for r in rs)} | {median([r[1] for r in rs]):.0f} | - | "
                     f"{' '.join(f'{r[3]:.1f}' for r in rs)} |")
    lines += ["", *_chromium(quick, runs, web), "", f"load average at end {loadavg():.2f}", ""]
    return _emit(lines)


def _chromium(quick: bool, runs: int, web) -> list[str]:
    """Fetch of one batch of HTML pages, with and without protocol-chromium (pool of 2 browsers)."""
    hosts, pages = (4, 3) if quick else (50, 4)
    lines = [f"Fetch job of {hosts * pages} HTML pages ({hosts} hosts, nginx, 8 fetcher threads, no delay), with every "
             "page rendered in headless chromium (chromium.url.pattern=., chromium.pool.size=2, page.load.delay=0, "
             "the rendered DOM kept) and without. pages/s = pages / the fetch job's elapsed time; peak RSS of the "
             "process tree (nutch2 and its chromium processes).", "",
             "| fetch | pages | pages/s (median) | runs | peak RSS MB (median) | load |", "|---|---|---|---|---|---|"]
    variants = {"plain HTTP": {}, "protocol-chromium": {"chromium_url_pattern": ".", "chromium_pool_size": 2,
                                                        "page_load_delay": 0}}
    results: dict[str, list[tuple[float, float, float]]] = defaultdict(list)
    failures: list[str] = []
    for _ in range(runs):
        for name, extra in variants.items():
            data = _tmp("chromium")
            nginx = Nginx(web)
            try:
                nginx.start()
                urls = [nginx.url(h, n) for h in range(hosts) for n in range(pages)]
                batch = _inject_generate(data, urls)
                load = loadavg()
                r = run(NUTCH2 + ["fetch", batch, "-crawlId", "bench", "-threads", "8"] + _defines(data, **extra),
                        cwd=REPO)
                m = re.search(r"^fetch: finished in ([\d.]+) s: (.*)$", r.stderr, re.M)
                assert m, r.stderr[-500:]
                if name == "protocol-chromium":  # every page rendered, or the reasons why not
                    failed = re.findall(r"^.*chromium: \S+ not rendered \((.*)\);", r.stderr, re.M)
                    assert f"chromium_rendered={len(urls)}" in m.group(2) or (
                        failed and f"chromium_rendered={len(urls) - len(failed)}" in m.group(2)), r.stderr[-1500:]
                    failures += failed
                results[name].append((len(urls) / _job_seconds(m.group(1)), r.peak_rss_mb, load))
                print(f"beyond {name}: {results[name][-1]}", file=sys.stderr, flush=True)
            finally:
                nginx.cleanup()
                shutil.rmtree(data, ignore_errors=True)
    for name, rs in results.items():
        lines.append(f"| {name} | {hosts * pages} | {median([r[0] for r in rs]):.1f} | "
                     f"{', '.join(f'{r[0]:.1f}' for r in rs)} | {median([r[1] for r in rs]):.0f} | "
                     f"{' '.join(f'{r[2]:.1f}' for r in rs)} |")
    plain, chrome = (median([r[0] for r in results[k]]) for k in variants)
    lines += ["", f"protocol-chromium / plain HTTP: {chrome / plain:.3f}x the pages/s"]
    if failures:  # kept as fetched (counted in pages/s): say how many and why
        lines += ["", f"pages not rendered (their fetched HTML kept): {len(failures)}: "
                  + "; ".join(sorted(set(failures)))]
    return lines
