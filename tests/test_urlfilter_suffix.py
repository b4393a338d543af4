"""urlfilter-suffix (nutch2/plugins/urlfilter_suffix): Nutch's TestSuffixURLFilter vectors
(tests/data/nutch/urlfilter-suffix, source named there), the file format as Nutch reads it, the shipped list."""

from __future__ import annotations

from pathlib import Path

import pytest

from nutch2.errors import ConfigError
from nutch2.plugin import Plugins
from nutch2.plugins.urlfilter_suffix.filter import SuffixRules, SuffixURLFilter
from nutch2.urls.filters import URLFilters
from tests.conftest import make_conf

DATA = Path(__file__).parent / "data" / "nutch" / "urlfilter-suffix"
SUFFIXES = (DATA / "suffixes.txt").read_text(encoding="utf-8")


def cases() -> tuple[list[str], list[tuple[str, list[bool]]]]:
    """The mode lines (columns) and, per URL, whether each mode keeps it."""
    modes: list[str] = []
    rows = []
    for line in (DATA / "cases.txt").read_text(encoding="utf-8").splitlines():
        if line.startswith("# url"):
            modes = line.split()[2:]
        elif line and not line.startswith("#"):
            url, *signs = line.split()
            rows.append((url, [s == "+" for s in signs]))
    return modes, rows


MODES, ROWS = cases()


@pytest.mark.parametrize("column", range(len(MODES)), ids=MODES)
def test_nutch_vectors(column: int) -> None:
    f = SuffixURLFilter.from_text(SUFFIXES + "\n" + MODES[column] + "\n")
    assert len(ROWS) == 8
    assert [(url, f.filter(url) == url) for url, _ in ROWS] == [(url, kept[column]) for url, kept in ROWS]


def test_without_a_mode_line_only_listed_suffixes_pass() -> None:
    """testModeReject: the suffix list alone is the "-" mode."""
    f = SuffixURLFilter.from_text(SUFFIXES)
    assert not f.rules.accept_unlisted and not f.rules.ignore_case and not f.rules.path_only
    assert [f.filter(url) == url for url, _ in ROWS] == [kept[MODES.index("-")] for _, kept in ROWS]


def test_file_format_as_nutch_reads_it() -> None:
    rules = SuffixRules.parse(["  # comment", "", "   .GIF  ", "+", ".png", "-I", "+P", "#.jpg", ".gif"])
    assert rules.suffixes == (".gif", ".png")  # trimmed, lower-cased with I, a duplicate once, "#.jpg" a comment
    assert rules.accept_unlisted  # the last mode line wins
    assert rules.ignore_case and rules.path_only  # I and P stay once a mode line gives them
    # a suffix is literal: "*.jpg" matches only URLs ending with "*.jpg"
    f = SuffixURLFilter.from_text("+\n*.jpg\n")
    assert f.filter("http://x.org/a.jpg") is not None and f.filter("http://x.org/a*.jpg") is None


def test_path_mode_ignores_query_and_fragment() -> None:
    f = SuffixURLFilter.from_text("+IP\n.com\n.mp3\n")
    assert f.filter("http://xyz.com/") is not None
    assert f.filter("http://xyz.com/search?q=foo.com") is not None
    assert f.filter("http://xyz.org/setup.COM") is None
    assert f.filter("http://xyz.com/music.mp3?q=abc") is None
    whole = SuffixURLFilter.from_text("+I\n.com\n.mp3\n")  # without P: the whole URL, as Nutch warns
    assert whole.filter("http://xyz.com") is None and whole.filter("http://xyz.com/music.mp3?q=abc") is not None


def test_shipped_list_drops_style_sheets_and_images_in_any_case(tmp_path: Path) -> None:
    conf = make_conf(tmp_path, **{"plugin.includes": "urlfilter-suffix"})
    chain = URLFilters.from_conf(conf)
    for url in ("http://x.org/doxygen.css", "http://x.org/a/B.PNG", "http://x.org/f.woff2?v=3", "http://x.org/a.js"):
        assert chain.filter(url) is None, url
    for url in ("http://x.org/", "http://x.org/a.html", "http://x.com/", "http://x.org/get?f=a.css"):
        assert chain.filter(url) == url, url
    kept, why = chain.explain("http://x.org/style/Doxygen.CSS")
    assert not kept and why.startswith("urlfilter-suffix: ") and why.endswith(
        "suffix-urlfilter.txt: suffix .css (rejected in mode +)")
    kept, why = chain.explain("http://x.org/a.html")
    assert kept and why.endswith("no listed suffix (accepted in mode +)")


def test_inline_rules_win_over_the_file(tmp_path: Path) -> None:
    conf = make_conf(tmp_path, **{"plugin.includes": "urlfilter-suffix", "urlfilter.suffix.rules": "-\n.html",
                                  "urlfilter.suffix.file": str(tmp_path / "nope.txt")})
    chain = URLFilters.from_conf(conf)
    assert chain.filter("http://x.org/a.html") is not None and chain.filter("http://x.org/a.css") is None
    assert chain.explain("http://x.org/a.css")[1] == \
        "urlfilter-suffix: urlfilter.suffix.rules: no listed suffix (rejected in mode -)"


def test_a_missing_file_stops_the_plugin_with_one_line(tmp_path: Path) -> None:
    conf = make_conf(tmp_path, **{"plugin.includes": "urlfilter-suffix",
                                  "urlfilter.suffix.file": str(tmp_path / "nope.txt")})
    with pytest.raises(ConfigError) as e:
        Plugins(conf).check(["url-filter"])
    assert "nope.txt" in str(e.value) and "urlfilter.suffix.file" in str(e.value)
