"""What document parsers share: the text and outlinks of an XHTML rendering (Tika's X-TIKA:content), and the
document metadata kept on the row (author, dates, language, ...) under the names HTML's meta tags use."""

from __future__ import annotations

import re
from collections.abc import Mapping

from lxml import etree

from nutch2.parse.html import _outlinks, _parse_tree, _visible_text
from nutch2.parse.result import Canceller, ParseResult

__all__ = ["DOCUMENT_META", "XhtmlPart", "join_parts", "meta_result"]

# row metadata names (meta_<name>, as HTML's <meta name=...>) of a document's properties; kept when metatags.names
# lists them and indexed as meta_<name> when index.metadata does
_ABSOLUTE = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
DOCUMENT_META = ("author", "created", "modified", "language", "description", "keywords")


class XhtmlPart:
    """The visible text and links of one XHTML document (a container or one of its embedded documents)."""

    def __init__(self, markup: str, url: str, max_outlinks: int, max_outlink_length: int,
                 outlink_tags: Mapping[str, str], cancel: Canceller) -> None:
        root = _parse_tree(markup) if markup.strip() else None
        if root is not None:
            _drop_relative_links(root, outlink_tags)
        self.text = _visible_text(root, cancel) if root is not None else ""
        self.outlinks = (_outlinks(root, url, None, max_outlinks, max_outlink_length, cancel, outlink_tags)
                         if root is not None else [])
        title = root.find(".//title") if root is not None else None
        self.title = " ".join("".join(title.itertext()).split()) if title is not None else ""


def _drop_relative_links(root: etree._Element, tags: Mapping[str, str]) -> None:
    """A relative link in a document points into its own package (an EPUB's chapters, an ODF's pictures), not to
    the web: only absolute links are outlinks of a document."""
    for el in root.iter(*tags):
        attr = tags[el.tag.lower()] if isinstance(el.tag, str) and el.tag.lower() in tags else None
        href = el.get(attr) if attr else None
        if href is not None and not _ABSOLUTE.match(href.strip()):
            del el.attrib[attr]


def join_parts(parts: list[XhtmlPart], max_outlinks: int, text_limit: int) -> tuple[str, list[tuple[str, str]]]:
    """The text of every part, in order, cut at text_limit characters (-1: all), and their outlinks (first
    occurrence of a URL wins, at most max_outlinks; -1: all)."""
    text = "\n".join(p.text for p in parts if p.text)
    if text_limit >= 0:
        text = text[:text_limit]
    seen: dict[str, str] = {}
    for part in parts:
        for url, anchor in part.outlinks:
            if 0 <= max_outlinks <= len(seen):
                break
            seen.setdefault(url, anchor)
    return text, list(seen.items())


def meta_result(title: str, text: str, outlinks: list[tuple[str, str]], meta: Mapping[str, str | None],
                url: str, content_type: str | None) -> ParseResult:
    """A successful ParseResult of a document."""
    kept = {k: "\t".join(" ".join(x.split()) for x in v.split("\t") if x.strip())
            for k, v in meta.items() if v and v.strip()}
    return ParseResult(title=" ".join(title.split()), text=text, outlinks=outlinks, base_url=url, meta=kept,
                       content_type=content_type)
