"""Hostile pages (10 MB page, endless slow body, gzip bomb, binary as text/html, 10 000 links, deep nesting,
redirect loop) neither hang nor crash fetch, parse or updatedb, and leave sane rows."""

from __future__ import annotations

from pathlib import Path

import pytest

from nutch2.marks import Mark
from nutch2.status import CrawlStatus, ParseMajor, ParseMinor, ProtocolStatusCode
from nutch2.urls.tableutil import reverse_url
from tests.crawlutil import cli, conf_for, defines, rows
from tests.testweb import TestWeb

pytestmark = pytest.mark.slow

LIMIT = 1048576  # http.content.limit default
MAX_OUTLINKS = 100  # db.max.outlinks.per.page default


@pytest.mark.timeout(120)
def test_hostile_pages_neither_hang_nor_crash(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    props = {"http.timeout": 2000, "fetcher.server.delay": 0.05}
    d = defines(tmp_path, "sqlite", **props)
    with TestWeb(hosts=3, pages_per_host=2, hostile=True, endless_interval=0.2) as web:
        hostile = web.hostile_urls()
        seeds = tmp_path / "seeds.txt"
        seeds.write_text("".join(u + "\n" for u in hostile.values()))
        assert cli("inject", seeds, "-crawlId", "hos", *d) == 0
        capsys.readouterr()
        assert cli("generate", "-crawlId", "hos", *d) == 0
        batch = capsys.readouterr().out.strip()
        assert cli("fetch", batch, "-threads", "4", "-crawlId", "hos", *d) == 0
        conf = conf_for(tmp_path, "sqlite", **props)
        fetched = rows(conf, "hos")
        for name, url in hostile.items():
            page = fetched[reverse_url(url)]
            assert Mark.FETCH.check(page) == batch, name
            assert len(page.content or b"") <= LIMIT, name

        assert cli("parse", batch, "-crawlId", "hos", *d) == 0
        parsed = rows(conf, "hos")
        assert cli("updatedb", batch, "-crawlId", "hos", *d) == 0
        table = rows(conf, "hos")

    def page(name: str, t: dict = parsed):  # noqa: ANN202
        return t[reverse_url(hostile[name])]

    for name in ("big", "gzip_bomb"):
        p = page(name)
        assert p.status == CrawlStatus.FETCHED, name
        assert len(p.content) == LIMIT, name  # truncated at the limit, decompressed size capped too
        assert p.parse_status.major_code == ParseMajor.NOTPARSED, name
        assert p.parse_status.minor_code == ParseMinor.FAILED_TRUNCATED, name
        assert Mark.PARSE.check(p) is None, name

    endless = page("endless")
    assert endless.status in (CrawlStatus.RETRY, CrawlStatus.FETCHED)
    if endless.status == CrawlStatus.FETCHED:  # cut by the total fetch time: truncated, not parsed
        assert endless.parse_status.minor_code == ParseMinor.FAILED_TRUNCATED

    binary = page("binary_html")
    assert binary.status == CrawlStatus.FETCHED
    assert binary.parse_status is not None

    deep = page("deep_nesting")
    assert deep.status == CrawlStatus.FETCHED
    assert deep.parse_status is not None

    many = page("many_links")
    assert many.status == CrawlStatus.FETCHED
    assert many.parse_status.major_code == ParseMajor.SUCCESS
    assert 0 < len(many.outlinks) <= MAX_OUTLINKS

    loop = page("redirect_loop")
    assert loop.status == CrawlStatus.REDIR_PERM
    assert loop.protocol_status.code == ProtocolStatusCode.MOVED
    target = web.url(0, "/hostile/loop2")
    assert set(loop.outlinks) == {target}
    assert loop.repr_url == target

    # updatedb: new rows for the loop target and the capped outlinks, hostile rows with sane statuses
    assert reverse_url(target) in table
    assert len(table) <= len(hostile) + MAX_OUTLINKS + 1
    for name in hostile:
        p = page(name, table)
        assert p.status in (CrawlStatus.FETCHED, CrawlStatus.RETRY, CrawlStatus.REDIR_PERM), name
        assert len(p.content or b"") <= LIMIT, name
