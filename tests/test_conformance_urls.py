"""Conformance: URL normalisation and URL utilities against Apache Nutch's own test vectors.

Sources (vectors ported, not code):
- apache/nutch master, src/plugin/urlnormalizer-basic/src/test/org/apache/nutch/net/urlnormalizer/basic/
  TestBasicURLNormalizer.java (the 2.x branch's vectors are a subset of these)
- apache/nutch master, src/test/org/apache/nutch/util/TestURLUtil.java (getDomainName, getDomainSuffix,
  getTopLevelDomainName, chooseRepr, resolveURL with RFC 3986 5.4.1, toASCII/toUNICODE, convertIDNA2008)

Where nutch2 deliberately differs from Nutch (README, "Differences from Nutch"), the vector's nutch2 result and
the reason are listed in a *_DIFFERS table; every other vector must give Nutch's answer.
"""

from __future__ import annotations

import pytest

# ---------------------------------------------------------------- TestBasicURLNormalizer (default configuration)
BASIC: list[tuple[str, str]] = [
    # testNUTCH1098
    ("http://foo.com/%66oo.html", "http://foo.com/foo.html"),
    ("http://foo.com/%66oo.htm%6c", "http://foo.com/foo.html"),
    ("http://foo.com/%66oo.ht%6dl", "http://foo.com/foo.html"),
    ("http://foo.com/%66oo.ht%6d%6c", "http://foo.com/foo.html"),
    ("http://foo.com/%66oo.htm%C0", "http://foo.com/foo.htm%C0"),
    ("http://foo.com/%66oo.htm%1A", "http://foo.com/foo.htm%1A"),
    ("http://foo.com/%66oo.htm%c0", "http://foo.com/foo.htm%C0"),
    ("http://foo.com/you%20too.html", "http://foo.com/you%20too.html"),
    ("http://foo.com/you too.html", "http://foo.com/you%20too.html"),
    ("http://foo.com/file.html%23cz", "http://foo.com/file.html%23cz"),
    ("http://foo.com/fast/dir%2fcz", "http://foo.com/fast/dir%2Fcz"),
    ("http://foo.com/\u001a!", "http://foo.com/%1A!"),
    ("http://foo.com/\u0001!", "http://foo.com/%01!"),
    ("http://mydomain.com/en Espa\u00f1ol.aspx", "http://mydomain.com/en%20Espa%C3%B1ol.aspx"),
    # testNUTCH2064
    ("http://x.com/s?q=a%26b&m=10", "http://x.com/s?q=a%26b&m=10"),
    ("http://x.com/show?http%3A%2F%2Fx.com%2Fb", "http://x.com/show?http%3A%2F%2Fx.com%2Fb"),
    ("http://google.com/search?q=c%2B%2B", "http://google.com/search?q=c%2B%2B"),
    ("http://x.com/s?q=a+b", "http://x.com/s?q=a+b"),
    ("http://b\u00fccher.de/", "http://b\u00fccher.de/"),
    ("http://x.com/./a/../%66.html", "http://x.com/f.html"),
    ("http://x.com/?x[y]=1", "http://x.com/?x%5By%5D=1"),
    ("http://x.com/foo\u0080", "http://x.com/foo%C2%80"),
    ("http://x.com/foo%c2%80", "http://x.com/foo%C2%80"),
    # testNormalizer
    (" http://foo.com/ ", "http://foo.com/"),
    ("HTTP://foo.com/", "http://foo.com/"),
    ("http://Foo.Com/index.html", "http://foo.com/index.html"),
    ("https://example%2Ecom/", "https://example.com/"),
    ("https://www.0251-sachverst%c3%a4ndiger.de/", "https://www.0251-sachverst\u00e4ndiger.de/"),
    ("http://foo.com:80/index.html", "http://foo.com/index.html"),
    ("https://foo.com:443/index.html", "https://foo.com/index.html"),
    ("http://foo.com:81/", "http://foo.com:81/"),
    ("http://example.com:/", "http://example.com/"),
    ("https://example.com:/foobar.html", "https://example.com/foobar.html"),
    ("http://foo.com", "http://foo.com/"),
    ("http://foo.com/foo.html#ref", "http://foo.com/foo.html"),
    ("http://foo.com/..", "http://foo.com/"),
    ("http://foo.com/aa/./foo.html", "http://foo.com/aa/foo.html"),
    ("http://foo.com/aa/../", "http://foo.com/"),
    ("http://foo.com/aa/bb/../", "http://foo.com/aa/"),
    ("http://foo.com/aa/..", "http://foo.com/"),
    ("http://foo.com/aa/bb/cc/../../foo.html", "http://foo.com/aa/foo.html"),
    ("http://foo.com/aa/bb/../cc/dd/../ee/foo.html", "http://foo.com/aa/cc/ee/foo.html"),
    ("http://foo.com/../foo.html", "http://foo.com/foo.html"),
    ("http://foo.com/../../foo.html", "http://foo.com/foo.html"),
    ("http://foo.com/../aa/../foo.html", "http://foo.com/foo.html"),
    ("http://foo.com/aa/../../foo.html", "http://foo.com/foo.html"),
    ("http://foo.com/aa/../bb/../foo.html/../../", "http://foo.com/"),
    ("http://foo.com/../aa/foo.html", "http://foo.com/aa/foo.html"),
    ("http://foo.com/a..a/foo.html", "http://foo.com/a..a/foo.html"),
    ("http://foo.com/a..a/../foo.html", "http://foo.com/foo.html"),
    ("http://foo.com/foo.foo/../foo.html", "http://foo.com/foo.html"),
    ("http://foo.com//aa/bb/foo.html", "http://foo.com/aa/bb/foo.html"),
    ("http://foo.com/aa//bb/foo.html", "http://foo.com/aa/bb/foo.html"),
    ("http://foo.com/aa/bb//foo.html", "http://foo.com/aa/bb/foo.html"),
    ("http://foo.com//aa//bb//foo.html", "http://foo.com/aa/bb/foo.html"),
    ("http://foo.com////aa////bb////foo.html", "http://foo.com/aa/bb/foo.html"),
    ("http://foo.com/aa?referer=http://bar.com", "http://foo.com/aa?referer=http://bar.com"),
    ("file:///foo/bar.txt", "file:///foo/bar.txt"),
    ("ftp:/", "ftp:/"),
    ("http:", "http:/"),
    ("http:////", "http:/"),
    ("http:///////", "http:/"),
    ("http://example.com?a=1", "http://example.com/?a=1"),
    ("http://www.example.com/a/c/../b/search?q=foobar|", "http://www.example.com/a/b/search?q=foobar%7C"),
    ("http://www.example.com/a/c/../b/search?q=foobar%", "http://www.example.com/a/b/search?q=foobar%25"),
    ('http://www.example.com/a/c/../b/search?q=foobar"', "http://www.example.com/a/b/search?q=foobar%22"),
    ("http://www.example.com/a/c/../b/search?q=foobar^", "http://www.example.com/a/b/search?q=foobar%5E"),
    ("http://www.example.com/a/c/../b/search?q=foobar<", "http://www.example.com/a/b/search?q=foobar%3C"),
    ("http://www.example.com/a/c/../b/search?q=foobar>", "http://www.example.com/a/b/search?q=foobar%3E"),
    ("http://www.example.com/a/c/../b/search?q=foobar`", "http://www.example.com/a/b/search?q=foobar%60"),
    ("http://www.example.com/p%zz%77%v", "http://www.example.com/p%25zzw%25v"),
    ("http://www.example.com/search?q=foobar%", "http://www.example.com/search?q=foobar%25"),
    ("http://www.example.com/search?q=foobar%2", "http://www.example.com/search?q=foobar%252"),
    ("http://www.example.com/search?q=foobar%25", "http://www.example.com/search?q=foobar%25"),
    ("http://www.example.com/search?q=foobar%252", "http://www.example.com/search?q=foobar%252"),
    ("file:/var/www/html/foo/../bar/index.html", "file:/var/www/html/bar/index.html"),
    ("file:/var/www/html/////./bar/index.html", "file:/var/www/html/bar/index.html"),
    # testNUTCH3087
    ("ftp://user@ftp.example.org/path/file.txt", "ftp://user@ftp.example.org/path/file.txt"),
    ("ftp://john.doe@ftp.example.org/", "ftp://john.doe@ftp.example.org/"),
    ("ftp://user:password@ftp.example.org/path/file.txt", "ftp://user:password@ftp.example.org/path/file.txt"),
    ("https://john.doe@www.example.com:1234/forum/questions/?tag=networking&order=newest#top",
     "https://www.example.com:1234/forum/questions/?tag=networking&order=newest"),
    ("ftp://user@[2600:1f18:200d:fb00:2b74:867c:ab0c:150a]/../path/file.txt",
     "ftp://user@[2600:1f18:200d:fb00:2b74:867c:ab0c:150a]/path/file.txt"),
    ("https://user@[2600:1f18:200d:fb00:2b74:867c:ab0c:150a]/", "https://[2600:1f18:200d:fb00:2b74:867c:ab0c:150a]/"),
    ("https://user@[2600:1f18:200d:fb00:2b74:867c:ab0c:150a]:443/",
     "https://[2600:1f18:200d:fb00:2b74:867c:ab0c:150a]/"),
    ("https://user@[2600:1f18:200d:fb00:2b74:867c:ab0c:150a]/path/../to/index.html",
     "https://[2600:1f18:200d:fb00:2b74:867c:ab0c:150a]/to/index.html"),
    # testCurlyBraces
    ("http://foo.com/{{stuff}} ", "http://foo.com/%7B%7Bstuff%7D%7D"),
    # testHostName (default configuration)
    ("https://www.example.org/", "https://www.example.org/"),
    # testHostName / testHostNameIDNA2008 with urlnormalizer.basic.host.idn=toAscii (and IDNA2008 where both exist)
    ("https://\u043d\u044d\u0431.\u0440\u0444/", "https://xn--90ax2c.xn--p1ai/"),
    ("https://www.0251-sachverst%c3%a4ndiger.de/ ", "https://www.xn--0251-sachverstndiger-ozb.de/"),
    ("https://\u043d\u042d\u0431.\u0420\u0424/", "https://xn--90ax2c.xn--p1ai/"),
    ("https://www.example.org./", "https://www.example.org/"),
    ("https://stra\u00dfe.de/", "https://xn--strae-oqa.de/"),
    ("https://example.\u1b29\u1b2e\u1b36.id/", "https://example.xn--9tfky.id/"),
    ("https://xn--p1ai.%D1%80%D1%84/", "https://xn--p1ai.xn--p1ai/"),
    ("https://xn--p1ai.\u0440\u0444/", "https://xn--p1ai.xn--p1ai/"),
]

_PUNY = "hosts are always punycoded (IDNA2008 + UTS #46), so one site has one row key"
_HOSTLESS = "a URL without a host cannot be fetched or keyed; it is rejected (None)"
BASIC_DIFFERS: dict[str, tuple[str | None, str]] = {
    "http://b\u00fccher.de/": ("http://xn--bcher-kva.de/", _PUNY),
    "https://www.0251-sachverst%c3%a4ndiger.de/": ("https://www.xn--0251-sachverstndiger-ozb.de/", _PUNY),
    "ftp:/": (None, _HOSTLESS),
    "http:": (None, _HOSTLESS),
    "http:////": (None, _HOSTLESS),
    "http:///////": (None, _HOSTLESS),
}

# testInvalidURLs: Nutch throws MalformedURLException, nutch2 returns None
BASIC_INVALID = ["https://example%2Xcom/", "https://abc%FEdef.org/"]


def _normalize(url: str) -> str | None:
    from nutch2.plugins.urlnormalizer_basic.normalizer import normalize

    return normalize(url)


@pytest.mark.parametrize(("url", "nutch"), BASIC)
def test_basic_normalizer(url: str, nutch: str) -> None:
    expected = BASIC_DIFFERS[url][0] if url in BASIC_DIFFERS else nutch
    assert _normalize(url) == expected


@pytest.mark.parametrize("url", BASIC_INVALID)
def test_basic_normalizer_invalid(url: str) -> None:
    assert _normalize(url) is None


# ---------------------------------------------------------------- TestURLUtil
# (host, getDomainName); hosts given in Unicode are compared in their ASCII (punycode) form
DOMAIN_NAME: list[tuple[str, str]] = [
    ("lucene.apache.org", "apache.org"),
    ("lucene.apache.org.", "apache.org"),
    ("en.wikipedia.org", "wikipedia.org"),
    ("140.211.11.130", "140.211.11.130"),
    ("www.example.co.uk", "example.co.uk"),
    ("com", "com"),
    ("www.example.co.uk.com", "uk.com"),
    ("example.com.nn", "example.com.nn"),
    ("", ""),
    ("www.edu.tr.xyz", "tr.xyz"),
    ("www.example.c.se", "example.c.se"),
    ("www.example.plc.co.im", "example.plc.co.im"),
    ("www.example.2000.hu", "example.2000.hu"),
    ("www.example.fl\u00e5.no", "example.fl\u00e5.no"),
    ("www.example.\u6803\u6728.jp", "example.\u6803\u6728.jp"),
]

# (host, getDomainSuffix or None)
DOMAIN_SUFFIX: list[tuple[str, str | None]] = [
    ("lucene.apache.org", "org"),
    ("lucene.apache.org.", "org"),
    ("140.211.11.130", None),
    ("www.example.co.uk", "co.uk"),
    ("com", "com"),
    ("www.example.co.uk.com", "com"),
    ("example.com.nn", None),
    ("", None),
    ("www.edu.tr.xyz", "xyz"),
    ("subdomain.example.edu.tr", "edu.tr"),
    ("subdomain.example.presse.fr", "fr"),
    ("subdomain.example.presse.tr", "tr"),
    ("www.example.plc.co.im", "plc.co.im"),
    ("www.example.2000.hu", "2000.hu"),
    ("www.taiuru.m\u0101ori.nz", "xn--mori-qsa.nz"),
    ("www.example.fl\u00e5.no", "xn--fl-zia.no"),
    ("www.example.\u6803\u6728.jp", "xn--4pvxs.jp"),
]

# (host, getTopLevelDomainName or None)
TOP_LEVEL_DOMAIN: list[tuple[str, str | None]] = [
    ("lucene.apache.org", "org"),
    ("lucene.apache.org.", "org"),
    ("140.211.11.130", None),
    ("www.example.co.uk", "uk"),
    ("example.com.nn", None),
    ("", None),
    ("nic.\uc0bc\uc131", "xn--cg4bki"),
]


def _ascii(host: str) -> str:
    from nutch2.plugins.urlnormalizer_basic.normalizer import host_to_ascii

    return (host_to_ascii(host) or host) if host else host


@pytest.mark.parametrize(("host", "nutch"), DOMAIN_NAME)
def test_get_domain_name(host: str, nutch: str) -> None:
    from nutch2.urls.domains import domain_of_host

    assert domain_of_host(_ascii(host)) == _ascii(nutch)


@pytest.mark.parametrize(("host", "nutch"), DOMAIN_SUFFIX)
def test_get_domain_suffix(host: str, nutch: str | None) -> None:
    from nutch2.urls.domains import domain_suffix_of_host

    assert domain_suffix_of_host(_ascii(host)) == nutch


@pytest.mark.parametrize(("host", "nutch"), TOP_LEVEL_DOMAIN)
def test_get_top_level_domain(host: str, nutch: str | None) -> None:
    from nutch2.urls.domains import top_level_domain_of_host

    assert top_level_domain_of_host(_ascii(host)) == nutch


_A, _B, _A_SUB = "http://www.a.com", "http://www.b.com", "http://www.news.a.com"
_A_Q, _A_PATH = "http://www.a.com?y=1", "http://www.a.com/xyz/index.html"
_A_PATH2, _A_PATH3 = "http://www.a.com/abc/page.html", "http://www.news.a.com/abc/page.html"
# (src, dst, temp, chooseRepr)
CHOOSE_REPR: list[tuple[str, str, bool, str]] = [
    (_A, _B, True, _B),
    (_A, _B, False, _B),
    (_A, _A_Q, False, _A),
    (_A, _A_PATH, False, _A),
    (_A_PATH, _A, False, _A),
    (_A_PATH, _A_PATH2, False, _A_PATH2),
    (_A, _A_PATH, True, _A),
    (_A_PATH, _A, True, _A),
    (_A_PATH, _A_PATH2, True, _A_PATH2),
    (_A_PATH, _A_PATH3, True, _A_PATH),
    (_A, _A_SUB, True, _A),
]


@pytest.mark.parametrize(("src", "dst", "temp", "nutch"), CHOOSE_REPR)
def test_choose_repr(src: str, dst: str, temp: bool, nutch: str) -> None:
    from nutch2.urls.checker import choose_repr

    assert choose_repr(src, dst, temp) == nutch


# testResolveURL: RFC 3986 section 5.4.1 against "http://a/b/c/d;p?q", NUTCH-436 and NUTCH-566
RESOLVE: list[tuple[str, str, str]] = [
    ("http://a/b/c/d;p?q#f", "?y", "http://a/b/c/d;p?y"),
    ("http://www.fleurie.org/entreprise.asp", "?id_entrep=111", "http://www.fleurie.org/entreprise.asp?id_entrep=111"),
] + [("http://a/b/c/d;p?q", rel, absolute) for rel, absolute in [
    ("g", "http://a/b/c/g"), ("./g", "http://a/b/c/g"), ("g/", "http://a/b/c/g/"), ("/g", "http://a/g"),
    ("//g", "http://g"), ("?y", "http://a/b/c/d;p?y"), ("g?y", "http://a/b/c/g?y"), ("#s", "http://a/b/c/d;p?q#s"),
    ("g#s", "http://a/b/c/g#s"), ("g?y#s", "http://a/b/c/g?y#s"), (";x", "http://a/b/c/;x"),
    ("g;x", "http://a/b/c/g;x"), ("g;x?y#s", "http://a/b/c/g;x?y#s"), ("", "http://a/b/c/d;p?q"),
    (".", "http://a/b/c/"), ("./", "http://a/b/c/"), ("..", "http://a/b/"), ("../", "http://a/b/"),
    ("../g", "http://a/b/g"), ("../..", "http://a/"), ("../../", "http://a/"), ("../../g", "http://a/g"),
]]
_FRAGMENT = "outlinks never carry a fragment: the same document, one row"
RESOLVE_DIFFERS: dict[str, tuple[str | None, str]] = {
    "#s": (None, "a link to a fragment of the page itself is no outlink"),
    "g#s": ("http://a/b/c/g", _FRAGMENT),
    "g?y#s": ("http://a/b/c/g?y", _FRAGMENT),
    "g;x?y#s": ("http://a/b/c/g;x?y", _FRAGMENT),
    "": (None, "an empty href is no outlink (it is the page itself)"),
}


@pytest.mark.parametrize(("base", "rel", "nutch"), RESOLVE)
def test_resolve_url(base: str, rel: str, nutch: str) -> None:
    from nutch2.parse.html import resolve_link

    expected = RESOLVE_DIFFERS[rel][0] if rel in RESOLVE_DIFFERS and base.endswith("?q") else nutch
    assert resolve_link(base, rel) == expected


# toASCII / toUNICODE and convertIDNA2008 (hosts only; nutch2 converts hosts, never whole URLs)
# (unicode host, ascii host)
IDNA2008: list[tuple[str, str]] = [
    ("www.\u00e7evir.com", "www.xn--evir-zoa.com"),
    ("uni-t\u00fcbingen.de", "xn--uni-tbingen-xhb.de"),
    ("www.medizin.uni-t\u00fcbingen.de", "www.medizin.xn--uni-tbingen-xhb.de"),
    ("example.\u1b29\u1b2e\u1b36.id", "example.xn--9tfky.id"),
    ("stra\u00dfe.de", "xn--strae-oqa.de"),
    ("googie.com", "googie.com"),
    ("\u043d\u044d\u0431.\u0440\u0444", "xn--90ax2c.xn--p1ai"),
    ("\u2615.example", "xn--53h.example"),
    ("\u00e0.\u05d0\u0308", "xn--0ca.xn--ssa73l"),
    ("\u0646\u0627\u0645\u0647\u200c\u0627\u06cc.com", "xn--mgba3gch31f060k.com"),
    ("fa\u00df.de", "xn--fa-hia.de"),
    ("\u03b2\u03cc\u03bb\u03bf\u03c2.com", "xn--nxasmm1c.com"),
    ("\u0dc1\u0dca\u200d\u0dbb\u0dd3.com", "xn--10cl1a0b660p.com"),
]
IDNA2008_DIFFERS: dict[str, tuple[str | None, str]] = {
    "\u2615.example": (None, "IDNA2008 (the idna package) disallows symbols such as emoji; such hosts are rejected"),
}
# to ASCII only (upper case in the input: no round trip)
TO_ASCII_ONLY: list[tuple[str, str]] = [
    ("googIe.com", "googie.com"),
    ("\u043d\u042d\u0431.\u0420\u0424", "xn--90ax2c.xn--p1ai"),
]
TO_UNICODE_ONLY: list[tuple[str, str]] = [
    ("Xn--90Ax2c.xN--P1ai", "\u043d\u044d\u0431.\u0440\u0444"),
    ("googIe.com", "googie.com"),
]
# testConvertHostInvalid (IDNA2008 part): (host, to_ascii?) that must be rejected
IDNA2008_INVALID: list[tuple[str, bool]] = [
    ("xn--0.pt", False),
    ("\u2488com", True),
    ("xn--acom-0w1b", False),
    ("xn--xn--a--gua.pt", False),
    ("xn--a-\u00e4.pt", False),
    ("xn--a-\u00e4.pt", True),
    ("\u0e01" * 1001, True),
    ("\U0001f600" * 501, True),
    ("\U00020000" * 600, True),
    ("\u0e01" * 1000, True),
    (".", True),
]


@pytest.mark.parametrize(("unicode", "ascii"), IDNA2008 + TO_ASCII_ONLY)
def test_to_ascii(unicode: str, ascii: str) -> None:
    from nutch2.plugins.urlnormalizer_basic.normalizer import host_to_ascii

    expected = IDNA2008_DIFFERS[unicode][0] if unicode in IDNA2008_DIFFERS else ascii
    assert host_to_ascii(unicode) == expected


@pytest.mark.parametrize(("unicode", "ascii"), IDNA2008 + [(u, a) for a, u in TO_UNICODE_ONLY])
def test_to_unicode(unicode: str, ascii: str) -> None:
    from nutch2.plugins.urlnormalizer_basic.normalizer import host_to_unicode

    expected = ascii if unicode in IDNA2008_DIFFERS else unicode  # undecodable: left as it is
    assert host_to_unicode(ascii) == expected


@pytest.mark.parametrize(("host", "to_ascii"), IDNA2008_INVALID)
def test_idna2008_invalid(host: str, to_ascii: bool) -> None:
    from nutch2.plugins.urlnormalizer_basic.normalizer import host_to_ascii, idna_to_unicode

    if to_ascii:
        assert host_to_ascii(host) is None
    else:
        assert idna_to_unicode(host) is None


def test_file_protocol_keeps_one_slash() -> None:
    """NUTCH-1483: file:/path keeps its single slash."""
    assert _normalize("file:/path/file.html") == "file:/path/file.html"


# ---------------------------------------------------------------- agreement figures (tests/conformance.py)
def _agrees(check) -> bool:
    try:
        return bool(check())
    except (AttributeError, ImportError, NameError):  # this script is out of date with the code: say so
        raise
    except Exception:  # noqa: BLE001 - a crash on a vector is a disagreement
        return False


def agreement() -> dict[str, tuple[int, int]]:
    """How many vectors give exactly the source's answer, per source: {source: (agree, total)}."""
    import nutch2.parse.html as parse
    import nutch2.plugins.urlnormalizer_basic.normalizer as un
    import nutch2.urls.checker as urls
    import nutch2.urls.domains as domains

    basic = [_agrees(lambda u=u, n=n: un.normalize(u) == n) for u, n in BASIC]
    basic += [_agrees(lambda u=u: un.normalize(u) is None) for u in BASIC_INVALID]
    util = [_agrees(lambda h=h, n=n: domains.domain_of_host(_ascii(h)) == _ascii(n)) for h, n in DOMAIN_NAME]
    util += [_agrees(lambda h=h, n=n: domains.domain_suffix_of_host(_ascii(h)) == n) for h, n in DOMAIN_SUFFIX]
    util += [_agrees(lambda h=h, n=n: domains.top_level_domain_of_host(_ascii(h)) == n) for h, n in TOP_LEVEL_DOMAIN]
    util += [_agrees(lambda s=s, d=d, t=t, n=n: urls.choose_repr(s, d, t) == n) for s, d, t, n in CHOOSE_REPR]
    resolve = getattr(parse, "resolve_link", None) or getattr(parse, "_resolve", None)
    util += [_agrees(lambda b=b, r=r, n=n: resolve(b, r) == n) for b, r, n in RESOLVE]
    util += [_agrees(lambda u=u, a=a: un.host_to_ascii(u) == a) for u, a in IDNA2008 + TO_ASCII_ONLY]
    util += [_agrees(lambda u=u, a=a: un.host_to_unicode(a) == u) for u, a in IDNA2008]
    util += [_agrees(lambda a=a, u=u: un.host_to_unicode(a) == u) for a, u in TO_UNICODE_ONLY]
    util += [_agrees(lambda h=h, t=t: (un.host_to_ascii(h) if t else un.idna_to_unicode(h)) is None)
             for h, t in IDNA2008_INVALID]
    util += [_agrees(lambda: un.normalize("file:/path/file.html") == "file:/path/file.html")]
    return {"nutch TestBasicURLNormalizer": (sum(basic), len(basic)), "nutch TestURLUtil": (sum(util), len(util))}


def test_the_agreement_script_runs_and_counts_what_the_tests_pass() -> None:
    """`python -m tests.conformance` must not miscount when code moves (a renamed function is an error, not a
    disagreement): every URLUtil domain vector the tests above pass is counted as agreeing."""
    from tests import conformance

    assert conformance.main() == 0
    agree, _ = agreement()["nutch TestURLUtil"]
    assert agree >= len(DOMAIN_NAME) + len(DOMAIN_SUFFIX) + len(TOP_LEVEL_DOMAIN)  # all pass test_get_* above
