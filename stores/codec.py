"""Encoding of WebPage field values for stores that keep text or bytes (shared by the backends)."""

from __future__ import annotations

import base64
import json
from typing import Any

import orjson  # the maps of every row written and read: several times faster than json

from nutch2.webpage import FIELDS, ParseStatus, ProtocolStatus


def _dumps(value: Any) -> str:
    """Compact JSON text, UTF-8 as it is (not \\u escapes); json for what orjson refuses (keys that are not
    strings, integers beyond 64 bits, lone surrogates)."""
    try:
        return orjson.dumps(value).decode("utf-8")
    except TypeError:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def encode_protocol(ps: ProtocolStatus | None) -> str | None:
    if ps is None:
        return None
    return _dumps({"code": int(ps.code), "args": list(ps.args), "lastModified": int(ps.last_modified)})


def decode_protocol(text: str | bytes | None) -> ProtocolStatus | None:
    if text is None:
        return None
    d = orjson.loads(text)
    return ProtocolStatus(d["code"], list(d.get("args", [])), d.get("lastModified", 0))


def encode_parse(ps: ParseStatus | None) -> str | None:
    if ps is None:
        return None
    return _dumps({"majorCode": int(ps.major_code), "minorCode": int(ps.minor_code), "args": list(ps.args)})


def decode_parse(text: str | bytes | None) -> ParseStatus | None:
    if text is None:
        return None
    d = orjson.loads(text)
    return ParseStatus(d["majorCode"], d["minorCode"], list(d.get("args", [])))


def encode_map(name: str, value: dict | None) -> str | None:
    """JSON text of a map field; metadata values (bytes) are base64."""
    if value is None:
        return None
    if name == "metadata":
        value = {k: base64.b64encode(v).decode("ascii") for k, v in value.items()}
    return _dumps(dict(value))


def decode_map(name: str, text: str | bytes | None) -> dict:
    if not text:
        return {}
    value = orjson.loads(text)
    if name == "metadata":
        value = {k: base64.b64decode(v) for k, v in value.items()}
    return value


def encode_field(name: str, value: Any) -> Any:
    """A field value as sqlite stores it: ints, floats, str, bytes, or JSON text for records and maps."""
    kind = FIELDS[name][0]
    if kind == "map":
        return encode_map(name, value)
    if kind == "protocol":
        return encode_protocol(value)
    if kind == "parse":
        return encode_parse(value)
    return value


def decode_field(name: str, value: Any) -> Any:
    kind = FIELDS[name][0]
    if kind == "map":
        return decode_map(name, value)
    if kind == "protocol":
        return decode_protocol(value)
    if kind == "parse":
        return decode_parse(value)
    if kind == "bytes" and value is not None:
        return bytes(value)
    return value


def values_to_json(values: dict[str, Any]) -> str:
    """Field values of a row as one JSON object (bytes base64), e.g. a row staged by updatedb."""
    out: dict[str, Any] = {}
    for name, value in values.items():
        encoded = encode_field(name, value)
        if isinstance(encoded, (bytes, bytearray)):
            encoded = {"b64": base64.b64encode(encoded).decode("ascii")}
        out[name] = encoded
    return _dumps(out)


def values_from_json(text: str | bytes) -> dict[str, Any]:
    """The inverse of values_to_json."""
    out: dict[str, Any] = {}
    for name, value in orjson.loads(text).items():
        if isinstance(value, dict) and "b64" in value:
            value = base64.b64decode(value["b64"])
        out[name] = decode_field(name, value)
    return out
