"""Tests for urlfilter-regex (nutch2/plugins/urlfilter_regex) and the URL filter chain."""

from __future__ import annotations

from pathlib import Path

import pytest

from nutch2.errors import ConfigError
from nutch2.plugins.urlfilter_regex.filter import RegexURLFilter, parse_rule
from nutch2.urls.filters import URLFilters
from tests.conftest import make_conf

SHIPPED = Path(__file__).parent.parent / "conf" / "regex-urlfilter.txt"


@pytest.fixture(scope="module")
def shipped() -> RegexURLFilter:
    return RegexURLFilter.from_file(SHIPPED)


def test_first_matching_rule_wins() -> None:
    f = RegexURLFilter.from_lines(["-foo\\.com/private", "+foo\\.com", "-."])
    assert f.filter("http://foo.com/index.html") == "http://foo.com/index.html"
    assert f.filter("http://foo.com/private/x") is None
    assert f.filter("http://bar.com/") is None


def test_no_matching_rule_rejects() -> None:
    f = RegexURLFilter.from_lines(["+^https://"])
    assert f.filter("https://foo.com/") == "https://foo.com/"
    assert f.filter("http://foo.com/") is None
    assert RegexURLFilter.from_lines([]).filter("http://foo.com/") is None


def test_rules_are_searched_not_matched() -> None:
    f = RegexURLFilter.from_lines(["+/news/"])
    assert f.filter("http://foo.com/news/today") is not None


def test_comments_and_blank_lines_are_ignored() -> None:
    f = RegexURLFilter.from_lines(["# a comment", "", "   ", "  # indented comment", "+.\n"])
    assert len(f.rules) == 1
    assert f.filter("http://foo.com/") == "http://foo.com/"


def test_from_lines_accepts_a_string() -> None:
    f = RegexURLFilter.from_lines("-\\.gif$\n+.\n")
    assert f.filter("http://foo.com/a.gif") is None
    assert f.filter("http://foo.com/a.html") == "http://foo.com/a.html"


@pytest.mark.parametrize(
    ("lines", "where", "problem"),
    [
        (["+.", "foo"], "rules.txt:2", "must start with '\\+' or '-'"),
        (["# c", " +foo"], "rules.txt:2", "must start with"),
        (["-[unclosed"], "rules.txt:1", "bad regex"),
        (["+.", "+"], "rules.txt:2", "missing regex"),
    ],
)
def test_malformed_lines_raise_with_location(lines: list[str], where: str, problem: str) -> None:
    with pytest.raises(ValueError, match=problem) as info:
        RegexURLFilter.from_lines(lines, source="rules.txt")
    assert str(info.value).startswith(where + ":")


def test_from_file_names_the_file_in_errors(tmp_path: Path) -> None:
    path = tmp_path / "bad-urlfilter.txt"
    path.write_text("# ok\n+.\n*oops\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"bad-urlfilter\.txt:3"):
        RegexURLFilter.from_file(path)


def test_parse_rule() -> None:
    assert parse_rule("# x", "f:1") is None
    rule = parse_rule("-\\.png$\r\n", "f:2")
    assert rule is not None and not rule.accept and rule.where == "f:2"
    assert rule.matches("http://a.com/x.png")


@pytest.mark.parametrize(
    "url",
    [
        "http://foo.com/",
        "https://foo.com/index.html",
        "http://foo.com/report.pdf",
        "http://foo.com/REPORT.PDF",
        "http://foo.com/search?q=nutch&page=2",
        "http://foo.com/a/b/c/d/e/",
        "http://foo.com/a/b/a/c/",
        "http://foo.com/app.json",
        "http://foo.com/jsx/page",
    ],
)
def test_shipped_rules_accept(shipped: RegexURLFilter, url: str) -> None:
    assert shipped.filter(url) == url


@pytest.mark.parametrize(
    "url",
    [
        "file:///etc/passwd",
        "ftp://ftp.foo.com/pub/",
        "mailto:someone@foo.com",
        "javascript:void(0)",
        "data:text/html,hi",
        "gopher://foo.com/",
        "HTTPX://foo.com/",
        "http://foo.com/logo.gif",
        "http://foo.com/photo.JPG",
        "http://foo.com/photo.jpeg",
        "http://foo.com/favicon.ico",
        "http://foo.com/style.css",
        "http://foo.com/style.css?ver=6.1",
        "http://foo.com/app.js",
        "http://foo.com/dist.tar.gz",
        "http://foo.com/a.zip",
        "http://foo.com/setup.exe",
        "http://foo.com/song.mp3",
        "http://foo.com/clip.MP4",
        "http://foo.com/a/b/a/c/a/d/",
        "http://foo.com/x/y/x/y/x/y/z",
    ],
)
def test_shipped_rules_reject(shipped_chain: URLFilters, url: str) -> None:
    assert shipped_chain.filter(url) is None


@pytest.fixture(scope="module")
def shipped_chain() -> URLFilters:
    """The URL filters of the shipped configuration (urlfilter-regex, then urlfilter-suffix for file types)."""
    return URLFilters.from_conf(make_conf(Path("/tmp")))


@pytest.mark.parametrize("url", ["http://foo.com/style.css", "http://foo.com/app.js?v=2", "http://foo.com/a.png"])
def test_file_types_are_the_suffix_filters_not_the_regex_files(shipped: RegexURLFilter, shipped_chain: URLFilters,
                                                                url: str) -> None:
    """A rendered page's resources pass every filter but urlfilter-suffix: the regex file holds no type rule."""
    assert shipped.filter(url) == url and shipped_chain.filter(url) is None
    assert shipped_chain.without("urlfilter-suffix").filter(url) == url


def test_shipped_session_id_rule_is_commented_out(shipped: RegexURLFilter) -> None:
    assert shipped.filter("http://foo.com/page?id=1&s=2") is not None
    assert "#-[?*!@=]" in SHIPPED.read_text(encoding="utf-8")


class _RejectBar:
    def filter(self, url: str) -> str | None:
        return None if "bar" in url else url


def test_url_filters_chain_and_max_length() -> None:
    chain = URLFilters([RegexURLFilter.from_lines(["+."]), _RejectBar()], max_length=30)
    assert chain.filter("http://foo.com/") == "http://foo.com/"
    assert chain.filter("http://bar.com/") is None
    assert chain.filter("http://foo.com/" + "a" * 15) == "http://foo.com/" + "a" * 15  # 30 chars
    assert chain.filter("http://foo.com/" + "a" * 16) is None


def test_url_filters_default_max_length_is_2048() -> None:
    chain = URLFilters()
    ok = "http://foo.com/" + "a" * (2048 - 15)
    assert chain.filter(ok) == ok
    assert chain.filter(ok + "a") is None


def test_url_filters_no_length_limit() -> None:
    assert URLFilters(max_length=0).filter("http://foo.com/" + "a" * 5000) is not None


def test_url_filters_from_shipped_file() -> None:
    chain = URLFilters([RegexURLFilter.from_file(SHIPPED)])
    assert chain.filter("http://foo.com/") == "http://foo.com/"
    assert chain.filter("gopher://foo.com/a") is None


@pytest.mark.parametrize("pattern", [r".*(/[^/]+)/[^/]+\1/[^/]+\1/", r"(?i).*\.(gif|jpg)$", r".*?[?*!@=]", r".*",
                                     r".*+x", r"^.*/private/", r"(?s).*a.b"])
def test_a_leading_any_is_searched_without_it_and_decides_the_same(pattern: str) -> None:
    """A rule's leading `.*` is dropped before the search (Nutch's loop rule is ~20x cheaper so); whether the rule
    matches does not change, on URLs that match and that do not."""
    import re

    from nutch2.plugins.urlfilter_regex.filter import finder

    compiled = re.compile(pattern)
    urls = ["http://a.org/b/c/b/d/b/e", "http://a.org/b/c/b/d/b/", "http://x.org/A.GIF", "http://x.org/a.gif?x=1",
            "http://h.org/p/1.html", "http://h.org/q?a=b", "http://h.org/private/1.html", "a\nb", "axb", "", "x"]
    for url in urls:
        assert (finder(compiled)(url) is None) == (compiled.search(url) is None), (pattern, url)
    if pattern.startswith(".*") and not pattern.startswith(".*+"):
        assert finder(compiled).__self__.pattern != pattern  # the cheaper search is the one used


def test_urlfilter_regex_rules_hold_the_rules_and_the_file_is_not_read(tmp_path: Path) -> None:
    """Nutch's urlfilter.regex.rules: the rules as text (here with a filter file that does not exist)."""
    conf = make_conf(tmp_path, **{"urlfilter.regex.rules": "# only host a\n+^http://a\\.\n",
                                  "urlfilter.regex.file": "missing-urlfilter.txt"})
    f = RegexURLFilter(conf)
    assert f.filter("http://a.example.com/") == "http://a.example.com/"
    assert f.filter("http://z.example.com/") is None
    assert f.source == "urlfilter.regex.rules"
    with pytest.raises(ConfigError, match=r"urlfilter.regex.rules:1: a rule must start with '\+' or '-'.*fix the rule "
                                          "in urlfilter.regex.rules"):
        RegexURLFilter(make_conf(tmp_path, **{"urlfilter.regex.rules": "*bad"}))


@pytest.mark.parametrize("plugin,prop,text,kept,dropped", [
    ("urlfilter-regex", "urlfilter.regex.file", "-^http://a\\.org/skip\r\n+.\r\n", "http://a.org/ok",
     "http://a.org/skip"),
    ("urlfilter-suffix", "urlfilter.suffix.file", "+\r\n.gif\r\n.png\r\n", "http://a.org/x.html", "http://a.org/x.gif"),
    ("urlfilter-domain", "urlfilter.domain.file", "a.org\r\n", "http://a.org/", "http://b.org/"),
    ("urlfilter-domaindenylist", "urlfilter.domaindenylist.file", "b.org\r\n", "http://a.org/", "http://b.org/"),
])
def test_rule_files_saved_by_windows_notepad_mean_the_same(tmp_path: Path, plugin: str, prop: str, text: str,
                                                           kept: str, dropped: str) -> None:
    """A UTF-8 byte order mark and CRLF line ends (what Notepad saves) are no part of the first rule: with them,
    the suffix file's mode line "+" was a suffix "\\ufeff+" (and the mode '-' kept only the listed suffixes), the
    domain list's first name matched nothing, the regex file's first rule was an error."""
    path = tmp_path / "rules.txt"
    path.write_bytes(b"\xef\xbb\xbf" + text.encode("utf-8"))
    chain = URLFilters.from_conf(make_conf(tmp_path, **{"plugin.includes": plugin, prop: str(path)}))
    assert chain.filter(kept) == kept
    assert chain.filter(dropped) is None


@pytest.mark.parametrize("regex", ["[a-z&&[^x]]", "[[:alpha:]]", "[a--z]"])
def test_a_java_class_python_reads_otherwise_is_a_bad_rule_in_one_line(regex: str, recwarn: pytest.WarningsRecorder,
                                                                      tmp_path: Path) -> None:
    """A Java class intersection or nested class (valid in a Nutch user's file) compiled with a two-line
    FutureWarning on stderr, then matched something else than in Nutch (the URL was silently dropped)."""
    path = tmp_path / "rules.txt"
    path.write_text(f"+{regex}\n")
    conf = make_conf(tmp_path, **{"plugin.includes": "urlfilter-regex", "urlfilter.regex.file": str(path)})
    with pytest.raises(ConfigError) as e:
        RegexURLFilter(conf)
    assert "\n" not in str(e.value) and f"rules.txt:1: bad regex {regex!r}" in str(e.value)
    assert "escape" in str(e.value) and not [w for w in recwarn if w.category is FutureWarning]
