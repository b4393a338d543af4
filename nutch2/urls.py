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
    return PublicSuffixList()


@lru_cache(maxsize=65536)
def domain_of_host(host: str) -> str:
    """Registered domain of a host (public suffix list); IP addresses and bare names are their own domain."""
    try:
        ipaddress.ip_address(host.strip("[]"))
        return host
    except ValueError:
        pass
    return _psl().privatesuffix(host) or host


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
