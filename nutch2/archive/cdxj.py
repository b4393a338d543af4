"""CDXJ indexes of `nutch2 warc` output, as cdxj-indexer (the indexer of pywb and py-wacz) makes them: one
`<name>.cdxj` beside each complete WARC file (its response and revisit records, sorted, the fields cdxj-indexer
writes by default), and `index.cdxj` for the whole folder, the sorted merge of every file's index, which pywb reads
as a collection's index.

The writer makes a file's lines as it writes its records (`record_line`: the offsets are known then, and reading
the file back through cdxj-indexer costs about as much as writing it, bench/RESULTS.md), with cdxj-indexer's own
key (surt) and formats; a WARC file without an index (an older export's) is indexed by cdxj-indexer itself.
tests/test_warc_revisits.py checks both against cdxj-indexer's output.

Both are written under a temporary name and renamed when complete; `index.cdxj` lists only files that are whole.
"""

from __future__ import annotations

import heapq
import io
import json
import logging
import os
import re
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from nutch2.errors import ConfigError

log = logging.getLogger(__name__)

INDEX_NAME = "index.cdxj"
SUFFIX = ".cdxj"
_OPEN = ".open"


def require_cdxj_indexer() -> None:
    """cdxj-indexer comes with the warc extra: a clear line when it is missing."""
    try:
        import cdxj_indexer  # noqa: F401
    except ImportError:
        raise ConfigError("CDXJ indexes need cdxj-indexer: pip install 'nutch2[warc]' (or export with -noCdxj)") \
            from None


DEFAULT_RECORDS = ["response", "revisit", "resource", "metadata"]  # cdxj-indexer's own
_MIME_END = re.compile(r"[;\s]")  # cdxj-indexer's RE_SPACE


def record_line(record: Any, offset: int, length: int, filename: str) -> str | None:
    """The line cdxj-indexer gives a response or revisit record (a warcio record as written, at `offset`, `length`
    bytes of gzip member); None for the records it leaves out (warcinfo, request, our warc-fields metadata)."""
    import surt
    from warcio.timeutils import iso_date_to_timestamp

    if record.rec_type not in ("response", "revisit"):
        return None
    headers, http = record.rec_headers, record.http_headers
    url = headers.get_header("WARC-Target-URI")
    index: dict[str, str] = {"url": url}
    if record.rec_type == "revisit":
        index["mime"] = "warc/revisit"
    elif http is not None and (ctype := http.get_header("Content-Type")):
        index["mime"] = _MIME_END.split(ctype.strip(), 1)[0].strip()
    if http is not None:
        index["status"] = http.get_statuscode()
    digest = headers.get_header("WARC-Payload-Digest")
    if digest:
        index["digest"] = digest
    index.update(length=str(length), offset=str(offset), filename=filename)
    try:
        key = surt.surt(url)
    except Exception:  # noqa: BLE001 - as cdxj-indexer: the URL itself
        key = url
    return f"{key} {iso_date_to_timestamp(headers.get_header('WARC-Date'))} {json.dumps(index)}\n"


def index_lines(path: Path, name: str) -> list[str]:
    """The CDXJ lines of one WARC file, sorted; `name` is the file name the lines give (the final one). The records
    are cdxj-indexer's defaults even where py-wacz was imported, which adds warcinfo to them for the whole process."""
    from cdxj_indexer.main import CDXJIndexer

    class Indexer(CDXJIndexer):
        DEFAULT_RECORDS = list(DEFAULT_RECORDS)

    out = io.StringIO()
    Indexer(output=out, inputs=[str(path)], filename=name).process_all()
    return sorted(out.getvalue().splitlines(keepends=True))


def write_file_index(path: Path, name: str, lines: list[str] | None = None) -> Path:
    """`<name>.cdxj` beside the WARC file at `path` (complete, maybe not yet renamed): its lines, sorted, or (None)
    cdxj-indexer's index of it."""
    target = path.with_name(name + SUFFIX)
    _write_atomic(target, sorted(lines) if lines is not None else index_lines(path, name))
    return target


def write_folder_index(folder: Path, warcs: list[Path]) -> tuple[Path, int]:
    """`index.cdxj` of `folder`: the merge of the indexes of `warcs`, its complete WARC files (a file without one,
    from an older export, is indexed first). Returns the index and its number of lines."""
    indexes = []
    for warc in warcs:
        index = warc.with_name(warc.name + SUFFIX)
        if not index.is_file():
            log.info(f"warc: indexing {warc.name}, which has no {SUFFIX} index yet")
            write_file_index(warc, warc.name)
        indexes.append(index)
    target = folder / INDEX_NAME
    _remove_left_over(folder)
    tmp = target.with_name(f"{INDEX_NAME}.{os.getpid()}{_OPEN}")
    lines = 0
    with ExitStack() as stack, open(tmp, "w", encoding="utf-8") as out:
        sources = [stack.enter_context(open(p, encoding="utf-8")) for p in indexes]
        for line in heapq.merge(*sources):
            out.write(line)
            lines += 1
        out.flush()
        os.fsync(out.fileno())
    os.replace(tmp, target)
    return target, lines


def _remove_left_over(folder: Path) -> None:
    """Remove the temporary indexes of exports that were killed (their process is gone)."""
    for tmp in folder.glob(f"{INDEX_NAME}.*{_OPEN}"):
        pid = tmp.name[len(INDEX_NAME) + 1:-len(_OPEN)]
        if pid.isdigit() and not _alive(int(pid)):
            tmp.unlink(missing_ok=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _write_atomic(target: Path, lines: list[str]) -> None:
    tmp = target.with_name(target.name + _OPEN)
    with open(tmp, "w", encoding="utf-8") as out:
        out.writelines(lines)
        out.flush()
        os.fsync(out.fileno())
    os.replace(tmp, target)
