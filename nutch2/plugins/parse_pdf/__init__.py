"""parse-pdf: PDFs parsed in this process with pypdf (pure Python, no server), the default for PDFs when no Tika
server is configured; bounded by parser.timeout and parser.text.limit."""

from nutch2.plugin import Plugin

PLUGIN = Plugin("parse-pdf", {"parser": "nutch2.plugins.parse_pdf.pdf:PdfParser"}, "PDFs with pypdf, in process")
