"""Tests for urlnormalizer-basic (nutch2/plugins/urlnormalizer_basic) and the normalizer chain of a scope."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nutch2.plugins.urlnormalizer_basic.normalizer import (
    BasicURLNormalizer,
    normalize,
    normalize_percent_encoding,
    remove_dot_segments,
)
from nutch2.urls.normalizers import SCOPES, URLNormalizers


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        # scheme and host lower-cased, default ports dropped, fragment dropped
        ("HTTP://Foo.COM/Path", "http://foo.com/Path"),
        ("http://foo.com:80/a", "http://foo.com/a"),
        ("https://foo.com:443/a", "https://foo.com/a"),
        ("https://foo.com:80/a", "https://foo.com:80/a"),
        ("http://foo.com:8080/a", "http://foo.com:8080/a"),
        ("ftp://ftp.foo.org:21/pub/", "ftp://ftp.foo.org/pub/"),
        ("http://foo.com/a#section", "http://foo.com/a"),
        ("http://foo.com/a?b=1#section", "http://foo.com/a?b=1"),
        # empty path becomes '/'
        ("http://foo.com", "http://foo.com/"),
        ("http://foo.com?a=1", "http://foo.com/?a=1"),
        ("https://FOO.com:443", "https://foo.com/"),
        # dot segments
        ("http://foo.com/a/./b/../c", "http://foo.com/a/c"),
        ("http://foo.com/../a", "http://foo.com/a"),
        ("http://foo.com/a/b/..", "http://foo.com/a/"),
        ("http://foo.com/a/%2e%2E/b", "http://foo.com/b"),
        ("http://foo.com/a/./", "http://foo.com/a/"),
        # percent-encoding
        ("http://foo.com/%7euser", "http://foo.com/~user"),
        ("http://foo.com/%41%62c", "http://foo.com/Abc"),
        ("http://foo.com/a%2fb", "http://foo.com/a%2Fb"),
        ("http://foo.com/a%zz", "http://foo.com/a%25zz"),
        ("http://foo.com/a b", "http://foo.com/a%20b"),
        ("http://foo.com/a?q=x y", "http://foo.com/a?q=x%20y"),
        ('http://foo.com/<">', "http://foo.com/%3C%22%3E"),
        ("http://foo.com/ä?x=ü", "http://foo.com/%C3%A4?x=%C3%BC"),
        ("http://foo.com/a%c3%a4", "http://foo.com/a%C3%A4"),
        # query order preserved (unlike w3lib's canonicalize_url)
        ("http://foo.com/?b=2&a=1&b=1", "http://foo.com/?b=2&a=1&b=1"),
        # IDN host to punycode; trailing dot dropped
        ("http://Bücher.de/", "http://xn--bcher-kva.de/"),
        ("http://xn--bcher-kva.de/", "http://xn--bcher-kva.de/"),
        ("http://www.foo.com./", "http://www.foo.com/"),
        # IPv4/IPv6 hosts, user info
        ("http://127.0.0.1:80/", "http://127.0.0.1/"),
        ("http://[::1]:8080/x", "http://[::1]:8080/x"),
        ("http://user:pw@FOO.com:80/x", "http://foo.com/x"),  # credentials never reach row keys (NUTCH-3087)
        ("ftp://user:pw@FOO.com:21/x", "ftp://user:pw@foo.com/x"),
        # surrounding whitespace and embedded newlines/tabs
        ("  http://foo.com/a\n", "http://foo.com/a"),
        ("http://foo.com/a\tb", "http://foo.com/ab"),
        # file URLs
        ("file:///var/www/./index.html", "file:///var/www/index.html"),
    ],
)
def test_normalize(url: str, expected: str) -> None:
    assert normalize(url) == expected


@pytest.mark.parametrize(
    "url",
    [
        "",
        "not a url",
        "foo.com/index.html",
        "http://",
        "http:///path",
        "http:foo.com",
        "http://exa mple.com/",
        "http://a..b/",
        "http://-foo.com/",
        "http://" + "a" * 64 + ".com/",
        "http://foo.com:99999/",
        "http://foo.com:8x/",
        "mailto:someone@foo.com",
        "javascript:void(0)",
        "data:text/plain,hi",
        "gopher://foo.com/",
    ],
)
def test_unnormalizable_urls_give_none(url: str) -> None:
    assert normalize(url) is None


@pytest.mark.parametrize("scope", sorted(SCOPES))
def test_all_scopes_apply_the_basic_rules(scope: str) -> None:
    normalizers = URLNormalizers([BasicURLNormalizer(None)], scope)  # type: ignore[arg-type]
    assert normalizers.scope == scope
    assert normalizers.normalize("HTTP://Foo.com:80/a/../b#x") == "http://foo.com/b"
    assert URLNormalizers([BasicURLNormalizer(None)]).normalize(  # type: ignore[arg-type]
        "HTTP://Foo.com", scope=scope) == "http://foo.com/"


def test_unknown_scope_uses_default_rules() -> None:
    chain = URLNormalizers([BasicURLNormalizer(None)], "no-such-scope")  # type: ignore[arg-type]
    assert chain.normalize("http://FOO.com") == "http://foo.com/"


def test_scopes_are_nutchs() -> None:
    assert {
        "default",
        "inject",
        "generate_host_count",
        "partition",
        "fetcher",
        "outlink",
        "indexer",
    } == SCOPES


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("/a/./b/../c", "/a/c"),
        ("/a/b/c/./../../g", "/a/g"),
        ("/..", "/"),
        ("/.", "/"),
        ("/a//b/../c", "/a//c"),
        ("/a/b/../..", "/"),
        ("", ""),
        ("relative/../x", "relative/../x"),
    ],
)
def test_remove_dot_segments(path: str, expected: str) -> None:
    assert remove_dot_segments(path) == expected


def test_normalize_percent_encoding() -> None:
    assert normalize_percent_encoding("%7e%2f%2F%41%") == "~%2F%2FA%25"


_url_chars = st.text(st.sampled_from(list("abcXYZ019-._~!$&'()*+,;=:@/?#%[] äü\"<>{}|\\^`")), max_size=30)


@given(
    st.sampled_from(["http", "HTTPS", "ftp", "file"]),
    st.sampled_from(["foo.com", "FOO.Com", "xn--bcher-kva.de", "bücher.de", "10.0.0.1", "[::1]"]),
    st.sampled_from(["", ":80", ":443", ":8080"]),
    _url_chars,
)
def test_normalize_is_idempotent(scheme: str, host: str, port: str, rest: str) -> None:
    url = f"{scheme}://{host}{port}/{rest}"
    once = normalize(url)
    if once is not None:
        assert normalize(once) == once
        assert "#" not in once
        assert " " not in once


# ---------------------------------------------------------------- the fast path agrees with the full rules
_label = st.from_regex(r"[a-z0-9]([a-z0-9-]{0,8}[a-z0-9])?", fullmatch=True)
_segment = st.text(alphabet="abcXYZ019._~!$&'()*+,;=:@-", max_size=8)


@settings(max_examples=500)
@given(
    scheme=st.sampled_from(["http", "https"]),
    labels=st.lists(_label, min_size=1, max_size=4),
    port=st.one_of(st.none(), st.integers(1, 65535)),
    segments=st.lists(_segment, max_size=5),
    query=st.one_of(st.none(), st.text(alphabet="abc019=&/?:@-._~", max_size=12)),
)
def test_fast_path_matches_full_rules(scheme, labels, port, segments, query) -> None:
    from nutch2.plugins.urlnormalizer_basic.normalizer import _already_normal, _full_normalize

    url = f"{scheme}://{'.'.join(labels)}" + (f":{port}" if port else "") + "/" + "/".join(segments)
    if query is not None:
        url += "?" + query
    if _already_normal(url):
        assert _full_normalize(url) == url
