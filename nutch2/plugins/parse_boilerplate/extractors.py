"""The main-content extractors parse-boilerplate can use (boilerplate.extractor): trafilatura (text, title,
author, date; the default, chosen by measuring both: bench/RESULTS.md) and resiliparse (text and title only, much
faster, keeps more of the boilerplate)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from nutch2.errors import ConfigError

EXTRACTORS = ("trafilatura", "resiliparse")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


@dataclass(frozen=True)
class MainContent:
    """What an extractor found on a page (empty strings for what it did not find)."""

    text: str = ""
    title: str = ""
    author: str = ""
    date: str = ""  # YYYY-MM-DD


def extractor(name: str, fast: bool = True) -> Callable[[str, str], MainContent]:
    """The function ``(html, url) -> MainContent`` of boilerplate.extractor; ConfigError naming the fix when the
    name is unknown or its library is not installed."""
    if name == "trafilatura":
        try:
            import trafilatura  # noqa: F401
        except ImportError as e:
            raise ConfigError(f"parse-boilerplate: boilerplate.extractor=trafilatura needs trafilatura ({e}); pip "
                              "install 'nutch2[boilerplate]'") from None
        return lambda html, url: _trafilatura(html, url, fast)
    if name == "resiliparse":
        try:
            import resiliparse.extract.html2text  # noqa: F401
        except ImportError as e:
            raise ConfigError(f"parse-boilerplate: boilerplate.extractor=resiliparse needs resiliparse ({e}); pip "
                              "install resiliparse, or use boilerplate.extractor=trafilatura") from None
        return _resiliparse
    raise ConfigError(f"boilerplate.extractor={name!r} is not known; use one of {', '.join(EXTRACTORS)}")


def _trafilatura(html: str, url: str, fast: bool) -> MainContent:
    """trafilatura's extraction without comments, tables kept; its date search limited to the page's markup (the
    extensive search reads every text node for dates and costs half the time)."""
    from trafilatura import bare_extraction

    doc = bare_extraction(html, url=url or None, fast=fast, include_comments=False, include_tables=True,
                          with_metadata=True, date_extraction_params={"extensive_search": False,
                                                                      "original_date": True})
    if doc is None:
        return MainContent()
    date = doc.date or ""
    return MainContent(doc.text or "", doc.title or "", doc.author or "", date if _DATE.fullmatch(date) else "")


def _resiliparse(html: str, url: str) -> MainContent:
    """resiliparse's main-content text (no links, alt texts or bullets) and the document title."""
    from resiliparse.extract.html2text import extract_plain_text
    from resiliparse.parse.html import HTMLTree

    tree = HTMLTree.parse(html)
    text = extract_plain_text(tree, main_content=True, links=False, alt_texts=False, list_bullets=False)
    return MainContent(text, (tree.title or "").strip())
