"""parse-xpath and index-xpath: fields by XPath or CSS selectors from parse.xpath.file (StormCrawler's XPathFilter
shape) stored on the row as x_<field>, indexed as x_<field> fields; a bad extractors file is one line naming the
file, the field and what is wrong; a crawl of a loopback shop with both plugins puts the fields into Solr."""

from __future__ import annotations

import json
import pickle
import uuid
from pathlib import Path

import pytest

from nutch2.config import Configuration
from nutch2.errors import ConfigError
from nutch2.parse.html import parse_html
from nutch2.plugin import Plugins
from nutch2.plugins.index_xpath.filter import XPathIndexer
from nutch2.plugins.parse_xpath.filter import XPathFilter, joined
from nutch2.urls.tableutil import reverse_url
from nutch2.webpage import WebPage
from tests.conftest import make_conf
from tests.crawlutil import cli, conf_for, defines, rows, seed_file
from tests.pagesite import PageSite
from tests.solrschema import crawl_docs, delete_crawl, require_dynamic_fields

BOOK = """<!DOCTYPE html><html><head><title>{title}</title>
<link rel="canonical" href="http://shop.test/books/{n}"></head>
<body><h1>{title}</h1>
<p class="byline">by <span class="name">{author}</span> and <span class="name">{coauthor}</span></p>
<div class="offer"><span class="price"> {price} </span> <span class="currency">EUR</span></div>
<ul class="tags"><li><a href="/tag/novel">novel</a></li><li><a href="/tag/{tag}">{tag}</a></li></ul>
<p>Some text about the book.</p></body></html>"""

EXTRACTORS = {
    "price": ["//span[@class='price']/text()"],
    "author": "css:.byline .name",
    "tag": ["css:ul.tags a::attr(href)"],
    # tried in order: the first finds nothing on these pages, the second does
    "isbn": ["//td[@itemprop='isbn']", "//meta[@name='isbn']/@content"],
    "heading": {"expressions": ["//h1"], "urls": "/books/2\\.html$"},
    "links": ["count(//a)"],
}


def book(n: int, **kw: str) -> str:
    values = {"title": f"Book {n}", "author": "Ann Author", "coauthor": "Bo Writer", "price": f"{n}9.90",
              "tag": f"t{n}", "n": str(n)} | kw
    return BOOK.format(**values)


def conf_with(tmp_path: Path, extractors: object, **props: object) -> Configuration:
    path = tmp_path / "extractors.json"
    path.write_text(extractors if isinstance(extractors, str) else json.dumps(extractors))
    return make_conf(tmp_path, **{"parse.xpath.file": str(path), **props})


def parsed(html: str, url: str, flt: XPathFilter, page: WebPage | None = None) -> WebPage:
    page = page or WebPage(reverse_url(url), metadata={})
    result = parse_html(html.encode(), url, "text/html", {}, keep_dom=True)
    flt.filter(None, result, page, result.dom)
    return page


def test_fields_are_extracted_into_the_row(tmp_path: Path) -> None:
    flt = XPathFilter(conf_with(tmp_path, EXTRACTORS))
    page = parsed(book(1).replace("</head>", '<meta name="isbn" content="978-3-16"></head>'),
                  "http://shop.test/books/1.html", flt)
    assert page.metadata == {
        "x_price": b"19.90",
        "x_author": b"Ann Author\tBo Writer",  # every value of the expression that found one
        "x_tag": b"/tag/novel\t/tag/t1",  # ::attr(href) of a CSS selector
        "x_isbn": b"978-3-16",  # the second expression: the first found nothing
        "x_links": b"2",  # a number
    }  # heading: only for URLs matching its "urls"
    page2 = parsed(book(2), "http://shop.test/books/2.html", flt)
    assert page2.metadata["x_heading"] == b"Book 2" and "x_isbn" not in page2.metadata


def test_a_new_parse_replaces_the_fields_of_the_last(tmp_path: Path) -> None:
    flt = XPathFilter(conf_with(tmp_path, EXTRACTORS))
    url = "http://shop.test/books/1.html"
    page = parsed(book(1), url, flt)
    page.metadata["meta_description"] = b"kept"
    again = parsed(book(1).replace('class="price"', 'class="sold-out"'), url, flt, page)
    assert "x_price" not in again.metadata and again.metadata["x_author"] == b"Ann Author\tBo Writer"
    assert again.metadata["meta_description"] == b"kept"  # other plugins' metadata is left alone
    flt.filter(None, None, again, None)  # a document without a DOM (a PDF): no field of an earlier parse stays
    assert not [k for k in again.metadata if k.startswith("x_")]


def test_values_are_whitespace_collapsed_and_capped(tmp_path: Path) -> None:
    flt = XPathFilter(conf_with(tmp_path, {"p": "//p"}, **{"parse.xpath.max.length": 12}))
    page = parsed("<html><body><p>one\n  two\tthree</p><p>four</p></body></html>", "http://a.test/", flt)
    assert page.metadata["x_p"] == b"one two thre"
    assert joined(["ab", "cd", "ef"], 5) == "ab\tcd" and joined(["ab", "cd"], -1) == "ab\tcd"


def test_the_filter_ships_with_a_job(tmp_path: Path) -> None:
    """A filter that went through pickle (a job's task copy) extracts as the one built in place."""
    flt = XPathFilter(conf_with(tmp_path, EXTRACTORS))
    url = "http://shop.test/books/2.html"
    assert parsed(book(2), url, pickle.loads(pickle.dumps(flt))).metadata == parsed(book(2), url, flt).metadata


def test_index_xpath_sends_the_fields(tmp_path: Path) -> None:
    page = WebPage(reverse_url("http://a.test/"), metadata={"x_author": b"Ann\tBo", "x_price": b"9.90",
                                                             "meta_keywords": b"k", "x_empty": b""})
    doc = XPathIndexer(make_conf(tmp_path)).filter({"id": "x"}, "http://a.test/", page)
    assert doc == {"id": "x", "x_author": ["Ann", "Bo"], "x_price": ["9.90"]}


@pytest.mark.parametrize("content, message", [
    ("{not json", "not valid JSON"),
    ('["//a"]', "expected a JSON object of field: expressions"),
    ('{"pri ce": "//a"}', "field 'pri ce': a field name is letters, digits and _"),
    ('{"price": []}', "field 'price': give an expression or a list of expressions"),
    ('{"price": ["//span["]}', "field 'price': '//span[' is not a valid XPath 1.0 expression"),
    ('{"price": ["//a", "$x"]}', "field 'price': '$x' is not a valid XPath 1.0 expression (Undefined variable)"),
    ('{"price": ["lower-case(//a)"]}', "is not a valid XPath 1.0 expression (Unregistered function)"),
    ('{"price": "css:span[[" }', "field 'price': 'css:span[[' is not a CSS selector"),
    ('{"price": "css:a::before"}', "unknown pseudo-element ::before"),
    ('{"price": {"expressions": "//a", "urls": "("}}', "field 'price': urls '(' is not a valid regular expression"),
    ('{"price": {"xpath": "//a"}}', "field 'price': unknown key xpath"),
])
def test_a_bad_extractors_file_is_one_line_naming_it(tmp_path: Path, content: str, message: str) -> None:
    with pytest.raises(ConfigError) as e:
        XPathFilter(conf_with(tmp_path, content))
    assert message in str(e.value) and "\n" not in str(e.value)
    assert str(tmp_path / "extractors.json") in str(e.value)


def test_a_missing_extractors_file_names_it(tmp_path: Path) -> None:
    conf = make_conf(tmp_path, **{"parse.xpath.file": str(tmp_path / "nope.json")})
    with pytest.raises(ConfigError, match="cannot read .*nope.json"):
        XPathFilter(conf)


def test_the_shipped_extractors_file_loads(tmp_path: Path) -> None:
    conf = make_conf(tmp_path, **{"plugin.includes": "parse-(html|xpath)|index-xpath"})
    flt, = Plugins(conf).build("parse-filter")
    page = parsed(book(3), "http://shop.test/books/3.html", flt)
    assert page.metadata == {"x_canonical": b"http://shop.test/books/3", "x_heading": b"Book 3"}


def test_a_bad_extractors_file_stops_the_command_before_any_row(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"price": "//span["}')
    d = defines(tmp_path, "sqlite", **{"plugin.includes": "protocol-http|parse-(html|xpath)|urlfilter-regex"})
    seeds = seed_file(tmp_path, "http://127.0.0.1:9/")
    assert cli("crawl", seeds, "-rounds", 1, "-crawlId", "bad", *d, "-D", f"parse.xpath.file={bad}") == 1  # no inject
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert [line for line in lines if "bad.json" in line] == lines[-1:]
    assert "field 'price'" in lines[-1] and "not a valid XPath" in lines[-1]
    assert not (tmp_path / "crawl").exists() or not rows(conf_for(tmp_path, "sqlite"), "bad")


# ------------------------------------------------------------------------------------------ a crawl into Solr
@pytest.mark.integration
def test_a_crawl_indexes_the_fields_in_solr(tmp_path: Path, solr_up: str) -> None:
    require_dynamic_fields(solr_up, "x_*")
    pages = {"/": '<html><body><a href="/books/1.html">1</a> <a href="/books/2.html">2</a></body></html>',
             "/books/1.html": book(1),
             "/books/2.html": book(2, author="Quentin Quill").replace(
                 "</head>", '<meta name="isbn" content="978316zzq"></head>')}
    extractors = tmp_path / "extractors.json"
    extractors.write_text(json.dumps(EXTRACTORS))
    crawl_id = f"xp{uuid.uuid4().hex[:8]}"
    props = {"plugin.includes": "protocol-http|parse-(html|xpath)|index-(basic|xpath)|indexer-solr|urlfilter-regex|"
                                "urlnormalizer-basic|scoring-opic", "parse.xpath.file": extractors}
    with PageSite(pages) as site:
        seeds = seed_file(tmp_path, site.url("/"))
        try:
            assert cli("crawl", seeds, "-rounds", 2, "-crawlId", crawl_id, "-solr", solr_up,
                       *defines(tmp_path, "sqlite", **props)) == 0
            row = rows(conf_for(tmp_path, "sqlite", **props), crawl_id)[reverse_url(site.url("/books/2.html"))]
            assert row.metadata["x_author"] == b"Quentin Quill\tBo Writer"
            docs = {d["url"]: d for d in crawl_docs(solr_up, crawl_id)}
            assert docs[site.url("/books/1.html")]["x_price"] == ["19.90"]
            assert docs[site.url("/books/2.html")]["x_author"] == ["Quentin Quill", "Bo Writer"]
            assert docs[site.url("/books/2.html")]["x_heading"] == ["Book 2"]
            assert docs[site.url("/")]["x_links"] == ["2"] and "x_price" not in docs[site.url("/")]
            # exact values to filter on; the text field (copyField x_* -> text) has values the page text lacks
            assert [d["url"] for d in crawl_docs(solr_up, crawl_id, 'x_author:"Quentin Quill"')] == [
                site.url("/books/2.html")]
            assert [d["url"] for d in crawl_docs(solr_up, crawl_id, "978316zzq")] == [site.url("/books/2.html")]
        finally:
            delete_crawl(solr_up, crawl_id)
