"""Issue 40, item 2: what parse-boilerplate costs and finds (python -m bench boilerplate). The parse job over one batch
of real-site-like pages (bench/web.py --shape real) without the plugin, with it on trafilatura and on resiliparse;
then each extractor on the news site's article pages (tests/newssite.py): paragraphs kept, boilerplate kept, author
and date found."""

from __future__ import annotations

import re
import resource
import shutil
import sys
from collections import defaultdict

from bench.benchmarks import NUTCH2, REPO, _defines, _emit, _header, _job_seconds, _put_rows, _tmp, _url_rows
from bench.measure import loadavg, median, run
from bench.web import generate_web, host_addr

VARIANTS = ("without", "trafilatura", "resiliparse")


def _includes(variant: str) -> str:
    from nutch2.config import Configuration

    default = Configuration(REPO / "conf").get_str("plugin.includes")
    return default if variant == "without" else default + "|parse-boilerplate"


def _varied(rows, contents: list[bytes]):
    for i, page in enumerate(rows):
        page.content = contents[i % len(contents)]
        yield page


def _quality() -> list[str]:
    """Each extractor on the news site's articles (tests/newssite.py)."""
    sys.path.insert(0, str(REPO))
    from nutch2.plugins.parse_boilerplate.extractors import extractor
    from tests.newssite import ARTICLES, BOILERPLATE, MENU, article_page

    chrome = [*BOILERPLATE, *MENU, "reader42", "Sign in to comment"]
    lines = [f"Each extractor on the {len(ARTICLES)} article pages of tests/newssite.py (menu, cookie banner, ad "
             "inside the article, related links, newsletter box, sponsored box, comments, footer; "
             f"{len(chrome)} pieces of chrome per page):", "",
             "| extractor | article paragraphs kept | chrome pieces kept (all pages) | authors found | dates found |",
             "|---|---|---|---|---|"]
    for name in VARIANTS[1:]:
        fn = extractor(name)
        paras = total = kept = authors = dates = 0
        for a in ARTICLES:
            found = fn(article_page(a), f"http://news.test{a.path}")
            text = " ".join(found.text.split())
            paras += sum(p in text for p in a.paragraphs)
            total += len(a.paragraphs)
            kept += sum(c in text for c in chrome)
            authors += found.author.replace(".", "") == a.author.replace(".", "")
            dates += found.date == a.date
        lines.append(f"| {name} | {paras}/{total} | {kept}/{len(chrome) * len(ARTICLES)} | {authors}/{len(ARTICLES)} "
                     f"| {dates}/{len(ARTICLES)} |")
    return lines


def bench_boilerplate(quick: bool = False, runs: int = 3) -> str:
    """Parse pages/s (local runner, one task) without and with parse-boilerplate, runs interleaved."""
    n = 60 if quick else 500
    web = generate_web(4, 60, shape="real")
    contents = [(web.root / host_addr(h) / "p" / f"{i}.html").read_bytes() for h in range(4) for i in range(1, 60)
                if (web.root / host_addr(h) / "p" / f"{i}.html").exists()]
    size = sum(map(len, contents)) // len(contents)
    lines = _header(f"boilerplate: parse of one batch of {n:,} fetched pages ({len(contents)} different real-shape "
                    f"pages of {size // 1024} KB HTML on average) without and with parse-boilerplate, sqlite, "
                    "local runner, 1 task", "python -m bench boilerplate" + (" --quick" if quick else ""))
    lines += ["pages/s = pages / the parse job's own elapsed time ('parse: finished in X s'); CPU s = user + system "
              "seconds of the whole `nutch2 parse` command (start-up included), which a shared machine's load does "
              "not stretch; pages per CPU s = pages / CPU s. Runs interleaved.", "",
              "| parse filters | pages/s (median) | runs | CPU s (median) | pages per CPU s | load at start |",
              "|---|---|---|---|---|---|"]
    results: dict[str, list[tuple[float, float, float]]] = defaultdict(list)
    for _ in range(runs):
        for variant in VARIANTS:
            data = _tmp("boilerplate")
            try:
                _put_rows(data, _varied(_url_rows(18777, n, 200, "b1", fetched_batch=n, content=contents[0]),
                                        contents))
                load = loadavg()
                before = resource.getrusage(resource.RUSAGE_CHILDREN)
                extra = {} if variant == "without" else {"boilerplate_extractor": variant}
                r = run(NUTCH2 + ["parse", "b1", "-crawlId", "bench"]
                        + _defines(data, mapreduce_framework_name="local", plugin_includes=_includes(variant),
                                   **extra), cwd=REPO)
                m = re.search(r"^parse: finished in ([\d.]+) s", r.stderr, re.M)
                if m is None or "failed_parse_filter" in r.stderr:
                    raise RuntimeError(f"parse {variant} failed: {r.stderr[-2000:]}")
                after = resource.getrusage(resource.RUSAGE_CHILDREN)
                cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
                results[variant].append((n / _job_seconds(m.group(1)), load, cpu))
                print(f"boilerplate {variant}: {results[variant][-1]}", file=sys.stderr, flush=True)
            finally:
                shutil.rmtree(data, ignore_errors=True)
    labels = {"without": "default (no parse-boilerplate)", "trafilatura": "+ parse-boilerplate, trafilatura",
              "resiliparse": "+ parse-boilerplate, resiliparse"}
    for variant in VARIANTS:
        rs = results[variant]
        cpu = median([r[2] for r in rs])
        lines.append(f"| {labels[variant]} | {median([r[0] for r in rs]):.0f} | "
                     f"{', '.join(f'{r[0]:.0f}' for r in rs)} | {cpu:.1f} | {n / cpu:.0f} | "
                     f"{' '.join(f'{r[1]:.1f}' for r in rs)} |")
    base = median([r[0] for r in results["without"]])
    base_cpu = median([r[2] for r in results["without"]])
    lines += ["", "pages/s against the default: " + ", ".join(
        f"{v} {median([r[0] for r in results[v]]) / base:.2f}x" for v in VARIANTS[1:]),
        "CPU ms a page costs more than the default: " + ", ".join(
        f"{v} {(median([r[2] for r in results[v]]) - base_cpu) / n * 1000:.1f}" for v in VARIANTS[1:]), ""]
    lines += _quality()
    lines += ["", f"load average at end {loadavg():.2f}", ""]
    return _emit(lines)
