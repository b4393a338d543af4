"""Integration: the local Solr (docker/services.sh start solr) serves core `nutch` with the repo's configset.

Checks the schema round-trips Nutch's fields, the catch-all `text` default field, and content highlighting.
"""

from __future__ import annotations

import uuid

import pytest
import requests

pytestmark = pytest.mark.integration




def _update(solr: str, body: object) -> None:
    r = requests.post(f"{solr}/update", params={"commit": "true", "wt": "json"}, json=body, timeout=30)
    assert r.status_code == 200, r.text
    assert r.json()["responseHeader"]["status"] == 0


def _select(solr: str, **params: object) -> dict:
    r = requests.get(f"{solr}/select", params={"wt": "json", **params}, timeout=30)
    assert r.status_code == 200, r.text
    return r.json()


def test_fields_text_field_and_highlighting(solr_up: str) -> None:
    solr = solr_up
    run = uuid.uuid4().hex[:12]
    word = f"zebra{run}"  # unique per run: concurrent runs and leftovers from old runs do not interfere
    docs = [
        {
            "id": f"com.example.www:http/{run}/a.html",
            "url": f"http://www.example.com/{run}/a.html",
            "host": "www.example.com",
            "title": "Striped animals of the savanna",
            "content": f"The {word} grazes near the river. Lions watch from the tall grass while birds sing.",
            "anchor": ["zebra page", "savanna"],
            "digest": "0123456789abcdef",
            "batchId": f"batch-{run}",
            "boost": 1.5,
            "tstamp": "2024-05-01T12:34:56Z",
            "contentLength": 88,
            "type": ["text/html", "text"],
            "lang": "en",
            "meta_keywords": "zebra",
        },
        {
            "id": f"com.example.www:http/{run}/b.html",
            "url": f"http://www.example.com/{run}/b.html",
            "host": "www.example.com",
            "title": "Desert plants",
            "content": "Cacti store water in thick stems.",
            "boost": 0.25,
            "tstamp": "2024-05-02T00:00:00Z",
            "batchId": f"batch-{run}",
        },
    ]
    _update(solr, docs)
    try:
        # round trip of stored fields, selected by batch (exact string field)
        res = _select(
            solr, q=f'batchId:"batch-{run}"', fl="id,url,title,content,boost,tstamp,host,type,anchor", sort="id asc"
        )
        got = res["response"]["docs"]
        assert res["response"]["numFound"] == 2
        for sent, back in zip(docs, got, strict=True):
            for f in ("id", "url", "title", "content", "boost", "tstamp", "host"):
                assert back[f] == sent[f], f
        assert got[0]["type"] == ["text/html", "text"]
        assert got[0]["anchor"] == ["zebra page", "savanna"]

        # a content word is found through the default field `text` (df=text in /select), case-insensitively
        res = _select(solr, q=word.upper(), fl="id")
        assert [d["id"] for d in res["response"]["docs"]] == [docs[0]["id"]]
        # url and anchor words are copied into `text` too
        assert _select(solr, q=f"{run} AND savanna", fl="id")["response"]["numFound"] == 1

        # highlighting on content returns a snippet with the matched word marked
        res = _select(solr, q=word, fl="id", hl="true", **{"hl.fl": "content"})
        snippets = res["highlighting"][docs[0]["id"]]["content"]
        assert snippets and f"<em>{word}</em>" in snippets[0]
        assert "grazes" in snippets[0]
    finally:
        _update(solr, {"delete": {"query": f'batchId:"batch-{run}"'}})
    assert _select(solr, q=f'batchId:"batch-{run}"')["response"]["numFound"] == 0
