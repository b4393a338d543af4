"""The URL plugins in crawls of the loopback test web.

- A Nutch user's conf dir (nutch-site.xml whose plugin.includes names the URL plugins, regex-normalize.xml and
  domain-urlfilter.txt in Nutch's formats, nothing else) works unchanged: the domain filter keeps the crawl on the
  listed hosts and the regex normalizer strips session ids before anything is requested or stored.
- Issue 23 item 5: outlinks are normalized and filtered before they count toward db.max.outlinks.per.page (Nutch's
  ParseOutputFormat), so on a Doxygen page the stylesheet <link>s in the head, which urlfilter-suffix drops, take
  no slot and every real link is kept.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from nutch2.config import Configuration
from nutch2.mapred.job import Counters, TaskContext
from nutch2.marks import Mark
from nutch2.parse.parseutil import PageParser
from nutch2.plugin import installed
from nutch2.plugin.descriptor import active_ids
from nutch2.status import CrawlStatus
from nutch2.urls.tableutil import reverse_url, unreverse_url
from nutch2.webpage import WebPage
from tests.conftest import make_conf
from tests.crawlutil import cli, defines, rows, seed_file
from tests.testweb import TestWeb, _Resource

pytestmark = pytest.mark.slow

DOXY = "/doxygen/index.html"
MEMBERS = ("a00001.html?PHPSESSID=0123abcd", "a00002.html;jsessionid=1E6FEC0D14D04", "a00003.html")


def doxygen_page(other_host: str) -> bytes:
    """A page shaped like Doxygen's (libstdc++'s API docs): style sheets and scripts in the head, then the links;
    the first <a> leads to a host the domain list leaves out."""
    return f"""<!DOCTYPE html>
<html><head><title>libstdc++: Class Index</title>
<link href="tabs.css" rel="stylesheet" type="text/css"/>
<script type="text/javascript" src="jquery.js"></script>
<link href="search/search.css" rel="stylesheet" type="text/css"/>
<script type="text/javascript" src="search/searchdata.js"></script>
<link href="doxygen.css" rel="stylesheet" type="text/css"/>
</head><body><div class="contents"><p>Class index.</p>
<a href="{other_host}/">elsewhere</a>
{"".join(f'<a class="el" href="{m}">member {i}</a> ' for i, m in enumerate(MEMBERS, 1))}
</div></body></html>""".encode()


def serve_doxygen(web: TestWeb) -> None:
    """The Doxygen page and what it links to, on host 0 (style sheets served too, so a request would show)."""
    page = doxygen_page(web.base_url(2))
    web._resources[(0, DOXY)] = _Resource(200, "text/html; charset=utf-8", lambda: page)
    for i in range(1, 4):
        body = f"<html><head><title>member {i}</title></head><body><p>Member {i}.</p></body></html>".encode()
        web._resources[(0, f"/doxygen/a0000{i}.html")] = _Resource(200, "text/html", lambda b=body: b)
    for css in ("tabs.css", "search/search.css", "doxygen.css"):
        web._resources[(0, f"/doxygen/{css}")] = _Resource(200, "text/css", lambda: b"body { color: black }")


def member_urls(web: TestWeb) -> list[str]:
    return [web.url(0, f"/doxygen/a0000{i}.html") for i in range(1, 4)]


# ---------------------------------------------------------------- item 5, at the page parser
def test_stylesheets_take_no_outlink_slot(tmp_path: Path) -> None:
    base = "http://127.0.1.1:8080"
    url = base + DOXY
    conf = make_conf(tmp_path, "memory", **{
        "plugin.includes": "urlfilter-(suffix|domain)|urlnormalizer-(basic|regex)|parse-html",
        "urlfilter.domain.rules": "127.0.1.1", "db.max.outlinks.per.page": 3})
    page = WebPage(reverse_url(url), status=int(CrawlStatus.FETCHED), content=doxygen_page("http://127.0.1.3:8080"),
                   content_type="text/html", base_url=url, markers={Mark.FETCH.value: "B"})
    parser = PageParser(conf)
    assert parser.parse(page, TaskContext(conf, None, Counters("t"), 0), signature_loaded=True)
    assert list(page.outlinks) == [f"{base}/doxygen/a0000{i}.html" for i in range(1, 4)]
    # the cap still holds: without the suffix filter the style sheets fill it (in document order)
    conf.set("plugin.includes", "urlfilter-domain|urlnormalizer-(basic|regex)|parse-html")
    parser = PageParser(conf)
    assert parser.parse(page, TaskContext(conf, None, Counters("t"), 0), signature_loaded=True)
    assert list(page.outlinks) == [f"{base}/doxygen/{css}" for css in ("tabs.css", "search/search.css", "doxygen.css")]


# ---------------------------------------------------------------- a Nutch user's conf dir, in a crawl
NUTCH_SITE = """<?xml version="1.0"?>
<?xml-stylesheet type="text/xsl" href="configuration.xsl"?>
<configuration>
  <property>
    <name>http.agent.name</name>
    <value>MyNutchBot</value>
  </property>
  <property>
    <name>plugin.includes</name>
    <value>protocol-http|urlfilter-(domain|suffix|validator)|parse-html|index-(basic|anchor)|scoring-opic|urlnormalizer-(pass|regex|basic)</value>
  </property>
  <property>
    <name>urlnormalizer.order</name>
    <value>org.apache.nutch.net.urlnormalizer.basic.BasicURLNormalizer
      org.apache.nutch.net.urlnormalizer.regex.RegexURLNormalizer</value>
  </property>
  <property>
    <name>db.max.outlinks.per.page</name>
    <value>3</value>
  </property>
</configuration>
"""

DOMAIN_URLFILTER = """# config file for urlfilter-domain plugin
{hosts}
"""

REGEX_NORMALIZE = """<?xml version="1.0"?>
<!-- This is the configuration file for the RegexUrlNormalize Class. -->
<regex-normalize>
<!-- removes session ids from urls (such as jsessionid and PHPSESSID) -->
<regex>
  <pattern>(?i)(;?\\b_?(l|j|bv_)?(sid|phpsessid|sessionid)=.*?)(\\?|&amp;|#|$)</pattern>
  <substitution>$4</substitution>
</regex>
<!-- removes trailing ? -->
<regex>
  <pattern>[\\?&amp;\\.]$</pattern>
  <substitution></substitution>
</regex>
</regex-normalize>
"""


def write_nutch_conf(folder: Path, web: TestWeb) -> None:
    folder.mkdir()
    (folder / "nutch-site.xml").write_text(NUTCH_SITE, encoding="utf-8")
    (folder / "domain-urlfilter.txt").write_text(DOMAIN_URLFILTER.format(hosts=f"{web.hosts[0]}\n{web.hosts[1]}"),
                                                 encoding="utf-8")
    (folder / "regex-normalize.xml").write_text(REGEX_NORMALIZE, encoding="utf-8")


@pytest.mark.parametrize("runner", ["local", "processes"])
def test_a_nutch_users_conf_dir_works_unchanged(tmp_path: Path, runner: str,
                                                 capfd: pytest.CaptureFixture[str]) -> None:
    active_ids.cache_clear()  # so this process warns about plugin.includes again (workers warn for themselves)
    with TestWeb(hosts=3, pages_per_host=3, traps=False, slow_seconds=1.0) as web:
        serve_doxygen(web)
        folder = tmp_path / "nutch-conf"
        write_nutch_conf(folder, web)
        other = web.hosts[2]
        # without the domain filter the crawl would go there: host 1's home page links to host 2's
        assert web.url(2, "/") in web.pages[web.url(1, "/")].links
        crawl_id = f"urlp{runner[0]}{uuid.uuid4().hex[:8]}"
        backend = "sqlite:local" if runner == "local" else "sqlite:processes"
        d = defines(tmp_path, backend)
        at = d.index("http.agent.name=nutch2-test")
        d = d[:at - 1] + d[at + 1:]  # the agent name is the one of nutch-site.xml
        assert cli("--conf", folder, "crawl", seed_file(tmp_path, web.seed_url, web.url(0, DOXY)),
                   "-crawlId", crawl_id, "-rounds", "3", "-threads", "4", *d) == 0
        err = capfd.readouterr().err
        assert "Traceback" not in err
        if "protocol-http" not in installed():  # a Nutch plugin nutch2 lacks: one warning, the crawl goes on
            assert "plugin.includes names 'protocol-http', which is no installed plugin" in err

        requested = [(r.host, r.path) for r in web.requests() if r.path != "/robots.txt"]
        conf = Configuration(folder, dict(x.split("=", 1) for x in d[1::2]))
        assert conf.get_str("http.agent.name") == "MyNutchBot"
        table = rows(conf, crawl_id)
        urls = {unreverse_url(k) for k in table}

    # urlfilter-domain: nothing of host 2 was requested (not even robots.txt) or stored
    assert not [r for r in web.requests() if r.host == other]
    assert not [u for u in urls if other in u]
    # the crawl did reach host 1, which the list names
    assert (web.hosts[1], "/") in requested
    # urlnormalizer-regex: the session ids were gone before the URLs were requested or stored
    assert not [p for _, p in requested if "sessionid" in p.lower()]
    assert not [u for u in urls if "sessionid" in u.lower()]
    for member in member_urls(web):
        assert member in urls and table[reverse_url(member)].status == CrawlStatus.FETCHED
    # item 5: the Doxygen page's style sheets took no outlink slot, so all three members are its outlinks
    assert list(table[reverse_url(web.url(0, DOXY))].outlinks) == member_urls(web)
    assert not [p for _, p in requested if p.endswith(".css")]
