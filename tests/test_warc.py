"""`nutch2 warc` and `nutch2 warcimport` through the CLI on a crawl of the test web, on both runners: the output read
back with warcio and with fastwarc (one response record per fetched row with stored content, digests right, bodies
the stored content), rotation at -maxSize, a batch's rows, the round trip export → import → parse → updatedb, and
an import of a WARC with every kind of record an importer must pass over."""

from __future__ import annotations

import base64
import gzip
import hashlib
import io
from collections import Counter
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from warcio.archiveiterator import ArchiveIterator
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from nutch2.archive.warc import fetched_at, restore_headers, warc_date
from nutch2.crawldb.journal import FETCHED, UPDATED, Journal
from nutch2.marks import Mark
from nutch2.rowkeys import IP_KEY, TRUNCATED_KEY
from nutch2.status import CrawlStatus
from nutch2.stores import open_store
from nutch2.urls.tableutil import reverse_url, unreverse_url
from nutch2.webpage import WebPage
from tests.crawlutil import cli, conf_for, defines, rows
from tests.testweb import TestWeb

pytestmark = pytest.mark.slow
BACKENDS = ["sqlite:local", "sqlite"]
COMPARED = ("status", "content", "content_type", "headers", "signature", "title", "text", "outlinks", "fetch_time",
            "modified_time", "fetch_interval", "parse_status", "repr_url", "base_url")


@pytest.fixture(scope="module")
def web():
    with TestWeb(hosts=4, pages_per_host=8, slow_seconds=0.3) as w:
        yield w


def crawl(web: TestWeb, tmp: Path, backend: str, crawl_id: str = "a", rounds: int = 3) -> list[str]:
    d = defines(tmp, backend)
    (tmp / "seeds.txt").write_text(web.seed_url + "\n")
    assert cli("crawl", tmp / "seeds.txt", "-crawlId", crawl_id, "-rounds", rounds, *d) == 0
    return d


def answered(page: WebPage) -> int | None:
    """The HTTP status a row's kept answer had (redirects: 301 permanent, 302 temporary), None for no answer."""
    if page.status in (CrawlStatus.FETCHED, CrawlStatus.NOTMODIFIED, CrawlStatus.DUPLICATE):
        return 200
    if page.status in (CrawlStatus.REDIR_PERM, CrawlStatus.REDIR_TEMP):
        return 301 if page.status == CrawlStatus.REDIR_PERM else 302
    args = page.protocol_status.args
    return int(args[0]) if args and args[0].isdigit() else None


def exported(table: dict[str, WebPage], pages_only: bool = False) -> dict[str, WebPage]:
    """Rows a WARC export must hold: every answer kept (redirects and error pages too), with its content;
    pages_only: the 200s."""
    return {unreverse_url(k): p for k, p in table.items()
            if answered(p) in ((200,) if pages_only else (200, 301, 302, 400, 401, 403, 404, 410, 500, 503))
            and p.content is not None}


def read_warcio(files: list[Path]) -> dict[str, list]:
    """Records by type, with every digest checked (warcio raises on a wrong one)."""
    out: dict[str, list] = {"warcinfo": [], "request": [], "response": [], "metadata": []}
    for path in files:
        with open(path, "rb") as f:
            for i, rec in enumerate(ArchiveIterator(f, check_digests="raise")):
                assert (i == 0) == (rec.rec_type == "warcinfo"), path  # one warcinfo, first
                out[rec.rec_type].append((rec.rec_headers, rec.http_headers, rec.content_stream().read()))
    return out


def read_fastwarc(files: list[Path]) -> dict[str, bytes]:
    """Response bodies by URL through the second reader, digests verified."""
    from fastwarc.warc import ArchiveIterator as FastIterator
    from fastwarc.warc import WarcRecordType

    bodies: dict[str, bytes] = {}
    for path in files:
        with open(path, "rb") as f:  # block digests: over the whole block, HTTP headers unparsed
            assert all(rec.verify_block_digest() for rec in FastIterator(f, parse_http=False))
        with open(path, "rb") as f:  # payload digests: over what follows the HTTP headers
            for rec in FastIterator(f, record_types=WarcRecordType.response, parse_http=True):
                assert rec.verify_payload_digest() and 200 <= rec.http_headers.status_code <= 599
                bodies[rec.headers["WARC-Target-URI"]] = rec.reader.read()
    return bodies


def sha1_b32(data: bytes) -> str:
    return "sha1:" + base64.b32encode(hashlib.sha1(data).digest()).decode()


@pytest.mark.parametrize("backend", BACKENDS)
def test_export_round_trip(web: TestWeb, tmp_path: Path, backend: str, capsys: pytest.CaptureFixture[str]) -> None:
    d = crawl(web, tmp_path, backend)
    conf = conf_for(tmp_path, backend)
    table = rows(conf, "a")
    want = exported(table)
    assert len(want) > 30 and len(want) < len(table)  # not every row was fetched
    assert {answered(p) for p in want.values()} >= {200, 301, 302, 404}  # redirects and error pages are archived

    out = tmp_path / "out"
    capsys.readouterr()
    assert cli("warc", out, "-all", "-crawlId", "a", "-maxSize", "0.02", *d) == 0
    assert f" exported={len(want)} " in capsys.readouterr().err
    files = sorted(out.glob("*.warc.gz"))
    assert all(f.name.startswith("a-all-") for f in files)  # no .open left; each file with its index, and the folder's
    assert sorted(p.name for p in out.iterdir()) == sorted([f.name for f in files] + [f.name + ".cdxj" for f in files]
                                                           + ["index.cdxj"])

    records = read_warcio(files)
    responses = {h.get_header("WARC-Target-URI"): (h, http, body) for h, http, body in records["response"]}
    assert len(records["response"]) == len(responses) == len(want) and set(responses) == set(want)
    for url, page in want.items():
        headers, http, body = responses[url]
        assert body == page.content, url  # the body as stored
        assert headers.get_header("WARC-Payload-Digest") == sha1_b32(page.content), url
        assert headers.get_header("WARC-Date") == warc_date(fetched_at(page)), url
        assert headers.get_header("WARC-IP-Address") == urlsplit(url).hostname  # known: the host is an IP
        assert http.get_statuscode() == str(answered(page)), url
        assert http.get_header("Content-Length") == str(len(page.content))
        if answered(page) in (301, 302):
            assert http.get_header("Location"), url  # a replay follows it
    assert read_fastwarc(files) == {url: page.content for url, page in want.items()}
    ids = {h.get_header("WARC-Record-ID"): u for u, (h, _, _) in responses.items()}
    assert sorted(ids[h.get_header("WARC-Concurrent-To")] for h, _, _ in records["request"]) == sorted(want)
    metadata = {ids[h.get_header("WARC-Refers-To")]: body.decode() for h, _, body in records["metadata"]}
    assert set(metadata) == set(want)
    for url, page in want.items():
        assert f"nutch-status: {CrawlStatus(page.status).name}\r\n" in metadata[url]
        assert f"signature: {page.signature.hex()}\r\n" in metadata[url] if page.signature else True
        assert all(f"outlink: {link}\r\n" in metadata[url] for link in page.outlinks)
    assert len(records["warcinfo"]) == len(files)

    # rotation: a file is closed once it holds -maxSize (the row that crossed it included)
    limit = int(0.02 * 1024 * 1024)
    by_task = Counter(f.name.split("-")[2] for f in files)
    assert len(files) > len(by_task) >= 1
    for path in files:
        task, seq = path.name.split("-")[2], int(path.name.split("-")[3].split(".")[0])
        size = path.stat().st_size
        assert size < limit + 16 * 1024, path
        if seq < by_task[task] - 1:
            assert size >= limit, path

    # import into a new crawl, then parse and updatedb: the rows the original crawl has
    capsys.readouterr()
    assert cli("warcimport", *files, "-crawlId", "b", *d) == 0
    batch = capsys.readouterr().out.strip()
    assert batch.startswith("warc-")
    with open_store(conf, "b", create=False) as store:
        assert Journal(store).batch(batch).state == FETCHED
    imported = rows(conf, "b")
    assert {unreverse_url(k) for k in imported} == set(want)
    assert all(Mark.FETCH.check(p) == batch and Mark.GENERATE.check(p) == batch for p in imported.values())
    assert cli("warcimport", *files, "-crawlId", "b", *d) == 0  # the same files again: nothing to do, the same id
    captured = capsys.readouterr()
    assert captured.out.strip() == batch and "imported already" in captured.err and rows(conf, "b") == imported
    assert cli("parse", batch, "-crawlId", "b", *d) == 0
    assert cli("updatedb", batch, "-crawlId", "b", *d) == 0
    after = rows(conf, "b")
    pages = exported(table, pages_only=True)
    for url, page in want.items():
        got = after[reverse_url(url)]
        assert got.protocol_status.code == page.protocol_status.code, url
        if url not in pages:  # a redirect or an error page: the same answer (its schedule has one try, not many)
            assert got.protocol_status.args == page.protocol_status.args and got.content == page.content, url
            continue
        for name in COMPARED:
            assert getattr(got, name) == getattr(page, name), (url, name)
        assert got.protocol_status.last_modified == page.protocol_status.last_modified
        assert Mark.UPDATEDB.check(got) == batch


def test_batch_export_before_and_after_updatedb(web: TestWeb, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    d = crawl(web, tmp_path, "sqlite", rounds=2)
    conf = conf_for(tmp_path, "sqlite")
    with open_store(conf, "a", create=False) as store:
        first = Journal(store).batches()[0].batch_id
    # a batch after updatedb: its rows carry the updatedb mark
    assert cli("warc", tmp_path / "w1", first, "-crawlId", "a", *d) == 0
    want = {u for u, p in exported(rows(conf, "a")).items() if Mark.UPDATEDB.check(p) == first}
    records = read_warcio(sorted((tmp_path / "w1").glob("*.warc.gz")))["response"]
    got = {h.get_header("WARC-Target-URI") for h, _, _ in records}
    assert got == want and len(want) == 1  # round 1 fetched the seed
    # a batch fetched, not yet updated: its rows carry the fetch mark, and their fetch time is the fetch's
    capsys.readouterr()
    assert cli("generate", "-crawlId", "a", *d) == 0
    batch = capsys.readouterr().out.strip()
    assert cli("fetch", batch, "-crawlId", "a", *d) == 0
    assert cli("warc", tmp_path / "w2", batch, "-crawlId", "a", *d) == 0
    table = rows(conf, "a")
    want = {u: p for u, p in exported(table).items() if Mark.FETCH.check(p) == batch}
    records = read_warcio(sorted((tmp_path / "w2").glob("*.warc.gz")))["response"]
    assert {h.get_header("WARC-Target-URI") for h, _, _ in records} == set(want) and want
    for h, _, _ in records:
        assert h.get_header("WARC-Date") == warc_date(want[h.get_header("WARC-Target-URI")].fetch_time)
    # a second export of the same batch replaces what the first left, whole (and only that)
    assert {p.name.split("-")[-2] for p in (tmp_path / "w2").glob("*.warc.gz")} == {"00000", "00001"}  # two tasks
    (tmp_path / "w2" / f"a-{batch}-00009-00000.warc.gz.open").write_bytes(b"half a file")
    (tmp_path / "w2" / "mine.txt").write_text("not ours")
    assert cli("warc", tmp_path / "w2", batch, "-crawlId", "a", "-numTasks", "1", *d) == 0
    name = f"a-{batch}-00000-00000.warc.gz"
    assert sorted(p.name for p in (tmp_path / "w2").iterdir()) == [name, name + ".cdxj", "index.cdxj", "mine.txt"]


def build_warc(path: Path, base: str) -> dict[str, bytes]:
    """A WARC with what a real one holds besides plain 200s; the bodies the import must store, by URL."""
    html = b"<html><head><title>T</title></head><body><p>hello</p></body></html>"
    with open(path, "wb") as f:
        w = WARCWriter(f, gzip=True, warc_version="1.0")

        def response(url: str, status: str, headers: list[tuple[str, str]], body: bytes, **warc: str) -> None:
            http = StatusAndHeaders(status, headers, protocol="HTTP/1.1")
            rec = w.create_warc_record(url, "response", payload=io.BytesIO(body), length=len(body), http_headers=http,
                                       warc_headers_dict={"WARC-Date": "2024-05-06T07:08:09Z", **warc})
            w.write_record(rec)

        w.write_record(w.create_warcinfo_record("x.warc.gz", {"software": "test"}))
        req = StatusAndHeaders("GET / HTTP/1.1", [("Host", "x")], is_http_request=True)
        w.write_record(w.create_warc_record(f"{base}/", "request", http_headers=req))
        response(f"{base}/plain", "200 OK", [("Content-Type", "text/html")], html, **{"WARC-IP-Address": "10.1.2.3"})
        gz = gzip.compress(html)
        chunked = b"%x\r\n%s\r\n0\r\n\r\n" % (len(gz), gz)  # as Heritrix stores it: chunked, then gzip
        response(f"{base}/coded", "200 OK", [("Content-Type", "text/html"), ("Content-Encoding", "gzip"),
                                             ("Transfer-Encoding", "chunked")], chunked)
        response(f"{base}/moved", "301 Moved Permanently", [("Location", "/plain")], b"")
        response(f"{base}/missing", "404 Not Found", [("Content-Type", "text/html")], b"gone")
        response(f"{base}/big", "200 OK", [("Content-Type", "text/html")], b"x" * 5000)
        response(f"{base}/plain", "200 OK", [("Content-Type", "text/html")], b"a second capture")  # duplicate
        response(f"{base}/cut", "200 OK", [("Content-Type", "text/html")], html, **{"WARC-Truncated": "length"})
        response("dns:example.com", "200 OK", [], b"1.2.3.4")
        w.write_record(w.create_warc_record(f"{base}/", "metadata", payload=io.BytesIO(b"a: b\r\n"), length=6))
        w.write_record(w.create_revisit_record(f"{base}/again", "sha1:AAAA", f"{base}/plain", "2024-05-06T07:08:09Z"))
        response(f"{base}/last", "200 OK", [("Content-Type", "text/html")], html * 50)
    data = path.read_bytes()
    path.write_bytes(data[:-200])  # the file ends inside its last record
    return {f"{base}/plain": html, f"{base}/coded": html, f"{base}/moved": b"", f"{base}/missing": b"gone",
            f"{base}/big": b"x" * 1000, f"{base}/cut": html}


@pytest.mark.parametrize("backend", BACKENDS)
def test_import_passes_over_what_is_not_a_whole_http_response(tmp_path: Path, backend: str,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    d = defines(tmp_path, backend, **{"http.content.limit": 1000})
    conf = conf_for(tmp_path, backend)
    base = "http://archive.example.com"
    want = build_warc(tmp_path / "x.warc.gz", base)
    capsys.readouterr()
    assert cli("warcimport", tmp_path / "x.warc.gz", "-crawlId", "i", *d) == 0
    captured = capsys.readouterr()
    for counter in ("imported=6", "imported_truncated=2", "skipped_duplicate=1", "skipped_truncated=1",
                    "skipped_not_http=1",
                    "skipped_not_response=4"):  # warcinfo, request, metadata, revisit
        assert counter in captured.err, counter
    table = {unreverse_url(k): p for k, p in rows(conf, "i").items()}
    assert set(table) == set(want)
    for url, body in want.items():
        assert table[url].content == body, url
    assert table[f"{base}/plain"].metadata[IP_KEY] == b"10.1.2.3"
    assert table[f"{base}/plain"].fetch_time == 1714979289000 and table[f"{base}/plain"].status == CrawlStatus.FETCHED
    assert table[f"{base}/coded"].headers["Content-Encoding"] == "gzip"  # as the server sent it; body decoded
    assert table[f"{base}/moved"].status == CrawlStatus.REDIR_PERM
    assert table[f"{base}/moved"].outlinks == {f"{base}/plain": ""}
    assert table[f"{base}/missing"].status == CrawlStatus.GONE
    assert table[f"{base}/big"].metadata[TRUNCATED_KEY] == b"length"  # cut at http.content.limit, as a fetch does
    assert table[f"{base}/cut"].metadata[TRUNCATED_KEY] == b"length"  # its WARC-Truncated: kept, marked
    assert TRUNCATED_KEY not in table[f"{base}/plain"].metadata

    for bad, why in ((tmp_path / "none.warc", "is not a file"), (tmp_path / "seeds.txt", "not a readable WARC")):
        if bad.name == "seeds.txt":
            bad.write_text("http://example.com/\n")
        capsys.readouterr()
        assert cli("warcimport", bad, "-crawlId", "i", *d) == 1
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and why in err[0], err


def test_import_marks_a_cut_capture_truncated_as_a_fetch_would(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    """A response whose payload is shorter than its HTTP Content-Length (the capture's connection ended early), or
    that carries WARC-Truncated, is imported marked truncated, as the fetcher marks a cut body: parse skips it
    (parser.skip.truncated) and says why; a whole one, a chunked one and a 304 are not marked."""
    backend = "sqlite"
    d = defines(tmp_path, backend)
    base = "http://cut.example.com"
    html = b"<html><head><title>t</title></head><body><p>a page <a href='/x'>x</a></p></body></html>"
    with open(tmp_path / "cut.warc.gz", "wb") as f:
        w = WARCWriter(f, gzip=True)

        def response(path: str, headers: list[tuple[str, str]], body: bytes, status: str = "200 OK",
                     **warc: str) -> None:
            http = StatusAndHeaders(status, [("Content-Type", "text/html"), *headers], protocol="HTTP/1.1")
            w.write_record(w.create_warc_record(base + path, "response", payload=io.BytesIO(body), length=len(body),
                                                http_headers=http,
                                                warc_headers_dict={"WARC-Date": "2024-05-06T07:08:09Z", **warc}))

        response("/whole", [("Content-Length", str(len(html)))], html)
        response("/short", [("Content-Length", str(len(html) + 5000))], html)
        response("/marked", [("Content-Length", str(len(html)))], html, **{"WARC-Truncated": "time"})
        response("/odd", [], html, **{"WARC-Truncated": "something-else"})
        chunked = b"%x\r\n%s\r\n0\r\n\r\n" % (len(html), html)
        response("/chunked", [("Transfer-Encoding", "chunked"), ("Content-Length", "99999")], chunked)
        response("/same", [("Content-Length", "500"), ("ETag", '"e"')], b"", status="304 Not Modified")
    capsys.readouterr()
    assert cli("warcimport", tmp_path / "cut.warc.gz", "-crawlId", "c", *d) == 0
    assert "imported=6 imported_truncated=3" in capsys.readouterr().err
    table = {unreverse_url(k): p for k, p in rows(conf_for(tmp_path, backend), "c").items()}
    cuts = {url[len(base):]: page.metadata.get(TRUNCATED_KEY) for url, page in table.items()}
    assert cuts == {"/whole": None, "/short": b"disconnect", "/marked": b"time", "/odd": b"unspecified",
                    "/chunked": None, "/same": None}
    assert table[f"{base}/short"].content == html and table[f"{base}/short"].status == CrawlStatus.FETCHED
    assert cli("parse", "-crawlId", "c", "-all", *d) == 0
    assert "skipped_truncated=3" in capsys.readouterr().err
    table = {unreverse_url(k): p for k, p in rows(conf_for(tmp_path, backend), "c").items()}
    assert table[f"{base}/short"].parse_status.args == [
        "content cut: the connection, or the body's decoding, ended before the body did"]
    assert table[f"{base}/whole"].title == "t"


def test_a_duplicate_row_is_exported_as_the_response_it_was(web: TestWeb, tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    """dedup marks a fetched row DUPLICATE; the archive still holds its response (it was fetched as it was)."""
    d = crawl(web, tmp_path, "sqlite", rounds=2)
    conf = conf_for(tmp_path, "sqlite")
    want = exported(rows(conf, "a"))
    url = sorted(want)[0]
    with open_store(conf, "a", create=False) as store:
        row = WebPage.from_store(reverse_url(url), {})
        row.status = int(CrawlStatus.DUPLICATE)  # as dedup writes it
        store.put(row.key, row)
    capsys.readouterr()
    assert cli("warc", tmp_path / "out", "-all", "-crawlId", "a", *d) == 0
    assert f" exported={len(want)} " in capsys.readouterr().err
    records = read_warcio(sorted((tmp_path / "out").glob("*.warc.gz")))
    bodies = {h.get_header("WARC-Target-URI"): body for h, _, body in records["response"]}
    assert set(bodies) == set(want) and bodies[url] == want[url].content
    assert rows(conf, "a")[reverse_url(url)].status == CrawlStatus.DUPLICATE
    assert any(b"nutch-status: DUPLICATE" in body for _, _, body in records["metadata"])


def test_headers_round_trip() -> None:
    from nutch2.archive.warc import _response_headers

    stored = {"Content-Type": "text/html", "Content-Encoding": "gzip", "Content-Length": "120",
              "Transfer-Encoding": "chunked", "Set-Cookie": "a=1"}
    archived = _response_headers(stored, 300)
    assert ("Content-Length", "300") in archived and ("X-Crawler-Content-Length", "120") in archived
    assert ("X-Crawler-Content-Encoding", "gzip") in archived
    assert restore_headers(archived) == stored
    same = {"Content-Type": "text/html", "Content-Length": "300"}
    assert _response_headers(same, 300) == [("Content-Type", "text/html"), ("Content-Length", "300")]
    assert restore_headers([("Set-Cookie", "a=1"), ("set-cookie", "b=2")]) == {"Set-Cookie": "a=1, b=2"}


def test_warc_usage_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = defines(tmp_path, "sqlite")
    (tmp_path / "s.txt").write_text("http://example.com/\n")
    assert cli("inject", tmp_path / "s.txt", "-crawlId", "u", *d) == 0
    assert cli("warc", tmp_path / "o", "-crawlId", "u", *d) == 2  # no batch and no -all
    capsys.readouterr()
    assert cli("warc", tmp_path / "o", "nosuchbatch", "-crawlId", "u", *d) == 1
    assert cli("warc", tmp_path / "o", "-all", "-maxSize", "0", "-crawlId", "u", *d) == 2  # out of range
    (tmp_path / "file").write_text("x")
    assert cli("warc", tmp_path / "file", "-all", "-crawlId", "u", *d) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 3 and "no rows carry batch id 'nosuchbatch'" in err[0] and "-maxSize 0" in err[1]
    assert "is a file" in err[2]
    assert cli("warc", tmp_path / "o", "-all", "-crawlId", "u", *d) == 0  # no fetched row: an empty export
    assert [p.name for p in (tmp_path / "o").iterdir()] == ["index.cdxj"]  # an empty index


def test_crawl_finishes_an_imported_batch(web: TestWeb, tmp_path: Path) -> None:
    d = crawl(web, tmp_path, "sqlite", rounds=2)
    conf = conf_for(tmp_path, "sqlite")
    assert cli("warc", tmp_path / "w", "-all", "-crawlId", "a", *d) == 0
    files = sorted((tmp_path / "w").glob("*.warc.gz"))
    assert cli("warcimport", *files, "-crawlId", "r", *d) == 0
    with open_store(conf, "r", create=False) as store:
        batch = Journal(store).batches()[0].batch_id
    (tmp_path / "none.txt").write_text("http://127.0.0.1:9/\n")  # a seed that answers nothing
    assert cli("crawl", tmp_path / "none.txt", "-crawlId", "r", "-rounds", 1, "-topN", 1, *d) == 0
    with open_store(conf, "r", create=False) as store:
        assert Journal(store).batch(batch).state == UPDATED
    table, original = rows(conf, "r"), rows(conf, "a")
    done = {k: p for k, p in table.items() if Mark.UPDATEDB.check(p) == batch}
    assert len(done) == len(exported(original))  # parsed and updated by the crawl, as the original's rows were
    assert all((p.title, p.signature, p.parse_status) == (original[k].title, original[k].signature,
                                                          original[k].parse_status) for k, p in done.items())


def test_records_of_a_cut_page_and_an_updated_row() -> None:
    from warcio.recordbuilder import RecordBuilder

    from nutch2.archive.warc import page_records

    page = WebPage("com.example:http/a", status=int(CrawlStatus.FETCHED), content=b"<p>cut", fetch_time=5_000_000,
                   fetch_interval=1000, headers={"Content-Type": "text/html"}, outlinks={"http://example.com/b": ""},
                   metadata={TRUNCATED_KEY: b"time"}, markers={Mark.UPDATEDB.value: "b1"})
    request, response, metadata = page_records(RecordBuilder(warc_version="1.1"), page, "http://example.com/a",
                                               [("User-Agent", "Bot")])
    assert response.rec_headers.get_header("WARC-Truncated") == "time"  # the fetch's time limit cut it
    page.metadata[TRUNCATED_KEY] = b"y"  # a row from before the reason was kept
    _, old, _ = page_records(RecordBuilder(warc_version="1.1"), page, "http://example.com/a", [])
    assert old.rec_headers.get_header("WARC-Truncated") == "unspecified"
    assert response.rec_headers.get_header("WARC-Date") == warc_date(4_000_000)  # updated: next fetch - interval
    assert response.rec_headers.get_header("WARC-IP-Address") is None  # a host name: not known
    assert request.http_headers.protocol == "GET" and request.http_headers.get_header("User-Agent") == "Bot"
    assert metadata.rec_headers.get_header("WARC-Refers-To") == response.rec_headers.get_header("WARC-Record-ID")
    page.markers = {Mark.FETCH.value: "b1"}
    assert fetched_at(page) == 5_000_000  # fetched, not yet updated: its fetch time


def test_the_http_status_a_row_keeps() -> None:
    """What the export writes in the status line, from the row alone (a redirect's code is not kept: 301/302)."""
    from nutch2.archive.warc import http_status
    from nutch2.status import ProtocolStatusCode as P
    from nutch2.webpage import ProtocolStatus

    def row(status: CrawlStatus, code: P = P.SUCCESS, *args: str) -> WebPage:
        return WebPage("com.example:http/", status=int(status), protocol_status=ProtocolStatus(int(code), list(args)))

    assert http_status(WebPage("com.example:http/", status=int(CrawlStatus.FETCHED))) == 200  # no protocol status
    assert http_status(row(CrawlStatus.DUPLICATE)) == 200 and http_status(row(CrawlStatus.NOTMODIFIED)) == 304
    assert http_status(row(CrawlStatus.REDIR_PERM, P.MOVED, "http://example.com/b")) == 301
    assert http_status(row(CrawlStatus.REDIR_TEMP, P.TEMP_MOVED, "http://example.com/b")) == 302
    assert http_status(row(CrawlStatus.GONE, P.NOTFOUND, "404")) == 404
    assert http_status(row(CrawlStatus.RETRY, P.EXCEPTION, "503")) == 503
    assert http_status(row(CrawlStatus.GONE, P.ROBOTS_DENIED)) is None  # no request was made
    assert http_status(row(CrawlStatus.RETRY, P.EXCEPTION, "connection refused")) is None
