"""The Searcher's parts without servers: snippets, <base>, parameters, job arguments, stats, fetch times, CLI."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from nutch2.marks import Mark
from nutch2.searcher.app import _paging
from nutch2.searcher.crawlstats import CrawlStatsJob, bar_chart
from nutch2.searcher.jobapi import JobManager
from nutch2.searcher.pages import StoreAccess, fetched_at, with_base
from nutch2.searcher.params import ParamError
from nutch2.searcher.search import SearchRequest, snippet_markup
from nutch2.status import CrawlStatus
from nutch2.stores import open_store
from nutch2.webpage import WebPage
from tests.conftest import make_conf
from tests.crawlutil import cli


def test_snippet_keeps_only_our_marks() -> None:
    solr = 'a &lt;script&gt;x&lt;/script&gt; <em>crawler</em> &amp; &lt;em&gt;not&lt;/em&gt; "q"'
    assert str(snippet_markup(solr)) == ('a &lt;script&gt;x&lt;/script&gt; <mark>crawler</mark> &amp; '
                                         '&lt;em&gt;not&lt;/em&gt; &#34;q&#34;')
    # unbalanced tags cannot open or leave open anything
    assert str(snippet_markup("</em>a <em>b <em>c")) == "a <mark>b c</mark>"
    assert str(snippet_markup("<img src=x onerror=alert(1)>")) == "&lt;img src=x onerror=alert(1)&gt;"
    assert str(snippet_markup("  two\n  lines ")) == "two lines"


def test_base_goes_first_in_the_head_and_resolves_the_pages_own() -> None:
    url = "http://example.com/a/b.html?x=1&y=2"
    assert with_base("<!DOCTYPE html><html><head><title>t</title></head>", url) == (
        '<!DOCTYPE html><html><head><base href="http://example.com/a/b.html?x=1&amp;y=2"><title>t</title></head>')
    own = '<html><HEAD lang=en><base href="../c/">'
    assert with_base(own, url) == '<html><HEAD lang=en><base href="http://example.com/c/"><base href="../c/">'
    assert with_base("<html><body>x", url).startswith('<html><base href="http://example.com/a/b.html')
    assert with_base("<!doctype html><p>x", url) == '<!doctype html><base href="http://example.com/a/b.html?x=1&amp;y=2"><p>x'
    assert with_base("plain <header>", url).startswith('<base href="')
    assert 'href="http://example.com/&#34;&gt;"' in with_base("<head>", 'http://example.com/">')


def test_search_parameters() -> None:
    req = SearchRequest.from_params({"q": "  open   source ", "start": "20", "rows": "500"})
    assert (req.q, req.start, req.rows, req.host) == ("open source", 20, 100, None)
    params = SearchRequest.from_params({"q": "x", "host": 'a") OR (*:*'.replace(" ", "")}).solr_params()
    assert params["fq"] == '{!term f=host tag=host}a")OR(*:*'  # one term, whatever it holds
    assert params["facet.field"] == "{!ex=host}host"
    for bad in ({"start": "-5"}, {"start": "x"}, {"rows": "0"}, {"start": "10001"}, {"host": "a b"}):
        with pytest.raises(ParamError):
            SearchRequest.from_params({"q": "x", **bad})


def test_paging_shows_ten_pages_around_the_current_one() -> None:
    pages = _paging(1000, SearchRequest("x", start=200, rows=10))
    assert [p["n"] for p in pages] == list(range(17, 27)) and [p["n"] for p in pages if p["current"]] == [21]
    assert [p["n"] for p in _paging(25, SearchRequest("x"))] == [1, 2, 3]
    assert _paging(10**9, SearchRequest("x", start=10_000, rows=100))[-1]["start"] == 10_000  # no deeper


def test_job_arguments_are_the_tools_arguments(tmp_path: Path) -> None:
    files = tmp_path / "files"
    (files / "seeds").mkdir(parents=True)
    (files / "seeds" / "s.txt").write_text("http://a/\n")
    jobs = JobManager(make_conf(tmp_path), "c", "http://127.0.0.1:8983/solr/nutch", files)
    tool, args = jobs.build("generate", {"topN": 50, "noFilter": True, "noNorm": False})
    assert tool.name == "generate" and (args.topN, args.noFilter, args.noNorm) == (50, True, False)
    assert jobs.build("fetch", {"batch": "1700000000-42", "threads": 4, "resume": True})[1].threads == 4
    assert jobs.build("parse", {"all": True})[1].batch_id is None
    assert jobs.build("index", {"reindex": True})[1].solr == "http://127.0.0.1:8983/solr/nutch"  # the server's
    assert jobs.build("inject", {"seedUrls": ["http://a/", " http://b/ "]})[1].seedUrls == ["http://a/", " http://b/ "]
    assert jobs.build("inject", {"seedDir": "seeds"})[1].seeds == (files / "seeds").resolve()
    for job, args, words in (
            ("updatedb", {"batch": "-all"}, "not a batch id"), ("updatedb", {"batch": "a b"}, "not a batch id"),
            ("fetch", {"batch": "b", "threads": -1}, "out of range"), ("fetch", {"batch": "b", "numTasks": 5000},
                                                                       "out of range"),
            ("fetch", {"batch": "b", "resume": "yes"}, "true or false"),
            ("inject", {"seedUrls": ["http://a/\n-D"]}, "line break"), ("inject", {"seedUrls": []}, "non-empty"),
            ("parse", {"batch": "b", "reparse": True}, "exactly one of"), ("nope", {}, "unknown job type"),
            ("fetch", ["batch"], "args must be an object"), ("index", {"batch": "b", "solr": "http://evil/"},
                                                             "cannot be set through the job API"),
            ("inject", {"seedDir": "/etc"}, "not a name inside"), ("inject", {"seedDir": "../.."}, "not a name inside"),
            ("warc", {"outdir": "/tmp/x", "all": True}, "not a name inside"),
            ("server", {}, "unknown job type"), ("parsechecker", {"url": "http://a/"}, "unknown job type")):
        with pytest.raises(ParamError, match=words):
            jobs.build(job, args)
    no_files = JobManager(make_conf(tmp_path), "c", None, None)
    with pytest.raises(ParamError, match="no files folder"):
        no_files.build("inject", {"seedDir": "seeds"})
    with pytest.raises(ParamError, match="needs Solr"):
        no_files.build("index", {"all": True})


def _row(key: str, status: CrawlStatus, batch: str | None, **marks: str) -> WebPage:
    page = WebPage(key, status=int(status), score=1.0, fetch_time=5_000_000, fetch_interval=1000)
    if batch:
        page.batch_id = batch
    for name, value in marks.items():
        Mark[name].put(page, value)
    return page


def test_crawl_stats_count_statuses_hosts_and_show_the_journals_batches(tmp_path: Path) -> None:
    from nutch2.journal import Journal
    from nutch2.runner import LocalRunner

    conf = make_conf(tmp_path, "memory")
    store = open_store(conf, "stats")
    try:
        b1, b2 = "1700000000-1", "1700000100-2"
        pages = [
            _row("com.a:http/1", CrawlStatus.FETCHED, b1, UPDATEDB=b1, INDEX=b1),
            _row("com.a:http/2", CrawlStatus.FETCHED, b1, UPDATEDB=b1),
            _row("com.b:http/1", CrawlStatus.FETCHED, b2, GENERATE=b2, FETCH=b2, PARSE=b2),
            _row("com.b:http/2", CrawlStatus.UNFETCHED, b2, GENERATE=b2),
            _row("com.c:http/1", CrawlStatus.INJECTED, None, INJECT="y"),
        ]
        for p in pages:
            store.put(p.key, p)
        store.flush()
        journal = Journal(store)
        journal.record(b1, "generated", 2, counts={"generated": 2})
        for state, counts in (("fetched", {"fetched": 2}), ("parsed", {"parsed": 2}), ("updated", {"updated": 2}),
                              ("indexed", {"indexed": 1})):
            journal.advance(b1, state, counts)
        journal.record(b2, "generated", 2, counts={"generated": 2})
        journal.advance(b2, "fetched", {"fetched": 1})
        journal.advance(b2, "parsed", {"parsed": 1})
        job = CrawlStatsJob(conf)
        LocalRunner(conf, 2).run(job, store)
        stats = job.stats
        stats.journal = journal.batches()
        assert stats.total == 5 and dict(stats.status) == {"FETCHED": 3, "UNFETCHED": 1, "INJECTED": 1}
        assert stats.top_hosts(2) == [("a.com", 2), ("b.com", 2)]
        rows = stats.batch_rows()
        assert [r["batchId"] for r in rows] == [b2, b1]  # newest first
        assert {k: rows[0][k] for k in ("rows", "generated", "fetched", "parsed", "updated", "stage")} == {
            "rows": 2, "generated": 2, "fetched": 1, "parsed": 1, "updated": 0, "stage": "parsed"}
        # a finished batch keeps what each step did (its marks are gone)
        assert {k: rows[1][k] for k in ("rows", "generated", "fetched", "parsed", "updated", "indexed", "stage")} == {
            "rows": 2, "generated": 2, "fetched": 2, "parsed": 2, "updated": 2, "indexed": 1, "stage": "indexed"}
        chart = bar_chart(stats.statuses())
        assert [b["label"] for b in chart["bars"]] == ["INJECTED", "UNFETCHED", "FETCHED"]
        assert chart["bars"][2]["w"] == max(b["w"] for b in chart["bars"])
    finally:
        store.drop_schema()


def test_fetched_at_undoes_updatedbs_schedule() -> None:
    in_flight = _row("com.a:http/", CrawlStatus.FETCHED, "b", GENERATE="b", FETCH="b")
    assert fetched_at(in_flight) == 5_000_000  # the fetcher's time, not yet moved
    updated = _row("com.a:http/", CrawlStatus.FETCHED, "b", UPDATEDB="b")
    assert fetched_at(updated) == 5_000_000 - 1000 * 1000  # fetchTime is the next fetch, one interval on
    assert fetched_at(_row("com.a:http/", CrawlStatus.UNFETCHED, None)) is None
    assert fetched_at(_row("com.a:http/", CrawlStatus.GONE, "b", UPDATEDB="b")) is None


def test_store_access_reports_a_missing_crawl_and_opens_once_it_exists(tmp_path: Path) -> None:
    from nutch2.errors import StoreError

    conf = make_conf(tmp_path)
    access = StoreAccess(conf, "late")
    with pytest.raises(StoreError, match="no crawl db at .*late_webpage.sqlite; run `nutch2 inject` first"):
        access.run(lambda s: s.count())
    open_store(conf, "late").close()  # inject creates it
    assert access.run(lambda s: s.count()) == 0
    access.close()


def test_server_refuses_what_cannot_work(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = ["-D", f"storage.data.dir={tmp_path}", "-solr", "http://127.0.0.1:9/solr/nutch"]
    assert cli("server", "-crawlId", "m", "-D", "storage.data.store.class=memory", *d) == 1
    assert capsys.readouterr().err.strip().splitlines() == [
        "nutch2 server: error: storage.data.store.class=memory keeps a crawl inside the process that made it, so "
        "a server cannot read it; crawl into sqlite, hbase or cassandra"]
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen(1)
    try:
        port = taken.getsockname()[1]
        assert cli("server", "-crawlId", "x", "-port", str(port), *d) == 1
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith(f"nutch2 server: error: cannot listen on 127.0.0.1:{port}: ")
        assert err[0].endswith("pick another -port or stop what uses it")
    finally:
        taken.close()
    assert cli("server", "-crawlId", "bad/id", *d) == 1
    assert "crawl id 'bad/id' is not valid" in capsys.readouterr().err
    assert cli("server", "-crawlId", "x", "-port", "70000", *d) == 2  # a usage error, caught by the arguments
    assert "-port 70000 is out of range: it must be between 0 and 65535" in capsys.readouterr().err
    assert cli("server", "-crawlId", "x", *d, "-solr", "localhost:8983") == 1
    assert "must start with http://" in capsys.readouterr().err
