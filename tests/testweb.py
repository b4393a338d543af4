"""A deterministic synthetic web served by real HTTP servers on loopback addresses.

`TestWeb` starts one stdlib `ThreadingHTTPServer` per host, each bound to its own
127.0.x.y address and all on the same port, so a crawler sees many distinct hosts
(URLs use the IP as host name: ``http://127.0.1.1:PORT/``).  The link graph, every
trap and the outcome a Nutch-style crawler must record for each URL are exposed in
`TestWeb.pages`, and `TestWeb.reachable` predicts which URLs a breadth-first crawl
requests in each round.

Layout (``hosts=H``, ``pages_per_host=P``; host ``h`` is ``127.0.1.(h+1)``, beyond
254 hosts the third octet grows):

* Normal pages of every host: ``/`` (page 0, the home page) and ``/p/{i}.html`` for
  ``1 <= i < P``.  The home page links to pages 1..3 and to the home page of host
  ``(h+1) % H``; page ``i`` links to page ``i+1`` (a chain, so every page is
  reachable), to up to two random pages of its host and, with probability 1/2, to
  one random page of another host.  All randomness comes from ``random.Random(seed)``.
  Same-host links are written root-relative (``/p/3.html``), cross-host links absolute.
* Every normal 200 response carries ``Last-Modified`` and ``ETag`` and answers 304 to
  a matching ``If-None-Match`` (checked first) or an ``If-Modified-Since`` not older
  than ``Last-Modified``, unless `not_modified` (settable while serving) is False: then
  it answers 200 with the same body, as servers without conditional requests do.
  `TestWeb.modify` changes a page (new body, ETag, date).
* robots.txt: allow-all on every host except (when ``traps``) host 0
  (``Disallow: /private/``), host 1 (``Crawl-delay: 1``), host 2 (404 = allow all)
  and an extra host appended after the normal ones (index ``H``, `robots_503_host`)
  whose robots.txt answers 503: a crawler must defer that host and request nothing
  there but robots.txt (its home page is linked from host 0's home page).
* Traps (when ``traps``) live on host 0 under ``/traps/`` and ``/private/`` and are all
  linked from host 0's home page, so a crawl from `seed_url` fetches them in round 2
  and the targets they lead to (redirects, meta refresh, noindex child, base-href
  links) in round 3.  See `TRAP_LAYOUT` in the module for the exact list.
* Hostile pages are always served under ``/hostile/`` on host 0 (`hostile_urls`), but
  are part of `pages` and linked from host 0's home page only with ``hostile=True``
  (their `PageSpec.expected` is a best guess for a crawler with sane limits).
* Searcher pages (only with ``searcher=True``) live on host 0 under ``/searcher/`` and are
  linked from host 0's home page: a Chinese page in GBK (`SEARCHER_PAGES`), a page whose
  script would change its title and reach for the app that shows it, a page whose title
  and anchor text are HTML/script, and the target of that anchor (a URL with quotes).
* Sitemaps (only with ``sitemaps=True``): one more host, `sitemap_host`, appended after the others, whose pages
  ``/s/{i}.html`` no page links to: only its sitemaps list them.  Its robots.txt names ``/sitemap_index.xml``, an
  index of a gzipped XML sitemap (lastmod, changefreq, priority; `sitemap_entries` has what each URL's entry says),
  a plain-text sitemap, an RSS feed and ``/sub/sitemap.xml``, whose ``/outside.html`` and the gzip child's URL on
  host 0 a strict sitemap parser rejects (`sitemap_strict_rejected`).  Host 0's home page links to the sitemap
  host's home page (which links nowhere), so a crawl knows the host.  Hostile sitemaps are served on host 0 under
  ``/hostile/sitemaps/`` (`hostile_sitemap_urls`), linked from nowhere: XXE, billion laughs, 100 MB, a gzip bomb,
  an index loop, endless nesting, an index of 3000 sitemaps, malformed XML, an HTML page.
* Beyond HTML (only with ``beyond_html=True``): three more hosts after all others, `docs_host` (documents of six
  formats, links written by script, a page behind a cookie, hostile pages for a browser), `basic_host` and
  `digest_host` (HTTP authentication); see tests/testweb_beyond.py.
* Unknown paths answer 404.  Every request is logged when it ends (`requests`, `count`,
  `in_flight_max`, `reset_log`), robots.txt included; `pending` lists those still being answered.
* `page_delay` (settable while serving): every page but robots.txt answers that many seconds late, so a
  crawler can be stopped with requests in flight.

Crawl model (`reachable`): round 1 requests the seeds.  A URL discovered (as a link
in `PageSpec.links`) in round r becomes a candidate for round r+1.  Each round the
candidates not yet generated are sorted by URL string and the first
``max_per_round`` (all when None) are generated; a generated URL is never generated
again (404/410/500 included - Nutch reschedules RETRY a day later).  A generated URL
is *requested* unless its path is disallowed by its host's robots.txt (outcome GONE,
no request) or its host's robots.txt answered 5xx (outcome RETRY, no request).
Redirects (301/302) and meta refresh pages list their target as their only link, so
the target is requested in the next round (Nutch with ``http.redirect.max=0``).
Pages with ``<meta name="robots" content="nofollow">`` contribute no links; error
and non-HTML pages have no links.  robots.txt requests are not counted.
"""

from __future__ import annotations

import codecs
import email.utils
import hashlib
import html
import random
import socket
import socketserver
import struct
import sys
import threading
import time
import zlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import partial
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import NamedTuple
from urllib.parse import urlsplit

__all__ = ["TestWeb", "PageSpec", "RequestRecord", "CrawlModel", "TRAP_LAYOUT"]

# path on host 0 -> (kind, HTTP status, expected crawl outcome); documentation and single source of truth.
TRAP_LAYOUT: dict[str, tuple[str, int, str]] = {
    "/traps/redirect-301": ("redirect", 301, "REDIR_PERM"),
    "/traps/moved-target.html": ("html", 200, "FETCHED"),
    "/traps/redirect-302": ("redirect", 302, "REDIR_TEMP"),
    "/traps/temp-target.html": ("html", 200, "FETCHED"),
    "/traps/refresh.html": ("meta_refresh", 200, "FETCHED"),
    "/traps/refresh-target.html": ("html", 200, "FETCHED"),
    "/traps/missing.html": ("not_found", 404, "GONE"),
    "/traps/gone.html": ("gone", 410, "GONE"),
    "/traps/error.html": ("server_error", 500, "RETRY"),
    "/traps/slow.html": ("slow", 200, "FETCHED"),
    "/traps/image.png": ("png", 200, "FETCHED"),
    "/traps/doc.pdf": ("pdf", 200, "FETCHED"),
    "/traps/dup-a.html": ("duplicate", 200, "FETCHED"),
    "/traps/dup-b.html": ("duplicate", 200, "FETCHED"),
    "/traps/charset-utf8-header.html": ("charset", 200, "FETCHED"),
    "/traps/charset-cp1251-meta.html": ("charset", 200, "FETCHED"),
    "/traps/charset-utf8-bom.html": ("charset", 200, "FETCHED"),
    "/traps/charset-utf16-bom.html": ("charset", 200, "FETCHED"),
    "/traps/charset-sjis-http-equiv.html": ("charset", 200, "FETCHED"),
    "/traps/noindex.html": ("noindex", 200, "FETCHED"),
    "/traps/noindex-child.html": ("html", 200, "FETCHED"),
    "/traps/nofollow.html": ("nofollow", 200, "FETCHED"),
    "/traps/nofollow-child.html": ("html", 200, "FETCHED"),
    "/traps/base.html": ("base_href", 200, "FETCHED"),
    "/traps/based/a.html": ("html", 200, "FETCHED"),
    "/traps/based/b.html": ("html", 200, "FETCHED"),
    "/private/secret.html": ("robots_denied", 200, "GONE"),
    "/private/other.html": ("robots_denied", 200, "GONE"),
}

# (title, charset as PageSpec.charset, how it is declared)
_CHARSET_PAGES: dict[str, tuple[str, str, str]] = {
    "/traps/charset-utf8-header.html": ("Café naïve — ☃ snowman", "utf-8", "header"),
    "/traps/charset-cp1251-meta.html": ("Привет, мир: тестовая страница", "windows-1251", "meta"),
    "/traps/charset-utf8-bom.html": ("Grüße aus Zürich", "utf-8", "bom"),
    "/traps/charset-utf16-bom.html": ("Ελληνικά κείμενα δοκιμής", "utf-16", "bom"),
    "/traps/charset-sjis-http-equiv.html": ("日本語のテストページ", "shift_jis", "http-equiv"),
}

# path on host 0 -> title, with searcher=True (the order is the order they are built in)
SEARCHER_TARGET = "/searcher/x'onmouseover='alert(1)'.html"  # quotes survive URL normalization
SEARCHER_PAGES: dict[str, str] = {
    "/searcher/chinese.html": "网络爬虫与搜索引擎",
    "/searcher/script.html": "A page with a script",
    "/searcher/xss.html": '<script>alert("xss-title")</script> & <b>bold</b>',
    SEARCHER_TARGET: "Target of a hostile anchor",
}
SEARCHER_ANCHOR = "<img src=x onerror=alert('xss-anchor')>"  # anchor text of the xss page's link
SEARCHER_CHINESE_TEXT = "网络爬虫是一种按照规则自动抓取网页的程序，搜索引擎用它建立索引。中文分词很难。"
SCRIPT_STATUS = "Scripts did not run."  # what the script page says unless its script runs
SCRIPT_RAN = "SCRIPT RAN"  # the title and status text the script page's script sets
# with searcher=True, also: a page with a stylesheet and an image (for snapshots), pages for ranking
SEARCHER_STYLED = "/searcher/styled.html"  # links SEARCHER_CSS and SEARCHER_IMAGE, chinese.html, a robots-denied page
SEARCHER_CSS = "/searcher/styled.css"
SEARCHER_IMAGE = "/searcher/logo.gif"
SEARCHER_STYLED_COLOR = "rgb(12, 34, 56)"  # the color SEARCHER_CSS gives #styled-text
SEARCHER_RANK_WORD = "zephyrine"  # in the title (and h1) of the first page, ten times in the body of the second
SEARCHER_RANK = {"/searcher/rank-body.html": "Notes on the weather", "/searcher/rank-title.html": "Zephyrine lanterns"}
SEARCHER_PHRASE = "saffron kestrel"  # as a phrase in the second page, apart (and more often) in the first
SEARCHER_PHRASE_PAGES = ("/searcher/phrase-apart.html", "/searcher/phrase-exact.html")
_GIF = (b"GIF89a\x01\x00\x01\x00\x80\x00\x00\x00\x00\x00\xff\xff\xff!\xf9\x04\x01\x00\x00\x00\x00,"
        b"\x00\x00\x00\x00\x01\x00\x01\x00\x00\x02\x02D\x01\x00;")

HOSTILE_PATHS: dict[str, str] = {
    "big": "/hostile/big.html",  # 10 MB of HTML, with Content-Length
    "endless": "/hostile/endless.html",  # trickles a few bytes per second until the client goes away
    "gzip_bomb": "/hostile/gzip-bomb.html",  # ~1 MB gzip expanding to 1 GiB of zeros
    "binary_html": "/hostile/binary.html",  # 64 KB of random bytes as text/html
    "many_links": "/hostile/many-links.html",  # 10 000 links to /hostile/l/{i}.html
    "deep_nesting": "/hostile/deep.html",  # 100 000 nested <div>
    "redirect_loop": "/hostile/loop1",  # /hostile/loop1 -> /hostile/loop2 -> /hostile/loop1 (301)
}

HOSTILE_SITEMAPS: dict[str, str] = {  # on host 0, with sitemaps=True; linked from nowhere
    "xxe": "/hostile/sitemaps/xxe.xml",  # an external entity naming file:///etc/passwd
    "laughs": "/hostile/sitemaps/laughs.xml",  # billion laughs: 10^9 "lol"s from a 1 KB DTD
    "huge": "/hostile/sitemaps/huge.xml",  # 100 MB of <url> entries, with Content-Length
    "gzip_bomb": "/hostile/sitemaps/bomb.xml.gz",  # ~1 MB of gzip (no Content-Encoding) inflating to 1 GiB
    "loop": "/hostile/sitemaps/loop-a.xml",  # an index listing itself and loop-b.xml, which lists loop-a.xml
    "deep": "/hostile/sitemaps/deep/0.xml",  # deep/N.xml is an index of deep/N+1.xml, 200 levels
    "wide": "/hostile/sitemaps/wide.xml",  # an index of 3000 sitemaps (wide/I.xml lists wide/I.html)
    "malformed": "/hostile/sitemaps/malformed.xml",  # three good entries, then broken XML
    "not_xml": "/hostile/sitemaps/page.html",  # an HTML page where a sitemap should be (a soft 404)
}
HUGE_SITEMAP_BYTES = 100 * 1024 * 1024
_BILLION_LAUGHS = (
    '<?xml version="1.0"?>\n<!DOCTYPE urlset [\n <!ENTITY lol "lol">\n'
    + "".join(f' <!ENTITY lol{i} "{f"&lol{i - 1};" * 10 if i > 1 else "&lol;" * 10}">\n' for i in range(1, 10))
    + "]>\n"
)

_HOSTILE_EXPECTED: dict[str, str] = {
    "big": "FETCHED",  # content truncated at the crawler's content limit
    "endless": "RETRY",  # the crawler must give up (total download time cap) -> exception
    "gzip_bomb": "FETCHED",  # inflate must stop at the content limit (truncated)
    "binary_html": "FETCHED",  # parse may fail, fetch succeeds
    "many_links": "FETCHED",
    "deep_nesting": "FETCHED",
    "redirect_loop": "REDIR_PERM",
}

_SYLLABLES = (
    "ba be bi bo bu da de di do du fa fe fi fo ga ge gi go ka ke ki ko la le li lo lu ma me mi mo mu "
    "na ne ni no nu pa pe pi po ra re ri ro ru sa se si so su ta te ti to tu va ve vi vo"
).split()
# pseudo-words; none contains q, x or z, so the unique words ("quix...zor") never collide with them
_VOCAB: list[str] = [a + b for a in _SYLLABLES for b in _SYLLABLES[::6]]

_PNG_1X1 = (
    b"\x89PNG\r\n\x1a\n"
    + struct.pack(">I", 13)
    + b"IHDR"
    + struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)
    + struct.pack(">I", zlib.crc32(b"IHDR" + struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)))
    + struct.pack(">I", len(zlib.compress(b"\x00\xff\x00\x00")))
    + b"IDAT"
    + zlib.compress(b"\x00\xff\x00\x00")
    + struct.pack(">I", zlib.crc32(b"IDAT" + zlib.compress(b"\x00\xff\x00\x00")))
    + struct.pack(">I", 0)
    + b"IEND"
    + struct.pack(">I", zlib.crc32(b"IEND"))
)

_PDF = (
    b"%PDF-1.4\n1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj\n"
    b"2 0 obj << /Type /Pages /Kids [3 0 R] /Count 1 >> endobj\n"
    b"3 0 obj << /Type /Page /Parent 2 0 R /MediaBox [0 0 200 200] >> endobj\n"
    b"trailer << /Root 1 0 R >>\n%%EOF\n"
)

_GZIP_BOMB_SIZE = 1 << 30
_GZIP_BOMB_CRC = 1533330096  # zlib.crc32 of 2**30 zero bytes
_gzip_bomb_cache: tuple[bytes, bytes, int, bytes] | None = None
_cache_lock = threading.Lock()


def _gzip_bomb_parts() -> tuple[bytes, bytes, int, bytes]:
    """(gzip header + first block, repeated block, repeat count, tail) for 1 GiB of zeros; built once."""
    global _gzip_bomb_cache
    with _cache_lock:
        if _gzip_bomb_cache is None:
            co = zlib.compressobj(9, zlib.DEFLATED, -15)
            chunk = bytes(1 << 20)
            first = co.compress(chunk) + co.flush(zlib.Z_FULL_FLUSH)
            block = co.compress(chunk) + co.flush(zlib.Z_FULL_FLUSH)  # identical output after a full flush
            tail = co.flush() + struct.pack("<II", _GZIP_BOMB_CRC, _GZIP_BOMB_SIZE & 0xFFFFFFFF)
            header = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff"
            _gzip_bomb_cache = (header + first, block, (_GZIP_BOMB_SIZE >> 20) - 1, tail)
        return _gzip_bomb_cache


def _http_date(ts: float) -> str:
    return email.utils.formatdate(ts, usegmt=True)


def host_ip(index: int) -> str:
    """The loopback address of host `index`: 127.0.1.1, 127.0.1.2, ... 127.0.1.254, 127.0.2.1, ..."""
    return f"127.0.{1 + index // 254}.{1 + index % 254}"


@dataclass
class PageSpec:
    """What the synthetic web serves at one URL and what a crawler must make of it.

    `links` are absolute URLs after <base href> resolution, in document order without
    repeats (and without the page itself); empty for nofollow, error and non-HTML pages.
    Redirects and meta refresh pages list only their target.  The hostile many-links
    page lists none of its 10 000 links (crawlers cap outlinks per page).  `expected` is the CrawlStatus name a
    Nutch-style crawler records when it generates this URL (the first time).
    """

    url: str
    status: int
    kind: str
    title: str
    links: list[str]
    charset: str | None
    expected: str
    unique_word: str | None
    duplicate_of: str | None = None
    content_type: str | None = None
    indexable: bool = True
    host_index: int = 0

    @property
    def path(self) -> str:
        return urlsplit(self.url).path or "/"


class RequestRecord(NamedTuple):
    """One request seen by the server (times from time.monotonic())."""

    host: str
    path: str
    method: str
    arrived: float
    answered: float
    status: int
    headers: dict[str, str]


@dataclass
class CrawlModel:
    """Result of `TestWeb.crawl_model`: what a breadth-first crawl does, round by round."""

    requested: dict[int, set[str]] = field(default_factory=dict)  # round -> URLs requested
    generated: dict[int, set[str]] = field(default_factory=dict)  # round -> URLs generated
    outcomes: dict[str, str] = field(default_factory=dict)  # generated URL -> expected status name
    denied: set[str] = field(default_factory=set)  # robots-disallowed, never requested (GONE)
    deferred: set[str] = field(default_factory=set)  # host robots.txt 5xx, never requested (RETRY)
    discovered: set[str] = field(default_factory=set)  # every URL known at the end (seeds + links)

    def all_requested(self) -> set[str]:
        return set().union(*self.requested.values()) if self.requested else set()


@dataclass
class _Resource:
    """How the server answers one path (internal)."""

    status: int
    content_type: str | None = None
    body: Callable[[], bytes] | None = None
    location: str | None = None
    conditional: bool = False
    delay: float = 0.0
    stream: Callable[[_Handler], None] | None = None
    extra_headers: dict[str, str] = field(default_factory=dict)
    # asked before serving: None to serve, or (status, headers) to answer instead (authentication, a cookie wall)
    check: Callable[[_Handler], tuple[int, dict[str, str]] | None] | None = None


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    allow_reuse_address = True
    request_queue_size = 256

    def __init__(self, addr: tuple[str, int], web: TestWeb, host_index: int) -> None:
        self.web = web
        self.host_index = host_index
        super().__init__(addr, _Handler)

    def server_bind(self) -> None:
        """Bind without HTTPServer's reverse DNS lookup (getfqdn), which is slow for 127.x addresses."""
        socketserver.TCPServer.server_bind(self)
        host, port = self.server_address[:2]
        self.server_name = str(host)
        self.server_port = int(port)

    def handle_error(self, request: object, client_address: object) -> None:
        """Stay quiet when a client goes away mid-response (hostile tests do that on purpose)."""
        if not isinstance(sys.exc_info()[1], OSError):
            super().handle_error(request, client_address)  # type: ignore[arg-type]


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "TestWeb/1.0"
    timeout = 30
    server: _Server

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass

    def setup(self) -> None:
        super().setup()
        self.server.web._track_conn(self.connection, True)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.server.web._track_conn(self.connection, False)

    def do_GET(self) -> None:
        self.server.web._handle(self, head=False)

    def do_HEAD(self) -> None:
        self.server.web._handle(self, head=True)

    def write(self, data: bytes) -> bool:
        """Write body bytes; False when the client has gone away."""
        try:
            self.wfile.write(data)
            return True
        except (BrokenPipeError, ConnectionResetError, OSError):
            self.close_connection = True
            return False


class TestWeb:
    """A synthetic web of `hosts` hosts (plus one robots-503 host with traps) on one port."""

    __test__ = False  # not a pytest test class

    def __init__(
        self,
        hosts: int = 4,
        pages_per_host: int = 10,
        seed: int = 0,
        traps: bool = True,
        hostile: bool = False,
        searcher: bool = False,
        slow_seconds: float = 3.0,
        page_bytes: int = 2048,
        endless_interval: float = 0.5,
        sitemaps: bool = False,
        beyond_html: bool = False,
        page_delay: float = 0.0,
        port: int = 0,
    ) -> None:
        if hosts < 1 or pages_per_host < 1:
            raise ValueError("need at least one host and one page per host")
        if traps and hosts < 3:
            raise ValueError("traps=True needs hosts >= 3 (robots traps live on hosts 0, 1 and 2)")
        self.n_hosts = hosts
        self.pages_per_host = pages_per_host
        self.seed = seed
        self.traps = traps
        self.hostile = hostile
        self.searcher = searcher
        self.slow_seconds = slow_seconds
        self.page_delay = page_delay  # seconds every page but robots.txt waits before answering
        self.fixed_port = port  # 0: a free port, chosen at start
        self.not_modified = True  # conditional requests of an unchanged page get 304 (False: 200, the same body)
        self.page_bytes = page_bytes
        self.endless_interval = endless_interval
        self.robots_503_host: int | None = hosts if traps else None
        self.sitemaps = sitemaps
        total = hosts + (1 if traps else 0) + (1 if sitemaps else 0)
        self.sitemap_host: int | None = total - 1 if sitemaps else None
        # beyond_html=True (issue 25): three more hosts after all others, see tests/testweb_beyond.py
        self.beyond_html = beyond_html
        self.docs_host: int | None = total if beyond_html else None
        self.basic_host: int | None = total + 1 if beyond_html else None
        self.digest_host: int | None = total + 2 if beyond_html else None
        total += 3 if beyond_html else 0
        self.documents: dict[str, PageSpec] = {}  # kind -> the document page (beyond_html)
        self.scripted_links: dict[str, list[str]] = {}  # page -> links only its script writes (beyond_html)
        self.basic_credentials = self.digest_credentials = ("", "")
        # with sitemaps=True: URL -> (lastmod ms, changefreq, priority) of every URL a strict parser accepts from
        # the sitemap host's sitemaps (None where the entry gives nothing), and the URLs it must reject
        self.sitemap_entries: dict[str, tuple[int | None, str | None, float | None]] = {}
        self.sitemap_strict_rejected: set[str] = set()
        self.hosts: list[str] = [host_ip(i) for i in range(total)]
        self.port: int = 0
        self.pages: dict[str, PageSpec] = {}
        self._resources: dict[tuple[int, str], _Resource] = {}
        self._host_of_ip = {ip: i for i, ip in enumerate(self.hosts)}
        self._servers: list[_Server] = []
        self._threads: list[threading.Thread] = []
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._log: list[RequestRecord] = []
        self._in_flight: dict[str, int] = {}
        self._pending: dict[int, tuple[str, str, float]] = {}  # request being answered -> (host, path, arrived)
        self._in_flight_max: dict[str, int] = {}
        self._conns: set[socket.socket] = set()
        self._versions: dict[str, int] = {}
        self._mtimes: dict[str, float] = {}
        self._body_cache: dict[tuple[str, int], bytes] = {}
        self._dropped: set[tuple[int, str]] = set()  # (host, path) answered by closing the connection
        self._word_counter = 0

    # ------------------------------------------------------------------ public API

    def __enter__(self) -> TestWeb:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> TestWeb:
        """Bind every host to a common free port, serve each in a daemon thread, build the graph."""
        if self._servers:
            return self
        self._stopping.clear()
        last_error: OSError | None = None
        for _attempt in range(1 if self.fixed_port else 20):
            servers: list[_Server] = []
            try:
                first = _Server((self.hosts[0], self.fixed_port), self, 0)
                servers.append(first)
                port = first.server_address[1]
                for i, ip in enumerate(self.hosts[1:], start=1):
                    servers.append(_Server((ip, port), self, i))
            except OSError as e:
                last_error = e
                for s in servers:
                    s.server_close()
                continue
            self.port = port
            self._servers = servers
            break
        else:
            raise RuntimeError(f"could not bind {len(self.hosts)} hosts to one port: {last_error}")
        self._build()
        for s in self._servers:
            t = threading.Thread(
                target=s.serve_forever,
                kwargs={"poll_interval": 0.1},
                daemon=True,
                name=f"testweb-{s.server_address[0]}",
            )
            t.start()
            self._threads.append(t)
        return self

    def stop(self) -> None:
        """Stop all servers, close open connections (wakes slow/endless handlers) and free the port."""
        self._stopping.set()
        stoppers = [threading.Thread(target=s.shutdown, daemon=True) for s in self._servers]
        for t in stoppers:  # in parallel: each shutdown() waits up to one poll interval
            t.start()
        for t in stoppers:
            t.join(timeout=5)
        for s in self._servers:
            s.server_close()
        with self._lock:
            conns = list(self._conns)
        for c in conns:
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        for t in self._threads:
            t.join(timeout=2)
        self._servers = []
        self._threads = []

    def base_url(self, host_index: int) -> str:
        """``http://127.0.1.N:PORT`` (no trailing slash) of host `host_index`."""
        return f"http://{self.hosts[host_index]}:{self.port}"

    def url(self, host_index: int, path: str) -> str:
        """Absolute URL of `path` on host `host_index`."""
        if not path.startswith("/"):
            path = "/" + path
        return self.base_url(host_index) + path

    @property
    def seed_url(self) -> str:
        """The home page of host 0."""
        return self.url(0, "/")

    def page_url(self, host_index: int, i: int) -> str:
        """URL of normal page `i` of a host (0 is the home page)."""
        return self.url(host_index, "/" if i == 0 else f"/p/{i}.html")

    def hostile_sitemap_urls(self) -> dict[str, str]:
        """Hostile sitemap URLs by name (served with ``sitemaps=True``)."""
        return {name: self.url(0, path) for name, path in HOSTILE_SITEMAPS.items()}

    def hostile_urls(self) -> dict[str, str]:
        """Hostile page URLs by name (served whether or not ``hostile=True``)."""
        return {name: self.url(0, path) for name, path in HOSTILE_PATHS.items()}

    def trap_url(self, path: str) -> str:
        """URL of a trap path from TRAP_LAYOUT (all on host 0)."""
        return self.url(0, path)

    def robots_txt(self, host_index: int) -> tuple[int, str]:
        """(status, body) of a host's robots.txt."""
        if self.traps and host_index == self.robots_503_host:
            return 503, "Service Unavailable\n"
        if self.beyond_html and host_index == self.docs_host:
            return 200, "User-agent: *\nDisallow: /docs/private/\n"
        if host_index == self.sitemap_host:
            return 200, f"User-agent: *\nDisallow:\n\nSitemap: {self.url(host_index, '/sitemap_index.xml')}\n"
        if self.traps and host_index == 2:
            return 404, "Not Found\n"
        if self.traps and host_index == 0:
            return 200, "User-agent: *\nDisallow: /private/\n"
        if self.traps and host_index == 1:
            return 200, "User-agent: *\nCrawl-delay: 1\nDisallow:\n"
        return 200, "User-agent: *\nDisallow:\n"

    def robots_allows(self, url: str) -> bool | None:
        """True/False per the host's robots.txt, None when the host must be deferred (robots 5xx)."""
        parts = urlsplit(url)
        h = self._host_of_ip.get(parts.hostname or "")
        if h is None:
            return True
        status, body = self.robots_txt(h)
        if status >= 500:
            return None
        if status != 200:
            return True
        path = parts.path or "/"
        for line in body.splitlines():
            if line.lower().startswith("disallow:"):
                prefix = line.split(":", 1)[1].strip()
                if prefix and path.startswith(prefix):
                    return False
        return True

    def crawl_model(
        self, seed_urls: Iterable[str] | None = None, rounds: int = 3, max_per_round: int | None = None
    ) -> CrawlModel:
        """Simulate the breadth-first crawl described in the module docstring."""
        seeds = list(seed_urls) if seed_urls is not None else [self.seed_url]
        model = CrawlModel()
        known: set[str] = set(seeds)
        generated_all: set[str] = set()
        candidates: set[str] = set(seeds)
        for r in range(1, rounds + 1):
            ordered = sorted(u for u in candidates if u not in generated_all)
            chosen = ordered if max_per_round is None else ordered[:max_per_round]
            model.generated[r] = set(chosen)
            model.requested[r] = set()
            new_links: list[str] = []
            for u in chosen:
                generated_all.add(u)
                spec = self.pages.get(u)
                allowed = self.robots_allows(u)
                if allowed is None:
                    model.deferred.add(u)
                    model.outcomes[u] = "RETRY"
                    continue
                if not allowed:
                    model.denied.add(u)
                    model.outcomes[u] = "GONE"
                    continue
                model.requested[r].add(u)
                model.outcomes[u] = spec.expected if spec else "GONE"
                if spec:
                    new_links.extend(spec.links)
            known.update(new_links)
            candidates = {u for u in candidates | set(new_links) if u not in generated_all}
        model.discovered = known
        return model

    def reachable(
        self, seed_urls: Iterable[str] | None = None, rounds: int = 3, max_per_round: int | None = None
    ) -> dict[int, set[str]]:
        """round (1-based) -> URLs requested in that round (robots.txt not included)."""
        return self.crawl_model(seed_urls, rounds, max_per_round).requested

    def reachable_within(self, rounds: int, seed_urls: Iterable[str] | None = None) -> set[str]:
        """All URLs requested in the first `rounds` rounds from the seeds (default `seed_url`)."""
        return self.crawl_model(seed_urls, rounds).all_requested()

    def modify(self, url: str) -> None:
        """Change a normal page: new body (adds a 'revision N' paragraph), ETag and Last-Modified (now)."""
        spec = self.pages[url]
        if spec.status != 200:
            raise ValueError(f"{url} is not a 200 page")
        with self._lock:
            self._versions[url] = self._versions.get(url, 0) + 1
            self._mtimes[url] = max(time.time(), self._mtimes.get(url, 0) + 1)

    def drop(self, urls: Iterable[str]) -> None:
        """Answer these URLs by closing the connection without a response (a request that gets no answer);
        an empty list answers them all again."""
        dropped = set()
        for url in urls:
            parts = urlsplit(url)
            dropped.add((self._host_of_ip[parts.hostname or ""], parts.path or "/"))
        with self._lock:
            self._dropped = dropped

    # request log

    def requests(self, host: int | str | None = None, path: str | None = None) -> list[RequestRecord]:
        """Logged requests, optionally only those to `host` (index or IP) and/or `path`."""
        ip = self.hosts[host] if isinstance(host, int) else host
        with self._lock:
            log = list(self._log)
        return [r for r in log if (ip is None or r.host == ip) and (path is None or r.path == path)]

    def count(self, url: str) -> int:
        """How many requests were made for `url` (path and query must match exactly)."""
        parts = urlsplit(url)
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        return len(self.requests(parts.hostname, path))

    def closest_requests(self) -> dict[str, float]:
        """Per host (IP), the shortest time between the arrivals of two of its requests (robots.txt included):
        what politeness keeps at or above the host's delay."""
        by_host: dict[str, list[float]] = {}
        for r in self.requests():
            by_host.setdefault(r.host, []).append(r.arrived)
        out = {}
        for host, times in by_host.items():
            times.sort()
            if len(times) > 1:
                out[host] = min(b - a for a, b in zip(times, times[1:], strict=False))
        return out

    def pending(self) -> list[tuple[str, str, float]]:
        """Requests being answered now: (host IP, path, arrival time from time.monotonic())."""
        with self._lock:
            return list(self._pending.values())

    def in_flight_max(self, host: int | str | None = None) -> int:
        """Most requests seen at once on `host` (index or IP); over all hosts when None."""
        with self._lock:
            if host is None:
                return max(self._in_flight_max.values(), default=0)
            ip = self.hosts[host] if isinstance(host, int) else host
            return self._in_flight_max.get(ip, 0)

    def reset_log(self) -> None:
        """Forget logged requests and concurrency maxima."""
        with self._lock:
            self._log.clear()
            self._in_flight_max = {k: v for k, v in self._in_flight.items() if v}

    # ------------------------------------------------------------------ graph

    def _next_word(self) -> str:
        n = self._word_counter
        self._word_counter += 1
        letters = ""
        while True:
            letters = chr(ord("a") + n % 26) + letters
            n //= 26
            if n == 0:
                break
        return f"quix{letters}zor"

    def _add(self, spec: PageSpec, res: _Resource) -> None:
        self.pages[spec.url] = spec
        self._resources[(spec.host_index, spec.path)] = res

    def _build(self) -> None:
        """Create the link graph, trap and hostile pages (depends on `port`)."""
        self.pages.clear()
        self._resources.clear()
        self._body_cache.clear()
        self._word_counter = 0
        rng = random.Random(self.seed)
        n, p = self.n_hosts, self.pages_per_host
        base_mtime = 1_704_067_200 + (self.seed % 1000) * 3600  # 2024-01-01 + seed hours
        for h in range(n):
            for i in range(p):
                links: list[str] = []
                if i == 0:
                    links += [self.page_url(h, k) for k in (1, 2, 3) if k < p]
                    if n > 1:
                        links.append(self.page_url((h + 1) % n, 0))
                elif i + 1 < p:
                    links.append(self.page_url(h, i + 1))
                others = [k for k in range(p) if k != i]
                links += [self.page_url(h, k) for k in rng.sample(others, min(2, len(others)))]
                if n > 1 and rng.random() < 0.5:
                    other = rng.choice([x for x in range(n) if x != h])
                    links.append(self.page_url(other, rng.randrange(p)))
                url = self.page_url(h, i)
                title = f"Host {h} page {i}: " + " ".join(rng.sample(_VOCAB, 2)).title()
                spec = PageSpec(
                    url,
                    200,
                    "html",
                    title,
                    _dedup(links, url),
                    "utf-8",
                    "FETCHED",
                    self._next_word(),
                    content_type="text/html; charset=utf-8",
                    host_index=h,
                )
                self._mtimes[url] = base_mtime + h * 86400 + i * 60
                self._add(spec, self._html_resource(spec))
        if self.traps:
            self._build_traps()
        self._build_hostile()
        if self.searcher:
            self._build_searcher()
        if self.sitemaps:
            self._build_sitemaps()
            self._build_hostile_sitemaps()
        if self.beyond_html:
            from tests.testweb_beyond import build_beyond_html

            build_beyond_html(self)

    def _html_resource(self, spec: PageSpec) -> _Resource:
        return _Resource(200, spec.content_type, partial(self._page_body, spec), conditional=True)

    def _build_traps(self) -> None:
        home = self.pages[self.seed_url]
        assert self.robots_503_host is not None
        t = self.trap_url
        mtime = 1_704_067_200 + 7 * 86400

        def html_page(path: str, title: str, links: list[str], kind: str = "html", **kw: object) -> PageSpec:
            spec = PageSpec(
                t(path),
                200,
                kind,
                title,
                links,
                "utf-8",
                TRAP_LAYOUT[path][2],
                self._next_word(),
                content_type="text/html; charset=utf-8",
                **kw,
            )  # type: ignore[arg-type]
            self._mtimes[spec.url] = mtime
            self._add(spec, self._html_resource(spec))
            return spec

        for path, (kind, status, expected) in TRAP_LAYOUT.items():
            if kind == "redirect":
                target = t("/traps/moved-target.html" if status == 301 else "/traps/temp-target.html")
                spec = PageSpec(t(path), status, kind, "", [target], None, expected, None)
                self._add(
                    spec,
                    _Resource(status, "text/html; charset=utf-8", lambda s=status: _error_body(s), location=target),
                )
            elif kind in ("not_found", "gone", "server_error"):
                spec = PageSpec(
                    t(path), status, kind, "", [], None, expected, None, content_type="text/html; charset=utf-8"
                )
                self._add(spec, _Resource(status, spec.content_type, lambda s=status: _error_body(s)))
            elif kind == "meta_refresh":
                target = t("/traps/refresh-target.html")
                html_page(path, "Meta refresh", [target], kind)
            elif kind == "slow":
                spec = html_page(path, "A slow page", [], kind)
                self._resources[(0, path)].delay = self.slow_seconds
            elif kind in ("png", "pdf"):
                ctype, data = ("image/png", _PNG_1X1) if kind == "png" else ("application/pdf", _PDF)
                spec = PageSpec(t(path), 200, kind, "", [], None, expected, None, content_type=ctype, indexable=False)
                self._mtimes[spec.url] = mtime
                self._add(spec, _Resource(200, ctype, lambda d=data: d, conditional=True))
            elif kind == "duplicate":
                word = "quixduplicatezor"
                a = t("/traps/dup-a.html")
                spec = PageSpec(
                    t(path),
                    200,
                    kind,
                    "Duplicate content",
                    [],
                    "utf-8",
                    expected,
                    word,
                    duplicate_of=None if t(path) == a else a,
                    content_type="text/html; charset=utf-8",
                )
                self._mtimes[spec.url] = mtime
                self._add(spec, _Resource(200, spec.content_type, lambda w=word: _dup_body(w), conditional=True))
            elif kind == "charset":
                title, charset, how = _CHARSET_PAGES[path]
                ctype = f"text/html; charset={charset}" if how == "header" else "text/html"
                spec = PageSpec(t(path), 200, kind, title, [], charset, expected, self._next_word(), content_type=ctype)
                self._mtimes[spec.url] = mtime
                body = partial(_charset_body, spec, charset, how)
                self._add(spec, _Resource(200, ctype, body, conditional=True))
            elif kind == "noindex":
                html_page(path, "Not for the index", [t("/traps/noindex-child.html")], kind, indexable=False)
            elif kind == "nofollow":
                # its link to nofollow-child.html is in the HTML but deliberately not in the graph
                html_page(path, "Do not follow my links", [], kind)
            elif kind == "base_href":
                html_page(path, "Base href", [t("/traps/based/a.html"), t("/traps/based/b.html")], kind)
            elif kind == "robots_denied":
                html_page(path, f"Private {path.rsplit('/', 1)[-1]}", [], kind)
            else:
                titles = {
                    "/traps/moved-target.html": "Permanent redirect target",
                    "/traps/temp-target.html": "Temporary redirect target",
                    "/traps/refresh-target.html": "Meta refresh target",
                    "/traps/noindex-child.html": "Child of the noindex page",
                    "/traps/nofollow-child.html": "Child of the nofollow page",
                    "/traps/based/a.html": "Base href child A",
                    "/traps/based/b.html": "Base href child B",
                }
                html_page(path, titles[path], [])
        # robots-503 host: only its home page is modelled; serving it would be a crawler bug
        h503 = self.robots_503_host
        spec = PageSpec(
            self.url(h503, "/"),
            200,
            "robots_deferred",
            f"Host {h503} home",
            [],
            "utf-8",
            "RETRY",
            self._next_word(),
            content_type="text/html; charset=utf-8",
            host_index=h503,
        )
        self._mtimes[spec.url] = mtime
        self._add(spec, self._html_resource(spec))
        linked = [t(p) for p, (k, _, _) in TRAP_LAYOUT.items() if k not in ("html",)]
        linked += [self.page_url(1, 0), self.page_url(2, 0), spec.url]
        home.links = _dedup(home.links + linked, home.url)

    def _build_searcher(self) -> None:
        """The pages the search app's tests look for (see SEARCHER_PAGES); built last, so the unique words
        of every other page stay what they are without them."""
        u = self.trap_url
        mtime = 1_704_067_200 + 8 * 86400
        zh, script, xss, target = (u(p) for p in SEARCHER_PAGES)
        for url, title, links, charset, ctype, body in (
            (zh, SEARCHER_PAGES["/searcher/chinese.html"], [], "gbk", "text/html", _chinese_body),
            (script, SEARCHER_PAGES["/searcher/script.html"], [zh], "utf-8", "text/html; charset=utf-8",
             _script_body),
            (xss, SEARCHER_PAGES["/searcher/xss.html"], [target], "utf-8", "text/html; charset=utf-8",
             partial(_xss_body, target)),
            (target, SEARCHER_PAGES[SEARCHER_TARGET], [], "utf-8", "text/html; charset=utf-8", None),
        ):
            spec = PageSpec(url, 200, "searcher", title, links, charset, "FETCHED", self._next_word(),
                            content_type=ctype)
            self._mtimes[url] = mtime
            fn = partial(body, spec) if body else partial(self._page_body, spec)
            self._add(spec, _Resource(200, ctype, fn, conditional=True))
        home = self.pages[self.seed_url]
        home.links = _dedup(home.links + [zh, script, xss], home.url)
        self._build_searcher_snapshot_and_ranking()

    def _build_searcher_snapshot_and_ranking(self) -> None:
        """The styled page, its stylesheet and image (a crawl that takes img links and lets .css/.gif through
        fetches them in the round after the page), and the ranking pages; all linked from host 0's home page."""
        u = self.trap_url
        mtime = 1_704_067_200 + 9 * 86400
        css, gif = u(SEARCHER_CSS), u(SEARCHER_IMAGE)
        for url, ctype, body in ((css, "text/css", _styled_css), (gif, "image/gif", lambda: _GIF)):
            spec = PageSpec(url, 200, "searcher", "", [], None, "FETCHED", None, content_type=ctype,
                            indexable=False)
            self._mtimes[url] = mtime
            self._add(spec, _Resource(200, ctype, body, conditional=True))
        styled = u(SEARCHER_STYLED)
        spec = PageSpec(styled, 200, "searcher", "A page with style", [css, gif, u("/searcher/chinese.html"),
                        u("/private/secret.html")], "utf-8", "FETCHED", self._next_word(),
                        content_type="text/html; charset=utf-8")
        self._mtimes[styled] = mtime
        self._add(spec, _Resource(200, spec.content_type, partial(_styled_body, spec), conditional=True))
        linked = [styled]
        pages = [(p, t, _rank_body) for p, t in SEARCHER_RANK.items()]
        pages += [(p, f"Bird notes {i}", _phrase_body) for i, p in enumerate(SEARCHER_PHRASE_PAGES)]
        for path, title, make in pages:
            spec = PageSpec(u(path), 200, "searcher", title, [], "utf-8", "FETCHED", self._next_word(),
                            content_type="text/html; charset=utf-8")
            self._mtimes[spec.url] = mtime
            self._add(spec, _Resource(200, spec.content_type, partial(make, spec), conditional=True))
            linked.append(spec.url)
        home = self.pages[self.seed_url]
        home.links = _dedup(home.links + linked, home.url)

    def _build_hostile(self) -> None:
        hu = self.hostile_urls()
        resources: dict[str, _Resource] = {
            "big": _Resource(200, "text/html; charset=utf-8", stream=_stream_big),
            "endless": _Resource(200, "text/html; charset=utf-8", stream=_stream_endless),
            "gzip_bomb": _Resource(200, "text/html; charset=utf-8", stream=_stream_gzip_bomb),
            "binary_html": _Resource(200, "text/html", lambda: random.Random(self.seed).randbytes(65536)),
            "many_links": _Resource(200, "text/html; charset=utf-8", _many_links_body),
            "deep_nesting": _Resource(200, "text/html; charset=utf-8", _deep_body),
            "redirect_loop": _Resource(
                301, "text/html", partial(_error_body, 301), location=self.url(0, "/hostile/loop2")
            ),
        }
        for name, res in resources.items():
            self._resources[(0, HOSTILE_PATHS[name])] = res
        self._resources[(0, "/hostile/loop2")] = _Resource(
            301, "text/html", lambda: _error_body(301), location=hu["redirect_loop"]
        )
        for i in range(10_000):
            self._resources[(0, f"/hostile/l/{i}.html")] = _Resource(
                200, "text/html; charset=utf-8", lambda i=i: _tiny_body(i)
            )
        if not self.hostile:
            return
        for name, url in hu.items():
            links = [self.url(0, "/hostile/loop2")] if name == "redirect_loop" else []
            status = 301 if name == "redirect_loop" else 200
            self.pages[url] = PageSpec(
                url,
                status,
                f"hostile_{name}",
                "",
                links,
                None,
                _HOSTILE_EXPECTED[name],
                None,
                content_type=resources[name].content_type,
                indexable=False,
            )
        loop2 = self.url(0, "/hostile/loop2")
        self.pages[loop2] = PageSpec(
            loop2,
            301,
            "hostile_redirect_loop",
            "",
            [hu["redirect_loop"]],
            None,
            "REDIR_PERM",
            None,
            content_type="text/html",
            indexable=False,
        )
        home = self.pages[self.seed_url]
        home.links = _dedup(home.links + list(hu.values()), home.url)

    def _build_sitemaps(self) -> None:
        """The sitemap host (see the module docstring); built after everything else, so the unique words of the
        other pages stay what they are."""
        sh = self.sitemap_host
        assert sh is not None
        u = partial(self.url, sh)
        mtime = 1_704_067_200 + 9 * 86400

        def page(path: str, title: str) -> str:
            spec = PageSpec(u(path), 200, "html", title, [], "utf-8", "FETCHED", self._next_word(),
                            content_type="text/html; charset=utf-8", host_index=sh)
            self._mtimes[spec.url] = mtime
            self._add(spec, self._html_resource(spec))
            return spec.url

        home = page("/", "Sitemap host home")
        self.pages[self.seed_url].links = _dedup(self.pages[self.seed_url].links + [home], self.seed_url)
        freqs = ["daily", "weekly", "monthly", "hourly", "yearly", "never"]
        prios: list[float | None] = [0.9, 0.8, 0.7, 0.6, 0.3, None]
        xml_urls = []
        for i in range(1, 7):
            url = page(f"/s/{i}.html", f"Sitemap page {i}")
            lastmod = 1_709_287_200_000 + i * 86_400_000  # 2024-03-0{i+1}T10:00:00Z
            self.sitemap_entries[url] = (lastmod, freqs[i - 1], prios[i - 1])
            stamp = time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime(lastmod / 1000))
            xml_urls.append(f"<url><loc>{html.escape(url)}</loc><lastmod>{stamp}</lastmod>"
                            f"<changefreq>{freqs[i - 1]}</changefreq>"
                            + (f"<priority>{prios[i - 1]}</priority>" if prios[i - 1] is not None else "") + "</url>")
        cross = self.page_url(0, 1)  # another host's page: a strict parser rejects it
        self.sitemap_strict_rejected.add(cross)
        xml_urls.append(f"<url><loc>{cross}</loc></url>")
        urlset = _urlset("".join(xml_urls)).encode()
        self._resources[(sh, "/sitemap-pages.xml.gz")] = _Resource(
            200, "application/x-gzip", lambda: _gzip(urlset))
        text_urls = [page(f"/s/{i}.html", f"Sitemap page {i}") for i in range(7, 10)]
        for url in text_urls:
            self.sitemap_entries[url] = (None, None, None)
        text = "\n".join(text_urls) + "\nnot a URL\n"
        self._resources[(sh, "/sitemap-more.txt")] = _Resource(200, "text/plain; charset=utf-8", lambda: text.encode())
        items = []
        for i in range(10, 13):
            url = page(f"/s/{i}.html", f"Sitemap page {i}")
            pub = 1_714_979_289_000 + i * 3_600_000
            self.sitemap_entries[url] = (pub, None, None)
            items.append(f"<item><title>Item {i}</title><link>{html.escape(url)}</link>"
                         f"<pubDate>{email.utils.formatdate(pub / 1000, usegmt=True)}</pubDate></item>")
        feed = (f'<?xml version="1.0" encoding="UTF-8"?>\n<rss version="2.0"><channel><title>News</title>'
                f"<link>{u('/')}</link>{''.join(items)}</channel></rss>\n")
        self._resources[(sh, "/feed.xml")] = _Resource(200, "application/rss+xml", lambda: feed.encode())
        inside = page("/sub/in.html", "Inside the sub folder")
        outside = page("/outside.html", "Outside the sub folder")
        self.sitemap_entries[inside] = (None, None, None)
        self.sitemap_strict_rejected.add(outside)
        sub = _urlset(f"<url><loc>{inside}</loc></url><url><loc>{outside}</loc></url>")
        self._resources[(sh, "/sub/sitemap.xml")] = _Resource(200, "application/xml", lambda: sub.encode())
        children = [u(p) for p in ("/sitemap-pages.xml.gz", "/sitemap-more.txt", "/feed.xml", "/sub/sitemap.xml")]
        index = _sitemapindex(children)
        self._resources[(sh, "/sitemap_index.xml")] = _Resource(200, "application/xml", lambda: index.encode())

    def _build_hostile_sitemaps(self) -> None:
        """Hostile sitemaps on host 0 (HOSTILE_SITEMAPS); a crawler must read what it safely can and go on."""
        u = self.trap_url
        paths = HOSTILE_SITEMAPS
        xml = "application/xml"
        fixed = {
            "xxe": '<?xml version="1.0"?>\n<!DOCTYPE urlset [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>\n'
                   + _urlset(f"<url><loc>{u('/hostile/sitemaps/l/')}&xxe;</loc></url>", declaration=False),
            "laughs": _BILLION_LAUGHS
                      + _urlset(f"<url><loc>{u('/hostile/sitemaps/l/')}&lol9;</loc></url>", declaration=False),
            "loop": _sitemapindex([u(paths["loop"]), u("/hostile/sitemaps/loop-b.xml")]),
            "wide": _sitemapindex([u(f"/hostile/sitemaps/wide/{i}.xml") for i in range(3000)]),
            "malformed": _urlset("".join(f"<url><loc>{u(f'/hostile/sitemaps/l/{i}.html')}</loc></url>"
                                         for i in range(3)) + f"<url><loc>{u('/hostile/sitemaps/l/3')}</lo></url>"),
            "not_xml": _html_doc("Not a sitemap", "", ["<p>soft 404</p>"], ""),
        }
        for name, body in fixed.items():
            ctype = "text/html; charset=utf-8" if name == "not_xml" else xml
            self._resources[(0, paths[name])] = _Resource(200, ctype, lambda b=body: b.encode())
        self._resources[(0, "/hostile/sitemaps/loop-b.xml")] = _Resource(
            200, xml, lambda: _sitemapindex([u(paths["loop"])]).encode())
        for n in range(200):  # each level an index of the next one: endless for any sane depth cap
            self._resources[(0, f"/hostile/sitemaps/deep/{n}.xml")] = _Resource(
                200, xml, lambda n=n: _sitemapindex([u(f"/hostile/sitemaps/deep/{n + 1}.xml")]).encode())
        for i in range(3000):
            entry = f"<url><loc>{u(f'/hostile/sitemaps/wide/{i}.html')}</loc></url>"
            self._resources[(0, f"/hostile/sitemaps/wide/{i}.xml")] = _Resource(
                200, xml, lambda e=entry: _urlset(e).encode())
        self._resources[(0, paths["huge"])] = _Resource(200, xml, stream=partial(_stream_huge_sitemap, u("/")))
        self._resources[(0, paths["gzip_bomb"])] = _Resource(200, "application/x-gzip", stream=_stream_raw_gzip_bomb)

    # ------------------------------------------------------------------ bodies

    def _page_body(self, spec: PageSpec) -> bytes:
        """Deterministic HTML of a normal/trap page (with a revision paragraph after `modify`)."""
        version = self._versions.get(spec.url, 0)
        key = (spec.url, version)
        cached = self._body_cache.get(key)
        if cached is not None:
            return cached
        rng = random.Random(f"{self.seed}|{spec.url}")
        head = ['<meta charset="utf-8">']
        body_extra = ""
        if spec.kind == "meta_refresh":
            head.append(f'<meta http-equiv="refresh" content="0; url={html.escape(spec.links[0])}">')
        if spec.kind == "noindex":
            head.append('<meta name="robots" content="noindex">')
        if spec.kind == "nofollow":
            head.append('<meta name="robots" content="nofollow">')
            body_extra = f'<p><a href="{self.trap_url("/traps/nofollow-child.html")}">a child</a></p>'
        if spec.kind == "base_href":
            head.append(f'<base href="{self.trap_url("/traps/based/")}">')
        anchors = []
        for link in spec.links:
            target = self.pages.get(link)
            text = target.title if target and target.title.isascii() and target.title else urlsplit(link).path
            if spec.kind == "base_href":
                href = link.rsplit("/", 1)[-1]  # relative: only right when resolved against <base>
            elif urlsplit(link).netloc == urlsplit(spec.url).netloc:
                href = urlsplit(link).path
            else:
                href = link
            anchors.append(f'<li><a href="{html.escape(href)}">{html.escape(text)}</a></li>')
        if spec.kind == "meta_refresh":
            anchors = []  # the target is reached through the refresh only
        paras = [_para(rng, spec.unique_word)]
        if version:
            paras.append(f"<p>Revision {version} of this page.</p>")
        doc = _html_doc(spec.title, "\n".join(head), paras, "\n".join(anchors), body_extra)
        while len(doc.encode()) < self.page_bytes:
            paras.append(_para(rng, None))
            doc = _html_doc(spec.title, "\n".join(head), paras, "\n".join(anchors), body_extra)
        data = doc.encode("utf-8")
        self._body_cache[key] = data
        return data

    # ------------------------------------------------------------------ serving

    def _track_conn(self, conn: socket.socket, add: bool) -> None:
        with self._lock:
            if add:
                self._conns.add(conn)
            else:
                self._conns.discard(conn)

    def _etag_lm(self, url: str, body: bytes) -> tuple[str, str]:
        etag = '"' + hashlib.sha1(body).hexdigest()[:16] + '"'
        return etag, _http_date(self._mtimes.get(url, 1_704_067_200))

    def _handle(self, h: _Handler, head: bool) -> None:
        arrived = time.monotonic()
        ip = h.server.server_address[0]
        assert isinstance(ip, str)
        with self._lock:
            cur = self._in_flight.get(ip, 0) + 1
            self._in_flight[ip] = cur
            self._in_flight_max[ip] = max(self._in_flight_max.get(ip, 0), cur)
            self._pending[id(h)] = (ip, h.path, arrived)
        status = 0
        try:
            status = self._respond(h, h.server.host_index, head)
        finally:
            with self._lock:
                self._in_flight[ip] -= 1
                self._pending.pop(id(h), None)
                self._log.append(
                    RequestRecord(ip, h.path, h.command, arrived, time.monotonic(), status, dict(h.headers.items()))
                )

    def _respond(self, h: _Handler, host: int, head: bool) -> int:
        path = h.path
        if path.startswith("http://"):
            path = urlsplit(path).path or "/"
        if path == "/robots.txt":
            status, text = self.robots_txt(host)
            return self._send(h, status, "text/plain; charset=utf-8", text.encode(), head)
        if (host, path) in self._dropped:
            h.close_connection = True
            return 0
        res = self._resources.get((host, path))
        if res is None:
            return self._send(h, 404, "text/html; charset=utf-8", _error_body(404), head)
        refusal = res.check(h) if res.check is not None else None
        if refusal is not None:
            status, refusal_headers = refusal
            return self._send(h, status, "text/html; charset=utf-8", _error_body(status), head, refusal_headers)
        delay = max(res.delay, self.page_delay)
        if delay and self._stopping.wait(delay):
            h.close_connection = True
            return 0
        if res.stream is not None:
            if head:
                return self._send(h, res.status, res.content_type, b"", head)
            res.stream(h)
            return res.status
        body = res.body() if res.body else b""
        headers: dict[str, str] = dict(res.extra_headers)
        if res.location:
            headers["Location"] = res.location
        if res.conditional and res.status == 200:
            url = self.url(host, path)
            etag, lm = self._etag_lm(url, body)
            headers["ETag"] = etag
            headers["Last-Modified"] = lm
            if self.not_modified and _not_modified(h, etag, self._mtimes.get(url, 0)):
                return self._send(h, 304, None, b"", True, headers)
        return self._send(h, res.status, res.content_type, body, head, headers)

    def _send(
        self,
        h: _Handler,
        status: int,
        ctype: str | None,
        body: bytes,
        head: bool,
        headers: dict[str, str] | None = None,
    ) -> int:
        h.send_response(status)
        if ctype:
            h.send_header("Content-Type", ctype)
        for k, v in (headers or {}).items():
            h.send_header(k, v)
        if status != 304:
            h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        if not head and body:
            h.write(body)
        return status


# ---------------------------------------------------------------------- helpers


def _dedup(links: list[str], self_url: str) -> list[str]:
    seen: set[str] = set()
    out = []
    for u in links:
        if u != self_url and u not in seen:
            seen.add(u)
            out.append(u)
    return out


def _not_modified(h: _Handler, etag: str, mtime: float) -> bool:
    inm = h.headers.get("If-None-Match")
    if inm is not None:
        tags = [t.strip().removeprefix("W/") for t in inm.split(",")]
        return "*" in tags or etag in tags
    ims = h.headers.get("If-Modified-Since")
    if ims:
        try:
            since = email.utils.parsedate_to_datetime(ims).timestamp()
        except (TypeError, ValueError):
            return False
        return int(mtime) <= since
    return False


def _para(rng: random.Random, unique: str | None) -> str:
    words = [rng.choice(_VOCAB) for _ in range(rng.randint(30, 50))]
    words[0] = words[0].capitalize()
    if unique:
        words.insert(rng.randrange(1, len(words)), unique)
    return "<p>" + " ".join(words) + ".</p>"


def _html_doc(title: str, head: str, paras: list[str], anchors: str, extra: str = "") -> str:
    t = html.escape(title)
    links = f"<ul>\n{anchors}\n</ul>\n" if anchors else ""
    return (
        f'<!DOCTYPE html>\n<html lang="en">\n<head>\n{head}\n<title>{t}</title>\n</head>\n'
        f"<body>\n<h1>{t}</h1>\n" + "\n".join(paras) + f"\n{links}{extra}</body>\n</html>\n"
    )


def _error_body(status: int) -> bytes:
    text = f"<html><head><title>Error {status}</title></head><body><p>Status {status}.</p></body></html>\n"
    return text.encode()


def _dup_body(word: str) -> bytes:
    paras = [f"<p>This text is served at two addresses, word {word} included.</p>"]
    return _html_doc("Duplicate content", '<meta charset="utf-8">', paras, "").encode()


def _charset_body(spec: PageSpec, charset: str, how: str) -> bytes:
    head = ""
    if how == "meta":
        head = f'<meta charset="{charset}">'
    elif how == "http-equiv":
        head = f'<meta http-equiv="Content-Type" content="text/html; charset={charset}">'
    paras = [f"<p>{html.escape(spec.title)} {spec.unique_word} {html.escape(spec.title)}.</p>"]
    doc = _html_doc(spec.title, head, paras, "")
    if how == "bom":
        if charset == "utf-16":
            return codecs.BOM_UTF16_LE + doc.encode("utf-16-le")
        return codecs.BOM_UTF8 + doc.encode("utf-8")
    return doc.encode(charset)


def _chinese_body(spec: PageSpec) -> bytes:
    """GBK bytes, declared only by <meta charset> (the HTTP header names no charset)."""
    paras = [f"<p>{SEARCHER_CHINESE_TEXT}</p>", f"<p>{spec.unique_word}</p>"]
    return _html_doc(spec.title, '<meta charset="gbk">', paras, "").encode("gbk")


def _script_body(spec: PageSpec) -> bytes:
    """A page whose script, if it ran, would change the title and text and reach for whatever shows it."""
    script = (
        "<script>document.title = 'SCRIPT RAN';"
        "document.getElementById('status').textContent = 'SCRIPT RAN';"
        "try { parent.document.title = 'SCRIPT RAN'; } catch (e) {}"
        "try { localStorage.setItem('x', 'SCRIPT RAN'); } catch (e) {}"
        "fetch('/api/jobs', {method: 'POST', body: '{}'}).catch(function () {});</script>"
    )
    paras = [f'<p id="status">{SCRIPT_STATUS}</p>', f"<p>{spec.unique_word}</p>",
             '<p><a id="rel" href="chinese.html">a relative link</a></p>',
             '<form id="form" action="/api/jobs" method="post"><button>Send</button></form>',
             script]
    head = '<meta charset="utf-8">\n<style>body { background: #fdf6e3; }</style>'
    return _html_doc(spec.title, head, paras, "").encode()


def _styled_css() -> bytes:
    return (b"body { background: #eef6f0; }\n#styled-text { color: %s; font-weight: 700; }\n"
            b"#logo { width: 48px; height: 48px; border: 2px solid #123; }\n"
            b".unstored { background-image: url(never-crawled.png); }\n" % SEARCHER_STYLED_COLOR.encode())


def _styled_body(spec: PageSpec) -> bytes:
    """Relative links to its stylesheet and image, a page the crawl holds and one it never fetched."""
    paras = [f'<p id="styled-text" class="unstored">{spec.unique_word} in the colours of its stylesheet</p>',
             '<p><img id="logo" src="logo.gif" alt="logo"></p>',
             '<p><a id="held" href="chinese.html">a page the crawl holds</a></p>',
             '<p><a id="unheld" href="/private/secret.html">a page it never fetched</a></p>']
    head = '<meta charset="utf-8">\n<link rel="stylesheet" href="styled.css">'
    return _html_doc(spec.title, head, paras, "").encode()


def _rank_body(spec: PageSpec) -> bytes:
    body = f"<p>{spec.unique_word}</p>"
    if SEARCHER_RANK_WORD not in spec.title.lower():
        body += "<p>" + " ".join(f"The {SEARCHER_RANK_WORD} wind blew." for _ in range(10)) + "</p>"
    return _html_doc(spec.title, '<meta charset="utf-8">', [body], "").encode()


def _phrase_body(spec: PageSpec) -> bytes:
    first, second = SEARCHER_PHRASE.split()
    if spec.path == SEARCHER_PHRASE_PAGES[1]:
        text = f"We saw a {first} {second} over the field."
    else:
        text = " ".join(f"A {second} flew past; later, {first} light." for _ in range(3))
    return _html_doc(spec.title, '<meta charset="utf-8">', [f"<p>{spec.unique_word}</p><p>{text}</p>"], "").encode()


def _xss_body(target: str, spec: PageSpec) -> bytes:
    """Title and anchor text that are markup (escaped here, so a parser reads them as text)."""
    anchor = f'<li><a href="{html.escape(target)}">{html.escape(SEARCHER_ANCHOR)}</a></li>'
    return _html_doc(spec.title, '<meta charset="utf-8">', [f"<p>{spec.unique_word}</p>"], anchor).encode()


def _tiny_body(i: int) -> bytes:
    return f"<html><head><title>Link target {i}</title></head><body><p>{i}</p></body></html>\n".encode()


def _many_links_body() -> bytes:
    anchors = "\n".join(f'<li><a href="/hostile/l/{i}.html">target {i}</a></li>' for i in range(10_000))
    return _html_doc("Ten thousand links", '<meta charset="utf-8">', [], anchors).encode()


def _deep_body() -> bytes:
    return (
        b"<html><head><title>Deep</title></head><body>"
        + b"<div>" * 100_000
        + b"deep"
        + b"</div>" * 100_000
        + b"</body></html>\n"
    )


def _stream_big(h: _Handler) -> None:
    size = 10 * 1024 * 1024
    head = b"<html><head><title>Big</title></head><body>\n"
    tail = b"</body></html>\n"
    para = b"<p>" + b"lorem ipsum dolor sit amet " * 37 + b"</p>\n"
    n_para = (size - len(head) - len(tail)) // len(para)
    pad = size - len(head) - len(tail) - n_para * len(para)
    h.send_response(200)
    h.send_header("Content-Type", "text/html; charset=utf-8")
    h.send_header("Content-Length", str(size))
    h.end_headers()
    chunk = para * 64
    if not h.write(head + b" " * pad):
        return
    left = n_para
    while left > 0:
        k = min(64, left)
        if not h.write(chunk if k == 64 else para * k):
            return
        left -= k
    h.write(tail)


def _stream_endless(h: _Handler) -> None:
    web = h.server.web
    h.close_connection = True
    h.send_response(200)
    h.send_header("Content-Type", "text/html; charset=utf-8")
    h.send_header("Connection", "close")
    h.end_headers()
    if not h.write(b"<html><head><title>Endless</title></head><body><p>"):
        return
    while not web._stopping.wait(web.endless_interval):
        if not h.write(b"tick "):
            return
        try:
            h.wfile.flush()
        except OSError:
            return


def _stream_gzip_bomb(h: _Handler, as_file: bool = False) -> None:
    """The 1 GiB gzip bomb as a gzip-encoded page, or (as_file) as a .gz file whose bytes the client gets as they
    are (no Content-Encoding)."""
    first, block, repeat, tail = _gzip_bomb_parts()
    h.send_response(200)
    if as_file:
        h.send_header("Content-Type", "application/x-gzip")
    else:
        h.send_header("Content-Type", "text/html; charset=utf-8")
        h.send_header("Content-Encoding", "gzip")
    h.send_header("Content-Length", str(len(first) + len(block) * repeat + len(tail)))
    h.end_headers()
    if not h.write(first):
        return
    group = block * 64
    left = repeat
    while left > 0:
        k = min(64, left)
        if not h.write(group if k == 64 else block * k):
            return
        left -= k
    h.write(tail)


def _gzip(data: bytes) -> bytes:
    import gzip

    return gzip.compress(data, mtime=0)


def _urlset(entries: str, declaration: bool = True) -> str:
    head = '<?xml version="1.0" encoding="UTF-8"?>\n' if declaration else ""
    return f'{head}<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{entries}</urlset>\n'



def _sitemapindex(urls: list[str]) -> str:
    entries = "".join(f"<sitemap><loc>{html.escape(x)}</loc></sitemap>" for x in urls)
    return ('<?xml version="1.0" encoding="UTF-8"?>\n<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
            f"{entries}</sitemapindex>\n")


def _stream_huge_sitemap(base: str, h: _Handler) -> None:
    """HUGE_SITEMAP_BYTES of a valid urlset (the same 1000 URLs over and over), until the client goes away."""
    head = _urlset("").split("</urlset>")[0].encode()
    tail = b"</urlset>\n"
    block = "".join(f"<url><loc>{base}hostile/sitemaps/l/{i}.html</loc></url>" for i in range(1000)).encode()
    n_blocks = (HUGE_SITEMAP_BYTES - len(head) - len(tail)) // len(block)
    pad = HUGE_SITEMAP_BYTES - len(head) - len(tail) - n_blocks * len(block)
    h.send_response(200)
    h.send_header("Content-Type", "application/xml")
    h.send_header("Content-Length", str(HUGE_SITEMAP_BYTES))
    h.end_headers()
    if not h.write(head + b" " * pad):
        return
    for _ in range(n_blocks):
        if not h.write(block):
            return
    h.write(tail)


def _stream_raw_gzip_bomb(h: _Handler) -> None:
    _stream_gzip_bomb(h, as_file=True)


def main(argv: list[str] | None = None) -> int:
    """`python -m tests.testweb`: serve the test web until Ctrl-C, for trying the README's commands by hand."""
    import argparse

    p = argparse.ArgumentParser(prog="python -m tests.testweb", description="Serve the synthetic test web on "
                                "loopback (hosts 127.0.1.x) until Ctrl-C.")
    p.add_argument("--hosts", type=int, default=6, help="normal hosts (6)")
    p.add_argument("--pages", type=int, default=20, help="pages per host (20)")
    p.add_argument("--seeds", default="seeds/seeds.txt", help="write the seed URL to this file (seeds/seeds.txt)")
    p.add_argument("--delay", type=float, default=0.0, metavar="SECONDS",
                   help="every page but robots.txt answers this late (0): try Ctrl-C with requests in flight")
    p.add_argument("--port", type=int, default=0, help="serve on this port (0: a free one); give the port of an "
                   "earlier start to serve the URLs its crawl knows again")
    a = p.parse_args(argv)
    web = TestWeb(hosts=max(3, a.hosts), pages_per_host=max(1, a.pages), slow_seconds=1.0,
                  page_delay=max(0.0, a.delay), port=max(0, a.port))
    try:
        web.start()
    except RuntimeError as e:
        p.error(f"{e}: give another --port, or 0 for a free one")
    seeds = Path(a.seeds)
    seeds.parent.mkdir(parents=True, exist_ok=True)
    seeds.write_text(f"{web.seed_url}\n", encoding="utf-8")
    print(f"test web: {len(web.hosts)} hosts on port {web.port}, {len(web.pages)} URLs; seed {web.seed_url} "
          f"written to {seeds}; Ctrl-C stops", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        web.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
