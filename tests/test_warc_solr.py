"""The WARC round trip in the real Solr (docker/services.sh start solr): a crawl of the test web indexed, exported
with `nutch2 warc`, imported into another crawl id with `nutch2 warcimport`, parsed, updated and indexed: the same
documents. Only this test's documents are read and deleted (by id), not the rest of the shared core."""

from __future__ import annotations

from pathlib import Path

import pytest
import requests

from nutch2.index.solr import document_id
from nutch2.jobs.index import indexable
from tests.conftest import SOLR_URL as SOLR
from tests.crawlutil import cli, conf_for, defines, rows
from tests.testweb import TestWeb

pytestmark = [pytest.mark.integration, pytest.mark.slow]
# what may differ: the batch, and the boost (the OPIC score, which comes from the crawl's own link history)
# and the crawl, in the crawlId field and the document id
DIFFERENT = {"batchId", "boost", "_version_", "id", "crawlId"}




def documents(ids: list[str]) -> dict[str, dict]:
    r = requests.post(f"{SOLR}/select", data={"q": "{!terms f=id}" + ",".join(ids), "rows": len(ids) + 10,
                                              "wt": "json", "fl": "*"}, timeout=30)
    r.raise_for_status()
    return {doc["id"]: doc for doc in r.json()["response"]["docs"]}


def delete(ids: list[str]) -> None:
    requests.post(f"{SOLR}/update?commit=true", json={"delete": ids}, timeout=30).raise_for_status()


def comparable(doc: dict) -> dict:
    return {k: sorted(v) if isinstance(v, list) else v for k, v in doc.items() if k not in DIFFERENT}


def test_export_import_index_gives_the_same_documents(solr_up: str, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    d = defines(tmp_path, "sqlite")
    conf = conf_for(tmp_path, "sqlite")
    with TestWeb(hosts=4, pages_per_host=6, slow_seconds=0.3) as web:
        (tmp_path / "seeds.txt").write_text(web.seed_url + "\n")
        assert cli("crawl", tmp_path / "seeds.txt", "-crawlId", "wa", "-rounds", 3, *d) == 0
    keys = sorted(k for k, p in rows(conf, "wa").items() if indexable(p))
    assert len(keys) > 20
    ids = [document_id("wa", k) for k in keys]
    imported = [document_id("wb", k) for k in keys]
    try:
        assert cli("index", "-all", "-crawlId", "wa", "-solr", solr_up, *d) == 0
        original = documents(ids)
        assert set(original) == set(ids)
        delete(ids)
        assert documents(ids) == {}

        assert cli("warc", tmp_path / "warc", "-all", "-crawlId", "wa", *d) == 0  # the web is gone now
        capsys.readouterr()
        assert cli("warcimport", *sorted((tmp_path / "warc").iterdir()), "-crawlId", "wb", *d) == 0
        batch = capsys.readouterr().out.strip()
        for step in ("parse", "updatedb"):
            assert cli(step, batch, "-crawlId", "wb", *d) == 0
        assert cli("index", batch, "-crawlId", "wb", "-solr", solr_up, *d) == 0
        again = documents(imported)
        assert set(again) == set(imported)
        for key in keys:
            doc, doc_b = original[document_id("wa", key)], again[document_id("wb", key)]
            assert comparable(doc_b) == comparable(doc), key
            assert (doc["crawlId"], doc_b["crawlId"]) == ("wa", "wb")
        assert all(doc["batchId"] == batch for doc in again.values())
        compared = set().union(*(comparable(doc) for doc in original.values()))
        assert {"url", "title", "content", "anchor", "digest", "tstamp", "fetched", "lastModified",
                "contentLength"} <= compared
    finally:
        delete(ids + imported)
