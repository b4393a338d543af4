"""HTTP/2 for protocol-http (``http.useHttp2``): an https URL fetched directly goes over HTTP/2 when its server
chooses h2 in the TLS handshake (ALPN). A server that chooses HTTP/1.1 is remembered for the process and fetched by
the HTTP/1.1 client from then on, as http URLs and everything through a proxy are.

httpcore (httpx's transport) with h2 speaks the protocol; the connections are opened here, so HTTP/2 keeps the
rules of HTTP/1.1: the address guard at connect time (the address checked is the one connected to), the socket in
the request's watchdog guard (its total deadline shuts it down: nutch2/fetch/watchdog.py), the body streamed frame
by frame into the same bounded reader. One connection per origin and fetcher thread, one request on it at a time.
A response read to its end (or whose rest, up to 64 KB, is read at close: a 304, a 401's page) leaves its
connection for the next request; one that is cut (a limit, the deadline, an error) closes it, so the frames the
server still sends are not read by the next request (httpcore sends no RST_STREAM).

Errors come out as urllib3's (ConnectTimeoutError, ReadTimeoutError, ProtocolError, SSLError) or as the socket's
OSError, so the fetch reports them in the words it uses for HTTP/1.1.
"""

from __future__ import annotations

import http.client
import logging
import socket
import ssl
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator
from typing import Any, NoReturn
from urllib.parse import urlsplit

import h2.exceptions
import httpcore
import urllib3
from urllib3.exceptions import ConnectTimeoutError, ProtocolError, ReadTimeoutError, SSLError
from urllib3.util.wait import wait_for_read

from nutch2.fetch.addresses import AddressDenied, AddressPolicy
from nutch2.fetch.watchdog import WATCHDOG
from nutch2.plugins.protocol_http.tls import client_context

log = logging.getLogger(__name__)

__all__ = ["Http2Client", "Http2Response"]

_DRAIN = 64 * 1024  # bytes of an unread body read at close to keep its connection
_MAX_CONNECTIONS = 32  # kept per client (fetcher thread), as the HTTP/1.1 pool manager keeps 32 hosts' pools
_HTTP11_ORIGINS: set[tuple[str, int]] = set()  # (host, port) whose TLS handshake chose HTTP/1.1, for the process
_HTTP11_ORIGINS_MAX = 100_000  # past this the set starts again (a forgotten origin costs one more handshake)


class _Http11Only(Exception):
    """The server chose HTTP/1.1 (or nothing) in ALPN."""


class _Stream(httpcore.NetworkStream):
    """A socket as httpcore reads and writes it. Each request writes before it reads, so the write hands the
    socket to the calling thread's watchdog guard: a kept connection is cut at the deadline of the request using it."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        self._sock.settimeout(timeout)
        return self._sock.recv(max_bytes)

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        if not buffer:
            return
        WATCHDOG.attach(self._sock)
        self._sock.settimeout(timeout)
        self._sock.sendall(buffer)

    def close(self) -> None:
        self._sock.close()

    def start_tls(self, ssl_context: ssl.SSLContext, server_hostname: str | None = None,
                  timeout: float | None = None) -> _Stream:
        self._sock.settimeout(timeout)
        try:
            tls = ssl_context.wrap_socket(self._sock, server_hostname=server_hostname)
        except TimeoutError as exc:
            self._sock.close()
            raise ConnectTimeoutError(None, f"TLS handshake with {server_hostname} timed out") from exc
        except ssl.SSLError as exc:
            self._sock.close()
            raise SSLError(exc) from exc
        except BaseException:
            self._sock.close()
            raise
        if tls.selected_alpn_protocol() != "h2":
            tls.close()
            raise _Http11Only(server_hostname)
        WATCHDOG.attach(tls)  # the plain socket was detached by the handshake
        return _Stream(tls)

    def get_extra_info(self, info: str) -> Any:
        if info == "ssl_object":
            return self._sock if isinstance(self._sock, ssl.SSLSocket) else None
        if info == "is_readable":  # an idle connection with something to read: the server's GOAWAY or its EOF
            return wait_for_read(self._sock, timeout=0.0)
        if info == "socket":
            return self._sock
        if info == "server_addr":
            return self._sock.getpeername()
        if info == "client_addr":
            return self._sock.getsockname()
        return None


class _Backend(httpcore.NetworkBackend):
    """Opens httpcore's connections: through the address guard, handed to the watchdog."""

    def __init__(self, addresses: AddressPolicy | None) -> None:
        self._addresses = addresses

    def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                    socket_options: Iterable[Any] | None = None) -> _Stream:
        source = (local_address, 0) if local_address else None
        try:
            if self._addresses is not None:
                sock = self._addresses.connect(host, port, timeout, source, socket_options)
            else:
                sock = socket.create_connection((host, port), timeout, source)
        except TimeoutError as exc:
            raise ConnectTimeoutError(None, f"Connection to {host} timed out. (connect timeout={timeout})") from exc
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        WATCHDOG.attach(sock)
        return _Stream(sock)

    def connect_unix_socket(self, path: str, timeout: float | None = None,
                            socket_options: Iterable[Any] | None = None) -> _Stream:
        raise NotImplementedError("no unix sockets")

    def sleep(self, seconds: float) -> None:
        import time

        time.sleep(seconds)


def _translate(exc: BaseException, url: str) -> BaseException:
    """httpcore's and h2's errors in urllib3's words (the others are already the socket's or urllib3's)."""
    if isinstance(exc, httpcore.ConnectTimeout):
        return ConnectTimeoutError(None, str(exc))
    if isinstance(exc, httpcore.TimeoutException):
        return ReadTimeoutError(None, url, "Read timed out.")  # type: ignore[arg-type]
    if isinstance(exc, httpcore.RemoteProtocolError) and "disconnected" in str(exc).lower():
        return ProtocolError("Connection aborted.", http.client.RemoteDisconnected("server closed the connection"))
    if isinstance(exc, httpcore.NetworkError) and isinstance(exc.__cause__, OSError):
        return exc.__cause__
    if isinstance(exc, httpcore.ProtocolError | h2.exceptions.H2Error):
        return ProtocolError(f"HTTP/2 protocol error: {exc}")
    return exc


def _raise(exc: Exception, url: str) -> NoReturn:
    """Raise `exc` in urllib3's words (:func:`_translate`)."""
    said = _translate(exc, url)
    if said is exc:
        raise exc
    raise said from exc


class Http2Response:
    """An HTTP/2 response as HttpProtocol reads urllib3's: status, headers, read1, close."""

    def __init__(self, resp: httpcore.Response, url: str, release: Callable[[bool], None]) -> None:
        self.status = resp.status
        self.headers = urllib3.HTTPHeaderDict()
        for name, value in resp.headers:
            self.headers.add(name.decode("latin-1"), value.decode("latin-1"))
        self._resp = resp
        self._url = url
        self._chunks: Iterator[bytes] = iter(resp.stream)  # type: ignore[arg-type]
        self._rest = b""
        self._ended = False
        self._release = release

    def read1(self, amt: int, decode_content: bool = False) -> bytes:
        """At most ``amt`` bytes of the body (a DATA frame's worth); b"" at its end."""
        while not self._rest and not self._ended:
            try:
                self._rest = next(self._chunks)  # an empty DATA frame is no end
            except StopIteration:
                self._ended = True
            except Exception as exc:
                _raise(exc, self._url)
        out, self._rest = self._rest[:amt], self._rest[amt:]
        return out

    def close(self) -> None:
        try:
            if not self._ended:
                self._drain()
            self._resp.close()
        finally:
            self._release(self._ended and not self._rest)

    def _drain(self) -> None:
        """Read what is left of a body not read to its end, up to 64 KB (a 304's or a 401's end of stream), so
        its connection can serve the next request; more than that, or an error, and the connection is closed."""
        budget = _DRAIN
        try:
            for _ in range(64):  # frames: empty ones count too
                budget -= len(next(self._chunks))
                if budget < 0:
                    return
        except StopIteration:
            self._ended, self._rest = True, b""
        except Exception:  # noqa: BLE001 - a broken stream: its connection is closed
            pass


class Http2Client:
    """The HTTP/2 connections of one fetcher thread (not thread-safe, as HttpProtocol is not)."""

    def __init__(self, addresses: AddressPolicy | None) -> None:
        self._addresses = addresses
        self._ssl = client_context("h2")  # the process's, with the system's CAs (tls.py)
        self._conns: OrderedDict[tuple[str, int], httpcore.HTTPConnection] = OrderedDict()
        self._streams: dict[tuple[str, int], Any] = {}

    @staticmethod
    def wants(url: str) -> bool:
        """Whether `url` is tried over HTTP/2: https, to a server not known to choose HTTP/1.1."""
        parts = urlsplit(url)
        return parts.scheme.lower() == "https" and _origin(parts) not in _HTTP11_ORIGINS

    def get(self, url: str, headers: dict[str, str], connect_timeout: float | None,
            read_timeout: float | None) -> Http2Response | None:
        """GET `url` over HTTP/2; None when its server chose HTTP/1.1 (remembered: ask the HTTP/1.1 client)."""
        parts = urlsplit(url)
        key = _origin(parts)
        conn = self._connection(key)
        request = httpcore.Request(
            "GET", url,
            headers=[(b"Host", parts.netloc.rpartition("@")[2].encode("ascii"))]
            + [(k.encode("latin-1"), v.encode("latin-1")) for k, v in headers.items()],
            extensions={"timeout": {"connect": connect_timeout, "read": read_timeout, "write": read_timeout,
                                    "pool": connect_timeout}})
        try:
            resp = conn.handle_request(request)
        except _Http11Only:
            self._drop(key)
            if len(_HTTP11_ORIGINS) >= _HTTP11_ORIGINS_MAX:
                _HTTP11_ORIGINS.clear()
            _HTTP11_ORIGINS.add(key)
            log.debug("%s:%s chose HTTP/1.1 in ALPN: fetched over HTTP/1.1 from now on", *key)
            return None
        except AddressDenied:
            self._drop(key)
            raise
        except Exception as exc:
            self._drop(key)
            _raise(exc, url)
        self._streams[key] = resp.extensions.get("network_stream")
        return Http2Response(resp, url, lambda whole: None if whole else self._drop(key))

    def _connection(self, key: tuple[str, int]) -> httpcore.HTTPConnection:
        """The origin's kept connection if it is usable (not closed, no GOAWAY or EOF waiting), else a new one."""
        conn = self._conns.get(key)
        if conn is not None:
            stream = self._streams.get(key)
            if conn.is_available() and not conn.has_expired() and not (
                    stream is not None and stream.get_extra_info("is_readable")):
                self._conns.move_to_end(key)
                return conn
            self._drop(key)
        conn = httpcore.HTTPConnection(httpcore.Origin(b"https", key[0].encode("ascii"), key[1]),
                                       ssl_context=self._ssl, http1=False, http2=True,
                                       network_backend=_Backend(self._addresses))
        self._conns[key] = conn
        while len(self._conns) > _MAX_CONNECTIONS:
            self._drop(next(iter(self._conns)))
        return conn

    def _drop(self, key: tuple[str, int]) -> None:
        conn = self._conns.pop(key, None)
        self._streams.pop(key, None)
        if conn is not None:
            try:
                conn.close()
            except Exception:  # noqa: BLE001 - a broken connection may fail to say goodbye
                pass

    def close(self) -> None:
        """Close every connection."""
        for key in list(self._conns):
            self._drop(key)


def _origin(parts: Any) -> tuple[str, int]:
    return (parts.hostname or "").lower(), parts.port or 443
