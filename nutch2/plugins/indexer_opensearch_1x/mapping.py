"""The OpenSearch index nutch2 creates when it is missing: settings and mappings made from the Solr schema's fields
(conf/solr/nutch/conf/schema.xml), so both servers hold the same fields with the same types.

Solr's types become OpenSearch's: StrField -> keyword, TextField -> text (the nutch_text analyzer), the point types
-> float/long/integer/double, DatePointField -> date, BoolField -> boolean; a field Solr does not index is kept in
_source only; dynamic fields become dynamic templates, longest pattern first (Solr's rule: the longest wins);
copyFields become copy_to. nutch_text is the schema's chain: the standard tokenizer, CJK width folding, lower case
and CJK bigrams, with the single characters too at index time (a two-character query such as 爬虫 matches those two
characters side by side, a one-character query still finds something); its search side makes bigrams only.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from nutch2.errors import ConfigError

SCHEMA = "solr/nutch/conf/schema.xml"  # in the conf dir, else the shipped one
TEXT = {"type": "text", "analyzer": "nutch_text", "search_analyzer": "nutch_text_query"}
TYPES: dict[str, dict[str, Any]] = {
    "solr.StrField": {"type": "keyword", "ignore_above": 8191},  # longer values: in _source, not searchable
    "solr.TextField": TEXT,
    "solr.FloatPointField": {"type": "float"},
    "solr.DoublePointField": {"type": "double"},
    "solr.LongPointField": {"type": "long"},
    "solr.IntPointField": {"type": "integer"},
    "solr.DatePointField": {"type": "date"},
    "solr.BoolField": {"type": "boolean"},
}
ANALYSIS: dict[str, Any] = {
    "filter": {"nutch_cjk_bigram_unigrams": {"type": "cjk_bigram", "output_unigrams": True}},
    "analyzer": {
        "nutch_text": {"type": "custom", "tokenizer": "standard",
                       "filter": ["cjk_width", "lowercase", "nutch_cjk_bigram_unigrams"]},
        "nutch_text_query": {"type": "custom", "tokenizer": "standard",
                             "filter": ["cjk_width", "lowercase", "cjk_bigram"]},
    },
}


def index_body(schema: Path) -> dict[str, Any]:
    """The body of the create-index request: analysis settings and the mapping of the schema's fields. One
    replica once the cluster has a second node, none on a single node (auto_expand_replicas 0-1); queries that name
    no field search `text` (Solr's df)."""
    return {"settings": {"index": {"auto_expand_replicas": "0-1", "query": {"default_field": "text"}},
                         "analysis": ANALYSIS},
            "mappings": mappings(schema)}


def mappings(schema: Path) -> dict[str, Any]:
    """The mappings of a Solr schema.xml: properties, dynamic templates and copy_to."""
    try:
        root = ET.parse(schema).getroot()
    except (OSError, ET.ParseError) as e:
        raise ConfigError(f"{schema}: cannot read the Solr schema the OpenSearch mapping is made from ({e}); fix it "
                          "or restore the shipped conf/solr/nutch/conf/schema.xml") from None
    types = {t.get("name"): t.get("class", "") for t in root.iter("fieldType")}
    copies: dict[str, list[str]] = {}
    for c in root.iter("copyField"):
        copies.setdefault(c.get("source", ""), []).append(c.get("dest", ""))
    props: dict[str, Any] = {}
    for f in root.iter("field"):
        name = f.get("name", "")
        if name and not (name.startswith("_") and name.endswith("_")):  # Solr's own: _version_, _root_
            props[name] = _field(f, types, copies.get(name))
    templates = []
    dynamic = sorted(root.iter("dynamicField"), key=lambda d: -len(d.get("name", "")))
    for d in dynamic:
        pattern = d.get("name", "")
        templates.append({pattern: {"match": pattern, "mapping": _field(d, types, copies.get(pattern))}})
    return {"dynamic_templates": templates, "properties": props}


def _field(f: ET.Element, types: dict[str | None, str], copy_to: list[str] | None) -> dict[str, Any]:
    """One field's mapping: its type's, not indexed where Solr does not index it, copied where Solr copies it."""
    kind = types.get(f.get("type"), "")
    out = dict(TYPES.get(kind, TYPES["solr.StrField"]))
    if f.get("indexed") == "false":
        out = {"type": out["type"], "index": False}
        if out["type"] == "keyword" and f.get("docValues") == "false":
            out["doc_values"] = False
    if copy_to:
        out["copy_to"] = copy_to
    return out
