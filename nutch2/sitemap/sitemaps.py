"""Sitemaps (sitemaps.org 0.9) parsed from the bytes nutch2's protocol fetched: XML sitemaps and sitemap indexes,
plain-text sitemaps, RSS 2.0 / RSS 1.0 and Atom feeds, each possibly gzipped.

Hostile input is bounded, never fatal: a gzipped sitemap inflates to at most ``limit`` bytes (the rest is cut, as
a body over http.content.limit is); XML goes through lxml's pull parser in chunks with entity expansion, DTD
loading and network access off and huge_tree off, and a document with a DOCTYPE is refused outright (a sitemap has
no use for one: that is where XXE and billion-laughs payloads live). Parsing stops at the first XML error; the
entries read before it are kept. Entries are yielded as they are read, so a big sitemap is never held whole.

(ultimate-sitemap-parser can parse a string, but it pickles every sitemap's pages into a file of the system's
temporary folder, where a killed task leaves them; so the few rules of the protocol are implemented here.)
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from urllib.parse import urljoin, urlsplit

from lxml import etree

from nutch2.fetch.headers import http_date_ms

__all__ = ["CHANGEFREQ_SECONDS", "DEFAULT_PRIORITY", "SitemapParser", "SitemapUrl", "SubSitemap", "base_of",
           "parse_date", "speaks_for"]

DEFAULT_PRIORITY = 0.5  # sitemaps.org: the priority of a URL whose entry names none
# changefreq -> fetch interval in seconds (Nutch's SitemapProcessor)
CHANGEFREQ_SECONDS: dict[str, int] = {
    "always": 1, "hourly": 3600, "daily": 86400, "weekly": 604800, "monthly": 2592000, "yearly": 31536000,
    "never": 2**31 - 1,
}
_CHUNK = 64 * 1024
_GZIP_MAGIC = b"\x1f\x8b"
_ENTRY = {"urlset": "url", "sitemapindex": "sitemap", "rss": "item", "RDF": "item", "feed": "entry"}
_KINDS = {"urlset": "urlset", "sitemapindex": "index", "rss": "feed", "RDF": "feed", "feed": "feed"}


@dataclass(frozen=True, slots=True)
class SitemapUrl:
    """One URL a sitemap lists, with what it says about it (None: not given or not valid)."""

    loc: str
    lastmod: int | None = None  # ms since the epoch
    changefreq: str | None = None  # always, hourly, daily, weekly, monthly, yearly or never
    priority: float | None = None  # 0.0 .. 1.0


@dataclass(frozen=True, slots=True)
class SubSitemap:
    """A sitemap a sitemap index lists."""

    loc: str
    lastmod: int | None = None


class SitemapParser:
    """Parses one sitemap; after `entries()` is exhausted, `kind`, `error`, `truncated` and `invalid` say how it
    went (kind: urlset, index, text, feed; error: why parsing stopped early, None when it did not)."""

    def __init__(self, url: str, limit: int) -> None:
        self.url = url
        self.limit = max(1, limit)  # bytes of sitemap read at most (inflated)
        self.kind = "unknown"
        self.error: str | None = None
        self.truncated = False  # the inflated sitemap was cut at `limit` bytes
        self.invalid = 0  # entries without a usable URL

    # ---------------------------------------------------------------- content
    def entries(self, content: bytes, truncated: bool = False) -> Iterator[SitemapUrl | SubSitemap]:
        """The entries of `content` (what the protocol fetched; `truncated` when the protocol cut it)."""
        self.truncated = truncated
        chunks = self._inflate(content) if content[:2] == _GZIP_MAGIC else self._plain(content)
        first = next(chunks, b"")
        head = first.lstrip(b"\xef\xbb\xbf \t\r\n")
        if not head:
            self.error = self.error or "empty"
            return
        if head[:1] == b"<":
            yield from self._xml(first, chunks)
        else:
            yield from self._text(first, chunks)

    def _plain(self, content: bytes) -> Iterator[bytes]:
        if len(content) > self.limit:
            content = content[: self.limit]
            self.truncated = True
        for i in range(0, len(content), _CHUNK):
            yield content[i:i + _CHUNK]

    def _inflate(self, content: bytes) -> Iterator[bytes]:
        """gunzip, bounded: never more than `limit` bytes out (a gzip bomb is cut there)."""
        d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        left = self.limit
        pending = content
        try:
            while pending and left > 0:
                out = d.decompress(pending, min(_CHUNK, left))
                pending = b"" if d.eof else d.unconsumed_tail  # a second gzip member is ignored
                left -= len(out)
                if out:
                    yield out
        except zlib.error as e:
            self.error = f"bad gzip data ({e})"
            return
        if left == self.limit and not d.eof:
            self.error = "bad gzip data (not a single byte inflates)"
        elif not d.eof:  # cut at the limit, or the gzip stream ends early (the body was cut)
            self.truncated = True

    # ---------------------------------------------------------------- plain text
    def _text(self, first: bytes, chunks: Iterator[bytes]) -> Iterator[SitemapUrl]:
        """One URL per line, UTF-8 (sitemaps.org); anything that is not an absolute http(s) URL is invalid."""
        self.kind = "text"
        rest = b""
        for chunk in _chain(first, chunks):
            lines = (rest + chunk).split(b"\n")
            rest = lines.pop()
            yield from self._text_lines(lines)
        if rest and not self.truncated:  # a last line cut by the size limit is not a URL
            yield from self._text_lines([rest])

    def _text_lines(self, lines: list[bytes]) -> Iterator[SitemapUrl]:
        for raw in lines:
            line = raw.decode("utf-8", errors="replace").strip().lstrip("\ufeff")
            if not line:
                continue
            if _is_http_url(line):
                yield SitemapUrl(line)
            else:
                self.invalid += 1

    # ---------------------------------------------------------------- XML
    def _xml(self, first: bytes, chunks: Iterator[bytes]) -> Iterator[SitemapUrl | SubSitemap]:
        parser = etree.XMLPullParser(events=("start", "end"), resolve_entities=False, no_network=True,
                                     load_dtd=False, huge_tree=False, remove_comments=True, remove_pis=True)
        self._entry_tag: str | None = None
        for chunk in _chain(first, chunks):
            error = _feed(parser, chunk)
            yield from self._events(parser)
            if error is not None or self.error is not None:
                self._failed(error)
                return
        yield from self._events(parser)
        self._failed(_feed(parser, None))

    def _events(self, parser: etree.XMLPullParser) -> Iterator[SitemapUrl | SubSitemap]:
        for event, elem in parser.read_events():
            if self.error is not None:
                return
            if self._entry_tag is None:  # the root element decides what this is
                self._entry_tag = self._root(elem)
            elif event == "end" and _local(elem) == self._entry_tag and elem.getparent() is not None:
                found = self._entry(elem)
                if found is not None:
                    yield found
                _forget(elem)

    def _failed(self, error: str | None) -> None:
        # a document cut by the size limit ends in an XML error: that is not a malformed sitemap
        if error is not None and self.error is None and not (self.truncated and self._entry_tag is not None):
            self.error = f"malformed XML ({error})"

    def _root(self, elem: etree._Element) -> str | None:
        name = _local(elem)
        if name not in _ENTRY:
            self.error = f"not a sitemap (root element <{name}>)"
            return None
        docinfo = elem.getroottree().docinfo  # the DTD is parsed, never applied: no entity is expanded before this
        if docinfo.internalDTD is not None or docinfo.doctype:
            self.error = "has a DOCTYPE (refused: entities and DTDs are where XXE and entity bombs live)"
            return None
        self.kind = _KINDS[name]
        return _ENTRY[name]

    def _entry(self, elem: etree._Element) -> SitemapUrl | SubSitemap | None:
        fields: dict[str, str] = {}
        links: list[str] = []
        for child in elem:
            if not isinstance(child.tag, str):
                continue
            name = _local(child)
            if name == "link" and child.get("href") is not None:  # Atom: <link href=... rel=alternate?>
                if child.get("rel") in (None, "alternate"):
                    links.append(child.get("href", ""))
                continue
            fields.setdefault(name, "".join(child.itertext()).strip())
        if self.kind == "feed":
            return self._feed_entry(elem, fields, links)
        loc = fields.get("loc", "")
        if not _is_http_url(loc):
            self.invalid += 1
            return None
        lastmod = parse_date(fields.get("lastmod", ""))
        if self.kind == "index":
            return SubSitemap(loc, lastmod)
        changefreq = fields.get("changefreq", "").lower() or None
        return SitemapUrl(loc, lastmod, changefreq if changefreq in CHANGEFREQ_SECONDS else None,
                          _priority(fields.get("priority")))

    def _feed_entry(self, elem: etree._Element, fields: dict[str, str], links: list[str]) -> SitemapUrl | None:
        """An RSS item (<link>, or rdf:about in RSS 1.0) or an Atom entry (<link href>), resolved against the feed's
        URL; its date (pubDate, dc:date, updated, published) is the lastmod."""
        about = next((v for k, v in elem.attrib.items() if k.endswith("}about")), None)
        loc = (links[0] if links else fields.get("link") or about or "").strip()
        loc = urljoin(self.url, loc) if loc else ""
        if not _is_http_url(loc):
            self.invalid += 1
            return None
        date = next((fields[k] for k in ("updated", "pubDate", "date", "published") if fields.get(k)), "")
        return SitemapUrl(loc, parse_date(date))


def _feed(parser: etree.XMLPullParser, chunk: bytes | None) -> str | None:
    """Feed a chunk (None: the end of the document); the XML error that stops the parse, if any."""
    try:
        if chunk is None:
            parser.close()
        else:
            parser.feed(chunk)
    except etree.XMLSyntaxError as e:
        return _one_line(e)
    return None


def _chain(first: bytes, rest: Iterator[bytes]) -> Iterator[bytes]:
    yield first
    yield from rest


def _local(elem: etree._Element) -> str:
    tag = elem.tag
    return tag.rsplit("}", 1)[-1] if isinstance(tag, str) else ""


def _forget(elem: etree._Element) -> None:
    """Drop a processed entry and the ones before it (memory stays flat however long the sitemap is)."""
    elem.clear()
    parent = elem.getparent()
    if parent is not None:
        while elem.getprevious() is not None:
            del parent[0]


def _one_line(e: Exception) -> str:
    return " ".join(str(e).split())[:160]


_HTTP_URL = re.compile(r"https?://[^\s/?#@]*@?[^\s/?#@:]+[^\s]*", re.IGNORECASE)


def _is_http_url(url: str) -> bool:
    """An absolute http(s) URL with a host and no whitespace (the normalizer checks the rest)."""
    return _HTTP_URL.fullmatch(url) is not None


def _priority(text: str | None) -> float | None:
    """A priority between 0 and 1, else None (crawler-commons takes an invalid one as not given)."""
    try:
        value = float(text) if text else None
    except ValueError:
        return None
    return value if value is not None and 0.0 <= value <= 1.0 else None


_YEAR_MONTH = re.compile(r"(\d{4})(?:-(\d{2}))?")


def parse_date(text: str) -> int | None:
    """A W3C datetime (sitemaps: 2024, 2024-05, 2024-05-06, 2024-05-06T07:08:09.5+02:00) or an RFC 822 date (RSS)
    in ms since the epoch; UTC when no zone is given; None when it is not a date."""
    text = text.strip()
    m = _YEAR_MONTH.fullmatch(text)
    if not m:
        return http_date_ms(text, iso=True)
    try:
        return int(datetime(int(m.group(1)), int(m.group(2) or 1), 1, tzinfo=UTC).timestamp() * 1000)
    except (ValueError, OverflowError):
        return None


def base_of(url: str) -> str:
    """What a sitemap at `url` may speak for (sitemaps.org): its scheme, host, port and folder, e.g.
    http://example.com/catalog/ for http://example.com/catalog/sitemap.xml."""
    parts = urlsplit(url)
    folder = parts.path[: parts.path.rfind("/") + 1] or "/"
    return f"{parts.scheme}://{parts.netloc}{folder}"


def speaks_for(sitemap_url: str, url: str, origin: str | None = None) -> bool:
    """May the sitemap at `sitemap_url` list `url` (strict parsing)? Only URLs under its own folder — or, for a
    sitemap announced in a robots.txt (`origin`: that host's root, e.g. http://example.com/), URLs of that host,
    as the protocol's cross-submission rule allows. Compare normalized URLs."""
    return url.startswith(base_of(sitemap_url)) or (origin is not None and url.startswith(origin))
