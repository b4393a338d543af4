"""A big robots.txt: each URL is checked against the lines that can match it (nutch2/fetch/robots.py _RuleIndex), with
the answer of Google's matcher on the whole file (tests/test_conformance_robots.py runs its vectors through the index
too). The CPU figures are in the commit, not asserted here."""

from __future__ import annotations

import random

from hypothesis import example, given, settings
from hypothesis import strategies as st
from robotstxt import RobotsMatcher

from nutch2.fetch.robots import RobotRules, _RuleIndex

AGENTS = ("foobot", "otherbot")


def whole(text: str, agent: str, url: str) -> bool:
    return bool(RobotsMatcher().is_allowed(text, agent, url))


_SEGMENT = st.sampled_from(["a", "b", "ab", "abc", "/", "/", "/", ".", "..", "?", "=", "%20", "%2e", "%7E", "é", " ",
                            "$", "*", "*", "index.html", "~", "A", ":"])
_PATTERN = st.lists(_SEGMENT, max_size=6).map("".join)
_KEY = st.sampled_from(["Allow", "Disallow", "disallow", "allow", "DISALLOW", "Disalow", "Allow ", " Disallow",
                        "Noindex"])
_LINE = st.one_of(
    st.tuples(_KEY, _PATTERN).map(lambda kv: f"{kv[0]}:{' ' if kv[1] else ''}{kv[1]}"),
    st.sampled_from(["User-agent: *", "User-agent: foobot", "User-agent: otherbot", "user-agent: FOOBOT",
                     "User-agent: foobot", "User-agent: otherbot",
                     "", "# a comment", "Crawl-delay: 3", "Sitemap: http://h/s.xml", "Disallow: /a # comment",
                     "Allow: /a/index.html", "Disallow /ab"]))
_URL = st.tuples(st.sampled_from(["http://h", "https://h:8080", "http://H", "ftp://h"]),
                 st.lists(_SEGMENT, max_size=8).map("".join)).map(lambda p: p[0] + "/" + p[1])


@settings(max_examples=3000, deadline=None)
@example(lines=["User-agent: foobot", "Disallow: /b", "User-agent: otherbot", "Disallow: /a"], breaks="\n",
         urls=["http://h/a"], agent="foobot")  # the line left out must still end foobot's User-agent lines
@example(lines=["User-agent: *", "Disallow: /a/b"], breaks="\n", urls=["http://h/a/./b", "http://h/a/x/../b"],
         agent="foobot")  # dot segments: the matcher resolves them
@example(lines=["User-agent: *", "Disallow: /~a"], breaks="\n", urls=["http://h/%7Ea"], agent="foobot")
@example(lines=["User-agent: *", "Disallow: *A"], breaks="\n", urls=["http://h/*"], agent="foobot")  # "*A" on "/*"
@given(lines=st.lists(_LINE, max_size=25), breaks=st.sampled_from(["\n", "\r\n", "\r"]),
       urls=st.lists(_URL, min_size=1, max_size=6), agent=st.sampled_from(AGENTS))
def test_the_index_answers_as_the_whole_file(lines: list[str], breaks: str, urls: list[str], agent: str) -> None:
    text = breaks.join(lines)
    index = _RuleIndex(text)
    for url in urls:
        assert whole(index.text_for(url), agent, url) == whole(text, agent, url), (text, url, index.text_for(url))


def big_robots(seed: int = 7) -> str:
    """500 KiB of wildcard rules, one group for us among others."""
    rng = random.Random(seed)
    words = ["shop", "cart", "sessionid", "print", "amp", "feed", "tag", "sort", "lang", "ref"]
    lines = ["User-agent: otherbot", "Disallow: /", "", "User-agent: *"]
    size = 0
    while size < 500 * 1024 - 100:
        line = (f"{rng.choice(['Disallow', 'Allow'])}: /*{rng.choice(words)}{rng.randrange(10**6)}*"
                f"{rng.choice(words)}*{rng.choice(['', '$', '.html$'])}")
        lines.append(line)
        size += len(line) + 1
    lines += ["Disallow: /private/", "Allow: /private/ok$", "Disallow: /*?*sessionid="]
    return "\n".join(lines) + "\n"


def test_a_500_kib_robots_txt_of_wildcard_rules() -> None:
    text = big_robots()
    rules = RobotRules.parse(text.encode())
    rng = random.Random(3)
    urls = ["http://h/private/x", "http://h/private/ok", "http://h/p?a=1&sessionid=2", "http://h/",
            "http://h/a/" + "x" * 3000, "http://h/q%20r", "http://h/./private/x", "http://h/%2e/private/x"]
    urls += [f"http://h/shop{rng.randrange(10**6)}/cart/{'y' * rng.randrange(500)}?sort=1" for _ in range(20)]
    text_of = rules.text
    for url in urls:
        assert rules.allowed(url, ("foobot",)) == whole(text_of, "foobot", url), url
        assert rules.allowed(url, AGENTS) is False  # otherbot's own group decides (Disallow: /)
    assert not rules.allowed("http://h/private/x", ("foobot",))
    assert rules.allowed("http://h/private/ok", ("foobot",))
    assert rules._index is not None and len(rules._index.text_for("http://h/")) < 1000  # the rule lines are out
