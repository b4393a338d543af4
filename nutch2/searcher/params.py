"""Query parameters of the Searcher's routes: checked once, turned into one clear message when wrong."""

from __future__ import annotations

from collections.abc import Mapping

from nutch2.errors import NutchError
from nutch2.urls.tableutil import reverse_url

MAX_URL = 4096


class ParamError(NutchError):
    """A request parameter is missing or wrong (HTTP 400; 404 when `status` says so); `link` (href, text): where
    an error page sends the user next."""

    def __init__(self, message: str, status: int = 400, link: tuple[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.link = link


def int_param(params: Mapping[str, str], name: str, default: int, lo: int, hi: int | None = None,
              clamp: bool = False) -> int:
    """An integer parameter in [lo, hi]; out of range is an error, or clamped to hi with `clamp`."""
    raw = params.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = int(raw.strip())
    except ValueError:
        raise ParamError(f"{name}={raw[:40]!r} is not a whole number; give e.g. {name}={default}") from None
    if value < lo:
        raise ParamError(f"{name}={value} is too small; it must be at least {lo}")
    if hi is not None and value > hi:
        if clamp:
            return hi
        raise ParamError(f"{name}={value} is too large; it must be at most {hi}")
    return value


def url_param(params: Mapping[str, str]) -> tuple[str, str]:
    """The `url` parameter and its row key."""
    url = (params.get("url") or "").strip()
    if not url:
        raise ParamError("url is missing; give the page's address, e.g. ?url=https://example.com/")
    if len(url) > MAX_URL:
        raise ParamError(f"url is {len(url)} characters long; at most {MAX_URL} are accepted")
    try:
        return url, reverse_url(url)
    except ValueError as e:
        raise ParamError(f"url {url[:200]!r}: {e}; give an absolute URL such as https://example.com/") from None
