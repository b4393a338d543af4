"""Parsers by content type, as Nutch's ParserFactory: the MIME type of a fetched page picks an ordered list of
parser plugin ids from ``parse.plugin`` (or Nutch's ``parse-plugins.xml``, ``parse.plugin.file``); the first of them
that is active (plugin.includes) and available here parses the page, the next one is tried when it fails.

The parsers are the plugins of the ``parser`` extension point (nutch2/plugins: parse-html, parse-text, parse-tika,
parse-pdf, or a plugin of another package), built once per task from the configuration.

The MIME type is the row's Content-Type; a missing or generic one (``application/octet-stream``) is sniffed from
the first bytes (HTML, PDF, the ``mimetype`` entry of OpenDocument and EPUB files, the parts of an OOXML file),
else guessed from the URL's file extension.
"""

from __future__ import annotations

import fnmatch
import io
import logging
import mimetypes
import re
import xml.etree.ElementTree as ET
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar
from urllib.parse import urlsplit

from nutch2.config import Configuration
from nutch2.errors import ConfigError
from nutch2.logs import config_warning
from nutch2.parse.encoding import bom_encoding, header_value
from nutch2.parse.html import DEFAULT_OUTLINK_TAGS, outlink_tags
from nutch2.parse.result import ParseResult, failure
from nutch2.plugin.extension import Extension
from nutch2.status import ParseMajor, ParseMinor
from nutch2.webpage import WebPage

log = logging.getLogger(__name__)

__all__ = ["Document", "ParseSettings", "ParserFactory", "mime_type", "read_parse_plugins_xml"]

PARSE_HTML, PARSE_TEXT, PARSE_TIKA, PARSE_PDF = "parse-html", "parse-text", "parse-tika", "parse-pdf"
GENERIC_TYPES = frozenset({"application/octet-stream", "binary/octet-stream", "application/x-download",
                           "application/force-download", "application/unknown", "application/binary"})


class Parser(Extension):
    """parse-*: parses the documents whose content type parse-plugins.xml (parse.plugin) maps to it. parse() never
    raises: a failure is a ParseResult (retryable when the parser's server, not the document, failed)."""

    point: ClassVar[str] = "parser"

    def available(self) -> bool:
        """Whether it can parse here (a parser needing a server it was not given cannot)."""
        return True

    def parse(self, doc: Document) -> ParseResult:
        raise NotImplementedError


class ParseFilter(Extension):
    """HtmlParseFilter: runs after a successful parse; sees the document, the parse and (for HTML) the DOM, and
    adds to the parse (``parse.meta``, ``parse.outlinks``, ``parse.text``...). ``dom`` is the lxml root element of
    an HTML page, None for other documents. Values it puts in ``page.metadata`` are stored with the row."""

    point: ClassVar[str] = "parse-filter"

    def filter(self, doc: Document, parse: ParseResult, page: WebPage, dom: Any | None) -> None:
        raise NotImplementedError


_HTML_SNIFF = re.compile(rb"^\s*(?:<!--.*?-->\s*)*<(?:!doctype\s+html|html|head|body|title)\b", re.I | re.S)


def _sniff_html(content: bytes) -> bool:
    """True when content without a declared type starts like an HTML document."""
    bom = bom_encoding(content)
    if bom and bom[0].startswith("utf-16"):
        return _HTML_SNIFF.match(content[bom[1] : 1026].decode(bom[0], "ignore").encode("utf-8")) is not None
    return _HTML_SNIFF.match(content[bom[1] if bom else 0 : 1024]) is not None


@dataclass(frozen=True)
class Document:
    """What a parser is given (Nutch's Content): the bytes, the URL they came from, the declared Content-Type, the
    response headers and the resolved MIME type."""

    content: bytes
    url: str
    content_type: str | None
    headers: Mapping[str, str]
    mime: str | None


@dataclass(frozen=True)
class ParseSettings:
    """The limits every parser keeps (db.max.outlinks.per.page, db.max.outlink.length, parser.timeout, ...)."""

    max_outlinks: int = 100
    max_outlink_length: int = 4096
    timeout: float | None = 30.0
    outlink_tags: Mapping[str, str] = field(default_factory=lambda: dict(DEFAULT_OUTLINK_TAGS))

    @classmethod
    def from_conf(cls, conf: Configuration) -> ParseSettings:
        timeout = conf.get_float("parser.timeout")
        cap = conf.get_int("db.max.outlinks.per.page")
        tags = outlink_tags(conf.get_str("parser.html.outlinks.ignore_tags").split(","),
                            conf.get_bool("parser.html.form.use_action"))
        return cls(extraction_bound(cap), conf.get_int("db.max.outlink.length"), timeout if timeout > 0 else None,
                   tags)


def extraction_bound(cap: int) -> int:
    """Outlinks a parser extracts at most from one page: db.max.outlinks.per.page counts only the outlinks that
    are left after normalizing and filtering (Nutch's ParseOutputFormat), so a parser takes more than that, up to a
    bound that keeps a hostile page of a million links cheap."""
    return -1 if cap < 0 else max(cap * 10, 1000)


# Nutch's conf/parse-plugins.xml, as nutch2 ships it: parse-tika for everything a server is there for; PDFs fall
# back to pypdf in this process.
DEFAULT_MAPPING: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("text/html", (PARSE_HTML,)),
    ("application/xhtml+xml", (PARSE_HTML,)),
    ("text/plain", (PARSE_TEXT,)),
    ("application/pdf", (PARSE_TIKA, PARSE_PDF)),
    ("*", (PARSE_TIKA,)),
)


def parse_mapping_entries(entries: list[str]) -> list[tuple[str, tuple[str, ...]]]:
    """``parse.plugin`` entries ``mime=parser|parser`` into (mime pattern, parser ids)."""
    mapping: list[tuple[str, tuple[str, ...]]] = []
    for entry in entries:
        mime, sep, ids = entry.partition("=")
        plugins = tuple(p.strip() for p in ids.replace(",", "|").split("|") if p.strip())
        if not sep or not mime.strip() or not plugins:
            raise ConfigError(f"parse.plugin entry {entry!r}: write mime/type=parser-id|parser-id, e.g. "
                              "application/pdf=parse-tika|parse-pdf")
        mapping.append((mime.strip().lower(), plugins))
    return mapping


def read_parse_plugins_xml(path: str) -> list[tuple[str, tuple[str, ...]]]:
    """Nutch's parse-plugins.xml: <mimeType name="..."><plugin id="..."/>...</mimeType>, in file order."""
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError) as e:
        raise ConfigError(f"{path}: cannot read it as Nutch's parse-plugins.xml ({e}); fix it or set "
                          "parse.plugin.file to another file") from None
    mapping = []
    for mt in root.iter("mimeType"):
        name = (mt.get("name") or "").strip().lower()
        ids = tuple((p.get("id") or "").strip() for p in mt.iter("plugin") if (p.get("id") or "").strip())
        if name and ids:
            mapping.append((name, ids))
    return mapping


_MIME_TOKEN = r"[!#$%&'*+.^_`|~0-9a-z-]+"
_MIME = re.compile(f"{_MIME_TOKEN}/{_MIME_TOKEN}")  # RFC 9110 8.3.1: type "/" subtype, both tokens


def mime_type(content: bytes, url: str, content_type: str | None, headers: Mapping[str, str] | None) -> str | None:
    """The bare lower-case MIME type: the declared one unless missing, generic or no type at all (``html``,
    ``garbage/``, control characters: Nutch's MimeUtil then detects it too), else sniffed, else by extension."""
    value = content_type or header_value(dict(headers or {}), "Content-Type")
    declared = value.split(";", 1)[0].strip().lower() if value else ""
    if declared and not _MIME.fullmatch(declared):
        declared = ""
    if declared and declared not in GENERIC_TYPES:
        return declared
    return _sniff(content) or mimetypes.guess_type(urlsplit(url).path)[0] or (declared or None)


_OOXML = (("word/", "application/vnd.openxmlformats-officedocument.wordprocessingml.document"),
          ("xl/", "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"),
          ("ppt/", "application/vnd.openxmlformats-officedocument.presentationml.presentation"))


def _sniff(content: bytes) -> str | None:
    """MIME type from magic bytes, for the types the default mapping treats differently or names exactly."""
    head = content[:1024]
    if head.lstrip().startswith(b"%PDF-"):
        return "application/pdf"
    if content and _sniff_html(content):
        return "text/html"
    if head.startswith(b"PK\x03\x04"):
        try:
            with zipfile.ZipFile(io.BytesIO(content)) as z:
                names = z.namelist()
                if "mimetype" in names and z.getinfo("mimetype").file_size < 200:
                    return z.read("mimetype").decode("ascii", "replace").strip().lower() or None
                for prefix, mime in _OOXML:
                    if any(n.startswith(prefix) for n in names):
                        return mime
        except (zipfile.BadZipFile, OSError, ValueError, RuntimeError):
            return None
        return "application/zip"
    return None


class ParserFactory:
    """Picks and runs the parsers of a page's MIME type (Nutch's ParserFactory + ParseUtil's fallback order)."""

    def __init__(self, conf: Configuration) -> None:
        from nutch2.plugin import Plugins, installed

        entries = conf.get("parse.plugin")
        xml = ""  # the Nutch file the mapping comes from
        if entries:
            self.mapping = parse_mapping_entries(list(entries))
        elif conf.get_str("parse.plugin.file").strip():
            xml = str(conf.resource(conf.get_str("parse.plugin.file").strip()))
            self.mapping = read_parse_plugins_xml(xml)
        else:
            self.mapping = list(DEFAULT_MAPPING)
        plugins = Plugins(conf)
        self.parsers: dict[str, Any] = {i: plugins.build_one("parser", i) for i in plugins.providing("parser")}
        named = {p for _, ids in self.mapping for p in ids}
        unknown = sorted(named - set(installed()))
        have = ", ".join(sorted(i for i in installed() if i.startswith("parse-")))
        if unknown and xml:  # a Nutch user's file as it is (feed, parse-js, parse-swf...): Nutch skips parsers
            config_warning(log, f"warning: {xml} names parsers nutch2 does not have: {', '.join(unknown)}; their "
                           f"types go to the next parser listed, or '*' (installed parsers: {have})")  # as Nutch's do
            self.mapping = [(m, tuple(i for i in ids if i not in unknown)) for m, ids in self.mapping]
        elif unknown:
            raise ConfigError(f"parse.plugin names parsers that are not installed: {', '.join(unknown)}; installed "
                              f"parsers: {have}")
        if not self.parsers:  # every page would end unparsed, its links never followed: a typo, most likely
            raise ConfigError("no parser plugin is active: plugin.includes names none of the installed parsers ("
                              + ", ".join(sorted(i for i in installed() if i.startswith("parse-")))
                              + "); add parse-html to plugin.includes")

    def parsers_for(self, mime: str | None) -> list[Any]:
        """Available parsers of the first mapping entry that matches: exact type, then patterns (text/*), then *."""
        name = mime or ""
        exact = [ids for pattern, ids in self.mapping if pattern == name]
        patterns = [ids for pattern, ids in self.mapping if pattern not in ("*", name) and ("*" in pattern)
                    and fnmatch.fnmatchcase(name, pattern)]
        fallback = [ids for pattern, ids in self.mapping if pattern == "*"]
        for ids in (*exact, *patterns, *fallback):
            found = [self.parsers[i] for i in ids if i in self.parsers and self.parsers[i].available()]
            if found:
                return found
        return []

    def parse(self, content: bytes, url: str, content_type: str | None, headers: Mapping[str, str]) -> ParseResult:
        """Parse with the first parser that succeeds; the last failure when none does; NOTPARSED when none fits."""
        mime = mime_type(content, url, content_type, headers)
        parsers = self.parsers_for(mime)
        if not parsers:
            return failure(url, ParseMajor.NOTPARSED, ParseMinor.OK, f"unsupported content type: {mime or 'unknown'}")
        doc = Document(content, url, content_type, headers, mime)
        result = retry = None
        for parser in parsers:
            result = parser.parse(doc)
            result.parser = parser.plugin_id
            if result.is_success:
                result.document = doc
                return result
            if result.retryable and retry is None:
                retry = result  # a later parse with the server back may succeed: keep the row parseable
        assert result is not None
        return retry or result

    def close(self) -> None:
        for parser in self.parsers.values():
            parser.close()
