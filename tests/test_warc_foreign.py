"""warcimport of WARC files other tools wrote, by hand or broken: what each record becomes, and that a damaged file
is said in one line, never a traceback."""

from __future__ import annotations

import gzip
import io
import uuid
from pathlib import Path

import pytest

from nutch2.archive.warc import WarcReader
from nutch2.urls.tableutil import unreverse_url
from tests.crawlutil import cli, conf_for, defines, rows

HTML = b"<html><head><title>T</title></head><body>hello</body></html>"


def record(rtype: str, uri: str | None, block: bytes, **headers: str) -> bytes:
    """One WARC/1.0 record as the spec lays it out (no library in between)."""
    lines = ["WARC/1.0", f"WARC-Type: {rtype}", f"WARC-Record-ID: <urn:uuid:{uuid.uuid4()}>",
             "WARC-Date: 2024-01-02T03:04:05Z"]
    if uri is not None:
        lines.append(f"WARC-Target-URI: {uri}")
    lines += [f"{k.replace('_', '-')}: {v}" for k, v in headers.items()]
    lines.append(f"Content-Length: {len(block)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + block + b"\r\n\r\n"


def response(uri: str | None, body: bytes = HTML) -> bytes:
    http = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)
    return record("response", uri, http, Content_Type="application/http; msgtype=response")


def read(path: Path) -> tuple[list[str], WarcReader]:
    reader = WarcReader(-1)
    return [r.url for r in reader.responses(path)], reader


@pytest.mark.parametrize("compress", [False, True])
def test_a_response_without_target_uri_skips_only_itself(tmp_path: Path, compress: bool) -> None:
    """warcio raised AttributeError on a response record without WARC-Target-URI: the import died with a
    traceback, or (in a file after the first) lost every record after it."""
    records = [response("http://a.example.com/1"), response(None), response("http://a.example.com/2")]
    path = tmp_path / ("x.warc.gz" if compress else "x.warc")
    path.write_bytes(b"".join(gzip.compress(r) for r in records) if compress else b"".join(records))
    urls, reader = read(path)
    assert urls == ["http://a.example.com/1", "http://a.example.com/2"]
    assert reader.skipped == {"not_http": 1} and reader.errors == []


def test_a_file_cut_anywhere_in_its_last_record_is_said_and_counted_truncated(tmp_path: Path) -> None:
    """A .warc.gz cut inside the gzip member of its last record: cut in the WARC headers, warcio gives a record
    without Content-Length (mandatory), which was counted not_http; cut in the HTTP headers, not_http too; cut in the
    body, truncated but with no line saying the file was cut. Wherever the cut, it is now one skipped record and
    one line naming the file."""
    whole = [gzip.compress(response(f"http://a.example.com/{i}")) for i in range(3)]
    for cut in range(5, len(whole[2]) - 20, 3):  # the last 8 bytes are gzip's trailer; what is before them is whole
        path = tmp_path / f"cut{cut}.warc.gz"
        path.write_bytes(b"".join(whole[:2]) + whole[2][:cut])
        urls, reader = read(path)
        assert urls == ["http://a.example.com/0", "http://a.example.com/1"], cut
        # cut in its first line, the record is no record at all: the file is damaged from there (unreadable)
        assert reader.skipped in ({"truncated": 1}, {"unreadable": 1}), (cut, reader.skipped)
        assert len(reader.errors) == 1 and path.name in reader.errors[0], (cut, reader.errors)


def test_the_cli_imports_a_hand_made_file_in_one_line_per_problem(tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    records = [record("warcinfo", None, b"software: hand\r\n", Content_Type="application/warc-fields"),
               response("http://a.example.com/1"), response(None), response("dns:a.example.com"),
               record("resource", "urn:x-test:1", b"text", Content_Type="text/plain"),
               response("http://a.example.com/2")]
    path = tmp_path / "hand.warc.gz"
    path.write_bytes(b"".join(gzip.compress(r) for r in records) + gzip.compress(response("http://a.example.com/3"))[:50])
    d = defines(tmp_path, "sqlite")
    capsys.readouterr()
    assert cli("warcimport", path, "-crawlId", "h", *d) == 0
    err = capsys.readouterr().err
    assert "Traceback" not in err and "imported=2" in err and "skipped_truncated=1" in err, err
    assert "skipped_not_http=2" in err and "skipped_not_response=2" in err, err
    assert sorted(unreverse_url(k) for k in rows(conf_for(tmp_path, "sqlite"), "h")) == \
        ["http://a.example.com/1", "http://a.example.com/2"]


def test_a_file_gzipped_as_one_stream_is_read_whole(tmp_path: Path) -> None:
    """`gzip x.warc` makes one gzip stream, not the member per record WARC writers make: warcio refuses it past
    its first record, so the import read that one record and dropped the rest with a line cut off mid-sentence."""
    records = [record("warcinfo", None, b"software: hand\r\n")] + \
        [response(f"http://a.example.com/{i}") for i in range(5)]
    path = tmp_path / "one.warc.gz"
    path.write_bytes(gzip.compress(b"".join(records)))
    urls, reader = read(path)
    assert urls == [f"http://a.example.com/{i}" for i in range(5)]
    assert reader.skipped == {"not_response": 1} and reader.errors == []
    data = path.read_bytes()
    for cut in range(5, len(data) - 8, 3):  # cut: what is before the cut, and one line
        path.write_bytes(data[:cut])
        urls, reader = read(path)
        assert urls == [f"http://a.example.com/{i}" for i in range(len(urls))], cut
        assert reader.skipped["truncated"] + reader.skipped["unreadable"] == 1, (cut, reader.skipped)
        assert len(reader.errors) == 1 and "one.warc.gz" in reader.errors[0], (cut, reader.errors)


@pytest.mark.parametrize("name,data,says", [
    ("x.wacz", b"PK\x03\x04\x14\x00\x00\x00\x08\x00datapackage.json", "is a ZIP file (a WACZ?)"),
    ("x.cdx", b" CDX N b a m s k r M S V g\ncom,example)/ 20240102030405 http://example.com/ text/html 200 AAAA - - "
              b"100 0 x.warc.gz\n", "is a CDX or CDXJ index"),
    ("index.cdxj", b'com,example)/ 20240102030405 {"url": "http://example.com/", "status": "200"}\n',
     "is a CDX or CDXJ index"),
])
def test_an_index_or_a_wacz_given_for_a_warc_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str,
                                                      data: bytes, says: str) -> None:
    """A WACZ (Webrecorder's package) or the CDX(J) index beside WARC files (`warcimport warc/*` after an export)
    was "not a readable WARC file (Unknown archive format, first line: [its bytes])", or for a CDX, warcio's
    warnings and a line about a record without Content-Length."""
    (tmp_path / name).write_bytes(data)
    capsys.readouterr()
    assert cli("warcimport", tmp_path / name, "-crawlId", "x", *defines(tmp_path, "sqlite")) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and says in err[0] and name in err[0], err


def test_warcimport_of_an_export_folder_skips_its_indexes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`warcimport warc/*` after `nutch2 warc` picks up the export's .cdxj indexes (and a .wacz) beside its WARC
    files: those are skipped with a line each, the WARC files imported (an index alone is still refused above)."""
    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    with open(tmp_path / "a.warc.gz", "wb") as f:
        writer = WARCWriter(f, gzip=True)
        http = StatusAndHeaders("200 OK", [("Content-Type", "text/html")], protocol="HTTP/1.1")
        writer.write_record(writer.create_warc_record("http://example.com/", "response", payload=io.BytesIO(
            b"<html><title>t</title>hello</html>"), http_headers=http))
    (tmp_path / "a.warc.gz.cdxj").write_bytes(b'com,example)/ 20240102030405 {"url": "http://example.com/"}\n')
    (tmp_path / "x.wacz").write_bytes(b"PK\x03\x04\x14\x00\x00\x00\x08\x00datapackage.json")
    capsys.readouterr()
    files = sorted(tmp_path.iterdir())
    assert cli("warcimport", *files, "-crawlId", "x", *defines(tmp_path, "sqlite")) == 0
    err = capsys.readouterr().err
    assert "a.warc.gz.cdxj is a CDX or CDXJ index, not a WARC file: skipped" in err, err
    assert "x.wacz is a ZIP file (a WACZ?), not a WARC file: skipped" in err, err
    assert " imported=1" in err or "imported=1 " in err, err


def test_records_with_a_wrong_content_length_are_one_line_not_warcios_four_each(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """warcio writes four lines to stderr for each record not followed by its blank lines ("WARNING: Record not
    followed by newline ... Offset ... Remainder"): a file written by a tool that gets Content-Length wrong buried the
    import's own lines under thousands of them."""
    records = [response(f"http://a.example.com/{i}") for i in range(6)]
    for i in (1, 3):  # each declares 4 bytes fewer than its block: what follows the record is not blank
        head, _, rest = records[i].partition(b"Content-Length: ")
        n, _, tail = rest.partition(b"\r\n")
        records[i] = head + b"Content-Length: %d\r\n" % (int(n) - 4) + tail
    path = tmp_path / "short.warc"
    path.write_bytes(b"".join(records))
    urls, reader = read(path)
    err = capsys.readouterr().err
    assert "WARNING" not in err and "Remainder" not in err, err
    assert len(urls) == 6 and len(reader.errors) == 1
    assert "2 records not followed by the blank lines" in reader.errors[0]


@pytest.mark.parametrize("name,data,says", [
    ("empty.warc.gz", b"", "is empty"),  # was "its gzip data is cut short", then "no HTTP response record"
    ("x.wacz", b"PK\x03\x04\x14\x00", "is a ZIP file"),
    ("notes.warc", b"hello world\n", "is not a readable WARC file"),
])
def test_a_refused_import_leaves_no_crawl_behind(tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str,
                                                 data: bytes, says: str) -> None:
    """The crawl's table was made (the lock is taken in a store the import may create) before the files were
    checked: a refused import left an empty crawl, which readdb then showed as a crawl of 0 URLs."""
    (tmp_path / name).write_bytes(data)
    capsys.readouterr()
    assert cli("warcimport", tmp_path / name, "-crawlId", "r", *defines(tmp_path, "sqlite")) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and says in err[0], err
    assert not list((tmp_path / "crawl").glob("r_*"))


def test_gzip_streams_one_after_another_and_damaged_ones(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Two one-stream files joined (`cat a.warc.gz b.warc.gz`) lost the second one's records without a word; data
    that is no gzip after the stream was passed over as if the file ended; a file damaged from its start was 'not
    a readable WARC file (... first line: [its compressed bytes])'."""
    records = [response(f"http://a.example.com/{i}", b"x" * 3000 + bytes([48 + i])) for i in range(4)]
    joined = gzip.compress(b"".join(records[:2])) + gzip.compress(b"".join(records[2:]))
    path = tmp_path / "joined.warc.gz"
    path.write_bytes(joined)
    urls, reader = read(path)
    assert urls == [f"http://a.example.com/{i}" for i in range(4)] and reader.errors == []
    path.write_bytes(gzip.compress(b"".join(records)) + b"not gzip at all")
    urls, reader = read(path)
    assert len(urls) == 4 and reader.skipped == {"unreadable": 1} and len(reader.errors) == 1
    damaged = bytearray(gzip.compress(b"".join(records)))
    damaged[12:16] = b"\xff\xff\xff\xff"
    path.write_bytes(bytes(damaged))
    capsys.readouterr()
    assert cli("warcimport", path, "-crawlId", "d", *defines(tmp_path, "sqlite")) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "is gzip data that cannot be decompressed" in err[0], err


def test_a_target_uri_with_its_scheme_in_capitals_is_an_http_response(tmp_path: Path) -> None:
    """warcio reads HTTP headers only for a URI starting with lower-case http: or https:, so a record of
    HTTP://A.EXAMPLE.COM/ (schemes are case-insensitive, RFC 3986) was skipped as not_http."""
    path = tmp_path / "caps.warc"
    path.write_bytes(response("HTTP://A.EXAMPLE.COM/Page") + response("Https://a.example.com/2"))
    urls, reader = read(path)
    assert urls == ["HTTP://A.EXAMPLE.COM/Page", "Https://a.example.com/2"] and not reader.skipped


@pytest.mark.parametrize("date", ["yesterday", "", "2024-13-45T99:99:99Z", "99999-01-01T00:00:00Z"])
def test_a_response_without_a_valid_date_is_counted_as_such(tmp_path: Path, date: str) -> None:
    """A response whose WARC-Date is missing or no date was counted not_http: the user looked for a scheme or
    status line problem in a file whose records were all HTTP."""
    bad = response("http://a.example.com/1").replace(b"WARC-Date: 2024-01-02T03:04:05Z", f"WARC-Date: {date}".encode())
    path = tmp_path / "date.warc"
    path.write_bytes(bad + response("http://a.example.com/2"))
    urls, reader = read(path)
    assert urls == ["http://a.example.com/2"] and reader.skipped == {"bad_date": 1}, reader.skipped
