"""A robots.txt cut off by time or a closed connection is not a complete answer: only its whole
groups count, and only when one of them is meant for us; no answer at all means the host is unreachable. One cut
by the 500 KiB limit is read up to the limit, the rest ignored (Google's rule)."""

from __future__ import annotations

import pytest

from nutch2.fetch.output import ProtocolOutput
from nutch2.fetch.robots import (
    ALLOW_ALL,
    DEFER,
    PARSED,
    ROBOTS_MAX_BYTES,
    UNREACHABLE,
    complete_groups,
    rules_from_output,
    whole_lines,
)
from nutch2.status import ProtocolStatusCode

AGENT = "MyBot"
TWO_GROUPS = b"User-agent: *\nDisallow: /private\n\nUser-agent: other\nDisallow: /\n"


@pytest.mark.parametrize(("content", "expected"), [
    (b"User-agent: *\nDisallow: /", None),  # one group, cut: its rules may be missing
    (b"User-agent: *\nDisallow: /\n", None),  # one group: more Disallow lines may have followed
    (TWO_GROUPS[:55], b"User-agent: *\nDisallow: /private\n\n"),  # cut in the second group
    (TWO_GROUPS[:40], None),  # cut in the line that may start the second group: not known to
    (b"User-agent: *\nDisallow: /a\nUser-agent: x\nUser-agent: y\nDisa", b"User-agent: *\nDisallow: /a\n"),
    (b"User-agent: other\nDisallow: /\n\nUser-agent: *\nDis", None),  # the whole group is not for us
    (b"User-agent: mybot\nDisallow: /\n\nUser-agent: *\nDis", b"User-agent: mybot\nDisallow: /\n\n"),
    (b"Sitemap: http://h/s.xml\nUser-agent: *\nDisallow: /a\nSitemap: http://h/t.xml\nUser-agent: z\n",
     b"Sitemap: http://h/s.xml\nUser-agent: *\nDisallow: /a\nSitemap: http://h/t.xml\n"),
    (b"User-agent: mybotx\nDisallow: /\n\nUser-agent: *\nDis", None),  # another product token
    # RFC 9309: a Crawl-delay between user-agent lines does not end the group; only Allow/Disallow lines do
    (b"User-agent: mybot\nCrawl-delay: 5\nUser-agent: b\nDisallow: /\n", None),
    (b"User-agent: mybot\nCrawl-delay: 5\nUser-agent: b\nDisallow: /\nUser-agent: c\n",
     b"User-agent: mybot\nCrawl-delay: 5\nUser-agent: b\nDisallow: /\n"),
    (b"", None),
])
def test_complete_groups(content: bytes, expected: bytes | None) -> None:
    assert complete_groups(content, AGENT) == expected


def _robots(content: bytes, truncated: bool, http_code: int | None = 200) -> ProtocolOutput:
    code = ProtocolStatusCode.SUCCESS if http_code == 200 else ProtocolStatusCode.EXCEPTION
    return ProtocolOutput(code, [], http_code, content=content, truncated=truncated)


def test_cut_off_disallow_all_defers() -> None:
    rules = rules_from_output(_robots(b"User-agent: *\nDisa", truncated=True), AGENT)
    assert rules.state == DEFER and not rules.allowed("http://h/a", AGENT)


def test_the_same_bytes_whole_are_a_file() -> None:
    assert rules_from_output(_robots(b"User-agent: *\nDisa", truncated=False), AGENT).state == PARSED


def test_cut_off_after_a_whole_group_uses_it() -> None:
    rules = rules_from_output(_robots(TWO_GROUPS[:55], truncated=True), AGENT)
    assert rules.state == PARSED
    assert not rules.allowed("http://h/private/x", AGENT) and rules.allowed("http://h/x", AGENT)


def test_no_response_is_unreachable_with_its_reason() -> None:
    out = ProtocolOutput(ProtocolStatusCode.EXCEPTION, ["connection refused"])
    rules = rules_from_output(out, AGENT)
    assert (rules.state, rules.reason) == (UNREACHABLE, "connection refused")
    assert not rules.allowed("http://h/a", AGENT)


def test_cut_by_the_job_time_limit_defers() -> None:
    out = ProtocolOutput(ProtocolStatusCode.EXCEPTION, ["timeout (total fetch time exceeded)"], stopped=True)
    assert rules_from_output(out, AGENT).state == DEFER


def test_unsupported_scheme_still_allows_all() -> None:
    assert rules_from_output(ProtocolOutput(ProtocolStatusCode.PROTO_NOT_FOUND, ["ftp"]), AGENT).state == ALLOW_ALL


def test_over_the_size_limit_the_first_500_kib_are_the_file() -> None:
    """Google's rule (RFC 9309's least parsing limit): a robots.txt over 500 KiB is read up to the limit and the
    rest ignored; the line the limit cut is dropped. Every round cuts it at the same place, so deferring the host
    would never crawl it."""
    head = b"User-agent: *\nDisallow: /private\n"
    filler = b"Disallow: /pqqq" + b"q" * 100 + b"\n"
    content = (head + filler * (ROBOTS_MAX_BYTES // len(filler) + 1))[:ROBOTS_MAX_BYTES]
    rules = rules_from_output(_robots(content, truncated=True), AGENT)
    assert rules.state == PARSED
    assert rules.allowed("http://h/page", AGENT) and not rules.allowed("http://h/private/x", AGENT)
    assert not rules.allowed("http://h/pqqq" + "q" * 100, AGENT)


def test_the_line_the_size_limit_cut_is_dropped() -> None:
    """The file went on `Disallow: /b...` past the limit: the cut `Disallow: /` is not read as disallow-all."""
    prefix, cut = b"User-agent: *\nDisallow: /a\n", b"\nDisallow: /"
    content = prefix + b"#" * (ROBOTS_MAX_BYTES - len(prefix) - len(cut)) + cut
    assert len(content) == ROBOTS_MAX_BYTES
    rules = rules_from_output(_robots(content, truncated=True), AGENT)
    assert rules.state == PARSED and rules.allowed("http://h/b", AGENT) and not rules.allowed("http://h/a", AGENT)
    assert whole_lines(b"a\nb") == b"a\n" and whole_lines(b"a\r\n") == b"a\r\n" and whole_lines(b"ab") == b""
