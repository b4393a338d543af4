"""indexer-csv: the index writer."""

from __future__ import annotations

import codecs
from typing import Any

from nutch2.index.files import FileIndexWriter

RECORD_SEPARATOR = "\r\n"  # Nutch's (DOS-style line breaks)


class CSVIndexWriter(FileIndexWriter):
    """Nutch's CSV: a value is quoted when it holds the quote character, a field separator or a line break (a
    quote inside escaped by escapechar); a multi-valued field is always quoted, its first maxfieldvalues values
    joined by valuesep (which is not escaped: choose one the data lacks); values are cut at maxfieldlength
    characters. An empty quotechar turns quoting off."""

    nutch_class = "org.apache.nutch.indexwriter.csv.CSVIndexWriter"
    suffix = ".csv"
    default_outpath = "csvindexwriter"

    def configure(self, params: dict[str, str]) -> None:
        self.columns = [f.strip() for f in (params.get("fields") or "id,title,content").split(",") if f.strip()]
        self.charset = params.get("charset") or "UTF-8"
        try:
            codecs.lookup(self.charset)
        except LookupError:
            raise self.bad_param("charset", self.charset, "a known character set (e.g. UTF-8)") from None
        self.separator = params.get("separator", ",")
        self.valuesep = params.get("valuesep", "|")
        self.quote = params.get("quotechar", '"')[:1]
        self.escape = params.get("escapechar", self.quote)[:1] or self.quote
        self.max_length = self._int(params, "maxfieldlength", 4096)
        self.max_values = self._int(params, "maxfieldvalues", 12)
        header = (params.get("header") or "true").strip().lower()
        if header not in ("true", "false"):
            raise self.bad_param("header", header, "true or false")
        self.with_header = header == "true"
        self._special = set(self.quote + self.separator + RECORD_SEPARATOR)

    def _int(self, params: dict[str, str], name: str, default: int) -> int:
        value = (params.get(name) or str(default)).strip()
        try:
            number = int(value)
        except ValueError:
            raise self.bad_param(name, value, "a whole number") from None
        if number < 1:
            raise self.bad_param(name, value, "a number above 0")
        return number

    def header(self) -> bytes:
        if not self.with_header:
            return b""
        return self._encode(self.separator.join(self._quoted(c) for c in self.columns) + RECORD_SEPARATOR)

    def record(self, doc: dict[str, Any]) -> bytes:
        return self._encode(self.separator.join(self._cell(doc.get(c)) for c in self.columns) + RECORD_SEPARATOR)

    def _cell(self, value: Any) -> str:
        if value is None:
            return ""
        values = [_text(v) for v in (value if isinstance(value, list) else [value]) if v is not None]
        if len(values) > 1:
            joined = self.valuesep.join(self._escaped(v[: self.max_length]) for v in values[: self.max_values])
            return f"{self.quote}{joined}{self.quote}"
        return self._quoted(values[0]) if values else ""

    def _quoted(self, value: str) -> str:
        value = value[: self.max_length]
        if self.quote and any(ch in self._special for ch in value):
            return f"{self.quote}{self._escaped(value)}{self.quote}"
        return value

    def _escaped(self, value: str) -> str:
        return value.replace(self.quote, self.escape + self.quote) if self.quote else value

    def _encode(self, text: str) -> bytes:
        return text.encode(self.charset, errors="replace")


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return value if isinstance(value, str) else str(value)
