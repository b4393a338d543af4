"""WARC/1.1 (ISO 28500) with warcio: rows written as request, response (or revisit) and metadata records, and the
response records of any WARC read back as fetched pages. No record is written or parsed by hand.

Writing (`WarcFileWriter`): gzipped files, one gzip member per record, a warcinfo record first; each file is written
as `<name>.open`, indexed into `<name>.cdxj` (nutch2/archive/cdxj.py) once it is complete and synced, then renamed
to `<name>`, so a file with a final name is always whole (and indexed); only then are the rows told what it holds
(`on_complete`); a new file is started once one holds the size limit. A response record carries the stored body
(the body as the protocol decoded it) with the stored headers; since the payload is no longer gzip- or
chunk-encoded, `Content-Encoding` and `Transfer-Encoding` become `X-Crawler-Content-Encoding` /
`X-Crawler-Transfer-Encoding` and a `Content-Length` that no longer fits becomes `X-Crawler-Content-Length` beside
the true one, as Common Crawl does. Reading (`WarcReader`) turns these back.

Revisits: a row remembers the last response record written for its content (`Capture`, in the row's metadata under
CAPTURE_KEY). A row whose content has that payload digest again, and whose capture is in a complete file the export
may refer to, becomes a revisit record (no payload) that refers to it: the identical-payload-digest profile for a
page fetched again, server-not-modified for a 304.

Reading: response records with an http(s) target and an HTTP status line; the payload is decoded (chunked
transfer coding, gzip/deflate/br content coding) by warcio and kept up to http.content.limit, as a fetch would.
A body cut short is kept and marked truncated, as the fetcher marks one (WARC-Truncated's words: "length" when
http.content.limit cut it; the record's own WARC-Truncated; "disconnect" when the payload is shorter than its HTTP
Content-Length, a capture whose connection ended early). Other records and records the file ends inside are
counted and skipped.
"""

from __future__ import annotations

import base64
import hashlib
import io
import ipaddress
import json
import os
import re
import zlib
from collections import Counter
from collections.abc import Callable, Generator, Iterator
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from http import HTTPStatus
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from nutch2 import __version__
from nutch2.archive.cdxj import record_line, write_file_index
from nutch2.durable import sync_folder
from nutch2.errors import ConfigError, NutchError
from nutch2.fetch.headers import header_block_problem
from nutch2.logs import counted
from nutch2.marks import Mark
from nutch2.rowkeys import CAPTURE_KEY, IP_KEY, TRUNCATED_KEY
from nutch2.status import CrawlStatus, ProtocolStatusCode
from nutch2.webpage import WebPage

__all__ = ["IP_KEY", "ArchivedResponse", "Capture", "WarcFileWriter", "WarcReader", "fetched_at", "inputs_digest",
           "complete_files", "page_records", "payload_digest", "require_warcio", "restore_headers", "stale_files",
           "warcinfo"]

OPEN_SUFFIX = ".open"
CDXJ_SUFFIX = ".cdxj"
IDENTICAL = "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest"
NOT_MODIFIED = "http://netpreserve.org/warc/1.1/revisit/server-not-modified"
_VALIDATORS = ("etag", "last-modified")  # what a 304 confirms, kept in its revisit record
_RENAMED = ("content-encoding", "transfer-encoding")
_CRAWLER = "X-Crawler-"
_CHUNK = 1 << 16
# the first line of a CDX index (its legend) or of a CDX/CDXJ one (a SURT key and a 14-digit time stamp)
_INDEX_LINE = re.compile(rb" ?CDX [ A-Za-z]+\r?\n|[a-z0-9,.:\[\]-]+\)\S* \d{14} ")


def require_warcio() -> None:
    """warcio is an extra: a clear line when it is missing."""
    try:
        import warcio  # noqa: F401
    except ImportError:
        raise ConfigError("WARC support needs warcio: pip install 'nutch2[warc]'") from None


@dataclass(frozen=True, slots=True)
class Capture:
    """The last response record `nutch2 warc` wrote for a row's content: what a revisit of the same payload refers
    to. Kept in the row's metadata (CAPTURE_KEY) once the file holding the record is complete."""

    digest: str  # WARC-Payload-Digest
    record_id: str  # WARC-Record-ID
    uri: str  # WARC-Target-URI
    date: str  # WARC-Date
    folder: str  # the export's OUTDIR, resolved
    file: str  # the WARC file's name in it

    def encode(self) -> bytes:
        return json.dumps(asdict(self), separators=(",", ":")).encode("utf-8")

    @staticmethod
    def of(page: WebPage) -> Capture | None:
        """The row's capture; None when it has none (or an unreadable one: then the next export writes a
        response)."""
        raw = page.metadata.get(CAPTURE_KEY)
        if not raw:
            return None
        try:
            return Capture(**json.loads(raw))
        except (ValueError, TypeError):
            return None


def payload_digest(content: bytes) -> str:
    """WARC-Payload-Digest of a body, as warcio writes it: sha1, base32."""
    return "sha1:" + base64.b32encode(hashlib.sha1(content).digest()).decode("ascii")


# ---------------------------------------------------------------------------------------------------- writing
def fetched_at(page: WebPage) -> int:
    """When the row's content was fetched (ms): its fetch time while it carries the fetch mark; after updatedb,
    whose schedule moved the fetch time one interval ahead, that time minus the interval (exact for the default
    schedule; the adaptive one may also have shifted it)."""
    if Mark.FETCH.check(page) is not None:
        return page.fetch_time
    return page.fetch_time - page.fetch_interval * 1000


def warcinfo(crawl_id: str, agent: str, description: str) -> dict[str, str]:
    """The fields of a file's warcinfo record."""
    return {
        "software": f"nutch2/{__version__} (warcio)",
        "format": "WARC File Format 1.1",
        "conformsTo": "https://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/",
        "isPartOf": crawl_id,
        "description": description,
        "http-header-user-agent": agent,
        "robots": "classic",
    }


def warc_date(ms: int) -> str:
    """WARC/1.1 date with microseconds (ms precision here)."""
    dt = datetime.fromtimestamp(ms / 1000, UTC)
    return dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{dt.microsecond:06d}Z"


def _ip(page: WebPage, url: str) -> str | None:
    """The server's address when known: kept from an imported record, or the host itself when it is an IP."""
    raw = page.metadata.get(IP_KEY)
    if raw:
        return raw.decode("ascii", "replace")
    host = urlsplit(url).hostname or ""
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return None
    return host


def _response_headers(headers: dict[str, str], length: int) -> list[tuple[str, str]]:
    """The stored headers for a decoded body of `length` bytes (see the module docstring)."""
    out: list[tuple[str, str]] = []
    for name, value in headers.items():
        low = name.lower()
        if low in _RENAMED or (low == "content-length" and value.strip() != str(length)):
            out.append((_CRAWLER + name, value))
        elif low != "content-length":
            out.append((name, value))
    out.append(("Content-Length", str(length)))
    return out


def http_status(page: WebPage) -> int | None:
    """The HTTP status of the answer a row keeps, None when it keeps none (robots denied, a connection failure).
    A redirect's code is not stored: 301 for a permanent one (REDIR_PERM), 302 for a temporary one."""
    ps, status = page.protocol_status, page.status
    if status == CrawlStatus.NOTMODIFIED:
        return 304
    if status in (CrawlStatus.FETCHED, CrawlStatus.DUPLICATE) or ps.code == ProtocolStatusCode.SUCCESS:
        return 200
    if status in (CrawlStatus.REDIR_PERM, CrawlStatus.REDIR_TEMP):
        return 301 if status == CrawlStatus.REDIR_PERM else 302
    code = ps.args[0] if ps.args else ""
    return int(code) if code.isdigit() and 100 <= int(code) <= 599 else None


def _status_line(code: int) -> str:
    try:
        return f"{code} {HTTPStatus(code).phrase}"
    except ValueError:
        return str(code)


def page_records(builder: Any, page: WebPage, url: str, request_headers: list[tuple[str, str]],
                 refers: Capture | None = None) -> list[Any]:
    """The request, response and metadata records of a fetched row (`builder`: a warcio RecordBuilder). A body the
    fetch cut at http.content.limit is marked WARC-Truncated: length. With `refers` (the capture of the same
    payload), a revisit record without payload takes the response's place: the headers of the new response, or of
    a 304 (a NOTMODIFIED row) rebuilt from the validators it confirmed."""
    from warcio.statusandheaders import StatusAndHeaders

    date = warc_date(fetched_at(page))
    common = {"WARC-Date": date}
    ip = _ip(page, url)
    if ip:
        common["WARC-IP-Address"] = ip
    content = page.content or b""
    warc_headers = {**common, "WARC-Payload-Digest": payload_digest(content)}
    if refers is None:
        code = http_status(page) or 200
        line = _status_line(200 if code == 304 else code)  # a 304 without its capture: the page it confirmed
        http = StatusAndHeaders(line, _response_headers(dict(page.headers), len(content)), protocol="HTTP/1.1")
        if cut := page.metadata.get(TRUNCATED_KEY):  # why (rows from before the reason was kept: b"y")
            known = bytes(cut) in (b"length", b"time", b"disconnect")
            warc_headers["WARC-Truncated"] = bytes(cut).decode() if known else "unspecified"
        response = builder.create_warc_record(url, "response", payload=io.BytesIO(content), length=len(content),
                                              http_headers=http, warc_headers_dict=warc_headers)
    else:
        response = revisit_record(builder, page, url, refers, warc_headers)
    response_id = response.rec_headers.get_header("WARC-Record-ID")
    parts = urlsplit(url)
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    req_http = StatusAndHeaders(f"GET {target} HTTP/1.1", [("Host", parts.netloc), *request_headers],
                                is_http_request=True)
    request = builder.create_warc_record(url, "request", http_headers=req_http,
                                         warc_headers_dict={**common, "WARC-Concurrent-To": response_id})
    fields = _metadata_fields(page).encode("utf-8")
    metadata = builder.create_warc_record(url, "metadata", payload=io.BytesIO(fields), length=len(fields),
                                          warc_content_type="application/warc-fields",
                                          warc_headers_dict={"WARC-Date": date, "WARC-Refers-To": response_id})
    return [request, response, metadata]


def revisit_record(builder: Any, page: WebPage, url: str, refers: Capture, warc_headers: dict[str, str]) -> Any:
    """A revisit record of the row's fetch that refers to `refers` (see page_records)."""
    from warcio.statusandheaders import StatusAndHeaders

    content = page.content or b""
    if page.status == CrawlStatus.NOTMODIFIED:
        kept = [(n, v) for n, v in page.headers.items() if n.lower() in _VALIDATORS]
        http = StatusAndHeaders("304 Not Modified", kept, protocol="HTTP/1.1")
    else:
        http = StatusAndHeaders("200 OK", _response_headers(dict(page.headers), len(content)), protocol="HTTP/1.1")
    headers = {k: v for k, v in warc_headers.items() if k != "WARC-Payload-Digest"}
    headers["WARC-Refers-To"] = refers.record_id
    record = builder.create_revisit_record(url, refers.digest, refers.uri, refers.date, http_headers=http,
                                           warc_headers_dict=headers)
    if page.status == CrawlStatus.NOTMODIFIED:
        record.rec_headers.replace_header("WARC-Profile", NOT_MODIFIED)
    return record


def _metadata_fields(page: WebPage) -> str:
    """The row's crawl state as warc-fields: status, protocol status, fetch time, signature, score, outlinks."""
    ps = page.protocol_status
    try:
        status = CrawlStatus(page.status).name
    except ValueError:
        status = str(page.status)
    lines = [f"nutch-status: {status}", f"protocol-status: {ps.name}",
             f"fetch-time-ms: {fetched_at(page)}", f"fetch-interval: {page.fetch_interval}", f"score: {page.score!r}"]
    if page.signature:
        lines.append(f"signature: {page.signature.hex()}")
    if page.modified_time:
        lines.append(f"modified-time-ms: {page.modified_time}")
    lines += [f"outlink: {_one_line(link)}" for link in page.outlinks]
    return "".join(line + "\r\n" for line in lines)


def _one_line(text: str) -> str:
    return text.replace("\r", " ").replace("\n", " ")


class WarcFileWriter:
    """Rotated gzipped WARC/1.1 files `<prefix>-<task>-<n>.warc.gz` in a folder (see the module docstring).
    `on_complete(name, items)` is called once a file has its final name, with the items given to write() for it."""

    def __init__(self, folder: Path, prefix: str, task: int, max_bytes: int, info: dict[str, str],
                 cdxj: bool = False, on_complete: Callable[[str, list[Any]], None] | None = None) -> None:
        self.folder = folder
        self.prefix = prefix
        self.task = task
        self.max_bytes = max(1, max_bytes)
        self.info = info
        self.cdxj = cdxj
        self.on_complete = on_complete
        self.files: list[str] = []
        self._seq = 0
        self._file: io.BufferedWriter | None = None
        self._writer: Any = None
        self._path: Path | None = None
        self._items: list[Any] = []
        self._lines: list[str] = []  # the open file's CDXJ lines
        self._name = ""
        from warcio.recordbuilder import RecordBuilder

        self.builder = RecordBuilder(warc_version="1.1")  # builds the records; _writer writes them

    def write(self, records: list[Any], item: Any = None) -> None:
        """Write one row's records (and keep `item` for on_complete); close the file once it holds max_bytes."""
        if self._file is None:
            self._open()
        assert self._file is not None
        for record in records:
            offset = self._file.tell()
            self._writer.write_record(record)
            if self.cdxj and (line := record_line(record, offset, self._file.tell() - offset, self._name)):
                self._lines.append(line)
        if item is not None:
            self._items.append(item)
        if self._file.tell() >= self.max_bytes:
            self.close()

    def _open(self) -> None:
        from warcio.warcwriter import WARCWriter

        name = self._name = f"{self.prefix}-{self.task:05d}-{self._seq:05d}.warc.gz"
        self._seq += 1
        self._path = self.folder / (name + OPEN_SUFFIX)
        self._file = open(self._path, "wb")  # noqa: SIM115 - closed by close() or abort()
        self._writer = WARCWriter(self._file, gzip=True, warc_version="1.1")
        self._writer.write_record(self.builder.create_warcinfo_record(name, self.info))

    def close(self) -> None:
        """Finish the open file: flush, sync, index it, give it its final name, then hand on its items."""
        if self._file is None or self._path is None:
            return
        self._file.flush()
        os.fsync(self._file.fileno())
        self._file.close()
        final = self._path.with_name(self._path.name.removesuffix(OPEN_SUFFIX))
        if self.cdxj:
            write_file_index(self._path, final.name, self._lines)
        self._lines = []
        os.replace(self._path, final)
        sync_folder(self.folder)  # the new name is durable before anything refers to it
        self.files.append(final.name)
        self._file = self._path = None
        items, self._items = self._items, []
        if self.on_complete is not None:
            self.on_complete(final.name, items)

    def abort(self) -> None:
        """Drop the open file (the task failed): no half file is left under either name."""
        if self._file is not None and self._path is not None:
            self._file.close()
            self._path.unlink(missing_ok=True)
        self._file = self._path = None
        self._items, self._lines = [], []


def stale_files(folder: Path, prefix: str) -> list[Path]:
    """The files an earlier run of the same export left in `folder` (complete or not, with their indexes)."""
    if not folder.is_dir():
        return []
    suffixes = "|".join(re.escape(s) for s in (OPEN_SUFFIX, CDXJ_SUFFIX, CDXJ_SUFFIX + OPEN_SUFFIX))
    ours = re.compile(re.escape(prefix) + r"-\d{5}-\d{5}\.warc\.gz(" + suffixes + ")?")
    return sorted(p for p in folder.iterdir() if ours.fullmatch(p.name))


def complete_files(folder: Path) -> list[Path]:
    """The complete WARC files in `folder` (every export's), by name."""
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if p.name.endswith(".warc.gz") and p.is_file())


# ---------------------------------------------------------------------------------------------------- reading
@dataclass(slots=True)
class ArchivedResponse:
    """One HTTP response read from a WARC file, as a fetch would have given it."""

    url: str
    status: int
    headers: dict[str, str]
    content: bytes
    date_ms: int
    cut: str = ""  # why the body is truncated (WARC-Truncated's words, as the fetcher's ProtocolOutput.cut); "" whole
    ip: str | None = None
    key: str = ""  # the row key, set by the importer once the URL is normalized


class NotAWarc(NutchError):
    """A file an export writes beside its WARC files (a CDX(J) index, a WACZ): `warcimport warc/*` skips it."""


class WarcReader:
    """Reads the HTTP responses of WARC files; `skipped` counts the records passed over, by reason."""

    def __init__(self, content_limit: int) -> None:
        self.content_limit = content_limit
        self.skipped: Counter[str] = Counter()
        self.errors: list[str] = []  # files that broke off where warcio could not read on

    @staticmethod
    def check(path: Path) -> None:
        """Fail with one line unless `path` is a readable WARC (or ARC) file: its first record is read."""
        from warcio.archiveiterator import ArchiveIterator
        from warcio.exceptions import ArchiveLoadFailed

        if not path.is_file():
            raise NutchError(f"{path} is not a file; give WARC files (.warc or .warc.gz)")
        head = b""
        try:
            with open(path, "rb") as f:
                head = f.read(512)
                if not head:
                    raise NutchError(f"{path} is empty (a failed download or copy?); give WARC files")
                if head.startswith(b"PK\x03\x04"):  # what warcio would call an archive of unknown format
                    raise NotAWarc(f"{path} is a ZIP file (a WACZ?), not a WARC file; unzip it and import the "
                                   "WARC files of its archive/ folder")
                if _INDEX_LINE.match(head):
                    raise NotAWarc(f"{path} is a CDX or CDXJ index, not a WARC file; import the WARC files it "
                                   "indexes")
                f.seek(0)
                next(iter(_records(ArchiveIterator(f))), None)
        except (ArchiveLoadFailed, OSError, ValueError, EOFError) as e:
            if head.startswith(b"\x1f\x8b"):  # warcio says "first line: [the compressed bytes]"
                raise NutchError(f"{path} is gzip data that cannot be decompressed (damaged, or cut at its start?)"
                                 "; give WARC files") from None
            raise NutchError(f"{path} is not a readable WARC file ({_short(e)})") from None

    def responses(self, path: Path) -> Iterator[ArchivedResponse]:
        """The HTTP responses of one file, in order; a file damaged past repair ends there (counted, said in
        `errors`)."""
        with open(path, "rb") as f:
            read = yield from self._read(path, f, os.fstat(f.fileno()).st_size)
        if read is not None:  # one gzip stream for the whole file (`gzip x.warc`), not one member per record:
            with open(path, "rb") as f:  # warcio reads past its first record only once it is decompressed
                stream = _Gunzipped(f)
                problems = self._problems()
                yield from self._read(path, io.BufferedReader(stream), None, read)
                if stream.damaged and self._problems() == problems:
                    self.skipped["unreadable"] += 1
                    self.errors.append(f"{path}: damaged gzip data after its last readable record ({stream.damaged}); "
                                       "the rest of the file is skipped")
                elif not stream.complete and self._problems() == problems:
                    self._cut_short(path)

    def _read(self, path: Path, f: Any, size: int | None, skip: int = 0) -> Generator[ArchivedResponse, None,
                                                                                     int | None]:
        """The responses of the open file `f` (of `size` bytes when known) after its first `skip` records; the
        number of records read when the file turns out to be one gzip stream (then read it decompressed), else
        None."""
        from warcio.archiveiterator import ArchiveIterator
        from warcio.exceptions import ArchiveLoadFailed

        iterator = _records(ArchiveIterator(f, arc2warc=True))
        records = iter(iterator)
        problems = self._problems()
        n = 0
        while True:
            try:
                record = next(records, None)
                if record is None:
                    if iterator.err_count:
                        self.errors.append(f"{path}: {counted(iterator.err_count, 'record')} not followed by the "
                                           "blank lines that end a WARC record (a wrong Content-Length?); the line "
                                           "after each was passed over")
                    if size is not None:
                        self._check_end(path, iterator.offset, size)
                    if iterator.gzip_cut and self._problems() == problems:  # cut where a record ends
                        self._cut_short(path)
                    return None
                n += 1
                if n <= skip:
                    continue
                length = (record.rec_headers.get_header("Content-Length") or "").strip()
                if record.format == "warc" and not length.isdigit():  # mandatory; warcio reads a bad one as 0
                    self.skipped["truncated"] += 1
                    self.errors.append(f"{path}: the record at offset {iterator.offset} has no valid "
                                       "Content-Length: the file ends inside its headers (a cut download or "
                                       "copy?), or the record is damaged; it is skipped")
                    _drain(record.raw_stream)
                    continue
                response = self._response(record)
                _drain(record.raw_stream)
            except (ArchiveLoadFailed, OSError, ValueError, EOFError) as e:
                if size is not None and "non-chunked gzip" in str(e):
                    return n
                self.skipped["unreadable"] += 1
                self.errors.append(f"{path}: damaged after its last readable record ({_short(e)}); the rest "
                                   "of the file is skipped")
                return None
            if getattr(record.raw_stream, "limit", 0):  # the file ends inside this record, whatever its type
                self.skipped["truncated"] += 1
                self.errors.append(f"{path}: the file ends inside the record at offset {iterator.offset} (a cut "
                                   "download or copy?); it is skipped")
            elif isinstance(response, str):
                self.skipped[response] += 1
            else:
                yield response

    def _problems(self) -> int:
        return self.skipped["truncated"] + self.skipped["unreadable"]

    def _cut_short(self, path: Path) -> None:
        self.skipped["truncated"] += 1
        self.errors.append(f"{path}: its gzip data is cut short (a cut download or copy?); the records before the "
                           "cut are read")

    def _check_end(self, path: Path, offset: int, size: int) -> None:
        """Bytes after the last whole record: the file ends inside a record (a cut download or copy)."""
        if offset < size:
            self.skipped["truncated"] += 1
            self.errors.append(f"{path}: the file ends inside a record (the {size - offset} bytes after offset "
                               f"{offset} are not a whole record); it is skipped")

    def _response(self, record: Any) -> ArchivedResponse | str:
        """The record as a response, or the reason it is skipped (a counter's name)."""
        from warcio.timeutils import iso_date_to_datetime

        if record.rec_type != "response":
            return "not_response"
        url = (record.rec_headers.get_header("WARC-Target-URI") or "").strip().strip("<>")
        http = record.http_headers
        if not url.lower().startswith(("http://", "https://")) or http is None \
                or not (http.protocol or "").upper().startswith("HTTP/"):
            return "not_http"
        try:
            status = int(http.get_statuscode())
        except (TypeError, ValueError, AttributeError):
            return "not_http"
        try:  # the fetch time of the row: a record without one is no fetch to record
            date_ms = int(iso_date_to_datetime(record.rec_headers.get_header("WARC-Date"), tz_aware=True)
                          .timestamp() * 1000)
        except (TypeError, ValueError, AttributeError, OverflowError):
            return "bad_date"
        if header_block_problem(http.headers) is not None:  # what the fetcher would have refused
            return "headers_too_large"
        try:
            content, limited = self._payload(record)
        except Exception:  # noqa: BLE001 - a payload whose coding is broken: skip the record, not the file
            return "bad_payload"
        cut = "length" if limited else _warc_truncated(record) or _short_payload(record, status)
        return ArchivedResponse(url, status, restore_headers(http.headers), content, date_ms, cut,
                                record.rec_headers.get_header("WARC-IP-Address"))

    def _payload(self, record: Any) -> tuple[bytes, bool]:
        """The decoded body, up to http.content.limit (-1: all); the rest of the record is read and dropped."""
        stream = record.content_stream()
        limit = self.content_limit
        buf = bytearray()
        while limit < 0 or len(buf) <= limit:
            chunk = stream.read(_CHUNK)
            if not chunk:
                break
            buf += chunk
        cut = 0 <= limit < len(buf)
        if cut:
            del buf[limit:]
        _drain(record.raw_stream)
        return bytes(buf), cut


_CUTS = ("length", "time", "disconnect", "unspecified")  # WARC-Truncated's reasons (WARC 1.1, 5.13)


def _warc_truncated(record: Any) -> str:
    """The record's WARC-Truncated reason ("unspecified" for one not in the standard), "" when it has none."""
    value = (record.rec_headers.get_header("WARC-Truncated") or "").strip().lower()
    return "" if not value else value if value in _CUTS else "unspecified"


def _short_payload(record: Any, status: int) -> str:
    """"disconnect" when the record's HTTP payload is shorter than the Content-Length of its HTTP headers (as
    stored in the WARC, before restore_headers: the length of the bytes the record carries), "" otherwise. A
    chunked payload has no such length; 1xx, 204 and 304 answers carry no body whatever their headers say."""
    http = record.http_headers
    if status < 200 or status in (204, 304) or record.payload_length is None or record.payload_length < 0:
        return ""
    if "chunked" in (http.get_header("Transfer-Encoding") or "").lower():
        return ""
    length = (http.get_header("Content-Length") or "").strip()
    return "disconnect" if length.isdigit() and int(length) > record.payload_length else ""


class _Gunzipped(io.RawIOBase):
    """A file that is one gzip stream, decompressed as far as its data goes: a cut file ends where its data ends
    (`complete` tells), where GzipFile raises EOFError and warcio then reads no record at all."""

    def __init__(self, raw: Any) -> None:
        self.raw = raw
        self._z = zlib.decompressobj(31)
        self._buf = b""
        self.damaged = ""  # why the data could not be decompressed past some point

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        while not self._buf:
            data = self._z.unconsumed_tail
            if not data and self._z.eof:  # another gzip stream may follow (`cat a.warc.gz b.warc.gz`)
                data = self._z.unused_data or self.raw.read(_CHUNK)
                if not data:
                    break
                self._z = zlib.decompressobj(31)
            elif not data:
                data = self.raw.read(_CHUNK)
                if not data:
                    break
            try:
                self._buf = self._z.decompress(data, _CHUNK)  # bounded: a gzip bomb is read a chunk at a time
            except zlib.error as e:  # an end here, said after the records before it are read (an exception
                self.damaged = str(e)  # would lose what the buffered reader holds)
                break
        n = min(len(b), len(self._buf))
        b[:n] = self._buf[:n]
        self._buf = self._buf[n:]
        return n

    @property
    def complete(self) -> bool:
        return self._z.eof


def _records(iterator: Any) -> Any:
    """warcio's iterator, made to pass over a record without WARC-Target-URI (a response or request record
    missing it, as hand-made or broken tools write) as one without HTTP headers: warcio raises AttributeError
    there, which ends its iteration, so every record after it in the file would be lost; and to read the HTTP
    headers of a URI whose scheme is in capitals (HTTP://), which it takes for no HTTP record."""
    loader = iterator.loader
    load = loader.load_http_headers
    loader.load_http_headers = lambda rec_type, uri, stream, length: load(rec_type, (uri or "").lower(), stream,
                                                                          length)  # and HTTP:// is http://
    # and writes nothing to stderr for a record not followed by its blank lines (4 lines each, warcio's; the
    # reader says how many in one), and tells whether the gzip member it read last was cut short (its end not
    # reached), which warcio takes for the end of the file
    iterator.INC_RECORD = ""
    iterator.gzip_cut = False
    reader = iterator.reader
    close = reader.close_decompressor

    def close_decompressor() -> None:
        if reader.decompressor is not None and not getattr(reader.decompressor, "eof", True):
            iterator.gzip_cut = True
        close()

    reader.close_decompressor = close_decompressor
    return iterator


def _drain(stream: Any) -> None:
    while stream.read(_CHUNK):
        pass


def restore_headers(pairs: list[tuple[str, str]]) -> dict[str, str]:
    """HTTP headers as a fetch stores them: repeated names joined with ", " (as requests does) and the
    X-Crawler-* names of an export (ours, Common Crawl's) back to what the server sent."""
    merged: dict[str, str] = {}
    names: dict[str, str] = {}
    for name, value in pairs:
        low = name.lower()
        if low in names:
            merged[names[low]] += ", " + value
        else:
            names[low] = name
            merged[name] = value
    crawler = {n: v for n, v in merged.items() if n.lower().startswith(_CRAWLER.lower())}
    if crawler:
        if "x-crawler-content-length" in names and "content-length" in names:
            del merged[names["content-length"]]
        for name, value in crawler.items():
            del merged[name]
            merged[name[len(_CRAWLER):]] = value
    return merged


def inputs_digest(paths: list[Path]) -> str:
    """SHA-256 of the files' contents, in order: the identity of an import (its batch id)."""
    digest = hashlib.sha256()
    for path in paths:
        with open(path, "rb") as f:
            digest.update(hashlib.file_digest(f, "sha256").digest())
    return digest.hexdigest()


def _short(e: BaseException) -> str:
    return " ".join(str(e).split())[:160] or type(e).__name__
