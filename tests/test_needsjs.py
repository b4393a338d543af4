"""The chromium.mode=auto detector (nutch2/parse/needsjs.py) on framework skeletons and server pages, each rule on
its own, and the remembered hosts (nutch2/fetch/renderhosts.py) in a real store. No browser."""

from __future__ import annotations

from pathlib import Path

import pytest

from nutch2.config import Configuration
from nutch2.errors import ConfigError
from nutch2.fetch.renderhosts import RenderHosts, host_key
from nutch2.parse.needsjs import NeedsJs, signals
from nutch2.plugins.protocol_chromium.chromium import ChromiumSettings
from nutch2.stores import open_store
from tests.conftest import CONF_DIR
from tests.renderweb import ARTICLE, SKELETONS, js_page

DETECT = NeedsJs()


@pytest.mark.parametrize("kind", list(SKELETONS))
def test_the_skeletons_that_need_a_browser_and_only_those(kind: str) -> None:
    page, needs = SKELETONS[kind]
    assert (DETECT.reason(page.encode()) is not None) == needs, signals(page.encode())


def _doc(body: str, head: str = "") -> bytes:
    return f"<html><head>{head}</head><body>{body}</body></html>".encode()


def test_rule_empty_app_root_beside_a_script() -> None:
    assert DETECT.reason(_doc("<div id='__nuxt'></div><script src='/a.js'></script>")) == "empty app root #__nuxt"
    assert DETECT.reason(_doc("<div ng-app='x'></div><script src='/a.js'></script>")) == "empty app root <div>"
    assert DETECT.reason(_doc("<div id='root'></div>")) is None  # nothing would fill it
    # a root holding a link, or a page keeping its text, is server-rendered
    nav = "<a href='/x'>Home</a> " + "The harbour master's office, open weekdays. " * 3
    assert DETECT.reason(_doc(f"<div id='root'>{nav}</div><script src='/a.js'></script>")) is None
    assert DETECT.reason(_doc(f"<div id='root'></div><p>{nav}</p><script src='/a.js'></script>")) is not None
    assert DETECT.reason(_doc(f"<p>{ARTICLE}</p><div id='root'></div><script src='/a.js'></script>")) is None


def test_rule_noscript_asking_for_javascript() -> None:
    for words in ("Please enable JavaScript.", "This site requires JavaScript", "JavaScript is disabled",
                  "You need JavaScript to use this page", "Turn on JavaScript in your browser"):
        page = _doc(f"<noscript>{words}</noscript><p>Welcome</p>")
        assert DETECT.reason(page) == "noscript asks for JavaScript", words
    assert DETECT.reason(_doc("<noscript><img src='/pixel.gif'></noscript><p>Welcome</p>")) is None
    assert DETECT.reason(_doc(f"<p>{ARTICLE}</p><noscript>Enable JavaScript for comments</noscript>")) is None
    assert DETECT.reason(_doc("<noscript>Enable JavaScript</noscript>", head="<script src='/a.js'></script>")) \
        is not None


def test_rule_little_text_beside_many_scripts() -> None:
    three = "".join(f"<script src='/{i}.js'></script>" for i in range(3))
    assert DETECT.reason(_doc(f"<p>Menu Home About</p>{three}")) == "15 characters of text beside 3 scripts"
    assert DETECT.reason(_doc("<p>Loading</p><script src='/app.js'></script>")) is not None  # the bundle outweighs
    short = "<p>" + "Write to the harbour master about the tolls of the week. " * 4 + "</p>"
    assert DETECT.reason(_doc(short + "<script src='/analytics.js'></script>")) is None  # one script, some text
    assert DETECT.reason(_doc(short)) is None  # no script at all
    json_only = "<script type='application/ld+json'>" + "{}" * 500 + "</script>"
    assert DETECT.reason(_doc("<p>Hi</p>" + json_only)) is None  # data blocks do not run


def test_thresholds_are_the_properties() -> None:
    two = "<p>Menu</p><script src='/a.js'></script><script src='/b.js'></script>"
    assert NeedsJs(scripts_min=2).reason(_doc(two)) is not None
    long_text = f"<p>{ARTICLE}</p><div id='root'></div><script src='/a.js'></script>"
    assert NeedsJs(text_min=5000).reason(_doc(long_text)) == "empty app root #root"
    assert DETECT.reason(js_page(1).encode()) == "empty app root #root"


def test_not_html_is_not_rendered() -> None:
    assert DETECT.reason(b"") is None
    assert DETECT.reason(b"\x00\x01binary") is None


def test_remembered_hosts_outlive_the_task(tmp_path: Path) -> None:
    """A host remembered by one task is known to the next (a new RenderHosts over the same store); others are not;
    a record in another format is ignored."""
    conf = Configuration(CONF_DIR, {"storage.data.dir": str(tmp_path), "storage.data.store.class": "sqlite"})
    with open_store(conf, "hosts") as store:
        hosts = RenderHosts(store)
        assert not hosts.known("http://a.example/x")
        assert hosts.remember("http://a.example/x", "empty app root #root")
        assert not hosts.remember("http://a.example/y", "again")  # once per host
        assert hosts.known("http://a.example/z")
        store.put_state(host_key("http://c.example/"), '{"v": 99}')
    with open_store(conf, "hosts") as store:
        later = RenderHosts(store)
        assert later.known("http://a.example/other") and not later.known("http://b.example/")
        assert not later.known("http://c.example/") and not later.known("https://a.example/")
    assert host_key("HTTP://A.Example:8080/p") == "render/http://a.example:8080"


@pytest.mark.parametrize(("props", "message"), [
    ({"chromium.mode": "sometimes"}, "chromium.mode='sometimes'"),
    ({"chromium.mode": "auto", "chromium.recycle.pages": "-1"}, "chromium.recycle.pages=-1 cannot be negative"),
    ({"chromium.mode": "auto", "chromium.recycle.mb": "-5"}, "chromium.recycle.mb=-5 cannot be negative"),
])
def test_bad_chromium_properties_are_one_line(props: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        ChromiumSettings.from_conf(Configuration(CONF_DIR, props))


def test_listed_mode_without_a_pattern_needs_no_browser() -> None:
    assert ChromiumSettings.from_conf(Configuration(CONF_DIR, {"chromium.binary": "no-such-browser"})) is None
