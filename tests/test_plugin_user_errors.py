"""A user's plugin that raises, or returns what is not a result, is named in one line with the fix:
- a URL filter or normalizer that raises drops that URL (as Nutch drops it) and names itself once, and
  filterchecker says it dropped the URL (no traceback);
- an indexing filter that raises or returns no document fails that page only, named; indexchecker names the
  filter that keeps a page out;
- a parse filter or indexing filter that fails on every page ends the command non-zero, naming it, with no row
  left half-done: the same command again (the plugin fixed) finishes. End to end on the processes runner."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from nutch2.crawldb.scoring import ScoringFilters
from nutch2.index.filters import FilterFailed, IndexingFilter, IndexingFilters
from nutch2.urls.filters import URLFilter, URLFilters
from nutch2.urls.normalizers import URLNormalizer, URLNormalizers
from nutch2.webpage import WebPage

REPO = Path(__file__).resolve().parent.parent
URL = "http://example.com/a"


class RaisingFilter(URLFilter):
    plugin_id = "my-urls"

    def filter(self, url: str) -> str | None:
        raise RuntimeError("boom")


class RaisingNormalizer(URLNormalizer):
    plugin_id = "my-norm"

    def normalize(self, url: str, scope: str) -> str | None:
        raise ValueError("bad port")


def test_a_url_filter_that_raises_drops_the_url_and_is_named_once(caplog: pytest.LogCaptureFixture) -> None:
    chain = URLFilters([RaisingFilter(None)])  # type: ignore[arg-type]
    with caplog.at_level(logging.WARNING):
        assert chain.filter(URL) is None
        assert chain.filter(URL + "b") is None
    named = [r.getMessage() for r in caplog.records if "my-urls" in r.getMessage()]
    assert len(named) == 1 and "RuntimeError: boom" in named[0] and "plugin.includes" in named[0], named
    kept, why = chain.explain(URL)
    assert not kept and why.startswith("my-urls: raised RuntimeError: boom"), why


def test_a_url_normalizer_that_raises_drops_the_url_and_is_named(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        assert URLNormalizers([RaisingNormalizer(None)]).normalize(URL) is None  # type: ignore[arg-type]
    assert any("url normalizer my-norm raised ValueError: bad port" in r.getMessage() for r in caplog.records)


class Index(IndexingFilter):
    plugin_id = "my-index"

    def __init__(self, result: object) -> None:
        self.result = result

    def filter(self, doc, url, page):  # type: ignore[no-untyped-def]
        if isinstance(self.result, Exception):
            raise self.result
        return self.result


@pytest.mark.parametrize("result, says", [(KeyError("title"), "indexing filter my-index raised KeyError"),
                                          ("doc", "indexing filter my-index returned str, not the document")])
def test_an_indexing_filter_that_raises_or_returns_no_document_is_named(result: object, says: str) -> None:
    filters = IndexingFilters([Index(result)], ScoringFilters([]))
    with pytest.raises(FilterFailed, match=says):
        filters.document(WebPage("com.example:http/a"), None)


def test_the_indexing_filter_that_keeps_a_page_out_is_known() -> None:
    filters = IndexingFilters([Index(None)], ScoringFilters([]))
    assert filters.document(WebPage("com.example:http/a"), None) is None
    assert filters.dropped_by == "my-index"
