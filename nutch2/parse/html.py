"""HTML and plain-text parsing: title, visible text, outlinks, meta robots and meta refresh, meta tags.

Text and outlinks follow Nutch's DOMContentUtils: element boundaries separate words (``<a>one</a><a>two</a>`` is
"one two"), except around inline formatting elements whose text a browser renders as part of the surrounding words
(``One<b>two</b>`` is "Onetwo"); outlinks come from the tags Nutch uses (``a``, ``area``,
``form`` GET actions, ``frame``, ``iframe``, ``link``, ``script``, ``img``, ``source``) less
``parser.html.outlinks.ignore_tags``; a link's anchor is its text, else the ``alt`` of the images in it.

Pure functions: no store and no network access. The entry points are :func:`parse_content`
(dispatch on content type) and :func:`parse_html`.

Encoding is chosen as WHATWG browsers do, with one deliberate order: a byte order mark wins over
everything (also over the HTTP header), then the HTTP header charset, then ``<meta charset>`` /
``<meta http-equiv="Content-Type">``, then strict UTF-8, then detection with charset_normalizer,
then windows-1252. Unknown or unsafe labels (``utf-7``, ``base64`` ...) fall through to the next source.

Timeouts: a parse runs in a fresh *daemon* thread that the caller joins with a timeout. A
``concurrent.futures`` pool was rejected on purpose: its workers are joined at interpreter exit,
so one stuck parse would hang shutdown, and a stuck worker would also starve the pool's queue.
A timed-out thread cannot be killed; it is told to stop (a flag checked while walking the tree)
and ends at its next check, but a parse stuck inside libxml2 itself lingers until libxml2 returns.
"""

from __future__ import annotations

import codecs
import re
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any
from urllib.parse import urldefrag, urljoin, urlsplit

from lxml import etree

from nutch2.mapred import timebox
from nutch2.parse.tagscan import cap_attributes
from nutch2.status import ParseMajor, ParseMinor

__all__ = [
    "ParseResult",
    "ParseTimeout",
    "decode_content",
    "detect_encoding",
    "parse_content",
    "parse_html",
    "parse_text",
    "resolve_charset",
]

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
# Labels browsers know and Python does not.
_LABEL_ALIASES = {
    "x-gbk": "gbk",
    "x-sjis": "cp932",
    "windows-31j": "cp932",
    "windows-874": "cp874",
    "x-user-defined": "cp1252",
}
# WHATWG decodes these labels with a superset codec; keyed by Python's canonical codec name.
_CODEC_SUPERSETS = {
    "iso8859-1": "cp1252",
    "ascii": "cp1252",
    "iso8859-9": "cp1254",
    "tis-620": "cp874",
    "iso8859-11": "cp874",
    "euc_kr": "cp949",
    "gb2312": "gbk",
    "shift_jis": "cp932",
    "big5": "big5hkscs",
    "utf-16": "utf-16-le",
}
_REJECTED_CODECS = frozenset(
    {"utf-7", "idna", "punycode", "unicode-escape", "raw-unicode-escape", "undefined", "mbcs", "oem"}
)
_BOMS = ((codecs.BOM_UTF8, "utf-8"), (codecs.BOM_UTF16_LE, "utf-16-le"), (codecs.BOM_UTF16_BE, "utf-16-be"))
_CHARSET_PARAM = re.compile(r"""charset\s*=\s*["']?\s*([A-Za-z0-9._:\-]+)""", re.I)
_META_CHARSET = re.compile(rb"""<meta\s[^>]*?charset\s*=\s*["']?\s*([A-Za-z0-9._:\-]+)""", re.I)
_META_SCAN_BYTES = 16384
_DETECT_BYTES = 262144
_BINARY_SAMPLE = 4096
_CONTROL_BYTES = frozenset(set(range(0x00, 0x09)) | set(range(0x0E, 0x1B)) | set(range(0x1C, 0x20)))
_CONTROL_BYTES_TABLE = bytes(sorted(_CONTROL_BYTES))  # bytes.translate(None, this) drops them
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
_CANCEL_CHECK_EVERY = 2048


class ParseTimeout(Exception):
    """Raised inside a parse thread when its caller gave up waiting."""


@dataclass
class ParseResult:
    """Outcome of parsing one page (Nutch's Parse + ParseStatus)."""

    title: str = ""
    text: str = ""
    outlinks: list[tuple[str, str]] = field(default_factory=list)
    status_major: int = int(ParseMajor.SUCCESS)
    status_minor: int = int(ParseMinor.OK)
    status_args: list[str] = field(default_factory=list)
    encoding: str | None = None
    noindex: bool = False
    nofollow: bool = False
    refresh_url: str | None = None
    refresh_delay: int | None = None
    base_url: str = ""
    nocache: bool = False  # robots noarchive/nocache or Pragma: no-cache: do not show a cached copy
    meta: dict[str, str] = field(default_factory=dict)  # <meta name=... content=...>, name lower-cased
    parser: str = ""  # the parser id that gave this result (parse-html, parse-tika, ...; nutch2/parsers)
    content_type: str | None = None  # the document's own MIME type when its parser found it (Tika's detection)
    retryable: bool = False  # a failure of the parser's server, not of the document: parse the row again later
    counter: str | None = None  # the counter a failure of this kind adds to (e.g. tika_unavailable)
    # what the parse filters are given, not stored: the document parsed and (HTML) its DOM
    document: Any = field(default=None, repr=False, compare=False)
    dom: Any = field(default=None, repr=False, compare=False)

    @property
    def is_success(self) -> bool:
        """True when the parse succeeded (plain success or redirect)."""
        return self.status_major == ParseMajor.SUCCESS

    @property
    def is_redirect(self) -> bool:
        """True when the page is a meta-refresh redirect."""
        return self.is_success and self.status_minor == ParseMinor.REDIRECT


def _failure(url: str, major: int, minor: int, *args: str, encoding: str | None = None) -> ParseResult:
    """Build a non-success ParseResult."""
    return ParseResult(
        status_major=int(major),
        status_minor=int(minor),
        status_args=list(args),
        encoding=encoding,
        base_url=url,
    )


# --------------------------------------------------------------------------- encoding


def resolve_charset(label: str | None) -> str | None:
    """Map a charset label to a Python codec name, or None when unknown or unsafe."""
    if not label:
        return None
    name = label.strip().strip("\"'").lower()
    name = _LABEL_ALIASES.get(name, name)
    try:
        info = codecs.lookup(name)
    except LookupError:
        return None
    # _is_text_encoding is False for bytes-to-bytes and str-to-str codecs (base64, zlib, rot13).
    if info.name in _REJECTED_CODECS or not getattr(info, "_is_text_encoding", True):
        return None
    return _CODEC_SUPERSETS.get(info.name, info.name)


def _header_value(headers: dict[str, str] | None, name: str) -> str | None:
    """Case-insensitive header lookup."""
    if not headers:
        return None
    lname = name.lower()
    for key, value in headers.items():
        if key.lower() == lname:
            return value
    return None


def _content_type_charset(content_type: str | None, headers: dict[str, str] | None) -> str | None:
    """Charset from the content_type argument, else from the Content-Type header."""
    for value in (content_type, _header_value(headers, "Content-Type")):
        if value:
            match = _CHARSET_PARAM.search(value)
            enc = resolve_charset(match.group(1)) if match else None
            if enc:
                return enc
    return None


def _bom_encoding(content: bytes) -> tuple[str, int] | None:
    """(codec, BOM length) when content starts with a UTF-8 / UTF-16 byte order mark."""
    for bom, enc in _BOMS:
        if content.startswith(bom):
            return enc, len(bom)
    return None


def _meta_charset(content: bytes) -> str | None:
    """Charset declared by <meta charset> or <meta http-equiv=Content-Type> near the start."""
    for match in _META_CHARSET.finditer(content[:_META_SCAN_BYTES]):
        enc = resolve_charset(match.group(1).decode("ascii", "replace"))
        if enc:
            # WHATWG: a <meta> that could be read as ASCII cannot really be UTF-16/32.
            return "utf-8" if enc.startswith(("utf-16", "utf-32")) else enc
    return None


def _detection_sample(content: bytes) -> bytes:
    """At most _DETECT_BYTES of content, cut before a '<' so no multi-byte character is split.

    Bytes below 0x40 are never trail bytes in Shift_JIS, GBK, Big5 or EUC; a split character
    at the end of the sample makes charset_normalizer reject the right encoding.
    """
    if len(content) <= _DETECT_BYTES:
        return content
    cut = content.rfind(b"<", 0, _DETECT_BYTES)
    return content[: cut if cut > _DETECT_BYTES // 2 else _DETECT_BYTES]


def _detected_charset(content: bytes) -> str:
    """Strict UTF-8 if it decodes, else charset_normalizer's guess, else windows-1252."""
    try:
        content.decode("utf-8")
        return "utf-8"
    except UnicodeDecodeError:
        pass
    import charset_normalizer  # only here: most pages are UTF-8 or say their charset (4 MB a process spared)

    best = charset_normalizer.from_bytes(_detection_sample(content)).best()
    enc = resolve_charset(best.encoding) if best is not None else None
    return enc or "cp1252"


def detect_encoding(
    content: bytes,
    content_type: str | None = None,
    headers: dict[str, str] | None = None,
    *,
    html: bool = True,
) -> tuple[str, int]:
    """Return (codec name, number of leading BOM bytes to skip) for content.

    Order: BOM, HTTP charset, <meta> (html only), strict UTF-8, charset_normalizer, windows-1252.
    """
    bom = _bom_encoding(content)
    if bom:
        return bom
    enc = _content_type_charset(content_type, headers)
    if not enc and html:
        enc = _meta_charset(content)
    return (enc or _detected_charset(content)), 0


def decode_content(
    content: bytes,
    content_type: str | None = None,
    headers: dict[str, str] | None = None,
    *,
    html: bool = True,
) -> tuple[str, str]:
    """Decode content to str; returns (text, codec name). Undecodable bytes become U+FFFD."""
    enc, skip = detect_encoding(content, content_type, headers, html=html)
    return content[skip:].decode(enc, errors="replace"), enc


def _looks_binary(content: bytes, encoding: str) -> bool:
    """Heuristic: many C0 control bytes in an ASCII-compatible encoding means not text."""
    if encoding.startswith(("utf-16", "utf-32")):
        return False
    sample = content[:_BINARY_SAMPLE]
    controls = len(sample) - len(sample.translate(None, _CONTROL_BYTES_TABLE))
    return controls > max(4, len(sample) // 20)


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


def _parse_tree(markup: str) -> etree._Element | None:
    """Parse markup; a document nested deeper than libxml2 allows is re-parsed flattened.

    libxml2 stops at depth 2048 (even with huge_tree) and drops the rest of the document;
    stripping every tag that carries no parse information keeps text and links.
    Start tags are first cut to MAX_ATTRIBUTES attributes (see nutch2.parse.tagscan).
    """
    markup = cap_attributes(markup, MAX_ATTRIBUTES)
    root, too_deep = _build_tree(markup)
    if too_deep:
        root, _ = _build_tree(_FLATTEN_STRIP.sub(" ", markup))
    return root


class _Canceller:
    """Cooperative cancellation flag polled by the tree walkers."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self._ticks = 0

    def cancel(self) -> None:
        """Ask the parse to stop at its next check."""
        self._event.set()

    def cancelled(self) -> bool:
        """Whether the caller gave up (for parsers whose steps are long: check between them)."""
        return self._event.is_set()

    def check(self) -> None:
        """Raise ParseTimeout every few calls once cancelled."""
        self._ticks += 1
        if self._ticks % _CANCEL_CHECK_EVERY == 0 and self._event.is_set():
            raise ParseTimeout("parser timeout")


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


def _element_text(root: etree._Element, cancel: _Canceller, skip: frozenset[str], stop_at_nested: str = "") -> str:
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


def _visible_text(root: etree._Element, cancel: _Canceller) -> str:
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
    header = _header_value(headers, "X-Robots-Tag")
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


def _anchor_text(el: etree._Element, cancel: _Canceller) -> str:
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
    cancel: _Canceller,
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
    cancel: _Canceller,
    tags: Mapping[str, str] = DEFAULT_OUTLINK_TAGS,
    keep_dom: bool = False,
) -> ParseResult:
    """parse_html without the timeout wrapper."""
    if not content:
        return _failure(url, ParseMajor.FAILED, ParseMinor.FAILED_MISSING_CONTENT, "empty content")
    markup, encoding = decode_content(content, content_type, headers, html=True)
    if _looks_binary(content, encoding):
        return _failure(url, ParseMajor.FAILED, ParseMinor.FAILED_INVALID_FORMAT, "binary content", encoding=encoding)
    root = _parse_tree(markup)
    if root is None:
        if not markup.strip():  # whitespace-only: a valid, empty document
            return ParseResult(encoding=encoding, base_url=url)
        return _failure(
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
    cancel: _Canceller,
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


def _run_with_timeout(work: Callable[[_Canceller], ParseResult], url: str, timeout: float | None) -> ParseResult:
    """Run work(canceller) in this thread's parser worker (nutch2/mapred/timebox.py); FAILED/EXCEPTION ["parser
    timeout"] if it overruns: the canceller tells it to stop at its next check, and stuck C code lingers in its
    abandoned thread until it returns. timeout None runs inline. Exceptions become FAILED/EXCEPTION with the
    exception text."""
    cancel = _Canceller()
    try:
        return timebox.run(lambda: _guarded(work, cancel, url), timeout, "nutch2-parse")
    except timebox.Overrun:
        cancel.cancel()
        return _failure(url, ParseMajor.FAILED, ParseMinor.EXCEPTION, "parser timeout")


def _guarded(work: Callable[[_Canceller], ParseResult], cancel: _Canceller, url: str) -> ParseResult:
    """Run work, turning any exception into a FAILED/EXCEPTION result."""
    try:
        return work(cancel)
    except ParseTimeout:
        return _failure(url, ParseMajor.FAILED, ParseMinor.EXCEPTION, "parser timeout")
    except Exception as exc:  # one bad page must not kill the job (RecursionError included)
        return _failure(url, ParseMajor.FAILED, ParseMinor.EXCEPTION, f"{type(exc).__name__}: {exc}")


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

    def work(cancel: _Canceller) -> ParseResult:
        return _parse_html_now(content, url, content_type, headers, max_outlinks, max_outlink_length, cancel,
                               outlink_tags, keep_dom)

    return _run_with_timeout(work, url, timeout)


def parse_text(
    content: bytes,
    url: str,
    content_type: str | None = None,
    headers: dict[str, str] | None = None,
) -> ParseResult:
    """Parse text/plain: decoded content as text, empty title, no outlinks."""
    if not content:
        return _failure(url, ParseMajor.FAILED, ParseMinor.FAILED_MISSING_CONTENT, "empty content")
    text, encoding = decode_content(content, content_type, headers, html=False)
    return ParseResult(text=text, encoding=encoding, base_url=url)


def _mime_type(content_type: str | None, headers: dict[str, str] | None) -> str | None:
    """Bare lower-case MIME type from content_type or the Content-Type header."""
    value = content_type or _header_value(headers, "Content-Type")
    if not value:
        return None
    return value.split(";", 1)[0].strip().lower() or None


_HTML_SNIFF = re.compile(rb"^\s*(?:<!--.*?-->\s*)*<(?:!doctype\s+html|html|head|body|title)\b", re.I | re.S)


def _sniff_html(content: bytes) -> bool:
    """True when content without a declared type starts like an HTML document."""
    bom = _bom_encoding(content)
    if bom and bom[0].startswith("utf-16"):
        return _HTML_SNIFF.match(content[bom[1] : 1026].decode(bom[0], "ignore").encode("utf-8")) is not None
    return _HTML_SNIFF.match(content[bom[1] if bom else 0 : 1024]) is not None


def parse_content(
    content: bytes,
    url: str,
    content_type: str | None = None,
    headers: dict[str, str] | None = None,
    *,
    max_outlinks: int = 100,
    max_outlink_length: int = 4096,
    timeout: float | None = 30.0,
    outlink_tags: Mapping[str, str] = DEFAULT_OUTLINK_TAGS,
) -> ParseResult:
    """Dispatch on MIME type: HTML/XHTML -> parse_html, text/plain -> parse_text, else NOTPARSED.

    With no declared type, content that starts like HTML is parsed as HTML.
    """
    mime = _mime_type(content_type, headers)
    if mime is None and content and _sniff_html(content):
        mime = "text/html"
    if mime in HTML_TYPES:
        return parse_html(
            content,
            url,
            content_type,
            headers,
            max_outlinks=max_outlinks,
            max_outlink_length=max_outlink_length,
            timeout=timeout,
            outlink_tags=outlink_tags,
        )
    if mime in TEXT_TYPES:
        return _run_with_timeout(lambda _c: parse_text(content, url, content_type, headers), url, timeout)
    return _failure(url, ParseMajor.NOTPARSED, ParseMinor.OK, f"unsupported content type: {mime or 'unknown'}")


# --------------------------------------------------------------------------- cached copies
CACHING_FORBIDDEN_KEY = "caching.forbidden"  # row metadata set by the parse job (Nutch's Nutch.CACHING_FORBIDDEN_KEY)
CACHING_POLICIES = ("none", "content", "all")


def caching_forbidden(metadata: Mapping[str, bytes]) -> str:
    """What a cached-page view may show of a row: "none" forbidden (show all), "content" (no cached copy, snippets
    only) or "all" (neither), from the page's robots noarchive/nocache as the parse job recorded it."""
    value = metadata.get(CACHING_FORBIDDEN_KEY)
    policy = value.decode("ascii", "replace") if value else "none"
    return policy if policy in CACHING_POLICIES else "content"
