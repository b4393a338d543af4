"""A TCP proxy in front of a real server, which a test can cut: the way to make Solr, Cassandra or HBase
vanish (or restart) in the middle of a job without a mock."""

from __future__ import annotations

import socket
import threading
import time


class Proxy:
    """Forwards 127.0.0.1:<port> to `target`. `cut()` drops every connection and refuses new ones until
    `restore()`; with `allow`, it cuts itself after that many HTTP requests."""

    def __init__(self, target: tuple[str, int], allow: int | None = None) -> None:
        self.target = target
        self.allow = allow
        self.requests = 0
        self.bytes = 0
        self.dead = False
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

    def bounce(self, down_seconds: float) -> None:
        """A restart: cut, stay down for a while, come back."""
        self.cut()
        time.sleep(down_seconds)
        self.restore()

    def close(self) -> None:
        self.cut()
        self.sock.close()


def _close(s: socket.socket) -> None:
    try:
        s.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    s.close()
