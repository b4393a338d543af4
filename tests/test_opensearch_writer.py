"""indexer-opensearch-1x without a server: the index's mapping made from the Solr schema, the writer's parameters
(Nutch's names, opensearch.url, -opensearch), documents larger than a bulk request, and a missing client."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from nutch2.errors import ConfigError
from nutch2.index.writers import IndexWriters, WriterSpec
from nutch2.plugin import Plugins
from nutch2.plugins.indexer_opensearch_1x.mapping import index_body, mappings
from nutch2.plugins.indexer_opensearch_1x.writer import opensearch_id, target_of_url, writer_params
from nutch2.tools.index import with_opensearch
from tests.conftest import CONF_DIR, make_conf
from tests.crawlutil import cli

pytest.importorskip("opensearchpy")

SCHEMA = CONF_DIR / "solr" / "nutch" / "conf" / "schema.xml"
NUTCH_TEMPLATE = Path(__file__).parent / "data" / "nutch" / "index-writers.xml.template"
PLUGIN = "indexer-opensearch-1x"


def params(tmp_path: Path, url: str = "", **p: str):
    return writer_params(WriterSpec("os_1", p), make_conf(tmp_path, **{"opensearch.url": url}))


def writer(tmp_path: Path, **p: str):
    conf = make_conf(tmp_path, **{"plugin.includes": PLUGIN, "opensearch.url": "http://127.0.0.1:9/t"})
    w = Plugins(conf).build_one("index-writer", PLUGIN)
    w.open(WriterSpec("os_1", p), 0, "r1")
    return w


# ---------------------------------------------------------------------------------------------------- the mapping
def test_mapping_follows_the_solr_schema() -> None:
    m = mappings(SCHEMA)
    props = m["properties"]
    for name in ("title", "content", "anchor", "text"):
        assert props[name]["type"] == "text" and props[name]["analyzer"] == "nutch_text", name
        assert props[name]["search_analyzer"] == "nutch_text_query"
    for name in ("id", "url", "host", "site", "digest", "batchId", "crawlId", "type", "lang"):
        assert props[name]["type"] == "keyword", name
    for name in ("tstamp", "fetched", "lastModified"):
        assert props[name] == {"type": "date"}, name
    assert props["boost"] == {"type": "float"} and props["contentLength"] == {"type": "long"}
    assert props["cache"] == {"type": "keyword", "index": False, "doc_values": False}  # stored only, as in Solr
    assert "_version_" not in props  # Solr's own
    for name in ("title", "content", "url", "anchor"):
        assert props[name]["copy_to"] == ["text"], name  # the schema's copyFields into the default field
    patterns = [next(iter(t)) for t in m["dynamic_templates"]]
    assert patterns[:2] == ["header_*", "meta_*"]  # the longest first: meta_x_s is a meta_* field, as in Solr
    assert [len(p) for p in patterns] == sorted((len(p) for p in patterns), reverse=True)
    by = {next(iter(t)): next(iter(t.values()))["mapping"] for t in m["dynamic_templates"]}
    assert by["*_i"] == {"type": "integer"} and by["*_dt"] == {"type": "date"} and by["*_b"] == {"type": "boolean"}
    assert by["*_txt"]["analyzer"] == "nutch_text" and by["x_*"]["copy_to"] == ["text"]


def test_index_settings_make_chinese_searchable() -> None:
    settings = index_body(SCHEMA)["settings"]
    analysis = settings["analysis"]
    index_side = analysis["analyzer"]["nutch_text"]
    assert index_side["tokenizer"] == "standard" and index_side["filter"][:2] == ["cjk_width", "lowercase"]
    assert analysis["filter"][index_side["filter"][2]] == {"type": "cjk_bigram", "output_unigrams": True}
    assert analysis["analyzer"]["nutch_text_query"]["filter"][-1] == "cjk_bigram"  # bigrams only when searching
    assert settings["index"]["query"]["default_field"] == "text"


def test_a_schema_of_ones_own_gives_its_fields(tmp_path: Path) -> None:
    (tmp_path / "schema.xml").write_text("""<schema name="x"><fieldType name="s" class="solr.StrField"/>
      <fieldType name="t" class="solr.TextField"/><fieldType name="d" class="solr.DoublePointField"/>
      <field name="id" type="s"/><field name="body" type="t"/><field name="price" type="d"/>
      <dynamicField name="*_k" type="s"/><copyField source="body" dest="all"/></schema>""")
    m = mappings(tmp_path / "schema.xml")
    assert m["properties"]["price"] == {"type": "double"} and m["properties"]["body"]["copy_to"] == ["all"]
    assert m["dynamic_templates"] == [{"*_k": {"match": "*_k", "mapping": {"type": "keyword", "ignore_above": 8191}}}]
    (tmp_path / "bad.xml").write_text("<schema")
    with pytest.raises(ConfigError) as e:
        mappings(tmp_path / "bad.xml")
    assert "\n" not in str(e.value) and "bad.xml" in str(e.value)


# ---------------------------------------------------------------------------------------------------- parameters
def test_nutch_defaults_and_names(tmp_path: Path) -> None:
    p = params(tmp_path, host="os1.example, os2.example", scheme="https", index="web", username="u", password="pw")
    t = p.target
    assert (t.scheme, t.hosts, t.port, t.index, t.username, t.password) == (
        "https", ("os1.example", "os2.example"), 9200, "web", "u", "pw")
    assert (p.max_docs, p.max_bytes, p.backoff_ms, p.retries, p.close_timeout) == (250, 2_500_500, 100, 10, 600)
    assert t.url == "https://os1.example,os2.example:9200"  # no credentials
    p = params(tmp_path, host="h", **{"max.bulk.docs": "3", "max.bulk.size": "1000", "exponential.backoff.millis": "0",
                                      "exponential.backoff.retries": "0", "bulk.close.timeout": "5"})
    assert (p.target.scheme, p.target.index, p.max_docs, p.max_bytes, p.backoff_ms, p.retries, p.close_timeout) == (
        "http", "nutch", 3, 1000, 0, 0, 5)


def test_opensearch_url_names_cluster_and_index_over_the_parameters(tmp_path: Path) -> None:
    p = params(tmp_path, "https://admin:s%40cret@search.example:9201/os/crawl", host="other", index="x",
               username="ignored")
    t = p.target
    assert (t.scheme, t.hosts, t.port, t.prefix, t.index, t.username, t.password) == (
        "https", ("search.example",), 9201, "os", "crawl", "admin", "s@cret")
    assert t.url == "https://search.example:9201/os"
    t = params(tmp_path, "http://127.0.0.1", username="u", password="p").target
    assert (t.port, t.index, t.prefix, t.username, t.password) == (9200, "nutch", "", "u", "p")


@pytest.mark.parametrize(("url", "says"), [
    ("ftp://h:9200/x", "is not http(s)://host:port/<index>"),
    ("http://:9200/x", "is not http(s)://host:port/<index>"),
    ("http://h:99999/x", "is not http(s)://host:port/<index>"),
    ("http://user:topsecret@h:9200/Nutch", "is not an OpenSearch index name"),
    ("http://h:9200/a,b", "is not an OpenSearch index name"),
    ("http://h:9200/_x", "is not an OpenSearch index name"),
])
def test_a_bad_url_is_one_line_without_the_password(url: str, says: str) -> None:
    with pytest.raises(ConfigError) as e:
        target_of_url(url)
    msg = str(e.value)
    assert says in msg and "\n" not in msg and "topsecret" not in msg


@pytest.mark.parametrize(("param", "value", "want"), [
    ("max.bulk.docs", "many", "a whole number"), ("max.bulk.docs", "0", "from 1"),
    ("max.bulk.size", "2.5MB", "a whole number"), ("exponential.backoff.retries", "-1", "from 0"),
    ("port", "70000", "from 1 to 65535"), ("scheme", "ftp", "http or https"),
    ("bulk.close.timeout", "0", "from 1")])
def test_a_bad_parameter_is_one_line(tmp_path: Path, param: str, value: str, want: str) -> None:
    with pytest.raises(ConfigError) as e:
        params(tmp_path, host="h", **{param: value})
    msg = str(e.value)
    assert f"os_1: parameter {param}={value!r}" in msg and want in msg and "index-writers.xml" in msg
    assert "\n" not in msg


def test_no_cluster_bad_index_and_stores_are_one_line(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as e:
        params(tmp_path)
    assert "no OpenSearch cluster: pass -opensearch" in str(e.value) and "opensearch.url" in str(e.value)
    with pytest.raises(ConfigError) as e:
        params(tmp_path, host="h", index="My Index")
    assert "'My Index' is not an OpenSearch index name" in str(e.value)
    jks = tmp_path / "truststore.jks"
    jks.write_bytes(b"\xfe\xed\xfe\xed")
    with pytest.raises(ConfigError) as e:
        params(tmp_path, host="h", scheme="https", **{"trust.store.path": str(jks), "trust.store.type": "JKS"})
    assert "trust.store.type='JKS'" in str(e.value) and "PEM" in str(e.value) and "keytool" in str(e.value)
    with pytest.raises(ConfigError) as e:
        params(tmp_path, host="h", scheme="https", **{"trust.store.path": str(tmp_path / "none.pem")})
    assert "trust.store.path" in str(e.value) and "a PEM file that exists" in str(e.value)
    # Nutch's defaults (a JKS type with no path, stores over plain http) are no error
    ca = tmp_path / "ca.pem"
    ca.write_text("-----BEGIN CERTIFICATE-----\n")
    assert params(tmp_path, host="h", **{"trust.store.type": "JKS", "trust.store.path": ""}).ca_file == ""
    assert params(tmp_path, host="h", scheme="https", **{"trust.store.path": str(ca)}).ca_file == str(ca)
    with pytest.raises(ConfigError) as e:
        writer_params(WriterSpec("os_1", {"host": "h"}), make_conf(tmp_path, **{"opensearch.timeout": "0"}))
    assert "opensearch.timeout=0" in str(e.value)


def test_long_ids_get_a_hash_as_id() -> None:
    short = "c!com.example:http/" + "a" * 100
    assert opensearch_id(short) == short
    long_id = "c!com.example:http/" + "é" * 300  # 600 bytes
    assert opensearch_id(long_id).startswith("sha1:") and len(opensearch_id(long_id)) == 45
    assert opensearch_id(long_id) == opensearch_id(long_id)  # a delete finds what was indexed


# ---------------------------------------------------------------------------------------------------- writers
def test_the_shipped_and_nutchs_index_writers_files_name_the_writer(tmp_path: Path) -> None:
    conf = make_conf(tmp_path, **{"plugin.includes": f"indexer-solr|{PLUGIN}"})
    writers = IndexWriters.from_conf(conf)
    assert [(pid, s.id) for pid, s in writers.writers] == [("indexer-solr", "indexer_solr_1"),
                                                            (PLUGIN, "indexer_opensearch_1x_1")]
    shutil.copy(NUTCH_TEMPLATE, tmp_path / "index-writers.xml")  # Nutch's file, unchanged
    conf = make_conf(tmp_path, **{"plugin.includes": PLUGIN, "indexer.indexwriters.file": str(tmp_path /
                                                                                             "index-writers.xml")})
    ((pid, spec),) = IndexWriters.from_conf(conf).writers
    assert (pid, spec.id, spec.copy) == (PLUGIN, "indexer_opensearch_1x_1", {"title": ["title", "search"]})
    p = writer_params(spec, conf)
    assert (p.target.scheme, p.target.hosts, p.target.port, p.target.index, p.target.username) == (
        "https", ("localhost",), 9200, "nutch", "admin")
    assert (p.max_docs, p.max_bytes, p.backoff_ms, p.retries, p.close_timeout) == (250, 2500500, 100, 10, 600)


def test_the_opensearch_flag_turns_the_writer_on(tmp_path: Path) -> None:
    conf = make_conf(tmp_path)  # the shipped plugin.includes: indexer-solr
    assert with_opensearch(conf, None, None) is conf
    alone = with_opensearch(conf, "http://127.0.0.1:9200/web", None)
    assert [pid for pid, _ in IndexWriters.from_conf(alone).writers] == [PLUGIN]
    assert alone.get_str("opensearch.url") == "http://127.0.0.1:9200/web" and conf.get_str("opensearch.url") == ""
    both = with_opensearch(conf, "http://127.0.0.1:9200/web", "http://127.0.0.1:8983/solr/nutch")
    assert [pid for pid, _ in IndexWriters.from_conf(both).writers] == ["indexer-solr", PLUGIN]
    again = with_opensearch(alone, "http://127.0.0.1:9200/web", None)  # a crawl's step: the same
    assert again.get_str("plugin.includes") == alone.get_str("plugin.includes")
    assert again.get_str("plugin.excludes") == alone.get_str("plugin.excludes") == "indexer-solr"


def test_a_document_larger_than_a_bulk_request_is_refused_and_counted(tmp_path: Path,
                                                                     caplog: pytest.LogCaptureFixture) -> None:
    w = writer(tmp_path, **{"max.bulk.size": "1000", "max.bulk.docs": "10"})
    w.write({"id": "c!big", "url": "http://example.com/big", "content": "x" * 2000})
    w.write({"id": "c!small", "url": "http://example.com/", "content": "x"})
    assert w.refused() == ["c!big"] and w.counts() == {"opensearch_too_large": 1}
    assert [a["_id"] for a in w.actions] == ["c!small"]  # buffered, not sent (no server here)
    (line,) = [r.getMessage() for r in caplog.records if "max.bulk.size" in r.getMessage()]
    assert "http://example.com/big" in line and "max.bulk.size=1,000" in line and "stays unindexed" in line
    w.actions.clear()
    w.close()


def test_a_missing_client_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setitem(sys.modules, "opensearchpy", None)  # import opensearchpy fails
    conf = make_conf(tmp_path, **{"plugin.includes": PLUGIN})
    with pytest.raises(ConfigError) as e:
        Plugins(conf).build_one("index-writer", PLUGIN)
    assert "pip install 'nutch2[opensearch]'" in str(e.value)
    d = ["-D", f"storage.data.dir={tmp_path / 'crawl'}"]
    assert cli("index", "-all", "-crawlId", "nc", "-opensearch", "http://127.0.0.1:9200/nutch", *d) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "pip install 'nutch2[opensearch]'" in err[0], err
