"""A TCP proxy in front of a real server, which a test can cut: the way to make Solr, Cassandra or HBase
vanish (or restart) in the middle of a job without a mock. And an HTTP forward proxy that counts what it carries
(the crawler's http.proxy.* settings)."""

from __future__ import annotations

import socket
import threading
import time


class Proxy:
    """Forwards 127.0.0.1:<port> to `target`. `cut()` drops every connection and refuses new ones until
    `restore()`; `freeze()` is a server stopped (kill -STOP) until `thaw()`: connections stay open and new ones
    are taken by the kernel, but nothing more is carried either way; with `allow`, it cuts itself after that many
    HTTP requests."""

    def __init__(self, target: tuple[str, int], allow: int | None = None) -> None:
        self.target = target
        self.allow = allow
        self.requests = 0
        self.bytes = 0
        self.dead = False
        self.running = threading.Event()
        self.running.set()
        self.lock = threading.Lock()
        self.conns: list[socket.socket] = []
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(128)
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            self.running.wait()  # frozen: connections wait in the listen backlog, as with a stopped server
            try:
                client, _ = self.sock.accept()
            except OSError:
                return
            if self.dead:
                client.close()
                continue
            try:
                upstream = socket.create_connection(self.target, timeout=10)
                upstream.settimeout(None)
            except OSError:
                client.close()
                continue
            with self.lock:
                self.conns += [client, upstream]
            threading.Thread(target=self._pipe, args=(client, upstream, True), daemon=True).start()
            threading.Thread(target=self._pipe, args=(upstream, client, False), daemon=True).start()

    def _pipe(self, a: socket.socket, b: socket.socket, from_client: bool) -> None:
        try:
            while data := a.recv(65536):
                if from_client:
                    with self.lock:
                        self.bytes += len(data)
                        self.requests += data.count(b" HTTP/1.1\r\n")
                        if self.allow is not None and self.requests > self.allow:
                            self.dead = True
                self.running.wait()
                if self.dead:
                    break
                b.sendall(data)
        except OSError:
            pass
        finally:
            for s in (a, b):
                _close(s)

    def cut(self) -> None:
        """Drop every open connection and refuse new ones."""
        with self.lock:
            self.dead = True
            conns, self.conns = self.conns, []
        for s in conns:
            _close(s)

    def restore(self) -> None:
        self.dead = False

    def freeze(self) -> None:
        self.running.clear()

    def thaw(self) -> None:
        self.running.set()

    def bounce(self, down_seconds: float) -> None:
        """A restart: cut, stay down for a while, come back."""
        self.cut()
        time.sleep(down_seconds)
        self.restore()

    def close(self) -> None:
        self.cut()
        self.running.set()
        self.sock.close()


def _close(s: socket.socket) -> None:
    try:
        s.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    s.close()


def _pump(a: socket.socket, b: socket.socket) -> None:
    """Copy a to b until a ends, then end b's side (one direction of a CONNECT tunnel)."""
    try:
        while data := a.recv(65536):
            b.sendall(data)
    except OSError:
        pass
    try:
        b.shutdown(socket.SHUT_WR)
    except OSError:
        pass


class ForwardProxy:
    """An HTTP forward proxy on loopback that counts the requests it carries (per host:port in `requests`, each as
    host:port/path?query in `urls`) and, with `credentials`, asks for Proxy-Authorization (Basic) first: 407
    without it. GET and HEAD with absolute URIs; CONNECT tunnels (counted once each, as "CONNECT host:port")."""

    def __init__(self, credentials: tuple[str, str] | None = None) -> None:
        import base64
        import http.client
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
        from urllib.parse import urlsplit

        proxy = self
        self.requests: dict[str, int] = {}
        self.urls: list[str] = []
        self.refused = 0
        self.lock = threading.Lock()
        expected = ("Basic " + base64.b64encode(f"{credentials[0]}:{credentials[1]}".encode()).decode()
                    if credentials else None)

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: object) -> None:  # noqa: A002
                pass

            def do_GET(self) -> None:
                self._forward()

            def do_HEAD(self) -> None:
                self._forward()

            def do_CONNECT(self) -> None:
                """A tunnel to host:port (https through the proxy), counted as one request of that origin."""
                if self._refused():
                    return
                host, _, port = self.path.rpartition(":")
                with proxy.lock:
                    key = f"{host.strip('[]')}:{port}"
                    proxy.requests[key] = proxy.requests.get(key, 0) + 1
                    proxy.urls.append(f"CONNECT {key}")
                try:
                    upstream = socket.create_connection((host.strip("[]"), int(port)), timeout=30)
                except (OSError, ValueError):
                    self.send_error(502)
                    return
                self.send_response(200, "Connection established")
                self.end_headers()
                self.wfile.flush()
                pumps = [threading.Thread(target=_pump, args=(a, b), daemon=True)
                         for a, b in ((self.connection, upstream), (upstream, self.connection))]
                for pump in pumps:
                    pump.start()
                for pump in pumps:
                    pump.join()
                self.close_connection = True

            def _refused(self) -> bool:
                """407 (and True) when the proxy wants credentials this request does not have."""
                if expected is None or self.headers.get("Proxy-Authorization") == expected:
                    return False
                with proxy.lock:
                    proxy.refused += 1
                self.send_response(407)
                self.send_header("Proxy-Authenticate", 'Basic realm="proxy"')
                self.send_header("Content-Length", "0")
                self.end_headers()
                return True

            def _forward(self) -> None:
                if self._refused():
                    return
                parts = urlsplit(self.path)
                if parts.scheme != "http" or not parts.hostname:
                    self.send_error(400, "absolute http URI expected")
                    return
                target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
                with proxy.lock:
                    key = f"{parts.hostname}:{parts.port or 80}"
                    proxy.requests[key] = proxy.requests.get(key, 0) + 1
                    proxy.urls.append(key + target)
                conn = http.client.HTTPConnection(parts.hostname, parts.port or 80, timeout=30)
                headers = {k: v for k, v in self.headers.items()
                           if k.lower() not in ("proxy-authorization", "proxy-connection", "connection")}
                try:
                    conn.request(self.command, target, headers=headers)
                    resp = conn.getresponse()
                    body = resp.read()
                except OSError:
                    self.send_error(502)
                    return
                finally:
                    conn.close()
                self.send_response(resp.status)
                for k, v in resp.getheaders():
                    if k.lower() not in ("transfer-encoding", "connection", "content-length"):
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(body)

        class Server(ThreadingHTTPServer):
            daemon_threads = True

        self.server = Server(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def total(self) -> int:
        with self.lock:
            return sum(self.requests.values())

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
