"""ParserJob at job level on every store backend, for fetched rows built by hand (no web server)."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from nutch2.errors import ConfigError
from nutch2.jobs.parse import ParserJob
from nutch2.mapred.frameworks import make_runner
from nutch2.mapred.job import Counters, TaskContext
from nutch2.marks import Mark
from nutch2.parse.parseutil import PageParser
from nutch2.parse.signature import md5_signature, text_profile_signature
from nutch2.plugins.scoring_opic.opic import get_cash, set_cash
from nutch2.rowkeys import NOINDEX_KEY, TRUNCATED_KEY
from nutch2.status import CrawlStatus, ParseMajor, ParseMinor
from nutch2.stores import open_store
from nutch2.urls.tableutil import reverse_url
from nutch2.webpage import WebPage
from tests.conftest import make_conf
from tests.crawlutil import cli, defines
from tests.helpers import page_html

HTML = "text/html; charset=utf-8"


@pytest.fixture(params=["memory", "sqlite:local", "sqlite"])
def backend(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def env(backend: str, tmp_path: Path) -> Iterator[tuple]:
    crawl_id = "prs" + uuid.uuid4().hex[:10]
    store = open_store(make_conf(tmp_path, backend), crawl_id)
    yield tmp_path, backend, crawl_id, store
    store.drop_schema()
    store.close()


def put_fetched(store, url: str, content: bytes, *, batch: str = "B", content_type: str = HTML,
                status: int = CrawlStatus.FETCHED, markers: dict[str, str] | None = None, **fields) -> str:
    key = reverse_url(url)
    m = {Mark.GENERATE.value: batch, Mark.FETCH.value: batch, "dist": "0"}
    m.update(markers or {})
    store.put(key, WebPage(key, status=int(status), content=content, content_type=content_type,
                           base_url=url, markers=m, **fields))
    return key


def parse(env, batch: str = "B", num_tasks: int = 1, **kw) -> dict[str, int]:
    tmp, backend, _, store = env
    props = kw.pop("props", {})
    store.flush()
    conf = make_conf(tmp, backend, **props)
    return make_runner(conf, num_tasks).run(ParserJob(conf, batch, **kw), store).as_dict()


@pytest.mark.parametrize("num_tasks", [1, 2])
def test_parses_fetched_rows_of_the_batch_only(env, num_tasks):
    _, _, _, store = env
    ok = put_fetched(store, "http://a.example.com/", page_html("Hello", "some words here",
                                                               [("/next", "Next page")]))
    other = put_fetched(store, "http://a.example.com/other", page_html("Other"), batch="C")
    gone = put_fetched(store, "http://a.example.com/gone", b"", status=CrawlStatus.GONE)
    redir = put_fetched(store, "http://a.example.com/moved", b"", status=CrawlStatus.REDIR_PERM)
    # generated but not fetched yet: no fetch mark
    nf = reverse_url("http://a.example.com/notyet")
    store.put(nf, WebPage(nf, status=1, content=page_html("x"), content_type=HTML,
                          markers={Mark.GENERATE.value: "B"}))
    c = parse(env, num_tasks=num_tasks)
    assert c["parsed"] == 1 and c["skipped_not_fetched"] == 2
    p = store.get(ok)
    assert p.title == "Hello" and "some words here" in p.text
    assert p.outlinks == {"http://a.example.com/next": "Next page"}
    assert p.parse_status.major_code == ParseMajor.SUCCESS
    assert p.markers[Mark.PARSE.value] == "B"
    assert p.markers[Mark.GENERATE.value] == "B" and p.markers["dist"] == "0"
    assert p.signature == md5_signature(p.content)
    for key in (other, gone, redir, nf):
        q = store.get(key)
        assert Mark.PARSE.value not in q.markers and q.title is None and not q.outlinks


def test_all_parses_every_batch(env):
    _, _, _, store = env
    b = put_fetched(store, "http://a.example.com/b", page_html("B"))
    c_ = put_fetched(store, "http://a.example.com/c", page_html("C"), batch="C")
    c = parse(env, batch=None)
    assert c["parsed"] == 2
    assert store.get(b).markers[Mark.PARSE.value] == "B"
    assert store.get(c_).markers[Mark.PARSE.value] == "C"


def test_resume_skips_parsed_unless_force(env):
    _, _, _, store = env
    done = put_fetched(store, "http://a.example.com/done", page_html("New title"),
                       markers={Mark.PARSE.value: "B"}, title="Old title")
    todo = put_fetched(store, "http://a.example.com/todo", page_html("Todo"))
    c = parse(env, resume=True)
    assert c["skipped_already_parsed"] == 1 and c["parsed"] == 1
    assert store.get(done).title == "Old title"
    assert store.get(todo).title == "Todo"
    c = parse(env, resume=True, force=True)
    assert c["parsed"] == 2
    assert store.get(done).title == "New title"
    # without -resume, parsed rows are parsed again too
    assert parse(env)["parsed"] == 2


def test_prev_signature_shifts_once_per_fetch(env):
    _, _, _, store = env
    content = page_html("Changed", "new text")
    key = put_fetched(store, "http://a.example.com/", content, signature=b"old-signature")
    parse(env)
    p = store.get(key)
    assert p.prev_signature == b"old-signature"
    assert p.signature == md5_signature(content)
    # parsing the same fetch again (-resume -force, or a re-run) must not make the page look unchanged
    parse(env, resume=True, force=True)
    p = store.get(key)
    assert p.prev_signature == b"old-signature" and p.signature == md5_signature(content)


def test_first_parse_has_no_prev_signature(env):
    _, _, _, store = env
    key = put_fetched(store, "http://a.example.com/", page_html("T"))
    parse(env)
    p = store.get(key)
    assert p.prev_signature is None and p.signature is not None


def test_truncated_skipped_or_parsed(env):
    _, _, _, store = env
    key = put_fetched(store, "http://a.example.com/big", page_html("Big", "cut"), metadata={TRUNCATED_KEY: b"y"})
    c = parse(env)
    p = store.get(key)
    assert c["skipped_truncated"] == 1
    assert p.parse_status.major_code == ParseMajor.NOTPARSED
    assert p.parse_status.minor_code == ParseMinor.FAILED_TRUNCATED
    assert p.parse_status.args == ["content truncated (by http.content.limit, the fetch's time limit or a connection "
                                   "that ended)"]  # a row from before the reason was kept
    assert Mark.PARSE.value not in p.markers and p.title is None
    for cut, words in ((b"length", "by http.content.limit"), (b"time", "the fetch's time limit"),
                       (b"disconnect", "the connection")):
        put_fetched(store, "http://a.example.com/big", page_html("Big", "cut"), metadata={TRUNCATED_KEY: cut})
        parse(env)
        assert words in store.get(key).parse_status.args[0], cut
    c = parse(env, props={"parser.skip.truncated": "false"})
    p = store.get(key)
    assert c["parsed"] == 1 and p.title == "Big" and p.markers[Mark.PARSE.value] == "B"


def test_non_html_not_parsed_with_reason(env):
    _, _, _, store = env
    key = put_fetched(store, "http://a.example.com/pic", b"\x89PNG\r\n\x1a\n....", content_type="image/png")
    c = parse(env)
    p = store.get(key)
    assert c["not_parsed"] == 1
    assert p.parse_status.major_code == ParseMajor.NOTPARSED
    assert any("image/png" in a for a in p.parse_status.args)
    assert Mark.PARSE.value not in p.markers


def test_plain_text_parsed(env):
    _, _, _, store = env
    key = put_fetched(store, "http://a.example.com/readme.txt", b"plain words", content_type="text/plain")
    parse(env)
    p = store.get(key)
    assert p.parse_status.major_code == ParseMajor.SUCCESS and "plain words" in p.text


def test_outlinks_normalized_filtered_and_external(env):
    _, _, _, store = env
    links = [("HTTP://A.Example.COM/x#frag", "x"), ("/y/../z", "z"), ("pic.png", "image"),
             ("mailto:me@example.com", "mail"), ("http://b.example.org/ext", "ext"), ("/", "self")]
    key = put_fetched(store, "http://a.example.com/", page_html("L", links=links))
    parse(env)
    assert store.get(key).outlinks == {
        "http://a.example.com/x": "x",
        "http://a.example.com/z": "z",
        "http://b.example.org/ext": "ext",
    }
    parse(env, props={"db.ignore.external.links": "true"})
    assert store.get(key).outlinks == {"http://a.example.com/x": "x", "http://a.example.com/z": "z"}


def test_external_and_internal_links_by_domain(env, tmp_path):
    """db.ignore.external.links.mode=byDomain (Nutch 1's): blog.example.com is the same site as a.example.com."""
    _, _, _, store = env
    links = [("/x", "x"), ("http://blog.example.com/b", "b"), ("http://other.org/o", "o")]
    key = put_fetched(store, "http://a.example.com/", page_html("L", links=links))
    parse(env, props={"db.ignore.external.links": "true", "db.ignore.external.links.mode": "byDomain"})
    assert store.get(key).outlinks == {"http://a.example.com/x": "x", "http://blog.example.com/b": "b"}
    parse(env, props={"db.ignore.internal.links": "true", "db.ignore.external.links.mode": "byDomain"})
    assert store.get(key).outlinks == {"http://other.org/o": "o"}
    with pytest.raises(ConfigError, match=r"db.ignore.external.links.mode='bySite' is not known; use byHost or "
                                          "byDomain"):
        PageParser(make_conf(tmp_path, "memory", **{"db.ignore.external.links.mode": "bySite"}))


def test_max_outlinks_per_page(env):
    _, _, _, store = env
    links = [(f"/p{i}", f"p{i}") for i in range(10)]
    key = put_fetched(store, "http://a.example.com/", page_html("L", links=links))
    parse(env, props={"db.max.outlinks.per.page": 3})
    assert list(store.get(key).outlinks) == [f"http://a.example.com/p{i}" for i in range(3)]


def test_signature_md5_vs_textprofile(env):
    _, _, _, store = env
    a = put_fetched(store, "http://a.example.com/1", page_html("Same", "alpha beta gamma", head="<!-- 1 -->"))
    b = put_fetched(store, "http://a.example.com/2", page_html("Same", "alpha beta gamma", head="<!-- 2 -->"))
    parse(env)
    assert store.get(a).signature != store.get(b).signature  # raw bytes differ
    parse(env, props={"db.signature.class": "textprofile"})
    pa, pb = store.get(a), store.get(b)
    assert pa.signature == pb.signature  # same text
    assert pa.signature == text_profile_signature(pa.text)


def test_bad_signature_class(tmp_path):
    with pytest.raises(ConfigError, match="db.signature.class"):
        PageParser(make_conf(tmp_path, "memory", **{"db.signature.class": "sha1"}))


def test_noindex_and_nofollow(env):
    _, _, _, store = env
    noindex = put_fetched(store, "http://a.example.com/ni", page_html(
        "Secret", "hidden text", [("/l", "l")], head='<meta name="robots" content="noindex">'))
    nofollow = put_fetched(store, "http://a.example.com/nf", page_html(
        "Shown", "visible", [("/l", "l")], head='<meta name="robots" content="nofollow">'))
    normal = put_fetched(store, "http://a.example.com/ok", page_html("Ok"), metadata={NOINDEX_KEY: b"y"})
    parse(env)
    ni, nf, ok = store.get(noindex), store.get(nofollow), store.get(normal)
    assert ni.metadata[NOINDEX_KEY] == b"y" and not ni.title and not ni.text
    assert ni.outlinks == {"http://a.example.com/l": "l"}
    assert nf.title == "Shown" and nf.outlinks == {} and NOINDEX_KEY not in nf.metadata
    assert NOINDEX_KEY not in ok.metadata  # a page that dropped noindex loses the flag


def test_metadata_cash_kept(env):
    _, _, _, store = env
    key = reverse_url("http://a.example.com/")
    page = WebPage(key, status=int(CrawlStatus.FETCHED), content=page_html("t", head='<meta name="robots" '
                                                                             'content="noindex">'),
                   content_type=HTML, markers={Mark.FETCH.value: "B", Mark.GENERATE.value: "B"})
    set_cash(page, 0.75)
    store.put(key, page)
    parse(env)
    assert get_cash(store.get(key)) == 0.75


def test_meta_refresh_is_an_outlink(env):
    _, _, _, store = env
    key = put_fetched(store, "http://a.example.com/r", page_html(
        "R", head='<meta http-equiv="refresh" content="0; url=/target">'))
    parse(env)
    p = store.get(key)
    assert "http://a.example.com/target" in p.outlinks
    assert p.parse_status.minor_code == ParseMinor.REDIRECT


def test_reparse_parses_every_fetched_row_without_marking(env):
    _, _, _, store = env
    # a row already through updatedb: no generate/fetch mark any more
    key = reverse_url("http://a.example.com/old")
    store.put(key, WebPage(key, status=int(CrawlStatus.FETCHED), content=page_html("Again"), content_type=HTML,
                           markers={Mark.UPDATEDB.value: "A"}, title="stale"))
    other = put_fetched(store, "http://a.example.com/b", page_html("B"))
    unf = reverse_url("http://a.example.com/unfetched")
    store.put(unf, WebPage(unf, status=1))
    c = parse(env, batch=None, reparse=True)
    assert c["parsed"] == 2 and c["skipped_not_fetched"] == 1
    p = store.get(key)
    assert p.title == "Again"
    assert Mark.PARSE.value not in p.markers  # no batch to mark: a stray "-all" mark would linger forever
    assert store.get(other).markers[Mark.PARSE.value] == "B"


def test_page_parser_reads_old_signature_when_not_loaded(env):
    """fetcher.parse builds a fresh WebPage; prevSignature must still be the stored signature."""
    tmp, backend, _, store = env
    key = put_fetched(store, "http://a.example.com/", page_html("x"), signature=b"stored")
    store.flush()
    conf = make_conf(tmp, backend)
    page = WebPage(key, status=int(CrawlStatus.FETCHED), content=page_html("new"), content_type=HTML,
                   markers={Mark.FETCH.value: "B"})
    ctx = TaskContext(conf, store, Counters("t"), 0)
    assert PageParser(conf).parse(page, ctx)
    assert page.prev_signature == b"stored" and page.signature == md5_signature(page_html("new"))


def test_cli_parse(env):
    tmp, backend, crawl_id, store = env
    key = put_fetched(store, "http://a.example.com/", page_html("Cli"))
    store.flush()
    d = defines(tmp, backend)
    assert cli("parse", *d, "-crawlId", crawl_id, "B") == 0
    assert store.get(key).title == "Cli"
    assert cli("parse", *d, "-crawlId", crawl_id, "nope") != 0


def test_a_failed_page_is_named_with_its_reason(env, caplog):
    """failed=1 alone does not say which page, or why: each failed page is a line (Nutch's "Error parsing")."""
    _, _, _, store = env
    put_fetched(store, "http://a.example.com/doc.pdf", b"%PDF-1.4 not really a pdf", content_type="application/pdf")
    with caplog.at_level(logging.INFO):
        c = parse(env)
    assert c["failed"] == 1
    lines = [r.getMessage() for r in caplog.records if "doc.pdf" in r.getMessage()]
    assert len(lines) == 1 and lines[0].startswith("parse: http://a.example.com/doc.pdf: failed: "), lines
