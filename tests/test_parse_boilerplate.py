"""parse-boilerplate: the main content of the news site's article pages (tests/newssite.py: cookie banner, menu, ads,
related links, newsletter box, comments, footer around each article) holds every paragraph of the article and none
of the rest; title, author and date go into the row's metadata; its indexing filter sends main_content, main_author
and main_date. A crawl of the site into the real Solr: the Searcher's snippets come from main_content, so a query
word of the article shows its sentence and no menu word."""

from __future__ import annotations

import html
import pickle
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
import requests

from nutch2.config import Configuration
from nutch2.errors import ConfigError
from nutch2.parse.html import parse_html
from nutch2.parse.parsers import Document
from nutch2.searcher.search import SearchRequest, SearchResult
from nutch2.urls.tableutil import reverse_url
from nutch2.webpage import WebPage
from tests.conftest import make_conf
from tests.crawlutil import cli, conf_for, defines, rows, seed_file
from tests.newssite import ARTICLES, BOILERPLATE, MENU, Article, article_page, site_pages
from tests.pagesite import PageSite
from tests.solrschema import crawl_docs, delete_crawl, require_fields

pytest.importorskip("trafilatura")

from nutch2.plugins.parse_boilerplate.filter import BoilerplateFilter  # noqa: E402
from nutch2.plugins.parse_boilerplate.indexer import MainContentIndexer  # noqa: E402

CHROME_WORDS = [*MENU, "cookies", "Quickloan", "Zanzibar", "newsletter", "Copyright", "reader42", "paywall",
                "Most read"]


def parsed(a: Article, flt: BoilerplateFilter, page: WebPage | None = None, html: str | None = None) -> WebPage:
    url = f"http://news.test{a.path}"
    page = page or WebPage(reverse_url(url), metadata={})
    content = (html or article_page(a)).encode()
    result = parse_html(content, url, "text/html", {}, keep_dom=True)
    flt.filter(Document(content, url, "text/html", {}, "text/html"), result, page, result.dom)
    return page


def main_text(page: WebPage) -> str:
    return " ".join(page.metadata["main_content"].decode().split())


@pytest.mark.parametrize("article", ARTICLES, ids=[a.layout + ":" + a.path.rsplit("/", 1)[1] for a in ARTICLES])
def test_main_content_is_the_article_and_not_the_page_around_it(tmp_path: Path, article: Article) -> None:
    page = parsed(article, BoilerplateFilter(make_conf(tmp_path)))
    text = main_text(page)
    for para in article.paragraphs:
        assert para in text
    assert not [w for w in CHROME_WORDS if w in text], text
    assert not [b for b in BOILERPLATE if b in text]
    full = " ".join(parse_html(article_page(article).encode(), "http://news.test/", "text/html", {}).text.split())
    assert all(w in full for w in ("Crosswords", "Quickloan", "Copyright"))  # what the full text has, and this not
    assert page.metadata["main_title"].decode() == article.title
    assert page.metadata["main_author"].decode().replace(".", "") == article.author.replace(".", "")
    assert page.metadata["main_date"].decode() == article.date


def test_resiliparse_keeps_the_article_too(tmp_path: Path) -> None:
    pytest.importorskip("resiliparse")
    flt = BoilerplateFilter(make_conf(tmp_path, **{"boilerplate.extractor": "resiliparse"}))
    for article in ARTICLES:
        page = parsed(article, flt)
        assert all(p in main_text(page) for p in article.paragraphs)
        assert not [w for w in MENU if w in main_text(page)]
        assert "main_author" not in page.metadata  # resiliparse finds no author or date


def test_a_new_parse_replaces_what_the_last_found(tmp_path: Path) -> None:
    flt = BoilerplateFilter(make_conf(tmp_path))
    a = ARTICLES[0]
    page = parsed(a, flt)
    page.metadata["meta_description"] = b"kept"
    html = article_page(a).replace(f'<meta name="author" content="{a.author}">', "").replace(
        f'<meta property="article:published_time" content="{a.date}T08:00:00Z">', "")
    html = html[:html.index('<p class="byline">')] + html[html.index("</time></p>") + len("</time></p>"):]
    again = parsed(a, flt, page, html)
    assert "main_author" not in again.metadata and "main_date" not in again.metadata
    assert a.paragraphs[0] in main_text(again) and again.metadata["meta_description"] == b"kept"
    flt.filter(None, None, again, None)  # a document without a DOM (a PDF): nothing of an earlier parse stays
    assert not [k for k in again.metadata if k.startswith("main_")]


def test_the_filter_ships_with_a_job_and_caps_the_text(tmp_path: Path) -> None:
    flt = BoilerplateFilter(make_conf(tmp_path))
    shipped = pickle.loads(pickle.dumps(flt))
    assert parsed(ARTICLES[1], shipped).metadata == parsed(ARTICLES[1], flt).metadata
    short = BoilerplateFilter(make_conf(tmp_path, **{"boilerplate.max.length": 40}))
    capped = parsed(ARTICLES[1], short).metadata["main_content"].decode()
    assert capped == ARTICLES[1].title[:40].strip()  # the first 40 characters (the heading opens it)


def test_the_indexing_filter_sends_the_fields(tmp_path: Path) -> None:
    page = WebPage(reverse_url("http://a.test/"), metadata={"main_content": b"The article.", "main_author": b"Ann",
                                                             "main_date": b"2026-11-03", "main_title": b"T"})
    doc = MainContentIndexer(make_conf(tmp_path)).filter({"id": "x"}, "http://a.test/", page)
    assert doc == {"id": "x", "main_content": "The article.", "main_author": "Ann",
                   "main_date": "2026-11-03T00:00:00Z"}
    assert MainContentIndexer(make_conf(tmp_path)).filter({}, "http://a.test/", WebPage("k", metadata={})) == {}


def test_an_unknown_extractor_is_one_line_naming_the_choices(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"boilerplate.extractor='goose' is not known; use one of trafilatura, "
                                          r"resiliparse"):
        BoilerplateFilter(make_conf(tmp_path, **{"boilerplate.extractor": "goose"}))


def test_the_plugin_is_found_with_both_extension_points(tmp_path: Path) -> None:
    from nutch2.plugin import Plugins

    conf: Configuration = make_conf(tmp_path, **{"plugin.includes": "parse-(html|boilerplate)|index-basic"})
    plugins = Plugins(conf)
    assert [type(f).__name__ for f in plugins.build("parse-filter")] == ["BoilerplateFilter"]
    assert "MainContentIndexer" in [type(f).__name__ for f in plugins.build("indexing-filter")]




# ------------------------------------------------------------------ a crawl into Solr and OpenSearch, then search
PROPS = {"plugin.includes": "protocol-http|parse-(html|boilerplate)|index-basic|urlfilter-regex|"
                            "urlnormalizer-basic|scoring-opic"}


def writer(name: str) -> dict[str, str]:
    """PROPS with one index writer active."""
    return {"plugin.includes": f"{PROPS['plugin.includes']}|indexer-{name}"}
# words of the articles' first sentences (past the front page's teasers), which follow the menu and the byline in the
# full text
QUERIES = ((ARTICLES[0], "gulls"), (ARTICLES[1], "blossom"), (ARTICLES[3], "hemisphere"))


@dataclass
class Crawled:
    tmp: Path
    crawl_id: str
    site: PageSite
    table: dict[str, WebPage]


@pytest.fixture(scope="module")
def crawled(tmp_path_factory: pytest.TempPathFactory):
    """The news site crawled (2 rounds) with parse-boilerplate, not indexed yet."""
    tmp = tmp_path_factory.mktemp("boilerplate")
    crawl_id = f"bp{uuid.uuid4().hex[:8]}"
    with PageSite(site_pages()) as site:
        assert cli("crawl", seed_file(tmp, site.url("/")), "-rounds", 2, "-crawlId", crawl_id,
                   *defines(tmp, "sqlite", **PROPS)) == 0
        yield Crawled(tmp, crawl_id, site, rows(conf_for(tmp, "sqlite", **PROPS), crawl_id))


def check_snippets(crawled: Crawled, search: Callable[[SearchRequest], SearchResult]) -> None:
    """A query word of an article finds it, with a snippet of its main content and no word of the chrome."""
    for a, word in QUERIES:
        url = crawled.site.url(a.path)
        hits = search(SearchRequest.from_params({"q": word, "collapse": "0"}, crawled.crawl_id)).hits
        assert [h.url for h in hits] == [url], word
        snippet = str(hits[0].snippet)
        assert f"<mark>{word}</mark>" in snippet, snippet
        assert not [w for w in CHROME_WORDS + ["Daily Lantern", "By "] if w in snippet], snippet
        article = " ".join(crawled.table[reverse_url(url)].metadata["main_content"].decode().split())
        text = html.unescape(" ".join(snippet.replace("<mark>", "").replace("</mark>", "").split()))
        assert text.strip("…") in article  # (a snippet is cut to 300 characters, with "…" where text was left out)


@pytest.mark.integration
def test_solr_holds_main_content_and_the_searcher_snippets_come_from_it(crawled: Crawled, solr_up: str) -> None:
    from nutch2.index.solr import SolrClient
    from nutch2.searcher.search import search

    require_fields(solr_up, "main_content", "main_author", "main_date")
    try:
        assert cli("index", "-all", "-crawlId", crawled.crawl_id, "-solr", solr_up,
                   *defines(crawled.tmp, "sqlite", **writer("solr"))) == 0
        docs = {d["url"]: d for d in crawl_docs(solr_up, crawled.crawl_id)}
        for a in ARTICLES:
            row, doc = crawled.table[reverse_url(crawled.site.url(a.path))], docs[crawled.site.url(a.path)]
            assert a.paragraphs[-1] in " ".join(row.metadata["main_content"].decode().split())
            assert "Crosswords" in row.text and "Crosswords" not in doc["main_content"]  # the full text beside it
            assert doc["main_date"].startswith(a.date)
            assert doc["main_author"].replace(".", "") == a.author.replace(".", "")
        solr = SolrClient(solr_up)
        check_snippets(crawled, lambda req: search(solr, req))
        # the full text's snippet of the same query shows the chrome: what the Searcher would show without it
        req = SearchRequest.from_params({"q": "gulls", "collapse": "0"}, crawled.crawl_id)
        full = solr.search("gulls", **{**req.solr_params(), "hl.fl": "content"})
        shown = next(iter(full.highlighting.values()))["content"][0]
        assert [w for w in MENU if w in shown], shown
    finally:
        delete_crawl(solr_up, crawled.crawl_id)


@pytest.mark.integration
def test_opensearch_snippets_come_from_main_content_as_solr_s(crawled: Crawled) -> None:
    pytest.importorskip("opensearchpy")
    from nutch2.index.opensearch import OpenSearchClient
    from nutch2.searcher.search_opensearch import OpenSearchBackend
    from tests.conftest import require_opensearch

    index_url = f"{require_opensearch()}/nutch2-test-boilerplate-{crawled.crawl_id}"
    try:
        assert cli("index", "-all", "-crawlId", crawled.crawl_id, "-opensearch", index_url,
                   *defines(crawled.tmp, "sqlite", **writer("opensearch-1x"))) == 0
        mapping = requests.get(f"{index_url}/_mapping", timeout=30).json()
        props = next(iter(mapping.values()))["mappings"]["properties"]
        assert props["main_content"]["analyzer"] == "nutch_text" and props["main_date"]["type"] == "date"
        check_snippets(crawled, OpenSearchBackend(OpenSearchClient(index_url)).search)
    finally:
        requests.delete(index_url, timeout=60)
