"""Response headers as a row stores them, from any source (a fetch, a WARC record).

The fetcher reads headers with http.client, which refuses a response with more than 100 header fields or a header
line longer than 64 KiB (`http.client._MAXHEADERS`, `_MAXLINE`): such a response is a fetch error and stores no
headers. `header_block_problem` applies the same limits to headers from elsewhere (warcimport), so no source can
store what a fetch would not. `stored_headers` is what goes into the row: `Location` and `Content-Location`
without the `user:password@` part, which outlinks and redirect targets drop as well.
"""

from __future__ import annotations

import email.utils
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from urllib.parse import urlsplit

from nutch2.urls.checker import strip_credentials

MAX_HEADERS = 100  # http.client._MAXHEADERS
MAX_HEADER_LINE = 65536  # http.client._MAXLINE, bytes of one "Name: value" line
_URL_HEADERS = ("location", "content-location")


def header_block_problem(pairs: Iterable[tuple[str, str]]) -> str | None:
    """Why a fetch would have refused these header fields, or None when it would have taken them."""
    n = 0
    for name, value in pairs:
        n += 1
        if n > MAX_HEADERS:
            return f"more than {MAX_HEADERS} header fields"
        if len(name) + len(value) + 2 > MAX_HEADER_LINE:
            return f"a header line longer than {MAX_HEADER_LINE} bytes"
    return None


def stored_headers(headers: Mapping[str, str]) -> dict[str, str]:
    """The headers to store: URL-valued ones (Location, Content-Location) without a `user:password@` part."""
    out = dict(headers)
    for name, value in out.items():
        if name.lower() in _URL_HEADERS and "@" in value:
            try:
                netloc = urlsplit(value.strip()).netloc
            except ValueError:
                netloc = ""
            if "@" in netloc:
                out[name] = strip_credentials(value.strip())
    return out


def http_date(ms: int) -> str:
    """ms since the epoch as an HTTP date (RFC 9110 IMF-fixdate), as If-Modified-Since sends it."""
    return email.utils.formatdate(ms / 1000.0, usegmt=True)


def http_date_ms(value: str | None, iso: bool = False) -> int | None:
    """An HTTP date (IMF-fixdate and the obsolete RFC 850 and asctime forms) in ms since the epoch; with `iso`
    an ISO 8601 time too. None when absent or neither."""
    text = (value or "").strip()
    if not text:
        return None
    try:
        dt = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        if not iso:
            return None
        try:
            dt = datetime.fromisoformat(text)
        except ValueError:
            return None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    try:
        return int(dt.timestamp() * 1000)
    except (OverflowError, ValueError):
        return None
