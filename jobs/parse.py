"""ParserJob: parse fetched rows — text, title, outlinks, signature — and set the PARSE mark."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from nutch2.config import Configuration
from nutch2.mapred.job import Job, TaskContext
from nutch2.marks import Mark
from nutch2.parse.parseutil import PARSE_FIELDS, PageParser
from nutch2.status import CrawlStatus
from nutch2.stores.base import MarkFilter
from nutch2.webpage import WebPage

# a 304 confirms the content the row kept from its previous fetch: parsing it again gives that content's parse
# (and a first one when the earlier fetch was never parsed), so no sequence of fetches leaves a page unparseable
PARSEABLE = (CrawlStatus.FETCHED, CrawlStatus.NOTMODIFIED)


class ParserJob(Job):
    """Map-only: rows fetched in the batch (FETCH mark) with status FETCHED are parsed and written back."""

    name = "parse"
    fields = PARSE_FIELDS

    def __init__(self, conf: Configuration, batch_id: str | None, resume: bool = False, force: bool = False,
                 reparse: bool = False) -> None:
        super().__init__(conf)
        self.batch_id = batch_id
        self.resume = resume
        self.force = force
        self.reparse = reparse
        PageParser(conf).close()  # a bad setting or a parse filter that cannot start fails here, before any task

    def map_setup(self, ctx: TaskContext) -> None:
        self.parser = PageParser(ctx.conf)  # the parsers and parse filters are built in the task, not shipped

    def mark_filter(self) -> MarkFilter | None:
        if self.reparse:
            return None
        return (Mark.FETCH.value, self.batch_id)

    def map(self, page: WebPage, ctx: TaskContext) -> Iterator[tuple[Any, Any]]:
        if page.status not in PARSEABLE:
            ctx.incr("skipped_not_fetched")
            return iter(())
        if page.status == CrawlStatus.NOTMODIFIED and not page.content:
            ctx.incr("skipped_not_modified_without_content")  # fetcher.store.content=false: the old parse stays
            return iter(())
        if self.resume and Mark.PARSE.check(page) is not None and not self.force:
            ctx.incr("skipped_already_parsed")
            return iter(())
        if self.parser.parse(page, ctx, signature_loaded=True):
            fetch_mark = Mark.FETCH.check(page)
            if fetch_mark is not None:  # -reparse of a row already through updatedb: no batch to mark
                Mark.PARSE.put(page, fetch_mark)
        ctx.write(page)
        return iter(())

    def map_cleanup(self, ctx: TaskContext) -> None:
        self.parser.close()  # the parsers' clients of this task (a Tika server's sessions)
