"""urlfilter-validator (nutch2/plugins/urlfilter_validator): Nutch's TestUrlValidator vectors
(tests/data/nutch/urlfilter-validator, source named there) and the rules of Nutch's UrlValidator one by one."""

from __future__ import annotations

from pathlib import Path

import pytest

from nutch2.plugins.urlfilter_validator.filter import UrlValidator, problem
from nutch2.urls.filters import URLFilters
from tests.conftest import make_conf

DATA = Path(__file__).parent / "data" / "nutch" / "urlfilter-validator" / "urls.txt"


def test_nutch_vectors() -> None:
    cases = [(line[1:], line[0] == "+") for line in DATA.read_text(encoding="utf-8").splitlines()
             if line and not line.startswith("#")]
    assert len(cases) == 11 and cases[6][0].startswith(" http") and "\\t" in cases[6][0]
    v = UrlValidator(None)  # type: ignore[arg-type]
    assert [(url, v.filter(url) == url) for url, _ in cases] == cases


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("http://www.example.com/é.html", "printable ASCII"),
        ("http://www.example.com/a\tb", "printable ASCII"),
        ("svn+ssh://host.example.org/", "scheme"),
        ("file:/etc/passwd", "no authority"),
        ("file:///etc/passwd", "bad host name"),
        ("http://localhost/", "single label"),
        ("http://www.example.c/", "top-level label"),
        ("http://www.example.1com/", "top-level label"),
        ("http://256.1.1.1/", "out of range"),
        ("http://user:pw@www.example.com/", "not host[:port]"),
        ("http://[::1]/", "not host[:port]"),
        ("http://my_host.example.com/", "not host[:port]"),
        ("http://www.example.com:/", "bad port"),
        ("http://www.example.com:123456/", "bad port"),
        ("http://www.example.com/a[1].html", "path"),
        ("http://www.example.com/a|b", "path"),
        ("http://www.example.com/../etc", "climbs above the root"),
        ("http://www.example.com/a/../..", "climbs above the root"),
    ],
)
def test_invalid_urls_and_why(url: str, reason: str) -> None:
    assert reason in (problem(url) or ""), problem(url)
    assert UrlValidator(None).filter(url) is None  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.1.1:8080/p/1.html",  # an IPv4 address and a port (the test web)
        "https://www.example.com",  # no path
        "http://www.example.com/a/b/../c;x=1?q=a|[b]#frag[1]",  # query and fragment: anything printable
        "http://www.example.com/a/./b/../c",
        "http://www.example.com/~user/(1)/$x*,!'@:+=&",
        "HTTP://WWW.EXAMPLE.COM/",
    ],
)
def test_valid_urls(url: str) -> None:
    assert UrlValidator(None).filter(url) == url, problem(url)  # type: ignore[arg-type]


def test_through_the_chain_names_the_plugin(tmp_path: Path) -> None:
    chain = URLFilters.from_conf(make_conf(tmp_path, **{"plugin.includes": "urlfilter-validator"}))
    assert chain.explain("http://localhost/x") == (
        False, "urlfilter-validator: invalid: host name 'localhost' has a single label")
    assert chain.explain("http://www.example.com/") == (True, "no filter rejects it")
