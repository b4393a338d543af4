"""Does a fetched HTML page need a browser? (chromium.mode=auto)

The page as the server sent it is read with lxml; it needs rendering when one of these holds:

1. **An empty app root beside scripts, with little text**: an element a JavaScript framework mounts into
   (``id`` root, app, __next, __nuxt, ___gatsby, svelte, app-root, react-root, main-app; an ``<app-root>`` element;
   an ``ng-app`` attribute) holds no link and under ``ROOT_EMPTY`` characters of text ("Loading..."), the page has
   at least one script and under ``text_min`` characters of text. A server-rendered page that leaves a mount point
   empty for a widget keeps its text, so it is not rendered.
2. **A ``<noscript>`` asking for JavaScript, with little text**: its text says to enable, or that the page needs,
   JavaScript, and the page has under ``text_min`` characters of text outside it. A tracking pixel or "enable
   JavaScript to see the comments" under an article is not enough.
3. **Little text beside many scripts**: under ``text_min`` characters of text and at least ``scripts_min``
   scripts, or script code weighing ten times the text (inline code by its length, an external script as
   ``EXTERNAL_WEIGHT`` characters): a page that is nothing but a loader.

Text is the body's text outside script, style, template and noscript, whitespace collapsed. Scripts are
``<script>`` elements that run (no type or a JavaScript/module type: JSON data blocks such as ``__NEXT_DATA__``
do not count). A page with server-rendered content (Next.js, Nuxt with SSR) has its text, so it is fetched
plainly whatever its scripts.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass

from lxml import etree, html

log = logging.getLogger(__name__)

__all__ = ["NeedsJs", "PageSignals", "signals"]

APP_ROOT_IDS = frozenset({"root", "app", "__next", "__nuxt", "___gatsby", "svelte", "app-root", "react-root",
                          "main-app"})
ROOT_EMPTY = 64  # characters of text an app root may hold ("Loading...") and still be empty
EXTERNAL_WEIGHT = 1000  # characters of code an external script counts as: one outweighs under 100 of text
_JS_TYPES = frozenset({"", "text/javascript", "application/javascript", "module", "text/ecmascript",
                       "application/ecmascript", "text/jsx", "text/babel"})
_NOT_TEXT = frozenset({"script", "style", "template", "noscript"})
_ASKS_FOR_JS = re.compile(
    r"\b(enable|turn on|activate|allow|switch on)\b.{0,40}\bjavascript\b"
    r"|\bjavascript\b.{0,40}\b(required|disabled|needed|must be enabled|is off|not enabled|to run|to use)\b"
    r"|\b(requires?|needs?)\b.{0,20}\bjavascript\b", re.I | re.S)
_SPACE = re.compile(r"\s+")


@dataclass(frozen=True)
class PageSignals:
    """What the detector looks at in one page."""

    text: int  # characters of visible text
    scripts: int  # scripts that run
    script_weight: int  # inline code length + EXTERNAL_WEIGHT per external script
    empty_root: str | None  # the first empty app root ("#root", "<app-root>"), None when there is none
    noscript_asks: bool  # a <noscript> asks for JavaScript


def _text(el: etree._Element) -> str:
    parts: list[str] = []

    def walk(e: etree._Element) -> None:
        if isinstance(e.tag, str) and e.tag.lower() in _NOT_TEXT:
            return
        if isinstance(e.tag, str) and e.text:
            parts.append(e.text)
        for child in e:
            walk(child)
            if child.tail:
                parts.append(child.tail)

    walk(el)
    return _SPACE.sub(" ", " ".join(parts)).strip()


def signals(content: bytes) -> PageSignals | None:
    """The page's signals, None when lxml cannot read it as HTML."""
    try:
        root = html.document_fromstring(content)
    except (etree.ParserError, ValueError):
        return None
    body = root.find("body")
    text = len(_text(body if body is not None else root))
    scripts = weight = 0
    noscript_asks = False
    empty_root: str | None = None
    for el in root.iter():
        if not isinstance(el.tag, str):
            continue
        tag = el.tag.lower()
        if tag == "script":
            kind = (el.get("type") or "").split(";", 1)[0].strip().lower()
            if kind in _JS_TYPES:
                scripts += 1
                weight += EXTERNAL_WEIGHT if el.get("src") else len((el.text or "").strip())
        elif tag == "noscript":
            noscript_asks = noscript_asks or bool(_ASKS_FOR_JS.search(" ".join(el.itertext())))
        elif empty_root is None:
            ident = (el.get("id") or "").lower()
            if ident in APP_ROOT_IDS or tag == "app-root" or el.get("ng-app") is not None:
                if len(_text(el)) < ROOT_EMPTY and not el.xpath(".//a[@href]"):
                    empty_root = f"#{el.get('id')}" if ident in APP_ROOT_IDS else f"<{tag}>"
    return PageSignals(text, scripts, weight, empty_root, noscript_asks)


class NeedsJs:
    """The detector: ``reason(content)`` says why a page needs rendering, or None when it is fetched plainly."""

    def __init__(self, text_min: int = 300, scripts_min: int = 3) -> None:
        self.text_min = text_min
        self.scripts_min = scripts_min

    def reason(self, content: bytes) -> str | None:
        s = signals(content)
        if s is None:
            return None
        if s.text >= self.text_min:
            return None
        if s.empty_root is not None and s.scripts:
            return f"empty app root {s.empty_root}"
        if s.noscript_asks:
            return "noscript asks for JavaScript"
        if s.scripts and (s.scripts >= self.scripts_min or s.script_weight >= 10 * s.text):
            return f"{s.text} characters of text beside {s.scripts} scripts"
        return None
