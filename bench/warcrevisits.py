"""`python -m bench warcrevisits` (issue 40): `nutch2 warc` of a batch, then of its recrawl with every page unchanged
(200 with the same body, as a server without conditional requests answers): responses, then revisits into the same
folder. Records/s, MB written and payload bytes not written again, and what the CDXJ indexes cost."""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

from bench.benchmarks import NUTCH2, REPO, _defines, _emit, _header, _put_rows, _tmp, _url_rows
from bench.measure import loadavg
from bench.measure import run as run_cmd
from bench.web import generate_web, host_addr

PORT = 18777


def _export(data: Path, out: Path, batch: str, extra: dict, *flags: str) -> tuple[float, float, float, str]:
    """One export: its own seconds, its wall seconds, the MB of WARC it wrote, its summary line."""
    before = {p.name for p in out.glob("*.warc.gz")} if out.exists() else set()
    r = run_cmd(NUTCH2 + ["warc", str(out), batch, "-crawlId", "bench", *flags] + _defines(data, **extra), cwd=REPO)
    line = re.search(r"^warc: finished in ([\d.]+) s.*$", r.stderr, re.M)
    size = sum(p.stat().st_size for p in out.glob("*.warc.gz") if p.name not in before) / 1e6
    return float(line.group(1)), r.seconds, size, line.group(0)


def _counter(line: str, name: str) -> int:
    m = re.search(rf"\b{name}=(\d+)", line)
    return int(m.group(1)) if m else 0


def bench_warc_revisits(quick: bool = False, runs: int = 1) -> str:
    """The export of a batch and of its unchanged recrawl, per runner (one run each: figures, not medians)."""
    n = 300 if quick else 5000
    web = generate_web(4 if quick else 200, 20 if quick else 100)
    content = (web.root / host_addr(0) / "p" / "1.html").read_bytes()
    variants = {"local, 1 task": {"mapreduce_job_tasks": 1},
                "processes, 2 workers": {"mapreduce_framework_name": "processes", "mapreduce_job_tasks": 2}}
    lines = _header(f"warcrevisits: a batch of {n:,} fetched pages ({len(content) // 1024} KB HTML) exported, then its "
                    "unchanged recrawl, sqlite", "python -m bench warcrevisits" + (" --quick" if quick else ""))
    lines += ["records/s = pages / the export's own elapsed time ('warc: finished in X s'), wall time in brackets; "
              "the first export writes a response per page, the recrawl's (into the same folder) a revisit per page. "
              "Both write their CDXJ indexes; the last column is the first export with -noCdxj (run before it, into a "
              "folder of its own). One run each.", "",
              "| runner | first export records/s | WARC MB | recrawl export records/s | revisits | WARC MB | "
              "payload MB not written again | first export -noCdxj records/s | load at start |",
              "|---|---|---|---|---|---|---|---|---|"]
    for name, extra in variants.items():
        for _ in range(runs):
            data = _tmp("warcrevisits")
            try:
                _put_rows(data, _url_rows(PORT, n, 200, "b1", fetched_batch=n, content=content))
                load = loadavg()
                out = data / "out"
                s3, _, _, _ = _export(data, data / "plain", "b1", extra, "-noCdxj")  # its captures: replaced next
                s1, w1, mb1, _ = _export(data, out, "b1", extra)
                _put_rows(data, _url_rows(PORT, n, 200, "b2", fetched_batch=n, content=content))  # fetched again
                s2, w2, mb2, line2 = _export(data, out, "b2", extra)
                saved = _counter(line2, "revisit_payload_bytes") / 1e6
                lines.append(f"| {name} | {n / s1:.0f} ({w1:.1f} s wall) | {mb1:.1f} | {n / s2:.0f} ({w2:.1f} s "
                             f"wall) | {_counter(line2, 'revisits')} | {mb2:.1f} | {saved:.1f} | {n / s3:.0f} | "
                             f"{load:.1f} |")
                print(f"warcrevisits {name}: {lines[-1]}", file=sys.stderr, flush=True)
            finally:
                shutil.rmtree(data, ignore_errors=True)
    lines += ["", f"load average at end {loadavg():.2f}", ""]
    return _emit(lines)
