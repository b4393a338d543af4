"""IndexingJob: send parsed, updated rows to the index writers as documents (the indexing filters make them);
clean (GONE/redirects/noindex out of the index) and dedup (by digest, Solr)."""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Iterable, Iterator
from typing import Any

from nutch2.config import Configuration
from nutch2.crawldb.journal import Journal
from nutch2.index.filters import FilterFailed, FilterOverrun, IndexingFilters, indexable
from nutch2.index.solr import document_id, row_key_of
from nutch2.index.writers import IndexWriters, writer_marks
from nutch2.mapred.job import Counters, Job, TaskContext
from nutch2.mapred.runner import Runner
from nutch2.marks import Mark
from nutch2.plugin.extension import fix_hint
from nutch2.rowkeys import NOINDEX_KEY
from nutch2.status import CrawlStatus, ParseMinor
from nutch2.stores.base import DataStore, MarkFilter
from nutch2.urls.tableutil import unreverse_url
from nutch2.webpage import WebPage

INDEX_FIELDS = ("status", "signature", "batch_id", "score", "parse_status", "markers", "metadata")
GONE_STATUSES = (CrawlStatus.GONE, CrawlStatus.REDIR_PERM, CrawlStatus.REDIR_TEMP)


def run_name(crawl_id: str | None, batch_id: str | None, reindex: bool) -> str:
    """The name of an index run: the same for a rerun of the same command (file writers replace its parts)."""
    what = f"{crawl_id or ''}|{batch_id or '-all'}|{'reindex' if reindex else ''}"
    return hashlib.sha1(what.encode()).hexdigest()[:12]


class IndexingJob(Job):
    """Map over rows carrying the UPDATEDB mark; each task builds documents with the indexing filters and writes
    them through its own index writers; the final step commits every writer.

    Rows get the INDEX mark and the mark of each writer (= their UPDATEDB mark; index.writers.writer_mark) only
    after the writers committed them, by MarkIndexedJob, which selects the same rows again — so a failed run marks
    nothing and a rerun sends what is missing. `-all` sends rows that some active writer does not hold as last
    updated (updated since, or never indexed there: a new writer gets every document); `-reindex` sends every
    indexable row. A document a writer did not take (IndexWriter.refused: said and counted) leaves its row without
    that writer's mark, so a later `-all` sends it again.

    Documents carry their crawl: the crawlId field, and ids `<crawlId>!<row key>` (index.solr.document_id), so
    crawls share a core without overwriting each other. `-reindex` also deletes the document a row had under its
    bare row key, the id of cores indexed before crawl ids: reindexing each crawl moves an older core over.
    """

    name = "index"

    def __init__(self, conf: Configuration, batch_id: str | None, writers: IndexWriters, reindex: bool = False,
                 crawl_id: str | None = None) -> None:
        super().__init__(conf)
        self.batch_id = batch_id
        self.crawl_id = crawl_id
        self.writers = writers
        self.marks = list(writers.marks)
        self.reindex = reindex
        self.run = run_name(crawl_id, batch_id, reindex)
        self.filters = IndexingFilters.from_conf(conf)  # built here too: a plugin that cannot load stops the job
        self.fields = tuple(dict.fromkeys(INDEX_FIELDS + self.filters.fields))
        self.filters.close()
        del self.filters

    def mark_filter(self) -> MarkFilter | None:
        """The batch's rows (those its updatedb updated last); every updated row without a batch."""
        return (Mark.UPDATEDB.value, self.batch_id)

    def skip(self, page: WebPage) -> str | None:
        """Why the row is not sent (and then not marked), or None: the same answer in both passes."""
        if not indexable(page):
            return "skipped_not_indexable"
        if self.batch_id is None and not self.reindex and self.indexed(page):
            return "skipped_already_indexed"
        return None

    def indexed(self, page: WebPage) -> bool:
        """Does every writer of this run hold the row's document as last updated?"""
        updated = Mark.UPDATEDB.check(page)
        marks = self.marks or [Mark.INDEX.value]
        return all(page.markers.get(m) == updated for m in marks)

    def map_setup(self, ctx: TaskContext) -> None:
        self.filters = IndexingFilters.from_conf(ctx.conf)
        self.out = self.writers.open(ctx.conf, ctx.task, self.run)
        self.overran: list[str] = []  # rows an indexing filter did not finish: neither sent nor marked
        self.refused: list[list[str]] = []  # per writer, the rows whose documents it did not take: not marked for it
        self.sent = 0
        self.kept_out: dict[str, int] = {}  # pages each indexing filter kept out (returned None for)

    def map(self, page: WebPage, ctx: TaskContext) -> Iterator[tuple[Any, Any]]:
        reason = self.skip(page)
        if reason:
            ctx.incr(reason)
            return iter(())
        try:
            doc = self.filters.document(page, self.crawl_id)
        except FilterOverrun as e:
            ctx.incr("failed_indexing_filter_timeout")
            ctx.log(f"index: {unreverse_url(page.key)}: {e}; not sent (a later index sends it)")
            self.overran.append(page.key)
            return iter(())
        except FilterFailed as e:
            ctx.incr("failed_indexing_filter")
            ctx.log(f"index: {unreverse_url(page.key)}: {e}; not sent: {fix_hint(e.plugin)} "
                    "(a later index sends it)")
            self.overran.append(page.key)
            return iter(())
        if doc is None:
            ctx.incr("skipped_by_filter")
            self.kept_out[self.filters.dropped_by] = self.kept_out.get(self.filters.dropped_by, 0) + 1
            return iter(())
        self.sent += 1
        if self.reindex:
            self.out.delete(page.key)  # the id this row had before crawl ids
        self.out.write(doc)
        ctx.incr("indexed")
        return iter(())

    def map_cleanup(self, ctx: TaskContext) -> None:
        try:
            if sys.exc_info()[0] is None:  # a failed task sends no more
                self.out.flush()
                for name, n in self.out.counts().items():
                    ctx.incr(name, n)
                self.refused = [[row_key_of(doc_id) for doc_id in ids] for ids in self.out.refused()]
        finally:
            self.out.close()
            self.filters.close()

    def result(self, ctx: TaskContext) -> Any:
        return {"overran": self.overran, "refused": self.refused, "sent": self.sent, "kept_out": self.kept_out}

    def finish(self, results: list[Any], ctx: TaskContext) -> None:
        parts = [part for part in results if part]
        self.overran = [key for part in parts for key in part["overran"]]
        kept_out: dict[str, int] = {}
        for part in parts:
            for name, n in part.get("kept_out", {}).items():
                kept_out[name] = kept_out.get(name, 0) + n
        if kept_out and not any(part.get("sent") for part in parts):  # a missing `return doc` looks just like this
            by = ", ".join(f"indexing filter {name} kept {n} pages out" for name, n in sorted(kept_out.items()))
            ctx.logger.warning(f"index: no document was sent: {by} (an indexing filter that returns None keeps the "
                               "page out: return the document to send it)")
        self.refused = [sorted({key for part in parts if part["refused"] for key in part["refused"][i]})
                        for i in range(len(self.writers.writers))]
        out = self.writers.open(ctx.conf, None, self.run)
        try:
            out.commit()
        finally:
            out.close()


class _MarksPass(IndexingJob):
    """A pass that only edits rows' index marks: no writers opened, nothing gathered, nothing to finish."""

    fields = ("status", "parse_status", "metadata", "markers")

    def map_setup(self, ctx: TaskContext) -> None:
        pass

    def map_cleanup(self, ctx: TaskContext) -> None:
        pass

    def result(self, ctx: TaskContext) -> Any:
        return None

    def finish(self, results: list[Any], ctx: TaskContext) -> None:
        pass


class MarkIndexedJob(_MarksPass):
    """Second pass of index, after the writers committed: the INDEX mark on every row the first pass sent, and the
    mark of each writer that took its document."""

    def __init__(self, conf: Configuration, batch_id: str | None, writers: IndexWriters, reindex: bool = False,
                 crawl_id: str | None = None, overran: Iterable[str] = (),
                 refused: Iterable[Iterable[str]] = ()) -> None:
        Job.__init__(self, conf)
        self.batch_id, self.writers, self.reindex, self.crawl_id = batch_id, writers, reindex, crawl_id
        self.marks = list(writers.marks)
        self.overran = frozenset(overran)  # rows the first pass did not send (an indexing filter overran)
        self.refused = [frozenset(keys) for keys in refused]  # per writer (as marks), the rows it did not take

    map_phase = "mark indexed"

    def map(self, page: WebPage, ctx: TaskContext) -> Iterator[tuple[Any, Any]]:
        if self.skip(page) is None and page.key not in self.overran:
            took = [mark for i, mark in enumerate(self.marks)
                    if not (i < len(self.refused) and page.key in self.refused[i])]
            if self.marks and not took:  # no writer holds it
                return iter(())
            marked = WebPage(page.key, markers=dict(page.markers))
            updated = page.markers.get(Mark.UPDATEDB.value, self.batch_id) or ""
            Mark.INDEX.put(marked, updated)
            for mark in took:
                marked.markers[mark] = updated
            ctx.write(marked)
        return iter(())


class UnmarkJob(_MarksPass):
    """First pass of `-reindex`, before any document is sent: the marks of this run's writers off every row it
    will send. -reindex is run when an index no longer holds what the marks say (a core emptied or restored); a
    reindex that fails part-way then leaves the rows it did not send unmarked, so `index -all` sends them too,
    not only the same -reindex again. A -reindex of the table is in the journal (index/reindex) from before this
    pass until its rows are marked again, so an `index -all` after one killed in this pass finishes it first.
    The INDEX mark stays: clean finds by it the rows whose documents may still be in the index."""

    def __init__(self, conf: Configuration, batch_id: str | None, writers: IndexWriters, marks: list[str],
                 crawl_id: str | None = None) -> None:
        Job.__init__(self, conf)
        self.batch_id, self.writers, self.reindex, self.crawl_id = batch_id, writers, True, crawl_id
        self.marks = list(marks)

    map_phase = "unmark"

    def map(self, page: WebPage, ctx: TaskContext) -> Iterator[tuple[Any, Any]]:
        if self.skip(page) is None and any(mark in page.markers for mark in self.marks):
            unmarked = WebPage(page.key, markers=dict(page.markers))
            for mark in self.marks:
                unmarked.markers.pop(mark, None)
            ctx.write(unmarked)
        return iter(())


def run_index(conf: Configuration, store: DataStore, batch_id: str | None, writers: IndexWriters, reindex: bool,
              runner: Runner, counters: Counters, crawl_id: str | None = None) -> None:
    """Send the documents (and commit), then mark what the index holds now (-reindex: unmark its rows first; an
    index of the table first finishes the unmarking of a -reindex that did not end)."""
    journal = Journal(store)
    unmark = list(writers.marks) if reindex else []
    if batch_id is None:
        if reindex and unmark:
            journal.start_reindex(unmark)
        unmark += [mark for mark in journal.reindexing() if mark in writers.marks and mark not in unmark]
    elif unmark:  # a crawl's start runs it again if it does not end (its rows wait unmarked)
        journal.start_batch_reindex(batch_id, unmark)
    if unmark:
        runner.run(UnmarkJob(conf, batch_id, writers, unmark, crawl_id), store)
    job = IndexingJob(conf, batch_id, writers, reindex, crawl_id)
    writers.begin(conf, job.run)
    runner.run(job, store, counters)
    runner.run(MarkIndexedJob(conf, batch_id, writers, reindex, crawl_id, job.overran, job.refused), store)
    if batch_id is None and unmark:
        journal.end_reindex(unmark)
    if batch_id is None or unmark:  # an index of the table sent an unfinished batch reindex's rows too
        journal.end_batch_reindex(list(writers.marks), batch_id)


class CleaningJob(Job):
    """Delete from the index the rows that were indexed and are now GONE, redirects, noindex or DUPLICATE (dedup):
    the tasks find
    them, the final step deletes them through every active index writer, commits, and only then takes those
    writers' marks off (and the INDEX mark, once no writer holds the row)."""

    name = "clean"
    fields = ("status", "markers", "metadata", "parse_status")

    def __init__(self, conf: Configuration, writers: IndexWriters, crawl_id: str | None = None) -> None:
        super().__init__(conf)
        self.writers = writers
        self.marks = list(writers.marks)
        self.crawl_id = crawl_id

    def mark_filter(self) -> MarkFilter | None:
        return (Mark.INDEX.value, None)

    def map_setup(self, ctx: TaskContext) -> None:
        self.deleted: list[tuple[str, dict[str, str]]] = []

    def map(self, page: WebPage, ctx: TaskContext) -> Iterator[tuple[Any, Any]]:
        if page.status in GONE_STATUSES or page.status == CrawlStatus.DUPLICATE or NOINDEX_KEY in page.metadata or (
                page.parse_status.minor_code == ParseMinor.REDIRECT):
            self.deleted.append((page.key, dict(page.markers)))
        return iter(())

    def result(self, ctx: TaskContext) -> Any:
        return self.deleted if ctx.is_map else None

    def finish(self, results: list[Any], ctx: TaskContext) -> None:
        deleted = [row for part in results for row in part]
        if deleted:
            out = self.writers.open(ctx.conf, None, run_name(self.crawl_id, None, False) + "-clean")
            try:
                out.begin()
                for key, _ in deleted:
                    out.delete(document_id(self.crawl_id, key))
                out.commit()
                for name, n in out.counts().items():
                    ctx.incr(name, n)
            finally:
                out.close()
        for key, markers in deleted:
            page = WebPage(key, markers=markers)
            for mark in self.marks:
                page.markers.pop(mark, None)
            if not writer_marks(page.markers):  # no other writer holds it
                Mark.INDEX.remove(page)
            ctx.write(page)
        ctx.incr("deleted", len(deleted))
