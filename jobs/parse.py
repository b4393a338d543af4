"""ParserJob: parse fetched rows — text, title, outlinks, signature — and set the PARSE mark."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from nutch2.config import Configuration
from nutch2.marks import ALL_BATCHES, Mark
from nutch2.parseutil import PARSE_FIELDS, PageParser
from nutch2.runner import Job, TaskContext
from nutch2.status import CrawlStatus
from nutch2.stores.base import MarkFilter
from nutch2.webpage import WebPage


class ParserJob(Job):
    """Map-only: rows fetched in the batch (FETCH mark) with status FETCHED are parsed and written back."""

    name = "parse"
    fields = PARSE_FIELDS

    def __init__(self, conf: Configuration, batch_id: str, resume: bool = False, force: bool = False,
                 reparse: bool = False) -> None:
        super().__init__(conf)
        self.batch_id = batch_id
        self.resume = resume
        self.force = force
        self.reparse = reparse
        self.parser = PageParser(conf)

    def mark_filter(self) -> MarkFilter | None:
        if self.reparse:
            return None
        return (Mark.FETCH.value, None if self.batch_id == ALL_BATCHES else self.batch_id)

    def map(self, page: WebPage, ctx: TaskContext) -> Iterator[tuple[Any, Any]]:
        if page.status != CrawlStatus.FETCHED:
            ctx.incr("skipped_not_fetched")
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
