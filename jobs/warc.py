"""WARC out and in: `nutch2 warc` (WarcExportJob) and `nutch2 warcimport` (WarcImportJob), on nutch2/archive/warc.py.

Export, map-only over the rows of a batch (its fetch mark, or after updatedb its updatedb mark) or every row:
each row that keeps an HTTP answer (a page, a redirect, an error page) becomes a request, a response and a
metadata record in the task's own rotated files in OUTDIR (written under a temporary name, indexed into
`<file>.cdxj`, renamed when complete); other rows are counted. A page (200) whose content has the payload digest
of its last capture (the response record an earlier export wrote into a file of OUTDIR that is still there,
nutch2/archive/warc.py Capture) gets a revisit record in place of the response. A row learns its new capture
only after the file holding it has its final name.

A rerun first removes what an earlier run of the same export left in OUTDIR (its files and their indexes), so its
output replaces it whole; a capture in those files counts as gone, so the rerun writes the responses the run it
replaces wrote. It refuses when OUTDIR holds a later export's files: their revisits may refer to the files it would
remove. At the end, `index.cdxj` is the merge of every file's index in OUTDIR, and with -wacz the export (and the
earlier files its revisits refer to) is packaged as a WACZ.

Import: the driver reads the files' HTTP responses (warcio), normalizes and filters their URLs, skips the second
and later response for one URL, and ships them in chunks of warc.import.chunk.mb to map tasks that write each as
a fetched row of one new batch: generate and fetch marks, status, protocol status, content, headers, fetch time
(WARC-Date) — what a fetch would have written — so parse, updatedb and index run on it. The batch id is the
inputs' digest, recorded in the journal as `importing` until every row is durable, then `fetched`: a killed import
run again continues the same batch (rows it already wrote are skipped), and importing the same files again is a
no-op that prints the same id.
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urljoin

from nutch2 import failpoints
from nutch2.archive.cdxj import INDEX_NAME, require_cdxj_indexer, write_folder_index
from nutch2.archive.wacz import HTML_TYPES, Page, check_target, require_wacz, write_wacz
from nutch2.archive.warc import (
    ArchivedResponse,
    Capture,
    WarcFileWriter,
    WarcReader,
    complete_files,
    http_status,
    inputs_digest,
    page_records,
    payload_digest,
    require_warcio,
    stale_files,
    warcinfo,
)
from nutch2.config import Configuration
from nutch2.crawldb import lifecycle
from nutch2.crawldb.journal import Journal
from nutch2.crawldb.scoring import ScoringFilters
from nutch2.errors import ConfigError, NutchError
from nutch2.fetch.agent import user_agent
from nutch2.fetch.headers import http_date_ms, stored_headers
from nutch2.logs import counted
from nutch2.mapred.job import Counters, Job, TaskContext
from nutch2.mapred.runner import Runner
from nutch2.marks import Mark, set_distance
from nutch2.rowkeys import CAPTURE_KEY, IP_KEY, TRUNCATED_KEY
from nutch2.status import CrawlStatus, ProtocolStatusCode, http_to_protocol_status, protocol_to_crawl_status
from nutch2.stores.base import DataStore, MarkFilter
from nutch2.urls.checker import UrlChecker, choose_repr, strip_credentials
from nutch2.urls.tableutil import reverse_url, unreverse_url
from nutch2.webpage import ProtocolStatus, WebPage

log = logging.getLogger(__name__)

EXPORT_FIELDS = ("status", "content", "headers", "fetch_time", "fetch_interval", "protocol_status", "markers",
                 "metadata", "outlinks", "signature", "score", "modified_time", "title", "content_type")
IMPORT_FIELDS = ("markers", "metadata", "fetch_time")


# ---------------------------------------------------------------------------------------------------- export
@dataclass(frozen=True)
class ExportOptions:
    """What an export writes besides the records: revisits, CDXJ indexes, the WACZ's page list."""

    revisits: bool = True
    cdxj: bool = True
    pages: bool = False


class WarcExportJob(Job):
    """Map-only: each task writes its rows into its own rotated WARC files."""

    name = "warc"
    fields = EXPORT_FIELDS

    def __init__(self, conf: Configuration, out_dir: Path, prefix: str, max_bytes: int,
                 mark: MarkFilter | None, description: str, kept: frozenset[str] = frozenset(),
                 options: ExportOptions = ExportOptions()) -> None:
        super().__init__(conf)
        require_warcio()
        self.out_dir = out_dir
        self.folder = str(out_dir.resolve())
        self.prefix = prefix
        self.max_bytes = max_bytes
        self.mark = mark
        self.kept = kept  # the complete files of OUTDIR a revisit may refer to
        self.options = options
        self.files: list[str] = []
        self.referred: set[str] = set()  # the files this export's revisits refer to
        self.pages: list[Page] = []
        agent = user_agent(conf)
        self.info = warcinfo(prefix, agent, description)
        self.request_headers = [("User-Agent", agent), ("Accept", conf.get_str("http.accept")),
                                ("Accept-Language", conf.get_str("http.accept.language")),
                                ("Accept-Encoding", "gzip, deflate")]

    def mark_filter(self) -> MarkFilter | None:
        return self.mark

    def map_setup(self, ctx: TaskContext) -> None:
        self.ctx = ctx
        self.writer = WarcFileWriter(self.out_dir, self.prefix, ctx.task, self.max_bytes, self.info,
                                     cdxj=self.options.cdxj, on_complete=self._captured)

    def map(self, page: WebPage, ctx: TaskContext) -> Iterable[tuple[Any, Any]]:
        if http_status(page) is None:  # no answer kept (not fetched, robots denied, a connection failure)
            ctx.incr("skipped_not_fetched")
        elif page.content is None:
            ctx.incr("skipped_no_content")
        else:
            self._export(page, ctx)
            ctx.incr("exported")
            failpoints.reach("warc.record")
        return ()

    def _export(self, page: WebPage, ctx: TaskContext) -> None:
        url = unreverse_url(page.key)
        digest = payload_digest(page.content or b"")
        code = http_status(page)
        page_answer = code in (200, 304)  # a redirect or an error page: archived, neither revisited nor a page
        refers = self._refers(page, digest) if page_answer else None
        records = page_records(self.writer.builder, page, url, self.request_headers, refers)
        headers = records[1].rec_headers
        item = None
        if refers is None:
            if page_answer:  # the capture a later export's revisit may refer to
                item = (page.key, dict(page.metadata), digest, headers.get_header("WARC-Record-ID"), url,
                        headers.get_header("WARC-Date"))
            ctx.incr("responses")
        else:
            self.referred.add(refers.file)
            ctx.incr("revisits")
            ctx.incr("revisit_payload_bytes", len(page.content or b""))
        self.writer.write(records, item)
        mime = (page.content_type or "").split(";")[0].strip().lower()
        if self.options.pages and page_answer and mime in HTML_TYPES:
            # a 304's revisit replays as the 304 it was: the page to show is the capture it confirmed
            shown = refers.date if refers is not None and page.status == CrawlStatus.NOTMODIFIED else None
            self.pages.append(Page(url, shown or headers.get_header("WARC-Date"), page.title or None))

    def _refers(self, page: WebPage, digest: str) -> Capture | None:
        """The row's last capture when a revisit may refer to it: the same payload, in a complete file of OUTDIR
        that this export does not replace."""
        if not self.options.revisits:
            return None
        capture = Capture.of(page)
        if capture is None or capture.digest != digest or capture.folder != self.folder \
                or capture.file not in self.kept:
            return None
        return capture

    def _captured(self, name: str, items: list[Any]) -> None:
        """A file has its final name: its responses become their rows' captures."""
        failpoints.reach("warc.file")
        for key, metadata, digest, record_id, url, date in items:
            row = WebPage.from_store(key, {"metadata": metadata})
            row.metadata[CAPTURE_KEY] = Capture(digest, record_id, url, date, self.folder, name).encode()
            self.ctx.store.put(key, row)
        self.ctx.store.flush()
        failpoints.reach("warc.captured")

    def map_cleanup(self, ctx: TaskContext) -> None:
        if sys.exc_info()[0] is None:
            self.writer.close()
        else:  # a failed task leaves no file behind
            self.writer.abort()

    def result(self, ctx: TaskContext) -> Any:
        return self.writer.files, self.referred, self.pages

    def finish(self, results: list[Any], ctx: TaskContext) -> None:
        self.files = sorted(name for names, _, _ in results for name in names)
        self.referred = {name for _, referred, _ in results for name in referred}
        self.pages = [page for _, _, pages in results for page in pages]


def export(conf: Configuration, store: DataStore, out_dir: Path, batch: str | None, crawl_id: str | None,
           max_mb: float, runner: Runner, cdxj: bool = True, wacz: Path | None = None) -> tuple[Counters, list[str]]:
    """Export a batch's fetched rows (or every row's, with -all) into `out_dir`, with their CDXJ indexes and (wacz)
    a WACZ package; the counters and the files."""
    if max_mb <= 0:
        raise ConfigError(f"-maxSize {max_mb:g} must be > 0 (MB per WARC file)")
    if out_dir.exists() and not out_dir.is_dir():
        raise NutchError(f"{out_dir} is a file; give a folder for the WARC files")
    if cdxj or wacz is not None:
        require_cdxj_indexer()
    if wacz is not None:
        require_wacz()
        check_target(wacz)
    mark = None if batch is None else _batch_mark(store, batch)
    prefix = f"{crawl_id or 'webpage'}-{'all' if batch is None else batch}"
    description = f"nutch2 crawl {crawl_id or 'webpage'}, " + ("every row" if mark is None else f"batch {batch}")
    out_dir.mkdir(parents=True, exist_ok=True)
    stale = stale_files(out_dir, prefix)
    _check_not_referred(out_dir, stale)
    for path in stale:  # what an earlier (killed or finished) run of this export wrote: replaced whole
        path.unlink()
    if stale:
        log.info(f"warc: removed {counted(len(stale), 'file')} of an earlier run of this export from {out_dir}")
    kept = frozenset(p.name for p in complete_files(out_dir))
    options = ExportOptions(revisits=conf.get_bool("warc.export.revisits"), cdxj=cdxj, pages=wacz is not None)
    job = WarcExportJob(conf, out_dir, prefix, int(max_mb * 1024 * 1024), mark, description, kept, options)
    counters = runner.run(job, store)
    index = out_dir / INDEX_NAME
    if cdxj:
        indexed = complete_files(out_dir)
        _, lines = write_folder_index(out_dir, indexed)
        log.info(f"warc: {INDEX_NAME} lists {counted(lines, 'record')} of {counted(len(indexed), 'file')}")
    elif index.exists():
        index.unlink()  # it would not list this export's files
        log.info(f"warc: removed {INDEX_NAME}, which would not list this export (-noCdxj)")
    if wacz is not None:
        warcs = [out_dir / name for name in sorted(job.referred)] + [out_dir / name for name in job.files]
        listed = write_wacz(wacz, warcs, job.pages, description)
        log.info(f"warc: {wacz.name}: {counted(len(warcs), 'WARC file')} ({len(job.referred)} of earlier exports), "
                 f"{counted(listed, 'page')}")
        counters.incr("wacz_pages", listed)
    return counters, job.files


def _check_not_referred(out_dir: Path, stale: list[Path]) -> None:
    """Refuse to replace complete files of this export when OUTDIR holds another export's files written after them:
    their revisit records may refer to records in the files a rerun would remove."""
    ours = [p for p in stale if p.name.endswith(".warc.gz")]
    if not ours:
        return
    first = min(p.stat().st_mtime for p in ours)
    names = {p.name for p in ours}
    later = [p for p in complete_files(out_dir) if p.name not in names and p.stat().st_mtime > first]
    if later:
        raise NutchError(f"warc: {out_dir} holds {counted(len(later), 'file')} of a later export ({later[0].name}) "
                         f"whose revisit records may refer to this export's earlier files; export into another "
                         "folder, or move the later export away first")


def _batch_mark(store: DataStore, batch: str) -> MarkFilter:
    """Which mark selects a batch's fetched rows: the fetch mark until updatedb, then the updatedb mark."""
    for mark in (Mark.FETCH, Mark.UPDATEDB):
        if store.count(mark=(mark.value, batch)) > 0:
            return (mark.value, batch)
    if Journal(store).batch(batch) is None and store.count(mark=(Mark.GENERATE.value, batch)) == 0:
        raise NutchError(f"warc: no rows carry batch id {batch!r}; check the id printed by `nutch2 generate` "
                         "(or use -all)")
    return (Mark.FETCH.value, batch)  # a known batch with nothing fetched: an empty export


# ---------------------------------------------------------------------------------------------------- import
class WarcImportJob(Job):
    """Map over shipped responses: each becomes a fetched row of the import's batch."""

    name = "warcimport"

    def __init__(self, conf: Configuration, batch_id: str) -> None:
        super().__init__(conf)
        self.batch_id = batch_id
        self.chunk: list[ArchivedResponse] = []
        self.scoring = ScoringFilters.from_conf(conf)
        self.default_score = conf.get_float("db.score.injected")
        self.default_interval = conf.get_int("db.fetch.interval.default")
        self.redirect_checker = UrlChecker(conf, "fetcher")

    def inputs(self, store: DataStore, n: int) -> list[Any]:
        """The driver's current chunk, in n parts; it leaves the job here, so the tasks' copies do not carry it."""
        chunk, self.chunk = self.chunk, []
        size = max(1, -(-len(chunk) // n))
        return [chunk[i:i + size] for i in range(0, len(chunk), size)] or [[]]

    def read(self, split: list[ArchivedResponse], store: DataStore) -> Iterable[ArchivedResponse]:
        return split

    def map(self, resp: ArchivedResponse, ctx: TaskContext) -> Iterator[tuple[Any, Any]]:
        old = ctx.store.get(resp.key, list(IMPORT_FIELDS))
        if old is not None and Mark.FETCH.check(old) == self.batch_id:
            ctx.incr("already_imported")  # written by this import before it was killed
            return iter(())
        ctx.write(self._row(resp, old))
        ctx.incr("imported")
        if resp.cut:
            ctx.incr("imported_truncated")  # kept and marked, as a fetch keeps a cut body (parse.skip.truncated)
        failpoints.reach("warcimport.row")
        return iter(())

    def _row(self, resp: ArchivedResponse, old: WebPage | None) -> WebPage:
        """The row as the fetch job would have written it for this response."""
        code = http_to_protocol_status(resp.status)
        status = protocol_to_crawl_status(code) or CrawlStatus.RETRY
        args: list[str] = [] if code == ProtocolStatusCode.SUCCESS else [str(resp.status)]
        target = None
        if code in (ProtocolStatusCode.MOVED, ProtocolStatusCode.TEMP_MOVED):
            location = next((v for k, v in resp.headers.items() if k.lower() == "location"), "")
            target = self._target(resp.url, location)
            args = [target] if target else [f"{resp.status} redirect without Location"]
        if old is None:
            page = WebPage(resp.key)
            page.fetch_interval = self.default_interval
            page.score = self.default_score
            self.scoring.injected_score(resp.url, page)
            set_distance(page, 0)
            page.prev_fetch_time = 0
        else:
            page = old
            page.prev_fetch_time = old.fetch_time
        page.status = int(status)
        page.fetch_time = resp.date_ms
        last_modified = http_date_ms(next((v for k, v in resp.headers.items() if k.lower() == "last-modified"), ""))
        page.protocol_status = ProtocolStatus(int(code), args, last_modified or 0)
        if status != CrawlStatus.NOTMODIFIED:  # a 304 keeps the content of the fetch before it
            page.content = resp.content
            page.content_type = next((v for k, v in resp.headers.items() if k.lower() == "content-type"), None)
            page.headers = stored_headers(resp.headers)
            page.base_url = resp.url
            if resp.cut:  # why the body is cut, in WARC-Truncated's words (as the fetcher marks it)
                page.metadata[TRUNCATED_KEY] = resp.cut.encode()
            else:
                page.metadata.pop(TRUNCATED_KEY, None)
        if target is not None:
            page.outlinks = {target: ""}
            page.repr_url = choose_repr(resp.url, target, code == ProtocolStatusCode.TEMP_MOVED)
        if resp.ip:
            page.metadata[IP_KEY] = resp.ip.encode("ascii", "replace")
        Mark.PARSE.remove(page)  # new content: the parse of the old one no longer holds
        Mark.GENERATE.put(page, self.batch_id)
        Mark.FETCH.put(page, self.batch_id)
        page.batch_id = self.batch_id
        return page

    def _target(self, url: str, location: str) -> str | None:
        if not location.strip():
            return None
        target = self.redirect_checker.check(strip_credentials(urljoin(url, location.strip())))
        try:
            return target if target and reverse_url(target) else None
        except ValueError:
            return None


def import_id(paths: list[Path]) -> str:
    """The batch id of an import: from the digest of its files, so the same files give the same batch."""
    return "warc-" + inputs_digest(paths)[:24]


def run_import(conf: Configuration, store: DataStore, paths: list[Path], batch: str, runner: Runner,
               counters: Counters) -> None:
    """Import the HTTP responses of `paths` as the fetched batch `batch` (import_id; see the module docstring)."""
    require_warcio()
    for path in paths:
        WarcReader.check(path)
    if not lifecycle.begin_import(store, batch):
        return
    limit = int(conf.get_float("warc.import.chunk.mb") * 1024 * 1024)
    if limit <= 0:
        raise ConfigError("warc.import.chunk.mb must be > 0 (MB of records held on the driver at once)")
    job = WarcImportJob(conf, batch)
    reader = WarcReader(conf.get_int("http.content.limit"))
    checker = UrlChecker(conf, "fetcher")
    seen: set[str] = set()
    size = 0
    started = time.monotonic()
    for path in paths:
        for resp in reader.responses(path):
            counters.incr("records")
            key = _key(resp.url, checker)
            if key is None:
                counters.incr("filtered")
                continue
            if key in seen:
                counters.incr("skipped_duplicate")
                continue
            seen.add(key)
            resp.key = key
            job.chunk.append(resp)
            size += len(resp.content) + 512
            if size >= limit:
                runner.run(job, store, counters)
                size = 0
        for error in reader.errors:
            log.info(f"warcimport: {error}")
        reader.errors.clear()
    if job.chunk:
        runner.run(job, store, counters)
    for reason, n in reader.skipped.items():
        counters.incr(f"skipped_{reason}", n)
    rows = counters.get("imported") + counters.get("already_imported")
    lifecycle.end_import(store, batch, rows)
    if rows == 0:
        raise NutchError(f"no HTTP response record could be imported from {counted(len(paths), 'file')} "
                         f"({counted(counters.get('records'), 'response')} read); check that they are WARC files of a "
                         "web crawl")
    elapsed = max(time.monotonic() - started, 1e-6)
    log.info(f"warcimport: batch {batch}: {counted(rows, 'row')} in {elapsed:.1f} s ({rows / elapsed:.0f} records/s)")


def _key(url: str, checker: UrlChecker) -> str | None:
    try:
        norm = checker.check(url)
        return reverse_url(norm) if norm else None
    except ValueError:
        return None
