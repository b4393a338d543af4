"""Conformance: robots.txt parsing and matching (RFC 9309) against external test vectors.

Sources (vectors ported, not code):
- google/robotstxt robots_test.cc (Google's reference parser; the RFC 9309 cases and the "GoogleOnly" ones)
- crawler-commons/crawler-commons src/test/java/crawlercommons/robots/SimpleRobotRulesParserTest.java (the parser
  Nutch uses), the cases that run with RFC 9309 exact user-agent matching (its default); files it reads are copied
  unchanged into tests/data/crawler-commons/robots/. Cases for its legacy prefix matching of whole User-Agent
  strings, its extension API and warning counts are not ported: nutch2 has no such API.

A case is (robots.txt, agents, [(url, allowed), ...]); agents is the crawler's product tokens in order of
precedence (http.robots.agents). Crawl-delay cases give seconds (None: not set).
"""

from __future__ import annotations

from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data" / "crawler-commons" / "robots"
Case = tuple[str, "str | bytes", tuple[str, ...], list[tuple[str, bool]]]

# ---------------------------------------------------------------- google/robotstxt robots_test.cc
_G_GROUPS = ("allow: /foo/bar/\n\nuser-agent: FooBot\ndisallow: /\nallow: /x/\nuser-agent: BarBot\ndisallow: /\n"
             "allow: /y/\n\n\nallow: /w/\nuser-agent: BazBot\n\nuser-agent: FooBot\nallow: /z/\ndisallow: /\n")
_G_UA_CASE = "User-Agent: {}\nAllow: /x/\nDisallow: /\n"
_G_LONG = 2083 * 8


def _google_long_lines() -> list[Case]:
    """GoogleOnly_LineTooLong: lines are cut after 8 * 2083 bytes."""
    longline = "/x/"
    max_length = _G_LONG - len(longline) - len("disallow: ") + 1
    longline += "a" * (max_length - len(longline))
    robots1 = "user-agent: FooBot\n" + "disallow: " + longline + "/qux\n"
    longline_a = longline_b = "/x/"
    max_length = _G_LONG - len(longline_a) - len("allow: ") + 1
    longline_a += "a" * (max_length - len(longline_a))
    longline_b += "b" * (max_length - len(longline_b))
    robots2 = "user-agent: FooBot\ndisallow: /\n" + f"allow: {longline_a}/qux\n" + f"allow: {longline_b}/qux\n"
    return [
        ("GoogleOnly_LineTooLong 1", robots1, ("FooBot",),
         [("http://foo.bar/fux", True), (f"http://foo.bar{longline}/fux", False)]),
        ("GoogleOnly_LineTooLong 2", robots2, ("FooBot",),
         [("http://foo.bar/", False), (f"http://foo.bar{longline_a}/qux", True),
          (f"http://foo.bar{longline_b}/fux", True)]),
    ]


GOOGLE: list[Case] = [
    ("GoogleOnly_SystemTest empty robots", "", ("FooBot",), [("http://foo.bar/", True)]),
    ("GoogleOnly_SystemTest empty agent", "user-agent: FooBot\ndisallow: /\n", ("",), [("http://foo.bar/", True)]),
    ("ID_LineSyntax_Line correct", "user-agent: FooBot\ndisallow: /\n", ("FooBot",), [("http://foo.bar/x/y", False)]),
    ("ID_LineSyntax_Line incorrect", "foo: FooBot\nbar: /\n", ("FooBot",), [("http://foo.bar/x/y", True)]),
    ("ID_LineSyntax_Line missing colon", "user-agent FooBot\ndisallow /\n", ("FooBot",),
     [("http://foo.bar/x/y", False)]),
    ("ID_LineSyntax_Groups FooBot", _G_GROUPS, ("FooBot",),
     [("http://foo.bar/x/b", True), ("http://foo.bar/z/d", True), ("http://foo.bar/y/c", False),
      ("http://foo.bar/foo/bar/", False)]),
    ("ID_LineSyntax_Groups BarBot", _G_GROUPS, ("BarBot",),
     [("http://foo.bar/y/c", True), ("http://foo.bar/w/a", True), ("http://foo.bar/z/d", False),
      ("http://foo.bar/foo/bar/", False)]),
    ("ID_LineSyntax_Groups BazBot", _G_GROUPS, ("BazBot",),
     [("http://foo.bar/z/d", True), ("http://foo.bar/foo/bar/", False)]),
    ("ID_LineSyntax_Groups_OtherRules sitemap FooBot",
     "User-agent: BarBot\nSitemap: https://foo.bar/sitemap\nUser-agent: *\nDisallow: /\n", ("FooBot",),
     [("http://foo.bar/", False)]),
    ("ID_LineSyntax_Groups_OtherRules sitemap BarBot",
     "User-agent: BarBot\nSitemap: https://foo.bar/sitemap\nUser-agent: *\nDisallow: /\n", ("BarBot",),
     [("http://foo.bar/", False)]),
    ("ID_LineSyntax_Groups_OtherRules unknown FooBot",
     "User-agent: FooBot\nInvalid-Unknown-Line: unknown\nUser-agent: *\nDisallow: /\n", ("FooBot",),
     [("http://foo.bar/", False)]),
    ("ID_LineSyntax_Groups_OtherRules unknown BarBot",
     "User-agent: FooBot\nInvalid-Unknown-Line: unknown\nUser-agent: *\nDisallow: /\n", ("BarBot",),
     [("http://foo.bar/", False)]),
] + [
    (f"ID_REPLineNamesCaseInsensitive {i}", robots, ("FooBot",),
     [("http://foo.bar/x/y", True), ("http://foo.bar/a/b", False)])
    for i, robots in enumerate(["USER-AGENT: FooBot\nALLOW: /x/\nDISALLOW: /\n",
                                "user-agent: FooBot\nallow: /x/\ndisallow: /\n",
                                "uSeR-aGeNt: FooBot\nAlLoW: /x/\ndIsAlLoW: /\n"])
] + [
    (f"ID_UserAgentValueCaseInsensitive {line} {agent}", _G_UA_CASE.format(line), (agent,),
     [("http://foo.bar/x/y", True), ("http://foo.bar/a/b", False)])
    for line in ("FOO BAR", "foo bar", "FoO bAr") for agent in ("Foo", "foo")
] + [
    ("GoogleOnly_AcceptUserAgentUpToFirstSpace Foo",
     "User-Agent: *\nDisallow: /\nUser-Agent: Foo Bar\nAllow: /x/\nDisallow: /\n", ("Foo",),
     [("http://foo.bar/x/y", True)]),
    ("GoogleOnly_AcceptUserAgentUpToFirstSpace Foo Bar",
     "User-Agent: *\nDisallow: /\nUser-Agent: Foo Bar\nAllow: /x/\nDisallow: /\n", ("Foo Bar",),
     [("http://foo.bar/x/y", False)]),
    ("ID_GlobalGroups_Secondary empty", "", ("FooBot",), [("http://foo.bar/x/y", True)]),
    ("ID_GlobalGroups_Secondary global FooBot", "user-agent: *\nallow: /\nuser-agent: FooBot\ndisallow: /\n",
     ("FooBot",), [("http://foo.bar/x/y", False)]),
    ("ID_GlobalGroups_Secondary global BarBot", "user-agent: *\nallow: /\nuser-agent: FooBot\ndisallow: /\n",
     ("BarBot",), [("http://foo.bar/x/y", True)]),
    ("ID_GlobalGroups_Secondary only specific",
     "user-agent: FooBot\nallow: /\nuser-agent: BarBot\ndisallow: /\nuser-agent: BazBot\ndisallow: /\n",
     ("QuxBot",), [("http://foo.bar/x/y", True)]),
    ("ID_AllowDisallow_Value_CaseSensitive lower", "user-agent: FooBot\ndisallow: /x/\n", ("FooBot",),
     [("http://foo.bar/x/y", False)]),
    ("ID_AllowDisallow_Value_CaseSensitive upper", "user-agent: FooBot\ndisallow: /X/\n", ("FooBot",),
     [("http://foo.bar/x/y", True)]),
    ("ID_LongestMatch 1", "user-agent: FooBot\ndisallow: /x/page.html\nallow: /x/\n", ("FooBot",),
     [("http://foo.bar/x/page.html", False)]),
    ("ID_LongestMatch 2", "user-agent: FooBot\nallow: /x/page.html\ndisallow: /x/\n", ("FooBot",),
     [("http://foo.bar/x/page.html", True), ("http://foo.bar/x/", False)]),
    ("ID_LongestMatch 3", "user-agent: FooBot\ndisallow: \nallow: \n", ("FooBot",),
     [("http://foo.bar/x/page.html", True)]),
    ("ID_LongestMatch 4", "user-agent: FooBot\ndisallow: /\nallow: /\n", ("FooBot",),
     [("http://foo.bar/x/page.html", True)]),
    ("ID_LongestMatch 5", "user-agent: FooBot\ndisallow: /x\nallow: /x/\n", ("FooBot",),
     [("http://foo.bar/x", False), ("http://foo.bar/x/", True)]),
    ("ID_LongestMatch 6", "user-agent: FooBot\ndisallow: /x/page.html\nallow: /x/page.html\n", ("FooBot",),
     [("http://foo.bar/x/page.html", True)]),
    ("ID_LongestMatch 7", "user-agent: FooBot\nallow: /page\ndisallow: /*.html\n", ("FooBot",),
     [("http://foo.bar/page.html", False), ("http://foo.bar/page", True)]),
    ("ID_LongestMatch 8", "user-agent: FooBot\nallow: /x/page.\ndisallow: /*.html\n", ("FooBot",),
     [("http://foo.bar/x/page.html", True), ("http://foo.bar/x/y.html", False)]),
    ("ID_LongestMatch 9", "User-agent: *\nDisallow: /x/\nUser-agent: FooBot\nDisallow: /y/\n", ("FooBot",),
     [("http://foo.bar/x/page", True), ("http://foo.bar/y/page", False)]),
    ("ID_Encoding 1", "User-agent: FooBot\nDisallow: /\nAllow: /foo/bar?qux=taz&baz=http://foo.bar?tar&par\n",
     ("FooBot",), [("http://foo.bar/foo/bar?qux=taz&baz=http://foo.bar?tar&par", True)]),
    ("ID_Encoding 2", "User-agent: FooBot\nDisallow: /\nAllow: /foo/bar/\u30c4\n", ("FooBot",),
     [("http://foo.bar/foo/bar/%E3%83%84", True), ("http://foo.bar/foo/bar/\u30c4", False)]),
    ("ID_Encoding 3", "User-agent: FooBot\nDisallow: /\nAllow: /foo/bar/%E3%83%84\n", ("FooBot",),
     [("http://foo.bar/foo/bar/%E3%83%84", True), ("http://foo.bar/foo/bar/\u30c4", False)]),
    ("ID_Encoding 4", "User-agent: FooBot\nDisallow: /\nAllow: /foo/bar/%62%61%7A\n", ("FooBot",),
     [("http://foo.bar/foo/bar/baz", False), ("http://foo.bar/foo/bar/%62%61%7A", True)]),
    ("ID_SpecialCharacters 1", "User-agent: FooBot\nDisallow: /foo/bar/quz\nAllow: /foo/*/qux\n", ("FooBot",),
     [("http://foo.bar/foo/bar/quz", False), ("http://foo.bar/foo/quz", True), ("http://foo.bar/foo//quz", True),
      ("http://foo.bar/foo/bax/quz", True)]),
    ("ID_SpecialCharacters 2", "User-agent: FooBot\nDisallow: /foo/bar$\nAllow: /foo/bar/qux\n", ("FooBot",),
     [("http://foo.bar/foo/bar", False), ("http://foo.bar/foo/bar/qux", True), ("http://foo.bar/foo/bar/", True),
      ("http://foo.bar/foo/bar/baz", True)]),
    ("ID_SpecialCharacters 3", "User-agent: FooBot\n# Disallow: /\nDisallow: /foo/quz#qux\nAllow: /\n", ("FooBot",),
     [("http://foo.bar/foo/bar", True), ("http://foo.bar/foo/quz", False)]),
    ("GoogleOnly_IndexHTMLisDirectory", "User-Agent: *\nAllow: /allowed-slash/index.html\nDisallow: /\n",
     ("foobot",), [("http://foo.com/allowed-slash/", True), ("http://foo.com/allowed-slash/index.htm", False),
                   ("http://foo.com/allowed-slash/index.html", True), ("http://foo.com/anyother-url", False)]),
] + _google_long_lines() + [
    ("GoogleOnly_DocumentationChecks /fish", "user-agent: FooBot\ndisallow: /\nallow: /fish\n", ("FooBot",),
     [("http://foo.bar/bar", False), ("http://foo.bar/fish", True), ("http://foo.bar/fish.html", True),
      ("http://foo.bar/fish/salmon.html", True), ("http://foo.bar/fishheads", True),
      ("http://foo.bar/fishheads/yummy.html", True), ("http://foo.bar/fish.html?id=anything", True),
      ("http://foo.bar/Fish.asp", False), ("http://foo.bar/catfish", False), ("http://foo.bar/?id=fish", False)]),
    ("GoogleOnly_DocumentationChecks /fish*", "user-agent: FooBot\ndisallow: /\nallow: /fish*\n", ("FooBot",),
     [("http://foo.bar/bar", False), ("http://foo.bar/fish", True), ("http://foo.bar/fish.html", True),
      ("http://foo.bar/fish/salmon.html", True), ("http://foo.bar/fishheads", True),
      ("http://foo.bar/fishheads/yummy.html", True), ("http://foo.bar/fish.html?id=anything", True),
      ("http://foo.bar/Fish.bar", False), ("http://foo.bar/catfish", False), ("http://foo.bar/?id=fish", False)]),
    ("GoogleOnly_DocumentationChecks /fish/", "user-agent: FooBot\ndisallow: /\nallow: /fish/\n", ("FooBot",),
     [("http://foo.bar/bar", False), ("http://foo.bar/fish/", True), ("http://foo.bar/fish/salmon", True),
      ("http://foo.bar/fish/?salmon", True), ("http://foo.bar/fish/salmon.html", True),
      ("http://foo.bar/fish/?id=anything", True), ("http://foo.bar/fish", False), ("http://foo.bar/fish.html", False),
      ("http://foo.bar/Fish/Salmon.html", False)]),
    ("GoogleOnly_DocumentationChecks /*.php", "user-agent: FooBot\ndisallow: /\nallow: /*.php\n", ("FooBot",),
     [("http://foo.bar/bar", False), ("http://foo.bar/filename.php", True),
      ("http://foo.bar/folder/filename.php", True), ("http://foo.bar/folder/filename.php?parameters", True),
      ("http://foo.bar//folder/any.php.file.html", True),
      ("http://foo.bar/filename.php/", True), ("http://foo.bar/index?f=filename.php/", True),
      ("http://foo.bar/php/", False), ("http://foo.bar/index?php", False), ("http://foo.bar/windows.PHP", False)]),
    ("GoogleOnly_DocumentationChecks /*.php$", "user-agent: FooBot\ndisallow: /\nallow: /*.php$\n", ("FooBot",),
     [("http://foo.bar/bar", False), ("http://foo.bar/filename.php", True),
      ("http://foo.bar/folder/filename.php", True), ("http://foo.bar/filename.php?parameters", False),
      ("http://foo.bar/filename.php/", False),
      ("http://foo.bar/filename.php5", False), ("http://foo.bar/php/", False), ("http://foo.bar/filename?php", False),
      ("http://foo.bar/aaaphpaaa", False), ("http://foo.bar//windows.PHP", False)]),
    ("GoogleOnly_DocumentationChecks /fish*.php", "user-agent: FooBot\ndisallow: /\nallow: /fish*.php\n", ("FooBot",),
     [("http://foo.bar/bar", False), ("http://foo.bar/fish.php", True),
      ("http://foo.bar/fishheads/catfish.php?parameters", True), ("http://foo.bar/Fish.PHP", False)]),
    ("GoogleOnly_DocumentationChecks precedence 1", "user-agent: FooBot\nallow: /p\ndisallow: /\n", ("FooBot",),
     [("http://example.com/page", True)]),
    ("GoogleOnly_DocumentationChecks precedence 2", "user-agent: FooBot\nallow: /folder\ndisallow: /folder\n",
     ("FooBot",), [("http://example.com/folder/page", True)]),
    ("GoogleOnly_DocumentationChecks precedence 3", "user-agent: FooBot\nallow: /page\ndisallow: /*.htm\n",
     ("FooBot",), [("http://example.com/page.htm", False)]),
    ("GoogleOnly_DocumentationChecks precedence 4", "user-agent: FooBot\nallow: /$\ndisallow: /\n", ("FooBot",),
     [("http://example.com/", True), ("http://example.com/page.html", False)]),
    # ID_UTF8ByteOrderMarkIsSkipped, via what the rules decide (the parse-handler counts have no nutch2 equivalent)
    ("ID_UTF8ByteOrderMarkIsSkipped full", b"\xef\xbb\xbfUser-Agent: foo\nDisallow: /AnyValue\n", ("foo",),
     [("http://foo.bar/AnyValue", False)]),
    ("ID_UTF8ByteOrderMarkIsSkipped partial 2", b"\xef\xbbUser-Agent: foo\nDisallow: /AnyValue\n", ("foo",),
     [("http://foo.bar/AnyValue", False)]),
    ("ID_UTF8ByteOrderMarkIsSkipped partial 1", b"\xefUser-Agent: foo\nDisallow: /AnyValue\n", ("foo",),
     [("http://foo.bar/AnyValue", False)]),
    ("ID_UTF8ByteOrderMarkIsSkipped broken", b"\xef\x11\xbfUser-Agent: foo\nDisallow: /AnyValue\n", ("foo",),
     [("http://foo.bar/AnyValue", True)]),
    ("ID_LinesNumbersAreCountedCorrectly mac", "User-Agent: foo\rAllow: /some/path\rUser-Agent: bar\r\r\rDisallow: /\r",
     ("bar",), [("http://foo.bar/x", False)]),
    ("ID_LinesNumbersAreCountedCorrectly mixed",
     "User-Agent: foo\nAllow: /some/path\r\nUser-Agent: bar\n\r\n\nDisallow: /", ("bar",),
     [("http://foo.bar/x", False)]),
]

GOOGLE_SITEMAPS: list[tuple[str, list[str]]] = [
    ("User-Agent: foo\nAllow: /some/path\nUser-Agent: bar\n\n\nSitemap: http://foo.bar/sitemap.xml\n",
     ["http://foo.bar/sitemap.xml"]),
    ("Sitemap: http://foo.bar/sitemap.xml\nUser-Agent: foo\nAllow: /some/path\nUser-Agent: bar\n\n\n",
     ["http://foo.bar/sitemap.xml"]),
]


# ---------------------------------------------------------------- crawler-commons SimpleRobotRulesParserTest
def _file(name: str) -> bytes:
    return (DATA / name).read_bytes()


_CRLF = "\r\n"
_RFP = ("# /robots.txt for http://www.fict.org/\r\n# comments to webmaster@fict.org\r\n\r\nUser-agent: unhipbot\r\n"
        "Disallow: /\r\n\r\nUser-agent: webcrawler\r\nUser-agent: excite\r\nDisallow: \r\n\r\nUser-agent: *\r\n"
        "Disallow: /org/plans.html\r\nAllow: /org/\r\nAllow: /serv\r\nAllow: /~mak\r\nDisallow: /\r\n")
_RFP_URLS = ["http://www.fict.org/", "http://www.fict.org/index.html", "http://www.fict.org/robots.txt",
             "http://www.fict.org/server.html", "http://www.fict.org/services/fast.html",
             "http://www.fict.org/services/slow.html", "http://www.fict.org/orgo.gif",
             "http://www.fict.org/org/about.html", "http://www.fict.org/org/plans.html",
             "http://www.fict.org/%7Ejim/jim.html", "http://www.fict.org/%7Emak/mak.html"]
_MIXED = ("# /robots.txt for http://www.fict.org/\r\n# comments to webmaster@fict.org\n\rUser-agent: unhipbot\n"
          "Disallow: /\r\r\nUser-agent: webcrawler\nUser-agent: excite\rDisallow: \u0085\rUser-agent: *\r\n"
          "Disallow: /org/plans.html\nAllow: /org/\rAllow: /serv\r\nAllow: /~mak\nDisallow: /\r\n")
_NUTCH = ("User-Agent: Agent1 #foo\rDisallow: /a\rDisallow: /b/a\r#Disallow: /c\r\r\rUser-Agent: Agent2 Agent3#foo\r"
          "User-Agent: Agent4\rDisallow: /d\rDisallow: /e/d/\r\rUser-Agent: *\rDisallow: /foo/bar/\r")
_NUTCH_PATHS = ["/a", "/a/", "/a/bloh/foo.html", "/b", "/b/a", "/b/a/index.html", "/b/b/foo.html", "/c", "/c/a",
                "/c/a/index.html", "/c/b/foo.html", "/d", "/d/a", "/e/a/index.html", "/e/d", "/e/d/foo.html",
                "/e/doh.html", "/f/index.html", "/foo/bar/baz.html", "/f/"]
_NUTCH_AGENT1 = [False, False, False, True, False, False, True, True, True, True, True, True, True, True, True, True,
                 True, True, True, True]
_HERITRIX = ("User-agent: *\nDisallow: /cgi-bin/\nDisallow: /details/software\n\nUser-agent: denybot\nDisallow: /\n\n"
             "User-agent: allowbot1\nDisallow: \n\nUser-agent: allowbot2\nDisallow: /foo\nAllow: /\n\n"
             "User-agent: delaybot\nDisallow: /\nCrawl-Delay: 20\nAllow: /images/\n")
_KRUGLE = ("User-agent: *\rDisallow: /maintenance.html\rDisallow: /perl/\rDisallow: /cgi-bin/\rDisallow: /examples/\r"
           "Crawl-delay: 3\r\rUser-agent: googlebot\rCrawl-delay: 1\r\rUser-agent: qihoobot\rDisallow: /")
_SELECT_DELAY = ("User-Agent: bingbot\r\nCrawl-delay: 1\r\n\r\nUser-Agent: msnbot\r\nCrawl-delay: 2\r\n\r\n"
                 "User-Agent: pinterestbot\r\nCrawl-delay: 0.2\r\n\r\nUser-agent: *\r\nDisallow: /login\r\n"
                 "Sitemap: http://www.example.com/sitemap.xml\r\nDisallow: /assets/")
_UNICODE_PATHS = ("User-agent: *\r\nDisallow: /bücher/\r\nDisallow: /k%C3%B6nyvek/\r\n\r\nUser-agent: GoodBot\r\n"
                  "Allow: /")
_ESCAPED: list[tuple[bool, str, str]] = [
    (True, "/*%20", "https://www.example.com/"), (False, "/*%20", "https://www.example.com/foobar%20/"),
    (True, "/*%20", "https://www.example.com/foobar/"), (True, "/*%2F*", "https://www.example.com/path/index.html"),
    (False, "/*%2F*", "https://www.example.com/topic/9%2F11/index.html"),
    (False, "/topic/9%2F11/", "https://www.example.com/topic/9%2F11/index.html"),
    (False, "/topic/9%2F11/", "https://www.example.com/topic/9%2f11/index.html"),
    (False, "/q?*mime=application%2Fpdf", "https://www.example.com/q?mime=application%2Fpdf"),
    (False, "/$", "https://www.example.com/"), (True, "/$", "https://www.example.com/foobar"),
    (True, "/%24", "https://www.example.com/"), (False, "/%24", "https://www.example.com/%24100"),
    (False, "/%24", "https://www.example.com/$100"), (True, "/search/%2A/", "https://www.example.com/search/foobar/"),
    (False, "/search/%2A/", "https://www.example.com/search/%2A/"),
    (False, "/search/%2A/", "https://www.example.com/search/%2a/"),
    (False, "/search/%2a/", "https://www.example.com/search/%2a/"),
    (False, "/search/%2a/", "https://www.example.com/search/*/"),
    (False, "/search/*/", "https://www.example.com/search/foobar/"),
    (False, "/foo/bar?baz=quz", "https://www.example.com/foo/bar?baz=quz"),
    (False, "/foo/bar?baz=https://foo.bar", "https://www.example.com/foo/bar?baz=https://foo.bar"),
    (False, "/foo/bar?baz=https%3A%2F%2Ffoo.bar", "https://www.example.com/foo/bar?baz=https%3A%2F%2Ffoo.bar"),
    (False, "/foo/bar/\u30c4", "https://www.example.com/foo/bar/%E3%83%84"),
    (False, "/foo/bar/%E3%83%84", "https://www.example.com/foo/bar/%E3%83%84"),
    (False, "/foo/bar/%62%61%7A", "https://www.example.com/foo/bar/baz"),
    (False, "/path/file-with-a-%2A.html", "https://www.example.com/path/file-with-a-*.html"),
    (True, "/path/file-with-a-%2A.html", "https://www.example.com/path/file-with-a-foo.html"),
    (False, "/path/file-with-a-%2A.html", "https://www.example.com/path/file-with-a-%2A.html"),
    (False, "/path/foo-%24", "https://www.example.com/path/foo-$"),
    (True, "/path/foo-%24", "https://www.example.com/path/foo-"),
    (False, "/path/foo-%24", "https://www.example.com/path/foo-%24"),
]


def _fict(path_results: str, _unused: str = "") -> list[tuple[str, bool]]:
    return [(f"http://www.fict.com{path}", result == "T") for path, result in
            (item.split(":") for item in path_results.split())]


CRAWLER_COMMONS: list[Case] = [
    ("testEmptyRules", "", ("anybot",), [("http://www.domain.com/anypage.html", True)]),
    ("testQueryParamInDisallow", "User-agent: *\r\nDisallow: /index.cfm?fuseaction=sitesearch.results*", ("anybot",),
     [("http://searchservice.domain.com/index.cfm?fuseaction=sitesearch.results&type=People&qry=california&pg=2",
       False)]),
] + [
    (f"testGooglePatternMatching1 {rule}", f"User-agent: *\r\nDisallow: {rule}\r\n", ("anybot",),
     _fict("/fish:F /fish.html:F /fish/salmon.html:F /fishheads:F /fishheads/yummy.html:F /fish.php?id=anything:F "
           "/Fish.asp:T /catfish:T /?id=fish:T /fis:T", rule))
    for rule in ("/fish", "/fish*")
] + [
    ("testGooglePatternMatching2", "User-agent: *\r\nDisallow: /fish/\r\n", ("anybot",),
     _fict("/fish/:F /fish/?id=anything:F /fish/salmon.htm:F /fish:T /fish.html:T /Fish/Salmon.asp:T", "")),
    ("testGooglePatternMatching3", "User-agent: *\r\nDisallow: /*.php\r\n", ("anybot",),
     _fict("/filename.php:F /folder/filename.php:F /folder/filename.php?parameters:F /folder/any.php.file.html:F "
           "/filename.php/:F /:T /windows.PHP:T", "")),
    ("testGooglePatternMatching4", "User-agent: *\r\nDisallow: /*.php$\r\n", ("anybot",),
     _fict("/filename.php:F /folder/filename.php:F /filename.php?parameters:T /filename.php/:T /filename.php5:T "
           "/windows.PHP:T", "")),
    ("testGooglePatternMatching5", "User-agent: *\r\nDisallow: /fish*.php\r\n", ("anybot",),
     _fict("/fish.php:F /fishheads/catfish.php?parameters:F /Fish.PHP:T", "")),
    ("testGooglePatternMatching6", "User-agent: *\r\nDisallow: /*fish*.php\r\n", ("anybot",),
     _fict("/fish.php:F /superfishheads/catfish.php?parameters:F /fishheads/catfish.htm:T", "")),
    ("testCommentedOutLines", "#user-agent: testAgent\n\n#allow: /index.html\n#allow: /test\n\n#user-agent: test\n\n"
     "#allow: /index.html\n#disallow: /test\n\n#user-agent: someAgent\n\n#disallow: /index.html\n#disallow: /test\n\n",
     ("anybot",), [("http://www.domain.com/anypage.html", True)]),
    ("testRobotsTxtAlwaysAllowed", "User-agent: *\r\nDisallow: /", ("any-darn-crawler",),
     [("http://www.domain.com/robots.txt", True)]),
    ("testAgentNotListed", "User-agent: crawler1\r\nDisallow: /index.html\r\nAllow: /\r\n\r\nUser-agent: crawler2\r\n"
     "Disallow: /", ("crawler3",), [("http://www.domain.com/anypage.html", True),
                                    ("http://www.domain.com/index.html", True)]),
    ("testNonAsciiEncoding", "User-agent: * # \u00a2 \u20b5\r\nDisallow:", ("anybot",),
     [("http://www.domain.com/anypage.html", True)]),
    ("testUnicodeUnescapedPaths", _UNICODE_PATHS, ("mybot",),
     [("https://www.example.com/", True), ("https://www.example.com/b%C3%BCcher/book1.html", False),
      ("https://www.example.com/bücher/book2.html", False),
      ("https://www.example.com/k%C3%B6nyvek/book1.html", False),
      ("https://www.example.com/könyvek/book2.html", False)]),
    ("testUnicodeUnescapedPaths latin-1 goodbot", _UNICODE_PATHS.encode("latin-1"), ("goodbot",),
     [("https://www.example.com/", True), ("https://www.example.com/b%C3%BCcher/book1.html", True)]),
    ("testUnicodeUnescapedPaths latin-1 mybot", _UNICODE_PATHS.encode("latin-1"), ("mybot",),
     [("https://www.example.com/", True), ("https://www.example.com/k%C3%B6nyvek/book1.html", False),
      ("https://www.example.com/könyvek/book2.html", False)]),
] + [
    (f"testEscapedPaths {rule} {url}", f"User-agent: *\r\nDisallow: {rule}\r\nAllow: /", ("mybot",), [(url, allowed)])
    for allowed, rule, url in _ESCAPED
] + [
    ("testSimplestAllowAll", "User-agent: *\r\nDisallow:", ("anybot",), [("http://www.domain.com/anypage.html", True)]),
    ("testDisallowWithQueryOnly", "User-agent: *\r\nDisallow: /", ("anybot",),
     [("http://www.example.com", False), ("http://www.example.com?q=a", False)]),
    ("testMixedEndings2", _MIXED, ("unknown",),
     list(zip(_RFP_URLS, [False, False, True, True, True, True, False, True, False, False, True], strict=True))),
    ("testRfpCases2", _RFP, ("unknown",),
     list(zip(_RFP_URLS, [False, False, True, True, True, True, False, True, False, False, True], strict=True))),
    ("testNutchCases Agent1", _NUTCH, ("agent1",),
     [(f"http://www.domain.com{p}", a) for p, a in zip(_NUTCH_PATHS, _NUTCH_AGENT1, strict=True)]),
    ("testNutchCases3 Agent5", _NUTCH, ("agent5",),
     [(f"http://www.domain.com{p}", p != "/foo/bar/baz.html") for p in _NUTCH_PATHS]),
    ("testHtmlMarkupInRobotsTxt mybot",
     '<!DOCTYPE HTML PUBLIC "-//W3C//DTD HTML 3.2 Final//EN"><HTML>\n<HEAD>\n<TITLE>/robots.txt</TITLE>\n</HEAD>\n'
     "<BODY>\nUser-agent: mybot<BR>\nDisallow: <BR>\nCrawl-Delay: 10<BR>\n\nUser-agent: *<BR>\nDisallow: /<BR>\n"
     "Crawl-Delay: 30<BR>\n\n</BODY>\n</HTML>\n", ("mybot",), [("http://www.domain.com/index.html", True)]),
    ("testHtmlMarkupInRobotsTxt bogusbot",
     '<!DOCTYPE HTML PUBLIC "-//W3C//DTD HTML 3.2 Final//EN"><HTML>\n<HEAD>\n<TITLE>/robots.txt</TITLE>\n</HEAD>\n'
     "<BODY>\nUser-agent: mybot<BR>\nDisallow: <BR>\nCrawl-Delay: 10<BR>\n\nUser-agent: *<BR>\nDisallow: /<BR>\n"
     "Crawl-Delay: 30<BR>\n\n</BODY>\n</HTML>\n", ("bogusbot",), [("http://www.domain.com/index.html", False)]),
    ("testIgnoreOfHtml", "<HTML><HEAD><TITLE>Site under Maintenance</TITLE></HTML>", ("anybot",),
     [("http://www.domain.com/", True)]),
    ("testHeritrixCases allowbot1", _HERITRIX, ("mozilla", "allowbot1", "99.9"),
     [("http://www.domain.com/path", True), ("http://www.domain.com/", True)]),
    ("testHeritrixCases allowbot2", _HERITRIX, ("mozilla", "allowbot2", "99.9"),
     [("http://www.domain.com/path", True), ("http://www.domain.com/", True), ("http://www.domain.com/foo", False)]),
    ("testHeritrixCases denybot", _HERITRIX, ("mozilla", "denybot", "99.9"),
     [("http://www.domain.com/path", False), ("http://www.domain.com/", False)]),
    ("testHeritrixCases anonbot", _HERITRIX, ("mozilla", "anonbot", "99.9"),
     [("http://www.domain.com/path", True), ("http://www.domain.com/cgi-bin/foo.pl", False)]),
    ("testCaseSensitivePaths", "User-agent: *\r\nAllow: /AnyPage.html\r\nAllow: /somepage.html\r\nDisallow: /",
     ("anybot",), [("http://www.domain.com/AnyPage.html", True), ("http://www.domain.com/anypage.html", False),
                   ("http://www.domain.com/somepage.html", True), ("http://www.domain.com/SomePage.html", False)]),
    ("testEmptyDisallow", "User-agent: *\r\nDisallow:", ("anybot",), [("http://www.domain.com/anypage.html", True)]),
    ("testEmptyAllow", "User-agent: *\r\nAllow:", ("anybot",), [("http://www.domain.com/anypage.html", True)]),
] + [
    (f"testEmptyDisallowLowestPrecedence {i}", robots, ("anybot",),
     [("http://www.example.com/", True), ("http://www.example.com/anypage.html", True),
      ("http://www.example.com/disallowed/index.html", False), ("http://www.example.com/allowed/index.html", True)])
    for i, robots in enumerate([
        "User-agent: *\r\nDisallow: /disallowed/\r\nAllow: /allowed/\r\nDisallow: ",
        "User-agent: *\r\nDisallow: /disallowed/\r\nAllow: /allowed/\r\nUser-agent: *\r\nDisallow: "])
] + [
    ("testMultiWildcard", "User-agent: *\r\nDisallow: /index.html\r\nAllow: /\r\n\r\nUser-agent: *\r\nDisallow: /",
     ("anybot",), [("http://www.domain.com/index.html", False), ("http://www.domain.com/anypage.html", True)]),
    ("testMultiMatches", "User-agent: crawlerbot\r\nDisallow: /index.html\r\nAllow: /\r\n\r\nUser-agent: crawler\r\n"
     "Disallow: /", ("crawlerbot",),
     [("http://www.domain.com/index.html", False), ("http://www.domain.com/anypage.html", True)]),
    ("testMultiWordAgentName", "User-agent: Download Ninja\r\nDisallow: /index.html\r\nAllow: /", ("download", "ninja"),
     [("http://www.domain.com/index.html", False), ("http://www.domain.com/anypage.html", True)]),
    ("testAgentTokenMatch foo/1.2", "User-agent: foo/1.2\r\nDisallow: /index.html\r\nAllow: /", ("foo",),
     [("http://www.domain.com/index.html", False), ("http://www.domain.com/anypage.html", True)]),
    ("testAgentTokenMatch foo bar", "User-agent: foo bar\r\nDisallow: /index.html\r\nAllow: /", ("foo",),
     [("http://www.domain.com/index.html", False), ("http://www.domain.com/anypage.html", True)]),
    ("testUnsupportedFields", "User-agent: crawler1\r\nDisallow: /index.html\r\nAllow: /\r\nnewfield: 234\r\n"
     "User-agent: crawler2\r\nDisallow: /", ("crawler2",), [("http://www.domain.com/anypage.html", False)]),
    ("testBrokenKrugleRobotsTxtFile googlebot", _KRUGLE, ("googlebot",),
     [("http://www.krugle.com/examples/index.html", False), ("http://www.krugle.com/", False)]),
    ("testBrokenKrugleRobotsTxtFile qihoobot", _KRUGLE, ("qihoobot",),
     [("http://www.krugle.com/examples/index.html", False), ("http://www.krugle.com/", False)]),
    ("testBrokenKrugleRobotsTxtFile anybot", _KRUGLE, ("anybot",),
     [("http://www.krugle.com/examples/index.html", False), ("http://www.krugle.com/", True)]),
] + [
    (f"testSelectCrawlDelayGroup {agent}", _SELECT_DELAY, (agent,),
     [("http://www.example.com/login", False), ("http://www.example.com/assets/", False),
      ("http://www.example.com/", True)])
    for agent in ("bingbot", "msnbot", "anybot")
] + [
    (f"testRobotsWith{bom}", _file(f"robots-with-{bom.lower()}-bom.txt"), ("foobot",),
     [("http://www.domain.com/profile", False)])
    for bom in ("UTF8", "UTF16LE", "UTF16BE")
] + [
    ("testIgnoringHost", _file("www.flot.com-robots.txt"), ("foobot",), [("http://www.flot.com/img/", False)]),
    ("testDirectiveTypos bot1", _file("directive-typos-robots.txt"), ("bot1",),
     [("http://domain.com/desallow/", False), ("http://domain.com/dissalow/", False)]),
    ("testDirectiveTypos bot2", _file("directive-typos-robots.txt"), ("bot2",),
     [("http://domain.com/useragent/", False)]),
    ("testDirectiveTypos bot3", _file("directive-typos-robots.txt"), ("bot3",),
     [("http://domain.com/useg-agent/", False)]),
    ("testDirectiveTypos bot4", _file("directive-typos-robots.txt"), ("bot4",),
     [("http://domain.com/useragent-no-colon/", False)]),
    ("testFormatErrors bot1", _file("format-errors-robots.txt"), ("bot1",),
     [("http://domain.com/whitespace-before-colon/", False), ("http://domain.com/no-colon/", False)]),
    ("testFormatErrors bot2", _file("format-errors-robots.txt"), ("bot2",),
     [("http://domain.com/no-colon-useragent/", False)]),
    ("testFormatErrors bot3", _file("format-errors-robots.txt"), ("bot3",),
     [("http://domain.com/whitespace-before-colon/", True)]),
    ("testManyUserAgents wget", _file("many-user-agents.txt"), ("wget",), [("http://domain.com/", False)]),
    ("testManyUserAgents other", _file("many-user-agents.txt"), ("mysuperlongbotnamethatmatchesnothing",),
     [("http://domain.com/", True), ("http://domain.com/bot-trap/", False)]),
    ("testManyUserAgentsMergeRules", _file("merge-rules.txt"), ("wget",),
     [("http://domain.com/foo/bar/bar.txt", True), ("http://domain.com/tmp/bar/bar.txt", False),
      ("http://domain.com/chk/bar/bar.txt", True)]),
    ("testPrecedenceOfRules wget", _file("precedence-of-rules.txt"), ("wget",),
     [("http://domain.com/", True), ("http://domain.com/foo/bar", True), ("http://domain.com/bar/foo", False)]),
    ("testPrecedenceOfRules testy", _file("precedence-of-rules.txt"), ("testy",),
     [("http://domain.com/", True), ("http://domain.com/foo/bar", True), ("http://domain.com/foo/blue", False),
      ("http://domain.com/foo/", False), ("http://domain.com/foo/tar", False)]),
    ("testMalformedPathInRobotsFile", _file("malformed-path.txt"), ("bot1",),
     [("http://en.wikipedia.org/wiki/Wikipedia_talk:Mediation_Committee/", False),
      ("http://en.wikipedia.org/wiki/", True)]),
    ("testDOSlineEndings", _file("dos-line-endings.txt"), ("bot1",), [("http://ford.com/", True)]),
    ("testAmazonRobotsWithWildcards", _file("wildcards.txt"), ("anybot",),
     [("http://www.fict.com/wishlist/bogus", False), ("http://www.fict.com/wishlist/universal/page", True),
      ("http://www.fict.com/anydirectoryhere/gcrnsts", False)]),
    ("testAllowBeforeDisallow", "User-agent: *\r\nDisallow: /fish\r\nAllow: /fish\r\n", ("anybot",),
     [("http://www.fict.com/fish", True)]),
    ("testSpacesInMultipleUserAgentNames one", "User-agent: One, Two, Three\r\nDisallow: /\r\n\r\nUser-agent: *\r\n"
     "Allow: /\r\n", ("one",), [("http://www.fict.com/fish", False)]),
    ("testSpacesInMultipleUserAgentNames anybot", "User-agent: One, Two, Three\r\nDisallow: /\r\n\r\nUser-agent: *\r\n"
     "Allow: /\r\n", ("anybot",), [("http://www.fict.com/fish", True)]),
] + [
    (f"testMatchingOfUserAgentNamesIndependentFromSequentialOrder {i} {agent}", robots, (agent,),
     [("https://example.com/foo/bar", agent == "crawler")])
    for i, robots in enumerate(["User-agent: crawlerbot\nDisallow: /foo/bar\n\nUser-agent: crawler\nAllow: /foo/bar\n",
                                "User-agent: crawler\nAllow: /foo/bar\n\nUser-agent: crawlerbot\nDisallow: /foo/bar\n"])
    for agent in ("crawlerbot", "crawler")
] + [
    ("testMatchingUserAgentNamesHttpHeader butterfly",
     "User-agent: Mozilla/5.0 (compatible; Butterfly/1.0; +http://labs.topsy.com/butterfly/) Gecko/2009032608 "
     "Firefox/3.0.8\nDisallow: /", ("butterfly",), [("http://example.org/", True)]),
    ("testMatchingUserAgentNamesHttpHeader mybot list",
     "User-agent: Mozilla/5.0 (compatible; Butterfly/1.0; +http://labs.topsy.com/butterfly/) Gecko/2009032608 "
     "Firefox/3.0.8\nDisallow: /", ("mybot", "mybot/1.0", "mozilla/5.0 (compatible; mybot/1.0)"),
     [("http://example.org/", True)]),
    ("testExamplesRobotsTxtRFC9309 foobot", _file("rfc9309-example-simple-robots.txt"), ("foobot",),
     [("https://example.org/example/page.html", True), ("https://example.org/example/allowed.gif", True),
      ("https://example.org/", False), ("https://example.org/path/index.html", False)]),
    ("testExamplesRobotsTxtRFC9309 barbot", _file("rfc9309-example-simple-robots.txt"), ("barbot",),
     [("https://example.org/", True), ("https://example.org/example/page.html", False)]),
    ("testExamplesRobotsTxtRFC9309 bazbot", _file("rfc9309-example-simple-robots.txt"), ("bazbot",),
     [("https://example.org/", True), ("https://example.org/example/page.html", False)]),
    ("testExamplesRobotsTxtRFC9309 quxbot", _file("rfc9309-example-simple-robots.txt"), ("quxbot",),
     [("https://example.org/", True), ("https://example.org/example/page.html", True)]),
    ("testExamplesRobotsTxtRFC9309 anyotherbot", _file("rfc9309-example-simple-robots.txt"), ("anyotherbot",),
     [("https://example.org/publications/doc1.html", True), ("https://example.org/example/page.html", False),
      ("https://example.org/example.gif", False), ("https://example.org/", True)]),
    ("testExamplesRobotsTxtRFC9309 longest match", _file("rfc9309-example-longest-match-robots.txt"), ("foobot",),
     [("https://example.org/example/page/", True), ("https://example.org/example/page/index.html", True),
      ("https://example.org/example/page/disallowed.gif", False), ("https://example.org/", True)]),
    ("testExamplesRobotsTxtRFC9309 merging examplebot", _file("rfc9309-example-rule-group-merging.txt"),
     ("examplebot",), [("https://example.org/foo", False), ("https://example.org/bar", False),
                       ("https://example.org/baz", False), ("https://example.org/", True)]),
    ("testExamplesRobotsTxtRFC9309 merging anyotherbot", _file("rfc9309-example-rule-group-merging.txt"),
     ("anyotherbot",), [("https://example.org/foo", False), ("https://example.org/bar", False),
                        ("https://example.org/baz", True), ("https://example.org/", True)]),
    ("testExamplesRobotsTxtRFC9309 merging bazbot", _file("rfc9309-example-rule-group-merging.txt"), ("bazbot",),
     [("https://example.org/foo", True), ("https://example.org/bar", True), ("https://example.org/baz", False),
      ("https://example.org/", True)]),
    ("testAPIemptyUserAgentList none", "User-agent: *\r\nAllow: /allowed/\r\nDisallow: /\r\nUser-agent: allowedbot\r\n"
     "Allow: /", (), [("https://www.example.com/allowed/page.html", True), ("https://www.example.com/", False)]),
    ("testAPIemptyUserAgentList allowedbot", "User-agent: *\r\nAllow: /allowed/\r\nDisallow: /\r\n"
     "User-agent: allowedbot\r\nAllow: /", ("allowedbot",), [("https://www.example.com/", True)]),
    ("testMatchedWildcard", "User-agent: *\r\nAllow: /\r\nUser-agent: anybot\r\nDisallow: /search", ("foobot",),
     [("https://www.example.com/search", True), ("https://www.example.com/home", True)]),
    ("testMatchedWildcard anybot", "User-agent: *\r\nAllow: /\r\nUser-agent: anybot\r\nDisallow: /search", ("anybot",),
     [("https://www.example.com/search", False), ("https://www.example.com/home", True)]),
    ("testCrawlDelayGroupMerging mybot", _file("crawl-delay-group-merging.txt"), ("mybot",),
     [("https://example.com/private/", False), ("https://example.com/login/", True), ("https://example.com/", True)]),
    ("testCrawlDelayGroupMerging yourbot", _file("crawl-delay-group-merging.txt"), ("yourbot",),
     [("https://example.com/private/", False), ("https://example.com/login/", False), ("https://example.com/", True)]),
    ("testCrawlDelayGroupMerging anyotherbot", _file("crawl-delay-group-merging.txt"), ("anyotherbot",),
     [("https://example.com/private/", True), ("https://example.com/login/", True), ("https://example.com/", True)]),
]

# (name, robots, agents, crawl delay in seconds or None)
CRAWL_DELAYS: list[tuple[str, str | bytes, tuple[str, ...], float | None]] = [
    ("testHtmlMarkupInRobotsTxt mybot", CRAWLER_COMMONS[0][1], ("mybot",), None),  # replaced below
    ("testHeritrixCases denybot", _HERITRIX, ("mozilla", "denybot", "99.9"), None),
    ("testHeritrixCases delaybot", _HERITRIX, ("mozilla", "delaybot", "99.9"), 20.0),
    ("testCrawlDelay bixo", "User-agent: bixo\rCrawl-delay: 10\rUser-agent: foobot\rCrawl-delay: 20\rUser-agent: *\r"
     "Disallow:/baz\r", ("bixo",), 10.0),
    ("testCrawlDelay unset", "User-agent: foobot\rCrawl-delay: 20\rUser-agent: *\rDisallow:/baz\r", ("bixo",), None),
    ("testBrokenKrugleRobotsTxtFile googlebot", _KRUGLE, ("googlebot",), 1.0),
    ("testBrokenKrugleRobotsTxtFile qihoobot", _KRUGLE, ("qihoobot",), None),
    ("testBrokenKrugleRobotsTxtFile anybot", _KRUGLE, ("anybot",), 3.0),
    ("testSelectCrawlDelayGroup bingbot", _SELECT_DELAY, ("bingbot",), 1.0),
    ("testSelectCrawlDelayGroup msnbot", _SELECT_DELAY, ("msnbot",), 2.0),
    ("testSelectCrawlDelayGroup anybot", _SELECT_DELAY, ("anybot",), None),
    ("testFloatingPointCrawlDelay", "User-agent: *\rCrawl-delay: 0.5\rDisallow:\r", ("bixo",), 0.5),
    ("testDOSlineEndings", _file("dos-line-endings.txt"), ("bot1",), 1.0),
    ("testCrawlDelayGroupMerging mybot", _file("crawl-delay-group-merging.txt"), ("mybot",), 10.0),
    ("testCrawlDelayGroupMerging yourbot", _file("crawl-delay-group-merging.txt"), ("yourbot",), None),
    ("testCrawlDelayGroupMerging anyotherbot", _file("crawl-delay-group-merging.txt"), ("anyotherbot",), 30.0),
]
CRAWL_DELAYS[0] = ("testHtmlMarkupInRobotsTxt mybot", next(c[1] for c in CRAWLER_COMMONS if c[2] == ("mybot",)
                                                            and c[0].startswith("testHtml")), ("mybot",), 10.0)
CRAWL_DELAYS.insert(1, ("testHtmlMarkupInRobotsTxt bogusbot", CRAWL_DELAYS[0][1], ("bogusbot",), 30.0))

# (name, robots, sitemaps in order)
SITEMAPS: list[tuple[str, str | bytes, list[str]]] = [
    ("testSelectCrawlDelayGroup", _SELECT_DELAY, ["http://www.example.com/sitemap.xml"]),
    ("testSitemapAtEndOfFile", "User-agent: a\r\nDisallow: /content/dam/\r\n\r\nUser-agent: b\r\n"
     "Disallow: /content/dam/\r\n\r\nUser-agent: c\r\nDisallow: /content/dam/\r\n\r\n\r\n"
     "Sitemap: https://wwwfoocom/sitemapxml", ["https://wwwfoocom/sitemapxml"]),
    ("testSitemapInvalidBaseUrl", "Sitemap: https://www.example.com/sitemap.xml", ["https://www.example.com/sitemap.xml"]),
    ("testSitemapDedup", _file("sitemap-robots-dedup.txt"), ["http://example.org/sitemap.xml"]),
] + [(f"google ID_NonStandardLineExample_Sitemap {i}", robots, sitemaps)
     for i, (robots, sitemaps) in enumerate(GOOGLE_SITEMAPS)]

# Where nutch2 (Google's parser) gives another answer: (case name, url) -> reason. Listed in the README.
_DIGITS = ("RFC 9309 product tokens are letters, '-' and '_' only: Google's parser reads 'agent1' in robots.txt as "
           "'agent' (crawler-commons matches the digits too)")
_URL_FORM = "the URL is percent-encoded and normalised before matching (nutch2's URLs always are)"
_HTML = "a robots.txt is read line by line as text; HTML markup around the lines is not stripped"
DIFFERS: dict[tuple[str, str], str] = {
    ("google ID_Encoding 2", "http://foo.bar/foo/bar/\u30c4"): _URL_FORM,
    ("google ID_Encoding 3", "http://foo.bar/foo/bar/\u30c4"): _URL_FORM,
    ("google ID_Encoding 4", "http://foo.bar/foo/bar/baz"): _URL_FORM,
    ("crawler-commons testEscapedPaths /*%2F* https://www.example.com/path/index.html",
     "https://www.example.com/path/index.html"): "an encoded '/' in a rule matches a '/' (Google's parser)",
    ("crawler-commons testHtmlMarkupInRobotsTxt bogusbot", "http://www.domain.com/index.html"): _HTML,
    ("crawler-commons testHeritrixCases allowbot2", "http://www.domain.com/foo"): _DIGITS,
    ("crawler-commons testUnsupportedFields", "http://www.domain.com/anypage.html"): _DIGITS,
    ("crawler-commons testFormatErrors bot1", "http://domain.com/whitespace-before-colon/"): _DIGITS,
    ("crawler-commons testFormatErrors bot1", "http://domain.com/no-colon/"): _DIGITS,
    ("crawler-commons testFormatErrors bot2", "http://domain.com/no-colon-useragent/"): _DIGITS,
    ("crawler-commons testDirectiveTypos bot1", "http://domain.com/desallow/"): _DIGITS,
    ("crawler-commons testDirectiveTypos bot1", "http://domain.com/dissalow/"): _DIGITS,
    ("crawler-commons testDirectiveTypos bot2", "http://domain.com/useragent/"): _DIGITS,
    ("crawler-commons testDirectiveTypos bot3", "http://domain.com/useg-agent/"): _DIGITS,
    ("crawler-commons testDirectiveTypos bot4", "http://domain.com/useragent-no-colon/"): _DIGITS,
} | {("crawler-commons testNutchCases Agent1", f"http://www.domain.com{p}"): _DIGITS
     for p in ("/a", "/a/", "/a/bloh/foo.html", "/b/a", "/b/a/index.html", "/foo/bar/baz.html")}
_WILDCARD_DELAY = ("the Crawl-delay of the '*' group applies when the agent's own group sets none (more polite); "
                   "crawler-commons leaves it unset")
DELAY_DIFFERS: dict[str, tuple[float | None, str]] = {
    "testHtmlMarkupInRobotsTxt bogusbot": (None, _HTML),
    "testBrokenKrugleRobotsTxtFile qihoobot": (3.0, _WILDCARD_DELAY),
    "testCrawlDelayGroupMerging yourbot": (30.0, _WILDCARD_DELAY),
}


# ---------------------------------------------------------------- the tests
def _rules(robots: str | bytes):
    from nutch2.fetch.robots import RobotRules

    return RobotRules.parse(robots.encode("utf-8") if isinstance(robots, str) else robots)


def _cases() -> list[tuple[str, str | bytes, tuple[str, ...], str, bool]]:
    return [(f"{source} {name}", robots, agents, url, allowed)
            for source, cases in (("google", GOOGLE), ("crawler-commons", CRAWLER_COMMONS))
            for name, robots, agents, checks in cases for url, allowed in checks]


@pytest.mark.parametrize(("name", "robots", "agents", "url", "allowed"), _cases(),
                         ids=[f"{c[0]}|{c[3][:60]}" for c in _cases()])
def test_allowed(name: str, robots: str | bytes, agents: tuple[str, ...], url: str, allowed: bool) -> None:
    expected = allowed if (name, url) not in DIFFERS else not allowed
    assert _rules(robots).allowed(url, agents) is expected


@pytest.mark.parametrize(("name", "robots", "agents", "url", "allowed"), _cases(),
                         ids=[f"{c[0]}|{c[3][:60]}" for c in _cases()])
def test_allowed_through_the_index(monkeypatch: pytest.MonkeyPatch, name: str, robots: str | bytes,
                                   agents: tuple[str, ...], url: str, allowed: bool) -> None:
    """The same answers when every file, however small, is matched through the index big ones get
    (nutch2/fetch/robots.py _RuleIndex: only the rule lines that can match the URL)."""
    from nutch2.fetch import robots as module

    monkeypatch.setattr(module, "INDEXED_BYTES", -1)
    expected = allowed if (name, url) not in DIFFERS else not allowed
    rules = _rules(robots)
    assert rules.allowed(url, agents) is expected
    assert rules._index is not None or not rules.text or url.endswith("/robots.txt")


@pytest.mark.parametrize(("name", "robots", "agents", "delay"), CRAWL_DELAYS, ids=[c[0] for c in CRAWL_DELAYS])
def test_crawl_delay(name: str, robots: str | bytes, agents: tuple[str, ...], delay: float | None) -> None:
    expected = DELAY_DIFFERS[name][0] if name in DELAY_DIFFERS else delay
    assert _rules(robots).crawl_delay(agents) == expected


@pytest.mark.parametrize(("name", "robots", "sitemaps"), SITEMAPS, ids=[c[0] for c in SITEMAPS])
def test_sitemaps(name: str, robots: str | bytes, sitemaps: list[str]) -> None:
    assert _rules(robots).sitemaps == sitemaps


def agreement() -> dict[str, tuple[int, int]]:
    """{source: (agree, total)} for tests/conformance.py."""
    out: dict[str, list[int]] = {"google robots_test.cc": [0, 0], "crawler-commons SimpleRobotRulesParserTest": [0, 0]}

    def count(source: str, check) -> None:
        out[source][1] += 1
        try:
            out[source][0] += bool(check())
        except Exception:  # noqa: BLE001 - an API the old code lacks is a disagreement
            pass

    def call(rules, method: str, agents: tuple[str, ...], *args):
        try:
            return getattr(rules, method)(*args, agents)
        except (TypeError, AttributeError):  # the old API took one agent name
            return getattr(rules, method)(*args, agents[0] if agents else "")

    for name, robots, agents, url, allowed in _cases():
        source = "google robots_test.cc" if name.startswith("google") else "crawler-commons SimpleRobotRulesParserTest"
        count(source, lambda r=robots, a=agents, u=url, x=allowed: call(_rules(r), "allowed", a, u) is x)
    for _, robots, agents, delay in CRAWL_DELAYS:
        count("crawler-commons SimpleRobotRulesParserTest",
              lambda r=robots, a=agents, d=delay: call(_rules(r), "crawl_delay", a) == d)
    for name, robots, sitemaps in SITEMAPS:
        source = "google robots_test.cc" if name.startswith("google") else "crawler-commons SimpleRobotRulesParserTest"
        count(source, lambda r=robots, s=sitemaps: list(_rules(r).sitemaps) == s)
    return {source: (agree, total) for source, (agree, total) in out.items()}
