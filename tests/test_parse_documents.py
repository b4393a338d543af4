"""Documents beyond HTML (issue 25): parse-tika against the real Tika server (docker/services.sh start tika),
parse-pdf with pypdf in process, the parse.plugin mapping, hostile documents, and a Tika server that goes away in
the middle of a parse job."""

from __future__ import annotations

import logging
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
from nutch2.mapred.frameworks import make_runner
from nutch2.mapred.job import Counters
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


def _mail_with_attachment() -> bytes:
    """A mail (message/rfc822) whose attachment is a DOCX: a document with an embedded document."""
    from email.message import EmailMessage

    msg = EmailMessage()
    msg["Subject"], msg["From"], msg["To"] = "Mail with an attachment", "ada@example.org", "bob@example.org"
    msg.set_content("The mail itself is about quixmailbodyzor.")
    main, sub = DOCUMENT_TYPES["docx"][1].split("/")
    msg.add_attachment(make("docx", DocSpec("Attached report", "Ada", "quixattachedzor")), maintype=main,
                       subtype=sub, filename="report.docx")
    return msg.as_bytes()


@pytest.mark.integration
def test_tika_reads_embedded_documents(tika: str) -> None:
    """The text of an embedded document (a mail's DOCX attachment) is the container's text too; with
    tika.server.max.embedded=0 only the container's own text is read."""
    mail = _mail_with_attachment()
    r = factory(**{"tika.server.url": tika}).parse(mail, "http://h.example/m.eml", "message/rfc822", {})
    assert r.parser == "parse-tika" and r.is_success, r.status_args
    assert r.title == "Mail with an attachment"
    assert "quixmailbodyzor" in r.text and "quixattachedzor" in r.text
    r = factory(**{"tika.server.url": tika, "tika.server.max.embedded": 0}).parse(
        mail, "http://h.example/m.eml", "message/rfc822", {})
    assert r.is_success and "quixmailbodyzor" in r.text and "quixattachedzor" not in r.text


@pytest.mark.integration
def test_tika_limits_through_the_client(tika: str) -> None:
    """At most http.content.limit bytes of a document are sent to Tika, and at most parser.text.limit characters of
    its text are kept (Tika's writeLimit)."""
    text = b"alpha beta " * 100 + b"quixtailzor"
    props = {"tika.server.url": tika, "parse.plugin": "*=parse-tika", "tika.language.detect": "false"}
    whole = factory(**props).parse(text, "http://h.example/a.txt", "text/plain", {})
    assert whole.parser == "parse-tika" and "quixtailzor" in whole.text
    cut = factory(**props, **{"http.content.limit": 100}).parse(text, "http://h.example/a.txt", "text/plain", {})
    assert cut.is_success and cut.text.startswith("alpha beta") and len(cut.text.strip()) <= 100
    assert "quixtailzor" not in cut.text
    doc = make("docx", DocSpec("Long", "Ada", "quixlongzor"))
    full = factory(**props).parse(doc, "http://h.example/a.docx", DOCUMENT_TYPES["docx"][1], {})
    assert "quixlongzor" in full.text and len(full.text) > 40
    short = factory(**props, **{"parser.text.limit": 40}).parse(doc, "http://h.example/a.docx",
                                                                  DOCUMENT_TYPES["docx"][1], {})
    assert short.is_success and short.text.startswith("Long") and len(short.text) <= 40
    assert "quixlongzor" not in short.text


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


@pytest.mark.parametrize("declared", ["\x00\x01garbage/;;;===\xff", "html", "text/html,text/html", "text /html", "/"])
def test_a_content_type_that_is_no_mime_type_is_sniffed(declared: str) -> None:
    """A server's Content-Type that names no type/subtype is treated as missing (Nutch's MimeUtil detects the type
    then): an HTML page behind it is parsed, its links followed, instead of 'unsupported content type: garbage/'."""
    page = b"<html><head><title>t</title></head><body><a href='/next'>n</a></body></html>"
    assert mime_type(page, "http://h/x", declared, {}) == "text/html"
    r = factory().parse(page, "http://h/x", declared, {})
    assert r.status_major == ParseMajor.SUCCESS and r.title == "t"


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


def test_nutchs_own_parse_plugins_xml_is_read_as_it_is(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Nutch's parse-plugins.xml maps types to parsers nutch2 does not have (feed, parse-js, parse-swf): copied into
    the conf folder as it is, it stopped every parse and crawl ("parse.plugin names parsers that are not
    installed", naming a property the user never set). Nutch skips parsers that are not active; so does nutch2,
    with one warning naming them."""
    (tmp_path / "parse-plugins.xml").write_text(
        '<parse-plugins><mimeType name="*"><plugin id="parse-tika"/></mimeType>'
        '<mimeType name="text/html"><plugin id="parse-html"/></mimeType>'
        '<mimeType name="application/rss+xml"><plugin id="feed"/></mimeType>'
        '<mimeType name="text/plain"><plugin id="parse-swf"/><plugin id="parse-text"/></mimeType>'
        '<aliases><alias name="feed" extension-id="org.apache.nutch.parse.feed.FeedParser"/></aliases>'
        '</parse-plugins>')
    conf = Configuration(tmp_path, {"tika.server.url": "http://127.0.0.1:1"})
    with caplog.at_level(logging.WARNING):
        f = ParserFactory(conf)
    lines = [r.getMessage() for r in caplog.records if "parse-plugins.xml" in r.getMessage()]
    assert len(lines) == 1 and "feed, parse-swf" in lines[0], lines
    assert [p.plugin_id for p in f.parsers_for("text/html")] == ["parse-html"]
    assert [p.plugin_id for p in f.parsers_for("text/plain")] == ["parse-text"]
    assert [p.plugin_id for p in f.parsers_for("application/rss+xml")] == ["parse-tika"]  # '*', as Nutch falls back


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


def test_an_answer_past_the_limit_is_cut_and_counted() -> None:
    """A Tika answer that goes on for ever (an archive of many embedded documents): read up to
    tika.server.answer.limit, then the parse fails with one line and a counter; memory stays at the limit."""
    import resource

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    sent = [0]

    def endless() -> None:
        conn = listener.accept()[0]
        try:
            conn.recv(65536)
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2000000000\r\n\r\n")
            chunk = b"[" + b'{"X-TIKA:content": "' + b"a" * 65000 + b'"},'
            while sent[0] < 2_000_000_000:
                conn.sendall(chunk)
                sent[0] += len(chunk)
        except OSError:
            pass
        finally:
            conn.close()

    threading.Thread(target=endless, daemon=True).start()
    try:
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        f = factory(**{"tika.server.url": f"http://127.0.0.1:{listener.getsockname()[1]}",
                       "tika.server.answer.limit": 8 * 2**20})
        r = f.parse(make("docx", SPEC), "http://h.example/a.docx", DOCUMENT_TYPES["docx"][1], {})
        assert r.status_major == ParseMajor.FAILED and r.counter == "tika_answer_cut", r.status_args
        assert "longer than tika.server.answer.limit=8388608 bytes" in r.status_args[0]
        assert sent[0] < 200 * 2**20  # the rest was never read
        assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 100 * 1024  # KB: not the answer
    finally:
        listener.close()


KILLER = b"nutch2-ends-the-parser"


class DroppingTika:
    """A small fake of the official Tika server's forked mode, for the client's rules only: ``PUT /rmeta`` reads the
    document, then closes the connection without an answer (its parser died) for the first ``drops`` requests and
    for every document that contains ``KILLER``; for ``restart`` seconds after that every connection is closed at
    once (the parser process restarts). ``GET /version`` answers otherwise, unless ``health`` is False; /rmeta
    answers as Tika does, with the text ``word``."""

    def __init__(self, drops: int = 0, restart: float = 0.0, health: bool = True,
                 word: str = "quixsurvivorzor") -> None:
        import json
        import time
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        fake = self
        self.drops, self.health = drops, health
        self.puts = self.versions = 0
        self.down_until = 0.0

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: object) -> None:  # noqa: A002
                pass

            def do_GET(self) -> None:
                fake.versions += 1
                if not fake.health or time.monotonic() < fake.down_until:
                    self.close_connection = True
                    return
                self._answer(b"Apache Tika 3.3.1", "text/plain")

            def do_PUT(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                fake.puts += 1
                if fake.puts <= fake.drops or KILLER in body or time.monotonic() < fake.down_until:
                    fake.down_until = max(fake.down_until, time.monotonic() + restart)
                    self.close_connection = True  # no answer: the connection is closed
                    return
                self._answer(json.dumps([{"dc:title": "Survivor", "Content-Type": "application/msword",
                                          "X-TIKA:content": f"<html><body><p>{word}</p></body></html>"}]).encode(),
                             "application/json")

            def _answer(self, body: bytes, ctype: str) -> None:
                self.send_response(200)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        class Server(ThreadingHTTPServer):
            daemon_threads = True

        self.server = Server(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def test_a_document_that_ends_tikas_parser_is_a_failed_parse_not_an_outage() -> None:
    """The official server closes the connection when a document ends its parser, then restarts the parser (nothing
    listens meanwhile): once GET /version answers again, the document is sent once more, and closed again it is a
    FAILED parse counted as tika_parser_died, not a retryable outage that would stop crawl on its batch forever."""
    fake = DroppingTika(restart=1.0)
    try:
        f = factory(**{"tika.server.url": fake.url, "tika.language.detect": "false", "tika.server.restart.wait": 30,
                       "tika.server.retry.interval": 60})
        r = f.parse(KILLER, "http://h.example/killer.docx", DOCUMENT_TYPES["docx"][1], {})
        assert r.status_major == ParseMajor.FAILED and not r.retryable and r.counter == "tika_parser_died"
        assert "ends its parser" in r.status_args[0]
        assert fake.puts == 2 and fake.versions > 2  # sent twice; the health asked after each drop, until it answered
        # the server answers: the next document is parsed at once (no "not asked again yet")
        ok = f.parse(make("docx", SPEC), "http://h.example/next.docx", DOCUMENT_TYPES["docx"][1], {})
        assert ok.is_success and "quixsurvivorzor" in ok.text
    finally:
        fake.close()


def test_a_document_taken_down_with_another_is_sent_again() -> None:
    """A parser process that dies takes every document it was parsing with it: one drop, then an answer."""
    fake = DroppingTika(drops=1)
    try:
        f = factory(**{"tika.server.url": fake.url, "tika.language.detect": "false"})
        r = f.parse(make("docx", SPEC), "http://h.example/victim.docx", DOCUMENT_TYPES["docx"][1], {})
        assert r.is_success and "quixsurvivorzor" in r.text and fake.puts == 2
    finally:
        fake.close()


def test_a_closed_connection_without_health_is_an_outage() -> None:
    """Closed during the parse and GET /version gets no answer either: the server is down, the row retried later."""
    fake = DroppingTika(drops=10, health=False)
    try:
        f = factory(**{"tika.server.url": fake.url, "tika.server.restart.wait": 1, "tika.server.retry.interval": 60})
        r = f.parse(make("docx", SPEC), "http://h.example/a.docx", DOCUMENT_TYPES["docx"][1], {})
        assert r.retryable and r.counter == "tika_unavailable" and r.status_major == ParseMajor.NOTPARSED
        assert "GET /version got no answer" in r.status_args[0] and fake.puts == 1
    finally:
        fake.close()


def test_a_parser_killing_document_does_not_hold_its_batch(tmp_path: Path) -> None:
    """Through the CLI: the killing document is a FAILED parse (counted), the others are parsed, nothing is left for
    a rerun, so updatedb (and crawl) go on with the batch without -force."""
    from nutch2.crawldb.journal import FETCHED, Journal
    from tests.crawlutil import defines
    from tests.helpers import nutch2

    fake = DroppingTika()
    crawl_id = "td" + uuid.uuid4().hex[:10]
    props = {"tika.server.url": fake.url, "tika.language.detect": "false"}
    conf = make_conf(tmp_path, "sqlite", **props)
    d = defines(tmp_path, "sqlite", **props)
    keys = [reverse_url(f"http://h.example/doc{i}.docx") for i in range(3)]
    try:
        with open_store(conf, crawl_id) as store:
            for i, key in enumerate(keys):  # the first one ends the parser; the others are answered
                content = KILLER if i == 0 else make("docx", SPEC)
                store.put(key, WebPage(key, status=int(CrawlStatus.FETCHED), content=content,
                                       content_type=DOCUMENT_TYPES["docx"][1], base_url=f"http://h.example/doc{i}.docx",
                                       markers={Mark.GENERATE.value: "B", Mark.FETCH.value: "B"}))
            Journal(store).record("B", FETCHED, 3)
        parse = nutch2("parse", "B", "-crawlId", crawl_id, *d)
        assert parse.returncode == 0, parse.stderr
        assert " tika_parser_died=1" in parse.stderr and " failed=1" in parse.stderr and " parsed=2" in parse.stderr
        assert "retry_later" not in parse.stderr
        update = nutch2("updatedb", "B", "-crawlId", crawl_id, *d)
        assert update.returncode == 0, update.stderr
        with open_store(conf, crawl_id) as store:
            majors = [store.get(k).parse_status.major_code for k in keys]
            assert majors == [ParseMajor.FAILED, ParseMajor.SUCCESS, ParseMajor.SUCCESS]
            store.drop_schema()
    finally:
        fake.close()


@pytest.mark.integration
def test_tika_down_mid_parse_leaves_rows_parseable(tika: str, tmp_path: Path) -> None:
    """The Tika server goes away after a few documents: those parsed keep their parse mark, the rest stay FETCHED
    without one (counted), and the same parse run with -resume once the server is back parses exactly them."""
    host, port = tika.split("//", 1)[1].split(":")
    proxy = Proxy((host, int(port)), allow=3)  # cut after 3 requests
    crawl_id = "tk" + uuid.uuid4().hex[:10]
    # the cut proxy closes the connection of a document it took: GET /version then gets no answer for 1 s (down)
    props = {"tika.server.url": f"http://127.0.0.1:{proxy.port}", "tika.language.detect": "false",
             "tika.server.retry.interval": 0, "tika.server.restart.wait": 1}
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
    from tests.helpers import nutch2

    host, port = tika.split("//", 1)[1].split(":")
    proxy = Proxy((host, int(port)), allow=2)
    crawl_id = "tl" + uuid.uuid4().hex[:10]
    props = {"tika.server.url": f"http://127.0.0.1:{proxy.port}", "tika.language.detect": "false",
             "tika.server.retry.interval": 0, "tika.server.restart.wait": 1}
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


@pytest.mark.integration
@pytest.mark.parametrize("kind", ["docx", "odt"])
def test_a_document_tika_cannot_read_is_a_failed_parse_with_tikas_reason(tika: str, kind: str) -> None:
    """A broken document: /rmeta answers 200 with the failure in X-TIKA:EXCEPTION:container_exception, as the
    official server does (our test server answered 500 there until 2026-12-07), and the parse is FAILED naming it."""
    suffix, ctype = DOCUMENT_TYPES[kind]
    broken = b"PK\x03\x04" + bytes(range(256)) * 8  # a zip's first bytes, then no zip
    answer = requests.put(f"{tika}/rmeta", data=broken, headers={"Content-Type": ctype}, timeout=60)
    assert answer.status_code == 200, answer.text[:300]
    assert "Exception" in answer.json()[0]["X-TIKA:EXCEPTION:container_exception"]
    r = factory(**{"tika.server.url": tika}).parse(broken, f"http://h.example/broken{suffix}", ctype, {})
    assert r.parser == "parse-tika" and not r.is_success and not r.retryable
    assert r.status_major == ParseMajor.FAILED and r.status_args[0].startswith("Tika: ")
    assert "Exception" in r.status_args[0]
