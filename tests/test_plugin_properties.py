"""A property that only an inactive plugin reads (index.static without index-static) is one warning when a job's
plugins are checked, not a silent no-op; the same property with its plugin active, or left at its default, is not."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from nutch2 import logs
from nutch2.errors import ConfigError
from nutch2.plugin import Plugins
from tests.conftest import make_conf

WARNING = "is set, but plugin"


def warnings(caplog: pytest.LogCaptureFixture, tmp_path: Path, **props: object) -> list[str]:
    caplog.clear()
    logs._state.pop("config_warnings", None)  # a process says each configuration warning once
    with caplog.at_level(logging.WARNING):
        Plugins(make_conf(tmp_path, "memory", **props)).check()
    return [r.getMessage() for r in caplog.records if WARNING in r.getMessage()]


def test_a_property_of_an_inactive_plugin_is_one_warning(caplog, tmp_path):
    lines = warnings(caplog, tmp_path, **{"index.static": "collection:docs"})
    assert lines == ["warning: index.static is set, but plugin index-static is not active, so it does nothing; add "
                     "the plugin to plugin.includes (`nutch2 plugins` lists them)"]
    lines = warnings(caplog, tmp_path, **{"parse.xpath.max.length": 10, "lang.analyze.max.length": 99})
    assert len(lines) == 2 and "parse-xpath or index-xpath" in lines[0] and "language-identifier" in lines[1]


def test_a_crawl_says_it_once(caplog, tmp_path):
    assert len(warnings(caplog, tmp_path, **{"index.static": "a:b"})) == 1
    with caplog.at_level(logging.WARNING):
        Plugins(make_conf(tmp_path, "memory", **{"index.static": "a:b"})).check()  # the next step of the crawl
    assert not [r for r in caplog.records if WARNING in r.getMessage()][1:]


def test_no_warning_with_the_plugin_active_or_the_default_value(caplog, tmp_path):
    includes = make_conf(tmp_path, "memory").get_str("plugin.includes") + "|index-static"
    assert warnings(caplog, tmp_path, **{"index.static": "collection:docs", "plugin.includes": includes}) == []
    assert warnings(caplog, tmp_path, **{"index.static": ""}) == []
    assert warnings(caplog, tmp_path) == []


@pytest.mark.parametrize("prop,value,point", [
    ("urlfilter.order", "urlfilter-regexx", "url-filter"),  # a typo: every URL was kept, no word but "ignored"
    ("indexingfilter.order", "org.apache.nutch.indexer.basic.BasicIndexingFiltr", "indexing-filter"),
    ("scoring.filter.order", "scoring-link", "scoring-filter"),  # a Nutch plugin nutch2 lacks
])
def test_an_order_naming_no_active_plugin_stops_the_command(tmp_path: Path, prop: str, value: str,
                                                            point: str) -> None:
    """Nutch's *.order runs only the extensions it names: an order whose every name is a typo turned the whole
    extension point off (no URL filter, no indexing filter), with one warning saying the name was "ignored"."""
    conf = make_conf(tmp_path, **{prop: value})
    with pytest.raises(ConfigError) as e:
        Plugins(conf).check([point])
    assert "\n" not in str(e.value) and prop in str(e.value) and "none would run" in str(e.value)
    Plugins(make_conf(tmp_path, **{prop: ""})).check([point])  # empty: every active one, as before


@pytest.mark.parametrize("name,hint", [
    ("urlfilter-regexx", "did you mean urlfilter-regex?"),  # a typo of an installed plugin
    ("index-solr", "did you mean indexer-solr?"),
    ("protocol-selenium", "(installed: "),  # a Nutch plugin nutch2 lacks: the list, as before
])
def test_a_misspelt_plugin_name_names_the_installed_one(name: str, hint: str,
                                                        caplog: pytest.LogCaptureFixture) -> None:
    """A misspelt plugin in plugin.includes drew a warning listing 29 installed plugins, in which the user had to
    find the one meant."""
    from nutch2.plugin.descriptor import active_ids

    active_ids.cache_clear()  # it warns once per value: when first computed
    with caplog.at_level(logging.WARNING):
        active_ids(f"protocol-http|{name}|parse-html", "")
    lines = [r.getMessage() for r in caplog.records if name in r.getMessage()]
    assert len(lines) == 1 and hint in lines[0], lines


def test_no_protocol_because_of_plugin_excludes_names_plugin_excludes(tmp_path: Path) -> None:
    """plugin.excludes=protocol-.* (or .*) said 'add protocol-http to plugin.includes', which held it already."""
    from nutch2.fetch.protocols import protocol_for

    with pytest.raises(ConfigError) as e:
        protocol_for(make_conf(tmp_path, **{"plugin.excludes": "protocol-.*"}))
    assert "plugin.excludes='protocol-.*' takes protocol-http out" in str(e.value)
    with pytest.raises(ConfigError, match="add protocol-http to plugin.includes"):
        protocol_for(make_conf(tmp_path, **{"plugin.includes": "parse-html"}))
