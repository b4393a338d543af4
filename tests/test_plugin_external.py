"""A user's own plugin: the package tests/plugins/nutch2-example-plugin (a parse filter and an indexing filter found
through its entry point) is built and installed into a folder of its own (``pip install --no-deps --target``, the
shared environment untouched) that the nutch2 commands get on PYTHONPATH. A crawl with it in plugin.includes has
its field in Solr, the same crawl without it has not; an unknown plugin id is one warning line; a plugin that fails
to load (tests/plugins/nutch2-broken-plugin) is one line naming it, exit status 1, and the store is unchanged."""

from __future__ import annotations

import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from nutch2.config import Configuration
from tests.conftest import CONF_DIR
from tests.crawlutil import conf_for, defines, rows
from tests.helpers import nutch2, same_rows, table
from tests.solrschema import crawl_docs, delete_crawl, require_dynamic_fields
from tests.testweb import TestWeb

pytestmark = pytest.mark.slow
PLUGINS = Path(__file__).parent / "plugins"
DEFAULT_INCLUDES = Configuration(CONF_DIR).get_str("plugin.includes")


def install(package: str, into: Path) -> Path:
    """Build and install a package of tests/plugins into its own folder (a copy of its sources is built, so the
    build leaves nothing in the repository)."""
    source = into / "src" / package
    shutil.copytree(PLUGINS / package, source)
    site = into / "site"
    p = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
                        "--no-index", "--target", str(site), str(source)], capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    return site


@pytest.fixture(scope="module")
def example_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return install("nutch2-example-plugin", tmp_path_factory.mktemp("example"))


@pytest.fixture(scope="module")
def broken_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return install("nutch2-broken-plugin", tmp_path_factory.mktemp("broken"))


@pytest.fixture(scope="module")
def web():
    with TestWeb(hosts=3, pages_per_host=5, slow_seconds=0.5) as w:
        yield w


def nutch2_with(site: Path, *args: object) -> subprocess.CompletedProcess[str]:
    """`nutch2 <args>` (tests/helpers.py) with the plugin folder `site` as its PYTHONPATH."""
    return nutch2(*args, env={"PYTHONPATH": str(site)}, timeout=300)


def test_the_installed_plugin_is_listed(example_site: Path) -> None:
    p = nutch2_with(example_site, "plugins", "-D", f"plugin.includes={DEFAULT_INCLUDES}|example-wordcount")
    assert p.returncode == 0, p.stderr
    line, = [line for line in p.stdout.splitlines() if "example-wordcount" in line]
    assert line.startswith("+") and "parse-filter, indexing-filter" in line and "nutch2_example_plugin:PLUGIN" in line


@pytest.mark.integration
def test_its_field_reaches_solr_and_leaves_with_it(example_site: Path, web: TestWeb, tmp_path: Path,
                                                   solr_up: str) -> None:
    require_dynamic_fields(solr_up, "*_i")
    seeds = tmp_path / "seeds.txt"
    seeds.write_text(web.seed_url + "\n")
    with_it, without = f"ew{uuid.uuid4().hex[:8]}", f"eo{uuid.uuid4().hex[:8]}"
    try:
        # the plugin's own property (declared by its descriptor) is read: words of 6 characters or more
        props = {"plugin.includes": f"{DEFAULT_INCLUDES}|example-wordcount", "example.wordcount.min.length": 6}
        p = nutch2_with(example_site, "crawl", seeds, "-rounds", 2, "-crawlId", with_it, "-solr", solr_up,
                        *defines(tmp_path, "sqlite", **props))
        assert p.returncode == 0, p.stderr
        assert "not a nutch2 property" not in p.stderr
        table = {page.key: page for page in rows(conf_for(tmp_path, "sqlite"), with_it).values() if page.text}
        assert len(table) >= 5
        for page in table.values():
            assert page.metadata["example.words"] == str(len([w for w in page.text.split() if len(w) >= 6])).encode()
        docs = crawl_docs(solr_up, with_it, fl="url,words_i")
        assert len(docs) >= 5 and all(d["words_i"] > 0 for d in docs)

        p = nutch2_with(example_site, "crawl", seeds, "-rounds", 2, "-crawlId", without, "-solr", solr_up,
                        *defines(tmp_path, "sqlite"))
        assert p.returncode == 0, p.stderr
        docs = crawl_docs(solr_up, without, fl="*")
        assert len(docs) >= 5 and not any("words_i" in d for d in docs)
        assert not any("example.words" in page.metadata for page in rows(conf_for(tmp_path, "sqlite"), without)
                       .values())
    finally:
        delete_crawl(solr_up, with_it)
        delete_crawl(solr_up, without)


def test_an_unknown_plugin_id_is_one_warning_line(example_site: Path, web: TestWeb, tmp_path: Path) -> None:
    seeds = tmp_path / "seeds.txt"
    seeds.write_text(web.seed_url + "\n")
    p = nutch2_with(example_site, "crawl", seeds, "-rounds", 1, "-crawlId", "unknown",
                    *defines(tmp_path, "sqlite", **{"plugin.includes": f"{DEFAULT_INCLUDES}|index-nosuch"}))
    assert p.returncode == 0, p.stderr
    warned = [line for line in p.stderr.splitlines() if "index-nosuch" in line]
    assert len(warned) == 1 and warned[0].startswith("warning: plugin.includes names 'index-nosuch'"), p.stderr
    assert "example-wordcount" in warned[0]  # the installed plugins it lists include the user's


@pytest.mark.parametrize("command", [["generate"], ["crawl", "-rounds", "1"]])
def test_a_plugin_that_fails_to_load_stops_the_command_before_any_row(broken_site: Path, web: TestWeb,
                                                                      tmp_path: Path, command: list[str]) -> None:
    seeds = tmp_path / "seeds.txt"
    seeds.write_text(web.seed_url + "\n")
    d = defines(tmp_path, "sqlite")
    p = nutch2_with(broken_site, "inject", seeds, "-crawlId", "broken", *d)
    assert p.returncode == 0, p.stderr
    conf = conf_for(tmp_path, "sqlite")
    before = table(conf, "broken")
    args = [seeds] if command[0] == "crawl" else []
    p = nutch2_with(broken_site, command[0], *args, *command[1:], "-crawlId", "broken",
                    *defines(tmp_path, "sqlite", **{"plugin.includes": f"{DEFAULT_INCLUDES}|broken-example"}))
    assert p.returncode == 1
    lines = [line for line in p.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, p.stderr
    assert "plugin broken-example" in lines[0] and "nutch2_missing_dependency" in lines[0]
    assert "plugin.includes" in lines[0]  # and what to do
    same_rows(before, table(conf, "broken"))
    assert all(page.markers == before[key].markers for key, page in table(conf, "broken").items())
