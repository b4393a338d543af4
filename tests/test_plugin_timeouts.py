"""Plugins bounded like parsers (nutch2/mapred/timebox.py):
- a parse filter that never returns fails that document, counted, within parser.timeout, and the rest is parsed;
- an indexing filter that never returns keeps its document out of that index run (not marked: the next sends it);
- a stop (SIGTERM) ends the command within its promise while the plugin is still stuck;
- a plugin that ends the process is reported by name.
The processes runner's replacement of the worker a stuck plugin holds is in tests/test_workers.py. The plugin is
installed the way pip leaves a package: a module and its dist-info on the path."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from nutch2.marks import Mark
from nutch2.status import ParseMajor
from nutch2.urls.tableutil import reverse_url
from tests.conftest import SOLR_URL, require_solr
from tests.crawlutil import conf_for, defines, rows, seed_file
from tests.helpers import nutch2
from tests.testweb import TestWeb

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parent.parent
DEFAULT_INCLUDES = ("protocol-http|urlfilter-(regex|suffix)|urlnormalizer-basic|parse-(html|text|metatags)|"
                    "index-(basic|anchor|more|metadata)|indexer-solr|scoring-opic")

PLUGIN = '''
import os, time
from nutch2.plugin import Plugin
from nutch2.index.filters import IndexingFilter
from nutch2.parse.parsers import ParseFilter

PLUGIN = Plugin("sleepy-test", {"parse-filter": "sleepy_plugin:Sleepy", "indexing-filter": "sleepy_plugin:SleepyIndex"})


class Sleepy(ParseFilter):
    def filter(self, doc, parse, page, dom):
        if page.key.endswith("/p/2.html"):
            time.sleep(3600)  # a plugin stuck for good
        if page.key.endswith("/p/3.html") and os.environ.get("SLEEPY_EXIT"):
            os._exit(3)  # a plugin that ends the process


class SleepyIndex(IndexingFilter):
    def filter(self, doc, url, page):
        if url.endswith("/p/1.html"):
            time.sleep(3600)
        return doc
'''


def install(tmp: Path) -> Path:
    """sleepy_plugin.py and its dist-info (entry point nutch2.plugins: sleepy-test) in a folder for PYTHONPATH."""
    where = tmp / "site"
    info = where / "sleepy_plugin-1.0.dist-info"
    info.mkdir(parents=True)
    (where / "sleepy_plugin.py").write_text(PLUGIN)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: sleepy-plugin\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[nutch2.plugins]\nsleepy-test = sleepy_plugin:PLUGIN\n")
    return where


def nutch2_with(site: Path, *args: object, env: dict[str, str] | None = None,
                timeout: float = 240) -> subprocess.CompletedProcess[str]:
    """`nutch2 <args>` (tests/helpers.py) with the plugin folder `site` and the repository as its PYTHONPATH."""
    return nutch2(*args, env={"PYTHONPATH": os.pathsep.join([str(site), str(REPO)]), **(env or {})}, timeout=timeout)


@pytest.fixture
def web():
    with TestWeb(hosts=1, pages_per_host=8, traps=False) as w:
        yield w


def _fetched(tmp: Path, site: Path, web: TestWeb, crawl_id: str, d: list[str]) -> str:
    seeds = seed_file(tmp, *[web.page_url(0, i) for i in range(8)])
    assert nutch2_with(site, "inject", seeds, "-crawlId", crawl_id, *d).returncode == 0
    batch = nutch2_with(site, "generate", "-crawlId", crawl_id, *d).stdout.strip()
    assert nutch2_with(site, "fetch", batch, "-crawlId", crawl_id, *d).returncode == 0
    return batch


@pytest.mark.timeout(300)
@pytest.mark.parametrize("backend", ["sqlite", "sqlite:local"])
def test_a_parse_filter_that_never_returns_fails_its_document_only(web: TestWeb, tmp_path: Path,
                                                                   backend: str) -> None:
    site = install(tmp_path)
    props = {"plugin.includes": DEFAULT_INCLUDES + "|sleepy-test", "parser.timeout": 3, "log.level": "DEBUG"}
    d = defines(tmp_path, backend, **props)
    crawl_id = f"pt{uuid.uuid4().hex[:8]}"
    batch = _fetched(tmp_path, site, web, crawl_id, d)
    started = time.monotonic()
    p = nutch2_with(site, "parse", batch, "-crawlId", crawl_id, *d)
    elapsed = time.monotonic() - started
    assert p.returncode == 0, p.stderr
    assert elapsed < 3 + 30, elapsed  # parser.timeout + 30 s
    assert "failed_parse_filter_timeout=1" in p.stderr and "parsed=7" in p.stderr, p.stderr
    table = rows(conf_for(tmp_path, backend, **props), crawl_id)
    stuck = table[reverse_url(web.page_url(0, 2))]
    assert stuck.parse_status.major_code == ParseMajor.FAILED and Mark.PARSE.check(stuck) is None
    assert stuck.parse_status.args == ["parse filter sleepy-test: no answer within parser.timeout=3 s"]
    assert sum(Mark.PARSE.check(p) == batch for p in table.values()) == 7


@pytest.mark.timeout(300)
@pytest.mark.parametrize("backend", ["sqlite", "sqlite:local"])
def test_a_stop_during_a_stuck_parse_filter_keeps_its_promise(web: TestWeb, tmp_path: Path, backend: str) -> None:
    site = install(tmp_path)
    props = {"plugin.includes": DEFAULT_INCLUDES + "|sleepy-test", "parser.timeout": 600}
    d = defines(tmp_path, backend, **props)
    crawl_id = f"ps{uuid.uuid4().hex[:8]}"
    batch = _fetched(tmp_path, site, web, crawl_id, d)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(REPO)])}
    proc = subprocess.Popen([sys.executable, "-m", "nutch2.cli", "parse", batch, "-crawlId", crawl_id, *d],
                            cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(3)  # in the stuck filter by now (parser.timeout 600: only the stop can end its wait)
    sent = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert time.monotonic() - sent < 10, err  # well within the stop's promise
    assert proc.returncode == 130 and "run `nutch2 parse" in err, err
    again = nutch2_with(site, "parse", batch, "-resume", "-crawlId", crawl_id, *d, "-D", "parser.timeout=2")
    assert again.returncode == 0 and "failed_parse_filter_timeout=1" in again.stderr, again.stderr


@pytest.mark.integration
@pytest.mark.timeout(300)
def test_an_indexing_filter_that_never_returns_keeps_its_document_for_the_next_run(web: TestWeb,
                                                                                  tmp_path: Path) -> None:
    require_solr()
    site = install(tmp_path)
    props = {"plugin.includes": DEFAULT_INCLUDES + "|sleepy-test", "parser.timeout": 30,
             "indexingfilter.timeout": 3}
    d = defines(tmp_path, "sqlite", **props)
    crawl_id = f"pi{uuid.uuid4().hex[:8]}"
    batch = _fetched(tmp_path, site, web, crawl_id, d)
    clean = nutch2_with(site, "parse", batch, "-crawlId", crawl_id, *d, "-D", "plugin.includes=" + DEFAULT_INCLUDES)
    assert clean.returncode == 0
    assert nutch2_with(site, "updatedb", batch, "-crawlId", crawl_id, *d).returncode == 0
    p = nutch2_with(site, "index", batch, "-solr", SOLR_URL, "-crawlId", crawl_id, *d)
    assert p.returncode == 0 and "failed_indexing_filter_timeout=1" in p.stderr and "indexed=7" in p.stderr, p.stderr
    table = rows(conf_for(tmp_path, "sqlite", **props), crawl_id)
    assert Mark.INDEX.check(table[reverse_url(web.page_url(0, 1))]) is None  # not sent: not marked
    assert sum(Mark.INDEX.check(p) is not None for p in table.values()) == 7
    fixed = nutch2_with(site, "index", "-all", "-solr", SOLR_URL, "-crawlId", crawl_id, *d, "-D",
                        "plugin.includes=" + DEFAULT_INCLUDES)
    assert fixed.returncode == 0 and "indexed=1" in fixed.stderr, fixed.stderr  # the one it kept


@pytest.mark.timeout(300)
@pytest.mark.parametrize("backend", ["sqlite", "sqlite:local"])
def test_a_plugin_that_ends_the_process_is_named(web: TestWeb, tmp_path: Path, backend: str) -> None:
    site = install(tmp_path)
    props = {"plugin.includes": DEFAULT_INCLUDES + "|sleepy-test", "parser.timeout": 600}
    d = defines(tmp_path, backend, **props)
    crawl_id = f"px{uuid.uuid4().hex[:8]}"
    batch = _fetched(tmp_path, site, web, crawl_id, d)
    p = nutch2_with(site, "parse", batch, "-crawlId", crawl_id, *d, "-D", "parser.timeout=2", env={"SLEEPY_EXIT": "1"})
    assert p.returncode != 0
    lines = [x for x in p.stderr.splitlines() if x.strip()]
    assert re.search(r"sleepy-test", lines[-1]) and "ended the process" in lines[-1], p.stderr
