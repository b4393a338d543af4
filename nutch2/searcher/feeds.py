"""The Searcher for other programs: an OpenSearch 1.1 description (browsers add the search box from it) and
results as an RSS 2.0 feed with OpenSearch response elements, as Nutch 1.x's OpenSearchServlet answered.

Both are built with ElementTree, so every crawled string is escaped; characters XML cannot hold are dropped."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from datetime import datetime
from email.utils import format_datetime
from urllib.parse import urlencode

from markupsafe import Markup

from nutch2.searcher.search import SearchResult

OPENSEARCH_NS = "http://a9.com/-/spec/opensearch/1.1/"
ATOM_NS = "http://www.w3.org/2005/Atom"
OPENSEARCH_TYPE = "application/opensearchdescription+xml"
RSS_TYPE = "application/rss+xml"
_NOT_XML = re.compile("[^\u0009\u000a\u000d\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
_TAGS = re.compile(r"<[^>]*>")

ET.register_namespace("opensearch", OPENSEARCH_NS)
ET.register_namespace("atom", ATOM_NS)


def _text(value: str) -> str:
    return _NOT_XML.sub("", value)


def _xml(root: ET.Element) -> bytes:
    return b'<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="utf-8")


def opensearch_description(base: str, crawl: str) -> bytes:
    """The description document: HTML results, the RSS feed, and the suggested short name."""
    root = ET.Element(f"{{{OPENSEARCH_NS}}}OpenSearchDescription")
    ET.SubElement(root, f"{{{OPENSEARCH_NS}}}ShortName").text = _text(f"nutch2 {crawl}")[:16]
    ET.SubElement(root, f"{{{OPENSEARCH_NS}}}Description").text = _text(f"Search the pages of crawl {crawl}")
    ET.SubElement(root, f"{{{OPENSEARCH_NS}}}InputEncoding").text = "UTF-8"
    ET.SubElement(root, f"{{{OPENSEARCH_NS}}}OutputEncoding").text = "UTF-8"
    for kind, path in (("text/html", "/search"), (RSS_TYPE, "/rss")):
        ET.SubElement(root, f"{{{OPENSEARCH_NS}}}Url", type=kind,
                      template=f"{base}{path}?q={{searchTerms}}&start={{startIndex?}}&rows={{count?}}",
                      indexOffset="0")
    ET.SubElement(root, f"{{{OPENSEARCH_NS}}}Url", type=OPENSEARCH_TYPE, rel="self",
                  template=f"{base}/opensearch.xml")
    return _xml(root)


def rss_feed(result: SearchResult, base: str, crawl: str) -> bytes:
    """One page of results as RSS 2.0 (title, link, snippet as plain text, fetch date per item)."""
    req = result.request
    rss = ET.Element("rss", version="2.0")
    channel = ET.SubElement(rss, "channel")
    ET.SubElement(channel, "title").text = _text(f"nutch2 {crawl}: {req.q}")
    params = {"q": req.q, "start": req.start, "rows": req.rows}
    ET.SubElement(channel, "link").text = f"{base}/search?{urlencode({k: v for k, v in params.items() if v})}"
    ET.SubElement(channel, "description").text = _text(f"Results for {req.q} in crawl {crawl}")
    ET.SubElement(channel, f"{{{OPENSEARCH_NS}}}totalResults").text = str(result.total)
    ET.SubElement(channel, f"{{{OPENSEARCH_NS}}}startIndex").text = str(req.start)
    ET.SubElement(channel, f"{{{OPENSEARCH_NS}}}itemsPerPage").text = str(req.rows)
    ET.SubElement(channel, f"{{{OPENSEARCH_NS}}}Query", role="request", searchTerms=_text(req.q),
                  startIndex=str(req.start))
    ET.SubElement(channel, f"{{{ATOM_NS}}}link", rel="search", type=OPENSEARCH_TYPE, href=f"{base}/opensearch.xml")
    for hit in result.hits:
        item = ET.SubElement(channel, "item")
        ET.SubElement(item, "title").text = _text(hit.title or hit.url)
        ET.SubElement(item, "link").text = _text(hit.url)
        ET.SubElement(item, "description").text = _text(_plain(hit.snippet))
        ET.SubElement(item, "guid", isPermaLink="true").text = _text(hit.url)
        if hit.fetched:
            when = datetime.fromisoformat(hit.fetched.replace("Z", "+00:00"))
            ET.SubElement(item, "pubDate").text = format_datetime(when, usegmt=True)
    return _xml(rss)


def _plain(snippet: Markup) -> str:
    return Markup(_TAGS.sub("", str(snippet))).unescape()
