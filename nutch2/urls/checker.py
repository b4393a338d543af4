"""URL helpers for jobs: the normalizer and filter chains of a scope built from the configuration (the active
url-normalizer and url-filter plugins), redirects' representative URLs, fetch queue ids."""

from __future__ import annotations

from urllib.parse import urlsplit

from nutch2.config import Configuration
from nutch2.errors import ConfigError
from nutch2.urls.domains import domain_of_host, ip_of_host
from nutch2.urls.filters import URLFilters
from nutch2.urls.normalizers import URLNormalizers


class UrlChecker:
    """Normalize then filter URLs for one scope, as Nutch's jobs do (each step can be switched off)."""

    def __init__(self, conf: Configuration, scope: str, normalize: bool = True, filter: bool = True) -> None:
        self.scope = scope
        self.normalizers = URLNormalizers.from_conf(conf, scope) if normalize else None
        self.filters = URLFilters.from_conf(conf) if filter else None

    def normalize(self, url: str) -> str | None:
        return self.normalizers.normalize(url, self.scope) if self.normalizers else url

    def filter(self, url: str) -> str | None:
        return self.filters.filter(url) if self.filters else url

    def check(self, url: str) -> str | None:
        """The normalized URL if it passes the filters, else None."""
        norm = self.normalize(url)
        return None if norm is None else self.filter(norm)


def strip_credentials(url: str) -> str:
    """``url`` without its ``user:password@`` part, which must never be stored (redirect targets, status args)."""
    if "@" not in url:
        return url
    try:
        netloc = urlsplit(url).netloc
    except ValueError:
        return url
    if "@" not in netloc:
        return url
    return url.replace(f"//{netloc}", "//" + netloc.rpartition("@")[2], 1)


def _java_split_count(text: str, sep: str) -> int:
    """len(text.split(sep)) as Java counts it: trailing empty strings are dropped."""
    parts = text.split(sep)
    while len(parts) > 1 and parts[-1] == "":
        parts.pop()
    return 0 if parts == [""] and text else len(parts)


def repr_through(url: str, redirects: list[tuple[str, bool]]) -> str | None:
    """The repr URL of a page reached through redirects followed inline (chooseRepr hop by hop, as Nutch's fetcher
    does), None for a page fetched at its own URL (no stale repr URL is left to index it under)."""
    repr_url = url
    for target, temporary in redirects:
        repr_url = choose_repr(repr_url, target, temporary)
    return repr_url if redirects else None


def choose_repr(src: str, dst: str, temp: bool) -> str:
    """The representative URL of a redirect from ``src`` to ``dst`` (Nutch's URLUtil.chooseRepr, after Yahoo!
    Slurp): another domain -> dst; permanent -> src when src is a site root, else dst; temporary -> the root one,
    else (same host) the one with fewer path segments, then the shorter path, else the host with fewer labels."""
    try:
        s, d = urlsplit(src), urlsplit(dst)
        src_host, dst_host = (s.hostname or "").lower(), (d.hostname or "").lower()
    except ValueError:
        return dst
    if not s.scheme or not d.scheme:
        return dst
    if domain_of_host(src_host) != domain_of_host(dst_host):
        return dst
    src_file = s.path + ("?" + s.query if s.query else "")
    dst_file = d.path + ("?" + d.query if d.query else "")
    src_root, dst_root = src_file in ("", "/"), dst_file in ("", "/")
    if not temp:
        return src if src_root else dst
    if src_root != dst_root:
        return src if src_root else dst
    if not src_root and src_host == dst_host:
        src_segments, dst_segments = _java_split_count(src_file, "/"), _java_split_count(dst_file, "/")
        if src_segments != dst_segments:
            return dst if dst_segments < src_segments else src
        return dst if len(dst_file) < len(src_file) else src
    return dst if len(dst_host.split(".")) < len(src_host.split(".")) else src


def queue_id(url: str, mode: str) -> str:
    """Nutch's fetch queue / partition id: protocol://host | domain | ip, per byHost|byDomain|byIP."""
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    mode = mode.lower()
    if mode == "bydomain":
        name = domain_of_host(host)
    elif mode == "byip":
        name = ip_of_host(host)
    elif mode == "byhost":
        name = host
    else:
        raise ConfigError(f"queue mode {mode!r} is not valid; use byHost, byDomain or byIP")
    return f"{parts.scheme}://{name}"
