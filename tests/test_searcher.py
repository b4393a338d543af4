"""The Searcher's parts without servers: snippets, snapshots, queries, access checks, logins, job arguments, stats,
fetch times, CLI."""

from __future__ import annotations

import base64
import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from markupsafe import Markup

from nutch2.errors import ConfigError
from nutch2.fetch.headers import header_block_problem, stored_headers
from nutch2.index.query import snippet_of
from nutch2.marks import Mark
from nutch2.plugins.index_basic.filter import site_values
from nutch2.searcher import auth
from nutch2.searcher.access import AccessPolicy, json_too_deep, split_host_header
from nutch2.searcher.app import _paging
from nutch2.searcher.auth import (
    FREE_FAILURES,
    NEEDS_SCRYPT,
    Backoff,
    Credentials,
    add_user,
    check_password,
    hash_password,
    read_users,
)
from nutch2.searcher.crawlstats import bar_chart, crawl_view
from nutch2.searcher.jobapi import JobManager
from nutch2.searcher.pages import StoreAccess, fetched_at
from nutch2.searcher.params import ParamError
from nutch2.searcher.search import SearchRequest, snippet_markup
from nutch2.searcher.snapshot import Lookup, rewrite_css, snapshot_html
from nutch2.status import CrawlStatus
from nutch2.stores import open_store
from nutch2.stores.memory import MemoryStore
from nutch2.webpage import WebPage
from tests.conftest import make_conf
from tests.crawlutil import cli


def test_the_snippet_is_the_main_contents_when_it_shows_a_matched_word() -> None:
    article, full = ["the <em>crawler</em> article"], ["menu <em>crawler</em> article"]
    assert snippet_of({"main_content": article, "content": full}) == article[0]
    assert snippet_of({"content": full}) == full[0]  # a page without main content
    # the word only in the menu: main_content's fragment is a summary without it, the full text shows why it matched
    menu = ["<em>login</em> menu"]
    assert snippet_of({"main_content": ["the article starts"], "content": menu}) == menu[0]
    assert snippet_of({"main_content": ["the article"], "content": ["menu"]}) == "the article"  # no match: a summary
    assert snippet_of({}) == ""


def test_snippet_keeps_only_our_marks() -> None:
    solr = 'a &lt;script&gt;x&lt;/script&gt; <em>crawler</em> &amp; &lt;em&gt;not&lt;/em&gt; "q"'
    assert str(snippet_markup(solr)) == ('a &lt;script&gt;x&lt;/script&gt; <mark>crawler</mark> &amp; '
                                         '&lt;em&gt;not&lt;/em&gt; &#34;q&#34;')
    # unbalanced tags cannot open or leave open anything
    assert str(snippet_markup("</em>a <em>b <em>c")) == "a <mark>b c</mark>"
    assert str(snippet_markup("<img src=x onerror=alert(1)>")) == "&lt;img src=x onerror=alert(1)&gt;"
    assert str(snippet_markup("  two\n  lines ")) == "two lines"


def test_a_snippet_is_at_most_300_characters_around_its_first_match() -> None:
    """A page without a sentence end is one highlighter "sentence" of up to 51,200 characters."""
    long = "lorem &amp; ipsum " * 2000 + "<em>crawler</em> and " + "dolor " * 2000
    shown = str(snippet_markup(long))
    assert shown.startswith("…lorem") and shown.endswith("dolor…") and "<mark>crawler</mark>" in shown
    assert 250 < len(Markup(shown.replace("<mark>", "").replace("</mark>", "")).unescape()) <= 300 + 2
    assert str(snippet_markup("words " * 1000)).startswith("words words")  # no match: the start
    assert str(snippet_markup("<em>a</em> " * 1000)).count("<mark>") > 50  # every mark kept whole


def _lookup(held: dict[str, str]) -> Lookup:
    """A Lookup over URL -> content type of fetched rows."""
    def get(url: str) -> WebPage | None:
        ctype = held.get(url)
        return WebPage("k", status=int(CrawlStatus.FETCHED), content_type=ctype) if ctype else None

    return Lookup(get, lambda u: u)


def test_snapshot_points_links_at_cached_copies_and_resources_at_the_crawl() -> None:
    import lxml.html

    held = {"http://s.test/a.html": "text/html", "http://s.test/css/site.css": "text/css",
            "http://s.test/img/logo.png": "image/png", "http://s.test/page.js": "application/javascript"}
    page = ('<?xml version="1.0"?><!DOCTYPE html><html><head><base href="http://s.test/">'
            '<link rel="stylesheet" href="css/site.css"><link rel="stylesheet" href="http://cdn.test/x.css">'
            '<meta http-equiv="refresh" content="0; url=http://live.test/"><script src="page.js"></script>'
            '<style>body { background: url(img/logo.png) } @import "http://cdn.test/y.css";</style></head>'
            '<body onload="x()"><a id="in" href="a.html#top">in</a><a id="out" href="http://live.test/b">out</a>'
            '<a id="js" href="javascript:alert(1)">js</a><a id="frag" href="#top">top</a>'
            '<img id="i1" src="img/logo.png" srcset="img/big.png 2x"><img id="i2" src="http://live.test/t.gif">'
            "<div style=\"background-image: url('http://live.test/bg.png')\">x</div>"
            '<form action="http://live.test/f"><input name="q"></form><iframe src="http://live.test/"></iframe>'
            "</body></html>")
    out = snapshot_html(page, "http://s.test/dir/p.html", _lookup(held))
    doc = lxml.html.document_fromstring(out)
    by_id = {el.get("id"): el for el in doc.iter() if el.get("id")}
    assert by_id["in"].get("href") == "/cached?url=http%3A%2F%2Fs.test%2Fa.html"
    assert by_id["in"].get("target") == by_id["out"].get("target") == "_top"
    assert by_id["out"].get("href") == "http://live.test/b" and "noreferrer" in by_id["out"].get("rel")
    assert by_id["js"].get("href") is None and by_id["frag"].get("href") == "#top"
    assert by_id["i1"].get("src") == "/cached/resource?url=http%3A%2F%2Fs.test%2Fimg%2Flogo.png"
    assert by_id["i1"].get("srcset") is None and by_id["i2"].get("src") == "data:,"
    links = [el.get("href") for el in doc.iter("link")]
    assert links == ["/cached/resource?url=http%3A%2F%2Fs.test%2Fcss%2Fsite.css", "data:,"]
    assert not list(doc.iter("script")) and not list(doc.iter("base")) and not list(doc.iter("meta"))
    assert doc.body.get("onload") is None and doc.find(".//form").get("action") is None
    assert doc.find(".//iframe").get("src") == "about:blank"
    style = doc.find(".//style").text
    assert 'url("/cached/resource?url=http%3A%2F%2Fs.test%2Fimg%2Flogo.png")' in style and '@import "data:,"' in style
    assert 'url("data:,")' in doc.find(".//div").get("style")
    assert "live.test" not in out.replace('href="http://live.test/b"', "")  # nothing else of the live site is left
    assert out.startswith("<!DOCTYPE html>")
    css = rewrite_css("a{b:url('../img/logo.png')} c{d:url(data:image/png;base64,AAAA)} @import 'x.css';",
                      "http://s.test/css/site.css", _lookup(held))
    assert css == ('a{b:url("/cached/resource?url=http%3A%2F%2Fs.test%2Fimg%2Flogo.png")} '
                   'c{d:url("data:image/png;base64,AAAA")} @import "data:,";')


def test_snapshot_keeps_a_text_run_over_10_mb() -> None:
    """libxml2 drops a text node over 10 MB unless asked for huge trees: the copy was an empty page."""
    text = "lorem ipsum dolor " * 700_000  # 12.6 MB, no tag
    out = snapshot_html(f"<html><head><title>t</title></head><body><p>{text}</p></body></html>",
                        "http://s.test/", _lookup({}))
    assert len(out) > len(text) and out.count("lorem ipsum") == 700_000


def test_snapshot_keeps_what_follows_a_nest_deeper_than_libxml2_goes() -> None:
    """libxml2 stops at depth 2048 and drops the rest: the cached copy ended inside the nest."""
    deep = "<div>" * 3000 + "DEEP" + "</div>" * 3000
    out = snapshot_html(f"<html><body><p>start</p>{deep}<p>after the nest</p><img src='/a.png'></body></html>",
                        "http://s.test/", _lookup({}))
    assert "start" in out and "DEEP" in out and "after the nest" in out and "<img" in out


def test_search_parameters() -> None:
    req = SearchRequest.from_params({"q": "  open   source ", "start": "20", "rows": "500"}, "news")
    assert (req.q, req.start, req.rows, req.host, req.text) == ("open source", 20, 100, None, "open source")
    params = req.solr_params()
    assert params["defType"] == "edismax" and "_query_" not in params["uf"] and params["mm"] == "100%"
    assert params["fq"] == ["{!term f=crawlId}news", "{!collapse field=host tag=collapse}"]
    assert params["expand"] == "true" and params["facet.field"] == "{!ex=host,collapse}host"
    params = SearchRequest.from_params({"q": "x", "host": "www.a.test"}).solr_params()
    assert params["fq"] == ["{!term f=crawlId}webpage", "{!term f=host tag=host}www.a.test"]  # and no collapse
    req = SearchRequest.from_params({"q": "crawler site:Example.COM. host:a.example.com x", "collapse": "0"}, "c")
    assert (req.text, req.sites, req.hosts, req.collapsed) == ("crawler x", ("example.com",), ("a.example.com",),
                                                               False)
    assert req.solr_params()["fq"] == ["{!term f=crawlId}c", "{!terms f=host}a.example.com",
                                       "{!terms f=site}example.com"]
    assert SearchRequest.from_params({"q": "site:example.com"}).text == ""  # q.alt lists the site
    for bad in ({"start": "-5"}, {"start": "x"}, {"rows": "0"}, {"start": "10001"}, {"host": "a b"},
                {"host": "a)OR(*:*"}, {"q": "site:"}, {"q": "host:a,b"}, {"q": "site:{!join}"}, {"collapse": "2"},
                {"q": " ".join(f"site:s{i}.com" for i in range(11))}):
        with pytest.raises(ParamError):
            SearchRequest.from_params({"q": "x", **bad})


def test_site_values_stop_at_the_registered_domain() -> None:
    assert site_values("a.b.example.co.uk") == ["a.b.example.co.uk", "b.example.co.uk", "example.co.uk"]
    assert site_values("example.com") == ["example.com"] and site_values("127.0.1.1") == ["127.0.1.1"]


def test_host_headers_json_depth_and_the_allowlist() -> None:
    assert split_host_header("LocalHost:8081") == ("localhost", 8081)
    assert split_host_header("[::1]:80") == ("::1", 80) and split_host_header("127.0.0.1") == ("127.0.0.1", None)
    for bad in ("", "a b", "evil.com/x", "user@127.0.0.1", "127.0.0.1:99999", "[::1"):
        assert split_host_header(bad) is None, bad
    policy = AccessPolicy.build(["0.0.0.0", "Search.Example.ORG."])
    assert policy.allowed_hosts == {"localhost", "127.0.0.1", "::1", "search.example.org"}
    assert not policy.host_allowed("0.0.0.0") and AccessPolicy.build(["*"]).host_allowed("any.name")
    assert json_too_deep(b"[" * 33 + b"]" * 33, 32) and not json_too_deep(b"[" * 32 + b"]" * 32, 32)
    assert not json_too_deep(b'{"a": "[[[[[[[[[[[[[\\"[["}', 2)


def test_passwords_are_kept_hashed_and_checked(tmp_path: Path) -> None:
    stored = hash_password("s3cret-pass", n=2**10)
    assert stored.startswith("scrypt$1024$8$1$") and "s3cret" not in stored
    assert check_password("s3cret-pass", stored) and not check_password("s3cret-pasS", stored)
    assert not check_password("x", "scrypt$bad") and not check_password("x", "md5$1$2$3$4$5")
    users = tmp_path / "users"
    add_user(users, "ann", "password-1")
    add_user(users, "bob", "password-2")
    add_user(users, "ann", "password-3")  # replaced, not added
    assert oct(users.stat().st_mode & 0o777) == "0o600" and "password" not in users.read_text()
    assert len(read_users(users)) == 2
    creds = Credentials("t" * 20, read_users(users))

    def basic(user: str, password: str) -> str:
        return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()

    assert creds.check(basic("ann", "password-3")) == NEEDS_SCRYPT  # not known yet: only a scrypt tells
    assert creds.verify(basic("ann", "password-3")) == "ann" and creds.check(basic("ann", "password-3")) == "ann"
    assert creds.verify(basic("ann", "password-1")) is None and creds.verify(basic("eve", "password-2")) is None
    assert creds.verify("Bearer " + "t" * 20) == "token" and creds.verify("Bearer " + "t" * 19) is None
    assert creds.verify("Basic !!!") is None and creds.verify(None) is None and creds.verify("Digest x") is None
    (tmp_path / "bad").write_text("ann:plaintext\n")
    with pytest.raises(ConfigError, match="bad:1 is not a 'user:scrypt"):
        read_users(tmp_path / "bad")


def test_users_added_at_once_by_several_commands_are_all_kept(tmp_path: Path) -> None:
    users = tmp_path / "users"
    code = ("import sys; from pathlib import Path; from nutch2.searcher.auth import add_user; "
            "add_user(Path(sys.argv[1]), sys.argv[2], 'password-' + sys.argv[2])")
    procs = [subprocess.Popen([sys.executable, "-c", code, str(users), f"user{i}"]) for i in range(6)]
    assert [p.wait(timeout=120) for p in procs] == [0] * 6
    assert sorted(read_users(users)) == [f"user{i}" for i in range(6)]
    assert not list(tmp_path.glob("*.tmp"))


def test_failed_logins_back_off_per_client_and_unknown_users_cost_a_scrypt(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    users = tmp_path / "users"
    add_user(users, "ann", "password-1")
    creds = Credentials(None, read_users(users))

    def basic(user: str, password: str) -> str:
        return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()

    for _ in range(FREE_FAILURES):
        assert creds.verify(basic("ann", "wrong"), "10.0.0.1") is None
    with pytest.raises(Backoff, match="too many failed logins from this address; try again in 1 s"):
        creds.check(basic("ann", "password-1"), "10.0.0.1")  # a right password waits too: no scrypt meanwhile
    assert creds.verify(basic("ann", "password-1"), "10.0.0.2") == "ann"  # other clients are not held
    assert creds.check(basic("ann", "password-1"), "10.0.0.1") == "ann"  # what passed passes everywhere
    scrypts: list[str] = []
    real = auth.check_password
    monkeypatch.setattr(auth, "check_password", lambda pw, stored: scrypts.append(stored) or real(pw, stored))
    assert creds.verify(basic("nobody", "x"), "10.0.0.3") is None
    assert creds.verify(basic("ann", "x"), "10.0.0.3") is None
    assert len(scrypts) == 2 and scrypts[0] != scrypts[1]  # the unknown name against a decoy hash: the same cost


def test_stored_headers_drop_credentials_and_a_fetch_refuses_huge_blocks() -> None:
    assert stored_headers({"Location": "https://u:p@h.test/x", "Content-Location": "/a@b", "X": "u:p@h"}) == {
        "Location": "https://h.test/x", "Content-Location": "/a@b", "X": "u:p@h"}
    assert header_block_problem([("a", "b")] * 100) is None
    assert header_block_problem([("a", "b")] * 101) == "more than 100 header fields"
    assert header_block_problem([("X-Big", "v" * 65536)]) == "a header line longer than 65536 bytes"


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
    tool, args, _ = jobs.build("generate", {"topN": 50, "noFilter": True, "noNorm": False})
    assert tool.name == "generate" and (args.topN, args.noFilter, args.noNorm) == (50, True, False)
    assert jobs.build("fetch", {"batch": "1700000000-42", "threads": 4, "resume": True})[1].threads == 4
    assert jobs.build("parse", {"all": True})[1].batch_id is None
    assert jobs.build("index", {"reindex": True})[1].solr == "http://127.0.0.1:8983/solr/nutch"  # the server's
    assert jobs.build("inject", {"seedUrls": ["http://a/", " http://b/ "]})[1].seedUrls == ["http://a/", " http://b/ "]
    assert jobs.build("inject", {"seedDir": "seeds"})[1].seeds == (files / "seeds").resolve()
    # what the API shows is what the client sent: no resolved path, no Solr URL
    assert jobs.build("inject", {"seedDir": "seeds"})[2] == {"seedDir": "seeds"}
    assert jobs.build("index", {"reindex": True})[2] == {"reindex": True}
    assert jobs.build("crawl", {"seedDir": "seeds/s.txt", "index": True, "rounds": 2})[2] == {
        "seedDir": "seeds/s.txt", "index": True, "rounds": 2}
    for job, args, words in (
            ("updatedb", {"batch": "-all"}, "not a batch id"), ("updatedb", {"batch": "a b"}, "not a batch id"),
            ("fetch", {"batch": "b", "threads": -1}, "out of range"), ("fetch", {"batch": "b", "numTasks": 5000},
                                                                       "out of range"),
            ("fetch", {"batch": "b", "resume": "yes"}, "true or false"),
            ("inject", {"seedUrls": ["http://a/\n-D"]}, "line break"), ("inject", {"seedUrls": []}, "give the seeds"),
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


def test_job_messages_name_no_url_or_path_of_the_server(tmp_path: Path) -> None:
    from nutch2.searcher.jobapi import Redactor

    files, data = tmp_path / "files", str(tmp_path / "crawl")
    r = Redactor("http://127.0.0.1:8983/solr/nutch", files, data)
    assert r.text(f"warc: wrote {files.resolve()}/out/a.warc.gz") == "warc: wrote out/a.warc.gz"
    assert r.value({"files": [f"{files}/out/a.warc.gz"], "n": 2}) == {"files": ["out/a.warc.gz"], "n": 2}
    error = ("nutch2 index: error: Solr at http://127.0.0.1:8983/solr/nutch does not answer (connection refused); "
             f"sqlite store {data}/c_webpage.sqlite: disk I/O error; proxy http://u:p@10.0.0.1:3128/ refused; "
             "lock /var/lock/nutch2/c.lock is held; /etc/passwd: not a seed file")
    shown = r.text(error, strict=True)
    assert shown == ("nutch2 index: error: Solr at <solr> does not answer (connection refused); sqlite store "
                     "<data>/c_webpage.sqlite: disk I/O error; proxy <url> refused; lock <path> is held; <path>: "
                     "not a seed file")
    # what is not a path stays
    plain = "fetch: no rows carry batch id '123-456' from generate; check text/html 1/2 and/or `nutch2 generate`"
    assert r.text(plain, strict=True) == plain


def _row(key: str, status: CrawlStatus, batch: str | None, **marks: str) -> WebPage:
    page = WebPage(key, status=int(status), score=1.0, fetch_time=5_000_000, fetch_interval=1000)
    if batch:
        page.batch_id = batch
    for name, value in marks.items():
        Mark[name].put(page, value)
    return page


class _NoRowReads(MemoryStore):
    """A table the dashboard may not read a row of: what it shows must cost the same on any table size."""

    def _refuse(self, *_a: object, **_k: object):
        raise AssertionError("the dashboard read rows")

    scan = scan_split = get = count = mark_values = _refuse


def test_the_dashboard_reads_no_row_the_journal_and_the_last_readdb_do(tmp_path: Path) -> None:
    from nutch2.crawldb.journal import Journal
    from nutch2.crawldb.tablestats import record_stats
    from nutch2.jobs.readdb import StatsJob
    from nutch2.mapred.runner import LocalRunner

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
        journal.record_crawl({"round": 2, "rounds": 3})
        dashboard = _NoRowReads(store.table)
        view = crawl_view(dashboard)
        # the journal keeps a stopped crawl's round (the same command goes on from it); running: a crawl command
        # holds the crawl's lease now
        assert view.rows == 5 and view.readdb is None and view.crawl == {"round": 2, "rounds": 3, "running": False}
        from nutch2.stores import crawler_lease

        with crawler_lease(conf, "stats"):
            assert crawl_view(dashboard).crawl == {"round": 2, "rounds": 3, "running": True}
        rows = view.batch_rows()
        assert [r["batchId"] for r in rows] == [b2, b1]  # newest first
        assert {k: rows[0][k] for k in ("rows", "generated", "fetched", "parsed", "updated", "stage")} == {
            "rows": 2, "generated": 2, "fetched": 1, "parsed": 1, "updated": 0, "stage": "parsed"}
        # a finished batch keeps what each step did (its marks are gone)
        assert {k: rows[1][k] for k in ("rows", "generated", "fetched", "parsed", "updated", "indexed", "stage")} == {
            "rows": 2, "generated": 2, "fetched": 2, "parsed": 2, "updated": 2, "indexed": 1, "stage": "indexed"}
        # a batch an older nutch2 recorded (its journal kept no counts): not counted, rather than 0 rows fetched
        store.put_state("batch/1690000000-3", json.dumps({"state": "updated", "rows": 31, "time": 1690000000.0}))
        old = crawl_view(dashboard).batch_rows()[-1]
        assert old["batchId"] == "1690000000-3" and old["rows"] == 31 and old["stage"] == "updated"
        assert [old[k] for k in ("generated", "fetched", "parsed", "updated", "indexed")] == [None] * 4 + [0]
        # ... and updated by this one (the steps before it were run by the older one)
        store.put_state("batch/1690000000-3", json.dumps({"state": "updated", "rows": 31, "time": 1690000000.0,
                                                          "counts": {"updated": 30}}))
        old = crawl_view(dashboard).batch_rows()[-1]
        assert [old[k] for k in ("generated", "fetched", "parsed", "updated", "indexed")] == [None] * 3 + [30, 0]
        store.put_state("batch/1690000000-3", None)
        # statuses, scores and hosts: what the last readdb -stats counted, with its time
        job = StatsJob(conf, per_host=True)
        LocalRunner(conf, 2).run(job, store)
        record_stats(store, job.stats, per_host=True)
        new = _row("com.d:http/1", CrawlStatus.INJECTED, None)
        store.put(new.key, new)
        store.flush()
        out = crawl_view(dashboard).to_json(top=2)
        assert out["total"] == 6 and out["batches"] == 2  # rows now; the statistics are readdb's, of 5 rows
        readdb = out["readdb"]
        assert readdb["total"] == 5 and readdb["status"] == {"INJECTED": 1, "UNFETCHED": 1, "FETCHED": 3}
        assert list(readdb["status"]) == ["INJECTED", "UNFETCHED", "FETCHED"]  # CrawlStatus order
        assert readdb["hosts"] == [{"host": "a.com", "count": 2}, {"host": "b.com", "count": 2}]
        assert readdb["hostCount"] == 3 and readdb["score"] == {"min": 1.0, "avg": 1.0, "max": 1.0}
        assert readdb["retries"] == {"0": 5} and readdb["computedAt"].endswith("Z")
        chart = bar_chart(list(readdb["status"].items()))
        assert [b["label"] for b in chart["bars"]] == ["INJECTED", "UNFETCHED", "FETCHED"]
        assert chart["bars"][2]["w"] == max(b["w"] for b in chart["bars"])
        assert readdb["hostsCountedAt"] == readdb["computedAt"]
        # without -sort: the hosts of the last -sort are kept, with their own time
        sorted_at = json.loads(store.get_state("stats") or "{}")["time"]
        store.put_state("stats", json.dumps({**json.loads(store.get_state("stats") or "{}"),
                                             "time": sorted_at - 3600, "hostsTime": sorted_at - 3600}))
        record_stats(store, job.stats, per_host=False)
        readdb = crawl_view(dashboard).to_json(top=2)["readdb"]
        assert readdb["hosts"] == [{"host": "a.com", "count": 2}, {"host": "b.com", "count": 2}]
        assert readdb["hostCount"] == 3 and readdb["hostsCountedAt"] < readdb["computedAt"]
        # none counted yet: no hosts; a store that keeps no count shows none
        store.put_state("stats", None)
        record_stats(store, job.stats, per_host=False)
        dashboard.cheap_count = lambda: None  # type: ignore[method-assign]
        out = crawl_view(dashboard).to_json(top=2)
        assert out["total"] is None and out["readdb"]["hosts"] is None and out["readdb"]["hostCount"] is None
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
        "a server cannot read it; crawl into sqlite, postgres, hbase or cassandra"]
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
    # -sslCert / -sslKey naming files that are not there: the option and the file, as the other file options
    cert, key = tmp_path / "nope.pem", tmp_path / "nope.key"
    assert cli("server", "-crawlId", "x", *d, "-sslCert", str(cert), "-sslKey", str(key)) == 1
    assert capsys.readouterr().err.strip().splitlines() == [
        f"nutch2 server: error: -sslCert {cert} does not exist; give -sslCert FILE and -sslKey FILE as PEM files "
        "(a certificate chain and its private key)"]
    cert.write_text("-----BEGIN CERTIFICATE-----\n")
    assert cli("server", "-crawlId", "x", *d, "-sslCert", str(cert), "-sslKey", str(key)) == 1
    assert capsys.readouterr().err.strip().splitlines() == [
        f"nutch2 server: error: -sslKey {key} does not exist; give -sslCert FILE and -sslKey FILE as PEM files "
        "(a certificate chain and its private key)"]


def test_the_server_says_at_start_what_will_not_work(tmp_path: Path) -> None:
    """A dead Solr and a crawl id the store has no table for: the server starts (its pages say so until they
    come), with one warning line each naming the cause and the fix; the store's crawls are named."""
    import requests

    from tests.searchapp import SearchServer

    d = ["-D", f"storage.data.dir={tmp_path / 'crawl'}"]
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("http://a.test/\n")
    for crawl_id in ("alpha", "beta"):
        assert cli("inject", seeds, "-crawlId", crawl_id, *d) == 0
    users = tmp_path / "users"
    add_user(users, "ann", "correct horse battery")
    dead = "http://127.0.0.1:1/solr/x"
    with SearchServer(["-crawlId", "nosuch", "-solr", dead, "-users", str(users), *d], tmp_path / "s1.log") as server:
        pass
    lines = server.output().splitlines()
    assert any(x.startswith("server: crawl nosuch at http://127.0.0.1:") and "login: 1 user)" in x for x in lines)
    warned = [x for x in lines if "warning" in x]
    assert warned == [
        f"server: warning: Solr at {dead} failed to answer a ping: connection refused; start it "
        "(docker/services.sh start solr) or fix -solr / solr.server.url; searches fail until it answers",
        "server: warning: the sqlite store holds no crawl nosuch (table nosuch_webpage); it holds alpha, beta: serve "
        "one of them, or run `nutch2 inject SEEDS -crawlId nosuch` first"], lines
    with SearchServer(["-crawlId", "alpha", "-solr", dead, *d], tmp_path / "s2.log") as server:
        page = requests.get(f"{server.url}/crawl", timeout=30).text  # its dashboard counts one URL as one
    assert [x for x in server.output().splitlines() if "warning" in x] == warned[:1]  # alpha is there
    assert "<b>1</b> URL in the table now" in page, page


def test_crawl_ids_name_the_tables_a_store_holds(tmp_path: Path) -> None:
    from nutch2.stores import crawl_ids

    conf = make_conf(tmp_path, "sqlite", **{"storage.crawl.id": ""})
    assert crawl_ids(conf) == []
    for cid in ("b", "a", None):
        open_store(conf, cid).close()
    (tmp_path / "crawl" / "notes.sqlite").touch()  # not a webpage table's file
    assert crawl_ids(conf) == ["", "a", "b"]  # "": the table of no crawl id (webpage)
    with open_store(conf, "b") as store:
        store.drop_schema()
    assert crawl_ids(conf) == ["", "a"]


def test_the_page_view_shows_at_most_4096_characters_of_a_header() -> None:
    from nutch2.searcher.pages import page_json

    page = WebPage("com.a:http/", headers={"X-Big": "v" * 100_000, "ETag": '"x"'})
    shown = page_json("http://a.com/", page)["headers"]
    assert shown["ETag"] == '"x"' and shown["X-Big"] == "v" * 4096 + "… (100,000 characters)"


@pytest.mark.parametrize(("typed", "sent"), [
    ("*ache", r"\*ache"), ("nutch~2", r"nutch\~2"), ("/.*/", r"\/.\*\/"), ("ab?c", r"ab\?c"),
    ("[a TO z]", r"\[a TO z\]"), ('"open * source" crawler*', r'"open * source" crawler\*'),
    ("title:nutch OR -java site:apache.org", "title:nutch OR -java"),
])
def test_queries_reach_solr_without_wildcards_regexes_fuzzy_or_ranges(typed: str, sent: str) -> None:
    """What a user types is matched as words: no leading wildcard, regex, fuzzy or range query walks the index."""
    from nutch2.searcher.search import parse_query

    assert parse_query(typed)[0] == sent


@pytest.mark.parametrize(("typed", "sent"), [
    ("page AND", "page"), ("page OR", "page"), ("page NOT", "page"), ("AND page", "page"), ("OR page ||", "page"),
    ("page AND site:a.com", "page"), ("NOT java", "NOT java"), ("OR", "OR"), ("a AND b", "a AND b"),
])
def test_an_operator_that_joins_nothing_is_dropped(typed: str, sent: str) -> None:
    """`page AND` typed halfway finds the pages `page` finds, not only those with the word `and` as well."""
    from nutch2.searcher.search import SearchRequest, parse_query

    assert parse_query(typed)[0] == sent
    assert SearchRequest.from_params({"q": typed}).words == sent


# ------------------------------------------------------------------------------------------- over OpenSearch
HOSTILE_QUERIES = ["{!join from=id to=id fromIndex=nutch}x", '_query_:"{!lucene}x"', '_val_:"sum(1,1)"',
                   "crawlId:other", "id:other*", "*", "*:*", "?", "/.*/", "url:/.*/", "a*", "*ache", "qu?x",
                   "nutch~2", "[a TO z]", "title:[* TO *]", "{a TO z}", "\\", '"', "(" * 500, "a " * 499,
                   "title:" * 150, "x" * 1000, "OR", "NOT", "a OR b* OR /c/", '-"x*" -y~', "script:x", "host:*"]
FORBIDDEN = {"query_string", "simple_query_string", "regexp", "wildcard", "prefix", "fuzzy", "script", "script_score",
             "function_score", "range", "exists", "intervals", "wrapper", "more_like_this", "percolate", "span_multi",
             "terms_set", "ids", "nested", "has_child", "has_parent", "geo_shape", "distance_feature"}


def _keys(value: object) -> set[str]:
    """Every key of a JSON body, however deep."""
    if isinstance(value, dict):
        return set(value) | {k for v in value.values() for k in _keys(v)}
    if isinstance(value, list):
        return {k for v in value for k in _keys(v)}
    return set()


@pytest.mark.parametrize("typed", HOSTILE_QUERIES)
def test_opensearch_gets_what_is_typed_only_as_text_to_match(typed: str) -> None:
    """Whatever is typed, the query body holds match queries and the crawl's term filter: no query parser, no
    wildcard, regexp, prefix, fuzzy, range or script query, and the typed text only as the text of a match."""
    from nutch2.searcher.search_opensearch import opensearch_body

    try:
        req = SearchRequest.from_params({"q": typed}, "mine")
    except ParamError:
        return  # refused before any query (host:*, ...)
    body = opensearch_body(req)
    assert not _keys(body["query"]) & FORBIDDEN, body
    assert body["query"]["bool"]["filter"] == [{"term": {"crawlId": "mine"}}]

    def texts(value: object, key: str = "") -> list[str]:
        if isinstance(value, dict):
            return [t for k, v in value.items() for t in texts(v, k)]
        if isinstance(value, list):
            return [t for v in value for t in texts(v, key)]
        return [value] if isinstance(value, str) and key not in ("type", "operator", "fields") else []

    shown = [t for t in texts(body["query"]["bool"]["must"]) if not t.endswith(("^8", "^4", "^1", "^0.5"))]
    assert all(t in typed or t in typed.replace("\\", "") for t in shown), shown


def test_opensearch_queries_weigh_the_fields_as_edismax_does() -> None:
    from nutch2.index.opensearch import text_query
    from nutch2.index.query import clauses
    from nutch2.searcher.search import EDISMAX
    from nutch2.searcher.search_opensearch import WINDOW, opensearch_body

    assert (EDISMAX["qf"], EDISMAX["pf"]) == ("title^8 anchor^4 content^1 text^0.5", "title^20 anchor^8 content^4")
    q = text_query("open source")
    words, phrase = q["bool"]["must"][0]["multi_match"], q["bool"]["should"][0]["multi_match"]
    assert words == {"query": "open source", "fields": ["title^8", "anchor^4", "content^1", "text^0.5"],
                     "type": "cross_fields", "operator": "and"}  # every word, in any field, term by term
    assert phrase == {"query": "open source", "fields": ["title^20", "anchor^8", "content^4"], "type": "phrase",
                      "slop": 0}
    assert text_query("") == {"match_all": {}}  # site:example.com alone lists the site (Solr's q.alt)
    assert [[(c.text, c.field, c.phrase, c.negated) for c in g] for g in clauses(
        'a OR b -c "d e" title:f crawlId:g NOT h AND')] == [
        [("a", None, False, False), ("b", None, False, False)], [("c", None, False, True)],
        [("d e", None, True, False)], [("f", "title", False, False)], [("crawlId:g", None, False, False)],
        [("h", None, False, True)], [("AND", None, False, False)]]
    # host:/site: are term filters; the facet's host a post_filter (the facet counts every host); one hit per site
    req = SearchRequest.from_params({"q": "x site:a.test host:b.a.test"}, "c")
    body = opensearch_body(req)
    assert body["query"]["bool"]["filter"] == [{"term": {"crawlId": "c"}}, {"terms": {"host": ["b.a.test"]}},
                                               {"terms": {"site": ["a.test"]}}]
    assert "collapse" not in body and "post_filter" not in body
    body = opensearch_body(SearchRequest.from_params({"q": "x", "host": "b.test"}))
    assert body["post_filter"] == {"term": {"host": "b.test"}} and "collapse" not in body
    body = opensearch_body(SearchRequest.from_params({"q": "x", "start": "20"}))
    assert body["collapse"]["field"] == "host" and body["aggs"]["sites"]["cardinality"]["field"] == "host"
    assert body["aggs"]["host"] == {"terms": {"field": "host", "size": 20}}
    assert (body["from"], body["size"]) == (20, 10)
    deep = opensearch_body(SearchRequest.from_params({"q": "x", "start": "9950", "rows": "100"}))
    assert deep["from"] + deep["size"] == WINDOW  # within index.max_result_window


def test_the_server_and_search_take_one_index(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = ["-D", f"storage.data.dir={tmp_path}"]
    for command in (["server", "-crawlId", "x"], ["search", "word"]):
        assert cli(*command, "-solr", "http://127.0.0.1:9/solr/nutch", "-opensearch", "http://127.0.0.1:9/nutch",
                   *d) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "give -solr URL or -opensearch URL, not both" in err[0], err
    assert cli("server", "-crawlId", "x", "-opensearch", "http://127.0.0.1:9/Not An Index", *d) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "is not an OpenSearch index name" in err[0], err
    assert cli("search", "word", "-opensearch", "ftp://127.0.0.1:9/nutch", *d) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "is not http(s)://host:port/<index>" in err[0], err


def test_jobs_of_a_server_on_opensearch_index_there(tmp_path: Path) -> None:
    from nutch2.searcher.jobapi import Redactor

    url = "http://ann:s3cret@127.0.0.1:9200/web"
    jobs = JobManager(make_conf(tmp_path), "c", None, None, url)
    index = jobs.build("index", {"all": True})[1]
    assert (index.opensearch, index.solr) == (url, None)
    crawl = jobs.build("crawl", {"seedUrls": ["http://a/"], "rounds": 1, "index": True})[1]
    assert (crawl.opensearch, crawl.solr, crawl.index) == (url, None, False)  # index: the server's Solr; off
    assert jobs.build("crawl", {"seedUrls": ["http://a/"], "rounds": 1})[1].opensearch is None  # no indexing
    with pytest.raises(ParamError, match="cannot be set through the job API"):
        jobs.build("index", {"all": True, "opensearch": "http://evil.test:9200/x"})
    r = Redactor(None, None, None, url)
    assert r.text(f"index into {url} and http://ann:***@127.0.0.1:9200/web; OpenSearch at http://127.0.0.1:9200 "
                  "failed") == "index into <opensearch> and <opensearch>; OpenSearch at <opensearch> failed"


def test_a_solr_password_is_in_no_message(tmp_path: Path) -> None:
    """-solr http://user:password@host/solr/core (Solr's basic auth): every failure, the server's start line and
    its log named the URL with the password, where OpenSearch's showed ***."""
    from nutch2.index.solr import SolrClient, SolrUnavailable
    from nutch2.searcher.jobapi import Redactor
    from nutch2.searcher.search import SolrBackend

    url = "http://ann:s3cret@127.0.0.1:9/solr/nutch"  # nothing listens on port 9
    client = SolrClient(url, 5)
    assert client.url == url  # what requests are sent with
    with pytest.raises(SolrUnavailable) as e:
        client.ping()
    assert "s3cret" not in str(e.value) and "http://ann:***@127.0.0.1:9/solr/nutch" in str(e.value)
    assert SolrBackend(client).url == "http://ann:***@127.0.0.1:9/solr/nutch"
    jobs = JobManager(make_conf(tmp_path), "c", url, None)
    assert jobs.build("index", {"all": True})[1].solr == url  # jobs index with the password
    r = Redactor(url)
    assert r.text(f"{e.value} ({url})").startswith("Solr at <solr> failed") and r.text(url) == "<solr>"
    p = subprocess.run([sys.executable, "-m", "nutch2.cli", "search", "crawler", "-solr", url],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode != 0 and "s3cret" not in p.stderr + p.stdout and "ann:***@" in p.stderr, p.stderr


def test_form_tokens_are_per_login_and_per_server_start() -> None:
    from nutch2.searcher.crawlforms import FormTokens

    tokens = FormTokens()
    ann = tokens.token("ann")
    assert tokens.valid("ann", ann) and tokens.token("ann") == ann
    assert not tokens.valid("bob", ann) and not tokens.valid("", ann)  # another login, or none
    assert not FormTokens().valid("ann", ann)  # a new secret: a restarted server takes no old page's token
    for bad in (None, "", ann[:-1], [ann], ann + "x"):
        assert not tokens.valid("ann", bad)


def test_seed_lines_of_a_form() -> None:
    from nutch2.searcher.crawlforms import seed_lines

    assert seed_lines("# mine\r\n http://a.test/ \n\n\thttp://b.test/x\tnutch.score=2\n") == [
        "http://a.test/", "http://b.test/x\tnutch.score=2"]
    assert seed_lines("\n# only a comment\n") == []


def _guarded(path: str, ctype: str, body: bytes, origin: str | None = None) -> tuple[int, dict]:
    """One POST through AccessGuard with the form routes' pattern: its status, and the scope the app saw."""
    import asyncio
    import re

    from nutch2.searcher.access import AccessGuard
    from nutch2.searcher.crawlforms import FORM_PATHS

    seen: dict = {}

    async def app(scope, receive, send) -> None:
        seen.update(scope)
        seen["body"] = (await receive())["body"]
        await send({"type": "http.response.start", "status": 204, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    sent: list[dict] = []

    async def receive() -> dict:
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: dict) -> None:
        sent.append(message)

    headers = [(b"host", b"127.0.0.1:8081"), (b"content-type", ctype.encode()),
               (b"content-length", str(len(body)).encode())]
    if origin:
        headers.append((b"origin", origin.encode()))
    scope = {"type": "http", "method": "POST", "path": path, "headers": headers, "scheme": "http",
             "client": ("127.0.0.1", 5000)}
    guard = AccessGuard(app, AccessPolicy.build([], body_max=100, form_max=1000), forms=re.compile(FORM_PATHS))
    asyncio.run(guard(scope, receive, send))
    return sent[0]["status"], seen


def test_the_guard_takes_forms_only_on_the_form_routes() -> None:
    form = "application/x-www-form-urlencoded"
    status, scope = _guarded("/crawl/inject", form, b"csrf=x&seeds=" + b"u" * 500)  # past body_max, in form_max
    assert status == 204 and scope["body"].startswith(b"csrf=x") and scope["state"]["login"] == ""
    assert _guarded("/crawl/jobs/abc_DEF-123/stop", "multipart/form-data; boundary=x", b"--x--")[0] == 204
    assert _guarded("/crawl/start", form, b"s=" + b"u" * 1000)[0] == 413  # past form_max
    assert _guarded("/crawl/start", "application/json", b"{}")[0] == 415  # forms only there
    assert _guarded("/crawl/start", "text/plain", b"csrf=x")[0] == 415
    assert _guarded("/crawl/start", form, b"csrf=x", origin="http://evil.example")[0] == 403
    for path in ("/api/jobs", "/crawl/jobs", "/crawl/start/x", "/crawl/jobs/a/b/stop", "/crawl/jobs/a/stopx"):
        assert _guarded(path, form, b"csrf=x")[0] == 415, path  # every other route stays JSON only
    assert _guarded("/api/jobs", "application/json", b"{}")[0] == 204


def test_a_client_is_an_ipv4_address_or_an_ipv6_network() -> None:
    """Whoever has one IPv6 address has its /64: per address, a login back-off and the connection cap were 2^64."""
    from nutch2.searcher.access import client_of

    assert client_of("203.0.113.7") == "203.0.113.7" and client_of("::ffff:203.0.113.7") == "203.0.113.7"
    assert client_of("2001:db8:1:2:aaaa::1") == client_of("2001:db8:1:2:ffff:1:2:3") == "2001:db8:1:2::/64"
    assert client_of("2001:db8:1:3::1") != client_of("2001:db8:1:2::1")
    assert client_of("") == "" and client_of("unix-socket") == "unix-socket"


def test_failed_logins_from_one_ipv6_network_share_a_back_off() -> None:
    import asyncio

    from nutch2.searcher.access import AccessGuard

    creds = Credentials(users={"ann": hash_password("right-password", n=2**4)})
    guard = AccessGuard(None, AccessPolicy.build([], creds))
    wrong = "Basic " + base64.b64encode(b"ann:wrong-password").decode()
    sent: list[dict] = []

    async def send(message: dict) -> None:
        sent.append(message)

    for i in range(FREE_FAILURES):  # each try from another address of one /64
        scope = {"type": "http", "method": "GET", "path": "/", "scheme": "http", "client": (f"2001:db8::{i + 1}", 5),
                 "headers": [(b"host", b"127.0.0.1:8081"), (b"authorization", wrong.encode())]}
        asyncio.run(guard(scope, None, send))
    assert [m["status"] for m in sent if m["type"] == "http.response.start"] == [401] * FREE_FAILURES
    with pytest.raises(Backoff):  # the next address of that network waits as one client would
        creds.check(wrong, "2001:db8::/64")


def test_the_search_command_cuts_a_snippet_as_the_search_page_does(tmp_path: Path) -> None:
    """A page without a full stop is one sentence to the highlighters: `nutch2 search` printed a 51,200-character
    snippet where the search page shows at most 300 characters around the first match."""
    from nutch2.config import Configuration
    from nutch2.index.query import SNIPPET_MAX
    from nutch2.tools.base import Run
    from nutch2.tools.search import Found, Search, SearchArgs

    class _Index(Search):
        def solr(self, a: SearchArgs):  # one hit whose snippet is the highlighter's whole "sentence"
            text = "lorem ipsum " * 2000 + "the <em>zorbix</em> word " + "dolor sit " * 3000
            return 1, [Found("T", "http://a.test/", text)], lambda: None, "index"

    lines: list[str] = []
    conf = Configuration(Path(__file__).resolve().parent.parent / "conf", {"storage.data.dir": str(tmp_path)})
    assert _Index(conf, None, SearchArgs(query="zorbix", solr="http://127.0.0.1:1/solr/x")).run(Run(lines.append)) == 0
    snippet = lines[-1].strip()
    assert snippet.startswith("…") and snippet.endswith("…") and "*zorbix*" in snippet
    assert len(snippet) <= SNIPPET_MAX + 4  # the text, the two marks and the two ellipses
