"""language-identifier: Nutch's test vectors for reading language names and codes (TestHTMLLanguageParser), the
detect and identify ways in lang.extraction.policy's order, texts in 18 languages identified, the certainty and
length settings, the lang field and lang.index.languages, and a crawl of pages in several languages into Solr."""

from __future__ import annotations

import sys
import uuid
from pathlib import Path

import pytest

from nutch2.errors import ConfigError
from nutch2.parse.html import parse_html
from nutch2.parse.result import ParseResult
from nutch2.plugins.language_identifier.codes import parse_language
from nutch2.plugins.language_identifier.indexer import LanguageIndexingFilter
from nutch2.plugins.language_identifier.parser import HTMLLanguageParser, identifier
from nutch2.urls.tableutil import reverse_url
from nutch2.webpage import WebPage
from tests.conftest import make_conf
from tests.crawlutil import cli, conf_for, defines, rows, seed_file
from tests.pagesite import PageSite
from tests.solrschema import crawl_docs, delete_crawl

DATA = Path(__file__).parent / "data" / "languages" / "texts.txt"
TEXTS = dict(line.rstrip("\n").split("\t", 1) for line in DATA.read_text(encoding="utf-8").splitlines()
             if line and not line.startswith("#"))

# apache/nutch src/plugin/language-identifier/src/test/org/apache/nutch/analysis/lang/TestHTMLLanguageParser.java,
# testParseLanguage: a value a page gives -> the ISO 639-1 code Nutch reads in it
NUTCH_PARSE_LANGUAGE = [
    ("(SCHEME=ISO.639-1) sv", "sv"), ("(SCHEME=RFC1766) sv-FI", "sv"), ("(SCHEME=Z39.53) SWE", "sv"),
    ("EN_US, SV, EN, EN_UK", "en"), ("English Swedish", "en"), ("English, swedish", "en"), ("English,Swedish", "en"),
    ("Other (Svenska)", "sv"), ("SE", "se"), ("SV", "sv"), ("SV charset=iso-8859-1", "sv"), ("SV-FI", "sv"),
    ("SV; charset=iso-8859-1", "sv"), ("SVE", "sv"), ("SW", "sw"), ("SWE", "sv"), ("SWEDISH", "sv"), ("Sv", "sv"),
    ("Sve", "sv"), ("Svenska", "sv"), ("Swedish", "sv"), ("Swedish, svenska", "sv"), ("en, sv", "en"), ("sv", "sv"),
    ("sv, be, dk, de, fr, no, pt, ch, fi, en", "sv"), ("sv,en", "sv"), ("sv-FI", "sv"), ("sv-SE", "sv"),
    ("sv-en", "sv"), ("sv-fi", "sv"), ("sv-se", "sv"), ("sv; Content-Language: sv", "sv"), ("sv_SE", "sv"),
    ("sve", "sv"), ("svenska, swedish, engelska, english", "sv"), ("sw", "sw"), ("swe", "sv"), ("swe.SPR.", "sv"),
    ("sweden", "sv"), ("swedish", "sv"), ("swedish,", "sv"), ("text/html; charset=sv-SE", "sv"),
    ("text/html; sv", "sv"), ("torp, stuga, uthyres, bed & breakfast", None),
]
# the same file, testMetaHTMLParsing: the language an HTML page names (Tika found none in the first one's text)
NUTCH_META_DOCS = [
    ('<html lang="fi"><head>document 1 title</head><body>jotain suomeksi</body></html>', "fi"),
    ('<html><head><meta http-equiv="content-language" content="en"><title>document 2 title</head><body>this is '
     "english</body></html>", "en"),
    ('<html><head><meta name="dc.language" content="en"><title>document 3 title</head><body>this is english</body>'
     "</html>", "en"),
]


@pytest.mark.parametrize("value, code", NUTCH_PARSE_LANGUAGE)
def test_nutch_parse_language_vectors(value: str, code: str | None) -> None:
    assert parse_language(value) == code


def language(html: str, tmp_path: Path, headers: dict[str, str] | None = None, page: WebPage | None = None,
             **props: object) -> str | None:
    """The row's language after the parse filter ran on an HTML page."""
    flt = HTMLLanguageParser(make_conf(tmp_path, **props))
    url = "http://lang.test/page.html"
    page = page or WebPage(reverse_url(url), metadata={}, headers=headers or {})
    result = parse_html(html.encode(), url, "text/html", headers, keep_dom=True)
    flt.filter(None, result, page, result.dom)
    value = page.metadata.get("lang")
    return value.decode() if value else None


def html(text: str, head: str = "", html_attrs: str = "") -> str:
    return f"<html{html_attrs}><head>{head}</head><body><p>{text}</p></body></html>"


@pytest.mark.parametrize("doc, code", NUTCH_META_DOCS)
def test_nutch_meta_html_vectors(doc: str, code: str, tmp_path: Path) -> None:
    assert language(doc, tmp_path) == code


@pytest.mark.parametrize("code", sorted(TEXTS))
def test_texts_in_many_languages_are_identified(code: str, tmp_path: Path) -> None:
    assert language(html(TEXTS[code]), tmp_path, **{"lang.extraction.policy": "identify"}) == code


def test_detect_reads_the_page_before_the_header(tmp_path: Path) -> None:
    english = TEXTS["en"]
    assert language(html(english, html_attrs=' lang="de-AT"'), tmp_path, {"Content-Language": "fr"}) == "de"
    assert language(html(english, '<meta name="DC.Language" content="Svenska">'), tmp_path) == "sv"
    # the first lang attribute that names a language wins (the html element's is empty here)
    assert language(html(f'<span lang="x-klingon">a</span><span lang="nl">b</span> {english}',
                         html_attrs=' lang=""'), tmp_path) == "nl"
    # no hint in the page: the HTTP header
    assert language(html(english), tmp_path, {"content-language": "fr-CA"}, **{
        "lang.extraction.policy": "detect"}) == "fr"
    assert language(html(english), tmp_path, **{"lang.extraction.policy": "detect"}) is None


def test_the_policy_orders_detect_and_identify(tmp_path: Path) -> None:
    page = html(TEXTS["es"], html_attrs=' lang="de"')
    assert language(page, tmp_path, **{"lang.extraction.policy": "detect,identify"}) == "de"
    assert language(page, tmp_path, **{"lang.extraction.policy": "identify,detect"}) == "es"
    assert language(page, tmp_path, **{"lang.extraction.policy": "identify"}) == "es"
    assert language(html(TEXTS["es"]), tmp_path, **{"lang.extraction.policy": "detect,identify"}) == "es"
    # text of no language: identify gives nothing, detect then has its turn
    assert language(html("12 345 678 - 90 %", html_attrs=' lang="it"'), tmp_path, **{
        "lang.extraction.policy": "identify,detect"}) == "it"
    assert language(html("12 345 678 - 90 %"), tmp_path, **{"lang.extraction.policy": "identify"}) is None


def test_only_certain_keeps_a_guess_out(tmp_path: Path) -> None:
    short = html("Hotel Taxi Restaurant")
    assert language(short, tmp_path, **{"lang.identification.only.certain": "false"}) is not None
    assert language(short, tmp_path, **{"lang.identification.only.certain": "true"}) is None
    assert language(html(TEXTS["fi"]), tmp_path, **{"lang.identification.only.certain": "true"}) == "fi"


def test_analyze_max_length_limits_the_text_read(tmp_path: Path) -> None:
    mixed = html(TEXTS["de"] + " " + " ".join([TEXTS["en"]] * 6))
    assert language(mixed, tmp_path, **{"lang.analyze.max.length": 200}) == "de"
    assert language(mixed, tmp_path, **{"lang.analyze.max.length": 0}) == "en"


def test_a_new_parse_replaces_the_language(tmp_path: Path) -> None:
    page = WebPage(reverse_url("http://lang.test/page.html"), metadata={"lang": b"de", "x_keep": b"k"}, headers={})
    assert language(html(TEXTS["pl"]), tmp_path, page=page) == "pl"
    assert language(html("1 2 3"), tmp_path, page=page, **{"lang.extraction.policy": "identify"}) is None
    assert page.metadata == {"x_keep": b"k"}


def test_a_document_parsers_metadata_is_detected(tmp_path: Path) -> None:
    """A document without a DOM (a PDF through Tika): its parser's language metadata."""
    flt = HTMLLanguageParser(make_conf(tmp_path, **{"lang.extraction.policy": "detect"}))
    page = WebPage(reverse_url("http://lang.test/a.pdf"), metadata={}, headers={})
    flt.filter(None, ParseResult(title="t", text=TEXTS["en"], meta={"language": "pt-BR"}), page, None)
    assert page.metadata["lang"] == b"pt"


@pytest.mark.parametrize("policy", ["", "detect,guess", "identify,identify"])
def test_a_bad_policy_is_one_line(policy: str, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="lang.extraction.policy=.* is not a policy; give detect, identify"):
        HTMLLanguageParser(make_conf(tmp_path, **{"lang.extraction.policy": policy}))


def test_without_py3langid_identify_names_the_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "py3langid", None)
    monkeypatch.setitem(sys.modules, "py3langid.langid", None)
    identifier.cache_clear()
    try:
        with pytest.raises(ConfigError, match=r"needs py3langid; pip install 'nutch2\[langid\]'"):
            HTMLLanguageParser(make_conf(tmp_path))
        HTMLLanguageParser(make_conf(tmp_path, **{"lang.extraction.policy": "detect"}))  # no model needed
    finally:
        identifier.cache_clear()


def test_the_lang_field(tmp_path: Path) -> None:
    flt = LanguageIndexingFilter(make_conf(tmp_path))
    key = reverse_url("http://lang.test/")
    assert flt.filter({}, "", WebPage(key, metadata={"lang": b"sv"}, headers={})) == {"lang": "sv"}
    assert flt.filter({}, "", WebPage(key, metadata={}, headers={"Content-Language": "de-CH"})) == {"lang": "de"}
    assert flt.filter({}, "", WebPage(key, metadata={}, headers={})) == {"lang": "unknown"}
    only = LanguageIndexingFilter(make_conf(tmp_path, **{"lang.index.languages": "en,sv"}))
    assert only.filter({}, "", WebPage(key, metadata={"lang": b"sv"}, headers={})) == {"lang": "sv"}
    assert only.filter({}, "", WebPage(key, metadata={"lang": b"fr"}, headers={})) is None
    assert only.filter({}, "", WebPage(key, metadata={}, headers={})) is None  # "unknown" is not listed


@pytest.mark.integration
def test_a_crawl_indexes_the_language_of_each_page(tmp_path: Path, solr_up: str) -> None:
    """Pages in several languages, none of which names its language, and one whose lang attribute and header
    disagree with its text: the rows and the lang fields in Solr; lang.index.languages keeps others out."""
    codes = ["en", "de", "fr", "ru", "ja", "ar"]
    pages: dict[str, str | tuple[str, dict[str, str]]] = {
        f"/{c}.html": html(TEXTS[c]) for c in codes}
    pages["/named.html"] = (html(TEXTS["es"], html_attrs=' lang="ca"'), {"Content-Language": "it"})
    # the home page has no words: identify finds no language there ("unknown")
    pages["/"] = "<html><body>" + "".join(f'<a href="{p}">{i}</a> ' for i, p in enumerate(pages)) + "</body></html>"
    crawl_id = f"lg{uuid.uuid4().hex[:8]}"
    props = {"plugin.includes": "protocol-http|parse-html|index-basic|indexer-solr|urlfilter-regex|urlnormalizer-basic|"
                                "scoring-opic|language-identifier"}
    with PageSite(pages) as site:
        try:
            assert cli("crawl", seed_file(tmp_path, site.url("/")), "-rounds", 2, "-crawlId", crawl_id,
                       "-solr", solr_up, *defines(tmp_path, "sqlite", **props)) == 0
            table = rows(conf_for(tmp_path, "sqlite", **props), crawl_id)
            assert {c: table[reverse_url(site.url(f"/{c}.html"))].metadata["lang"] for c in codes} == {
                c: c.encode() for c in codes}
            langs = {d["url"]: d["lang"] for d in crawl_docs(solr_up, crawl_id, fl="url,lang")}
            assert langs == {**{site.url(f"/{c}.html"): c for c in codes}, site.url("/named.html"): "ca",
                             site.url("/"): "unknown"}
            # only some languages indexed: the others' documents go at the next index of the crawl
            delete_crawl(solr_up, crawl_id)
            assert cli("index", "-reindex", "-crawlId", crawl_id, "-solr", solr_up,
                       *defines(tmp_path, "sqlite", **props, **{"lang.index.languages": "de,ja"})) == 0
            assert sorted(d["lang"] for d in crawl_docs(solr_up, crawl_id, fl="lang")) == ["de", "ja"]
        finally:
            delete_crawl(solr_up, crawl_id)
