"""Content codings of a response body (Content-Encoding), decoded in bounded steps: a decoder never gives more
than the caller asks for per call, so a compression bomb inflates no further than the content limits."""

from __future__ import annotations

import zlib


class DecodingError(Exception):
    """A body that does not decode as its Content-Encoding says (the fetch's reason names it)."""


class Identity:
    """Pass-through 'decoder' for unencoded bodies."""

    def decode(self, data: bytes, max_len: int) -> tuple[bytes, bytes]:
        """Return (at most max_len bytes of output, unconsumed input); max_len 0 = all."""
        if max_len <= 0:
            return data, b""
        return data[:max_len], data[max_len:]

    def complete(self) -> bool:
        """Whether the body read so far is a whole encoding (always, for an unencoded body)."""
        return True


class Inflater:
    """Bounded gzip/deflate decoder: never produces more than ``max_len`` bytes per call."""

    def __init__(self, wbits: int) -> None:
        self._wbits = wbits
        self._d = zlib.decompressobj(wbits)
        self._started = False
        self._done = False

    def decode(self, data: bytes, max_len: int) -> tuple[bytes, bytes]:
        """Inflate ``data``; return (output, input still to feed)."""
        if self._done:
            return b"", b""
        try:
            out = self._d.decompress(data, max(max_len, 0))
        except zlib.error as exc:
            if not self._started and self._wbits == zlib.MAX_WBITS:
                # "deflate" sent without the zlib wrapper (common server bug): retry raw.
                self._wbits = -zlib.MAX_WBITS
                self._d = zlib.decompressobj(self._wbits)
                return self.decode(data, max_len)
            raise DecodingError(f"content decoding error: {exc}") from exc
        self._started = True
        if not self._d.eof:
            return out, self._d.unconsumed_tail
        return out, self._next_member(self._d.unused_data)

    def complete(self) -> bool:
        """False when a stream was started and has not reached its end (a cut or half-sent body)."""
        return self._done or self._d.eof or not self._started

    def _next_member(self, rest: bytes) -> bytes:
        """After the end of a stream: start the next gzip member or drop trailing garbage."""
        if self._wbits > zlib.MAX_WBITS and rest[:2] == b"\x1f\x8b":
            self._d = zlib.decompressobj(self._wbits)
            return rest
        self._done = True
        return b""


def decoder_for(content_encoding: str | None) -> Identity | Inflater:
    """Pick a decoder for a Content-Encoding header (unknown encodings are kept as is)."""
    enc = (content_encoding or "").split(",")[-1].strip().lower()
    if enc in ("gzip", "x-gzip"):
        return Inflater(16 + zlib.MAX_WBITS)
    if enc == "deflate":
        return Inflater(zlib.MAX_WBITS)
    return Identity()

