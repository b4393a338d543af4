"""Tools that read the table or move it in and out: readdb, warc, warcimport."""

from __future__ import annotations

import io
import logging
from dataclasses import dataclass, replace
from pathlib import Path

from nutch2.crawldb.tablestats import TableStats, record_stats
from nutch2.errors import NutchError, StoreError
from nutch2.mapred.frameworks import make_runner
from nutch2.stores import BatchLock, open_store
from nutch2.tools.args import ArgError, ToolArgs, check_batch_choice, opt, tasks_opt
from nutch2.tools.base import Run, Tool, tool
from nutch2.urls.tableutil import reverse_url

log = logging.getLogger(__name__)


# ---------------------------------------------------------------- readdb
@dataclass
class ReaddbArgs(ToolArgs):
    stats: bool = opt("-stats", "counts per status and retry, score min/avg/max (kept for the searcher)",
                      default=False)
    url: str | None = opt("-url", "print one row", metavar="URL")
    dump: Path | None = opt("-dump", "write every row as JSON Lines into DIR", metavar="DIR", api="file_out")
    sort: bool = opt("-sort", "with -stats: counts per host", default=False)
    regex: str | None = opt("-regex", "with -dump: only URLs matching R", metavar="R")
    status: str | None = opt("-status", "with -dump: only rows with this status (e.g. FETCHED)", metavar="NAME")
    text: bool = opt("-text", "with -dump: include parsed text", default=False)
    content: bool = opt("-content", "with -dump: include raw content (base64)", default=False)
    num_tasks: int | None = tasks_opt()
    groups = (("stats", "url", "dump"),)

    def check(self) -> None:
        super().check()
        if not (self.stats or self.url or self.dump):
            raise ArgError("give one of -stats, -url URL or -dump DIR")


@tool
class Readdb(Tool[ReaddbArgs]):
    name = "readdb"
    help = "read the webpage table: -stats, -url U or -dump DIR"
    Args = ReaddbArgs

    def run(self, run: Run) -> int:
        a = self.args
        with self.store() as store:
            if a.url:
                return self._row(run, store, a.url)
            runner = make_runner(self.conf, a.num_tasks)
            if a.dump:
                return self._dump(run, store, runner, a.dump)
            from nutch2.jobs.readdb import StatsJob

            job = StatsJob(self.conf, per_host=a.sort)
            job.compute(store, runner, run.job_counters("readdb"))
        out = io.StringIO()
        job.report(out)
        for line in out.getvalue().splitlines():
            run.out(line)
        run.values["total"] = job.total
        run.values["status"] = dict(job.status)
        statuses = ", ".join(f"{name} {n}" for name, n in sorted(job.status.items(), key=lambda x: -x[1]))
        run.message = f"readdb: {job.total} URLs" + (f": {statuses}" if statuses else "")  # the job API's message
        self._keep(job.stats, a.sort)
        return 0

    def _keep(self, stats: TableStats, per_host: bool) -> None:
        """Keep the counts for the searcher's dashboard, without waiting for a job that is writing the table: a
        reader never blocks behind a writer (the counts were shown; the dashboard keeps the earlier ones)."""
        quick = self.conf.copy()
        quick.set("storage.sqlite.busy.timeout", 1.0)
        try:
            with open_store(quick, self.crawl_id, create=False) as store:
                record_stats(store, stats, per_host)
        except StoreError as e:
            log.info(f"readdb: the counts are not kept for the dashboard this time (the table is being written: {e})")

    def _row(self, run: Run, store, raw: str) -> int:
        from nutch2.crawldb.rowjson import row_lines, row_to_json
        from nutch2.urls.checker import UrlChecker

        url = UrlChecker(self.conf, "inject", filter=False).normalize(raw)  # the form inject stored it in
        try:
            key = reverse_url(url or "")
        except ValueError:
            key = None
        if url is None or key is None:
            raise NutchError(f"-url {raw!r} is not a valid http(s), ftp or file URL; give one like "
                             "https://example.com/page")
        page = store.get(key)
        if page is None:
            raise NutchError(f"readdb: {url} is not in the table (key {key})")
        row = run.values["row"] = row_to_json(page, text=True)  # the job API's
        for line in row_lines(page):
            run.out(line)
        # the job API's message: what the row is, not its last line (its text, an outlink); the row is the result
        due = f", next fetch {row['fetchTime']}" if row["fetchTime"] else ""
        run.message = f"readdb: {url}: {row['status']}{due}"
        return 0

    def _dump(self, run: Run, store, runner, out: Path) -> int:
        from nutch2.jobs.readdb import DUMPED, DumpJob, interrupted_dump

        a = self.args
        if out.exists() and not out.is_dir():
            raise NutchError(f"-dump {out}: it is a file; give a new folder")
        if out.exists() and interrupted_dump(out):  # the same command after a kill or a failure: dump again
            log.info(f"readdb: {out} holds an interrupted dump (no {DUMPED}): writing it again")
            for part in out.iterdir():
                part.unlink()
        if out.exists() and any(out.iterdir()):
            raise NutchError(f"-dump {out}: the folder exists and is not empty; give a new folder")
        job = DumpJob(self.conf, out, a.regex, a.status, a.text, a.content)
        out.mkdir(parents=True, exist_ok=True)
        counters = run.job_counters("readdb")
        counters.incr("dumped", 0)
        runner.run(job, store, counters)
        run.summary(counters)
        return 0


# ---------------------------------------------------------------- warc, warcimport
@dataclass
class WarcArgs(ToolArgs):
    outdir: Path | None = opt(None, "folder for the .warc.gz files", metavar="OUTDIR", required=True,
                              api="file_out")
    batch: str | None = opt(None, "the batch id printed by generate", metavar="<batchId>", batch_id=True)
    all: bool = opt("-all", "every batch", default=False)
    maxSize: float | None = opt("-maxSize", "start a new file once one holds this many MB (warc.export.max.size.mb)",
                                metavar="MB", min=0.001, max=1_000_000)
    num_tasks: int | None = opt("-numTasks", "parallel tasks (one file set each)", metavar="N", min=1, max=1024)
    noCdxj: bool = opt("-noCdxj", "write no CDXJ indexes (<file>.cdxj, OUTDIR/index.cdxj; warc.export.cdxj)",
                       default=False)
    wacz: Path | None = opt("-wacz", "also package the export as a WACZ file (archive, index, pages)",
                            metavar="FILE.wacz", api="file_out")

    def check(self) -> None:
        super().check()
        check_batch_choice(self)

    @property
    def batch_id(self) -> str | None:
        return self.batch


@tool
class Warc(Tool[WarcArgs]):
    name = "warc"
    help = "write the fetched pages of a batch (or -all) as WARC/1.1 files, with revisits, CDXJ and WACZ"
    Args = WarcArgs
    crawl_lock = True  # records each row's last capture: not while generate or updatedb rewrite rows

    def run(self, run: Run) -> int:
        from nutch2.jobs.warc import export

        a = self.args
        max_mb = a.maxSize if a.maxSize is not None else self.conf.get_float("warc.export.max.size.mb")
        cdxj = not a.noCdxj and self.conf.get_bool("warc.export.cdxj")
        with self.store() as store:
            counters, files = export(self.conf, store, a.outdir, a.batch_id, self.crawl_id, max_mb,
                                     make_runner(self.conf, a.num_tasks), cdxj, a.wacz)
        counters.incr("files", len(files))
        run.values["files"] = [str(f) for f in files]
        run.summary(counters)
        return 0


@dataclass
class WarcImportArgs(ToolArgs):
    files: list[Path] = opt(None, "WARC files (.warc or .warc.gz), e.g. Common Crawl's", metavar="FILE",
                            required=True, api="file_in")
    num_tasks: int | None = tasks_opt()


@tool
class WarcImport(Tool[WarcImportArgs]):
    name = "warcimport"
    plugin_points = ("url-filter", "url-normalizer", "scoring-filter", "fetch-schedule")
    help = "load the HTTP responses of WARC files as a fetched batch (prints its id)"
    Args = WarcImportArgs
    crawl_lock = True
    creates = True

    def prepare(self) -> None:
        from nutch2.archive.warc import NotAWarc, WarcReader, require_warcio

        super().prepare()
        require_warcio()
        kept: list[Path] = []
        skipped: list[NotAWarc] = []
        for path in self.args.files:  # before the crawl's table is made: a refused import leaves no empty crawl
            try:
                WarcReader.check(path)
                kept.append(path)
            except NotAWarc as e:  # the index or WACZ of an export beside its WARC files (warcimport warc/*)
                skipped.append(e)
        if not kept:
            raise skipped[0]
        for e in skipped:
            log.info(f"warcimport: {str(e).split(';')[0]}: skipped")
        self.args = replace(self.args, files=kept)

    def run(self, run: Run) -> int:
        from nutch2.jobs.warc import import_id, run_import

        paths = self.args.files
        try:
            batch = import_id(paths)  # the files' digest: the same files, the same batch
        except OSError as e:
            raise NutchError(f"cannot read {e.filename}: {e.strerror}; check its permissions") from None
        counters = run.job_counters("warcimport")
        with self.store(create=True) as store, BatchLock(self.conf, self.crawl_id, batch, "warcimport", log=log.info):
            run_import(self.conf, store, paths, batch, make_runner(self.conf, self.tasks()), counters)
        run.summary(counters)
        run.values["batchId"] = batch
        run.out(batch)
        return 0
