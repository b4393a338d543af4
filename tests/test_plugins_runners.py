"""Plugins on every runner: the same 3-round crawl of the test web with parse-xpath, language-identifier (its model
in each worker) and the URL, scoring and index plugins of the default set gives the same rows (extracted fields
and languages included) and the same job counters under mapreduce.framework.name=local, processes and spark."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from nutch2.config import Configuration
from nutch2.status import CrawlStatus
from tests.conftest import CONF_DIR, REPO
from tests.crawlutil import conf_for, defines
from tests.helpers import same_rows, table
from tests.testweb import TestWeb

pytestmark = pytest.mark.slow
SUMMARY = re.compile(r"^(\w+): finished in [\d.]+ s: (.*)$", re.M)
RUNNERS = {
    "local": ("sqlite:local", {}),
    "processes": ("sqlite:processes", {"mapreduce.job.tasks": 2}),
    "spark": ("sqlite", {"mapreduce.framework.name": "spark", "spark.master": "local[2]", "spark.ui.enabled": "false",
                         "mapreduce.job.tasks": 2}),
}
EXTRACTORS = {"heading": ["//h1"], "firstlink": ["css:ul li a::attr(href)"], "paragraphs": ["count(//p)"],
              "traps": {"expressions": ["//title"], "urls": "/traps/"}}


def _names(conf: Configuration, crawl_id: str) -> dict[str, str]:
    from nutch2.crawldb.journal import Journal
    from nutch2.stores import open_store

    with open_store(conf, crawl_id, create=False) as store:
        return {rec.batch_id: f"round{i}" for i, rec in enumerate(Journal(store).batches(), 1)}


@pytest.mark.timeout(1200)
def test_the_runners_give_the_same_rows_with_plugins_on(tmp_path: Path) -> None:
    if not os.environ.get("CI"):
        pytest.importorskip("pyspark")
    extractors = tmp_path / "extractors.json"
    extractors.write_text(json.dumps(EXTRACTORS))
    plugins = {
        "plugin.includes": Configuration(CONF_DIR).get_str("plugin.includes") + "|parse-xpath|index-xpath|"
                                                                                 "language-identifier",
        "parse.xpath.file": extractors,
        "lang.extraction.policy": "identify,detect",  # the model decides: every worker loads it
        "fetcher.server.delay": 0.05,
    }
    results = {}
    with TestWeb(hosts=3, pages_per_host=8, slow_seconds=0.5) as web:
        seeds = tmp_path / "seeds.txt"
        seeds.write_text(web.seed_url + "\n" + "".join(web.page_url(h, 4) + "\n" for h in range(3)))
        for runner, (backend, props) in RUNNERS.items():
            d = defines(tmp_path / runner, backend, **plugins, **props)
            p = subprocess.run([sys.executable, "-m", "nutch2.cli", "crawl", seeds, "-rounds", "3", "-crawlId",
                                runner, *d], cwd=REPO, capture_output=True, text=True, timeout=900)
            assert p.returncode == 0, (runner, p.stderr[-3000:])
            assert runner != "spark" or re.search(r"^spark: SparkContext started", p.stderr, re.M), p.stderr[-3000:]
            conf = conf_for(tmp_path / runner, backend, **plugins, **props)
            results[runner] = (table(conf, runner), SUMMARY.findall(p.stderr), _names(conf, runner))
    rows_l, counters_l, names_l = results["local"]
    fetched = [p for p in rows_l.values() if p.status == CrawlStatus.FETCHED and p.text]
    assert len(fetched) > 15 and len(counters_l) >= 13
    assert all(p.metadata.get("lang") and p.metadata.get("x_heading") for p in fetched)
    assert any(k.startswith("x_traps") for p in fetched for k in p.metadata)
    for runner in ("processes", "spark"):
        rows, counters, names = results[runner]
        assert counters == counters_l, runner
        same_rows(rows_l, rows, names_l, names)


@pytest.mark.timeout(600)
def test_the_fetchers_inline_parse_runs_the_same_plugins(tmp_path: Path) -> None:
    """fetcher.parse=true (the parse filters built in each fetch task, called from its fetcher threads, here in
    worker processes) keeps the same extracted fields and languages as the parse job."""
    extractors = tmp_path / "extractors.json"
    extractors.write_text(json.dumps(EXTRACTORS))
    plugins = {"plugin.includes": "protocol-http|parse-(html|xpath)|language-identifier|urlfilter-regex|"
                                  "urlnormalizer-basic|scoring-opic",
               "parse.xpath.file": extractors, "fetcher.server.delay": 0.05,
               "lang.extraction.policy": "identify", "fetcher.threads.fetch": 6}
    found = {}
    with TestWeb(hosts=3, pages_per_host=6, slow_seconds=0.5) as web:
        seeds = tmp_path / "seeds.txt"
        seeds.write_text(web.seed_url + "\n")
        for name, backend, props in (("job", "sqlite", {}),
                                     ("inline", "sqlite:processes", {"fetcher.parse": "true",
                                                                     "mapreduce.job.tasks": 2})):
            d = defines(tmp_path / name, backend, **plugins, **props)
            p = subprocess.run([sys.executable, "-m", "nutch2.cli", "crawl", seeds, "-rounds", "2", "-crawlId",
                                name, *d], cwd=REPO, capture_output=True, text=True, timeout=500)
            assert p.returncode == 0, (name, p.stderr[-3000:])
            rows = table(conf_for(tmp_path / name, backend, **plugins, **props), name)
            found[name] = {key: {k: v for k, v in page.metadata.items() if k.startswith("x_") or k == "lang"}
                           for key, page in rows.items() if page.text}
    assert len(found["job"]) >= 8 and all(m.get("lang") and m.get("x_heading") for m in found["job"].values())
    assert found["inline"] == found["job"]
