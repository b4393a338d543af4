"""parse-pdf: PDFs parsed in this process with pypdf, the embedded default when no Tika server is configured.

pypdf was chosen because it is pure Python (no native code to build or to crash the task), has no dependencies,
is actively kept (releases every few weeks) and bounds what a hostile file can cost: decompression, array, page-tree
and content-stream work limits (pypdf's Configuration) end a PDF bomb with LimitReachedError in milliseconds instead
of filling memory. pdfminer.six (also pure Python) is slower and has no such limits; PyMuPDF and pypdfium2 wrap
native libraries.

Text is read page by page until ``parser.text.limit`` characters or ``parser.timeout`` seconds (checked between pages;
the page being read finishes within pypdf's own limits); title, author, subject, keywords and dates come from the
document information dictionary, the language from the catalog's /Lang, outlinks from the URI actions of link
annotations.
"""

from __future__ import annotations

import datetime
import io
from typing import Any

from nutch2.config import Configuration
from nutch2.parse.html import resolve_link
from nutch2.parse.parsers import Document, Parser, ParseSettings
from nutch2.parse.result import Canceller, ParseResult, ParseTimeout, failure, run_with_timeout
from nutch2.parse.xhtml import meta_result
from nutch2.status import ParseMajor, ParseMinor

__all__ = ["PdfParser"]


class PdfParser(Parser):
    """parse-pdf with pypdf."""

    def __init__(self, conf: Configuration) -> None:
        super().__init__(conf)
        self.settings = ParseSettings.from_conf(conf)
        self.text_limit = conf.get_int("parser.text.limit")

    def parse(self, doc: Document) -> ParseResult:
        return run_with_timeout(lambda cancel: self._parse(doc, cancel), doc.url, self.settings.timeout)

    def _parse(self, doc: Document, cancel: Canceller) -> ParseResult:
        import pypdf
        from pypdf.errors import PdfReadError

        if not doc.content:
            return failure(doc.url, ParseMajor.FAILED, ParseMinor.FAILED_MISSING_CONTENT, "empty content")
        try:
            reader = pypdf.PdfReader(io.BytesIO(doc.content))
            if reader.is_encrypted and not reader.decrypt(""):
                return failure(doc.url, ParseMajor.FAILED, ParseMinor.FAILED_INVALID_FORMAT, "encrypted PDF")
            texts: list[str] = []
            links: dict[str, str] = {}
            size = 0
            s = self.settings
            for page in reader.pages:
                if cancel.cancelled():
                    raise ParseTimeout("parser timeout")
                text = page.extract_text() or ""
                texts.append(text)
                size += len(text)
                for uri in _uris(page):
                    target = resolve_link(doc.url, uri)
                    if (target and len(target) <= s.max_outlink_length and target not in links
                            and not 0 <= s.max_outlinks <= len(links)):
                        links[target] = ""
                if 0 <= self.text_limit <= size:
                    break
            info = reader.metadata or {}
            meta = {
                "author": _text(info.get("/Author")),
                "created": _date(info.get("/CreationDate")),
                "modified": _date(info.get("/ModDate")),
                "language": _text(_catalog(reader).get("/Lang")),
                "description": _text(info.get("/Subject")),
                "keywords": _text(info.get("/Keywords")),
            }
        except ParseTimeout:
            raise
        except (PdfReadError, ValueError, KeyError, TypeError, AttributeError, IndexError, RecursionError) as e:
            return failure(doc.url, ParseMajor.FAILED, ParseMinor.FAILED_INVALID_FORMAT,
                            f"parse-pdf: {type(e).__name__}: {e}"[:300])
        text = " ".join(" ".join(texts).split())
        if self.text_limit >= 0:
            text = text[: self.text_limit]
        return meta_result(_text(info.get("/Title")) or "", text, list(links.items()), meta, doc.url,
                           "application/pdf")


def _catalog(reader: Any) -> Any:
    try:
        return reader.trailer["/Root"].get_object()
    except (KeyError, AttributeError):
        return {}


def _uris(page: Any) -> list[str]:
    """URIs of the page's link annotations (/Subtype /Link, /A << /S /URI /URI ... >>)."""
    found = []
    annots = page.get("/Annots")
    if annots is None:
        return found
    for ref in annots.get_object() or []:
        annot = ref.get_object()
        if not hasattr(annot, "get") or annot.get("/Subtype") != "/Link":
            continue
        action = annot.get("/A")
        action = action.get_object() if action is not None else None
        if action is not None and action.get("/S") == "/URI" and action.get("/URI"):
            found.append(str(action.get("/URI")))
    return found


def _text(value: Any) -> str | None:
    if value is None:
        return None
    text = str(value.get_object() if hasattr(value, "get_object") else value).strip()
    return text or None


def _date(value: Any) -> str | None:
    """A PDF date (D:YYYYMMDDHHmmSSOHH'mm) as ISO 8601 in UTC, None when unreadable."""
    raw = _text(value)
    if not raw:
        return None
    try:
        parsed = _pdf_date(raw)
    except ValueError:
        return None
    return parsed.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _pdf_date(raw: str) -> datetime.datetime:
    """Parse D:YYYY[MM[DD[HH[mm[SS]]]]][Z|+HH'mm'|-HH'mm'] (PDF 32000-1, 7.9.4)."""
    s = raw[2:] if raw.startswith("D:") else raw
    n = 0
    while n < min(len(s), 14) and s[n].isdigit():
        n += 1
    digits, rest = s[:n], s[n:].replace("'", "")
    if len(digits) < 4:
        raise ValueError(raw)

    def field(i: int, default: int) -> int:
        return int(digits[i:i + 2]) if len(digits) >= i + 2 else default

    tz: datetime.tzinfo = datetime.UTC
    if rest[:1] in ("+", "-") and rest[1:3].isdigit():
        offset = datetime.timedelta(hours=int(rest[1:3]), minutes=int(rest[3:5]) if rest[3:5].isdigit() else 0)
        tz = datetime.timezone(offset if rest[0] == "+" else -offset)
    return datetime.datetime(int(digits[:4]), field(4, 1), field(6, 1), field(8, 0), field(10, 0), field(12, 0),
                             tzinfo=tz)
