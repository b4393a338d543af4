"""A cached page as a true snapshot: the page as the crawler saw it, loading nothing from the live site.

`snapshot_html` rewrites every URL of a stored HTML page (resolved against its own base):
- links (a, area) lead to the cached copy when the crawl holds the target as a page, else to the live site; both
  open in the top window (the frame allows only that, on a click);
- images, stylesheets, fonts and other resources (img, link rel=stylesheet/icon, style url() and @import,
  video/audio/source, background attributes) come from the crawl (`/cached/resource?url=`) when it stored them,
  else from nowhere (`data:,`): the CSP of the snapshot allows no remote source at all;
- scripts, `<base>`, `<meta http-equiv=refresh>`, `srcset`, `srcdoc`, event handler attributes, form actions,
  SVG `<animate>`/`<set>` and the `<style>` of svg and math (markup to a browser, text to lxml) are dropped (the
  sandbox would stop them anyway).
`rewrite_css` does the same to a stored stylesheet's url() and @import. What the crawl holds is asked of
`Lookup`, one store read per distinct URL, at most MAX_LOOKUPS per page.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from urllib.parse import urldefrag, urlencode, urljoin, urlsplit

from nutch2.parse.html import flatten
from nutch2.parse.parseutil import caching_forbidden
from nutch2.status import CrawlStatus
from nutch2.webpage import WebPage

MAX_LOOKUPS = 500
NOWHERE = "data:,"
PAGE_TYPES = ("text/html", "application/xhtml+xml", "text/plain")
# what /cached/resource serves (a MIME type the browser will not run as a document in our origin)
RESOURCE_TYPES = ("text/css", "image/png", "image/jpeg", "image/gif", "image/webp", "image/avif", "image/bmp",
                  "image/x-icon", "image/vnd.microsoft.icon", "image/svg+xml", "font/woff", "font/woff2",
                  "font/ttf", "font/otf", "application/font-woff", "application/font-woff2", "video/mp4",
                  "video/webm", "audio/mpeg", "audio/ogg")
LOOKUP_FIELDS = ("status", "content_type", "metadata")
_CSS_URL = re.compile(r"""url\(\s*(?:"([^"]*)"|'([^']*)'|([^)'"\s]*))\s*\)""", re.I)
_CSS_IMPORT = re.compile(r"""@import\s+(?:"([^"]*)"|'([^']*)')""", re.I)
_XML_DECL = re.compile(r"^\s*<\?xml[^>]*\?>", re.I)
_NAV_TAGS = ("a", "area")
_RESOURCE_RELS = ("stylesheet", "icon", "shortcut", "apple-touch-icon", "preload", "prefetch", "manifest")


def mime_type(content_type: str | None) -> str:
    return (content_type or "").split(";")[0].strip().lower()


class Lookup:
    """What the crawl holds at a URL: 'page' (a cached copy to link to), 'resource' (servable bytes) or None.

    `get(url) -> WebPage | None` reads one row (LOOKUP_FIELDS); `normalize(url) -> url | None` is the crawl's URL
    normalizer, so links written differently from how the crawl stored them still match."""

    def __init__(self, get: Callable[[str], WebPage | None], normalize: Callable[[str], str | None]) -> None:
        self._get = get
        self._normalize = normalize
        self._seen: dict[str, tuple[str | None, str]] = {}

    def kind(self, url: str) -> tuple[str | None, str]:
        """(kind, the URL as the crawl has it)."""
        if url in self._seen:
            return self._seen[url]
        if len(self._seen) >= MAX_LOOKUPS:
            return None, url
        found: tuple[str | None, str] = (None, url)
        norm = self._normalize(url)
        if norm:
            page = self._get(norm)
            if page is not None and page.status in (CrawlStatus.FETCHED, CrawlStatus.NOTMODIFIED) \
                    and caching_forbidden(page.metadata) == "none":
                mime = mime_type(page.content_type)
                if mime in RESOURCE_TYPES:
                    found = ("resource", norm)
                elif mime in PAGE_TYPES:
                    found = ("page", norm)
        self._seen[url] = found
        return found


def cached_link(url: str) -> str:
    return "/cached?" + urlencode({"url": url})


def resource_link(url: str) -> str:
    return "/cached/resource?" + urlencode({"url": url})


def _absolute(base: str, link: str) -> str | None:
    link = link.strip()
    if not link or link.startswith("#"):
        return None
    try:
        url = urldefrag(urljoin(base, link))[0]
        scheme = urlsplit(url).scheme.lower()
    except ValueError:
        return None
    return url if scheme in ("http", "https") else None


def resource_url(base: str, link: str, lookup: Lookup) -> str:
    """Where a resource of the snapshot comes from: the crawl, or nowhere."""
    if link.strip().lower().startswith("data:"):
        return link
    url = _absolute(base, link)
    if url is None:
        return NOWHERE
    kind, norm = lookup.kind(url)
    return resource_link(norm) if kind == "resource" else NOWHERE


def rewrite_css(css: str, base: str, lookup: Lookup) -> str:
    """A stylesheet's url() and @import pointed at the crawl (or nowhere)."""
    def url_sub(m: re.Match[str]) -> str:
        link = next((g for g in m.groups() if g is not None), "")
        return f'url("{_css_quote(resource_url(base, link, lookup))}")'

    def import_sub(m: re.Match[str]) -> str:
        link = next((g for g in m.groups() if g is not None), "")
        return f'@import "{_css_quote(resource_url(base, link, lookup))}"'

    return _CSS_IMPORT.sub(import_sub, _CSS_URL.sub(url_sub, css))


def _css_quote(url: str) -> str:
    return url.replace("\\", "%5C").replace('"', "%22").replace("\n", "%0A")


def snapshot_html(markup: str, fetched_from: str, lookup: Lookup) -> str:
    """The page with every URL rewritten (see the module docstring)."""
    import lxml.html
    from lxml import etree

    markup = _XML_DECL.sub("", markup, count=1)
    try:
        # huge_tree: libxml2 otherwise drops a text run over 10 MB (a page fetched with http.content.limit raised)
        parser = lxml.html.HTMLParser(huge_tree=True)
        doc = lxml.html.document_fromstring(markup, parser=parser)
        if any(err.type_name == "ERR_RESOURCE_LIMIT" for err in parser.error_log):
            # nested past libxml2's 2048 levels: the rest of the page was dropped; keep it, without its layout
            doc = lxml.html.document_fromstring(flatten(markup), parser=lxml.html.HTMLParser(huge_tree=True))
    except (etree.ParserError, ValueError):
        return "<!DOCTYPE html><html><body></body></html>"
    base = fetched_from
    for el in doc.iter("base"):
        href = el.get("href")
        if href and href.strip():
            base = urljoin(fetched_from, href.strip())
            break
    # animate and set can make an SVG link javascript:; a style inside svg or math is raw text to lxml but markup
    # to a browser (which would then see the img onerror=... lxml took for text): the browser must not see it
    for el in list(doc.iter("base", "script", "noscript", "object", "embed", "applet", "animate", "set")):
        el.drop_tree()
    for el in list(doc.iter("style")):
        if any(up.tag in ("svg", "math") for up in el.iterancestors()):
            el.drop_tree()
    for el in list(doc.iter("meta")):
        if (el.get("http-equiv") or "").strip().lower() in ("refresh", "set-cookie", "content-security-policy"):
            el.drop_tree()
    for el in doc.iter():
        if not isinstance(el.tag, str):
            continue
        for attr in [a for a in el.attrib if a.lower().startswith("on") or a.lower() in ("srcset", "ping", "srcdoc")]:
            del el.attrib[attr]
    links = list(doc.iterlinks())
    styles: dict[int, object] = {}
    for el, attr, link, _pos in links:
        tag = el.tag if isinstance(el.tag, str) else ""
        if attr is None or attr == "style":  # CSS text: a <style> element or a style attribute
            styles[id(el) * 2 + (attr == "style")] = (el, attr)
            continue
        if tag in _NAV_TAGS and attr == "href":
            _set_nav(el, base, link, lookup)
        elif tag == "form" or attr in ("action", "formaction"):
            del el.attrib[attr]
        elif tag == "link" and attr == "href":
            rels = (el.get("rel") or "").lower().split()
            el.set("href", resource_url(base, link, lookup) if set(rels) & set(_RESOURCE_RELS) else NOWHERE)
        elif tag in ("iframe", "frame"):
            el.set(attr, "about:blank")
        else:
            el.set(attr, resource_url(base, link, lookup))
    for el, attr in styles.values():  # type: ignore[misc]
        if attr is None:
            el.text = rewrite_css(el.text or "", base, lookup)
        else:
            el.set("style", rewrite_css(el.get("style") or "", base, lookup))
    doctype = doc.getroottree().docinfo.doctype or "<!DOCTYPE html>"
    return lxml.html.tostring(doc, encoding="unicode", doctype=doctype)


def _set_nav(el: object, base: str, link: str, lookup: Lookup) -> None:
    url = _absolute(base, link)
    if url is None:
        if not link.strip().startswith("#"):
            del el.attrib["href"]  # type: ignore[attr-defined]
        return
    kind, norm = lookup.kind(url)
    el.set("href", cached_link(norm) if kind == "page" else url)  # type: ignore[attr-defined]
    el.set("target", "_top")  # type: ignore[attr-defined]
    el.set("rel", "noopener noreferrer nofollow")  # type: ignore[attr-defined]
