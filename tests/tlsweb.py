"""A loopback HTTPS server that speaks HTTP/2 and HTTP/1.1 (hypercorn with h2, ALPN choosing), with a certificate
made at test time: the way to fetch over HTTP/2 without a network. Routes are ASGI handlers by path; every request
is logged with its path and HTTP version (`TlsServer.requests`).

`make_cert(folder)` writes a self-signed certificate for 127.0.0.0/8 names; a client trusts it through
SSL_CERT_FILE (ssl.create_default_context, what urllib3 and protocol-http's HTTP/2 client load)."""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import ipaddress
import socket
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.hostile_server import new_host

__all__ = ["Request", "TlsServer", "make_cert", "new_host", "page", "trickle"]

Send = Callable[[dict[str, Any]], Awaitable[None]]
Route = Callable[[Send, "TlsServer"], Awaitable[None]]


def make_cert(folder: Path, hosts: tuple[str, ...] = ()) -> tuple[Path, Path]:
    """A self-signed certificate (its own CA) for localhost, 127.0.0.1 and `hosts` (addresses); (cert, key)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "nutch2 test web")])
    now = datetime.datetime.now(datetime.UTC)
    names: list[x509.GeneralName] = [x509.DNSName("localhost")]
    names += [x509.IPAddress(ipaddress.ip_address(h)) for h in ("127.0.0.1", *hosts)]
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName(names), critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    folder.mkdir(parents=True, exist_ok=True)
    cert_path, key_path = folder / "cert.pem", folder / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_path, key_path


@dataclass
class Request:
    """One request the server got: its path, HTTP version ("2", "1.1"), headers (lower-case names) and the client's
    port (one per connection)."""

    path: str
    http_version: str
    headers: dict[str, str]
    client_port: int


def page(status: int, body: bytes, headers: dict[str, str] | None = None) -> Route:
    """A route answering `status` with `body` (Content-Type text/html unless `headers` say otherwise)."""
    head = [(k.lower().encode(), v.encode()) for k, v in {"content-type": "text/html", **(headers or {})}.items()]
    head.append((b"content-length", str(len(body)).encode()))

    async def route(send: Send, server: TlsServer) -> None:
        await send({"type": "http.response.start", "status": status, "headers": head})
        await send({"type": "http.response.body", "body": body})

    return route


def trickle(head_first: bool, interval: float = 0.05, seconds: float = 20.0) -> Route:
    """A route that stalls: nothing at all (`head_first` False), or headers and then a byte every `interval`, for
    `seconds` or until the server closes."""

    async def route(send: Send, server: TlsServer) -> None:
        if not head_first:
            await server.sleep(seconds)
            return
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"text/html"), (b"content-length", b"100000")]})
        for _ in range(int(seconds / interval)):
            await send({"type": "http.response.body", "body": b"x", "more_body": True})
            if await server.sleep(interval):
                return

    return route


class TlsServer:
    """hypercorn on `host` (by default a loopback address of its own; `cert` must name it: make_cert(folder,
    hosts)), offering the protocols of `alpn` (h2 first), in a thread with its own event loop."""

    def __init__(self, routes: dict[str, Route], cert: tuple[Path, Path], host: str | None = None,
                 alpn: tuple[str, ...] = ("h2", "http/1.1")) -> None:
        from hypercorn.config import Config

        self.routes = routes
        self.host = host or new_host()
        self.log: list[Request] = []
        self._lock = threading.Lock()
        self._sock = socket.socket()
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind((self.host, 0))
        self._sock.listen(64)  # connections wait in the backlog until hypercorn accepts them
        self.port = self._sock.getsockname()[1]
        config = Config()
        config.bind = [f"fd://{self._sock.fileno()}"]
        config.certfile, config.keyfile = str(cert[0]), str(cert[1])
        config.alpn_protocols = list(alpn)
        config.graceful_timeout = 0.2
        config.accesslog = config.errorlog = None
        self._config = config
        self._loop = asyncio.new_event_loop()
        self._stopped = asyncio.Event()
        self._started = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name=f"tlsweb-{self.port}")
        self._thread.start()
        if not self._started.wait(10):
            raise RuntimeError("the TLS test server did not start")

    def url(self, path: str) -> str:
        return f"https://{self.host}:{self.port}{path}"

    def requests(self, path: str | None = None) -> list[Request]:
        with self._lock:
            return [r for r in self.log if path is None or r.path == path]

    async def sleep(self, seconds: float) -> bool:
        """Sleep, or less when the server stops; True when it stopped."""
        try:
            await asyncio.wait_for(self._stopped.wait(), seconds)
        except TimeoutError:
            return False
        return True

    def _run(self) -> None:
        from hypercorn.asyncio import serve

        asyncio.set_event_loop(self._loop)
        self._loop.call_soon(self._started.set)
        self._loop.run_until_complete(serve(self._app, self._config, shutdown_trigger=self._stopped.wait))

    async def _app(self, scope: dict[str, Any], receive: Any, send: Send) -> None:
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        with self._lock:
            self.log.append(Request(scope["path"], scope["http_version"], headers, scope["client"][1]))
        route = self.routes.get(scope["path"]) or page(404, b"not found")
        await route(send, self)

    def close(self) -> None:
        self._loop.call_soon_threadsafe(self._stopped.set)
        self._thread.join(10)
        with contextlib.suppress(OSError):  # hypercorn closed the descriptor it was given
            self._sock.close()

    def __enter__(self) -> TlsServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
