"""Integration: the configset's text analysis: CJK by character bigrams, Latin by whole words (no stemming)."""

from __future__ import annotations

import uuid

import pytest
import requests

from tests.searchapp import SOLR, require_solr

pytestmark = pytest.mark.integration


def _select(q: str, run: str, **params: object) -> dict:
    r = requests.get(f"{SOLR}/select", params={"q": q, "fq": f'batchId:"{run}"', "fl": "id", "wt": "json",
                                               **params}, timeout=30)
    assert r.status_code == 200, r.text
    return r.json()


def _ids(q: str, run: str) -> list[str]:
    return sorted(d["id"].rsplit("/", 1)[-1] for d in _select(q, run)["response"]["docs"])


def test_cjk_bigrams_and_latin_words() -> None:
    require_solr()
    run = "cjk-" + uuid.uuid4().hex[:12]
    docs = [
        {"id": f"{run}/zh", "url": f"http://zh.example/{run}", "title": "网络爬虫", "batchId": run,
         "content": "网络爬虫是一种自动抓取网页的程序，搜索引擎用它建立索引。"},
        # 爬 and 虫 both, never side by side
        {"id": f"{run}/apart", "url": f"http://apart.example/{run}", "title": "爬山", "batchId": run,
         "content": "我们去爬山，看见一只虫子。"},
        {"id": f"{run}/ja", "url": f"http://ja.example/{run}", "title": "日本語のテストページ", "batchId": run,
         "content": "ウェブクローラーはページを集めます。"},
        {"id": f"{run}/ko", "url": f"http://ko.example/{run}", "title": "검색 엔진", "batchId": run,
         "content": "웹 크롤러는 페이지를 수집합니다."},
        {"id": f"{run}/en", "url": f"http://en.example/{run}", "title": "Crawlers", "batchId": run,
         "content": "A crawler fetches pages; ＦＵＬＬＷＩＤＴＨ letters fold to ASCII."},
    ]
    r = requests.post(f"{SOLR}/update", params={"commit": "true"}, json=docs, timeout=30)
    assert r.status_code == 200, r.text
    try:
        assert _ids("爬虫", run) == ["zh"]  # two characters side by side, not anywhere in the page
        assert _ids("搜索引擎", run) == ["zh"]
        assert _ids('"建立索引"', run) == ["zh"]
        assert _ids("爬", run) == ["apart", "zh"]  # one character still finds something
        assert _ids("テスト", run) == ["ja"] and _ids("クローラー", run) == ["ja"]
        assert _ids("크롤러는", run) == ["ko"]
        assert _ids("crawler", run) == ["en"] and _ids("crawlers", run) == ["en"]  # title vs content word
        assert _ids("fetch", run) == [] and _ids("page", run) == []  # no stemming: fetches, pages
        assert _ids("fullwidth", run) == ["en"]
        hl = _select("爬虫", run, hl="true", **{"hl.fl": "content"})["highlighting"][f"{run}/zh"]["content"][0]
        assert "<em>爬虫</em>" in hl
    finally:
        requests.post(f"{SOLR}/update", params={"commit": "true"}, json={"delete": {"query": f'batchId:"{run}"'}},
                      timeout=30)
