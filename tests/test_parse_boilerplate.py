"""parse-boilerplate: the main content of the news site's article pages (tests/newssite.py: cookie banner, menu, ads,
related links, newsletter box, comments, footer around each article) holds every paragraph of the article and none
of the rest; title, author and date go into the row's metadata; its indexing filter sends main_content, main_author
and main_date. A crawl of the site into the real Solr: the Searcher's snippets come from main_content, so a query
word of the article shows its sentence and no menu word."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

from nutch2.config import Configuration
from nutch2.errors import ConfigError
from nutch2.parse.html import parse_html
from nutch2.parse.parsers import Document
from nutch2.urls.tableutil import reverse_url
from nutch2.webpage import WebPage
from tests.conftest import make_conf
from tests.newssite import ARTICLES, BOILERPLATE, MENU, Article, article_page

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


