"""`nutch2 sitemap` on the test web's sitemaps (tests/testweb.py, sitemaps=True), through the CLI, on both runners:
a host reachable only through its sitemaps is found by a crawl, lastmod/changefreq/priority land in its rows,
strict parsing, politeness and robots.txt, a newer lastmod makes a known row due; hostile sitemaps are bounded."""

from __future__ import annotations

from pathlib import Path

import pytest

from nutch2.marks import Mark
from nutch2.rowkeys import LASTMOD_KEY
from nutch2.sitemap.sitemaps import CHANGEFREQ_SECONDS
from nutch2.status import CrawlStatus
from nutch2.urls.tableutil import reverse_url
from tests.crawlutil import cli, conf_for, defines, rows, seed_file
from tests.testweb import HOSTILE_SITEMAPS, TestWeb

pytestmark = pytest.mark.slow
BACKENDS = ["sqlite:local", "sqlite"]
DELAY = 0.2


@pytest.fixture(scope="module")
def web():
    with TestWeb(hosts=4, pages_per_host=5, sitemaps=True) as w:
        yield w



@pytest.mark.parametrize("backend", BACKENDS)
def test_crawl_finds_a_host_only_its_sitemaps_reach(web: TestWeb, tmp_path: Path, backend: str,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    d = defines(tmp_path, backend, **{"fetcher.server.delay": DELAY})
    conf = conf_for(tmp_path, backend)
    sh = web.sitemap_host
    assert sh is not None
    hidden = set(web.sitemap_entries)
    assert cli("crawl", seed_file(tmp_path, web.seed_url), "-crawlId", "c", "-rounds", "3", *d) == 0
    table = rows(conf, "c")
    assert reverse_url(web.url(sh, "/")) in table  # the crawl knows the host ...
    assert not {reverse_url(u) for u in hidden} & set(table)  # ... but none of its pages

    web.reset_log()
    capsys.readouterr()
    assert cli("sitemap", "-fromRobots", "-crawlId", "c", *d) == 0
    captured = capsys.readouterr()
    assert f" injected={len(hidden)} " in captured.err
    # strict: /outside.html and host 0's page; invalid: the text sitemap's "not a URL" line
    assert f"rejected_strict={len(web.sitemap_strict_rejected)}" in captured.err
    assert "rejected_invalid=1" in captured.err and "sitemaps_fetched=5" in captured.err
    table = rows(conf, "c")
    for url, (lastmod, changefreq, priority) in web.sitemap_entries.items():
        page = table[reverse_url(url)]
        assert page.status == CrawlStatus.INJECTED and Mark.INJECT.check(page) == "y", url
        assert page.modified_time == (lastmod or 0), url  # lastmod -> modified time
        interval = min(CHANGEFREQ_SECONDS[changefreq], 31536000) if changefreq else 2592000
        assert page.fetch_interval == interval, url  # changefreq -> fetch interval (Nutch's bounds)
        assert page.score == (priority or 0.5) and page.stm_priority == (priority or 0.5), url  # priority -> score
        assert len(page.sitemaps) == 1 and next(iter(page.sitemaps)).startswith(web.base_url(sh)), url
    for url in web.sitemap_strict_rejected:  # host 0's page is a row of the crawl, but not one from a sitemap
        assert reverse_url(url) not in table or not table[reverse_url(url)].sitemaps, url
    # polite and robots-checked: robots.txt as the crawl kept it (not asked again), one request at a time, every
    # sitemap once
    log = sorted(web.requests(sh), key=lambda r: r.arrived)
    assert not [r for r in log if r.path == "/robots.txt"]
    paths = [r.path for r in log]
    assert sorted(paths) == sorted(["/sitemap_index.xml", "/sitemap-pages.xml.gz", "/sitemap-more.txt",
                                    "/feed.xml", "/sub/sitemap.xml"])
    assert web.in_flight_max(sh) == 1
    assert all(b.arrived - a.answered >= DELAY * 0.9 for a, b in zip(log, log[1:], strict=False))
    for h in range(web.n_hosts):  # hosts that name no sitemap: /sitemap.xml tried (404), once
        assert web.count(web.url(h, "/sitemap.xml")) == 1
    assert not web.requests(web.robots_503_host, "/sitemap.xml")  # its robots.txt answered 503: nothing else

    # the next round fetches them
    assert cli("crawl", seed_file(tmp_path, web.seed_url), "-crawlId", "c", "-rounds", "1", "-topN", 1000, *d) == 0
    table = rows(conf, "c")
    assert all(table[reverse_url(u)].status == CrawlStatus.FETCHED for u in hidden)

    # a sitemap lastmod newer than what the row knows makes the fetched row due again, once
    assert cli("sitemap", "-fromRobots", "-crawlId", "c", *d) == 0
    table = rows(conf, "c")
    dated = {u for u, (lastmod, _, _) in web.sitemap_entries.items() if lastmod}
    for url in hidden:
        page = table[reverse_url(url)]
        if url in dated:  # the pages' Last-Modified is older than their sitemap lastmod
            assert page.fetch_time <= page.prev_fetch_time + 86_400_000 and LASTMOD_KEY in page.metadata, url
        else:
            assert page.fetch_time > page.prev_fetch_time + 86_400_000, url  # not due
    capsys.readouterr()
    assert cli("sitemap", "-fromRobots", "-crawlId", "c", *d) == 0  # the same lastmods: nothing changes
    assert f" known={len(hidden)} " in capsys.readouterr().err
    assert rows(conf, "c") == table


def test_sitemap_list_no_strict_robots_and_bad_lines(web: TestWeb, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    d = defines(tmp_path, "sqlite", **{"fetcher.server.delay": 0.05})
    conf = conf_for(tmp_path, "sqlite")
    sh = web.sitemap_host
    assert sh is not None
    denied = web.url(0, "/private/sitemap.xml")  # host 0's robots.txt disallows /private/
    listed = tmp_path / "list"
    listed.mkdir()
    (listed / "a.txt").write_text(f"# sitemaps\n{web.url(sh, '/sub/sitemap.xml')}\n{denied}\nftp://x/y\n\n")
    (listed / "b.txt").write_text(f"{web.hosts[sh]}:{web.port}\nnot a host/\n")  # a host name: its robots.txt
    capsys.readouterr()
    assert cli("sitemap", "-sitemapUrls", listed, "-crawlId", "l", *d) == 0
    captured = capsys.readouterr()
    assert "a.txt:4: not an http(s) URL" in captured.err and "b.txt:2: neither a sitemap URL" in captured.err
    table = rows(conf, "l")
    assert {reverse_url(u) for u in web.sitemap_entries} == set(table)
    assert web.count(denied) == 0  # robots-checked
    assert web.count(web.url(sh, "/sub/sitemap.xml")) >= 1

    assert cli("sitemap", "-sitemapUrls", listed / "a.txt", "-noStrict", "-crawlId", "n", *d) == 0
    assert reverse_url(web.url(sh, "/outside.html")) in rows(conf, "n")  # -noStrict: outside its folder too

    capsys.readouterr()
    assert cli("sitemap", "-crawlId", "l", *d) == 2  # no source given: usage error
    assert cli("sitemap", "-sitemapUrls", tmp_path / "missing.txt", "-crawlId", "l", *d) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and "missing.txt does not exist" in err[1]


def test_hostile_sitemaps_are_bounded_and_reported(web: TestWeb, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    props = {"fetcher.server.delay": 0.02, "sitemap.size.max": 3_000_000, "sitemap.max.sitemaps.per.host": 25,
             "sitemap.index.max.depth": 3}
    d = defines(tmp_path, "sqlite", **props)
    conf = conf_for(tmp_path, "sqlite")
    urls = web.hostile_sitemap_urls()

    def run(name: str) -> tuple[str, dict]:
        crawl = f"h{name.replace('_', '')}"
        (tmp_path / f"{name}.txt").write_text(urls[name] + "\n")
        web.reset_log()
        capsys.readouterr()
        assert cli("sitemap", "-sitemapUrls", tmp_path / f"{name}.txt", "-crawlId", crawl, *d) == 0, name
        err = capsys.readouterr().err
        return err, rows(conf, crawl)

    for name in ("xxe", "laughs"):
        err, table = run(name)
        assert "has a DOCTYPE (refused" in err and table == {}, name
        assert "root:" not in err  # nothing of /etc/passwd anywhere
    err, table = run("huge")  # 100 MB: the protocol stops reading at sitemap.size.max
    assert f"cut at sitemap.size.max={props['sitemap.size.max']}" in err
    assert len(table) == 1000  # the 1000 URLs it repeats were all in the part read
    assert "bytes=" in err and int(err.split("bytes=")[1].split()[0]) <= props["sitemap.size.max"]
    err, table = run("gzip_bomb")
    assert "cut at sitemap.size.max" in err and table == {}
    err, table = run("loop")
    assert web.count(urls["loop"]) == 1 and web.count(web.url(0, "/hostile/sitemaps/loop-b.xml")) == 1
    err, table = run("deep")
    fetched = [r.path for r in web.requests(0) if r.path.startswith("/hostile/sitemaps/deep/")]
    assert len(fetched) == props["sitemap.index.max.depth"] + 1
    assert "deeper than sitemap.index.max.depth=3" in err and "sitemaps_too_deep=1" in err
    err, table = run("wide")
    assert len([r for r in web.requests(0) if r.path.startswith("/hostile/sitemaps/")]) == 25
    assert "more than sitemap.max.sitemaps.per.host=25" in err and "sitemaps_over_host_limit=2976" in err
    assert len(table) == 24
    err, table = run("malformed")
    assert "malformed XML" in err and "3 URLs read before that (3 accepted)" in err and len(table) == 3
    err, table = run("not_xml")
    assert "not a sitemap (root element <html>)" in err and table == {}
    assert set(HOSTILE_SITEMAPS) == {"xxe", "laughs", "huge", "gzip_bomb", "loop", "deep", "wide", "malformed",
                                     "not_xml"}


def test_the_sitemaps_flag_changes_nothing_else() -> None:
    """sitemaps=True adds a host, its pages and one link to it; every other page, word and robots.txt stays."""
    with TestWeb(hosts=4, pages_per_host=5) as plain, TestWeb(hosts=4, pages_per_host=5, sitemaps=True) as web:
        assert plain.sitemap_host is None and not plain.sitemap_entries
        assert len(web.hosts) == len(plain.hosts) + 1 and web.sitemap_host == len(plain.hosts)

        def shape(w: TestWeb) -> dict[str, tuple]:
            def port(u: str) -> str:
                return u.replace(f":{w.port}/", ":PORT/")

            return {port(u): (s.title, s.unique_word, s.expected, [port(x) for x in s.links])
                    for u, s in w.pages.items()}

        before, after = shape(plain), shape(web)
        sitemap_host = f"http://{web.hosts[web.sitemap_host]}:PORT/"
        assert all(u.startswith(sitemap_host) for u in set(after) - set(before))
        changed = {u for u in before if before[u] != after[u]}
        home = plain.seed_url.replace(f":{plain.port}/", ":PORT/")
        assert changed == {home} and after[home][3] == before[home][3] + [sitemap_host]
        assert [plain.robots_txt(h) for h in range(len(plain.hosts))] == [web.robots_txt(h)
                                                                        for h in range(len(plain.hosts))]


def test_a_sitemap_on_a_host_deferred_for_its_robots_txt_is_not_a_failure(web: TestWeb, tmp_path: Path,
                                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """A sitemap whose host's robots.txt answers 503 is deferred (counted), not reported as a failed sitemap."""
    h = web.robots_503_host
    assert h is not None
    d = defines(tmp_path, "sqlite", **{"fetcher.server.delay": 0.05})
    listed = tmp_path / "deferred.txt"
    listed.write_text(web.url(h, "/sitemap.xml") + "\n")
    capsys.readouterr()
    assert cli("sitemap", "-sitemapUrls", listed, "-crawlId", "df", *d) == 0
    err = capsys.readouterr().err
    assert "deferred=1" in err and "sitemaps_failed" not in err and "not fetched" not in err, err
