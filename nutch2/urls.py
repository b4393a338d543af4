"""URL helpers for jobs: normalizers and filters built from the configuration, host and domain of a URL."""

from __future__ import annotations

import ipaddress
import socket
from functools import lru_cache
from urllib.parse import urlsplit

from publicsuffixlist import PublicSuffixList

from nutch2.config import Configuration
from nutch2.errors import ConfigError
from nutch2.urlfilter import URLFilters
from nutch2.urlnormalizer import URLNormalizers


class UrlChecker:
    """Normalize then filter URLs for one scope, as Nutch's jobs do (each step can be switched off)."""

    def __init__(self, conf: Configuration, scope: str, normalize: bool = True, filter: bool = True) -> None:
        self.scope = scope
        self.normalizers = URLNormalizers(scope) if normalize else None
        self.filters = load_filters(conf) if filter else None

    def normalize(self, url: str) -> str | None:
        return self.normalizers.normalize(url, self.scope) if self.normalizers else url

    def filter(self, url: str) -> str | None:
        return self.filters.filter(url) if self.filters else url

    def check(self, url: str) -> str | None:
        """The normalized URL if it passes the filters, else None."""
        norm = self.normalize(url)
        return None if norm is None else self.filter(norm)


def load_filters(conf: Configuration) -> URLFilters:
    path = conf.resource(conf.get_str("urlfilter.regex.file"))
    try:
        return URLFilters.from_file(path, max_length=conf.get_int("urlfilter.max.length"))
    except OSError as e:
        raise ConfigError(f"cannot read URL filter file {path}: {e.strerror}; check urlfilter.regex.file") from None
    except ValueError as e:
        raise ConfigError(f"{e}; fix the rule in the URL filter file") from None


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


@lru_cache(maxsize=65536)
def host_of(url: str) -> str:
    """Lower-case host of a URL ('' when it has none)."""
    try:
        return (urlsplit(url).hostname or "").lower()
    except ValueError:
        return ""


@lru_cache(maxsize=1)
def _psl() -> PublicSuffixList:
    # the ICANN section only (as Nutch's URLUtil): private suffixes such as uk.com or github.io are not
    # registries, and a host under an unknown TLD is its own domain rather than a suffix of one
    return PublicSuffixList(only_icann=True, accept_unknown=False)


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host.strip("[]"))
        return True
    except ValueError:
        return False


@lru_cache(maxsize=65536)
def domain_of_host(host: str) -> str:
    """Registered domain of a host (Nutch's URLUtil.getDomainName): the public suffix (ICANN section) plus one
    label; IP addresses, bare names and hosts under unknown suffixes are their own domain. Trailing dot ignored."""
    host = host.lower().rstrip(".")
    if _is_ip(host):
        return host
    return _psl().privatesuffix(host) or host


def domain_suffix_of_host(host: str) -> str | None:
    """Public suffix of a host (ICANN section; URLUtil.getDomainSuffix), None for IP addresses and unknown TLDs."""
    host = host.lower().rstrip(".")
    return None if not host or _is_ip(host) else _psl().publicsuffix(host)


def top_level_domain_of_host(host: str) -> str | None:
    """Top-level domain of a host when it is a known one (URLUtil.getTopLevelDomainName), else None."""
    suffix = domain_suffix_of_host(host)
    return suffix.rsplit(".", 1)[-1] if suffix else None


def _java_split_count(text: str, sep: str) -> int:
    """len(text.split(sep)) as Java counts it: trailing empty strings are dropped."""
    parts = text.split(sep)
    while len(parts) > 1 and parts[-1] == "":
        parts.pop()
    return 0 if parts == [""] and text else len(parts)


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


def domain_of(url: str) -> str:
    return domain_of_host(host_of(url))


@lru_cache(maxsize=65536)
def ip_of_host(host: str) -> str:
    """The host's IP address (resolved once per process), or the host itself when it cannot be resolved."""
    try:
        return socket.gethostbyname(host)
    except OSError:
        return host


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
