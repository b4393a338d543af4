"""Tests for nutch2.parse.html."""

from __future__ import annotations

import codecs
import threading
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nutch2.parse import html as parse_mod
from nutch2.parse.encoding import detect_encoding, resolve_charset
from nutch2.parse.html import parse_html, resolve_link
from nutch2.parse.result import ParseResult
from nutch2.status import ParseMajor, ParseMinor

URL = "http://example.com/dir/page.html"
RUSSIAN = "Новости дня"
RUSSIAN_BODY = (
    "Сегодня в городе прошёл большой праздник. Жители вышли на улицы, чтобы посмотреть "
    "на парад и послушать музыку. Вечером был салют над рекой. "
) * 3
JAPANESE = "日本語のタイトル"
JAPANESE_BODY = "これは日本語のテキストです。文字コードの自動検出をテストしています。東京は晴れです。" * 3


def page(title: str = "T", body: str = "", head: str = "") -> str:
    """A small HTML document."""
    return f"<html><head>{head}<title>{title}</title></head><body>{body}</body></html>"


def ok(result: ParseResult) -> None:
    """Assert plain success."""
    assert (result.status_major, result.status_minor) == (ParseMajor.SUCCESS, ParseMinor.OK), result


# ----------------------------------------------------------------------------- encodings


def test_header_charset_wins_over_meta() -> None:
    content = page(RUSSIAN, RUSSIAN_BODY, '<meta charset="utf-8">').encode("cp1251")
    result = parse_html(content, URL, headers={"content-type": "text/html; charset=windows-1251"})
    ok(result)
    assert result.encoding == "cp1251"
    assert result.title == RUSSIAN
    assert "салют над рекой" in result.text


def test_content_type_argument_charset() -> None:
    content = page(JAPANESE, JAPANESE_BODY).encode("shift_jis")
    result = parse_html(content, URL, content_type='text/html; charset="Shift_JIS"')
    assert result.title == JAPANESE
    assert result.encoding == "cp932"  # WHATWG decodes Shift_JIS as windows-31j


@pytest.mark.parametrize("codec,bom", [("utf-16-le", codecs.BOM_UTF16_LE), ("utf-16-be", codecs.BOM_UTF16_BE)])
def test_utf16_bom_wins_over_header(codec: str, bom: bytes) -> None:
    content = bom + page(JAPANESE, JAPANESE_BODY).encode(codec)
    result = parse_html(content, URL, headers={"Content-Type": "text/html; charset=iso-8859-1"})
    ok(result)
    assert result.encoding == codec
    assert result.title == JAPANESE
    assert "東京は晴れです" in result.text


def test_utf8_bom_wins_over_meta() -> None:
    content = codecs.BOM_UTF8 + page(RUSSIAN, head='<meta charset="windows-1251">').encode("utf-8")
    result = parse_html(content, URL)
    assert result.encoding == "utf-8"
    assert result.title == RUSSIAN


def test_meta_charset() -> None:
    content = page(JAPANESE, JAPANESE_BODY, '<meta charset="shift_jis">').encode("shift_jis")
    result = parse_html(content, URL, content_type="text/html")
    assert result.encoding == "cp932"
    assert result.title == JAPANESE


def test_meta_http_equiv_content_type() -> None:
    head = '<meta http-equiv="Content-Type" content="text/html; charset=windows-1251">'
    result = parse_html(page(RUSSIAN, head=head).encode("cp1251"), URL)
    assert result.encoding == "cp1251"
    assert result.title == RUSSIAN


def test_bogus_header_charset_falls_through_to_meta() -> None:
    content = page(RUSSIAN, head='<meta charset="windows-1251">').encode("cp1251")
    for bogus in ("no-such-charset", "base64", "utf-7"):
        result = parse_html(content, URL, content_type=f"text/html; charset={bogus}")
        assert result.encoding == "cp1251", bogus
        assert result.title == RUSSIAN


def test_detection_windows_1251_without_declaration() -> None:
    result = parse_html(page(RUSSIAN, RUSSIAN_BODY).encode("cp1251"), URL)
    ok(result)
    assert result.encoding == "cp1251"
    assert result.title == RUSSIAN


def test_detection_shift_jis_without_declaration() -> None:
    result = parse_html(page(JAPANESE, JAPANESE_BODY).encode("shift_jis"), URL)
    assert result.title == JAPANESE
    assert result.encoding in ("cp932", "shift_jis")


def test_detection_large_document_samples_on_a_character_boundary() -> None:
    body = "<p>" + JAPANESE_BODY + "</p>"
    content = page(JAPANESE, body * 3000).encode("shift_jis")
    assert len(content) > 300_000  # larger than the detection sample
    result = parse_html(content, URL)
    assert result.encoding == "cp932"
    assert result.title == JAPANESE


def test_undeclared_utf8_and_latin1_labels() -> None:
    assert parse_html(page("café").encode("utf-8"), URL).encoding == "utf-8"
    result = parse_html(page("caf\u00e9 \u20ac").encode("cp1252"), URL, content_type="text/html; charset=ISO-8859-1")
    assert result.encoding == "cp1252"  # browsers read latin-1 as windows-1252
    assert result.title == "café €"


def test_xml_declaration_is_not_a_problem() -> None:
    content = b'<?xml version="1.0" encoding="iso-8859-1"?>' + page("caf\u00e9").encode("utf-8")
    result = parse_html(content, URL, content_type="application/xhtml+xml; charset=utf-8")
    assert result.title == "café"


def test_resolve_charset() -> None:
    assert resolve_charset("UTF8") == "utf-8"
    assert resolve_charset("windows-1251") == "cp1251"
    assert resolve_charset("x-sjis") == "cp932"
    assert resolve_charset("rot13") is None
    assert resolve_charset("zlib") is None
    assert resolve_charset(None) is None
    assert detect_encoding(codecs.BOM_UTF16_LE + b"<\x00") == ("utf-16-le", 2)


# ----------------------------------------------------------------------------- title, text


def test_title_and_text_whitespace_collapsed_and_scripts_excluded() -> None:
    body = (
        "<h1>Head\nline</h1><p>One<b>two</b></p><p>three</p><script>var secret = 1;</script>"
        "<style>p { color: red }</style><noscript>enable js</noscript><template><p>tpl</p></template>"
        "<!-- comment --><div>four<br>five</div>tail"
    )
    result = parse_html(page("  Hello \n\t World ", body).encode(), URL)
    assert result.title == "Hello World"
    assert result.text == "Head line Onetwo three four five tail"
    for hidden in ("secret", "color", "enable js", "tpl", "comment", "Hello"):
        assert hidden not in result.text


def test_broken_html_still_parses() -> None:
    content = b"<html><title>Broken</title><body><p>unclosed <b>bold <i>both</p><a href='x'>link<div>after"
    result = parse_html(content, URL)
    ok(result)
    assert result.title == "Broken"
    assert "unclosed bold both" in result.text and "after" in result.text
    assert result.outlinks[0][0] == "http://example.com/dir/x"


# ----------------------------------------------------------------------------- outlinks


def test_outlinks_resolution_and_filtering() -> None:
    body = (
        '<a href="a.html#frag">A <i>link</i></a>'
        '<a href="/abs">Abs</a>'
        '<a href="a.html">duplicate</a>'
        '<a href="#top">top</a><a href="javascript:void(0)">js</a><a href="mailto:x@example.com">m</a>'
        '<a href="data:text/plain,x">d</a><a rel="Nofollow noopener" href="/nf">nf</a>'
        '<a href="http://other.org/x">Other</a><a>no href</a>'
        '<area href="map" alt="Map area"><iframe src="frame.html">fallback</iframe>'
    )
    result = parse_html(page(body=body).encode(), URL)
    assert result.outlinks == [
        ("http://example.com/dir/a.html", "A link"),
        ("http://example.com/abs", "Abs"),
        ("http://other.org/x", "Other"),
        ("http://example.com/dir/map", "Map area"),
        ("http://example.com/dir/frame.html", ""),
    ]
    assert "fallback" not in result.text


def test_frameset_src() -> None:
    content = b'<html><frameset><frame src="left.html"><frame src="right.html"></frameset></html>'
    result = parse_html(content, URL)
    assert [u for u, _ in result.outlinks] == [
        "http://example.com/dir/left.html",
        "http://example.com/dir/right.html",
    ]


def test_base_href() -> None:
    head = '<base href="http://cdn.example.net/root/">'
    result = parse_html(page(head=head, body='<a href="x/y">xy</a><a href="/z">z</a>').encode(), URL)
    assert result.base_url == "http://cdn.example.net/root/"
    assert result.outlinks == [("http://cdn.example.net/root/x/y", "xy"), ("http://cdn.example.net/z", "z")]


def test_relative_base_href_and_no_base() -> None:
    result = parse_html(page(head='<base href="/other/">', body='<a href="p">p</a>').encode(), URL)
    assert result.base_url == "http://example.com/other/"
    assert result.outlinks == [("http://example.com/other/p", "p")]
    assert parse_html(page().encode(), URL).base_url == URL


def test_outlink_caps() -> None:
    body = "".join(f'<a href="/l{i}">L{i}</a>' for i in range(10)) + f'<a href="/{"x" * 200}">long</a>'
    content = page(body=body).encode()
    assert [a for _, a in parse_html(content, URL, max_outlinks=3).outlinks] == ["L0", "L1", "L2"]
    assert len(parse_html(content, URL, max_outlinks=-1).outlinks) == 11
    assert len(parse_html(content, URL, max_outlinks=-1, max_outlink_length=100).outlinks) == 10
    assert parse_html(content, URL, max_outlinks=0).outlinks == []


def test_ten_thousand_links_fast_and_capped() -> None:
    body = "".join(f'<a href="/l{i}">link {i}</a> ' for i in range(10_000))
    content = page(body=body).encode()
    start = time.monotonic()
    result = parse_html(content, URL)
    assert time.monotonic() - start < 5
    assert len(result.outlinks) == 100
    assert result.outlinks[-1] == ("http://example.com/l99", "link 99")
    assert len(parse_html(content, URL, max_outlinks=-1).outlinks) == 10_000


def test_bad_urls_are_skipped() -> None:
    result = parse_html(page(body='<a href="http://[bad">x</a><a href="  /ok\n ">ok</a>').encode(), URL)
    assert result.outlinks == [("http://example.com/ok", "ok")]


# ----------------------------------------------------------------------------- robots


@pytest.mark.parametrize(
    "content,noindex,nofollow",
    [
        ("NOINDEX", True, False),
        ("noindex, follow", True, False),
        ("index,nofollow", False, True),
        ("None", True, True),
        ("all", False, False),
    ],
)
def test_meta_robots(content: str, noindex: bool, nofollow: bool) -> None:
    head = f'<meta name="ROBOTS" content="{content}">'
    result = parse_html(page("Title", '<p>words</p><a href="/x">x</a>', head).encode(), URL)
    assert (result.noindex, result.nofollow) == (noindex, nofollow)
    assert (result.title == "" and result.text == "") == noindex
    assert (result.outlinks == []) == nofollow
    ok(result)


def test_x_robots_tag_header() -> None:
    result = parse_html(page("T", "<p>w</p>").encode(), URL, headers={"X-Robots-Tag": "noindex"})
    assert result.noindex and result.text == ""
    other_agent = parse_html(page("T", "<p>w</p>").encode(), URL, headers={"X-Robots-Tag": "otherbot: noindex"})
    assert not other_agent.noindex


# ----------------------------------------------------------------------------- meta refresh


def test_meta_refresh_redirect() -> None:
    head = '<meta http-equiv="Refresh" content="0; url=/x">'
    result = parse_html(page("Moved", '<a href="/y">y</a>', head).encode(), URL)
    assert result.refresh_url == "http://example.com/x"
    assert result.refresh_delay == 0
    assert (result.status_major, result.status_minor) == (ParseMajor.SUCCESS, ParseMinor.REDIRECT)
    assert result.status_args == ["http://example.com/x", "0"]
    assert result.is_redirect
    assert result.outlinks == [("http://example.com/x", ""), ("http://example.com/y", "y")]


@pytest.mark.parametrize(
    "content,url,delay",
    [
        ("5;URL='next.html'", "http://example.com/dir/next.html", 5),
        ("3, url=&quot;http://other.org/&quot;", "http://other.org/", 3),
        ("1; http://other.org/a", "http://other.org/a", 1),
        ("10", None, 10),  # reload of the same page: not a redirect
        ("7; url=page.html", None, 7),  # explicit self refresh: not a redirect
    ],
)
def test_meta_refresh_forms(content: str, url: str | None, delay: int) -> None:
    result = parse_html(page(head=f'<meta http-equiv="refresh" content="{content}">').encode(), URL)
    assert (result.refresh_url, result.refresh_delay) == (url, delay)
    assert result.is_redirect == (url is not None)


def test_meta_refresh_survives_nofollow_and_cap() -> None:
    head = '<meta name="robots" content="nofollow"><meta http-equiv="refresh" content="0;url=/x">'
    result = parse_html(page(head=head, body='<a href="/y">y</a>').encode(), URL, max_outlinks=0)
    assert result.outlinks == [("http://example.com/x", "")]


def test_invalid_meta_refresh_ignored() -> None:
    result = parse_html(page(head='<meta http-equiv="refresh" content="soon">').encode(), URL)
    ok(result)
    assert result.refresh_url is None and result.refresh_delay is None


# ----------------------------------------------------------------------------- failures


def test_empty_content() -> None:
    result = parse_html(b"", URL)
    assert (result.status_major, result.status_minor) == (
        ParseMajor.FAILED,
        ParseMinor.FAILED_MISSING_CONTENT,
    )
    assert not result.is_success


def test_whitespace_only_document_is_empty_success() -> None:
    result = parse_html(b"  \n ", URL)
    ok(result)
    assert result.text == "" and result.title == ""


def test_binary_garbage_does_not_crash() -> None:
    garbage = bytes((i * 7919 + 13) % 256 for i in range(50_000))
    result = parse_html(garbage, URL, content_type="text/html")
    assert (result.status_major, result.status_minor) == (ParseMajor.FAILED, ParseMinor.FAILED_INVALID_FORMAT)
    assert result.status_args == ["binary content"]


@settings(max_examples=150, deadline=None)
@given(st.binary(max_size=2000))
def test_any_bytes_never_raise(content: bytes) -> None:
    result = parse_html(content, URL, timeout=None)
    assert result.status_major in (ParseMajor.SUCCESS, ParseMajor.FAILED)
    assert isinstance(result.text, str) and isinstance(result.title, str)


@settings(max_examples=100, deadline=None)
@given(st.text(alphabet="<>/=\"' abcdiv\n&;#!-", max_size=500))
def test_tag_soup_never_raises(markup: str) -> None:
    result = parse_html(markup.encode(), URL, timeout=None)
    assert result.status_major in (ParseMajor.SUCCESS, ParseMajor.FAILED)


def test_exception_becomes_failed_exception(monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(markup: str) -> None:
        raise RuntimeError("kaput")

    monkeypatch.setattr(parse_mod, "_parse_tree", boom)
    result = parse_html(page().encode(), URL)
    assert (result.status_major, result.status_minor) == (ParseMajor.FAILED, ParseMinor.EXCEPTION)
    assert result.status_args == ["RuntimeError: kaput"]


# ----------------------------------------------------------------------------- pathological input


def test_deep_nesting_keeps_text_and_links() -> None:
    depth = 100_000
    content = (
        '<html><body><a href="/before">before</a>'
        + "<div>" * depth
        + "deep"
        + "</div>" * depth
        + '<a href="/after">after</a></body></html>'
    ).encode()
    start = time.monotonic()
    result = parse_html(content, URL)
    assert time.monotonic() - start < 10
    ok(result)
    assert result.text == "before deep after"
    assert [u for u, _ in result.outlinks] == ["http://example.com/before", "http://example.com/after"]


def test_timeout_with_slow_inner_function(monkeypatch: pytest.MonkeyPatch) -> None:
    original = parse_mod._parse_tree

    def slow(markup: str) -> object:
        time.sleep(0.5)
        return original(markup)

    monkeypatch.setattr(parse_mod, "_parse_tree", slow)
    before = {t for t in threading.enumerate() if t.name == "nutch2-parse"}  # other threads' parsers (earlier tests)
    start = time.monotonic()
    result = parse_html(page().encode(), URL, timeout=0.05)
    assert time.monotonic() - start < 0.4
    assert (result.status_major, result.status_minor) == (ParseMajor.FAILED, ParseMinor.EXCEPTION)
    assert result.status_args == ["parser timeout"]

    def abandoned() -> set[threading.Thread]:
        return {t for t in threading.enumerate() if t.name == "nutch2-parse"} - before

    # the abandoned thread is a daemon and finishes on its own
    deadline = time.monotonic() + 5
    while abandoned() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not abandoned()


def test_parser_thread_reused_until_a_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    original = parse_mod._parse_tree
    seen: list[int] = []
    delay = [0.0]

    def spy(markup: str) -> object:
        seen.append(threading.get_ident())
        time.sleep(delay[0])
        return original(markup)

    monkeypatch.setattr(parse_mod, "_parse_tree", spy)
    for _ in range(5):
        ok(parse_html(page().encode(), URL, timeout=5))
    assert len(set(seen)) == 1 and seen[0] != threading.get_ident()  # one worker thread, not the caller
    delay[0] = 0.3
    assert parse_html(page().encode(), URL, timeout=0.05).status_args == ["parser timeout"]
    delay[0] = 0.0
    ok(parse_html(page().encode(), URL, timeout=5))  # a fresh worker: the overrunning one is abandoned
    assert seen[-1] != seen[0]


def test_tiny_timeout_on_big_document() -> None:
    body = "".join(f"<p>paragraph {i} <a href='/p{i}'>x</a></p>" for i in range(100_000))
    result = parse_html(page(body=body).encode(), URL, timeout=0.000_001)
    assert result.status_args == ["parser timeout"]
    assert result.status_major == ParseMajor.FAILED


def test_timeout_none_runs_inline() -> None:
    ok(parse_html(page("x").encode(), URL, timeout=None))


# ----------------------------------------------------------------------------- dispatch


def _factory(**props: object):
    """The parser dispatch the parse job uses (nutch2/parse/parsers.py), on the shipped plugins, no Tika."""
    from nutch2.parse.parsers import ParserFactory
    from tests.conftest import make_conf

    return ParserFactory(make_conf(Path("/tmp"), **props))


def test_parse_content_dispatch() -> None:
    f = _factory()
    html = page("Hi", "<p>there</p>").encode()
    assert f.parse(html, URL, "text/html; charset=utf-8", {}).title == "Hi"
    assert f.parse(html, URL, "application/xhtml+xml", {}).text == "there"
    assert f.parse(html, URL, None, {"Content-Type": "TEXT/HTML"}).title == "Hi"
    assert f.parse(html, URL, None, {}).title == "Hi"  # sniffed
    capped = parse_html(page(body='<a href="/a">a</a><a href="/b">b</a>').encode(), URL, "text/html", max_outlinks=1)
    assert len(capped.outlinks) == 1


def test_parse_content_plain_text() -> None:
    f = _factory()
    result = f.parse("Привет, мир\nline two".encode("cp1251"), URL, "text/plain; charset=windows-1251", {})
    ok(result)
    assert result.title == "" and result.outlinks == []
    assert result.text == "Привет, мир\nline two"
    assert f.parse(b"<a href='/x'>x</a>", URL, "text/plain", {}).outlinks == []
    assert f.parse(b"", URL, "text/plain", {}).status_minor == ParseMinor.FAILED_MISSING_CONTENT


@pytest.mark.parametrize("ctype", ["image/png; q=1", "application/x-unknown-thing"])
def test_parse_content_unsupported(ctype: str) -> None:
    result = _factory().parse(b"\x89PNG binary", URL, ctype, {})
    assert (result.status_major, result.status_minor) == (ParseMajor.NOTPARSED, ParseMinor.OK), result.status_args
    assert "no parser" in result.status_args[0] or "unsupported" in result.status_args[0], result.status_args


def _urljoin_resolution(base: str, href: str) -> str | None:
    """resolve_link as it was before its fast paths: every link through urljoin."""
    from urllib.parse import urldefrag, urljoin

    href = href.replace("\t", "").replace("\n", "").replace("\r", "").strip()
    if not href or href.startswith("#"):
        return None
    if (href.split(":", 1)[0].lower() if ":" in href else "") in parse_mod._SKIP_SCHEMES:
        return None
    try:
        return urldefrag(urljoin(base, href)).url or None
    except ValueError:
        return None


_BASES = ("http://h/x", "https://H.example:8080/a/b?q=1", "HTTP://h/", "http://u:p@h/x;y", "http://[::1]:80/p",
          "http://h", "ftp://h/x", "file:///tmp/x")
_PIECES = ("/", "a", "?", ";", "#", "=", "%2e", "[", "]", ":", "@", "//", " ", "é", "..", ".", "\\")


@pytest.mark.parametrize("base", _BASES)
def test_the_link_fast_paths_resolve_as_urljoin_does(base: str) -> None:
    """resolve_link's shortcuts for '/path' and 'http(s)://host/path' give what urljoin gives, junk included."""
    import itertools

    for n in range(1, 4):
        for combo in itertools.product(_PIECES, repeat=n):
            tail = "".join(combo)
            for href in ("/" + tail, "http://h/" + tail, "https://x" + tail, "http://[" + tail):
                assert resolve_link(base, href) == _urljoin_resolution(base, href), (base, href)


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(_BASES), st.sampled_from(("/", "http://h/", "https://h")), st.text(max_size=20))
def test_the_link_fast_paths_resolve_as_urljoin_does_for_any_text(base: str, start: str, tail: str) -> None:
    assert resolve_link(base, start + tail) == _urljoin_resolution(base, start + tail)
