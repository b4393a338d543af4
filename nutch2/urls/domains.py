"""Hosts and domains of URLs: the registered domain (the ICANN section of the public suffix list, as Nutch's
URLUtil), public suffix and top-level domain, and a host's IP address; cached per process."""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable
from functools import lru_cache
from urllib.parse import urlsplit

from publicsuffixlist import PublicSuffixList

from nutch2.errors import ConfigError


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


def domain_of(url: str) -> str:
    return domain_of_host(host_of(url))


@lru_cache(maxsize=65536)
def ip_of_host(host: str) -> str:
    """The host's IP address (resolved once per process), or the host itself when it cannot be resolved."""
    try:
        return socket.gethostbyname(host)
    except OSError:
        return host


def domain_of_url(url: str) -> str:
    """Registered domain of a URL's host."""
    return domain_of_host(host_of(url))


def site_of(mode: str) -> Callable[[str], str]:
    """What db.ignore.external.links and db.ignore.internal.links compare (Nutch's db.ignore.external.links.mode):
    the URL's host ("byHost") or its registered domain ("byDomain"). A ConfigError for another mode."""
    m = mode.strip().lower()
    if m == "byhost":
        return host_of
    if m == "bydomain":
        return domain_of_url  # a module's function: a job holding it still pickles to another process
    raise ConfigError(f"db.ignore.external.links.mode={mode!r} is not known; use byHost or byDomain")

