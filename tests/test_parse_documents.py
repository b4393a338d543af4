"""Documents beyond HTML (issue 25): parse-tika against the real Tika server (docker/services.sh start tika),
parse-pdf with pypdf in process, the parse.plugin mapping, hostile documents, and a Tika server that goes away in
the middle of a parse job."""

from __future__ import annotations

import resource
import socket
import threading
import uuid
from pathlib import Path

import pytest
import requests

from nutch2.config import Configuration
from nutch2.errors import ConfigError
from nutch2.jobs.parse import ParserJob
from nutch2.mapred.runner import Counters
from nutch2.mapred.runners import make_runner
from nutch2.marks import Mark
from nutch2.parse.parsers import ParserFactory, mime_type
from nutch2.status import CrawlStatus, ParseMajor
from nutch2.stores import open_store
from nutch2.urls.tableutil import reverse_url
from nutch2.webpage import WebPage
from tests.conftest import CONF_DIR, make_conf, require_tika
from tests.documents import DOCUMENT_TYPES, LINKING_KINDS, DocSpec, docx_zip_bomb, make, pdf_bomb, pdf_endless_pages
from tests.proxy import Proxy

SPEC = DocSpec("Quarterly report", "Ada Lovelace", "quixdocumentzor", "http://127.0.0.1:1/next.html")


def factory(**props: object) -> ParserFactory:
    conf = Configuration(CONF_DIR, {k: str(v) for k, v in props.items()})
    return ParserFactory(conf)


@pytest.fixture(scope="module")
def tika() -> str:
    return require_tika()


@pytest.mark.integration
@pytest.mark.parametrize("kind", list(DOCUMENT_TYPES))
def test_tika_parses_each_format(tika: str, kind: str) -> None:
    suffix, ctype = DOCUMENT_TYPES[kind]
    r = factory(**{"tika.server.url": tika}).parse(make(kind, SPEC), f"http://h.example/d{suffix}", ctype, {})
    assert r.parser == "parse-tika" and r.is_success, r.status_args
    assert r.title == SPEC.title
    assert SPEC.word in r.text
    assert r.meta["author"] == SPEC.author
    assert r.meta["created"].startswith("2024-03-01")
    assert r.meta["language"].startswith("en")
    assert r.content_type == ctype
    if kind in LINKING_KINDS:
        assert [u for u, _ in r.outlinks] == [SPEC.link]  # the package's own parts (EPUB chapters) are no outlinks
    else:
        assert r.outlinks == []


def test_pdf_in_process_without_tika() -> None:
    r = factory().parse(make("pdf", SPEC), "http://h.example/d.pdf", "application/pdf", {})
    assert r.parser == "parse-pdf" and r.is_success
    assert r.title == SPEC.title and SPEC.word in r.text
    assert r.meta == {"author": SPEC.author, "created": "2024-03-01T12:00:00Z"}
    assert r.outlinks == [(SPEC.link, "")]


def test_other_documents_without_tika_are_not_parsed() -> None:
    suffix, ctype = DOCUMENT_TYPES["docx"]
    r = factory().parse(make("docx", SPEC), f"http://h.example/d{suffix}", ctype, {})
    assert r.status_major == ParseMajor.NOTPARSED and not r.retryable
    assert r.status_args == [f"unsupported content type: {ctype}"]


def test_mime_type_of_a_generic_content_type_is_sniffed() -> None:
    for kind, (_suffix, ctype) in DOCUMENT_TYPES.items():
        assert mime_type(make(kind, SPEC), "http://h.example/download?id=1", "application/octet-stream", {}) == ctype
    assert mime_type(b"<html><title>x</title>", "http://h/x", None, {}) == "text/html"
    assert mime_type(b"...", "http://h/a.docx", None, {}) == DOCUMENT_TYPES["docx"][1]  # by the file extension
    assert mime_type(b"%PDF-1.4", "http://h/x", "text/html; charset=utf-8", {}) == "text/html"  # declared wins


def test_parse_plugin_mapping(tmp_path: Path) -> None:
    # parse.plugin replaces the file: PDFs to parse-pdf only, even with a Tika server named
    f = factory(**{"tika.server.url": "http://127.0.0.1:1", "parse.plugin": "application/pdf=parse-pdf,*=parse-tika"})
    assert [p.plugin_id for p in f.parsers_for("application/pdf")] == ["parse-pdf"]
    assert [p.plugin_id for p in f.parsers_for("text/html")] == ["parse-tika"]
    # Nutch's parse-plugins.xml, patterns included
    (tmp_path / "nutch-default.toml").write_text((CONF_DIR / "nutch-default.toml").read_text())
    (tmp_path / "regex-urlfilter.txt").write_text("+.\n")
    (tmp_path / "parse-plugins.xml").write_text(
        '<parse-plugins><mimeType name="application/vnd.oasis.*"><plugin id="parse-tika"/></mimeType>'
        '<mimeType name="text/html"><plugin id="parse-html"/></mimeType></parse-plugins>')
    conf = Configuration(tmp_path, {"tika.server.url": "http://127.0.0.1:1"})
    f = ParserFactory(conf)
    assert [p.plugin_id for p in f.parsers_for("application/vnd.oasis.opendocument.text")] == ["parse-tika"]
    assert f.parsers_for("application/pdf") == []
    with pytest.raises(ConfigError, match="parse-word"):
        factory(**{"parse.plugin": "application/msword=parse-word"})
    with pytest.raises(ConfigError, match="mime/type=parser-id"):
        factory(**{"parse.plugin": "parse-tika"})
    with pytest.raises(ConfigError, match="not an http"):
        factory(**{"tika.server.url": "127.0.0.1:9998"})


# ---------------------------------------------------------------------- hostile documents


@pytest.mark.integration
@pytest.mark.parametrize("name", ["pdf_bomb", "docx_zip_bomb"])
def test_tika_bombs_are_reported_and_the_server_stays(tika: str, name: str) -> None:
    data = {"pdf_bomb": pdf_bomb, "docx_zip_bomb": docx_zip_bomb}[name]()
    f = factory(**{"tika.server.url": tika, "tika.server.timeout": 10})
    r = f.parse(data, f"http://h.example/{name}", None, {})  # bounded: the server's limit plus the client's grace
    assert not r.retryable, r.status_args
    if r.status_major == ParseMajor.FAILED:  # a parser process ran out of memory (422) or out of time (503)
        assert "Tika" in r.status_args[0]
    else:  # PDFBox gave the stream up at its memory limit (maxMainMemoryBytes): a page without text
        assert r.is_success and r.text == "" and name == "pdf_bomb"
    # the server still answers, and parses the next document
    ok = f.parse(make("pdf", SPEC), "http://h.example/d.pdf", "application/pdf", {})
    assert ok.is_success and ok.parser == "parse-tika", ok.status_args


def test_pypdf_bombs_are_bounded() -> None:
    f = factory(**{"parser.timeout": 3})
    bomb = pdf_bomb()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    r = f.parse(bomb, "http://h.example/bomb.pdf", "application/pdf", {})
    # pypdf's decompression limit ends it (in milliseconds on an idle machine), or parser.timeout on a loaded one
    assert r.status_major == ParseMajor.FAILED
    assert "LimitReached" in r.status_args[0] or r.status_args == ["parser timeout"]
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert grown_mb < 400  # 1 GiB inflated; pypdf stops at its 75 MB decompression limit
    r = f.parse(pdf_endless_pages(20_000), "http://h.example/pages.pdf", "application/pdf", {})
    assert r.is_success or r.status_args == ["parser timeout"]  # 20 000 pages: read, or cut at parser.timeout


# ---------------------------------------------------------------------- a server that is down or slow


def test_tika_down_is_retryable_and_fails_fast() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    f = factory(**{"tika.server.url": f"http://127.0.0.1:{port}", "tika.server.retry.interval": 60})
    suffix, ctype = DOCUMENT_TYPES["docx"]
    doc = make("docx", SPEC)
    r = f.parse(doc, "http://h.example/a.docx", ctype, {})
    assert r.retryable and r.counter == "tika_unavailable" and r.status_major == ParseMajor.NOTPARSED
    assert "connection refused" in r.status_args[0]
    again = f.parse(doc, "http://h.example/b.docx", ctype, {})  # not even a connection attempt
    assert again.retryable and "not asked again yet" in again.status_args[0]
    # a PDF still has its in-process parser
    pdf = f.parse(make("pdf", SPEC), "http://h.example/d.pdf", "application/pdf", {})
    assert pdf.is_success and pdf.parser == "parse-pdf"


def test_tika_that_never_answers_is_cut_at_the_time_limit() -> None:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    held: list[socket.socket] = []
    threading.Thread(target=lambda: held.append(listener.accept()[0]), daemon=True).start()
    try:
        f = factory(**{"tika.server.url": f"http://127.0.0.1:{listener.getsockname()[1]}",
                       "tika.server.timeout": 1})
        r = f.parse(make("docx", SPEC), "http://h.example/a.docx", DOCUMENT_TYPES["docx"][1], {})
        # cut by the client at the server's 1 s plus 3 s of grace, not left to the 10 s read timeout
        assert r.retryable and "no answer within 4 s" in r.status_args[0]
    finally:
        listener.close()
        for s in held:
            s.close()


@pytest.mark.integration
def test_tika_down_mid_parse_leaves_rows_parseable(tika: str, tmp_path: Path) -> None:
    """The Tika server goes away after a few documents: those parsed keep their parse mark, the rest stay FETCHED
    without one (counted), and the same parse run with -resume once the server is back parses exactly them."""
    host, port = tika.split("//", 1)[1].split(":")
    proxy = Proxy((host, int(port)), allow=3)  # cut after 3 requests
    crawl_id = "tk" + uuid.uuid4().hex[:10]
    props = {"tika.server.url": f"http://127.0.0.1:{proxy.port}", "tika.language.detect": "false",
             "tika.server.retry.interval": 0}
    conf = make_conf(tmp_path, "sqlite", **props)
    keys = []
    with open_store(conf, crawl_id) as store:
        for i in range(8):
            kind = ("docx", "odt", "xlsx", "pptx")[i % 4]
            url = f"http://h.example/doc{i}{DOCUMENT_TYPES[kind][0]}"
            key = reverse_url(url)
            spec = DocSpec(f"Document {i}", "Ada", f"quixmid{i}zor")
            store.put(key, WebPage(key, status=int(CrawlStatus.FETCHED), content=make(kind, spec),
                                   content_type=DOCUMENT_TYPES[kind][1], base_url=url,
                                   markers={Mark.GENERATE.value: "B", Mark.FETCH.value: "B"}))
            keys.append(key)
        store.flush()
        counters = Counters("parse")
        make_runner(conf, 1).run(ParserJob(conf, "B"), store, counters)
        c = counters.as_dict()
        assert c.get("parsed", 0) == 3 and c.get("tika_unavailable", 0) == 5 and c.get("retry_later", 0) == 5
        parsed = {k for k in keys if Mark.PARSE.value in store.get(k).markers}
        assert len(parsed) == 3
        for k in set(keys) - parsed:
            p = store.get(k)
            assert p.status == CrawlStatus.FETCHED and p.parse_status.major_code == ParseMajor.NOTPARSED
            assert "Tika server unavailable" in p.parse_status.args[0]
        proxy.allow = None
        proxy.restore()
        counters = Counters("parse")
        make_runner(conf, 1).run(ParserJob(conf, "B", resume=True), store, counters)
        c = counters.as_dict()
        assert c.get("parsed", 0) == 5 and c.get("skipped_already_parsed", 0) == 3
        for i, k in enumerate(keys):
            p = store.get(k)
            assert p.markers.get(Mark.PARSE.value) == "B" and f"quixmid{i}zor" in p.text
        store.drop_schema()
    proxy.close()


@pytest.mark.integration
def test_a_batch_tika_could_not_finish_is_not_updated_until_its_parse_is_done(tika: str, tmp_path: Path) -> None:
    """Through the CLI: pages left for later by a Tika outage keep the batch short of "parsed", so updatedb (and
    crawl) refuse it until `parse -resume` has parsed them; nothing is updated without its text and links."""
    from nutch2.crawldb.journal import FETCHED, Journal
    from tests.crawlutil import defines
    from tests.test_crash_safety import nutch2

    host, port = tika.split("//", 1)[1].split(":")
    proxy = Proxy((host, int(port)), allow=2)
    crawl_id = "tl" + uuid.uuid4().hex[:10]
    props = {"tika.server.url": f"http://127.0.0.1:{proxy.port}", "tika.language.detect": "false",
             "tika.server.retry.interval": 0}
    conf = make_conf(tmp_path, "sqlite", **props)
    d = defines(tmp_path, "sqlite", **props)
    with open_store(conf, crawl_id) as store:
        for i in range(5):
            url = f"http://h.example/doc{i}.docx"
            store.put(reverse_url(url), WebPage(reverse_url(url), status=int(CrawlStatus.FETCHED),
                                                content=make("docx", DocSpec(f"D{i}", "Ada", f"quixlc{i}zor")),
                                                content_type=DOCUMENT_TYPES["docx"][1], base_url=url,
                                                markers={Mark.GENERATE.value: "B", Mark.FETCH.value: "B"}))
        Journal(store).record("B", FETCHED, 5)
    first = nutch2("parse", "B", "-crawlId", crawl_id, *d)
    assert first.returncode == 0 and " pages could not be parsed now" in first.stderr, first.stderr
    assert " retry_later=" in first.stderr
    refused = nutch2("updatedb", "B", "-crawlId", crawl_id, *d)
    assert refused.returncode == 1 and "was fetched but not parsed" in refused.stderr
    proxy.allow = None
    proxy.restore()
    assert nutch2("parse", "B", "-resume", "-crawlId", crawl_id, *d).returncode == 0
    assert nutch2("updatedb", "B", "-crawlId", crawl_id, *d).returncode == 0
    proxy.close()


@pytest.mark.integration
def test_tika_answers_like_the_official_server(tika: str) -> None:
    """The REST shapes nutch2 relies on (the official apache/tika image answers the same)."""
    assert requests.get(f"{tika}/version", timeout=5).text.startswith("Apache Tika 3.")
    assert requests.get(f"{tika}/tika", timeout=5).text.startswith("This is Tika Server")
    text = requests.put(f"{tika}/tika", data=make("docx", SPEC), headers={"Accept": "text/plain"}, timeout=60)
    assert text.status_code == 200 and SPEC.word in text.text
    rmeta = requests.put(f"{tika}/rmeta/text", data=make("docx", SPEC), timeout=60).json()
    assert rmeta[0]["dc:title"] == SPEC.title and SPEC.word in rmeta[0]["X-TIKA:content"]
    limited = requests.put(f"{tika}/rmeta/text", data=make("docx", SPEC), headers={"writeLimit": "10"}, timeout=60)
    first = limited.json()[0]
    assert len(first.get("X-TIKA:content", "")) <= 10 and any(k.endswith("write_limit_reached") for k in first)
    assert requests.put(f"{tika}/tika", data=b"\x00\x01garbage\xff" * 10, timeout=30).status_code in (200, 415, 422)
    assert requests.put(f"{tika}/language/string", data="the quick brown fox jumps over the lazy dog " * 5,
                        timeout=30).text == "en"
