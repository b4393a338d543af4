"""Content codings of a response body (Content-Encoding: gzip, deflate, br, zstd, or several in a row), decoded in
bounded steps: a decoder never gives more than the caller asks for per read, so a compression bomb inflates no
further than the content limits.

Brotli needs brotlicffi (or Google's brotli) 1.2 or later, the first with a bound on the output of a call;
brotlicffi comes first because its name is its own: the old brotlipy, which some packages still pull in, installs
a `brotli` that hides Google's. zstd needs Python 3.14's compression.zstd or its backport, backports.zstd (the
zstandard package has no such bound: one read of a zstd bomb would inflate whole). :func:`accept_encoding` names
only the codings that can be decoded here, so a server sends no other.
"""

from __future__ import annotations

import itertools
import logging
import re
import sys
import zlib
from typing import Any

log = logging.getLogger(__name__)

_CHUNK = 64 * 1024  # what one step of a chain of decoders hands the next
_ZSTD_WINDOW_LOG_MAX = 23  # RFC 9659: a zstd content coding uses a window of at most 8 MB; a larger one is refused
_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"  # what starts a zstd frame (another may follow the first)


def _brotli() -> Any:
    """The brotli module (brotlicffi or brotli) if it can bound its output, else None."""
    for name in ("brotlicffi", "brotli"):
        try:
            module = __import__(name)
        except ImportError:
            continue
        if hasattr(module.Decompressor(), "can_accept_more_data"):  # 1.2: process(data, output_buffer_limit=)
            return module
        log.debug("%s %s cannot bound its output: Brotli not offered", name, getattr(module, "__version__", "?"))
    return None


def _zstd() -> Any:
    """compression.zstd (Python 3.14) or backports.zstd, else None."""
    try:
        if sys.version_info >= (3, 14):
            from compression import zstd  # type: ignore[import-not-found]
        else:
            from backports import zstd  # type: ignore[import-not-found]
    except ImportError:
        return None
    return zstd


brotli = _brotli()
zstd = _zstd()


class DecodingError(Exception):
    """A body that does not decode as its Content-Encoding says (the fetch's reason names it)."""


class Identity:
    """Pass-through 'decoder' for unencoded bodies."""

    compressed = False

    def __init__(self) -> None:
        self._in = b""

    def feed(self, data: bytes) -> None:
        """Input to decode (read it before feeding more)."""
        self._in += data

    def read(self, max_len: int) -> bytes:
        """At most ``max_len`` (> 0) bytes of output; b"" when it needs more input."""
        out, self._in = self._in[:max_len], self._in[max_len:]
        return out

    def complete(self) -> bool:
        """Whether the body read so far is a whole encoding (always, for an unencoded body)."""
        return True


class _Streams(Identity):
    """A coding whose body may be several streams in a row (gzip members, zstd frames), read in bounded steps:
    after the end of one, the next starts where its magic number follows; anything else is trailing garbage,
    dropped."""

    compressed = True
    magic = b""  # what starts a following stream (b"": none follows)

    def __init__(self) -> None:
        super().__init__()
        self._d = self._new()
        self._started = False
        self._done = False
        self._between = False  # a stream ended: the input that follows decides
        self._more = False  # the last read was cut at max_len: output may wait in the decoder without more input

    def _new(self) -> Any:
        raise NotImplementedError

    def _decode(self, max_len: int) -> tuple[bytes, bool]:
        """Decode from self._in (leaving in it what is not consumed): (output, whether the stream ended)."""
        raise NotImplementedError

    def read(self, max_len: int) -> bytes:
        while (self._in or self._more) and not self._done:
            if self._between and not self._next_stream():
                return b""
            out, ended = self._decode(max_len)
            self._started = True
            if ended:
                self._between, self._more = True, False
            if out:
                return out
        return b""

    def _next_stream(self) -> bool:
        """After the end of a stream: whether another starts here (False: wait for more input, or done)."""
        head = self._in[:len(self.magic)]
        if head == self.magic and self.magic:
            self._d, self._between = self._new(), False
            return True
        if len(head) < len(self.magic) and self.magic.startswith(head):
            return False  # too little to tell yet
        self._done, self._in = True, b""
        return False

    def complete(self) -> bool:
        """False when a stream was started and has not reached its end (a cut or half-sent body)."""
        return self._done or self._between or not self._started


class Inflater(_Streams):
    """Bounded gzip/deflate decoder (gzip members one after another; deflate with or without its zlib wrapper)."""

    def __init__(self, wbits: int) -> None:
        self._wbits = wbits
        self.magic = b"\x1f\x8b" if wbits > zlib.MAX_WBITS else b""
        super().__init__()

    def _new(self) -> Any:
        return zlib.decompressobj(self._wbits)

    def _decode(self, max_len: int) -> tuple[bytes, bool]:
        try:
            out = self._d.decompress(self._in, max_len)
        except zlib.error as exc:
            if not self._started and self._wbits == zlib.MAX_WBITS:
                # "deflate" sent without the zlib wrapper (common server bug): retry raw.
                self._wbits = -zlib.MAX_WBITS
                self._d = self._new()
                return b"", False
            raise DecodingError(f"content decoding error: {exc}") from exc
        self._more = len(out) == max_len
        self._in = self._d.unused_data if self._d.eof else self._d.unconsumed_tail
        return out, self._d.eof


def _text(exc: Exception) -> str:
    """An error's message: brotli gives it as bytes (b'Decompression error: ...')."""
    arg = exc.args[0] if len(exc.args) == 1 else None
    return arg.decode("utf-8", "replace") if isinstance(arg, bytes) else str(exc)


class BrotliDecoder(Identity):
    """Bounded Brotli decoder (RFC 7932): brotli's output_buffer_limit, what a call gives beyond max_len kept."""

    compressed = True

    def __init__(self) -> None:
        super().__init__()
        self._d = brotli.Decompressor()
        self._out = b""  # output decoded and not yet read (brotli's limit is a floor: it may give more)
        self._started = False

    def read(self, max_len: int) -> bytes:
        if not self._out:
            if self._d.is_finished():
                self._in = b""  # after the end of the stream: dropped, as trailing gzip garbage is
                return b""
            if self._d.can_accept_more_data():
                if not self._in:
                    return b""
                data, self._in = self._in, b""
            else:
                data = b""  # output still waiting inside the decoder
            try:
                self._out = self._d.process(data, output_buffer_limit=max_len)
            except brotli.error as exc:
                raise DecodingError(f"content decoding error (br): {_text(exc)}") from exc
            self._started = True
        out, self._out = self._out[:max_len], self._out[max_len:]
        return out

    def complete(self) -> bool:
        return not self._started or (self._d.is_finished() and not self._out)


class ZstdDecoder(_Streams):
    """Bounded zstd decoder (RFC 8878, RFC 9659): frames one after another, windows up to 8 MB."""

    magic = _ZSTD_MAGIC

    def _new(self) -> Any:
        return zstd.ZstdDecompressor(options={zstd.DecompressionParameter.window_log_max: _ZSTD_WINDOW_LOG_MAX})

    def _decode(self, max_len: int) -> tuple[bytes, bool]:
        data, self._in = self._in, b""
        try:
            out = self._d.decompress(data, max_length=max_len)
        except zstd.ZstdError as exc:
            raise DecodingError(f"content decoding error (zstd): {exc}") from exc
        if self._d.eof:
            self._in = self._d.unused_data
            return out, True
        self._more = not self._d.needs_input
        return out, False


class Chain(Identity):
    """Several codings in a row (``Content-Encoding: gzip, br``): the one applied last is undone first, each step
    handing the next at most 64 KB at a time."""

    compressed = True

    def __init__(self, decoders: list[Identity]) -> None:
        super().__init__()
        self._decoders = decoders  # in the order they are undone

    def feed(self, data: bytes) -> None:
        self._decoders[0].feed(data)

    def read(self, max_len: int) -> bytes:
        return self._read(len(self._decoders) - 1, max_len)

    def _read(self, i: int, max_len: int) -> bytes:
        decoder = self._decoders[i]
        while True:
            out = decoder.read(max_len)
            if out or i == 0:
                return out
            more = self._read(i - 1, _CHUNK)
            if not more:
                return b""
            decoder.feed(more)

    def complete(self) -> bool:
        return all(d.complete() for d in self._decoders)


def _gzip() -> Inflater:
    return Inflater(16 + zlib.MAX_WBITS)


_DECODERS: dict[str, Any] = {"gzip": _gzip, "x-gzip": _gzip, "deflate": lambda: Inflater(zlib.MAX_WBITS)}
if brotli is not None:
    _DECODERS["br"] = BrotliDecoder
if zstd is not None:
    _DECODERS["zstd"] = ZstdDecoder


def accept_encoding() -> str:
    """The Accept-Encoding header: the codings decoded here."""
    return ", ".join(["gzip", "deflate"] + [c for c in ("br", "zstd") if c in _DECODERS])


MAX_CODINGS = 5  # codings in a row decoded at most (curl's bound since CVE-2022-32206)


def decoder_for(content_encoding: str | None) -> Identity:
    """A decoder for a Content-Encoding header: its codings undone in reverse order; a body with a coding not
    known here is kept as sent. More than MAX_CODINGS in a row is a DecodingError: a header of a few MB naming a
    coding a million times would otherwise build (and then recurse through) a decoder for each, GBs of memory."""
    found = (m.group().strip().lower() for m in re.finditer(r"[^,]+", content_encoding or ""))
    codings = list(itertools.islice((c for c in found if c and c != "identity"), MAX_CODINGS + 1))
    if len(codings) > MAX_CODINGS:
        raise DecodingError(f"content decoding error: more than {MAX_CODINGS} codings in a row")
    if not codings or any(c not in _DECODERS for c in codings):
        return Identity()
    decoders = [_DECODERS[c]() for c in reversed(codings)]
    return decoders[0] if len(decoders) == 1 else Chain(decoders)
