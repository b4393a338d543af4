"""A loopback HTTP server that misbehaves on purpose, written on raw sockets so that it can do what no HTTP
library would: trickle a status line or headers one byte at a time, send half a gzip stream, answer nothing.

Each route is a function of an `Exchange`; every request is logged with what happened to it (`Record`)."""

from __future__ import annotations

import gzip
import itertools
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

__all__ = ["Exchange", "HostileServer", "Record", "gzip_bomb", "head", "new_host", "refused_url", "wait_for"]


@dataclass
class Record:
    """One request: its path and headers, the bytes sent, and whether the whole answer went out."""

    path: str
    headers: dict[str, str]
    sent: int = 0
    completed: bool = False
    client_gone: bool = False


@dataclass
class Exchange:
    """A request being answered; `send`/`trickle` return False once the client has gone away."""

    sock: socket.socket
    record: Record
    stop: threading.Event = field(repr=False)

    def send(self, data: bytes) -> bool:
        try:
            self.sock.sendall(data)
        except OSError:
            self.record.client_gone = True
            return False
        self.record.sent += len(data)
        return True

    def trickle(self, data: bytes, interval: float) -> bool:
        """Send one byte every `interval` seconds (False as soon as the client is gone)."""
        for i in range(len(data)):
            if self.stop.wait(interval) or self._client_closed() or not self.send(data[i:i + 1]):
                self.record.client_gone = True
                return False
        return True

    def respond(self, status: int, body: bytes = b"", headers: dict[str, str] | None = None,
                length: int | None = None) -> bool:
        """A whole response (Content-Length: `length`, default the body's)."""
        return self.send(head(status, body, headers, length) + body)

    def _client_closed(self) -> bool:
        """True when the client closed its end (a read would return EOF or fail)."""
        try:
            self.sock.setblocking(False)
            try:
                return self.sock.recv(1, socket.MSG_PEEK) == b""
            finally:
                self.sock.setblocking(True)
        except BlockingIOError:
            return False
        except OSError:
            return True


def head(status: int, body: bytes = b"", headers: dict[str, str] | None = None, length: int | None = None) -> bytes:
    """Status line and headers, with Content-Length and Connection: close."""
    lines = [f"HTTP/1.1 {status} X"]
    for key, value in {"Content-Type": "text/html", **(headers or {})}.items():
        lines.append(f"{key}: {value}")
    lines += [f"Content-Length: {len(body) if length is None else length}", "Connection: close", "", ""]
    return "\r\n".join(lines).encode("latin-1")


Route = Callable[[Exchange], None]
_HOSTS = (f"127.0.77.{i}" for i in itertools.cycle(range(1, 255)))  # one loopback address per server: one host


def new_host() -> str:
    """A loopback address of its own, so that each server is a host with its own fetch queue."""
    return next(_HOSTS)


class HostileServer:
    """One host (a loopback address of its own) serving `routes` by path; unknown paths answer 404."""

    def __init__(self, routes: dict[str, Route]) -> None:
        self.routes = routes
        self.host = new_host()
        self.log: list[Record] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._sock = socket.socket()
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind((self.host, 0))
        self._sock.listen(64)
        self.port = self._sock.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True, name=f"hostile-{self.port}").start()

    def __enter__(self) -> HostileServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def url(self, path: str) -> str:
        return f"http://{self.host}:{self.port}{path}"

    def requests(self, path: str | None = None) -> list[Record]:
        with self._lock:
            return [r for r in self.log if path is None or r.path == path]

    def close(self) -> None:
        self._stop.set()
        self._sock.close()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        try:
            conn.settimeout(10)
            data = b""
            while b"\r\n\r\n" not in data:
                chunk = conn.recv(4096)
                if not chunk:
                    return
                data += chunk
            conn.settimeout(None)
            lines = data.split(b"\r\n\r\n", 1)[0].decode("latin-1").split("\r\n")
            path = lines[0].split(" ")[1] if len(lines[0].split(" ")) > 1 else "/"
            headers = dict(line.split(": ", 1) for line in lines[1:] if ": " in line)
            record = Record(path, headers)
            with self._lock:
                self.log.append(record)
            exchange = Exchange(conn, record, self._stop)
            route = self.routes.get(path)
            if route is None:
                exchange.respond(404, b"not found")
            else:
                route(exchange)
            record.completed = not record.client_gone
        except OSError:
            pass
        finally:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            conn.close()


def refused_url(path: str) -> str:
    """A URL on a loopback address and port nothing listens on (connections are refused)."""
    host = new_host()
    sock = socket.socket()
    sock.bind((host, 0))
    port = sock.getsockname()[1]
    sock.close()
    return f"http://{host}:{port}{path}"


def gzip_bomb(inflated: int) -> bytes:
    """A gzip stream of `inflated` zero bytes (about 1/1000 of that on the wire)."""
    return gzip.compress(b"\0" * inflated, compresslevel=9, mtime=0)


def wait_for(predicate: Callable[[], bool], seconds: float) -> bool:
    """Poll until `predicate()` holds or `seconds` pass."""
    end = time.monotonic() + seconds
    while not predicate():
        if time.monotonic() > end:
            return False
        time.sleep(0.05)
    return True
