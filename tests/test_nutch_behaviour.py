"""Issue 15, one test per bullet: URLs, robots.txt, links and text behave like Nutch and the RFCs.

The external test vectors themselves are in tests/test_conformance_*.py; these tests pin each behaviour the issue
names, end to end where a job is involved, plus property tests of the URL normalizer.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import idna
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nutch2.config import Configuration
from nutch2.fetch.robots import RobotRules, robot_agents
from nutch2.index.filters import IndexingFilters
from nutch2.jobs.parse import ParserJob
from nutch2.mapred.runner import LocalRunner
from nutch2.marks import Mark
from nutch2.parse.html import parse_html
from nutch2.parse.parseutil import CACHING_FORBIDDEN_KEY, META_PREFIX, caching_forbidden
from nutch2.plugins.urlnormalizer_basic.normalizer import normalize
from nutch2.status import CrawlStatus
from nutch2.stores import open_store
from nutch2.urls.checker import choose_repr, queue_id
from nutch2.urls.domains import domain_of_host, host_of
from nutch2.urls.filters import URLFilters
from nutch2.urls.tableutil import reverse_url
from nutch2.webpage import WebPage
from tests.conftest import CONF_DIR, make_conf
from tests.crawlutil import cli, conf_for, defines, row
from tests.helpers import QuietServer, Route

# ---------------------------------------------------------------------------- URLs


@pytest.mark.parametrize(("url", "expected"), [
    ("http://foo.com//aa//bb/foo.html", "http://foo.com/aa/bb/foo.html"),
    ("https://john.doe@www.example.com:1234/x", "https://www.example.com:1234/x"),
    ("ftp://john.doe@ftp.example.com/x", "ftp://john.doe@ftp.example.com/x"),
    ("https://example%2Ecom/", "https://example.com/"),
    ("http://foo.com/you too.html", "http://foo.com/you%20too.html"),
    ("http://stra\u00dfe.de/", "http://xn--strae-oqa.de/"),  # IDNA2008: not strasse.de
    ("http://\u03b2\u03cc\u03bb\u03bf\u03c2.com/", "http://xn--nxasmm1c.com/"),  # final sigma kept
    ("http://\u0646\u0627\u0645\u0647\u200c\u0627\u06cc.com/", "http://xn--mgba3gch31f060k.com/"),  # ZWNJ kept
    ("http://evil.com\\@good.com/", "http://evil.com/@good.com/"),  # a backslash is a slash, as in browsers
])
def test_normalizer_bullets(url: str, expected: str) -> None:
    assert normalize(url) == expected


@pytest.mark.parametrize(("host", "domain"), [
    ("www.example.co.uk.com", "uk.com"),  # ICANN section: uk.com is a private registry, not a public suffix
    ("a.b.github.io", "github.io"),
    ("www.example.com.nn", "www.example.com.nn"),  # unknown TLD: the host is its own domain
    ("www.example.co.uk", "example.co.uk"),
])
def test_registered_domain_is_icann(host: str, domain: str) -> None:
    assert domain_of_host(host) == domain
    assert queue_id(f"http://{host}/x", "byDomain") == f"http://{domain}"


def test_choose_repr_picks_the_root_of_a_redirect_pair() -> None:
    assert choose_repr("http://a.com/", "http://a.com/welcome/index.html", temp=True) == "http://a.com/"
    assert choose_repr("http://a.com/old.html", "http://a.com/new.html", temp=False) == "http://a.com/new.html"
    assert choose_repr("http://a.com/", "http://b.com/", temp=True) == "http://b.com/"


def test_host_specific_filter_blocks_load_from_the_configuration(tmp_path: Path) -> None:
    conf_dir = tmp_path / "conf"
    conf_dir.mkdir()
    (conf_dir / "regex-urlfilter.txt").write_text(
        "# NUTCH-1838\n> www.example.org\n-/private/\n<\n> example.net\n-\\.pdf$\n<\n+.\n", encoding="utf-8")
    conf = Configuration(conf_dir, {"urlfilter.regex.file": str(conf_dir / "regex-urlfilter.txt")})
    filters = URLFilters.from_conf(conf)
    assert filters.filter("http://www.example.org/private/x") is None
    assert filters.filter("http://other.example.org/private/x") == "http://other.example.org/private/x"
    assert filters.filter("http://docs.example.net/a.pdf") is None  # the block names the domain
    assert filters.filter("http://example.com/a.pdf") == "http://example.com/a.pdf"


def test_readdb_url_is_normalised_as_inject_does(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("http://pg.test\n", encoding="utf-8")
    d = defines(tmp_path, "sqlite")
    assert cli("inject", seeds, "-crawlId", "rd", *d) == 0
    capsys.readouterr()
    assert cli("readdb", "-url", "HTTP://PG.test:80", "-crawlId", "rd", *d) == 0
    assert "http://pg.test/" in capsys.readouterr().out
    assert cli("readdb", "-url", "not a url", "-crawlId", "rd", *d) != 0
    err = capsys.readouterr().err
    assert "not a valid" in err and "Traceback" not in err


# ---------------------------------------------------------------------------- robots.txt (RFC 9309)


def test_other_records_do_not_split_a_group() -> None:
    rules = RobotRules.parse(b"User-agent: bingbot\nCrawl-delay: 1\nUser-agent: *\nDisallow: /login\n")
    assert not rules.allowed("http://x.com/login", "bingbot")
    assert rules.crawl_delay("bingbot") == 1.0


def test_agents_match_by_whole_product_token() -> None:
    rules = RobotRules.parse(b"User-agent: foo/1.2\nDisallow: /foo\n\nUser-agent: bot\nDisallow: /bot\n")
    assert not rules.allowed("http://x.com/foo", "foo")
    assert not rules.allowed("http://x.com/foo", "FOO")
    assert rules.allowed("http://x.com/bot", "MyBot")
    assert not rules.allowed("http://x.com/bot", "bot")


def test_robots_agents_are_tried_in_order() -> None:
    robots = b"User-agent: *\nDisallow: /\n\nUser-agent: news-bot\nDisallow: /a\n\nUser-agent: MyBot\nDisallow: /b\n"
    agents = robot_agents("MyBot/2.0 (+http://example.com/bot)", "news-bot, *, mybot")
    assert agents == ("MyBot", "news-bot")
    rules = RobotRules.parse(robots)
    assert not rules.allowed("http://x.com/b", agents)  # MyBot's own group decides
    assert rules.allowed("http://x.com/a", agents)
    assert not rules.allowed("http://x.com/a", robot_agents("OtherBot", "news-bot"))  # next name's group
    assert not rules.allowed("http://x.com/c", robot_agents("OtherBot", "third"))  # no group of its own: *


# ---------------------------------------------------------------------------- links and text


def _parse(body: str, head: str = "", **kw):
    html = f"<html><head><title>t</title>{head}</head><body>{body}</body></html>"
    return parse_html(html.encode(), "http://site.test/dir/page.html", "text/html; charset=utf-8", timeout=None, **kw)


def test_outlinks_from_link_and_get_forms_not_post_forms() -> None:
    result = _parse('<form action="/search"><input name=q></form><form method="post" action="/login"></form>'
                    '<img src="/logo.png"><script src="/app.js"></script>',
                    head='<link rel="search" href="/opensearch.xml"><link rel="stylesheet" href="/s.css">')
    urls = [u for u, _ in result.outlinks]
    assert urls == ["http://site.test/opensearch.xml", "http://site.test/s.css", "http://site.test/search"]


def test_ignore_tags_and_form_action_are_configurable() -> None:
    from nutch2.parse.html import outlink_tags

    body = '<form action="/search"></form><img src="/logo.png" alt="Logo"><a href="/a">A</a>'
    result = _parse(body, outlink_tags=outlink_tags(ignore_tags=["a"], form_action=False))
    assert result.outlinks == [("http://site.test/logo.png", "Logo")]


def test_adjacent_links_are_separate_words_formatting_is_not() -> None:
    result = _parse("<a href=/1>anchor1</a><a href=/2>anchor2</a><p>One<b>two</b> three</p>")
    assert result.text == "anchor1 anchor2 Onetwo three"


def test_image_link_anchor_is_its_alt_text() -> None:
    result = _parse('<a href="/home"><img src="/logo.png" alt="Home page"></a>')
    assert result.outlinks == [("http://site.test/home", "Home page")]


def test_meta_keywords_description_and_noarchive() -> None:
    result = _parse("x", head='<meta name="keywords" content="crawler, search"><meta name="Description" '
                              'content="A  crawler"><meta name="robots" content="noarchive">')
    assert result.meta == {"keywords": "crawler, search", "description": "A crawler"}
    assert result.nocache and not result.noindex
    assert _parse("x", head='<meta name="robots" content="nocache">').nocache
    assert not _parse("x").nocache


@pytest.fixture
def store_env(tmp_path: Path) -> Iterator[tuple[Path, str, object]]:
    crawl_id = "nb" + uuid.uuid4().hex[:8]
    store = open_store(make_conf(tmp_path, "sqlite"), crawl_id)
    yield tmp_path, crawl_id, store
    store.drop_schema()
    store.close()


class _Solr:
    """Collects what IndexingJob would send (the job's Solr side is covered by tests/test_solr_index.py)."""

    def __init__(self) -> None:
        self.docs: list[dict] = []

    def add(self, docs: list[dict]) -> None:
        self.docs.extend(dict(d) for d in docs)

    def commit(self) -> None:
        pass


def test_parse_and_index_keep_meta_tags_cache_policy_and_repr_url(store_env) -> None:
    tmp, _, store = store_env
    url = "http://site.test/a.html"
    key = reverse_url(url)
    html = (b'<html><head><title>T</title><meta name="description" content="About us">'
            b'<meta name="keywords" content="a, b"><meta name="robots" content="noarchive"></head>'
            b"<body>x</body></html>")
    store.put(key, WebPage(key, status=int(CrawlStatus.FETCHED), content=html, content_type="text/html",
                           base_url=url, repr_url="http://site.test/", markers={Mark.FETCH.value: "B", "dist": "0"}))
    store.flush()
    conf = make_conf(tmp, "sqlite")
    LocalRunner(conf, 1).run(ParserJob(conf, "B"), store)
    page = store.get(key)
    assert page.metadata[META_PREFIX + "description"] == b"About us"
    assert caching_forbidden(page.metadata) == "content" == page.metadata[CACHING_FORBIDDEN_KEY].decode()
    doc = IndexingFilters.from_conf(conf).document(page, None)
    assert doc["url"] == "http://site.test/" and doc["id"] == f"webpage!{key}" and doc["crawlId"] == "webpage"
    assert doc["meta_description"] == ["About us"] and doc["meta_keywords"] == ["a, b"]
    assert doc["cache"] == "content"


# ---------------------------------------------------------------------------- repr URL stored by the fetcher


@pytest.fixture
def redirect_server() -> Iterator[Callable[[dict[str, Route]], str]]:
    servers: list[QuietServer] = []

    def start(routes: dict[str, Route]) -> str:
        server = QuietServer(routes)
        threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}"

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("redirect_max", [0, 2])
def test_fetch_stores_the_repr_url_of_a_redirect_pair(redirect_server, tmp_path: Path, redirect_max: int,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    page = b"<html><head><title>Welcome</title></head><body>hi</body></html>"
    base = redirect_server({
        "/": (301, {"Location": "/welcome/index.html"}, b""),  # permanent, from a site root: the root represents
        "/old/a.html": (302, {"Location": "/"}, b""),  # temporary, to a site root: the root represents
        "/welcome/index.html": (200, {"Content-Type": "text/html"}, page),
    })
    seeds = tmp_path / "seeds.txt"
    seeds.write_text(f"{base}/\n{base}/old/a.html\n", encoding="utf-8")
    d = defines(tmp_path, "sqlite", **{"http.redirect.max": redirect_max})
    assert cli("inject", seeds, "-crawlId", "rp", *d) == 0
    assert cli("generate", "-crawlId", "rp", *d) == 0
    batch = capsys.readouterr().out.strip().splitlines()[-1]
    assert cli("fetch", batch, "-crawlId", "rp", *d) == 0
    conf = conf_for(tmp_path, "sqlite")
    assert row(conf, "rp", f"{base}/").repr_url == f"{base}/"
    # followed inline: chooseRepr hop by hop (/old/a.html -> / -> /welcome/index.html); recorded: the pair
    assert row(conf, "rp", f"{base}/old/a.html").repr_url == f"{base}/"


# ---------------------------------------------------------------------------- properties of the normalizer
_hosts = st.sampled_from(["example.com", "Example.COM", "www.example.co.uk", "b\u00fccher.de", "stra\u00dfe.de",
                          "xn--bcher-kva.de", "sub.example.com.", "127.0.0.1", "[::1]",
                          "\u043d\u044d\u0431.\u0440\u0444", "a-b.example.org", "example%2Ecom", "www.github.io"])
_tricky = st.text(st.sampled_from(list("ab0/?#@:%\\[];=&+ .~-_\u00e4\u30c4\"<>{}|^`'")), max_size=25)


def _expected_domain(host: str) -> str:
    """The registered domain of a generated host, computed apart from the normalizer."""
    host = host.replace("%2E", ".").rstrip(".").strip("[]").lower()
    if not host.startswith("[") and not host.isascii():
        host = idna.encode(host, uts46=True, transitional=False).decode()
    return domain_of_host(host)


@settings(max_examples=400, deadline=None)
@given(scheme=st.sampled_from(["http", "https", "HTTP", "ftp"]), user=st.sampled_from(["", "user@", "u:p@"]),
       host=_hosts, port=st.sampled_from(["", ":80", ":443", ":8080", ":"]), rest=_tricky)
def test_normalize_is_idempotent_and_keeps_the_registered_domain(scheme, user, host, port, rest) -> None:
    url = f"{scheme}://{user}{host}{port}/{rest}"
    once = normalize(url)
    if once is None:
        return
    assert normalize(once) == once
    assert domain_of_host(host_of(once)) == _expected_domain(host)
    reverse_url(once)  # every normalised URL makes a row key


def test_conf_dir_is_the_shipped_one() -> None:
    assert (CONF_DIR / "regex-urlfilter.txt").is_file()


# ---------------------------------------------------------------------------- the Searcher honours them


def test_cached_view_honours_noarchive() -> None:
    from nutch2.searcher.pages import cached_copy

    url = "http://site.test/a.html"
    page = WebPage(reverse_url(url), content=b"<html><head></head><body>x</body></html>", content_type="text/html")
    assert cached_copy(page) is not None
    page.metadata = {CACHING_FORBIDDEN_KEY: b"content"}
    assert cached_copy(page) is None


def test_search_hits_link_the_row_and_drop_what_the_policy_forbids() -> None:
    from types import SimpleNamespace

    from nutch2.searcher.search import SearchRequest, search

    docs = [{"id": "com.a:http/old.html", "url": "http://a.com/", "cache": "all"},
            {"id": "com.a:http/b.html", "url": "http://a.com/b.html"}]
    hl = {d["id"]: {"content": ["a <em>word</em>"]} for d in docs}
    solr = SimpleNamespace(search=lambda q, **kw: SimpleNamespace(docs=docs, highlighting=hl, facets={}, hits=2,
                                                                   qtime=1))
    first, second = search(solr, SearchRequest("word")).hits
    assert first.url == "http://a.com/" and first.row_url == "http://a.com/old.html"  # url = the repr URL
    assert first.cache == "all" and str(first.snippet) == ""
    assert second.cache == "none" and "word" in str(second.snippet)
