"""Indexing filter plugins: index-static, index-metadata and index-more, with the vectors of Nutch's own tests
(tests/data/nutch/index-plugins/*.json name their source), through the plugin chain as the index job builds it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nutch2.index.filters import IndexingFilters
from nutch2.plugin import Plugins
from nutch2.urls.tableutil import reverse_url
from nutch2.webpage import WebPage
from tests.conftest import make_conf

DATA = Path(__file__).parent / "data" / "nutch" / "index-plugins"
CHAIN = "index-(basic|more|metadata|static)|scoring-opic"


def vectors(name: str) -> list[dict]:
    return json.loads((DATA / f"{name}.json").read_text(encoding="utf-8"))["cases"]


def build(tmp_path: Path, plugin: str, **props: object):
    """The plugin's indexing filter, built as a task builds it."""
    conf = make_conf(tmp_path, **{"plugin.includes": plugin, **props})
    return Plugins(conf).build_one("indexing-filter", plugin)


def page(url: str, **fields: object) -> WebPage:
    return WebPage(reverse_url(url), **fields)


# ---------------------------------------------------------------------------------------------------- index-static
@pytest.mark.parametrize("case", vectors("index-static"), ids=lambda c: c["test"])
def test_index_static_nutch_vectors(case: dict, tmp_path: Path) -> None:
    flt = build(tmp_path, "index-static", **case["conf"])
    doc = flt.filter({}, "http://nutch.apache.org/index.html", page("http://nutch.apache.org/index.html"))
    assert doc == case["fields"]


def test_index_static_bad_entry_is_one_warning_and_values_add_to_a_field(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    flt = build(tmp_path, "index-static", **{"index.static": "collection:docs,oops,site_ss:a b"})
    build(tmp_path, "index-static", **{"index.static": "collection:docs,oops,site_ss:a b"})  # a second task
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "'oops'" in err[0] and "index.static.fieldsep" in err[0]
    doc = flt.filter({"site_ss": "x"}, "http://a.test/", page("http://a.test/"))
    assert doc == {"collection": ["docs"], "site_ss": ["x", "a", "b"]}  # Nutch's doc.add: after what was there


# ---------------------------------------------------------------------------------------------------- index-metadata
META = {"meta_description": b"About us", "meta_keywords": b"a, b\tc", "meta_author": b"  ", "lang_guess": b"en",
        "meta_og:title": b"OG"}
HEADERS = {"Server": "nginx/1.2", "content-language": "en, de", "X-Powered-By": "PHP"}


def test_index_metadata_keeps_index_metadata(tmp_path: Path) -> None:
    flt = build(tmp_path, "index-metadata")  # the shipped index.metadata
    doc = flt.filter({}, "http://a.test/", page("http://a.test/", metadata=dict(META), headers=dict(HEADERS)))
    assert doc == {"meta_description": ["About us"], "meta_keywords": ["a, b", "c"]}  # blank values left out


def test_index_parse_md_reads_nutch_metatag_names_and_other_keys(tmp_path: Path) -> None:
    flt = build(tmp_path, "index-metadata", **{"index.metadata": "", "index.parse.md":
                                                "metatag.description, meta_keywords,metatag.og:title,lang_guess"})
    doc = flt.filter({}, "http://a.test/", page("http://a.test/", metadata=dict(META)))
    assert doc == {"meta_description": ["About us"], "meta_keywords": ["a, b", "c"], "meta_og:title": ["OG"],
                   "lang_guess": ["en"]}
    both = build(tmp_path, "index-metadata", **{"index.parse.md": "metatag.description"})  # and index.metadata
    assert both.filter({}, "u", page("http://a.test/", metadata=dict(META)))["meta_description"] == ["About us"]


def test_index_content_md_indexes_response_headers(tmp_path: Path) -> None:
    flt = build(tmp_path, "index-metadata", **{"index.metadata": "", "index.content.md":
                                                "server,Content-Language,x-powered-by,ETag"})
    doc = flt.filter({}, "http://a.test/", page("http://a.test/", headers=dict(HEADERS)))
    assert doc == {"header_server": ["nginx/1.2"], "header_content_language": ["en, de"],
                   "header_x_powered_by": ["PHP"]}


# ---------------------------------------------------------------------------------------------------- index-more
@pytest.mark.parametrize("case", vectors("index-more"), ids=lambda c: c["test"])
def test_index_more_nutch_vectors(case: dict, tmp_path: Path) -> None:
    flt = build(tmp_path, "index-more", **case.get("conf", {}))
    row = page(case["url"], content=b"text", headers=dict(case.get("headers", {})),
               modified_time=case.get("modified_time", 0))
    doc = flt.filter({"title": case.get("title", "")}, case["url"], row)
    for name, value in case["expect"].items():
        if name == "type0":
            assert doc["type"][0] == value
        else:
            assert doc[name] == value, name


def test_index_more_row_content_type_and_http_dates(tmp_path: Path) -> None:
    flt = build(tmp_path, "index-more")
    row = page("http://a.test/x", content=b"%PDF", content_type="application/pdf",
               headers={"content-type": "text/html", "last-modified": "Tue, 18 Sep 2018 17:59:00 GMT",
                        "Content-Disposition": 'attachment; filename="report 2018.pdf"'}, modified_time=1)
    doc = flt.filter({"title": ""}, "http://a.test/x", row)
    assert doc == {"title": "report 2018.pdf", "type": ["application/pdf", "application", "pdf"], "contentLength": 4,
                   "lastModified": "2018-09-18T17:59:00.000Z"}
    bad = page("http://a.test/x", headers={"Last-Modified": "yesterday"}, modified_time=1537898340000)
    assert flt.filter({}, "http://a.test/x", bad)["lastModified"] == "2018-09-25T17:59:00.000Z"


# ---------------------------------------------------------------------------------------------------- the chain
def test_the_chain_gives_every_plugins_fields(tmp_path: Path) -> None:
    conf = make_conf(tmp_path, **{"plugin.includes": CHAIN, "index.static": "collection_s:docs",
                                  "index.content.md": "Server", "index.parse.md": "metatag.keywords"})
    filters = IndexingFilters.from_conf(conf)
    assert {"metadata", "headers", "content"} <= set(filters.fields)
    row = page("http://a.test/", title="T", text="body", content=b"<p>", content_type="text/html",
               metadata=dict(META), headers=dict(HEADERS), fetch_time=1)
    doc = filters.document(row, "c1")
    filters.close()
    assert doc is not None
    assert doc["collection_s"] == ["docs"] and doc["header_server"] == ["nginx/1.2"]
    assert doc["meta_keywords"] == ["a, b", "c"] and doc["type"] == ["text/html", "text", "html"]
    assert doc["id"] == "c1!" + reverse_url("http://a.test/") and doc["title"] == "T"
