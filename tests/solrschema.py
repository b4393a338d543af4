"""Solr helpers of the plugin tests: fields a plugin indexes must exist in the test core, and a test touches only the
documents of its own crawl (the core is shared with other tests running at the same time)."""

from __future__ import annotations

import os

import pytest
import requests

from nutch2.index.solr import solr_crawl_id


def require_dynamic_fields(solr: str, *names: str) -> None:
    """The core declares these dynamic fields of conf/solr/nutch/conf/schema.xml (CI starts Solr from that
    configset). A core started from an older configset gets them (and their copyFields) through Solr's Schema API
    when its schema is mutable (a managed schema); a classic schema.xml cannot change while Solr runs: the test
    fails in CI and is skipped elsewhere, naming the fix."""
    _require(solr, "dynamicField", names)


def require_fields(solr: str, *names: str) -> None:
    """As require_dynamic_fields, for plain fields of the configset (main_content...)."""
    _require(solr, "field", names)


def _require(solr: str, kind: str, names: tuple[str, ...]) -> None:
    from xml.etree import ElementTree

    from tests.conftest import REPO

    schema = ElementTree.parse(REPO / "conf/solr/nutch/conf/schema.xml").getroot()
    declared = {el.get("name"): el.attrib for el in schema.iter(kind)}
    listed = "dynamicfields" if kind == "dynamicField" else "fields"
    r = requests.get(f"{solr}/schema/{listed}", timeout=30)
    r.raise_for_status()
    have = {f["name"] for f in r.json()["dynamicFields" if kind == "dynamicField" else "fields"]}
    missing = [n for n in names if n not in have]
    if not missing:
        return
    fields = [{k: (v == "true" if v in ("true", "false") else v) for k, v in declared[n].items()} for n in missing]
    copies = [dict(el.attrib) for el in schema.iter("copyField") if el.get("source") in missing]
    add = "add-dynamic-field" if kind == "dynamicField" else "add-field"
    r = requests.post(f"{solr}/schema", json={add: fields, "add-copy-field": copies}, timeout=30)
    answer = r.json() if r.headers.get("content-type", "").startswith(("application/json", "text/plain")) else {}
    if r.ok and not answer.get("error"):
        return
    details = answer.get("error", {}).get("details") or [{}]
    reason = details[0].get("errorMessages") or r.text.strip()[:120]
    word = "dynamic field" if kind == "dynamicField" else "field"
    why = (f"the Solr core at {solr} lacks the {word}(s) {', '.join(missing)} of conf/solr/nutch and its "
           f"schema cannot change while it runs (Solr: {reason}); restart Solr from this configset: "
           "docker/services.sh stop solr && docker/services.sh start solr")
    if os.environ.get("CI"):
        pytest.fail(why)
    pytest.skip(why)


def crawl_docs(solr: str, crawl_id: str, q: str = "*:*", fl: str = "*") -> list[dict]:
    """The documents of one crawl matching a query."""
    r = requests.get(f"{solr}/select", params={"q": q, "fq": f"crawlId:{solr_crawl_id(crawl_id)}", "fl": fl,
                                               "rows": 1000, "wt": "json"}, timeout=30)
    r.raise_for_status()
    return r.json()["response"]["docs"]


def delete_crawl(solr: str, crawl_id: str) -> None:
    """Delete the documents of one crawl (never the others')."""
    requests.post(f"{solr}/update?commit=true", json={"delete": {"query": f"crawlId:{solr_crawl_id(crawl_id)}"}},
                  timeout=60).raise_for_status()
