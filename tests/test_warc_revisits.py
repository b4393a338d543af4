"""Revisit records, CDXJ indexes and WACZ packages of `nutch2 warc`, on a crawl of the test web recrawled twice:
first with servers that answer 200 to every request (an unchanged page is fetched again: identical-payload-digest
revisits, a changed one a response), then with conditional requests answered 304 (server-not-modified revisits).
Read back with warcio and fastwarc; each file's index is cdxj-indexer's, index.cdxj the folder's; `wacz validate`
accepts the package; pywb, over a collection of the folder and our index.cdxj, replays a revisited page with the
first capture's body, and so does pywb over a collection loaded from the .wacz alone (its WARCs and its own
index). The kill test: `nutch2 warc` killed at its failpoints and run again gives the records of an
uninterrupted run, and every revisit refers to a response record in the folder."""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import re
import socket
import subprocess
import sys
import time
import uuid
import zipfile
from collections.abc import Iterator
from functools import partial
from pathlib import Path

import pytest
import requests
from warcio.archiveiterator import ArchiveIterator

from nutch2.archive.cdxj import write_folder_index
from nutch2.archive.warc import IDENTICAL, NOT_MODIFIED, Capture, complete_files, payload_digest
from nutch2.crawldb.journal import Journal
from nutch2.marks import Mark
from nutch2.status import CrawlStatus
from nutch2.stores import open_store
from nutch2.urls.tableutil import unreverse_url
from tests import helpers
from tests.conftest import runner_of
from tests.crawlutil import cli, conf_for, defines, rows
from tests.helpers import KILLED
from tests.testweb import TestWeb

pytestmark = pytest.mark.slow
nutch2 = partial(helpers.nutch2, timeout=300)


def records(files: list[Path]) -> list[dict]:
    """Every record but warcinfo: its WARC headers, HTTP status and payload, digests checked by warcio."""
    out = []
    for path in files:
        with open(path, "rb") as f:
            for rec in ArchiveIterator(f, check_digests="raise"):
                body = rec.content_stream().read()
                if rec.rec_type == "warcinfo":
                    continue
                out.append({"type": rec.rec_type, "file": path.name, "body": body,
                            "status": rec.http_headers.get_statuscode() if rec.http_headers else None,
                            "http": dict(rec.http_headers.headers) if rec.http_headers else {},
                            **{k: v for k, v in rec.rec_headers.headers}})
    return out


def warcs(folder: Path, prefix: str = "") -> list[Path]:
    return sorted(folder.glob(f"{prefix}*.warc.gz"))


@pytest.fixture(scope="module")
def recrawled(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """A crawl exported whole, then recrawled twice, each recrawl's batch exported into the same folder."""
    tmp = tmp_path_factory.mktemp("revisits")
    d = defines(tmp, "sqlite")
    conf = conf_for(tmp, "sqlite")
    out = tmp / "warc"
    state: dict = {"tmp": tmp, "d": d, "conf": conf, "out": out}
    with TestWeb(hosts=3, pages_per_host=6, traps=False) as web:
        (tmp / "seeds.txt").write_text(web.seed_url + "\n")
        assert cli("crawl", tmp / "seeds.txt", "-crawlId", "r", "-rounds", 3, *d) == 0
        assert cli("warc", out, "-all", "-crawlId", "r", *d) == 0
        state["first"] = {unreverse_url(k): p for k, p in rows(conf, "r").items()
                          if p.status == CrawlStatus.FETCHED and p.content is not None}
        state["changed"] = changed = sorted(u for u in state["first"] if "/p/" in u)[:2]
        for url in changed:
            web.modify(url)
        web.not_modified = False  # servers without conditional requests: every page again with 200
        state["b2"] = b2 = _round(d, 31)
        assert cli("warc", out, b2, "-crawlId", "r", "-wacz", tmp / "b2.wacz", *d) == 0
        state["second"] = {unreverse_url(k): p for k, p in rows(conf, "r").items()}
        web.not_modified = True  # 304 for what did not change since
        state["b3"] = b3 = _round(d, 62)
        assert cli("warc", out, b3, "-crawlId", "r", "-wacz", tmp / "b3.wacz", *d) == 0
        state["third"] = {unreverse_url(k): p for k, p in rows(conf, "r").items()}
    return state


def _round(d: list[str], days: int) -> str:
    """One recrawl round of every known row: generate -adddays, fetch, parse, updatedb; its batch id."""
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert cli("generate", "-crawlId", "r", "-adddays", days, *d) == 0
    batch = buf.getvalue().strip().splitlines()[-1]
    for step in ("fetch", "parse", "updatedb"):
        assert cli(step, batch, "-crawlId", "r", *d) == 0
    return batch


def test_recrawl_of_unchanged_pages_writes_revisits(recrawled: dict) -> None:
    out, first, changed = recrawled["out"], recrawled["first"], recrawled["changed"]
    before = records(warcs(out, "r-all-"))
    responses = {r["WARC-Record-ID"]: r for r in before if r["type"] == "response"}
    assert len(responses) == len(first) > 10 and not [r for r in before if r["type"] == "revisit"]
    by_url = {r["WARC-Target-URI"]: r for r in responses.values()}

    second = records(warcs(out, f"r-{recrawled['b2']}-"))
    fetched = {u for u, p in recrawled["second"].items() if Mark.UPDATEDB.check(p) == recrawled["b2"]
               and p.status == CrawlStatus.FETCHED}
    revisits = {r["WARC-Target-URI"]: r for r in second if r["type"] == "revisit"}
    new = {r["WARC-Target-URI"]: r for r in second if r["type"] == "response"}
    assert set(revisits) == set(first) - set(changed)  # the unchanged pages of the first export
    assert set(new) == fetched - set(revisits) and set(changed) <= set(new)  # changed pages, and pages not exported
    for url, rev in revisits.items():
        orig = by_url[url]
        assert rev["WARC-Profile"] == IDENTICAL and rev["body"] == b"" and rev["status"] == "200"
        assert rev["WARC-Refers-To"] == orig["WARC-Record-ID"]
        assert (rev["WARC-Refers-To-Target-URI"], rev["WARC-Refers-To-Date"]) == (url, orig["WARC-Date"])
        assert rev["WARC-Payload-Digest"] == orig["WARC-Payload-Digest"] and rev["WARC-Date"] > orig["WARC-Date"]
        assert rev["http"]["Content-Length"] == str(len(orig["body"]))  # the headers of the new response
    for url in changed:
        assert new[url]["body"] == recrawled["second"][url].content != first[url].content
    rid = {r["WARC-Record-ID"] for r in second if r["type"] in ("response", "revisit")}
    assert all(r["WARC-Concurrent-To"] in rid for r in second if r["type"] == "request")
    assert all(r["WARC-Refers-To"] in rid for r in second if r["type"] == "metadata")

    # the 304 round: server-not-modified revisits, each of the last response of its content
    third = records(warcs(out, f"r-{recrawled['b3']}-"))
    latest = {r["WARC-Target-URI"]: r for r in before + second if r["type"] == "response"}  # the later wins
    assert all(latest[url] is new[url] for url in changed)
    not_modified = {u for u, p in recrawled["third"].items() if p.status == CrawlStatus.NOTMODIFIED}
    assert not_modified and not_modified <= set(latest)
    got = {r["WARC-Target-URI"]: r for r in third if r["type"] == "revisit"}
    assert set(got) == not_modified
    for url, rev in got.items():
        assert rev["WARC-Profile"] == NOT_MODIFIED and rev["status"] == "304" and rev["body"] == b""
        assert rev["WARC-Refers-To"] == latest[url]["WARC-Record-ID"]
        assert rev["WARC-Refers-To-Date"] == latest[url]["WARC-Date"]
        assert "ETag" in rev["http"] and "Content-Length" not in rev["http"]

    # what the row keeps: its last response, in a file that is there
    latest.update({r["WARC-Target-URI"]: r for r in third if r["type"] == "response"})
    for url, page in recrawled["third"].items():
        capture = Capture.of(page)
        if url in latest:
            assert capture is not None and capture.record_id == latest[url]["WARC-Record-ID"], url
            assert (out / capture.file).is_file() and capture.digest == payload_digest(page.content)
            assert capture.folder == str(out.resolve())


def test_fastwarc_reads_every_record(recrawled: dict) -> None:
    from fastwarc.warc import ArchiveIterator as FastIterator
    from fastwarc.warc import WarcRecordType

    kinds: dict[str, int] = {}
    for path in warcs(recrawled["out"]):
        with open(path, "rb") as f:
            for rec in FastIterator(f, parse_http=False):
                assert rec.verify_block_digest(), path
                kinds[rec.headers["WARC-Type"]] = kinds.get(rec.headers["WARC-Type"], 0) + 1
        with open(path, "rb") as f:
            for rec in FastIterator(f, record_types=WarcRecordType.revisit, parse_http=True):
                assert rec.http_headers.status_code in (200, 304) and rec.reader.read() == b""
    assert kinds["revisit"] > 10 and kinds["response"] > 10


def cdxj_indexer(output: Path, *files: Path) -> str:
    """cdxj-indexer's sorted index of the files, from its command in an interpreter of its own (py-wacz, imported
    in this one, changes its defaults)."""
    done = subprocess.run([sys.executable, "-m", "cdxj_indexer.main", "--sort", "-o", str(output), *map(str, files)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return output.read_text()


def test_cdxj_is_cdxj_indexers(recrawled: dict, tmp_path: Path) -> None:
    out = recrawled["out"]
    files = warcs(out)
    for path in files:
        assert (out / (path.name + ".cdxj")).read_text() == cdxj_indexer(tmp_path / "one.cdxj", path), path
    index = (out / "index.cdxj").read_text()
    assert index == cdxj_indexer(tmp_path / "all.cdxj", *files)
    # a file without its index (an older export's) is indexed by cdxj-indexer when the folder's index is written
    legacy = out / (files[0].name + ".cdxj")
    made = legacy.read_text()
    legacy.unlink()
    write_folder_index(out, complete_files(out))
    assert legacy.read_text() == made and (out / "index.cdxj").read_text() == index
    lines = [json.loads(line.split(" ", 2)[2]) for line in index.splitlines()]
    assert {x["mime"] for x in lines} >= {"warc/revisit", "text/html"} and {x["status"] for x in lines} >= {"304"}
    assert len(lines) == sum(1 for r in records(files) if r["type"] in ("response", "revisit"))


def test_wacz_is_valid_and_holds_what_the_revisits_refer_to(recrawled: dict) -> None:
    path = recrawled["tmp"] / "b2.wacz"
    done = subprocess.run([sys.executable, "-m", "wacz", "validate", "-f", str(path)], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0 and "Validation succeeded" in done.stdout, done.stdout + done.stderr
    with zipfile.ZipFile(path) as z:
        names = set(z.namelist())
        pages = [json.loads(line) for line in z.read("pages/pages.jsonl").decode().splitlines()]
    out, b2 = recrawled["out"], recrawled["b2"]
    archived = {n.removeprefix("archive/") for n in names if n.startswith("archive/")}
    assert {p.name for p in warcs(out, f"r-{b2}-")} <= archived
    referred = {r["WARC-Refers-To"] for r in records(warcs(out, f"r-{b2}-")) if r["type"] == "revisit"}
    inside = {r["WARC-Record-ID"] for r in records([out / n for n in archived]) if r["type"] == "response"}
    assert referred and referred <= inside  # the package replays by itself
    assert {"datapackage.json", "datapackage-digest.json", "indexes/index.cdx.gz", "pages/pages.jsonl"} <= names
    assert pages[0]["format"] == "json-pages-1.0"
    second = recrawled["second"]
    html = {u for u, p in second.items() if Mark.UPDATEDB.check(p) == b2 and p.status == CrawlStatus.FETCHED
            and (p.content_type or "").startswith("text/html")}
    assert {p["url"] for p in pages[1:]} == html
    assert all(p["title"] == (second[p["url"]].title or p["url"]) for p in pages[1:])

    # the 304 round's package: a page confirmed by a 304 is shown as the capture it confirmed
    path = recrawled["tmp"] / "b3.wacz"
    done = subprocess.run([sys.executable, "-m", "wacz", "validate", "-f", str(path)], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0 and "Validation succeeded" in done.stdout, done.stdout + done.stderr
    with zipfile.ZipFile(path) as z:
        shown = {p["url"]: p["ts"] for p in map(json.loads, z.read("pages/pages.jsonl").decode().splitlines()[1:])}
    revisits = {r["WARC-Target-URI"]: r for r in records(warcs(out, f"r-{recrawled['b3']}-")) if r["type"] == "revisit"}
    assert revisits and set(revisits) <= set(shown)
    for url, rev in revisits.items():
        assert re.sub(r"\D", "", shown[url])[:14] == re.sub(r"\D", "", rev["WARC-Refers-To-Date"])[:14], url


def test_usage_errors_and_a_rerun_under_a_later_export(recrawled: dict, capsys: pytest.CaptureFixture[str]) -> None:
    d, out, tmp = recrawled["d"], recrawled["out"], recrawled["tmp"]
    before = sorted(p.name for p in out.iterdir())
    capsys.readouterr()
    assert cli("warc", out, "-all", "-crawlId", "r", *d) == 1  # its files would go: later revisits refer to them
    assert cli("warc", tmp / "w", "-all", "-crawlId", "r", "-wacz", tmp / "x.zip", *d) == 1
    (tmp / "dir.wacz").mkdir()
    assert cli("warc", tmp / "w", "-all", "-crawlId", "r", "-wacz", tmp / "dir.wacz", *d) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 3 and "later export" in err[0] and "another folder" in err[0], err
    assert "ending in .wacz" in err[1] and "is a folder" in err[2], err
    assert sorted(p.name for p in out.iterdir()) == before and not (tmp / "w").exists()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def wayback(root: Path) -> Iterator[str]:
    """pywb's wayback over the collections of `root` (its config.yaml, or its collections/ folder) on a free port;
    the URL of the collection "nutch"."""
    port = _free_port()
    log = open(root / "wayback.log", "w")  # noqa: SIM115 - closed below
    proc = subprocess.Popen([sys.executable, "-c", "from pywb.apps.cli import wayback; wayback()", "-b", "127.0.0.1",
                             "-p", str(port), "-d", str(root)], cwd=root, stdout=log, stderr=log)
    try:
        base = f"http://127.0.0.1:{port}/nutch"
        deadline = time.monotonic() + 60
        while True:
            try:
                requests.get(f"{base}/cdx?url=x", timeout=5)
                break
            except requests.ConnectionError:
                assert time.monotonic() < deadline and proc.poll() is None, (root / "wayback.log").read_text()
                time.sleep(0.5)
        yield base
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()


def check_replay(base: str, recrawled: dict) -> None:
    """Revisits of the second round replay with the first capture's body at the revisit's time; a changed page
    replays its second capture."""
    out, first, changed = recrawled["out"], recrawled["first"], recrawled["changed"]
    revisits = [r for r in records(warcs(out, f"r-{recrawled['b2']}-")) if r["type"] == "revisit"]
    assert len(revisits) >= 5
    for rev in revisits[:5]:
        url = rev["WARC-Target-URI"]
        ts = re.sub(r"\D", "", rev["WARC-Date"])[:14]
        r = requests.get(f"{base}/{ts}id_/{url}", timeout=30)
        assert r.status_code == 200 and r.content == first[url].content, url  # the first capture's body
        assert r.headers["Memento-Datetime"] == time.strftime(  # the revisit's capture
            "%a, %d %b %Y %H:%M:%S GMT", time.strptime(ts, "%Y%m%d%H%M%S"))
    url = changed[0]
    second = next(r for r in records(warcs(out, f"r-{recrawled['b2']}-"))
                  if r["type"] == "response" and r["WARC-Target-URI"] == url)
    r = requests.get(f"{base}/{re.sub(r'[^0-9]', '', second['WARC-Date'])[:14]}id_/{url}", timeout=30)
    assert r.status_code == 200 and r.content == second["body"] != first[url].content  # its second capture


def test_pywb_replays_a_revisit_from_the_first_capture(recrawled: dict, tmp_path: Path) -> None:
    pytest.importorskip("pywb")
    out = recrawled["out"]
    (tmp_path / "config.yaml").write_text(f"collections:\n  nutch:\n    index_paths: {out / 'index.cdxj'}\n"
                                          f"    archive_paths: {out}/\n")
    with wayback(tmp_path) as base:
        check_replay(base, recrawled)


def test_pywb_replays_the_wacz_by_itself(recrawled: dict, tmp_path: Path) -> None:
    """The second round's .wacz alone, loaded into a pywb collection (wb-manager add --unpack-wacz: the WARCs and
    the index inside the package, nothing of the export folder), replays as the folder does."""
    pytest.importorskip("pywb")
    wacz = tmp_path / "copy.wacz"
    wacz.write_bytes((recrawled["tmp"] / "b2.wacz").read_bytes())
    for args in (["init", "nutch"], ["add", "--unpack-wacz", "nutch", str(wacz)]):
        done = subprocess.run([sys.executable, "-c", "from pywb.manager.manager import main; main()", *args],
                              cwd=tmp_path, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
    coll = tmp_path / "collections" / "nutch"
    with zipfile.ZipFile(wacz) as z:
        inside = sorted(n for n in z.namelist() if n.startswith("archive/"))
        packed = gzip.decompress(z.read("indexes/index.cdx.gz")).decode().splitlines()
    assert len(list((coll / "archive").iterdir())) == len(inside)
    loaded = (coll / "indexes" / "index.cdxj").read_text().splitlines()
    assert len(loaded) == len(packed) and [x.split(" ", 2)[:2] for x in loaded] == \
        [x.split(" ", 2)[:2] for x in packed]  # the package's own index, its file names rewritten
    wacz.unlink()  # replay needs nothing but what was unpacked
    with wayback(tmp_path) as base:
        check_replay(base, recrawled)


# ---------------------------------------------------------------------------------------------------- kill -9
def killed(proc: subprocess.CompletedProcess[str], backend: str) -> bool:
    """Killed at the point (in a task): the command, or one of its workers, which it reports in one line."""
    if runner_of(backend) == "processes" and proc.returncode == 1:
        return "a worker process died" in proc.stderr
    return proc.returncode == KILLED


def comparable(files: list[Path]) -> list[tuple]:
    """The records of an export without its own record ids (new in every run) and file names."""
    own = {r["WARC-Record-ID"] for r in records(files)}
    return sorted((r["type"], r["WARC-Target-URI"], r["WARC-Date"], r.get("WARC-Payload-Digest"),
                   r.get("WARC-Profile"), r.get("WARC-Refers-To") if r.get("WARC-Refers-To") not in own else "own",
                   r.get("WARC-Refers-To-Target-URI"), r.get("WARC-Refers-To-Date"), r["body"])
                  for r in records(files))


def check_references(folder: Path) -> int:
    """Every revisit in the folder refers to a response record in it; the number of revisits."""
    recs = records(warcs(folder))
    responses = {r["WARC-Record-ID"]: r for r in recs if r["type"] == "response"}
    revisits = [r for r in recs if r["type"] == "revisit"]
    for rev in revisits:
        orig = responses.get(rev["WARC-Refers-To"])
        assert orig is not None, rev
        assert (orig["WARC-Target-URI"], orig["WARC-Date"], orig["WARC-Payload-Digest"]) == \
            (rev["WARC-Refers-To-Target-URI"], rev["WARC-Refers-To-Date"], rev["WARC-Payload-Digest"])
    return len(revisits)


@pytest.mark.timeout(900)
@pytest.mark.parametrize("backend", ["sqlite", "sqlite:local"])
def test_warc_revisits_kill_9_then_rerun(tmp_path: Path, backend: str) -> None:
    d = defines(tmp_path, backend)
    crawl_id = f"k{uuid.uuid4().hex[:6]}"
    out = tmp_path / "warc"
    size = ("-maxSize", 0.01)  # several files per task
    with TestWeb(hosts=3, pages_per_host=10, traps=False) as web:
        (tmp_path / "seeds.txt").write_text(web.seed_url + "\n")
        assert nutch2("crawl", tmp_path / "seeds.txt", "-rounds", 3, "-crawlId", crawl_id, *d).returncode == 0
        with open_store(conf_for(tmp_path, backend), crawl_id, create=False) as store:
            second = Journal(store).batches()[1].batch_id
        # the first export: round 2's pages; then every page again (two of them changed) and new ones
        assert nutch2("warc", out, second, "-crawlId", crawl_id, *size, *d).returncode == 0
        earlier = {p.name for p in out.iterdir()}
        for url in sorted(u for u in web.pages if "/p/" in u)[:2]:
            web.modify(url)
        web.not_modified = False
        g = nutch2("generate", "-crawlId", crawl_id, "-adddays", 31, *d)
        batch = g.stdout.strip().splitlines()[-1]
        assert g.returncode == 0 and nutch2("fetch", batch, "-crawlId", crawl_id, *d).returncode == 0
    ref = nutch2("warc", out, batch, "-crawlId", crawl_id, *size, *d)
    assert ref.returncode == 0, ref.stderr
    expected = comparable(warcs(out, f"{crawl_id}-{batch}-"))
    kinds = {r[0] for r in expected}
    assert {"response", "revisit"} <= kinds and check_references(out) >= 3
    index = (out / "index.cdxj").read_text()
    for point in ("warc.record=4", "warc.file=1", "warc.file=3", "warc.captured=1", "warc.captured=2"):
        proc = nutch2("warc", out, batch, "-crawlId", crawl_id, *size, *d, failpoints=point)
        assert killed(proc, backend), (point, proc.returncode, proc.stderr[-800:])
        check_references(out)  # the complete files are whole, and what they refer to is there
        rerun = nutch2("warc", out, batch, "-crawlId", crawl_id, *size, *d)
        assert rerun.returncode == 0, (point, rerun.stderr)
        assert re.search(r"removed \d+ files? of an earlier run", rerun.stderr), rerun.stderr
        assert comparable(warcs(out, f"{crawl_id}-{batch}-")) == expected, point
        check_references(out)
        assert not list(out.glob("*.open")) and earlier <= {p.name for p in out.iterdir()}, point
        assert {p.name for p in out.glob("*.cdxj")} == {p.name + ".cdxj" for p in warcs(out)} | {"index.cdxj"}
        new_index = (out / "index.cdxj").read_text()
        assert len(new_index.splitlines()) == len(index.splitlines()), point
