"""WebTableReader (`nutch2 readdb`): statistics, one row, or a JSON Lines dump of the table."""

from __future__ import annotations

import base64
import json
import re
import threading
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

from nutch2.config import Configuration
from nutch2.errors import NutchError
from nutch2.runner import Job, TaskContext
from nutch2.status import CrawlStatus
from nutch2.tableutil import host_of_key, unreverse_url
from nutch2.webpage import ALL_FIELDS, WebPage


def status_name(code: int) -> str:
    try:
        return CrawlStatus(code).name
    except ValueError:
        return f"UNKNOWN_{code}"


def status_code(name: str) -> int:
    try:
        return int(CrawlStatus[name.upper()])
    except KeyError:
        names = ", ".join(s.name for s in CrawlStatus)
        raise NutchError(f"-status {name!r} is not a crawl status; use one of {names}") from None


def iso_time(ms: int | None) -> str | None:
    if not ms:
        return None
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def row_to_json(page: WebPage, text: bool = False, content: bool = False) -> dict[str, Any]:
    """One row with Nutch's field names in camelCase (times ISO 8601 UTC, bytes hex or base64)."""
    ps, parse = page.protocol_status, page.parse_status
    doc: dict[str, Any] = {
        "url": unreverse_url(page.key),
        "key": page.key,
        "status": status_name(page.status),
        "fetchTime": iso_time(page.fetch_time),
        "prevFetchTime": iso_time(page.prev_fetch_time),
        "modifiedTime": iso_time(page.modified_time),
        "prevModifiedTime": iso_time(page.prev_modified_time),
        "fetchInterval": page.fetch_interval,
        "retriesSinceFetch": page.retries_since_fetch,
        "protocolStatus": {"code": int(ps.code), "name": ps.name, "args": list(ps.args),
                           "lastModified": iso_time(ps.last_modified)},
        "parseStatus": {"majorCode": int(parse.major_code), "minorCode": int(parse.minor_code),
                        "name": parse.name, "args": list(parse.args)},
        "contentType": page.content_type,
        "baseUrl": page.base_url,
        "reprUrl": page.repr_url,
        "title": page.title,
        "score": page.score,
        "signature": page.signature.hex() if page.signature else None,
        "prevSignature": page.prev_signature.hex() if page.prev_signature else None,
        "markers": dict(page.markers),
        "batchId": page.batch_id,
        "outlinks": dict(page.outlinks),
        "inlinks": dict(page.inlinks),
        "headers": dict(page.headers),
        "metadata": {k: base64.b64encode(v).decode("ascii") for k, v in page.metadata.items()},
    }
    if text:
        doc["text"] = page.text
    if content:
        doc["content"] = base64.b64encode(page.content).decode("ascii") if page.content else None
    return doc


class StatsJob(Job):
    """readdb -stats: totals, per status, per retry count, score min/max/avg (and per host with -sort)."""

    name = "readdb"
    fields = ("status", "retries_since_fetch", "score")

    def __init__(self, conf: Configuration, per_host: bool = False) -> None:
        super().__init__(conf)
        self.per_host = per_host
        self.lock = threading.Lock()
        self.status: Counter[str] = Counter()
        self.retries: Counter[int] = Counter()
        self.hosts: Counter[str] = Counter()
        self.total = 0
        self.score_sum = 0.0
        self.score_min: float | None = None
        self.score_max: float | None = None

    def map(self, page: WebPage, ctx: TaskContext) -> tuple:
        with self.lock:
            self.total += 1
            self.status[status_name(page.status)] += 1
            self.retries[page.retries_since_fetch] += 1
            s = page.score
            self.score_sum += s
            self.score_min = s if self.score_min is None else min(self.score_min, s)
            self.score_max = s if self.score_max is None else max(self.score_max, s)
            if self.per_host:
                self.hosts[host_of_key(page.key)] += 1
        return ()

    def report(self, out: TextIO) -> None:
        out.write(f"TOTAL urls:\t{self.total}\n")
        for rc, n in sorted(self.retries.items()):
            out.write(f"retry {rc}:\t{n}\n")
        if self.total:
            out.write(f"min score:\t{self.score_min:.3f}\n")
            out.write(f"avg score:\t{self.score_sum / self.total:.3f}\n")
            out.write(f"max score:\t{self.score_max:.3f}\n")
        for name in sorted(self.status, key=lambda n: CrawlStatus[n] if n in CrawlStatus.__members__ else 999):
            code = CrawlStatus[name].value if name in CrawlStatus.__members__ else "?"
            out.write(f"status {code} ({name}):\t{self.status[name]}\n")
        if self.per_host:
            for host, n in sorted(self.hosts.items(), key=lambda kv: (-kv[1], kv[0])):
                out.write(f"   {host}:\t{n}\n")


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
        self.files: dict[int, TextIO] = {}
        excluded = set() if content else {"content"}
        if not text:
            excluded.add("text")
        self.fields = tuple(f for f in ALL_FIELDS if f not in excluded)

    def setup(self, ctx: TaskContext) -> None:
        self.files[ctx.task] = open(self.out_dir / f"part-{ctx.task:05d}.jsonl", "w", encoding="utf-8")

    def map(self, page: WebPage, ctx: TaskContext) -> tuple:
        if self.status is not None and page.status != self.status:
            return ()
        if self.regex and not self.regex.search(unreverse_url(page.key)):
            return ()
        self.files[ctx.task].write(json.dumps(row_to_json(page, self.text, self.content), ensure_ascii=False))
        self.files[ctx.task].write("\n")
        ctx.incr("dumped")
        return ()

    def cleanup(self, ctx: TaskContext) -> None:
        self.files.pop(ctx.task).close()
