"""Office documents, PDFs and e-books for the test web, made at test time by well-kept writers (fpdf2, python-docx,
openpyxl, python-pptx, odfpy, ebooklib), plus hostile ones built by hand: a PDF bomb and a zip bomb in a DOCX.

Every normal document carries a title, an author, one unique word (what a search must find) and, where the format
has hyperlinks, a link to `link` (an outlink the parser must find). `make(kind, ...)` returns the bytes.
"""

from __future__ import annotations

import functools
import io
import zipfile
import zlib
from dataclasses import dataclass

__all__ = ["DOCUMENT_TYPES", "DocSpec", "make", "pdf_bomb", "docx_zip_bomb", "pdf_endless_pages"]

# kind -> (file suffix, media type the server sends)
DOCUMENT_TYPES: dict[str, tuple[str, str]] = {
    "pdf": (".pdf", "application/pdf"),
    "docx": (".docx", "application/vnd.openxmlformats-officedocument.wordprocessingml.document"),
    "xlsx": (".xlsx", "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"),
    "odt": (".odt", "application/vnd.oasis.opendocument.text"),
    "pptx": (".pptx", "application/vnd.openxmlformats-officedocument.presentationml.presentation"),
    "epub": (".epub", "application/epub+zip"),
}
# formats whose writer here can put a hyperlink in the document
LINKING_KINDS = frozenset({"pdf", "docx", "odt", "epub"})


@dataclass(frozen=True)
class DocSpec:
    """What one document says."""

    title: str
    author: str
    word: str
    link: str | None = None

    @property
    def sentence(self) -> str:
        return f"This document is about {self.word} and nothing else."


def make(kind: str, spec: DocSpec) -> bytes:
    """The document of `kind` (a key of DOCUMENT_TYPES)."""
    return _MAKERS[kind](spec)


def _pdf(spec: DocSpec) -> bytes:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_title(spec.title)
    pdf.set_author(spec.author)
    pdf.set_creation_date(_DATE)
    pdf.add_page()
    pdf.set_font("helvetica", size=12)
    pdf.multi_cell(0, 10, spec.title, new_x="LMARGIN", new_y="NEXT")
    pdf.multi_cell(0, 10, spec.sentence, new_x="LMARGIN", new_y="NEXT")
    if spec.link:
        pdf.cell(0, 10, "A link to the next page", link=spec.link)
    return bytes(pdf.output())


def _docx(spec: DocSpec) -> bytes:
    import docx
    from docx.opc.constants import RELATIONSHIP_TYPE
    from docx.oxml import OxmlElement
    from docx.oxml.ns import qn

    d = docx.Document()
    d.core_properties.title = spec.title
    d.core_properties.author = spec.author
    d.core_properties.created = _DATE
    d.core_properties.language = "en-US"
    d.add_heading(spec.title, 1)
    p = d.add_paragraph(spec.sentence)
    if spec.link:
        rid = d.part.relate_to(spec.link, RELATIONSHIP_TYPE.HYPERLINK, is_external=True)
        link = OxmlElement("w:hyperlink")
        link.set(qn("r:id"), rid)
        run = OxmlElement("w:r")
        text = OxmlElement("w:t")
        text.text = " A link to the next page"
        run.append(text)
        link.append(run)
        p._p.append(link)
    buf = io.BytesIO()
    d.save(buf)
    return buf.getvalue()


def _xlsx(spec: DocSpec) -> bytes:
    import openpyxl

    wb = openpyxl.Workbook()
    wb.properties.title = spec.title
    wb.properties.creator = spec.author
    wb.properties.created = _DATE
    ws = wb.active
    ws.title = "Sheet one"
    ws["A1"] = spec.title
    ws["A2"] = spec.sentence
    ws["B3"] = 42
    buf = io.BytesIO()
    wb.save(buf)
    return buf.getvalue()


def _odt(spec: DocSpec) -> bytes:
    from odf import dc, meta, text
    from odf.opendocument import OpenDocumentText

    d = OpenDocumentText()
    d.meta.addElement(dc.Title(text=spec.title))
    d.meta.addElement(dc.Creator(text=spec.author))
    d.meta.addElement(meta.CreationDate(text=_DATE.strftime("%Y-%m-%dT%H:%M:%S")))
    d.text.addElement(text.H(outlinelevel=1, text=spec.title))
    p = text.P(text=spec.sentence + " ")
    if spec.link:
        p.addElement(text.A(href=spec.link, type="simple", text="A link to the next page"))
    d.text.addElement(p)
    buf = io.BytesIO()
    d.write(buf)
    return buf.getvalue()


def _pptx(spec: DocSpec) -> bytes:
    from pptx import Presentation

    prs = Presentation()
    prs.core_properties.title = spec.title
    prs.core_properties.author = spec.author
    prs.core_properties.created = _DATE
    slide = prs.slides.add_slide(prs.slide_layouts[1])
    slide.shapes.title.text = spec.title
    slide.placeholders[1].text = spec.sentence
    buf = io.BytesIO()
    prs.save(buf)
    return buf.getvalue()


def _epub(spec: DocSpec) -> bytes:
    from ebooklib import epub

    book = epub.EpubBook()
    book.set_identifier(f"nutch2-{spec.word}")
    book.set_title(spec.title)
    book.set_language("en")
    book.add_author(spec.author)
    book.add_metadata("DC", "date", _DATE.strftime("%Y-%m-%d"))
    chapter = epub.EpubHtml(title="Chapter one", file_name="chap1.xhtml", lang="en")
    link = f'<p><a href="{spec.link}">A link to the next page</a></p>' if spec.link else ""
    chapter.content = f"<html><body><h1>{spec.title}</h1><p>{spec.sentence}</p>{link}</body></html>"
    book.add_item(chapter)
    book.toc = (chapter,)
    book.add_item(epub.EpubNcx())
    book.add_item(epub.EpubNav())
    book.spine = ["nav", chapter]
    buf = io.BytesIO()
    epub.write_epub(buf, book)
    return buf.getvalue()


_MAKERS = {"pdf": _pdf, "docx": _docx, "xlsx": _xlsx, "odt": _odt, "pptx": _pptx, "epub": _epub}


def _utc_2024() -> object:
    import datetime

    return datetime.datetime(2024, 3, 1, 12, 0, 0, tzinfo=datetime.UTC)


_DATE = _utc_2024()


# ---------------------------------------------------------------------- hostile documents


def _pdf_file(objects: list[bytes]) -> bytes:
    """A PDF with a correct cross-reference table around `objects` (object 1 is the catalog)."""
    out = io.BytesIO()
    out.write(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for i, body in enumerate(objects, start=1):
        offsets.append(out.tell())
        out.write(f"{i} 0 obj\n".encode() + body + b"\nendobj\n")
    xref = out.tell()
    out.write(f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode())
    for off in offsets:
        out.write(f"{off:010d} 00000 n \n".encode())
    out.write(f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode())
    return out.getvalue()


def _deflate_repeat(unit: bytes, total: int) -> bytes:
    """zlib data inflating to `unit` repeated up to `total` bytes, compressed block by block (never in memory)."""
    co = zlib.compressobj(6)
    block = unit * max(1, (1 << 20) // len(unit))
    parts = []
    done = 0
    while done < total:
        parts.append(co.compress(block))
        done += len(block)
    parts.append(co.flush())
    return b"".join(parts)


@functools.lru_cache(maxsize=2)
def pdf_bomb(inflated_bytes: int = 1 << 30) -> bytes:
    """A one-page PDF whose content stream (FlateDecode, ~1 MB) inflates to `inflated_bytes` of text operators."""
    stream = _deflate_repeat(b"BT /F1 12 Tf 72 712 Td (bomb bomb bomb) Tj ET\n", inflated_bytes)
    return _pdf_file([
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        f"<< /Length {len(stream)} /Filter /FlateDecode >>\nstream\n".encode() + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ])


@functools.lru_cache(maxsize=2)
def pdf_endless_pages(pages: int = 20_000) -> bytes:
    """A PDF with `pages` pages (each a tiny shared content stream): slow to walk, small on the wire."""
    kids = " ".join(f"{i} 0 R" for i in range(4, 4 + pages))
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        f"<< /Type /Pages /Kids [{kids}] /Count {pages} >>".encode(),
        b"<< /Length 44 >>\nstream\nBT /F1 12 Tf 72 712 Td (page text) Tj ET\n\nendstream",
    ]
    page = b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 3 0 R >>"
    objects += [page] * pages
    return _pdf_file(objects)


@functools.lru_cache(maxsize=2)
def docx_zip_bomb(inflated_bytes: int = 1 << 30) -> bytes:
    """A DOCX whose word/document.xml (~1 MB deflated) inflates to `inflated_bytes`: one paragraph of 'a's."""
    ns = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"'
    head = f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?><w:document {ns}><w:body><w:p><w:r><w:t>'.encode()
    tail = b"</w:t></w:r></w:p></w:body></w:document>"
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("[Content_Types].xml", _CONTENT_TYPES)
        z.writestr("_rels/.rels", _RELS)
        info = zipfile.ZipInfo("word/document.xml", (2024, 3, 1, 12, 0, 0))
        info.compress_type = zipfile.ZIP_DEFLATED
        with z.open(info, "w", force_zip64=True) as f:
            f.write(head)
            block = b"a" * (1 << 20)
            for _ in range(max(1, inflated_bytes // len(block))):
                f.write(block)
            f.write(tail)
    return buf.getvalue()


_CONTENT_TYPES = (
    '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
    '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
    '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
    '<Default Extension="xml" ContentType="application/xml"/>'
    '<Override PartName="/word/document.xml" '
    'ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>'
)
_RELS = (
    '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
    '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
    '<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" '
    'Target="word/document.xml"/></Relationships>'
)
