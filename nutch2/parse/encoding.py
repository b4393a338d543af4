"""Which encoding a fetched document is in, and its text, as WHATWG browsers decide with one deliberate order: a
byte order mark wins over everything (also over the HTTP header), then the HTTP header's charset, then ``<meta
charset>`` / ``<meta http-equiv="Content-Type">``, then strict UTF-8, then detection with charset_normalizer, then
windows-1252. Unknown or unsafe labels (``utf-7``, ``base64`` ...) fall through to the next source. Labels map to
Python codecs through WHATWG's aliases, and a few codecs to their supersets (what browsers decode them as)."""

from __future__ import annotations

import codecs
import re

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


def header_value(headers: dict[str, str] | None, name: str) -> str | None:
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
    for value in (content_type, header_value(headers, "Content-Type")):
        if value:
            match = _CHARSET_PARAM.search(value)
            enc = resolve_charset(match.group(1)) if match else None
            if enc:
                return enc
    return None


def bom_encoding(content: bytes) -> tuple[str, int] | None:
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
    bom = bom_encoding(content)
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


def looks_binary(content: bytes, encoding: str) -> bool:
    """Heuristic: many C0 control bytes in an ASCII-compatible encoding means not text."""
    if encoding.startswith(("utf-16", "utf-32")):
        return False
    sample = content[:_BINARY_SAMPLE]
    controls = len(sample) - len(sample.translate(None, _CONTROL_BYTES_TABLE))
    return controls > max(4, len(sample) // 20)
