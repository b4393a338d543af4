"""urlfilter-domain and urlfilter-domaindenylist (nutch2/plugins/urlfilter_domain*, nutch2/urls/domainlist.py):
Nutch's test vectors (tests/data/nutch/urlfilter-domain*, sources named there) and the plugins as the configuration
builds them."""

from __future__ import annotations

from pathlib import Path

import pytest

from nutch2.config import Configuration
from nutch2.errors import ConfigError
from nutch2.plugin import Plugins
from nutch2.plugins.urlfilter_domain.filter import DomainURLFilter
from nutch2.plugins.urlfilter_domaindenylist.filter import DomainDenylistURLFilter
from nutch2.urls.domainlist import DomainList
from nutch2.urls.filters import URLFilters
from tests.conftest import make_conf

DATA = Path(__file__).parent / "data" / "nutch"
HOSTS = DATA / "urlfilter-domain" / "hosts.txt"


def vectors(path: Path) -> list[tuple[str, bool]]:
    """(url, kept) of a "+url" / "-url" file."""
    return [(line[1:], line[0] == "+") for line in path.read_text(encoding="utf-8").splitlines()
            if line and not line.startswith("#")]


def conf_with(tmp_path: Path, **props: object) -> Configuration:
    return make_conf(tmp_path, **{"plugin.includes": "urlfilter-(domain|domaindenylist)", **props})


def test_nutch_vectors_of_the_domain_filter(tmp_path: Path) -> None:
    f = DomainURLFilter(conf_with(tmp_path, **{"urlfilter.domain.file": str(HOSTS)}))
    cases = vectors(DATA / "urlfilter-domain" / "urls.txt")
    assert len(cases) == 10
    assert [(url, f.filter(url) == url) for url, _ in cases] == cases


def test_nutch_vectors_of_the_domain_denylist_filter(tmp_path: Path) -> None:
    f = DomainDenylistURLFilter(conf_with(tmp_path, **{"urlfilter.domaindenylist.file": str(HOSTS)}))
    cases = vectors(DATA / "urlfilter-domaindenylist" / "urls.txt")
    assert len(cases) == 10
    assert [(url, f.filter(url) == url) for url, _ in cases] == cases


def test_an_empty_domain_list_keeps_every_url(tmp_path: Path) -> None:
    """NUTCH-2189 (TestDomainURLFilter.testNoFilter: a list without entries keeps everything); the shipped
    domain-urlfilter.txt is such a list."""
    f = DomainURLFilter(conf_with(tmp_path))
    assert f.domains.source.endswith("domain-urlfilter.txt") and len(f.domains) == 0
    for url, _ in vectors(DATA / "urlfilter-domain" / "urls.txt"):
        assert f.filter(url) == url
    assert "every URL passes" in (f.explain("http://www.adobe.com/") or "")
    # and the shipped denylist drops nothing
    assert DomainDenylistURLFilter(conf_with(tmp_path)).filter("http://www.adobe.com/") == "http://www.adobe.com/"


def test_list_format_comments_case_and_spaces() -> None:
    listed = DomainList.from_lines(["# a comment", "", "   ", " Apache.ORG  ", "#be", "EXAMPLE.com"])
    assert listed.entries == {"apache.org", "example.com"}
    assert listed.match("http://Lucene.Apache.org:8080/x") == "domain apache.org"
    assert listed.match("http://www.example.com/") == "domain example.com"
    assert listed.match("http://www.be/") is None  # "#be" is a comment
    assert listed.match("not a url") is None


def test_only_suffix_domain_and_host_are_asked_as_nutch() -> None:
    """Nutch asks about three names of the host: a sub-domain between domain and host is not one of them."""
    listed = DomainList.from_lines(["b.example.org", "co.uk", "127.0.1.1"])
    assert listed.match("http://a.b.example.org/") is None
    assert listed.match("http://b.example.org/") == "host b.example.org"
    assert listed.match("http://www.bbc.co.uk/") == "suffix co.uk"
    assert listed.match("http://127.0.1.1:8080/") == "domain 127.0.1.1"  # an IP address is its own domain


def test_inline_rules_win_over_the_file(tmp_path: Path) -> None:
    conf = conf_with(tmp_path, **{"urlfilter.domain.file": str(HOSTS), "urlfilter.domain.rules": "adobe.com"})
    f = DomainURLFilter(conf)
    assert f.filter("http://www.adobe.com/") is not None and f.filter("http://www.apache.org/") is None
    assert f.explain("http://www.apache.org/") == ("urlfilter.domain.rules: lists none of host www.apache.org, "
                                                    "domain apache.org, suffix org")


def test_file_is_looked_up_in_the_conf_dir_first(tmp_path: Path) -> None:
    conf_dir = tmp_path / "conf"
    conf_dir.mkdir()
    (conf_dir / "domain-urlfilter.txt").write_text("# mine\nexample.org\n", encoding="utf-8")
    conf = Configuration(conf_dir, {"plugin.includes": "urlfilter-domain"})
    chain = URLFilters.from_conf(conf)
    assert chain.filter("http://www.example.org/") is not None and chain.filter("http://www.apache.org/") is None
    kept, why = chain.explain("http://www.example.org/")
    assert kept and why == f"urlfilter-domain: {conf_dir / 'domain-urlfilter.txt'}: lists the domain example.org"
    kept, why = chain.explain("http://www.apache.org/")
    assert not kept and why.startswith("urlfilter-domain: ") and "lists none of host www.apache.org" in why


def test_denylist_explains_what_it_denies(tmp_path: Path) -> None:
    conf = conf_with(tmp_path, **{"urlfilter.domaindenylist.rules": "be\nwww.yahoo.com",
                                  "plugin.includes": "urlfilter-domaindenylist"})
    kept, why = URLFilters.from_conf(conf).explain("http://www.foobar.be/x")
    assert not kept and why == "urlfilter-domaindenylist: urlfilter.domaindenylist.rules: denies the suffix be"
    assert URLFilters.from_conf(conf).explain("http://mail.yahoo.com/") == (True, "no filter rejects it")


@pytest.mark.parametrize("prop", ["urlfilter.domain.file", "urlfilter.domaindenylist.file"])
def test_a_missing_list_file_stops_the_plugin_with_one_line(tmp_path: Path, prop: str) -> None:
    conf = conf_with(tmp_path, **{prop: str(tmp_path / "nope.txt")})
    with pytest.raises(ConfigError) as e:
        Plugins(conf).check(["url-filter"])
    assert "nope.txt" in str(e.value) and prop in str(e.value) and "\n" not in str(e.value)


def test_filterchecker_names_the_plugin_and_the_entry(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from tests.crawlutil import cli

    props = {"plugin.includes": "urlfilter-(domain|suffix|validator)", "urlfilter.domain.rules": "apache.org",
             "storage.data.dir": str(tmp_path)}
    d = [x for k, v in props.items() for x in ("-D", f"{k}={v}")]
    assert cli("filterchecker", *d, "http://lucene.apache.org/", "http://www.adobe.com/",
               "http://www.apache.org/s.CSS", "http://localhost.apache.org:0x/") == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("+http://lucene.apache.org/\turlfilter-domain: urlfilter.domain.rules: lists the "
                             "domain apache.org; urlfilter-suffix: ")
    assert out[0].endswith("suffix-urlfilter.txt: no listed suffix (accepted in mode +)")
    assert out[1] == ("-http://www.adobe.com/\turlfilter-domain: urlfilter.domain.rules: lists none of host "
                      "www.adobe.com, domain adobe.com, suffix com")
    assert out[2].startswith("-http://www.apache.org/s.CSS\turlfilter-suffix: ") and "suffix .css" in out[2]
    assert out[3].startswith("-http://localhost.apache.org:0x/\turlfilter-validator: invalid: ")
