"""Index writers: indexer-csv (with the vectors of Nutch's TestCSVIndexWriter), indexer-jsonl, the part files and
their commit (nutch2/index/files.py), index-writers.xml as Nutch ships it, and per-writer field mappings."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from nutch2.errors import ConfigError
from nutch2.index.files import SUCCESS, committed_runs
from nutch2.index.writers import IndexWriters, WriterSpec, mapped, read_index_writers
from tests.conftest import make_conf

DATA = Path(__file__).parent / "data" / "nutch"
ALL_WRITERS = "indexer-(solr|csv|jsonl)"


def vectors(name: str) -> list[dict]:
    return json.loads((DATA / "index-plugins" / f"{name}.json").read_text(encoding="utf-8"))["cases"]


def writer(tmp_path: Path, plugin: str, task: int | None, run: str = "r1", **params: str):
    from nutch2.plugin import Plugins

    conf = make_conf(tmp_path, **{"plugin.includes": plugin})
    w = Plugins(conf).build_one("index-writer", plugin)
    w.open(WriterSpec(f"{plugin}_1", {"outpath": str(tmp_path / "out"), **params}), task, run)
    return w


def one_run(tmp_path: Path, plugin: str, docs: list[dict], **params: str) -> dict[str, bytes]:
    """Write `docs` as task 0 and commit: the files of the committed run folder."""
    w = writer(tmp_path, plugin, 0, **params)
    w.check()
    for doc in docs:
        w.write(doc)
    w.flush()
    w.close()
    driver = writer(tmp_path, plugin, None, **params)
    driver.commit()
    driver.close()
    (folder,) = committed_runs(tmp_path / "out")
    return {p.name: p.read_bytes() for p in folder.iterdir()}


# ---------------------------------------------------------------------------------------------------- indexer-csv
@pytest.mark.parametrize("case", vectors("indexer-csv"), ids=lambda c: c["test"])
def test_csv_nutch_vectors(case: dict, tmp_path: Path) -> None:
    params = case["params"]
    files = one_run(tmp_path, "indexer-csv", case["docs"], **params)
    text = files["part-00000.csv"].decode(params.get("charset", "UTF-8"))
    header, _, body = text.partition("\r\n")
    assert header == params.get("separator", ",").join(params.get("fields", "id,title,content").split(","))
    for value in case.get("contains", []):
        assert value in body
    if "records" in case:
        assert body == "".join(r + "\r\n" for r in case["records"])


def test_csv_caps_values_types_and_header_off(tmp_path: Path) -> None:
    files = one_run(tmp_path, "indexer-csv", [{"id": "a", "anchor": ["x", "y", "z"], "boost": 1.5, "n": 3},
                                              {"id": "b", "anchor": ['q"t']}],
                    fields="id,anchor,boost,n,missing", maxfieldvalues="2", header="false")
    assert files["part-00000.csv"] == b'a,"x|y",1.5,3,\r\nb,"q""t",,,\r\n'


@pytest.mark.parametrize(("param", "value", "want"), [("maxfieldlength", "many", "a whole number"),
                                                      ("maxfieldvalues", "0", "a number above 0"),
                                                      ("charset", "klingon", "a known character set"),
                                                      ("header", "yes please", "true or false")])
def test_csv_bad_parameter_is_one_line(tmp_path: Path, param: str, value: str, want: str) -> None:
    with pytest.raises(ConfigError) as e:
        writer(tmp_path, "indexer-csv", None, **{param: value})
    msg = str(e.value)
    assert "\n" not in msg and "indexer-csv_1" in msg and f"{param}={value!r}" in msg and want in msg
    assert "index-writers.xml" in msg


# ---------------------------------------------------------------------------------------------------- indexer-jsonl
def test_jsonl_one_object_per_document(tmp_path: Path) -> None:
    docs = [{"id": "c!a", "title": "Grüße \"x\"\nz", "anchor": ["a", "b"], "boost": 0.5},
            {"id": "c!b", "title": "爬虫"}]
    files = one_run(tmp_path, "indexer-jsonl", docs)
    lines = files["part-00000.jsonl"].decode("utf-8").splitlines()
    assert [json.loads(line) for line in lines] == docs
    assert "爬虫" in lines[1]  # UTF-8, not \u escapes


# ---------------------------------------------------------------------------------------------------- part files
@pytest.mark.parametrize("plugin", ["indexer-csv", "indexer-jsonl"])
def test_parts_appear_only_at_commit_and_a_failed_task_leaves_nothing(tmp_path: Path, plugin: str) -> None:
    out = tmp_path / "out"
    driver = writer(tmp_path, plugin, None)
    driver.begin()
    ok, failed = writer(tmp_path, plugin, 0), writer(tmp_path, plugin, 1)
    ok.write({"id": "c!a", "title": "A"})
    ok.delete("c!gone")
    ok.delete("com.example:http/")  # a bare row key (-reindex, for Solr cores older than crawl ids): not listed
    failed.write({"id": "c!b", "title": "B"})
    ok.flush()
    ok.close()
    failed.close()  # no flush: the task failed
    assert committed_runs(out) == []  # nothing visible before the commit
    staged = sorted(p.name for p in (out / "_temporary" / "r1").iterdir())
    suffix = ".csv" if plugin == "indexer-csv" else ".jsonl"
    assert staged == sorted(["part-00000" + suffix, "part-00000-deleted.txt"])  # the failed task's file is gone
    driver.commit()
    driver.close()
    (run,) = committed_runs(out)
    assert run.name.endswith("-r1") and not (out / "_temporary" / "r1").exists()
    assert sorted(p.name for p in run.iterdir()) == sorted([SUCCESS, *staged])
    assert (run / "part-00000-deleted.txt").read_text() == "c!gone\n"


def test_begin_forgets_an_interrupted_attempt_and_commit_adds_nothing_twice(tmp_path: Path) -> None:
    out = tmp_path / "out"
    killed = writer(tmp_path, "indexer-jsonl", 3)  # an attempt with more tasks, killed before its commit
    killed.write({"id": "c!stale"})
    killed.flush()
    for attempt in range(2):  # the rerun, then the same again (a kill between the commit and the index marks)
        driver = writer(tmp_path, "indexer-jsonl", None)
        driver.begin()
        task = writer(tmp_path, "indexer-jsonl", 0)
        task.write({"id": "c!a"})
        task.flush()
        driver.commit()
        (run,) = committed_runs(out)
        assert sorted(p.name for p in run.iterdir()) == [SUCCESS, "part-00000.jsonl"], attempt
    empty = writer(tmp_path, "indexer-jsonl", None, run="r2")  # a run with nothing to send
    empty.begin()
    empty.commit()
    assert len(committed_runs(out)) == 1
    other = writer(tmp_path, "indexer-jsonl", 0, run="r2")
    other.write({"id": "c!b"})
    other.flush()
    writer(tmp_path, "indexer-jsonl", None, run="r2").commit()
    assert [r.name.rsplit("-", 1)[1] for r in committed_runs(out)] == ["r1", "r2"]  # in commit order


def test_outpath_that_cannot_be_written_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "out").write_text("a file, not a folder")
    w = writer(tmp_path, "indexer-csv", None)
    with pytest.raises(ConfigError) as e:
        w.check()
    assert "\n" not in str(e.value) and "outpath" in str(e.value) and str(tmp_path / "out") in str(e.value)


# ---------------------------------------------------------------------------------------------------- index-writers.xml
def test_nutch_shipped_index_writers_file_is_read(tmp_path: Path) -> None:
    """Nutch's conf/index-writers.xml.template (apache/nutch master, copied unchanged into tests/data/nutch/):
    its namespace, its writers of plugins nutch2 has (Solr, CSV), and its metatag.* renames."""
    shutil.copy(DATA / "index-writers.xml.template", tmp_path / "index-writers.xml")
    specs = read_index_writers(str(tmp_path / "index-writers.xml"))
    assert [s.id for _, s in specs][:3] == ["indexer_solr_1", "indexer_rabbit_1", "indexer_dummy_1"]
    conf = make_conf(tmp_path, **{"plugin.includes": ALL_WRITERS,
                                  "indexer.indexwriters.file": str(tmp_path / "index-writers.xml")})
    writers = IndexWriters.from_conf(conf)
    assert [(pid, s.id) for pid, s in writers.writers] == [("indexer-solr", "indexer_solr_1"),
                                                            ("indexer-csv", "indexer_csv_1")]
    solr = writers.writers[0][1]
    assert solr.rename == {"meta_description": "description", "meta_keywords": "keywords"}
    assert solr.remove == ["segment"] and solr.params["commitSize"] == "1000"
    assert writers.writers[1][1].params["outpath"] == str(Path("csvindexwriter").absolute())  # the driver's


def test_the_shipped_file_uses_only_active_writers(tmp_path: Path) -> None:
    conf = make_conf(tmp_path)  # the shipped plugin.includes: indexer-solr only
    assert [s.id for _, s in IndexWriters.from_conf(conf).writers] == ["indexer_solr_1"]
    conf = make_conf(tmp_path, **{"plugin.includes": ALL_WRITERS})
    assert [s.id for _, s in IndexWriters.from_conf(conf).writers] == ["indexer_solr_1", "indexer_csv_1",
                                                                       "indexer_jsonl_1"]


def test_mapping_copies_renames_and_removes_as_nutch(tmp_path: Path) -> None:
    path = tmp_path / "w.xml"
    path.write_text("""<writers><writer id="w" class="indexer-jsonl"><mapping>
      <copy><field source="title" dest="title_txt,search_txt"/><field source="host" dest="search_txt"/></copy>
      <rename><field source="metatag.description" dest="description_s"/><field source="url" dest="search_txt"/>
      </rename><remove><field source="batchId"/></remove></mapping></writer></writers>""")
    (_, spec), = read_index_writers(str(path))
    doc = {"id": "1", "title": "T", "host": "h", "url": "u", "meta_description": ["d"], "batchId": "b"}
    assert mapped(doc, spec) == {"id": "1", "title": "T", "host": "h", "title_txt": "T",
                                 "search_txt": ["T", "h", "u"], "description_s": ["d"]}
    assert doc["batchId"] == "b"  # the document itself is left alone (other writers get it unmapped)


@pytest.mark.parametrize(("xml", "says"), [
    ('<writers><writer id="a" class="indexer-csv"/><writer id="a" class="indexer-jsonl"/></writers>', "two"),
    ('<writers><writer id="a" class="indexer-csv"><mapping><copy><field source="x"/></copy></mapping>'
     "</writer></writers>", "needs a source"),
    ("<writers><writer", "cannot read it")])
def test_bad_index_writers_file_is_one_line(tmp_path: Path, xml: str, says: str) -> None:
    path = tmp_path / "w.xml"
    path.write_text(xml)
    with pytest.raises(ConfigError) as e:
        read_index_writers(str(path))
    assert says in str(e.value) and "\n" not in str(e.value)
