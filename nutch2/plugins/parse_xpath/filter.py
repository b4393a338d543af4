"""parse-xpath: the parse filter and its extractors file."""

from __future__ import annotations

import json
import math
import re
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lxml import etree

from nutch2.config import Configuration
from nutch2.errors import ConfigError
from nutch2.parse.parsers import ParseFilter
from nutch2.urls.tableutil import unreverse_url
from nutch2.webpage import WebPage

PREFIX = "x_"  # row metadata keys (and index fields) of the extracted fields
CSS = "css:"
_FIELD = re.compile(r"[A-Za-z0-9_]+")
_EXAMPLE = """{"price": ["//span[@class='price']/text()"], "author": ["css:.byline .name"]}"""


@dataclass(frozen=True)
class Extractor:
    """One field: its expressions (as XPath 1.0), tried in order, and the URLs it applies to (None: every URL)."""

    field: str
    expressions: tuple[str, ...]
    urls: re.Pattern[str] | None = None


def css_to_xpath(selector: str) -> str:
    """A CSS selector as XPath (cssselect); ``::text`` and ``::attr(name)`` at the end of a selector select its
    text nodes or an attribute (as parsel and Scrapy read them)."""
    try:
        from cssselect import HTMLTranslator, SelectorError, parse
        from cssselect.parser import FunctionalPseudoElement
    except ImportError:
        raise ConfigError("parse-xpath: a css: expression needs cssselect; pip install 'nutch2[xpath]' (or "
                          "cssselect), or write the expression as XPath") from None
    translator = HTMLTranslator()
    try:
        parts = []
        for sel in parse(selector):
            pseudo, suffix = sel.pseudo_element, ""
            if pseudo == "text":
                suffix = "/text()"
            elif isinstance(pseudo, FunctionalPseudoElement) and pseudo.name == "attr" \
                    and [t.type for t in pseudo.arguments] in (["IDENT"], ["STRING"]):
                suffix = f"/@{pseudo.arguments[0].value}"
            elif pseudo is not None:
                raise SelectorError(f"unknown pseudo-element ::{getattr(pseudo, 'name', pseudo)} (::text and "
                                    "::attr(name) are known)")
            parts.append(translator.selector_to_xpath(sel) + suffix)
    except SelectorError as e:
        raise ValueError(f"not a CSS selector ({e})") from None
    return " | ".join(parts)


def _compile(expression: str) -> str:
    """The XPath of an expression (``css:...`` translated); ValueError saying what is wrong with it."""
    xpath = css_to_xpath(expression[len(CSS):].strip()) if expression.startswith(CSS) else expression
    try:
        etree.XPath(xpath)(etree.fromstring("<html><body/></html>"))  # unknown functions and variables too
    except etree.XPathError as e:
        raise ValueError(f"not a valid XPath 1.0 expression ({e})") from None
    return xpath


def load_extractors(path: Path) -> list[Extractor]:
    """The extractors of a JSON file of ``field: expressions``; ConfigError (one line) naming what is wrong."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise ConfigError(f"parse.xpath.file: cannot read {path} ({e.strerror}); give an existing JSON file "
                          f"like {_EXAMPLE}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ConfigError(f"{path}: not valid JSON ({e}); fix the file") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a JSON object of field: expressions, like {_EXAMPLE}")
    extractors = []
    for field, spec in data.items():
        where = f"{path}: field {field!r}"
        if not _FIELD.fullmatch(field):
            raise ConfigError(f"{where}: a field name is letters, digits and _ (it becomes the field x_{field})")
        urls = None
        if isinstance(spec, dict):
            unknown = sorted(set(spec) - {"expressions", "urls"})
            if unknown:
                raise ConfigError(f"{where}: unknown key {', '.join(unknown)} (the keys are expressions, urls)")
            if "urls" in spec:
                if not isinstance(spec["urls"], str):
                    raise ConfigError(f"{where}: urls is a regular expression (a string)")
                try:
                    urls = re.compile(spec["urls"])
                except re.error as e:
                    raise ConfigError(f"{where}: urls {spec['urls']!r} is not a valid regular expression ({e})"
                                      ) from None
            spec = spec.get("expressions")
        expressions = [spec] if isinstance(spec, str) else spec
        if not isinstance(expressions, list) or not expressions or not all(
                isinstance(e, str) and e.strip() for e in expressions):
            raise ConfigError(f"{where}: give an expression or a list of expressions (XPath, or css:selector)")
        compiled = []
        for expression in expressions:
            try:
                compiled.append(_compile(expression))
            except ValueError as e:
                raise ConfigError(f"{where}: {expression!r} is {e}") from None
        extractors.append(Extractor(field, tuple(compiled), urls))
    return extractors


def values_of(result: Any) -> list[str]:
    """What an XPath result gives as field values: an element's text, a text node or attribute, a number or a
    boolean; whitespace collapsed, empty values left out."""
    if isinstance(result, bool):
        return ["true" if result else "false"]
    if isinstance(result, float):
        return [] if math.isnan(result) else [str(int(result)) if result.is_integer() else repr(result)]
    out = []
    for item in [result] if isinstance(result, str) else result:
        text = "".join(item.itertext()) if isinstance(item, etree._Element) else str(item)
        text = " ".join(text.split())
        if text:
            out.append(text)
    return out


def joined(values: list[str], limit: int) -> str:
    """Values separated by tabs (index-xpath splits them there), cut to `limit` characters (-1: no cut)."""
    text = "\t".join(values)
    if 0 <= limit < len(text):
        text = text[:limit].rstrip("\t")
    return text


class XPathFilter(ParseFilter):
    """Extracts the fields of parse.xpath.file from an HTML page's DOM into page.metadata (``x_<field>``); fields
    of an earlier parse that this one does not find go."""

    def __init__(self, conf: Configuration) -> None:
        super().__init__(conf)
        self.extractors = load_extractors(conf.resource(conf.get_str("parse.xpath.file")))
        self.max_length = conf.get_int("parse.xpath.max.length")
        self._local = threading.local()  # compiled XPath objects, one set per thread (they are not shared)

    def __getstate__(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k != "_local"}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._local = threading.local()

    def _xpaths(self) -> list[list[etree.XPath]]:
        xpaths = getattr(self._local, "xpaths", None)
        if xpaths is None:
            xpaths = self._local.xpaths = [[etree.XPath(e) for e in x.expressions] for x in self.extractors]
        return xpaths

    def extract(self, url: str, dom: Any) -> dict[str, list[str]]:
        """Each field's values found in `dom` (the lxml root of the page at `url`)."""
        found = {}
        for extractor, xpaths in zip(self.extractors, self._xpaths(), strict=True):
            if extractor.urls is not None and not extractor.urls.search(url):
                continue
            for xpath in xpaths:
                values = values_of(xpath(dom))
                if values:
                    found[extractor.field] = values
                    break
        return found

    def filter(self, doc: Any, parse: Any, page: WebPage, dom: Any | None) -> None:
        for key in [k for k in page.metadata if k.startswith(PREFIX)]:
            del page.metadata[key]
        if dom is None:
            return
        for field, values in self.extract(unreverse_url(page.key), dom).items():
            text = joined(values, self.max_length)
            if text:
                page.metadata[PREFIX + field] = text.encode("utf-8")
