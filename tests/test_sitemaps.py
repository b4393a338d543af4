"""Sitemap parsing (nutch2/sitemap/sitemaps.py): every format the protocol allows, its values, and hostile input
bounded."""

from __future__ import annotations

import gzip
import tracemalloc
import zlib

import pytest

from nutch2.sitemap.sitemaps import SitemapParser, SitemapUrl, SubSitemap, base_of, parse_date, speaks_for

NS = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'
URL = "http://example.com/catalog/sitemap.xml"


def parse(content: bytes, limit: int = 10_000_000, url: str = URL) -> tuple[list, SitemapParser]:
    parser = SitemapParser(url, limit)
    return list(parser.entries(content)), parser


def test_urlset_values() -> None:
    doc = (f'<?xml version="1.0" encoding="UTF-8"?><urlset {NS}>'
           "<url><loc>http://example.com/catalog/a</loc><lastmod>2024-05-06</lastmod>"
           "<changefreq>Daily</changefreq><priority>0.8</priority></url>"
           "<url><loc> http://example.com/catalog/b?x=1&amp;y=2 </loc><priority>7</priority>"
           "<changefreq>sometimes</changefreq><lastmod>yesterday</lastmod></url>"
           "<url><loc>/relative</loc></url><url><priority>0.1</priority></url></urlset>").encode()
    entries, p = parse(doc)
    assert entries == [SitemapUrl("http://example.com/catalog/a", 1714953600000, "daily", 0.8),
                       SitemapUrl("http://example.com/catalog/b?x=1&y=2")]  # bad values are "not given"
    assert (p.kind, p.error, p.truncated, p.invalid) == ("urlset", None, False, 2)


def test_index_text_rss_atom_and_gzip() -> None:
    index = f"<sitemapindex {NS}><sitemap><loc>http://example.com/s1.xml.gz</loc><lastmod>2024</lastmod></sitemap>" \
            "</sitemapindex>"
    entries, p = parse(index.encode())
    assert entries == [SubSitemap("http://example.com/s1.xml.gz", 1704067200000)] and p.kind == "index"

    entries, p = parse(b"\xef\xbb\xbfhttp://example.com/catalog/1\r\nhttp://example.com/catalog/2\n\nnot a url\n")
    assert [e.loc for e in entries] == ["http://example.com/catalog/1", "http://example.com/catalog/2"]
    assert (p.kind, p.invalid) == ("text", 1)

    rss = ('<rss version="2.0"><channel><title>t</title><link>http://example.com/</link>'
           "<item><link>http://example.com/catalog/n1</link><pubDate>Mon, 06 May 2024 07:08:09 GMT</pubDate></item>"
           "<item><link>n2</link></item><item><title>no link</title></item></channel></rss>")
    entries, p = parse(rss.encode())
    assert entries == [SitemapUrl("http://example.com/catalog/n1", 1714979289000),
                       SitemapUrl("http://example.com/catalog/n2")]  # resolved against the feed's URL
    assert (p.kind, p.invalid) == ("feed", 1)

    atom = ('<feed xmlns="http://www.w3.org/2005/Atom"><link href="http://example.com/"/><entry>'
            '<link rel="edit" href="http://example.com/edit"/><link href="http://example.com/catalog/e1"/>'
            "<updated>2024-05-06T07:08:09+02:00</updated></entry></feed>")
    entries, p = parse(atom.encode())
    assert entries == [SitemapUrl("http://example.com/catalog/e1", 1714972089000)] and p.kind == "feed"

    entries, p = parse(gzip.compress(index.encode()))
    assert [e.loc for e in entries] == ["http://example.com/s1.xml.gz"] and not p.truncated


def test_dates() -> None:
    assert parse_date("2024") == 1704067200000
    assert parse_date("2024-05") == 1714521600000
    assert parse_date("2024-05-06T07:08Z") == 1714979280000
    assert parse_date("2024-05-06T07:08:09.5+02:00") == 1714972089500
    assert parse_date("Mon, 06 May 2024 07:08:09 GMT") == 1714979289000
    assert parse_date("2024-13-45") is None and parse_date("soon") is None and parse_date("") is None


def test_strict_scope() -> None:
    """sitemaps.org: a sitemap speaks for its own folder; one a robots.txt names, for that host too."""
    assert base_of("http://h:8080/a/b/s.xml?x=1") == "http://h:8080/a/b/"
    assert base_of("http://h/sitemap.xml") == "http://h/"
    assert speaks_for(URL, "http://example.com/catalog/x/y")
    assert not speaks_for(URL, "http://example.com/images/x")
    assert not speaks_for(URL, "https://example.com/catalog/x")  # another scheme
    assert not speaks_for(URL, "http://example.com:8080/catalog/x")  # another port
    assert not speaks_for(URL, "http://other.com/catalog/x")
    assert speaks_for(URL, "http://example.com/images/x", origin="http://example.com/")  # cross-submission


# ---------------------------------------------------------------------------------------------------- hostile
XXE = (b'<?xml version="1.0"?><!DOCTYPE urlset [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>'
       b'<urlset><url><loc>http://example.com/catalog/&xxe;</loc></url></urlset>')
LAUGHS = (b'<?xml version="1.0"?><!DOCTYPE urlset [<!ENTITY a "aaaaaaaaaa">'
          + b"".join(b'<!ENTITY a%d "%s">' % (i, (b"&a%d;" % (i - 1) if i > 1 else b"&a;") * 10) for i in range(1, 10))
          + b']><urlset><url><loc>http://example.com/catalog/&a9;</loc></url></urlset>')


@pytest.mark.parametrize("doc", [XXE, LAUGHS, b'<!DOCTYPE urlset SYSTEM "http://127.0.0.1:9/x.dtd"><urlset/>'],
                         ids=["xxe", "billion-laughs", "external-dtd"])
def test_a_doctype_is_refused_before_any_entity_is_expanded(doc: bytes) -> None:
    tracemalloc.start()
    entries, p = parse(doc)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert entries == [] and p.error is not None and "DOCTYPE" in p.error
    assert peak < 20_000_000  # 10^10 bytes of "a" were never built


def test_big_and_bomb_are_cut_at_the_limit_with_flat_memory() -> None:
    entry = b"<url><loc>http://example.com/catalog/%d</loc></url>"
    doc = b"<urlset>" + b"".join(entry % i for i in range(100_000)) + b"</urlset>"  # ~5 MB
    tracemalloc.start()
    parser = SitemapParser(URL, 1_000_000)
    count = sum(1 for _ in parser.entries(doc))
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert parser.truncated and parser.error is None  # a cut document is not malformed: what was read is kept
    assert 15_000 < count < 1_000_000 / len(entry % 0) + 1
    assert peak < 4_000_000  # entries are forgotten as they are read (the document is ~5 MB)

    bomb = _gzip_bomb(b"<urlset>", 1 << 30)  # 1 GiB of XML in 1 MB
    tracemalloc.start()
    entries, p = parse(bomb, limit=1_000_000)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert entries == [] and p.truncated and p.error is None
    assert peak < 10_000_000

    cut = gzip.compress(doc)[:50_000]  # a gzip stream that ends early: the body was cut
    entries, p = parse(cut)
    assert entries and p.truncated and p.error is None


def _gzip_bomb(head: bytes, size: int) -> bytes:
    """A gzip member of `head` and then `size` spaces, built from one repeated deflate block (no 1 GiB in memory)."""
    co = zlib.compressobj(9, zlib.DEFLATED, -15)
    first = co.compress(head + b" " * (1 << 20)) + co.flush(zlib.Z_FULL_FLUSH)
    block = co.compress(b" " * (1 << 20)) + co.flush(zlib.Z_FULL_FLUSH)  # the same bytes after a full flush
    return b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff" + first + block * (size >> 20) + co.flush()


def test_malformed_keeps_what_came_before_and_says_why() -> None:
    doc = (b"<urlset><url><loc>http://example.com/catalog/1</loc></url><url><loc>http://example.com/catalog/?a=1&b"
           b"</loc></url><url><loc>http://example.com/catalog/3</loc></url></urlset>")
    entries, p = parse(doc)
    assert [e.loc for e in entries] == ["http://example.com/catalog/1"]  # nothing guessed from broken XML
    assert p.error is not None and p.error.startswith("malformed XML")
    for doc, why in ((b"<html><body>soft 404</body></html>", "not a sitemap (root element <html>)"),
                     (b"", "empty"), (b"\x1f\x8b\x08\x00garbage", "bad gzip data")):
        entries, p = parse(doc)
        assert entries == [] and p.error is not None and p.error.startswith(why), doc
