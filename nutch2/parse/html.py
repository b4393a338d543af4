"""HTML and plain-text parsing: title, visible text, outlinks, meta robots and meta refresh, meta tags.

Text and outlinks follow Nutch's DOMContentUtils: element boundaries separate words (``<a>one</a><a>two</a>`` is
"one two"), except around inline formatting elements whose text a browser renders as part of the surrounding words
(``One<b>two</b>`` is "Onetwo"); outlinks come from the tags Nutch uses (``a``, ``area``,
``form`` GET actions, ``frame``, ``iframe``, ``link``, ``script``, ``img``, ``source``) less
``parser.html.outlinks.ignore_tags``; a link's anchor is its text, else the ``alt`` of the images in it.

Pure functions: no store and no network access; :func:`parse_html` and :func:`parse_text` are the entry points.
The document's encoding is nutch2/parse/encoding.py's; a parse is bounded in time as nutch2/parse/result.py says.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from functools import lru_cache
from urllib.parse import urldefrag, urljoin, urlsplit

from lxml import etree

from nutch2.parse.encoding import decode_content, header_value, looks_binary
from nutch2.parse.result import Canceller, ParseResult, ParseTimeout, failure, run_with_timeout
from nutch2.parse.tagscan import cap_attributes
from nutch2.status import ParseMajor, ParseMinor

__all__ = ["ParseResult", "ParseTimeout", "decode_content", "outlink_tags", "parse_html", "parse_text", "resolve_link"]

HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
TEXT_TYPES = frozenset({"text/plain"})

_SKIP_TEXT_TAGS = frozenset({"script", "style", "noscript", "template", "head", "title", "iframe"})
_BLOCK_TAGS = frozenset(
    "address article aside blockquote br caption dd details div dl dt fieldset figcaption figure footer "
    "form h1 h2 h3 h4 h5 h6 header hr li main nav ol option p pre section summary table tbody td tfoot "
    "th thead tr ul body html frame iframe".split()
)
# Outlink tags and the attribute holding the URL (Nutch's DOMContentUtils link params).
LINK_ATTRIBUTES = {"a": "href", "area": "href", "form": "action", "frame": "src", "iframe": "src",
                   "script": "src", "link": "href", "img": "src", "source": "src"}
DEFAULT_OUTLINK_IGNORE_TAGS = ("img", "script", "source")
_NOFOLLOW = re.compile(r"\bnofollow\b", re.I)
_SKIP_SCHEMES = frozenset({"javascript", "mailto", "data", "tel", "vbscript", "about", "sms", "callto"})
_XML_DECL = re.compile(r"^\s*<\?xml[^>]*>")
# Tags kept when a document is too deeply nested for libxml2 and is re-parsed flattened.
# A tag stops at '<' too: "[^>]*>" from every '<' of a long run without '>' was quadratic.
_FLATTEN_STRIP = re.compile(
    r"</?(?!(?:a|area|frame|iframe|form|img|link|source|script|style|noscript|template|title|head|body|html|meta|"
    r"base)\b)"
    r"[A-Za-z][^<>]*+>"
)
# Most attributes libxml2 is given per start tag: it adds each attribute by walking the element's list, so n
# attributes cost O(n^2) CPU that no timeout can interrupt (16 000: 0.9 s, 100 000: minutes). At 256, a 1 MB page
# made only of such tags parses in ~0.2 s (measured, libxml2 2.14); real pages stay far below (nothing is changed).
MAX_ATTRIBUTES = 256


# --------------------------------------------------------------------------- tree helpers


def _collapse(text: str) -> str:
    """Collapse whitespace runs to single spaces and strip."""
    return " ".join(text.split())


def _build_tree(markup: str) -> tuple[etree._Element | None, bool]:
    """Parse markup with lxml's lenient HTML parser; returns (root or None, hit depth limit)."""
    markup = _XML_DECL.sub("", markup, count=1).replace("\x00", "\ufffd")
    parser = etree.HTMLParser(encoding="utf-8", huge_tree=True, remove_comments=True, remove_pis=True, no_network=True)
    root = etree.fromstring(markup.encode("utf-8", "replace"), parser)
    too_deep = any(err.type_name == "ERR_RESOURCE_LIMIT" for err in parser.error_log)
    return root, too_deep


def flatten(markup: str) -> str:
    """The markup without its layout tags (div, p, span, table, ...): text, links, images, styles and the head kept.
    For a document nested deeper than libxml2's 2048 levels, which drops everything past them."""
    return _FLATTEN_STRIP.sub(" ", markup)


def _parse_tree(markup: str) -> etree._Element | None:
    """Parse markup; a document nested deeper than libxml2 allows is re-parsed flattened.

    libxml2 stops at depth 2048 (even with huge_tree) and drops the rest of the document;
    stripping every tag that carries no parse information keeps text and links.
    Start tags are first cut to MAX_ATTRIBUTES attributes (see nutch2.parse.tagscan).
    """
    markup = cap_attributes(markup, MAX_ATTRIBUTES)
    root, too_deep = _build_tree(markup)
    if too_deep:
        root, _ = _build_tree(flatten(markup))
    return root


def _tag(el: etree._Element) -> str:
    """Lower-case tag name, '' for comments / PIs / entities."""
    return el.tag.lower() if isinstance(el.tag, str) else ""


# Inline formatting elements: a browser renders their text as part of the surrounding words ("One<b>two</b>" is
# one word). Every other element boundary separates words ("<a>one</a><a>two</a>" is two), as Nutch does.
_JOINING_TAGS = frozenset(
    "b i em strong u s strike small big mark sub sup span font abbr acronym cite code kbd samp var tt q dfn bdi bdo "
    "del ins time data nobr wbr".split()
)
_SEPARATOR = "\x00"


def _element_text(root: etree._Element, cancel: Canceller, skip: frozenset[str], stop_at_nested: str = "") -> str:
    """Whitespace-collapsed text under ``root`` (its tail excluded): words are separated at element boundaries except
    around inline formatting elements. Elements in ``skip`` are left out; with ``stop_at_nested`` the text ends at
    the first descendant of that tag (Nutch's anchor text stops at a nested link)."""
    parts: list[str] = []
    append = parts.append
    joining = _JOINING_TAGS
    walker = etree.iterwalk(root, events=("start", "end"))
    check = cancel.check
    for event, el in walker:  # the hot loop of every parse: _tag() inlined
        check()
        tag = el.tag
        tag = tag.lower() if tag.__class__ is str else ""
        if event == "start":
            if tag == stop_at_nested and el is not root:
                break
            if not tag or tag in skip:
                walker.skip_subtree()
                continue
            if tag not in joining:
                append(_SEPARATOR)
            text = el.text
            if text:
                append(text)
        else:
            if tag not in joining:
                append(_SEPARATOR)
            tail = el.tail
            if tail and el is not root:
                append(tail)
    return _collapse("".join(parts).replace(_SEPARATOR, " "))


def _visible_text(root: etree._Element, cancel: Canceller) -> str:
    """Visible text of the document (no head, script, style, noscript, template), words separated at element
    boundaries except around inline formatting elements."""
    return _element_text(root, cancel, _SKIP_TEXT_TAGS)


def _title(root: etree._Element) -> str:
    """Whitespace-collapsed text of the first <title>."""
    for el in root.iter("title"):
        return _collapse("".join(el.itertext()))
    return ""


def _metas(root: etree._Element) -> Iterator[tuple[str, str, str]]:
    """(name lower, http-equiv lower, content) of each <meta>."""
    for el in root.iter("meta"):
        name = (el.get("name") or "").strip().lower()
        equiv = (el.get("http-equiv") or "").strip().lower()
        yield name, equiv, el.get("content") or ""


def _robots_directives(root: etree._Element, headers: dict[str, str] | None) -> tuple[bool, bool, bool]:
    """(noindex, nofollow, nocache) from <meta name=robots>, the X-Robots-Tag header and <meta http-equiv=Pragma>."""
    values = [content for name, _, content in _metas(root) if name == "robots"]
    header = header_value(headers, "X-Robots-Tag")
    if header:
        values.append(header)
    tokens = {t.strip().lower() for v in values for t in v.split(",")}
    tokens = {t for t in tokens if ":" not in t}  # "googlebot: noindex" targets another agent
    none = "none" in tokens
    pragma = any(equiv == "pragma" and "no-cache" in content.lower() for _, equiv, content in _metas(root))
    nocache = pragma or "noarchive" in tokens or "nocache" in tokens
    return none or "noindex" in tokens, none or "nofollow" in tokens, nocache


def _meta_tags(root: etree._Element) -> dict[str, str]:
    """<meta name=... content=...> by lower-case name; repeated names joined by a tab (Nutch's parse-metatags)."""
    found: dict[str, list[str]] = {}
    for name, _, content in _metas(root):
        if name and name != "robots" and content.strip():
            found.setdefault(name, []).append(" ".join(content.split()))
    return {name: "\t".join(values) for name, values in found.items()}


def _base_url(root: etree._Element, url: str) -> str:
    """Document base URL: the first <base href>, resolved against the page URL."""
    for el in root.iter("base"):
        href = el.get("href")
        if href is None:
            continue
        resolved = resolve_link(url, href)
        return resolved or url
    return url


_CONTROLS = str.maketrans("", "", "\t\n\r")
_REWRITTEN = ("/.", "\\", "[", "]", ";")  # in a link, what sends it to urljoin


@lru_cache(maxsize=256)
def _origin(base: str) -> str | None:
    """'scheme://authority' of an http(s) base URL whose path resolution is plain (the fast path of resolve_link)."""
    try:
        parts = urlsplit(base)
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return None
    return f"{parts.scheme}://{parts.netloc}"


def resolve_link(base: str, href: str) -> str | None:
    """Absolute, fragment-free URL for href (RFC 3986 resolution), or None for skipped schemes, links to a
    fragment of the page itself, and junk."""
    if "\t" in href or "\n" in href or "\r" in href:
        href = href.translate(_CONTROLS)
    href = href.strip()
    if not href or href.startswith("#"):
        return None
    # the two shapes most links have, resolved as urljoin would: nothing urljoin rewrites (dot segments,
    # backslashes, brackets, empty params or query) and nothing it refuses
    if not any(c in href for c in _REWRITTEN):
        plain = href.partition("#")[0]
        if not plain.endswith("?"):
            if href[0] == "/" and not href.startswith("//"):
                origin = _origin(base)
                if origin is not None:
                    return origin + plain
            elif href.startswith(("http://", "https://")) and href.find("/", 8) != -1:
                return plain
    scheme = href.split(":", 1)[0].lower() if ":" in href else ""
    if scheme in _SKIP_SCHEMES:
        return None
    try:
        absolute = urldefrag(urljoin(base, href)).url
    except ValueError:  # e.g. "http://[bad-ipv6"
        return None
    return absolute or None


_REFRESH = re.compile(r"""^\s*(\d+)(?:\.\d*)?\s*(?:[;,]\s*(?:url\s*=\s*)?(.*))?$""", re.I | re.S)


def _parse_refresh(content: str) -> tuple[int, str | None] | None:
    """(delay, raw url or None) from a refresh content attribute, None when malformed."""
    match = _REFRESH.match(content)
    if not match:
        return None
    raw = (match.group(2) or "").strip()
    if len(raw) >= 2 and raw[0] in "'\"":
        end = raw.find(raw[0], 1)
        raw = raw[1:end] if end > 0 else raw[1:]
    return int(match.group(1)), (raw.strip() or None)


def _refresh(root: etree._Element, base: str, page_url: str) -> tuple[str | None, int | None]:
    """(absolute target, delay) of the first valid meta refresh; target None for a self refresh."""
    for _, equiv, content in _metas(root):
        if equiv != "refresh":
            continue
        parsed = _parse_refresh(content)
        if parsed is None:
            continue
        delay, raw = parsed
        target = resolve_link(base, raw) if raw else None
        if target == urldefrag(page_url).url:
            target = None
        return target, delay
    return None, None


_ANCHOR_SKIP = frozenset({"script", "style", "noscript", "template"})


def _anchor_text(el: etree._Element, cancel: Canceller) -> str:
    """Anchor text of a link element: its text up to a nested link; when that is empty, the alt text of the images
    in it (or of the image itself); alt for <area>; '' for frames, scripts, styles and sources."""
    tag = _tag(el)
    if tag in ("frame", "iframe", "link", "script", "source"):
        return ""
    if tag in ("area", "img"):
        return _collapse(el.get("alt") or "")
    # most links hold just text: no walk needed
    text = _collapse(el.text or "") if len(el) == 0 else _element_text(el, cancel, _ANCHOR_SKIP, stop_at_nested=tag)
    if text:
        return text
    alts = (_collapse(img.get("alt") or "") for img in el.iter("img"))
    return " ".join(alt for alt in alts if alt)


def _is_nofollow(el: etree._Element) -> bool:
    """True for rel="nofollow" links (also in a list of rel values)."""
    return _NOFOLLOW.search(el.get("rel") or "") is not None


def outlink_tags(ignore_tags: Iterable[str] = DEFAULT_OUTLINK_IGNORE_TAGS, form_action: bool = True) -> dict[str, str]:
    """Outlink tags and their URL attribute (parser.html.outlinks.ignore_tags, parser.html.form.use_action)."""
    ignored = {t.strip().lower() for t in ignore_tags if t.strip()}
    return {tag: attr for tag, attr in LINK_ATTRIBUTES.items()
            if tag not in ignored and (tag != "form" or form_action)}


DEFAULT_OUTLINK_TAGS = outlink_tags()


def _only_nested_link(el: etree._Element, tag: str) -> bool:
    """True when the link's only content is one link of the same tag (Nutch throws the outer one away)."""
    if len(el) != 1:
        return False
    child = el[0]
    return _tag(child) == tag and not (el.text or "").strip() and not (child.tail or "").strip()


def _outlinks(
    root: etree._Element,
    base: str,
    first: str | None,
    max_outlinks: int,
    max_length: int,
    cancel: Canceller,
    tags: Mapping[str, str] = DEFAULT_OUTLINK_TAGS,
) -> list[tuple[str, str]]:
    """Outlinks in document order, first occurrence per URL wins; capped (negative cap = none)."""
    seen: dict[str, str] = {}
    if first and len(first) <= max_length:
        seen[first] = ""
    for el in root.iter(*tags):
        if 0 <= max_outlinks <= len(seen):
            break
        cancel.check()
        tag = _tag(el)
        href = el.get(tags[tag])
        if href is None or _is_nofollow(el) or _only_nested_link(el, tag):
            continue
        if tag == "form" and (el.get("method") or "get").strip().lower() == "post":
            continue
        target = resolve_link(base, href)
        if target is None or len(target) > max_length or target in seen:
            continue
        seen[target] = _anchor_text(el, cancel)
    links = list(seen.items())
    return links if max_outlinks < 0 else links[:max_outlinks]


# --------------------------------------------------------------------------- parsers


def _parse_html_now(
    content: bytes,
    url: str,
    content_type: str | None,
    headers: dict[str, str] | None,
    max_outlinks: int,
    max_outlink_length: int,
    cancel: Canceller,
    tags: Mapping[str, str] = DEFAULT_OUTLINK_TAGS,
    keep_dom: bool = False,
) -> ParseResult:
    """parse_html without the timeout wrapper."""
    if not content:
        return failure(url, ParseMajor.FAILED, ParseMinor.FAILED_MISSING_CONTENT, "empty content")
    markup, encoding = decode_content(content, content_type, headers, html=True)
    if looks_binary(content, encoding):
        return failure(url, ParseMajor.FAILED, ParseMinor.FAILED_INVALID_FORMAT, "binary content", encoding=encoding)
    root = _parse_tree(markup)
    if root is None:
        if not markup.strip():  # whitespace-only: a valid, empty document
            return ParseResult(encoding=encoding, base_url=url)
        return failure(
            url, ParseMajor.FAILED, ParseMinor.FAILED_INVALID_FORMAT, "no parseable HTML", encoding=encoding
        )
    result = _extract(root, url, headers, encoding, max_outlinks, max_outlink_length, cancel, tags)
    if keep_dom:
        result.dom = root
    return result


def _extract(
    root: etree._Element,
    url: str,
    headers: dict[str, str] | None,
    encoding: str,
    max_outlinks: int,
    max_outlink_length: int,
    cancel: Canceller,
    tags: Mapping[str, str] = DEFAULT_OUTLINK_TAGS,
) -> ParseResult:
    """Build the ParseResult from a parsed tree."""
    base = _base_url(root, url)
    noindex, nofollow, nocache = _robots_directives(root, headers)
    refresh_url, refresh_delay = _refresh(root, base, url)
    if refresh_url is not None and len(refresh_url) > max_outlink_length:
        refresh_url = None
    result = ParseResult(
        encoding=encoding,
        noindex=noindex,
        nofollow=nofollow,
        refresh_url=refresh_url,
        refresh_delay=refresh_delay,
        base_url=base,
        nocache=nocache,
    )
    if not noindex:
        result.title = _title(root)
        result.text = _visible_text(root, cancel)
        result.meta = _meta_tags(root)
    cap = 0 if nofollow else max_outlinks
    if refresh_url is not None:
        result.status_minor = int(ParseMinor.REDIRECT)
        result.status_args = [refresh_url, str(refresh_delay)]
        cap = max(cap, 1) if cap >= 0 else cap  # the redirect target is an outlink even under nofollow
    result.outlinks = _outlinks(root, base, refresh_url, cap, max_outlink_length, cancel, tags)
    return result


def parse_html(
    content: bytes,
    url: str,
    content_type: str | None = None,
    headers: dict[str, str] | None = None,
    *,
    max_outlinks: int = 100,
    max_outlink_length: int = 4096,
    timeout: float | None = 30.0,
    outlink_tags: Mapping[str, str] = DEFAULT_OUTLINK_TAGS,
    keep_dom: bool = False,
) -> ParseResult:
    """Parse an HTML page: title, visible text, outlinks, robots directives, meta refresh, meta tags.

    max_outlinks < 0 keeps all outlinks. timeout None parses in the calling thread. outlink_tags: see outlink_tags().
    keep_dom: the result's ``dom`` is the lxml root (for the parse filters).
    """

    def work(cancel: Canceller) -> ParseResult:
        return _parse_html_now(content, url, content_type, headers, max_outlinks, max_outlink_length, cancel,
                               outlink_tags, keep_dom)

    return run_with_timeout(work, url, timeout)


def parse_text(
    content: bytes,
    url: str,
    content_type: str | None = None,
    headers: dict[str, str] | None = None,
) -> ParseResult:
    """Parse text/plain: decoded content as text, empty title, no outlinks."""
    if not content:
        return failure(url, ParseMajor.FAILED, ParseMinor.FAILED_MISSING_CONTENT, "empty content")
    text, encoding = decode_content(content, content_type, headers, html=False)
    return ParseResult(text=text, encoding=encoding, base_url=url)
