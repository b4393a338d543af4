"""InjectorJob: add seed URLs to the webpage table (`nutch2 inject <seed file or dir>`)."""

from __future__ import annotations

import bz2
import codecs
import gzip
import io
import logging
import math
import re
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nutch2.config import Configuration
from nutch2.crawldb.scoring import ScoringFilters
from nutch2.errors import NutchError
from nutch2.fetch.addresses import DENIED, AddressPolicy, guarded_seeds, origin_of, record_seeds
from nutch2.fetch.dns import DnsCache
from nutch2.mapred.job import Job, TaskContext
from nutch2.marks import Mark, set_distance
from nutch2.status import CrawlStatus, ProtocolStatusCode
from nutch2.stores.base import DataStore
from nutch2.urls.checker import UrlChecker
from nutch2.urls.tableutil import reverse_url
from nutch2.webpage import WebPage

log = logging.getLogger(__name__)

MAX_INTERVAL = 2**31 - 1  # Nutch's fetchInterval is an int of seconds
SHOWN_REJECTED = 20  # bad seed lines the job's result names (every one is logged)


@dataclass
class SeedLine:
    source: str
    lineno: int
    text: str


def seed_files(path: Path) -> list[Path]:
    """The seed file, or the files of a seed folder (hidden files skipped), in name order."""
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.is_file() and not p.name.startswith("."))
        if not files:
            raise NutchError(f"seed folder {path} has no files; put a file with one URL per line in it")
        return files
    if path.is_file():
        return [path]
    if path.exists():  # a FIFO, a device (/dev/null): read again by a rerun, so not a seed list
        raise NutchError(f"seed path {path} is not a regular file or a folder; give a file with one URL per line "
                         "or a folder of them")
    text = str(path)
    if text.split(":/", 1)[0].lower() in ("http", "https", "ftp", "file") and ":/" in text:  # a URL, not a file
        url = text.replace(":/", "://", 1)  # (the path's parsing took a slash)
        raise NutchError(f"{url} is a URL, and inject reads seed files: put it in one (echo '{url}' > "
                         "seeds/seeds.txt) and give the file or its folder")
    raise NutchError(f"seed path {path} does not exist; give a file with one URL per line or a folder of them")


@dataclass
class SeedPiece:
    """Whole lines of one seed file, as bytes (a file's BOM removed): a list of millions of seeds costs the
    driver its file's size, not a Python object a line, and ships to the tasks as it is."""

    source: str
    first: int  # the line number of its first line
    data: bytes

    def lines(self) -> Iterator[SeedLine]:
        path = Path(self.source)
        for n, raw in enumerate(io.BytesIO(self.data), self.first):
            yield SeedLine(self.source, n, _seed_text(raw, path, n))


def seed_splits(path: Path, n: int) -> list[list[SeedPiece]]:
    """The seed files cut at line ends into about n splits of equal bytes."""
    files: list[tuple[str, bytes]] = []
    for file in seed_files(path):
        try:
            data = file.read_bytes()
        except OSError as e:
            raise NutchError(f"cannot read seed file {file}: {e.strerror}; check its permissions") from None
        data = _text_of(file, data)
        if data.startswith(codecs.BOM_UTF8):  # files saved by Windows editors
            data = data[len(codecs.BOM_UTF8):]
        files.append((str(file), data))
    target = max(1, -(-sum(len(d) for _, d in files) // max(1, n)))
    splits: list[list[SeedPiece]] = [[]]
    room = target
    for source, data in files:
        start, line = 0, 1
        while start < len(data):
            end = len(data) if len(data) - start <= room else (data.find(b"\n", start + room - 1) + 1 or len(data))
            splits[-1].append(SeedPiece(source, line, data[start:end]))
            room -= end - start
            line += data.count(b"\n", start, end)
            start = end
            if room <= 0:
                splits.append([])
                room = target
    return [split for split in splits if split] or [[]]


def _text_of(file: Path, data: bytes) -> bytes:
    """A seed file's lines: gzip and bzip2 files decompressed (as Hadoop's text input reads them); a file that is
    not text fails before anything is injected."""
    try:
        if data.startswith(b"\x1f\x8b"):
            data = gzip.decompress(data)
        elif data.startswith(b"BZh"):
            data = bz2.decompress(data)
    except (OSError, EOFError, ValueError) as e:
        raise NutchError(f"seed file {file} looks compressed but does not decompress ({e}); give it whole, or as "
                         "plain text") from None
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):  # Windows editors' "Unicode"
        data = data.decode("utf-16", errors="replace").encode("utf-8")
    _check_text(file, data[:65536])
    return data


_CONTROL = bytes(b for b in range(32) if b not in b"\t\n\r") + b"\x7f"


def _check_text(file: Path, head: bytes) -> None:
    """A file whose first bytes are more than 5 % control characters is not a seed list (a stray binary line
    among URLs is a bad line, reported and skipped)."""
    if head and len(head) - len(head.translate(None, _CONTROL)) > len(head) / 20:
        raise NutchError(f"seed file {file} is not text (binary bytes); give a file with one URL per line (UTF-8 "
                         "or UTF-16 text, plain, .gz or .bz2)")


def check_seed_files(path: Path, empty_ok: bool = False) -> None:
    """The seed path's files exist and read as text (their first 64 KB, decompressed): checked before a table is
    made or a row written. `empty_ok`: a folder without files passes (a continuous crawl waits for them)."""
    if empty_ok and path.is_dir() and not any(p.is_file() and not p.name.startswith(".") for p in path.iterdir()):
        return
    for file in seed_files(path):
        try:
            with open(file, "rb") as f:
                magic = f.read(3)
            opener = gzip.open if magic[:2] == b"\x1f\x8b" else bz2.open if magic == b"BZh" else open
            with opener(file, "rb") as f:
                head = f.read(65536)
            if head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
                head = head.decode("utf-16", errors="replace").encode("utf-8")
        except OSError as e:
            raise NutchError(f"cannot read seed file {file}: {e.strerror or e}; check it (its permissions, or a "
                             "compressed file cut short)") from None
        except (EOFError, ValueError) as e:
            raise NutchError(f"seed file {file} looks compressed but does not decompress ({e}); give it whole, or "
                             "as plain text") from None
        _check_text(file, head)


def read_seeds(path: Path) -> Iterator[SeedLine]:
    """Every line of the seed file or folder, in order."""
    for split in seed_splits(path, 1):
        for piece in split:
            yield from piece.lines()


def _seed_text(raw: bytes, file: Path, n: int) -> str:
    """A seed line as text. A byte that is not UTF-8 (a Latin-1 editor's) is kept in the URL as %XX, the byte the
    line has, not replaced by U+FFFD (a different URL); in the metadata after the first tab it is U+FFFD."""
    text = raw.decode("utf-8", errors="surrogateescape").rstrip("\r\n")
    if not _ESCAPED.search(text):
        return text
    url, tab, meta = text.partition("\t")
    if "://" in url:  # a line that is no URL at all gets its one line when it is rejected
        log.warning(f"{file}:{n}: not UTF-8; a byte that is not is kept in the URL as %XX (save seed files as UTF-8)")
    url = _ESCAPED.sub(lambda m: f"%{ord(m.group()) - 0xDC00:02X}", url)
    return url + tab + _ESCAPED.sub("\ufffd", meta)


_ESCAPED = re.compile("[\udc80-\udcff]")


def _shown(text: str, limit: int = 200) -> str:
    """A seed's text in a message: quoted, cut at `limit` characters (a line can be megabytes)."""
    return repr(text) if len(text) <= limit else f"{text[:limit]!r}... ({len(text)} characters)"


class BadSeed(ValueError):
    """A seed line that cannot be injected; the message is the reason."""


def parse_seed(text: str) -> tuple[str, dict[str, str]] | None:
    """URL and metadata of one seed line; None for blank lines and comments."""
    line = text.strip()
    if not line or line.startswith("#"):
        return None
    url, *pairs = line.split("\t")
    url = url.strip()
    if any(c.isspace() for c in url):
        raise BadSeed(f"URL contains whitespace: {_shown(url)} (separate metadata with tabs)")
    meta: dict[str, str] = {}
    for pair in pairs:
        if not pair.strip():
            continue
        k, sep, v = pair.partition("=")
        if not sep or not k.strip():
            raise BadSeed(f"metadata {_shown(pair)} is not key=value")
        meta[k.strip()] = v.strip()
    return url, meta


class InjectorJob(Job):
    """Map over chunks of seed lines: normalize, filter, read the chunk's existing rows in one batched read
    (the store's bulk path), and create or (with -overwrite/-update) change rows."""

    name = "inject"

    def __init__(self, conf: Configuration, seeds: Path, overwrite: bool = False, update: bool = False) -> None:
        super().__init__(conf)
        self.seeds = seeds
        self.overwrite = overwrite
        self.update = update
        self.checker = UrlChecker(conf, "inject")
        self.scoring = ScoringFilters.from_conf(conf)
        self.default_score = conf.get_float("db.score.injected")
        self.default_interval = conf.get_int("db.fetch.interval.default")
        self.chunk = max(1, conf.get_int("storage.write.batch.size"))
        self.dns_seconds = conf.get_float("inject.address.check.seconds")
        self.allow_local = conf.get_bool("inject.seeds.allow.local")
        self.rejected: list[str] = []  # after the job: the first SHOWN_REJECTED bad lines, "file:line: reason"
        self.refused_hosts: list[str] = []  # after the job: seed hosts the address guard keeps refusing
        DnsCache.from_conf(conf)  # a bad fetcher.dns.* value fails here, before a row is written (finish uses it)
        check_seed_files(seeds)  # fail before the job starts when the path is wrong or a file is not text

    def map_setup(self, ctx: TaskContext) -> None:
        self._origins: set[tuple[str, int]] = set()  # hosts and ports of this task's seeds
        self._rejected: list[str] = []  # this task's first SHOWN_REJECTED reasons, for the job API's result

    def inputs(self, store: DataStore, n: int) -> list[Any]:
        """The seed files' lines, read here on the driver and shipped to the tasks as bytes (a task in another
        process or on another machine does not see the driver's files)."""
        return seed_splits(self.seeds, n)

    map_unit = "seed lines"

    def record_size(self, record: list[SeedLine]) -> int:
        return len(record)

    def read(self, split: list[SeedPiece], store: DataStore) -> Iterable[list[SeedLine]]:
        """Chunks of storage.write.batch.size lines: each is one batched read of existing rows."""
        chunk: list[SeedLine] = []
        for piece in split:
            for line in piece.lines():
                chunk.append(line)
                if len(chunk) >= self.chunk:
                    yield chunk
                    chunk = []
        if chunk:
            yield chunk

    def map(self, record: list[SeedLine], ctx: TaskContext) -> Iterable[tuple[Any, Any]]:
        seeds = [s for line in record if (s := self._seed(line, ctx)) is not None]
        self._origins.update(o for s in seeds if (o := origin_of(s[1])) is not None)
        # metadata is read so that -update merges the seed's keys into it (a map is written whole)
        # (its protocol status tells a row the address guard refused, which a seed injected again reopens)
        existing = ctx.store.get_many(list(dict.fromkeys(s[0] for s in seeds)),
                                      ["status", "markers", "metadata", "protocol_status"])
        for key, url, meta, score, interval in seeds:
            self._inject(ctx, existing, key, url, meta, score, interval)
        return ()

    def result(self, ctx: TaskContext) -> Any:
        return sorted(self._origins), self._rejected

    def finish(self, results: list[Any], ctx: TaskContext) -> None:
        """The seeds' hosts that resolve to this machine's network: the address guard lets them through (the
        user chose them), recorded in the crawl once every row is written. The hosts are resolved as the fetcher
        resolves them (its DNS cache, fetcher.dns.*)."""
        origins = {tuple(o) for part, _ in results for o in part}
        self.rejected = [line for _, rejected in results for line in rejected][:SHOWN_REJECTED]
        # without the seeds' pass, a host fetcher.address.allow lets through is not one the guard keeps refusing
        policy = None if self.allow_local else AddressPolicy.from_conf(self.conf)
        found, late = guarded_seeds(origins, self.dns_seconds, DnsCache.from_conf(self.conf),  # type: ignore[arg-type]
                                    policy)
        if found and not self.allow_local:
            self.refused_hosts = found
            log.info(f"inject: the address guard keeps refusing the seed host{'' if len(found) == 1 else 's'} "
                     f"{', '.join(found[:5])}{' ...' if len(found) > 5 else ''} (this machine's or its network's: "
                     "inject.seeds.allow.local is false, as for the job API); list them in fetcher.address.allow")
            return
        record_seeds(ctx.store, found)
        if found:
            log.info(f"inject: the address guard lets through the seed host{'' if len(found) == 1 else 's'} "
                     f"{', '.join(found[:5])}{' ...' if len(found) > 5 else ''} (this machine's or its network's)")
        if late:
            log.info(f"inject: {late} seed host{'' if late == 1 else 's'} not resolved within "
                     "inject.address.check.seconds: one of this machine's network must be listed in "
                     "fetcher.address.allow")

    def _dropped(self, url: str) -> str:
        """Why the normalizers gave None for `url`: the normalizer that dropped it, named, or not a valid URL."""
        normalizers = self.checker.normalizers
        steps = normalizers.explain(url, self.checker.scope) if normalizers is not None else []
        if steps and steps[-1][1] is None and steps[-1][0] != "urlnormalizer-basic":  # basic drops invalid URLs
            name, _, why = steps[-1]
            return f"{_shown(url)} dropped by the URL normalizer {name}{': ' + why if why else ''}"
        return f"not a valid URL: {_shown(url)}"

    def _seed(self, record: SeedLine, ctx: TaskContext) -> tuple[str, str, dict[str, str], float | None,
                                                                  int | None] | None:
        """(key, URL, metadata, score, interval) of a seed line; None for blank, filtered or bad lines."""
        where = f"{record.source}:{record.lineno}"
        try:
            parsed = parse_seed(record.text)
            if parsed is None:
                return None
            url, meta = parsed
            score, interval = self._numbers(meta)
            try:
                norm = self.checker.normalize(url)
            except ValueError as e:
                raise BadSeed(f"not a valid URL: {_shown(url)} ({e})") from None
            if norm is None:
                raise BadSeed(self._dropped(url))
            if self.checker.filter(norm) is None:
                ctx.incr("filtered")
                return None
            return reverse_url(norm), norm, meta, score, interval
        except (BadSeed, ValueError) as e:
            ctx.log(f"{where}: {e}; line skipped")
            ctx.incr("rejected")
            if len(self._rejected) < SHOWN_REJECTED:
                self._rejected.append(f"{where}: {e}")
            return None

    def _numbers(self, meta: dict[str, str]) -> tuple[float | None, int | None]:
        score = interval = None
        if "nutch.score" in meta:
            try:
                score = float(meta.pop("nutch.score"))
            except ValueError:
                raise BadSeed("nutch.score is not a number") from None
            if not math.isfinite(score):
                raise BadSeed("nutch.score is not a finite number")
        if "nutch.fetchInterval" in meta:
            try:
                interval = int(meta.pop("nutch.fetchInterval"))
            except ValueError:
                raise BadSeed("nutch.fetchInterval is not an integer (seconds)") from None
            if interval <= 0:
                raise BadSeed("nutch.fetchInterval must be a positive number of seconds")
            if interval > MAX_INTERVAL:
                raise BadSeed(f"nutch.fetchInterval must be at most {MAX_INTERVAL} seconds (a 32-bit int, as Nutch)")
        return score, interval

    def _inject(self, ctx: TaskContext, rows: dict[str, WebPage], key: str, url: str, meta: dict[str, str],
                score: float | None, interval: int | None) -> None:
        existing = rows.get(key)
        reopen = existing is not None and refused_by_guard(existing)
        if existing is not None and not (self.overwrite or self.update or reopen):
            ctx.incr("known")
            return
        if existing is not None and self.update and not reopen:
            page = existing
            if score is not None:
                page.score = score
                self.scoring.injected_score(url, page)
            if interval is not None:
                page.fetch_interval = interval
            if meta:
                page.metadata.update({k: v.encode() for k, v in meta.items()})
            ctx.write(page)
            ctx.incr("updated")
            return
        if existing is not None:  # -overwrite: a fresh row, as Nutch 2 did
            ctx.store.delete(key)
            ctx.incr("reopened" if reopen and not self.overwrite else "overwritten")
        page = WebPage(key) if existing is not None else WebPage.new(key)
        page.base_url = url
        page.status = int(CrawlStatus.INJECTED)
        page.fetch_time = int(time.time() * 1000)
        page.fetch_interval = interval if interval is not None else self.default_interval
        page.score = score if score is not None else self.default_score
        self.scoring.injected_score(url, page)
        page.metadata.update({k: v.encode() for k, v in meta.items()})
        Mark.INJECT.put(page, "y")
        set_distance(page, 0)
        ctx.write(page)
        rows[key] = page  # the same URL again in this chunk is known
        ctx.incr("injected")


def refused_by_guard(page: WebPage) -> bool:
    """The row is GONE because the address guard refused its host: a seed injected again is due at once, so that
    opening fetcher.address.allow (as the fetch's warning says) and running the same crawl again fetches it."""
    ps = page.protocol_status
    return (page.status == CrawlStatus.GONE and ps is not None and ps.code == ProtocolStatusCode.ACCESS_DENIED
            and bool(ps.args) and ps.args[0].startswith(DENIED))
