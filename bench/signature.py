"""Issue 40, item 3: what a page's signature costs (python -m bench signature). The parse job over one batch with
db.signature.class md5, textprofile and simhash, and each signature alone on the text of the same page; the simhash
package of PyPI beside them when it is importable (it is no dependency of nutch2)."""

from __future__ import annotations

import re
import shutil
import sys
import time
from collections import defaultdict

from bench.benchmarks import NUTCH2, REPO, _defines, _emit, _header, _job_seconds, _put_rows, _tmp, _url_rows
from bench.measure import loadavg, median, run
from bench.web import generate_web, host_addr

CLASSES = ("md5", "textprofile", "simhash")


def _page_text(content: bytes) -> str:
    """The text the parse job gets from the page (parse-html)."""
    from nutch2.config import Configuration
    from nutch2.parse.parsers import ParserFactory

    parsers = ParserFactory(Configuration(REPO / "conf"))
    try:
        return parsers.parse(content, "http://bench.example/", "text/html", {}).text or ""
    finally:
        parsers.close()


def _per_page_ms(fn, texts: list[str]) -> float:
    """Best of five passes over the texts: CPU milliseconds per page (the machine is shared: CPU time, not wall)."""
    best = float("inf")
    for _ in range(5):
        started = time.process_time()
        for text in texts:
            fn(text)
        best = min(best, (time.process_time() - started) / len(texts) * 1000)
    return best


def _alone(contents: list[bytes]) -> list[str]:
    from nutch2.parse import signature

    texts = [_page_text(content) for content in contents]

    def cold(text: str) -> bytes:
        signature._word_cache = {}
        return signature.simhash_signature(text)

    fns = {"md5 (of the content)": lambda t: signature.md5_signature(t.encode()),
           "textprofile": signature.text_profile_signature, "simhash": signature.simhash_signature,
           "simhash, its word cache emptied before each page": cold}
    try:
        from simhash import Simhash  # PyPI's simhash 2.x (numpy; character 4-grams by default)

        def shingles(text: str) -> list[str]:
            words = re.findall(r"[^\W_]+", text.lower())
            return [" ".join(words[i:i + 3]) for i in range(len(words) - 2)]

        fns["PyPI simhash 2.1.2, its defaults (character 4-grams)"] = lambda t: Simhash(t).value
        fns["PyPI simhash 2.1.2, the same 3-word shingles"] = lambda t: Simhash(shingles(t)).value
    except ImportError:
        pass
    words = sum(len(t.split()) for t in texts) // len(texts)
    lines = [f"The signature alone on the texts of the same {len(texts)} pages (about {words:,} words each), CPU "
             "ms per page, best of 5 passes:", "", "| signature | ms per page |", "|---|---|"]
    for name, fn in fns.items():
        lines.append(f"| {name} | {_per_page_ms(fn, texts):.3f} |")
    return lines


def _varied(rows, contents: list[bytes]):
    for i, page in enumerate(rows):
        page.content = contents[i % len(contents)]
        yield page


def bench_signature(quick: bool = False, runs: int = 3) -> str:
    """Parse pages/s (local runner, one task) with each db.signature.class, runs interleaved."""
    n = 300 if quick else 3000
    web = generate_web(4 if quick else 200, 20 if quick else 100)
    content = (web.root / host_addr(0) / "p" / "1.html").read_bytes()
    # 200 different pages (of 4 hosts), so that a signature meets new words as in a crawl of one vocabulary
    contents = [(web.root / host_addr(h) / "p" / f"{i}.html").read_bytes() for h in range(4) for i in range(1, 51)
                if (web.root / host_addr(h) / "p" / f"{i}.html").exists()]
    lines = _header(f"signature: parse of one batch of {n:,} fetched pages ({len(contents)} different ones of about "
                    f"{len(content) // 1024} KB HTML) per "
                    "db.signature.class, sqlite, local runner, 1 task", "python -m bench signature"
                    + (" --quick" if quick else ""))
    lines += ["pages/s = pages / the parse job's own elapsed time ('parse: finished in X s'). Runs interleaved.", "",
              "| db.signature.class | pages/s (median) | runs | load at start |", "|---|---|---|---|"]
    results: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for _ in range(runs):
        for name in CLASSES:
            data = _tmp("signature")
            try:
                _put_rows(data, _varied(_url_rows(18777, n, 200, "b1", fetched_batch=n, content=content), contents))
                load = loadavg()
                r = run(NUTCH2 + ["parse", "b1", "-crawlId", "bench"]
                        + _defines(data, mapreduce_framework_name="local", db_signature_class=name), cwd=REPO)
                m = re.search(r"^parse: finished in ([\d.]+) s", r.stderr, re.M)
                if m is None:
                    raise RuntimeError(f"parse with {name} failed: {r.stderr[-2000:]}")
                results[name].append((n / _job_seconds(m.group(1)), load))
                print(f"signature {name}: {results[name][-1]}", file=sys.stderr, flush=True)
            finally:
                shutil.rmtree(data, ignore_errors=True)
    for name in CLASSES:
        rs = results[name]
        lines.append(f"| {name} | {median([r[0] for r in rs]):.0f} | {', '.join(f'{r[0]:.0f}' for r in rs)} | "
                     f"{' '.join(f'{r[1]:.1f}' for r in rs)} |")
    md5 = median([r[0] for r in results["md5"]])
    lines += ["", "pages/s against md5: " + ", ".join(
        f"{name} {median([r[0] for r in results[name]]) / md5:.2f}x" for name in CLASSES[1:]), ""]
    lines += _alone(contents)
    lines += ["", f"load average at end {loadavg():.2f}", ""]
    return _emit(lines)
