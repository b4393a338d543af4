"""urlnormalizer-basic: basic URL normalisation, as Nutch's.

Rules (the same for every scope today): lower-case scheme and host; a percent-encoded host is decoded first;
international host names to punycode by IDNA2008 with UTS #46 mapping (non-transitional, as browsers do: ``straße.de``
-> ``xn--strae-oqa.de``); drop a trailing dot of the host, the default port (http 80, https 443, ftp 21), an empty
port, the fragment, and the user info of http(s) URLs (kept for ftp and file, which need it); normalise
percent-encoding (upper-case hex, decode unreserved characters, encode unsafe ones, ``%`` not followed by two hex
digits becomes ``%25``); collapse repeated slashes of the path and resolve ``.`` and ``..`` segments; use ``/`` for an
empty path. Query arguments keep their order. Only http, https, ftp and file URLs are normalised; anything else
(mailto:, javascript:, garbage, a host-less ``http:/x``) gives None.
"""

from __future__ import annotations

import ipaddress
import re
from functools import lru_cache
from urllib.parse import quote, unquote_to_bytes, urlsplit

import idna

from nutch2.urls.normalizers import URLNormalizer

DEFAULT_PORTS = {"http": 80, "https": 443, "ftp": 21}
SUPPORTED_SCHEMES = frozenset({"http", "https", "ftp", "file"})
HOST_REQUIRED_SCHEMES = frozenset({"http", "https", "ftp"})
# Schemes whose user info is dropped: credentials must not end up in row keys (Nutch's NUTCH-3087).
USERINFO_DROPPED_SCHEMES = frozenset({"http", "https"})

_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
# RFC 3986 pchar without unreserved (quote keeps those) plus '/' and '%' (escapes are normalised afterwards)
_PATH_SAFE = "!$&'()*+,;=:@/%"
_QUERY_SAFE = _PATH_SAFE + "?"
_PERCENT_RE = re.compile(r"%([0-9A-Fa-f]{2})?")
_HOST_LABEL_RE = re.compile(r"[a-z0-9_](?:[a-z0-9_-]*[a-z0-9_])?")
_PORT_RE = re.compile(r"[0-9]*")
_SLASHES = re.compile(r"//+")
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


def normalize_path(path: str) -> str:
    """Percent-encoding normalised, repeated slashes collapsed, dot segments resolved; '/' when empty."""
    path = _SLASHES.sub("/", normalize_percent_encoding(quote(path, safe=_PATH_SAFE)))
    path = remove_dot_segments(path if path.startswith("/") else "/" + path)
    return path


def host_to_ascii(host: str) -> str | None:
    """A host name as lower-case ASCII: percent-escapes decoded, IDNA2008 + UTS #46 (non-transitional) applied,
    trailing dot dropped; IPv4/IPv6 literals validated. None when it is not a valid host."""
    if "%" in host:
        if re.search(r"%(?![0-9A-Fa-f]{2})", host):
            return None
        try:
            host = unquote_to_bytes(host).decode("utf-8")
        except UnicodeDecodeError:
            return None
    if host.startswith("["):
        if not host.endswith("]"):
            return None
        try:
            ipaddress.IPv6Address(host[1:-1])
        except ValueError:
            return None
        return host.lower()
    if host.endswith("."):
        host = host[:-1]
    if not host.isascii():
        try:
            host = idna.encode(host, uts46=True, transitional=False).decode("ascii")
        except (idna.IDNAError, UnicodeError, ValueError):
            return None
    host = host.lower()
    labels = host.split(".")
    if not all(len(label) <= 63 and _HOST_LABEL_RE.fullmatch(label) for label in labels):
        return None
    return host


def idna_to_unicode(host: str) -> str | None:
    """The Unicode form of a host by IDNA2008 + UTS #46; None when it is not valid IDNA (bad punycode...)."""
    try:
        return idna.decode(host, uts46=True)
    except (idna.IDNAError, UnicodeError, ValueError):
        return None


def host_to_unicode(host: str) -> str:
    """The Unicode form of a host for display; the lower-cased host itself when it is not valid IDNA."""
    return idna_to_unicode(host) or host.lower()


def _split_authority(authority: str) -> tuple[str, str, str] | None:
    """(user info, host, port) of an authority; None when the port is not a number."""
    userinfo, _, hostport = authority.rpartition("@")
    if hostport.startswith("["):
        end = hostport.find("]")
        host, rest = (hostport[: end + 1], hostport[end + 1 :]) if end > 0 else (hostport, "")
        port = rest[1:] if rest.startswith(":") else ("" if not rest else None)
    else:
        host, _, port = hostport.partition(":")
    if port is None or not _PORT_RE.fullmatch(port):
        return None
    return userinfo, host, port


def _normalize_authority(scheme: str, authority: str) -> str | None:
    """``[user@]host[:port]`` normalised; None when invalid."""
    parts = _split_authority(authority)
    if parts is None:
        return None
    userinfo, host, port = parts
    if not host:
        return "" if scheme not in HOST_REQUIRED_SCHEMES else None
    norm_host = host_to_ascii(host)
    if norm_host is None:
        return None
    if port:
        number = int(port)
        if number > 65535:
            return None
        port = "" if number == DEFAULT_PORTS.get(scheme) else str(number)
    if userinfo and scheme not in USERINFO_DROPPED_SCHEMES:
        norm_host = f"{userinfo}@{norm_host}"
    return f"{norm_host}:{port}" if port else norm_host


# URLs that the basic rules leave unchanged: lower-case http(s), a plain host, no default port, no '%', no
# fragment, a path without dot segments or repeated slashes. Most URLs a crawl meets look like this, so they skip
# the full work.
_ALREADY_NORMAL = re.compile(
    r"(?P<scheme>https?)://(?P<host>[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*)"
    r"(?::(?P<port>[1-9][0-9]{0,4}))?(?P<path>/[A-Za-z0-9._~!$&'()*+,;=:@/-]*)"
    r"(?:\?[A-Za-z0-9._~!$&'()*+,;=:@/?-]+)?"
)
_DOT_SEGMENT = re.compile(r"/\.\.?(?:/|$)|//")


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
    scheme, colon, rest = url.partition(":")
    scheme = scheme.lower()
    if not colon or scheme not in SUPPORTED_SCHEMES:
        return None
    if scheme in HOST_REQUIRED_SCHEMES and "\\" in url:
        # as browsers (WHATWG) do for these schemes: a backslash before the query is a slash, so
        # "http://evil.com\\@good.com/" is a URL of evil.com, not good.com
        cut = min((i for i in (url.find("?"), url.find("#")) if i >= 0), default=len(url))
        url = url[:cut].replace("\\", "/") + url[cut:]
        rest = url.partition(":")[2]
    has_authority = rest.startswith("//")
    if scheme in HOST_REQUIRED_SCHEMES and not has_authority:
        return None
    try:
        parts = urlsplit(url)
        authority = _normalize_authority(scheme, parts.netloc) if has_authority else None
        if has_authority and authority is None:
            return None
        path = normalize_path(parts.path)
        query = normalize_percent_encoding(quote(parts.query, safe=_QUERY_SAFE))
    except (ValueError, UnicodeError):
        return None
    prefix = f"{scheme}://{authority}" if authority is not None else f"{scheme}:"
    return prefix + path + ("?" + query if query else "")


class BasicURLNormalizer(URLNormalizer):
    """The basic rules (the module docstring), the same for every scope."""

    nutch_class = "org.apache.nutch.net.urlnormalizer.basic.BasicURLNormalizer"

    def normalize(self, url: str, scope: str) -> str | None:
        return _basic_normalize(url)


def normalize(url: str) -> str | None:
    """``url`` by the basic rules; None when it cannot be normalised."""
    return _basic_normalize(url)
