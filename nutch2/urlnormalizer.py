"""Basic URL normalisation, like Nutch's urlnormalizer-basic.

Rules (the same for every scope today): lower-case scheme and host, IDN host to punycode, drop a
trailing dot of the host, drop the default port (http 80, https 443, ftp 21), drop the fragment,
normalise percent-encoding (upper-case hex, decode unreserved characters, encode unsafe ones, ``%``
not followed by two hex digits becomes ``%25``), resolve ``.`` and ``..`` path segments, and use
``/`` for an empty path. Query arguments keep their order. Only http, https, ftp and file URLs are
normalised; anything else (mailto:, javascript:, garbage) gives None.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache
from urllib.parse import SplitResult, urlsplit, urlunsplit

from w3lib.url import safe_url_string

# Scopes Nutch passes to its normalizers; each may get its own rules later.
SCOPE_DEFAULT = "default"
SCOPES = frozenset({"default", "inject", "generate_host_count", "partition", "fetcher", "outlink", "indexer"})

DEFAULT_PORTS = {"http": 80, "https": 443, "ftp": 21}
SUPPORTED_SCHEMES = frozenset({"http", "https", "ftp", "file"})
HOST_REQUIRED_SCHEMES = frozenset({"http", "https", "ftp"})

_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
_PERCENT_RE = re.compile(r"%([0-9A-Fa-f]{2})?")
_HOST_LABEL_RE = re.compile(r"[a-z0-9_](?:[a-z0-9_-]*[a-z0-9_])?")
_IPV6_RE = re.compile(r"\[[0-9a-f:.]+\]")
_WHATWG_STRIPPED = str.maketrans("", "", "\t\r\n")


def _fix_percent(match: re.Match[str]) -> str:
    """One ``%`` escape: decode it if unreserved, else upper-case it; a lone ``%`` becomes ``%25``."""
    hex_digits = match.group(1)
    if hex_digits is None:
        return "%25"
    char = chr(int(hex_digits, 16))
    return char if char in _UNRESERVED else "%" + hex_digits.upper()


def normalize_percent_encoding(text: str) -> str:
    """Normalise the ``%`` escapes of an already-quoted URL component."""
    return _PERCENT_RE.sub(_fix_percent, text)


def remove_dot_segments(path: str) -> str:
    """Resolve ``.`` and ``..`` segments of an absolute path (RFC 3986 5.2.4): ``/a/./b/../c`` -> ``/a/c``."""
    if not path.startswith("/"):
        return path
    segments = path.split("/")[1:]
    out: list[str] = []
    for i, segment in enumerate(segments):
        last = i == len(segments) - 1
        if segment in (".", ".."):
            if segment == ".." and out:
                out.pop()
            if last:
                out.append("")
        else:
            out.append(segment)
    return "/" + "/".join(out)


def _normalize_host(host: str) -> str | None:
    """Lower-cased host without a trailing dot, or None when it is not a valid host name."""
    host = host.lower()
    if host.startswith("["):
        return host if _IPV6_RE.fullmatch(host) else None
    if host.endswith("."):
        host = host[:-1]
    labels = host.split(".")
    if not all(len(label) <= 63 and _HOST_LABEL_RE.fullmatch(label) for label in labels):
        return None
    return host


def _normalize_netloc(parts: SplitResult) -> str | None:
    """Rebuild ``user@host:port`` with host and port normalised; None when invalid."""
    try:
        port = parts.port
    except ValueError:
        return None
    netloc = parts.netloc
    hostport = netloc.rpartition("@")[2]
    userinfo = netloc[: len(netloc) - len(hostport)]
    if hostport.startswith("["):
        host = hostport[: hostport.find("]") + 1]
    else:
        host = hostport.partition(":")[0]
    if not host:
        return "" if parts.scheme not in HOST_REQUIRED_SCHEMES else None
    norm_host = _normalize_host(host)
    if norm_host is None:
        return None
    if port is not None and port != DEFAULT_PORTS.get(parts.scheme):
        return f"{userinfo}{norm_host}:{port}"
    return f"{userinfo}{norm_host}"


# URLs that the basic rules leave unchanged: lower-case http(s), a plain host, no default port, no '%', no
# fragment, a path without dot segments. Most URLs a crawl meets look like this, so they skip the full work.
_ALREADY_NORMAL = re.compile(
    r"(?P<scheme>https?)://(?P<host>[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*)"
    r"(?::(?P<port>[1-9][0-9]{0,4}))?(?P<path>/[A-Za-z0-9._~!$&'()*+,;=:@/-]*)"
    r"(?:\?[A-Za-z0-9._~!$&'()*+,;=:@/?-]+)?"
)
_DOT_SEGMENT = re.compile(r"/\.\.?(?:/|$)")


def _already_normal(url: str) -> bool:
    m = _ALREADY_NORMAL.fullmatch(url)
    if m is None or _DOT_SEGMENT.search(m.group("path")):
        return False
    port = m.group("port")
    return port is None or (int(port) != DEFAULT_PORTS[m.group("scheme")] and int(port) <= 65535)


@lru_cache(maxsize=65536)
def _basic_normalize(url: str) -> str | None:
    """Apply the basic rules to ``url``; None when it cannot be normalised."""
    return url if _already_normal(url) else _full_normalize(url)


def _full_normalize(url: str) -> str | None:
    """The basic rules, applied step by step."""
    url = url.strip().translate(_WHATWG_STRIPPED)
    raw = urlsplit(url)
    scheme = raw.scheme.lower()
    if scheme not in SUPPORTED_SCHEMES:
        return None
    if scheme in HOST_REQUIRED_SCHEMES and not url[len(scheme) + 1 :].startswith("//"):
        return None
    try:
        parts = urlsplit(safe_url_string(url))
    except (ValueError, UnicodeError):
        return None
    netloc = _normalize_netloc(parts)
    if netloc is None:
        return None
    path = remove_dot_segments(normalize_percent_encoding(parts.path)) or "/"
    if not path.startswith("/"):
        path = "/" + path
    query = normalize_percent_encoding(parts.query)
    return urlunsplit((parts.scheme.lower(), netloc, path, query, ""))


class URLNormalizers:
    """URL normalizers for one scope (Nutch's URLNormalizers); see the module docstring for the rules."""

    def __init__(self, scope: str = SCOPE_DEFAULT) -> None:
        self.scope = scope

    def rules(self, scope: str | None = None) -> tuple[Callable[[str], str | None], ...]:
        """Normalisation steps of ``scope`` (default: this instance's); every scope has the basic rules."""
        _ = scope or self.scope  # per-scope rules go here
        return (_basic_normalize,)

    def normalize(self, url: str, scope: str | None = None) -> str | None:
        """Normalised ``url``, or None when it cannot be normalised (garbage or unsupported scheme).

        ``scope`` overrides the scope given at construction; unknown scopes use the default rules.
        """
        for rule in self.rules(scope):
            normalized = rule(url)
            if normalized is None:
                return None
            url = normalized
        return url


_DEFAULT = URLNormalizers()


def normalize(url: str) -> str | None:
    """Normalise ``url`` with the default scope; None when it cannot be normalised."""
    return _DEFAULT.normalize(url)
