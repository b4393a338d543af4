"""Indexing plugins end to end: a crawl of a loopback site indexed into the real Solr and into CSV and JSON Lines
files at once (index-writers.xml with a mapping per writer), clean's deletes reaching every writer, indexchecker
showing the plugins' fields, and kill -9 of the index job while it writes files, then the same command again.

Solr is shared: each test uses a crawl id of its own and deletes only that crawl's documents."""

from __future__ import annotations

import csv
import json
import shutil
import signal
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from nutch2.index.files import DELETED, committed_runs
from nutch2.index.solr import crawl_filter, document_id
from nutch2.index.writers import writer_marks
from nutch2.marks import Mark
from nutch2.status import CrawlStatus
from nutch2.stores import open_store
from nutch2.urls.tableutil import reverse_url
from tests.crawlutil import cli, conf_for, defines, rows, seed_file
from tests.helpers import QuietServer, Route, nutch2

pytestmark = [pytest.mark.integration, pytest.mark.slow]

LAST_MODIFIED = "Tue, 18 Sep 2018 17:59:00 GMT"
HTML = {"Content-Type": "text/html; charset=utf-8", "X-Powered-By": "plugin-site/1.0", "Content-Language": "en",
        "Last-Modified": LAST_MODIFIED}
PLUGINS = "protocol-http|urlfilter-regex|urlnormalizer-basic|parse-(html|text|metatags)|" \
          "index-(basic|anchor|more|metadata|static)|scoring-opic"


def page(title: str, body: str, head: str = "") -> bytes:
    return f"<html><head><title>{title}</title>{head}</head><body>{body}</body></html>".encode()


SITE: dict[str, Route] = {
    "/": (200, HTML, page("Plugin home", '<a href="/a.html">A</a> <a href="/notes">notes</a>',
                          '<meta name="description" content="About the plugin site">'
                          '<meta name="keywords" content="plugins, tests">')),
    "/a.html": (200, HTML, page("Page A", "alpha words")),
    "/notes": (200, {"Content-Type": "text/plain", "Content-Disposition": 'attachment; filename="notes.txt"',
                     "X-Powered-By": "plugin-site/1.0"}, b"plain notes, no title"),
}


@pytest.fixture(scope="module")
def site() -> Iterator[str]:
    server = QuietServer(SITE)
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


def writers_xml(tmp: Path, solr_mapping: str = "") -> Path:
    """Solr, CSV and JSON Lines at once, each with its own mapping."""
    path = tmp / "index-writers.xml"
    path.write_text(f"""<?xml version="1.0" encoding="UTF-8"?>
<writers xmlns="http://lucene.apache.org/nutch">
  <writer id="solr" class="org.apache.nutch.indexwriter.solr.SolrIndexWriter">
    <parameters><param name="url" value=""/></parameters>
    <mapping><copy><field source="title" dest="meta_title_copy"/></copy>
      <remove><field source="batchId"/>{solr_mapping}</remove></mapping>
  </writer>
  <writer id="csv" class="org.apache.nutch.indexwriter.csv.CSVIndexWriter">
    <parameters><param name="fields" value="id,url,headline,type,meta_collection,header_x_powered_by"/>
      <param name="outpath" value="{tmp / 'csv'}"/></parameters>
    <mapping><rename><field source="title" dest="headline"/></rename></mapping>
  </writer>
  <writer id="jsonl" class="indexer-jsonl">
    <parameters><param name="outpath" value="{tmp / 'jsonl'}"/></parameters>
    <mapping><remove><field source="content"/></remove></mapping>
  </writer>
</writers>
""")
    return path


def jsonl_docs(outpath: Path) -> dict[str, dict]:
    """The documents of every committed run, later runs replacing earlier ones, deletes applied."""
    docs: dict[str, dict] = {}
    for run in committed_runs(outpath):
        for deleted in run.glob("*" + DELETED):
            for doc_id in deleted.read_text().split():
                docs.pop(doc_id, None)
        for part in sorted(run.glob("part-*.jsonl")):
            for line in part.read_text(encoding="utf-8").splitlines():
                doc = json.loads(line)
                docs[doc["id"]] = doc
    return docs


def csv_rows(outpath: Path) -> dict[str, dict]:
    out: dict[str, dict] = {}
    for run in committed_runs(outpath):
        for part in sorted(run.glob("part-*.csv")):
            with open(part, newline="", encoding="utf-8") as f:
                out.update({r["id"]: r for r in csv.DictReader(f)})
    return out


def solr_docs(solr: str, crawl_id: str) -> dict[str, dict]:
    r = requests.get(f"{solr}/select", params={"q": "*:*", "fq": crawl_filter(crawl_id), "rows": 100, "wt": "json"},
                     timeout=30)
    r.raise_for_status()
    return {d["id"]: d for d in r.json()["response"]["docs"]}


def delete_crawl(solr: str, crawl_id: str) -> None:
    requests.post(f"{solr}/update?commit=true", json={"delete": {"query": crawl_filter(crawl_id)}},
                  timeout=30).raise_for_status()


def solr_has_dynamic_field(solr: str, name: str) -> bool:
    r = requests.get(f"{solr}/schema/dynamicfields", params={"wt": "json"}, timeout=30)
    r.raise_for_status()
    return any(f["name"] == name for f in r.json()["dynamicFields"])


@pytest.fixture
def crawl_id(solr_up: str) -> Iterator[str]:
    cid = "io" + uuid.uuid4().hex[:10]
    yield cid
    delete_crawl(solr_up, cid)


def test_one_crawl_into_solr_csv_and_jsonl_and_clean_reaches_every_writer(
        site: str, solr_up: str, crawl_id: str, tmp_path: Path) -> None:
    d = defines(tmp_path, "sqlite", **{
        "plugin.includes": PLUGINS + "|indexer-(solr|csv|jsonl)", "indexer.indexwriters.file": writers_xml(
            tmp_path, '<field source="header_x_powered_by"/><field source="header_content_language"/>'),
        "index.static": "meta_collection:docs web", "index.content.md": "X-Powered-By,Content-Language",
        "index.parse.md": "metatag.keywords"})
    assert cli("crawl", seed_file(tmp_path, site), "-crawlId", crawl_id, "-rounds", "2", "-solr", solr_up, *d) == 0
    home, a, notes = (document_id(crawl_id, reverse_url(site + p)) for p in ("", "a.html", "notes"))

    solr = solr_docs(solr_up, crawl_id)
    assert set(solr) == {home, a, notes}
    assert solr[home]["meta_description"] == ["About the plugin site"]  # index.metadata, as before
    assert solr[home]["meta_keywords"] == ["plugins, tests"]  # index.parse.md metatag.keywords: the same field once
    assert solr[home]["meta_collection"] == ["docs", "web"]  # index-static
    assert solr[home]["lastModified"] == "2018-09-18T17:59:00Z"  # index-more: the Last-Modified header
    assert solr[home]["type"] == ["text/html", "text", "html"]
    assert solr[notes]["title"] == "notes.txt" and solr[notes]["type"][0] == "text/plain"  # Content-Disposition
    assert solr[a]["meta_title_copy"] == ["Page A"]  # the Solr writer's copy
    assert not any("batchId" in doc or "header_x_powered_by" in doc for doc in solr.values())  # its removes

    files = jsonl_docs(tmp_path / "jsonl")
    assert set(files) == set(solr)
    assert files[home]["header_x_powered_by"] == ["plugin-site/1.0"]  # index.content.md
    assert files[home]["header_content_language"] == ["en"]
    assert files[home]["batchId"] and not any("content" in doc for doc in files.values())  # its own mapping
    assert files[home]["meta_collection"] == ["docs", "web"] and files[home]["title"] == "Plugin home"
    table = csv_rows(tmp_path / "csv")
    assert set(table) == set(solr)
    assert table[a] == {"id": a, "url": site + "a.html", "headline": "Page A", "type": "text/html|text|html",
                        "meta_collection": "docs|web", "header_x_powered_by": "plugin-site/1.0"}

    conf = conf_for(tmp_path, "sqlite")
    with open_store(conf, crawl_id) as store:
        row = store.get(reverse_url(site + "a.html"), ["status"])
        row.status = int(CrawlStatus.GONE)
        store.put(row.key, row)
    assert cli("clean", "-crawlId", crawl_id, "-solr", solr_up, *d) == 0
    assert set(solr_docs(solr_up, crawl_id)) == {home, notes}
    assert set(jsonl_docs(tmp_path / "jsonl")) == {home, notes}  # the deletes, applied in run order
    last = committed_runs(tmp_path / "csv")[-1]
    assert (last / ("part-final" + DELETED)).read_text() == a + "\n"
    assert Mark.INDEX.check(rows(conf, crawl_id)[reverse_url(site + "a.html")]) is None


def test_a_new_writer_gets_every_document_and_clean_keeps_the_other_writers_mark(
        site: str, solr_up: str, crawl_id: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The indexed mark is kept per writer and destination: after Solr, `index -all` into JSON Lines sends every
    document (not `skipped_already_indexed`); again, nothing; a clean through JSON Lines alone deletes there and
    leaves the row marked as held by Solr."""
    d = defines(tmp_path, "sqlite", **{"plugin.includes": PLUGINS + "|indexer-solr"})
    assert cli("crawl", seed_file(tmp_path, site), "-crawlId", crawl_id, "-rounds", "2", "-solr", solr_up, *d) == 0
    capsys.readouterr()
    jsonl = tmp_path / "jsonl"
    only_jsonl = tmp_path / "jsonl-writer.xml"
    only_jsonl.write_text(f"""<writers><writer id="jsonl" class="indexer-jsonl">
      <parameters><param name="outpath" value="{jsonl}"/></parameters></writer></writers>""")
    d_files = defines(tmp_path, "sqlite", **{"plugin.includes": PLUGINS + "|indexer-jsonl",
                                             "indexer.indexwriters.file": only_jsonl})
    assert cli("index", "-all", "-crawlId", crawl_id, *d_files) == 0
    assert " indexed=3" in capsys.readouterr().err
    assert set(jsonl_docs(jsonl)) == set(solr_docs(solr_up, crawl_id))
    assert cli("index", "-all", "-crawlId", crawl_id, *d_files) == 0
    assert "skipped_already_indexed=3" in capsys.readouterr().err  # each writer has them now
    assert cli("index", "-all", "-crawlId", crawl_id, "-solr", solr_up, *d) == 0
    assert "skipped_already_indexed=3" in capsys.readouterr().err

    conf = conf_for(tmp_path, "sqlite")
    key = reverse_url(site + "a.html")
    with open_store(conf, crawl_id) as store:
        row = store.get(key, ["status"])
        row.status = int(CrawlStatus.GONE)
        store.put(row.key, row)
    assert cli("clean", "-crawlId", crawl_id, *d_files) == 0
    assert document_id(crawl_id, key) not in jsonl_docs(jsonl)
    assert document_id(crawl_id, key) in solr_docs(solr_up, crawl_id)  # not the active writer
    marked = rows(conf, crawl_id)[key]
    assert Mark.INDEX.check(marked) and len(writer_marks(marked.markers)) == 1  # Solr holds it still
    assert cli("clean", "-crawlId", crawl_id, "-solr", solr_up, *d) == 0
    assert document_id(crawl_id, key) not in solr_docs(solr_up, crawl_id)
    marked = rows(conf, crawl_id)[key]
    assert Mark.INDEX.check(marked) is None and not writer_marks(marked.markers)


def test_response_headers_reach_solr(site: str, solr_up: str, crawl_id: str, tmp_path: Path) -> None:
    if not solr_has_dynamic_field(solr_up, "header_*"):
        pytest.skip("the running Solr core predates conf/solr/nutch's header_* field: restart it "
                    "(docker/services.sh stop solr; docker/services.sh start solr) to load the configset")
    d = defines(tmp_path, "sqlite", **{"plugin.includes": PLUGINS + "|indexer-solr",
                                       "index.content.md": "x-powered-by, content-language, X-Absent",
                                       "index.static": "collection_ss:docs web,source_s:plugins"})
    assert cli("crawl", seed_file(tmp_path, site), "-crawlId", crawl_id, "-rounds", "1", "-solr", solr_up, *d) == 0
    doc = solr_docs(solr_up, crawl_id)[document_id(crawl_id, reverse_url(site))]
    assert doc["header_x_powered_by"] == ["plugin-site/1.0"] and doc["header_content_language"] == ["en"]
    assert "header_x_absent" not in doc
    assert doc["collection_ss"] == ["docs", "web"] and doc["source_s"] == "plugins"


def test_indexchecker_shows_the_plugins_fields(site: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = defines(tmp_path, "sqlite", **{"plugin.includes": PLUGINS + "|indexer-solr",
                                       "index.static": "meta_collection:docs", "index.content.md": "X-POWERED-BY"})
    capsys.readouterr()
    assert cli("indexchecker", site + "notes", *d) == 0
    out = capsys.readouterr().out.splitlines()
    for line in ("meta_collection :\tdocs", "header_x_powered_by :\tplugin-site/1.0", "title :\tnotes.txt",
                 "type :\ttext/plain", "contentLength :\t21"):
        assert line in out, line


# ---------------------------------------------------------------------------------------------------- kill -9
FILES_ONLY = PLUGINS + "|indexer-(csv|jsonl)"


@pytest.fixture(scope="module")
def crawled(site: str, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A crawl of the site, not indexed: its data folder, copied by each test."""
    tmp = tmp_path_factory.mktemp("crawled")
    cid = "ik" + uuid.uuid4().hex[:8]
    assert cli("crawl", seed_file(tmp, site), "-crawlId", cid, "-rounds", "2",
               *defines(tmp, "sqlite", **{"plugin.includes": FILES_ONLY})) == 0
    return tmp, cid


def copy_of(crawled: tuple[Path, str], tmp: Path, backend: str = "sqlite") -> list[str]:
    src, _ = crawled
    shutil.copytree(src / "crawl", tmp / "crawl")
    return defines(tmp, backend, **{"plugin.includes": FILES_ONLY, "indexer.indexwriters.file": writers_xml(tmp)})


def outputs(tmp: Path) -> dict[str, bytes]:
    """Every committed file of both writers, by writer and file name (run folder names hold times)."""
    out = {}
    for writer in ("csv", "jsonl"):
        for run in committed_runs(tmp / writer):
            out.update({f"{writer}/{p.name}": p.read_bytes() for p in run.iterdir()})
    return out


@pytest.fixture(scope="module")
def reference(crawled: tuple[Path, str], tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    tmp = tmp_path_factory.mktemp("reference")
    proc = nutch2("index", "-all", "-crawlId", crawled[1], "-numTasks", "2", *copy_of(crawled, tmp))
    assert proc.returncode == 0, proc.stderr
    out = outputs(tmp)
    assert {"csv/part-00000.csv", "jsonl/part-00000.jsonl", "csv/_SUCCESS"} <= set(out)
    return out


@pytest.mark.parametrize(("backend", "failpoint", "killed"), [
    ("sqlite", "indexer.file.write=2", (-signal.SIGKILL,)),  # the command, mid-part
    # the command (it runs task 0: killed) or the worker (task 1: the command fails), whichever writes first
    ("sqlite:processes", "indexer.file.write=2", (-signal.SIGKILL, 1)),
    ("sqlite", "runner.job=1", (-signal.SIGKILL,)),  # after the commit, before the rows' index marks
])
def test_kill_while_writing_files_then_rerun(crawled: tuple[Path, str], reference: dict[str, bytes], tmp_path: Path,
                                             backend: str, failpoint: str, killed: tuple[int, ...]) -> None:
    d = copy_of(crawled, tmp_path, backend)
    cid = crawled[1]
    proc = nutch2("index", "-all", "-crawlId", cid, "-numTasks", "2", *d, failpoints=failpoint)
    assert proc.returncode in killed, proc.stderr
    assert proc.returncode != 1 or "a worker process died" in proc.stderr, proc.stderr
    after_commit = failpoint.startswith("runner.job")
    assert bool(outputs(tmp_path)) == after_commit  # nothing half-written is visible
    if not after_commit:
        assert list(tmp_path.glob("*/_temporary/*/.*.inprogress"))  # what it was writing, hidden
    proc = nutch2("index", "-all", "-crawlId", cid, "-numTasks", "2", *d)
    assert proc.returncode == 0, proc.stderr
    assert outputs(tmp_path) == reference  # the same files as an uninterrupted run, once
    assert [len(committed_runs(tmp_path / w)) for w in ("csv", "jsonl")] == [1, 1]
    assert not list((tmp_path / "jsonl" / "_temporary").rglob("*"))
    conf = conf_for(tmp_path, "sqlite")
    assert all(Mark.INDEX.check(p) for p in rows(conf, cid).values() if Mark.UPDATEDB.check(p)
               and p.status == CrawlStatus.FETCHED)
