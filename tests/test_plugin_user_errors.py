"""A user's plugin that raises, or returns what is not a result, is named in one line with the fix:
- a URL filter or normalizer that raises drops that URL (as Nutch drops it) and names itself once, and
  filterchecker says it dropped the URL (no traceback);
- an indexing filter that raises or returns no document fails that page only, named; indexchecker names the
  filter that keeps a page out;
- a parse filter or indexing filter that fails on every page ends the command non-zero, naming it, with no row
  left half-done: the same command again (the plugin fixed) finishes. End to end on the processes runner."""

from __future__ import annotations

import logging
import os
import uuid
from pathlib import Path

import pytest

from nutch2.crawldb.scoring import ScoringFilter, ScoringFilters
from nutch2.index.filters import FilterFailed, IndexingFilter, IndexingFilters
from nutch2.plugin import PluginError
from nutch2.urls.filters import URLFilter, URLFilters
from nutch2.urls.normalizers import URLNormalizer, URLNormalizers
from nutch2.webpage import WebPage
from tests.crawlutil import defines, seed_file
from tests.helpers import nutch2
from tests.testweb import TestWeb

REPO = Path(__file__).resolve().parent.parent
URL = "http://example.com/a"


class RaisingFilter(URLFilter):
    plugin_id = "my-urls"

    def filter(self, url: str) -> str | None:
        raise RuntimeError("boom")


class RaisingNormalizer(URLNormalizer):
    plugin_id = "my-norm"

    def normalize(self, url: str, scope: str) -> str | None:
        raise ValueError("bad port")


def test_a_url_filter_that_raises_drops_the_url_and_is_named_once(caplog: pytest.LogCaptureFixture) -> None:
    chain = URLFilters([RaisingFilter(None)])  # type: ignore[arg-type]
    with caplog.at_level(logging.WARNING):
        assert chain.filter(URL) is None
        assert chain.filter(URL + "b") is None
    named = [r.getMessage() for r in caplog.records if "my-urls" in r.getMessage()]
    assert len(named) == 1 and "RuntimeError: boom" in named[0] and "plugin.includes" in named[0], named
    kept, why = chain.explain(URL)
    assert not kept and why.startswith("my-urls: raised RuntimeError: boom"), why


def test_a_url_normalizer_that_raises_drops_the_url_and_is_named(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        assert URLNormalizers([RaisingNormalizer(None)]).normalize(URL) is None  # type: ignore[arg-type]
    assert any("url normalizer my-norm raised ValueError: bad port" in r.getMessage() for r in caplog.records)


class Index(IndexingFilter):
    plugin_id = "my-index"

    def __init__(self, result: object) -> None:
        self.result = result

    def filter(self, doc, url, page):  # type: ignore[no-untyped-def]
        if isinstance(self.result, Exception):
            raise self.result
        return self.result


@pytest.mark.parametrize("result, says", [(KeyError("title"), "indexing filter my-index raised KeyError"),
                                          ("doc", "indexing filter my-index returned str, not the document")])
def test_an_indexing_filter_that_raises_or_returns_no_document_is_named(result: object, says: str) -> None:
    filters = IndexingFilters([Index(result)], ScoringFilters([]))
    with pytest.raises(FilterFailed, match=says):
        filters.document(WebPage("com.example:http/a"), None)


def test_the_indexing_filter_that_keeps_a_page_out_is_known() -> None:
    filters = IndexingFilters([Index(None)], ScoringFilters([]))
    assert filters.document(WebPage("com.example:http/a"), None) is None
    assert filters.dropped_by == "my-index"


PLUGIN = '''
import os
from nutch2.plugin import Plugin
from nutch2.index.filters import IndexingFilter
from nutch2.index.writers import IndexWriter
from nutch2.parse.parsers import ParseFilter

PLUGIN = Plugin("broken-test", {"parse-filter": "broken_plugin:Meta", "indexing-filter": "broken_plugin:Idx"})


class Meta(ParseFilter):
    def filter(self, doc, parse, page, dom):
        if os.environ.get("BROKEN_PARSE"):
            raise KeyError("author")
        page.metadata["my.meta"] = b"yes"


class Idx(IndexingFilter):
    fields = ("metadata",)

    def filter(self, doc, url, page):
        if os.environ.get("BROKEN_INDEX"):
            doc["x_s"] = page.metadata["missing"].decode()
        doc["x_s"] = page.metadata["my.meta"].decode()
        if not os.environ.get("FORGET_RETURN"):
            return doc


class Writer(IndexWriter):
    def write(self, doc):
        raise RuntimeError("disk quota")

    def delete(self, doc_id):
        if os.environ.get("NO_DELETE"):
            super().delete(doc_id)  # not implemented
'''


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_plugin_failing_every_page_ends_the_command_naming_it_and_a_rerun_finishes(tmp_path: Path) -> None:
    site = tmp_path / "site"
    info = site / "broken_plugin-1.0.dist-info"
    info.mkdir(parents=True)
    (site / "broken_plugin.py").write_text(PLUGIN)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: broken-plugin\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[nutch2.plugins]\nbroken-test = broken_plugin:PLUGIN\n")
    writers = tmp_path / "writers.xml"
    writers.write_text(f"""<writers><writer id="jsonl" class="indexer-jsonl">
      <parameters><param name="outpath" value="{tmp_path / 'jsonl'}"/></parameters></writer></writers>""")
    d = defines(tmp_path, "sqlite:processes", **{
        "plugin.includes": "protocol-http|urlfilter-regex|urlnormalizer-basic|parse-html|index-basic|"
                           "indexer-jsonl|broken-test", "indexer.indexwriters.file": writers})
    path = {"PYTHONPATH": os.pathsep.join([str(site), str(REPO)])}
    crawl_id = f"pe{uuid.uuid4().hex[:8]}"

    def run(*args: object, **env: str):  # type: ignore[no-untyped-def]
        return nutch2(*args, "-crawlId", crawl_id, *d, env={**path, **env}, timeout=240)

    with TestWeb(hosts=1, pages_per_host=4, traps=False) as web:
        assert run("inject", seed_file(tmp_path, *[web.page_url(0, i) for i in range(4)])).returncode == 0
        batch = run("generate").stdout.strip()
        assert run("fetch", batch).returncode == 0
    p = run("parse", batch, BROKEN_PARSE="1")
    assert p.returncode == 1, p.stderr
    assert "parse filter broken-test raised KeyError: 'author'" in p.stderr and "Traceback" not in p.stderr, p.stderr
    assert "nutch2 parse: error: no page was parsed" in p.stderr, p.stderr
    p = run("parse", batch)  # fixed: the same command finishes
    assert p.returncode == 0 and "parsed=4" in p.stderr, p.stderr
    assert run("updatedb", batch).returncode == 0
    p = run("index", batch, BROKEN_INDEX="1")
    assert p.returncode == 1, p.stderr
    assert "indexing filter broken-test raised KeyError: 'missing'" in p.stderr and "Traceback" not in p.stderr
    assert "nutch2 index: error: no document was sent" in p.stderr, p.stderr
    p = run("index", batch, FORGET_RETURN="1")  # keeps every page out, as it may: said, by name
    assert p.returncode == 0 and "skipped_by_filter=4" in p.stderr, p.stderr
    assert "no document was sent: indexing filter broken-test kept 4 pages out" in p.stderr, p.stderr
    p = run("index", batch)
    assert p.returncode == 0 and "indexed=4" in p.stderr, p.stderr
    mine = tmp_path / "mine.xml"  # an index writer of one's own that raises, and one that lacks delete
    mine.write_text(writers.read_text().replace("</writers>", '<writer id="mine" class="broken_plugin:Writer"/>'
                                                               "</writers>"))
    for env, says in [({}, "write raised RuntimeError: disk quota"),
                      ({"NO_DELETE": "1"}, "delete is not implemented (an index writer implements write and delete)")]:
        p = nutch2("index", batch, "-reindex", "-crawlId", crawl_id,
                   *[x.replace(str(writers), str(mine)) for x in d], "-D", "plugin.classes=broken_plugin:Writer",
                   env={**path, **env}, timeout=240)
        assert p.returncode == 1 and "Traceback" not in p.stderr, p.stderr
        assert (f"nutch2 index: error: index writer mine (broken_plugin:Writer): {says}; fix broken_plugin:Writer, "
                "or take it out of plugin.classes") in p.stderr, p.stderr


def test_normalizerchecker_names_a_normalizer_that_raises() -> None:
    steps = URLNormalizers([RaisingNormalizer(None)]).explain(URL)  # type: ignore[arg-type]
    assert steps == [("my-norm", None, "raised ValueError: bad port (fix my-norm, or take it out of plugin.includes)")]


def test_inject_names_the_normalizer_that_drops_a_seed(tmp_path: Path) -> None:
    (tmp_path / "dropping.py").write_text("from nutch2.urls.normalizers import URLNormalizer\n\n\n"
                                          "class Drop(URLNormalizer):\n"
                                          "    def normalize(self, url, scope):\n"
                                          "        return None if 'drop' in url else url\n")
    seeds = seed_file(tmp_path, "http://127.0.1.1:9/drop", "http://127.0.1.1:9/keep")
    d = defines(tmp_path, "sqlite", **{"plugin.classes": "dropping:Drop"})
    p = nutch2("inject", seeds, "-crawlId", "dropped", *d,
               env={"PYTHONPATH": os.pathsep.join([str(tmp_path), str(REPO)])}, timeout=120)
    assert p.returncode == 0, p.stderr
    assert "'http://127.0.1.1:9/drop' dropped by the URL normalizer dropping:Drop" in p.stderr, p.stderr


def test_the_fix_names_plugin_classes_for_a_class_of_ones_own() -> None:
    class Mine(URLFilter):
        plugin_id = "mymods:Mine"

        def filter(self, url: str) -> str | None:
            raise RuntimeError("boom")

    assert URLFilters([Mine(None)]).explain(URL)[1].endswith("(fix mymods:Mine, or take it out of plugin.classes)")



def test_plugins_says_an_active_plugin_cannot_be_loaded(tmp_path: Path) -> None:
    site = tmp_path / "site"
    info = site / "unloadable_plugin-1.0.dist-info"
    info.mkdir(parents=True)
    (site / "unloadable_plugin.py").write_text(
        "from nutch2.plugin import Plugin\n"
        "PLUGIN = Plugin('unloadable-test', {'url-filter': 'unloadable_ext:F'})\n")
    (site / "unloadable_ext.py").write_text("import nonexistent_dependency_of_the_test\n")
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: unloadable-plugin\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[nutch2.plugins]\nunloadable-test = unloadable_plugin:PLUGIN\n")
    env = {"PYTHONPATH": os.pathsep.join([str(site), str(REPO)])}
    p = nutch2("plugins", "-D", "plugin.includes=urlfilter-regex|unloadable-test", env=env, timeout=60)
    assert p.returncode == 0, p.stdout + p.stderr  # it listed them (as for a plugin.classes entry)
    line = next(line for line in p.stdout.splitlines() if "unloadable-test" in line)
    assert line.startswith("!  unloadable-test") and "pip install nonexistent_dependency_of_the_test" in line, line
    p = nutch2("plugins", "-D", "plugin.includes=urlfilter-regex", env=env, timeout=60)  # not active: not imported
    assert p.returncode == 0 and "-  unloadable-test" in p.stdout, p.stdout + p.stderr


class Score(ScoringFilter):
    plugin_id = "my-scoring"

    def injected_score(self, url: str, page: WebPage) -> None:
        raise ZeroDivisionError("no inlinks")

    def generator_sort_value(self, url, page, value):  # type: ignore[no-untyped-def]
        pass  # the forgotten return


def test_a_scoring_filter_that_raises_or_returns_no_number_is_named() -> None:
    chain = ScoringFilters([Score(None)])  # type: ignore[arg-type]
    page = WebPage("com.example:http/a")
    with pytest.raises(PluginError, match=r"^scoring filter my-scoring: injected_score raised ZeroDivisionError: "
                                          r"no inlinks on http://example.com/a; fix my-scoring, or take it out of "
                                          r"plugin.includes$"):
        chain.injected_score(URL, page)
    with pytest.raises(PluginError, match="generator_sort_value returned NoneType, not a number"):
        chain.generator_sort_value(URL, page, 1.0)


def test_a_fetch_schedule_plugin_that_raises_is_named(tmp_path: Path) -> None:
    (tmp_path / "mysched.py").write_text("from nutch2.crawldb.schedule import DefaultFetchSchedule\n\n\n"
                                         "class Boom(DefaultFetchSchedule):\n"
                                         "    def should_fetch(self, page, cur_ms):\n"
                                         "        raise KeyError('interval')\n")
    seeds = seed_file(tmp_path, "http://127.0.1.1:9/a")
    d = defines(tmp_path, "sqlite", **{"plugin.classes": "mysched:Boom", "db.fetch.schedule.class": "mysched:Boom"})
    env = {"PYTHONPATH": os.pathsep.join([str(tmp_path), str(REPO)])}
    assert nutch2("inject", seeds, "-crawlId", "sched", *d, env=env, timeout=120).returncode == 0
    p = nutch2("generate", "-crawlId", "sched", *d, env=env, timeout=120)
    assert p.returncode == 1 and "Traceback" not in p.stderr, p.stderr
    assert ("fetch schedule mysched:Boom: should_fetch raised KeyError: 'interval' on http://127.0.1.1:9/a; "
            "fix mysched:Boom, or take it out of plugin.classes") in p.stderr, p.stderr
