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
from tests.test_crash_safety import same_rows, table
from tests.testweb import TestWeb

pytestmark = pytest.mark.slow
SUMMARY = re.compile(r"^(\w+): finished in [\d.]+ s: (.*)$", re.M)
RUNNERS = {
    "local": ("sqlite", {}),
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
