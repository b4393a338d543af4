"""Nutch 2 status codes: CrawlStatus, ProtocolStatus codes and ParseStatus codes."""

from __future__ import annotations

from enum import IntEnum


class CrawlStatus(IntEnum):
    """Status of a WebPage row in the crawl db (Nutch's CrawlStatus)."""

    INJECTED = 0  # just injected, never fetched
    UNFETCHED = 1
    FETCHED = 2
    GONE = 3
    REDIR_TEMP = 4
    REDIR_PERM = 5
    DUPLICATE = 7  # Nutch 1.x's db_duplicate: another row of the same signature was kept (nutch2 dedup)
    RETRY = 0x22
    NOTMODIFIED = 0x26


class ProtocolStatusCode(IntEnum):
    """Outcome of one fetch (Nutch's ProtocolStatusCodes)."""

    NONE = 0
    SUCCESS = 1
    FAILED = 2
    PROTO_NOT_FOUND = 10
    GONE = 11
    MOVED = 12
    TEMP_MOVED = 13
    NOTFOUND = 14
    RETRY = 15
    EXCEPTION = 16
    ACCESS_DENIED = 17
    ROBOTS_DENIED = 18
    REDIR_EXCEEDED = 19
    NOTFETCHING = 20
    NOTMODIFIED = 21
    WOULDBLOCK = 22
    BLOCKED = 23


class ParseMajor(IntEnum):
    """ParseStatus major codes."""

    NOTPARSED = 0
    SUCCESS = 1
    FAILED = 2


class ParseMinor(IntEnum):
    """ParseStatus minor codes."""

    OK = 0
    REDIRECT = 100
    EXCEPTION = 200
    FAILED_TRUNCATED = 202
    FAILED_INVALID_FORMAT = 203
    FAILED_MISSING_PARTS = 204
    FAILED_MISSING_CONTENT = 205


def protocol_to_crawl_status(code: int) -> CrawlStatus | None:
    """Map a protocol status code to the crawl status Nutch's fetcher gives the row.

    Returns None for WOULDBLOCK (the item is requeued, the row is not changed).
    """
    c = ProtocolStatusCode(code)
    if c == ProtocolStatusCode.SUCCESS:
        return CrawlStatus.FETCHED
    if c == ProtocolStatusCode.MOVED:
        return CrawlStatus.REDIR_PERM
    if c == ProtocolStatusCode.TEMP_MOVED:
        return CrawlStatus.REDIR_TEMP
    if c == ProtocolStatusCode.NOTMODIFIED:
        return CrawlStatus.NOTMODIFIED
    if c in (
        ProtocolStatusCode.GONE,
        ProtocolStatusCode.NOTFOUND,
        ProtocolStatusCode.ACCESS_DENIED,
        ProtocolStatusCode.ROBOTS_DENIED,
        ProtocolStatusCode.REDIR_EXCEEDED,  # Nutch 2's FetcherReducer: a loop or chain past http.redirect.max
    ):
        return CrawlStatus.GONE
    if c == ProtocolStatusCode.WOULDBLOCK:
        return None
    return CrawlStatus.RETRY  # EXCEPTION, RETRY, BLOCKED, FAILED, others


def http_to_protocol_status(http_code: int) -> ProtocolStatusCode:
    """Map an HTTP response code to a protocol status as Nutch's HttpBase does."""
    if http_code == 200:
        return ProtocolStatusCode.SUCCESS
    if http_code == 304:
        return ProtocolStatusCode.NOTMODIFIED
    if http_code in (302, 303, 307):
        return ProtocolStatusCode.TEMP_MOVED
    if 300 <= http_code < 400:
        return ProtocolStatusCode.MOVED
    if http_code in (400, 410):
        return ProtocolStatusCode.GONE
    if http_code == 401:
        return ProtocolStatusCode.ACCESS_DENIED
    if http_code == 404:
        return ProtocolStatusCode.NOTFOUND
    return ProtocolStatusCode.EXCEPTION


# the protocol status message of a fetch whose host name did not resolve (protocol-http's reason for it): the
# fetcher counts these URLs as dns_failures, the host table as dnsFailures, apart from connection failures
DNS_FAILURE = "unknown host"


def is_dns_failure(reason: str) -> bool:
    """Is a protocol status message (or robots.txt's unreachable reason) a DNS failure?"""
    return reason.startswith(DNS_FAILURE)
