"""WebTableReader (`nutch2 readdb`): statistics, one row, or a JSON Lines dump of the table."""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from pathlib import Path
from typing import TextIO

from nutch2 import failpoints
from nutch2.config import Configuration
from nutch2.crawldb.rowjson import row_to_json
from nutch2.crawldb.tablestats import TableStatsJob
from nutch2.errors import NutchError
from nutch2.mapred.job import Job, TaskContext
from nutch2.status import CrawlStatus
from nutch2.urls.tableutil import unreverse_url
from nutch2.webpage import ALL_FIELDS, WebPage


def status_code(name: str) -> int:
    try:
        return int(CrawlStatus[name.upper()])
    except KeyError:
        names = ", ".join(s.name for s in CrawlStatus)
        raise NutchError(f"-status {name!r} is not a crawl status; use one of {names}") from None


class StatsJob(TableStatsJob):
    """readdb -stats: totals, per status, per retry count, score min/max/avg (and per host with -sort)."""

    @property
    def total(self) -> int:
        return self.stats.total

    @property
    def status(self) -> Counter[str]:
        return self.stats.status

    def report(self, out: TextIO) -> None:
        st = self.stats
        out.write(f"TOTAL urls:\t{st.total}\n")
        for rc, n in sorted(st.retries.items()):
            out.write(f"retry {rc}:\t{n}\n")
        if st.total:
            out.write(f"min score:\t{st.score_min:.3f}\n")
            out.write(f"avg score:\t{st.score_sum / st.total:.3f}\n")
            out.write(f"max score:\t{st.score_max:.3f}\n")
        for name in sorted(st.status, key=lambda n: CrawlStatus[n] if n in CrawlStatus.__members__ else 999):
            code = CrawlStatus[name].value if name in CrawlStatus.__members__ else "?"
            out.write(f"status {code} ({name}):\t{st.status[name]}\n")
        if self.per_host:  # every status together: a heading, so that the hosts are not read as the last status's
            out.write("hosts (URLs per host, all statuses):\n")
            for host, n in sorted(st.hosts.items(), key=lambda kv: (-kv[1], kv[0])):
                out.write(f"   {host}:\t{n}\n")


DUMPED = "_SUCCESS"  # in a dump folder whose every part is whole (Hadoop's marker)


def interrupted_dump(folder: Path) -> bool:
    """A dump folder a killed or failed readdb -dump left: its parts (whole or not) and no DUMPED marker."""
    names = [p.name for p in folder.iterdir()]
    return bool(names) and DUMPED not in names and all(
        re.fullmatch(r"\.?part-\d{5,}\.jsonl(\.tmp)?", n) for n in names)


class DumpJob(Job):
    """readdb -dump DIR: one JSON object per row, one part file per map task."""

    name = "readdb"

    def __init__(self, conf: Configuration, out_dir: Path, regex: str | None = None, status: str | None = None,
                 text: bool = False, content: bool = False) -> None:
        super().__init__(conf)
        self.out_dir = out_dir
        try:
            self.regex = re.compile(regex) if regex else None
        except re.error as e:
            raise NutchError(f"-regex {regex!r} is not a valid regular expression: {e}") from None
        self.status = status_code(status) if status else None
        self.text = text
        self.content = content
        excluded = set() if content else {"content"}
        if not text:
            excluded.add("text")
        self.fields = tuple(f for f in ALL_FIELDS if f not in excluded)

    def map_setup(self, ctx: TaskContext) -> None:
        """The task writes `.part-N.jsonl.tmp`, named part-N.jsonl once its last row is in (a task that fails or
        is killed leaves no part that looks whole)."""
        self.part = self.out_dir / f"part-{ctx.task:05d}.jsonl"
        self.file = open(self.out_dir / f".{self.part.name}.tmp", "w", encoding="utf-8")

    def map(self, page: WebPage, ctx: TaskContext) -> tuple:
        if self.status is not None and page.status != self.status:
            return ()
        if self.regex and not self.regex.search(unreverse_url(page.key)):
            return ()
        self.file.write(json.dumps(row_to_json(page, self.text, self.content), ensure_ascii=False))
        self.file.write("\n")
        ctx.incr("dumped")
        failpoints.reach("readdb.dump")
        return ()

    def map_close(self, ctx: TaskContext) -> tuple:
        self.file.close()
        os.replace(self.out_dir / f".{self.part.name}.tmp", self.part)
        return ()

    def map_cleanup(self, ctx: TaskContext) -> None:
        self.file.close()

    def finish(self, results: list, ctx: TaskContext) -> None:
        """Every part is whole: DUMPED says the dump is complete (a rerun of the same command redoes a dump
        without it)."""
        (self.out_dir / DUMPED).write_text("")
