"""A WebPage row as JSON with Nutch's field names (readdb -url / -dump, the searcher's page view and API)."""

from __future__ import annotations

import base64
from datetime import UTC, datetime
from typing import Any

from nutch2.crawldb.tablestats import status_name
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
    }
    if text:
        doc["text"] = page.text
    if content:
        doc["content"] = base64.b64encode(page.content).decode("ascii") if page.content else None
    return doc
