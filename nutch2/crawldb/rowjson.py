"""A WebPage row with Nutch's field names: as JSON (readdb -dump, the job API, the searcher's page view and API) and
as `name:<TAB>value` lines for people (readdb -url, as Nutch's WebTableReader prints a row)."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

from nutch2.crawldb.tablestats import status_name
from nutch2.marks import DIST, Mark
from nutch2.rowkeys import (
    CAPTURE_KEY,
    CASH_KEY,
    CLAIM,
    DEFER_KEY,
    IP_KEY,
    LASTMOD_KEY,
    NOINDEX_KEY,
    STAGE_KEY,
    TRUNCATED_KEY,
    UPDATE_RUN,
)
from nutch2.urls.tableutil import unreverse_url
from nutch2.webpage import WebPage


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
        "sitemaps": dict(page.sitemaps),
        "stmPriority": page.stm_priority,
    }
    if text:
        doc["text"] = page.text
    if content:
        doc["content"] = base64.b64encode(page.content).decode("ascii") if page.content else None
    return doc


# ---------------------------------------------------------------- readdb -url
def row_lines(page: WebPage) -> Iterator[str]:
    """The row for people, one `name:<TAB>value` per line: text as text (control characters escaped, so a value
    stays on its line), digests in hex, statuses with their numbers, times as dates; markers and metadata one
    entry per line, the keys nutch2 keeps for itself under a readable name with their stored key."""
    ps, parse = page.protocol_status, page.parse_status
    fields: list[tuple[str, Any]] = [
        ("url", unreverse_url(page.key)), ("key", page.key), ("baseUrl", page.base_url),
        ("status", f"{int(page.status)} ({status_name(page.status)})"),
        ("fetchTime", iso_time(page.fetch_time)), ("prevFetchTime", iso_time(page.prev_fetch_time)),
        ("fetchInterval", _interval(page.fetch_interval)), ("retriesSinceFetch", page.retries_since_fetch),
        ("modifiedTime", iso_time(page.modified_time)), ("prevModifiedTime", iso_time(page.prev_modified_time)),
        ("protocolStatus", _status(f"{int(ps.code)} ({ps.name})", ps.args, ps.last_modified)),
        ("parseStatus", _status(f"{int(parse.major_code)}/{int(parse.minor_code)} ({parse.name})", parse.args)),
        ("contentType", page.content_type),
        ("content", f"{len(page.content):,} bytes" if page.content else None),
        ("reprUrl", page.repr_url), ("title", page.title), ("score", page.score),
        ("signature", page.signature.hex() if page.signature else None),
        ("prevSignature", page.prev_signature.hex() if page.prev_signature else None),
        ("batchId", page.batch_id),
        ("stmPriority", page.stm_priority or None),
    ]
    for name, value in fields:
        if value is not None and value != "":
            yield f"{name}:\t{_shown(str(value))}"
    for key, value in sorted(page.markers.items()):
        yield f"marker {_shown(_MARKERS.get(key, key))}:\t{_shown(value)}"
    for key, raw in sorted(page.metadata.items()):
        label, show = METADATA_LABELS.get(key, (key, _bytes))
        yield f"metadata {_shown(label)}:\t{_shown(show(bytes(raw)))}"
    for name, links in (("outlink", page.outlinks), ("inlink", page.inlinks), ("sitemap", page.sitemaps)):
        for url, anchor in links.items():
            yield f"{name}:\t{_shown(url)}" + (f"\t{_shown(anchor)}" if anchor else "")
    for header, value in page.headers.items():
        yield f"header:\t{_shown(header)}\t{_shown(value)}"
    if page.text:
        yield f"text:\t{_shown(page.text)}"


def _shown(text: str) -> str:
    """Text on one line: control and other unprintable characters as escapes (\\n, \\x00, \\u200b)."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def _status(name: str, args: list[str], last_modified: int = 0) -> str:
    extra = ([f"args {', '.join(args)}"] if args else []) + ([f"lastModified {iso_time(last_modified)}"]
                                                            if last_modified else [])
    return ", ".join([name, *extra])


def _interval(seconds: int) -> str | None:
    if not seconds:
        return None
    return f"{seconds} s ({seconds / 86400:g} days)" if seconds >= 86400 else f"{seconds} s"


def _bytes(raw: bytes) -> str:
    """A metadata value: its text when it is UTF-8 text, else its bytes in hex."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return f"0x{raw.hex()}"
    return text if all(c.isprintable() or c in "\t\n\r" for c in text) else f"0x{raw.hex()}"


def _number(raw: bytes) -> str:
    try:
        return repr(float(raw.decode("ascii")))
    except (UnicodeDecodeError, ValueError):
        return _bytes(raw)


def _time_ms(raw: bytes) -> str:
    try:
        return iso_time(int(raw.decode("ascii"))) or "0"
    except (UnicodeDecodeError, ValueError):
        return _bytes(raw)


def _flag(raw: bytes) -> str:
    return "yes" if raw in (b"y", b"true", b"1") else _bytes(raw)


def _claim(raw: bytes) -> str:
    batch, _, rest = _bytes(raw).partition("/")
    run, _, count = rest.partition("/")
    return f"batch {batch}, run {run}, claim {count or 1}" if run else _bytes(raw)


def _capture(raw: bytes) -> str:
    """The last WARC response record of the row (JSON, nutch2/archive/warc.py Capture) on one line."""
    try:
        c = json.loads(raw)
        return f"{c['record_id']} of {c['date']} in {c['folder']}/{c['file']} ({c['digest']})"
    except (ValueError, TypeError, KeyError):
        return _bytes(raw)


def _staged(raw: bytes) -> str:
    run, _, values = raw.partition(b"\n")
    return f"run {_bytes(run)}: {_bytes(values)}"


_MARKERS = {Mark.INJECT.value: "inject (_injmrk_)", Mark.GENERATE.value: "generate (_gnmrk_)",
            Mark.FETCH.value: "fetch (_ftcmrk_)", Mark.PARSE.value: "parse (__prsmrk__)",
            Mark.UPDATEDB.value: "updatedb (_updmrk_)", Mark.INDEX.value: "index (_idxmrk_)",
            DIST: "distance (dist)"}
# how readdb shows the metadata keys nutch2 keeps for itself (nutch2/rowkeys.py; tests/test_cli.py checks all are here)
METADATA_LABELS: dict[str, tuple[str, Callable[[bytes], str]]] = {
    CASH_KEY: ("cash (_csh_)", _number),
    CLAIM: ("fetch claim (_ftclaim_)", _claim),
    UPDATE_RUN: ("updatedb run (_updrun_)", _bytes),
    STAGE_KEY: ("updatedb staged (_updstg_)", _staged),
    TRUNCATED_KEY: ("truncated (_trunc_)", _flag),
    DEFER_KEY: ("deferred until (_defer_)", _time_ms),
    NOINDEX_KEY: ("noindex (_noidx_)", _flag),
    IP_KEY: ("ip (_ip_)", _bytes),
    LASTMOD_KEY: ("sitemap lastmod (_stmlm_)", _time_ms),
    CAPTURE_KEY: ("warc capture (_warc_)", _capture),
}
