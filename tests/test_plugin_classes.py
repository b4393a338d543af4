"""A class of the user's own module as a plugin, without a package (plugin.classes, Scrapy's way): it fills the
extension points its base classes are, runs in the order *.order gives by its module:Class name, and a name that
is not an extension says so in one line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from nutch2.errors import ConfigError
from nutch2.plugin import Plugins
from tests.conftest import make_conf
from tests.crawlutil import cli, conf_for, defines, rows, seed_file
from tests.testweb import TestWeb

MODULE = '''
from nutch2.parse.parsers import ParseFilter
from nutch2.urls.filters import URLFilter


class Tagger(ParseFilter):
    def filter(self, doc, parse, page, dom):
        page.metadata["tagged"] = b"yes"


class NoSecondPages(URLFilter):
    def filter(self, url):
        return None if url.endswith("/p/2.html") else url


class NotAnExtension:
    pass
'''


@pytest.fixture
def my_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    (tmp_path / "myextensions.py").write_text(MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))  # worker processes get the driver's sys.path
    return "myextensions"  # imported once per process, as a user's module is (the plugin system keeps its classes)


def test_a_class_is_an_extension_of_the_points_its_bases_are(my_module: str, tmp_path: Path) -> None:
    conf = make_conf(tmp_path, **{"plugin.classes": f"{my_module}:Tagger, {my_module}:NoSecondPages",
                                  "urlfilter.order": f"{my_module}:NoSecondPages urlfilter-regex"})
    plugins = Plugins(conf)
    assert [type(f).__name__ for f in plugins.build("parse-filter")][-1] == "Tagger"
    assert [type(f).__name__ for f in plugins.build("url-filter")] == ["NoSecondPages", "RegexURLFilter"]
    for bad, words in ((f"{my_module}:NotAnExtension", "is no extension: make it a subclass"),
                       (f"{my_module}:Missing", "cannot load"), ("nocolon", "is not module:Class")):
        with pytest.raises(ConfigError, match=words):
            Plugins(make_conf(tmp_path, **{"plugin.classes": bad})).build("parse-filter")


@pytest.mark.slow
def test_a_crawl_runs_them_on_the_default_runner(my_module: str, tmp_path: Path) -> None:
    from nutch2.mapred.processes import shutdown_pool

    shutdown_pool()  # worker processes take the driver's path when they start: this test's module folder
    props = {"plugin.classes": f"{my_module}:Tagger,{my_module}:NoSecondPages"}
    d = defines(tmp_path, "sqlite", **props)
    with TestWeb(hosts=1, pages_per_host=4, traps=False) as web:
        assert cli("crawl", seed_file(tmp_path, web.seed_url), "-crawlId", "mine", "-rounds", "2", *d) == 0
        table = rows(conf_for(tmp_path, "sqlite", **props), "mine")
    fetched = [p for p in table.values() if p.text]
    assert fetched and all(p.metadata.get("tagged") == b"yes" for p in fetched)
    assert not any(k.endswith("/p/2.html") for k in table)


@pytest.mark.slow
def test_the_installed_command_finds_a_module_in_its_folder(tmp_path: Path) -> None:
    """The README's way: myextensions.py beside you, `nutch2 ... -D plugin.classes=myextensions:...` from that
    folder, no PYTHONPATH (the console script, unlike `python -m`, does not put the folder on the path); `nutch2
    plugins` lists the class, or says why it cannot load."""
    (tmp_path / "myextensions.py").write_text(MODULE)
    command = Path(sys.executable).parent / "nutch2"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}

    def run(*args: object) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(command), *map(str, args)], cwd=tmp_path, env=env, capture_output=True,
                              text=True, timeout=120)

    listed = run("plugins", "-D", "plugin.classes=myextensions:Tagger,nomodule:X")
    assert listed.returncode == 0, listed.stderr
    assert "+  myextensions:Tagger\tparse-filter\t" in listed.stdout
    assert "!  nomodule:X\t(cannot load: plugin.classes: cannot load nomodule:X (ModuleNotFoundError" in listed.stdout
    props = {"plugin.classes": "myextensions:Tagger,myextensions:NoSecondPages"}
    with TestWeb(hosts=1, pages_per_host=4, traps=False) as web:
        crawl = run("crawl", seed_file(tmp_path, web.seed_url), "-crawlId", "mine", "-rounds", "2",
                    *defines(tmp_path, "sqlite", **props))  # the default runner: worker processes too
        assert crawl.returncode == 0, crawl.stderr
        table = rows(conf_for(tmp_path, "sqlite", **props), "mine")
    fetched = [p for p in table.values() if p.text]
    assert fetched and all(p.metadata.get("tagged") == b"yes" for p in fetched)
    assert not any(k.endswith("/p/2.html") for k in table)
